//! `polysandbox merge`: one run's shards (`eval --shard I/N`, each its own --output) made one
//! output directory, as the unsharded run would have written it.

use crate::eval;
use clap::Args;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Every dataset eval grades (exercises, snippets, repositories, SWE-bench, Multi-SWE-bench):
  results.jsonl (one line per instance), logs/ and each instance's files are copied from the
  shards; report.json, junit.xml and the harnesses' run reports (SWE-bench's
  <model>.<run_id>.json, Multi-SWE-bench's final_report.json) are written again from the
  merged results, as eval writes them. wall_time_s is the longest shard's. Each shard's
  calibration run, if eval calibrated first, goes to calibration/shard-I/.
Refused, with one line and nothing written: OUT that exists and is not empty; a directory with
  no settings.json (written by eval) or run without --shard; shards of different runs (the
  dataset, predictions or their content, images, limits, calibration, --strict, ...: every
  setting of settings.json but the shard); a shard given twice or missing; an instance in two
  shards, or a file two shards both hold; a shard with instances left without a result (finish
  it with eval --resume). The
  shards' dataset and predictions must still be where they ran (the harnesses' reports are
  made from them).
Written to a directory beside OUT, then renamed to OUT: a failure leaves nothing.
Exit status: as eval's over the merged results (0, 1, 3; --fail-under RATE; 3 too when nothing
  was scored), 125 when refused.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct MergeArgs {
    /// The merged output directory (must not exist, or be empty).
    out: PathBuf,
    /// Each shard's eval --output.
    #[arg(required = true, value_name = "SHARD_DIR")]
    shards: Vec<PathBuf>,
    /// Exit 0 when the merged accuracy_score is at least RATE (as eval's --fail-under).
    #[arg(long, value_name = "RATE", value_parser = super::eval::parse_rate, allow_hyphen_values = true)]
    fail_under: Option<f64>,
    /// What goes to stdout at the end.
    #[arg(long, default_value = "table", value_parser = ["table", "json", "junit"])]
    format: String,
}

pub fn main(a: MergeArgs) -> i32 {
    let m = match eval::merge::merge(&a.out, &a.shards) {
        Ok(m) => m,
        Err(e) => return super::error(e),
    };
    let p = &m.settings.predictions;
    let redo = eval::report::Recalibrate::of(&m.settings.options(&a.out));
    match a.format.as_str() {
        "json" => {
            out!("{}", serde_json::to_string_pretty(&eval::report::summary(&m.results, m.wall, p, &redo)).unwrap())
        }
        "junit" => print!("{}", eval::report::junit(&m.results, &a.out)),
        _ => print!("{}", eval::report::table(&m.results, m.wall, p, &redo)),
    }
    eprintln!(
        "polysandbox: {} shards merged into {}/ (results.jsonl, report.json, junit.xml, report.html, logs/)",
        a.shards.len(),
        a.out.display()
    );
    let (code, why) = super::eval::exit_status(&m.results, a.fail_under);
    if code != 0 {
        eprintln!("polysandbox: exit {code}: {why}");
    }
    code
}
