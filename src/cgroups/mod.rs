//! Cgroups: one sandbox, one cgroup, with its memory, pids and CPU limits, and the usage it
//! reports. Two backends, chosen by what the machine offers:
//!
//! - `v2`: the unified hierarchy. As root, under `/sys/fs/cgroup/polysandbox`; rootless, inside
//!   a delegated subtree (the closest writable ancestor of our own cgroup that has controllers).
//!   The child is started directly in its cgroup with `CLONE_INTO_CGROUP`.
//! - `v1`: one directory per controller hierarchy (legacy and hybrid hosts), nested under the
//!   cgroup polysandbox itself runs in, so an outer job's limits still hold. The group is made
//!   while the child builds its root filesystem, and the child moves itself in before it starts
//!   the command (`Group::self_move_fds`), so nothing of the command runs outside it.
//!
//! On a hybrid host (v1 controllers plus an empty cgroup2 tree) the v1 backend is used: the
//! controllers are where the limits are. Where neither is usable (rootless on v1, no
//! delegation) there is no cgroup, and the sandbox falls back to rlimits and its own watchdog.
//!
//! Each controller has its own file (memory, pids, cpu) that knows its v1 and v2 files.

pub mod cpu;
pub mod memory;
pub mod pids;
mod v1;
mod v2;

use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The kind of cgroup hierarchy a sandbox's group was made in: `"cgroup v1"` or `"cgroup v2"`
/// in the usage record, strings that never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CgroupKind {
    #[serde(rename = "cgroup v1")]
    V1,
    #[serde(rename = "cgroup v2")]
    V2,
}

impl CgroupKind {
    /// Every variant, in declaration order.
    pub const ALL: &'static [CgroupKind] = &[CgroupKind::V1, CgroupKind::V2];

    /// The string the record holds for this kind.
    pub const fn as_str(self) -> &'static str {
        match self {
            CgroupKind::V1 => "cgroup v1",
            CgroupKind::V2 => "cgroup v2",
        }
    }
}

impl std::fmt::Display for CgroupKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a sandbox asks of its cgroup.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    pub memory: Option<u64>,
    pub cpus: Option<f64>,
    pub pids: Option<u64>,
    /// Count the group's CPU time (for `--cpu-time`): v1 then makes a cpuacct group too; v2
    /// always counts.
    pub cpu_accounting: bool,
}

/// What the cgroup measured.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub memory_peak: Option<u64>,
    pub oom_kills: u64,
    pub pids_limit_hits: u64,
    /// CPU seconds (user, system) of every process that ran in the group, those reaped by
    /// nobody (a parent ignoring SIGCHLD) included; where the group counts them.
    pub cpu: Option<(f64, f64)>,
}

/// Which hierarchy to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Auto,
    V1,
    V2,
    None,
}

impl std::str::FromStr for Manager {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Manager::Auto),
            "v1" | "cgroupfs-v1" => Ok(Manager::V1),
            "v2" | "cgroupfs-v2" => Ok(Manager::V2),
            "none" | "disabled" => Ok(Manager::None),
            _ => Err(format!("invalid cgroup manager '{s}': expected auto, v1, v2 or none")),
        }
    }
}

/// A live cgroup of one sandbox. Dropping it removes it.
pub trait Group {
    /// Its hierarchy, for the usage record.
    fn kind(&self) -> CgroupKind;
    /// Which of the requested limits this group enforces.
    fn enforces(&self) -> &Limits;
    /// A directory fd for `CLONE_INTO_CGROUP`, where the backend supports it.
    fn clone_into_fd(&self) -> Option<i32>;
    /// Moves `pid` in (for backends that cannot start it there).
    fn attach(&self, pid: i32) -> io::Result<()>;
    fn usage(&self) -> Usage;
    /// CPU seconds (user + system) used so far by the group, where it counts them: cheap
    /// enough to be read every few milliseconds (`--cpu-time`).
    fn cpu_seconds(&self) -> Option<f64> {
        None
    }
    /// Moves `pid` (an init that has reported and is only tearing down) out of the group, so
    /// that the group can be removed without waiting for it.
    fn park(&self, pid: i32);
    /// Write-only fds with which a single-threaded child moves *itself* in (`enter`) and out
    /// (`leave`) by writing "0", where the backend has them (v1 `tasks` files). Opened by us,
    /// so the kernel checks our credentials, not the child's. A task that moves itself skips
    /// the global lock `attach` and `park` take (a moved thread group needs
    /// cgroup_threadgroup_rwsem, whose write side waits for an RCU grace period: 1-25 ms each
    /// here, the largest single cost of a v1 start). The fds are close-on-exec, and the
    /// command closes every fd above 2 besides: nothing inside can keep one to leave its group.
    fn self_move_fds(&self) -> io::Result<Option<SelfMove>> {
        Ok(None)
    }
    /// The group's CPU quota file opened for writing, and what lifts the quota when written to
    /// it (`None` without a quota). Killed processes of a group throttled by its quota cannot
    /// finish exiting until the group runs again (a fork bomb at its `--cpus` stayed for
    /// minutes, SIGKILL pending): every path that ends a sandbox lifts the quota first, the
    /// init too when the supervisor is gone, by this fd.
    fn cpu_release(&self) -> Option<(std::os::fd::OwnedFd, &'static str)> {
        None
    }
    /// Kills every process still in the group and removes it.
    fn destroy(&mut self);
}

/// Lifts the CPU quota of a group (by the fd of [`Group::cpu_release`]). Cannot fail in a way
/// that matters: a group already gone has nothing left to end.
pub fn release_cpu(release: &Option<(std::os::fd::OwnedFd, &'static str)>) {
    if let Some((fd, value)) = release {
        use std::os::fd::AsRawFd;
        // SAFETY: a write of a short buffer to an fd we hold.
        unsafe { libc::write(fd.as_raw_fd(), value.as_ptr().cast(), value.len()) };
    }
}

/// The quota file of a group's cpu controller, if it has one, and what lifts it.
pub(crate) fn quota_file(dir: &Path) -> Option<(&'static str, &'static str)> {
    [("cpu.cfs_quota_us", "-1"), ("cpu.max", "max")].into_iter().find(|(f, _)| dir.join(f).exists())
}

/// See [`Group::self_move_fds`].
pub struct SelfMove {
    pub enter: Vec<std::os::fd::OwnedFd>,
    pub leave: Vec<std::os::fd::OwnedFd>,
    /// Where the init moves once the command is started: out of the group the CPU quota
    /// throttles (the command's processes stay in it), so that the init always has the CPU to
    /// end them, whatever they do with their share.
    pub after_spawn: Vec<std::os::fd::OwnedFd>,
}

/// Opens `dir/file` write-only (close-on-exec).
pub(crate) fn open_write(dir: &Path, file: &str) -> io::Result<std::os::fd::OwnedFd> {
    let p = dir.join(file);
    fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .map(std::os::fd::OwnedFd::from)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

/// Why no cgroup could be had, for the "not enforced by cgroup" note.
#[derive(Debug)]
pub struct Unavailable(pub String);

/// The backend a sandbox's cgroup will come from, chosen from the mounts (read once).
pub struct Backend {
    manager: Manager,
    mounts: Mounts,
}

/// Looks at what the machine offers for `manager`.
pub fn choose(manager: Manager) -> Backend {
    let mounts =
        if manager == Manager::None { Mounts { v1: Vec::new(), v2: None, own: Vec::new() } } else { Mounts::read() };
    Backend { manager, mounts }
}

impl Backend {
    /// Whether the group will be v2, which starts the child in it (`CLONE_INTO_CGROUP`): then
    /// it must exist before the clone. A v1 group can be made while the child gets ready.
    pub fn clones_into(&self) -> bool {
        match self.manager {
            Manager::V2 => true,
            Manager::Auto => self.mounts.unified_is_root(),
            Manager::V1 | Manager::None => false,
        }
    }

    /// Creates the cgroup for one sandbox, or says why none can be had.
    pub fn create(&self, limits: &Limits) -> Result<Box<dyn Group>, Unavailable> {
        let (mounts, name) = (&self.mounts, own_name());
        match self.manager {
            Manager::None => Err(Unavailable("cgroups disabled (--cgroup-manager none)".into())),
            Manager::V1 => v1::create(mounts, &name, limits),
            Manager::V2 => v2::create(mounts, &name, limits),
            // Hybrid and v1 hosts keep their controllers in v1; a v2 group there is used only
            // when v1 is unusable (its limits then fall back per limit, see `Group::enforces`).
            Manager::Auto if mounts.unified_is_root() => v2::create(mounts, &name, limits),
            Manager::Auto => {
                v1::create(mounts, &name, limits).or_else(|e1| v2::create(mounts, &name, limits).map_err(|_| e1))
            }
        }
    }
}

/// Whether a rootless sandbox would get a cgroup for its limits, found as one would be (a
/// delegated cgroup v2 subtree), without making one: `Err` says why not.
pub fn rootless_delegation() -> Result<(), Unavailable> {
    v2::parent(&Mounts::read()).map(|_| ())
}

/// What names our cgroup: `<pid>-<start time>`, so that a later run can tell a stale one (its
/// owner was SIGKILLed) from a live one.
fn own_name() -> String {
    let pid = std::process::id();
    format!("{pid}-{}", start_time(pid).unwrap_or(0))
}

/// Whether the process that named a group `<pid>-<start>` still runs: the pid exists and
/// started then (not a later process under a reused pid).
fn alive(pid: u32, start: u64) -> bool {
    let Ok(pid_t) = i32::try_from(pid) else { return false };
    if pid_t == 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks. A pid that does not exist costs no /proc read.
    if unsafe { libc::kill(pid_t, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return false;
    }
    start_time(pid) == Some(start)
}

fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}

/// Creates `parent/name` (v1: `parent` is the cgroup we run in, one hierarchy), after removing
/// the stale groups there.
///
/// `parent` is often a cgroup of one command (a CI step, a Slurm job, a systemd scope) that its
/// owner removes afterwards, which our leftovers would prevent. Only a SIGKILLed run leaves
/// one, and the next run in the same place removes it; for the next run *elsewhere* to find it,
/// each parent is listed in a registry (one symlink per parent, so listing costs one syscall
/// when already listed), and the first run in a new parent sweeps every other listed one.
///
/// `sweep`: whether to sweep `parent` first (v1 sweeps only the memory hierarchy, see
/// `v1::create`). Returns the new group and the names of the stale groups removed.
pub(crate) fn make_child(parent: &Path, name: &str, sweep: bool) -> io::Result<(PathBuf, Vec<String>)> {
    let removed = if sweep { sweep_stale(parent) } else { Vec::new() };
    let dir = parent.join(name);
    fs::create_dir(&dir).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    // Listed only once we could make a group there: a cgroup we cannot write is not ours to sweep.
    if register(parent) {
        sweep_registered(parent);
    }
    Ok((dir, removed))
}

/// The registry of parents: root's in /run, a user's in their runtime directory.
fn registry() -> Option<PathBuf> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return Some(PathBuf::from("/run/polysandbox/cgroups"));
    }
    std::env::var_os("XDG_RUNTIME_DIR").map(|d| PathBuf::from(d).join("polysandbox/cgroups"))
}

/// Lists `parent` in the registry; true if it was not listed yet. Best effort: a registry that
/// cannot be written costs only the cleanup elsewhere.
fn register(parent: &Path) -> bool {
    use sha2::Digest;
    let Some(reg) = registry() else { return false };
    let key: String =
        sha2::Sha256::digest(parent.as_os_str().as_encoded_bytes())[..12].iter().map(|b| format!("{b:02x}")).collect();
    let link = reg.join(key);
    match std::os::unix::fs::symlink(parent, &link) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(&reg).is_ok() && std::os::unix::fs::symlink(parent, &link).is_ok()
        }
        Err(_) => false,
    }
}

/// Sweeps every listed parent but `me`; drops the entries of parents that no longer exist.
fn sweep_registered(me: &Path) {
    let Some(reg) = registry() else { return };
    let Ok(entries) = fs::read_dir(&reg) else { return };
    for e in entries.flatten() {
        let Ok(parent) = fs::read_link(e.path()) else { continue };
        if parent == me {
            continue;
        }
        if parent.is_dir() {
            sweep_stale(&parent);
            // (each hierarchy's parent is listed, so each is swept in full here)
        } else {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Sweeps every cgroup of every mounted hierarchy, listed or not (e.g. groups left by an older
/// version, or after /run was cleared), and removes the empty `polysandbox` parents older
/// versions made in v1 hierarchies. For `polysandbox prune`. Returns how many groups went.
pub fn sweep_everywhere() -> usize {
    fn walk(dir: &Path, depth: usize, v1: bool, removed: &mut usize) {
        *removed += sweep_stale(dir).len();
        if depth == 0 {
            return;
        }
        let Ok(entries) = fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let name = e.file_name();
            if !e.file_type().is_ok_and(|t| t.is_dir()) || parse_name(&name.to_string_lossy()).is_some() {
                continue;
            }
            walk(&e.path(), depth - 1, v1, removed);
            if v1 && name == "polysandbox" {
                let _ = fs::remove_dir(e.path());
            }
        }
    }
    let m = Mounts::read();
    let mut removed = 0;
    for (root, _) in &m.v1 {
        walk(root, 8, true, &mut removed);
    }
    if let Some(root) = &m.v2 {
        walk(root, 8, false, &mut removed);
    }
    removed
}

/// `polysandbox-<pid>-<start>` (v1) or `ps-<pid>-<start>` (v2, under a `polysandbox` parent):
/// the owner's pid and start time.
fn parse_name(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix("polysandbox-").or_else(|| name.strip_prefix("ps-"))?;
    let (pid, start) = rest.split_once('-')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Removes the groups in `parent` of polysandbox processes that no longer exist (SIGKILLed
/// before they could clean up). Live ones are left alone. Returns the names of those that went.
pub(crate) fn sweep_stale(parent: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(parent) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((pid, start)) = parse_name(&name) else { continue };
        if !alive(pid, start) {
            kill_and_remove(&e.path());
            removed.push(name);
        }
    }
    removed
}

/// Removes the groups `names` (stale, found so in another hierarchy) from `parent`.
pub(crate) fn remove_stale(parent: &Path, names: &[String]) {
    for n in names {
        kill_and_remove(&parent.join(n));
    }
}

/// SIGKILLs every process listed in `dir/cgroup.procs`, then removes `dir`, retrying while the
/// processes die.
pub(crate) fn kill_and_remove(dir: &Path) {
    // Unthrottled first: a throttled group's killed processes cannot finish exiting.
    if let Some((file, value)) = quota_file(dir) {
        let _ = write(dir, file, value);
    }
    for _ in 0..200 {
        if fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        if let Ok(procs) = fs::read_to_string(dir.join("cgroup.procs")) {
            for p in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                // SAFETY: plain kill(2).
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The cgroup mounts and our own place in each hierarchy.
pub(crate) struct Mounts {
    /// (mount point, controllers) of each v1 hierarchy.
    v1: Vec<(PathBuf, Vec<String>)>,
    /// The cgroup2 mount point, if any.
    v2: Option<PathBuf>,
    /// /proc/self/cgroup: (hierarchy controllers, path)
    own: Vec<(String, String)>,
}

impl Mounts {
    fn read() -> Mounts {
        let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        Mounts::parse(&info, &own)
    }

    /// The cgroup mounts in `mountinfo` (proc_pid_mountinfo(5)) and our own groups in
    /// `self_cgroup` (`/proc/self/cgroup`: `id:controllers:path`, controllers empty for v2).
    fn parse(mountinfo: &str, self_cgroup: &str) -> Mounts {
        let mut m = Mounts { v1: Vec::new(), v2: None, own: Vec::new() };
        {
            for line in mountinfo.lines() {
                let Some((pre, post)) = line.split_once(" - ") else { continue };
                let mut post = post.split(' ');
                let fstype = post.next().unwrap_or("");
                let _source = post.next();
                let opts = post.next().unwrap_or("");
                let mountpoint = pre.split(' ').nth(4).unwrap_or("");
                match fstype {
                    "cgroup2" if m.v2.is_none() => m.v2 = Some(PathBuf::from(mountpoint)),
                    "cgroup" => {
                        let ctrls = opts
                            .split(',')
                            .filter(|o| matches!(*o, "memory" | "pids" | "cpu" | "cpuacct" | "cpuset"))
                            .map(String::from)
                            .collect::<Vec<_>>();
                        if !ctrls.is_empty() {
                            m.v1.push((PathBuf::from(mountpoint), ctrls));
                        }
                    }
                    _ => {}
                }
            }
        }
        {
            for line in self_cgroup.lines() {
                let mut it = line.splitn(3, ':');
                let (_, ctrls, path) = (it.next(), it.next().unwrap_or(""), it.next().unwrap_or("/"));
                m.own.push((ctrls.to_string(), path.to_string()));
            }
        }
        m
    }

    /// A pure v2 host: cgroup2 is mounted at /sys/fs/cgroup and no v1 controllers are.
    fn unified_is_root(&self) -> bool {
        self.v1.is_empty() && self.v2.is_some()
    }

    /// The v1 hierarchy (mount point, our path in it) that carries `controller`.
    fn v1_for(&self, controller: &str) -> Option<(PathBuf, String)> {
        let (mp, _) = self.v1.iter().find(|(_, c)| c.iter().any(|c| c == controller))?;
        let path = self
            .own
            .iter()
            .find(|(c, _)| c.split(',').any(|c| c == controller))
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| "/".into());
        Some((mp.clone(), path))
    }

    /// Our path in the v2 hierarchy.
    fn v2_own(&self) -> Option<(PathBuf, String)> {
        let mp = self.v2.clone()?;
        let path = self.own.iter().find(|(c, _)| c.is_empty()).map(|(_, p)| p.clone())?;
        Some((mp, path))
    }
}

/// Writes a cgroup control file.
pub(crate) fn write(dir: &Path, file: &str, value: &str) -> io::Result<()> {
    fs::write(dir.join(file), value).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.join(file).display())))
}

/// Reads `key value` lines of a cgroup stat file.
pub(crate) fn read_key(dir: &Path, file: &str, key: &str) -> Option<u64> {
    let s = fs::read_to_string(dir.join(file)).ok()?;
    s.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

pub(crate) fn read_u64(dir: &Path, file: &str) -> Option<u64> {
    fs::read_to_string(dir.join(file)).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    //! The cgroup files' parsing, on temporary directories standing for a group (as youki's
    //! libcgroups tests do), and the mount table of each host layout.
    use super::*;

    /// A fresh directory with `files` (name, content) in it.
    fn group(files: &[(&str, &str)]) -> PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "psb-cgroup-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        for (name, content) in files {
            fs::write(d.join(name), content).unwrap();
        }
        d
    }

    #[test]
    fn v2_cpu_stat_gives_user_system_and_total_scaled_to_the_total() {
        let d = group(&[("cpu.stat", "usage_usec 3000000\nuser_usec 1000000\nsystem_usec 1000000\nnr_periods 0\n")]);
        assert_eq!(cpu::usage_v2(&d), Some((1.5, 1.5, 3.0)));
        // No split sampled: all user.
        let d2 = group(&[("cpu.stat", "usage_usec 500000\n")]);
        assert_eq!(cpu::usage_v2(&d2), Some((0.5, 0.0, 0.5)));
        // No usage line, or no file: no figure (never zero).
        let d3 = group(&[("cpu.stat", "user_usec 5\n")]);
        assert_eq!(cpu::usage_v2(&d3), None);
        let d4 = group(&[]);
        assert_eq!(cpu::usage_v2(&d4), None);
        for d in [d, d2, d3, d4] {
            fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn v1_cpuacct_total_is_exact_and_the_split_follows_the_ticks() {
        let d = group(&[
            ("cpuacct.usage", "4000000000\n"),
            ("cpuacct.usage_user", "300\n"),
            ("cpuacct.usage_sys", "100\n"),
        ]);
        assert_eq!(cpu::usage_v1(&d), Some((3.0, 1.0)));
        assert_eq!(cpu::total_v1(&d), Some(4.0));
        fs::write(d.join("cpuacct.usage"), "garbage").unwrap();
        assert_eq!(cpu::usage_v1(&d), None);
        assert_eq!(cpu::total_v1(&d), None);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn memory_peak_and_oom_kills_in_both_versions() {
        let v2 = group(&[
            ("memory.peak", "1048576\n"),
            ("memory.events", "low 0\nhigh 0\nmax 4\noom 2\noom_kill 1\noom_group_kill 0\n"),
        ]);
        assert_eq!(memory::usage_v2(&v2), (Some(1 << 20), 1));
        // Before Linux 5.19 there is no memory.peak: no figure, not zero.
        fs::remove_file(v2.join("memory.peak")).unwrap();
        assert_eq!(memory::usage_v2(&v2), (None, 1));
        let v1 = group(&[
            ("memory.max_usage_in_bytes", "2097152\n"),
            ("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"),
        ]);
        assert_eq!(memory::usage_v1(&v1), (Some(2 << 20), 3));
        // "oom" is not "oom_kill": keys match whole.
        let v2b = group(&[("memory.events", "oom 5\n")]);
        assert_eq!(memory::usage_v2(&v2b), (None, 0));
        for d in [v2, v1, v2b] {
            fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn limits_are_written_in_each_versions_files() {
        let v2 = group(&[("memory.swap.max", "max")]);
        memory::set_v2(&v2, 1 << 30).unwrap();
        cpu::set_v2(&v2, 1.5).unwrap();
        pids::set(&v2, 64).unwrap();
        let read = |d: &Path, f: &str| fs::read_to_string(d.join(f)).unwrap();
        assert_eq!(
            (read(&v2, "memory.max"), read(&v2, "memory.swap.max"), read(&v2, "cpu.max"), read(&v2, "pids.max")),
            ("1073741824".into(), "0".into(), "150000 100000".into(), "64".into())
        );
        // v1: memsw only where swap accounting exists; a tiny --cpus still gets 1 ms.
        let v1 = group(&[]);
        memory::set_v1(&v1, 4096).unwrap();
        cpu::set_v1(&v1, 0.001).unwrap();
        assert!(!v1.join("memory.memsw.limit_in_bytes").exists());
        assert_eq!(
            (read(&v1, "memory.limit_in_bytes"), read(&v1, "cpu.cfs_period_us"), read(&v1, "cpu.cfs_quota_us")),
            ("4096".into(), "100000".into(), "1000".into())
        );
        let pe = group(&[("pids.events", "max 7\n")]);
        assert_eq!(pids::limit_hits(&pe), 7);
        let missing = v1.join("no/such/dir");
        assert!(write(&missing, "pids.max", "1").unwrap_err().to_string().contains("no/such/dir/pids.max"));
        for d in [v2, v1, pe] {
            fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn stale_group_names_carry_the_owners_pid_and_start() {
        assert_eq!(parse_name("polysandbox-123-456"), Some((123, 456)));
        assert_eq!(parse_name("ps-9-10"), Some((9, 10)));
        assert_eq!(parse_name("ps-9"), None);
        assert_eq!(parse_name("user.slice"), None);
        assert_eq!(parse_name("polysandbox-x-1"), None);
    }

    /// Debian 12's hybrid layout (this machine's): v1 controllers, and cgroup2 at unified/.
    const HYBRID: &str = "\
25 30 0:22 / /sys fs rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
28 25 0:25 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
29 28 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
31 28 0:28 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,memory
32 28 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,cpu,cpuacct
33 28 0:30 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,pids
34 28 0:31 / /sys/fs/cgroup/freezer rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,freezer
";
    const HYBRID_SELF: &str = "\
12:pids:/user.slice/user-0.slice/session-1.scope
5:cpu,cpuacct:/user.slice
4:memory:/user.slice/user-0.slice/session-1.scope
1:name=systemd:/user.slice/user-0.slice/session-1.scope
0::/user.slice/user-0.slice/session-1.scope
";

    #[test]
    fn the_mount_table_of_a_hybrid_host() {
        let m = Mounts::parse(HYBRID, HYBRID_SELF);
        assert!(!m.unified_is_root());
        assert_eq!(
            m.v1_for("memory"),
            Some((PathBuf::from("/sys/fs/cgroup/memory"), "/user.slice/user-0.slice/session-1.scope".into()))
        );
        assert_eq!(m.v1_for("cpuacct"), Some((PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"), "/user.slice".into())));
        // freezer is not one polysandbox uses; name=systemd is no controller.
        assert_eq!(m.v1_for("freezer"), None);
        assert_eq!(
            m.v2_own(),
            Some((PathBuf::from("/sys/fs/cgroup/unified"), "/user.slice/user-0.slice/session-1.scope".into()))
        );
    }

    #[test]
    fn the_mount_table_of_a_unified_host_and_of_none() {
        let unified = "35 25 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
        let m = Mounts::parse(unified, "0::/user.slice/user-1000.slice/session-3.scope\n");
        assert!(m.unified_is_root());
        assert_eq!(m.v1_for("memory"), None);
        assert_eq!(m.v2_own().unwrap().0, PathBuf::from("/sys/fs/cgroup"));
        // Mounted, but we are in no v2 group (a v1-only /proc/self/cgroup): no own path.
        let m = Mounts::parse(unified, "4:memory:/\n");
        assert_eq!(m.v2_own(), None);
        // Nothing mounted (a container without /sys/fs/cgroup), or unreadable lines.
        let m = Mounts::parse("garbage without separator\n", "");
        assert!(!m.unified_is_root() && m.v2_own().is_none() && m.v1_for("pids").is_none());
    }
}
