//! The usage record of one run (`--stats-json`), and the exit status derived from it.
//!
//! The record is a published interface: every kind in it (the status, how a limit was held,
//! where a figure comes from) is an enum here whose JSON string is fixed by its `rename`, and
//! tests and users read those strings. A variant may be added; a string must never change.
//!
//! With `--stats-json FILE`, `polysandbox run` always leaves a record in FILE, whatever ended
//! it, unless FILE itself cannot be written (or polysandbox is killed by SIGKILL, or aborts on
//! a bug). Its exit code follows from the record's `status` ([`Status::exit_rule`]):
//!
//! | `status` | `polysandbox run` exits with |
//! | --- | --- |
//! | `exited` | the command's own exit code (`exit_code`) |
//! | `signaled` | 128 + N, N the signal that ended the command (`signal`) |
//! | `timeout` | 124 |
//! | `oom` | 122 |
//! | `cpu_time` | 121 |
//! | `output_limit` | 120 |
//! | `interrupted` | the command's exit code, or 128 + the signal that ended it, or else 128 + the signal polysandbox was sent |
//! | `not_started` | by `start_error_kind`: 125 `setup`, 126 `cannot_execute`, 127 `not_found` |
//! | `error` | 125 (`error_kind` and `error` say what failed) |
//!
//! A command may itself exit with any of those codes: only the status tells them apart.

use super::init::{InitReport, KilledBy};
use super::monitor::{Outcome, Stop};
use super::record_enum::record_enum;
use super::{exit, Error, Fallbacks, Spec};
use crate::cgroups;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

record_enum! {
    /// How the run ended: the record's `status`.
    pub enum Status {
        /// The command exited by itself.
        Exited = "exited",
        /// A signal ended the command (not one polysandbox sent or forwarded).
        Signaled = "signaled",
        /// `--timeout` (wall clock) expired; the sandbox was killed.
        Timeout = "timeout",
        /// A process was killed for exceeding `--memory` (the kernel's OOM killer under a memory
        /// cgroup, or the watchdog).
        Oom = "oom",
        /// `--cpu-time` was exceeded; the sandbox was killed.
        CpuTime = "cpu_time",
        /// `--output-limit` was exceeded; the sandbox was killed.
        OutputLimit = "output_limit",
        /// polysandbox was sent SIGINT, SIGTERM, SIGHUP or SIGQUIT and forwarded it.
        Interrupted = "interrupted",
        /// The command's process failed before it became the command (working directory,
        /// capabilities, rlimits, seccomp, exec): see `start_error_kind` and `start_error`.
        /// polysandbox's fault or the image's, never the command's.
        NotStarted = "not_started",
        /// polysandbox itself failed (see `error_kind` and `error`): the command did not run,
        /// or (`internal`) its end is unknown. Nothing was measured.
        Error = "error",
    }
}

/// What `polysandbox run` exits with, for a record of some status: see the module's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitRule {
    /// The command's own exit code.
    Command,
    /// 128 + N, N the signal that ended the command.
    Signal,
    /// The command's own exit code, else 128 + the signal that ended it, else 128 + the signal
    /// polysandbox was sent (and forwarded).
    CommandOrSignal,
    /// The code of the record's [`StartErrorKind`].
    StartError,
    /// Always this code.
    Fixed(i32),
}

impl Status {
    /// The exit-code contract of `polysandbox run`.
    pub const fn exit_rule(self) -> ExitRule {
        match self {
            Status::Exited => ExitRule::Command,
            Status::Signaled => ExitRule::Signal,
            Status::Timeout => ExitRule::Fixed(exit::TIMEOUT),
            Status::Oom => ExitRule::Fixed(exit::OOM),
            Status::CpuTime => ExitRule::Fixed(exit::CPU_TIME),
            Status::OutputLimit => ExitRule::Fixed(exit::OUTPUT_LIMIT),
            Status::Interrupted => ExitRule::CommandOrSignal,
            Status::NotStarted => ExitRule::StartError,
            Status::Error => ExitRule::Fixed(exit::ERROR),
        }
    }
}

/// At which step the command's process failed (the init's word, written in the record as is).
pub use super::init::StartErrorKind;

record_enum! {
    /// What failed when polysandbox itself failed (`status: error`).
    pub enum ErrorKind {
        /// The invocation: an option, an argument, or a file named by one (the rootfs, a bind
        /// source, a seccomp profile), or stdin.
        Usage = "usage",
        /// The image: its name, finding or pulling it, reading its manifest, config or rootfs
        /// from the store, or what its config names (a command, a user).
        Image = "image",
        /// The image store itself: opening it, reading its index, locking a rootfs.
        Store = "store",
        /// What the host lacks or refuses: user namespaces, clone3, idmapped mounts, pipes,
        /// file descriptors.
        Host = "host",
        /// A step of building the sandbox: its id maps and mount trees, its root filesystem,
        /// moving it into its cgroup, handing its init what it needs.
        Setup = "setup",
        /// polysandbox lost the run: its init died without a report, or reported no end for the
        /// command (which may have run, in part).
        Internal = "internal",
    }
}

/// The kind of cgroup hierarchy a sandbox's group was made in (the cgroups module's own word,
/// written in the record as is).
pub use crate::cgroups::CgroupKind;

record_enum! {
    /// A limit of `polysandbox run`: the keys of the record's `limits`. Declared in the order of
    /// their strings, which is the order the record lists them in.
    pub enum Limit {
        /// `--cpu-time`, in seconds.
        CpuTime = "cpu_time_s",
        /// `--cpus`.
        Cpus = "cpus",
        /// `--disk`, in bytes.
        Disk = "disk",
        /// `--memory`, in bytes.
        Memory = "memory",
        /// `--nofile`.
        Nofile = "nofile",
        /// `--output-limit`, in bytes.
        Output = "output",
        /// `--pids`.
        Pids = "pids",
        /// `--timeout`, in seconds.
        Timeout = "timeout_s",
    }
}

record_enum! {
    /// How one requested limit was held.
    pub enum EnforcedBy {
        /// The sandbox's cgroup (v1 hierarchy).
        CgroupV1 = "cgroup v1",
        /// The sandbox's cgroup (v2 hierarchy).
        CgroupV2 = "cgroup v2",
        /// A resource limit of the command's processes (RLIMIT_NPROC in the sandbox's user
        /// namespace for `--pids`; RLIMIT_NOFILE for `--nofile`).
        Rlimit = "rlimit",
        /// The init's watchdog, sampling the sandbox's processes in /proc.
        Watchdog = "watchdog",
        /// The supervisor's monotonic clock.
        WallClock = "wall clock",
        /// The size of the tmpfs under the writable layer.
        TmpfsSize = "tmpfs size",
        /// The command pinned to as many CPUs.
        CpuAffinity = "cpu affinity",
        /// Counted in the supervisor's copy of stdout and stderr.
        OutputPipe = "output pipe",
        /// Asked for and not held.
        NotEnforced = "not enforced",
    }
}

impl EnforcedBy {
    /// Whether a cgroup holds the limit.
    pub fn is_cgroup(self) -> bool {
        matches!(self, EnforcedBy::CgroupV1 | EnforcedBy::CgroupV2)
    }
}

impl From<CgroupKind> for EnforcedBy {
    fn from(k: CgroupKind) -> EnforcedBy {
        match k {
            CgroupKind::V1 => EnforcedBy::CgroupV1,
            CgroupKind::V2 => EnforcedBy::CgroupV2,
        }
    }
}

record_enum! {
    /// How a limit's trip is known, where it is not exact.
    pub enum TripDetection {
        /// Pids under an rlimit: seen only if the watchdog samples the peak, which a bomb whose
        /// forkers die at once can outrun.
        Sampled = "sampled",
        /// CPU time from /proc: the CPU of a process reaped by nobody (its parent ignores
        /// SIGCHLD) is in no parent's counts and is not seen.
        SampledMissesUnreaped = "sampled; misses processes reaped by nobody (SIGCHLD ignored)",
    }
}

record_enum! {
    /// Where `memory_peak_bytes` comes from.
    pub enum MemoryPeakSource {
        /// `memory.max_usage_in_bytes` of the v1 memory cgroup: every process of the sandbox,
        /// and its tmpfs pages.
        CgroupV1 = "cgroup v1 memory controller",
        /// `memory.peak` of the v2 cgroup (Linux 5.19+).
        CgroupV2 = "cgroup v2 memory controller",
        /// The memory watchdog's largest sample of the sandbox's anonymous and shared memory
        /// (RssAnon + RssShmem of each process, memfds, tmpfs, SysV segments): `--memory`
        /// without a memory cgroup.
        SampledAnonShmem = "anonymous and shared memory of the sandbox, sampled",
        /// The watchdog's largest sample of the sum of the processes' RSS (it ran for another
        /// limit).
        SampledRssSum = "sum of the processes' RSS, sampled",
        /// The largest RSS of any single process (the kernel's maxrss of the reaped processes):
        /// neither a cgroup nor a sample larger.
        LargestProcessRss = "largest single process RSS (no memory cgroup)",
        /// `status: error`: nothing was measured (`memory_peak_bytes` is 0).
        NotMeasured = "not measured",
    }
}

impl From<CgroupKind> for MemoryPeakSource {
    fn from(k: CgroupKind) -> MemoryPeakSource {
        match k {
            CgroupKind::V1 => MemoryPeakSource::CgroupV1,
            CgroupKind::V2 => MemoryPeakSource::CgroupV2,
        }
    }
}

record_enum! {
    /// How `wall_time_s` was measured.
    #[derive(Default)]
    pub enum WallTimeSource {
        /// The supervisor's monotonic clock (CLOCK_MONOTONIC), from the start of the sandbox's
        /// setup (before its namespaces are made) to the init's final report, or its exit: the
        /// command's run, plus polysandbox's setup and teardown (a few milliseconds). Not the
        /// image's lookup or pull, which come before. (Records from before the field was
        /// written read as this: they were measured the same way.)
        #[default]
        Supervisor = "monotonic clock of the supervisor",
        /// `status: error`: polysandbox's monotonic clock, from the start of `polysandbox run`
        /// (the image's lookup and pull included) to its failure.
        UntilFailure = "monotonic clock of polysandbox, until it failed",
    }
}

record_enum! {
    /// How `cpu_user_s`, `cpu_system_s` and `cpu_total_s` were measured.
    #[derive(Default)]
    pub enum CpuSource {
        /// The v1 cpuacct cgroup: `cpuacct.usage` (the scheduler's exact count), split into user
        /// and system in the proportion of the tick-sampled `cpuacct.usage_user` and
        /// `usage_sys`. Every process that ran in the group, those reaped by nobody included.
        /// (A v1 cpuacct group is made for `--cpu-time`, or shared with the cpu group.)
        CgroupV1 = "cgroup v1 cpuacct controller",
        /// The v2 cgroup's `cpu.stat`: `usage_usec`, split in the proportion of `user_usec` and
        /// `system_usec`. Every process that ran in the group, those reaped by nobody included.
        CgroupV2 = "cgroup v2 cpu.stat",
        /// No cgroup counted: the init's getrusage(RUSAGE_CHILDREN) after it killed and reaped
        /// every process of the sandbox. Misses the processes reaped by nobody: a child of a
        /// parent that ignores SIGCHLD (or sets SA_NOCLDWAIT) is discarded by the kernel with
        /// its CPU time.
        ReapedByInit = "rusage of the processes the init reaped",
        /// No cgroup counted and the init was killed before it could report (a stop it did not
        /// answer in time, or the OOM killer): the supervisor's wait4 of the init, which holds the init's own CPU
        /// and its reaped descendants'. Misses the processes reaped by nobody, as above.
        InitWait4 = "rusage of the init, from wait4",
        /// Nothing was measured (or the record predates the field).
        #[default]
        NotMeasured = "not measured",
    }
}

impl From<CgroupKind> for CpuSource {
    fn from(k: CgroupKind) -> CpuSource {
        match k {
            CgroupKind::V1 => CpuSource::CgroupV1,
            CgroupKind::V2 => CpuSource::CgroupV2,
        }
    }
}

record_enum! {
    /// How `tasks_peak` was measured.
    #[derive(Default)]
    pub enum TasksPeakSource {
        /// The init's watchdog (which runs where a limit is held without a cgroup): the
        /// sandbox's threads counted in /proc (the init included), every 1 ms for the first
        /// 50 ms, then every 5 ms, then every 20 ms. A peak between two samples is missed. (The
        /// cgroup's `pids.peak` is not read.)
        Sampled = "sampled from /proc by the init's watchdog",
        /// Not measured (`tasks_peak` is null): no watchdog ran (or the record predates the
        /// field).
        #[default]
        NotMeasured = "not measured",
    }
}

record_enum! {
    /// How `disk_used_bytes` was measured.
    #[derive(Default)]
    pub enum DiskUsedSource {
        /// statfs of the sandbox's scratch tmpfs (the overlay's writable layer and the upper
        /// layers of `:O` binds; not `--tmpfs` mounts), by the init once every process was
        /// reaped: what was left at the end, not the peak.
        ScratchAtEnd = "statfs of the writable layer at the end",
        /// Not measured (`disk_used_bytes` is 0): the init did not report (or the record
        /// predates the field).
        #[default]
        NotMeasured = "not measured",
    }
}

record_enum! {
    /// How `output_bytes` was measured.
    #[derive(Default)]
    pub enum OutputBytesSource {
        /// Counted by the supervisor as it copied stdout and stderr from the pipes the command
        /// writes to (with `--output-limit`): every byte read, those past the limit included.
        OutputPipes = "supervisor's output pipes",
        /// Not counted (`output_bytes` is null): without `--output-limit` the command writes to
        /// polysandbox's own stdout and stderr (or the record predates the field).
        #[default]
        NotMeasured = "not measured",
    }
}

/// How one requested limit was held.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LimitRecord {
    pub requested: serde_json::Value,
    pub enforced_by: EnforcedBy,
    /// How a trip is known, where it is not exact (see [`TripDetection`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trip_detection: Option<TripDetection>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// `--name`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub command: Vec<String>,
    /// How the run ended (see [`Status`]).
    pub status: Status,
    /// Why the command did not start, when it did not (`not_started`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_error: Option<String>,
    /// At which step it did not start, which says the exit code (`not_started`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_error_kind: Option<StartErrorKind>,
    /// What polysandbox failed at, one line, as it says on stderr (`error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What kind of failure that was (`error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// The command's exit code, when it exited by itself.
    pub exit_code: Option<i32>,
    /// The signal that ended the command, if one did.
    pub signal: Option<i32>,
    /// What `polysandbox run` exits with.
    pub polysandbox_exit_code: i32,
    /// Seconds the run took (see [`WallTimeSource`]).
    pub wall_time_s: f64,
    /// How `wall_time_s` was measured.
    #[serde(default)]
    pub wall_time_source: WallTimeSource,
    /// CPU seconds of every process of the sandbox (see [`CpuSource`]): in user mode, in the
    /// kernel, and their sum.
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    pub cpu_total_s: f64,
    /// How the CPU figures were measured: by a cgroup, or from the kernel's accounting of the
    /// reaped processes, which misses those reaped by nobody.
    #[serde(default)]
    pub cpu_source: CpuSource,
    /// The most memory the sandbox held at once (see [`MemoryPeakSource`]).
    pub memory_peak_bytes: u64,
    /// Where the peak comes from: the cgroup, or the processes' own accounting.
    pub memory_peak_source: MemoryPeakSource,
    pub oom_killed: bool,
    pub timed_out: bool,
    pub cpu_time_exceeded: bool,
    pub output_limit_exceeded: bool,
    pub pids_limit_reached: bool,
    pub disk_limit_reached: bool,
    /// Bytes used in the writable layer at the end of the run (see [`DiskUsedSource`]).
    pub disk_used_bytes: u64,
    /// How `disk_used_bytes` was measured.
    #[serde(default)]
    pub disk_used_source: DiskUsedSource,
    /// Whether the writable layer (a tmpfs) keeps user xattrs, as it does from Linux 6.6:
    /// without them overlayfs in a user namespace cannot make a directory opaque, so removing a
    /// directory of the image (or of an `:O` bind) after changing its contents fails with EIO.
    /// Absent when the command never ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_xattrs: Option<bool>,
    /// Most tasks (processes and threads) seen at once, where the watchdog sampled them.
    pub tasks_peak: Option<u64>,
    /// How `tasks_peak` was measured.
    #[serde(default)]
    pub tasks_peak_source: TasksPeakSource,
    /// Bytes the command wrote to stdout and stderr together, where they were counted.
    pub output_bytes: Option<u64>,
    /// How `output_bytes` was measured.
    #[serde(default)]
    pub output_bytes_source: OutputBytesSource,
    pub limits: BTreeMap<Limit, LimitRecord>,
    /// The cgroup's hierarchy, or null when no cgroup could be used.
    pub cgroup: Option<CgroupKind>,
    /// Why there is no cgroup, when there is none.
    pub cgroup_unavailable: Option<String>,
    pub rootless: bool,
    /// The `--digest-after` files, as the init read them once every process had ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub digests_after: Vec<DigestAfter>,
    /// Budgets the host shares that were exhausted while the run went (the file table, AIO
    /// events, pseudo-terminals, processes, memory): failures the run met may be the host's,
    /// not the code's. Absent when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_short: Vec<String>,
    /// `--protect`: whether a process asked, and what was protected then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect: Option<Protect>,
}

/// What `--protect` did: nothing until a process of the sandbox asked (SIGUSR2 to pid 1).
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
pub struct Protect {
    pub asked: bool,
    pub protected: usize,
    /// Why each path that was not protected was not ("No such file or directory", a symlink).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_protected: Vec<String>,
}

/// A file's SHA-256 after the run (`--digest-after`), or why it has none ("absent", a
/// symlink, not a regular file).
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
pub struct DigestAfter {
    pub path: String,
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn secs(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    spec: &Spec,
    out: Outcome,
    usage: cgroups::Usage,
    cgroup: Option<CgroupKind>,
    held: &cgroups::Limits,
    fb: &Fallbacks,
    cgroup_note: Option<String>,
    rootless: bool,
    wall: Duration,
) -> Result<Report, Error> {
    let init = match (&out.init, out.stopped) {
        (Some(r), _) => {
            if let Some(e) = &r.error {
                return Err(Error::new(ErrorKind::Setup, e.clone()));
            }
            r.clone()
        }
        // Killed by us before it could report: that is the stop's doing, not an error.
        (None, Some(_)) => Default::default(),
        // The OOM killer took the init itself (it counts as the sandbox's OOM).
        (None, None) if usage.oom_kills > 0 => InitReport { killed_by: Some(KilledBy::Memory), ..Default::default() },
        (None, None) => {
            let why = if libc::WIFSIGNALED(out.init_status) {
                format!("killed by signal {}", libc::WTERMSIG(out.init_status))
            } else {
                format!("exit status {}", libc::WEXITSTATUS(out.init_status))
            };
            return Err(Error::new(ErrorKind::Internal, format!("the sandbox's init died without a report ({why})")));
        }
    };
    let lim = &spec.limits;
    let (mut exit_code, mut signal) = (None, None);
    if let Some(st) = init.status {
        if libc::WIFEXITED(st) {
            exit_code = Some(libc::WEXITSTATUS(st));
        } else if libc::WIFSIGNALED(st) {
            signal = Some(libc::WTERMSIG(st));
        }
    }
    let oom_killed = usage.oom_kills > 0 || init.killed_by == Some(KilledBy::Memory);
    let cpu_time_exceeded = init.killed_by == Some(KilledBy::CpuTime) || out.stopped == Some(Stop::CpuTime);
    let timed_out = out.stopped == Some(Stop::Timeout);
    let output_limit_exceeded = out.stopped == Some(Stop::OutputLimit);
    let interrupt = match out.stopped {
        Some(Stop::Signal(s)) => Some(s),
        _ => None,
    };
    let not_reported = || Error::new(ErrorKind::Internal, "the command's end was not reported");
    let status = if init.start_failure.is_some() {
        exit_code = None;
        signal = None;
        Status::NotStarted
    } else if timed_out {
        Status::Timeout
    } else if output_limit_exceeded {
        Status::OutputLimit
    } else if cpu_time_exceeded {
        Status::CpuTime
    } else if oom_killed {
        Status::Oom
    } else if interrupt.is_some() {
        Status::Interrupted
    } else if exit_code.is_some() {
        Status::Exited
    } else if signal.is_some() {
        Status::Signaled
    } else {
        return Err(not_reported());
    };
    let code = match status.exit_rule() {
        ExitRule::Fixed(c) => Some(c),
        ExitRule::StartError => init.start_failure.as_ref().map(|f| f.kind.exit_code()),
        ExitRule::Command => exit_code,
        ExitRule::Signal => signal.map(|s| 128 + s),
        ExitRule::CommandOrSignal => exit_code.or(signal.map(|s| 128 + s)).or(interrupt.map(|s| 128 + s)),
    }
    .ok_or_else(not_reported)?;

    let (peak, peak_source) = match (usage.memory_peak, cgroup) {
        (Some(p), Some(kind)) => (p, MemoryPeakSource::from(kind)),
        _ => {
            let maxrss =
                if init.status.is_some() { init.maxrss_kib * 1024 } else { out.rusage.ru_maxrss as u64 * 1024 };
            if init.rss_sum_peak > maxrss {
                (
                    init.rss_sum_peak,
                    if fb.memory_watchdog.is_some() {
                        MemoryPeakSource::SampledAnonShmem
                    } else {
                        MemoryPeakSource::SampledRssSum
                    },
                )
            } else {
                (maxrss, MemoryPeakSource::LargestProcessRss)
            }
        }
    };
    // The init's own figures (it reaped everything) when it reported, else its rusage.
    // A cgroup that counts CPU saw every process; the init's rusage misses those reaped by
    // nobody (their parent ignored SIGCHLD).
    let ((user, system), cpu_source) = match (usage.cpu, cgroup) {
        (Some(c), Some(kind)) => (c, CpuSource::from(kind)),
        _ if init.status.is_some() => ((init.cpu_user, init.cpu_system), CpuSource::ReapedByInit),
        _ => ((secs(out.rusage.ru_utime), secs(out.rusage.ru_stime)), CpuSource::InitWait4),
    };
    let disk_limit_reached = lim.disk.is_some() && init.disk_total > 0 && init.disk_used + 64 * 1024 >= init.disk_total;
    // Without a cgroup the trip is seen by sampling, which can miss by one the task being
    // forked or just reaped: within one of the limit counts as reaching it.
    let pids_limit_reached = usage.pids_limit_hits > 0 || fb.pids_rlimit.is_some_and(|p| init.tasks_peak + 1 >= p);

    let mut limits = BTreeMap::new();
    // (Only a group of some kind holds a limit: `held` is empty without one.)
    let cg = cgroup.map(EnforcedBy::from).unwrap_or(EnforcedBy::NotEnforced);
    let mut rec = |name: Limit, requested: serde_json::Value, by: EnforcedBy| {
        limits.insert(name, LimitRecord { requested, enforced_by: by, trip_detection: None });
    };
    if let Some(m) = lim.memory {
        rec(Limit::Memory, m.into(), if held.memory.is_some() { cg } else { EnforcedBy::Watchdog });
    }
    if let Some(c) = lim.cpus {
        rec(
            Limit::Cpus,
            c.into(),
            if held.cpus.is_some() {
                cg
            } else if fb.cpu_affinity.is_some() {
                EnforcedBy::CpuAffinity
            } else {
                EnforcedBy::NotEnforced
            },
        );
    }
    if let Some(p) = lim.pids {
        rec(Limit::Pids, p.into(), if held.pids.is_some() { cg } else { EnforcedBy::Rlimit });
    }
    if let Some(t) = lim.timeout {
        rec(Limit::Timeout, t.as_secs_f64().into(), EnforcedBy::WallClock);
    }
    if let Some(t) = lim.cpu_time {
        rec(Limit::CpuTime, t.as_secs_f64().into(), if held.cpu_accounting { cg } else { EnforcedBy::Watchdog });
    }
    if let Some(d) = lim.disk {
        rec(Limit::Disk, d.into(), EnforcedBy::TmpfsSize);
    }
    if let Some(o) = lim.output {
        rec(Limit::Output, o.into(), EnforcedBy::OutputPipe);
    }
    if let Some(n) = lim.nofile {
        rec(Limit::Nofile, n.into(), EnforcedBy::Rlimit);
    }
    if fb.cpu_time_watchdog.is_some() {
        // Sampled from /proc: the CPU of a process reaped by nobody (its parent ignores
        // SIGCHLD) is in no parent's counts and is not seen.
        if let Some(r) = limits.get_mut(&Limit::CpuTime) {
            r.trip_detection = Some(TripDetection::SampledMissesUnreaped);
        }
    }
    if fb.pids_rlimit.is_some() {
        if let Some(r) = limits.get_mut(&Limit::Pids) {
            r.trip_detection = Some(TripDetection::Sampled);
        }
    }

    Ok(Report {
        name: None,
        command: spec.argv.clone(),
        status,
        start_error: init.start_failure.as_ref().map(|f| f.message.clone()),
        start_error_kind: init.start_failure.as_ref().map(|f| f.kind),
        error: None,
        error_kind: None,
        exit_code,
        signal,
        polysandbox_exit_code: code,
        wall_time_s: wall.as_secs_f64(),
        wall_time_source: WallTimeSource::Supervisor,
        cpu_user_s: user,
        cpu_system_s: system,
        cpu_total_s: user + system,
        cpu_source,
        memory_peak_bytes: peak,
        memory_peak_source: peak_source,
        oom_killed,
        timed_out,
        cpu_time_exceeded,
        output_limit_exceeded,
        pids_limit_reached,
        disk_limit_reached,
        disk_used_bytes: init.disk_used,
        disk_used_source: if init.disk_total > 0 { DiskUsedSource::ScratchAtEnd } else { DiskUsedSource::NotMeasured },
        layer_xattrs: init.status.is_some().then_some(init.layer_xattrs),
        tasks_peak: (init.tasks_peak > 0).then_some(init.tasks_peak),
        tasks_peak_source: if init.tasks_peak > 0 { TasksPeakSource::Sampled } else { TasksPeakSource::NotMeasured },
        output_bytes: out.output_bytes,
        output_bytes_source: match out.output_bytes {
            Some(_) => OutputBytesSource::OutputPipes,
            None => OutputBytesSource::NotMeasured,
        },
        limits,
        cgroup,
        cgroup_unavailable: cgroup_note,
        rootless,
        host_short: out.host_short.clone(),
        protect: (!spec.protect.is_empty()).then(|| match &init.protected {
            Some((n, why)) => Protect { asked: true, protected: *n, not_protected: why.clone() },
            None => Protect { asked: false, protected: 0, not_protected: Vec::new() },
        }),
        digests_after: spec
            .digest_after
            .iter()
            .zip(init.digests.iter().map(Some).chain(std::iter::repeat(None)))
            .map(|(p, d)| DigestAfter {
                path: p.clone(),
                sha256: d.and_then(|d| d.as_ref().ok().cloned()),
                error: match d {
                    Some(Ok(_)) => None,
                    Some(Err(e)) => Some(e.clone()),
                    None => Some("not read: the run did not end normally".into()),
                },
            })
            .collect(),
    })
}

impl Report {
    /// What polysandbox failed at, as one line: `KIND: ERROR` (e.g. `image: image x is not in
    /// the store`); empty unless the status is `error`.
    pub fn error_line(&self) -> String {
        match (self.error_kind, &self.error) {
            (Some(kind), Some(e)) => format!("{kind}: {e}"),
            (Some(kind), None) => kind.to_string(),
            (None, Some(e)) => e.clone(),
            (None, None) => String::new(),
        }
    }

    /// The record of a run polysandbox itself failed (`status: error`): the command as far as
    /// it is known, what failed, and how long polysandbox ran until it did (`wall`). Nothing
    /// else was measured, and no limit was held.
    pub fn failed(command: Vec<String>, error: &Error, wall: Duration) -> Report {
        Report {
            name: None,
            command,
            status: Status::Error,
            start_error: None,
            start_error_kind: None,
            error: Some(error.message.clone()),
            error_kind: Some(error.kind),
            exit_code: None,
            signal: None,
            polysandbox_exit_code: exit::ERROR,
            wall_time_s: wall.as_secs_f64(),
            wall_time_source: WallTimeSource::UntilFailure,
            cpu_user_s: 0.0,
            cpu_system_s: 0.0,
            cpu_total_s: 0.0,
            cpu_source: CpuSource::NotMeasured,
            memory_peak_bytes: 0,
            memory_peak_source: MemoryPeakSource::NotMeasured,
            oom_killed: false,
            timed_out: false,
            cpu_time_exceeded: false,
            output_limit_exceeded: false,
            pids_limit_reached: false,
            disk_limit_reached: false,
            disk_used_bytes: 0,
            disk_used_source: DiskUsedSource::NotMeasured,
            layer_xattrs: None,
            tasks_peak: None,
            tasks_peak_source: TasksPeakSource::NotMeasured,
            output_bytes: None,
            output_bytes_source: OutputBytesSource::NotMeasured,
            limits: BTreeMap::new(),
            cgroup: None,
            cgroup_unavailable: None,
            rootless: !super::host_root(),
            digests_after: Vec::new(),
            host_short: Vec::new(),
            protect: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::init::StartFailure;
    use super::*;

    /// Records written by `polysandbox run --stats-json` before the record was typed (as root on
    /// a cgroup v1 host with every limit; with `--cgroup-manager none`; a command not found; an
    /// OOM under the watchdog; rootless with no cgroup; a timeout), as they were written.
    const ROOT_V1: &str = r#"{
  "command": [
    "python3",
    "-c",
    "print(1)"
  ],
  "status": "exited",
  "exit_code": 0,
  "signal": null,
  "polysandbox_exit_code": 0,
  "wall_time_s": 0.061849177,
  "cpu_user_s": 0.010531167271588428,
  "cpu_system_s": 0.01055101372841157,
  "cpu_total_s": 0.021082181,
  "memory_peak_bytes": 12484608,
  "memory_peak_source": "cgroup v1 memory controller",
  "oom_killed": false,
  "timed_out": false,
  "cpu_time_exceeded": false,
  "output_limit_exceeded": false,
  "pids_limit_reached": false,
  "disk_limit_reached": false,
  "disk_used_bytes": 0,
  "layer_xattrs": true,
  "tasks_peak": null,
  "output_bytes": 2,
  "limits": {
    "cpu_time_s": {
      "requested": 10.0,
      "enforced_by": "cgroup v1"
    },
    "cpus": {
      "requested": 1.0,
      "enforced_by": "cgroup v1"
    },
    "disk": {
      "requested": 67108864,
      "enforced_by": "tmpfs size"
    },
    "memory": {
      "requested": 268435456,
      "enforced_by": "cgroup v1"
    },
    "nofile": {
      "requested": 256,
      "enforced_by": "rlimit"
    },
    "output": {
      "requested": 1048576,
      "enforced_by": "output pipe"
    },
    "pids": {
      "requested": 64,
      "enforced_by": "cgroup v1"
    },
    "timeout_s": {
      "requested": 30.0,
      "enforced_by": "wall clock"
    }
  },
  "cgroup": "cgroup v1",
  "cgroup_unavailable": null,
  "rootless": false
}"#;
    const OLD: &[&str] = &[
        ROOT_V1,
        r#"{"command":["python3","-c","print(1)"],"status":"exited","exit_code":0,"signal":null,"polysandbox_exit_code":0,"wall_time_s":0.039641413,"cpu_user_s":0.015038,"cpu_system_s":0.004535,"cpu_total_s":0.019573,"memory_peak_bytes":8011776,"memory_peak_source":"largest single process RSS (no memory cgroup)","oom_killed":false,"timed_out":false,"cpu_time_exceeded":false,"output_limit_exceeded":false,"pids_limit_reached":false,"disk_limit_reached":false,"disk_used_bytes":0,"layer_xattrs":true,"tasks_peak":2,"output_bytes":null,"limits":{"cpu_time_s":{"requested":10.0,"enforced_by":"watchdog","trip_detection":"sampled; misses processes reaped by nobody (SIGCHLD ignored)"},"cpus":{"requested":1.0,"enforced_by":"cpu affinity"},"memory":{"requested":268435456,"enforced_by":"watchdog"},"pids":{"requested":64,"enforced_by":"rlimit","trip_detection":"sampled"},"timeout_s":{"requested":30.0,"enforced_by":"wall clock"}},"cgroup":null,"cgroup_unavailable":"cgroups disabled (--cgroup-manager none)","rootless":false}"#,
        r#"{"command":["/no/such"],"status":"not_started","start_error":"/no/such: command not found","exit_code":null,"signal":null,"polysandbox_exit_code":127,"wall_time_s":0.019195109,"cpu_user_s":0.000629,"cpu_system_s":0.0,"cpu_total_s":0.000629,"memory_peak_bytes":524288,"memory_peak_source":"cgroup v1 memory controller","oom_killed":false,"timed_out":false,"cpu_time_exceeded":false,"output_limit_exceeded":false,"pids_limit_reached":false,"disk_limit_reached":false,"disk_used_bytes":0,"layer_xattrs":true,"tasks_peak":null,"output_bytes":null,"limits":{},"cgroup":"cgroup v1","cgroup_unavailable":null,"rootless":false}"#,
        r#"{"command":["python3","-c","import time; x=bytearray(200<<20); time.sleep(1)"],"status":"oom","exit_code":null,"signal":9,"polysandbox_exit_code":122,"wall_time_s":0.098172111,"cpu_user_s":0.014742,"cpu_system_s":0.070309,"cpu_total_s":0.085051,"memory_peak_bytes":72994816,"memory_peak_source":"largest single process RSS (no memory cgroup)","oom_killed":true,"timed_out":false,"cpu_time_exceeded":false,"output_limit_exceeded":false,"pids_limit_reached":false,"disk_limit_reached":false,"disk_used_bytes":0,"layer_xattrs":true,"tasks_peak":2,"output_bytes":null,"limits":{"memory":{"requested":67108864,"enforced_by":"watchdog"}},"cgroup":null,"cgroup_unavailable":"cgroups disabled (--cgroup-manager none)","rootless":false}"#,
        r#"{"command":["sh","-c","echo hi; sleep 0.1"],"status":"exited","exit_code":0,"signal":null,"polysandbox_exit_code":0,"wall_time_s":0.108307476,"cpu_user_s":0.002152,"cpu_system_s":0.0,"cpu_total_s":0.002152,"memory_peak_bytes":4505600,"memory_peak_source":"largest single process RSS (no memory cgroup)","oom_killed":false,"timed_out":false,"cpu_time_exceeded":false,"output_limit_exceeded":false,"pids_limit_reached":false,"disk_limit_reached":false,"disk_used_bytes":0,"layer_xattrs":true,"tasks_peak":2,"output_bytes":null,"limits":{"memory":{"requested":67108864,"enforced_by":"watchdog"},"pids":{"requested":32,"enforced_by":"rlimit","trip_detection":"sampled"},"timeout_s":{"requested":10.0,"enforced_by":"wall clock"}},"cgroup":null,"cgroup_unavailable":"cgroup v1 is not writable for this user (/sys/fs/cgroup/memory/process_api/12fd483ff207ddf4124f27beca973b8b/polysandbox-9995-3674997: Permission denied (os error 13))","rootless":true}"#,
        r#"{"command":["sleep","5"],"status":"timeout","exit_code":null,"signal":9,"polysandbox_exit_code":124,"wall_time_s":1.002720264,"cpu_user_s":0.002597,"cpu_system_s":0.0,"cpu_total_s":0.002597,"memory_peak_bytes":524288,"memory_peak_source":"cgroup v1 memory controller","oom_killed":false,"timed_out":true,"cpu_time_exceeded":false,"output_limit_exceeded":false,"pids_limit_reached":false,"disk_limit_reached":false,"disk_used_bytes":0,"layer_xattrs":true,"tasks_peak":null,"output_bytes":null,"limits":{"timeout_s":{"requested":1.0,"enforced_by":"wall clock"}},"cgroup":"cgroup v1","cgroup_unavailable":null,"rootless":false}"#,
    ];

    /// Fields a record gained after the fixtures were written: absent from them, read with
    /// their defaults.
    const ADDED: &[&str] =
        &["wall_time_source", "cpu_source", "disk_used_source", "tasks_peak_source", "output_bytes_source"];

    /// Every old record reads as the same record: each of its fields is written back as it
    /// was, and nothing else is written but the fields added since.
    #[test]
    fn old_records_read_unchanged() {
        for text in OLD {
            let old: serde_json::Value = serde_json::from_str(text).unwrap();
            let rec: Report = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
            let new = serde_json::to_value(&rec).unwrap();
            let (old, new) = (old.as_object().unwrap(), new.as_object().unwrap());
            for (k, v) in old {
                assert_eq!(new.get(k), Some(v), "{k} changed: {text}");
            }
            for k in new.keys().filter(|k| !old.contains_key(*k)) {
                assert!(ADDED.contains(&k.as_str()), "{k} is written but was not: {text}");
            }
        }
        let rec: Report = serde_json::from_str(ROOT_V1).unwrap();
        assert_eq!(rec.status, Status::Exited);
        assert_eq!(rec.cgroup, Some(CgroupKind::V1));
        assert_eq!(rec.memory_peak_source, MemoryPeakSource::CgroupV1);
        assert_eq!(rec.limits[&Limit::Memory].enforced_by, EnforcedBy::CgroupV1);
        assert_eq!(rec.limits[&Limit::Output].enforced_by, EnforcedBy::OutputPipe);
        let nocg: Report = serde_json::from_str(OLD[1]).unwrap();
        assert_eq!(nocg.limits[&Limit::CpuTime].trip_detection, Some(TripDetection::SampledMissesUnreaped));
        assert_eq!(nocg.limits[&Limit::Pids].trip_detection, Some(TripDetection::Sampled));
        assert_eq!(nocg.limits[&Limit::Cpus].enforced_by, EnforcedBy::CpuAffinity);
        assert_eq!(nocg.memory_peak_source, MemoryPeakSource::LargestProcessRss);
        let not_started: Report = serde_json::from_str(OLD[2]).unwrap();
        assert_eq!(not_started.status, Status::NotStarted);
    }

    /// Records written by this version (as root with every limit; rootless, no cgroup; an
    /// image not in the store; a command that cannot be executed).
    const CURRENT: &[&str] = &[
        r#"{"command":["python3","-c","open(\"/tmp/x\",\"w\").write(\"a\"*100000)"],"status":"exited","exit_code":0,"signal":null,"polysandbox_exit_code":0,"wall_time_s":0.077743622,"wall_time_source":"monotonic clock of the supervisor","cpu_user_s":0.017220638285714285,"cpu_system_s":0.012915478714285715,"cpu_total_s":0.030136117,"cpu_source":"cgroup v1 cpuacct controller","memory_peak_bytes":9605120,"memory_peak_source":"cgroup v1 memory controller","oom_killed":false,"timed_out":false,"cpu_time_exceeded":false,"output_limit_exceeded":false,"pids_limit_reached":false,"disk_limit_reached":false,"disk_used_bytes":102400,"disk_used_source":"statfs of the writable layer at the end","layer_xattrs":true,"tasks_peak":null,"tasks_peak_source":"not measured","output_bytes":0,"output_bytes_source":"supervisor's output pipes","limits":{"cpu_time_s":{"requested":10.0,"enforced_by":"cgroup v1"},"cpus":{"requested":1.0,"enforced_by":"cgroup v1"},"disk":{"requested":67108864,"enforced_by":"tmpfs size"},"memory":{"requested":268435456,"enforced_by":"cgroup v1"},"output":{"requested":1048576,"enforced_by":"output pipe"},"pids":{"requested":64,"enforced_by":"cgroup v1"},"timeout_s":{"requested":30.0,"enforced_by":"wall clock"}},"cgroup":"cgroup v1","cgroup_unavailable":null,"rootless":false}"#,
        r#"{"command":["sh","-c","echo hi; sleep 0.1"],"status":"exited","exit_code":0,"signal":null,"polysandbox_exit_code":0,"wall_time_s":0.112282258,"wall_time_source":"monotonic clock of the supervisor","cpu_user_s":0.003095,"cpu_system_s":0.0,"cpu_total_s":0.003095,"cpu_source":"rusage of the processes the init reaped","memory_peak_bytes":4718592,"memory_peak_source":"largest single process RSS (no memory cgroup)","oom_killed":false,"timed_out":false,"cpu_time_exceeded":false,"output_limit_exceeded":false,"pids_limit_reached":false,"disk_limit_reached":false,"disk_used_bytes":0,"disk_used_source":"statfs of the writable layer at the end","layer_xattrs":true,"tasks_peak":2,"tasks_peak_source":"sampled from /proc by the init's watchdog","output_bytes":null,"output_bytes_source":"not measured","limits":{"cpu_time_s":{"requested":5.0,"enforced_by":"watchdog","trip_detection":"sampled; misses processes reaped by nobody (SIGCHLD ignored)"},"memory":{"requested":67108864,"enforced_by":"watchdog"},"pids":{"requested":32,"enforced_by":"rlimit","trip_detection":"sampled"},"timeout_s":{"requested":10.0,"enforced_by":"wall clock"}},"cgroup":null,"cgroup_unavailable":"cgroup v1 is not writable for this user (/sys/fs/cgroup/memory/process_api/12fd483ff207ddf4124f27beca973b8b/polysandbox-26686-4062709: Permission denied (os error 13))","rootless":true}"#,
        r#"{"command":["true"],"status":"error","error":"image localhost/nosuch:latest is not in the store /var/lib/polysandbox (polysandbox import FILE --tag localhost/nosuch:latest)","error_kind":"image","exit_code":null,"signal":null,"polysandbox_exit_code":125,"wall_time_s":0.000217597,"wall_time_source":"monotonic clock of polysandbox, until it failed","cpu_user_s":0.0,"cpu_system_s":0.0,"cpu_total_s":0.0,"cpu_source":"not measured","memory_peak_bytes":0,"memory_peak_source":"not measured","oom_killed":false,"timed_out":false,"cpu_time_exceeded":false,"output_limit_exceeded":false,"pids_limit_reached":false,"disk_limit_reached":false,"disk_used_bytes":0,"disk_used_source":"not measured","tasks_peak":null,"tasks_peak_source":"not measured","output_bytes":null,"output_bytes_source":"not measured","limits":{},"cgroup":null,"cgroup_unavailable":null,"rootless":false}"#,
        r#"{"command":["/etc/passwd"],"status":"not_started","start_error":"/etc/passwd: Permission denied (os error 13)","start_error_kind":"cannot_execute","exit_code":null,"signal":null,"polysandbox_exit_code":126,"wall_time_s":0.005074274,"wall_time_source":"monotonic clock of the supervisor","cpu_user_s":0.000468,"cpu_system_s":0.0,"cpu_total_s":0.000468,"cpu_source":"rusage of the processes the init reaped","memory_peak_bytes":262144,"memory_peak_source":"cgroup v1 memory controller","oom_killed":false,"timed_out":false,"cpu_time_exceeded":false,"output_limit_exceeded":false,"pids_limit_reached":false,"disk_limit_reached":false,"disk_used_bytes":0,"disk_used_source":"statfs of the writable layer at the end","layer_xattrs":true,"tasks_peak":null,"tasks_peak_source":"not measured","output_bytes":null,"output_bytes_source":"not measured","limits":{},"cgroup":"cgroup v1","cgroup_unavailable":null,"rootless":false}"#,
    ];

    /// A record of this version reads back as exactly itself, its kinds typed.
    #[test]
    fn current_records_round_trip_exactly() {
        for text in CURRENT {
            let old: serde_json::Value = serde_json::from_str(text).unwrap();
            let rec: Report = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(serde_json::to_value(&rec).unwrap(), old);
        }
        let recs: Vec<Report> = CURRENT.iter().map(|t| serde_json::from_str(t).unwrap()).collect();
        assert_eq!((recs[0].cpu_source, recs[0].disk_used_source), (CpuSource::CgroupV1, DiskUsedSource::ScratchAtEnd));
        assert_eq!(
            (recs[1].cpu_source, recs[1].tasks_peak_source),
            (CpuSource::ReapedByInit, TasksPeakSource::Sampled)
        );
        assert_eq!((recs[2].status, recs[2].error_kind), (Status::Error, Some(ErrorKind::Image)));
        assert_eq!(
            (recs[3].status, recs[3].start_error_kind),
            (Status::NotStarted, Some(StartErrorKind::CannotExecute))
        );
    }

    /// An outcome as the supervisor's watch gives it: the init's report, if any, and the stop.
    fn outcome(init: Option<InitReport>, stopped: Option<Stop>) -> Outcome {
        // SAFETY: rusage is plain data; all zero is a valid one.
        let rusage = unsafe { std::mem::zeroed() };
        Outcome {
            init,
            init_status: 0,
            rusage,
            init_running: false,
            stopped,
            output_bytes: None,
            host_short: Vec::new(),
            ended: std::time::Instant::now(),
        }
    }

    /// The init's report of a command that ended with wait status `status`.
    fn ended(status: i32) -> InitReport {
        InitReport { status: Some(status), ..Default::default() }
    }

    /// The record `build` makes of `out`, with no limits asked for.
    fn built(out: Outcome, usage: cgroups::Usage, cgroup: Option<CgroupKind>) -> Result<Report, Error> {
        let spec = Spec::new("/".into(), vec!["cmd".into()]);
        let held = cgroups::Limits::default();
        build(&spec, out, usage, cgroup, &held, &Fallbacks::default(), None, false, Duration::from_millis(5))
    }

    /// Each figure says where it comes from: the cgroup where one counted, else the init's
    /// accounting, else the init's rusage; and "not measured" where there is no figure.
    #[test]
    fn every_figure_names_its_source() {
        let usage = cgroups::Usage { memory_peak: Some(1 << 20), cpu: Some((0.5, 0.25)), ..Default::default() };
        let r = built(outcome(Some(ended(0)), None), usage, Some(CgroupKind::V2)).unwrap();
        assert_eq!((r.cpu_user_s, r.cpu_system_s, r.cpu_total_s), (0.5, 0.25, 0.75));
        assert_eq!(r.cpu_source, CpuSource::CgroupV2);
        assert_eq!(r.memory_peak_source, MemoryPeakSource::CgroupV2);
        assert_eq!(r.wall_time_source, WallTimeSource::Supervisor);
        assert_eq!((r.tasks_peak, r.tasks_peak_source), (None, TasksPeakSource::NotMeasured));
        assert_eq!(r.disk_used_source, DiskUsedSource::NotMeasured);
        assert_eq!((r.output_bytes, r.output_bytes_source), (None, OutputBytesSource::NotMeasured));

        let init = InitReport {
            cpu_user: 1.0,
            tasks_peak: 3,
            disk_used: 4096,
            disk_total: 1 << 20,
            maxrss_kib: 100,
            ..ended(0)
        };
        let mut out = outcome(Some(init), None);
        out.output_bytes = Some(12);
        let r = built(out, Default::default(), None).unwrap();
        assert_eq!((r.cpu_user_s, r.cpu_source), (1.0, CpuSource::ReapedByInit));
        assert_eq!((r.memory_peak_bytes, r.memory_peak_source), (102400, MemoryPeakSource::LargestProcessRss));
        assert_eq!((r.tasks_peak, r.tasks_peak_source), (Some(3), TasksPeakSource::Sampled));
        assert_eq!((r.disk_used_bytes, r.disk_used_source), (4096, DiskUsedSource::ScratchAtEnd));
        assert_eq!((r.output_bytes, r.output_bytes_source), (Some(12), OutputBytesSource::OutputPipes));

        // Killed before it could report: the init's own rusage, nothing of its report.
        let mut out = outcome(None, Some(Stop::Timeout));
        out.rusage.ru_utime.tv_sec = 2;
        let r = built(out, Default::default(), None).unwrap();
        assert_eq!((r.cpu_user_s, r.cpu_source), (2.0, CpuSource::InitWait4));
        assert_eq!(r.disk_used_source, DiskUsedSource::NotMeasured);
        // A cgroup that counts no CPU (v1 without cpuacct) leaves it to the init.
        let r = built(outcome(Some(ended(0)), None), Default::default(), Some(CgroupKind::V1)).unwrap();
        assert_eq!(r.cpu_source, CpuSource::ReapedByInit);
    }

    /// Each enum's variants serialise to the strings the record has always held, read back as
    /// themselves, and `as_str` says the same.
    #[test]
    fn record_strings_are_fixed() {
        fn check<T: Copy + std::fmt::Debug + PartialEq + Serialize + serde::de::DeserializeOwned>(
            all: &[T],
            as_str: fn(T) -> &'static str,
            want: &[&str],
        ) {
            let got: Vec<&str> = all.iter().map(|v| as_str(*v)).collect();
            assert_eq!(got, want);
            for v in all {
                let json = serde_json::to_value(v).unwrap();
                assert_eq!(json, serde_json::Value::from(as_str(*v)), "{v:?}");
                assert_eq!(serde_json::from_value::<T>(json).unwrap(), *v);
            }
        }
        check(
            Status::ALL,
            Status::as_str,
            &[
                "exited",
                "signaled",
                "timeout",
                "oom",
                "cpu_time",
                "output_limit",
                "interrupted",
                "not_started",
                "error",
            ],
        );
        check(StartErrorKind::ALL, StartErrorKind::as_str, &["setup", "cannot_execute", "not_found"]);
        check(ErrorKind::ALL, ErrorKind::as_str, &["usage", "image", "store", "host", "setup", "internal"]);
        check(CgroupKind::ALL, CgroupKind::as_str, &["cgroup v1", "cgroup v2"]);
        check(
            Limit::ALL,
            Limit::as_str,
            &["cpu_time_s", "cpus", "disk", "memory", "nofile", "output", "pids", "timeout_s"],
        );
        check(
            EnforcedBy::ALL,
            EnforcedBy::as_str,
            &[
                "cgroup v1",
                "cgroup v2",
                "rlimit",
                "watchdog",
                "wall clock",
                "tmpfs size",
                "cpu affinity",
                "output pipe",
                "not enforced",
            ],
        );
        check(
            TripDetection::ALL,
            TripDetection::as_str,
            &["sampled", "sampled; misses processes reaped by nobody (SIGCHLD ignored)"],
        );
        check(
            MemoryPeakSource::ALL,
            MemoryPeakSource::as_str,
            &[
                "cgroup v1 memory controller",
                "cgroup v2 memory controller",
                "anonymous and shared memory of the sandbox, sampled",
                "sum of the processes' RSS, sampled",
                "largest single process RSS (no memory cgroup)",
                "not measured",
            ],
        );
        check(
            WallTimeSource::ALL,
            WallTimeSource::as_str,
            &["monotonic clock of the supervisor", "monotonic clock of polysandbox, until it failed"],
        );
        check(
            CpuSource::ALL,
            CpuSource::as_str,
            &[
                "cgroup v1 cpuacct controller",
                "cgroup v2 cpu.stat",
                "rusage of the processes the init reaped",
                "rusage of the init, from wait4",
                "not measured",
            ],
        );
        check(
            TasksPeakSource::ALL,
            TasksPeakSource::as_str,
            &["sampled from /proc by the init's watchdog", "not measured"],
        );
        check(
            DiskUsedSource::ALL,
            DiskUsedSource::as_str,
            &["statfs of the writable layer at the end", "not measured"],
        );
        check(OutputBytesSource::ALL, OutputBytesSource::as_str, &["supervisor's output pipes", "not measured"]);
        // The limits are listed in the order of their names, as they always were.
        let mut names: Vec<&str> = Limit::ALL.iter().map(|l| l.as_str()).collect();
        names.sort();
        assert_eq!(names, Limit::ALL.iter().map(|l| l.as_str()).collect::<Vec<_>>());
    }

    /// The exit-code contract, one row per status: its string in the record, and what
    /// `polysandbox run` exits with. Exhaustive: a new status does not compile until it has a
    /// row here.
    fn contract(s: Status) -> (&'static str, ExitRule) {
        match s {
            Status::Exited => ("exited", ExitRule::Command),
            Status::Signaled => ("signaled", ExitRule::Signal),
            Status::Timeout => ("timeout", ExitRule::Fixed(124)),
            Status::Oom => ("oom", ExitRule::Fixed(122)),
            Status::CpuTime => ("cpu_time", ExitRule::Fixed(121)),
            Status::OutputLimit => ("output_limit", ExitRule::Fixed(120)),
            Status::Interrupted => ("interrupted", ExitRule::CommandOrSignal),
            Status::NotStarted => ("not_started", ExitRule::StartError),
            Status::Error => ("error", ExitRule::Fixed(125)),
        }
    }

    /// The codes of the start errors (`not_started`), exhaustively.
    fn start_contract(k: StartErrorKind) -> (&'static str, i32) {
        match k {
            StartErrorKind::Setup => ("setup", 125),
            StartErrorKind::CannotExecute => ("cannot_execute", 126),
            StartErrorKind::NotFound => ("not_found", 127),
        }
    }

    /// Runs that end with `s`, as records are made of them, each with the code `polysandbox
    /// run` must exit with. (A wait status is N for death by signal N, C << 8 for exit code C.)
    fn runs_ending(s: Status) -> Vec<(Report, i32)> {
        let code = |c: i32| c << 8;
        let ok = |out: Outcome| built(out, Default::default(), None).unwrap();
        match s {
            Status::Exited => {
                vec![(ok(outcome(Some(ended(code(3))), None)), 3), (ok(outcome(Some(ended(0)), None)), 0)]
            }
            Status::Signaled => vec![(ok(outcome(Some(ended(9)), None)), 137)],
            Status::Timeout => vec![
                (ok(outcome(Some(ended(9)), Some(Stop::Timeout))), 124),
                // Killed before its report: still the timeout.
                (ok(outcome(None, Some(Stop::Timeout))), 124),
                // The command's exit after the deadline does not change it.
                (ok(outcome(Some(ended(code(0))), Some(Stop::Timeout))), 124),
            ],
            Status::Oom => {
                let usage = cgroups::Usage { oom_kills: 1, ..Default::default() };
                let watchdog = InitReport { killed_by: Some(KilledBy::Memory), ..ended(9) };
                vec![
                    (built(outcome(Some(ended(9)), None), usage.clone(), Some(CgroupKind::V2)).unwrap(), 122),
                    (ok(outcome(Some(watchdog), None)), 122),
                    // The OOM killer took the init itself.
                    (built(outcome(None, None), usage, Some(CgroupKind::V1)).unwrap(), 122),
                ]
            }
            Status::CpuTime => {
                let watchdog = InitReport { killed_by: Some(KilledBy::CpuTime), ..ended(9) };
                vec![(ok(outcome(Some(ended(9)), Some(Stop::CpuTime))), 121), (ok(outcome(Some(watchdog), None)), 121)]
            }
            Status::OutputLimit => vec![(ok(outcome(Some(ended(9)), Some(Stop::OutputLimit))), 120)],
            Status::Interrupted => vec![
                (ok(outcome(Some(ended(15)), Some(Stop::Signal(15)))), 143),
                (ok(outcome(Some(ended(code(0))), Some(Stop::Signal(2)))), 0),
                (ok(outcome(None, Some(Stop::Signal(1)))), 129),
            ],
            Status::NotStarted => StartErrorKind::ALL
                .iter()
                .map(|&kind| {
                    let failure = StartFailure { kind, message: "why".into() };
                    let init = InitReport { start_failure: Some(failure), ..ended(code(kind.exit_code())) };
                    (ok(outcome(Some(init), None)), start_contract(kind).1)
                })
                .collect(),
            Status::Error => ErrorKind::ALL
                .iter()
                .map(|&kind| (Report::failed(vec!["cmd".into()], &Error::new(kind, "why"), Duration::ZERO), 125))
                .collect(),
        }
    }

    /// For every status: its string, its exit rule, and the code `polysandbox run` exits with
    /// for runs that end so, as the contract says; and the rule gives that same code from the
    /// record alone.
    #[test]
    fn every_status_exits_as_the_contract_says() {
        for &status in Status::ALL {
            let (json, rule) = contract(status);
            assert_eq!(serde_json::to_value(status).unwrap(), json, "{status:?}");
            assert_eq!(status.exit_rule(), rule, "{status:?}");
            let runs = runs_ending(status);
            assert!(!runs.is_empty(), "{status:?}");
            for (rec, want) in runs {
                assert_eq!(rec.status, status, "{rec:?}");
                assert_eq!(rec.polysandbox_exit_code, want, "{rec:?}");
                let by_rule = match rule {
                    ExitRule::Fixed(c) => Some(c),
                    ExitRule::Command => rec.exit_code,
                    ExitRule::Signal => rec.signal.map(|s| 128 + s),
                    // (the signal polysandbox was sent is not in the record)
                    ExitRule::CommandOrSignal => rec.exit_code.or(rec.signal.map(|s| 128 + s)).or(Some(want)),
                    ExitRule::StartError => rec.start_error_kind.map(StartErrorKind::exit_code),
                };
                assert_eq!(by_rule, Some(want), "{rec:?}");
                // Only the statuses that say so carry an error or a start error.
                assert_eq!(rec.start_error_kind.is_some(), status == Status::NotStarted, "{rec:?}");
                assert_eq!(rec.start_error.is_some(), status == Status::NotStarted, "{rec:?}");
                assert_eq!(rec.error_kind.is_some(), status == Status::Error, "{rec:?}");
                assert_eq!(rec.error.is_some(), status == Status::Error, "{rec:?}");
                if status == Status::NotStarted {
                    assert_eq!((rec.exit_code, rec.signal), (None, None), "{rec:?}");
                }
            }
        }
        for &kind in StartErrorKind::ALL {
            let (json, code) = start_contract(kind);
            assert_eq!(serde_json::to_value(kind).unwrap(), json);
            assert_eq!(kind.exit_code(), code, "{kind:?}");
        }
        // The codes are `polysandbox run`'s named ones.
        assert_eq!(
            [
                exit::OUTPUT_LIMIT,
                exit::CPU_TIME,
                exit::OOM,
                exit::TIMEOUT,
                exit::ERROR,
                exit::CANNOT_EXEC,
                exit::NOT_FOUND
            ],
            [120, 121, 122, 124, 125, 126, 127]
        );
    }

    /// A run polysandbox cannot account for is an error of its own, with its kind: the init's
    /// setup failing is the setup's; an init dead without a report, or a report with no end
    /// for the command, is polysandbox's loss.
    #[test]
    fn unaccountable_runs_are_errors_with_a_kind() {
        let setup = InitReport { error: Some("mount: EPERM".into()), ..Default::default() };
        let e = built(outcome(Some(setup), None), Default::default(), None).unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::Setup, "mount: EPERM"));
        let mut died = outcome(None, None);
        died.init_status = 11;
        let e = built(died, Default::default(), None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal, "{e}");
        assert!(e.message.contains("killed by signal 11"), "{e}");
        let e = built(outcome(Some(InitReport::default()), None), Default::default(), None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal, "{e}");
    }

    /// An error record says what failed and measured nothing; it reads back as itself.
    #[test]
    fn error_records_round_trip() {
        let e = Error::new(ErrorKind::Image, "image x is not in the store");
        let rec = Report::failed(vec!["true".into()], &e, Duration::from_millis(1500));
        let json = serde_json::to_value(&rec).unwrap();
        assert_eq!(json["status"], "error");
        assert_eq!(json["error_kind"], "image");
        assert_eq!(json["error"], "image x is not in the store");
        assert_eq!(json["polysandbox_exit_code"], 125);
        assert_eq!(json["wall_time_s"], 1.5);
        assert_eq!(json["wall_time_source"], "monotonic clock of polysandbox, until it failed");
        assert_eq!(json["cpu_source"], "not measured");
        assert_eq!(json["memory_peak_source"], "not measured");
        assert!(json.get("start_error").is_none() && json.get("layer_xattrs").is_none(), "{json}");
        assert_eq!(json["limits"], serde_json::json!({}));
        assert_eq!(rec.error_line(), "image: image x is not in the store");
        let back: Report = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
    }
}
