//! The cgroup v2 backend. Root: `<cgroup2 mount>/polysandbox/<name>`. Rootless: under the
//! closest ancestor of our own cgroup that was delegated to us (its `cgroup.subtree_control`
//! and `cgroup.procs` writable), in `polysandbox/<name>`.

use super::{cpu, kill_and_remove, memory, pids, sweep_stale, Group, Limits, Mounts, Unavailable, Usage};
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub struct V2Group {
    dir: Option<PathBuf>,
    /// Where a finished init is parked: our own cgroup (writable to us, as we live in it).
    own: Option<PathBuf>,
    fd: i32,
    enforces: Limits,
}

fn writable(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else { return false };
    // SAFETY: c is a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The directory under which our groups go.
pub(super) fn parent(mounts: &Mounts) -> Result<PathBuf, Unavailable> {
    let (mp, own) = mounts.v2_own().ok_or_else(|| Unavailable("no cgroup2 hierarchy is mounted".into()))?;
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(mp.join("polysandbox"));
    }
    // Rootless: walk up from our own cgroup's parent (our own has processes in it, so it
    // cannot hand controllers down) to the closest delegated ancestor.
    let mut p = mp.join(own.trim_start_matches('/'));
    while p.pop() && p.starts_with(&mp) && p != mp {
        if writable(&p.join("cgroup.subtree_control")) && writable(&p.join("cgroup.procs")) {
            return Ok(p.join("polysandbox"));
        }
    }
    Err(Unavailable("no delegated cgroup v2 subtree is writable for this user".into()))
}

fn enable_controllers(dir: &Path) {
    let avail = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    for c in ["memory", "pids", "cpu"] {
        if avail.split_whitespace().any(|a| a == c) {
            let _ = super::write(dir, "cgroup.subtree_control", &format!("+{c}"));
        }
    }
}

pub fn create(mounts: &Mounts, name: &str, limits: &Limits) -> Result<Box<dyn Group>, Unavailable> {
    let base = parent(mounts)?;
    if !base.is_dir() {
        fs::create_dir_all(&base).map_err(|e| Unavailable(format!("cannot create {}: {e}", base.display())))?;
        if let Some(up) = base.parent() {
            enable_controllers(up);
        }
        enable_controllers(&base);
    } else {
        sweep_stale(&base);
    }
    let dir = base.join(format!("ps-{name}"));
    fs::create_dir(&dir).map_err(|e| Unavailable(format!("cannot create {}: {e}", dir.display())))?;
    let c = CString::new(dir.as_os_str().as_bytes()).expect("cgroup path has no NUL");
    // SAFETY: c is a valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    let own = mounts.v2_own().map(|(mp, p)| mp.join(p.trim_start_matches('/')));
    let mut g = V2Group { dir: Some(dir.clone()), own, fd, enforces: Limits::default() };
    if fd < 0 {
        let e = io::Error::last_os_error();
        g.destroy();
        return Err(Unavailable(format!("cannot open {}: {e}", dir.display())));
    }
    // cpu.stat is there whatever controllers are enabled.
    g.enforces.cpu_accounting = limits.cpu_accounting && cpu::usage_v2(&dir).is_some();
    // A limit whose controller is not enabled here is left to the fallbacks.
    if let Some(m) = limits.memory {
        if memory::set_v2(&dir, m).is_ok() {
            g.enforces.memory = Some(m);
        }
    }
    if let Some(p) = limits.pids {
        if pids::set(&dir, p).is_ok() {
            g.enforces.pids = Some(p);
        }
    }
    if let Some(c) = limits.cpus {
        if cpu::set_v2(&dir, c).is_ok() {
            g.enforces.cpus = Some(c);
        }
    }
    Ok(Box::new(g))
}

impl Group for V2Group {
    fn kind(&self) -> super::CgroupKind {
        super::CgroupKind::V2
    }
    fn enforces(&self) -> &Limits {
        &self.enforces
    }
    fn clone_into_fd(&self) -> Option<i32> {
        (self.fd >= 0).then_some(self.fd)
    }
    fn attach(&self, pid: i32) -> io::Result<()> {
        match &self.dir {
            Some(d) => super::write(d, "cgroup.procs", &pid.to_string()),
            None => Ok(()),
        }
    }
    fn usage(&self) -> Usage {
        let Some(dir) = &self.dir else { return Usage::default() };
        let (memory_peak, oom_kills) = memory::usage_v2(dir);
        let cpu = cpu::usage_v2(dir).map(|(u, s, _)| (u, s));
        Usage { memory_peak, oom_kills, pids_limit_hits: pids::limit_hits(dir), cpu }
    }
    fn cpu_seconds(&self) -> Option<f64> {
        self.dir.as_deref().and_then(cpu::usage_v2).map(|(_, _, t)| t)
    }
    fn park(&self, pid: i32) {
        if let Some(own) = &self.own {
            let _ = super::write(own, "cgroup.procs", &pid.to_string());
        }
    }
    fn cpu_release(&self) -> Option<(std::os::fd::OwnedFd, &'static str)> {
        self.enforces.cpus?;
        let dir = self.dir.as_ref()?;
        super::open_write(dir, "cpu.max").ok().map(|fd| (fd, "max"))
    }
    fn destroy(&mut self) {
        if self.fd >= 0 {
            // SAFETY: we own fd.
            unsafe { libc::close(self.fd) };
            self.fd = -1;
        }
        if let Some(d) = self.dir.take() {
            // cgroup.kill (5.14+) takes the whole tree at once; older kernels get per-pid kills.
            let _ = super::write(&d, "cgroup.kill", "1");
            kill_and_remove(&d);
        }
    }
}

impl Drop for V2Group {
    fn drop(&mut self) {
        self.destroy();
    }
}
