//! The sandbox's filesystem, built by the init inside its own mount namespace:
//!
//! ```text
//! <rootfs path>            a scratch tmpfs (size = --disk) attached over the rootfs directory
//!                          (by fd: as root, the supervisor opens it for the init, which runs as
//!                          an unprivileged host id that may not traverse the store's 0700 root)
//!   lower/                 the rootfs, as a cloned (and, for root, idmapped) mount tree
//!   upper/ work/           the overlay's writable layer
//!   root/                  the overlay: what becomes /
//!     proc/                a fresh procfs, runc's masked and read-only paths applied
//!     dev/                 a small read-only tmpfs: null zero full random urandom tty, pts;
//!                          shm, a directory of the writable layer (counted in --disk)
//!     ...                  --tmpfs and -v mounts
//! ```
//!
//! Every target inside the new root is resolved with openat2(RESOLVE_IN_ROOT), so a symlink
//! in the image can never send a mount outside it, and mounts are made on the resolved fd.

use super::{Network, Spec};
use crate::sys::{self, cstr, fd_path, Result};
use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Paths of /proc hidden from the sandbox (runc's defaults).
const PROC_MASKED: &[&str] = &[
    "acpi",
    "asound",
    "interrupts",
    "kcore",
    "keys",
    "latency_stats",
    "timer_list",
    "timer_stats",
    "sched_debug",
    "scsi",
];
/// Paths of /proc made read-only (runc's defaults).
const PROC_READONLY: &[&str] = &["bus", "fs", "irq", "sys", "sysrq-trigger"];
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

const NOSUID_NODEV_NOEXEC: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

/// Builds the root and pivots into it. `trees` are the supervisor's idmapped trees (root
/// mode): the rootfs, then one per bind. Returns an fd on the scratch tmpfs, for measuring
/// how full the writable layer got.
pub fn setup(spec: &Spec, rootfs: &CStr, trees: Vec<OwnedFd>, bind_is_dir: &[bool]) -> Result<OwnedFd> {
    sys::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None, "/ private")?;

    // Take hold of every source before the rootfs path is covered by the scratch tmpfs: as
    // root the supervisor hands us the rootfs directory (in our mount namespace) and its
    // idmapped tree; rootless we open them ourselves.
    let mut trees = trees.into_iter();
    let (rootfs_dir, given) = match trees.next() {
        Some(at) => (at, true),
        None => (sys::open(rootfs, libc::O_PATH | libc::O_DIRECTORY, "the rootfs")?, false),
    };
    let lower = match trees.next().filter(|_| given) {
        Some(t) => t,
        None => {
            let t = sys::open_tree(rootfs_dir.as_raw_fd(), c"", "the rootfs")?;
            // Read-only: an image's files are shared with other images (hard links into the
            // store's objects); only the overlay, which copies a file up first, writes.
            sys::mount_setattr(t.as_raw_fd(), sys::MOUNT_ATTR_RDONLY, None, "the rootfs")?;
            t
        }
    };
    // The trees over the rootfs (an image's last layer over its chain), top first.
    let mut over = Vec::with_capacity(spec.layers.len());
    for l in &spec.layers {
        let t = match trees.next().filter(|_| given) {
            Some(t) => t,
            None => {
                let what = l.display().to_string();
                let t = sys::open_tree(libc::AT_FDCWD, &sys::cpath(l), &what)?;
                sys::mount_setattr(t.as_raw_fd(), sys::MOUNT_ATTR_RDONLY, None, &what)?;
                t
            }
        };
        over.push(t);
    }
    let mut binds = Vec::with_capacity(spec.binds.len());
    for b in &spec.binds {
        let t = match trees.next() {
            Some(t) => t,
            None => super::idmap::bind_tree(&b.source, b.readonly || b.overlay, None, None).map_err(|e| e.message)?,
        };
        binds.push(t);
    }

    // The scratch tmpfs, and the overlay on it.
    let mut options = vec![("mode", "0755".to_string())];
    if let Some(d) = spec.limits.disk {
        options.push(("size", d.to_string()));
    }
    let scratch =
        sys::tmpfs_detached(&options, sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV, "the writable layer (tmpfs)")?;
    sys::move_mount_to_fd(scratch.as_raw_fd(), rootfs_dir.as_raw_fd(), "the writable layer (tmpfs)")?;
    drop(rootfs_dir);
    for d in ["lower", "upper", "work", "root"] {
        mkdirat(scratch.as_raw_fd(), d, 0o755)?;
    }
    let lower_dir = sys::openat2(scratch.as_raw_fd(), "lower", libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_BENEATH)
        .map_err(|e| format!("open lower: {e}"))?;
    sys::move_mount_to_fd(lower.as_raw_fd(), lower_dir.as_raw_fd(), "the rootfs")?;
    drop(lower_dir);
    for (i, t) in over.into_iter().enumerate() {
        let name = format!("lower{}", i + 1);
        mkdirat(scratch.as_raw_fd(), &name, 0o755)?;
        let d = sys::openat2(scratch.as_raw_fd(), &name, libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_BENEATH)
            .map_err(|e| format!("open {name}: {e}"))?;
        sys::move_mount_to_fd(t.as_raw_fd(), d.as_raw_fd(), "an image layer")?;
    }
    super::trace::step("init: lower attached");
    overlay(scratch.as_raw_fd(), rootfs, spec.layers.len())?;
    super::trace::step("init: overlay mounted");
    let root = sys::openat2(scratch.as_raw_fd(), "root", libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_BENEATH)
        .map_err(|e| format!("open the new root: {e}"))?;
    let root = root.as_raw_fd();

    proc(root)?;
    super::trace::step("init: /proc mounted");
    dev(root, scratch.as_raw_fd())?;
    super::trace::step("init: /dev mounted");
    // A --tmpfs (and --read-only's /tmp, /run, /var/tmp) without a size is a directory of the
    // writable layer, bound where asked: what the command keeps there counts against --disk
    // (and, rootless, --memory, which watches that tmpfs), as every byte it writes must. A
    // tmpfs of its own would have the kernel's default size, half the host's memory, outside
    // both. One with size=N is a tmpfs of that size (at most --disk): the caller's choice.
    for (n, t) in spec.tmpfs.iter().enumerate() {
        let target = ensure_dir(root, &t.target)?;
        let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
        if t.readonly {
            flags |= libc::MS_RDONLY;
        }
        if t.noexec {
            flags |= libc::MS_NOEXEC;
        }
        if let Some(size) = t.size {
            let size = spec.limits.disk.map_or(size, |d| size.min(d));
            let mut data = format!("mode={:o},size={size}", t.mode.unwrap_or(0o1777));
            for o in &t.options {
                data += &format!(",{o}");
            }
            sys::mount(
                Some(c"tmpfs"),
                &fd_path(target.as_raw_fd(), ""),
                Some(c"tmpfs"),
                flags,
                Some(&cstr(data)),
                &t.target,
            )?;
            continue;
        }
        let dir = format!("tmpfs{n}");
        mkdirat(scratch.as_raw_fd(), &dir, t.mode.unwrap_or(0o1777))?;
        let src = sys::openat2(scratch.as_raw_fd(), &dir, libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_BENEATH)
            .map_err(|e| format!("{}: {e}", t.target))?;
        let id = |key: &str| t.options.iter().find_map(|o| o.strip_prefix(key)?.parse::<u32>().ok());
        let (u, g) = (id("uid="), id("gid="));
        if u.is_some() || g.is_some() {
            nix::unistd::fchownat(
                Some(src.as_raw_fd()),
                "",
                u.map(nix::unistd::Uid::from_raw),
                g.map(nix::unistd::Gid::from_raw),
                nix::unistd::FchownatFlags::AT_EMPTY_PATH,
            )
            .map_err(|e| format!("{}: uid/gid: {e}", t.target))?;
        }
        sys::mount(
            Some(&fd_path(src.as_raw_fd(), "")),
            &fd_path(target.as_raw_fd(), ""),
            None,
            libc::MS_BIND,
            None,
            &t.target,
        )?;
        let target = ensure_dir(root, &t.target)?;
        sys::mount(
            None,
            &fd_path(target.as_raw_fd(), ""),
            None,
            flags | libc::MS_REMOUNT | libc::MS_BIND,
            None,
            &t.target,
        )?;
    }
    for (n, ((b, tree), is_dir)) in spec.binds.iter().zip(binds).zip(bind_is_dir).enumerate() {
        let target = if *is_dir { ensure_dir(root, &b.target)? } else { ensure_file(root, &b.target)? };
        if b.overlay {
            overlay_bind(scratch.as_raw_fd(), n, tree, &target, &b.target)?;
        } else {
            sys::move_mount_to_fd(tree.as_raw_fd(), target.as_raw_fd(), &b.target)?;
        }
    }

    if spec.read_only {
        // The overlay itself, not what is mounted on it: /proc, /dev, --tmpfs and -v stay as
        // asked. (The command cannot remount it: no CAP_SYS_ADMIN, and seccomp denies mount.)
        sys::mount(
            None,
            &fd_path(root, ""),
            None,
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
            None,
            "/ read-only (--read-only)",
        )?;
    }

    nix::unistd::sethostname(&spec.hostname).map_err(|e| format!("sethostname: {e}"))?;
    if spec.network == Network::None {
        loopback_up()?;
    }

    // pivot_root(".", ".") stacks the old root on the new one; detaching it leaves only ours.
    nix::unistd::fchdir(root).map_err(|e| format!("chdir to the new root: {e}"))?;
    nix::unistd::pivot_root(".", ".").map_err(|e| format!("pivot_root: {e}"))?;
    super::trace::step("init: pivoted");
    nix::mount::umount2(".", nix::mount::MntFlags::MNT_DETACH).map_err(|e| format!("detach the old root: {e}"))?;
    nix::unistd::chdir("/").map_err(|e| format!("chdir /: {e}"))?;
    Ok(scratch)
}

/// The filesystem the rootfs (attached at `lower` in the scratch tmpfs) is on.
fn fs_name_of_lower(scratch: RawFd) -> String {
    match sys::openat2(scratch, "lower", libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_BENEATH) {
        Ok(fd) => sys::fs_name(fd.as_raw_fd()),
        Err(_) => "an unknown filesystem".into(),
    }
}

fn overlay(scratch: RawFd, rootfs: &CStr, over: usize) -> Result<()> {
    // Relative layer paths (the cwd is the scratch tmpfs) keep commas and colons of the
    // rootfs path out of the option string.
    nix::unistd::fchdir(scratch).map_err(|e| format!("chdir to the writable layer: {e}"))?;
    // index=off (the default, said in case a host turned it on): a copy-up never carries a
    // lower file's other hard links with it. Two paths of an image may be names of one
    // object; writing one must not change the other.
    // The trees over the rootfs (lower1 the top one) come first: overlayfs lists its lower
    // layers from the top.
    let mut lowers = String::new();
    for i in 1..=over {
        lowers.push_str(&format!("lower{i}:"));
    }
    lowers.push_str("lower");
    // userxattr first: what the store's layer trees mark opaque directories with.
    let with = sys::cstr(format!("lowerdir={lowers},upperdir=upper,workdir=work,userxattr,index=off"));
    let without = sys::cstr(format!("lowerdir={lowers},upperdir=upper,workdir=work,index=off"));
    sys::mount(Some(c"overlay"), c"root", Some(c"overlay"), 0, Some(&with), "overlay")
        .or_else(|_| sys::mount(Some(c"overlay"), c"root", Some(c"overlay"), 0, Some(&without), "overlay"))
        .map_err(|e| {
            let why = if sys::kernel_at_least(5, 11) {
                format!(
                    "overlayfs refused {} (on {}) as its lower layer: it stacks at most two deep and cannot use every filesystem as a layer; copy the rootfs to ext4, xfs, btrfs or tmpfs",
                    rootfs.to_string_lossy(),
                    fs_name_of_lower(scratch)
                )
            } else {
                "overlayfs in a user namespace needs Linux 5.11".into()
            };
            format!("{e}: {why}")
        })
}

/// A `:O` bind: the tree (read-only; idmapped as root) is the lower layer of an overlay whose
/// upper and work directories are on the scratch tmpfs, so every byte the command writes there
/// counts against `--disk` and is discarded with the sandbox; the host directory is never
/// written. Mounted nosuid and nodev.
fn overlay_bind(scratch: RawFd, n: usize, tree: OwnedFd, target: &OwnedFd, what: &str) -> Result<()> {
    let dir = format!("bind{n}");
    mkdirat(scratch, &dir, 0o755)?;
    for d in ["lower", "upper", "work"] {
        mkdirat(scratch, &format!("{dir}/{d}"), 0o755)?;
    }
    let lower = sys::openat2(scratch, &format!("{dir}/lower"), libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_BENEATH)
        .map_err(|e| format!("{what}: open its lower layer: {e}"))?;
    sys::move_mount_to_fd(tree.as_raw_fd(), lower.as_raw_fd(), what)?;
    drop(lower);
    // Relative layer paths from the scratch tmpfs, as for the root's overlay.
    nix::unistd::fchdir(scratch).map_err(|e| format!("chdir to the writable layer: {e}"))?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV;
    let with = cstr(format!("lowerdir={dir}/lower,upperdir={dir}/upper,workdir={dir}/work,userxattr"));
    let without = cstr(format!("lowerdir={dir}/lower,upperdir={dir}/upper,workdir={dir}/work"));
    let at = fd_path(target.as_raw_fd(), "");
    sys::mount(Some(c"overlay"), &at, Some(c"overlay"), flags, Some(&with), what)
        .or_else(|_| sys::mount(Some(c"overlay"), &at, Some(c"overlay"), flags, Some(&without), what))
        .map_err(|e| format!("{e} (an overlay over the bind source)"))
}

fn proc(root: RawFd) -> Result<()> {
    let target = ensure_dir(root, "/proc")?;
    sys::mount(Some(c"proc"), &fd_path(target.as_raw_fd(), ""), Some(c"proc"), NOSUID_NODEV_NOEXEC, None, "/proc")?;
    drop(target);
    let procfd = sys::openat2(root, "/proc", libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_IN_ROOT)
        .map_err(|e| format!("open /proc: {e}"))?;
    let p = procfd.as_raw_fd();
    let beneath = sys::RESOLVE_BENEATH | sys::RESOLVE_NO_SYMLINKS | sys::RESOLVE_NO_MAGICLINKS;
    for name in PROC_MASKED {
        let Ok(fd) = sys::openat2(p, name, libc::O_PATH | libc::O_NOFOLLOW, beneath) else { continue };
        let target = fd_path(fd.as_raw_fd(), "");
        if is_dir(fd.as_raw_fd()) {
            sys::mount(
                Some(c"tmpfs"),
                &target,
                Some(c"tmpfs"),
                libc::MS_RDONLY | NOSUID_NODEV_NOEXEC,
                Some(c"size=0,nr_inodes=1"),
                name,
            )?;
        } else {
            sys::mount(Some(c"/dev/null"), &target, None, libc::MS_BIND, None, name)?;
        }
    }
    for name in PROC_READONLY {
        let Ok(fd) = sys::openat2(p, name, libc::O_PATH | libc::O_NOFOLLOW, beneath) else { continue };
        let target = fd_path(fd.as_raw_fd(), "");
        sys::mount(Some(&target), &target, None, libc::MS_BIND | libc::MS_REC, None, name)?;
        let fd = sys::openat2(p, name, libc::O_PATH | libc::O_NOFOLLOW, beneath)
            .map_err(|e| format!("reopen /proc/{name}: {e}"))?;
        sys::mount(
            None,
            &fd_path(fd.as_raw_fd(), ""),
            None,
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | NOSUID_NODEV_NOEXEC,
            None,
            name,
        )?;
    }
    Ok(())
}

/// /dev: a small tmpfs of device nodes (bound from the host's), made read-only once filled;
/// `pts` a new devpts; `shm` a directory of the writable layer, so that what the command
/// keeps there counts against `--disk` like any other file it writes.
fn dev(root: RawFd, scratch: RawFd) -> Result<()> {
    let target = ensure_dir(root, "/dev")?;
    sys::mount(
        Some(c"tmpfs"),
        &fd_path(target.as_raw_fd(), ""),
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some(c"mode=0755,size=65536"),
        "/dev",
    )?;
    drop(target);
    let devfd = sys::openat2(root, "/dev", libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_IN_ROOT)
        .map_err(|e| format!("open /dev: {e}"))?;
    let d = devfd.as_raw_fd();
    for name in DEVICES {
        // SAFETY: d is an open directory fd; name is a valid C string.
        let fd =
            unsafe { libc::openat(d, cstr(name).as_ptr(), libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o666) };
        if fd < 0 {
            return Err(format!("create /dev/{name}: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: fd was just opened.
        unsafe { libc::close(fd) };
        sys::mount(
            Some(&cstr(format!("/dev/{name}"))),
            &fd_path(d, name),
            None,
            libc::MS_BIND,
            None,
            &format!("/dev/{name}"),
        )?;
    }
    mkdirat(d, "pts", 0o755)?;
    sys::mount(
        Some(c"devpts"),
        &fd_path(d, "pts"),
        Some(c"devpts"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some(c"newinstance,ptmxmode=0666,mode=0620,max=32"),
        "/dev/pts",
    )?;
    mkdirat(d, "shm", 0o1777)?;
    mkdirat(scratch, "shm", 0o1777)?;
    let shm = sys::openat2(scratch, "shm", libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_BENEATH)
        .map_err(|e| format!("open the writable layer's shm: {e}"))?;
    sys::mount(Some(&fd_path(shm.as_raw_fd(), "")), &fd_path(d, "shm"), None, libc::MS_BIND, None, "/dev/shm")?;
    for (link, to) in [
        ("ptmx", "pts/ptmx"),
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        // SAFETY: valid C strings and an open dirfd.
        if unsafe { libc::symlinkat(cstr(to).as_ptr(), d, cstr(link).as_ptr()) } != 0 {
            return Err(format!("symlink /dev/{link}: {}", std::io::Error::last_os_error()));
        }
    }
    // Nothing more is written to /dev itself: its few KiB would be the one place outside
    // --disk (pts and shm are mounts of their own, and stay writable).
    sys::mount(
        None,
        &fd_path(d, ""),
        None,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NOEXEC,
        None,
        "/dev read-only",
    )?;
    Ok(())
}

fn is_dir(fd: RawFd) -> bool {
    nix::sys::stat::fstat(fd).map(|s| s.st_mode & libc::S_IFMT == libc::S_IFDIR).unwrap_or(false)
}

/// Makes directory `name` in `dir` with `mode` exactly, if it is not there; leaves whatever is
/// there alone. Never follows a symlink: before the pivot, one in the image (a dangling
/// `/proc -> /home/user/.ssh`, or one swapped in meanwhile) would resolve against the host's
/// root, so the mode is set through the new directory's own fd.
fn mkdirat(dir: RawFd, name: &str, mode: u32) -> Result<()> {
    // SAFETY: valid C string and dirfd.
    if unsafe { libc::mkdirat(dir, cstr(name).as_ptr(), mode) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(format!("mkdir {name}: {e}"));
        }
        return Ok(());
    }
    // mkdir's mode is masked by the umask; set it as asked, on what we just made.
    let fd = sys::openat2(dir, name, libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_BENEATH | sys::RESOLVE_NO_SYMLINKS)
        .map_err(|e| format!("open {name}: {e}"))?;
    nix::sys::stat::fchmodat(
        None,
        fd_path(fd.as_raw_fd(), "").as_c_str(),
        nix::sys::stat::Mode::from_bits_truncate(mode),
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )
    .map_err(|e| format!("chmod {name}: {e}"))
}

/// Opens directory `path` inside `root` (symlinks resolved as if `root` were /), creating it
/// and its parents where missing.
pub fn ensure_dir(root: RawFd, path: &str) -> Result<OwnedFd> {
    match sys::openat2(root, path, libc::O_PATH | libc::O_DIRECTORY, sys::RESOLVE_IN_ROOT) {
        Ok(fd) => Ok(fd),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            let (parent, name) = split(path)?;
            let p = ensure_dir(root, parent)?;
            mkdirat(p.as_raw_fd(), name, 0o755)?;
            sys::openat2(
                p.as_raw_fd(),
                name,
                libc::O_PATH | libc::O_DIRECTORY,
                sys::RESOLVE_BENEATH | sys::RESOLVE_NO_SYMLINKS,
            )
            .map_err(|e| format!("open {path}: {e}"))
        }
        Err(e) => Err(format!("open {path} in the sandbox: {e}")),
    }
}

/// Like [`ensure_dir`] for a file (a bind-mount target for a file source).
fn ensure_file(root: RawFd, path: &str) -> Result<OwnedFd> {
    match sys::openat2(root, path, libc::O_PATH, sys::RESOLVE_IN_ROOT) {
        Ok(fd) => Ok(fd),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            let (parent, name) = split(path)?;
            let p = ensure_dir(root, parent)?;
            // SAFETY: valid C string and dirfd.
            let fd = unsafe {
                libc::openat(
                    p.as_raw_fd(),
                    cstr(name).as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                    0o644,
                )
            };
            if fd < 0 {
                return Err(format!("create {path}: {}", std::io::Error::last_os_error()));
            }
            // SAFETY: fd was just opened.
            unsafe { libc::close(fd) };
            sys::openat2(p.as_raw_fd(), name, libc::O_PATH, sys::RESOLVE_BENEATH | sys::RESOLVE_NO_SYMLINKS)
                .map_err(|e| format!("open {path}: {e}"))
        }
        Err(e) => Err(format!("open {path} in the sandbox: {e}")),
    }
}

fn split(path: &str) -> Result<(&str, &str)> {
    let t = path.trim_end_matches('/');
    match t.rsplit_once('/') {
        Some((p, n)) if !n.is_empty() && n != ".." && n != "." => Ok((if p.is_empty() { "/" } else { p }, n)),
        _ => Err(format!("invalid path '{path}'")),
    }
}

fn loopback_up() -> Result<()> {
    // SAFETY: plain socket/ioctl on a struct we own.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(format!("socket: {}", std::io::Error::last_os_error()));
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        let r = libc::ioctl(s, libc::SIOCSIFFLAGS, &req);
        let e = std::io::Error::last_os_error();
        libc::close(s);
        if r != 0 {
            return Err(format!("bring up loopback: {e}"));
        }
    }
    Ok(())
}

/// Makes each of `paths` (absolute, in the sandbox's root) read-only, and every directory
/// above it a mount point, so that none of them can be written, replaced, renamed or removed
/// by anything in the sandbox (the command has no CAP_SYS_ADMIN to take the mounts away):
/// `--protect`. Resolved without following symlinks, by descriptor throughout. Returns how
/// many were protected and, for each that was not, why.
///
/// The order matters. Each file is made read-only first, where every existing view of it
/// meets it: a mount on the file in the mount the processes already stand in (a shell whose
/// working directory was taken before, `/proc/PID/cwd`, a directory fd, all resolve through
/// it). Only then is each directory above bound onto itself, top down, as a recursive clone
/// that carries the read-only mounts beneath it along; a mount point cannot be renamed or
/// removed by any path (the kernel asks of the directory, not of the view). Done the other way
/// round, the read-only mounts sat only in the new views, and an old working directory wrote
/// through to the file (the third red team did).
pub fn protect(paths: &[String]) -> (usize, Vec<String>) {
    let mut why = Vec::new();
    let root = match sys::openat2(libc::AT_FDCWD, "/", libc::O_PATH | libc::O_DIRECTORY, 0) {
        Ok(fd) => fd,
        Err(e) => return (0, vec![format!("/: {e}")]),
    };
    let resolve = sys::RESOLVE_IN_ROOT | sys::RESOLVE_NO_SYMLINKS | sys::RESOLVE_NO_MAGICLINKS;
    // A bind of `rel` onto itself: a (recursive) clone of the tree at it, attached at it.
    let pin = |rel: &str, flags: i32, attrs: u64| -> Result<()> {
        let at = sys::openat2(root.as_raw_fd(), rel, libc::O_PATH | libc::O_NOFOLLOW | flags, resolve)
            .map_err(|e| format!("/{rel}: {e}"))?;
        if flags & libc::O_DIRECTORY == 0 {
            let md = std::fs::File::from(at.try_clone().map_err(|e| format!("/{rel}: {e}"))?)
                .metadata()
                .map_err(|e| format!("/{rel}: {e}"))?;
            if !md.is_file() {
                return Err(format!("/{rel}: not a regular file"));
            }
        }
        let tree = sys::open_tree(at.as_raw_fd(), c"", rel)?;
        // (Private too, as every mount of the sandbox.)
        sys::mount_setattr(tree.as_raw_fd(), attrs, None, rel)?;
        sys::move_mount_to_fd(tree.as_raw_fd(), at.as_raw_fd(), rel)
    };
    let mut done = Vec::new();
    for p in paths {
        let rel = p.trim_start_matches('/');
        match pin(rel, 0, sys::MOUNT_ATTR_RDONLY | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV) {
            Ok(()) => done.push(rel),
            Err(e) => why.push(e),
        }
    }
    let mut dirs: Vec<String> = Vec::new();
    for rel in &done {
        let parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
        for n in 1..parts.len() {
            let d = parts[..n].join("/");
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    // Top down: a parent's clone is attached before its children are looked up through it.
    dirs.sort_by_key(|d| d.matches('/').count());
    for d in &dirs {
        if let Err(e) = pin(d, libc::O_DIRECTORY, 0) {
            why.push(e);
        }
    }
    (done.len(), why)
}
