//! Applying image layers to a directory, safely.
//!
//! The `tar` crate (0.4.46 or later: consistent PAX handling) is used as a parser only. Every
//! entry is created relative to an fd of its parent directory, and that parent is opened
//! from the root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`: nothing is ever
//! created outside the root, and nothing is written through a symlink (an archive that tries,
//! e.g. `evil -> /etc` then `evil/passwd`, or a symlink to `/` replacing a directory as in
//! CVE-2021-29136, is refused). Hard links resolve their target the same way.
//!
//! The stream is verified as it is read: the compressed bytes against the layer digest, the
//! uncompressed bytes against the DiffID, and their count against the size cap. gzip
//! (multi-member), zstd and plain tar are told apart by their magic bytes.
//!
//! [`unpack_image`] builds the whole rootfs in a temporary directory beside the destination
//! and renames it into place only when every layer applied and verified: a refused or corrupt
//! image leaves nothing behind.

use super::objects::{key_of, Key, Linker};
use super::tarsplit::{Recorder, Replay};
use crate::sys::{self, cstr};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::ffi::CString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How to unpack.
#[derive(Debug, Clone)]
pub struct Options {
    /// Unprivileged: device nodes are skipped, setuid/setgid bits stripped, files owned by
    /// the caller, privileged xattrs skipped.
    pub rootless: bool,
    /// For a store other users read (even as root): no device nodes, no setuid/setgid bits,
    /// no privileged xattrs (file capabilities), ownership kept.
    pub strip_privilege: bool,
    /// Refuse an image whose layers unpack to more than this many bytes (tar stream bytes).
    pub max_unpacked: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            // SAFETY: geteuid cannot fail.
            rootless: unsafe { libc::geteuid() } != 0,
            strip_privilege: false,
            max_unpacked: 64 << 30,
        }
    }
}

/// One layer to apply: its bytes and what they must hash to.
pub struct Layer<R> {
    pub reader: R,
    /// `sha256:…` of the bytes as stored (compressed), if known.
    pub digest: Option<String>,
    /// `sha256:…` of the uncompressed tar, if known.
    pub diff_id: Option<String>,
}

/// What unpacking changed relative to the archive (shown by `inspect`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Changes {
    pub device_nodes_skipped: u64,
    pub setid_bits_stripped: u64,
    pub ownership_taken: u64,
    pub xattrs_skipped: u64,
    pub entries: u64,
    pub bytes: u64,
    /// The DiffID (sha256 of the uncompressed tar) of each layer, in order.
    #[serde(default)]
    pub diff_ids: Vec<String>,
    /// 1: the image's regular files are hard links into the store's object directory and its
    /// layers are kept as records; 0: a tree of its own (made by an older version).
    #[serde(default)]
    pub layout: u32,
    /// Disk bytes of the tree besides its regular files (directories, symlinks).
    #[serde(default)]
    pub tree_bytes: u64,
    /// The tree of the image's layers but its last (`chains/<name>` in the store), under the
    /// image's own tree of its last layer: the lower layers of its sandboxes' overlay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
}

/// [`Changes::layout`] of an image whose files are objects.
pub const LAYOUT_OBJECTS: u32 = 1;

impl Changes {
    /// Adds what one more layer changed.
    pub fn add(&mut self, c: Changes) {
        self.device_nodes_skipped += c.device_nodes_skipped;
        self.setid_bits_stripped += c.setid_bits_stripped;
        self.ownership_taken += c.ownership_taken;
        self.xattrs_skipped += c.xattrs_skipped;
        self.entries += c.entries;
        self.bytes += c.bytes;
        self.diff_ids.extend(c.diff_ids);
    }
}

/// Why unpacking refused an image. One line for the user.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) type Result<T> = std::result::Result<T, Error>;

pub(crate) fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error(msg.into()))
}

/// Applies `layers` in order into a new directory `dest` (which must not exist), atomically.
pub fn unpack_image<R: Read + Send>(layers: Vec<Layer<R>>, dest: &Path, opts: &Options) -> Result<Changes> {
    let tmp = partial_dir(dest)?;
    let result = (|| {
        let root = open_dir(&tmp)?;
        let mut total = Changes::default();
        for (i, layer) in layers.into_iter().enumerate() {
            let c = apply_layer(layer, root.as_raw_fd(), opts, total.bytes)
                .map_err(|e| Error(format!("layer {}: {e}", i + 1)))?;
            total.add(c);
        }
        Ok(total)
    })();
    into_place(result, &tmp, dest)
}

/// A new, empty directory beside `dest` (which must not exist) to build its tree in, for
/// [`into_place`].
pub(crate) fn partial_dir(dest: &Path) -> Result<PathBuf> {
    if dest.exists() {
        return err(format!("{} exists already", dest.display()));
    }
    if dest.file_name().is_none() {
        return err(format!("invalid destination {}", dest.display()));
    }
    let tmp = partial_path(dest);
    let _ = remove_tree(&tmp);
    std::fs::create_dir(&tmp).map_err(|e| Error(format!("create {}: {e}", tmp.display())))?;
    Ok(tmp)
}

/// A tree built at `tmp` renamed to `dest` if `result` is Ok, removed otherwise. Another
/// process that made `dest` first made it from the same inputs: its copy is as good as ours.
pub(crate) fn into_place<T>(result: Result<T>, tmp: &Path, dest: &Path) -> Result<T> {
    match result {
        Ok(c) => match std::fs::rename(tmp, dest) {
            Ok(()) => Ok(c),
            Err(_) if dest.is_dir() => {
                let _ = remove_tree(tmp);
                Ok(c)
            }
            Err(e) => {
                let _ = remove_tree(tmp);
                err(format!("rename into {}: {e}", dest.display()))
            }
        },
        Err(e) => {
            let _ = remove_tree(tmp);
            Err(e)
        }
    }
}

/// A reader that hashes and counts what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
    count: u64,
    limit: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.count += n as u64;
        if self.count > self.limit {
            return Err(io::Error::other(format!(
                "unpacked size exceeds the limit of {} bytes (--max-unpacked-size)",
                self.limit
            )));
        }
        Ok(n)
    }
}

fn hex_digest(h: Sha256) -> String {
    let bytes = h.finalize();
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The decompressed tar stream, produced by another thread (reading, hashing and
/// decompressing overlap with creating the files), in chunks.
struct Chunks {
    rx: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    cur: Vec<u8>,
    pos: usize,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            match self.rx.recv() {
                Ok(Ok(c)) => {
                    self.cur = c;
                    self.pos = 0;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.cur.len() - self.pos);
        buf[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// What the producer thread saw: the kind of stream, its digest, the DiffID, the tar's bytes,
/// the stream's bytes.
type Produced = (&'static str, String, String, u64, u64);

fn produce<R: Read>(
    reader: R,
    limit: u64,
    tx: std::sync::mpsc::SyncSender<io::Result<Vec<u8>>>,
) -> std::result::Result<Produced, (&'static str, String)> {
    let compressed = Hashing { inner: reader, hash: Sha256::new(), count: 0, limit: u64::MAX };
    let mut buffered = BufReader::with_capacity(256 * 1024, compressed);
    let magic = buffered
        .fill_buf()
        .map_err(|e| ("tar", format!("read: {e}")))?
        .get(..4)
        .map(|m| m.to_vec())
        .unwrap_or_default();
    let kind = if magic.starts_with(&[0x1f, 0x8b]) {
        "gzip"
    } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        "zstd"
    } else {
        "tar"
    };
    let decompressed: Box<dyn Read + '_> = match kind {
        "gzip" => Box::new(flate2::bufread::MultiGzDecoder::new(&mut buffered)),
        "zstd" => {
            Box::new(zstd::stream::read::Decoder::with_buffer(&mut buffered).map_err(|e| (kind, format!("zstd: {e}")))?)
        }
        _ => Box::new(&mut buffered),
    };
    let mut tar_stream = Hashing { inner: decompressed, hash: Sha256::new(), count: 0, limit };
    loop {
        let mut chunk = vec![0u8; 512 * 1024];
        let mut filled = 0;
        // Fill whole chunks: fewer, larger hand-offs.
        while filled < chunk.len() {
            match tar_stream.read(&mut chunk[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let msg = e.to_string();
                    let _ = tx.send(Err(e));
                    return Err((kind, msg));
                }
            }
        }
        if filled == 0 {
            break;
        }
        chunk.truncate(filled);
        if tx.send(Ok(chunk)).is_err() {
            // The consumer stopped (it refused an entry): its error is the one to report.
            return Err((kind, String::new()));
        }
    }
    drop(tx);
    let diff_id = hex_digest(std::mem::take(&mut tar_stream.hash));
    let bytes = tar_stream.count;
    drop(tar_stream);
    io::copy(&mut buffered, &mut io::sink()).map_err(|e| (kind, format!("read: {e}")))?;
    let read = buffered.get_ref().count;
    let digest = hex_digest(std::mem::take(&mut buffered.get_mut().hash));
    Ok((kind, digest, diff_id, bytes, read))
}

/// Applies one layer onto the directory `root`. `already` bytes were unpacked by earlier
/// layers (counted against the cap).
pub fn apply_layer<R: Read + Send>(layer: Layer<R>, root: RawFd, opts: &Options, already: u64) -> Result<Changes> {
    apply_layer_to(layer, root, opts, already, &mut Files::Plain, None).map(|(c, _)| c)
}

/// What a layer's stream was: its digest as read (compressed) and its length.
pub struct Streamed {
    pub digest: String,
    pub read: u64,
}

/// [`apply_layer`], regular files going where `files` says.
pub(crate) fn apply_layer_to<R: Read + Send>(
    layer: Layer<R>,
    root: RawFd,
    opts: &Options,
    already: u64,
    files: &mut Files,
    below: Option<RawFd>,
) -> Result<(Changes, Streamed)> {
    let limit = opts.max_unpacked.saturating_sub(already);
    let (tx, rx) = std::sync::mpsc::sync_channel(8);
    let reader = layer.reader;
    let (applied, produced) = std::thread::scope(|s| {
        let producer = s.spawn(move || produce(reader, limit, tx));
        let chunks = Chunks { rx, cur: Vec::new(), pos: 0 };
        let applied = match files {
            Files::Record { rec, .. } => {
                let tee = rec.reader(chunks);
                apply_stream(tee, root, opts, files, below)
            }
            _ => apply_stream(chunks, root, opts, files, below),
        };
        (applied, producer.join().expect("the decompressing thread"))
    });
    let (changes, (_, digest, diff_id, bytes, read)) = match (applied, produced) {
        (Ok(c), Ok(p)) => (c, p),
        (Ok(_), Err((kind, e))) => return err(format!("corrupt {kind} stream: {e}")),
        (Err(e), Ok((kind, ..))) | (Err(e), Err((kind, _))) => {
            return Err(match kind {
                "tar" => e,
                k => Error(format!("{e} (a corrupt {k} stream is reported so too)")),
            })
        }
    };
    if let Some(want) = &layer.digest {
        if *want != digest {
            return err(format!("digest mismatch: expected {want}, got {digest}"));
        }
    }
    if let Some(want) = &layer.diff_id {
        if *want != diff_id {
            return err(format!("DiffID mismatch: expected {want}, got {diff_id}"));
        }
    }
    Ok((Changes { bytes, diff_ids: vec![diff_id], ..changes }, Streamed { digest, read }))
}

/// Applies the tar read from `reader`, then reads it to its end (trailing padding counts
/// towards both digests, and a tar-split keeps it).
pub(crate) fn apply_stream<R: Read>(
    reader: R,
    root: RawFd,
    opts: &Options,
    files: &mut Files,
    below: Option<RawFd>,
) -> Result<Changes> {
    let mut archive = tar::Archive::new(reader);
    let applied = apply_entries(&mut archive, root, opts, files, below);
    let mut reader = archive.into_inner();
    let rest = if applied.is_ok() { io::copy(&mut reader, &mut io::sink()).map(|_| ()) } else { Ok(()) };
    drop(reader);
    applied.and_then(|c| rest.map(|_| c).map_err(|e| Error(format!("read: {e}"))))
}

/// A path inside the root, as components. Leading `/` and `./` are dropped; `..` is refused.
fn components(raw: &[u8]) -> Result<Vec<String>> {
    let s =
        std::str::from_utf8(raw).map_err(|_| Error(format!("non-UTF-8 path {:?}", String::from_utf8_lossy(raw))))?;
    let mut out = Vec::new();
    for c in s.split('/') {
        match c {
            "" | "." => {}
            ".." => return err(format!("path '{s}' escapes the root ('..')")),
            c => out.push(c.to_string()),
        }
    }
    Ok(out)
}

fn last_os(what: &str) -> Error {
    Error(format!("{what}: {}", io::Error::last_os_error()))
}

/// Opens the parent directory `comps` under `root`, creating missing components (0755, as
/// docker does), never leaving the root nor following a symlink.
fn parent_dir(root: RawFd, comps: &[String], what: &str) -> Result<OwnedFd> {
    match open_beneath(root, comps, what) {
        Err(_) if !comps.is_empty() && lstat_path(root, comps).is_none() => {
            let (last, up) = comps.split_last().expect("non-empty");
            let parent = parent_dir(root, up, what)?;
            // SAFETY: valid C string and dirfd.
            if unsafe { libc::mkdirat(parent.as_raw_fd(), cstr(last).as_ptr(), 0o755) } != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EEXIST) {
                    return err(format!("{what}: mkdir {}: {e}", comps.join("/")));
                }
            }
            open_beneath(root, comps, what)
        }
        r => r,
    }
}

/// lstat of `comps` under `root`, through a parent opened beneath it.
fn lstat_path(root: RawFd, comps: &[String]) -> Option<libc::stat> {
    let (last, up) = comps.split_last()?;
    let parent = open_beneath(root, up, "").ok()?;
    lstat_at(parent.as_raw_fd(), last)
}

/// Opens directory `comps` under `root` without leaving it and without following any symlink.
/// [`parent_dir`] in a tree that goes over `below`: a directory missing here is made with the
/// owner, mode and time the same directory has below (an entry that only passes through a
/// directory must not change how it looks), and a path that goes through a symlink or a
/// non-directory below is refused as [`open_beneath`] refuses it in a flattened tree.
fn parent_dir_over(root: RawFd, below: Option<RawFd>, comps: &[String], what: &str) -> Result<OwnedFd> {
    let Some(b) = below else { return parent_dir(root, comps, what) };
    // A directory this layer deleted (its whiteout) and now puts entries in: a new, opaque
    // directory, as in a flattened tree, where the old one is gone.
    if let Some((last, up)) = comps.split_last() {
        if lstat_path(root, comps).is_some_and(|st| is_whiteout(&st)) {
            let parent = parent_dir_over(root, below, up, what)?;
            remove_at(parent.as_raw_fd(), last)?;
            // SAFETY: valid C string and dirfd.
            if unsafe { libc::mkdirat(parent.as_raw_fd(), cstr(last).as_ptr(), 0o755) } != 0 {
                return Err(last_os(&format!("{what}: mkdir {}", comps.join("/"))));
            }
            let d = open_beneath(root, comps, what)?;
            set_opaque(d.as_raw_fd(), what)?;
            return Ok(d);
        }
    }
    match open_beneath(root, comps, what) {
        Err(_) if !comps.is_empty() && lstat_path(root, comps).is_none() => {
            let (last, up) = comps.split_last().expect("non-empty");
            let parent = parent_dir_over(root, below, up, what)?;
            let resolve = sys::RESOLVE_BENEATH | sys::RESOLVE_NO_SYMLINKS | sys::RESOLVE_NO_MAGICLINKS;
            let there = match sys::openat2(b, &comps.join("/"), libc::O_PATH | libc::O_DIRECTORY, resolve) {
                Ok(fd) => Some(fd),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => None,
                // A symlink or a file below where this layer needs a directory: what a
                // flattened tree refuses.
                Err(_) => return open_beneath(b, comps, what),
            };
            // SAFETY: valid C string and dirfd.
            if unsafe { libc::mkdirat(parent.as_raw_fd(), cstr(last).as_ptr(), 0o755) } != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EEXIST) {
                    return err(format!("{what}: mkdir {}: {e}", comps.join("/")));
                }
            } else if let Some(there) = there {
                // SAFETY: st is plain data the kernel fills.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: valid fd and pointer (an O_PATH fd may be fstat'ed).
                if unsafe { libc::fstat(there.as_raw_fd(), &mut st) } == 0 {
                    let c = cstr(last);
                    // SAFETY: valid C strings and dirfds; the directory was just made by us.
                    unsafe {
                        libc::fchownat(parent.as_raw_fd(), c.as_ptr(), st.st_uid, st.st_gid, libc::AT_SYMLINK_NOFOLLOW);
                        libc::fchmodat(parent.as_raw_fd(), c.as_ptr(), st.st_mode & 0o7777, 0);
                        let ts = [
                            libc::timespec { tv_sec: st.st_mtime, tv_nsec: st.st_mtime_nsec },
                            libc::timespec { tv_sec: st.st_mtime, tv_nsec: st.st_mtime_nsec },
                        ];
                        libc::utimensat(parent.as_raw_fd(), c.as_ptr(), ts.as_ptr(), libc::AT_SYMLINK_NOFOLLOW);
                    }
                }
            }
            open_beneath(root, comps, what)
        }
        r => r,
    }
}

/// overlayfs's whiteout: a 0/0 character device.
fn is_whiteout(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == 0
}

/// Whether the layer tree under `root` hides the path `comps` of the layers below it: a
/// whiteout at it or on the way, or an opaque directory on the way.
fn hidden_in(root: RawFd, comps: &[String]) -> bool {
    for i in 1..=comps.len() {
        let Some(st) = lstat_path(root, &comps[..i]) else { return false };
        if is_whiteout(&st) {
            return true;
        }
        if i < comps.len() && st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            let Ok(d) = open_beneath(root, &comps[..i], "opaque") else { return false };
            let path = cstr(format!("/proc/self/fd/{}", d.as_raw_fd()));
            let mut v = [0u8; 4];
            // SAFETY: valid C strings and buffer; the magic link is followed to the directory.
            let n = unsafe {
                libc::getxattr(path.as_ptr(), c"user.overlay.opaque".as_ptr(), v.as_mut_ptr().cast(), v.len())
            };
            if n == 1 && v[0] == b'y' {
                return true;
            }
        }
    }
    false
}

/// Whether the layer tree `top` hides the path `rel` (relative to the image's root) of the
/// trees below it (see [`hidden_in`]).
pub fn hidden_below(top: &Path, rel: &str) -> bool {
    let Ok(comps) = components(rel.trim_start_matches('/').as_bytes()) else { return true };
    match open_dir(top) {
        Ok(fd) => hidden_in(fd.as_raw_fd(), &comps),
        Err(_) => false,
    }
}

/// The object key of the regular file `name` in `dir`: its content's hash and metadata.
fn key_of_file(dir: RawFd, name: &str) -> std::result::Result<Key, String> {
    // A regular file only: a device or a FIFO of the image (a red team's /dev/zero read
    // without end, a FIFO that never opened) is never opened.
    let regular = |st: &libc::stat| st.st_mode & libc::S_IFMT == libc::S_IFREG;
    if !lstat_at(dir, name).is_some_and(|st| regular(&st)) {
        return Err("more hard links than the filesystem allows to what is not a regular file: refused".into());
    }
    // SAFETY: valid C string and dirfd; O_NOFOLLOW: the file itself; O_NONBLOCK: never waits.
    let fd = unsafe {
        libc::openat(dir, cstr(name).as_ptr(), libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
    };
    if fd < 0 {
        return Err(io::Error::last_os_error().to_string());
    }
    // SAFETY: a new fd we own.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    // SAFETY: st is plain data the kernel fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and pointer.
    if unsafe { libc::fstat(f.as_raw_fd(), &mut st) } != 0 || !regular(&st) {
        return Err("a hard link's target is not a regular file: refused".into());
    }
    let mut h = Sha256::new();
    io::copy(&mut f, &mut h).map_err(|e| e.to_string())?;
    key_of(&h.finalize().into(), f.as_raw_fd())
}

/// Marks the directory `dir` opaque for overlayfs (mounted with `userxattr`, as sandboxes
/// mount it): the layers below it show nothing in it.
fn set_opaque(dir: RawFd, what: &str) -> Result<()> {
    // SAFETY: valid C string and dirfd.
    let fd = unsafe { libc::openat(dir, c".".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(last_os(&format!("opaque directory {what}")));
    }
    // SAFETY: a new fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: valid fd, C string and buffer.
    if unsafe { libc::fsetxattr(fd.as_raw_fd(), c"user.overlay.opaque".as_ptr(), b"y".as_ptr().cast(), 1, 0) } != 0 {
        return Err(last_os(&format!("opaque directory {what}")));
    }
    Ok(())
}

pub(crate) fn open_beneath(root: RawFd, comps: &[String], what: &str) -> Result<OwnedFd> {
    let path = if comps.is_empty() { ".".to_string() } else { comps.join("/") };
    let resolve = sys::RESOLVE_BENEATH | sys::RESOLVE_NO_SYMLINKS | sys::RESOLVE_NO_MAGICLINKS;
    sys::openat2(root, &path, libc::O_PATH | libc::O_DIRECTORY, resolve).or_else(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => err(format!(
            "{what}: '{path}' goes through a symlink: refused (a write through a symlink could leave the root)"
        )),
        Some(libc::EXDEV) => err(format!("{what}: '{path}' leaves the root: refused")),
        Some(libc::ENOTDIR) => err(format!("{what}: a component of '{path}' is not a directory")),
        _ => err(format!("{what}: open '{path}': {e}")),
    })
}

pub(crate) fn open_dir(p: &Path) -> Result<OwnedFd> {
    let c = CString::new(p.as_os_str().as_bytes()).map_err(|_| Error("path with NUL".into()))?;
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(last_os(&format!("open {}", p.display())));
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// lstat of `name` in `dir`, or None.
pub(crate) fn lstat_at(dir: RawFd, name: &str) -> Option<libc::stat> {
    // SAFETY: st is plain data the kernel fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let c = cstr(name);
    // SAFETY: valid pointers.
    (unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } == 0).then_some(st)
}

/// Removes `name` in `dir`, a whole tree if it is a directory, never following symlinks.
fn remove_at(dir: RawFd, name: &str) -> Result<()> {
    let Some(st) = lstat_at(dir, name) else { return Ok(()) };
    let c = cstr(name);
    if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
        // A read-only directory (0555 in an image) must be writable to be emptied.
        // SAFETY: valid C string; fchmodat does not follow symlinks for a directory we lstat'd.
        unsafe { libc::fchmodat(dir, c.as_ptr(), 0o700, 0) };
        // SAFETY: valid C string; O_NOFOLLOW|O_DIRECTORY refuses a swapped-in symlink.
        let fd = unsafe {
            libc::openat(dir, c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        };
        if fd < 0 {
            return Err(last_os(&format!("open {name} to remove it")));
        }
        // SAFETY: a new fd we own.
        let sub = unsafe { OwnedFd::from_raw_fd(fd) };
        for child in list_dir(sub.as_raw_fd())? {
            remove_at(sub.as_raw_fd(), &child)?;
        }
        // SAFETY: valid C string.
        if unsafe { libc::unlinkat(dir, c.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
            return Err(last_os(&format!("remove directory {name}")));
        }
    } else if unsafe { libc::unlinkat(dir, c.as_ptr(), 0) } != 0 {
        return Err(last_os(&format!("remove {name}")));
    }
    Ok(())
}

pub(crate) fn list_dir(fd: RawFd) -> Result<Vec<String>> {
    // A readable fd on the directory (fd may be O_PATH, which reads as empty); fdopendir takes
    // ownership of it.
    // SAFETY: valid C string and dirfd.
    let rd = unsafe { libc::openat(fd, c".".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if rd < 0 {
        return Err(last_os("open directory"));
    }
    // SAFETY: rd is ours; fdopendir takes it.
    let d = unsafe { libc::fdopendir(rd) };
    if d.is_null() {
        return Err(last_os("read directory"));
    }
    let mut out = Vec::new();
    loop {
        // SAFETY: d is a valid DIR*.
        let e = unsafe { libc::readdir(d) };
        if e.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated.
        let name = unsafe { std::ffi::CStr::from_ptr((*e).d_name.as_ptr()) }.to_string_lossy().into_owned();
        if name != "." && name != ".." {
            out.push(name);
        }
    }
    // SAFETY: closing what we opened.
    unsafe { libc::closedir(d) };
    Ok(out)
}

/// Removes the tree at `p`, never following a symlink inside it.
pub fn remove_tree(p: &Path) -> Result<()> {
    match (p.parent(), p.file_name()) {
        (Some(parent), Some(name)) if p.exists() => {
            let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
            let d = open_dir(parent)?;
            remove_at(d.as_raw_fd(), &name.to_string_lossy())
        }
        _ => Ok(()),
    }
}

/// Where an image's regular files go.
pub(crate) enum Files<'m, 'o> {
    /// Into the tree, as files of their own (archives being read; [`unpack_image`]).
    Plain,
    /// Into the object directory, hard-linked into the tree, the layer recorded as a tar-split.
    Record { linker: &'m mut Linker<'o>, rec: Recorder, seen: &'m mut Vec<Seen> },
    /// A layer already in the store: linked from the objects its tar-split names, read as a
    /// skeleton (no content).
    Replay { linker: &'m mut Linker<'o>, replay: Replay<'o>, seen: &'m mut Vec<Seen> },
}

/// A regular file an image got from a layer: where, and which object.
pub(crate) struct Seen {
    pub parent: Vec<String>,
    pub name: String,
    pub key: Key,
    pub ino: u64,
    pub blocks: u64,
}

/// Sets what a regular file's header says on the new file `fd` (an object to be), counting
/// what is changed as the path-based code below does.
#[allow(clippy::too_many_arguments)]
fn file_metadata(
    fd: RawFd,
    display: &str,
    (uid, gid): (u64, u64),
    mode: u32,
    mtime: i64,
    pax: &[(String, Vec<u8>)],
    opts: &Options,
    changes: &mut Changes,
    (my_uid, my_gid): (u64, u64),
) -> Result<()> {
    let strip = opts.rootless || opts.strip_privilege;
    if opts.rootless {
        if uid != 0 || gid != 0 {
            changes.ownership_taken += 1;
        }
    } else if (uid, gid) != (my_uid, my_gid) {
        // SAFETY: valid fd.
        if unsafe { libc::fchown(fd, uid as u32, gid as u32) } != 0 {
            return Err(last_os(&format!("chown {display}")));
        }
    }
    // Xattrs before the mode (a read-only file's owner may not set user.* xattrs), after the
    // owner (a chown drops file capabilities).
    for (key, v) in pax {
        let Some(xname) = key.strip_prefix("SCHILY.xattr.") else { continue };
        if xattr_refused(xname, strip) {
            changes.xattrs_skipped += 1;
            continue;
        }
        let cn = cstr(xname);
        // SAFETY: valid pointers.
        if unsafe { libc::fsetxattr(fd, cn.as_ptr(), v.as_ptr() as *const libc::c_void, v.len(), 0) } != 0 {
            changes.xattrs_skipped += 1;
        }
    }
    // SAFETY: valid fd.
    if unsafe { libc::fchmod(fd, mode as libc::mode_t) } != 0 {
        return Err(last_os(&format!("chmod {display}")));
    }
    let ts = [libc::timespec { tv_sec: mtime, tv_nsec: 0 }, libc::timespec { tv_sec: mtime, tv_nsec: 0 }];
    // SAFETY: valid fd and pointer.
    unsafe { libc::futimens(fd, ts.as_ptr()) };
    Ok(())
}

/// Whether an image's xattr `name` is left out. overlayfs's own (`trusted.overlay.*`,
/// `user.overlay.*`) always: only polysandbox's whiteouts and opaque marks may reach it.
/// Stripped (rootless, or a store other users read), every one but `user.*`: file
/// capabilities and `trusted.*` are privilege, and ACLs (`system.posix_acl_*`,
/// `system.nfs4_acl`) would give back the group and other write bits a shared store takes
/// away (a red team's: `drwxrwxrwx+` directories in a `--shared` store, where any local user
/// then planted programs everyone's sandboxes ran).
fn xattr_refused(name: &str, strip: bool) -> bool {
    name.starts_with("trusted.overlay.") || name.starts_with("user.overlay.") || (strip && !name.starts_with("user."))
}

/// Counts what [`file_metadata`] would change, for a file linked from a stored layer.
fn count_file_metadata(uid: u64, gid: u64, pax: &[(String, Vec<u8>)], opts: &Options, changes: &mut Changes) {
    let strip = opts.rootless || opts.strip_privilege;
    if opts.rootless && (uid != 0 || gid != 0) {
        changes.ownership_taken += 1;
    }
    for (key, _) in pax {
        let Some(xname) = key.strip_prefix("SCHILY.xattr.") else { continue };
        if xattr_refused(xname, strip) {
            changes.xattrs_skipped += 1;
        }
    }
}

fn apply_entries<R: Read>(
    archive: &mut tar::Archive<R>,
    root: RawFd,
    opts: &Options,
    files: &mut Files,
    below: Option<RawFd>,
) -> Result<Changes> {
    let mut changes = Changes::default();
    // Paths this layer created: an opaque whiteout keeps them.
    let mut created: HashSet<Vec<String>> = HashSet::new();
    // Directory mtimes are set last, since writing inside a directory changes its mtime.
    // Each with the directory's inode: a later entry may replace it (with a hard link to a
    // file other images share, in a store), and then the times are not set.
    let mut dir_times: Vec<(Vec<String>, i64, u64)> = Vec::new();
    // Entries come grouped by directory: the last parent opened is reused. It cannot go stale:
    // an entry only ever removes children of its own parent, so the next entry either has the
    // same (still existing) parent or opens its own.
    let mut cached: Option<(Vec<String>, OwnedFd)> = None;
    let mut buf = vec![0u8; 256 * 1024];
    // SAFETY: geteuid/getegid cannot fail.
    let (my_uid, my_gid) = unsafe { (libc::geteuid() as u64, libc::getegid() as u64) };
    let entries = archive.entries().map_err(|e| Error(format!("not a tar archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| Error(format!("corrupt tar stream: {e}")))?;
        changes.entries += 1;
        // CVE-2025-62518-style desync: a PAX size that disagrees with a non-zero ustar size.
        let ustar = entry.header().size().unwrap_or(0);
        // (key, value) of the entry's PAX records, read once.
        let pax: Vec<(String, Vec<u8>)> = match entry.pax_extensions() {
            Ok(Some(exts)) => {
                exts.flatten().filter_map(|e| Some((e.key().ok()?.to_string(), e.value_bytes().to_vec()))).collect()
            }
            _ => Vec::new(),
        };
        for (key, value) in &pax {
            if key == "size" {
                let pax_size: Option<u64> = std::str::from_utf8(value).ok().and_then(|v| v.trim().parse().ok());
                if ustar != 0 && pax_size != Some(ustar) {
                    return err(format!("PAX size {pax_size:?} disagrees with the header size {ustar}: refused (tar desync, CVE-2025-62518)"));
                }
            }
        }
        let raw_path = entry.path_bytes().into_owned();
        let comps = components(&raw_path)?;
        let header = entry.header().clone();
        let kind = header.entry_type();
        let Some((name, parent_comps)) = comps.split_last() else {
            // The root itself: only a directory can be it (a symlink at "." or "/" would send
            // later entries elsewhere, as in CVE-2021-29136).
            if kind.is_dir() {
                continue;
            }
            return err(format!(
                "entry '{}' would replace the root with a non-directory: refused",
                String::from_utf8_lossy(&raw_path)
            ));
        };
        let display = comps.join("/");
        let p = match &cached {
            Some((c, fd)) if c.as_slice() == parent_comps => fd.as_raw_fd(),
            _ => {
                let fd = parent_dir_over(root, below, parent_comps, &display)?;
                cached = Some((parent_comps.to_vec(), fd));
                cached.as_ref().map(|(_, fd)| fd.as_raw_fd()).expect("just set")
            }
        };

        // Whiteouts.
        if name == ".wh..wh..opq" && below.is_some() {
            // Over the layers below: overlayfs hides what they have in this directory.
            set_opaque(p, &display)?;
            continue;
        }
        if name == ".wh..wh..opq" {
            for child in list_dir(p)? {
                let mut cp = parent_comps.to_vec();
                cp.push(child.clone());
                if !created.contains(&cp) {
                    remove_at(p, &child)?;
                }
            }
            continue;
        }
        if let Some(target) = name.strip_prefix(".wh.") {
            if target.is_empty() || target == "." || target == ".." || target.starts_with(".wh.") {
                return err(format!("invalid whiteout '{display}'"));
            }
            remove_at(p, target)?;
            if below.is_some() {
                // Over the layers below: overlayfs's whiteout, which hides what they have here.
                // SAFETY: valid C string and dirfd; a 0/0 character device needs no privilege.
                if unsafe { libc::mknodat(p, cstr(target).as_ptr(), libc::S_IFCHR, libc::makedev(0, 0)) } != 0 {
                    return Err(last_os(&format!("whiteout {display}")));
                }
            }
            continue;
        }

        let mode = header.mode().unwrap_or(0o644) & 0o7777;
        let strip = opts.rootless || opts.strip_privilege;
        let (mode, stripped) = if strip && mode & 0o6000 != 0 { (mode & !0o6000, true) } else { (mode, false) };
        // A store other users read: nobody but its owner may write into an image there (an
        // image's /tmp, 1777, would let any local user plant files in everyone's sandboxes).
        let mode = if opts.strip_privilege { mode & !0o022 } else { mode };
        let uid = header.uid().unwrap_or(0);
        let gid = header.gid().unwrap_or(0);
        let mtime = header.mtime().unwrap_or(0) as i64;
        let c = cstr(name);
        let existing = lstat_at(p, name);
        let is_dir_now = existing.is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);

        match kind {
            tar::EntryType::Directory => {
                if existing.is_some() && !is_dir_now {
                    remove_at(p, name)?;
                }
                // SAFETY: valid C string.
                if !is_dir_now && unsafe { libc::mkdirat(p, c.as_ptr(), 0o700) } != 0 {
                    return Err(last_os(&format!("mkdir {display}")));
                }
                // Over the layers below, a directory in place of this layer's whiteout is a
                // new one: what was below stays hidden.
                if below.is_some() && existing.is_some_and(|st| is_whiteout(&st)) {
                    let d = open_beneath(root, &comps, &display)?;
                    set_opaque(d.as_raw_fd(), &display)?;
                }
                let ino = lstat_at(p, name).map(|st| st.st_ino).unwrap_or(0);
                dir_times.push((comps.clone(), mtime, ino));
            }
            tar::EntryType::Regular | tar::EntryType::Continuous if !matches!(files, Files::Plain) => {
                if existing.is_some() {
                    remove_at(p, name)?;
                }
                let pos = entry.raw_file_position();
                let size = entry.size();
                let (key, linked) = match files {
                    Files::Record { linker, rec, .. } => {
                        rec.begin_file(pos, size).map_err(|e| Error(format!("{display}: {e}")))?;
                        let mut t = linker.objects.temp().map_err(|e| Error(format!("{display}: {e}")))?;
                        let mut h = Sha256::new();
                        loop {
                            let n = entry.read(&mut buf).map_err(|e| Error(format!("read {display}: {e}")))?;
                            if n == 0 {
                                break;
                            }
                            h.update(&buf[..n]);
                            t.write_all(&buf[..n]).map_err(|e| Error(format!("write {display}: {e}")))?;
                        }
                        file_metadata(
                            t.fd(),
                            &display,
                            (uid, gid),
                            mode,
                            mtime,
                            &pax,
                            opts,
                            &mut changes,
                            (my_uid, my_gid),
                        )?;
                        let key = key_of(&h.finalize().into(), t.fd()).map_err(|e| Error(format!("{display}: {e}")))?;
                        rec.file(size, &key).map_err(|e| Error(format!("{display}: {e}")))?;
                        let l = linker.link(&key, Some(t), p, &c).map_err(|e| Error(format!("{display}: {e}")))?;
                        (key, l)
                    }
                    Files::Replay { linker, replay, .. } => {
                        let key = replay.file_at(pos, size).map_err(|e| Error(format!("{display}: {e}")))?;
                        count_file_metadata(uid, gid, &pax, opts, &mut changes);
                        let l = linker.link(&key, None, p, &c).map_err(|e| Error(format!("{display}: {e}")))?;
                        (key, l)
                    }
                    Files::Plain => unreachable!("matched above"),
                };
                if let Files::Record { seen, .. } | Files::Replay { seen, .. } = files {
                    seen.push(Seen {
                        parent: parent_comps.to_vec(),
                        name: name.clone(),
                        key,
                        ino: linked.ino,
                        blocks: linked.blocks,
                    });
                }
                created.insert(comps.clone());
                if stripped {
                    changes.setid_bits_stripped += 1;
                }
                continue;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if existing.is_some() {
                    remove_at(p, name)?;
                }
                // SAFETY: valid C string; O_EXCL|O_NOFOLLOW: a fresh file, never a link.
                let fd = unsafe {
                    libc::openat(
                        p,
                        c.as_ptr(),
                        libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                        0o600,
                    )
                };
                if fd < 0 {
                    return Err(last_os(&format!("create {display}")));
                }
                // SAFETY: a new fd we own.
                let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
                loop {
                    let n = entry.read(&mut buf).map_err(|e| Error(format!("read {display}: {e}")))?;
                    if n == 0 {
                        break;
                    }
                    f.write_all(&buf[..n]).map_err(|e| Error(format!("write {display}: {e}")))?;
                }
            }
            tar::EntryType::Symlink => {
                let target =
                    entry.link_name_bytes().ok_or_else(|| Error(format!("symlink {display} without a target")))?;
                remove_at(p, name)?;
                let t = CString::new(target.into_owned())
                    .map_err(|_| Error(format!("symlink {display}: target with NUL")))?;
                // SAFETY: valid C strings. The target is data: it is never followed here.
                if unsafe { libc::symlinkat(t.as_ptr(), p, c.as_ptr()) } != 0 {
                    return Err(last_os(&format!("symlink {display}")));
                }
            }
            tar::EntryType::Link => {
                let target =
                    entry.link_name_bytes().ok_or_else(|| Error(format!("hard link {display} without a target")))?;
                let tcomps = components(&target).map_err(|e| Error(format!("hard link {display}: {e}")))?;
                let Some((tname, tparent)) = tcomps.split_last() else {
                    return err(format!("hard link {display} to the root: refused"));
                };
                let mut tdir = open_beneath(root, tparent, &format!("hard link {display}"));
                let here = tdir.as_ref().ok().and_then(|d| lstat_at(d.as_raw_fd(), tname));
                if here
                    .is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == 0 && below.is_some())
                {
                    return err(format!("hard link {display}: target {} was deleted in this layer", tcomps.join("/")));
                }
                if here.is_none() {
                    // A file of a layer below (the tree this one goes over), unless this layer
                    // hides it (a whiteout or an opaque directory on the way): what a
                    // flattened tree would no longer have.
                    if let Some(b) = below {
                        if hidden_in(root, &tcomps) {
                            return err(format!(
                                "hard link {display}: target {} does not exist in the image",
                                tcomps.join("/")
                            ));
                        }
                        tdir = open_beneath(b, tparent, &format!("hard link {display}"));
                    }
                }
                let tdir = tdir?;
                if lstat_at(tdir.as_raw_fd(), tname).is_none() {
                    return err(format!(
                        "hard link {display}: target {} does not exist in the image",
                        tcomps.join("/")
                    ));
                }
                remove_at(p, name)?;
                // SAFETY: valid C strings; no AT_SYMLINK_FOLLOW: a symlink target links the
                // symlink itself, never what it points to.
                if unsafe { libc::linkat(tdir.as_raw_fd(), cstr(tname).as_ptr(), p, c.as_ptr(), 0) } != 0 {
                    let e = io::Error::last_os_error();
                    match files {
                        // The file's link group is full: this name gets another member of the
                        // same object (same content and metadata, another inode).
                        Files::Record { linker, .. } | Files::Replay { linker, .. }
                            if e.raw_os_error() == Some(libc::EMLINK) =>
                        {
                            let key = key_of_file(tdir.as_raw_fd(), tname)
                                .map_err(|e| Error(format!("hard link {display}: {e}")))?;
                            linker.link(&key, None, p, &c).map_err(|e| Error(format!("hard link {display}: {e}")))?;
                        }
                        _ => return err(format!("hard link {display}: {e}")),
                    }
                }
                created.insert(comps.clone());
                continue;
            }
            tar::EntryType::Char | tar::EntryType::Block => {
                if strip {
                    changes.device_nodes_skipped += 1;
                    continue;
                }
                remove_at(p, name)?;
                let dev = libc::makedev(
                    header.device_major().ok().flatten().unwrap_or(0),
                    header.device_minor().ok().flatten().unwrap_or(0),
                );
                let t = if kind == tar::EntryType::Char { libc::S_IFCHR } else { libc::S_IFBLK };
                // SAFETY: valid C string.
                if unsafe { libc::mknodat(p, c.as_ptr(), t | 0o600, dev) } != 0 {
                    return Err(last_os(&format!("mknod {display}")));
                }
            }
            tar::EntryType::Fifo => {
                remove_at(p, name)?;
                // SAFETY: valid C string.
                if unsafe { libc::mkfifoat(p, c.as_ptr(), 0o600) } != 0 {
                    return Err(last_os(&format!("mkfifo {display}")));
                }
            }
            tar::EntryType::XGlobalHeader
            | tar::EntryType::XHeader
            | tar::EntryType::GNULongName
            | tar::EntryType::GNULongLink => continue,
            other => return err(format!("{display}: unsupported tar entry type {other:?}")),
        }
        created.insert(comps.clone());
        if stripped {
            changes.setid_bits_stripped += 1;
        }

        // Ownership, mode, xattrs, times, on the entry itself (never through a symlink).
        let is_symlink = kind == tar::EntryType::Symlink;
        if opts.rootless {
            if uid != 0 || gid != 0 {
                changes.ownership_taken += 1;
            }
        } else if (uid, gid) != (my_uid, my_gid) {
            // SAFETY: valid C string.
            if unsafe { libc::fchownat(p, c.as_ptr(), uid as u32, gid as u32, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
                return Err(last_os(&format!("chown {display}")));
            }
        }
        if !is_symlink {
            // fchmodat does not follow: the entry was just created by us as a non-symlink.
            // SAFETY: valid C string.
            if unsafe { libc::fchmodat(p, c.as_ptr(), mode as libc::mode_t, 0) } != 0 {
                return Err(last_os(&format!("chmod {display}")));
            }
        }
        {
            for (key, v) in &pax {
                let Some(xname) = key.strip_prefix("SCHILY.xattr.") else { continue };
                if xattr_refused(xname, strip) {
                    changes.xattrs_skipped += 1;
                    continue;
                }
                let path = format!("/proc/self/fd/{}/{}", p, name);
                let (cp, cn) = (cstr(&path), cstr(xname));
                // SAFETY: valid pointers; lsetxattr does not follow a final symlink.
                if unsafe { libc::lsetxattr(cp.as_ptr(), cn.as_ptr(), v.as_ptr() as *const libc::c_void, v.len(), 0) }
                    != 0
                {
                    changes.xattrs_skipped += 1;
                }
            }
        }
        if !kind.is_dir() {
            let ts = [libc::timespec { tv_sec: mtime, tv_nsec: 0 }, libc::timespec { tv_sec: mtime, tv_nsec: 0 }];
            // SAFETY: valid pointers.
            unsafe { libc::utimensat(p, c.as_ptr(), ts.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
        }
    }
    for (comps, mtime, ino) in dir_times.into_iter().rev() {
        if let Some((name, parent)) = comps.split_last() {
            if let Ok(d) = open_beneath(root, parent, "set times") {
                // Still the directory this layer made (nothing else runs in the tree meanwhile).
                let same = lstat_at(d.as_raw_fd(), name)
                    .is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR && st.st_ino == ino);
                if !same {
                    continue;
                }
                let ts = [libc::timespec { tv_sec: mtime, tv_nsec: 0 }, libc::timespec { tv_sec: mtime, tv_nsec: 0 }];
                // SAFETY: valid pointers.
                unsafe { libc::utimensat(d.as_raw_fd(), cstr(name).as_ptr(), ts.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
            }
        }
    }
    Ok(changes)
}

/// The path under which this process builds the rootfs for `dest`, beside it.
pub fn partial_path(dest: &Path) -> PathBuf {
    let parent = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    parent.join(format!(
        ".{}.partial-{}",
        dest.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
        std::process::id()
    ))
}
