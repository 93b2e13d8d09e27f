//! The object directory: every regular file of every image in a store, once.
//!
//! ```text
//! objects/<k0k1>/<k2..k63>       member 0 of the object with key k (64 hex digits)
//! objects/<k0k1>/<k2..k63>.<n>   member n: the same content and metadata, another inode
//! ```
//!
//! An image's root filesystem is a tree of its own (directories, symlinks, device nodes) whose
//! regular files are hard links to members, as ostree's checkouts are. A hard link shares the
//! inode's metadata with every other name, so a file is keyed by its content *and* the metadata
//! the sandbox sees (mode, owner, mtime, xattrs): [`key_of`] hashes all of them. Sandboxes
//! never write a member: the tree is the read-only lower layer of each sandbox's overlay,
//! which copies a file up before any change (content, mode, owner, times, xattrs or a link).
//!
//! Several members of one key: within one image two paths never share an inode unless the
//! image made them hard links (so `tar`, `cp -a`, `du` and `st_ino` inside a sandbox see the
//! image's own link structure; only `st_nlink` tells), so the k-th copy of a file in an image
//! is member k, shared with the k-th copy in every other image; and a member whose link count
//! is at its filesystem's maximum (65000 on ext4) gets a sibling. Members of a key are numbered
//! without gaps (the collector renames the last one into a gap it makes), so "any member" is
//! member 0.
//!
//! Garbage: a member whose only link is its own name (`st_nlink == 1`) is referenced by no
//! image tree and no layer's pins (see `layers.rs`), and goes at the next `prune`.

use crate::sys::cstr;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::CStr;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

pub type Key = [u8; 32];

/// An xattr: name, value.
pub type Xattr = (Vec<u8>, Vec<u8>);

/// A member with more links than this takes no new tree (ext4 allows 65000): what is left is
/// for the hard links of the images that have it.
const NEAR_FULL: u64 = 60_000;

pub fn hex(k: &Key) -> String {
    let mut s = String::with_capacity(64);
    for b in k {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

pub fn parse_hex(s: &str) -> Option<Key> {
    if s.len() != 64 {
        return None;
    }
    let mut k = [0u8; 32];
    for (i, b) in k.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(k)
}

/// `ab/cdef…[.n]`: member `n` of `key`, relative to the object directory.
pub fn member_name(key: &Key, n: u32) -> String {
    let h = hex(key);
    if n == 0 {
        format!("{}/{}", &h[..2], &h[2..])
    } else {
        format!("{}/{}.{n}", &h[..2], &h[2..])
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn os_err(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

/// The xattrs of `fd`, sorted by name.
pub fn xattrs_of(fd: RawFd) -> Result<Vec<Xattr>, String> {
    let mut names = vec![0u8; 4096];
    let n = loop {
        // SAFETY: the buffer is valid for its length.
        let n = unsafe { libc::flistxattr(fd, names.as_mut_ptr().cast(), names.len()) };
        if n >= 0 {
            break n as usize;
        }
        match errno() {
            libc::ERANGE => names.resize(names.len() * 4, 0),
            libc::ENOTSUP => return Ok(Vec::new()),
            _ => return Err(os_err("list xattrs")),
        }
    };
    let mut out = Vec::new();
    for name in names[..n].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let c = std::ffi::CString::new(name).map_err(|_| "xattr name with NUL".to_string())?;
        let mut value = vec![0u8; 256];
        loop {
            // SAFETY: valid C string and buffer.
            let m = unsafe { libc::fgetxattr(fd, c.as_ptr(), value.as_mut_ptr().cast(), value.len()) };
            if m >= 0 {
                value.truncate(m as usize);
                break;
            }
            if errno() != libc::ERANGE {
                return Err(os_err("read xattr"));
            }
            value.resize(value.len() * 4, 0);
        }
        out.push((name.to_vec(), value));
    }
    out.sort();
    Ok(out)
}

fn fstat(fd: RawFd) -> Result<libc::stat, String> {
    // SAFETY: st is plain data the kernel fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(os_err("fstat"));
    }
    Ok(st)
}

/// The key of a file whose content hashes to `content`: the content and everything a sandbox
/// sees of the inode besides its number, link count and change time.
pub fn key_of(content: &[u8; 32], fd: RawFd) -> Result<Key, String> {
    let st = fstat(fd)?;
    let mut h = Sha256::new();
    h.update(b"polysandbox object 1\0");
    h.update(content);
    // (Widths as the kernel's on both architectures: mode, uid and gid 32 bits, time 64.)
    h.update(st.st_mode.to_le_bytes());
    h.update(st.st_uid.to_le_bytes());
    h.update(st.st_gid.to_le_bytes());
    h.update(st.st_mtime.to_le_bytes());
    h.update((st.st_mtime_nsec as u32).to_le_bytes());
    for (name, value) in xattrs_of(fd)? {
        h.update((name.len() as u32).to_le_bytes());
        h.update(&name);
        h.update((value.len() as u32).to_le_bytes());
        h.update(&value);
    }
    Ok(h.finalize().into())
}

/// The object directory of a store.
pub struct Objects {
    pub path: PathBuf,
    dir: OwnedFd,
    /// The store's tmp/, for named temporary files where O_TMPFILE is not supported.
    tmp: PathBuf,
}

/// A number this process has not used before (for temporary names).
pub(crate) fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

impl Objects {
    /// The object directory under `store_root` (made if missing, the owner's alone).
    pub fn open(store_root: &Path) -> Result<Objects, String> {
        use std::os::unix::fs::DirBuilderExt;
        let path = store_root.join("objects");
        if !path.is_dir() {
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
        let dir =
            crate::sys::open(&crate::sys::cpath(&path), libc::O_PATH | libc::O_DIRECTORY, "the object directory")?;
        Ok(Objects { path, dir, tmp: store_root.join("tmp") })
    }

    pub fn fd(&self) -> RawFd {
        self.dir.as_raw_fd()
    }

    /// A new, empty, unnamed file in the object directory's filesystem.
    pub fn temp(&self) -> Result<Temp, String> {
        // SAFETY: valid C string and dirfd; O_TMPFILE makes an inode without a name.
        let fd =
            unsafe { libc::openat(self.fd(), c".".as_ptr(), libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC, 0o600) };
        if fd >= 0 {
            // SAFETY: a new fd we own.
            return Ok(Temp { file: unsafe { std::fs::File::from_raw_fd(fd) }, named: None });
        }
        // A filesystem without O_TMPFILE: a named file in tmp/ (removed on drop; `prune`
        // removes those of processes that died).
        let name = self.tmp.join(format!("obj-{}-{}", std::process::id(), unique()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&name)
            .map_err(|e| format!("{}: {e}", name.display()))?;
        Ok(Temp { file, named: Some(name) })
    }

    /// Opens member 0 of `key` (or another member when the collector is not running, which
    /// callers make sure of with the store's collection lock).
    pub fn open_member(&self, key: &Key) -> Result<std::fs::File, String> {
        for n in 0..4 {
            let rel = member_name(key, n);
            match crate::sys::openat2(self.fd(), &rel, libc::O_RDONLY | libc::O_NOFOLLOW, crate::sys::RESOLVE_BENEATH) {
                Ok(fd) => return Ok(std::fs::File::from(fd)),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => return Err(format!("object {}: {e}", hex(key))),
            }
        }
        Err(format!(
            "object {} is missing from the store: remove the images that use it and import them again",
            hex(key)
        ))
    }

    /// lstat of a member, or None.
    pub fn stat_member(&self, key: &Key, n: u32) -> Option<libc::stat> {
        // SAFETY: st is plain data the kernel fills.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let c = cstr(member_name(key, n));
        // SAFETY: valid pointers.
        (unsafe { libc::fstatat(self.fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } == 0).then_some(st)
    }

    /// A copy of an existing member of `key`, content and metadata, as a new temporary file.
    fn copy_of(&self, key: &Key) -> Result<Temp, String> {
        let mut src = self.open_member(key)?;
        let st = fstat(src.as_raw_fd())?;
        let mut t = self.temp()?;
        io::copy(&mut src, &mut t.file).map_err(|e| format!("copy object {}: {e}", hex(key)))?;
        let fd = t.file.as_raw_fd();
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 || st.st_uid != unsafe { libc::geteuid() } {
            // SAFETY: valid fd.
            if unsafe { libc::fchown(fd, st.st_uid, st.st_gid) } != 0 {
                return Err(os_err("copy object: chown"));
            }
        }
        for (name, value) in xattrs_of(src.as_raw_fd())? {
            let c = std::ffi::CString::new(name).map_err(|_| "xattr name with NUL".to_string())?;
            // SAFETY: valid C string and buffer.
            if unsafe { libc::fsetxattr(fd, c.as_ptr(), value.as_ptr().cast(), value.len(), 0) } != 0 {
                return Err(os_err("copy object: set xattr"));
            }
        }
        // SAFETY: valid fd.
        if unsafe { libc::fchmod(fd, st.st_mode & 0o7777) } != 0 {
            return Err(os_err("copy object: chmod"));
        }
        let ts = [
            libc::timespec { tv_sec: st.st_atime, tv_nsec: st.st_atime_nsec },
            libc::timespec { tv_sec: st.st_mtime, tv_nsec: st.st_mtime_nsec },
        ];
        // SAFETY: valid fd and pointer.
        unsafe { libc::futimens(fd, ts.as_ptr()) };
        let content = {
            let mut h = Sha256::new();
            let mut f = self.open_member(key)?;
            let mut buf = vec![0u8; 256 << 10];
            loop {
                let n = f.read(&mut buf).map_err(|e| format!("read object {}: {e}", hex(key)))?;
                if n == 0 {
                    break;
                }
                h.update(&buf[..n]);
            }
            h.finalize().into()
        };
        if key_of(&content, fd)? != *key {
            return Err(format!(
                "object {}: a copy of it does not come out the same on this filesystem (its xattrs?)",
                hex(key)
            ));
        }
        Ok(t)
    }

    /// Names `t` member `n` of `key`. Err(true): that member exists already.
    fn publish(&self, t: &Temp, key: &Key, n: u32) -> Result<(), Result<String, ()>> {
        let rel = cstr(member_name(key, n));
        for attempt in 0..2 {
            let r = match &t.named {
                // SAFETY: valid C strings; AT_SYMLINK_FOLLOW resolves the magic link to the
                // unnamed inode (linkat with AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH).
                None => unsafe {
                    let proc = cstr(format!("/proc/self/fd/{}", t.file.as_raw_fd()));
                    libc::linkat(libc::AT_FDCWD, proc.as_ptr(), self.fd(), rel.as_ptr(), libc::AT_SYMLINK_FOLLOW)
                },
                // SAFETY: valid C strings.
                Some(p) => unsafe {
                    let c = crate::sys::cpath(p);
                    libc::linkat(libc::AT_FDCWD, c.as_ptr(), self.fd(), rel.as_ptr(), 0)
                },
            };
            if r == 0 {
                return Ok(());
            }
            match errno() {
                libc::EEXIST => return Err(Err(())),
                libc::ENOENT if attempt == 0 => {
                    // The shard directory, made on first use.
                    let shard = cstr(&hex(key)[..2]);
                    // SAFETY: valid C string and dirfd.
                    if unsafe { libc::mkdirat(self.fd(), shard.as_ptr(), 0o700) } != 0 && errno() != libc::EEXIST {
                        return Err(Ok(os_err("make an object directory")));
                    }
                }
                _ => return Err(Ok(os_err(&format!("store object {}", hex(key))))),
            }
        }
        Err(Ok(format!("store object {}: its directory vanished", hex(key))))
    }
}

/// A file being written, to become an object.
pub struct Temp {
    pub file: std::fs::File,
    named: Option<PathBuf>,
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Some(p) = &self.named {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Temp {
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    pub fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)
    }
}

/// What [`Linker::link`] did.
pub struct Linked {
    /// The inode of the member now named in the tree.
    pub ino: u64,
    /// Its disk blocks, in bytes.
    pub blocks: u64,
}

/// Links objects into one image's tree, giving each path of the image a member no other path
/// of the image has (unless the image links them itself).
pub struct Linker<'a> {
    pub objects: &'a Objects,
    /// Members used by this image, per key.
    used: HashMap<Key, Vec<u32>>,
    /// Members this process named (for the clean-up of a failed import).
    pub created: Vec<(Key, u32)>,
    /// Per key, the members below this number are another tree's (see [`Linker::reserve`]).
    floor: HashMap<Key, u32>,
}

impl<'a> Linker<'a> {
    pub fn new(objects: &'a Objects) -> Linker<'a> {
        Linker { objects, used: HashMap::new(), created: Vec::new(), floor: HashMap::new() }
    }

    /// Members 0..`count` of `key` are another tree's that the image shows too (its chain's):
    /// this tree's paths take other members.
    pub fn reserve(&mut self, key: &Key, count: u32) {
        let f = self.floor.entry(*key).or_default();
        *f = (*f).max(count);
    }

    /// Names an object of `key` as `name` in the directory `parent` (where nothing has that
    /// name). `temp`, if given, is the object's content and metadata, used when a new member
    /// is needed; without it a new member is copied from an existing one.
    pub fn link(&mut self, key: &Key, temp: Option<Temp>, parent: RawFd, name: &CStr) -> Result<Linked, String> {
        let floor = self.floor.get(key).copied().unwrap_or(0);
        let used = self.used.entry(*key).or_default();
        let (n, linked) =
            self.objects.link_member(key, temp, parent, name, |n| n < floor || used.contains(&n), &mut self.created)?;
        used.push(n);
        linked.ok_or_else(|| format!("link object {}: the name is taken", hex(key)))
    }
}

impl Objects {
    /// Names a member of `key` (any with room for one more link) as `name` in `parent`;
    /// nothing when `name` exists already.
    pub fn link_any(&self, key: &Key, parent: RawFd, name: &CStr) -> Result<(), String> {
        self.link_member(key, None, parent, name, |_| false, &mut Vec::new()).map(|_| ())
    }

    /// The first member of `key` not `taken` with room for a link, named `name` in `parent`;
    /// a new member (from `temp`, else copied) when there is none. Returns its number and what
    /// was linked (None: `name` existed).
    fn link_member(
        &self,
        key: &Key,
        mut temp: Option<Temp>,
        parent: RawFd,
        name: &CStr,
        taken: impl Fn(u32) -> bool,
        created: &mut Vec<(Key, u32)>,
    ) -> Result<(u32, Option<Linked>), String> {
        let mut n = 0u32;
        // Tries at one member number: a member that exists yet cannot be linked (the target
        // directory gone) must not loop forever.
        let mut tries = 0;
        loop {
            if taken(n) {
                n += 1;
                continue;
            }
            let rel = cstr(member_name(key, n));
            // SAFETY: valid C strings; no AT_SYMLINK_FOLLOW (members are regular files).
            if unsafe { libc::linkat(self.fd(), rel.as_ptr(), parent, name.as_ptr(), 0) } == 0 {
                // SAFETY: st is plain data the kernel fills.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: valid pointers.
                if unsafe { libc::fstatat(parent, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
                    return Err(os_err("stat a linked object"));
                }
                // A member near its filesystem's link limit is left to the images that have it:
                // this image's own hard links to the file need room (an image that filled a
                // member to one link short of the limit made the next image's hard link fail,
                // a red team's).
                if st.st_nlink as u64 > NEAR_FULL {
                    // SAFETY: valid C string and dirfd; the name we just made.
                    unsafe { libc::unlinkat(parent, name.as_ptr(), 0) };
                    n += 1;
                    tries = 0;
                    continue;
                }
                return Ok((n, Some(Linked { ino: st.st_ino, blocks: st.st_blocks as u64 * 512 })));
            }
            match errno() {
                // At the filesystem's link limit: the next member.
                libc::EMLINK => {
                    n += 1;
                    tries = 0;
                }
                libc::EEXIST => return Ok((n, None)),
                // No such member yet: one is made (another process may get there first; then
                // its member is used).
                libc::ENOENT => {
                    tries += 1;
                    if tries > 3 {
                        return Err(os_err(&format!("link object {}", hex(key))));
                    }
                    let t = match temp.take() {
                        Some(t) => t,
                        None => self.copy_of(key)?,
                    };
                    match self.publish(&t, key, n) {
                        Ok(()) => created.push((*key, n)),
                        Err(Err(())) => temp = Some(t),
                        Err(Ok(e)) => return Err(e),
                    }
                }
                _ => return Err(os_err(&format!("link object {}", hex(key)))),
            }
        }
    }
}

/// Every member of the object directory: (key, member number, lstat), shard by shard.
pub fn walk(objects: &Objects, mut each: impl FnMut(&Key, u32, &libc::stat)) -> Result<(), String> {
    for shard in 0..=255u8 {
        let name = format!("{shard:02x}");
        let Ok(d) = std::fs::read_dir(objects.path.join(&name)) else { continue };
        for e in d.flatten() {
            let fname = e.file_name().to_string_lossy().into_owned();
            let (rest, n) = match fname.split_once('.') {
                Some((r, n)) => match n.parse::<u32>() {
                    Ok(n) => (r.to_string(), n),
                    Err(_) => continue,
                },
                None => (fname.clone(), 0),
            };
            let Some(key) = parse_hex(&format!("{name}{rest}")) else { continue };
            if let Some(st) = objects.stat_member(&key, n) {
                each(&key, n, &st);
            }
        }
    }
    Ok(())
}

/// Removes the members of `key` whose only link is their own name, then renames the members
/// left so that they are numbered from 0 without gaps. Only under the store's exclusive
/// collection lock (no importer links meanwhile). Returns (members removed, bytes freed).
pub fn collect_key(objects: &Objects, key: &Key) -> (u64, u64) {
    let mut members: Vec<u32> = Vec::new();
    let mut n = 0;
    let mut misses = 0;
    // Members are numbered without gaps, but a collection interrupted halfway can leave one:
    // look a little past the first missing number.
    while misses < 8 {
        if objects.stat_member(key, n).is_some() {
            members.push(n);
            misses = 0;
        } else {
            misses += 1;
        }
        n += 1;
    }
    let (mut removed, mut freed) = (0, 0);
    let mut kept = Vec::new();
    for m in members {
        match objects.stat_member(key, m) {
            Some(st) if st.st_nlink <= 1 => {
                let c = cstr(member_name(key, m));
                // SAFETY: valid C string and dirfd.
                if unsafe { libc::unlinkat(objects.fd(), c.as_ptr(), 0) } == 0 {
                    removed += 1;
                    freed += st.st_blocks as u64 * 512;
                } else {
                    kept.push(m);
                }
            }
            Some(_) => kept.push(m),
            None => {}
        }
    }
    // Renumber: the kept members become 0..k (a rename keeps the inode, which is what trees
    // and pins link).
    for (want, have) in kept.iter().enumerate() {
        let want = want as u32;
        if *have != want {
            let (from, to) = (cstr(member_name(key, *have)), cstr(member_name(key, want)));
            // SAFETY: valid C strings and dirfds.
            unsafe { libc::renameat(objects.fd(), from.as_ptr(), objects.fd(), to.as_ptr()) };
        }
    }
    (removed, freed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_names() {
        let k: Key = Sha256::digest(b"x").into();
        assert_eq!(parse_hex(&hex(&k)), Some(k));
        assert!(member_name(&k, 0).starts_with(&hex(&k)[..2]));
        assert!(member_name(&k, 3).ends_with(".3"));
        assert_eq!(parse_hex("zz"), None);
    }
}
