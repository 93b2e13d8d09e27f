//! Calibration: what the dataset's own reference solution does in this environment (these
//! images, these limits), so that eval never charges the model for the environment.
//!
//! `polysandbox calibrate` runs the gold solution N times and the stub once, and keeps per
//! instance: whether gold passes, which tests it passes in every run (the set a prediction
//! must pass, by name), which tests differ across runs (flaky: left out of grading), the
//! cause when gold fails, and measured wall, CPU and peak memory (for scheduling); and gold's
//! usage, of the whole run and of each test it passes, that eval's ratios to gold divide by
//! (see vs_gold.rs).

use super::parsers::Status;
use super::{InstanceResult, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The calibration file's format. Fields added since (gold's usage) are optional, so a file
/// written before them still loads (eval then has nothing to divide by, and says so once); the
/// number changes only for a change an older file cannot be read under.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    pub format: u32,
    /// The dataset, as given (absolute).
    pub dataset: String,
    /// `uname -m` of the host that made it.
    pub arch: String,
    /// Gold runs per instance.
    pub runs: u32,
    pub created_unix: u64,
    pub instances: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// The image the runs used: a calibration holds for that image only.
    pub image: String,
    /// Its manifest digest: a rebuild under the same name is another image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_digest: Option<String>,
    /// Gold resolved in every run, flaky tests aside.
    pub gold_passes: bool,
    pub gold_verdicts: Vec<Verdict>,
    /// Why gold does not pass here (the first error line of its output, and the verdict's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Tests gold passed in every run: a prediction must pass each of them, by name.
    pub tests: Vec<String>,
    /// Tests whose status differed between gold runs: left out of grading.
    pub flaky: Vec<String>,
    /// Tests gold skipped (or xfailed) in every run: skips the dataset itself makes.
    #[serde(default)]
    pub skipped: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stub: Option<Verdict>,
    pub wall_s_max: f64,
    pub cpu_s_max: f64,
    pub memory_peak_bytes_max: u64,
    /// Controls gold was seen to fail (copies of this instance's tests with an expectation
    /// and an input changed): eval draws its controls from them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<super::control::Candidate>,
    /// How `controls` were made ([`super::control::CANDIDATES`]; 0 before the number was
    /// kept): eval draws only from a pool made as this build makes them, and calibrates again
    /// an instance whose pool is older (a changed literal of an older build's can say which
    /// copy is the control).
    #[serde(default)]
    pub controls_made: u32,
    /// Planted controls changed a test gold passes without them: eval plants none here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub control_sensitive: bool,
    /// Gold's whole runs, for the ratios to gold (absent in calibrations made before them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_usage: Option<GoldUsage>,
    /// Gold's usage of each test it passed in every run, by name (absent without per-test
    /// measurement).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gold_tests: BTreeMap<String, GoldTest>,
}

/// What gold's runs used, robust over them: the lowest CPU and wall time of the runs (what
/// disturbs a run, a neighbour's load or a cold cache, only ever adds to them, so the lowest is
/// the closest to the solution's own cost), and the highest peak memory (a peak is what the
/// solution can reach; a run that reached less was lucky in when its garbage was collected).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GoldUsage {
    pub wall_s: f64,
    pub cpu_s: f64,
    pub memory_peak_bytes: u64,
}

/// Gold's usage of one test over its runs (as [`GoldUsage`]: lowest CPU and wall, highest peak),
/// and how it was measured: a prediction's test is compared with it only when measured the same
/// way.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GoldTest {
    pub wall_s: f64,
    pub cpu_s: f64,
    pub memory_peak_bytes: u64,
    pub method: crate::measure::Method,
    /// What the peak is (`maxrss`, `vmhwm`, `vmhwm-unreset`): see [`crate::measure::TestUsage`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

/// Gold's usage over its runs: the whole runs' (those that ran), and each test's that gold
/// passed in every run and that every run measured the same way.
fn gold_usage(gold: &[(InstanceResult, String)], passed: &[String]) -> (Option<GoldUsage>, BTreeMap<String, GoldTest>) {
    let ran: Vec<&InstanceResult> = gold.iter().map(|(r, _)| r).filter(|r| r.attempts > 0 && r.wall_s > 0.0).collect();
    let low = |v: &mut dyn Iterator<Item = f64>| v.fold(f64::INFINITY, f64::min);
    let run = (!ran.is_empty()).then(|| GoldUsage {
        wall_s: low(&mut ran.iter().map(|r| r.wall_s)),
        cpu_s: low(&mut ran.iter().map(|r| r.cpu_s)),
        memory_peak_bytes: ran.iter().map(|r| r.memory_peak_bytes).max().unwrap_or(0),
    });
    let mut tests = BTreeMap::new();
    for name in passed {
        let usages: Vec<&crate::measure::TestUsage> = gold
            .iter()
            .map(|(r, _)| r.tests.iter().rev().find(|t| &t.name == name).and_then(|t| t.usage.as_ref()))
            .collect::<Option<_>>()
            .unwrap_or_default();
        let Some(first) = usages.first() else { continue };
        if usages.iter().any(|u| u.method != first.method || u.memory != first.memory || u.stopped_by.is_some()) {
            continue;
        }
        tests.insert(
            name.clone(),
            GoldTest {
                wall_s: low(&mut usages.iter().map(|u| u.wall_s)),
                cpu_s: low(&mut usages.iter().map(|u| u.cpu_s())),
                memory_peak_bytes: usages.iter().map(|u| u.memory_peak_bytes).max().unwrap_or(0),
                method: first.method,
                memory: first.memory.clone(),
            },
        );
    }
    (run, tests)
}

/// Where a dataset's calibration is kept by default: beside the image store, named by the
/// dataset's absolute path.
pub fn default_path(store_root: &Path, dataset: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let h = format!("{:x}", Sha256::digest(dataset.as_os_str().as_encoded_bytes()));
    let name = dataset
        .file_name()
        .map(|n| n.to_string_lossy().replace(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_', "_"))
        .unwrap_or_default();
    store_root.join("calibrations").join(format!("{name}-{}.json", &h[..16]))
}

pub fn load(path: &Path) -> Result<Calibration, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("calibration {}: {e}", path.display()))?;
    let c: Calibration = serde_json::from_str(&text).map_err(|e| format!("calibration {}: {e}", path.display()))?;
    if c.format != FORMAT {
        return Err(format!(
            "calibration {}: format {} (this polysandbox reads {FORMAT}); run calibrate again",
            path.display(),
            c.format
        ));
    }
    Ok(c)
}

/// A line that names a control test (`t` and 16 hex digits): its failure is by design.
fn names_control(line: &str) -> bool {
    let b = line.as_bytes();
    (0..b.len().saturating_sub(16)).any(|i| {
        b[i] == b't'
            && b[i + 1..i + 17].iter().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            && b.get(i + 17).is_none_or(|c| !c.is_ascii_alphanumeric())
    })
}

/// The first line of a run's output that says what went wrong (a compiler's or a loader's
/// error, a missing module or package), the control test's lines aside.
pub fn first_error(output: &str) -> Option<String> {
    // Most telling first: what is missing, then any error line.
    const SIGNS: [&str; 16] = [
        "No module named",
        "error[E",
        "Cannot find module",
        // javac: "package io.reactivex does not exist" comes before its "cannot find symbol".
        "does not exist",
        "cannot find",
        "unresolved import",
        "no matching package",
        "failed to select a version",
        "Could not resolve",
        "not found",
        "error:",
        "Error:",
        "Error ",
        "ERROR",
        "FAILED",
        "panic",
    ];
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        // Neither the control test's lines nor a runner's rules ("==== ERRORS ====").
        .filter(|l| !l.is_empty() && !names_control(l) && !l.starts_with(['=', '-', '_', '*']))
        .collect();
    SIGNS.iter().find_map(|s| lines.iter().find(|l| l.contains(s))).map(|l| l.chars().take(300).collect())
}

/// What kind of environment failure a line shows, when it shows one.
fn kind_of(line: &str) -> Option<&'static str> {
    const NETWORK: [&str; 6] = [
        "EAI_AGAIN",
        "getaddrinfo",
        "Temporary failure in name resolution",
        "Could not resolve host",
        "Network is unreachable",
        "network is unreachable",
    ];
    const CRATE: [&str; 2] = ["no matching package named", "failed to select a version for the requirement"];
    const MODULE: [&str; 5] =
        ["No module named", "Cannot find module", "unresolved import", "does not exist", "cannot find package"];
    if NETWORK.iter().any(|s| line.contains(s)) {
        Some("network needed (sandboxes have none)")
    } else if CRATE.iter().any(|s| line.contains(s)) {
        Some("missing crate (not among the image's vendored crates)")
    } else if MODULE.iter().any(|s| line.contains(s)) {
        Some("missing dependency")
    } else {
        None
    }
}

/// The cause of a failed gold run, for people: the kind of environment failure where one is
/// recognised ("network needed", "missing crate", "missing dependency"), and the line that
/// shows it.
pub fn cause_in(output: &str) -> Option<String> {
    // A network failure anywhere explains what follows it.
    let network = output.lines().map(str::trim).find(|l| kind_of(l) == Some("network needed (sandboxes have none)"));
    let line = network.map(|l| l.chars().take(300).collect()).or_else(|| first_error(output))?;
    Some(match kind_of(&line) {
        Some(kind) => format!("{kind}: {line}"),
        None => line,
    })
}

/// One instance's entry from its gold runs (each with its output; the tests as shipped), its
/// stub run, and the run that planted every candidate control (`verify`).
pub fn entry(
    gold: &[(InstanceResult, String)],
    stub: Option<&InstanceResult>,
    verify: Option<&InstanceResult>,
) -> Entry {
    // A run that ended abnormally (an error, a timeout, out of memory, a signal) while another
    // run of gold's resolved is the environment's accident of that moment (another sandbox
    // holding a resource, a loaded host), not what gold does here: left out, so that it
    // neither makes "gold fails here" nor turns every test flaky. A failure every run repeats
    // stays (calibrate runs a failing instance again before deciding).
    let abnormal = |r: &InstanceResult| {
        matches!(r.verdict, Verdict::Error | Verdict::Timeout | Verdict::Oom) || r.signal.is_some()
    };
    let kept: Vec<(InstanceResult, String)>;
    let gold = if gold.iter().any(|(r, _)| r.verdict == Verdict::Resolved) && gold.iter().any(|(r, _)| abnormal(r)) {
        kept = gold.iter().filter(|(r, _)| !abnormal(r)).cloned().collect();
        &kept[..]
    } else {
        gold
    };
    let first = &gold[0].0;
    // Status per test per run; a test missing from a run counts as a status of its own.
    let mut names: BTreeSet<String> = BTreeSet::new();
    for (r, _) in gold {
        names.extend(r.tests.iter().map(|t| t.name.clone()));
    }
    let status = |r: &InstanceResult, n: &str| r.tests.iter().rev().find(|t| t.name == n).map(|t| t.status);
    let mut tests = Vec::new();
    let mut flaky = Vec::new();
    let mut skipped = Vec::new();
    for n in &names {
        let s: Vec<Option<Status>> = gold.iter().map(|(r, _)| status(r, n)).collect();
        if s.iter().all(|x| *x == s[0]) {
            match s[0] {
                Some(Status::Passed) => tests.push(n.clone()),
                Some(Status::Skipped | Status::Xfail) => skipped.push(n.clone()),
                _ => {}
            }
        } else {
            flaky.push(n.clone());
        }
    }
    // A run passes if it resolved, or if only flaky tests kept it from resolving.
    let run_passes = |r: &InstanceResult| {
        r.verdict == Verdict::Resolved
            || (r.verdict == Verdict::Unresolved
                && !r.tests.is_empty()
                && r.tests.iter().all(|t| t.status == Status::Passed || flaky.contains(&t.name))
                && r.reason.as_deref().is_some_and(|w| !w.contains("not the runner's own")))
    };
    let gold_passes = gold.iter().all(|(r, _)| run_passes(r));
    let cause = if gold_passes {
        None
    } else {
        let (r, out) = gold.iter().find(|(r, _)| !run_passes(r)).unwrap();
        let why = r.reason.clone().unwrap_or_else(|| r.verdict.to_string());
        Some(match cause_in(out) {
            Some(line) if !why.contains(&line) => format!("{line} ({}: {why})", r.verdict),
            _ => format!("{}: {why}", r.verdict),
        })
    };
    // The controls gold failed; and whether planting them changed a test gold passes.
    let controls: Vec<super::control::Candidate> = verify
        .map(|v| v.verified.iter().filter(|(_, failed)| *failed).map(|(c, _)| c.clone()).collect())
        .unwrap_or_default();
    let control_sensitive = verify.is_some_and(|v| {
        !v.verified.is_empty()
            && tests
                .iter()
                .any(|t| v.tests.iter().rev().find(|x| &x.name == t).map(|x| x.status) != Some(Status::Passed))
    });
    let max = |f: &dyn Fn(&InstanceResult) -> f64| gold.iter().map(|(r, _)| f(r)).fold(0.0, f64::max);
    let (gold_usage, gold_tests) = gold_usage(gold, &tests);
    Entry {
        image: first.image.clone(),
        image_digest: first.image_digest.clone(),
        gold_passes,
        gold_verdicts: gold.iter().map(|(r, _)| r.verdict).collect(),
        cause,
        tests,
        flaky,
        skipped,
        stub: stub.map(|s| s.verdict),
        wall_s_max: max(&|r| r.wall_s),
        cpu_s_max: max(&|r| r.cpu_s),
        memory_peak_bytes_max: gold.iter().map(|(r, _)| r.memory_peak_bytes).max().unwrap_or(0),
        controls,
        controls_made: super::control::CANDIDATES,
        control_sensitive,
        gold_usage,
        gold_tests,
    }
}

/// What two calibrations disagree on, tests either marks flaky aside: one line per difference.
pub fn differences(a: &Calibration, b: &Calibration) -> Vec<String> {
    let mut out = Vec::new();
    let ids: BTreeSet<&String> = a.instances.keys().chain(b.instances.keys()).collect();
    for id in ids {
        let (Some(x), Some(y)) = (a.instances.get(id), b.instances.get(id)) else {
            out.push(format!("{id}: in one calibration only"));
            continue;
        };
        if x.gold_passes != y.gold_passes {
            out.push(format!("{id}: gold passes {} vs {}", x.gold_passes, y.gold_passes));
        }
        if x.stub != y.stub {
            out.push(format!("{id}: stub {:?} vs {:?}", x.stub, y.stub));
        }
        let flaky: BTreeSet<&String> = x.flaky.iter().chain(&y.flaky).collect();
        let tx: BTreeSet<&String> = x.tests.iter().filter(|t| !flaky.contains(t)).collect();
        let ty: BTreeSet<&String> = y.tests.iter().filter(|t| !flaky.contains(t)).collect();
        for t in tx.symmetric_difference(&ty) {
            out.push(format!("{id}: test {t} passes in one calibration only"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::parsers::TestResult;

    fn run(verdict: Verdict, tests: &[(&str, Status)], reason: Option<&str>) -> InstanceResult {
        let mut r: InstanceResult = serde_json::from_value(serde_json::json!({
            "instance_id": "x", "language": "python", "verdict": "resolved", "exit_code": 1, "signal": null,
            "wall_s": 1.0, "cpu_s": 0.5, "memory_peak_bytes": 1000, "timed_out": false, "oom": false,
            "tests": [], "image": "img", "attempts": 1, "key": "k"
        }))
        .unwrap();
        r.verdict = verdict;
        r.reason = reason.map(String::from);
        r.tests = tests
            .iter()
            .map(|(n, s)| TestResult { name: n.to_string(), status: *s, duration_s: None, usage: None })
            .collect();
        r
    }

    #[test]
    fn flaky_tests_and_causes() {
        use Status::*;
        let a = run(Verdict::Resolved, &[("a", Passed), ("b", Passed)], None);
        let b = run(Verdict::Unresolved, &[("a", Passed), ("b", Failed)], Some("1 failed, 1 passed"));
        let e = entry(&[(a.clone(), String::new()), (b, String::new())], None, None);
        assert_eq!(
            (e.tests.clone(), e.flaky.clone(), e.gold_passes),
            (vec!["a".to_string()], vec!["b".to_string()], true)
        );
        let bad = run(Verdict::Unresolved, &[], Some("tests exited 101; 0 failed, 0 passed"));
        let out = "   Compiling x\nerror[E0432]: unresolved import `num_bigint`\n test t0123456789abcdef ... FAILED\n";
        let e = entry(&[(bad.clone(), out.into()), (bad, out.into())], Some(&a), None);
        assert!(!e.gold_passes);
        assert!(
            e.cause.as_deref().unwrap().starts_with("missing dependency: error[E0432]: unresolved import `num_bigint`"),
            "{:?}",
            e.cause
        );
        let npm = "npm ERR! code EAI_AGAIN\nnpm ERR! request to https://registry.npmjs.org/jest failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\n";
        assert!(cause_in(npm).unwrap().starts_with("network needed"), "{:?}", cause_in(npm));
        let cargo = "error: no matching package named `serde` found\nlocation searched: directory source `/opt/polysandbox/cargo-vendor`\n";
        assert_eq!(
            cause_in(cargo).unwrap(),
            "missing crate (not among the image's vendored crates): error: no matching package named `serde` found"
        );
        assert_eq!(first_error("test t0123456789abcdef ... FAILED\nok\n"), None);
        let javac = "H.java:6: error: cannot find symbol\nH.java:1: error: package io.reactivex does not exist\n";
        assert_eq!(
            cause_in(javac).unwrap(),
            "missing dependency: H.java:1: error: package io.reactivex does not exist"
        );
        assert_eq!(e.stub, Some(Verdict::Resolved));
    }

    /// A gold run killed by the environment (a signal, an error, a timeout) while another run
    /// resolved is left out: gold passes here and no test turns flaky. One that every run
    /// repeats makes "gold fails here", as before.
    #[test]
    fn an_accident_of_one_run_is_not_gold_failing_here() {
        use Status::*;
        let ok = run(Verdict::Resolved, &[("a", Passed), ("b", Passed)], None);
        let mut aborted = run(Verdict::Unresolved, &[("a", Passed), ("b", Failed)], Some("tests exited by signal 6"));
        aborted.signal = Some(6);
        let error = run(Verdict::Error, &[], Some("the sandbox failed"));
        for accident in [aborted.clone(), error.clone()] {
            let e = entry(&[(accident, String::new()), (ok.clone(), String::new())], None, None);
            assert!(e.gold_passes, "{e:?}");
            assert!(e.flaky.is_empty() && e.tests == ["a", "b"], "{e:?}");
        }
        let e = entry(&[(aborted.clone(), String::new()), (aborted, String::new())], None, None);
        assert!(!e.gold_passes);
    }

    #[test]
    fn gold_usage_is_the_lowest_cpu_and_the_highest_peak_of_the_runs() {
        use crate::measure::{Method, TestUsage};
        let u = |cpu: f64, peak: u64| TestUsage {
            wall_s: cpu * 2.0,
            cpu_user_s: cpu,
            cpu_system_s: 0.01,
            memory_peak_bytes: peak,
            method: Method::InRunner,
            memory: Some("vmhwm".into()),
            stopped_by: None,
            cpu_vs_gold: None,
            memory_vs_gold: None,
            exit_code: None,
            signal: None,
        };
        let mut a = run(Verdict::Resolved, &[("burn", Status::Passed), ("idle", Status::Passed)], None);
        let mut b = a.clone();
        a.tests[0].usage = Some(u(0.35, 100));
        b.tests[0].usage = Some(u(0.30, 120));
        a.tests[1].usage = Some(u(0.001, 10));
        (b.wall_s, b.cpu_s, b.memory_peak_bytes) = (0.8, 0.7, 2000);
        let e = entry(&[(a, String::new()), (b, String::new())], None, None);
        let g = e.gold_usage.clone().unwrap();
        assert_eq!((g.wall_s, g.cpu_s, g.memory_peak_bytes), (0.8, 0.5, 2000));
        let burn = &e.gold_tests["burn"];
        assert!((burn.cpu_s - 0.31).abs() < 1e-9 && burn.memory_peak_bytes == 120 && burn.method == Method::InRunner);
        // Measured in one run only: not kept.
        assert!(!e.gold_tests.contains_key("idle"));
        // A calibration written before these fields loads, without them.
        let mut old = serde_json::to_value(&e).unwrap();
        let o = old.as_object_mut().unwrap();
        assert!(o.remove("gold_usage").is_some() && o.remove("gold_tests").is_some());
        let back: Entry = serde_json::from_value(old).unwrap();
        assert!(back.gold_usage.is_none() && back.gold_tests.is_empty());
    }

    #[test]
    fn default_place_is_beside_the_store() {
        let p = default_path(Path::new("/s"), Path::new("/data/polyglot benchmark"));
        assert!(
            p.starts_with("/s/calibrations")
                && p.file_name().unwrap().to_str().unwrap().starts_with("polyglot_benchmark-")
        );
    }
}
