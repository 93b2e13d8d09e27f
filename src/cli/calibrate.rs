//! `polysandbox calibrate`: what the dataset's own solutions do here, for eval to use.

use crate::eval::{self, calibration, InstanceResult, Verdict};
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Runs the gold solution --runs times and the stub once for every selected instance, with the
images and limits eval would use, and writes calibration.json into --output and to the
dataset's default place beside the image store, where eval finds it (or pass it to eval with
--calibration FILE). eval then grades an instance whose gold fails here as `error` (\"gold fails
here: <cause>\"), leaves out tests whose status differed between gold runs, requires every
test gold passes here to be reported passed by name, and gives each prediction's usage as
ratios to gold's.

An instance leaves the score only when every gold run fails, the same way: a run that could not
be made (the sandbox did not start, the image is missing, the host ran short of a budget it
shares) keeps nothing for that instance, and it is calibrated again next time. Each entry holds
for the image and the settings it was made with (timeout, memory, CPUs, pids, network, disk,
runner, polysandbox's version): eval recalibrates under others, and says so. Calibrations run at
once (a Slurm array's shards) add their entries to the dataset's under a lock.

Exit status: 0 written; 1 written, and gold fails somewhere; 3 some instances could not be
calibrated (infrastructure: rerun them); 125 could not run.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct CalibrateArgs {
    #[command(flatten)]
    data: super::common::Dataset,
    /// Gold runs per instance (tests whose status differs between them are flaky).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=20), allow_hyphen_values = true)]
    runs: u32,
    /// Skip the stub run.
    #[arg(long)]
    no_stub: bool,
    #[command(flatten)]
    common: super::common::Common,
    /// Where the runs' results and calibration.json go.
    #[arg(short = 'o', long, default_value = "polysandbox-calibration")]
    output: PathBuf,
    /// Write the calibration here instead of the dataset's default place beside the store.
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
}

pub const INTERRUPTED: &str = "interrupted: nothing written (the runs so far are in --output)";

pub fn main(a: CalibrateArgs) -> i32 {
    let output = super::common::abs(a.output);
    if output.join("calibration.json").exists() || output.join("gold-1").exists() {
        return super::error(format!(
            "{} holds an earlier calibration: choose another --output or remove it",
            output.display()
        ));
    }
    let dataset = match a.data.path() {
        Ok(p) => p,
        Err(e) => return super::error(e),
    };
    let base = match a.common.options(dataset, "gold", output.clone()) {
        Ok(o) => o,
        Err(e) => return super::error(e),
    };
    // Said once the input is known good: a refused command line is one line.
    if let Err(e) = eval::dataset::load(&base.dataset) {
        return super::error(e);
    }
    if let Some(n) = super::host::cgroup_note() {
        eprintln!("polysandbox: note: {n}");
    }
    let named = a.calibration.is_some();
    let target = a.calibration.map(super::common::abs).unwrap_or_else(|| {
        calibration::default_path(
            &base.root.clone().unwrap_or_else(crate::image::store::Store::default_root),
            &base.dataset,
        )
    });

    if !named {
        if let Err(e) = calibration::check_kept(&target) {
            return super::error(e);
        }
    }
    let progress = super::progress::Reporter::new();
    let c = calibrate(&base, &output, a.runs, !a.no_stub, &progress);
    progress.finish();
    let (c, errors) = match c {
        Ok(c) => c,
        Err(e) => return stopped(e),
    };
    // The runs' own record whole; the dataset's calibration gains these entries (others' kept).
    let text = serde_json::to_string_pretty(&c).unwrap() + "\n";
    if let Err(e) = crate::sys::beneath::write_new(&output.join("calibration.json"), text.as_bytes(), 0o644) {
        return super::error(e);
    }
    if !c.instances.is_empty() {
        // The store's own: added to only if no one else could have put it there.
        let checked = if named { Ok(()) } else { calibration::check_kept(&target) };
        if let Err(e) = checked.and_then(|_| calibration::store(&target, &c)) {
            return super::error(e);
        }
    }
    // The report: each exclusion and why, flaky tests, stubs that pass.
    let fails: Vec<_> = c.instances.iter().filter(|(_, e)| !e.gold_passes).collect();
    out!(
        "calibrated {} instances ({} gold runs each): gold passes {}, fails {}{}",
        c.instances.len(),
        c.runs,
        c.instances.len() - fails.len(),
        fails.len(),
        if errors.is_empty() { String::new() } else { format!("; {} could not be calibrated", errors.len()) }
    );
    for (id, e) in &fails {
        out!("  excluded {id}: {}", e.cause.as_deref().unwrap_or("?"));
    }
    for (id, why) in &errors {
        out!("  not calibrated {id}: {why}");
    }
    for (id, e) in c.instances.iter().filter(|(_, e)| !e.flaky.is_empty()) {
        out!("  flaky {id}: {}", e.flaky.join(", "));
    }
    for (id, _) in c.instances.iter().filter(|(_, e)| e.control_sensitive) {
        out!("  controls change the tests of {id}: eval plants none there");
    }
    for (id, _) in c.instances.iter().filter(|(_, e)| e.stub == Some(Verdict::Resolved)) {
        out!("  stub passes {id}");
    }
    eprintln!(
        "polysandbox: calibration written to {}{}",
        output.join("calibration.json").display(),
        if c.instances.is_empty() { String::new() } else { format!(" and added to {}", target.display()) }
    );
    if !errors.is_empty() {
        let ids: Vec<&str> = errors.keys().map(String::as_str).collect();
        eprintln!(
            "polysandbox: exit 3: {} instance{} could not be calibrated (nothing kept for them); to redo them: polysandbox calibrate {} --instance {}",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" },
            base.dataset.display(),
            ids.join(" ")
        );
        3
    } else if fails.is_empty() {
        0
    } else {
        1
    }
}

/// An interrupted calibration exits 130, as eval does; any other failure 125.
fn stopped(e: String) -> i32 {
    if e == INTERRUPTED {
        eprintln!("polysandbox: {e}");
        130
    } else {
        super::error(e)
    }
}

/// Runs of gold again for an instance no run resolved, before it is called "gold fails here".
const CONFIRM_RUNS: u32 = 2;

/// The least time between a failing run of gold and its confirmation: a fault of a moment
/// (another process holding a budget of the host's for a few seconds) is over by then.
const CONFIRM_GAP: std::time::Duration = std::time::Duration::from_secs(15);

/// Waits until `CONFIRM_GAP` has passed since `since`; `Err` if eval is interrupted meanwhile.
fn confirm_gap(since: std::time::Instant, progress: &dyn eval::Progress) -> Result<(), String> {
    let until = since + CONFIRM_GAP;
    if std::time::Instant::now() < until {
        progress.note(&format!(
            "calibrate: gold failed somewhere: running it again there in {} s (a moment's fault is not a lasting cause)",
            until.saturating_duration_since(std::time::Instant::now()).as_secs().max(1)
        ));
    }
    while std::time::Instant::now() < until {
        if eval::scheduler::interrupted() {
            return Err(INTERRUPTED.into());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(())
}

/// Calibrates the instances `base` selects: `runs` gold runs of the tests as shipped, one with
/// every candidate control planted, and the stub's (if `stub`), each into `output/<name>/`.
pub fn calibrate(
    base: &eval::Options,
    output: &std::path::Path,
    runs: u32,
    stub: bool,
    progress: &dyn eval::Progress,
) -> Result<(calibration::Calibration, BTreeMap<String, String>), String> {
    // The conditions each instance runs under (gold's, as eval would run it).
    let planned = {
        let mut o = base.clone();
        o.predictions = "gold".into();
        eval::scheduler::planned(&o)?
    };
    let pass_of = |name: &str,
                   predictions: &str,
                   controls: eval::ControlMode,
                   ids: Option<Vec<String>>|
     -> Result<Vec<InstanceResult>, String> {
        let mut o = base.clone();
        if let Some(ids) = ids {
            o.ids = ids;
            o.sample = None;
            o.shard = None;
        }
        o.predictions = predictions.into();
        o.controls = controls;
        o.calibration = None;
        o.output = output.join(name);
        (o.summary_md, o.step_summary) = (None, false);
        progress.pass(Some(name));
        let ran = eval::run(&o, progress);
        progress.pass(None);
        let (results, interrupted, wall) = ran?;
        if interrupted {
            return Err(INTERRUPTED.into());
        }
        let resolved = results.iter().filter(|r| r.verdict == Verdict::Resolved).count();
        progress.note(&format!(
            "calibrate: {name}: {resolved} of {} resolved, {:.1} s",
            results.len(),
            wall.as_secs_f64()
        ));
        Ok(results)
    };
    let pass = |name: &str, predictions: &str, controls: eval::ControlMode| pass_of(name, predictions, controls, None);
    let mut gold: BTreeMap<String, Vec<(InstanceResult, String)>> = BTreeMap::new();
    let keep =
        |gold: &mut BTreeMap<String, Vec<(InstanceResult, String)>>, name: &str, results: Vec<InstanceResult>| {
            for r in results {
                let out = std::fs::read(output.join(name).join(&r.logs).join("test_output.txt"))
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                gold.entry(r.instance_id.clone()).or_default().push((r, out));
            }
        };
    for k in 1..=runs {
        let name = format!("gold-{k}");
        keep(&mut gold, &name, pass(&name, "gold", eval::ControlMode::Off)?);
    }
    let mut last = std::time::Instant::now();
    // An instance gold did not resolve is run again, twice: "gold fails here" takes it out of
    // every score, so it must be what gold does here, not a moment's accident (a runner killed
    // by a signal while another sandbox held a resource). See calibration::entry.
    for k in 1..=CONFIRM_RUNS {
        let failing: Vec<String> = gold
            .iter()
            .filter(|(_, rs)| !rs.iter().any(|(r, _)| r.verdict == Verdict::Resolved))
            .filter(|(_, rs)| rs.iter().all(|(r, _)| r.verdict != Verdict::Error || !r.deterministic))
            .map(|(id, _)| id.clone())
            .collect();
        if failing.is_empty() {
            break;
        }
        confirm_gap(last, progress)?;
        let name = format!("gold-again-{k}");
        keep(&mut gold, &name, pass_of(&name, "gold", eval::ControlMode::Off, Some(failing))?);
        last = std::time::Instant::now();
    }
    // Then every candidate control planted at once: those gold fails are the pool eval draws
    // from, if the tests gold passes still pass beside them.
    let verify: BTreeMap<String, InstanceResult> = pass("gold-controls", "gold", eval::ControlMode::Verify)?
        .into_iter()
        .map(|r| (r.instance_id.clone(), r))
        .collect();
    // Where planting them changed a test gold passes (a changed input that makes gold panic,
    // say: in Go that ends the table's test, every row after it with it), once more with the
    // candidates that change no input.
    let again: Vec<String> = gold
        .iter()
        .filter(|(id, runs)| {
            verify
                .get(*id)
                .is_some_and(|v| calibration::entry(runs, None, None, Some(v)).is_ok_and(|e| e.control_sensitive))
        })
        .map(|(id, _)| id.clone())
        .collect();
    let mut verify = verify;
    if !again.is_empty() {
        for r in pass_of("gold-controls-expected", "gold", eval::ControlMode::VerifyExpected, Some(again))? {
            verify.insert(r.instance_id.clone(), r);
        }
    }
    let stub: BTreeMap<String, InstanceResult> = if stub {
        pass("stub", "stub", eval::ControlMode::Off)?.into_iter().map(|r| (r.instance_id.clone(), r)).collect()
    } else {
        BTreeMap::new()
    };
    let (mut instances, mut errors) = (BTreeMap::new(), BTreeMap::new());
    for (id, runs) in &gold {
        let conditions = planned.get(id).map(|p| &p.conditions);
        let tighter = planned.get(id).map(|p| &p.tighter[..]).unwrap_or_default();
        match calibration::entry(runs, conditions, stub.get(id), verify.get(id)) {
            // Gold failing under limits below the dataset's is the setting's doing: nothing
            // kept, the instance an error of the run that says which.
            Ok(e) if !e.gold_passes && !tighter.is_empty() => {
                errors.insert(
                    id.clone(),
                    format!(
                        "gold fails under limits below the dataset's ({}): {}; not kept: run with the dataset's limits",
                        tighter.join(", "),
                        e.cause.as_deref().unwrap_or("no cause recorded")
                    ),
                );
            }
            Ok(e) => {
                instances.insert(id.clone(), e);
            }
            Err(why) => {
                errors.insert(id.clone(), why);
            }
        }
    }
    let c = calibration::Calibration {
        format: calibration::FORMAT,
        dataset: base.dataset.to_string_lossy().into_owned(),
        arch: std::env::consts::ARCH.into(),
        runs,
        created_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        instances,
    };
    Ok((c, errors))
}

#[cfg(test)]
mod tests {
    use super::super::{swebench_spellings, Cli, Command};
    use clap::Parser;
    use std::path::PathBuf;
    use std::time::Duration;

    /// The command the reports give for the instances the calibration left out parses as
    /// `polysandbox calibrate` (as main reads a command line), with the run's dataset, store,
    /// images and limits, and exactly those instances, odd ids included.
    #[test]
    fn the_reports_recalibrate_command_parses_as_the_runs_calibration() {
        let mut o = crate::eval::Options::new("/data/polyglot benchmark".into(), "gold", "/out".into(), "".into());
        o.root = Some("/store".into());
        o.images = vec!["python=python:3.12".into(), "go=golang:1.22".into()];
        o.config = Some("/etc/psb.toml".into());
        o.repos = Some("/mirrors".into());
        o.namespace = Some("swebench".into());
        o.instance_image_tag = Some("v1".into());
        o.timeout = Some(Duration::from_millis(1500));
        o.cpus = Some(1.5);
        o.memory = Some(3 << 30);
        o.disk = Some(5 << 30);
        o.pids = 512;
        o.network_host = true;
        o.per_test.timeout = Some(Duration::from_secs(20));
        o.per_test.memory = Some(1 << 30);
        o.per_test.cpu_time = Some(Duration::from_secs(7));
        o.caches = false;
        let ids: Vec<String> =
            ["java/hangman", "it's a test", "-t", "--instance", "x;rm -rf /", "a\"b$c"].map(String::from).to_vec();
        let redo = crate::eval::report::Recalibrate::of(&o);
        let argv = redo.argv(&ids);
        assert_eq!(argv[..2], ["polysandbox", "calibrate"]);
        let cli = Cli::try_parse_from(swebench_spellings(argv.iter().map(Into::into).collect()))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        let Command::Calibrate(a) = cli.command else { panic!("not calibrate: {argv:?}") };
        let dataset = a.data.path().unwrap();
        assert_eq!(dataset, o.dataset);
        let got = a.common.options(dataset, "gold", "/out".into()).unwrap();
        let mut want = ids.clone();
        want.sort();
        let mut have = got.ids.clone();
        have.sort();
        assert_eq!(have, want, "{argv:?}");
        assert_eq!(got.root, o.root);
        assert_eq!(got.images, o.images);
        assert_eq!((got.config, got.repos), (o.config.clone(), o.repos.clone()));
        assert_eq!((got.namespace, got.instance_image_tag), (o.namespace.clone(), o.instance_image_tag.clone()));
        assert_eq!((got.timeout, got.cpus, got.memory, got.disk, got.pids), (o.timeout, o.cpus, o.memory, o.disk, 512));
        assert!(got.network_host && !got.caches);
        assert_eq!(got.per_test, o.per_test);
        // The shell reads the quoted command back as the same words.
        let command = redo.command(&ids);
        let words =
            std::process::Command::new("sh").args(["-c", &format!("printf '%s\\0' {command}")]).output().expect("sh");
        let words: Vec<String> =
            String::from_utf8(words.stdout).unwrap().split_terminator('\0').map(String::from).collect();
        assert_eq!(words, argv, "{command}");
        // Every option at its default: the dataset and the instances alone (with the store,
        // when polysandbox's own --root or $POLYSANDBOX_ROOT named one).
        let plain = crate::eval::Options {
            root: Some("/s".into()),
            ..crate::eval::Options::new(PathBuf::from("/d"), "gold", "/o".into(), "".into())
        };
        assert_eq!(
            crate::eval::report::Recalibrate::of(&plain).command(&ids[..1]),
            "polysandbox calibrate /d --root /s --instance java/hangman"
        );
        // Per-test measurement off.
        let mut off = plain.clone();
        off.per_test.on = false;
        let argv = crate::eval::report::Recalibrate::of(&off).argv(&ids[..1]);
        let cli = Cli::try_parse_from(argv.clone()).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        let Command::Calibrate(a) = cli.command else { panic!() };
        assert!(!a.common.options("/d".into(), "gold", "/o".into()).unwrap().per_test.on);
    }
}
