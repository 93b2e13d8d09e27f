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
    /// The settings gold ran under (limits, network, runner, polysandbox's version): the entry
    /// holds for those only (absent: made by a polysandbox that did not keep them, held for
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Conditions>,
    /// When it was made (seconds since the epoch; 0 before it was kept): reports say how old
    /// an exclusion is.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub calibrated_unix: u64,
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

/// What a run of an instance was made under, besides its image: what gold did under one set
/// of them says nothing of what it does under another (a timeout of 3 s against the default
/// 30 minutes), so an entry is used only by a run whose conditions are the same.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Conditions {
    /// The wall-clock limit, as the run states it (`1800s`, `3000ms`).
    pub timeout: String,
    pub memory: u64,
    pub cpus: f64,
    pub pids: u64,
    #[serde(default)]
    pub network: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<u64>,
    /// The runner as the run used it (command, report files, per-test measurement, caches):
    /// a digest of it.
    pub runner: String,
    /// The polysandbox that ran it.
    pub polysandbox: String,
    /// A digest of the instance itself (an exercise's files, a record's fields): a dataset
    /// changed under the same path (a `git pull` of the benchmark) is another instance.
    #[serde(default)]
    pub instance: String,
}

impl Conditions {
    /// What differs from `now`, for people: `timeout 3000ms (now 1800s)`; empty when the same.
    pub fn differences(&self, now: &Conditions) -> Vec<String> {
        let mut d = Vec::new();
        let mut say = |what: &str, then: String, now: String| {
            if then != now {
                d.push(format!("{what} {then} (now {now})"));
            }
        };
        say("timeout", self.timeout.clone(), now.timeout.clone());
        say("memory", crate::units::human_bytes(self.memory), crate::units::human_bytes(now.memory));
        say("cpus", self.cpus.to_string(), now.cpus.to_string());
        say("pids", self.pids.to_string(), now.pids.to_string());
        say("network", on(self.network), on(now.network));
        let disk = |d: Option<u64>| d.map_or("default".into(), crate::units::human_bytes);
        say("disk", disk(self.disk), disk(now.disk));
        say("runner", self.runner.clone(), now.runner.clone());
        say("polysandbox", self.polysandbox.clone(), now.polysandbox.clone());
        if self.instance != now.instance {
            d.push("other files or another record for the instance (the dataset changed)".into());
        }
        d
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn on(b: bool) -> String {
    if b { "host" } else { "none" }.into()
}

/// Why an entry does not hold for a run under `now` (None: it holds).
pub fn not_for(e: &Entry, now: &Conditions) -> Option<String> {
    match &e.conditions {
        None => Some("made by an older polysandbox that kept no settings".into()),
        Some(then) => {
            let d = then.differences(now);
            (!d.is_empty()).then(|| format!("made with {}", d.join(", ")))
        }
    }
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

/// Whether the calibration kept at `path` (a store's `calibrations/NAME.json`) can be trusted:
/// the file (when there is one), its directory and the store's root above it each owned by
/// this user or root, and writable by no one else. Another local user could otherwise plant
/// one (a store under /tmp, made by them first) that leaves instances out, or pins tests.
pub fn check_kept(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut at: Vec<&Path> = vec![path];
    at.extend(path.ancestors().skip(1).take(2));
    for p in at {
        let md = match std::fs::symlink_metadata(p) {
            Ok(md) => md,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", p.display())),
        };
        if md.file_type().is_symlink() && p == path {
            return Err(format!("calibration {}: a symbolic link: refused", p.display()));
        }
        if (md.uid() != me && md.uid() != 0) || md.mode() & 0o022 != 0 {
            return Err(format!(
                "calibration {}: {} is owned by uid {} or writable by others (mode {:o}): refused; it could have been planted (remove it, or pass --calibration FILE)",
                path.display(),
                p.display(),
                md.uid(),
                md.mode() & 0o7777
            ));
        }
    }
    Ok(())
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

/// Adds `fresh`'s entries to the calibration kept at `path` (each replacing the entry of its
/// instance, the others kept), under an exclusive lock of `path`'s `.lock` beside it: writers
/// at once (a Slurm array's shards, two evals, two users of one store) each add theirs, none
/// loses another's. The file is replaced whole (a new file renamed over it): a reader sees
/// the one before or the one after. What it holds now is returned.
pub fn store(path: &Path, fresh: &Calibration) -> Result<Calibration, String> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let at = |e: std::io::Error| format!("{}: {e}", path.display());
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(at)?;
    }
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock_path = PathBuf::from(lock_name);
    let open = |write: bool| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .create(write)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&lock_path)
    };
    // Another user's lock file beside a shared store's calibration: locked read-only.
    let lock = open(true).or_else(|_| open(false)).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    // SAFETY: flock on an fd we own; released when `lock` closes.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!("{}: {}", lock_path.display(), std::io::Error::last_os_error()));
    }
    let mut c = match load(path) {
        Ok(c) => c,
        // None yet, or one this polysandbox cannot read (another format): started afresh.
        Err(_) => Calibration { instances: BTreeMap::new(), ..fresh.clone() },
    };
    c.instances.extend(fresh.instances.iter().map(|(k, v)| (k.clone(), v.clone())));
    c.runs = c.runs.max(fresh.runs);
    c.created_unix = fresh.created_unix;
    let text = serde_json::to_string_pretty(&c).map_err(|e| e.to_string())? + "\n";
    crate::sys::beneath::write_new(path, text.as_bytes(), 0o644)?;
    drop(lock);
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
    let lines: Vec<&str> = without_diffs(output)
        .into_iter()
        .map(str::trim)
        // Neither the control test's lines nor a runner's rules ("==== ERRORS ====").
        .filter(|l| !l.is_empty() && !names_control(l) && !l.starts_with(['=', '-', '_', '*']))
        .collect();
    SIGNS.iter().find_map(|s| lines.iter().find(|l| l.contains(s))).map(|l| l.chars().take(300).collect())
}

/// The lines of a run's output outside the diffs it printed (SWE-bench's scripts print `git
/// diff` of the tree, the patch included): a line of the patch is not what went wrong.
fn without_diffs(output: &str) -> Vec<&str> {
    const DIFF: [&str; 12] = [
        "+",
        "-",
        " ",
        "@@",
        "index ",
        "\\ No newline",
        "new file mode",
        "deleted file mode",
        "old mode",
        "new mode",
        "similarity index",
        "rename ",
    ];
    let mut in_diff = false;
    let mut kept = Vec::new();
    for l in output.lines() {
        if l.starts_with("diff --git ") {
            in_diff = true;
            continue;
        }
        if in_diff && (l.is_empty() || DIFF.iter().any(|p| l.starts_with(p))) {
            continue;
        }
        in_diff = false;
        kept.push(l);
    }
    kept
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

/// One instance's entry from its gold runs (each with its output; the tests as shipped) made
/// under `conditions`, its stub run, and the run that planted every candidate control
/// (`verify`); or why there is none to keep.
///
/// An instance leaves the score ("gold fails here") only for a cause that is the
/// environment's and lasting, shown to be so: every run of gold failing, and the same way. A
/// run that could not be made (the sandbox did not start, the image is missing, the host ran
/// short of a budget it shares: an `error` that is not the dataset's own), or runs that failed
/// differently, make no entry: the calibration of that instance is an error, to redo, never
/// kept.
pub fn entry(
    gold: &[(InstanceResult, String)],
    conditions: Option<&Conditions>,
    stub: Option<&InstanceResult>,
    verify: Option<&InstanceResult>,
) -> Result<Entry, String> {
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
    let Some((first, _)) = gold.first() else { return Err("gold did not run".into()) };
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
        lasting_failure(gold)?;
        let (r, out) = gold.iter().find(|(r, _)| !run_passes(r)).unwrap();
        Some(cause_of(r, out, conditions))
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
    Ok(Entry {
        image: first.image.clone(),
        image_digest: first.image_digest.clone(),
        conditions: conditions.cloned(),
        calibrated_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
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
    })
}

/// Whether gold's failing runs show a lasting cause: none is an infrastructure error (the
/// dataset's own, `deterministic`, aside), and all failed the same way (verdict and signal).
/// Why not, otherwise.
fn lasting_failure(gold: &[(InstanceResult, String)]) -> Result<(), String> {
    if let Some((r, _)) = gold.iter().find(|(r, _)| r.verdict == Verdict::Error && !r.deterministic) {
        return Err(format!(
            "gold could not be run here: {}",
            r.reason.as_deref().unwrap_or("an infrastructure error")
        ));
    }
    let way = |r: &InstanceResult| (r.verdict, r.signal);
    let (first, _) = &gold[0];
    if let Some((r, _)) = gold.iter().find(|(r, _)| way(r) != way(first)) {
        let say = |r: &InstanceResult| match r.signal {
            Some(s) => format!("{} (signal {s})", r.verdict),
            None => r.verdict.to_string(),
        };
        return Err(format!(
            "gold failed differently in its runs ({} and {}): no lasting cause shown",
            say(first),
            say(r)
        ));
    }
    Ok(())
}

/// Gold's own failure, for people: a kind first (`missing dependency`, `gold times out`,
/// `gold fails its tests`...), then what shows it: the failing tests by name, the runner's
/// message, the limit reached.
fn cause_of(r: &InstanceResult, out: &str, conditions: Option<&Conditions>) -> String {
    let why = r.reason.clone().unwrap_or_else(|| r.verdict.to_string());
    match r.verdict {
        Verdict::Timeout => format!(
            "gold times out: {why}{}",
            conditions.map(|c| format!(" (--timeout {})", c.timeout)).unwrap_or_default()
        ),
        Verdict::Oom => format!(
            "gold runs out of memory: {why}{}",
            conditions.map(|c| format!(" (--memory {})", crate::units::human_bytes(c.memory))).unwrap_or_default()
        ),
        Verdict::PatchFailed => format!("gold's patch does not apply: {why}"),
        Verdict::EmptyPatch => "gold's patch is empty".into(),
        Verdict::Error => format!("the dataset's record: {why}"),
        // Nothing ran and nothing failed: the dataset's test files hold no test (Aider's
        // go/counter asks the student to write them): nothing to grade, whatever the solution.
        Verdict::Unresolved if r.tests.is_empty() && r.exit_code == Some(0) => {
            format!("no tests: the dataset's tests run none (the runner exited 0 and reported no test: {why})")
        }
        _ => {
            let failing: Vec<&str> = r
                .tests
                .iter()
                .filter(|t| !matches!(t.status, Status::Passed | Status::Skipped | Status::Xfail))
                .map(|t| t.name.as_str())
                .filter(|n| !names_control(n))
                .collect();
            let tests = match failing.len() {
                0 => why.clone(),
                n if n <= 3 => format!("{} failed", failing.join(", ")),
                n => format!("{} and {} more failed", failing[..3].join(", "), n - 3),
            };
            match cause_in(out) {
                // What is missing says it all; the failing tests, when any ran, beside it.
                Some(line) if kind_of(&line).is_some() && failing.is_empty() => line,
                Some(line) if kind_of(&line).is_some() => format!("{line} ({tests})"),
                Some(line) => format!("gold fails its tests: {tests}; {line}"),
                None => format!("gold fails its tests: {tests}"),
            }
        }
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
        let e = entry(&[(a.clone(), String::new()), (b, String::new())], None, None, None).unwrap();
        assert_eq!(
            (e.tests.clone(), e.flaky.clone(), e.gold_passes),
            (vec!["a".to_string()], vec!["b".to_string()], true)
        );
        let bad = run(Verdict::Unresolved, &[], Some("tests exited 101; 0 failed, 0 passed"));
        let out = "   Compiling x\nerror[E0432]: unresolved import `num_bigint`\n test t0123456789abcdef ... FAILED\n";
        let e = entry(&[(bad.clone(), out.into()), (bad, out.into())], None, Some(&a), None).unwrap();
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
            let e = entry(&[(accident, String::new()), (ok.clone(), String::new())], None, None, None).unwrap();
            assert!(e.gold_passes, "{e:?}");
            assert!(e.flaky.is_empty() && e.tests == ["a", "b"], "{e:?}");
        }
        let e = entry(&[(aborted.clone(), String::new()), (aborted, String::new())], None, None, None).unwrap();
        assert!(!e.gold_passes);
    }

    /// #38: what could not be run is never "gold fails here": an infrastructure error (the
    /// sandbox, the image, the host) in any failing run keeps nothing; runs that failed
    /// differently show no lasting cause; the dataset's own error, repeated, is kept.
    #[test]
    fn only_a_lasting_failure_of_gold_is_kept() {
        use Status::*;
        let host = run(Verdict::Error, &[], Some("the host ran short of the file table while the tests ran: rerun"));
        let missing = run(Verdict::Error, &[], Some("cannot pull img: not found"));
        for (a, b) in [
            (host.clone(), host.clone()),
            (missing.clone(), missing),
            (host.clone(), run(Verdict::Unresolved, &[("a", Failed)], Some("1 failed"))),
        ] {
            let e = entry(&[(a, String::new()), (b, String::new())], None, None, None);
            assert!(e.as_ref().is_err_and(|w| w.starts_with("gold could not be run here")), "{e:?}");
        }
        let slow = run(Verdict::Timeout, &[("a", Passed)], Some("wall-clock limit reached"));
        let failed = run(Verdict::Unresolved, &[("a", Failed)], Some("1 failed"));
        let e = entry(&[(slow.clone(), String::new()), (failed, String::new())], None, None, None);
        assert!(e.as_ref().is_err_and(|w| w.contains("failed differently")), "{e:?}");
        let mut dataset = run(Verdict::Error, &[], Some("the dataset's test_patch does not apply"));
        dataset.deterministic = true;
        let e = entry(&[(dataset.clone(), String::new()), (dataset, String::new())], None, None, None).unwrap();
        assert!(!e.gold_passes && e.cause.as_deref().unwrap().starts_with("the dataset's record: "), "{e:?}");
        // A timeout kept names the limit it was made under.
        let c = conditions("3000ms");
        let e = entry(&[(slow.clone(), String::new()), (slow, String::new())], Some(&c), None, None).unwrap();
        assert_eq!(e.cause.as_deref(), Some("gold times out: wall-clock limit reached (--timeout 3000ms)"));
        assert_eq!(e.conditions.as_ref(), Some(&c));
    }

    /// #38: the cause is gold's own failure: the tests that failed, and the runner's message,
    /// never a line of the patch the run printed (SWE-bench's scripts print `git diff`).
    #[test]
    fn the_cause_names_the_failing_tests_not_the_patch() {
        use Status::*;
        let r = run(Verdict::Unresolved, &[("test_ok", Passed), ("test_parse", Failed)], Some("1 failed, 1 passed"));
        let out = "diff --git a/src/x.py b/src/x.py\nindex 1..2 100644\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1,2 +1,3 @@\n     def f():\n+        raise ValueError(\"Error: bad\")\n\n============ FAILURES ============\nE   AssertionError: 3 != 4\nFAILED tests/test_x.py::test_parse\n";
        let e = entry(&[(r.clone(), out.into()), (r, out.into())], None, None, None).unwrap();
        let cause = e.cause.unwrap();
        assert!(cause.starts_with("gold fails its tests: test_parse failed; "), "{cause}");
        assert!(!cause.contains("raise ValueError") && cause.contains("AssertionError: 3 != 4"), "{cause}");
    }

    /// #38: a dataset whose tests run none (Aider's go/counter) is named so, not as a run
    /// that did not finish.
    #[test]
    fn tests_that_run_none_are_named_so() {
        let mut r =
            run(Verdict::Unresolved, &[], Some("exit 0 but no gotest summary: the run did not finish its tests"));
        r.exit_code = Some(0);
        let out = "polysandbox each-test: 0 tests, one process each\n";
        let e = entry(&[(r.clone(), out.into()), (r, out.into())], None, None, None).unwrap();
        assert!(e.cause.as_deref().unwrap().starts_with("no tests: the dataset's tests run none"), "{e:?}");
    }

    fn conditions(timeout: &str) -> Conditions {
        Conditions {
            timeout: timeout.into(),
            memory: 1 << 30,
            cpus: 1.0,
            pids: 4096,
            network: false,
            disk: None,
            runner: "0123456789abcdef".into(),
            polysandbox: "0.1.0".into(),
            instance: "fedcba9876543210".into(),
        }
    }

    /// #38: an entry holds for the conditions it was made under; under others (or none kept)
    /// it is not used, and why is said.
    #[test]
    fn an_entry_holds_for_its_conditions_only() {
        let ok = run(Verdict::Resolved, &[("a", Status::Passed)], None);
        let e = entry(&[(ok.clone(), String::new())], Some(&conditions("3000ms")), None, None).unwrap();
        assert_eq!(not_for(&e, &conditions("3000ms")), None);
        assert_eq!(not_for(&e, &conditions("1800s")).as_deref(), Some("made with timeout 3000ms (now 1800s)"));
        let mut later = conditions("3000ms");
        later.polysandbox = "0.2.0".into();
        later.memory = 2 << 30;
        let why = not_for(&e, &later).unwrap();
        assert!(why.contains("memory 1.0 GiB (now 2.0 GiB)") && why.contains("polysandbox 0.1.0 (now 0.2.0)"), "{why}");
        let mut edited = conditions("3000ms");
        edited.instance = "0000000000000000".into();
        assert_eq!(
            not_for(&e, &edited).as_deref(),
            Some("made with other files or another record for the instance (the dataset changed)")
        );
        let old = entry(&[(ok, String::new())], None, None, None).unwrap();
        assert!(not_for(&old, &conditions("3000ms")).unwrap().contains("older polysandbox"));
    }

    /// #38: the store's own calibration is read and added to only if no one else could have
    /// put it there: a directory or file another user can write (or owns) is refused.
    #[test]
    fn a_calibration_someone_else_could_have_planted_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let root = std::env::temp_dir().join(format!("psb-cal-kept-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("calibrations");
        std::fs::create_dir_all(&dir).unwrap();
        let set = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        set(&root, 0o755);
        set(&dir, 0o755);
        let file = dir.join("d-0123456789abcdef.json");
        assert_eq!(check_kept(&file), Ok(()), "none yet, in our own directory");
        std::fs::write(&file, "{}").unwrap();
        set(&file, 0o644);
        assert_eq!(check_kept(&file), Ok(()));
        set(&file, 0o666);
        assert!(check_kept(&file).unwrap_err().contains("writable by others"));
        set(&file, 0o644);
        set(&dir, 0o777);
        assert!(check_kept(&file).is_err(), "a directory anyone can write");
        set(&dir, 0o755);
        set(&root, 0o1777);
        assert!(check_kept(&file).is_err(), "a store root anyone can write");
        set(&root, 0o755);
        // Another user's file (as root: owned by nobody).
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
            assert!(check_kept(&file).unwrap_err().contains("owned by uid 65534"));
        }
        let link = dir.join("l.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(check_kept(&link).unwrap_err().contains("symbolic link"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// #38: writers at once (a Slurm array's shards on one store) each add their entries to
    /// the dataset's calibration; none loses another's.
    #[test]
    fn writers_at_once_lose_nothing() {
        let dir = std::env::temp_dir().join(format!("psb-cal-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("calibrations").join("d.json");
        let ok = run(Verdict::Resolved, &[("a", Status::Passed)], None);
        let e = entry(&[(ok, String::new())], Some(&conditions("1s")), None, None).unwrap();
        std::thread::scope(|s| {
            for w in 0..8 {
                let (path, e) = (&path, &e);
                s.spawn(move || {
                    for k in 0..5 {
                        let c = Calibration {
                            format: FORMAT,
                            dataset: "/d".into(),
                            arch: "x86_64".into(),
                            runs: 1,
                            created_unix: 0,
                            instances: [(format!("i{w}-{k}"), e.clone())].into(),
                        };
                        store(path, &c).unwrap();
                    }
                });
            }
        });
        let c = load(&path).unwrap();
        assert_eq!(c.instances.len(), 40, "{:?}", c.instances.keys());
        std::fs::remove_dir_all(&dir).unwrap();
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
        let e = entry(&[(a, String::new()), (b, String::new())], None, None, None).unwrap();
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
