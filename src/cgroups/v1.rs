//! The cgroup v1 backend: a directory per controller hierarchy, `polysandbox-<pid>-<start>`
//! in the cgroup we run in (so an outer job's limits still hold).

use super::{cpu, kill_and_remove, make_child, memory, pids, remove_stale, Group, Limits, Mounts, Unavailable, Usage};
use std::io;
use std::path::PathBuf;

pub struct V1Group {
    memory: Option<PathBuf>,
    pids: Option<PathBuf>,
    cpu: Option<PathBuf>,
    cpuacct: Option<PathBuf>,
    enforces: Limits,
}

/// Where our groups go in `controller`'s hierarchy: the cgroup we run in.
fn parent(mounts: &Mounts, controller: &str) -> Result<PathBuf, Unavailable> {
    let (mp, own) = mounts
        .v1_for(controller)
        .ok_or_else(|| Unavailable(format!("no cgroup v1 {controller} hierarchy is mounted")))?;
    Ok(mp.join(own.trim_start_matches('/')))
}

/// The group in `controller`'s hierarchy, after sweeping it if `sweep`; and the stale groups
/// the sweep removed.
fn make_dir(mounts: &Mounts, controller: &str, name: &str, sweep: bool) -> Result<(PathBuf, Vec<String>), Unavailable> {
    make_child(&parent(mounts, controller)?, &format!("polysandbox-{name}"), sweep)
        .map_err(|e| Unavailable(no_write(e)))
}

fn no_write(e: io::Error) -> String {
    if e.kind() == io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(libc::EROFS) {
        format!("cgroup v1 is not writable for this user ({e})")
    } else {
        format!("cannot create {e}")
    }
}

pub fn create(mounts: &Mounts, name: &str, limits: &Limits) -> Result<Box<dyn Group>, Unavailable> {
    let mut g = V1Group { memory: None, pids: None, cpu: None, cpuacct: None, enforces: Limits::default() };
    // The memory cgroup is always made, first, and removed last: it measures peak memory and
    // OOM kills. So only the memory hierarchy is swept (listed, each owner checked): a stale
    // group in another hierarchy has one in memory too, and goes by name from the others,
    // whatever limits this run asks for.
    let (dir, stale) = make_dir(mounts, "memory", name, true)?;
    g.memory = Some(dir.clone());
    if !stale.is_empty() {
        for p in ["pids", "cpu", "cpuacct"].iter().filter_map(|c| parent(mounts, c).ok()) {
            remove_stale(&p, &stale);
        }
    }
    if let Some(m) = limits.memory {
        memory::set_v1(&dir, m).map_err(|e| fail(&mut g, e))?;
        g.enforces.memory = Some(m);
    }
    if let Some(p) = limits.pids {
        let (dir, _) = make_dir(mounts, "pids", name, false).map_err(|e| fail(&mut g, e.0))?;
        g.pids = Some(dir.clone());
        pids::set(&dir, p).map_err(|e| fail(&mut g, e))?;
        g.enforces.pids = Some(p);
    }
    if let Some(c) = limits.cpus {
        let (dir, _) = make_dir(mounts, "cpu", name, false).map_err(|e| fail(&mut g, e.0))?;
        g.cpu = Some(dir.clone());
        cpu::set_v1(&dir, c).map_err(|e| fail(&mut g, e))?;
        g.enforces.cpus = Some(c);
    }
    if limits.cpu_accounting {
        // cpuacct may share the cpu hierarchy (a "cpu,cpuacct" mount): then the cpu group
        // counts already.
        let shared = g.cpu.as_ref().is_some_and(|d| d.join("cpuacct.usage").exists());
        if shared {
            g.cpuacct = g.cpu.clone();
        } else if let Ok((dir, _)) = make_dir(mounts, "cpuacct", name, false) {
            g.cpuacct = Some(dir);
        }
        g.enforces.cpu_accounting = g.cpuacct.is_some();
    }
    Ok(Box::new(g))
}

fn fail(g: &mut V1Group, e: impl std::fmt::Display) -> Unavailable {
    g.destroy();
    Unavailable(e.to_string())
}

impl V1Group {
    fn dirs(&self) -> impl Iterator<Item = &PathBuf> {
        let own_acct = self.cpuacct.as_ref().filter(|a| Some(*a) != self.cpu.as_ref());
        self.memory.iter().chain(self.pids.iter()).chain(self.cpu.iter()).chain(own_acct)
    }
}

impl Group for V1Group {
    fn kind(&self) -> super::CgroupKind {
        super::CgroupKind::V1
    }
    fn enforces(&self) -> &Limits {
        &self.enforces
    }
    fn clone_into_fd(&self) -> Option<i32> {
        None
    }
    fn attach(&self, pid: i32) -> io::Result<()> {
        for d in self.dirs() {
            super::write(d, "cgroup.procs", &pid.to_string())?;
        }
        Ok(())
    }
    fn usage(&self) -> Usage {
        let (memory_peak, oom_kills) = self.memory.as_deref().map(memory::usage_v1).unwrap_or((None, 0));
        let pids_limit_hits = self.pids.as_deref().map(pids::limit_hits).unwrap_or(0);
        let cpu = self.cpuacct.as_deref().and_then(cpu::usage_v1);
        Usage { memory_peak, oom_kills, pids_limit_hits, cpu }
    }
    fn cpu_seconds(&self) -> Option<f64> {
        self.cpuacct.as_deref().and_then(cpu::total_v1)
    }
    fn park(&self, pid: i32) {
        for d in self.dirs() {
            if let Some(parent) = d.parent() {
                let _ = super::write(parent, "cgroup.procs", &pid.to_string());
            }
        }
    }
    fn self_move_fds(&self) -> io::Result<Option<super::SelfMove>> {
        let mut m = super::SelfMove { enter: Vec::new(), leave: Vec::new(), after_spawn: Vec::new() };
        // (cpu and cpuacct mounted together: leaving one leaves both; the init's own CPU time
        // is not the command's anyway.)
        if let Some(parent) = self.cpu.as_ref().and_then(|d| d.parent()) {
            m.after_spawn.push(super::open_write(parent, "tasks")?);
        }
        for d in self.dirs() {
            m.enter.push(super::open_write(d, "tasks")?);
            if let Some(parent) = d.parent() {
                m.leave.push(super::open_write(parent, "tasks")?);
            }
        }
        Ok(Some(m))
    }
    fn cpu_release(&self) -> Option<(std::os::fd::OwnedFd, &'static str)> {
        let dir = self.cpu.as_ref()?;
        let (file, value) = super::quota_file(dir)?;
        super::open_write(dir, file).ok().map(|fd| (fd, value))
    }
    fn destroy(&mut self) {
        // Memory last: a group left in another hierarchy always has its memory group beside it.
        let acct = self.cpuacct.take().filter(|a| Some(a) != self.cpu.as_ref());
        for d in [acct, self.cpu.take(), self.pids.take(), self.memory.take()].into_iter().flatten() {
            kill_and_remove(&d);
        }
    }
}

impl Drop for V1Group {
    fn drop(&mut self) {
        self.destroy();
    }
}
