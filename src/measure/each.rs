//! `polysandbox each-test`, inside a sandbox: a runner's tests, one process each, as nextest
//! runs Rust's. It lists the tests with the runner's own listing (libtest `--list`, a Go test
//! binary's `-test.list`, Catch2's `--list-test-names-only`), starts each test's process in a
//! process group of its own, waits for it on a pidfd, reaps it with `wait4` and writes one line
//! of [`super::Line`] per test to `--report`: the kernel's rusage of that process and of what it
//! started (CPU user and system, the largest resident set), its wall time on a monotonic clock.
//!
//! Steps per test, in order: start (new process group; `RLIMIT_CPU` when a CPU limit is given);
//! wait, sampling the group's resident memory when a memory limit is given; stop the group at
//! its wall or memory limit; reap it; kill and reap what it left behind (this process is a child
//! subreaper, so orphans come back here), counting their CPU; write the line. Nothing of one test
//! runs when the next starts, so no test is charged with another's work, and the runner's
//! start-up and the build are not inside any test's numbers.
//!
//! The test's own output goes where this process's goes (the runner's result lines, Go's
//! framed output), so the runner's parsers read it as they read a whole run's.

use super::{KeyLine, Limit, Line, Method, TestUsage};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Runner {
    /// `cargo test --no-run` builds the test binaries, each is a libtest binary; then the doc
    /// tests, unmeasured, as `cargo test --doc` runs them.
    Cargo,
    /// One libtest binary (the first argument).
    Libtest,
    /// One Go test binary (the first argument); the rest are flags for each run.
    Gotest,
    /// One Catch2 binary (the first argument); the rest are flags for each run.
    Catch2,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub runner: Runner,
    /// Where the lines go (a FIFO the host reads).
    pub report: Option<std::path::PathBuf>,
    /// libtest's `--logfile`, passed to each run.
    pub logfile: Option<String>,
    pub timeout: Option<Duration>,
    pub memory: Option<u64>,
    pub cpu_time: Option<Duration>,
    /// End the sandbox's other processes before the key exists (see [`end_others`]).
    pub end_others: bool,
    /// Cargo: more arguments for `cargo test`; otherwise the binary, then flags for each run.
    pub args: Vec<String>,
}

/// One test to run: its name as the runner's report names it, and its command.
struct Case {
    name: String,
    argv: Vec<String>,
}

/// What the runs came to: 0 when every test's process exited 0.
pub fn main(o: &Options) -> i32 {
    // SAFETY: plain prctl on ourselves: orphans of the tests come back to us to be reaped.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let report = o.report.as_ref().and_then(|p| {
        std::fs::OpenOptions::new()
            .append(true)
            .open(p)
            .map_err(|e| eprintln!("polysandbox each-test: {}: {e}", p.display()))
            .ok()
    });
    let mut worst = 0;
    let mut doc = false;
    let cases = match o.runner {
        Runner::Cargo => match cargo_binaries(&o.args) {
            Ok((bins, lib)) => {
                doc = lib;
                let mut all = Vec::new();
                for b in bins {
                    match libtest_cases(&b, o) {
                        Ok(c) => all.extend(c),
                        Err(e) => {
                            eprintln!("polysandbox each-test: {e}");
                            worst = 1;
                        }
                    }
                }
                all
            }
            Err(code) => return code,
        },
        Runner::Libtest | Runner::Gotest | Runner::Catch2 => {
            let Some(bin) = o.args.first() else {
                eprintln!("polysandbox each-test: no test binary given");
                return 2;
            };
            let listed = match o.runner {
                Runner::Gotest => gotest_cases(bin, &o.args[1..]),
                Runner::Catch2 => catch2_cases(bin, &o.args[1..]),
                _ => libtest_cases(bin, o),
            };
            match listed {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("polysandbox each-test: {e}");
                    return 1;
                }
            }
        }
    };
    eprintln!("polysandbox each-test: {} tests, one process each", cases.len());
    let mut report = report;
    // The project's code has run already (the listings run the test binaries' static
    // constructors, cargo the build scripts): whatever it left is ended before the key exists.
    // If it cannot be, or the host does not take the key, no test runs: no results, never
    // results without the exit-status check.
    if !reap_leftovers(LEFTOVERS) {
        eprintln!("polysandbox each-test: processes the listing or the build left would not end: no test run");
        return 1;
    }
    // What ran before us and left processes that are not ours (a `--setup` step's or a build
    // script's daemon, reparented to init before we became a subreaper) could read the key.
    // With init our parent, every other process in the sandbox is such a leftover: they end
    // too. Those that would not are named in the key line, and the results flagged.
    let ended = if o.end_others { end_others(LEFTOVERS) } else { 0 };
    if ended > 0 {
        eprintln!("polysandbox each-test: ended {ended} processes the setup or the build left running");
    }
    // SAFETY: plain prctl on ourselves: no process of the same user reads our memory.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    let key = super::new_key();
    if let Some(f) = report.as_mut() {
        let tests = cases.iter().map(|c| c.name.clone()).collect();
        let others = others();
        let mut line = serde_json::to_vec(&KeyLine { key: key.clone(), tests, others }).unwrap_or_default();
        line.push(b'\n');
        if f.write_all(&line).is_err() || !drained(f) {
            eprintln!("polysandbox each-test: the report channel did not take the key: no test run");
            return 1;
        }
    }
    for case in &cases {
        let (code, usage) = run_one(&case.argv, o);
        if !own_children().is_empty() {
            eprintln!("polysandbox each-test: processes {} left would not end: no further test run", case.name);
            return 1;
        }
        if code != 0 {
            worst = 1;
        }
        if let Some(f) = report.as_mut() {
            let mac = Some(super::mac(&key, &case.name, &usage));
            let mut line =
                serde_json::to_vec(&Line { test: case.name.clone(), alias: None, usage, mac }).unwrap_or_default();
            line.push(b'\n');
            // One write per line: lines of a FIFO below PIPE_BUF never interleave.
            let _ = f.write_all(&line);
        }
    }
    if doc {
        // Doc tests compile each example as they run: no per-test numbers of their own.
        let mut c = Command::new("cargo");
        c.args(["test", "--doc"]).args(&o.args).arg("--").args(libtest_flags(o));
        match c.status() {
            Ok(s) if s.success() => {}
            _ => worst = 1,
        }
    }
    worst
}

/// How long leftover processes may take to end (a chain of them comes back one link a round).
const LEFTOVERS: Duration = Duration::from_secs(10);

/// Waits (up to 5 s) for the reader to have taken everything written to the FIFO `f`: the key
/// is read by the host before any test could open the FIFO to read it first. False if it did not.
fn drained(f: &std::fs::File) -> bool {
    for _ in 0..500 {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD into an int, on a descriptor we own.
        if unsafe { libc::ioctl(f.as_raw_fd(), libc::FIONREAD, &mut n) } != 0 {
            return false;
        }
        if n == 0 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Kills and reaps every process that comes back to us (we are a subreaper), round after
/// round until none is left: a chain of processes comes back one link a round. Each reaped
/// one's rusage goes to `charge`. False if some were still there after `limit`.
fn reap(limit: Duration, mut charge: impl FnMut(&libc::rusage)) -> bool {
    let start = Instant::now();
    loop {
        let kids = own_children();
        if kids.is_empty() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        for k in kids {
            // SAFETY: a child of ours.
            unsafe { libc::kill(k, libc::SIGKILL) };
            let mut st = 0;
            // SAFETY: rusage is plain data the kernel fills.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: reaping a child of ours.
            if unsafe { libc::wait4(k, &mut st, 0, &mut ru) } == k {
                charge(&ru);
            }
        }
    }
}

/// What the listings and the build left running, ended.
fn reap_leftovers(limit: Duration) -> bool {
    reap(limit, |_| {})
}

fn libtest_flags(o: &Options) -> Vec<String> {
    let mut v = vec!["--include-ignored".to_string(), "--test-threads=1".to_string()];
    if let Some(l) = &o.logfile {
        v.push("--logfile".into());
        v.push(l.clone());
    }
    v
}

/// `cargo test --no-run`'s test binaries, and whether the package has a library (doc tests).
/// Err: cargo's exit code (the build failed; its messages went to stderr).
fn cargo_binaries(extra: &[String]) -> Result<(Vec<String>, bool), i32> {
    let mut c = Command::new("cargo");
    c.args(["test", "--no-run", "--message-format=json-render-diagnostics"]).args(extra).stdout(Stdio::piped());
    let mut child = c.spawn().map_err(|e| {
        eprintln!("polysandbox each-test: cargo: {e}");
        127
    })?;
    let mut bins = Vec::new();
    let mut lib = false;
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            if v["reason"] != "compiler-artifact" {
                continue;
            }
            let kinds: Vec<&str> = v["target"]["kind"]
                .as_array()
                .map(|a| a.iter().filter_map(|k| k.as_str()).collect())
                .unwrap_or_default();
            if v["profile"]["test"] == true {
                if let Some(exe) = v["executable"].as_str() {
                    bins.push(exe.to_string());
                }
            } else if kinds.contains(&"lib") && v["target"]["doctest"] == true {
                lib = true;
            }
        }
    }
    let status = child.wait().map_err(|_| 1)?;
    if !status.success() {
        return Err(status.code().unwrap_or(101));
    }
    Ok((bins, lib))
}

/// A listing's output. Catch2 v2 exits with the number of tests it listed: `any_exit` there.
fn listing(argv: &[&str], any_exit: bool) -> Result<String, String> {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    if !(out.status.success() || any_exit && out.status.code().is_some()) {
        return Err(format!("`{}` failed ({})", argv.join(" "), out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn libtest_cases(bin: &str, o: &Options) -> Result<Vec<Case>, String> {
    let text = listing(&[bin, "--list", "--format", "terse"], false)?;
    let mut flags = libtest_flags(o);
    if o.runner == Runner::Libtest {
        flags.extend(o.args[1..].iter().cloned());
    }
    Ok(text
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(|name| {
            let mut argv = vec![bin.to_string(), "--exact".into(), name.to_string()];
            argv.extend(flags.iter().cloned());
            Case { name: name.to_string(), argv }
        })
        .collect())
}

/// The Go test binary's top-level tests, examples and fuzz targets (their seed corpora run as
/// tests); benchmarks are not run by `go test` without `-bench`.
fn gotest_cases(bin: &str, flags: &[String]) -> Result<Vec<Case>, String> {
    let text = listing(&[bin, "-test.list", "."], false)?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|n| ["Test", "Example", "Fuzz"].iter().any(|p| n.starts_with(p)))
        .filter(|n| n.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .map(|name| {
            let mut argv = vec![bin.to_string(), format!("-test.run=^{name}$")];
            argv.extend(flags.iter().cloned());
            Case { name: name.to_string(), argv }
        })
        .collect())
}

/// Catch2 v2 test names as a test spec matches them exactly: every character its spec parser
/// gives a meaning to, escaped.
pub fn catch2_spec(name: &str) -> String {
    let mut s = String::new();
    for (i, c) in name.chars().enumerate() {
        if matches!(c, '\\' | ',' | '[' | ']' | '"' | '*') || (i == 0 && matches!(c, '~' | '#' | '-')) {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

fn catch2_cases(bin: &str, flags: &[String]) -> Result<Vec<Case>, String> {
    let text = listing(&[bin, "--list-test-names-only"], true)?;
    let base = std::path::Path::new(bin).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|name| {
            let mut argv = vec![bin.to_string(), catch2_spec(name)];
            argv.extend(flags.iter().cloned());
            // As the JUnit reporter names it (classname `BINARY.global`), and the parser joins.
            Case { name: format!("{base}.global.{name}"), argv }
        })
        .collect())
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(4096) as u64
}

/// Resident bytes of every process in the process group `pgid`.
fn group_rss(pgid: i32) -> u64 {
    let page = page_size();
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    let mut sum = 0;
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(after) = stat.rsplit_once(')').map(|(_, a)| a) else { continue };
        let f: Vec<&str> = after.split_whitespace().collect();
        if f.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid) {
            sum += f.get(21).and_then(|r| r.parse::<u64>().ok()).unwrap_or(0) * page;
        }
    }
    sum
}

fn tv(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// The processes of the sandbox besides this one, its ancestors and the init (pid 1), that
/// are alive (not zombies): started before each-test (a build script's daemon, a setup step's
/// service) and now the init's, out of a subreaper's reach. Only where each-test is the
/// init's own child, as the sandbox starts it: anywhere else (not in a sandbox) it says
/// nothing. [`end_others`] ends them when the caller says it runs in a sandbox.
fn others() -> Vec<i32> {
    let me = std::process::id() as i32;
    // SAFETY: getppid cannot fail.
    if unsafe { libc::getppid() } != 1 {
        return Vec::new();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut v: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|&pid| pid != me && pid != 1)
        .filter(|pid| {
            // Alive when any of its threads is: "tid (comm) S ...", the state after the last
            // ')' (a leader that exited alone reads Z while its threads run). Gone: not counted.
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
            tasks.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("stat"))
                    .ok()
                    .and_then(|st| st.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])))
                    .unwrap_or(false)
            })
        })
        .collect();
    v.sort_unstable();
    v
}

/// Ends every process of the sandbox but init and us, when init is our parent (so that none
/// of them is an ancestor): `kill(-1)` in the sandbox's pid namespace reaches exactly those.
/// Repeated until none is left (a fork racing the first kill) or `limit` passes; how many
/// there were at first.
fn end_others(limit: Duration) -> usize {
    // SAFETY: getppid cannot fail.
    if unsafe { libc::getppid() } != 1 {
        return 0;
    }
    // Never in the host's own pid namespace (its kernel threads' parent, kthreadd, is pid 2
    // there only), whoever passed --end-others.
    if in_initial_pid_namespace() {
        eprintln!("polysandbox each-test: --end-others outside a sandbox: ignored");
        return 0;
    }
    // How many, for the message only: the kill does not depend on what /proc shows (a thread
    // group whose leader exited reads as a zombie there, and /proc can be made unreadable).
    let first = others().len();
    let start = Instant::now();
    loop {
        // SAFETY: a signal to every process this one may signal but init and itself; with
        // init our parent, in a pid namespace of the sandbox's, that is only what the
        // project's code left there. Signal 0 asks whether any is left, zombies included.
        unsafe { libc::kill(-1, libc::SIGKILL) };
        let mut st = 0;
        // SAFETY: reaping our own children (the killed ones that were ours), without waiting.
        while unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) } > 0 {}
        // SAFETY: as above, signal 0: nothing is sent.
        let none =
            unsafe { libc::kill(-1, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if none || start.elapsed() > limit {
            return first;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether this is the host's own pid namespace: pid 2 is kthreadd, a kernel thread (no
/// parent), there and in no other.
fn in_initial_pid_namespace() -> bool {
    std::fs::read_to_string("/proc/2/stat")
        .ok()
        .and_then(|st| {
            st.rsplit_once(')')
                .map(|(head, rest)| (head.ends_with("(kthreadd"), rest.split_whitespace().nth(1) == Some("0")))
        })
        .is_some_and(|(name, orphan)| name && orphan)
}

/// The children this process has now (orphans of earlier tests came back to it).
fn own_children() -> Vec<i32> {
    let mut v = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for t in dir.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                v.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
        }
    }
    v
}

/// Runs one test's process to its end; its exit code (non-zero for a signal or a limit) and
/// what it used.
fn run_one(argv: &[String], o: &Options) -> (i32, TestUsage) {
    let mut usage = TestUsage {
        wall_s: 0.0,
        cpu_user_s: 0.0,
        cpu_system_s: 0.0,
        memory_peak_bytes: 0,
        method: Method::Process,
        memory: Some("maxrss".into()),
        stopped_by: None,
        cpu_vs_gold: None,
        memory_vs_gold: None,
        exit_code: None,
        signal: None,
    };
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null());
    let cpu = o.cpu_time.map(|d| d.as_secs_f64().ceil().max(1.0) as libc::rlim_t);
    // SAFETY: async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::setpgid(0, 0);
            if let Some(c) = cpu {
                let r = libc::rlimit { rlim_cur: c, rlim_max: c + 1 };
                libc::setrlimit(libc::RLIMIT_CPU, &r);
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("polysandbox each-test: {}: {e}", argv[0]);
            return (127, usage);
        }
    };
    let pid = child.id() as i32;
    // SAFETY: pidfd_open of our own child, not yet reaped.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    let pidfd = (raw >= 0).then(|| unsafe { OwnedFd::from_raw_fd(raw) });
    loop {
        let mut wait_ms: i64 = if o.memory.is_some() { 20 } else { 1000 };
        if let Some(t) = o.timeout {
            let left = t.saturating_sub(start.elapsed());
            wait_ms = wait_ms.min(left.as_millis() as i64);
        }
        let ended = match &pidfd {
            Some(fd) => {
                let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                // SAFETY: one pollfd.
                unsafe { libc::poll(&mut p, 1, wait_ms.max(0) as i32) > 0 }
            }
            None => {
                // No pidfd (Linux before 5.3): look, then sleep a little.
                // SAFETY: WNOWAIT leaves the child to be reaped below.
                let seen = unsafe {
                    let mut info: libc::siginfo_t = std::mem::zeroed();
                    let r =
                        libc::waitid(libc::P_PID, pid as u32, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT);
                    if r == 0 {
                        info.si_pid()
                    } else {
                        0
                    }
                };
                if seen == pid {
                    true
                } else {
                    std::thread::sleep(Duration::from_millis(wait_ms.clamp(1, 20) as u64));
                    false
                }
            }
        };
        if ended {
            break;
        }
        if o.timeout.is_some_and(|t| start.elapsed() >= t) {
            usage.stopped_by = Some(Limit::Walltime);
        } else if o.memory.is_some_and(|m| group_rss(pid) > m) {
            usage.stopped_by = Some(Limit::Memory);
        }
        if usage.stopped_by.is_some() {
            // SAFETY: kill of the test's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            break;
        }
    }
    let mut status = 0;
    // SAFETY: rusage is plain data the kernel fills.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: reaping our own child.
    unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    usage.wall_s = start.elapsed().as_secs_f64();
    drop(child);
    usage.cpu_user_s = tv(ru.ru_utime);
    usage.cpu_system_s = tv(ru.ru_stime);
    usage.memory_peak_bytes = ru.ru_maxrss.max(0) as u64 * 1024;
    // What it left behind: its group, then any orphan that came back to us.
    // SAFETY: kill of the test's own process group (gone already, most often).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    reap(LEFTOVERS, |r2| {
        usage.cpu_user_s += tv(r2.ru_utime);
        usage.cpu_system_s += tv(r2.ru_stime);
        usage.memory_peak_bytes = usage.memory_peak_bytes.max(r2.ru_maxrss.max(0) as u64 * 1024);
    });
    let signal = libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
    if usage.stopped_by.is_none()
        && o.cpu_time.is_some_and(|c| usage.cpu_s() >= c.as_secs_f64().floor())
        && matches!(signal, Some(libc::SIGXCPU) | Some(libc::SIGKILL))
    {
        usage.stopped_by = Some(Limit::Cputime);
    }
    if let Some(l) = usage.stopped_by {
        eprintln!(
            "polysandbox each-test: {}: {}",
            argv.get(2).or(argv.get(1)).map(String::as_str).unwrap_or(""),
            l.describe()
        );
    }
    let code = match signal {
        Some(s) => 128 + s,
        None => libc::WEXITSTATUS(status),
    };
    usage.signal = signal;
    usage.exit_code = signal.is_none().then(|| libc::WEXITSTATUS(status));
    (if usage.stopped_by.is_some() && code == 0 { 1 } else { code }, usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_s_pid_namespace_is_told_apart() {
        // The tests run on the host (or in a container: no kthreadd there either way but pid 2).
        let host = std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd");
        assert_eq!(in_initial_pid_namespace(), host);
    }

    #[test]
    fn catch2_specs_escape_what_the_spec_parser_reads() {
        assert_eq!(catch2_spec("plain name"), "plain name");
        assert_eq!(catch2_spec("a, b [c] *"), "a\\, b \\[c\\] \\*");
        assert_eq!(catch2_spec("~not"), "\\~not");
        assert_eq!(catch2_spec("#file"), "\\#file");
    }
}
