//! The run's reports: report.json (SWE-bench's and HyperAgents' summary fields, a per-language
//! breakdown, resource percentiles), junit.xml, report.html, the Markdown summary, and the
//! summary table. [`write_outputs`] writes the files, for every command that makes them.

use super::parsers::Status;
use super::result::{log_path, output_tail};
use super::{InstanceResult, Verdict};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a run's report files say beyond its results, and where its Markdown summary goes.
#[derive(Clone, Debug)]
pub struct Outputs {
    /// The run's wall time.
    pub wall: Duration,
    /// What was graded, as report.json names it: "gold", "stub", or the predictions' path.
    pub predictions: String,
    /// The same for people, in the Markdown summary ("gold (the dataset's reference
    /// solutions)"); empty: `predictions`.
    pub label: String,
    /// Set when the run was interrupted: how many instances were not run and how to resume
    /// ([`not_run`]).
    pub interrupted: Option<String>,
    /// `--summary-md FILE`: the Markdown summary written there.
    pub summary_md: Option<PathBuf>,
    /// The Markdown summary appended to `$GITHUB_STEP_SUMMARY` too, when that is set.
    pub step_summary: bool,
    /// The command that calibrates again the instances the calibration left out.
    pub recalibrate: Recalibrate,
}

impl Outputs {
    /// A finished run's, as `o` asks for them: its Markdown summary where `o` says.
    pub fn of(o: &super::Options, wall: Duration) -> Outputs {
        Outputs {
            wall,
            predictions: o.predictions.clone(),
            label: o.label.clone(),
            interrupted: None,
            summary_md: o.summary_md.clone(),
            step_summary: o.step_summary,
            recalibrate: Recalibrate::of(o),
        }
    }
}

/// `polysandbox calibrate` as this run calibrates: its dataset (absolute) and the options of
/// the run that gold's runs depend on or that say where the calibration is kept (the store,
/// the images, the limits, the network, per-test measurement, the caches); the instances'
/// `--instance` follows ([`Recalibrate::argv`]). The reports give it for the instances the
/// calibration left out, per cause, so that they can be calibrated again once the cause is
/// mended.
#[derive(Clone, Debug, PartialEq)]
pub struct Recalibrate(Vec<String>);

impl Recalibrate {
    pub fn of(o: &super::Options) -> Recalibrate {
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let mut a = vec!["polysandbox".to_string(), "calibrate".into(), path(&o.dataset)];
        let mut opt = |k: &str, v: String| a.extend([k.to_string(), v]);
        // The store the run used: its --root, else polysandbox's own --root or
        // $POLYSANDBOX_ROOT (which that sets), where the calibration is kept beside it.
        let root = o.root.clone().or_else(|| std::env::var_os("POLYSANDBOX_ROOT").map(PathBuf::from));
        if let Some(r) = root {
            opt("--root", path(&std::path::absolute(&r).unwrap_or(r)));
        }
        for i in &o.images {
            opt("--image", i.clone());
        }
        if let Some(c) = &o.config {
            opt("--config", path(c));
        }
        if let Some(r) = &o.repos {
            opt("--repos", path(r));
        }
        if let Some(n) = &o.namespace {
            opt("--namespace", n.clone());
        }
        if let Some(t) = &o.instance_image_tag {
            opt("--instance-image-tag", t.clone());
        }
        let ms = |d: Duration| format!("{}ms", d.as_millis().max(1));
        if let Some(t) = o.timeout {
            opt("--timeout", ms(t));
        }
        if let Some(c) = o.cpus {
            opt("--cpus", c.to_string());
        }
        if let Some(m) = o.memory {
            opt("--memory", m.to_string());
        }
        if let Some(d) = o.disk {
            opt("--disk", d.to_string());
        }
        if o.pids != super::options::DEFAULT_PIDS {
            opt("--pids", o.pids.to_string());
        }
        if o.network_host {
            opt("--network", "host".into());
        }
        if !o.per_test.on {
            opt("--per-test", "off".into());
        }
        if let Some(t) = o.per_test.timeout {
            opt("--test-timeout", ms(t));
        }
        if let Some(m) = o.per_test.memory {
            opt("--test-memory", m.to_string());
        }
        if let Some(t) = o.per_test.cpu_time {
            opt("--test-cpu-time", ms(t));
        }
        if !o.caches {
            opt("--caches", "off".into());
        }
        Recalibrate(a)
    }

    /// The command's words for these instances (an id that looks like an option is given as
    /// `--instance=ID`, which clap takes as a value whatever it begins with).
    pub fn argv(&self, ids: &[String]) -> Vec<String> {
        let mut a = self.0.clone();
        let (plain, dashed): (Vec<&String>, Vec<&String>) = ids.iter().partition(|i| !i.starts_with('-'));
        if !plain.is_empty() {
            a.push("--instance".into());
            a.extend(plain.into_iter().cloned());
        }
        a.extend(dashed.into_iter().map(|i| format!("--instance={i}")));
        a
    }

    /// The same as a POSIX shell reads it back.
    pub fn command(&self, ids: &[String]) -> String {
        self.argv(ids).iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ")
    }
}

/// The instances the calibration left out for one cause.
#[derive(Clone, Debug, PartialEq)]
pub struct Excluded {
    /// The kind of cause their reasons name (see [`exclusion_cause`]).
    pub cause: String,
    pub ids: Vec<String>,
}

/// The longest cause the reports group by (a cause that names no kind is its whole text).
const CAUSE_CHARS: usize = 100;

/// What the calibration left an instance out for, as the reports group them: the kind its
/// reason names ("gold fails here: KIND: detail" gives KIND), else its whole cause, one line of
/// at most [`CAUSE_CHARS`], with nothing a terminal would act on (it is gold's output's).
pub fn exclusion_cause(r: &InstanceResult) -> String {
    let reason = r.reason.as_deref().unwrap_or("");
    let cause = reason.strip_prefix("gold fails here:").unwrap_or(reason).trim_start();
    let kind = cause.split_once(": ").map_or(cause, |(k, _)| k);
    match super::result::terminal_safe(&md_line(kind, CAUSE_CHARS)) {
        k if k.is_empty() => "no cause recorded".into(),
        k => k,
    }
}

/// The instances the calibration left out, per cause: the commonest cause first, each cause's
/// ids in the results' order.
pub fn excluded_by_cause(results: &[InstanceResult]) -> Vec<Excluded> {
    let mut by: Vec<Excluded> = Vec::new();
    for r in results.iter().filter(|r| r.excluded) {
        let cause = exclusion_cause(r);
        match by.iter_mut().find(|e| e.cause == cause) {
            Some(e) => e.ids.push(r.instance_id.clone()),
            None => by.push(Excluded { cause, ids: vec![r.instance_id.clone()] }),
        }
    }
    by.sort_by(|a, b| b.ids.len().cmp(&a.ids.len()).then_with(|| a.cause.cmp(&b.cause)));
    by
}

/// Writes a run's reports into `dir` (its output directory, which holds `logs/`): report.json
/// ([`summary`]), junit.xml ([`junit`]), report.html ([`super::report_html::html`]), and the
/// Markdown summary ([`markdown`]) where `out` says (`summary_md`, `$GITHUB_STEP_SUMMARY`).
/// eval calls it at the end of a run (interrupted or not) and after `--rewrite_reports`; a
/// command that gathers results from elsewhere (several shards' results.jsonl) calls it the
/// same way, with the logs' directories relative to `dir`. Returns report.json's value.
pub fn write_outputs(dir: &Path, results: &[InstanceResult], out: &Outputs) -> Result<Value, String> {
    // Each a new file put in place by rename: never through a link at its name (or at a
    // temporary name beside it) another user planted.
    let write = |name: &str, text: String| crate::sys::beneath::write_new(&dir.join(name), text.as_bytes(), 0o644);
    let summary = summary(results, out.wall, &out.predictions, &out.recalibrate);
    write("report.json", serde_json::to_string_pretty(&summary).unwrap() + "\n")?;
    write("junit.xml", junit(results, dir))?;
    write("report.html", super::report_html::html(results, &summary, dir))?;
    let step = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| out.step_summary && !v.is_empty());
    if out.summary_md.is_some() || step.is_some() {
        let label = if out.label.is_empty() { &out.predictions } else { &out.label };
        let text = markdown(results, out.wall, label, out.interrupted.as_deref(), dir, &out.recalibrate);
        if let Some(f) = &out.summary_md {
            crate::sys::beneath::write_new(f, text.as_bytes(), 0o644).map_err(|e| format!("--summary-md {e}"))?;
        }
        if let Some(step) = step {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&step)
                .and_then(|mut f| f.write_all(format!("{text}\n").as_bytes()))
                .map_err(|e| format!("$GITHUB_STEP_SUMMARY {}: {e}", Path::new(&step).display()))?;
        }
    }
    Ok(summary)
}

/// An interrupted run's line: how many of its `total` instances were not run (`recorded` have
/// a verdict), and the command that resumes it.
pub fn not_run(total: usize, recorded: usize) -> String {
    let left = total.saturating_sub(recorded);
    format!(
        "{left} of {total} instance{} not run ({recorded} recorded); to resume: {}",
        if total == 1 { "" } else { "s" },
        resume_command()
    )
}

/// The command line that continues this run: this process's, as given, with `--resume`.
pub fn resume_command() -> String {
    let mut args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    if !args.iter().any(|a| a == "--resume") {
        args.push("--resume".into());
    }
    args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ")
}

/// A word as a POSIX shell reads it back.
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn percentiles(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
    json!({"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": v[v.len() - 1], "sum": v.iter().sum::<f64>()})
}

fn ids(results: &[InstanceResult], pred: impl Fn(&InstanceResult) -> bool) -> Vec<String> {
    results.iter().filter(|r| pred(r)).map(|r| r.instance_id.clone()).collect()
}

/// The share of resolved instances among those the dataset and its calibration admit: an
/// `error` counts as not resolved (as SWE-bench scores resolved over total); only an instance
/// the calibration found gold failing on is left out.
fn accuracy(results: &[InstanceResult]) -> f64 {
    let scored = results.iter().filter(|r| r.scored()).count();
    let resolved = results.iter().filter(|r| r.verdict == Verdict::Resolved).count();
    if scored == 0 {
        0.0
    } else {
        resolved as f64 / scored as f64
    }
}

fn counts(results: &[InstanceResult]) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("total".into(), json!(results.len()));
    for v in Verdict::RECORDED {
        m.insert(v.name().into(), json!(results.iter().filter(|r| r.verdict == v).count()));
    }
    m.insert("accuracy_score".into(), json!(accuracy(results)));
    m
}

/// report.json: `predictions` names what was graded (gold, stub, or the predictions' path),
/// so that a run of the reference solutions is never read as a model's; `recalibrate` the
/// command that calibrates again what the calibration left out (`excluded_by_cause`).
pub fn summary(results: &[InstanceResult], wall: Duration, predictions: &str, recalibrate: &Recalibrate) -> Value {
    let ran = |r: &InstanceResult| {
        !matches!(r.verdict, Verdict::Error | Verdict::EmptyPatch | Verdict::NoPrediction | Verdict::Interrupted)
    };
    // Submitted, as the SWE-bench harness counts them: the instances with a prediction, empty
    // or not.
    let submitted = |r: &InstanceResult| r.verdict != Verdict::NoPrediction;
    let mut m = Map::new();
    m.insert("predictions".into(), json!(predictions));
    m.insert("accuracy_score".into(), json!(accuracy(results)));
    m.insert("total".into(), json!(results.len()));
    m.insert("submitted".into(), json!(results.iter().filter(|r| submitted(r)).count()));
    m.insert("completed".into(), json!(results.iter().filter(|r| ran(r)).count()));
    for v in Verdict::RECORDED {
        m.insert(v.name().into(), json!(results.iter().filter(|r| r.verdict == v).count()));
    }
    // SWE-bench's names, for tools that read its report.
    m.insert("total_instances".into(), json!(results.len()));
    m.insert("submitted_instances".into(), m["submitted"].clone());
    m.insert("completed_instances".into(), m["completed"].clone());
    for v in Verdict::RECORDED {
        m.insert(format!("{v}_instances"), m[v.name()].clone());
    }
    m.insert("submitted_ids".into(), json!(ids(results, submitted)));
    m.insert("completed_ids".into(), json!(ids(results, ran)));
    m.insert("incomplete_ids".into(), json!(ids(results, |r| !ran(r))));
    for v in Verdict::RECORDED {
        m.insert(format!("{v}_ids"), json!(ids(results, |r| r.verdict == v)));
    }
    let mut by_lang: BTreeMap<String, Vec<InstanceResult>> = BTreeMap::new();
    for r in results {
        by_lang.entry(r.language.clone()).or_default().push(r.clone());
    }
    m.insert(
        "by_language".into(),
        Value::Object(by_lang.iter().map(|(l, rs)| (l.clone(), Value::Object(counts(rs)))).collect()),
    );
    let measured: Vec<&InstanceResult> = results.iter().filter(|r| r.attempts > 0 && r.wall_s > 0.0).collect();
    m.insert(
        "resources".into(),
        json!({
            "wall_s": percentiles(measured.iter().map(|r| r.wall_s).collect()),
            "cpu_s": percentiles(measured.iter().map(|r| r.cpu_s).collect()),
            "memory_peak_bytes": percentiles(measured.iter().map(|r| r.memory_peak_bytes as f64).collect()),
        }),
    );
    m.insert("per_test".into(), per_test(results));
    m.insert("vs_gold".into(), vs_gold(results));
    // What the score is over, and what to run again.
    m.insert("admitted".into(), json!(results.iter().filter(|r| r.scored()).count()));
    m.insert("excluded_ids".into(), json!(ids(results, |r| r.excluded)));
    // Why, per cause, and the command that calibrates them again.
    m.insert(
        "excluded_by_cause".into(),
        Value::Array(
            excluded_by_cause(results)
                .into_iter()
                .map(|e| json!({"cause": e.cause, "count": e.ids.len(), "command": recalibrate.command(&e.ids), "ids": e.ids}))
                .collect(),
        ),
    );
    m.insert("rerun_ids".into(), json!(ids(results, |r| r.scored() && r.verdict == Verdict::Error)));
    m.insert(
        "resolved_rate".into(),
        json!(if results.is_empty() {
            0.0
        } else {
            results.iter().filter(|r| r.verdict == Verdict::Resolved).count() as f64 / results.len() as f64
        }),
    );
    // Whether a calibration stood behind the grading (eval calibrates by default;
    // --no-calibration grades without one, with weaker controls and no tests pinned by name).
    m.insert(
        "calibrated".into(),
        json!(results.iter().all(|r| r.controls.as_deref().is_none_or(|c| !c.contains("uncalibrated")))),
    );
    m.insert("wall_time_s".into(), json!(wall.as_secs_f64()));
    m.insert("schema_version".into(), json!(2));
    Value::Object(m)
}

/// Every report of a finished run, from its results: [`write_outputs`]'s (report.json,
/// junit.xml, report.html, the Markdown summary) into `o.output`, and each format's own files
/// (SWE-bench's run report, Multi-SWE-bench's final_report.json) for the instances of `insts`
/// it owns. eval, `--rewrite_reports` and `merge` all write them here.
pub fn write_all(
    o: &super::Options,
    preds: &super::predictions::Predictions,
    insts: &[super::instance::Instance],
    results: &[InstanceResult],
    out: &Outputs,
) -> Result<(), String> {
    write_outputs(&o.output, results, out)?;
    for f in super::formats::REGISTRY {
        let mine: Vec<super::instance::Instance> =
            insts.iter().filter(|i| super::formats::of(i).name() == f.name()).cloned().collect();
        if !mine.is_empty() {
            f.write_files(o, preds, &mine, results)?;
        }
    }
    Ok(())
}

/// Every measured test of the run: (instance, test name, its usage).
fn measured_tests(results: &[InstanceResult]) -> Vec<(&str, &str, &crate::measure::TestUsage)> {
    results
        .iter()
        .flat_map(|r| {
            r.tests.iter().filter_map(move |t| t.usage.as_ref().map(|u| (r.instance_id.as_str(), t.name.as_str(), u)))
        })
        .collect()
}

/// The heaviest `n` tests by `key`, heaviest first.
fn heaviest<'a>(
    all: &[(&'a str, &'a str, &'a crate::measure::TestUsage)],
    key: impl Fn(&crate::measure::TestUsage) -> f64,
    n: usize,
) -> Vec<(&'a str, &'a str, f64)> {
    let mut v: Vec<(&str, &str, f64)> = all.iter().map(|(i, t, u)| (*i, *t, key(u))).collect();
    v.sort_by(|a, b| b.2.partial_cmp(&a.2).unwrap_or(std::cmp::Ordering::Equal));
    v.truncate(n);
    v
}

/// report.json's `per_test`: how many tests were measured and how, percentiles over them,
/// the heaviest, and those stopped for a per-test limit.
fn per_test(results: &[InstanceResult]) -> Value {
    let all = measured_tests(results);
    let mut methods = BTreeMap::new();
    for (_, _, u) in &all {
        *methods
            .entry(serde_json::to_value(u.method).unwrap_or_default().as_str().unwrap_or("").to_string())
            .or_insert(0) += 1;
    }
    let top = |key: &dyn Fn(&crate::measure::TestUsage) -> f64, field: &str| -> Value {
        Value::Array(
            heaviest(&all, key, 10)
                .into_iter()
                .map(|(i, t, v)| json!({"instance_id": i, "test": t, field: v}))
                .collect(),
        )
    };
    json!({
        "measured": all.len(),
        "methods": methods,
        "wall_s": percentiles(all.iter().map(|(_, _, u)| u.wall_s).collect()),
        "cpu_s": percentiles(all.iter().map(|(_, _, u)| u.cpu_s()).collect()),
        "memory_peak_bytes": percentiles(all.iter().map(|(_, _, u)| u.memory_peak_bytes as f64).collect()),
        "slowest": top(&|u| u.wall_s, "wall_s"),
        "most_cpu": top(&|u| u.cpu_s(), "cpu_s"),
        "most_memory": top(&|u| u.memory_peak_bytes as f64, "memory_peak_bytes"),
        "stopped": all.iter().filter_map(|(i, t, u)| u.stopped_by.map(|l| json!({"instance_id": i, "test": t, "stopped_by": l}))).collect::<Vec<_>>(),
    })
}

/// Ratios' distribution: nearest-rank median and 90th percentile, the extremes, how many.
fn ratios(mut v: Vec<f64>) -> Value {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
    json!({"median": at(0.5), "p90": at(0.9), "min": v[0], "max": v[v.len() - 1], "n": v.len()})
}

/// Each compared test's (instance, test, CPU ratio, memory ratio).
fn test_ratios(results: &[InstanceResult]) -> Vec<(&str, &str, Option<f64>, Option<f64>)> {
    measured_tests(results)
        .into_iter()
        .filter(|(_, _, u)| u.cpu_vs_gold.is_some() || u.memory_vs_gold.is_some())
        .map(|(i, t, u)| (i, t, u.cpu_vs_gold, u.memory_vs_gold))
        .collect()
}

/// The instances with an instance-level ratio `f`, largest first.
fn largest_instances(
    results: &[InstanceResult],
    f: impl Fn(&super::vs_gold::VsGold) -> Option<f64>,
) -> Vec<(&str, f64)> {
    let mut v: Vec<(&str, f64)> =
        results.iter().filter_map(|r| r.vs_gold.as_ref().and_then(&f).map(|x| (r.instance_id.as_str(), x))).collect();
    v.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    v
}

/// report.json's `vs_gold`: the ratios to gold's usage (see vs_gold.rs), per test and per
/// instance, their distribution, and the largest CPU ratios.
fn vs_gold(results: &[InstanceResult]) -> Value {
    let tests = test_ratios(results);
    let inst: Vec<&super::vs_gold::VsGold> = results.iter().filter_map(|r| r.vs_gold.as_ref()).collect();
    let mut by_cpu: Vec<_> = tests.iter().filter_map(|(i, t, c, _)| c.map(|c| (*i, *t, c))).collect();
    by_cpu.sort_by(|a, b| b.2.partial_cmp(&a.2).unwrap_or(std::cmp::Ordering::Equal));
    let of = |f: &dyn Fn(&super::vs_gold::VsGold) -> Option<f64>| ratios(inst.iter().filter_map(|v| f(v)).collect());
    json!({
        "cpu_floor_s": super::vs_gold::CPU_FLOOR_S,
        "tests": {
            "compared": tests.len(),
            "cpu": ratios(tests.iter().filter_map(|x| x.2).collect()),
            "memory": ratios(tests.iter().filter_map(|x| x.3).collect()),
        },
        "instances": {
            "compared": inst.len(),
            "cpu": of(&|v| v.cpu),
            "memory": of(&|v| v.memory),
            "wall": of(&|v| v.wall),
            "run_cpu": of(&|v| v.run_cpu),
            "run_memory": of(&|v| v.run_memory),
            "run_wall": of(&|v| v.run_wall),
        },
        "largest_cpu_tests": by_cpu.iter().take(10).map(|(i, t, c)| json!({"instance_id": i, "test": t, "cpu_vs_gold": c})).collect::<Vec<_>>(),
        "largest_cpu_instances": largest_instances(results, |v| v.cpu).into_iter().take(10).map(|(i, c)| json!({"instance_id": i, "cpu": c})).collect::<Vec<_>>(),
    })
}

/// Text fit for XML 1.0: none of the characters it forbids (the control characters but tab
/// and newline, U+FFFE, U+FFFF). quick-xml escapes the rest.
fn xml_text(s: &str) -> String {
    s.chars().filter(|&c| (!c.is_control() || c == '\n' || c == '\t') && c != '\u{fffe}' && c != '\u{ffff}').collect()
}

/// The same, for an attribute: one line.
fn xml_attr(s: &str) -> String {
    xml_text(s).replace(['\n', '\t'], " ")
}

/// How a testcase ended, as JUnit writes it.
enum Outcome {
    Passed,
    /// `<failure>`: the test (or the instance) failed.
    Failure {
        kind: String,
        message: String,
    },
    /// `<error>`: an error, a timeout, a limit.
    Error {
        kind: String,
        message: String,
    },
    Skipped {
        message: String,
    },
}

/// One `<testcase>`.
struct Case {
    name: String,
    time: f64,
    outcome: Outcome,
}

/// One `<testsuite>` of a JUnit document valid against Apache Ant's JUnit.xsd (and Jenkins'
/// junit-10.xsd): its properties first, its test cases, then its output.
struct Suite<'a> {
    name: &'a str,
    package: &'a str,
    classname: &'a str,
    time: f64,
    properties: Vec<(String, String)>,
    cases: Vec<Case>,
    /// The body of each failure and error (the first few of them: the rest point here).
    detail: Option<String>,
    system_out: String,
}

type XmlWriter = quick_xml::Writer<Vec<u8>>;

/// The `<?xml ...?><testsuites>` around suites.
fn document(suites: &[Suite], timestamp: &str, hostname: &str) -> String {
    use quick_xml::events::{BytesDecl, Event};
    let mut w = XmlWriter::new_with_indent(Vec::new(), b' ', 2);
    let written = w
        .write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
        .and_then(|_| {
            w.create_element("testsuites").write_inner_content(|w| {
                for (id, s) in suites.iter().enumerate() {
                    write_suite(w, s, id, timestamp, hostname)?;
                }
                Ok(())
            })
        })
        .map(|_| ());
    // Writing to memory cannot fail.
    debug_assert!(written.is_ok());
    String::from_utf8(w.into_inner()).unwrap_or_default() + "\n"
}

fn write_suite(w: &mut XmlWriter, s: &Suite, id: usize, timestamp: &str, hostname: &str) -> std::io::Result<()> {
    use quick_xml::events::BytesText;
    let count = |f: fn(&Outcome) -> bool| s.cases.iter().filter(|c| f(&c.outcome)).count().to_string();
    let name = xml_attr(s.name);
    let package = xml_attr(s.package);
    w.create_element("testsuite")
        .with_attributes([
            ("name", if name.trim().is_empty() { "-" } else { name.as_str() }),
            ("package", if package.trim().is_empty() { "-" } else { package.as_str() }),
            ("id", &id.to_string()),
            ("timestamp", timestamp),
            ("hostname", hostname),
            ("tests", &s.cases.len().to_string()),
            ("failures", &count(|o| matches!(o, Outcome::Failure { .. }))),
            ("errors", &count(|o| matches!(o, Outcome::Error { .. }))),
            ("skipped", &count(|o| matches!(o, Outcome::Skipped { .. }))),
            ("time", &format!("{:.3}", s.time.max(0.0))),
        ])
        .write_inner_content(|w| {
            w.create_element("properties").write_inner_content(|w| {
                for (k, v) in &s.properties {
                    w.create_element("property")
                        .with_attributes([("name", xml_attr(k).as_str()), ("value", xml_attr(v).as_str())])
                        .write_empty()?;
                }
                Ok(())
            })?;
            let mut detailed = 0;
            for c in &s.cases {
                let name = xml_attr(&c.name);
                let case = w.create_element("testcase").with_attributes([
                    ("classname", xml_attr(s.classname).as_str()),
                    ("name", if name.trim().is_empty() { "-" } else { name.as_str() }),
                    ("time", &format!("{:.3}", c.time.max(0.0))),
                ]);
                // The output's tail in the first few failures' bodies; the later ones point to
                // the suite's system-out.
                let mut body = |message: &str| {
                    detailed += 1;
                    match &s.detail {
                        Some(d) if detailed <= 3 => format!("{message}\n\n{d}"),
                        Some(_) => format!("{message}\n(the output's tail is in this suite's system-out)"),
                        None => message.to_string(),
                    }
                };
                match &c.outcome {
                    Outcome::Passed => {
                        case.write_empty()?;
                    }
                    Outcome::Failure { kind, message } | Outcome::Error { kind, message } => {
                        let element = if matches!(c.outcome, Outcome::Failure { .. }) { "failure" } else { "error" };
                        let text = xml_text(&body(message));
                        case.write_inner_content(|w| {
                            w.create_element(element)
                                .with_attributes([
                                    ("message", xml_attr(message).as_str()),
                                    ("type", xml_attr(kind).as_str()),
                                ])
                                .write_text_content(BytesText::new(&text))?;
                            Ok(())
                        })?;
                    }
                    Outcome::Skipped { message } => {
                        case.write_inner_content(|w| {
                            w.create_element("skipped")
                                .with_attribute(("message", xml_attr(message).as_str()))
                                .write_empty()?;
                            Ok(())
                        })?;
                    }
                }
            }
            w.create_element("system-out").write_text_content(BytesText::new(&xml_text(&s.system_out)))?;
            w.create_element("system-err").write_text_content(BytesText::new(""))?;
            Ok(())
        })?;
    Ok(())
}

/// A test's outcome: a failed test is a failure, one stopped at a per-test limit or in error
/// an error, a skipped one skipped. `why` says why a failure does not count, where it does not.
fn test_outcome(t: &crate::eval::parsers::TestResult, why: Option<&str>) -> Outcome {
    let note = |m: &str| match why {
        Some(w) => format!("{m} ({w})"),
        None => m.to_string(),
    };
    if let Some(l) = t.usage.as_ref().and_then(|u| u.stopped_by) {
        let kind = serde_json::to_value(l).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        return Outcome::Error { kind, message: note(l.describe()) };
    }
    match t.status {
        Status::Passed | Status::Xfail => Outcome::Passed,
        Status::Failed => Outcome::Failure { kind: "failed".into(), message: note("failed") },
        Status::Error => Outcome::Error { kind: "error".into(), message: note("error") },
        Status::Skipped => Outcome::Skipped { message: "skipped".into() },
    }
}

/// A test's resource usage as its suite's properties, `<test>: <what>`: JUnit's schema has
/// properties on suites only.
fn usage_properties(t: &crate::eval::parsers::TestResult, into: &mut Vec<(String, String)>) {
    let Some(u) = &t.usage else { return };
    let method = serde_json::to_value(u.method).unwrap_or_default();
    let mut props = vec![
        ("cpu_user_s", format!("{:.6}", u.cpu_user_s)),
        ("cpu_system_s", format!("{:.6}", u.cpu_system_s)),
        ("memory_peak_bytes", u.memory_peak_bytes.to_string()),
        ("measured_by", method.as_str().unwrap_or("").to_string()),
    ];
    if let Some(l) = u.stopped_by {
        props.push(("stopped_by", serde_json::to_value(l).unwrap_or_default().as_str().unwrap_or("").to_string()));
    }
    if let Some(c) = u.cpu_vs_gold {
        props.push(("cpu_vs_gold", format!("{c:.3}")));
    }
    if let Some(m) = u.memory_vs_gold {
        props.push(("memory_vs_gold", format!("{m:.3}")));
    }
    into.extend(props.into_iter().map(|(k, v)| (format!("{}: {k}", t.name), v)));
}

fn test_time(t: &crate::eval::parsers::TestResult) -> f64 {
    t.usage.as_ref().map(|u| u.wall_s).or(t.duration_s).unwrap_or(0.0)
}

/// The instance's own testcase, named by its id: its verdict where no test shows it.
fn verdict_case(r: &InstanceResult) -> Case {
    let message = format!("{}{}", r.verdict, r.reason.as_ref().map(|s| format!(": {s}")).unwrap_or_default());
    let kind = r.verdict.name().to_string();
    let outcome = match r.verdict {
        Verdict::Resolved => Outcome::Passed,
        Verdict::Unresolved | Verdict::PatchFailed => Outcome::Failure { kind, message },
        Verdict::Timeout | Verdict::Oom | Verdict::Error | Verdict::Interrupted => Outcome::Error { kind, message },
        Verdict::EmptyPatch | Verdict::NoPrediction => Outcome::Skipped { message },
    };
    Case { name: r.instance_id.clone(), time: r.wall_s, outcome }
}

/// Now, as the schema's timestamp wants it: UTC, `YYYY-MM-DDThh:mm:ss`, no zone.
fn timestamp_now() -> String {
    timestamp_of(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0))
}

/// A time in seconds since the epoch as UTC `YYYY-MM-DDThh:mm:ss`.
pub(crate) fn timestamp_of(secs: u64) -> String {
    let (days, rest) = ((secs / 86400) as i64, secs % 86400);
    // The civil date of a day count (Howard Hinnant's algorithm).
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", rest / 3600, rest % 3600 / 60, rest % 60)
}

fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .map(|h| h.to_string_lossy().into_owned())
        .filter(|h| !h.trim().is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// junit.xml: a testsuite per instance (its id the suite's name and each case's classname, its
/// language the package), a testcase per test the runner reported, with its time; a failed
/// test's failure carries the tail of the instance's test output and where its log is. The
/// instance's verdict is a testcase of its own where no test shows it: when the runner reported
/// no test, and when it is not resolved but no test failed (or it timed out, ran out of memory,
/// or ended in error). Each test's measured usage, and the instance's, are the suite's
/// properties. `output` is the output directory, for the test output's tail.
pub fn junit(results: &[InstanceResult], output: &Path) -> String {
    let suites: Vec<Suite> = results.iter().map(|r| instance_suite(r, output)).collect();
    document(&suites, &timestamp_now(), &hostname())
}

fn instance_suite<'a>(r: &'a InstanceResult, output: &Path) -> Suite<'a> {
    let graded: Option<std::collections::HashSet<&str>> = match (&r.fail_to_pass, &r.pass_to_pass) {
        (None, None) => None,
        (f, p) => Some(
            f.iter()
                .chain(p.iter())
                .flat_map(|g| g.success.iter().chain(g.failure.iter()))
                .map(|s| s.as_str())
                .collect(),
        ),
    };
    let mut props: Vec<(String, String)> =
        vec![("language".into(), r.language.clone()), ("verdict".into(), r.verdict.name().into())];
    if let Some(why) = &r.reason {
        props.push(("reason".into(), why.clone()));
    }
    props.extend([
        ("wall_s".into(), format!("{:.3}", r.wall_s)),
        ("cpu_s".into(), format!("{:.3}", r.cpu_s)),
        ("memory_peak_bytes".into(), r.memory_peak_bytes.to_string()),
        ("attempts".into(), r.attempts.to_string()),
    ]);
    if !r.image.is_empty() {
        props.push(("image".into(), r.image.clone()));
    }
    if let Some(l) = log_path(output, r) {
        props.push(("log".into(), l));
    }
    if let Some(v) = &r.vs_gold {
        for (k, x) in [("cpu_vs_gold", v.cpu), ("memory_vs_gold", v.memory), ("wall_vs_gold", v.wall)] {
            if let Some(x) = x {
                props.push((k.into(), format!("{x:.3}")));
            }
        }
    }
    let mut cases: Vec<Case> = r
        .tests
        .iter()
        .map(|t| {
            usage_properties(t, &mut props);
            let why = if r.flaky_ignored.contains(&t.name) {
                Some("flaky here, per the calibration: not graded")
            } else if graded.as_ref().is_some_and(|g| !g.contains(t.name.as_str())) {
                Some("neither FAIL_TO_PASS nor PASS_TO_PASS: not graded")
            } else {
                None
            };
            Case { name: t.name.clone(), time: test_time(t), outcome: test_outcome(t, why) }
        })
        .collect();
    let shown = cases.iter().any(|c| matches!(c.outcome, Outcome::Failure { .. } | Outcome::Error { .. }));
    let own = match r.verdict {
        Verdict::Resolved | Verdict::EmptyPatch | Verdict::NoPrediction => cases.is_empty(),
        Verdict::Unresolved | Verdict::PatchFailed => cases.is_empty() || !shown,
        Verdict::Timeout | Verdict::Oom | Verdict::Error | Verdict::Interrupted => true,
    };
    if own {
        // The verdict's case keeps its name: a test the code under test named like it (it may
        // name its own) is shown as the runner's, never as the verdict.
        let v = verdict_case(r);
        for c in cases.iter_mut().filter(|c| c.name == v.name) {
            c.name = format!("{} (a test of that name)", c.name);
        }
        cases.push(v);
    }
    let log = log_path(output, r).map(|l| format!("log: {l}"));
    let (detail, system_out) = if r.verdict == Verdict::Resolved {
        (None, log.unwrap_or_default())
    } else {
        // The tail of the output and where the log is: in the first failures' bodies, after
        // their message, and in the suite's output after the verdict.
        let d: Vec<String> = output_tail(output, r)
            .map(|t| format!("the last lines of the test output:\n{t}"))
            .into_iter()
            .chain(log)
            .collect();
        let d = d.join("\n\n");
        let verdict = format!("{}{}", r.verdict, r.reason.as_ref().map(|s| format!(": {s}")).unwrap_or_default());
        let out = if d.is_empty() { verdict } else { format!("{verdict}\n\n{d}") };
        ((!d.is_empty()).then_some(d), out)
    };
    Suite {
        name: &r.instance_id,
        package: &r.language,
        classname: &r.instance_id,
        time: r.wall_s,
        properties: props,
        cases,
        detail,
        system_out,
    }
}

/// `polysandbox test --junit`: one suite of a project's tests, each with its time and, where it
/// was measured, its CPU, peak memory and how they were measured (the suite's properties,
/// `<test>: <what>`).
pub fn test_junit(name: &str, runner: &str, tests: &[&crate::eval::parsers::TestResult]) -> String {
    let mut props = vec![];
    let cases = tests
        .iter()
        .map(|t| {
            usage_properties(t, &mut props);
            Case { name: t.name.clone(), time: test_time(t), outcome: test_outcome(t, None) }
        })
        .collect();
    let suite = Suite {
        name,
        package: runner,
        classname: name,
        time: tests.iter().map(|t| test_time(t)).sum(),
        properties: props,
        cases,
        detail: None,
        system_out: String::new(),
    };
    document(&[suite], &timestamp_now(), &hostname())
}

/// Per-language counts and resources, then the totals, naming what was graded (`predictions`:
/// "gold (...)" for the reference solutions), and what the calibration left out, per cause,
/// with the command that calibrates it again (`recalibrate`).
pub fn table(results: &[InstanceResult], wall: Duration, predictions: &str, recalibrate: &Recalibrate) -> String {
    // Test names are the code under test's to choose: nothing in them reaches the terminal as
    // an escape sequence.
    super::result::terminal_safe(&table_text(results, wall, predictions, recalibrate))
}

/// How many ids of a cause the table and the Markdown summary show (and give to the command
/// they show): report.json has them all.
const SHOWN_IDS: usize = 10;

/// A cause's ids as the table and the Markdown summary show them: the first [`SHOWN_IDS`], each
/// through `show`, and how many more there are.
fn shown_ids(ids: &[String], show: impl Fn(&str) -> String) -> String {
    let mut s = ids.iter().take(SHOWN_IDS).map(|i| show(i)).collect::<Vec<_>>().join(", ");
    if ids.len() > SHOWN_IDS {
        s += &format!(" and {} more", ids.len() - SHOWN_IDS);
    }
    s
}

/// What the command shown for a cause covers, when not every id: the rest are in report.json.
fn command_covers(ids: &[String]) -> String {
    if ids.len() > SHOWN_IDS {
        format!(" (the first {SHOWN_IDS} of {}; for all of them: excluded_by_cause in report.json)", ids.len())
    } else {
        String::new()
    }
}

/// A command shown on one line: a control character (a line break in an id, say) as `?`, as
/// nothing a reader can mistake for a line of its own; report.json has it as it is.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

fn table_text(results: &[InstanceResult], wall: Duration, predictions: &str, recalibrate: &Recalibrate) -> String {
    let mut by_lang: BTreeMap<&str, Vec<&InstanceResult>> = BTreeMap::new();
    for r in results {
        by_lang.entry(&r.language).or_default().push(r);
    }
    let mut t = format!(
        "{:<12} {:>5} {:>8} {:>10} {:>5} {:>7} {:>7} {:>7} {:>4} {:>5} {:>9} {:>9}\n",
        "language",
        "total",
        "resolved",
        "unresolved",
        "empty",
        "no_pred",
        "patch_f",
        "timeout",
        "oom",
        "error",
        "cpu s",
        "peak MiB"
    );
    let mut row = |name: &str, rs: &[&InstanceResult]| {
        let c = |v: Verdict| rs.iter().filter(|r| r.verdict == v).count();
        let cpu: f64 = rs.iter().map(|r| r.cpu_s).sum();
        let peak = rs.iter().map(|r| r.memory_peak_bytes).max().unwrap_or(0) >> 20;
        t += &format!(
            "{:<12} {:>5} {:>8} {:>10} {:>5} {:>7} {:>7} {:>7} {:>4} {:>5} {:>9.1} {:>9}\n",
            name,
            rs.len(),
            c(Verdict::Resolved),
            c(Verdict::Unresolved),
            c(Verdict::EmptyPatch),
            c(Verdict::NoPrediction),
            c(Verdict::PatchFailed),
            c(Verdict::Timeout),
            c(Verdict::Oom),
            c(Verdict::Error),
            cpu,
            peak
        );
    };
    for (l, rs) in &by_lang {
        row(l, rs);
    }
    let all: Vec<&InstanceResult> = results.iter().collect();
    row("all", &all);
    let scored = results.iter().filter(|r| r.scored()).count();
    let errors = results.iter().filter(|r| r.scored() && r.verdict == Verdict::Error).count();
    let excluded = results.iter().filter(|r| r.excluded).count();
    t += &format!(
        "resolved {} of {} ({:.1}%), {:.1} s wall; predictions: {predictions}\n",
        results.iter().filter(|r| r.verdict == Verdict::Resolved).count(),
        scored,
        100.0 * accuracy(results),
        wall.as_secs_f64()
    );
    if errors > 0 {
        t += &format!(
            "{errors} error{} (counted as not resolved; rerun {} with --resume)\n",
            if errors == 1 { "" } else { "s" },
            if errors == 1 { "it" } else { "them" }
        );
    }
    if excluded > 0 {
        t += &format!("{excluded} left out of the score: the calibration found gold failing there; per cause:\n");
        for e in excluded_by_cause(results) {
            let shown: Vec<String> = e.ids.iter().take(SHOWN_IDS).cloned().collect();
            t += &format!("  {}: {} ({})\n", e.cause, e.ids.len(), shown_ids(&e.ids, super::result::clean));
            t += &format!(
                "    calibrate them again{}: {}\n",
                command_covers(&e.ids),
                one_line(&recalibrate.command(&shown))
            );
        }
    }
    if results.iter().any(|r| r.controls.as_deref().is_some_and(|c| c.contains("uncalibrated"))) {
        t += "uncalibrated: graded without a calibration (weaker controls; tests gold passes not pinned by name)\n";
    }
    let all = measured_tests(results);
    if !all.is_empty() {
        let show = |v: Vec<(&str, &str, f64)>, f: &dyn Fn(f64) -> String| {
            // (Names from the runners' reports: one line each, or a name could draw lines of its own.)
            v.into_iter()
                .take(3)
                .map(|(i, n, x)| format!("{i} {} ({})", super::result::clean(n), f(x)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        t += &format!("per-test usage: {} tests measured\n", all.len());
        t += &format!("  slowest: {}\n", show(heaviest(&all, |u| u.wall_s, 3), &|x| format!("{x:.2} s")));
        t += &format!("  most CPU: {}\n", show(heaviest(&all, |u| u.cpu_s(), 3), &|x| format!("{x:.2} s")));
        t += &format!(
            "  most memory: {}\n",
            show(heaviest(&all, |u| u.memory_peak_bytes as f64, 3), &|x| format!("{} MiB", x as u64 >> 20))
        );
        let stopped: Vec<String> = all
            .iter()
            .filter_map(|(i, n, u)| u.stopped_by.map(|l| format!("{i} {} ({})", super::result::clean(n), l.describe())))
            .collect();
        if !stopped.is_empty() {
            t += &format!("  stopped by a per-test limit: {}\n", stopped.join(", "));
        }
    }
    t += &vs_gold_lines(results);
    t
}

/// One line of text for a Markdown table, at most `max` chars.
fn md_line(s: &str, max: usize) -> String {
    let one: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let mut one = one.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > max {
        one = one.chars().take(max.saturating_sub(1)).collect::<String>() + "…";
    }
    one
}

/// A cell of a GitHub-flavoured Markdown table: one line, at most `max` chars, plain text.
/// Reasons carry text the code under test chose (names from its own output), so every ASCII
/// punctuation character is escaped (CommonMark lets each be): no link, image, emphasis, HTML,
/// entity or autolink (`https\://`, `www\.`) can form, and a pipe cannot end the cell.
fn md_cell(s: &str, max: usize) -> String {
    let mut out = String::new();
    for c in md_line(s, max).chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Code in a Markdown table cell: nothing in a code span is markup (no autolink of any kind,
/// no mention, issue reference or emoji on GitHub either); backticks that cannot close it
/// early, and pipes escaped for the table (GFM reads `\|` there before the span). For text
/// a run chose: instance ids, reasons (which carry names from the run's own output).
fn md_code(s: &str, max: usize) -> String {
    let text = md_line(s, max);
    if text.is_empty() {
        return text;
    }
    format!("`{}`", text.replace('`', "'").replace('|', "\\|"))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// How many rows each of the summary's lists shows at most.
const MD_ROWS: usize = 50;

/// The run in GitHub-flavoured Markdown, for a CI page (`--summary-md`, `$GITHUB_STEP_SUMMARY`):
/// per-language results, the failures and errors with their reasons and logs, the slowest and
/// most memory-hungry instances. `interrupted` is the line an interrupted run ends with.
pub fn markdown(
    results: &[InstanceResult],
    wall: Duration,
    predictions: &str,
    interrupted: Option<&str>,
    output: &Path,
    recalibrate: &Recalibrate,
) -> String {
    let resolved = results.iter().filter(|r| r.verdict == Verdict::Resolved).count();
    let scored = results.iter().filter(|r| r.scored()).count();
    let mut m = format!("## polysandbox eval: {resolved} of {scored} resolved ({:.1}%)\n\n", 100.0 * accuracy(results));
    if let Some(line) = interrupted {
        m += &format!("> **Interrupted**: {}\n\n", md_cell(line, 2000));
    }
    m += &format!(
        "Predictions: {}. {} instance{} in {:.1} s.\n\n",
        md_cell(predictions, 300),
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        wall.as_secs_f64()
    );
    // Per language.
    let mut by_lang: BTreeMap<&str, Vec<&InstanceResult>> = BTreeMap::new();
    for r in results {
        by_lang.entry(&r.language).or_default().push(r);
    }
    m += "| language | total | resolved | unresolved | empty patch | no prediction | patch failed | timeout | oom | error | accuracy |\n";
    m += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    let row = |name: &str, rs: &[&InstanceResult]| {
        let c = |v: Verdict| rs.iter().filter(|r| r.verdict == v).count();
        let owned: Vec<InstanceResult> = rs.iter().map(|r| (*r).clone()).collect();
        format!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1}% |\n",
            rs.len(),
            c(Verdict::Resolved),
            c(Verdict::Unresolved),
            c(Verdict::EmptyPatch),
            c(Verdict::NoPrediction),
            c(Verdict::PatchFailed),
            c(Verdict::Timeout),
            c(Verdict::Oom),
            c(Verdict::Error),
            100.0 * accuracy(&owned)
        )
    };
    for (l, rs) in &by_lang {
        m += &row(&md_cell(l, 40), rs);
    }
    let all: Vec<&InstanceResult> = results.iter().collect();
    m += &row("**all**", &all);
    // What did not pass, and why.
    let failed: Vec<&InstanceResult> = results.iter().filter(|r| r.verdict != Verdict::Resolved).collect();
    m += &format!("\n### Not resolved: failures and errors ({})\n\n", failed.len());
    if failed.is_empty() {
        m += "None: every instance resolved.\n";
    } else {
        m += "| instance | verdict | reason | log |\n| --- | --- | --- | --- |\n";
        for r in failed.iter().take(MD_ROWS) {
            m += &format!(
                "| {} | {} | {} | {} |\n",
                md_code(&r.instance_id, 200),
                r.verdict,
                md_code(r.reason.as_deref().unwrap_or(""), 300),
                log_path(output, r).map(|l| md_code(&l, 200)).unwrap_or_default()
            );
        }
        if failed.len() > MD_ROWS {
            m += &format!("\n…and {} more: see `results.jsonl`.\n", failed.len() - MD_ROWS);
        }
    }
    m += &markdown_excluded(results, recalibrate);
    // The heaviest instances.
    let ran: Vec<&InstanceResult> = results.iter().filter(|r| r.attempts > 0 && r.wall_s > 0.0).collect();
    let heaviest = |title: &str, key: &dyn Fn(&InstanceResult) -> f64| {
        let mut v = ran.clone();
        v.sort_by(|a, b| key(b).partial_cmp(&key(a)).unwrap_or(std::cmp::Ordering::Equal));
        let mut t = format!(
            "\n### {title}\n\n| instance | wall | CPU | peak memory | verdict |\n| --- | ---: | ---: | ---: | --- |\n"
        );
        for r in v.iter().take(5) {
            t += &format!(
                "| {} | {:.1} s | {:.1} s | {} | {} |\n",
                md_code(&r.instance_id, 200),
                r.wall_s,
                r.cpu_s,
                mib(r.memory_peak_bytes),
                r.verdict
            );
        }
        t
    };
    if !ran.is_empty() {
        m += &heaviest("Slowest instances", &|r| r.wall_s);
        m += &heaviest("Most memory", &|r| r.memory_peak_bytes as f64);
    }
    m += "\nPer instance: `results.jsonl`; per test: `junit.xml`; charts: `report.html`; logs: `logs/`.\n";
    m
}

/// The Markdown summary's section on what the calibration left out: per cause, how many, which
/// (the first few), and the command that calibrates them again, in a code block.
fn markdown_excluded(results: &[InstanceResult], recalibrate: &Recalibrate) -> String {
    let by = excluded_by_cause(results);
    if by.is_empty() {
        return String::new();
    }
    let n: usize = by.iter().map(|e| e.ids.len()).sum();
    let mut m = format!(
        "\n### Left out of the score ({n})\n\nThe calibration found gold, the reference solution, failing on {} here: not scored. Per cause, the command that calibrates them again:\n",
        if n == 1 { "this instance" } else { "these instances" }
    );
    for e in by {
        let shown: Vec<String> = e.ids.iter().take(SHOWN_IDS).cloned().collect();
        let command = one_line(&recalibrate.command(&shown));
        // A fence no run of backticks in the command can close.
        let mut longest = 0;
        let mut run = 0;
        for c in command.chars() {
            run = if c == '`' { run + 1 } else { 0 };
            longest = longest.max(run);
        }
        let fence = "`".repeat((longest + 1).max(3));
        m += &format!(
            "\n{}: {} ({}){}\n\n{fence}sh\n{command}\n{fence}\n",
            md_code(&e.cause, CAUSE_CHARS + 1),
            e.ids.len(),
            shown_ids(&e.ids, |i| md_code(i, 200)),
            command_covers(&e.ids),
        );
    }
    m
}

/// The summary's lines on the ratios to gold: the instances' median and largest CPU and memory
/// ratios, then the tests with the largest CPU ratio.
fn vs_gold_lines(results: &[InstanceResult]) -> String {
    let median = |v: Vec<(&str, f64)>| ratios(v.into_iter().map(|x| x.1).collect())["median"].as_f64();
    let cpu = largest_instances(results, |v| v.cpu);
    let mem = largest_instances(results, |v| v.memory);
    let mut parts = vec![];
    if let (Some((id, top)), Some(m)) = (cpu.first().copied(), median(cpu.clone())) {
        parts.push(format!("median CPU {m:.2}x, slowest {id} {top:.2}x"));
    }
    if let (Some((id, top)), Some(m)) = (mem.first().copied(), median(mem.clone())) {
        parts.push(format!("median memory {m:.2}x, largest {id} {top:.2}x"));
    }
    if parts.is_empty() {
        return String::new();
    }
    let mut t = format!("vs gold: {}\n", parts.join("; "));
    let mut tests: Vec<_> = test_ratios(results).into_iter().filter_map(|(i, n, c, _)| c.map(|c| (i, n, c))).collect();
    tests.sort_by(|a, b| b.2.partial_cmp(&a.2).unwrap_or(std::cmp::Ordering::Equal));
    if !tests.is_empty() {
        let top: Vec<String> =
            tests.iter().take(3).map(|(i, n, c)| format!("{i} {} ({c:.2}x)", super::result::clean(n))).collect();
        t += &format!("  largest CPU vs gold: {}\n", top.join(", "));
    }
    t
}

#[cfg(test)]
mod tests {
    //! The reports' arithmetic: percentiles, what the score is over, and how each verdict is
    //! written in junit.xml and the table.
    use super::*;
    use crate::eval::instance::{Instance, Kind};

    fn result(id: &str, lang: &str, verdict: Verdict) -> InstanceResult {
        let inst = Instance {
            id: id.into(),
            language: lang.into(),
            image: None,
            kind: Kind::Snippet { gold: String::new(), stub: String::new(), test: String::new() },
        };
        let mut r = InstanceResult::bare(&inst, "img", "key", verdict, None);
        r.attempts = 1;
        r.wall_s = 1.0;
        r
    }

    /// The command that calibrates again, for a run of /data with every option at its default.
    fn redo() -> Recalibrate {
        let mut o = crate::eval::Options::new("/data".into(), "gold", "/out".into(), "".into());
        o.root = Some("/store".into());
        Recalibrate::of(&o)
    }

    #[test]
    fn percentiles_are_nearest_rank_with_max_and_sum() {
        assert_eq!(percentiles(vec![]), Value::Null);
        assert_eq!(
            percentiles(vec![3.0, 1.0, 2.0]),
            json!({"p50": 2.0, "p90": 3.0, "p99": 3.0, "max": 3.0, "sum": 6.0})
        );
        let hundred: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentiles(hundred), json!({"p50": 51.0, "p90": 90.0, "p99": 99.0, "max": 100.0, "sum": 5050.0}));
        assert_eq!(percentiles(vec![7.0]), json!({"p50": 7.0, "p90": 7.0, "p99": 7.0, "max": 7.0, "sum": 7.0}));
    }

    #[test]
    fn the_score_counts_errors_as_not_resolved_and_leaves_out_only_exclusions() {
        let mut excluded = result("x", "go", Verdict::Unresolved);
        excluded.excluded = true;
        let rs = vec![
            result("a", "python", Verdict::Resolved),
            result("b", "python", Verdict::Error),
            result("c", "go", Verdict::Unresolved),
            result("d", "go", Verdict::EmptyPatch),
            result("i", "go", Verdict::Interrupted),
            result("n", "go", Verdict::NoPrediction),
            excluded,
        ];
        let s = summary(&rs, Duration::from_secs(2), "gold", &redo());
        assert_eq!(s["predictions"], json!("gold"), "what was graded is named");
        // Scored: a, b, c, d, n (x excluded by the calibration, i interrupted).
        assert_eq!(s["admitted"], json!(5));
        assert_eq!(s["accuracy_score"], json!(0.2));
        assert_eq!(s["resolved_rate"], json!(1.0 / 7.0));
        assert_eq!(s["rerun_ids"], json!(["b"]));
        assert_eq!(s["excluded_ids"], json!(["x"]));
        // Submitted as the harness counts them: every instance with a prediction, an empty one
        // included; an instance with none is not, nor an empty patch.
        assert_eq!(s["submitted"], json!(6));
        assert_eq!(s["submitted_instances"], json!(6));
        assert_eq!(s["empty_patch_instances"], json!(1));
        assert_eq!(s["no_prediction_instances"], json!(1));
        assert_eq!(s["no_prediction_ids"], json!(["n"]));
        assert_eq!(s["completed_ids"], json!(["a", "c", "x"]));
        assert_eq!(s["incomplete_ids"], json!(["b", "d", "i", "n"]));
        assert_eq!(s["error_instances"], json!(1));
        assert_eq!(s["by_language"]["python"]["accuracy_score"], json!(0.5));
        assert_eq!(s["by_language"]["go"]["total"], json!(5));
        assert_eq!(s["by_language"]["go"]["no_prediction"], json!(1));
        assert_eq!(accuracy(&[]), 0.0);
    }

    #[test]
    fn resources_are_over_measured_runs_only() {
        let mut a = result("a", "python", Verdict::Resolved);
        (a.wall_s, a.cpu_s, a.memory_peak_bytes) = (2.0, 1.5, 1 << 20);
        let mut never_ran = result("b", "python", Verdict::EmptyPatch);
        (never_ran.attempts, never_ran.wall_s) = (0, 0.0);
        let s = summary(&[a, never_ran], Duration::ZERO, "gold", &redo());
        assert_eq!(s["resources"]["wall_s"]["sum"], json!(2.0));
        assert_eq!(s["resources"]["cpu_s"]["max"], json!(1.5));
        assert_eq!(s["resources"]["memory_peak_bytes"]["p50"], json!(1048576.0));
    }

    #[test]
    fn junit_writes_each_verdict_as_its_element() {
        let mut bad = result("t<&\"1", "rust", Verdict::Unresolved);
        // (U+FFFF, as a solution's `//line` directive put it in a compiler line: not XML.)
        bad.reason = Some("no test passed \u{1b}[31m\u{FFFF}\u{FFFE}<".into());
        let rs = vec![
            result("ok", "rust", Verdict::Resolved),
            bad,
            result("err", "rust", Verdict::Error),
            result("empty", "rust", Verdict::EmptyPatch),
            result("slow", "rust", Verdict::Timeout),
            result("none", "rust", Verdict::NoPrediction),
        ];
        let x = junit(&rs, Path::new("/nonexistent"));
        assert!(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"), "{x}");
        // A suite per instance, its verdict a testcase of its own when no test shows it.
        assert_eq!(x.matches("<testsuite ").count(), 6, "{x}");
        assert!(x.contains(r#"<skipped message="no_prediction"/>"#), "{x}");
        assert!(x.contains(r#"<testsuite name="ok" package="rust" id="0" timestamp=""#), "{x}");
        assert!(x.contains(r#"tests="1" failures="0" errors="0" skipped="0" time="1.000">"#), "{x}");
        assert!(x.contains(r#"<testcase classname="ok" name="ok" time="1.000"/>"#), "{x}");
        assert!(x.contains(r#"name="t&lt;&amp;&quot;1""#), "{x}");
        assert!(x.contains(r#"<failure message="unresolved: no test passed [31m&lt;" type="unresolved">"#), "{x}");
        assert!(x.contains(r#"<error message="error" type="error">"#), "{x}");
        assert!(x.contains(r#"<skipped message="empty_patch"/>"#), "{x}");
        assert!(x.contains(r#"<error message="timeout" type="timeout">"#), "{x}");
        assert!(!x.contains('\u{1b}'), "no character XML forbids: {x}");
    }

    #[test]
    fn junit_has_a_testcase_per_test_and_the_failures_output() {
        use crate::eval::parsers::TestResult;
        let dir = std::env::temp_dir().join(format!("polysandbox-report-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("logs/go__x")).unwrap();
        let output: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.join("logs/go__x/test_output.txt"), output).unwrap();
        let t =
            |name: &str, status: Status| TestResult { name: name.into(), status, duration_s: Some(0.25), usage: None };
        let mut r = result("go/x", "go", Verdict::Unresolved);
        r.logs = "logs/go__x".into();
        r.reason = Some("a test failed".into());
        r.tests = vec![t("TestA", Status::Passed), t("TestB", Status::Failed), t("TestC", Status::Skipped)];
        let x = junit(&[r.clone()], &dir);
        assert!(x.contains(r#"tests="3" failures="1" errors="0" skipped="1" time="1.000">"#), "{x}");
        assert!(x.contains(r#"<testcase classname="go/x" name="TestA" time="0.250"/>"#), "{x}");
        assert!(x.contains(r#"<testcase classname="go/x" name="TestB" time="0.250">"#), "{x}");
        assert!(x.contains(r#"<failure message="failed" type="failed">failed"#), "{x}");
        // The failure's body and the suite's output: the last 40 lines and the log's path.
        assert!(x.contains("line 61\nline 62") && !x.contains("line 60\n") && x.contains("line 100"), "{x}");
        assert!(x.contains("log: logs/go__x/test_output.txt"), "{x}");
        assert!(x.contains("<system-out>unresolved: a test failed"), "{x}");
        assert!(x.contains(r#"<skipped message="skipped"/>"#), "{x}");
        // The failing test shows the verdict: no testcase of the instance's own.
        assert!(!x.contains(r#"name="go/x" time"#), "{x}");
        // Unresolved with every test passed: the instance's own testcase says why.
        r.tests = vec![t("TestA", Status::Passed)];
        let x = junit(&[r.clone()], &dir);
        assert!(x.contains(r#"<testcase classname="go/x" name="go/x" time="1.000">"#), "{x}");
        assert!(x.contains(r#"<failure message="unresolved: a test failed" type="unresolved">"#), "{x}");
        // A test the code under test named like the verdict's case is shown as a test of
        // that name, apart from the verdict.
        r.tests = vec![t("TestA", Status::Passed), t("go/x", Status::Passed)];
        let x = junit(&[r.clone()], &dir);
        assert_eq!(x.matches(r#"<testcase classname="go/x" name="go/x" "#).count(), 1, "{x}");
        assert!(x.contains(r#"<testcase classname="go/x" name="go/x (a test of that name)" time="0.250"/>"#), "{x}");
        assert!(x.contains(r#"<testcase classname="go/x" name="go/x" time="1.000">"#), "{x}");
        r.tests = vec![t("TestA", Status::Passed)];
        // The log only beneath the output and through no link: a test_output.txt that is a
        // link (a merged shard's) is neither read nor named.
        std::fs::remove_file(dir.join("logs/go__x/test_output.txt")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("logs/go__x/test_output.txt")).unwrap();
        let x = junit(&[r.clone()], &dir);
        assert!(!x.contains("root:") && !x.contains("log: logs/go__x"), "{x}");
        r.logs = "logs/../../../etc".into();
        assert!(log_path(&dir, &r).is_none() && output_tail(&dir, &r).is_none());
        // A timeout is an error besides its tests.
        r.verdict = Verdict::Timeout;
        let x = junit(&[r], &dir);
        assert!(x.contains(r#"tests="2" failures="0" errors="1""#), "{x}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_table_shows_no_escape_sequence_of_a_test_name() {
        use crate::eval::parsers::TestResult;
        use crate::measure::TestUsage;
        let mut r = result("javascript/x", "javascript", Verdict::Unresolved);
        let usage: TestUsage = serde_json::from_value(json!({"wall_s": 9.0, "cpu_user_s": 1.0, "cpu_system_s": 0.0,
            "memory_peak_bytes": 1000, "method": "in-runner"}))
        .unwrap();
        let name = "zz \x1b]52;c;cHduZWQ=\x07\x1b[2K\r\u{9b}1Aresolved 1 of 1 \u{202e}evlos";
        r.tests =
            vec![TestResult { name: name.into(), status: Status::Passed, duration_s: Some(9.0), usage: Some(usage) }];
        let t = table(&[r.clone()], Duration::from_secs(1), "gold", &redo());
        assert!(t.contains("zz ?]52;c;cHduZWQ=??[2K??1Aresolved 1 of 1 ?evlos"), "{t}");
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
        // Nor a line of its own: a line break in a name draws no forged summary line.
        r.tests[0].name = "zz\nresolved 9 of 9 (100.0%)".into();
        let t = table(&[r], Duration::from_secs(1), "gold", &redo());
        assert!(!t.lines().any(|l| l.starts_with("resolved 9")), "{t}");
    }

    #[test]
    fn the_resume_command_quotes_what_the_shell_would_split() {
        assert_eq!(shell_quote("--filter-category"), "--filter-category");
        assert_eq!(shell_quote("/tmp/out dir"), "'/tmp/out dir'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn markdown_has_languages_failures_and_the_heaviest_instances() {
        let mut bad = result("go/a|b", "go", Verdict::Unresolved);
        bad.reason = Some("x | y\nsecond <line>".into());
        bad.memory_peak_bytes = 300 << 20;
        let mut ok = result("python/ok", "python", Verdict::Resolved);
        ok.wall_s = 9.0;
        let m = markdown(
            &[bad, ok],
            Duration::from_secs(10),
            "gold",
            Some("1 of 3 instances not run"),
            Path::new("/none"),
            &redo(),
        );
        assert!(m.starts_with("## polysandbox eval: 1 of 2 resolved (50.0%)\n"), "{m}");
        assert!(m.contains("> **Interrupted**: 1 of 3 instances not run\n"), "{m}");
        assert!(m.contains("Predictions: gold. 2 instances in 10.0 s.\n"), "{m}");
        assert!(m.contains("| go | 1 | 0 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0.0% |\n"), "{m}");
        assert!(m.contains("| **all** | 2 | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 50.0% |\n"), "{m}");
        // One line per cell, pipes escaped, no markup.
        assert!(m.contains("| `go/a\\|b` | unresolved | `x \\| y second <line>` |  |\n"), "{m}");
        let slowest = m.split("### Slowest instances").nth(1).unwrap();
        assert!(slowest.lines().nth(4).unwrap().starts_with("| `python/ok` | 9.0 s |"), "{m}");
        let memory = m.split("### Most memory").nth(1).unwrap();
        assert!(memory.lines().nth(4).unwrap().contains("| 300.0 MiB | unresolved |"), "{m}");
    }

    #[test]
    fn a_reason_draws_no_markup_in_the_summary() {
        // The red teams': names from the run's own output reach a reason, and the step summary.
        let mut bad = result("rust/accumulate", "rust", Verdict::Unresolved);
        let evil = "libtest's log names ok ![ci](https://evil.example/pixel.png) **all tests passed** \
                    [full log](https://evil.example/log) <img src=x> &lt; www.evil.example `code` ``x`` ~~s~~ _e_ \
                    user@evil.example @someone #123 :tada: a | b twice";
        bad.reason = Some(evil.into());
        let m = markdown(&[bad], Duration::from_secs(1), "p.jsonl", None, Path::new("/none"), &redo());
        let row = m.lines().find(|l| l.contains("pixel")).unwrap_or_else(|| panic!("{m}"));
        // The reason is one code span (nothing in it is markup, on GitHub neither), which no
        // backtick of its own can close, and no pipe of its own ends the cell.
        let cell = row.split(" | ").nth(2).unwrap();
        assert!(cell.starts_with('`') && cell.ends_with('`'), "{cell}");
        let inner = &cell[1..cell.len() - 1];
        assert!(!inner.contains('`'), "{cell}");
        assert!(!inner.replace("\\|", "").contains('|'), "{cell}");
        let shown = evil.split_whitespace().collect::<Vec<_>>().join(" ").replace('`', "'");
        assert_eq!(inner.replace("\\|", "|"), shown);
    }

    #[test]
    fn ratios_to_gold_are_in_every_report() {
        use crate::eval::parsers::TestResult;
        use crate::eval::vs_gold::VsGold;
        use crate::measure::{Method, TestUsage};
        let t = |name: &str, cpu: Option<f64>, mem: Option<f64>| TestResult {
            name: name.into(),
            status: Status::Passed,
            duration_s: None,
            usage: Some(TestUsage {
                wall_s: 1.0,
                cpu_user_s: 1.0,
                cpu_system_s: 0.0,
                memory_peak_bytes: 1,
                method: Method::Process,
                memory: None,
                stopped_by: None,
                cpu_vs_gold: cpu,
                memory_vs_gold: mem,
                exit_code: None,
                signal: None,
            }),
        };
        let mut slow = result("python/slow", "python", Verdict::Resolved);
        slow.tests = vec![t("test_burn", Some(21.3), Some(1.0)), t("test_idle", None, Some(1.1))];
        slow.vs_gold =
            Some(VsGold { cpu: Some(20.0), memory: Some(1.1), wall: Some(5.0), tests: 2, ..Default::default() });
        let mut same = result("go/same", "go", Verdict::Resolved);
        same.tests = vec![t("TestA", Some(1.02), Some(0.9))];
        same.vs_gold = Some(VsGold { cpu: Some(1.02), memory: Some(0.9), wall: None, tests: 1, ..Default::default() });
        let rs = vec![same, slow, result("plain", "go", Verdict::Resolved)];
        let s = summary(&rs, Duration::ZERO, "gold", &redo());
        let v = &s["vs_gold"];
        assert_eq!(v["tests"]["compared"], json!(3), "{v}");
        assert_eq!(v["tests"]["cpu"]["max"], json!(21.3), "{v}");
        assert_eq!(v["tests"]["cpu"]["n"], json!(2), "{v}");
        assert_eq!(v["instances"]["compared"], json!(2), "{v}");
        assert_eq!(v["instances"]["cpu"]["median"], json!(20.0), "{v}");
        assert_eq!(
            v["largest_cpu_tests"][0],
            json!({"instance_id": "python/slow", "test": "test_burn", "cpu_vs_gold": 21.3})
        );
        assert_eq!(v["largest_cpu_instances"][0], json!({"instance_id": "python/slow", "cpu": 20.0}));
        let x = junit(&rs, Path::new("/nonexistent"));
        assert!(x.contains("<property name=\"test_burn: cpu_vs_gold\" value=\"21.300\"/>"), "{x}");
        assert!(x.contains("<property name=\"cpu_vs_gold\" value=\"20.000\"/>"), "{x}");
        assert!(x.contains("<property name=\"test_idle: memory_peak_bytes\" value=\"1\"/>"), "{x}");
        let t = table(&rs, Duration::ZERO, "gold", &redo());
        assert!(t.contains("vs gold: median CPU 20.00x, slowest python/slow 20.00x; median memory 1.10x, largest python/slow 1.10x\n"), "{t}");
        assert!(t.contains("  largest CPU vs gold: python/slow test_burn (21.30x), go/same TestA (1.02x)\n"), "{t}");
        // None compared: no line, and nulls in report.json.
        let plain = [result("plain", "go", Verdict::Resolved)];
        assert!(!table(&plain, Duration::ZERO, "gold", &redo()).contains("vs gold"));
        assert_eq!(summary(&plain, Duration::ZERO, "gold", &redo())["vs_gold"]["tests"]["cpu"], Value::Null);
    }

    #[test]
    fn the_table_says_what_the_score_is_over() {
        let mut excluded = result("x", "go", Verdict::Unresolved);
        excluded.excluded = true;
        let rs = vec![
            result("a", "go", Verdict::Resolved),
            result("b", "go", Verdict::Error),
            result("n", "go", Verdict::NoPrediction),
            excluded,
        ];
        let t = table(&rs, Duration::from_secs(3), "gold", &redo());
        assert!(t.contains("resolved 1 of 3 (33.3%), 3.0 s wall; predictions: gold\n"), "{t}");
        assert!(t.contains("1 error (counted as not resolved; rerun it with --resume)"), "{t}");
        assert!(t.contains("1 left out of the score"), "{t}");
        assert!(t.lines().next().unwrap().contains(" empty no_pred patch_f "), "{t}");
        let go = t.lines().find(|l| l.starts_with("go ")).unwrap();
        assert_eq!(
            go.split_whitespace().take(10).collect::<Vec<_>>(),
            ["go", "4", "1", "1", "0", "1", "0", "0", "0", "1"]
        );
    }

    /// What the calibration left out is said per cause (the kind its reason names, or the
    /// whole cause capped where it names none), with how many, which, and the command that
    /// calibrates them again: every id in report.json, the first few in the table and the
    /// Markdown summary.
    #[test]
    fn exclusions_are_said_per_cause_with_the_command_that_redoes_them() {
        let excluded = |id: &str, reason: &str| {
            let mut r = result(id, "java", Verdict::Error);
            r.reason = Some(reason.into());
            r.excluded = true;
            r
        };
        let long = "gold times out after 3000ms while the tests were still running ".repeat(5);
        let mut rs = vec![
            result("a", "go", Verdict::Resolved),
            excluded(
                "java/hangman",
                "gold fails here: missing dependency: H.java:1: error: package io.reactivex does not exist",
            ),
            excluded("rust/net", "gold fails here: network needed (sandboxes have none): could not resolve crates.io"),
            excluded("java/x```y", "gold fails here: missing dependency: X.java:2: error: package a.b does not exist"),
            excluded("go/slow", &format!("gold fails here: {long}")),
            excluded("go/none", "gold fails here: "),
        ];
        let many: Vec<String> = (0..12).map(|i| format!("py/{i:02}")).collect();
        for id in &many {
            rs.push(excluded(id, "gold fails here: gold fails its tests: test_x failed\nsecond line"));
        }
        let by = excluded_by_cause(&rs);
        let causes: Vec<(&str, usize)> = by.iter().map(|e| (e.cause.as_str(), e.ids.len())).collect();
        let capped = md_line(&long, CAUSE_CHARS);
        assert_eq!(
            causes,
            [
                ("gold fails its tests", 12),
                ("missing dependency", 2),
                (capped.as_str(), 1),
                ("network needed (sandboxes have none)", 1),
                ("no cause recorded", 1)
            ]
        );
        assert!(capped.chars().count() == CAUSE_CHARS && capped.ends_with('…'), "{capped}");

        // report.json: every id of each cause, and the command for them all.
        let s = summary(&rs, Duration::ZERO, "gold", &redo());
        assert_eq!(s["excluded_ids"].as_array().unwrap().len(), 17, "{s}");
        let e = &s["excluded_by_cause"];
        assert_eq!(e[0]["cause"], json!("gold fails its tests"));
        assert_eq!(e[0]["count"], json!(12));
        assert_eq!(e[0]["ids"], json!(many));
        assert_eq!(
            e[0]["command"],
            json!(format!("polysandbox calibrate /data --root /store --instance {}", many.join(" ")))
        );
        assert_eq!(e[1]["ids"], json!(["java/hangman", "java/x```y"]));
        assert_eq!(
            e[1]["command"],
            json!("polysandbox calibrate /data --root /store --instance java/hangman 'java/x```y'")
        );
        assert_eq!(e.as_array().unwrap().len(), 5);
        // None left out: an empty list.
        assert_eq!(summary(&rs[..1], Duration::ZERO, "gold", &redo())["excluded_by_cause"], json!([]));

        // The table: a line per cause, then its command; the first ten ids of a cause.
        let t = table(&rs, Duration::ZERO, "gold", &redo());
        assert!(t.contains("17 left out of the score: the calibration found gold failing there; per cause:\n"), "{t}");
        assert!(t.contains("  missing dependency: 2 (java/hangman, java/x```y)\n    calibrate them again: polysandbox calibrate /data --root /store --instance java/hangman 'java/x```y'\n"), "{t}");
        assert!(t.contains("  no cause recorded: 1 (go/none)\n"), "{t}");
        let ten = many[..10].join(" ");
        assert!(t.contains(&format!("  gold fails its tests: 12 ({} and 2 more)\n", many[..10].join(", "))), "{t}");
        assert!(t.contains(&format!("    calibrate them again (the first 10 of 12; for all of them: excluded_by_cause in report.json): polysandbox calibrate /data --root /store --instance {ten}\n")), "{t}");
        assert!(!t.contains("py/10"), "{t}");
        assert!(!t.contains("second line"), "{t}");

        // The Markdown summary: the same, each command in a code block no backtick closes.
        let m = markdown(&rs, Duration::ZERO, "gold", None, Path::new("/none"), &redo());
        let section = m.split("### Left out of the score (17)\n").nth(1).unwrap_or_else(|| panic!("{m}"));
        assert!(section.contains("`missing dependency`: 2 (`java/hangman`, `java/x'''y`)\n\n````sh\npolysandbox calibrate /data --root /store --instance java/hangman 'java/x```y'\n````\n"), "{m}");
        assert!(section.contains(&format!("`gold fails its tests`: 12 (`py/00`, `py/01`, `py/02`, `py/03`, `py/04`, `py/05`, `py/06`, `py/07`, `py/08`, `py/09` and 2 more) (the first 10 of 12; for all of them: excluded_by_cause in report.json)\n\n```sh\npolysandbox calibrate /data --root /store --instance {ten}\n```\n")), "{m}");
        // Nothing left out: no section.
        assert!(!markdown(&rs[..1], Duration::ZERO, "gold", None, Path::new("/none"), &redo()).contains("Left out"));
    }

    /// The reports (and settings.json) are written into an output directory another user may
    /// write: each a new file put in place, so a link planted at its name or at the temporary
    /// name it used to be written under first is replaced, never written through.
    #[test]
    fn reports_are_not_written_through_a_planted_link() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!("polysandbox-report-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("out");
        std::fs::create_dir_all(&dir).unwrap();
        let victim = base.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let names = ["report.json", "junit.xml", "report.html", "summary.md", "settings.json"];
        for n in names {
            std::os::unix::fs::symlink(&victim, dir.join(n)).unwrap();
            std::os::unix::fs::symlink(&victim, dir.join(format!(".{n}.tmp"))).unwrap();
        }
        std::os::unix::fs::symlink(&victim, dir.join("settings.json.tmp")).unwrap();
        let out = Outputs {
            wall: Duration::from_secs(1),
            predictions: "gold".into(),
            label: String::new(),
            interrupted: None,
            summary_md: Some(dir.join("summary.md")),
            step_summary: false,
            recalibrate: redo(),
        };
        let r = write_outputs(&dir, &[result("go/x", "go", Verdict::Resolved)], &out);
        let o = crate::eval::Options::new("data".into(), "gold", dir.clone(), "".into());
        let s = crate::eval::settings::Settings::of(&o).write(&dir);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep", "written through a link");
        r.unwrap();
        s.unwrap();
        for n in names {
            let md = std::fs::symlink_metadata(dir.join(n)).unwrap();
            assert!(md.is_file(), "{n} is not a new file");
            assert_eq!(md.permissions().mode() & 0o022, 0, "{n}: writable by others");
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}
