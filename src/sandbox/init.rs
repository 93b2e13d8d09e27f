//! The init (pid 1 of the sandbox) and the command it starts.
//!
//! The init's steps, in order: die with the supervisor; wait for its go (and the mount trees);
//! become root of the user namespace; build the filesystem and pivot into it; become
//! undumpable (so nothing inside can reach /proc/1/exe, our host binary, or our fds); take
//! what the supervisor prepared meanwhile (seccomp filter, fallbacks, cgroup), move into the
//! cgroup and enter a new cgroup namespace; fork the command; then reap, forward the
//! supervisor's signals, run the watchdogs, and report how the command ended.

use super::record_enum::record_enum;
use super::{exit, mounts, Late, Plan};
use crate::sys;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

record_enum! {
    /// At which step the command's process failed before it became the command
    /// (`not_started`).
    pub enum StartErrorKind {
        /// A step before the exec: the working directory, capabilities, the user, rlimits,
        /// no_new_privs, the seccomp filter.
        Setup = "setup",
        /// The command exists but could not be executed (permissions, format, seccomp refusing
        /// execve, the polysandbox binary itself).
        CannotExecute = "cannot_execute",
        /// The command was not found.
        NotFound = "not_found",
    }
}

impl StartErrorKind {
    /// What `polysandbox run` exits with for it.
    pub const fn exit_code(self) -> i32 {
        match self {
            StartErrorKind::Setup => exit::ERROR,
            StartErrorKind::CannotExecute => exit::CANNOT_EXEC,
            StartErrorKind::NotFound => exit::NOT_FOUND,
        }
    }
}

/// What the init tells the supervisor, once, as JSON.
#[derive(Debug, Serialize, Deserialize, Default, Clone)]
pub struct InitReport {
    /// Setup failed: why. The command never ran.
    pub error: Option<String>,
    /// The command's process failed before it became the command (working directory,
    /// capabilities, rlimits, seccomp, exec): at which step (which says polysandbox's exit
    /// code: 125, or 126/127 for a command that cannot be executed or is not found) and why.
    pub start_failure: Option<StartFailure>,
    /// wait(2) status of the command.
    pub status: Option<i32>,
    /// The watchdog killed the sandbox, for this limit.
    pub killed_by: Option<KilledBy>,
    /// Largest sampled sum of RSS over the sandbox's processes (watchdog mode only).
    pub rss_sum_peak: u64,
    /// Most tasks seen at once (watchdog mode only).
    pub tasks_peak: u64,
    /// CPU seconds used, as the watchdog last saw them.
    pub cpu_seconds: f64,
    /// Bytes used and total of the writable layer.
    pub disk_used: u64,
    pub disk_total: u64,
    /// The writable layer's tmpfs keeps user xattrs (Linux 6.6 and later), which overlayfs in a
    /// user namespace needs to mark a directory opaque: without them, removing a directory of
    /// the image (or of an `:O` bind) whose contents were changed fails with EIO.
    pub layer_xattrs: bool,
    /// CPU seconds (user, system) and largest RSS (KiB) of every process of the sandbox: all
    /// were reaped by the init before it reported.
    pub cpu_user: f64,
    pub cpu_system: f64,
    pub maxrss_kib: u64,
    /// For each of the spec's `digest_after` paths, in order: the file's SHA-256 once every
    /// process had ended, or why there is none.
    pub digests: Vec<Result<String, String>>,
    /// `--protect`: asked for (how many were protected, why each other was not), or not.
    pub protected: Option<(usize, Vec<String>)>,
}

/// The limit for which the init's watchdog killed the sandbox.
#[derive(Debug, Serialize, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum KilledBy {
    Memory,
    CpuTime,
}

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct StartFailure {
    pub kind: StartErrorKind,
    pub message: String,
}

fn send(sock: RawFd, r: &InitReport) {
    let data = serde_json::to_vec(r).unwrap_or_default();
    let _ = sys::send_msg(sock, &data, &[]);
}

/// Rootless, the kernel charges the sandbox's inotify instances and watches to the caller, the
/// user namespace's creator, against the caller's own limit (128 instances by default): one
/// sandbox could take them all from the caller's other processes. Our user namespace's own
/// limits (which we may set: we hold CAP_SYS_RESOURCE in it) cap what this sandbox takes.
/// Best effort: a /proc/sys mounted read-only leaves the caller's limits alone.
fn cap_user_budgets() {
    for (name, max) in [("max_inotify_instances", "32"), ("max_inotify_watches", "65536")] {
        let _ = std::fs::write(format!("/proc/sys/user/{name}"), max);
    }
}

/// SysV message queues are kernel memory no process maps (and, rootless, no cgroup counts):
/// at most 32 queues of 64 KiB each in the sandbox's IPC namespace, which is its own. The
/// rootless watchdog counts what they hold as well. Best effort, as above.
fn cap_ipc() {
    for (name, max) in [("msgmni", "32"), ("msgmnb", "65536")] {
        let _ = std::fs::write(format!("/proc/sys/kernel/{name}"), max);
    }
}

/// The init's whole life. Never returns.
pub fn main(plan: &Plan, sock: OwnedFd) -> ! {
    let sock_fd = sock.as_raw_fd();
    let mut leave = Vec::new();
    let code = match setup_and_run(plan, sock_fd, &mut leave) {
        Ok(report) => {
            // Out of the cgroup, so that the supervisor can remove it while we tear our
            // namespaces down (every process of the sandbox is reaped by now).
            let _ = move_self(leave);
            send(sock_fd, &report);
            // Stay until the supervisor closes its end: where we could not move ourselves out
            // (v2), it moves us, and an exiting task cannot be moved.
            let _ = sys::recv_msg(sock_fd);
            0
        }
        Err(msg) => {
            send(sock_fd, &InitReport { error: Some(msg), ..Default::default() });
            exit::ERROR
        }
    };
    // SAFETY: _exit skips the supervisor's atexit handlers and buffers we share by copy.
    unsafe { libc::_exit(code) }
}

/// Moves this (single-threaded) process by writing "0" to each cgroup `tasks` fd, then closes
/// them.
fn move_self(fds: Vec<OwnedFd>) -> Result<(), String> {
    let mut res = Ok(());
    for fd in fds {
        // SAFETY: write of a 1-byte buffer to an fd the supervisor opened for us.
        let n = unsafe { libc::write(fd.as_raw_fd(), b"0".as_ptr().cast(), 1) };
        if n != 1 && res.is_ok() {
            res = Err(format!("cannot move the sandbox into its cgroup: {}", std::io::Error::last_os_error()));
        }
    }
    res
}

/// `leave`: where the fds to leave the cgroup by go, once we have them.
fn setup_and_run(plan: &Plan, sock: RawFd, leave: &mut Vec<OwnedFd>) -> Result<InitReport, String> {
    // Every signal stays pending until the wait loop takes it: a SIGCHLD that arrived
    // unblocked would be discarded, and a fast command's exit lost.
    // SAFETY: sigset operations on a local set; prctl with integer arguments.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    // The go message; EOF means the supervisor died before releasing us.
    let trees = match sys::recv_msg(sock) {
        Ok(Some((_, fds))) => fds,
        // SAFETY: nothing to clean up yet.
        _ => unsafe { libc::_exit(exit::ERROR) },
    };
    super::trace::step("init: go received");
    // Our own oom_score_adj (see `spawn`), opened before the credential change below: that
    // makes us undumpable (as root-run), and /proc/self then belongs to the host's root.
    let oom_adj = std::fs::OpenOptions::new().write(true).open("/proc/self/oom_score_adj").ok();
    // Become the namespace's root (as root-run, our host uid 0 is not mapped inside).
    nix::unistd::setresgid(0.into(), 0.into(), 0.into()).map_err(|e| format!("setresgid: {e}"))?;
    if !plan.rootless {
        nix::unistd::setgroups(&[]).map_err(|e| format!("setgroups: {e}"))?;
    }
    nix::unistd::setresuid(0.into(), 0.into(), 0.into()).map_err(|e| format!("setresuid: {e}"))?;
    // A credential change clears the parent-death signal: set it again, then make sure the
    // supervisor did not die in between (its end of the socket would be closed). From here on
    // the supervisor's death is the stop signal, not SIGKILL: we end every process of the
    // sandbox ourselves, the CPU quota lifted first (a SIGKILL of ours would leave a
    // throttled fork bomb dying for minutes with no one to unthrottle it). It comes as SI_USER
    // from outside the namespace, as the supervisor's own stop does.
    // SAFETY: prctl with integer arguments; poll on one fd we hold.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, super::stop_signal(), 0, 0, 0);
        let mut p = libc::pollfd { fd: sock, events: 0, revents: 0 };
        if libc::poll(&mut p, 1, 0) > 0 && p.revents & libc::POLLHUP != 0 {
            libc::_exit(exit::ERROR);
        }
    }
    super::trace::step("init: ids set");
    if plan.rootless {
        cap_user_budgets();
    }
    cap_ipc();
    let scratch = mounts::setup(plan.spec, &plan.rootfs, trees, &plan.bind_is_dir)?;
    super::trace::step("init: root built and pivoted");
    let layer_xattrs = user_xattrs(scratch.as_raw_fd());
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };

    // What the supervisor prepared meanwhile; EOF means it died.
    let mut late = match sys::recv_msg(sock) {
        Ok(Some((data, fds))) => Late::parse(&data, fds)?,
        // SAFETY: the kernel removes our mounts with our namespaces.
        _ => unsafe { libc::_exit(exit::ERROR) },
    };
    // Into the cgroup (v1, where we move ourselves; else the supervisor has moved us), then a
    // cgroup namespace rooted there: the command sees its own group as "/".
    move_self(std::mem::take(&mut late.cgroup_enter))?;
    *leave = std::mem::take(&mut late.cgroup_leave);
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWCGROUP)
        .map_err(|e| format!("unshare cgroup namespace: {e}"))?;
    super::trace::step("init: in its cgroup, cgroup ns entered");

    let exec = ExecPlan::new(plan)?;
    // The command's processes are the OOM killer's first choice, in the sandbox's cgroup and
    // on the host: memory held where no process's RSS shows it (an unmapped memfd, a tmpfs)
    // would otherwise make the init, larger than them, its victim. We raise our score for the
    // spawn (the command inherits it; raising needs no privilege) and lower it back after
    // (allowed: not below our minimum, 0).
    let set_oom = |v: &[u8]| {
        if let Some(f) = &oom_adj {
            use std::io::Write;
            let _ = (&*f).write_all(v);
        }
    };
    // `-t`: the pseudo-terminal is made here, in the sandbox's own devpts; the supervisor gets
    // the master, the command the slave, and the init keeps neither.
    let tty = match plan.spec.tty {
        Some(t) => Some(open_pty(t, plan.spec.user, sock)?),
        None => None,
    };
    set_oom(b"1000");
    let spawned = spawn(&exec, plan, &late, sock, tty.as_ref().map(|t| t.as_raw_fd()));
    set_oom(b"0");
    drop(tty);
    let Spawned { pid: cmd, failure } = spawned?;
    // Out of the group the CPU quota throttles (v1): the command's processes stay in it.
    let _ = move_self(std::mem::take(&mut late.cgroup_after_spawn));
    // The output pipes are the command's: the supervisor sees them close when the last of the
    // command's processes is gone, not when the init is.
    if let Some(fds) = plan.out_pipes {
        for fd in fds {
            // SAFETY: our own copies of the write ends.
            unsafe { libc::close(fd) };
        }
    }
    super::trace::step("init: command forked");
    let mut report = supervise(plan, &late, cmd, scratch.as_raw_fd());
    report.start_failure = failure;
    report.layer_xattrs = layer_xattrs;
    super::trace::step("init: command reaped");
    report.digests = digests(&plan.spec.digest_after);
    if let Ok(st) = nix::sys::statfs::fstatfs(&scratch) {
        let bs = st.block_size() as u64;
        report.disk_total = st.blocks() * bs;
        report.disk_used = (st.blocks() - st.blocks_free()) * bs;
    }
    Ok(report)
}

/// Opens a pseudo-terminal in the sandbox's devpts (`/dev/pts/ptmx`, after the pivot), sets its
/// window size, hands its slave to the command's user, sends the master to the supervisor and
/// closes it here. Returns the slave. The slave is found from the master (TIOCGPTPEER), by no
/// path a process of the sandbox could have swapped.
fn open_pty(t: super::Tty, user: (u32, u32), sock: RawFd) -> Result<OwnedFd, String> {
    use std::os::fd::FromRawFd;
    // SAFETY: open of a constant path; the new fd is ours.
    let m = unsafe { libc::open(c"/dev/pts/ptmx".as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) };
    if m < 0 {
        return Err(format!("-t: open /dev/pts/ptmx: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: just opened.
    let master = unsafe { OwnedFd::from_raw_fd(m) };
    let unlock: libc::c_int = 0;
    // SAFETY: ioctls on the master we hold, with the arguments they take.
    let slave = unsafe {
        if libc::ioctl(m, libc::TIOCSPTLCK, &unlock) != 0 {
            return Err(format!("-t: unlock the pty: {}", std::io::Error::last_os_error()));
        }
        libc::ioctl(m, libc::TIOCGPTPEER, libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC)
    };
    if slave < 0 {
        return Err(format!("-t: open the pty's slave: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a new fd from the kernel.
    let slave = unsafe { OwnedFd::from_raw_fd(slave) };
    if let Some((rows, cols)) = t.size {
        let ws = libc::winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: a winsize for the pty we hold.
        unsafe { libc::ioctl(m, libc::TIOCSWINSZ, &ws) };
    }
    if user != (0, 0) {
        nix::unistd::fchown(slave.as_raw_fd(), Some(user.0.into()), Some(user.1.into()))
            .map_err(|e| format!("-t: hand the pty to uid {}: {e}", user.0))?;
    }
    sys::send_msg(sock, PTY_MESSAGE, &[master.as_raw_fd()]).map_err(|e| format!("-t: send the pty: {e}"))?;
    Ok(slave)
}

/// The message carrying the pty's master up to the supervisor.
pub(crate) const PTY_MESSAGE: &[u8] = b"pty";

/// Largest file `digests` reads.
const DIGEST_CAP: u64 = 1 << 30;

/// The SHA-256 of each path, read as the sandbox's root sees it (no symlinks followed, regular
/// files only), after every process of the sandbox is gone: nothing can change them meanwhile.
fn digests(paths: &[String]) -> Vec<Result<String, String>> {
    use sha2::Digest;
    if paths.is_empty() {
        return Vec::new();
    }
    let root = match sys::openat2(libc::AT_FDCWD, "/", libc::O_PATH | libc::O_DIRECTORY, 0) {
        Ok(fd) => fd,
        Err(e) => return paths.iter().map(|_| Err(format!("/: {e}"))).collect(),
    };
    paths
        .iter()
        .map(|p| {
            let rel = p.trim_start_matches('/');
            let resolve = sys::RESOLVE_IN_ROOT | sys::RESOLVE_NO_SYMLINKS;
            let mut f = match sys::open_untrusted(root.as_raw_fd(), rel, resolve, DIGEST_CAP) {
                Ok(f) => f,
                Err(sys::Untrusted::Io(e)) if e.raw_os_error() == Some(libc::ENOENT) => return Err("absent".into()),
                Err(e) => return Err(e.to_string()),
            };
            let mut h = sha2::Sha256::new();
            std::io::copy(&mut f, &mut h).map_err(|e| e.to_string())?;
            Ok(format!("{:x}", h.finalize()))
        })
        .collect()
}

/// Whether the tmpfs at `scratch` keeps `user.` xattrs: set one on its root and take it away.
fn user_xattrs(scratch: RawFd) -> bool {
    let Ok(dir) = sys::openat2(scratch, ".", libc::O_RDONLY | libc::O_DIRECTORY, sys::RESOLVE_BENEATH) else {
        return false;
    };
    let name = c"user.polysandbox.probe";
    // SAFETY: an fd we own, a NUL-terminated name, a 1-byte value.
    unsafe {
        let ok = libc::fsetxattr(dir.as_raw_fd(), name.as_ptr(), b"1".as_ptr().cast(), 1, 0) == 0;
        if ok {
            libc::fremovexattr(dir.as_raw_fd(), name.as_ptr());
        }
        ok
    }
}

/// Starts the command as posix_spawn does: `clone(CLONE_VM | CLONE_VFORK)` on a stack of its
/// own, so that neither the page tables are copied nor pages faulted in twice; the init sleeps
/// until the child has exec'd (or failed and exited).
/// The command's process after the clone: its pid, and, if it failed before it became the
/// command, why (it left that in memory it shares with us, as posix_spawn's child does).
struct Spawned {
    pid: i32,
    failure: Option<StartFailure>,
}

fn spawn(exec: &ExecPlan, plan: &Plan, late: &Late, sock: RawFd, tty: Option<RawFd>) -> Result<Spawned, String> {
    struct Ctx<'a> {
        exec: &'a ExecPlan,
        plan: &'a Plan<'a>,
        late: &'a Late,
        sock: RawFd,
        tty: Option<RawFd>,
        via: Via,
        /// Written by the child (same memory: CLONE_VM) before it exits, read by us once it has.
        failure: std::cell::UnsafeCell<Option<StartFailure>>,
    }
    extern "C" fn entry(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: arg is the Ctx below, alive while the parent is suspended (CLONE_VFORK).
        let ctx = unsafe { &*(arg as *const Ctx) };
        // SAFETY: only this child touches the slot until it has exited or exec'd.
        let slot = unsafe { &mut *ctx.failure.get() };
        ctx.exec.run(ctx.plan, ctx.late, ctx.sock, ctx.tty, ctx.via, slot)
    }
    // The trampoline the command is exec'd through (see trampoline.rs), and the pipe on which
    // it reports an exec that failed: EOF there means the command runs.
    let program = super::trampoline::memfd()?;
    let (report_r, report_w) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("the exec trampoline: pipe: {e}"))?;
    let via = Via { program: program.as_raw_fd(), report: report_w.as_raw_fd() };
    const STACK: usize = 512 * 1024;
    let mut stack = vec![0u8; STACK];
    let ctx = Ctx { exec, plan, late, sock, tty, via, failure: std::cell::UnsafeCell::new(None) };
    // SAFETY: the stack is ours and outlives the child's use of it (the parent resumes only
    // after the child exec'd or exited); the stack grows down from its end, 16-byte aligned.
    let pid = unsafe {
        let top = (stack.as_mut_ptr().add(STACK) as usize & !15) as *mut libc::c_void;
        libc::clone(
            entry,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &ctx as *const Ctx as *mut libc::c_void,
        )
    };
    if pid < 0 {
        return Err(format!("clone: {}", std::io::Error::last_os_error()));
    }
    drop(report_w);
    drop(program);
    // The child has exec'd the trampoline or exited: the slot is ours again. The trampoline
    // then execs the command, or writes why it could not.
    let mut failure = ctx.failure.into_inner();
    if failure.is_none() {
        let mut errno = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            // SAFETY: a read into our buffer from our pipe.
            let n = unsafe { libc::read(report_r.as_raw_fd(), errno[got..].as_mut_ptr().cast(), 4 - got) };
            if n == 0 || (n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
                break;
            }
            got += n.max(0) as usize;
        }
        if got == 4 {
            failure = Some(exec.exec_failure(u32::from_le_bytes(errno) as i32));
        }
    }
    Ok(Spawned { pid, failure })
}

/// What the command's process execs through: the trampoline's memfd, and the write end of the
/// pipe the trampoline reports a failed exec on.
#[derive(Clone, Copy)]
struct Via {
    program: RawFd,
    report: RawFd,
}

/// The fds the trampoline has: its report pipe (3) and its own program (4, close-on-exec).
const VIA_REPORT: RawFd = 3;
const VIA_PROGRAM: RawFd = 4;
// (The fallback exec names it as /proc/self/fd/4.)
const _: () = assert!(VIA_PROGRAM == 4);

/// The wait loop: reap, forward, watch. Returns when the command has exited.
fn supervise(plan: &Plan, late: &Late, cmd: i32, scratch: RawFd) -> InitReport {
    let mut report = InitReport::default();
    let limits = &plan.spec.limits;
    let mut watch = Watchdog::new(late, scratch);
    // SAFETY: sigset operations on a local set (all signals are blocked since the start).
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sigfillset(&mut all) };
    let start = Instant::now();
    loop {
        // SAFETY: info is plain data the kernel fills.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let sig = if watch.active() {
            let ts = libc::timespec { tv_sec: 0, tv_nsec: watch.interval(start.elapsed()).as_nanos() as i64 };
            // SAFETY: valid set, info and timeout.
            unsafe { libc::sigtimedwait(&all, &mut info, &ts) }
        } else {
            // SAFETY: valid set and info.
            unsafe { libc::sigwaitinfo(&all, &mut info) }
        };
        if sig == libc::SIGCHLD {
            if let Some(st) = reap(cmd) {
                report.status = Some(st);
                break;
            }
        } else if sig == libc::SIGUSR2
            && info.si_code == libc::SI_USER
            // SAFETY: reading the sender pid of a signal we received.
            && unsafe { info.si_pid() } != 0
            && !plan.spec.protect.is_empty()
        {
            // A process of the sandbox asks for `--protect`: done once, at the first asking;
            // the asker is told when it is done (by the same signal).
            // SAFETY: as above.
            let asker = unsafe { info.si_pid() };
            if report.protected.is_none() {
                report.protected = Some(mounts::protect(&plan.spec.protect));
                super::trace::step("init: paths protected");
            }
            // SAFETY: plain kill, to a pid of our namespace.
            unsafe { libc::kill(asker, libc::SIGUSR2) };
        } else if sig > 0 {
            // Only the supervisor's signals are obeyed: sent by kill(2) from outside the pid
            // namespace, they come as SI_USER with si_pid 0. A process inside can queue a
            // signal with any si_pid (rt_sigqueueinfo, pidfd_send_signal), but only with a
            // negative si_code: the kernel alone makes SI_USER for another process.
            // SAFETY: reading the sender pid of a signal we received.
            if info.si_code == libc::SI_USER && unsafe { info.si_pid() } == 0 {
                if sig == super::stop_signal() {
                    // The supervisor ends the run (a wall-clock limit): everything dies now and
                    // is reaped here, so the report still counts the CPU time it used.
                    break;
                }
                // SAFETY: plain kill.
                unsafe { libc::kill(cmd, sig) };
            }
        }
        if watch.active() {
            if let Some(reason) = watch.sample(limits) {
                report.killed_by = Some(reason);
                crate::cgroups::release_cpu(&late.cpu_release);
                // SAFETY: kill(-1) from pid 1 reaches every other process of the namespace.
                unsafe { libc::kill(-1, libc::SIGKILL) };
                loop {
                    let mut st = 0;
                    // SAFETY: plain wait.
                    let r = unsafe { libc::waitpid(-1, &mut st, libc::__WALL) };
                    if r == cmd {
                        report.status = Some(st);
                    }
                    if r < 0 {
                        break;
                    }
                }
                break;
            }
        }
    }
    // The command has ended: so does everything else, now, and it is all reaped here, so that
    // the report is final and the supervisor need not wait for the namespaces' teardown.
    // Unthrottled first: what is killed in a throttled group cannot finish exiting.
    crate::cgroups::release_cpu(&late.cpu_release);
    // SAFETY: kill(-1) from pid 1 reaches every other process of the namespace.
    unsafe { libc::kill(-1, libc::SIGKILL) };
    loop {
        let mut st = 0;
        // SAFETY: plain wait.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::__WALL) };
        if r == cmd && report.status.is_none() {
            report.status = Some(st);
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    if let Ok(u) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN) {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
        report.cpu_user = t(u.user_time());
        report.cpu_system = t(u.system_time());
        report.maxrss_kib = u.max_rss() as u64;
    }
    report.rss_sum_peak = watch.rss_peak;
    report.tasks_peak = watch.tasks_peak;
    report.cpu_seconds = watch.cpu_seconds;
    report
}

/// Reaps every child that has exited; returns the command's status if it was among them.
fn reap(cmd: i32) -> Option<i32> {
    let mut found = None;
    loop {
        let mut st = 0;
        // SAFETY: plain wait.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG | libc::__WALL) };
        if r <= 0 {
            return found;
        }
        if r == cmd {
            found = Some(st);
        }
    }
}

/// Samples /proc (the sandbox's own) for the limits no cgroup holds, and for --cpu-time.
struct Watchdog {
    memory: Option<u64>,
    cpu_time: Option<f64>,
    pids: Option<u64>,
    rss_peak: u64,
    tasks_peak: u64,
    cpu_seconds: f64,
    tick: f64,
    page: u64,
    /// The writable layer's tmpfs: its pages are memory.
    scratch: RawFd,
    samples: u64,
    /// Shared memory no process's RSS shows, as last counted (every few samples).
    shared: u64,
}

impl Watchdog {
    fn new(late: &Late, scratch: RawFd) -> Watchdog {
        Watchdog {
            memory: late.fallbacks.memory_watchdog,
            cpu_time: late.fallbacks.cpu_time_watchdog,
            pids: late.fallbacks.pids_rlimit,
            rss_peak: 0,
            tasks_peak: 0,
            cpu_seconds: 0.0,
            // SAFETY: sysconf cannot fail for these names.
            tick: unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64,
            page: unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64,
            scratch,
            samples: 0,
            shared: 0,
        }
    }
    fn active(&self) -> bool {
        self.memory.is_some() || self.cpu_time.is_some() || self.pids.is_some()
    }
    /// 1 ms for the first 50 ms (fork bombs and allocation bursts are fast), 5 ms up to a
    /// second, then 20 ms.
    fn interval(&self, since: Duration) -> Duration {
        if since < Duration::from_millis(50) {
            Duration::from_millis(1)
        } else if since < Duration::from_secs(1) {
            Duration::from_millis(5)
        } else {
            Duration::from_millis(20)
        }
    }
    /// Returns the limit that tripped, if any.
    ///
    /// Memory (where no cgroup counts it) is what the sandbox holds in RAM, as an upper
    /// estimate no process can hide from: each process's anonymous and shared resident pages
    /// (/proc/PID/status RssAnon + RssShmem; not file-backed pages, which the kernel can drop),
    /// plus, every 8th sample, shared memory that need not be mapped anywhere: memfds held by
    /// an fd, the writable layer's and /dev/shm's tmpfs, SysV segments. Shared memory that is
    /// both mapped and held that way counts twice.
    fn sample(&mut self, _limits: &super::Limits) -> Option<KilledBy> {
        let (mut rss, mut ticks, mut tasks) = (0u64, 0u64, 0u64);
        let count_shared = self.memory.is_some() && self.samples % 8 == 0;
        self.samples += 1;
        let mut memfds: std::collections::HashMap<(u64, u64), u64> = std::collections::HashMap::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten() {
                let name = e.file_name();
                let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
                if pid == 1 {
                    continue;
                }
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
                let Some(close) = stat.rfind(')') else { continue };
                let f: Vec<&str> = stat[close + 2..].split(' ').collect();
                let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                // Fields after "(comm)": state=0, utime=11, stime=12, cutime=13, cstime=14,
                // num_threads=17, rss=21.
                ticks += n(11) + n(12) + n(13) + n(14);
                tasks += n(17).max(1);
                if self.memory.is_some() {
                    rss += anon_and_shmem(pid).unwrap_or(n(21) * self.page);
                    if count_shared {
                        memfds_of(pid, &mut memfds);
                    }
                } else {
                    rss += n(21) * self.page;
                }
            }
        }
        if count_shared {
            let used = |fd: RawFd| {
                nix::sys::statfs::fstatfs(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) })
                    .map(|s| (s.blocks() - s.blocks_free()) * s.block_size() as u64)
                    .unwrap_or(0)
            };
            let shm = std::fs::File::open("/dev/shm").map(|f| used(f.as_raw_fd())).unwrap_or(0);
            self.shared = memfds.values().sum::<u64>() + used(self.scratch) + shm + sysv_shm() + sysv_msg();
        }
        if self.memory.is_some() {
            rss += self.shared;
        }
        // Processes the init reaped itself (orphans) count through its own children usage.
        let own = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
            .map(|u| {
                let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
                t(u.user_time()) + t(u.system_time())
            })
            .unwrap_or(0.0);
        self.cpu_seconds = own + ticks as f64 / self.tick;
        self.rss_peak = self.rss_peak.max(rss);
        self.tasks_peak = self.tasks_peak.max(tasks + 1);
        if self.cpu_time.is_some_and(|c| self.cpu_seconds >= c) {
            return Some(KilledBy::CpuTime);
        }
        if self.memory.is_some_and(|m| rss > m) {
            return Some(KilledBy::Memory);
        }
        None
    }
}

/// RssAnon + RssShmem of a process, in bytes.
fn anon_and_shmem(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = |key: &str| {
        status.lines().find_map(|l| l.strip_prefix(key)?.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
    };
    Some((kib("RssAnon:")? + kib("RssShmem:").unwrap_or(0)) * 1024)
}

/// The memfds process `pid` holds by fd: (dev, ino) -> bytes allocated.
fn memfds_of(pid: u32, out: &mut std::collections::HashMap<(u64, u64), u64>) {
    use std::os::unix::fs::MetadataExt;
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return };
    for e in dir.flatten() {
        let Ok(target) = std::fs::read_link(e.path()) else { continue };
        if !target.as_os_str().as_encoded_bytes().starts_with(b"/memfd:") {
            continue;
        }
        if let Ok(m) = std::fs::metadata(e.path()) {
            out.insert((m.dev(), m.ino()), m.blocks() * 512);
        }
    }
}

/// Bytes of the SysV shared memory segments of the sandbox's IPC namespace.
fn sysv_shm() -> u64 {
    let Ok(t) = std::fs::read_to_string("/proc/sysvipc/shm") else { return 0 };
    // Columns: key shmid perms size ...; the first line is the header.
    t.lines().skip(1).filter_map(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok()).sum()
}

/// Bytes queued in the SysV message queues of the sandbox's IPC namespace.
fn sysv_msg() -> u64 {
    let Ok(t) = std::fs::read_to_string("/proc/sysvipc/msg") else { return 0 };
    // Columns: key msqid perms cbytes qnum ...
    t.lines().skip(1).filter_map(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok()).sum()
}

/// The command, prepared before the fork.
struct ExecPlan {
    candidates: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
    workdir: CString,
    name: String,
}

const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

impl ExecPlan {
    fn new(plan: &Plan) -> Result<ExecPlan, String> {
        let spec = plan.spec;
        let name = spec.argv[0].clone();
        let path = spec.env.iter().find_map(|e| e.strip_prefix("PATH=")).unwrap_or(DEFAULT_PATH).to_string();
        let candidates: Vec<CString> = if name.contains('/') {
            vec![sys::cstr(&name)]
        } else {
            path.split(':').filter(|d| !d.is_empty()).map(|d| sys::cstr(format!("{d}/{name}"))).collect()
        };
        Ok(ExecPlan {
            candidates,
            argv: spec.argv.iter().map(sys::cstr).collect(),
            envp: spec.env.iter().map(sys::cstr).collect(),
            workdir: sys::cstr(&spec.workdir),
            name,
        })
    }

    /// In the command's process: from init's child to the command. Never returns.
    /// Why an exec of the command failed with `err`, as the start failure the run reports.
    fn exec_failure(&self, err: i32) -> StartFailure {
        if err == libc::ENOENT {
            return StartFailure {
                kind: StartErrorKind::NotFound,
                message: format!("{}: command not found", self.name),
            };
        }
        let what = std::io::Error::from_raw_os_error(err);
        StartFailure { kind: StartErrorKind::CannotExecute, message: format!("{}: {what}", self.name) }
    }

    /// The first candidate that exec would take, as execvp looks: skipping what does not exist
    /// (ENOENT, ENOTDIR) and what may not be executed (EACCES, remembered); another error
    /// ends the search. `Err(errno)` when none.
    fn resolve(&self) -> Result<&CString, i32> {
        let mut err = libc::ENOENT;
        for c in &self.candidates {
            // SAFETY: a valid C string.
            if unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::X_OK, libc::AT_EACCESS) } == 0 {
                // A directory passes X_OK; exec refuses it with EACCES.
                match nix::sys::stat::stat(c.as_c_str()) {
                    Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => err = libc::EACCES,
                    _ => return Ok(c),
                }
                continue;
            }
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOENT);
            if e != libc::ENOENT && e != libc::ENOTDIR {
                err = e;
                if e != libc::EACCES {
                    break;
                }
            }
        }
        Err(err)
    }

    fn run(
        &self,
        plan: &Plan,
        late: &Late,
        sock: RawFd,
        tty: Option<RawFd>,
        via: Via,
        failure: &mut Option<StartFailure>,
    ) -> ! {
        // Why the command could not start goes to the init (shared memory), which reports it as
        // polysandbox's failure, not the command's: nothing is written to the command's output.
        let slot = std::cell::RefCell::new(failure);
        let fail = |kind: StartErrorKind, message: String| -> ! {
            **slot.borrow_mut() = Some(StartFailure { kind, message });
            // SAFETY: leaving the child.
            unsafe { libc::_exit(kind.exit_code()) }
        };
        // SAFETY: everything below is plain syscalls in a single-threaded child.
        unsafe {
            libc::close(sock);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            // Every signal at its default, as a fresh process has it: an exec keeps what is
            // ignored, and polysandbox (as any Rust program) ignores SIGPIPE, which would leave
            // `yes | head` spinning on EPIPE. (Handled ones are reset by the exec anyway.)
            // The raw call: glibc's refuses its own two real-time signals (32, 33), which can
            // arrive ignored too.
            let dfl: libc::sigaction = std::mem::zeroed();
            for sig in 1..=64 {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    libc::syscall(libc::SYS_rt_sigaction, sig, &dfl, std::ptr::null_mut::<libc::sigaction>(), 8);
                }
            }
            // A new session: the caller's terminal is not ours to push input into (TIOCSTI).
            libc::setsid();
            // `-t`: the sandbox's own pty is the session's terminal, and stdin, out and err.
            if let Some(t) = tty {
                libc::ioctl(t, libc::TIOCSCTTY, 0);
                for fd in 0..3 {
                    libc::dup2(t, fd);
                }
            }
            if let Some(fd) = plan.stdin {
                libc::dup2(fd, 0);
            }
            if let Some([out, err]) = plan.out_pipes {
                libc::dup2(out, 1);
                libc::dup2(err, 2);
            }
        }
        let lim = &plan.spec.limits;
        let set = |res, v: u64| {
            let r = libc::rlimit { rlim_cur: v, rlim_max: v };
            // SAFETY: plain setrlimit.
            unsafe { libc::setrlimit(res, &r) }
        };
        for r in &plan.spec.rlimits {
            let l = libc::rlimit { rlim_cur: r.soft, rlim_max: r.hard };
            // SAFETY: plain setrlimit.
            if unsafe { libc::setrlimit(r.resource as _, &l) } != 0 {
                fail(StartErrorKind::Setup, format!("--ulimit: {}", std::io::Error::last_os_error()));
            }
        }
        if let Some(n) = lim.nofile {
            if set(libc::RLIMIT_NOFILE, n) != 0 {
                fail(StartErrorKind::Setup, format!("--nofile {n}: {}", std::io::Error::last_os_error()));
            }
        }
        if let Some(n) = late.fallbacks.pids_rlimit {
            set(libc::RLIMIT_NPROC, n);
        }
        if let Some(cpus) = &late.fallbacks.cpu_affinity {
            let mut cs = nix::sched::CpuSet::new();
            for &c in cpus {
                let _ = cs.set(c);
            }
            let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &cs);
        }
        // SAFETY: valid C string.
        if unsafe { libc::chdir(self.workdir.as_ptr()) } != 0 {
            let e = std::io::Error::last_os_error();
            let wd = self.workdir.to_string_lossy().into_owned();
            if e.raw_os_error() != Some(libc::ENOENT)
                || std::fs::create_dir_all(&wd).is_err()
                || nix::unistd::chdir(wd.as_str()).is_err()
            {
                fail(StartErrorKind::Setup, format!("working directory {wd}: {e}"));
            }
        }
        let (uid, gid) = plan.spec.user;
        if let Err(e) = drop_caps(plan.spec.caps) {
            fail(StartErrorKind::Setup, e);
        }
        if gid != 0 || uid != 0 {
            if let Err(e) = nix::unistd::setresgid(gid.into(), gid.into(), gid.into()).and(nix::unistd::setresuid(
                uid.into(),
                uid.into(),
                uid.into(),
            )) {
                fail(StartErrorKind::Setup, format!("cannot become uid {uid} gid {gid}: {e}"));
            }
        }
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            fail(StartErrorKind::Setup, format!("no_new_privs: {}", std::io::Error::last_os_error()));
        }
        let path = match self.resolve() {
            Ok(p) => p,
            Err(e) => {
                let f = self.exec_failure(e);
                fail(f.kind, f.message)
            }
        };
        // Refuse to run our own host binary (reachable only as /proc/self/exe): its image must
        // never be reachable, let alone writable, from inside (CVE-2019-5736). Scripts naming
        // it as their interpreter get the trampoline instead (see trampoline.rs).
        if let Ok(st) = nix::sys::stat::stat(path.as_c_str()) {
            if (st.st_dev, st.st_ino) == plan.self_exe {
                fail(
                    StartErrorKind::CannotExecute,
                    format!("{}: refusing to execute the polysandbox binary inside the sandbox", self.name),
                );
            }
        }
        // No fd of ours crosses into the command (CVE-2024-21626): the trampoline gets its
        // report pipe (3, which it makes close-on-exec) and its program (4, close-on-exec).
        // SAFETY: fcntl, dup3 and close_range on our own fd table.
        unsafe {
            let report = libc::fcntl(via.report, libc::F_DUPFD_CLOEXEC, 10);
            let program = libc::fcntl(via.program, libc::F_DUPFD_CLOEXEC, 10);
            if report < 0
                || program < 0
                || libc::dup3(report, VIA_REPORT, 0) < 0
                || libc::dup3(program, VIA_PROGRAM, libc::O_CLOEXEC) < 0
            {
                fail(StartErrorKind::Setup, format!("the exec trampoline: {}", std::io::Error::last_os_error()));
            }
            libc::syscall(libc::SYS_close_range, (VIA_PROGRAM + 1) as u32, u32::MAX, 0u32);
        }
        if let Some(p) = &late.seccomp {
            if let Err(e) = p.install() {
                fail(StartErrorKind::Setup, format!("seccomp: {e}"));
            }
        }
        super::trace::step("command: exec");
        // The trampoline's argv: the path, then the command's own.
        let mut argv: Vec<*const libc::c_char> = vec![path.as_ptr()];
        argv.extend(self.argv.iter().map(|a| a.as_ptr()));
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = self.envp.iter().map(|a| a.as_ptr()).collect();
        envp.push(std::ptr::null());
        // SAFETY: NULL-terminated arrays of valid C strings; an fd we hold.
        unsafe {
            libc::syscall(
                libc::SYS_execveat,
                VIA_PROGRAM,
                c"".as_ptr(),
                argv.as_ptr(),
                envp.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        };
        // A profile that denies execveat but not execve: the same file through /proc (the
        // sandbox's own, always mounted), which works for a program, not only a script.
        // SAFETY: as above, with a valid C string.
        unsafe { libc::execve(c"/proc/self/fd/4".as_ptr(), argv.as_ptr(), envp.as_ptr()) };
        // The trampoline could not be exec'd (a seccomp profile denying both, a kernel whose
        // vm.memfd_noexec forbids it): never the command from this process, whose image is
        // the host binary. Said as the command's exec failure, which it stands for (a profile
        // denying execve is the command that cannot be executed).
        let err = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EACCES);
        let f = self.exec_failure(if err == libc::ENOENT { libc::EACCES } else { err });
        fail(f.kind, f.message)
    }
}

/// Keeps the capabilities of `mask` (Docker's default set unless `--cap-add`/`--cap-drop`
/// changed it; in the sandbox's user namespace) and no others.
fn drop_caps(mask: u64) -> Result<(), String> {
    let last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(40);
    for cap in 0..=last {
        if mask & (1u64 << cap) == 0 {
            // SAFETY: prctl with integer arguments.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
                return Err(format!("drop capability {cap}: {}", std::io::Error::last_os_error()));
            }
        }
    }
    // A capability this kernel does not have cannot be kept.
    let mask = mask & (u64::MAX >> (63 - last.min(63)));
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let h = Header { version: 0x2008_0522, pid: 0 };
    let lo = mask as u32;
    let hi = (mask >> 32) as u32;
    let d = [
        Data { effective: lo, permitted: lo, inheritable: lo },
        Data { effective: hi, permitted: hi, inheritable: hi },
    ];
    // SAFETY: header and two data structs, as capset(2) v3 wants.
    if unsafe { libc::syscall(libc::SYS_capset, &h as *const Header, d.as_ptr()) } != 0 {
        return Err(format!("capset: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    Ok(())
}
