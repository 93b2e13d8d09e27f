//! `polysandbox eval`: a whole benchmark, one sandbox per instance.

use super::common::{abs, parse_shard, Common, Dataset};
use super::progress::Reporter;
use crate::eval::{self, report, InstanceResult, Options, Progress, ReportFormat};
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
DATASET: a directory in the Aider polyglot layout (<lang>/exercises/practice/<name>/),
  or a JSON/JSONL file of SWE-bench, Multi-SWE-bench or CoderEval-style records.
  SWE-bench records (JSON, JSONL or Parquet, as published) run as its harness runs them:
  in their instance image, with their eval script and log parser (docs/swebench.md).
  Or -d NAME [-s SPLIT], as the harness's run_evaluation takes it: a Hugging Face dataset
  from the local cache, e.g. -d princeton-nlp/SWE-bench_Lite. Its other options are taken in
  its spellings too (--max_workers, -id/--run_id, -i/--instance_ids, --predictions_path, ...);
  -t takes instance ids here (the harness's -t is --timeout), -n a sample size (its -n is
  --namespace).
PREDICTIONS: gold, stub, a directory of edited solution files, or a JSON/JSONL file of
  {instance_id, model_name_or_path, model_patch} (SWE-bench) or {task_id, generation}
  (CoderEval) records.
  Ids the dataset lacks, an empty file, an id twice with different predictions: refused.
  Without -p, gold is graded, and every summary says so.
Verdicts: resolved, unresolved, empty_patch, no_prediction, patch_failed, timeout, oom, error
  (error = infrastructure: retried, then counted as not resolved and listed to rerun; a failure
  after the prediction was applied is the prediction's unless gold fails the same way here).
  accuracy_score = resolved over every instance the dataset and its calibration admit.
Outputs in --output: results.jsonl (a line per instance, as each ends), report.json (the
  counts, per language, resources), junit.xml (a suite per instance, a testcase per test, for
  CI test pages), report.html (one self-contained page: results, charts, sortable failures),
  logs/<instance>/; --summary-md FILE (and $GITHUB_STEP_SUMMARY, appended) in Markdown.
Progress on stderr: on a terminal, a bar with an ETA and the instances running; otherwise a
  line per result and a heartbeat every 30 s while none ends (POLYSANDBOX_EVAL_HEARTBEAT=10s).
Exit status (for CI; --fail-under to pass on a rate instead of every instance):
    0  every scored instance resolved (with --fail-under RATE: accuracy_score at least RATE)
    1  some scored instance not resolved (unresolved, empty_patch, no_prediction, patch_failed,
       timeout, oom), or accuracy_score under RATE
    2  the command line cannot be parsed (clap's message)
    3  infrastructure errors remain (`error` after --retries, listed in rerun_ids): the score
       is incomplete; rerun them with --resume. Or nothing was scored (every instance left
       out by the calibration, say), whatever --fail-under says
  125  eval could not start (bad input, nothing run or written)
  130  interrupted (rerun with --resume)
  Instances the calibration leaves out (gold fails here) are not scored; the summary,
  report.json (excluded_by_cause) and the Markdown summary say why, per cause, with the
  `polysandbox calibrate DATASET --instance ID...` that calibrates them again.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct EvalArgs {
    #[command(flatten)]
    data: Dataset,
    /// gold, stub, a directory, or a JSON/JSONL file of predictions (SWE-bench's
    /// -p/--predictions_path) [default: gold, the reference solutions, which every summary
    /// then names]
    #[arg(short = 'p', long, visible_aliases = ["predictions-path", "predictions_path"])]
    predictions: Option<String>,
    #[command(flatten)]
    common: Common,
    /// A deterministic sample of N instances (SWE-bench's -n/--namespace is --namespace here).
    #[arg(short = 'n', long = "sample", value_name = "N", value_parser = parse_sample, allow_hyphen_values = true)]
    sample: Option<usize>,
    /// Where results.jsonl, report.json, junit.xml, report.html, logs/ and settings.json (what
    /// was graded and how) go.
    #[arg(short = 'o', long, default_value = "polysandbox-eval")]
    output: PathBuf,
    /// Continue the run in --output: instances whose prediction and settings are unchanged
    /// keep their verdicts (infrastructure errors run again). An instance graded again (its
    /// prediction or a setting changed, or an error) has its line in results.jsonl replaced:
    /// one line per instance.
    #[arg(long)]
    resume: bool,
    /// Retries of an instance that ended in an infrastructure error.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    retries: u32,
    /// Run shard I of N (from 1), a deterministic split for job arrays; `polysandbox merge`
    /// makes the shards' outputs one.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    shard: Option<(usize, usize)>,
    /// What goes to stdout at the end.
    #[arg(long, default_value = "table", value_parser = ["table", "json", "junit"])]
    format: String,
    /// Also write the summary as GitHub-flavoured Markdown here: per-language results,
    /// failures and errors with their reasons, the slowest and most memory-hungry instances.
    /// (With $GITHUB_STEP_SUMMARY set, it is appended there too.)
    #[arg(long, value_name = "FILE")]
    summary_md: Option<PathBuf>,
    /// A calibration made by `polysandbox calibrate` (default: the dataset's, kept beside the
    /// store, when there is one).
    #[arg(long, value_name = "FILE", conflicts_with = "no_calibration")]
    calibration: Option<PathBuf>,
    /// Exit 0 when accuracy_score (resolved over scored instances) is at least RATE, a
    /// fraction (0.8) or a percentage (80%), rather than only when every instance resolved.
    #[arg(long, value_name = "RATE", value_parser = parse_rate, allow_hyphen_values = true)]
    fail_under: Option<f64>,
    /// Grade without a calibration even if the dataset has one.
    #[arg(long)]
    no_calibration: bool,
    /// Grade a prediction flagged for tampering unresolved: solution code that reaches into
    /// the runner (its internals, argv, exit hooks, the test files), or a patch that changes
    /// the test run's configuration (a conftest.py, pytest's addopts, a plugin on the path).
    /// Flags are in results.jsonl either way.
    #[arg(long)]
    strict: bool,
    /// Grade again the SWE-bench instances of the run in --output from the logs it left
    /// (each test_output.txt), running nothing, and write every report again (the harness's
    /// --rewrite_reports). Other instances keep their results.
    #[arg(long, visible_alias = "rewrite_reports", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL")]
    rewrite_reports: Option<bool>,
    /// Write the harness's run report (<model>.<run_id>.json) here too; it is always in
    /// --output (SWE-bench's --report_dir).
    #[arg(long, visible_alias = "report_dir", value_name = "DIR")]
    report_dir: Option<PathBuf>,
    #[command(flatten)]
    harness: HarnessOnly,
}

/// SWE-bench `run_evaluation` options with no counterpart here: taken, so that a harness
/// command line runs, each said on one line.
#[derive(Args, Debug)]
#[command(next_help_heading = "SWE-bench harness options taken with no effect here")]
pub struct HarnessOnly {
    /// Which images the harness removes afterwards: images stay in the store here (polysandbox
    /// rmi, prune).
    #[arg(long, visible_alias = "cache_level", value_parser = ["none", "base", "env", "instance"])]
    cache_level: Option<String>,
    /// The harness's removal of images above --cache_level: images stay in the store here.
    #[arg(long, value_parser = parse_bool, value_name = "BOOL")]
    clean: Option<bool>,
    /// The harness's image rebuild: images are pulled, or built by rootfs/build.sh swebench.
    #[arg(long, visible_alias = "force_rebuild", value_parser = parse_bool, value_name = "BOOL")]
    force_rebuild: Option<bool>,
    /// Running on Modal: instances run here, in local sandboxes.
    #[arg(long, value_parser = parse_bool, value_name = "BOOL")]
    modal: Option<bool>,
    /// The harness process's open-file limit: each sandbox has the image's own.
    #[arg(long, visible_alias = "open_file_limit", value_name = "N")]
    open_file_limit: Option<u64>,
    /// The harness's environment images' tag: instance images only here (--instance-image-tag).
    #[arg(long, visible_alias = "env_image_tag", value_name = "TAG")]
    env_image_tag: Option<String>,
}

impl HarnessOnly {
    /// One note for each option given.
    fn notes(&self) -> Vec<String> {
        let mut n = Vec::new();
        if let Some(l) = &self.cache_level {
            n.push(format!(
                "--cache_level {l}: images stay in the store here, whatever the level (polysandbox rmi, prune)"
            ));
        }
        if let Some(c) = self.clean {
            n.push(format!("--clean {c}: images stay in the store here (polysandbox rmi, prune)"));
        }
        if let Some(f) = self.force_rebuild {
            n.push(format!(
                "--force_rebuild {f}: eval builds no image; images are pulled, or built by rootfs/build.sh swebench"
            ));
        }
        if let Some(m) = self.modal {
            n.push(format!("--modal {m}: instances run here, in local sandboxes (there is no Modal backend)"));
        }
        if let Some(l) = self.open_file_limit {
            n.push(format!("--open_file_limit {l}: the harness's own limit; each sandbox has its image's"));
        }
        if let Some(t) = &self.env_image_tag {
            n.push(format!(
                "--env_image_tag {t}: no environment images here, instance images only (--instance-image-tag)"
            ));
        }
        n
    }
}

/// A boolean as the SWE-bench harness reads one (its `str2bool`).
fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_lowercase().as_str() {
        "yes" | "true" | "t" | "y" | "1" => Ok(true),
        "no" | "false" | "f" | "n" | "0" => Ok(false),
        _ => Err(format!("{s}: a boolean (true or false)")),
    }
}

/// `-n`'s sample size; a word there is SWE-bench's -n/--namespace, said so.
fn parse_sample(s: &str) -> Result<usize, String> {
    s.parse().map_err(|_| {
        format!("{s}: -n takes a sample size here, a number (SWE-bench's -n/--namespace is --namespace {s})")
    })
}

/// The calibration eval uses: the one named, else the dataset's default one if it exists.
pub fn calibration_for(
    o: &Options,
    named: Option<PathBuf>,
    none: bool,
    progress: &dyn Progress,
) -> Result<Option<crate::eval::calibration::Calibration>, String> {
    use crate::eval::calibration;
    if none {
        return Ok(None);
    }
    progress.step("looking up the calibration");
    let root = o.root.clone().unwrap_or_else(crate::image::store::Store::default_root);
    let (path, named) = match named {
        Some(p) => (std::path::absolute(&p).unwrap_or(p), true),
        None => (calibration::default_path(&root, &o.dataset), false),
    };
    if !named && !path.exists() {
        return Ok(None);
    }
    // The store's own, found by name: only if no one else could have put it there.
    if !named {
        calibration::check_kept(&path)?;
    }
    let c = calibration::load(&path)?;
    if c.dataset != o.dataset.to_string_lossy() {
        progress.note(&format!("note: calibration {} was made for {}", path.display(), c.dataset));
    }
    // A calibration made before gold's usage was kept: it grades as before; no ratios to gold.
    // (Gold that fails here has no usage to keep whatever the version.)
    let passing: Vec<_> = c.instances.values().filter(|e| e.gold_passes).collect();
    if !passing.is_empty() && passing.iter().all(|e| e.gold_usage.is_none()) {
        progress.note(&format!(
            "note: calibration {} holds no usage of gold's (made by an older polysandbox): no ratios to gold; calibrate again for them",
            path.display()
        ));
    }
    let fails = c.instances.values().filter(|e| !e.gold_passes).count();
    progress.note(&format!(
        "calibration {} ({} instances, {} runs; gold fails {fails} here)",
        path.display(),
        c.instances.len(),
        c.runs
    ));
    Ok(Some(c))
}

/// Calibrates the instances this run will run (selected, with a prediction) that the
/// dataset's calibration lacks, or holds for another image, build or conditions, and adds them
/// to it (under its lock): the calibration now, and the instances whose calibration failed
/// (an infrastructure error: nothing kept for them), with why. `None` when nothing was missing.
fn calibrate_missing(
    o: &Options,
    progress: &dyn Progress,
) -> Result<(Option<crate::eval::calibration::Calibration>, BTreeMap<String, String>), String> {
    use crate::eval::calibration;
    let have = o.calibration.clone();
    let planned = crate::eval::scheduler::planned(o)?;
    let mut digests: std::collections::HashMap<String, Option<String>> = Default::default();
    let mut why_again: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut missing = Vec::new();
    for (id, p) in &planned {
        let Some(e) = have.as_ref().and_then(|c| c.instances.get(id)) else {
            missing.push(id.clone());
            continue;
        };
        // Candidates an older build made (whose changed literals can tell), another image
        // (`--image`, `--config`), another build of it than the store holds now, other
        // conditions: eval would not use the entry.
        let now = &*digests.entry(e.image.clone()).or_insert_with(|| crate::eval::child::image_digest(o, &e.image));
        let why = if !(e.controls_made == crate::eval::control::CANDIDATES || (e.controls.is_empty() && !e.gold_passes))
        {
            Some("made with an older way of making controls".to_string())
        } else if p.image != e.image {
            Some(format!("made with image {} (now {})", e.image, p.image))
        } else if matches!((&e.image_digest, now), (Some(then), Some(now)) if then != now) {
            Some(format!("made with another build of {}", e.image))
        } else if e.image_digest.is_some() && now.is_none() {
            // Pulled again by the calibration, and compared: a tag may have moved.
            Some(format!("made with a build of {} the store does not hold now", e.image))
        } else {
            calibration::not_for(e, &p.conditions)
        };
        if let Some(why) = why {
            why_again.entry(why).or_default().push(id.clone());
            missing.push(id.clone());
        }
    }
    if missing.is_empty() {
        return Ok((None, BTreeMap::new()));
    }
    missing.sort();
    for (why, ids) in &why_again {
        progress.note(&format!(
            "note: the calibration of {} instance{} was {why}: calibrating again (the first: {})",
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
            ids[0]
        ));
    }
    progress.note(&format!(
        "calibrating {} instance{} first (gold, as shipped and with candidate controls), as eval grades against what gold does here; `polysandbox calibrate` to do it ahead, --no-calibration to skip",
        missing.len(),
        if missing.len() == 1 { "" } else { "s" }
    ));
    let root = o.root.clone().unwrap_or_else(crate::image::store::Store::default_root);
    let path = calibration::default_path(&root, &o.dataset);
    calibration::check_kept(&path)?;
    let mut base = o.clone();
    base.ids = missing;
    base.sample = None;
    base.shard = None;
    // An eval interrupted while calibrating resumes its calibration's runs too.
    base.resume = o.resume;
    let (fresh, errors) = super::calibrate::calibrate(&base, &o.output.join("calibration"), 1, false, progress)?;
    if fresh.instances.is_empty() {
        return Ok((have, errors));
    }
    calibration::check_kept(&path)?;
    let mut c = calibration::store(&path, &fresh)?;
    // This run uses its own fresh entries, whatever a writer at once put there since.
    c.instances.extend(fresh.instances);
    progress.note(&format!("calibration kept in {}", path.display()));
    Ok((Some(c), errors))
}

pub fn main(a: EvalArgs) -> i32 {
    let given = a.predictions.clone();
    let predictions = match given.as_deref().unwrap_or("gold") {
        p @ ("gold" | "stub") => p.to_string(),
        p => abs(PathBuf::from(p)).to_string_lossy().into_owned(),
    };
    let dataset = match a.data.path() {
        Ok(p) => p,
        Err(e) => return super::error(e),
    };
    let mut o = match a.common.options(dataset, &predictions, a.output) {
        Ok(o) => o,
        Err(e) => return super::error(e),
    };
    o.report_dir = a.report_dir.map(abs);
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
        Ok((ids, notes)) => {
            for n in notes {
                eprintln!("polysandbox: note: {n}");
            }
            ids
        }
        Err(e) => return super::error(e),
    };
    // Said once the input is known good: a refused command line is one line.
    let notes = |say: &dyn Fn(&str)| {
        for n in a.harness.notes() {
            say(&format!("note: {n}"));
        }
        if given.is_none() {
            say("note: no -p: grading gold, the dataset's reference solutions (every summary says so); -p PREDICTIONS grades a model's");
        }
        if let Some(n) = super::host::cgroup_note() {
            say(&format!("note: {n}"));
        }
    };
    let label = match (o.predictions.as_str(), &given) {
        ("gold", None) => "gold (the dataset's reference solutions: -p was not given)".to_string(),
        ("gold", Some(_)) => "gold (the dataset's reference solutions)".to_string(),
        ("stub", _) => "stub (the files as shipped)".to_string(),
        (_, g) => g.clone().unwrap_or_default(),
    };
    o.label = label.clone();
    o.summary_md = a.summary_md.map(abs);
    o.step_summary = true;
    if a.rewrite_reports == Some(true) {
        notes(&|l| eprintln!("polysandbox: {l}"));
        return rewrite(&o, &label, a.fail_under);
    }
    let named = a.calibration.is_some();
    o.calibration_file = a.calibration.clone().map(abs);
    let progress = Reporter::new();
    o.calibration = match calibration_for(&o, a.calibration.clone(), a.no_calibration, &progress) {
        Ok(c) => c,
        Err(e) => {
            progress.finish();
            return super::error(e);
        }
    };
    notes(&|l| progress.note(l));
    // Calibration by default: a prediction's run is graded against what gold does here, with
    // controls gold was seen to fail. Instances the calibration lacks are calibrated first
    // (gold as shipped once, then with every candidate control), and kept with the dataset's.
    if !a.no_calibration && !named && !["gold", "stub"].contains(&o.predictions.as_str()) {
        let n = selected.len();
        match calibrate_missing(&o, &progress) {
            Ok((c, errors)) => {
                if c.is_some() {
                    o.calibration = c;
                }
                o.calibration_errors = errors;
            }
            Err(e) if e == super::calibrate::INTERRUPTED => {
                progress.finish();
                eprintln!("polysandbox: {e}");
                eprintln!("polysandbox: interrupted while calibrating: none of the {n} instances run; to resume:");
                eprintln!("  {}", report::resume_command());
                return INTERRUPTED;
            }
            Err(e) => {
                progress.finish();
                return super::error(e);
            }
        }
    }
    let ran = eval::run(&o, &progress);
    progress.finish();
    let (results, interrupted, wall) = match ran {
        Ok(x) => x,
        Err(e) => return super::error(e),
    };
    print_report(&o, &results, wall, &label);
    eprintln!(
        "polysandbox: results in {}/ (results.jsonl, report.json, junit.xml, report.html, logs/)",
        o.output.display()
    );
    if interrupted {
        let (total, _) = progress.counts();
        eprintln!("polysandbox: interrupted: {}", report::not_run(total, results.len()));
        return INTERRUPTED;
    }
    let (code, why) = exit_status(&results, a.fail_under);
    if code != 0 {
        eprintln!("polysandbox: exit {code}: {why}");
    }
    code
}

/// The summary on stdout, in `--format`.
fn print_report(o: &Options, results: &[InstanceResult], wall: std::time::Duration, label: &str) {
    let redo = report::Recalibrate::of(o);
    match o.format {
        ReportFormat::Table => print!("{}", report::table(results, wall, label, &redo)),
        ReportFormat::Json => {
            out!("{}", serde_json::to_string_pretty(&report::summary(results, wall, &o.predictions, &redo)).unwrap())
        }
        // As written in --output (its timestamp, its logs' tails).
        ReportFormat::Junit => {
            print!(
                "{}",
                std::fs::read_to_string(o.output.join("junit.xml"))
                    .unwrap_or_else(|_| report::junit(results, &o.output))
            )
        }
    }
}

/// `--rewrite_reports`: the run in --output graded again from its logs, nothing run; its
/// reports written again; the exit status as a run's.
fn rewrite(o: &Options, label: &str, fail_under: Option<f64>) -> i32 {
    let started = std::time::Instant::now();
    let (results, notes) = match eval::rewrite(o) {
        Ok(x) => x,
        Err(e) => return super::error(e),
    };
    for n in notes {
        eprintln!("polysandbox: note: {n}");
    }
    print_report(o, &results, started.elapsed(), label);
    eprintln!("polysandbox: reports written again in {}/ from its logs (nothing ran)", o.output.display());
    let (code, why) = exit_status(&results, fail_under);
    if code != 0 {
        eprintln!("polysandbox: exit {code}: {why}");
    }
    code
}

/// Exit statuses beyond 0, 1 and clap's 2 (see AFTER_HELP).
pub const INFRASTRUCTURE: i32 = 3;
pub const INTERRUPTED: i32 = 130;

/// `--fail-under`'s rate: a fraction from 0 to 1, or a percentage.
pub(super) fn parse_rate(s: &str) -> Result<f64, String> {
    let (num, scale) = match s.trim().strip_suffix('%') {
        Some(p) => (p, 100.0),
        None => (s.trim(), 1.0),
    };
    let r = num.trim().parse::<f64>().map_err(|_| format!("{s}: a rate from 0 to 1 (0.8) or a percentage (80%)"))?;
    let r = r / scale;
    if !(0.0..=1.0).contains(&r) || r.is_nan() {
        return Err(if scale == 1.0 && r > 1.0 && r <= 100.0 {
            format!("{s}: a rate from 0 to 1; for a percentage write {s}%")
        } else {
            format!("{s}: a rate from 0 to 1 (0.8) or a percentage (80%)")
        });
    }
    Ok(r)
}

/// The exit status of a finished (not interrupted) run, and why when not 0: infrastructure
/// errors first (the score is incomplete), then a run that scored nothing (every instance left
/// out by the calibration, say: no score at all, whatever `fail_under` says), then the score
/// against every scored instance or `fail_under`.
pub(super) fn exit_status(results: &[InstanceResult], fail_under: Option<f64>) -> (i32, String) {
    let scored: Vec<&InstanceResult> = results.iter().filter(|r| r.scored()).collect();
    let errors = scored.iter().filter(|r| r.verdict == eval::Verdict::Error).count();
    let resolved = scored.iter().filter(|r| r.verdict == eval::Verdict::Resolved).count();
    if errors > 0 {
        return (INFRASTRUCTURE, format!("{errors} infrastructure error{} (rerun_ids in report.json)", plural(errors)));
    }
    if scored.is_empty() {
        return (INFRASTRUCTURE, nothing_scored(results));
    }
    let rate = if scored.is_empty() { 0.0 } else { resolved as f64 / scored.len() as f64 };
    match fail_under {
        Some(min) if rate < min => {
            (1, format!("accuracy_score {:.4} is under --fail-under {min} ({resolved} of {})", rate, scored.len()))
        }
        Some(_) => (0, String::new()),
        None if resolved < scored.len() => {
            let not = scored.len() - resolved;
            (1, format!("{not} of {} scored instance{} not resolved", scored.len(), plural(scored.len())))
        }
        None => (0, String::new()),
    }
}

/// Why a run scored nothing: the instances the calibration left out, per cause, and those not
/// run.
fn nothing_scored(results: &[InstanceResult]) -> String {
    let by = report::excluded_by_cause(results);
    let excluded: usize = by.iter().map(|e| e.ids.len()).sum();
    let mut parts = vec![];
    if excluded > 0 {
        let causes: Vec<String> = by.iter().map(|e| format!("{}: {}", e.cause, e.ids.len())).collect();
        parts.push(format!(
            "{excluded} instance{} left out by the calibration ({}; the commands that calibrate them again: excluded_by_cause in report.json)",
            plural(excluded),
            causes.join(", ")
        ));
    }
    let interrupted = results.iter().filter(|r| r.verdict == eval::Verdict::Interrupted).count();
    if interrupted > 0 {
        parts.push(format!("{interrupted} interrupted (rerun with --resume)"));
    }
    if results.is_empty() {
        parts.push("no instance in the run".into());
    }
    format!("nothing was scored: {}", parts.join("; "))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::instance::{Instance, Kind};
    use crate::eval::Verdict;

    fn result(id: &str, v: Verdict) -> InstanceResult {
        let inst = Instance {
            id: id.into(),
            language: "python".into(),
            image: None,
            kind: Kind::Snippet { gold: String::new(), stub: String::new(), test: String::new() },
        };
        InstanceResult::bare(&inst, "", "", v, None)
    }

    #[test]
    fn the_exit_status_tells_ci_what_happened() {
        use Verdict::*;
        let all = |vs: &[Verdict]| vs.iter().enumerate().map(|(i, v)| result(&i.to_string(), *v)).collect::<Vec<_>>();
        assert_eq!(exit_status(&all(&[Resolved, Resolved]), None).0, 0);
        // Nothing at all: nothing was graded, which is no success.
        assert_eq!(exit_status(&all(&[]), None).0, INFRASTRUCTURE);
        for v in [Unresolved, EmptyPatch, PatchFailed, Timeout, Oom] {
            assert_eq!(exit_status(&all(&[Resolved, v]), None).0, 1, "{v}");
        }
        // An infrastructure error: the score is incomplete, whatever the rate.
        assert_eq!(exit_status(&all(&[Resolved, Unresolved, Error]), None).0, INFRASTRUCTURE);
        assert_eq!(exit_status(&all(&[Resolved, Error]), Some(0.0)).0, INFRASTRUCTURE);
        // An instance the calibration leaves out is not scored.
        let mut excluded = all(&[Resolved, Error]);
        excluded[1].excluded = true;
        assert_eq!(exit_status(&excluded, None).0, 0);
        // --fail-under: the rate over scored instances.
        let half = all(&[Resolved, Unresolved]);
        assert_eq!(exit_status(&half, Some(0.5)).0, 0);
        let (code, why) = exit_status(&half, Some(0.6));
        assert_eq!(code, 1);
        assert!(why.contains("0.5000 is under --fail-under 0.6"), "{why}");
    }

    /// Every instance left out by the calibration: `resolved 0 of 0` is no success for a CI
    /// step or a Slurm task, whatever --fail-under says; the line says what was left out, per
    /// cause.
    #[test]
    fn nothing_scored_is_not_success() {
        let excluded = |id: &str, cause: &str| {
            let mut r = result(id, Verdict::Error);
            r.reason = Some(format!("gold fails here: {cause}"));
            r.excluded = true;
            r
        };
        let all = vec![
            excluded("java/hangman", "missing dependency: H.java:1: error: package io.reactivex does not exist"),
            excluded("java/other", "missing dependency: O.java:3: error: package x does not exist"),
            excluded("rust/net", "network needed (sandboxes have none): could not resolve crates.io"),
        ];
        for fail_under in [None, Some(0.0), Some(1.0)] {
            let (code, why) = exit_status(&all, fail_under);
            assert_eq!(code, INFRASTRUCTURE, "{fail_under:?}: {why}");
            assert!(
                why.starts_with(
                    "nothing was scored: 3 instances left out by the calibration (missing dependency: 2, network needed (sandboxes have none): 1; "
                ),
                "{why}"
            );
            assert!(why.contains("excluded_by_cause in report.json"), "{why}");
            assert_eq!(why.lines().count(), 1, "{why}");
        }
        // One scored instance is a score: its verdict decides, as before.
        let mut one = all.clone();
        one.push(result("go/ok", Verdict::Resolved));
        assert_eq!(exit_status(&one, None), (0, String::new()));
        let (code, why) = exit_status(&all[..0], Some(0.0));
        assert_eq!((code, why.as_str()), (INFRASTRUCTURE, "nothing was scored: no instance in the run"));
    }

    #[test]
    fn a_rate_is_a_fraction_or_a_percentage() {
        assert_eq!(parse_rate("0.8"), Ok(0.8));
        assert_eq!(parse_rate("80%"), Ok(0.8));
        assert_eq!(parse_rate("1"), Ok(1.0));
        assert_eq!(parse_rate("0"), Ok(0.0));
        assert!(parse_rate("80").unwrap_err().contains("write 80%"));
        for bad in ["-0.1", "101%", "x", "", "NaN"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }
}
