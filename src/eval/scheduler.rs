//! The scheduler: selection (language, ids, shard, sample), `--resume`, each image probed
//! once, admission by memory, retries, arbitration of errors after the prediction, interrupts,
//! results appended as they come, and the reports. It names no benchmark format: each
//! instance's format (formats/) plans, runs and grades it.

use super::calibration;
use super::catalogue::{self, Runner};
use super::child::{image_digest, probe, Job};
use super::dataset;
use super::formats::{self, Plan};
use super::instance::{Instance, Prediction};
use super::predictions::{canonical_id, load_predictions};
use super::{clean, names, report};
use super::{InstanceResult, Options, Progress, Verdict};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Whether eval was interrupted (SIGINT, SIGTERM) since it started.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

fn install_signal_handlers() {
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

pub(crate) fn host_memory() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib: u64 = text
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // Eval itself may run under a memory limit (a container, a Slurm job's cgroup): the
    // sandboxes share it, whatever the host has.
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limit = cgroup_memory_limit(&cgroup, |p| std::fs::read_to_string(p).ok()).unwrap_or(u64::MAX);
    (kib * 1024).min(limit).saturating_sub(1 << 30).max(1 << 30)
}

/// The lowest memory limit on the cgroups `/proc/self/cgroup` names and their ancestors (v2
/// `memory.max`, v1 `memory.limit_in_bytes`), read with `read`.
fn cgroup_memory_limit(self_cgroup: &str, read: impl Fn(&Path) -> Option<String>) -> Option<u64> {
    let mut lowest: Option<u64> = None;
    for line in self_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else { continue };
        let bases: &[(&str, &str)] = if controllers.is_empty() {
            &[("/sys/fs/cgroup", "memory.max"), ("/sys/fs/cgroup/unified", "memory.max")]
        } else if controllers.split(',').any(|c| c == "memory") {
            &[("/sys/fs/cgroup/memory", "memory.limit_in_bytes")]
        } else {
            continue;
        };
        for (base, file) in bases {
            let mut dir = Path::new(base).join(path.trim_start_matches('/'));
            loop {
                if let Some(v) = read(&dir.join(file)).and_then(|t| t.trim().parse::<u64>().ok()) {
                    lowest = Some(lowest.map_or(v, |l| l.min(v)));
                }
                if dir == Path::new(base) || !dir.pop() {
                    break;
                }
            }
        }
    }
    lowest
}

/// Deterministic order for `-n`: by the hash of the id, so a sample is stable and unbiased by name.
fn sample_order(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

/// An image reference as the store and a registry take it; refused when it could be read as
/// anything else (it starts with `-`) or does not parse.
pub(crate) fn valid_image(image: &str) -> Result<(), String> {
    let shown: String = image.chars().take(200).map(|c| if c.is_control() { '?' } else { c }).collect();
    if image.starts_with('-') || image.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!("invalid image reference {shown:?} in the dataset"));
    }
    crate::reference::Reference::parse(image)
        .map(|_| ())
        .map_err(|e| format!("invalid image reference {shown:?} in the dataset: {e}"))
}

pub(crate) fn select(mut all: Vec<Instance>, o: &Options) -> Result<Vec<Instance>, String> {
    if !o.languages.is_empty() {
        all.retain(|i| o.languages.contains(&i.language));
    }
    if !o.ids.is_empty() {
        let known: HashSet<String> = all.iter().map(|i| i.id.clone()).collect();
        let wanted: HashSet<String> = o.ids.iter().map(|id| canonical_id(id, &known)).collect();
        if let Some(missing) = wanted.iter().find(|id| !known.contains(*id)) {
            // A number is SWE-bench's -t/--timeout, never an id that matches nothing.
            let hint = if missing.parse::<f64>().is_ok() {
                format!(" (-t takes instance ids here; SWE-bench's -t/--timeout is --timeout {missing})")
            } else {
                String::new()
            };
            return Err(format!(
                "-t {missing}: no such instance in the dataset (or filtered out by --filter-category){hint}"
            ));
        }
        all.retain(|i| wanted.contains(&i.id));
    }
    all.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some((i, n)) = o.shard {
        all = all.into_iter().enumerate().filter(|(k, _)| k % n == i - 1).map(|(_, x)| x).collect();
    }
    if let Some(n) = o.sample {
        all.sort_by_key(|i| sample_order(&i.id));
        all.truncate(n);
        all.sort_by(|a, b| a.id.cmp(&b.id));
    }
    Ok(all)
}

/// results.jsonl at `path`: a regular file, not a symlink (see [`crate::sys::beneath`]).
pub(crate) fn read_results(path: &Path) -> Result<Vec<InstanceResult>, String> {
    match crate::sys::beneath::read_file(path, MAX_RESULTS_BYTES)? {
        Some(bytes) => Ok(parse_results(&bytes)),
        None => Ok(vec![]),
    }
}

/// The most a results.jsonl may hold.
pub(crate) const MAX_RESULTS_BYTES: u64 = 4 << 30;

/// The results of a results.jsonl's bytes.
pub(crate) fn parse_results(bytes: &[u8]) -> Vec<InstanceResult> {
    let text = String::from_utf8_lossy(bytes);
    // A line cut short by a crash is skipped: that instance simply runs again.
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// How long eval waits before an attempt for the host's shared budgets to come back, by
/// default: then it runs anyway, and the result says.
pub(crate) const HOST_WAIT: Duration = Duration::from_secs(600);

/// The wait's bound: `POLYSANDBOX_HOST_WAIT` (a duration, `0` not to wait), else [`HOST_WAIT`].
fn host_wait() -> Duration {
    host_wait_of(std::env::var("POLYSANDBOX_HOST_WAIT").ok().as_deref())
}

fn host_wait_of(v: Option<&str>) -> Duration {
    match v.map(str::trim) {
        Some("0") => Duration::ZERO,
        Some(v) => crate::units::parse_duration(v).unwrap_or(HOST_WAIT),
        None => HOST_WAIT,
    }
}

/// The host's health as eval checks it around each attempt: the budgets the host shares (as
/// the sandbox's own watch reads them: `host_watch::short_now`) and the room under `-o` and the
/// image store. One for the whole run, shared by its workers.
pub(crate) struct Host<'a> {
    paths: Vec<(&'static str, std::path::PathBuf)>,
    wait: Duration,
    progress: &'a dyn Progress,
    /// What the last note said the host was short of (one note while that lasts).
    said: Mutex<Vec<String>>,
}

impl<'a> Host<'a> {
    pub(crate) fn new(o: &Options, progress: &'a dyn Progress) -> Host<'a> {
        let store = o.root.clone().unwrap_or_else(crate::image::store::Store::default_root);
        Host {
            paths: vec![("--output", o.output.clone()), ("the image store", store)],
            wait: host_wait(),
            progress,
            said: Mutex::new(Vec::new()),
        }
    }

    /// What the host is short of now.
    fn short(&self) -> Vec<String> {
        let paths: Vec<(&str, &Path)> = self.paths.iter().map(|(l, p)| (*l, p.as_path())).collect();
        crate::sandbox::host_watch::short_now(&paths)
    }

    /// Waits while the host is short of anything, up to the bound (saying once what it waits
    /// for); what it is still short of when the wait ends (nothing, unless the bound passed or
    /// eval was interrupted).
    fn wait(&self) -> Vec<String> {
        let deadline = Instant::now() + self.wait;
        loop {
            let short = self.short();
            let now = Instant::now();
            if short.is_empty() || now >= deadline || INTERRUPTED.load(Ordering::SeqCst) {
                if short.is_empty() {
                    self.said.lock().unwrap().clear();
                }
                return short;
            }
            {
                let mut said = self.said.lock().unwrap();
                if *said != short {
                    let secs = self.wait.as_secs();
                    let bound =
                        if secs >= 60 && secs % 60 == 0 { format!("{} min", secs / 60) } else { format!("{secs} s") };
                    self.progress.note(&format!(
                        "waiting for the host, short of {}: up to {bound} before each run, then running anyway (POLYSANDBOX_HOST_WAIT)",
                        short.join(", ")
                    ));
                    *said = short;
                }
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(500)));
        }
    }
}

/// A run the host was short for, still short when it started (the wait's bound passed) or
/// short once it ended: whatever the runner printed, a resolved run included, is the host's
/// doing as much as the code's, a host fault (`error`, retried after waiting, never decided by
/// gold). Not for verdicts no run decided (an empty patch, no prediction), nor for an error the
/// dataset makes on every attempt.
pub(crate) fn host_short_around(r: &mut InstanceResult, before: &[String], after: &[String]) {
    let decided_without_a_run = matches!(r.verdict, Verdict::EmptyPatch | Verdict::NoPrediction | Verdict::Interrupted)
        || (r.verdict == Verdict::Error && r.deterministic);
    if r.host_fault || decided_without_a_run || (before.is_empty() && after.is_empty()) {
        return;
    }
    let mut of: Vec<&str> = before.iter().map(String::as_str).collect();
    of.extend(after.iter().map(String::as_str).filter(|a| !before.iter().any(|b| b == a)));
    let when = match (before.is_empty(), after.is_empty()) {
        (false, false) => "before and after the run",
        (false, true) => "when the run started",
        _ => "after the run",
    };
    let when = format!("{when}: {}", of.join(", "));
    let was = match r.reason.as_deref() {
        Some(why) => format!("{}: {why}", r.verdict),
        None => r.verdict.to_string(),
    };
    r.mark_host_fault(format!("the host was short {when} (the run was {was}): rerun"));
}

/// Decides an `error` that came after the prediction was in: the calibration's word that
/// gold passes here, or else gold run the same way now. Gold clean: the prediction's doing,
/// `unresolved` with the reason. Gold failing too: the environment's, an `error` still. A host
/// fault is never decided so: it is the host's, whatever gold does.
fn arbitrate(
    o: &Options,
    job: &Job,
    mut r: InstanceResult,
    scratch: &Path,
    logs: &Path,
    children: &Mutex<HashSet<u32>>,
    host: &Host,
) -> InstanceResult {
    let why = r.reason.clone().unwrap_or_default();
    if job.pred == Prediction::Gold || r.host_fault {
        return r;
    }
    if job.cal.as_ref().is_some_and(|e| e.gold_passes) {
        r.verdict = Verdict::Unresolved;
        r.reason = Some(format!("{why} (gold passes here, per the calibration: the prediction's doing)"));
        return r;
    }
    let mut gold = job.clone();
    gold.pred = Prediction::Gold;
    gold.gold_check = true;
    let (gs, gl) = (scratch.with_extension("gold"), logs.join("gold-check"));
    let _ = std::fs::create_dir_all(&gl);
    let _ = std::fs::remove_dir_all(&gs);
    let before = host.wait();
    let mut g = formats::of(&job.inst).attempt(o, &gold, &gs, &gl, children);
    host_short_around(&mut g, &before, &host.short());
    let _ = std::fs::remove_dir_all(&gs);
    if g.host_fault {
        // Gold's run says nothing of the prediction's here: the error stays, the host's.
        r.host_fault = true;
        r.reason = Some(format!("{why} (gold's check: {})", g.reason.as_deref().unwrap_or("a host fault")));
    } else if g.verdict == Verdict::Resolved {
        r.verdict = Verdict::Unresolved;
        r.reason = Some(format!("{why} (gold resolves here the same way: the prediction's doing)"));
    } else {
        r.reason = Some(format!("{why} (gold too: {})", g.reason.as_deref().unwrap_or(g.verdict.name())));
    }
    r
}

#[allow(clippy::too_many_arguments)]
fn key_of(
    pred: &Prediction,
    runner: &Runner,
    image: &str,
    timeout: &str,
    memory: u64,
    cpus: f64,
    inst: &Instance,
    cal: Option<&calibration::Entry>,
) -> String {
    let mut h = Sha256::new();
    h.update(pred.content());
    h.update(format!("{runner:?}|{image}|{timeout}|{memory}|{cpus}|{:?}|{cal:?}", inst.kind).as_bytes());
    format!("{:x}", h.finalize())[..16].to_string()
}

/// Checks what eval was given (catalogue, dataset, languages, predictions, selection) before
/// anything runs or is said, so bad input is one line; the selected instances' ids, and notes
/// on the predictions worth saying before the run (ids given twice alike, instances with none).
pub fn check_input(o: &Options) -> Result<(Vec<String>, Vec<String>), String> {
    catalogue::load(o.config.as_deref(), &o.images)?;
    let all = dataset::load(&o.dataset)?;
    for l in &o.languages {
        if !all.iter().any(|i| &i.language == l) {
            return Err(format!("--filter-category {l}: no instance of that language in the dataset"));
        }
    }
    let mut notes = Vec::new();
    let preds = super::predictions::load_noted(&o.predictions, &all, &mut notes)?;
    let selected = select(all, o)?;
    if let super::predictions::Predictions::Records(m, _) = &preds {
        let none = selected.iter().filter(|i| !m.contains_key(&i.id)).count();
        if none > 0 {
            notes.push(format!(
                "{none} of the {} selected instances have no prediction in {}: graded no_prediction, not run",
                selected.len(),
                o.predictions
            ));
        }
    }
    Ok((selected.into_iter().map(|i| i.id).collect(), notes))
}

/// What a selected instance runs with, as the run plans it: its image and its conditions (a
/// calibration holds for those only).
pub(crate) struct Planned {
    pub image: String,
    pub conditions: calibration::Conditions,
    /// The limits the run sets below the dataset's own (`--timeout 1000ms (the dataset's
    /// 1800s)`): gold failing under them is the setting's doing, never kept as the
    /// environment's.
    pub tighter: Vec<String>,
}

/// The limits `o` sets below those `plan` gives the instance (see [`Planned::tighter`]).
fn tighter_limits(o: &Options, plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(t), Ok(d)) = (o.timeout, crate::units::parse_duration(&plan.timeout)) {
        if t < d {
            out.push(format!("--timeout {}ms (the dataset's {})", t.as_millis(), plan.timeout));
        }
    }
    if let (Some(m), Ok(d)) = (o.memory, crate::units::parse_size(&plan.runner.memory)) {
        if m < d {
            out.push(format!("--memory {} (the dataset's {})", crate::units::human_bytes(m), plan.runner.memory));
        }
    }
    if let Some(c) = o.cpus.filter(|c| *c < plan.runner.cpus) {
        out.push(format!("--cpus {c} (the dataset's {})", plan.runner.cpus));
    }
    if o.pids < super::options::DEFAULT_PIDS {
        out.push(format!("--pids {} (the default {})", o.pids, super::options::DEFAULT_PIDS));
    }
    // The writable layer: its default is the memory limit.
    let memory = o.memory.or_else(|| crate::units::parse_size(&plan.runner.memory).ok());
    if let (Some(d), Some(m)) = (o.disk, memory) {
        if d < m {
            out.push(format!("--disk {} (the default {})", crate::units::human_bytes(d), crate::units::human_bytes(m)));
        }
    }
    // Per-test limits: the dataset sets none.
    let p = &o.per_test;
    if p.on {
        if let Some(t) = p.timeout {
            out.push(format!("--test-timeout {}ms (the dataset sets none)", t.as_millis()));
        }
        if let Some(m) = p.memory {
            out.push(format!("--test-memory {} (the dataset sets none)", crate::units::human_bytes(m)));
        }
        if let Some(t) = p.cpu_time {
            out.push(format!("--test-cpu-time {}ms (the dataset sets none)", t.as_millis()));
        }
    }
    out
}

/// The runner, memory, timeout and CPUs an instance runs with under `o`.
fn settings_of(o: &Options, plan: &Plan) -> Result<(Runner, u64, String, f64), String> {
    let runner = plan.runner.measured(&o.per_test).cached(o.caches);
    let memory = match o.memory {
        Some(m) => m,
        None => crate::units::parse_size(&runner.memory)
            .map_err(|e| format!("catalogue {}: memory: {e}", runner.language))?,
    };
    let timeout = match o.timeout {
        Some(t) => format!("{}ms", t.as_millis()),
        None => plan.timeout.clone(),
    };
    let cpus = o.cpus.unwrap_or(runner.cpus);
    Ok((runner, memory, timeout, cpus))
}

/// An instance the calibration leaves out: gold fails here, the environment's fault whatever
/// the prediction. Not run, not retried, kept out of accuracy_score; its reason the cause and
/// when it was found.
fn excluded(inst: &Instance, image: &str, key: &str, e: &calibration::Entry) -> InstanceResult {
    let mut why = e.cause.clone().unwrap_or_else(|| "no cause recorded".into());
    if e.calibrated_unix > 0 {
        why += &format!(" (calibrated {} UTC)", report::timestamp_of(e.calibrated_unix));
    }
    let mut r = InstanceResult::bare(inst, image, key, Verdict::Error, Some(format!("gold fails here: {why}")));
    r.deterministic = true;
    r.excluded = true;
    r
}

/// The conditions of a run with these settings (see [`calibration::Conditions`]).
fn conditions_of(
    o: &Options,
    inst: &Instance,
    runner: &Runner,
    memory: u64,
    timeout: &str,
    cpus: f64,
) -> calibration::Conditions {
    let digest = format!("{:x}", Sha256::digest(format!("{runner:?}").as_bytes()));
    calibration::Conditions {
        timeout: timeout.to_string(),
        memory,
        cpus,
        pids: o.pids,
        network: o.network_host,
        disk: o.disk,
        runner: digest[..16].to_string(),
        polysandbox: env!("CARGO_PKG_VERSION").to_string(),
        instance: inst.digest(),
    }
}

/// The selected instances `o` will run (a plan, a prediction that is not missing nor an empty
/// patch), by id, with their image and conditions: what a calibration must have been made
/// with to be used, and what eval calibrates first.
pub(crate) fn planned(o: &Options) -> Result<HashMap<String, Planned>, String> {
    let cat = catalogue::load(o.config.as_deref(), &o.images)?;
    let all = dataset::load(&o.dataset)?;
    let preds = load_predictions(&o.predictions, &all)?;
    let mut out = HashMap::new();
    for inst in select(all, o)? {
        match preds.for_instance(&inst)? {
            Prediction::Missing => continue,
            Prediction::Patch(p) if p.trim().is_empty() => continue,
            _ => {}
        }
        let Some(plan) = formats::of(&inst).plan(&inst, &cat, o) else { continue };
        let (runner, memory, timeout, cpus) = settings_of(o, &plan)?;
        let conditions = conditions_of(o, &inst, &runner, memory, &timeout, cpus);
        let tighter = tighter_limits(o, &plan);
        out.insert(inst.id.clone(), Planned { image: plan.image, conditions, tighter });
    }
    Ok(out)
}

pub fn run(o: &Options, progress: &dyn Progress) -> Result<(Vec<InstanceResult>, bool, Duration), String> {
    let started = Instant::now();
    progress.step("reading the dataset and the predictions");
    let cat = catalogue::load(o.config.as_deref(), &o.images)?;
    let all = dataset::load(&o.dataset)?;
    for l in &o.languages {
        if !all.iter().any(|i| &i.language == l) {
            return Err(format!("--filter-category {l}: no instance of that language in the dataset"));
        }
    }
    let preds = load_predictions(&o.predictions, &all)?;
    let selected = select(all, o)?;
    // Each format writes its own files for the selected instances it owns (report.rs).
    let selected_all = selected.clone();
    let dirs = names::assign(selected.iter().map(|i| i.id.as_str()));
    std::fs::create_dir_all(o.output.join("logs")).map_err(|e| format!("--output {}: {e}", o.output.display()))?;
    // The scratch trees and report FIFOs are the caller's alone.
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let work = o.output.join(".work");
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&work);
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("{}: {e}", work.display()))?;
    }
    let results_path = o.output.join("results.jsonl");
    let earlier = read_results(&results_path)?;
    if !earlier.is_empty() && !o.resume {
        return Err(format!(
            "{} holds an earlier run's results: pass --resume to continue it, or choose another --output",
            o.output.display()
        ));
    }
    // What this run is asked to grade and how, for `merge` (and anyone reading the output).
    super::settings::Settings::of(o).write(&o.output)?;
    let earlier: HashMap<String, InstanceResult> = earlier.into_iter().map(|r| (r.instance_id.clone(), r)).collect();

    let mut digests: HashMap<String, Option<String>> = HashMap::new();
    let mut stale: HashSet<String> = HashSet::new();
    let mut other_conditions: HashSet<String> = HashSet::new();
    // What --resume finds: earlier errors run again, and verdicts reached with another
    // prediction or other settings.
    let (mut rerun_errors, mut changed) = (0, 0);
    let mut done = Vec::new();
    // Verdicts known without a run: recorded like any other.
    let mut fresh = Vec::new();
    let mut jobs = Vec::new();
    for inst in selected {
        let pred = preds.for_instance(&inst)?;
        let Some(Plan { runner, image, timeout: default_timeout }) = formats::of(&inst).plan(&inst, &cat, o) else {
            fresh.push(InstanceResult::bare(
                &inst,
                "",
                "",
                Verdict::Error,
                Some(format!("no runner for language {:?} in the catalogue", inst.language)),
            ));
            continue;
        };
        // An image name from a record (SWE-bench's `image`, a name made from its ids) is a
        // reference and nothing else: never an option of the sandbox's command line.
        if let Err(e) = valid_image(&image) {
            let mut r = InstanceResult::bare(&inst, "", "", Verdict::Error, Some(e));
            r.deterministic = true;
            fresh.push(r);
            continue;
        }
        let (runner, memory, timeout, cpus) =
            settings_of(o, &Plan { runner, image: image.clone(), timeout: default_timeout })?;
        // A calibration holds for the image it was made with (that name, that build) and the
        // conditions (limits, runner, version): under others, what gold did says nothing. (An
        // image not in the store yet, which the probe below pulls, cannot be compared: the
        // calibration for its name is used.)
        let now = conditions_of(o, &inst, &runner, memory, &timeout, cpus);
        let cal = o.calibration.as_ref().and_then(|c| c.instances.get(&inst.id)).filter(|e| e.image == image);
        let cal = match cal.map(|e| (e, calibration::not_for(e, &now))) {
            Some((_, Some(why))) => {
                if other_conditions.insert(why.clone()) {
                    progress.note(&format!(
                        "note: calibration entries {why} are not used (the first: {}): calibrate again",
                        inst.id
                    ));
                }
                None
            }
            Some((e, None)) => Some(e.clone()),
            None => None,
        };
        let digest = digests.entry(image.clone()).or_insert_with(|| image_digest(o, &image)).clone();
        let cal = match cal {
            Some(e) if digest.is_some() && e.image_digest.is_some() && digest != e.image_digest => {
                if stale.insert(image.clone()) {
                    progress.note(&format!("note: the calibration is for another build of {image}: not used for its instances (calibrate again)"));
                }
                None
            }
            other => other,
        };
        let key = key_of(&pred, &runner, &image, &timeout, memory, cpus, &inst, cal.as_ref());
        // The network is a setting too: a verdict reached with it is not one reached without.
        let key = if o.network_host { format!("{key}-network") } else { key };
        // So are the writable layer's size and the process cap, when not their defaults.
        let key = match o.disk {
            Some(d) => format!("{key}-disk{d}"),
            None => key,
        };
        let key = if o.pids != super::options::DEFAULT_PIDS { format!("{key}-pids{}", o.pids) } else { key };
        // And --strict: a flagged prediction resolved without it is unresolved with it.
        let key = if o.strict { format!("{key}-strict") } else { key };
        if let Some(prev) = earlier.get(&inst.id) {
            if prev.key == key && prev.verdict != Verdict::Error {
                done.push(prev.clone());
                continue;
            }
            if prev.key == key {
                rerun_errors += 1;
            } else {
                changed += 1;
            }
        }
        // Calibrating it failed (gold could not be run, the host ran short): an error of this
        // run, to rerun, never a verdict nor a reason to leave it out.
        if let Some(why) = o.calibration_errors.get(&inst.id) {
            let why = format!("calibrating it failed: {why}: rerun (--resume)");
            fresh.push(InstanceResult::bare(&inst, &image, &key, Verdict::Error, Some(why)));
            continue;
        }
        // Gold does not pass here: the environment's fault, whatever the prediction. Not run,
        // not retried, kept out of accuracy_score.
        // (An image the store does not hold yet is pulled first, and its build compared, below:
        // a tag that moved to a fixed build is not left out on the old one's word.)
        let waits_for_its_image = |e: &calibration::Entry| digest.is_none() && e.image_digest.is_some();
        if let Some(e) = cal.as_ref().filter(|e| !e.gold_passes && !waits_for_its_image(e)) {
            fresh.push(excluded(&inst, &image, &key, e));
            continue;
        }
        // No prediction for it at all: graded so, not run (apart from an empty one, as the
        // SWE-bench harness tells its instances not submitted from its empty patches).
        if pred == Prediction::Missing {
            let why = match &preds {
                super::predictions::Predictions::Dir(_) => "no files for it in the predictions directory",
                _ => "no prediction for it in the predictions file",
            };
            let mut r = InstanceResult::bare(&inst, &image, &key, Verdict::NoPrediction, Some(why.into()));
            r.deterministic = true;
            fresh.push(r);
            continue;
        }
        let model = preds.model_of(&inst.id);
        let dir = dirs[&inst.id].clone();
        jobs.push(Job {
            inst,
            pred,
            runner,
            image,
            key,
            memory,
            timeout,
            cpus,
            cal,
            image_digest: digest,
            model,
            dir,
            gold_check: false,
        });
    }

    if o.resume {
        let to_run = fresh.len() + jobs.len();
        let mut why = vec![];
        if rerun_errors > 0 {
            why.push(format!("{rerun_errors} error{} again", if rerun_errors == 1 { "" } else { "s" }));
        }
        if changed > 0 {
            why.push(format!("{changed} whose prediction or settings changed"));
        }
        let new = to_run - rerun_errors - changed;
        if new > 0 && !why.is_empty() {
            why.push(format!("{new} not run before"));
        }
        progress.note(&format!(
            "resuming {}: {} verdict{} kept, {to_run} to run{}",
            results_path.display(),
            done.len(),
            if done.len() == 1 { "" } else { "s" },
            if why.is_empty() { String::new() } else { format!(" ({})", why.join(", ")) }
        ));
    }

    // Each image once, before its jobs: there, and its toolchain answering.
    // The host's health, checked before and after each sandbox eval starts (see Host).
    let health = Host::new(o, progress);
    // Images whose probe failed: why, and whether the host was short around it (a host fault:
    // its instances are errors to rerun, as any run the host was short for).
    let mut broken: HashMap<String, (String, bool)> = HashMap::new();
    let mut probed = HashSet::new();
    for j in &jobs {
        if matches!(j.pred, Prediction::Missing) || !probed.insert((j.image.clone(), j.runner.language.clone())) {
            continue;
        }
        progress.step(&if j.image_digest.is_none() {
            format!("pulling {} and probing its {} toolchain", j.image, j.runner.language)
        } else {
            format!("probing the {} toolchain in {}", j.runner.language, j.image)
        });
        let before = health.wait();
        if let Err(e) = probe(o, &j.image, &j.runner, j.memory) {
            let short = if before.is_empty() { health.short() } else { before };
            let e = if short.is_empty() {
                (e, false)
            } else {
                (format!("{e} (the host was short of {} around the probe: rerun)", short.join(", ")), true)
            };
            broken.insert(format!("{}\0{}", j.image, j.runner.language), e);
        }
    }

    // The digest of an image the probe has just pulled.
    // A calibration made with another build than the one just pulled (a tag that moved) is not
    // used, as for an image the store held already.
    for j in jobs.iter_mut().filter(|j| j.image_digest.is_none()) {
        j.image_digest = image_digest(o, &j.image);
        let then = j.cal.as_ref().and_then(|e| e.image_digest.clone());
        if then.is_some() && j.image_digest.is_some() && then != j.image_digest {
            j.cal = None;
            if stale.insert(j.image.clone()) {
                progress.note(&format!(
                    "note: the calibration is for another build of {}: not used for its instances (calibrate again)",
                    j.image
                ));
            }
        }
    }
    // An exclusion waiting for its image: the build pulled is the one calibrated, left out;
    // no image (the pull failed: an error of the run), or another build, graded without it.
    let mut waiting = Vec::new();
    for j in std::mem::take(&mut jobs) {
        match j.cal.as_ref().filter(|e| !e.gold_passes) {
            Some(e) if j.image_digest.is_some() && j.image_digest == e.image_digest => {
                fresh.push(excluded(&j.inst, &j.image, &j.key, e))
            }
            Some(_) => waiting.push(Job { cal: None, ..j }),
            None => waiting.push(j),
        }
    }
    jobs = waiting;
    // --resume: an instance graded again (its prediction or settings changed, or an error)
    // replaces its earlier line: results.jsonl holds one line per instance. The earlier lines
    // of the others are kept, written whole and put in place before anything runs.
    if !earlier.is_empty() {
        let again: HashSet<&str> =
            fresh.iter().map(|r| r.instance_id.as_str()).chain(jobs.iter().map(|j| j.inst.id.as_str())).collect();
        let mut kept: Vec<&InstanceResult> =
            earlier.values().filter(|r| !again.contains(r.instance_id.as_str())).collect();
        kept.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
        let text: String = kept.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
        crate::sys::beneath::write_new(&results_path, text.as_bytes(), 0o644)?;
    }
    // Never through a link at the name (the output directory may be one others write).
    use std::os::unix::fs::OpenOptionsExt;
    let mut results = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&results_path)
        .map_err(|e| format!("{}: {e}", results_path.display()))?;
    // A line cut short by a crash (SIGKILL mid-write) is closed first, so that the next result
    // starts a line of its own rather than merging with it.
    if std::fs::read(&results_path).map(|b| b.last().is_some_and(|&c| c != b'\n')).unwrap_or(false) {
        use std::io::Write;
        results.write_all(b"\n").map_err(|e| format!("{}: {e}", results_path.display()))?;
    }
    let results_file = Mutex::new(results);
    let total = done.len() + fresh.len() + jobs.len();
    let mut resolved = 0;
    progress.plan(total, done.len());
    for (k, r) in done.iter().enumerate() {
        resolved += usize::from(r.verdict == Verdict::Resolved);
        progress.finished(r, k + 1, total, resolved);
    }
    progress.step("running");
    install_signal_handlers();
    let queue: Mutex<VecDeque<Job>> = Mutex::new(jobs.into());
    let budget = (Mutex::new(host_memory()), Condvar::new());
    let children: Arc<Mutex<HashSet<u32>>> = Arc::default();
    let finished = Arc::new(AtomicBool::new(false));
    // Forwards an interrupt to the running sandboxes (a terminal's Ctrl-C reaches them anyway).
    let watcher = {
        let (children, finished) = (children.clone(), finished.clone());
        std::thread::spawn(move || {
            while !finished.load(Ordering::SeqCst) {
                if INTERRUPTED.load(Ordering::SeqCst) {
                    for pid in children.lock().unwrap().iter() {
                        unsafe { libc::kill(*pid as i32, libc::SIGTERM) };
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let (tx, rx) = std::sync::mpsc::channel::<InstanceResult>();
    for r in fresh {
        let _ = tx.send(r);
    }
    let host = host_memory();
    std::thread::scope(|s| {
        for w in 0..o.jobs.max(1) {
            let (tx, queue, budget, children, broken) = (tx.clone(), &queue, &budget, &children, &broken);
            let health = &health;
            s.spawn(move || loop {
                if INTERRUPTED.load(Ordering::SeqCst) {
                    return;
                }
                let Some(job) = queue.lock().unwrap().pop_front() else { return };
                let logs = o.output.join("logs").join(&job.dir);
                let _ = std::fs::create_dir_all(&logs);
                if let Some((e, host_fault)) = broken.get(&format!("{}\0{}", job.image, job.runner.language)) {
                    if !matches!(job.pred, Prediction::Missing) {
                        let mut r =
                            InstanceResult::bare(&job.inst, &job.image, &job.key, Verdict::Error, Some(e.clone()));
                        r.host_fault = *host_fault;
                        let _ = tx.send(r);
                        continue;
                    }
                }
                // Admission by memory: what the running sandboxes may use, their limits, fits the
                // host. (Not what gold used: predictions that each take their whole limit would
                // overcommit the host, and its OOM killer could end a correct neighbour's test.)
                let need = job.memory.min(host);
                {
                    let (lock, cv) = budget;
                    let mut free = lock.lock().unwrap();
                    while *free < need {
                        free = cv.wait(free).unwrap();
                    }
                    *free -= need;
                }
                let scratch = o.output.join(".work").join(format!("{w}-{}", job.dir));
                progress.started(&job.inst.id);
                let mut attempts = 0;
                let r = loop {
                    attempts += 1;
                    // The host's shared budgets first: while one is exhausted (another process
                    // holds the file table, the disk is full) a run would meet failures that
                    // are not its code's. Waited for, within a bound.
                    let before = health.wait();
                    // Each attempt from an empty scratch directory, whatever the format: what
                    // an earlier attempt (or a killed run) left there is never this one's error.
                    let _ = std::fs::remove_dir_all(&scratch);
                    let mut r = formats::of(&job.inst).attempt(o, &job, &scratch, &logs, children);
                    // ... and again after: a run the host was short for is the host's.
                    host_short_around(&mut r, &before, &health.short());
                    r.attempts = attempts;
                    r.logs = format!("logs/{}", job.dir);
                    r.reason = r.reason.as_deref().map(clean);
                    if r.verdict != Verdict::Error
                        || r.deterministic
                        || attempts > o.retries
                        || INTERRUPTED.load(Ordering::SeqCst)
                    {
                        break r;
                    }
                };
                // A failure after the prediction was in is the prediction's, unless gold fails
                // the same way here; a host fault is neither's.
                let r = if r.verdict == Verdict::Error
                    && r.after_prediction
                    && !r.host_fault
                    && !INTERRUPTED.load(Ordering::SeqCst)
                {
                    arbitrate(o, &job, r, &scratch, &logs, children, health)
                } else {
                    r
                };
                let _ = std::fs::remove_dir_all(&scratch);
                {
                    let (lock, cv) = budget;
                    *lock.lock().unwrap() += need;
                    cv.notify_all();
                }
                // A sandbox that ended "interrupted" when eval was not (a signal from elsewhere
                // reached its supervisor): an error, scored as not resolved and named for a
                // rerun, never a way out of the score.
                let mut r = r;
                if r.verdict == Verdict::Interrupted && !INTERRUPTED.load(Ordering::SeqCst) {
                    r.verdict = Verdict::Error;
                    r.reason = Some("the sandbox was stopped by a signal eval did not send".into());
                }
                // Its usage against gold's: measurements beside the verdict, decided above.
                super::vs_gold::fill(&mut r, job.cal.as_ref());
                // An instance cut short by Ctrl-C is not recorded: --resume runs it again.
                if r.verdict != Verdict::Interrupted && !INTERRUPTED.load(Ordering::SeqCst) {
                    let _ = tx.send(r);
                }
            });
        }
        drop(tx);
        for r in rx {
            if let Ok(line) = serde_json::to_string(&r) {
                let mut f = results_file.lock().unwrap();
                let _ = writeln!(f, "{line}");
                let _ = f.flush();
            }
            if r.verdict == Verdict::Resolved {
                resolved += 1;
            }
            done.push(r);
            progress.finished(done.last().unwrap(), done.len(), total, resolved);
        }
    });
    finished.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    let _ = std::fs::remove_dir_all(o.output.join(".work"));
    done.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
    let interrupted = INTERRUPTED.load(Ordering::SeqCst);
    let wall = started.elapsed();
    let out = report::Outputs {
        interrupted: interrupted.then(|| report::not_run(total, done.len())),
        ..report::Outputs::of(o, wall)
    };
    report::write_all(o, &preds, &selected_all, &done, &out)?;
    Ok((done, interrupted, wall))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #38: the limits a run sets below the dataset's are named: gold failing under them is the
    /// setting's doing, never kept (`--timeout`, `--memory`, `--cpus`, `--pids`, `--disk` under
    /// the memory limit, any per-test limit).
    #[test]
    fn limits_below_the_datasets_are_named() {
        let mut runner = catalogue::load(None, &[]).unwrap()["python"].clone();
        (runner.memory, runner.cpus) = ("2G".into(), 2.0);
        let plan = Plan { runner, image: "i".into(), timeout: "1800s".into() };
        let mut o = Options::new("/d".into(), "gold", "/o".into(), "/b".into());
        assert!(tighter_limits(&o, &plan).is_empty());
        o.timeout = Some(Duration::from_secs(3600));
        o.memory = Some(4 << 30);
        o.disk = Some(4 << 30);
        assert!(tighter_limits(&o, &plan).is_empty(), "above the dataset's: {:?}", tighter_limits(&o, &plan));
        o.timeout = Some(Duration::from_secs(1));
        o.memory = None;
        o.cpus = Some(0.5);
        o.pids = 16;
        o.disk = Some(1 << 20);
        o.per_test.on = true;
        o.per_test.timeout = Some(Duration::from_millis(1));
        let t = tighter_limits(&o, &plan).join("; ");
        for want in [
            "--timeout 1000ms (the dataset's 1800s)",
            "--cpus 0.5",
            "--pids 16",
            "--disk 1.0 MiB",
            "--test-timeout 1ms",
        ] {
            assert!(t.contains(want), "{want}: {t}");
        }
    }

    fn inst() -> Instance {
        Instance::for_tests("i")
    }

    fn result(v: Verdict, why: &str) -> InstanceResult {
        InstanceResult::bare(&inst(), "img", "key", v, Some(why.into()))
    }

    const SHORT: &str = "the host's file table (fs.file-max)";

    /// A run the host was short for (still short when it started, or short once it ended) is
    /// a host fault, whatever the runner printed, a resolved run included; what no run decided
    /// (an empty patch, a dataset's error) is left as it is, and so is a healthy host's run.
    #[test]
    fn a_run_the_host_was_short_around_is_a_host_fault_whatever_it_printed() {
        let short = vec![SHORT.to_string()];
        for v in [
            Verdict::Resolved,
            Verdict::Unresolved,
            Verdict::Timeout,
            Verdict::Oom,
            Verdict::PatchFailed,
            Verdict::Error,
        ] {
            for (before, after) in [(&short, &vec![]), (&vec![], &short), (&short, &short)] {
                let mut r = result(v, "tests exited 101; 0 failed, 0 passed");
                host_short_around(&mut r, before, after);
                assert!(r.verdict == Verdict::Error && r.host_fault && !r.deterministic, "{v}: {r:?}");
                let why = r.reason.unwrap();
                assert!(why.contains("file table") && why.contains("rerun") && why.contains(v.name()), "{why}");
            }
            let mut r = result(v, "x");
            host_short_around(&mut r, &[], &[]);
            assert!(r.verdict == v && !r.host_fault, "{r:?}");
        }
        for v in [Verdict::EmptyPatch, Verdict::NoPrediction, Verdict::Interrupted] {
            let mut r = result(v, "x");
            host_short_around(&mut r, &short, &short);
            assert!(r.verdict == v && !r.host_fault, "{r:?}");
        }
        let mut r = result(Verdict::Error, "the test_patch does not apply");
        r.deterministic = true;
        host_short_around(&mut r, &short, &short);
        assert!(r.deterministic && !r.host_fault, "{r:?}");
    }

    /// An `error` after the prediction, with a calibration saying gold passes here, is charged
    /// to the prediction (`unresolved`), unless it is a host fault: that stays an `error`.
    #[test]
    fn a_host_fault_is_never_arbitrated_into_a_verdict() {
        let dir = std::env::temp_dir().join(format!("psb-arbitrate-{}", std::process::id()));
        let o = Options::new("d".into(), "p", dir.join("out"), "/nonexistent/polysandbox".into());
        let cal: calibration::Entry = serde_json::from_value(serde_json::json!({
            "image": "img", "gold_passes": true, "gold_verdicts": ["resolved"], "tests": [],
            "flaky": [], "wall_s_max": 1.0, "cpu_s_max": 1.0, "memory_peak_bytes_max": 0,
        }))
        .unwrap();
        let runner = catalogue::load(None, &[]).unwrap()["python"].clone();
        let job = Job {
            inst: inst(),
            pred: Prediction::Stub,
            runner,
            image: "img".into(),
            key: "key".into(),
            memory: 1 << 30,
            timeout: "60s".into(),
            cpus: 1.0,
            cal: Some(cal),
            image_digest: None,
            model: "m".into(),
            dir: "i".into(),
            gold_check: false,
        };
        let host = Host {
            paths: vec![],
            wait: Duration::ZERO,
            progress: &super::super::progress::Quiet,
            said: Mutex::default(),
        };
        let children = Mutex::default();
        let arbitrated = |r: InstanceResult| arbitrate(&o, &job, r, &dir.join("s"), &dir.join("l"), &children, &host);
        let mut plain = result(Verdict::Error, "the test files could not be put back");
        plain.after_prediction = true;
        assert_eq!(arbitrated(plain.clone()).verdict, Verdict::Unresolved, "the prediction's doing");
        let mut fault = plain;
        host_short_around(&mut fault, &[], &[SHORT.into()]);
        let r = arbitrated(fault);
        assert!(r.verdict == Verdict::Error && r.host_fault, "{r:?}");
        assert!(!r.reason.unwrap().contains("the prediction's doing"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The wait's bound: POLYSANDBOX_HOST_WAIT as a duration, 0 for none, ten minutes else.
    #[test]
    fn the_wait_for_the_host_is_bounded() {
        assert_eq!(host_wait_of(None), Duration::from_secs(600));
        assert_eq!(host_wait_of(Some("0")), Duration::ZERO);
        assert_eq!(host_wait_of(Some("2s")), Duration::from_secs(2));
        assert_eq!(host_wait_of(Some("90")), Duration::from_secs(90));
        assert_eq!(host_wait_of(Some("soon")), HOST_WAIT);
    }

    #[test]
    fn admission_counts_the_memory_limit_eval_runs_under() {
        let files = |p: &std::path::Path| -> Option<String> {
            match p.to_str()? {
                "/sys/fs/cgroup/kubepods/pod1/memory.max" => Some("max\n".into()),
                "/sys/fs/cgroup/kubepods/memory.max" => Some("8589934592\n".into()),
                "/sys/fs/cgroup/memory/job_7/memory.limit_in_bytes" => Some("4294967296\n".into()),
                "/sys/fs/cgroup/memory/memory.limit_in_bytes" => Some("9223372036854771712\n".into()),
                _ => None,
            }
        };
        assert_eq!(super::cgroup_memory_limit("0::/kubepods/pod1\n", files), Some(8 << 30));
        assert_eq!(super::cgroup_memory_limit("5:memory:/job_7\n0::/\n", files), Some(4 << 30));
        assert_eq!(super::cgroup_memory_limit("4:cpu,cpuacct:/x\n", files), None);
        assert!(super::host_memory() >= 1 << 30);
    }
}
