//! `-v SRC:DST:U`: hands a bind source to the ids the sandbox writes it as, as podman's `:U`
//! does, and as the note about read-write binds asks the user to do by hand.
//!
//! Done by descriptor throughout: every entry is opened where it is (`O_PATH | O_NOFOLLOW`,
//! relative to its parent's fd), its owner read from that fd, and only that inode changed
//! (`fchownat(fd, "", AT_EMPTY_PATH)`): a symlink is changed itself, never followed, and an
//! entry swapped meanwhile is not the one changed. Only what the caller owns is changed, and
//! only directories the caller owns are entered; entries owned by anyone else, on another
//! filesystem (a mount below the source), or regular files with other hard links (their other
//! names may be anywhere on the filesystem) are left as they are, and counted.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// What [`chown_tree`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Chowned {
    /// Entries whose owner was changed.
    pub changed: u64,
    /// Entries owned by someone else (and, for a directory, what is in it): left.
    pub others: u64,
    /// Regular files with more than one name: left.
    pub linked: u64,
    /// Entries on another filesystem than the source: left.
    pub other_fs: u64,
}

/// Directories of the host that are never handed over, whoever asks (podman refuses the same).
const REFUSED: &[&str] = &[
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt", "/opt", "/proc",
    "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/var/lib", "/var/tmp",
];

fn stat_fd(fd: RawFd) -> Result<libc::stat, std::io::Error> {
    // SAFETY: st is plain data the kernel fills; an fd we hold (O_PATH works since Linux 3.6).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

fn openat(dir: RawFd, name: &CString, flags: i32) -> Result<OwnedFd, std::io::Error> {
    // SAFETY: a valid C string and dirfd; a new fd we own.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just opened.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Hands the tree at `source` (absolute, without symlinks: canonicalised) to `uid`:`gid`.
pub fn chown_tree(source: &Path, uid: u32, gid: u32) -> Result<Chowned, String> {
    let shown = source.display();
    if REFUSED.iter().any(|r| Path::new(r) == source) {
        return Err(format!("-v {shown}:...:U: refused: a system directory of the host is never handed to a sandbox"));
    }
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let src = source.to_str().ok_or_else(|| format!("-v {shown}: not UTF-8"))?;
    let top =
        crate::sys::openat2(libc::AT_FDCWD, src, libc::O_PATH | libc::O_NOFOLLOW, crate::sys::RESOLVE_NO_SYMLINKS)
            .map_err(|e| format!("-v {shown}:...:U: {e}"))?;
    let st = stat_fd(top.as_raw_fd()).map_err(|e| format!("-v {shown}:...:U: {e}"))?;
    if st.st_uid != me && st.st_uid != uid {
        return Err(format!("-v {shown}:...:U: refused: it is owned by uid {}, not by you", st.st_uid));
    }
    let mut done = Chowned::default();
    if st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_nlink > 1 {
        // Its other names may be anywhere on the filesystem.
        done.linked = 1;
        return Ok(done);
    }
    let dev = st.st_dev;
    let chown = |fd: RawFd, st: &libc::stat, what: &dyn Fn() -> String, done: &mut Chowned| -> Result<(), String> {
        if (st.st_uid, st.st_gid) == (uid, gid) {
            return Ok(());
        }
        // SAFETY: an fd we hold and an empty C string: the inode the fd is, never a path.
        if unsafe { libc::fchownat(fd, c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH) } != 0 {
            return Err(format!("-v {shown}:...:U: {}: {}", what(), std::io::Error::last_os_error()));
        }
        done.changed += 1;
        Ok(())
    };
    chown(top.as_raw_fd(), &st, &|| shown.to_string(), &mut done)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Ok(done);
    }
    let first = openat(top.as_raw_fd(), &CString::new(".").unwrap(), libc::O_RDONLY | libc::O_DIRECTORY)
        .map_err(|e| format!("-v {shown}:...:U: {e}"))?;
    // Depth first, one open directory per level.
    let mut stack: Vec<(nix::dir::Dir, String)> = vec![(
        nix::dir::Dir::from_fd(std::os::fd::IntoRawFd::into_raw_fd(first))
            .map_err(|e| format!("-v {shown}:...:U: {e}"))?,
        String::new(),
    )];
    while let Some((mut dir, rel)) = stack.pop() {
        let dfd = dir.as_raw_fd();
        let mut subdirs = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(|e| format!("-v {shown}:...:U: {rel}: {e}"))?;
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            let name = name.to_owned();
            let path = format!("{rel}/{}", name.to_string_lossy());
            let what = || format!("{shown}{path}");
            let fd = match openat(dfd, &name, libc::O_PATH) {
                Ok(fd) => fd,
                // Gone meanwhile: nothing to hand over.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => return Err(format!("-v {shown}:...:U: {}: {e}", what())),
            };
            let st = stat_fd(fd.as_raw_fd()).map_err(|e| format!("-v {shown}:...:U: {}: {e}", what()))?;
            let kind = st.st_mode & libc::S_IFMT;
            if st.st_dev != dev {
                done.other_fs += 1;
                continue;
            }
            if st.st_uid != me && st.st_uid != uid {
                done.others += 1;
                continue;
            }
            if kind == libc::S_IFREG && st.st_nlink > 1 {
                done.linked += 1;
                continue;
            }
            chown(fd.as_raw_fd(), &st, &what, &mut done)?;
            if kind == libc::S_IFDIR {
                subdirs.push((name, path, st.st_ino));
            }
        }
        for (name, path, ino) in subdirs {
            let fd = match openat(dfd, &name, libc::O_RDONLY | libc::O_DIRECTORY) {
                Ok(fd) => fd,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)) => continue,
                Err(e) => return Err(format!("-v {shown}:...:U: {shown}{path}: {e}")),
            };
            // The directory handed over, not one swapped in since.
            let st = stat_fd(fd.as_raw_fd()).map_err(|e| format!("-v {shown}:...:U: {shown}{path}: {e}"))?;
            if st.st_ino != ino || st.st_dev != dev {
                continue;
            }
            stack.push((
                nix::dir::Dir::from_fd(std::os::fd::IntoRawFd::into_raw_fd(fd))
                    .map_err(|e| format!("-v {shown}:...:U: {e}"))?,
                path,
            ));
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// The tree is handed over, its symlinks changed themselves and never followed, hard links
    /// and system directories left alone.
    #[test]
    fn hands_over_the_tree_by_fd_without_following_links() {
        if crate::sys::openat2(libc::AT_FDCWD, "/", libc::O_PATH, 0)
            .is_err_and(|e| e.raw_os_error() == Some(libc::ENOSYS))
        {
            let line = "SKIPPED: hands_over_the_tree_by_fd_without_following_links: openat2 is not implemented here (qemu-user?)\n";
            // SAFETY: a write of a valid buffer to fd 2.
            unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
            return;
        }
        assert!(chown_tree(Path::new("/"), 1, 1).is_err());
        assert!(chown_tree(Path::new("/etc"), 1, 1).is_err());
        let base = std::env::temp_dir().join(format!("psb-chown-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let tree = base.join("tree");
        let outside = base.join("outside");
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        std::fs::write(tree.join("a/b/file"), "x").unwrap();
        std::fs::write(&outside, "host").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("link")).unwrap();
        std::fs::write(tree.join("linked"), "x").unwrap();
        std::fs::hard_link(tree.join("linked"), base.join("other-name")).unwrap();
        // SAFETY: geteuid/getegid cannot fail.
        let (me, my_gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let before = std::fs::metadata(&outside).unwrap();
        if me == 0 {
            let got = chown_tree(&tree, 4242, 4343).unwrap();
            for p in ["", "a", "a/b", "a/b/file"] {
                let md = std::fs::symlink_metadata(tree.join(p)).unwrap();
                assert_eq!((md.uid(), md.gid()), (4242, 4343), "{p}");
            }
            let l = std::fs::symlink_metadata(tree.join("link")).unwrap();
            assert_eq!(l.uid(), 4242, "the link itself");
            let o = std::fs::metadata(&outside).unwrap();
            assert_eq!((o.uid(), o.gid()), (before.uid(), before.gid()), "the link's target was not changed");
            assert_eq!(std::fs::metadata(tree.join("linked")).unwrap().uid(), 0, "a hard-linked file is left");
            assert_eq!(got.linked, 1);
            assert_eq!(got.changed, 5);
            // Another user's entry is left, and not entered.
            std::fs::create_dir(tree.join("theirs")).unwrap();
            std::fs::write(tree.join("theirs/f"), "x").unwrap();
            std::os::unix::fs::chown(tree.join("theirs"), Some(777), Some(777)).unwrap();
            std::fs::write(tree.join("a/mine"), "x").unwrap();
            let got = chown_tree(&tree, 4242, 4343).unwrap();
            assert_eq!((got.others, got.changed), (1, 1), "{got:?}");
            assert_eq!(std::fs::metadata(tree.join("theirs/f")).unwrap().uid(), 0);
            assert_eq!(
                std::fs::metadata(tree.join("a/mine")).unwrap().uid(),
                4242,
                "handed over, in a tree handed before"
            );
            // A tree handed to another id is not the caller's to hand on.
            assert!(chown_tree(&tree, 5000, 5000).is_err());
        } else {
            // Rootless: to the caller itself, which changes nothing but the group.
            let got = chown_tree(&tree, me, my_gid).unwrap();
            assert_eq!(got.linked, 1);
            assert_eq!(std::fs::metadata(&outside).unwrap().uid(), before.uid());
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}
