//! `polysandbox eval`: a whole benchmark, one sandbox per instance.

use super::common::{abs, parse_shard, Common};
use crate::eval::{self, report, InstanceResult, Options, ReportFormat};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
DATASET: a directory in the Aider polyglot layout (<lang>/exercises/practice/<name>/),
  or a JSON/JSONL file of SWE-bench, Multi-SWE-bench or CoderEval-style records.
  SWE-bench records (JSON, JSONL or Parquet, as published) run as its harness runs them:
  in their instance image, with their eval script and log parser (docs/swebench.md).
PREDICTIONS: gold, stub, a directory of edited solution files, or a JSON/JSONL file of
  {instance_id, model_name_or_path, model_patch} (SWE-bench) or {task_id, generation}
  (CoderEval) records.
Verdicts: resolved, unresolved, empty_patch, patch_failed, timeout, oom, error
  (error = infrastructure: retried, then counted as not resolved and listed to rerun; a failure
  after the prediction was applied is the prediction's unless gold fails the same way here).
  accuracy_score = resolved over every instance the dataset and its calibration admit.
Exit status: 0 every instance got a verdict other than error; 1 some ended in error;
  130 interrupted (rerun with --resume); 125 eval could not start.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct EvalArgs {
    /// The dataset: an Aider-layout directory or a JSON/JSONL file.
    dataset: PathBuf,
    /// gold, stub, a directory, or a JSON/JSONL file of predictions.
    #[arg(short = 'p', long, default_value = "gold")]
    predictions: String,
    #[command(flatten)]
    common: Common,
    /// A deterministic sample of N instances.
    #[arg(short = 'n', long = "sample", value_name = "N")]
    sample: Option<usize>,
    /// Where results.jsonl, report.json, junit.xml and logs/ go.
    #[arg(short = 'o', long, default_value = "polysandbox-eval")]
    output: PathBuf,
    /// Continue the run in --output: instances whose prediction and settings are unchanged
    /// keep their verdicts (infrastructure errors run again).
    #[arg(long)]
    resume: bool,
    /// Retries of an instance that ended in an infrastructure error.
    #[arg(long, default_value_t = 1)]
    retries: u32,
    /// Run shard I of N (from 1), a deterministic split for job arrays.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    shard: Option<(usize, usize)>,
    /// What goes to stdout at the end.
    #[arg(long, default_value = "table", value_parser = ["table", "json", "junit"])]
    format: String,
    /// A calibration made by `polysandbox calibrate` (default: the dataset's, kept beside the
    /// store, when there is one).
    #[arg(long, value_name = "FILE", conflicts_with = "no_calibration")]
    calibration: Option<PathBuf>,
    /// Grade without a calibration even if the dataset has one.
    #[arg(long)]
    no_calibration: bool,
    /// Grade a prediction flagged for tampering unresolved: solution code that reaches into
    /// the runner (its internals, argv, exit hooks, the test files), or a patch that changes
    /// the test run's configuration (a conftest.py, pytest's addopts, a plugin on the path).
    /// Flags are in results.jsonl either way.
    #[arg(long)]
    strict: bool,
}

/// The calibration eval uses: the one named, else the dataset's default one if it exists.
pub fn calibration_for(
    o: &Options,
    named: Option<PathBuf>,
    none: bool,
) -> Result<Option<crate::eval::calibration::Calibration>, String> {
    use crate::eval::calibration;
    if none {
        return Ok(None);
    }
    let root = o.root.clone().unwrap_or_else(crate::image::store::Store::default_root);
    let (path, named) = match named {
        Some(p) => (std::path::absolute(&p).unwrap_or(p), true),
        None => (calibration::default_path(&root, &o.dataset), false),
    };
    if !named && !path.exists() {
        return Ok(None);
    }
    let c = calibration::load(&path)?;
    if c.dataset != o.dataset.to_string_lossy() {
        eprintln!("polysandbox: note: calibration {} was made for {}", path.display(), c.dataset);
    }
    // A calibration made before gold's usage was kept: it grades as before; no ratios to gold.
    if !c.instances.is_empty() && c.instances.values().all(|e| e.gold_usage.is_none()) {
        eprintln!(
            "polysandbox: note: calibration {} holds no usage of gold's (made by an older polysandbox): no ratios to gold; calibrate again for them",
            path.display()
        );
    }
    let fails = c.instances.values().filter(|e| !e.gold_passes).count();
    eprintln!(
        "polysandbox: calibration {} ({} instances, {} runs; gold fails {fails} here)",
        path.display(),
        c.instances.len(),
        c.runs
    );
    Ok(Some(c))
}

/// Calibrates the selected instances the dataset's calibration lacks (or made for another
/// build of their image) and merges them into it: `None` when nothing was missing.
fn calibrate_missing(
    o: &Options,
    selected: Vec<String>,
) -> Result<Option<crate::eval::calibration::Calibration>, String> {
    use crate::eval::calibration;
    let have = o.calibration.clone();
    // Missing, or with candidates an older build made (whose changed literals can tell).
    let current = |e: &calibration::Entry| {
        e.controls_made == crate::eval::control::CANDIDATES || (e.controls.is_empty() && !e.gold_passes)
    };
    let missing: Vec<String> = selected
        .into_iter()
        .filter(|id| !have.as_ref().is_some_and(|c| c.instances.get(id).is_some_and(current)))
        .collect();
    if missing.is_empty() {
        return Ok(None);
    }
    eprintln!(
        "polysandbox: calibrating {} instance{} first (gold, as shipped and with candidate controls), as eval grades against what gold does here; `polysandbox calibrate` to do it ahead, --no-calibration to skip",
        missing.len(),
        if missing.len() == 1 { "" } else { "s" }
    );
    let mut base = o.clone();
    base.ids = missing;
    base.sample = None;
    base.shard = None;
    base.resume = false;
    let fresh = super::calibrate::calibrate(&base, &o.output.join("calibration"), 1, false)?;
    let mut c = have.unwrap_or_else(|| calibration::Calibration { instances: Default::default(), ..fresh.clone() });
    c.instances.extend(fresh.instances);
    let root = o.root.clone().unwrap_or_else(crate::image::store::Store::default_root);
    let path = calibration::default_path(&root, &o.dataset);
    let text = serde_json::to_string_pretty(&c).unwrap() + "\n";
    let write = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|_| {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, &text)?;
        std::fs::rename(&tmp, &path)
    });
    write.map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("polysandbox: calibration kept in {}", path.display());
    Ok(Some(c))
}

pub fn main(a: EvalArgs) -> i32 {
    let predictions = match a.predictions.as_str() {
        "gold" | "stub" => a.predictions.clone(),
        p => abs(PathBuf::from(p)).to_string_lossy().into_owned(),
    };
    let mut o = match a.common.options(a.dataset, &predictions, a.output) {
        Ok(o) => o,
        Err(e) => return super::error(e),
    };
    o.sample = a.sample;
    o.resume = a.resume;
    o.retries = a.retries;
    o.shard = a.shard;
    o.format = match a.format.as_str() {
        "json" => ReportFormat::Json,
        "junit" => ReportFormat::Junit,
        _ => ReportFormat::Table,
    };
    o.strict = a.strict;
    // Bad input is one line: the selection is checked before any note about a calibration.
    let selected = match crate::eval::check_input(&o) {
        Ok(ids) => ids,
        Err(e) => return super::error(e),
    };
    let named = a.calibration.is_some();
    o.calibration = match calibration_for(&o, a.calibration, a.no_calibration) {
        Ok(c) => c,
        Err(e) => return super::error(e),
    };
    // Calibration by default: a prediction's run is graded against what gold does here, with
    // controls gold was seen to fail. Instances the calibration lacks are calibrated first
    // (gold as shipped once, then with every candidate control), and kept with the dataset's.
    if !a.no_calibration && !named && !["gold", "stub"].contains(&o.predictions.as_str()) {
        match calibrate_missing(&o, selected) {
            Ok(Some(c)) => o.calibration = Some(c),
            Ok(None) => {}
            Err(e) if e == super::calibrate::INTERRUPTED => {
                eprintln!("polysandbox: {e}");
                return 130;
            }
            Err(e) => return super::error(e),
        }
    }
    let tty = std::io::stderr().is_terminal();
    let bar = ProgressBar::hidden();
    if tty {
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} [{elapsed_precise}, ETA {eta}]").unwrap(),
        );
    }
    let progress = |r: &InstanceResult, done: usize, total: usize, resolved: usize| {
        let line = format!(
            "[{done}/{total}] {:<40} {:<12} {:>7.1}s {:>6.1}s cpu {:>5} MiB{}",
            r.instance_id,
            r.verdict,
            r.wall_s,
            r.cpu_s,
            r.memory_peak_bytes >> 20,
            r.reason
                .as_ref()
                .filter(|_| r.verdict != eval::Verdict::Resolved)
                .map(|s| format!("  ({})", s.lines().next().unwrap_or("")))
                .unwrap_or_default()
        );
        if tty {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(format!("resolved {resolved}"));
            bar.println(line);
        } else {
            eprintln!("{line}");
        }
    };
    let (results, interrupted, wall) = match eval::run(&o, &progress) {
        Ok(x) => x,
        Err(e) => return super::error(e),
    };
    bar.finish_and_clear();
    match o.format {
        ReportFormat::Table => print!("{}", report::table(&results, wall)),
        ReportFormat::Json => out!("{}", serde_json::to_string_pretty(&report::summary(&results, wall)).unwrap()),
        ReportFormat::Junit => print!("{}", report::junit(&results)),
    }
    eprintln!("polysandbox: results in {}/ (results.jsonl, report.json, junit.xml, logs/)", o.output.display());
    if interrupted {
        eprintln!("polysandbox: interrupted; continue with --resume");
        130
    } else if results.iter().any(|r| r.verdict == eval::Verdict::Error) {
        1
    } else {
        0
    }
}
