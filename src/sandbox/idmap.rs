//! User namespace id maps, and idmapped mounts for root.
//!
//! Rootless: the sandbox's uid 0 is the caller's uid, gid 0 the caller's gid (one id each,
//! as bubblewrap does); files the caller owns appear owned by root inside.
//!
//! Root: the sandbox's ids 0..65536 are an unprivileged host range (the `polysandbox` entry of
//! /etc/subuid and /etc/subgid, else 1610612736..+65536), so that nothing inside is ever host
//! uid 0. The rootfs and read-only binds are idmapped mounts of the same mapping, so root-owned
//! files appear owned by the sandbox's root without being chowned. Read-write binds are not
//! idmapped: an idmapped tree writes what the sandbox's root creates as host uid 0 (a setuid-root
//! binary, or a file capability stored for host root, planted for any local user to run). There
//! the sandbox writes as its own host ids (root inside = the range's first id), and sees files
//! of other host owners as theirs (nobody's, unless it is its own).
//!
//! Each root-run sandbox has a range of its own: the kernel keeps several budgets per host
//! user (epoll watches, pipe buffers, file descriptors in flight over unix sockets, the
//! processes RLIMIT_NPROC counts), and several more per user *and* every user namespace above
//! (inotify instances and watches, POSIX message queue bytes, pending signals: charged to
//! whoever created the outermost user namespace). Sandboxes sharing one host uid, or created by
//! root, would share those budgets with each other, or take root's: one sandbox could make
//! the next one's Go runtime fail `epoll_ctl`, or leave the host's root without inotify. So the
//! range is split into slots of 65536 ids, a sandbox takes a free one (a lock held while it
//! runs), and its user namespace is created by the slot's first uid, not by root. Slot 0 is the
//! range's first 65536 ids, as before; a read-write bind is idmapped so that, whatever the
//! slot, what the sandbox writes there is owned on disk by slot 0's ids (the ones to chown a
//! directory to). Rootless, every budget is the caller's own (see docs/threat-model.md).

use super::Error;
use crate::sys;
use std::os::fd::{OwnedFd, RawFd};
use std::path::Path;

pub const ROOT_DEFAULT_BASE: u32 = 0x6000_0000;
pub const RANGE: u32 = 65536;

/// Slots in the default range (1610612736 and up, 64 Mi ids) when /etc/subuid names none for
/// polysandbox: as many sandboxes at once, each with ids of its own.
pub const DEFAULT_SLOTS: u32 = 1024;
/// Where root's sandboxes hold their slots (a lock file each, flock(2)ed while they run).
const SLOTS_DIR: &str = "/run/polysandbox/ids";

/// The host id range for sandboxes started by root: `polysandbox:START:COUNT` in `text` (the
/// contents of /etc/subuid or /etc/subgid), else the default: (start, slots of 65536).
fn range_in(text: Option<&str>) -> (u32, u32) {
    text.and_then(|s| {
        s.lines().find_map(|l| {
            let mut it = l.split(':');
            (it.next()? == "polysandbox").then_some(())?;
            let start: u32 = it.next()?.parse().ok()?;
            let count: u32 = it.next()?.parse().ok()?;
            // The whole range must be ids: start + count within u32, short of (uid_t)-1.
            (count >= RANGE && start > 0 && start.checked_add(count).is_some()).then_some((start, count / RANGE))
        })
    })
    .unwrap_or((ROOT_DEFAULT_BASE, DEFAULT_SLOTS))
}

fn range_from(file: &str) -> (u32, u32) {
    range_in(std::fs::read_to_string(file).ok().as_deref())
}

/// The ids a sandbox runs as: rootless the caller's own; as root a slot of the range, held
/// (its lock) for as long as this value lives.
pub struct Ids {
    /// Host uid and gid of the sandbox's root.
    pub uid: u32,
    pub gid: u32,
    /// How many ids are mapped (1 rootless).
    pub count: u32,
    /// Host uid and gid of slot 0's root: what a read-write bind's files are owned by on disk.
    pub disk_uid: u32,
    pub disk_gid: u32,
    _slot: Option<std::fs::File>,
}

impl Ids {
    pub fn allocate(rootless: bool) -> Result<Ids, Error> {
        if rootless {
            // SAFETY: getters cannot fail.
            let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
            return Ok(Ids { uid, gid, count: 1, disk_uid: uid, disk_gid: gid, _slot: None });
        }
        let ((u, us), (g, gs)) = (range_from("/etc/subuid"), range_from("/etc/subgid"));
        let slots = us.min(gs).max(1);
        let (slot, lock) = take_slot(slots)?;
        Ok(Ids { uid: u + slot * RANGE, gid: g + slot * RANGE, count: RANGE, disk_uid: u, disk_gid: g, _slot: lock })
    }

    /// Whether a read-write bind needs idmapping to be written as slot 0's ids.
    pub fn remapped(&self) -> bool {
        self.uid != self.disk_uid || self.gid != self.disk_gid
    }
}

/// The first free slot below `slots` (slot 0 first, so one sandbox at a time runs as before),
/// and its lock. With a single slot, every sandbox shares it (a range of 65536 in /etc/subuid).
fn take_slot(slots: u32) -> Result<(u32, Option<std::fs::File>), Error> {
    if slots <= 1 {
        return Ok((0, None));
    }
    let host = |e: std::io::Error| Error::new(super::ErrorKind::Host, format!("{SLOTS_DIR}: {e}"));
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(SLOTS_DIR).map_err(host)?;
    for slot in 0..slots {
        if let Some(f) = super::try_lock(std::path::Path::new(&format!("{SLOTS_DIR}/{slot}"))).map_err(host)? {
            return Ok((slot, Some(f)));
        }
    }
    Err(Error::new(
        super::ErrorKind::Host,
        format!("all {slots} id slots are in use ({SLOTS_DIR}): too many sandboxes at once for the polysandbox range in /etc/subuid"),
    ))
}

/// As root, just before the clone of the init: our effective uid becomes the sandbox's `uid`,
/// so that the user namespace the clone creates is owned, and its kernel budgets charged, to
/// the sandbox's own host id rather than to root. Our filesystem uid stays 0 (cloning into a
/// cgroup checks it). [`back_to_root`] right after the clone, in the parent. Single-threaded
/// only (sandbox::run checks): the raw syscalls change this thread's credentials alone.
/// Returns what to restore, if it did: not where `uid` is no id of ours (polysandbox as "root" of a user
/// namespace, e.g. under `unshare -r`, where root mode cannot map its range anyway and says so
/// when it writes the maps).
pub fn become_owner(uid: u32) -> Option<Owner> {
    let mut pdeathsig: libc::c_int = 0;
    // SAFETY: plain credential syscalls on our own thread; prctl into a local int.
    unsafe {
        libc::prctl(libc::PR_GET_PDEATHSIG, &mut pdeathsig as *mut libc::c_int, 0, 0, 0);
        let ppid = libc::getppid();
        if libc::syscall(libc::SYS_setresuid, u32::MAX, uid, u32::MAX) != 0 {
            return None;
        }
        libc::syscall(libc::SYS_setfsuid, 0);
        Some(Owner { pdeathsig, ppid })
    }
}

/// What a credential change clears and [`back_to_root`] restores: the parent-death signal
/// (eval's `polysandbox run` children die with eval by it; the change cleared it, and eval
/// SIGKILLed left its sandboxes running), and our parent, to see whether it died meanwhile.
pub struct Owner {
    pdeathsig: libc::c_int,
    ppid: libc::pid_t,
}

/// Back to uid 0 (our real and saved uid), which restores our capabilities; the credential
/// change made us undumpable, which we were not, and cleared our parent-death signal, which
/// is set again (and sent now if the parent died in between).
pub fn back_to_root(owner: Owner) {
    // SAFETY: as in become_owner; prctl and kill with integer arguments.
    unsafe {
        let rc = libc::syscall(libc::SYS_setresuid, u32::MAX, 0, u32::MAX);
        assert_eq!(rc, 0, "setresuid back to 0: {}", std::io::Error::last_os_error());
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        if owner.pdeathsig != 0 {
            libc::prctl(libc::PR_SET_PDEATHSIG, owner.pdeathsig as libc::c_ulong, 0, 0, 0);
            if libc::getppid() != owner.ppid {
                libc::kill(libc::getpid(), owner.pdeathsig);
            }
        }
    }
}

pub fn write_maps(pid: i32, ids: &Ids) -> Result<(), Error> {
    let Ids { uid, gid, count, .. } = *ids;
    sys::write_file(&format!("/proc/{pid}/uid_map"), &format!("0 {uid} {count}"))?;
    if count == 1 {
        sys::write_file(&format!("/proc/{pid}/setgroups"), "deny")?;
    }
    sys::write_file(&format!("/proc/{pid}/gid_map"), &format!("0 {gid} {count}"))?;
    Ok(())
}

/// The host uid and gid of the sandbox's root on disk (slot 0's) when polysandbox runs as root.
pub fn root_host_ids() -> (u32, u32) {
    (range_from("/etc/subuid").0, range_from("/etc/subgid").0)
}

/// A user namespace that maps slot 0's ids (inside) to the sandbox's (outside): a read-write
/// bind idmapped through it shows the files slot 0 owns as the sandbox's, and writes what the
/// sandbox creates as slot 0's ids. Made by a short-lived child that only waits.
pub fn disk_userns(ids: &Ids) -> Result<OwnedFd, Error> {
    let host = |what: String| Error::new(super::ErrorKind::Host, what);
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| host(format!("pipe: {e}")))?;
    let (pid, pidfd) = match sys::clone3(libc::CLONE_NEWUSER as u64, None) {
        Ok((0, _)) => {
            // The child: wait until the parent has what it needs, then go.
            drop(wr);
            let mut b = [0u8; 1];
            use std::os::fd::AsRawFd;
            // SAFETY: a read into our own byte, then _exit (no destructor runs in this copy).
            unsafe {
                libc::read(rd.as_raw_fd(), b.as_mut_ptr().cast(), 1);
                libc::_exit(0)
            }
        }
        Ok((pid, Some(fd))) => (pid, fd),
        Ok((_, None)) => return Err(host("clone3 returned no pidfd".into())),
        Err(e) => return Err(host(format!("the disk user namespace: {e}"))),
    };
    drop(rd);
    let result = (|| {
        sys::write_file(&format!("/proc/{pid}/uid_map"), &disk_map(ids.disk_uid, ids.uid, ids.count))?;
        sys::write_file(&format!("/proc/{pid}/gid_map"), &disk_map(ids.disk_gid, ids.gid, ids.count))?;
        sys::open(&sys::cstr(format!("/proc/{pid}/ns/user")), libc::O_RDONLY, "the disk user namespace")
    })();
    drop(wr);
    // Reap it: it exits as soon as the pipe closes.
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
    drop(pidfd);
    result.map_err(|e| host(format!("the disk user namespace: {e}")))
}

/// The disk namespace's map: slot 0's `n` ids (`disk`, inside) to the sandbox's (`own`,
/// outside), and every other id to itself, but the sandbox's own (which a file on disk should
/// not have). Without the identity extents, a file or directory of any other owner (a shared
/// scratch directory of root's, mode 0777) has no id through the mount, and the kernel refuses
/// every write to it (EACCES); with them it is as a plain bind shows it. The sandbox can only
/// ever write as its own ids, which land as slot 0's.
fn disk_map(disk: u32, own: u32, n: u32) -> String {
    let mut lines = vec![format!("{disk} {own} {n}")];
    // [0, u32::MAX) less [disk, disk + n) and [own, own + n), as identity extents.
    let mut holes = [(disk as u64, disk as u64 + n as u64), (own as u64, own as u64 + n as u64)];
    holes.sort();
    let mut at = 0u64;
    for (start, end) in holes.into_iter().chain([(u32::MAX as u64, u32::MAX as u64)]) {
        if start > at {
            lines.push(format!("{at} {at} {}", start - at));
        }
        at = at.max(end);
    }
    lines.join("\n")
}

/// A detached copy of the tree at `path` for a bind: always nosuid and nodev (nothing in it
/// can carry privilege into the sandbox, and nothing the sandbox leaves there runs with
/// privilege through this mount); idmapped through `userns` (root-owned files appear owned by
/// the sandbox's root) only where it is read-only (see the module's doc). A read-write one is
/// idmapped through `disk` when given (see [`disk_userns`]); where its filesystem cannot be
/// idmapped, the sandbox writes it as its own slot's ids.
pub fn bind_tree(path: &Path, readonly: bool, userns: Option<RawFd>, disk: Option<RawFd>) -> Result<OwnedFd, Error> {
    let what = path.display().to_string();
    let tree = sys::open_tree(libc::AT_FDCWD, &sys::cpath(path), &what)?;
    use std::os::fd::AsRawFd;
    if let (false, Some(d)) = (readonly, disk) {
        let attrs = sys::MOUNT_ATTR_IDMAP | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV;
        if sys::mount_setattr(tree.as_raw_fd(), attrs, Some(d), &what).is_ok() {
            return Ok(tree);
        }
    }
    if !readonly || userns.is_none() {
        let mut set = sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV;
        if readonly {
            set |= sys::MOUNT_ATTR_RDONLY;
        }
        sys::mount_setattr(tree.as_raw_fd(), set, None, &what)?;
        return Ok(tree);
    }
    idmap(tree, sys::MOUNT_ATTR_RDONLY | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV, userns.unwrap_or(-1), what)
}

/// A detached copy of the tree at `path`, idmapped through `userns`, read-only: the rootfs,
/// whose files are the store's objects (the overlay above it copies a file up before any
/// change).
pub fn idmapped_tree(path: &Path, userns: RawFd) -> Result<OwnedFd, Error> {
    let what = path.display().to_string();
    let tree = sys::open_tree(libc::AT_FDCWD, &sys::cpath(path), &what)?;
    idmap(tree, sys::MOUNT_ATTR_RDONLY, userns, what)
}

fn idmap(tree: OwnedFd, attrs: u64, userns: RawFd, what: String) -> Result<OwnedFd, Error> {
    use std::os::fd::AsRawFd;
    sys::mount_setattr(tree.as_raw_fd(), sys::MOUNT_ATTR_IDMAP | attrs, Some(userns), &what).map_err(|e| {
        let why = if sys::kernel_at_least(5, 12) {
            format!("{what} is on {}, which this kernel cannot idmap", sys::fs_name(tree.as_raw_fd()))
        } else {
            "idmapped mounts need Linux 5.12".into()
        };
        Error::new(super::ErrorKind::Host, format!(
            "{e}: {why} (as root, the sandbox runs under an unprivileged uid range and sees its files through an idmapped mount); run polysandbox as an ordinary user, or keep the files on ext4, xfs or btrfs{}",
            if sys::kernel_at_least(6, 3) { " or tmpfs" } else { " (tmpfs only from Linux 6.3)" }
        ))
    })?;
    Ok(tree)
}

/// Turns a clone3 failure into the sentence the user needs.
pub fn explain_clone_failure(e: std::io::Error) -> String {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return "user namespaces are disabled: sysctl user.max_user_namespaces is 0 (set it to e.g. 15000)".into();
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return "unprivileged user namespaces are disabled: sysctl kernel.unprivileged_userns_clone is 0 (set it to 1)"
            .into();
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return "AppArmor restricts unprivileged user namespaces: sysctl kernel.apparmor_restrict_unprivileged_userns is 1 (set it to 0, or give polysandbox an AppArmor profile with 'userns,')".into();
    }
    match e.raw_os_error() {
        Some(libc::ENOSYS) => "clone3 is not supported: polysandbox needs Linux 5.7 or later".into(),
        Some(libc::ENOSPC) => "cannot create the sandbox's namespaces: a namespace limit was reached (see /proc/sys/user/max_*_namespaces)".into(),
        _ => format!("cannot create the sandbox's namespaces: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_map_moves_the_slot_and_keeps_every_other_id() {
        let m = disk_map(0x6000_0000, 0x6005_0000, 65536);
        assert_eq!(
            m,
            "1610612736 1610940416 65536\n0 0 1610612736\n1610678272 1610678272 262144\n1611005952 1611005952 2683961343"
        );
        // Every id below u32::MAX is inside exactly once, and outside exactly once.
        let ext: Vec<(u64, u64, u64)> = m
            .lines()
            .map(|l| {
                let v: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
                (v[0], v[1], v[2])
            })
            .collect();
        for pick in [|e: &(u64, u64, u64)| (e.0, e.2), |e: &(u64, u64, u64)| (e.1, e.2)] {
            let mut r: Vec<(u64, u64)> = ext.iter().map(pick).collect();
            r.sort();
            let mut at = 0;
            for (s, n) in r {
                assert!(s >= at, "overlap at {s}: {m}");
                at = s + n;
            }
            assert!(at <= u32::MAX as u64);
        }
        let inside: u64 = ext.iter().map(|e| e.2).sum();
        assert_eq!(inside, u32::MAX as u64 - 65536, "all but the sandbox's own ids: {m}");
    }
}
