//! `polysandbox test`: a project's own test suite in a sandbox, with one of eval's runners,
//! each test's result and usage read as eval reads them: the runner's reports through the
//! channel (FIFOs in a directory the sandbox cannot write), its parser, the measurement kit.
//!
//! Steps, in order: a private work directory; the channel's FIFOs and the kit in it; `polysandbox
//! run` with the project bound copy-on-write at `/work/NAME`, the channel and the kit read-only,
//! its stdout and stderr one pipe (so that the runner's framed lines are never cut by the other
//! stream) shown as they come and kept for the parser; the reports read until the sandbox ends;
//! the parse; the work directory removed.

use super::catalogue::{Runner, MEASURE, MEASURE_REPORT};
use super::parsers::{self, TestResult};
use super::prepare::REPORT;
use crate::sandbox::report::Report;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What to run.
pub struct Project {
    /// The project's directory on the host (absolute).
    pub dir: PathBuf,
    /// The runner, its measured commands already in place when measuring.
    pub runner: Runner,
    pub image: String,
    /// `{name}` in the runner's command, and the directory's name in the sandbox.
    pub name: String,
    /// The polysandbox binary that runs the sandbox (and is copied into the kit).
    pub binary: PathBuf,
    /// Options for `polysandbox run`, before the image: limits, binds, environment, store.
    pub run_args: Vec<String>,
    /// The memory limit, for `{memory}` in the runner's environment (the JVM's MaxRAM).
    pub memory: u64,
    /// Run the runner's setup steps first (an exercise's: they may change the tests).
    pub setup: bool,
}

/// What the run came to.
pub struct Outcome {
    pub tests: Vec<TestResult>,
    /// The runner's own summary was found (its report, its last line).
    pub complete: bool,
    /// Why the results cannot be the runner's own (a report written twice, past its cap).
    pub tampered: Option<String>,
    /// See [`parsers::Parsed::unverified`].
    pub unverified: Option<String>,
    /// The sandbox's usage record (none when it left none).
    pub record: Option<Report>,
    /// `polysandbox run`'s exit status.
    pub exit: i32,
}

/// The work directory: private to the caller, removed when dropped.
struct Work(PathBuf);

impl Drop for Work {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn work_dir() -> Result<Work, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    for i in 0..100u32 {
        let p = base.join(format!("polysandbox-test.{}.{:x}", std::process::id(), nanos.wrapping_add(i as u128)));
        match std::fs::DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => return Ok(Work(p)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    Err(format!("{}: no fresh work directory", base.display()))
}

/// The runner's command with its placeholders filled: `{report}`, `{name}`; `{tests}` (a
/// repository runner's list of test files) is empty: the whole suite runs. With `setup`, the
/// runner's setup steps first, as an exercise's run has them.
pub fn command(runner: &Runner, name: &str, setup: bool) -> Vec<String> {
    let test = runner
        .test
        .iter()
        .filter(|a| a.as_str() != "{tests}")
        .map(|a| super::prepare::expand_test_arg(a, name).replace("{tests}", ""));
    if !setup || runner.setup.is_empty() {
        return test.collect();
    }
    let script = runner.setup.iter().map(|s| s.as_str()).chain(["exec \"$@\""]).collect::<Vec<_>>().join(" && ");
    ["sh".to_string(), "-c".into(), script, "sh".into()].into_iter().chain(test).collect()
}

/// Runs the project's tests; the sandbox's output goes to `echo` as it comes.
pub fn run(p: &Project, echo: &mut (dyn Write + Send)) -> Result<Outcome, String> {
    let work = work_dir()?;
    let channel = super::channel::open_channel(&work.0.join("report"), &p.runner.report_files())?;
    let stats = work.0.join("usage.json");
    let mount = format!("/work/{}", p.name);
    let mut c = Command::new(&p.binary);
    c.args(["run", "-q", "--stats-json"]).arg(&stats);
    c.arg("-v").arg(format!("{}:{mount}:O", p.dir.display()));
    c.arg("-v").arg(format!("{}:{REPORT}:ro", channel.dir.display()));
    if p.runner.measuring {
        let kit = work.0.join("measure");
        super::kit::make(&kit, &p.binary)?;
        c.arg("-v").arg(format!("{}:{MEASURE}:ro", kit.display()));
        c.args(["-e", &format!("POLYSANDBOX_MEASURE={REPORT}/{MEASURE_REPORT}")]);
    }
    for e in &p.runner.env {
        c.args(["-e", &e.replace("{memory}", &p.memory.to_string())]);
    }
    c.args(&p.run_args).args(["-w", &mount]);
    super::child::image_then(&mut c, &p.image).args(command(&p.runner, &p.name, p.setup));
    // One pipe for both streams, as eval's log file is one file for both.
    let mut fds = [0i32; 2];
    // SAFETY: a two-int array for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: both were just made and are ours.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let wr2 = wr.try_clone().map_err(|e| format!("pipe: {e}"))?;
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl between fork and exec: the sandbox ends with us, even on SIGKILL.
    unsafe {
        c.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            Ok(())
        });
    }
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::from(wr))
        .stderr(Stdio::from(wr2))
        .spawn()
        .map_err(|e| format!("{}: {e}", p.binary.display()))?;
    // Our copies of the pipe's write end go with the command: end-of-file is the sandbox's end.
    drop(c);
    // Ctrl-C reaches the sandbox (our process group's): it ends, and we report and clean up.
    // SAFETY: plain signal disposition of our own process; restored below.
    let old = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    // The command's own lines may be long: kept up to 64 MiB for the parser, all shown.
    let mut output = Vec::new();
    let mut rd = std::fs::File::from(rd);
    let mut buf = [0u8; 65536];
    loop {
        match rd.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let _ = echo.write_all(&buf[..n]);
                if output.len() < 64 << 20 {
                    output.extend_from_slice(&buf[..n]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    let status = child.wait();
    // SAFETY: as above.
    unsafe { libc::signal(libc::SIGINT, old) };
    let status = status.map_err(|e| format!("{}: {e}", p.binary.display()))?;
    let reports = channel.finish();
    let record: Option<Report> =
        crate::sys::beneath::read_file(&stats, 64 << 20).ok().flatten().and_then(|b| serde_json::from_slice(&b).ok());
    let text = String::from_utf8_lossy(&output);
    let parsed = parsers::parse(p.runner.parser, &text, &reports);
    Ok(Outcome {
        tests: parsed.tests,
        complete: parsed.complete,
        tampered: parsed.tampered,
        unverified: parsed.unverified,
        record,
        exit: status.code().unwrap_or(125),
    })
}

/// A project directory's name as a `{name}` and a path component in the sandbox: its own when
/// that is a plain name (letters, digits, `._-`, not starting with a dot), else `project`.
pub fn name_of(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| plain_name(n))
        .unwrap_or_else(|| "project".into())
}

pub fn plain_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 100
        && !n.starts_with('.')
        && n.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_commands() {
        assert_eq!(name_of(Path::new("/src/my-crate")), "my-crate");
        assert_eq!(name_of(Path::new("/src/odd name")), "project");
        assert_eq!(name_of(Path::new("/")), "project");
        assert!(!plain_name("..") && !plain_name("a/b") && !plain_name("a:b"));
        let cat = super::super::catalogue::load(None, &[]).unwrap();
        let cmd = command(&cat["cpp"], "complex-numbers", true);
        assert!(
            cmd.last()
                .unwrap()
                .contains("make complex-numbers && rm -f -- ../*_test.cpp && ./complex-numbers -r junit -o /polysandbox-report/catch2.xml"),
            "{cmd:?}"
        );
        let py = cat["python"].clone();
        let mut repo = py.clone();
        repo.test = py.repo_test.clone();
        assert!(!command(&repo, "x", false).iter().any(|a| a.contains('{')), "{:?}", command(&repo, "x", false));
        let js = command(&cat["javascript"], "x", true);
        assert!(js[0] == "sh" && js[2].contains("node_modules") && js[2].ends_with("exec \"$@\""), "{js:?}");
        assert_eq!(command(&cat["javascript"], "x", false)[0], "npm");
    }
}
