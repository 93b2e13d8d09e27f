//! Eval as the parent of `polysandbox run` children: each sandbox a process of its own,
//! with its own usage record, killed with eval (parent-death signal) and by an interrupt.

use super::calibration;
use super::catalogue::Runner;
use super::instance::{Instance, Prediction};
use super::prepare;
use super::Options;
use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The sandboxes eval is running, by pid: an interrupt reaches each.
pub type Children = Mutex<HashSet<u32>>;

#[derive(Clone)]
pub struct Job {
    pub(crate) inst: Instance,
    pub(crate) pred: Prediction,
    pub(crate) runner: Runner,
    pub(crate) image: String,
    pub(crate) key: String,
    pub(crate) memory: u64,
    pub(crate) timeout: String,
    pub(crate) cpus: f64,
    pub(crate) cal: Option<calibration::Entry>,
    pub(crate) image_digest: Option<String>,
    /// The model the prediction names (SWE-bench's log directories).
    pub(crate) model: String,
    /// The instance's directory name under logs/ (names.rs: safe, bounded, distinct).
    pub(crate) dir: String,
    /// Gold run to decide a prediction's `error` (scheduler's arbitrate): it writes none of
    /// the harness's per-instance files, which are the prediction's.
    pub(crate) gold_check: bool,
}

pub(crate) fn polysandbox(o: &Options) -> Command {
    let mut c = Command::new(&o.binary);
    c.arg("run").arg("-q");
    // If eval dies (even by SIGKILL), each sandbox's supervisor is killed, and its init and
    // whole pid namespace with it: nothing runs on to its timeout. (The parent-death signal
    // follows the thread that spawned it, which waits for it to the end.)
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl between fork and exec.
    let parent = std::process::id();
    unsafe {
        c.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            // Eval died between the fork and the prctl: no signal will come.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    if let Some(r) = &o.root {
        c.arg("--root").arg(r);
    }
    c
}

/// The image and the command after a `run` command line's options: `-- IMAGE -- CMD`, so that
/// no image name (a dataset's string) and no word of the command is ever read as an option of
/// `run` (an image named `--stats-json=/etc/passwd` would otherwise have root's `run` write
/// there). Returns the command for the command's words.
pub(crate) fn image_then<'a>(cmd: &'a mut Command, image: &str) -> &'a mut Command {
    cmd.arg("--").arg(image).arg("--")
}

/// Checks an image is in the store and its toolchain answers: one sandbox per image.
pub(crate) fn probe(o: &Options, image: &str, runner: &Runner, memory: u64) -> Result<(), String> {
    let stats = o.output.join(".work").join("probe-usage.json");
    let _ = std::fs::remove_file(&stats);
    let out = polysandbox(o)
        // What the image prints comes back into eval's memory: a cap, as for every run.
        .args(["--timeout", "120s", "--memory", &memory.to_string(), "--pids", &o.pids.to_string()])
        .args(["--output-limit", "1M"])
        .arg("--stats-json")
        .arg(&stats)
        .args(runner.env.iter().flat_map(|e| ["-e".to_string(), e.replace("{memory}", &memory.to_string())]))
        .arg("--")
        .arg(image)
        .arg("--")
        .args(&runner.probe)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", o.binary.display()))?;
    let record: Option<crate::sandbox::report::Report> =
        crate::sys::beneath::read_file(&stats, 64 << 20).ok().flatten().and_then(|b| serde_json::from_slice(&b).ok());
    let _ = std::fs::remove_file(&stats);
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
    use crate::sandbox::report::Status as RunStatus;
    match record {
        // polysandbox failed, or the probe never started: the image's (or the host's), not the
        // toolchain's.
        Some(rec) if rec.status == RunStatus::Error => {
            Err(format!("image {image}: {}", rec.error.as_deref().unwrap_or("polysandbox failed")))
        }
        Some(rec) if rec.status == RunStatus::NotStarted => {
            Err(format!("image {image}: {}", rec.start_error.as_deref().unwrap_or("the probe did not start")))
        }
        None => Err(format!("image {image}: the sandbox left no usage record: {last}")),
        Some(_) => Err(format!(
            "toolchain probe `{}` failed in {image} (exit {}): {last}",
            runner.probe.join(" "),
            out.status.code().unwrap_or(-1)
        )),
    }
}

/// The manifest digest `image` names in the store eval's sandboxes use (or a shared store):
/// what a calibration is tied to, so that a rebuilt image under the same name is not taken
/// for the calibrated one.
pub(crate) fn image_digest(o: &Options, image: &str) -> Option<String> {
    use crate::image::store::Store;
    let name = crate::reference::Reference::parse(image).ok()?.to_string();
    let own = Store::open(&o.root.clone().unwrap_or_else(Store::default_root)).ok()?;
    std::iter::once(own)
        .chain(Store::shared().ok()?)
        .find_map(|s| s.lookup(&name).ok().flatten())
        .map(|d| d.digest.to_string())
}

/// The `polysandbox run` of a job, up to its own binds and command: its limits (the writable
/// layer holds as much as the memory limit allows), its usage record at `logs/RECORD`, and the
/// host's network when asked for.
pub(crate) fn job_command(o: &Options, job: &Job, logs: &Path, output_limit: &str, record: &str) -> Command {
    let mut cmd = polysandbox(o);
    let disk = o.disk.unwrap_or(job.memory);
    cmd.args([
        "--timeout",
        &job.timeout,
        "--memory",
        &job.memory.to_string(),
        "--cpus",
        &job.cpus.to_string(),
        "--output-limit",
        output_limit,
        "--disk",
        &disk.to_string(),
        "--pids",
        &o.pids.to_string(),
    ])
    .arg("--stats-json")
    .arg(logs.join(record));
    if o.network_host {
        cmd.args(["--network", "host"]);
    }
    cmd
}

/// Runs a sandbox, killable by an interrupt: its stderr (and its stdout, unless `stdout` names
/// a file of its own) into `log`; returns what it wrote and its usage record (none if the
/// sandbox left none).
pub(crate) fn run_sandbox(
    o: &Options,
    mut cmd: Command,
    log: &Path,
    stdout: Option<&Path>,
    stats: &Path,
    children: &Mutex<HashSet<u32>>,
) -> Result<prepare::Ran, String> {
    let _ = std::fs::remove_file(stats);
    // In the output's logs: never through a link planted at the name.
    let create = |p: &Path| {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(p)
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let err = create(log)?;
    let out = match stdout {
        Some(p) => create(p)?,
        None => err.try_clone().map_err(|e| format!("{}: {e}", log.display()))?,
    };
    let mut child =
        cmd.stdin(Stdio::null()).stdout(out).stderr(err).spawn().map_err(|e| format!("{}: {e}", o.binary.display()))?;
    children.lock().unwrap().insert(child.id());
    let _ = child.wait();
    children.lock().unwrap().remove(&child.id());
    // Read as written: regular files, no link (see crate::sys::beneath).
    let read = |p: &Path| crate::sys::beneath::read_file(p, u64::MAX).ok().flatten();
    let text = read(log).map(|b| String::from_utf8_lossy(&b).to_string()).unwrap_or_default();
    let bytes = stdout.and_then(read).unwrap_or_default();
    let record = read(stats).and_then(|b| serde_json::from_slice(&b).ok());
    Ok(prepare::Ran { stdout: bytes, stderr: text, record })
}
