//! The supervisor's watch: one poll loop over the init's pidfd, its report socket, the output
//! pipes (when counted) and a signalfd, with the wall-clock deadline as the poll timeout.

use super::init::InitReport;
use super::Limits;
use crate::sys;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Signals the supervisor forwards to the command.
const FORWARDED: &[i32] =
    &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2, libc::SIGWINCH];
/// After forwarding SIGINT/SIGTERM/SIGHUP/SIGQUIT, how long the command has to exit.
const STOP_GRACE: Duration = Duration::from_secs(2);

pub struct SignalFd {
    fd: OwnedFd,
    old: libc::sigset_t,
}

impl SignalFd {
    pub fn new() -> Result<SignalFd, super::Error> {
        // SAFETY: sigset operations on local sets; signalfd returns a new fd we own.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in FORWARDED {
                libc::sigaddset(&mut set, *s);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd < 0 {
                return Err(super::Error::new(
                    super::ErrorKind::Host,
                    format!("signalfd: {}", std::io::Error::last_os_error()),
                ));
            }
            use std::os::fd::FromRawFd;
            Ok(SignalFd { fd: OwnedFd::from_raw_fd(fd), old })
        }
    }
    fn read(&self) -> Option<i32> {
        // SAFETY: reading one signalfd_siginfo into a buffer of its size.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                &mut info as *mut _ as *mut libc::c_void,
                std::mem::size_of::<libc::signalfd_siginfo>(),
            )
        };
        (n == std::mem::size_of::<libc::signalfd_siginfo>() as isize).then_some(info.ssi_signo as i32)
    }
}

impl Drop for SignalFd {
    fn drop(&mut self) {
        // SAFETY: restoring the mask we saved.
        unsafe { libc::sigprocmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

pub struct Child {
    pub pid: i32,
    pub pidfd: OwnedFd,
}

impl Child {
    pub fn kill(&self) {
        sys::pidfd_kill(&self.pidfd, libc::SIGKILL);
    }
    /// Kills the init (and so its whole pid namespace) and reaps it.
    pub fn kill_and_reap(&self) {
        self.kill();
        let _ = self.reap();
    }
    /// Has the init exited (a zombie now, or reaped)? Does not block.
    pub fn exited(&self) -> bool {
        let mut p = libc::pollfd { fd: self.pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, 0) > 0 }
    }
    pub fn reap(&self) -> (i32, libc::rusage) {
        let mut st = 0;
        // SAFETY: rusage is plain data.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::wait4(self.pid, &mut st, 0, &mut ru) };
            if r >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return (st, ru);
            }
        }
    }
}

pub use super::stop_signal;

/// How long the init has to report after a wall-clock stop before it is killed outright.
const TIMEOUT_GRACE: std::time::Duration = std::time::Duration::from_millis(1000);

/// Why the supervisor ended the run, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Timeout,
    /// `--cpu-time`, counted by the cgroup.
    CpuTime,
    OutputLimit,
    Signal(i32),
}

#[derive(Debug)]
pub struct Outcome {
    pub init: Option<InitReport>,
    /// wait status of the init itself, when it was reaped.
    pub init_status: i32,
    /// The init's rusage (its whole tree), when it was reaped.
    pub rusage: libc::rusage,
    /// The init sent its final report (everything else dead and reaped) and is still tearing
    /// its namespaces down: the supervisor did not wait for that.
    pub init_running: bool,
    pub stopped: Option<Stop>,
    /// Bytes of stdout+stderr, when counted.
    pub output_bytes: Option<u64>,
    /// The host's shared budgets that were exhausted while the run went (see host_watch.rs).
    pub host_short: Vec<String>,
    /// When the run was over (before the output still waiting for a slow reader was written).
    pub ended: Instant,
}

struct Output {
    buf: Vec<u8>,
    fds: Vec<(OwnedFd, RawFd)>,
    total: u64,
    limit: u64,
    /// What was read from each pipe and not yet taken by its destination. While a pipe has
    /// some, it is not read (the command waits, as it would on a full pipe), and the wait loop
    /// polls the destination instead of writing to it blindly: a reader of ours that stops
    /// (a paused pager, a FIFO's reader) never blocks the loop that keeps the timeout, the
    /// signals and the host watch.
    pending: [Vec<u8>; 2],
}

/// At most this much is written to a destination the poll said was writable: a pipe takes
/// PIPE_BUF bytes then without blocking.
const WRITE_CHUNK: usize = 4096;

impl Output {
    fn new(fds: Vec<(OwnedFd, RawFd)>, limit: u64) -> Output {
        Output { buf: vec![0; 65536], fds, total: 0, limit, pending: [Vec::new(), Vec::new()] }
    }

    /// Past the output limit: nothing more is copied.
    fn over(&self) -> bool {
        self.total > self.limit
    }

    /// Whether pipe `i`'s output waits for its destination.
    fn waiting(&self, i: usize) -> bool {
        !self.pending[i].is_empty()
    }

    /// Writes what pipe `i` has pending, as much as its destination takes now (`block`: all
    /// of it, the run being over); a destination nobody reads any more drops it.
    fn flush(&mut self, i: usize, block: bool) {
        let dst = self.fds[i].1;
        while !self.pending[i].is_empty() {
            if !block {
                let mut p = libc::pollfd { fd: dst, events: libc::POLLOUT, revents: 0 };
                // SAFETY: one valid pollfd.
                if unsafe { libc::poll(&mut p, 1, 0) } <= 0 || p.revents & libc::POLLOUT == 0 {
                    if p.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                        self.pending[i].clear();
                    }
                    return;
                }
            }
            let len = if block { self.pending[i].len() } else { self.pending[i].len().min(WRITE_CHUNK) };
            // SAFETY: writing our buffer to our own stdout or stderr.
            let n = unsafe { libc::write(dst, self.pending[i].as_ptr().cast(), len) };
            if n > 0 {
                self.pending[i].drain(..n as usize);
            } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock && !block {
                return;
            } else {
                self.pending[i].clear();
            }
        }
    }

    /// Copies what is readable on `i`; returns false at EOF. Past the limit, copies up to it
    /// and reports the overflow.
    fn pump(&mut self, i: usize) -> (bool, bool) {
        let buf = &mut self.buf;
        let (src, dst) = (self.fds[i].0.as_raw_fd(), self.fds[i].1);
        // SAFETY: reading into our buffer.
        let n = unsafe { libc::read(src, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n <= 0 {
            // (A pty's master reads EIO once no slave is open: its end of file.)
            let again = n < 0
                && matches!(
                    std::io::Error::last_os_error().kind(),
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                );
            return (again, false);
        }
        let _ = dst;
        let n = n as u64;
        let room = self.limit.saturating_sub(self.total);
        self.pending[i].extend_from_slice(&buf[..n.min(room) as usize]);
        self.flush(i, false);
        self.total += n;
        (true, self.total > self.limit)
    }
}

/// `-t`: the supervisor's side of the sandbox's pty. The master comes from the init (it is
/// made inside the sandbox); the caller's stdin is copied into it, its output out to our
/// stdout (counted as the output pipes are), the caller's terminal is raw meanwhile and its
/// window size follows ours.
struct Pty {
    master: RawFd,
    /// Input read from our stdin, not yet taken by the pty.
    pending: Vec<u8>,
    /// Our stdin has more to give.
    stdin_open: bool,
    /// The caller's terminal as it was, restored on drop.
    saved: Option<libc::termios>,
}

impl Pty {
    fn new(master: RawFd) -> Pty {
        // SAFETY: fcntl on the master we hold; termios calls on our own stdin.
        unsafe {
            let fl = libc::fcntl(master, libc::F_GETFL);
            libc::fcntl(master, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        let mut saved = None;
        // SAFETY: as above, with a termios for the kernel to fill.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::isatty(0) == 1 && libc::tcgetattr(0, &mut t) == 0 {
                let mut raw = t;
                libc::cfmakeraw(&mut raw);
                if libc::tcsetattr(0, libc::TCSANOW, &raw) == 0 {
                    saved = Some(t);
                }
            }
        }
        let p = Pty { master, pending: Vec::new(), stdin_open: true, saved };
        p.resize();
        p
    }

    /// The caller's window size, passed on (the kernel tells the pty's foreground processes).
    fn resize(&self) {
        if let Some((rows, cols)) = super::terminal_size() {
            let ws = libc::winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
            // SAFETY: a winsize for the master we hold.
            unsafe { libc::ioctl(self.master, libc::TIOCSWINSZ, &ws) };
        }
    }

    /// Reads what our stdin has (it was readable); at its end, the pty's end-of-file
    /// character when the command reads lines, as a terminal's user would type it.
    fn read_stdin(&mut self) {
        if !read_stdin_into(&mut self.pending) {
            self.stdin_open = false;
            // SAFETY: a termios for the kernel to fill, of the pty we hold.
            let mut t: libc::termios = unsafe { std::mem::zeroed() };
            if unsafe { libc::tcgetattr(self.master, &mut t) } == 0 && t.c_lflag & libc::ICANON != 0 {
                self.pending.push(t.c_cc[libc::VEOF]);
            }
        }
    }

    /// Hands the pty what it takes of the pending input.
    fn write_pending(&mut self) {
        // SAFETY: writing our buffer to the master we hold (non-blocking).
        let n = unsafe { libc::write(self.master, self.pending.as_ptr().cast(), self.pending.len()) };
        if n > 0 {
            self.pending.drain(..n as usize);
        } else if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock {
            // Nobody reads any more.
            self.pending.clear();
            self.stdin_open = false;
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Some(t) = &self.saved {
            // SAFETY: restoring our stdin's settings as they were.
            unsafe { libc::tcsetattr(0, libc::TCSADRAIN, t) };
        }
    }
}

/// How often the supervisor reads the cgroup's CPU time for `--cpu-time`.
const CPU_CHECK: Duration = Duration::from_millis(10);

/// What the supervisor relays: the output pipes' read ends (when the output is counted), or,
/// with `-t`, the pty whose master the init sends.
pub struct Relay {
    pub pipes: Option<Vec<OwnedFd>>,
    pub tty: bool,
    /// The write end of the command's stdin pipe, when our stdin is relayed to it (see
    /// `sandbox::relayed_stdin`): what our stdin gives is copied there until its end.
    pub stdin: Option<OwnedFd>,
}

/// Reads what our stdin has (it was readable) onto `pending`; false at its end (or an error
/// other than an interrupted read).
fn read_stdin_into(pending: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    // SAFETY: reading into our buffer.
    let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
    if n > 0 {
        pending.extend_from_slice(&buf[..n as usize]);
        return true;
    }
    n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
}

/// Our stdin copied into the command's stdin pipe, in the wait loop.
struct StdinPipe {
    w: Option<OwnedFd>,
    pending: Vec<u8>,
}

impl StdinPipe {
    /// False at our stdin's end.
    fn read_stdin(&mut self) -> bool {
        let more = read_stdin_into(&mut self.pending);
        // The end: the command reads its end-of-file once the pending input is taken.
        if !more && self.pending.is_empty() {
            self.w = None;
        }
        more
    }

    fn write_pending(&mut self, eof: bool) {
        let Some(w) = &self.w else { return };
        // SAFETY: writing our buffer to the pipe we hold (non-blocking).
        let n = unsafe { libc::write(w.as_raw_fd(), self.pending.as_ptr().cast(), self.pending.len()) };
        if n > 0 {
            self.pending.drain(..n as usize);
        } else if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock {
            // Nobody reads any more.
            self.pending.clear();
            self.w = None;
        }
        if eof && self.pending.is_empty() {
            self.w = None;
        }
    }
}

/// The group's CPU, as the supervisor watches it: `limit`, `--cpu-time` in seconds and a reader
/// of the CPU time used so far, where a cgroup counts it (else the init's watchdog does); and
/// `release`, which lifts the group's CPU quota before the sandbox is ended.
pub struct Cpu<'a> {
    pub limit: Option<(f64, &'a dyn Fn() -> Option<f64>)>,
    pub release: &'a dyn Fn(),
}

/// `cpu`: the `--cpu-time` limit in seconds and a reader of the CPU time used so far, where the
/// supervisor checks it (a cgroup counts); else the init's watchdog does.
pub fn watch(
    child: &Child,
    sock: &OwnedFd,
    sigfd: &SignalFd,
    relay: Relay,
    limits: &Limits,
    cpu: Cpu,
    started: Instant,
) -> Outcome {
    let Cpu { limit: cpu, release: release_cpu } = cpu;
    let Relay { pipes: out, tty, stdin } = relay;
    let mut piped_in = stdin.map(|w| {
        // SAFETY: fcntl on the write end we hold.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        StdinPipe { w: Some(w), pending: Vec::new() }
    });
    let mut stdin_eof = false;
    let mut host = super::host_watch::HostWatch::default();
    host.start(started);
    let deadline = limits.timeout.map(|t| started + t);
    let mut next_cpu_check = started + CPU_CHECK;
    let mut stopped: Option<Stop> = None;
    let mut kill_at: Option<Instant> = None;
    let mut init_report: Option<InitReport> = None;
    // One read end per pipe: stdout's and stderr's, or one for both (see `pipes`).
    let n = out.as_ref().map_or(0, |v| v.len());
    let mut output = out.map(|v| Output::new(v.into_iter().zip([1, 2]).collect(), limits.output.unwrap_or(u64::MAX)));
    let mut open = [n > 0, n > 1];
    let mut exited = false;
    // -t: the pty, once the init has sent its master (until then, nothing to relay).
    let mut pty: Option<Pty> = None;
    loop {
        // (The pty's master, if the init sent one, came before its report: one socket, in order.)
        // (Output still waiting for a slow reader of ours is written after the run.)
        let waiting = |i: usize| output.as_ref().is_some_and(|o| o.waiting(i));
        if exited && (!open[0] || waiting(0)) && (!open[1] || waiting(1)) {
            break;
        }
        let now = Instant::now();
        let mut wake: Option<Instant> = if stopped.is_none() { deadline } else { None };
        if let Some(k) = kill_at {
            wake = Some(wake.map_or(k, |w| w.min(k)));
        }
        if cpu.is_some() && stopped.is_none() {
            wake = Some(wake.map_or(next_cpu_check, |w| w.min(next_cpu_check)));
        }
        if let Some(h) = host.due() {
            wake = Some(wake.map_or(h, |w| w.min(h)));
        }
        let timeout_ms: i32 = match wake {
            _ if exited => -1,
            Some(w) => w.saturating_duration_since(now).as_millis().min(i32::MAX as u128) as i32,
            None => -1,
        };
        let mut pfds = vec![
            libc::pollfd { fd: child.pidfd.as_raw_fd(), events: if exited { 0 } else { libc::POLLIN }, revents: 0 },
            libc::pollfd { fd: sock.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: sigfd.fd.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        if let Some(o) = &output {
            for (i, (fd, _)) in o.fds.iter().enumerate() {
                pfds.push(libc::pollfd {
                    fd: if open[i] && !o.waiting(i) { fd.as_raw_fd() } else { -1 },
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
        }
        let polled_out = pfds.len() - 3;
        // Destinations that have output waiting: polled for room.
        let mut dst_at = Vec::new();
        if let Some(o) = &output {
            for i in (0..o.fds.len()).filter(|&i| o.waiting(i)) {
                dst_at.push((i, pfds.len()));
                pfds.push(libc::pollfd { fd: o.fds[i].1, events: libc::POLLOUT, revents: 0 });
            }
        }
        // The pty's input side: our stdin while the pty has room, the master while input waits.
        let (mut stdin_at, mut master_at) = (None, None);
        let (mut piped_stdin_at, mut piped_w_at) = (None, None);
        if let Some(p) = piped_in.as_ref().filter(|_| !exited) {
            match &p.w {
                Some(w) if !p.pending.is_empty() => {
                    piped_w_at = Some(pfds.len());
                    pfds.push(libc::pollfd { fd: w.as_raw_fd(), events: libc::POLLOUT, revents: 0 });
                }
                Some(_) if !stdin_eof => {
                    piped_stdin_at = Some(pfds.len());
                    pfds.push(libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 });
                }
                _ => {}
            }
        }
        if let Some(p) = pty.as_ref().filter(|_| !exited) {
            if p.pending.is_empty() && p.stdin_open {
                stdin_at = Some(pfds.len());
                pfds.push(libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 });
            } else if !p.pending.is_empty() {
                master_at = Some(pfds.len());
                pfds.push(libc::pollfd { fd: p.master, events: libc::POLLOUT, revents: 0 });
            }
        }
        // SAFETY: pfds is a valid array.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
        if n < 0 {
            continue; // EINTR
        }
        let now = Instant::now();
        if pfds[1].revents & libc::POLLIN != 0 {
            if let Ok(Some((data, mut fds))) = sys::recv_msg(sock.as_raw_fd()) {
                if tty && pty.is_none() && data == super::init::PTY_MESSAGE && fds.len() == 1 {
                    // The master: relayed as the output pipes are (the one read end, to our
                    // stdout), and written with our stdin.
                    let master = fds.pop().unwrap();
                    let p = Pty::new(master.as_raw_fd());
                    output = Some(Output::new(vec![(master, 1)], limits.output.unwrap_or(u64::MAX)));
                    open = [true, false];
                    pty = Some(p);
                } else if let Ok(r) = serde_json::from_slice::<InitReport>(&data) {
                    // A final report means every process but the init is dead and reaped: the
                    // run is over (an error report: the init exits at once; wait for it).
                    if r.error.is_none() {
                        exited = true;
                    }
                    init_report = Some(r);
                }
            }
        }
        if pfds[2].revents & libc::POLLIN != 0 {
            while let Some(sig) = sigfd.read() {
                if sig == libc::SIGWINCH && tty {
                    // The pty tells its own foreground processes.
                    if let Some(p) = &pty {
                        p.resize();
                    }
                    continue;
                }
                let ending = matches!(sig, libc::SIGINT | libc::SIGTERM | libc::SIGHUP | libc::SIGQUIT);
                if ending && stopped.is_none() {
                    // Whatever the command does with the signal, the sandbox ends within the
                    // grace: its processes must be able to run to exit.
                    release_cpu();
                }
                sys::pidfd_kill(&child.pidfd, sig);
                if ending && stopped.is_none() {
                    stopped = Some(Stop::Signal(sig));
                    kill_at = Some(now + STOP_GRACE);
                }
            }
        }
        if let Some(o) = output.as_mut() {
            for &(i, at) in &dst_at {
                if pfds[at].revents != 0 {
                    o.flush(i, false);
                }
            }
            // (Not the pty's master in the round that brought it: it was not polled.)
            for i in 0..polled_out {
                if open[i] && !o.waiting(i) && pfds[3 + i].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
                {
                    let (more, over) = o.pump(i);
                    open[i] = more;
                    if over && stopped.is_none() {
                        stopped = Some(Stop::OutputLimit);
                        release_cpu();
                        child.kill();
                    }
                    if over {
                        // Past the limit nothing more is copied: close both pipes.
                        open = [false, false];
                    }
                }
            }
        }
        if let Some(p) = piped_in.as_mut() {
            let any = libc::POLLIN | libc::POLLOUT | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
            if piped_stdin_at.is_some_and(|i| pfds[i].revents & any != 0) {
                stdin_eof = !p.read_stdin();
            }
            if piped_w_at.is_some_and(|i| pfds[i].revents & any != 0) || !p.pending.is_empty() {
                p.write_pending(stdin_eof);
            }
        }
        if let Some(p) = pty.as_mut() {
            if stdin_at
                .is_some_and(|i| pfds[i].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0)
            {
                p.read_stdin();
            }
            if master_at.is_some_and(|i| pfds[i].revents & (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) != 0)
                || !p.pending.is_empty()
            {
                p.write_pending();
            }
        }
        if !exited && pfds[0].revents & libc::POLLIN != 0 {
            exited = true;
        }
        host.sample(now, false);
        if stopped.is_none() && deadline.is_some_and(|d| now >= d) && !exited {
            // The init kills and reaps everything and reports (CPU time included); if it
            // does not within the grace, it is killed outright.
            stopped = Some(Stop::Timeout);
            // The init ends everything; unthrottled, so that it can, and they can exit.
            release_cpu();
            sys::pidfd_kill(&child.pidfd, stop_signal());
            kill_at = Some(now + TIMEOUT_GRACE);
        }
        if let Some((limit, used)) = cpu {
            if stopped.is_none() && !exited && now >= next_cpu_check {
                next_cpu_check = now + CPU_CHECK;
                if used().is_some_and(|u| u >= limit) {
                    stopped = Some(Stop::CpuTime);
                    release_cpu();
                    sys::pidfd_kill(&child.pidfd, stop_signal());
                    kill_at = Some(now + TIMEOUT_GRACE);
                }
            }
        }
        if kill_at.is_some_and(|k| now >= k) && !exited {
            release_cpu();
            child.kill();
            kill_at = None;
        }
    }
    // The report may still be queued when the pidfd fired first.
    if init_report.is_none() {
        let mut p = libc::pollfd { fd: sock.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, 0) } > 0 {
            if let Ok(Some((data, _))) = sys::recv_msg(sock.as_raw_fd()) {
                init_report = serde_json::from_slice(&data).ok();
            }
        }
    }
    let final_report = init_report.as_ref().is_some_and(|r| r.error.is_none());
    let (init_status, rusage, init_running) = if final_report && !child.exited() {
        // SAFETY: rusage is plain data; it is not read when the report has the figures.
        (0, unsafe { std::mem::zeroed() }, true)
    } else {
        let (st, ru) = child.reap();
        (st, ru, false)
    };
    // The run is over: what waits is written whatever it takes (nothing is left to limit),
    // after the run's wall time.
    let ended = Instant::now();
    if let Some(o) = output.as_mut() {
        for (i, open) in open.iter().copied().enumerate().take(o.fds.len()) {
            o.flush(i, true);
            // What its pipe still holds (every writer is gone: it ends).
            let mut more = open;
            while more && !o.over() {
                more = o.pump(i).0;
                o.flush(i, true);
            }
        }
    }
    // The caller's terminal as it was (the pty's output is all out).
    drop(pty);
    let output_bytes = output.filter(|_| limits.output.is_some()).map(|o| o.total);
    host.sample(Instant::now(), true);
    Outcome {
        init: init_report,
        init_status,
        rusage,
        init_running,
        stopped,
        output_bytes,
        host_short: host.short,
        ended,
    }
}

/// Inits that reported and were left to finish tearing down; reaped by a later run (or by
/// whoever inherits them when this process exits).
static PENDING: std::sync::Mutex<Vec<Child>> = std::sync::Mutex::new(Vec::new());

pub fn reap_later(child: Child) {
    if child.exited() {
        child.reap();
    } else if let Ok(mut p) = PENDING.lock() {
        p.push(child);
    }
}

/// Reaps every init still pending, waiting for those still tearing their namespaces down:
/// called before the process exits, so that no init is left a zombie for whoever reaps
/// orphans (a subreaper that never does would collect one per run). By then the output and
/// the usage record are written.
pub fn reap_all() {
    if let Ok(mut p) = PENDING.lock() {
        for c in p.drain(..) {
            c.reap();
        }
    }
}

pub fn reap_finished() {
    if let Ok(mut p) = PENDING.lock() {
        p.retain(|c| {
            if c.exited() {
                c.reap();
                false
            } else {
                true
            }
        });
    }
}
