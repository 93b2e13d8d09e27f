//! Trees another local user may own or write, and files written where another user may write.
//!
//! polysandbox, often as root, reads trees other users control: the shards given to `merge`,
//! the `--shared` stores of `POLYSANDBOX_SHARED_STORES`, the settings.json and results.jsonl of
//! an output directory. Such a tree is read by descriptor only: its top directory is opened
//! once (as named, like any path the user gives), and everything below it is resolved beneath
//! that descriptor with no symlink anywhere (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)`, or a component-by-component `O_NOFOLLOW` walk where openat2 is
//! missing), directories listed and descended by descriptor: never by a path string resolved
//! again later, which the tree's owner could have swapped for a link meanwhile
//! (`renameat2(RENAME_EXCHANGE)`).
//!
//! What polysandbox writes into a directory (reports, `man -o`, merge's output) is created with
//! `O_CREAT | O_EXCL` (which follows no link) under a random temporary name in that directory,
//! with the mode asked for, and renamed into place: a link planted at either name is replaced,
//! never written through.

use super::{open_untrusted, openat2, walk_beneath, Untrusted, RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS};
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Beneath the directory, no symlink anywhere on the way or at the end.
pub const STRICT: u64 = RESOLVE_BENEATH | super::RESOLVE_NO_SYMLINKS;

/// What a directory entry is, by `lstat` (a link is a link, never what it points to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Dir,
    File,
    Link,
    /// A FIFO, socket or device.
    Other,
}

/// An open directory of a tree read or written by descriptor; `path` is for messages only.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// One component: not empty, no `/`, not `.` or `..`.
fn one_component(name: &OsStr) -> io::Result<CString> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name:?}: not a single name")));
    }
    c_name(name)
}

fn owned(r: libc::c_int) -> io::Result<OwnedFd> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: a new fd we own.
        Ok(unsafe { OwnedFd::from_raw_fd(r) })
    }
}

fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid out-buffer; fd is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Eight random bytes, for temporary names.
fn random() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: b is 8 writable bytes.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 8 {
        // Unique enough with O_EXCL: the name is retried on a collision.
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        return (t as u64) ^ N.fetch_add(1, Ordering::Relaxed).rotate_left(32) ^ std::process::id() as u64;
    }
    u64::from_ne_bytes(b)
}

impl Dir {
    /// The directory at `path`, resolved as named (the top of a tree is the user's word, like
    /// any path given on the command line); a symlink as its last component is refused.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let c = c_name(path.as_os_str())?;
        // SAFETY: a valid C string.
        let fd = owned(unsafe {
            libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        })?;
        Ok(Dir { fd, path: path.to_path_buf() })
    }

    /// The directory at `path`, resolved as named, a symlink at its end followed too: for
    /// a directory the user configured (a store's root), where a link is ordinary.
    pub fn open_as_named(path: &Path) -> io::Result<Dir> {
        let c = c_name(path.as_os_str())?;
        // SAFETY: a valid C string.
        let fd = owned(unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) })?;
        Ok(Dir { fd, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The directory's own `fstat`.
    pub fn stat(&self) -> io::Result<libc::stat> {
        fstat(self.fd())
    }

    /// The directory `rel` beneath this one, no symlink on the way or at the end.
    pub fn dir(&self, rel: &str) -> Result<Dir, Untrusted> {
        if rel.contains('\0') || rel.is_empty() {
            return Err(Untrusted::Io(io::Error::from_raw_os_error(libc::EINVAL)));
        }
        // (No O_NOFOLLOW: with it a link at the end is ENOTDIR; RESOLVE_NO_SYMLINKS makes it
        // ELOOP, told apart as a link.)
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        let fd = match openat2(self.fd(), rel, flags, STRICT | RESOLVE_NO_MAGICLINKS) {
            Ok(fd) => fd,
            // Without openat2 (Linux before 5.6, qemu-user): the same rules walked by hand.
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => return self.dir_walked(rel),
            Err(e) => {
                return Err(match e.raw_os_error() {
                    Some(libc::ELOOP) | Some(libc::EXDEV) => Untrusted::Escapes,
                    _ => Untrusted::Io(e),
                })
            }
        };
        Ok(Dir { fd, path: self.path.join(rel) })
    }

    /// [`Dir::dir`] where openat2 is missing: one component at a time by descriptor, no link.
    fn dir_walked(&self, rel: &str) -> Result<Dir, Untrusted> {
        let at = walk_beneath(self.fd(), rel, STRICT)?;
        let st = fstat(at.as_raw_fd()).map_err(Untrusted::Io)?;
        match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => {}
            libc::S_IFLNK => return Err(Untrusted::Escapes),
            _ => return Err(Untrusted::Io(io::Error::from_raw_os_error(libc::ENOTDIR))),
        }
        // SAFETY: "." beneath a descriptor we hold.
        let fd = owned(unsafe {
            libc::openat(at.as_raw_fd(), c".".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)
        })
        .map_err(Untrusted::Io)?;
        Ok(Dir { fd, path: self.path.join(rel) })
    }

    /// The regular file `rel` beneath this directory, opened for reading: no symlink on the
    /// way or at the end, without blocking, at most `cap` bytes (see [`open_untrusted`]).
    pub fn file(&self, rel: &str, cap: u64) -> Result<File, Untrusted> {
        open_untrusted(self.fd(), rel, STRICT, cap)
    }

    /// The bytes of the regular file `rel` beneath this directory (as [`Dir::file`]); None
    /// when there is no such file.
    pub fn read(&self, rel: &str, cap: u64) -> Result<Option<Vec<u8>>, String> {
        use std::io::Read;
        let shown = || self.path.join(rel).display().to_string();
        let mut f = match self.file(rel, cap) {
            Ok(f) => f,
            Err(Untrusted::Io(e)) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", shown())),
        };
        let mut out = Vec::new();
        // The size was checked on the descriptor; the file may still grow: read no more.
        (&mut f).take(cap).read_to_end(&mut out).map_err(|e| format!("{}: {e}", shown()))?;
        Ok(Some(out))
    }

    /// The directory's entries (not `.` and `..`), each with what it is by `lstat`, in no
    /// particular order. Read from this descriptor: never the path again.
    pub fn entries(&self) -> io::Result<Vec<(OsString, Kind)>> {
        use nix::dir::Type;
        use nix::fcntl::OFlag;
        let mut d = nix::dir::Dir::openat(
            Some(self.fd()),
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(io::Error::from)?;
        let mut out = Vec::new();
        for e in d.iter() {
            let e = e.map_err(io::Error::from)?;
            let name = e.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let kind = match e.file_type() {
                Some(Type::Directory) => Kind::Dir,
                Some(Type::File) => Kind::File,
                Some(Type::Symlink) => Kind::Link,
                Some(_) => Kind::Other,
                None => self.kind_of(e.file_name())?,
            };
            out.push((OsStr::from_bytes(name).to_os_string(), kind));
        }
        Ok(out)
    }

    fn kind_of(&self, name: &std::ffi::CStr) -> io::Result<Kind> {
        // SAFETY: a zeroed stat is a valid out-buffer; name is a valid C string.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatat(self.fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFREG => Kind::File,
            libc::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        })
    }

    /// What `name` (one component) is here, without following it; None when absent.
    pub fn kind(&self, name: &OsStr) -> io::Result<Option<Kind>> {
        match self.kind_of(&one_component(name)?) {
            Ok(k) => Ok(Some(k)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A new directory `name` here, made with `mode` (the umask narrows it), and opened
    /// without following a link; an existing directory is opened as it is (never a link).
    pub fn mkdir(&self, name: &OsStr, mode: u32) -> io::Result<Dir> {
        let c = one_component(name)?;
        // SAFETY: a valid C string and a descriptor we hold.
        if unsafe { libc::mkdirat(self.fd(), c.as_ptr(), mode as libc::mode_t) } != 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(e);
            }
        }
        // SAFETY: as above.
        let fd = owned(unsafe {
            libc::openat(self.fd(), c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        })?;
        Ok(Dir { fd, path: self.path.join(name) })
    }

    /// A new directory `name` here, made with `mode`: one that exists (a directory, a link)
    /// is an error, so what is returned is the directory made now.
    pub fn create_dir(&self, name: &OsStr, mode: u32) -> io::Result<Dir> {
        let c = one_component(name)?;
        // SAFETY: a valid C string and a descriptor we hold.
        if unsafe { libc::mkdirat(self.fd(), c.as_ptr(), mode as libc::mode_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        self.mkdir(name, mode)
    }

    /// A new regular file `name` here, for writing, with `mode` (the umask narrows it):
    /// `O_CREAT | O_EXCL`, so nothing that exists (a file, a link) is opened.
    pub fn create(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let c = one_component(name)?;
        // SAFETY: a valid C string and a descriptor we hold.
        let fd = owned(unsafe {
            libc::openat(
                self.fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        })?;
        Ok(File::from(fd))
    }

    /// `data` written to `name` here as a new file of `mode`, put in place by rename: made
    /// under a random name with `O_EXCL`, so neither a link at `name` nor one at the temporary
    /// name is written through, and nothing half written is left.
    pub fn write_new(&self, name: &OsStr, data: &[u8], mode: u32) -> io::Result<()> {
        one_component(name)?;
        let mut last = None;
        for _ in 0..16 {
            let mut tmp = OsString::from(".");
            tmp.push(name);
            tmp.push(format!(".{:016x}.partial", random()));
            let mut f = match self.create(&tmp, mode) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    last = Some(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let r = f.write_all(data).and_then(|_| f.sync_data()).and_then(|_| self.rename(&tmp, self, name));
            if r.is_err() {
                let _ = self.remove_file(&tmp);
            }
            return r;
        }
        Err(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EEXIST)))
    }

    /// Renames `from` here to `to` in `dir` (each one component): a link at `to` is replaced.
    pub fn rename(&self, from: &OsStr, dir: &Dir, to: &OsStr) -> io::Result<()> {
        let (a, b) = (one_component(from)?, one_component(to)?);
        // SAFETY: valid C strings and descriptors we hold.
        if unsafe { libc::renameat(self.fd(), a.as_ptr(), dir.fd(), b.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Removes the file (or link) `name` here.
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let c = one_component(name)?;
        // SAFETY: a valid C string and a descriptor we hold.
        if unsafe { libc::unlinkat(self.fd(), c.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sets the directory's own mode (by descriptor).
    pub fn chmod(&self, mode: u32) -> io::Result<()> {
        // SAFETY: a descriptor we hold.
        if unsafe { libc::fchmod(self.fd(), mode as libc::mode_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The directory `path` names (opened as named) and its last component (the file's name in it).
fn parent_and_name(path: &Path) -> io::Result<(Dir, OsString)> {
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // The parent as named: it is the user's (or the caller's own output directory).
    let c = c_name(parent.as_os_str())?;
    // SAFETY: a valid C string.
    let fd = owned(unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) })?;
    Ok((Dir { fd, path: parent.to_path_buf() }, name.to_os_string()))
}

/// `data` written to `path` as a new file of `mode` put in place by rename (see
/// [`Dir::write_new`]): never through a link at `path` or at a temporary name beside it.
pub fn write_new(path: &Path, data: &[u8], mode: u32) -> Result<(), String> {
    parent_and_name(path)
        .and_then(|(dir, name)| dir.write_new(&name, data, mode))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The bytes of the regular file `path` (its directory as named, the file itself neither a
/// link nor anything but a regular file, at most `cap` bytes); None when there is none.
pub fn read_file(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, String> {
    let (dir, name) = match parent_and_name(path) {
        Ok(x) => x,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let name = name.to_str().ok_or_else(|| format!("{}: not a UTF-8 name", path.display()))?;
    dir.read(name, cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("psb-beneath-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A tree's directories and files are reached by descriptor and never through a link:
    /// a link to a directory outside, as a directory on the way or as the last component,
    /// is refused; a listing says a link is a link.
    #[test]
    fn a_tree_is_read_beneath_its_root_with_no_link() {
        let base = scratch("read");
        std::fs::create_dir_all(base.join("t/d")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret"), "s").unwrap();
        std::fs::write(base.join("t/d/f"), "x").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), base.join("t/link")).unwrap();
        std::os::unix::fs::symlink(base.join("outside/secret"), base.join("t/d/flink")).unwrap();
        let t = Dir::open(&base.join("t")).unwrap();
        assert_eq!(t.read("d/f", 10).unwrap().unwrap(), b"x");
        assert!(t.read("d/missing", 10).unwrap().is_none());
        assert!(matches!(t.dir("link"), Err(Untrusted::Escapes)));
        assert!(t.read("link/secret", 10).is_err());
        assert!(t.read("d/flink", 10).is_err());
        assert!(t.read("../outside/secret", 10).is_err());
        assert!(matches!(t.dir("../outside"), Err(Untrusted::Escapes)));
        // The same without openat2.
        assert!(matches!(t.dir_walked("link"), Err(Untrusted::Escapes)));
        assert!(matches!(t.dir_walked("link/"), Err(Untrusted::Escapes)));
        assert!(matches!(t.dir_walked("../outside"), Err(Untrusted::Escapes)));
        assert!(matches!(t.dir_walked("d/f"), Err(Untrusted::Io(_))));
        assert_eq!(t.dir_walked("d").unwrap().entries().unwrap().len(), 2);
        let d = t.dir("d").unwrap();
        let mut e = d.entries().unwrap();
        e.sort();
        assert_eq!(e, vec![("f".into(), Kind::File), ("flink".into(), Kind::Link)]);
        assert!(Dir::open(&base.join("t/link")).is_err(), "a link as the top is not followed");
        let _ = std::fs::remove_dir_all(&base);
    }

    /// A file written into a directory replaces a link at its name and writes nothing
    /// through it; it has the mode asked for (no wider).
    #[test]
    fn a_write_never_follows_a_planted_link() {
        let base = scratch("write");
        std::fs::write(base.join("victim"), "keep").unwrap();
        std::os::unix::fs::symlink(base.join("victim"), base.join("out.json")).unwrap();
        write_new(&base.join("out.json"), b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(base.join("victim")).unwrap(), "keep");
        let md = std::fs::symlink_metadata(base.join("out.json")).unwrap();
        assert!(md.is_file());
        assert_eq!(md.mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(base.join("out.json")).unwrap(), "new");
        let d = Dir::open(&base).unwrap();
        let sub = d.mkdir("sub".as_ref(), 0o700).unwrap();
        assert_eq!(std::fs::metadata(base.join("sub")).unwrap().permissions().mode() & 0o777, 0o700);
        assert!(sub.create("f".as_ref(), 0o640).is_ok());
        assert!(sub.create("f".as_ref(), 0o640).is_err(), "O_EXCL");
        std::os::unix::fs::symlink(base.join("victim"), base.join("sub/l")).unwrap();
        assert!(sub.create("l".as_ref(), 0o640).is_err(), "not through a link");
        assert!(d.mkdir("../x".as_ref(), 0o700).is_err());
        let _ = std::fs::remove_dir_all(&base);
    }
}
