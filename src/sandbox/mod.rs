//! The sandbox: one command in fresh user, mount, pid, net, ipc, uts and cgroup namespaces, on
//! a copy-on-write overlay of a root filesystem, with limits, seccomp and a usage record.
//!
//! Three processes take part:
//! - the **supervisor** (this process, on the host): clones the init into new namespaces
//!   (into its cgroup, v2), writes its id maps, hands it the (idmapped) mount trees; then,
//!   while the init builds its root, compiles the seccomp filter and makes the cgroup (v1) and
//!   hands those over too; then watches the wall clock, the output and signals until the init
//!   exits;
//! - the **init** (pid 1 inside): builds the root filesystem, pivots into it, moves into its
//!   cgroup, forks the command, reaps, forwards signals, runs the CPU-time and fallback
//!   watchdogs, and reports how the command ended. When it exits the kernel kills everything
//!   left in the pid namespace;
//! - the **command**, exec'd by a child of the init after dropping capabilities, setting
//!   rlimits, no_new_privs, closing every fd above 2 and loading the seccomp filter.
//!
//! [`run`] performs the supervisor's steps in order; `init.rs` the init's and the command's.

pub mod caps;
pub mod chown;
pub(crate) mod host_watch;
mod idmap;
mod init;
mod monitor;
mod mounts;
mod record_enum;
pub mod report;
pub(crate) mod trace;
mod trampoline;

use crate::cgroups::{self, Manager};
use crate::seccomp;
use crate::sys;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use idmap::root_host_ids;
/// How many ids a root-run sandbox has (uid and gid 0 to ID_RANGE - 1 inside).
pub const ID_RANGE: u32 = idmap::RANGE;
pub use monitor::reap_all;
pub use report::{ErrorKind, Report};

/// Exit statuses of `polysandbox run` besides the command's own (and 128+N for signal N).
/// The signal by which the supervisor tells the init to end the run at once and report.
pub fn stop_signal() -> i32 {
    libc::SIGRTMAX() - 1
}

pub mod exit {
    /// `--output-limit` was exceeded; the sandbox was killed.
    pub const OUTPUT_LIMIT: i32 = 120;
    /// `--cpu-time` was exceeded; the sandbox was killed.
    pub const CPU_TIME: i32 = 121;
    /// A process was killed for exceeding `--memory`.
    pub const OOM: i32 = 122;
    /// `--timeout` (wall clock) expired; the sandbox was killed.
    pub const TIMEOUT: i32 = 124;
    /// polysandbox itself failed: bad options, missing rootfs, a setup step refused.
    pub const ERROR: i32 = 125;
    /// The command exists but could not be executed.
    pub const CANNOT_EXEC: i32 = 126;
    /// The command was not found.
    pub const NOT_FOUND: i32 = 127;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// A network namespace of its own with only loopback, up.
    None,
    /// The host's network namespace.
    Host,
}

#[derive(Debug, Clone)]
pub struct Bind {
    pub source: PathBuf,
    pub target: String,
    pub readonly: bool,
    /// podman's `:O`: the source is the read-only lower layer of an overlay whose writable
    /// layer is on the sandbox's scratch tmpfs (counted against `--disk`, gone at exit). The
    /// host directory is never written.
    pub overlay: bool,
}

#[derive(Debug, Clone)]
pub struct Tmpfs {
    pub target: String,
    pub size: Option<u64>,
    /// Its root directory's mode (default 1777).
    pub mode: Option<u32>,
    pub readonly: bool,
    pub noexec: bool,
    /// Further tmpfs options, checked: `uid=N`, `gid=N` (ids inside the sandbox), `nr_inodes=N`.
    pub options: Vec<String>,
}

impl Tmpfs {
    pub fn new(target: &str) -> Tmpfs {
        Tmpfs { target: target.into(), size: None, mode: None, readonly: false, noexec: false, options: Vec::new() }
    }
}

/// One resource limit of the command's processes (`--ulimit`): `setrlimit(resource, soft, hard)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimit {
    pub resource: i32,
    pub soft: u64,
    pub hard: u64,
}

/// The terminal the command gets with `-t`: a pseudo-terminal whose slave is made inside the
/// sandbox (its own devpts) and whose master only the supervisor holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tty {
    /// The window size to start with (rows, columns), from the caller's terminal.
    pub size: Option<(u16, u16)>,
}

#[derive(Debug, Clone)]
pub enum Seccomp {
    Default,
    Unconfined,
    Profile(String),
}

/// Resource limits. `None` means not limited.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    pub memory: Option<u64>,
    pub cpus: Option<f64>,
    pub pids: Option<u64>,
    pub timeout: Option<Duration>,
    pub cpu_time: Option<Duration>,
    pub disk: Option<u64>,
    pub output: Option<u64>,
    pub nofile: Option<u64>,
}

/// Everything one sandboxed run needs.
#[derive(Debug, Clone)]
pub struct Spec {
    pub rootfs: PathBuf,
    /// Read-only trees stacked over `rootfs` in the overlay, the top one first (an image of
    /// the store is its chain's tree with its last layer's tree over it). Empty for a plain
    /// root filesystem.
    pub layers: Vec<PathBuf>,
    pub argv: Vec<String>,
    pub env: Vec<String>,
    pub workdir: String,
    pub hostname: String,
    pub network: Network,
    pub binds: Vec<Bind>,
    pub tmpfs: Vec<Tmpfs>,
    pub limits: Limits,
    pub seccomp: Seccomp,
    pub cgroup_manager: Manager,
    /// uid and gid inside the sandbox.
    pub user: (u32, u32),
    /// Absolute paths inside the sandbox whose SHA-256 the init takes once the command and
    /// every other process of the sandbox have ended (`--digest-after`).
    pub digest_after: Vec<String>,
    /// Absolute paths inside the sandbox the init makes read-only (and the directories above
    /// them immovable) when a process of the sandbox first asks, by SIGUSR2 to pid 1
    /// (`--protect`).
    pub protect: Vec<String>,
    /// The capabilities the command keeps, as a mask (`caps::default_mask()`: Docker's).
    pub caps: u64,
    /// Resource limits of the command's processes besides `--nofile` (`--ulimit`).
    pub rlimits: Vec<Rlimit>,
    /// The root filesystem is read-only (`--read-only`); tmpfs, binds and /dev stay as asked.
    pub read_only: bool,
    /// `-t`: a pseudo-terminal for the command's stdin, stdout and stderr.
    pub tty: Option<Tty>,
}

impl Spec {
    pub fn new(rootfs: PathBuf, argv: Vec<String>) -> Spec {
        Spec {
            rootfs,
            layers: Vec::new(),
            argv,
            env: Vec::new(),
            workdir: "/".into(),
            hostname: "sandbox".into(),
            network: Network::None,
            binds: Vec::new(),
            tmpfs: Vec::new(),
            limits: Limits::default(),
            seccomp: Seccomp::Default,
            cgroup_manager: Manager::Auto,
            user: (0, 0),
            digest_after: Vec::new(),
            protect: Vec::new(),
            caps: caps::default_mask(),
            rlimits: Vec::new(),
            read_only: false,
            tty: None,
        }
    }
}

/// An error of polysandbox itself (not of the command): one line for the user, and its kind
/// for the usage record (`status: error`).
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A failed step of the sandbox's setup (the syscall wrappers' errors, which say what was
/// being done).
impl From<String> for Error {
    fn from(s: String) -> Error {
        Error::new(ErrorKind::Setup, s)
    }
}

/// How each limit that cannot have a cgroup is held anyway.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Fallbacks {
    /// Kill the sandbox when the sum of its processes' RSS passes this.
    pub memory_watchdog: Option<u64>,
    /// RLIMIT_NPROC in the sandbox's user namespace.
    pub pids_rlimit: Option<u64>,
    /// CPUs to pin the command to.
    pub cpu_affinity: Option<Vec<usize>>,
    /// `--cpu-time` in seconds, where no cgroup counts the CPU time: the init samples it.
    pub cpu_time_watchdog: Option<f64>,
}

/// What the init needs, prepared by the supervisor before the clone (so nothing in the child
/// can fail on parsing).
pub(crate) struct Plan<'a> {
    pub spec: &'a Spec,
    pub rootfs: std::ffi::CString,
    pub rootless: bool,
    pub self_exe: (u64, u64),
    /// Write ends of the stdout and stderr pipes when the output is counted.
    pub out_pipes: Option<[i32; 2]>,
    /// Whether each bind source is a directory, decided here: the init may not be allowed to
    /// look at it (as root, it runs as the sandbox's unprivileged host uid).
    pub bind_is_dir: Vec<bool>,
    /// What the command gets as stdin instead of ours (see [`private_stdin`]).
    pub stdin: Option<i32>,
}

/// What the init receives after its go, while it builds the root filesystem: the supervisor
/// compiles the seccomp filter and (v1) makes the cgroup meanwhile, on the other CPU where
/// there is one. The init reads it before it starts the command.
#[derive(Default)]
pub(crate) struct Late {
    pub seccomp: Option<seccomp::Program>,
    pub fallbacks: Fallbacks,
    /// Where the cgroup backend lets the init move itself (v1): the fds it writes "0" to,
    /// into its cgroup before the command starts, and out of it once the command is reaped.
    pub cgroup_enter: Vec<OwnedFd>,
    pub cgroup_leave: Vec<OwnedFd>,
    /// Written "0" once the command is started: out of the CPU-throttled group (v1).
    pub cgroup_after_spawn: Vec<OwnedFd>,
    /// The group's CPU quota file and what lifts it, written before every process is killed.
    pub cpu_release: Option<(OwnedFd, &'static str)>,
}

/// The header of the message carrying a [`Late`]; the seccomp program follows it, raw.
#[derive(serde::Serialize, serde::Deserialize)]
struct LateHeader {
    fallbacks: Fallbacks,
    /// How many of the fds are `cgroup_enter`, then `cgroup_after_spawn`; then the quota
    /// file's, if `release` names what lifts it; the rest are `cgroup_leave`.
    enter: usize,
    #[serde(default)]
    after_spawn: usize,
    #[serde(default)]
    release: Option<String>,
    seccomp: bool,
}

impl Late {
    /// One message: a JSON line, then the seccomp program; the cgroup fds beside it.
    fn send(&self, sock: i32) -> std::io::Result<()> {
        let header = LateHeader {
            fallbacks: self.fallbacks.clone(),
            enter: self.cgroup_enter.len(),
            after_spawn: self.cgroup_after_spawn.len(),
            release: self.cpu_release.as_ref().map(|(_, v)| v.to_string()),
            seccomp: self.seccomp.is_some(),
        };
        let mut data = serde_json::to_vec(&header).map_err(std::io::Error::other)?;
        data.push(b'\n');
        if let Some(p) = &self.seccomp {
            data.extend_from_slice(&p.to_bytes());
        }
        let fds: Vec<i32> = self
            .cgroup_enter
            .iter()
            .chain(&self.cgroup_after_spawn)
            .chain(self.cpu_release.as_ref().map(|(f, _)| f))
            .chain(&self.cgroup_leave)
            .map(|f| f.as_raw_fd())
            .collect();
        sys::send_msg(sock, &data, &fds)
    }

    fn parse(data: &[u8], mut fds: Vec<OwnedFd>) -> Result<Late, String> {
        let bad = || "a malformed message from the supervisor".to_string();
        let nl = data.iter().position(|&b| b == b'\n').ok_or_else(bad)?;
        let h: LateHeader = serde_json::from_slice(&data[..nl]).map_err(|_| bad())?;
        let release = match h.release.as_deref() {
            None => None,
            Some("-1") => Some("-1"),
            Some("max") => Some("max"),
            Some(_) => return Err(bad()),
        };
        let leading = h.enter + h.after_spawn + usize::from(release.is_some());
        if leading > fds.len() {
            return Err(bad());
        }
        let seccomp =
            if h.seccomp { Some(seccomp::Program::from_bytes(&data[nl + 1..]).ok_or_else(bad)?) } else { None };
        let leave = fds.split_off(leading);
        let mut rest = fds.split_off(h.enter);
        let cpu_release = match release {
            Some(v) => rest.pop().map(|f| (f, v)),
            None => None,
        };
        Ok(Late {
            seccomp,
            fallbacks: h.fallbacks,
            cgroup_enter: fds,
            cgroup_leave: leave,
            cgroup_after_spawn: rest,
            cpu_release,
        })
    }
}

/// Runs `spec` to completion and reports what happened.
pub fn run(spec: &Spec) -> Result<Report, Error> {
    let started = Instant::now();
    monitor::reap_finished();
    trace::init();
    trace::step("start");

    // 1. Validate what the user gave, before anything is created; no other thread may run
    //    when the init is cloned (`single_threaded`).
    let rootfs = validate(spec)?;
    single_threaded()?;
    let rootless = !host_root();

    // 2. The cgroup, now only where the init is cloned straight into it (v2); otherwise
    //    (v1) it is made after the init is released, while the init builds its root.
    let cg_limits = cgroups::Limits {
        memory: spec.limits.memory,
        cpus: spec.limits.cpus,
        pids: spec.limits.pids,
        cpu_accounting: spec.limits.cpu_time.is_some(),
    };
    let backend = cgroups::choose(spec.cgroup_manager);
    let mut early = None;
    if backend.clones_into() {
        early = Some(backend.create(&cg_limits));
    }

    // 3. Channels: a seqpacket socket to the init (fds down, reports up), output pipes.
    let (sup_sock, init_sock) = socketpair()?;
    // Output goes through our pipes when it is counted, and whenever our stdout or stderr is a
    // file: a command handed the caller's file could reopen it through /proc/self/fd/1 (and
    // read what was there before) or grow it with fallocate, past --disk and uncounted. With -t
    // the output comes through the pty, counted and relayed there.
    // And rootless, whenever they are the caller's own (a terminal, a named pipe): the
    // sandbox's root is the caller, and could fchmod them (the caller's terminal left 0666 for
    // every local user to read and write). Anonymous pipes and sockets are passed as they are.
    let relay = spec.limits.output.is_some()
        || is_a_file(1)
        || is_a_file(2)
        || (rootless && (callers_own(1) || callers_own(2)));
    let (out_read, out_write) = if relay && spec.tty.is_none() {
        let (r, w) = pipes()?;
        (Some(r), Some(w))
    } else {
        (None, None)
    };
    // With -t the command's stdin is the pty; ours is read by the supervisor alone. Rootless,
    // a stdin of the caller's own is relayed through a pipe, as the output is.
    let (stdin, stdin_w) = match spec.tty {
        Some(_) => (None, None),
        None if rootless && callers_own(0) => {
            let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
                .map_err(|e| Error::new(ErrorKind::Host, format!("pipe: {e}")))?;
            (Some(r), Some(w))
        }
        None => (private_stdin()?, None),
    };
    let plan = Plan {
        spec,
        stdin: stdin.as_ref().map(|f| f.as_raw_fd()),
        rootfs: sys::cpath(&rootfs),
        rootless,
        self_exe: self_exe_id(),
        out_pipes: out_write.as_ref().map(|w| [w[0].as_raw_fd(), w[1].as_raw_fd()]),
        bind_is_dir: spec.binds.iter().map(|b| b.source.is_dir()).collect(),
    };

    // 4. Signals the supervisor handles come through a signalfd; block them before the clone
    //    so none is lost (the init inherits the mask and waits for them itself).
    let sigfd = monitor::SignalFd::new()?;

    // 5. Clone the init into its namespaces (and its cgroup, v2).
    let mut flags =
        (libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS) as u64;
    if spec.network == Network::None {
        flags |= libc::CLONE_NEWNET as u64;
    }
    let cg_fd = early.as_ref().and_then(|g| g.as_ref().ok()).and_then(|g| g.clone_into_fd());
    // The sandbox's host ids (as root, a slot of its own, held until we return), and its user
    // namespace created by them, not by root (see idmap.rs).
    let ids = idmap::Ids::allocate(rootless)?;
    let owner = if rootless { None } else { idmap::become_owner(ids.uid) };
    let cloned = sys::clone3(flags, cg_fd);
    if let (false, Some(owner)) = (matches!(cloned, Ok((0, _))), owner) {
        idmap::back_to_root(owner);
    }
    let (pid, pidfd) = match cloned {
        Ok((0, _)) => {
            drop(sup_sock);
            init::main(&plan, init_sock)
        }
        Ok((pid, Some(pidfd))) => (pid, pidfd),
        Ok((_, None)) => return Err(Error::new(ErrorKind::Host, "clone3 returned no pidfd")),
        Err(e) => return Err(Error::new(ErrorKind::Host, idmap::explain_clone_failure(e))),
    };
    trace::step("cloned");
    drop(init_sock);
    drop(plan);
    drop(out_write);
    drop(stdin);
    let child = monitor::Child { pid, pidfd };

    // 6. Id maps and idmapped trees; then release the init.
    let fds = match prepare_child(&child, spec, &rootfs, &ids) {
        Ok(f) => f,
        Err(e) => {
            child.kill_and_reap();
            return Err(e);
        }
    };
    let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
    if let Err(e) = sys::send_msg(sup_sock.as_raw_fd(), b"go", &raw) {
        child.kill_and_reap();
        return Err(Error::new(ErrorKind::Setup, format!("cannot start the sandbox: {e}")));
    }
    drop(fds);
    trace::step("released the init");

    // 7. While the init builds its root: the seccomp filter (a bad profile is the user's
    //    error, and kills the init), the cgroup (v1) and what falls back where it cannot hold
    //    a limit; then the init gets them, and only then starts the command.
    let cloned_into = cg_fd.is_some();
    let (mut cgroup, cgroup_note) = match early.unwrap_or_else(|| backend.create(&cg_limits)) {
        Ok(g) => (Some(g), None),
        Err(why) => (None, Some(why.0)),
    };
    let held = cgroup.as_ref().map(|g| g.enforces().clone()).unwrap_or_default();
    // The seccomp filter: the profile, behind the rules that protect the host and the limits
    // whatever the profile (unconfined included): with a read-write bind no file the command
    // makes may be setuid or setgid (it would outlive the run on the host); no process but
    // the caller itself may be reprioritised or have its rlimits changed (the init's
    // watchdog); where CPU affinity holds --cpus, the command may not widen it.
    let hardening = seccomp::Hardening {
        no_setid: spec.binds.iter().any(|b| !b.readonly && !b.overlay),
        pin_affinity: spec.limits.cpus.is_some() && held.cpus.is_none(),
        caps: (spec.caps != caps::default_mask()).then_some(spec.caps),
    };
    let arch = seccomp::Arch::native();
    let seccomp = match &spec.seccomp {
        Seccomp::Unconfined => seccomp::compile_hardened(seccomp::ALLOW_ALL, arch, hardening),
        Seccomp::Default => seccomp::compile_hardened(seccomp::DEFAULT_PROFILE, arch, hardening),
        Seccomp::Profile(json) => seccomp::compile_hardened(json, arch, hardening),
    };
    let seccomp = match seccomp {
        Ok(p) => Some(p),
        Err(e) => {
            child.kill_and_reap();
            // The user's profile is the user's error; ours failing to compile is our own.
            let kind = if matches!(spec.seccomp, Seccomp::Profile(_)) { ErrorKind::Usage } else { ErrorKind::Internal };
            return Err(Error::new(kind, e));
        }
    };
    let (late, _cpu_locks) = match late_plan(spec, seccomp, cgroup.as_deref(), cloned_into, &held, child.pid) {
        Ok(l) => l,
        Err(e) => {
            child.kill_and_reap();
            return Err(e);
        }
    };
    match late.send(sup_sock.as_raw_fd()) {
        Ok(()) => {}
        // The init is gone already (a setup step failed): its report says why.
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPIPE | libc::ECONNRESET)) => {}
        Err(e) => {
            child.kill_and_reap();
            return Err(Error::new(ErrorKind::Setup, format!("cannot start the sandbox: {e}")));
        }
    }
    let self_moving = !late.cgroup_enter.is_empty();
    let fallbacks = late.fallbacks.clone();
    drop(late);
    trace::step("seccomp compiled, cgroup ready");

    // 8. Watch until the init has exited.
    // --cpu-time counted by the cgroup, where it counts: every process's CPU, those reaped by
    // nobody (a parent ignoring SIGCHLD) too.
    let cpu_meter = cgroup.as_deref().filter(|_| held.cpu_accounting);
    let cpu_now = || cpu_meter.and_then(|g| g.cpu_seconds());
    let cpu_check = spec
        .limits
        .cpu_time
        .filter(|_| cpu_meter.is_some())
        .map(|d| (d.as_secs_f64(), &cpu_now as &dyn Fn() -> Option<f64>));
    let relay = monitor::Relay { pipes: out_read, tty: spec.tty.is_some(), stdin: stdin_w };
    let release_cpu = || {
        if let Some(g) = cgroup.as_deref() {
            cgroups::release_cpu(&g.cpu_release());
        }
    };
    let cpu = monitor::Cpu { limit: cpu_check, release: &release_cpu };
    let outcome = monitor::watch(&child, &sup_sock, &sigfd, relay, &spec.limits, cpu, started);
    let wall = outcome.ended.duration_since(started);
    trace::step("init reaped");

    // 9. Measure, remove the cgroup, report. An init that reported is alone in its cgroup and
    //    only tearing its namespaces down: it is moved out, so the cgroup goes now.
    let usage = cgroup.as_ref().map(|g| g.usage()).unwrap_or_default();
    let cgroup_kind = cgroup.as_ref().map(|g| g.kind());
    if let Some(g) = cgroup.as_mut() {
        // (A self-moving init left on its own before reporting; if it could not, destroy kills
        // it, which costs nothing now that it has reported.)
        if outcome.init_running && !self_moving {
            g.park(child.pid);
        }
        g.destroy();
    }
    // Closing the socket lets a reported init exit.
    drop(sup_sock);
    if outcome.init_running {
        monitor::reap_later(child);
    }
    drop(sigfd);
    trace::step("cgroup removed");
    report::build(spec, outcome, usage, cgroup_kind, &held, &fallbacks, cgroup_note, rootless, wall)
}

fn validate(spec: &Spec) -> Result<PathBuf, Error> {
    if spec.argv.is_empty() {
        return Err(usage("no command given: polysandbox run [OPTIONS] --rootfs DIR -- CMD [ARGS...]"));
    }
    let rootfs =
        std::fs::canonicalize(&spec.rootfs).map_err(|e| usage(format!("rootfs {}: {e}", spec.rootfs.display())))?;
    if !rootfs.is_dir() {
        return Err(usage(format!("rootfs {} is not a directory", rootfs.display())));
    }
    if rootfs == std::path::Path::new("/") {
        return Err(usage("rootfs / is the host's root: give a separate root filesystem"));
    }
    for b in &spec.binds {
        if !b.source.exists() {
            return Err(usage(format!("bind source {}: no such file or directory", b.source.display())));
        }
        if b.overlay && !b.source.is_dir() {
            return Err(usage(format!("-v {}:{}:O: an overlay needs a directory", b.source.display(), b.target)));
        }
        check_target(&b.target, "-v")?;
    }
    for l in &spec.layers {
        if !l.is_dir() {
            return Err(usage(format!("image layer tree {} is not a directory", l.display())));
        }
    }
    // Each bind and each image layer over the rootfs is one more fd of the supervisor's message.
    if spec.binds.len() + spec.layers.len() >= sys::MAX_FDS {
        let most = (sys::MAX_FDS - 1).saturating_sub(spec.layers.len());
        return Err(usage(format!("{} -v binds: at most {most}", spec.binds.len())));
    }
    for t in &spec.tmpfs {
        check_target(&t.target, "--tmpfs")?;
    }
    if !spec.workdir.starts_with('/') {
        return Err(usage(format!("working directory '{}' must be absolute", spec.workdir)));
    }
    if spec.user.0 >= ID_RANGE || spec.user.1 >= ID_RANGE {
        return Err(usage(format!(
            "uid {} gid {} is outside the sandbox's {ID_RANGE} ids (0 to {})",
            spec.user.0,
            spec.user.1,
            ID_RANGE - 1
        )));
    }
    if !host_root() && spec.user != (0, 0) {
        return Err(usage(format!(
            "uid {} gid {} cannot exist in a rootless sandbox, which maps only uid 0 (run as root, or pass --user 0)",
            spec.user.0, spec.user.1
        )));
    }
    if spec.hostname.is_empty() || spec.hostname.len() > 64 {
        return Err(usage(format!("invalid hostname '{}': 1 to 64 characters", spec.hostname)));
    }
    Ok(rootfs)
}

/// The user's mistake: an option, or what it names.
fn usage(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Usage, message)
}

fn check_target(t: &str, opt: &str) -> Result<(), Error> {
    if !t.starts_with('/') || t == "/" || t.split('/').any(|c| c == "..") {
        return Err(usage(format!("{opt}: target '{t}' must be an absolute path below / without '..'")));
    }
    Ok(())
}

/// Step 6: id maps, then (as root) the idmapped trees. Returns the fds to hand to the init.
fn prepare_child(
    child: &monitor::Child,
    spec: &Spec,
    rootfs: &std::path::Path,
    ids: &idmap::Ids,
) -> Result<Vec<OwnedFd>, Error> {
    idmap::write_maps(child.pid, ids)?;
    if ids.count == 1 {
        return Ok(Vec::new());
    }
    // As root, the command runs as an unprivileged host uid range; idmapped mounts make the
    // root-owned rootfs (and binds) appear owned by the sandbox's root.
    let userns =
        sys::open(&sys::cstr(format!("/proc/{}/ns/user", child.pid)), libc::O_RDONLY, "the sandbox's user namespace")?;
    let mut fds = Vec::with_capacity(2 + spec.binds.len());
    // Where the init attaches its writable layer: the rootfs directory as its own mount
    // namespace has it, looked up by us through its root (the init runs as an unprivileged
    // host id, which may not traverse the store's 0700 root).
    let mut at = std::ffi::OsString::from(format!("/proc/{}/root", child.pid));
    at.push(rootfs.as_os_str());
    fds.push(sys::open(
        &sys::cstr(at),
        libc::O_PATH | libc::O_DIRECTORY,
        "the rootfs in the sandbox's mount namespace",
    )?);
    fds.push(idmap::idmapped_tree(rootfs, userns.as_raw_fd())?);
    for l in &spec.layers {
        fds.push(idmap::idmapped_tree(l, userns.as_raw_fd())?);
    }
    // Read-write binds are written as slot 0's ids on disk, whichever slot this sandbox has.
    let disk = match spec.binds.iter().any(|b| !b.readonly && !b.overlay) && ids.remapped() {
        true => Some(idmap::disk_userns(ids)?),
        false => None,
    };
    for b in &spec.binds {
        let ro = b.readonly || b.overlay;
        fds.push(idmap::bind_tree(&b.source, ro, Some(userns.as_raw_fd()), disk.as_ref().map(|d| d.as_raw_fd()))?);
    }
    Ok(fds)
}

/// Step 7: the fallbacks for what `cgroup` does not hold, and the way the init gets into
/// `cgroup`: by moving itself (v1), or moved by us now, unless it was
/// cloned into it.
fn late_plan(
    spec: &Spec,
    seccomp: Option<seccomp::Program>,
    cgroup: Option<&dyn cgroups::Group>,
    cloned_into: bool,
    held: &cgroups::Limits,
    pid: i32,
) -> Result<(Late, Vec<std::fs::File>), Error> {
    let (cpu_affinity, cpu_locks) = match spec.limits.cpus.filter(|_| held.cpus.is_none()) {
        Some(c) => {
            let (cpus, locks) = affinity_for(c);
            (Some(cpus), locks)
        }
        None => (None, Vec::new()),
    };
    let fallbacks = Fallbacks {
        memory_watchdog: spec.limits.memory.filter(|_| held.memory.is_none()),
        pids_rlimit: spec.limits.pids.filter(|_| held.pids.is_none()),
        cpu_affinity,
        cpu_time_watchdog: spec.limits.cpu_time.filter(|_| !held.cpu_accounting).map(|d| d.as_secs_f64()),
    };
    let mut late = Late { seccomp, fallbacks, ..Default::default() };
    if let Some(g) = cgroup {
        late.cpu_release = g.cpu_release();
        // v1: the init moves itself (see `Group::self_move_fds`); if the files cannot be
        // opened, we move it, as for a v2 group the init could not be cloned into.
        match g.self_move_fds().ok().flatten() {
            Some(m) => {
                (late.cgroup_enter, late.cgroup_leave, late.cgroup_after_spawn) = (m.enter, m.leave, m.after_spawn)
            }
            None if !cloned_into => g
                .attach(pid)
                .map_err(|e| Error::new(ErrorKind::Setup, format!("cannot move the sandbox into its cgroup: {e}")))?,
            None => {}
        }
    }
    Ok((late, cpu_locks))
}

/// The init is cloned from this process without an exec, which is safe only while the process
/// is single-threaded: a thread caught holding a lock (malloc's, stdio's) would leave it held
/// in the init for good. Callers join their threads (`run IMAGE` pulls and unpacks with
/// some), but one can still be on its way out for a moment (seen right after a pull): wait for
/// it. One readdir (about 6 us) when there is none.
fn single_threaded() -> Result<(), Error> {
    let threads = || std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(1);
    for _ in 0..5000 {
        if threads() <= 1 {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Err(Error::new(
        ErrorKind::Internal,
        format!(
            "{} other threads still run in this process after 5 s: the sandbox cannot be cloned from it",
            threads() - 1
        ),
    ))
}

/// Our stdin as the command may have it. A pipe, socket or terminal is passed as it is. A
/// regular file is not: the command could reopen it through /proc/self/fd/0 for writing (the
/// open checks the file, not our fd's mode), and so write into a file it was given to read. It
/// gets a sealed in-memory copy instead (from the current offset, which we advance as a reader
/// would). A block device is refused (no copy of a disk; pipe it in).
fn private_stdin() -> Result<Option<OwnedFd>, Error> {
    let Ok(st) = nix::sys::stat::fstat(0) else { return Ok(None) };
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => {}
        libc::S_IFBLK => {
            return Err(usage("stdin is a block device: pipe it in instead (cat DEVICE | polysandbox run ...)"))
        }
        _ => return Ok(None),
    }
    let err = |what: &str| Error::new(ErrorKind::Host, format!("stdin: {what}: {}", std::io::Error::last_os_error()));
    // SAFETY: a valid C string and flags.
    let fd = unsafe { libc::memfd_create(c"stdin".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(err("memfd_create"));
    }
    use std::os::fd::FromRawFd;
    // SAFETY: a new fd we own.
    let copy = unsafe { OwnedFd::from_raw_fd(fd) };
    loop {
        // SAFETY: plain sendfile between two fds we hold, from stdin's own offset.
        let n = unsafe { libc::sendfile(fd, 0, std::ptr::null_mut(), 1 << 30) };
        if n == 0 {
            break;
        }
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err("copy"));
        }
    }
    // SAFETY: lseek and fcntl on our own memfd.
    unsafe {
        libc::lseek(fd, 0, libc::SEEK_SET);
        if libc::fcntl(
            fd,
            libc::F_ADD_SEALS,
            libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL,
        ) != 0
        {
            return Err(err("seal"));
        }
    }
    Ok(Some(copy))
}

fn socketpair() -> Result<(OwnedFd, OwnedFd), Error> {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for two.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(Error::new(ErrorKind::Host, format!("socketpair: {}", std::io::Error::last_os_error())));
    }
    use std::os::fd::FromRawFd;
    // SAFETY: two new fds we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Whether we are the host's root: uid 0 in the initial user namespace. Root of another user
/// namespace (a rootless container, `unshare -r`) cannot map the sandbox's id range and runs
/// sandboxes as an unprivileged user does.
pub fn host_root() -> bool {
    // The initial user namespace's inode number is fixed (PROC_USER_INIT_INO).
    const INIT_USERNS: u64 = 0xEFFF_FFFD;
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid cannot fail.
    let uid0 = unsafe { libc::geteuid() == 0 };
    uid0 && std::fs::metadata("/proc/self/ns/user").is_ok_and(|m| m.ino() == INIT_USERNS)
}

/// (read ends, write ends) of the stdout and stderr pipes. When our own stdout and stderr are
/// one file (`> log 2>&1`, a terminal, eval's logs), the sandbox's are one pipe too: what it
/// prints arrives in the order it was written, as `2>&1` inside would give (two pipes relayed
/// lose it: cargo's `Running` line on stderr, written before a test binary starts, came out in
/// the middle of its first `test NAME ... ok` line on stdout, and the harness's parser missed
/// the test). Then there is one read end.
fn pipes() -> Result<(Vec<OwnedFd>, [OwnedFd; 2]), Error> {
    let mk = || {
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| Error::new(ErrorKind::Host, format!("pipe: {e}")))
    };
    let (r1, w1) = mk()?;
    if same_file(1, 2) {
        let w2 = w1.try_clone().map_err(|e| Error::new(ErrorKind::Host, format!("dup: {e}")))?;
        return Ok((vec![r1], [w1, w2]));
    }
    let (r2, w2) = mk()?;
    Ok((vec![r1, r2], [w1, w2]))
}

/// Whether our fd `fd` is a regular file or a block device: something on a filesystem or a disk
/// that the command must not hold itself. Pipes, sockets, terminals and /dev/null are passed.
fn is_a_file(fd: std::os::fd::RawFd) -> bool {
    nix::sys::stat::fstat(fd).is_ok_and(|s| matches!(s.st_mode & libc::S_IFMT, libc::S_IFREG | libc::S_IFBLK))
}

/// Whether our fd `fd` is an object of the caller's own that a rootless sandbox (whose root is
/// the caller) could change: anything it owns but an anonymous pipe or a socket (a terminal, a
/// named pipe, a file).
fn callers_own(fd: std::os::fd::RawFd) -> bool {
    const PIPEFS_MAGIC: i64 = 0x5049_5045;
    let Ok(st) = nix::sys::stat::fstat(fd) else { return false };
    // SAFETY: geteuid cannot fail.
    if st.st_uid != unsafe { libc::geteuid() } {
        return false;
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFSOCK => false,
        // SAFETY: a statfs for the kernel to fill, of our own fd.
        libc::S_IFIFO => unsafe {
            let mut sf: libc::statfs = std::mem::zeroed();
            libc::fstatfs(fd, &mut sf) != 0 || sf.f_type as i64 != PIPEFS_MAGIC
        },
        _ => true,
    }
}

/// Whether two of our fds are the same file (device and inode: one pipe, file or terminal).
fn same_file(a: std::os::fd::RawFd, b: std::os::fd::RawFd) -> bool {
    let st = |fd| nix::sys::stat::fstat(fd).ok().map(|s| (s.st_dev, s.st_ino, s.st_rdev));
    matches!((st(a), st(b)), (Some(x), Some(y)) if x == y)
}

/// The CPUs to pin to when `--cpus` has no cgroup: ceil(cpus) of the allowed ones, those no
/// other sandbox of ours is pinned to first (a lock file per CPU, held while the sandbox runs,
/// in a directory of the caller's own), then, when every CPU is taken, from an offset taken
/// from our pid, so that concurrent sandboxes spread out. Returns the CPUs and their locks.
fn affinity_for(cpus: f64) -> (Vec<usize>, Vec<std::fs::File>) {
    let allowed: Vec<usize> = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .map(|set| (0..nix::sched::CpuSet::count()).filter(|&i| set.is_set(i).unwrap_or(false)).collect())
        .unwrap_or_else(|_| vec![0]);
    let n = (cpus.ceil() as usize).clamp(1, allowed.len().max(1));
    let start = std::process::id() as usize % allowed.len().max(1);
    let order: Vec<usize> = (0..allowed.len()).map(|i| allowed[(start + i) % allowed.len()]).collect();
    let mut chosen = Vec::with_capacity(n);
    let mut locks = Vec::new();
    if let Some(dir) = cpu_lock_dir() {
        for &cpu in &order {
            if chosen.len() == n {
                break;
            }
            if let Ok(Some(f)) = try_lock(&dir.join(format!("cpu{cpu}"))) {
                chosen.push(cpu);
                locks.push(f);
            }
        }
    }
    for &cpu in &order {
        if chosen.len() == n {
            break;
        }
        if !chosen.contains(&cpu) {
            chosen.push(cpu);
        }
    }
    (chosen, locks)
}

/// The caller's own directory for CPU locks: /run/polysandbox/cpus as root, else under
/// $XDG_RUNTIME_DIR, else /tmp/polysandbox-UID; `None` when it is not ours alone (made by
/// someone else, or a symlink): then no CPU is known taken.
fn cpu_lock_dir() -> Option<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    let dir = if uid == 0 {
        std::path::PathBuf::from("/run/polysandbox/cpus")
    } else {
        match std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from).filter(|d| d.is_absolute()) {
            Some(d) => d.join("polysandbox-cpus"),
            None => std::path::PathBuf::from(format!("/tmp/polysandbox-{uid}-cpus")),
        }
    };
    let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir);
    let md = std::fs::symlink_metadata(&dir).ok()?;
    (md.is_dir() && md.uid() == uid && md.mode() & 0o022 == 0).then_some(dir)
}

/// A lock file at `path` (made 0600, never through a link), held exclusively: `None` when
/// another process holds it. The id slots and the CPU locks are both such files.
pub(crate) fn try_lock(path: &std::path::Path) -> std::io::Result<Option<std::fs::File>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    // SAFETY: flock on an fd we own.
    Ok((unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0).then_some(f))
}

/// The size (rows, columns) of the caller's terminal: stdin, stdout or stderr, whichever is one.
pub fn terminal_size() -> Option<(u16, u16)> {
    [0, 1, 2].into_iter().find_map(|fd| {
        // SAFETY: a winsize for the kernel to fill.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        (unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0 && ws.ws_row > 0).then_some((ws.ws_row, ws.ws_col))
    })
}

/// (dev, ino) of our own binary: the init refuses to exec it inside the sandbox.
fn self_exe_id() -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/exe").map(|m| (m.dev(), m.ino())).unwrap_or((0, 0))
}
