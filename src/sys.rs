//! Thin wrappers over the syscalls libc does not wrap (clone3, the new mount API, openat2),
//! and fd passing; used by the sandbox and by layer unpacking. Every error carries what was
//! being done.

pub mod beneath;

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub type Result<T> = std::result::Result<T, String>;

pub fn cstr(s: impl AsRef<std::ffi::OsStr>) -> CString {
    CString::new(s.as_ref().as_bytes()).unwrap_or_else(|_| CString::new("<path with NUL>").unwrap())
}

pub fn cpath(p: &Path) -> CString {
    cstr(p.as_os_str())
}

/// `/proc/self/fd/N[/rest]`: the path that reaches what `fd` refers to (used as a mount
/// source or target, so that what was resolved safely is what gets mounted on).
pub fn fd_path(fd: RawFd, rest: &str) -> CString {
    if rest.is_empty() {
        cstr(format!("/proc/self/fd/{fd}"))
    } else {
        cstr(format!("/proc/self/fd/{fd}/{rest}"))
    }
}

fn last_err(what: impl FnOnce() -> String) -> String {
    format!("{}: {}", what(), io::Error::last_os_error())
}

fn check(r: libc::c_long, what: impl FnOnce() -> String) -> Result<libc::c_long> {
    if r < 0 {
        Err(last_err(what))
    } else {
        Ok(r)
    }
}

pub fn mount(
    src: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
    what: &str,
) -> Result<()> {
    let p = |o: Option<&CStr>| o.map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: all pointers are valid C strings or null.
    let r = unsafe { libc::mount(p(src), target.as_ptr(), p(fstype), flags, p(data) as *const libc::c_void) };
    check(r as libc::c_long, || format!("mount {what}")).map(|_| ())
}

pub const OPEN_TREE_CLONE: u32 = 1;
pub const AT_RECURSIVE: u32 = 0x8000;
pub const MOVE_MOUNT_F_EMPTY_PATH: u32 = 0x4;
pub const MOVE_MOUNT_T_EMPTY_PATH: u32 = 0x40;
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;
pub const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

/// A detached copy of the mount tree at `path` (recursive).
pub fn open_tree(dirfd: RawFd, path: &CStr, what: &str) -> Result<OwnedFd> {
    // SAFETY: path is a valid C string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            dirfd,
            path.as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as u32
                | AT_RECURSIVE
                | if path.is_empty() { libc::AT_EMPTY_PATH as u32 } else { 0 },
        )
    };
    // SAFETY: a non-negative return is a new fd we own.
    check(r, || format!("clone mount tree of {what}")).map(|fd| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A new tmpfs, not attached anywhere yet (fsopen, fsconfig, fsmount): an fd on its root, to
/// attach with [`move_mount_to_fd`]. Made without looking any path up.
pub fn tmpfs_detached(options: &[(&str, String)], attrs: u64, what: &str) -> Result<OwnedFd> {
    const FSOPEN_CLOEXEC: u32 = 1;
    const FSCONFIG_SET_STRING: u32 = 1;
    const FSCONFIG_CMD_CREATE: u32 = 6;
    const FSMOUNT_CLOEXEC: u32 = 1;
    // SAFETY: a valid C string; a non-negative return is a new fd we own.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) };
    let fs = check(fs, || format!("create {what}")).map(|fd| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })?;
    for (k, v) in options {
        let (k, v) = (cstr(k), cstr(v));
        // SAFETY: valid C strings and an fs context fd.
        let r = unsafe {
            libc::syscall(libc::SYS_fsconfig, fs.as_raw_fd(), FSCONFIG_SET_STRING, k.as_ptr(), v.as_ptr(), 0)
        };
        check(r, || format!("configure {what} ({}={})", k.to_string_lossy(), v.to_string_lossy()))?;
    }
    // SAFETY: as above.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    };
    check(r, || format!("create {what}"))?;
    // SAFETY: as above; a non-negative return is a new fd we own.
    let m = unsafe { libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), FSMOUNT_CLOEXEC, attrs as libc::c_uint) };
    check(m, || format!("mount {what}")).map(|fd| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Attaches the detached tree `tree` on the directory or file `target` (an fd).
pub fn move_mount_to_fd(tree: RawFd, target: RawFd, what: &str) -> Result<()> {
    let empty = c"";
    // SAFETY: empty is a valid C string; both fds are open.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            empty.as_ptr(),
            target,
            empty.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    check(r, || format!("attach {what}")).map(|_| ())
}

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Sets mount attributes on a whole (detached) tree: read-only, nosuid, nodev, an idmapping;
/// and makes every mount of it private. A clone keeps its source's peer group otherwise: a
/// mount made on it inside the sandbox (a nested bind) would appear on the host, and a host
/// mount made under its source after the start would appear in the sandbox.
pub fn mount_setattr(tree: RawFd, set: u64, userns: Option<RawFd>, what: &str) -> Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: libc::MS_PRIVATE,
        userns_fd: userns.map_or(0, |f| f as u64),
    };
    let empty = c"";
    // SAFETY: attr lives across the call; size matches the struct.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree,
            empty.as_ptr(),
            (libc::AT_EMPTY_PATH as u32 | AT_RECURSIVE) as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(r, || format!("set mount attributes of {what}")).map(|_| ())
}

#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}
pub const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
pub const RESOLVE_NO_SYMLINKS: u64 = 0x04;
pub const RESOLVE_BENEATH: u64 = 0x08;
pub const RESOLVE_IN_ROOT: u64 = 0x10;

/// openat2: resolves `path` with `resolve` rules; Err carries the errno for callers that care.
pub fn openat2(dirfd: RawFd, path: &str, flags: i32, resolve: u64) -> std::result::Result<OwnedFd, io::Error> {
    let c = cstr(path);
    let how = OpenHow { flags: (flags | libc::O_CLOEXEC) as u64, mode: 0, resolve };
    // SAFETY: how lives across the call.
    let r = unsafe {
        libc::syscall(libc::SYS_openat2, dirfd, c.as_ptr(), &how as *const OpenHow, std::mem::size_of::<OpenHow>())
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: a new fd we own.
        Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) })
    }
}

/// Why [`open_untrusted`] refused a file.
#[derive(Debug)]
pub enum Untrusted {
    /// A symlink on the way, or the path leads out of the directory.
    Escapes,
    /// A FIFO, device, socket or directory.
    NotRegular,
    /// Larger than the cap (its size).
    TooLarge(u64),
    Io(io::Error),
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Untrusted::Escapes => f.write_str("a symlink, or a path out of its directory: refused"),
            Untrusted::NotRegular => f.write_str("not a regular file (a FIFO, device or directory): refused"),
            Untrusted::TooLarge(n) => write!(f, "{n} bytes, more than allowed: refused"),
            Untrusted::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Opens `rel` under the directory `dir` as untrusted input (a file a sandbox, an image or a
/// prediction controls): resolved with `resolve` (e.g. RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
/// or RESOLVE_IN_ROOT), without blocking (a FIFO cannot hang the reader), and only if it is a
/// regular file of at most `cap` bytes (`/dev/zero` cannot fill anything). The one place every
/// host-side reader of such files goes through.
pub fn open_untrusted(dir: RawFd, rel: &str, resolve: u64, cap: u64) -> std::result::Result<std::fs::File, Untrusted> {
    // What openat2 itself refuses, refused the same on both paths below (a NUL would
    // otherwise become another name in `cstr`).
    let refuse = |errno| Err(Untrusted::Io(io::Error::from_raw_os_error(errno)));
    if rel.contains('\0') {
        return refuse(libc::EINVAL);
    }
    if rel.is_empty() {
        return refuse(libc::ENOENT);
    }
    if rel.len() >= libc::PATH_MAX as usize {
        return refuse(libc::ENAMETOOLONG);
    }
    // Looked at before it is opened: opening a device node can do things (rewind a tape, arm
    // a watchdog), so only a regular file is opened for reading, through the path fd.
    let at = match openat2(dir, rel, libc::O_PATH | libc::O_NOFOLLOW, resolve | RESOLVE_NO_MAGICLINKS) {
        Ok(fd) => fd,
        // Without openat2 (Linux before 5.6, qemu-user): the same rules walked by hand.
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => walk_beneath(dir, rel, resolve)?,
        Err(e) => {
            return Err(match e.raw_os_error() {
                Some(libc::ELOOP) | Some(libc::EXDEV) => Untrusted::Escapes,
                _ => Untrusted::Io(e),
            })
        }
    };
    let md = std::fs::File::from(at.try_clone().map_err(Untrusted::Io)?).metadata().map_err(Untrusted::Io)?;
    if md.file_type().is_symlink() {
        return Err(Untrusted::Escapes);
    }
    if !md.is_file() {
        return Err(Untrusted::NotRegular);
    }
    if md.len() > cap {
        return Err(Untrusted::TooLarge(md.len()));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", at.as_raw_fd()))
        .map_err(Untrusted::Io)?;
    Ok(f)
}

/// [`open_untrusted`]'s resolution where openat2 is missing: one component at a time by
/// descriptor (`openat(O_PATH|O_NOFOLLOW)`), stricter than openat2's rules: no symlink anywhere
/// on the way (even where `resolve` allows them), no `..`, an absolute path only under
/// RESOLVE_IN_ROOT (taken from `dir`). The last component may be a symlink's own descriptor:
/// the caller refuses it.
fn walk_beneath(dir: RawFd, rel: &str, resolve: u64) -> std::result::Result<OwnedFd, Untrusted> {
    if rel.starts_with('/') && resolve & RESOLVE_IN_ROOT == 0 {
        return Err(Untrusted::Escapes);
    }
    let parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    if parts.contains(&"..") {
        return Err(Untrusted::Escapes);
    }
    // `f/`, `f/.`: a directory is asked for, as openat2 reads them (ENOTDIR for a file).
    let dir_only = rel.ends_with('/') || rel.ends_with("/.") || rel == ".";
    let dup = |fd: RawFd| {
        // SAFETY: F_DUPFD_CLOEXEC on a descriptor the caller holds; a new fd we own.
        let r = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if r < 0 {
            Err(Untrusted::Io(io::Error::last_os_error()))
        } else {
            // SAFETY: as above.
            Ok(unsafe { OwnedFd::from_raw_fd(r) })
        }
    };
    let mut cur = dup(dir)?;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let flags =
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC | if last && !dir_only { 0 } else { libc::O_DIRECTORY };
        let c = cstr(part);
        // SAFETY: a valid C string and a descriptor we own.
        let r = unsafe { libc::openat(cur.as_raw_fd(), c.as_ptr(), flags) };
        if r < 0 {
            let e = io::Error::last_os_error();
            // O_PATH|O_NOFOLLOW|O_DIRECTORY on a symlink says ENOTDIR: told apart from a file.
            let link = || {
                // SAFETY: a zeroed stat is a valid out-buffer; c is a valid C string.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                let r = unsafe { libc::fstatat(cur.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
                r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
            };
            return Err(match e.raw_os_error() {
                Some(libc::ELOOP) => Untrusted::Escapes,
                Some(libc::ENOTDIR) if link() => Untrusted::Escapes,
                _ => Untrusted::Io(e),
            });
        }
        // SAFETY: a new fd we own.
        cur = unsafe { OwnedFd::from_raw_fd(r) };
    }
    Ok(cur)
}

pub fn open(path: &CStr, flags: i32, what: &str) -> Result<OwnedFd> {
    // SAFETY: path is a valid C string.
    let r = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
    // SAFETY: a new fd we own.
    check(r as libc::c_long, || format!("open {what}")).map(|fd| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

pub fn write_file(path: &str, data: &str) -> Result<()> {
    std::fs::write(path, data).map_err(|e| format!("write {path}: {e}"))
}

#[repr(C)]
pub struct CloneArgs {
    pub flags: u64,
    pub pidfd: u64,
    pub child_tid: u64,
    pub parent_tid: u64,
    pub exit_signal: u64,
    pub stack: u64,
    pub stack_size: u64,
    pub tls: u64,
    pub set_tid: u64,
    pub set_tid_size: u64,
    pub cgroup: u64,
}
pub const CLONE_PIDFD: u64 = 0x1000;
pub const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// clone3 without a new stack: returns 0 in the child (like fork), the child's pid and a
/// pidfd in the parent.
pub fn clone3(flags: u64, cgroup_fd: Option<RawFd>) -> io::Result<(i32, Option<OwnedFd>)> {
    let mut pidfd: i32 = -1;
    let mut args = CloneArgs {
        flags: flags | CLONE_PIDFD | if cgroup_fd.is_some() { CLONE_INTO_CGROUP } else { 0 },
        pidfd: &mut pidfd as *mut i32 as u64,
        child_tid: 0,
        parent_tid: 0,
        exit_signal: libc::SIGCHLD as u64,
        stack: 0,
        stack_size: 0,
        tls: 0,
        set_tid: 0,
        set_tid_size: 0,
        cgroup: cgroup_fd.map_or(0, |f| f as u64),
    };
    // SAFETY: args is valid; with no stack given the child continues on a copy of ours.
    let r = unsafe { libc::syscall(libc::SYS_clone3, &mut args as *mut CloneArgs, std::mem::size_of::<CloneArgs>()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    if r == 0 {
        return Ok((0, None));
    }
    // SAFETY: the kernel filled pidfd with a new fd we own.
    Ok((r as i32, Some(unsafe { OwnedFd::from_raw_fd(pidfd) })))
}

pub fn pidfd_kill(pidfd: &OwnedFd, sig: i32) {
    // SAFETY: plain syscall on an fd we hold.
    unsafe { libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), sig, std::ptr::null::<u8>(), 0) };
}

/// Sends `data` and `fds` as one message on a SOCK_SEQPACKET socket.
pub fn send_msg(sock: RawFd, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut libc::c_void, iov_len: data.len() };
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE((fds.len() * 4) as u32) } as usize;
    let mut cbuf = vec![0u8; space.max(1)];
    // SAFETY: msghdr is plain data, filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer is large enough for one cmsg of fds.len() ints.
        unsafe {
            let h = libc::CMSG_FIRSTHDR(&msg);
            (*h).cmsg_level = libc::SOL_SOCKET;
            (*h).cmsg_type = libc::SCM_RIGHTS;
            (*h).cmsg_len = libc::CMSG_LEN((fds.len() * 4) as u32) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr() as *const u8, libc::CMSG_DATA(h), fds.len() * 4);
        }
    }
    // SAFETY: msg points at live buffers.
    let r = unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The most fds one SCM_RIGHTS message carries (the kernel's SCM_MAX_FD).
pub const MAX_FDS: usize = 253;

/// Receives one message (at most 64 KiB: reports, error lines, a seccomp program) and up to
/// [`MAX_FDS`] fds. Ok(None) on EOF; an error if the message or its fds did not fit.
pub fn recv_msg(sock: RawFd) -> io::Result<Option<(Vec<u8>, Vec<OwnedFd>)>> {
    // Not zeroed: the kernel writes what we read, and only that is used.
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.capacity() };
    // SAFETY: pure computation.
    let space = unsafe { libc::CMSG_SPACE((MAX_FDS * 4) as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    // SAFETY: plain data.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = space as _;
    // SAFETY: msg points at live buffers.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote.
    unsafe {
        let mut h = libc::CMSG_FIRSTHDR(&msg);
        while !h.is_null() {
            if (*h).cmsg_level == libc::SOL_SOCKET && (*h).cmsg_type == libc::SCM_RIGHTS {
                let count = ((*h).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / 4;
                let p = libc::CMSG_DATA(h) as *const i32;
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(*p.add(i)));
                }
            }
            h = libc::CMSG_NXTHDR(&msg, h);
        }
    }
    if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(io::Error::other("a message between supervisor and init was cut short"));
    }
    if n == 0 && fds.is_empty() {
        return Ok(None);
    }
    // SAFETY: recvmsg initialised the first n bytes.
    unsafe { buf.set_len(n as usize) };
    Ok(Some((buf, fds)))
}

/// Writes all of `buf` to `fd`, retrying on EINTR/EAGAIN-free blocking fds.
pub fn write_all(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::write(fd, buf.as_ptr() as *const libc::c_void, buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// The name of the filesystem `fd` is on, for error messages ("ext4", "overlay", "nfs", or
/// its magic number).
pub fn fs_name(fd: RawFd) -> String {
    // SAFETY: statfs is plain data the kernel fills.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid fd and buffer.
    if unsafe { libc::fstatfs(fd, &mut st) } != 0 {
        return "an unknown filesystem".into();
    }
    let name = match st.f_type as u64 {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x794C_7630 => "overlay",
        0x6969 => "nfs",
        0x6573_5546 => "fuse",
        0x0BD0_0BD0 => "lustre",
        0x4750_4653 => "gpfs",
        0x2FC1_2FC1 => "zfs",
        0x7371_7368 => "squashfs",
        0xFF53_4D42 | 0xFE53_4D42 => "cifs/smb",
        0x0102_1997 => "9p",
        0x5346_544E => "ntfs",
        0x4D44 => "vfat",
        other => return format!("a filesystem of type {other:#x}"),
    };
    name.into()
}

/// Whether the running kernel is at least `major.minor`.
pub fn kernel_at_least(major: u32, minor: u32) -> bool {
    let Ok(u) = nix::sys::utsname::uname() else { return true };
    let rel = u.release().to_string_lossy().into_owned();
    let mut it =
        rel.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0)) >= (major, minor)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk used where openat2 is missing keeps open_untrusted's rules: beneath the
    /// directory, no symlink on the way or at the end, no `..`, regular files only.
    #[test]
    fn the_walk_without_openat2_keeps_the_rules() {
        let base = std::env::temp_dir().join(format!("psb-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("d/e")).unwrap();
        std::fs::write(base.join("d/e/f"), "x").unwrap();
        std::fs::write(base.join("outside"), "host").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), base.join("d/link")).unwrap();
        std::os::unix::fs::symlink(base.join("d/e"), base.join("d/dirlink")).unwrap();
        let dir = std::fs::File::open(base.join("d")).unwrap();
        let fd = dir.as_raw_fd();
        let walk = |rel: &str, resolve: u64| walk_beneath(fd, rel, resolve);
        let file = |o: OwnedFd| std::fs::File::from(o).metadata().unwrap();
        assert!(file(walk("e/f", RESOLVE_BENEATH).unwrap()).is_file());
        assert!(file(walk("./e//f", RESOLVE_BENEATH).unwrap()).is_file());
        assert!(file(walk("/e/f", RESOLVE_IN_ROOT).unwrap()).is_file());
        assert!(matches!(walk("/e/f", RESOLVE_BENEATH), Err(Untrusted::Escapes)));
        assert!(matches!(walk("../outside", RESOLVE_BENEATH), Err(Untrusted::Escapes)));
        assert!(matches!(walk("e/../../outside", RESOLVE_IN_ROOT), Err(Untrusted::Escapes)));
        assert!(matches!(walk("dirlink/f", RESOLVE_BENEATH), Err(Untrusted::Escapes)));
        assert!(matches!(walk("e/f/g", RESOLVE_BENEATH), Err(Untrusted::Io(_))));
        assert!(matches!(walk("e/missing", RESOLVE_BENEATH), Err(Untrusted::Io(_))));
        // The last component's own descriptor: a link, which open_untrusted refuses.
        assert!(std::fs::File::from(walk("link", RESOLVE_BENEATH).unwrap())
            .metadata()
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(open_untrusted(fd, "link", RESOLVE_BENEATH, 10).is_err());
        assert!(matches!(open_untrusted(fd, "e", RESOLVE_BENEATH, 10), Err(Untrusted::NotRegular)));
        let _ = std::fs::remove_dir_all(&base);
    }

    /// What openat2 refuses, the walk refuses too (a red team's list): a file named as a
    /// directory, an empty path, a NUL (which would become another name), a path past
    /// PATH_MAX. Each through open_untrusted, and the first ones through the walk itself.
    #[test]
    fn the_walk_refuses_what_openat2_refuses() {
        let base = std::env::temp_dir().join(format!("psb-walk2-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("e")).unwrap();
        std::fs::write(base.join("e/f"), "x").unwrap();
        std::fs::write(base.join("e/<path with NUL>"), "y").unwrap();
        std::fs::write(base.join("<path with NUL>"), "y").unwrap();
        let dir = std::fs::File::open(&base).unwrap();
        let fd = dir.as_raw_fd();
        let fl = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
        for rel in ["e/f/", "e/f/.", "e/f//"] {
            assert!(matches!(walk_beneath(fd, rel, fl), Err(Untrusted::Io(_))), "{rel:?}");
            assert!(open_untrusted(fd, rel, fl, 10).is_err(), "{rel:?}");
        }
        let long = format!("{}e/f", "./".repeat(libc::PATH_MAX as usize / 2));
        for rel in ["", "e/f\0", "e/\0/f", long.as_str()] {
            assert!(matches!(open_untrusted(fd, rel, fl, 10), Err(Untrusted::Io(_))), "{:?}", &rel[..rel.len().min(9)]);
        }
        assert!(open_untrusted(fd, "e/f", fl, 10).is_ok());
        let _ = std::fs::remove_dir_all(&base);
    }
}
