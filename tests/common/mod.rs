//! Shared test fixtures: a busybox rootfs (root-owned, and a copy owned by the unprivileged
//! test user), the probe program inside it, and a runner that starts polysandbox either as
//! root or as that user, with no capabilities and no cgroup delegated to it.
#![allow(dead_code)]

pub mod eval;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The unprivileged user the tests run as (created by .ci/setup).
pub const TEST_USER: &str = "psbtest";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Root,
    User,
}

pub struct Fixtures {
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub rootfs_root: PathBuf,
    pub rootfs_user: PathBuf,
    pub uid: u32,
    pub gid: u32,
}

fn sh(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn id_of(flag: &str) -> u32 {
    let out = Command::new("id").args([flag, TEST_USER]).output().expect("id");
    assert!(
        out.status.success(),
        "the unprivileged test user '{TEST_USER}' does not exist: run `bash .ci/setup` (it creates it), or `useradd -m {TEST_USER}`"
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Builds the fixtures once per test binary. Everything lives under one world-traversable
/// directory so that the test user can reach the binary and its own rootfs.
pub fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        // Fixtures of earlier test runs whose process is gone (there is no teardown hook).
        for e in std::fs::read_dir(std::env::temp_dir()).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("polysandbox-tests-") {
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    // A run killed mid-test can leave its small filesystems mounted there.
                    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
                    let prefix = format!("{}/", e.path().display());
                    let mut under: Vec<&str> =
                        mounts.lines().filter_map(|l| l.split(' ').nth(1)).filter(|m| m.starts_with(&prefix)).collect();
                    under.sort_by_key(|m| std::cmp::Reverse(m.len()));
                    for m in under {
                        let _ = Command::new("umount").args(["-l", m]).status();
                    }
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = std::env::temp_dir().join(format!("polysandbox-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = dir.join("polysandbox");
        std::fs::copy(env!("CARGO_BIN_EXE_polysandbox"), &bin).unwrap();
        let probe = dir.join("probe");
        sh(Command::new("gcc").args(["-static", "-O1", "-o"]).arg(&probe).arg(root.join("tests/fixtures/probe.c")));
        let (uid, gid) = if is_root() { (id_of("-u"), id_of("-g")) } else { (0, 0) };
        let rootfs_root = dir.join("rootfs-root");
        let rootfs_user = dir.join("rootfs-user");
        let recipe = root.join("rootfs/busybox.sh");
        for (dest, owner) in [(&rootfs_root, None), (&rootfs_user, is_root().then_some(TEST_USER))] {
            let mut c = Command::new("sh");
            c.arg(&recipe).arg(dest);
            if let Some(o) = owner {
                c.arg(o);
            }
            sh(&mut c);
            let p = dest.join("bin/probe");
            std::fs::copy(&probe, &p).unwrap();
            if owner.is_some() {
                std::os::unix::fs::chown(&p, Some(uid), Some(gid)).unwrap();
            }
        }
        Fixtures { dir, bin, rootfs_root, rootfs_user, uid, gid }
    })
}

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The modes to test in: root and the unprivileged user when the tests run as root (as CI
/// does), else only the caller's own unprivileged mode.
pub fn modes() -> Vec<Mode> {
    if is_root() {
        vec![Mode::Root, Mode::User]
    } else {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| skip("the root half of every test in this binary", "not running as root"));
        vec![Mode::User]
    }
}

impl Mode {
    pub fn rootfs(self) -> &'static Path {
        let f = fixtures();
        match self {
            Mode::Root => &f.rootfs_root,
            Mode::User => &f.rootfs_user,
        }
    }

    /// A command that runs `polysandbox` in this mode.
    pub fn command(self) -> Command {
        self.command_of(&fixtures().bin)
    }

    /// A command that runs the polysandbox binary `bin` in this mode.
    pub fn command_of(self, bin: &Path) -> Command {
        let f = fixtures();
        match self {
            Mode::User if is_root() => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={}", f.uid))
                    .arg(format!("--regid={}", f.gid))
                    .arg("--clear-groups")
                    .arg("--inh-caps=-all")
                    .arg(bin);
                c.env("HOME", "/tmp");
                // Where the user has a delegated cgroup v2 subtree (as systemd gives one, and
                // the arm64 VM's pure-v2 boot does), its processes start in a leaf of it.
                if let Some(leaf) = user_cgroup() {
                    use std::os::unix::process::CommandExt;
                    let procs = leaf.join("cgroup.procs");
                    // SAFETY: only a write(2) to a file between fork and exec.
                    unsafe {
                        c.pre_exec(move || std::fs::write(&procs, "0"));
                    }
                }
                c
            }
            _ => Command::new(bin),
        }
    }

    /// `polysandbox run --rootfs <rootfs> OPTS -- CMD...`, with a safety timeout.
    pub fn run(self, opts: &[&str], cmd: &[&str]) -> Output {
        self.run_stdin(opts, cmd, Stdio::null())
    }

    pub fn run_stdin(self, opts: &[&str], cmd: &[&str], stdin: Stdio) -> Output {
        let mut c = self.command();
        c.arg("run").arg("--rootfs").arg(self.rootfs());
        if !opts.iter().any(|o| o.starts_with("--timeout")) {
            c.arg("--timeout=60s");
        }
        c.args(opts).arg("--").args(cmd).stdin(stdin);
        c.output().expect("run polysandbox")
    }

    /// Runs with `--stats-json` and returns (output, usage record).
    pub fn run_stats(self, opts: &[&str], cmd: &[&str]) -> (Output, serde_json::Value) {
        let path = self.writable_file("stats.json");
        let flag = format!("--stats-json={}", path.display());
        let mut all: Vec<&str> = opts.to_vec();
        all.push(&flag);
        let out = self.run(&all, cmd);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        let v = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("{self:?}: no usage record ({e}); stderr: {}", String::from_utf8_lossy(&out.stderr))
        });
        (out, v)
    }

    /// A fresh, empty file in the fixtures directory that this mode's user may write.
    pub fn writable_file(self, name: &str) -> PathBuf {
        let f = fixtures();
        let path = f.dir.join(format!("{}-{name}", unique()));
        std::fs::write(&path, "").unwrap();
        if self == Mode::User && is_root() {
            std::os::unix::fs::chown(&path, Some(f.uid), Some(f.gid)).unwrap();
        }
        path
    }

    /// A fresh directory that this mode's user owns, removed when the test passes (kept to look
    /// at when it fails): for the heavy ones, image stores and builds, which would otherwise
    /// stay until the next test binary starts and add up on a shared CI disk.
    pub fn scratch_dir(self, name: &str) -> Scratch {
        Scratch(self.owned_dir(name))
    }

    /// A fresh directory that this mode's user owns.
    pub fn owned_dir(self, name: &str) -> PathBuf {
        let f = fixtures();
        let path = f.dir.join(format!("{}-{name}", unique()));
        std::fs::create_dir_all(&path).unwrap();
        if self == Mode::User && is_root() {
            std::os::unix::fs::chown(&path, Some(f.uid), Some(f.gid)).unwrap();
        }
        path
    }
}

/// See [`Mode::scratch_dir`].
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            // Best effort: what stays is removed when the next test binary starts.
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The leaf of a cgroup v2 subtree delegated to the test user, if the host has one
/// (`POLYSANDBOX_TEST_USER_CGROUP`).
pub fn user_cgroup() -> Option<PathBuf> {
    std::env::var_os("POLYSANDBOX_TEST_USER_CGROUP").map(PathBuf::from).filter(|p| p.join("cgroup.procs").exists())
}

/// Whether the host has a pure cgroup v2 hierarchy at /sys/fs/cgroup.
pub fn pure_v2() -> bool {
    Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
}

/// The cgroup backend a run in `mode` gets on this host: as root, v2 on a pure v2 host and v1
/// on a hybrid one; as the test user, v2 where a subtree is delegated to it, none otherwise.
pub fn expected_cgroup(mode: Mode) -> Option<&'static str> {
    match mode {
        Mode::Root if pure_v2() => Some("cgroup v2"),
        Mode::Root => Some("cgroup v1"),
        Mode::User if pure_v2() && user_cgroup().is_some() => Some("cgroup v2"),
        Mode::User => None,
    }
}

/// Says, where the test output shows it, that a test (or a part of it) did not run here and
/// why; the count of these lines is the count of skips.
pub fn skip(what: &str, why: &str) {
    // Straight to fd 2: the test harness captures eprintln! output of passing tests.
    let line = format!("SKIPPED: {what}: {why}\n");
    // SAFETY: a write of a valid buffer to fd 2.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

/// The host uid (and gid) of the sandbox's root when polysandbox runs as root: the
/// `polysandbox` entry of /etc/subuid, else 0x60000000 (see sandbox::idmap).
pub fn root_base() -> u32 {
    std::fs::read_to_string("/etc/subuid")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() == 3 && f[0] == "polysandbox" && f[2].parse::<u32>().ok()? >= 65536)
                    .then(|| f[1].parse().ok())?
            })
        })
        .unwrap_or(0x6000_0000)
}

impl Mode {
    /// A fresh directory the sandbox's root may write through a read-write bind: as root, owned
    /// by the sandbox root's host id (read-write binds are not idmapped); as the test user, its.
    pub fn bind_dir(self, name: &str) -> PathBuf {
        let path = self.owned_dir(name);
        if self == Mode::Root {
            std::os::unix::fs::chown(&path, Some(root_base()), Some(root_base())).unwrap();
        }
        path
    }
}

pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Every sandbox cgroup in the mounted hierarchies (v1: `polysandbox-<pid>-<start>`, v2:
/// `polysandbox/ps-<pid>-<start>`), whose owner pid is `owner` (None: any).
pub fn polysandbox_cgroups(owner: Option<u32>) -> Vec<String> {
    let out = Command::new("find")
        .args([
            "/sys/fs/cgroup",
            "-maxdepth",
            "8",
            "-type",
            "d",
            "(",
            "-name",
            "polysandbox-*",
            "-o",
            "-path",
            "*/polysandbox/ps-*",
            ")",
        ])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| owner.is_none_or(|p| l.contains(&format!("/ps-{p}-")) || l.contains(&format!("/polysandbox-{p}-"))))
        .map(String::from)
        .collect();
    v.sort();
    v
}

/// `ps-<pid>-<start>` cgroups whose owner process no longer exists and was started after this
/// test process (older ones are another run's business, e.g. a CI job killed hours ago).
pub fn stale_cgroups() -> Vec<String> {
    let since = start_time(std::process::id());
    polysandbox_cgroups(None)
        .into_iter()
        .filter(|p| {
            let name = p.rsplit('/').next().unwrap_or("");
            let mut it = name.split('-').skip(1);
            let pid: u32 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            let start: u64 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            start >= since && start_time(pid) != start
        })
        .collect()
}

/// A process's start time (clock ticks since boot), as polysandbox names its cgroups; 0 if gone.
pub fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rfind(')').and_then(|i| stat[i + 2..].split(' ').nth(19)).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Pids of processes whose command line starts with `prefix` (the program and its first
/// arguments, not a mention of them in another command's arguments).
pub fn processes_running(prefix: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            if String::from_utf8_lossy(&cmd).replace('\0', " ").starts_with(prefix) {
                found.push(pid);
            }
        }
    }
    found
}

/// Mount points of the host (our mount namespace), as a sorted list.
pub fn host_mounts() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(String::from))
        .collect();
    v.sort();
    v
}

/// Pids of processes whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) && pid != std::process::id() {
                found.push(pid);
            }
        }
    }
    found
}

/// Waits up to `secs` for `cond`.
pub fn eventually(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    cond()
}

/// Pushes `image` (its canonical name) from the store `store` to `dest` (`docker://...`):
/// the store keeps layers as files and records, so skopeo reads the archive `save` writes.
pub fn push_from_store(store: &str, image: &str, dest: &str) -> Output {
    let tmp = fixtures().dir.join(format!("push-{}.oci.tar", unique()));
    let saved = Command::new(&fixtures().bin)
        .args(["save", "--root", store, "--format", "oci-archive", "-o"])
        .arg(&tmp)
        .arg(image)
        .output()
        .unwrap();
    if !saved.status.success() {
        return saved;
    }
    let o = Command::new("skopeo")
        .args(["copy", "--quiet", "--dest-tls-verify=false"])
        .arg(format!("oci-archive:{}:{image}", tmp.display()))
        .arg(dest)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&tmp);
    o
}
