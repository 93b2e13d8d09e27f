//! Layer records: each layer a store holds, kept as its files (in the object directory) and
//! what recreates its tar byte for byte (a tar-split), instead of its blob.
//!
//! ```text
//! layers/<DiffID hex>-<variant>/     one per layer and way of unpacking it (see [`variant`])
//!   meta.json       the DiffID, the tar's length, what unpacking it changed
//!   tar-split.zst   headers and padding as they came, and each file's object (tarsplit.rs)
//!   objects         the objects it names: (key, disk bytes, files) sorted by key, 44 bytes each
//!   pins/<key>      hard links to the objects of this layer that an image using it does not
//!                   show (a later layer replaced or deleted the file): what keeps them alive
//! ```
//!
//! A record is made in tmp/ while its layer is unpacked and renamed into place once the image
//! is whole. Its invariant, which the collector relies on: for every image in the index that
//! uses a layer, each object the layer names is linked in that image's tree or pinned here, so
//! an object with no link but its own name is referenced by nothing live.

use super::objects::{self, Key, Objects};
use super::unpack::{Changes, Options};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Files unpacked with different options differ (owner, mode bits, xattrs): `r` as root,
/// `u` rootless (the caller's own files); `s` for a store other users read.
pub fn variant(opts: &Options) -> &'static str {
    match (opts.rootless, opts.strip_privilege) {
        (false, false) => "r",
        (false, true) => "rs",
        (true, false) => "u",
        (true, true) => "us",
    }
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    pub diff_id: String,
    /// Bytes of the uncompressed tar.
    pub size: u64,
    /// Regular files (objects named, with repeats).
    pub files: u64,
    pub changes: Changes,
}

/// One entry of a record's `objects` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub key: Key,
    /// Disk bytes of one member.
    pub blocks: u64,
    /// How many files of the layer it is.
    pub count: u32,
}

pub const ENTRY_LEN: usize = 44;

pub fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut v = Vec::with_capacity(entries.len() * ENTRY_LEN);
    for e in entries {
        v.extend_from_slice(&e.key);
        v.extend_from_slice(&e.blocks.to_le_bytes());
        v.extend_from_slice(&e.count.to_le_bytes());
    }
    v
}

pub fn decode(data: &[u8]) -> Vec<Entry> {
    data.chunks_exact(ENTRY_LEN)
        .map(|c| Entry {
            key: c[..32].try_into().expect("32 bytes"),
            blocks: u64::from_le_bytes(c[32..40].try_into().expect("8 bytes")),
            count: u32::from_le_bytes(c[40..44].try_into().expect("4 bytes")),
        })
        .collect()
}

/// A published record.
#[derive(Debug, Clone)]
pub struct Record {
    pub dir: PathBuf,
    pub meta: Meta,
}

impl Record {
    pub fn open(dir: &Path) -> Option<Record> {
        let meta = serde_json::from_slice(&std::fs::read(dir.join("meta.json")).ok()?).ok()?;
        Some(Record { dir: dir.to_path_buf(), meta })
    }

    pub fn tar_split(&self) -> Result<std::fs::File, String> {
        let p = self.dir.join("tar-split.zst");
        std::fs::File::open(&p).map_err(|e| format!("{}: {e}", p.display()))
    }

    pub fn objects(&self) -> Vec<Entry> {
        std::fs::read(self.dir.join("objects")).map(|d| decode(&d)).unwrap_or_default()
    }

    /// Disk bytes of the record itself (its files and directories).
    pub fn disk(&self) -> u64 {
        du(&self.dir)
    }
}

/// Disk bytes under `p` (st_blocks, each inode once), not following symlinks.
pub fn du(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut todo = vec![p.to_path_buf()];
    let mut seen = std::collections::HashSet::new();
    while let Some(d) = todo.pop() {
        let Ok(md) = std::fs::symlink_metadata(&d) else { continue };
        if md.nlink() > 1 && !md.is_dir() && !seen.insert(md.ino()) {
            continue;
        }
        total += md.blocks() * 512;
        if md.is_dir() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                todo.push(e.path());
            }
        }
    }
    total
}

/// The `layers/` directory of a store.
pub struct Layers {
    pub path: PathBuf,
    tmp: PathBuf,
}

use super::objects::unique;

impl Layers {
    pub fn open(store_root: &Path) -> Result<Layers, String> {
        use std::os::unix::fs::DirBuilderExt;
        let path = store_root.join("layers");
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
        Ok(Layers { path, tmp: store_root.join("tmp") })
    }

    /// The directory of the record of `diff_id` (a sha256 digest, checked by callers: see
    /// [`valid_diff_id`]) unpacked as `variant`.
    pub fn dir(&self, diff_id: &str, variant: &str) -> PathBuf {
        self.path.join(format!("{}-{variant}", diff_id.trim_start_matches("sha256:")))
    }

    /// The record of `diff_id` unpacked as `variant`; none for what is not a sha256 digest
    /// (an image's config names its DiffIDs: a name with `/` or `..` in it must never become
    /// a path, as a red team's `../chains/...` did).
    pub fn find(&self, diff_id: &str, variant: &str) -> Option<Record> {
        if !valid_diff_id(diff_id) {
            return None;
        }
        Record::open(&self.dir(diff_id, variant))
    }

    /// A record of `diff_id` in any variant (its tar-split and objects recreate the layer).
    pub fn find_any(&self, diff_id: &str) -> Option<Record> {
        ["r", "u", "rs", "us"].iter().find_map(|v| self.find(diff_id, v))
    }

    /// Every record: (DiffID, variant, directory).
    pub fn list(&self) -> Vec<(String, String, PathBuf)> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.path).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some((hex, v)) = name.split_once('-') {
                if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    out.push((format!("sha256:{hex}"), v.to_string(), e.path()));
                }
            }
        }
        out
    }

    /// A record being made, in tmp/.
    pub fn draft(&self) -> Result<Draft, String> {
        let dir = self.tmp.join(format!("layer-{}-{}", std::process::id(), unique()));
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Draft { dir: Some(dir) })
    }
}

/// A record being made. Removed on drop unless published.
pub struct Draft {
    dir: Option<PathBuf>,
}

impl Drop for Draft {
    fn drop(&mut self) {
        if let Some(d) = self.dir.take() {
            let _ = super::unpack::remove_tree(&d);
        }
    }
}

impl Draft {
    pub fn dir(&self) -> &Path {
        self.dir.as_deref().expect("a draft not yet published")
    }

    pub fn create(&self, name: &str) -> Result<std::fs::File, String> {
        let p = self.dir().join(name);
        std::fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// Writes `meta.json` and `objects`.
    pub fn finish(&self, meta: &Meta, mut entries: Vec<Entry>) -> Result<(), String> {
        entries.sort_by_key(|e| e.key);
        let mut f = self.create("objects")?;
        f.write_all(&encode(&entries)).and_then(|_| f.sync_data()).map_err(|e| format!("layer record: {e}"))?;
        let mut f = self.create("meta.json")?;
        f.write_all(&serde_json::to_vec_pretty(meta).map_err(|e| e.to_string())?)
            .and_then(|_| f.sync_data())
            .map_err(|e| format!("layer record: {e}"))
    }

    /// Renames the draft into place as the record of `diff_id` for `variant`. When another
    /// process published one first, that one stays (it is the same) and `pins` go into it.
    pub fn publish(
        mut self,
        layers: &Layers,
        objects: &Objects,
        diff_id: &str,
        variant: &str,
        pins: &[Key],
    ) -> Result<PathBuf, String> {
        let dest = layers.dir(diff_id, variant);
        let dir = self.dir.take().expect("a draft not yet published");
        match std::fs::rename(&dir, &dest) {
            Ok(()) => Ok(dest),
            Err(_) if dest.join("meta.json").is_file() => {
                let _ = super::unpack::remove_tree(&dir);
                for k in pins {
                    pin(&dest, objects, k)?;
                }
                Ok(dest)
            }
            Err(e) => {
                let _ = super::unpack::remove_tree(&dir);
                Err(format!("layer record {}: {e}", dest.display()))
            }
        }
    }
}

/// Pins the object `key` in the record (or draft) directory `dir`.
pub fn pin(dir: &Path, objects: &Objects, key: &Key) -> Result<(), String> {
    let pins = dir.join("pins");
    match std::fs::create_dir(&pins) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", pins.display())),
    }
    // Never through a link: the record is the store's own, and so must its pins be.
    let fd = crate::sys::open(
        &crate::sys::cpath(&pins),
        libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        "a layer's pins",
    )?;
    use std::os::fd::AsRawFd;
    objects.link_any(key, fd.as_raw_fd(), &crate::sys::cstr(objects::hex(key)))
}

/// Whether `d` is a DiffID the store can name a record or chain by: `sha256:` and 64
/// lowercase hex digits. An image's config and manifest are checked with it before anything
/// they name becomes a path.
pub fn valid_diff_id(d: &str) -> bool {
    d.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// The DiffID-verified bytes of a recorded layer: its tar, recreated from the tar-split and
/// the objects.
pub struct Recreated<'a> {
    inner: super::tarsplit::Replay<'a>,
    hash: sha2::Sha256,
    want: String,
    done: bool,
}

impl<'a> Recreated<'a> {
    pub fn open(record: &Record, objects: &'a Objects) -> Result<Recreated<'a>, String> {
        use sha2::Digest;
        let inner = super::tarsplit::Replay::open(record.tar_split()?, Some(objects))
            .map_err(|e| format!("layer {}: {e}", record.meta.diff_id))?;
        Ok(Recreated { inner, hash: sha2::Sha256::new(), want: record.meta.diff_id.clone(), done: false })
    }
}

impl Read for Recreated<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        if n == 0 && !buf.is_empty() && !self.done {
            self.done = true;
            let got = format!("sha256:{:x}", std::mem::take(&mut self.hash).finalize());
            if got != self.want {
                return Err(std::io::Error::other(format!(
                    "layer {}: recreated from the store it is {got}: the store is damaged",
                    self.want
                )));
            }
        }
        Ok(n)
    }
}
