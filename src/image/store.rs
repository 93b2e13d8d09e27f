//! The image store: an OCI image layout for the names, manifests and configs (blobs by
//! digest, `index.json` naming each image with the `org.opencontainers.image.ref.name`
//! annotation), and the layers unpacked, every file once (`objects.rs`): each image is the tree
//! of its layers but the last (its chain, shared by every image on those layers) under the
//! tree of its last layer, both read-only to sandboxes. Layer blobs are not kept: a layer's
//! record (`layers.rs`) recreates its tar; `save` writes a complete layout for other tools.
//!
//! ```text
//! $POLYSANDBOX_ROOT (default ~/.local/share/polysandbox, /var/lib/polysandbox for root)
//!   oci/oci-layout, oci/index.json, oci/blobs/sha256/<hex>
//!   objects/, chains/<ChainID>-<variant>/, layers/<DiffID>-<variant>/
//!   rootfs/<manifest hex>/          the last layer's tree, renamed into place when whole
//!   rootfs/<manifest hex>.json      what unpacking changed; the chain the image stands on
//!   tmp/                            partial downloads and imports
//!   lock                            flock(2) around index updates
//!   gc.lock                         flock(2): shared by imports and pulls, exclusive for prune
//! ```
//! Every file is written under a temporary name and renamed; blobs are verified before they
//! are named by their digest.

use super::oci::{Descriptor, Index};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

pub const REF_ANNOTATION: &str = "org.opencontainers.image.ref.name";

pub struct Store {
    pub root: PathBuf,
    /// A store other users read (`SHARED` marker, made by `pull --shared`/`import --shared`):
    /// readable by all, and images in it hold no setuid/setgid bits, device nodes or file
    /// capabilities. Any other store is its owner's alone (its root is 0700): an image's
    /// setuid binaries, capabilities, device nodes and world-writable directories give other
    /// local users nothing (CVE-2021-41091).
    pub shared: bool,
}

/// The marker file of a store meant for other users.
const SHARED_MARKER: &str = "SHARED";

/// An exclusive lock on the store, released on drop.
pub struct Lock(File);

/// The store's collection lock (`gc.lock`): held shared by every process that links objects
/// or applies layer records (import, pull, migrate) from before it decides what the store
/// has until the image is named in the index; exclusive by the collector (`prune`, `rmi`),
/// which removes objects and records nothing live refers to. Released on drop.
pub struct Gc(File);

impl Gc {
    /// Turns a shared hold into an exclusive one if nobody else holds it; else keeps (or
    /// takes back) the shared one. (flock(2) drops the old lock before trying the new.)
    pub fn try_exclusive(&self) -> bool {
        // SAFETY: flock on our own fd.
        if unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return true;
        }
        // SAFETY: flock on our own fd.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_SH) };
        false
    }

    /// Back to a shared hold.
    pub fn shared(&self) {
        // SAFETY: flock on our own fd.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_SH) };
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // SAFETY: unlocking our own fd.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

impl Store {
    /// `$POLYSANDBOX_ROOT`, else the default for this user.
    pub fn default_root() -> PathBuf {
        if let Some(r) = std::env::var_os("POLYSANDBOX_ROOT") {
            return PathBuf::from(r);
        }
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            return PathBuf::from("/var/lib/polysandbox");
        }
        let data = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
            .map(|d| d.join("polysandbox"));
        // SAFETY: geteuid cannot fail.
        data.unwrap_or_else(|| PathBuf::from(format!("/tmp/polysandbox-{}", unsafe { libc::geteuid() })))
    }

    /// Read-only stores searched after this one (e.g. a cluster's shared store on NFS):
    /// `$POLYSANDBOX_SHARED_STORES`, colon-separated. Nothing is ever written to them. A
    /// directory without an index is no store and is passed over; a store another user could
    /// change is refused (see [`Store::check_shared`]).
    pub fn shared() -> Result<Vec<Store>, String> {
        let mut out = Vec::new();
        for p in std::env::var("POLYSANDBOX_SHARED_STORES").unwrap_or_default().split(':').filter(|p| !p.is_empty()) {
            let s = Store { root: PathBuf::from(p), shared: true };
            if !s.index_path().is_file() {
                continue;
            }
            s.check_shared().map_err(|why| format!("shared store {p} (POLYSANDBOX_SHARED_STORES): {why}: refused"))?;
            out.push(s);
        }
        Ok(out)
    }

    /// A shared store is used only when no user but root and the caller can change it: its
    /// root owned by one of them and writable by no one else, and the same of each directory
    /// its records point into (opened beneath the root, none a symlink), each owned as the
    /// root is. (Its records and trees are read beneath the root too: [`Store::tree`].)
    pub fn check_shared(&self) -> Result<(), String> {
        let root = self.root_dir()?;
        let st = root.stat().map_err(|e| e.to_string())?;
        // SAFETY: geteuid cannot fail.
        let me = unsafe { libc::geteuid() };
        if st.st_uid != 0 && st.st_uid != me {
            return Err(format!("owned by uid {}, another user who could change what it holds", st.st_uid));
        }
        if st.st_mode & 0o022 != 0 {
            return Err(format!("its directory is writable by others (mode {:o})", st.st_mode & 0o7777));
        }
        for rel in ["oci", "oci/blobs", "oci/blobs/sha256", "rootfs", "chains", "layers", "objects"] {
            let d = match root.dir(rel) {
                Ok(d) => d,
                Err(crate::sys::Untrusted::Io(e)) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(format!("{rel}: {e}")),
            };
            let sd = d.stat().map_err(|e| format!("{rel}: {e}"))?;
            if sd.st_uid != st.st_uid {
                return Err(format!("{rel} is owned by uid {}, not as the store is (uid {})", sd.st_uid, st.st_uid));
            }
            if sd.st_mode & 0o022 != 0 {
                return Err(format!("{rel} is writable by others (mode {:o})", sd.st_mode & 0o7777));
            }
        }
        Ok(())
    }

    /// The store's root directory, open (as named: the user's word, as `--root` is).
    fn root_dir(&self) -> Result<crate::sys::beneath::Dir, String> {
        crate::sys::beneath::Dir::open_as_named(&self.root).map_err(|e| format!("store {}: {e}", self.root.display()))
    }

    /// The bytes of the store's file `rel` (at most `cap`), read beneath its root with no
    /// symlink, a regular file only; None when it is missing.
    fn read_beneath(&self, rel: &str, cap: u64) -> Result<Option<Vec<u8>>, String> {
        self.root_dir()?.read(rel, cap)
    }

    /// Checks the store's tree `rel` (`rootfs/<hex>`, `chains/<name>`, a name checked
    /// already) before a sandbox mounts it: a directory beneath the root, reached through no
    /// symlink and not one itself, owned as the root is (and, in a shared store, writable by
    /// no one else).
    pub fn tree(&self, rel: &str) -> Result<(), String> {
        let root = self.root_dir()?;
        let owner = root.stat().map_err(|e| e.to_string())?.st_uid;
        let shown = || format!("{} of the store {}", rel, self.root.display());
        let d = root.dir(rel).map_err(|e| format!("{}: {e}", shown()))?;
        let st = d.stat().map_err(|e| format!("{}: {e}", shown()))?;
        if st.st_uid != owner {
            return Err(format!("{}: owned by uid {}, not as the store is (uid {owner}): refused", shown(), st.st_uid));
        }
        if self.shared && st.st_mode & 0o022 != 0 {
            return Err(format!("{}: writable by others (mode {:o}): refused", shown(), st.st_mode & 0o7777));
        }
        Ok(())
    }

    /// Opens (creating if needed) the store at `root`.
    pub fn open(root: &Path) -> Result<Store, String> {
        Store::open_as(root, false)
    }

    /// Opens (creating if needed) the store at `root`; `shared`: it is meant for other users
    /// (a new or empty store becomes one; a private store that holds images cannot).
    pub fn open_as(root: &Path, shared: bool) -> Result<Store, String> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        let marker = root.join(SHARED_MARKER);
        if !root.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(root)
                .map_err(|e| format!("store {}: {e}", root.display()))?;
        }
        let mut s = Store { root: root.to_path_buf(), shared: marker.is_file() };
        if shared && !s.shared {
            let holds_images = fs::read_dir(s.root.join("rootfs")).map(|mut d| d.next().is_some()).unwrap_or(false);
            if holds_images {
                return Err(format!(
                    "store {} holds images unpacked for its owner alone: use a new directory for a shared store",
                    root.display()
                ));
            }
            fs::create_dir_all(s.root.join("tmp")).map_err(|e| format!("store {}: {e}", root.display()))?;
            s.write_atomic(&marker, b"This store is read by other users: images are unpacked without setuid/setgid bits, device nodes or file capabilities.\n")?;
            s.shared = true;
        }
        // Private: the owner's alone. Shared: readable by all. (Only a store we own is changed.)
        let md = fs::metadata(root).map_err(|e| format!("store {}: {e}", root.display()))?;
        // SAFETY: geteuid cannot fail.
        let me = unsafe { libc::geteuid() };
        // A store another user can change is theirs to forge: its images, its unpacked trees,
        // links where we would write. Only ours, or root's and not writable by others.
        if md.uid() != me && (md.uid() != 0 || md.mode() & 0o022 != 0) {
            return Err(format!(
                "store {}: owned by uid {}{}: another user could change what it holds; use a store of your own (--root DIR)",
                root.display(),
                md.uid(),
                if md.uid() == 0 { " and writable by others" } else { "" }
            ));
        }
        if md.uid() == me {
            let mode = if s.shared { 0o755 } else { 0o700 };
            if md.mode() & 0o7777 != mode {
                fs::set_permissions(root, fs::Permissions::from_mode(mode))
                    .map_err(|e| format!("store {}: {e}", root.display()))?;
            }
        }
        for d in [s.root.join("oci/blobs/sha256"), s.root.join("rootfs"), s.root.join("tmp")] {
            fs::create_dir_all(&d).map_err(|e| format!("store {}: {e}", d.display()))?;
        }
        let layout = s.root.join("oci/oci-layout");
        if !layout.exists() {
            s.write_atomic(&layout, br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        if !s.index_path().exists() {
            s.write_atomic(&s.index_path(), br#"{"schemaVersion":2,"manifests":[]}"#)?;
        }
        Ok(s)
    }

    pub fn lock(&self) -> Result<Lock, String> {
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.root.join("lock"))
            .map_err(|e| format!("store lock: {e}"))?;
        // SAFETY: flock on our own fd.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(format!("store lock: {}", io::Error::last_os_error()));
        }
        Ok(Lock(f))
    }

    fn gc_file(&self) -> Result<File, String> {
        File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.root.join("gc.lock"))
            .map_err(|e| format!("store collection lock: {e}"))
    }

    /// The collection lock, shared (see [`Gc`]).
    pub fn gc_shared(&self) -> Result<Gc, String> {
        let f = self.gc_file()?;
        // SAFETY: flock on our own fd.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH) } != 0 {
            return Err(format!("store collection lock: {}", io::Error::last_os_error()));
        }
        Ok(Gc(f))
    }

    /// The collection lock, exclusive; None when `wait` is false and another process holds it.
    pub fn gc_exclusive(&self, wait: bool) -> Result<Option<Gc>, String> {
        let f = self.gc_file()?;
        let flags = if wait { libc::LOCK_EX } else { libc::LOCK_EX | libc::LOCK_NB };
        // SAFETY: flock on our own fd.
        if unsafe { libc::flock(f.as_raw_fd(), flags) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Ok(None);
            }
            return Err(format!("store collection lock: {e}"));
        }
        Ok(Some(Gc(f)))
    }

    /// How images are unpacked into this store: a store other users read gets images without
    /// privilege in them.
    pub fn unpack_options(&self, opts: &super::unpack::Options) -> super::unpack::Options {
        super::unpack::Options { strip_privilege: opts.strip_privilege || self.shared, ..opts.clone() }
    }

    pub fn objects(&self) -> Result<super::objects::Objects, String> {
        super::objects::Objects::open(&self.root)
    }

    pub fn layers(&self) -> Result<super::layers::Layers, String> {
        super::layers::Layers::open(&self.root)
    }

    /// Removes the blobs of `layers` that the store keeps as records (their files and
    /// tar-split recreate them): a layer is not kept twice.
    pub fn drop_recorded_blobs(&self, layers: &[Descriptor], diff_ids: &[String]) {
        let Ok(recs) = self.layers() else { return };
        let Ok(live) = self.live() else { return };
        for (l, d) in layers.iter().zip(diff_ids) {
            if recs.find_any(d).is_some() && !live.old_layer_blobs.contains(&l.digest) {
                if let Ok(p) = self.blob_path(&l.digest) {
                    let _ = fs::remove_file(p);
                }
            }
        }
    }

    /// After a failed import: removes the objects it made that nothing links, if no other
    /// process is importing (else `prune` will).
    pub fn forget_objects(&self, gc: &Gc, objects: &super::objects::Objects, created: &[(super::objects::Key, u32)]) {
        if created.is_empty() || !gc.try_exclusive() {
            return;
        }
        let mut keys: Vec<_> = created.iter().map(|(k, _)| *k).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            super::objects::collect_key(objects, &k);
        }
        gc.shared();
    }

    fn index_path(&self) -> PathBuf {
        self.root.join("oci/index.json")
    }

    pub fn blob_path(&self, digest: &str) -> Result<PathBuf, String> {
        Ok(self.root.join("oci/blobs/sha256").join(sha256_hex(digest)?))
    }

    pub fn rootfs_path(&self, manifest_digest: &str) -> PathBuf {
        self.root.join("rootfs").join(manifest_digest.trim_start_matches("sha256:"))
    }

    /// The tree of a chain of layers (see [`chain_name`]): `chains/<name>`.
    pub fn chain_path(&self, name: &str) -> PathBuf {
        self.root.join("chains").join(name)
    }

    pub fn make_chains_dir(&self) -> Result<(), String> {
        let p = self.root.join("chains");
        match fs::create_dir(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    }

    /// What a sandbox of the image `manifest_digest` (whose directory is `dir`) mounts: the
    /// tree under everything, and the trees over it, top first. An image of the store's layout
    /// is its chain's tree with its last layer's tree over it (none for a one-layer image); an
    /// image an older version unpacked is one tree.
    ///
    /// Every name the store's records hold is checked for the form the store makes before it
    /// becomes a path (a record naming `/etc` or `../..` is refused, not mounted), and each
    /// tree is checked with [`Store::tree`]: the store may be another user's (`--shared`).
    pub fn lowers(&self, manifest_digest: &str, dir: &Path) -> Result<(PathBuf, Vec<PathBuf>), String> {
        let hex = sha256_hex(manifest_digest)
            .map_err(|_| format!("the store {} names an image {manifest_digest:?}: refused", self.root.display()))?;
        let refused = |what: String| format!("image {manifest_digest}: {what}");
        let own = || self.tree(&format!("rootfs/{hex}")).map_err(refused);
        let Some(c) = self.changes_of(manifest_digest) else {
            own()?;
            return Ok((dir.to_path_buf(), Vec::new()));
        };
        match c.chain {
            Some(chain) if c.layout == super::unpack::LAYOUT_OBJECTS => {
                if !is_chain_name(&chain) {
                    return Err(refused(format!(
                        "its record in the store {} names the chain {chain:?}, not a name the store makes: refused",
                        self.root.display()
                    )));
                }
                let base = self.chain_path(&chain);
                if !base.is_dir() {
                    return Err(format!(
                        "the tree of {manifest_digest}'s lower layers is missing from the store: remove the image and import or pull it again"
                    ));
                }
                self.tree(&format!("chains/{chain}")).map_err(refused)?;
                let over = if c.diff_ids.len() >= 2 {
                    own()?;
                    vec![dir.to_path_buf()]
                } else {
                    Vec::new()
                };
                Ok((base, over))
            }
            _ => {
                own()?;
                Ok((dir.to_path_buf(), Vec::new()))
            }
        }
    }

    /// The chains the images whose directories exist (named, or held by a sandbox) stand on.
    fn live_chains(&self) -> std::collections::HashSet<String> {
        let mut out = std::collections::HashSet::new();
        let Ok(rd) = fs::read_dir(self.root.join("rootfs")) else { return out };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.contains('.') || !e.path().is_dir() {
                continue;
            }
            if let Some(chain) = self.changes_of(&format!("sha256:{name}")).and_then(|c| c.chain) {
                out.insert(chain);
            }
        }
        out
    }

    /// Writes `data` to `path` through a temporary file and a rename.
    pub fn write_atomic(&self, path: &Path, data: &[u8]) -> Result<(), String> {
        let tmp = self.root.join("tmp").join(format!("write-{}-{}", std::process::id(), unique()));
        let r = (|| {
            let mut f = File::create(&tmp)?;
            f.write_all(data)?;
            f.sync_data()?;
            fs::rename(&tmp, path)
        })();
        if let Err(e) = r {
            let _ = fs::remove_file(&tmp);
            return Err(format!("write {}: {e}", path.display()));
        }
        Ok(())
    }

    /// Stores a blob from `reader`, verifying it hashes to `digest` (if given); returns its
    /// digest and size. A blob already present is not written again.
    pub fn put_blob(&self, mut reader: impl Read, digest: Option<&str>) -> Result<(String, u64), String> {
        if let Some(d) = digest {
            let p = self.blob_path(d)?;
            if p.exists() {
                let size = fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
                return Ok((d.to_string(), size));
            }
        }
        let tmp = self.root.join("tmp").join(format!("blob-{}-{}", std::process::id(), unique()));
        let result = (|| {
            let mut f = File::create(&tmp).map_err(|e| format!("create {}: {e}", tmp.display()))?;
            let mut h = Sha256::new();
            let mut buf = vec![0u8; 1 << 20];
            let mut size = 0u64;
            loop {
                let n = reader.read(&mut buf).map_err(|e| format!("read blob: {e}"))?;
                if n == 0 {
                    break;
                }
                h.update(&buf[..n]);
                f.write_all(&buf[..n]).map_err(|e| format!("write blob: {e}"))?;
                size += n as u64;
            }
            f.sync_data().map_err(|e| format!("write blob: {e}"))?;
            let got = format!("sha256:{}", h.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>());
            if let Some(want) = digest {
                if want != got {
                    return Err(format!("blob digest mismatch: expected {want}, got {got}"));
                }
            }
            fs::rename(&tmp, self.blob_path(&got)?).map_err(|e| format!("store blob: {e}"))?;
            Ok((got, size))
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// A manifest, index or config blob (read beneath the store's root, no symlink, at most
    /// [`MAX_JSON_BLOB`] bytes).
    pub fn read_blob(&self, digest: &str) -> Result<Vec<u8>, String> {
        let rel = format!("oci/blobs/sha256/{}", sha256_hex(digest)?);
        self.read_beneath(&rel, MAX_JSON_BLOB)
            .map_err(|e| format!("blob {digest}: {e}"))?
            .ok_or_else(|| format!("blob {digest}: {}", io::Error::from_raw_os_error(libc::ENOENT)))
    }

    pub fn index(&self) -> Result<Index, String> {
        let data = self
            .read_beneath("oci/index.json", MAX_JSON_BLOB)
            .map_err(|e| format!("store index: {e}"))?
            .ok_or_else(|| format!("store index: {}", io::Error::from_raw_os_error(libc::ENOENT)))?;
        serde_json::from_slice(&data).map_err(|e| format!("store index: {e}"))
    }

    /// Names `manifest` as `reference` (replacing what had that name), under the lock.
    pub fn tag(&self, reference: &str, manifest: Descriptor) -> Result<(), String> {
        let _lock = self.lock()?;
        let mut index = self.index()?;
        index.manifests.retain(|d| {
            d.annotations.as_ref().and_then(|a| a.get(REF_ANNOTATION)).map(String::as_str) != Some(reference)
        });
        let mut m = manifest;
        m.annotations.get_or_insert_with(Default::default).insert(REF_ANNOTATION.into(), reference.into());
        index.manifests.push(m);
        let data = serde_json::to_vec_pretty(&index).map_err(|e| e.to_string())?;
        self.write_atomic(&self.index_path(), &data)
    }

    /// Removes the name `reference`; returns the manifest digest it named. The rootfs goes
    /// too when no other name uses it and no sandbox runs on it; blobs stay until `prune`.
    pub fn untag(&self, reference: &str) -> Result<String, String> {
        let _lock = self.lock()?;
        let mut index = self.index()?;
        let name_of = |d: &Descriptor| d.annotations.as_ref().and_then(|a| a.get(REF_ANNOTATION)).cloned();
        let pos = index
            .manifests
            .iter()
            .position(|d| name_of(d).as_deref() == Some(reference))
            .ok_or_else(|| format!("image {reference} is not in the store"))?;
        let removed = index.manifests.remove(pos);
        let data = serde_json::to_vec_pretty(&index).map_err(|e| e.to_string())?;
        self.write_atomic(&self.index_path(), &data)?;
        if !index.manifests.iter().any(|d| d.digest == removed.digest) {
            self.remove_rootfs_if_idle(&removed.digest);
        }
        Ok(removed.digest)
    }

    /// A shared lock held while a sandbox runs on the rootfs of `manifest_digest`.
    pub fn use_rootfs(&self, manifest_digest: &str) -> Result<Lock, String> {
        let p = self.root.join("rootfs").join(format!("{}.lock", manifest_digest.trim_start_matches("sha256:")));
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        // SAFETY: flock on our own fd.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH) };
        Ok(Lock(f))
    }

    /// Whether a sandbox runs on the rootfs of `manifest_digest` now.
    pub fn rootfs_in_use(&self, manifest_digest: &str) -> bool {
        let hex = manifest_digest.trim_start_matches("sha256:");
        let Ok(f) = File::open(self.root.join("rootfs").join(format!("{hex}.lock"))) else { return false };
        // SAFETY: flock on our own fd.
        let busy = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0;
        drop(f);
        busy
    }

    /// The rootfs of `manifest_digest`, locked against sandboxes starting on it; None while
    /// one runs on it.
    pub fn lock_rootfs_idle(&self, manifest_digest: &str) -> Option<Lock> {
        let hex = manifest_digest.trim_start_matches("sha256:");
        let lockp = self.root.join("rootfs").join(format!("{hex}.lock"));
        let f = File::options().create(true).truncate(false).write(true).open(&lockp).ok()?;
        // SAFETY: flock on our own fd.
        (unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0).then_some(Lock(f))
    }

    /// Removes the rootfs of `manifest_digest` unless a sandbox holds it. Returns whether it did.
    fn remove_rootfs_if_idle(&self, manifest_digest: &str) -> bool {
        let hex = manifest_digest.trim_start_matches("sha256:");
        let lockp = self.root.join("rootfs").join(format!("{hex}.lock"));
        let Ok(f) = File::options().create(true).truncate(false).write(true).open(&lockp) else { return false };
        // SAFETY: flock on our own fd.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return false;
        }
        let dir = self.rootfs_path(manifest_digest);
        let ok = !dir.exists() || super::unpack::remove_tree(&dir).is_ok();
        let _ = fs::remove_file(self.root.join("rootfs").join(format!("{hex}.json")));
        let _ = fs::remove_file(&lockp);
        ok
    }

    /// What the images named in the index use: their manifests, the layers of those whose
    /// files are objects (whose records are live), and the layer blobs of those unpacked by an
    /// older version (kept: such an image has no records).
    pub fn live(&self) -> Result<Live, String> {
        let index = self.index()?;
        let mut live = Live::default();
        let mut todo: Vec<String> = index.manifests.iter().map(|d| d.digest.clone()).collect();
        let mut seen = std::collections::HashSet::new();
        while let Some(d) = todo.pop() {
            if !seen.insert(d.clone()) {
                continue;
            }
            live.blobs.insert(d.clone());
            let Ok(data) = self.read_blob(&d) else { continue };
            if let Ok(m) = serde_json::from_slice::<super::oci::Manifest>(&data) {
                live.manifests.push(d.clone());
                live.blobs.insert(m.config.digest.clone());
                let objects = self.layout_of(&d) == super::unpack::LAYOUT_OBJECTS;
                if objects {
                    if let Ok(c) = self
                        .read_blob(&m.config.digest)
                        .and_then(|b| serde_json::from_slice::<super::oci::ImageConfig>(&b).map_err(|e| e.to_string()))
                    {
                        for (l, diff_id) in m.layers.iter().zip(&c.rootfs.diff_ids) {
                            live.layer_blobs.insert(l.digest.clone(), diff_id.clone());
                        }
                        live.layers.extend(c.rootfs.diff_ids);
                    }
                } else {
                    live.old_layer_blobs.extend(m.layers.iter().map(|l| l.digest.clone()));
                }
                live.blobs.extend(m.layers.iter().map(|l| l.digest.clone()));
            } else if let Ok(i) = serde_json::from_slice::<Index>(&data) {
                todo.extend(i.manifests.iter().map(|m| m.digest.clone()));
            }
        }
        Ok(live)
    }

    /// What unpacking the image of `manifest_digest` recorded (`rootfs/<hex>.json`).
    /// Read beneath the store's root with no symlink; None for a name not a sha256 digest.
    pub fn changes_of(&self, manifest_digest: &str) -> Option<super::unpack::Changes> {
        let hex = sha256_hex(manifest_digest).ok()?;
        serde_json::from_slice(&self.read_beneath(&format!("rootfs/{hex}.json"), MAX_JSON_BLOB).ok()??).ok()
    }

    /// [`super::unpack::LAYOUT_OBJECTS`] for an image whose files are objects; 0 for a tree of
    /// its own (an older version's).
    pub fn layout_of(&self, manifest_digest: &str) -> u32 {
        self.changes_of(manifest_digest).map(|c| c.layout).unwrap_or(0)
    }

    /// Removes blobs, rootfs directories, layer records and objects no image refers to, and
    /// leftovers of dead imports. Waits for imports and pulls to finish (they hold the
    /// collection lock shared).
    pub fn prune(&self) -> Result<Pruned, String> {
        let _gc = self.gc_exclusive(true)?;
        let _lock = self.lock()?;
        let live = self.live()?;
        let mut p = Pruned::default();
        let layers = self.layers()?;
        for e in fs::read_dir(self.root.join("oci/blobs/sha256")).map_err(|e| e.to_string())?.flatten() {
            let d = format!("sha256:{}", e.file_name().to_string_lossy());
            if !live.blobs.contains(&d) || live.blob_recorded(&d, &layers) {
                p.bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
                if fs::remove_file(e.path()).is_ok() {
                    p.blobs += 1;
                }
            }
        }
        for e in fs::read_dir(self.root.join("rootfs")).map_err(|e| e.to_string())?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.contains('.') || !e.path().is_dir() {
                continue;
            }
            let d = format!("sha256:{name}");
            if !live.manifests.contains(&d) {
                let before = super::layers::du(&e.path());
                if self.remove_rootfs_if_idle(&d) {
                    p.roots += 1;
                    p.bytes += before;
                }
            }
        }
        let c = self.collect(&live, None)?;
        p.chains = c.chains;
        p.layers = c.layers;
        p.objects = c.objects;
        p.bytes += c.bytes;
        // Temporary files of processes that are gone (named <kind>-<pid>-...).
        for e in fs::read_dir(self.root.join("tmp")).map_err(|e| e.to_string())?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.split('-').nth(1).unwrap_or("");
            if !pid.is_empty() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = super::unpack::remove_tree(&e.path());
            }
        }
        Ok(p)
    }

    /// Removes layer records no live image uses, layer blobs kept as records (unless an image
    /// of an older version's layout uses them), and objects nothing links: every object of the
    /// store, or (`only`) those of these layers. Under the exclusive collection lock.
    fn collect(&self, live: &Live, only: Option<&[String]>) -> Result<Collected, String> {
        let mut c = Collected::default();
        // Chains no image's directory names: their trees go first, so that their files'
        // objects are left with no link.
        let chains = self.live_chains();
        if let Ok(rd) = fs::read_dir(self.root.join("chains")) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let base = name.strip_suffix(".json").unwrap_or(&name).to_string();
                if chains.contains(&base) {
                    continue;
                }
                if name.ends_with(".json") {
                    if !self.chain_path(&base).exists() {
                        let _ = fs::remove_file(e.path());
                    }
                    continue;
                }
                if name.starts_with('.') {
                    // A chain being made is under the collection lock's shared side: none is
                    // now; this one's maker died.
                    let _ = super::unpack::remove_tree(&e.path());
                    continue;
                }
                c.bytes += chain_tree_bytes(self, &base);
                if super::unpack::remove_tree(&e.path()).is_ok() {
                    c.chains += 1;
                    let _ = fs::remove_file(self.chain_path(&base).with_extension("json"));
                }
            }
        }
        let objects = self.objects()?;
        let layers = self.layers()?;
        let mut keys: Vec<super::objects::Key> = Vec::new();
        for (diff_id, _, dir) in layers.list() {
            if only.is_some_and(|o| !o.contains(&diff_id)) {
                continue;
            }
            if let Some(rec) = super::layers::Record::open(&dir) {
                if only.is_some() {
                    keys.extend(rec.objects().iter().map(|e| e.key));
                }
                if !live.layers.contains(&diff_id) {
                    c.bytes += super::layers::du(&dir);
                    if super::unpack::remove_tree(&dir).is_ok() {
                        c.layers += 1;
                    }
                }
            } else if !live.layers.contains(&diff_id) {
                // A record cut short (a crash while it was renamed): nothing uses it.
                let _ = super::unpack::remove_tree(&dir);
            }
        }
        match only {
            Some(_) => {
                keys.sort();
                keys.dedup();
                for k in keys {
                    let (n, b) = super::objects::collect_key(&objects, &k);
                    c.objects += n;
                    c.bytes += b;
                }
            }
            None => {
                let mut garbage = Vec::new();
                super::objects::walk(&objects, |k, _, st| {
                    if st.st_nlink <= 1 {
                        garbage.push(*k);
                    }
                })?;
                garbage.dedup();
                for k in garbage {
                    let (n, b) = super::objects::collect_key(&objects, &k);
                    c.objects += n;
                    c.bytes += b;
                }
            }
        }
        Ok(c)
    }

    /// After `rmi`: collects what the removed images' layers leave unused, when no import or
    /// pull is running (else `prune` will). `removed`: their manifest digests.
    pub fn collect_removed(&self, removed: &[String]) -> Result<Option<Collected>, String> {
        let mut diff_ids = Vec::new();
        for d in removed {
            if self.rootfs_path(d).exists() {
                // Still in use by a sandbox: its files stay linked until `prune`.
                continue;
            }
            let Ok(m) = self
                .read_blob(d)
                .and_then(|b| serde_json::from_slice::<super::oci::Manifest>(&b).map_err(|e| e.to_string()))
            else {
                continue;
            };
            if let Ok(c) = self
                .read_blob(&m.config.digest)
                .and_then(|b| serde_json::from_slice::<super::oci::ImageConfig>(&b).map_err(|e| e.to_string()))
            {
                diff_ids.extend(c.rootfs.diff_ids);
            }
        }
        if diff_ids.is_empty() {
            return Ok(None);
        }
        let Some(_gc) = self.gc_exclusive(false)? else { return Ok(None) };
        let live = {
            let _lock = self.lock()?;
            self.live()?
        };
        self.collect(&live, Some(&diff_ids)).map(Some)
    }

    /// The image `input` names, as podman finds one in its storage: a name as given (a short
    /// one as `localhost/NAME`, then Docker Hub's, then any one stored name whose repository
    /// ends in `/NAME` with the same tag), else an image ID (the config digest, `sha256:` or
    /// not, in full or a unique prefix of at least 3 hex digits). Returns the stored name and
    /// the manifest descriptor; None when nothing matches.
    pub fn find(&self, input: &str) -> Result<Option<(String, Descriptor)>, String> {
        if let Some(hit) = self.find_name(input)? {
            return Ok(Some(hit));
        }
        let Some(id) = self.find_id(input)? else { return Ok(None) };
        let index = self.index()?;
        Ok(index.manifests.into_iter().find_map(|d| {
            let n = d.annotations.as_ref()?.get(REF_ANNOTATION)?.clone();
            (self.image_id(&d.digest).ok()? == id).then_some((n, d))
        }))
    }

    /// The image ID (config digest) `input` is, in full or a unique prefix (`sha256:` or not,
    /// at least 3 hex digits), if one in the store is.
    pub fn find_id(&self, input: &str) -> Result<Option<String>, String> {
        let hex = input.strip_prefix("sha256:").unwrap_or(input);
        if hex.len() < 3 || hex.len() > 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Ok(None);
        }
        let mut found: Option<String> = None;
        for d in self.index()?.manifests {
            let Ok(id) = self.image_id(&d.digest) else { continue };
            if id.trim_start_matches("sha256:").starts_with(hex) {
                match &found {
                    Some(other) if *other != id => {
                        return Err(format!("image ID '{input}' is ambiguous in the store: give more of it"))
                    }
                    _ => found = Some(id),
                }
            }
        }
        Ok(found)
    }

    /// The stored name `input` is, by podman's rules for names (see [`Store::find`]).
    pub fn find_name(&self, input: &str) -> Result<Option<(String, Descriptor)>, String> {
        let index = self.index()?;
        let named: Vec<(String, &Descriptor)> = index
            .manifests
            .iter()
            .filter_map(|d| Some((d.annotations.as_ref()?.get(REF_ANNOTATION)?.clone(), d)))
            .collect();
        let by_name = |n: &str| named.iter().find(|(name, _)| name == n).map(|(n, d)| (n.clone(), (*d).clone()));
        if let Ok(candidates) = crate::reference::Reference::local_candidates(input) {
            for c in &candidates {
                if let Some(hit) = by_name(&c.to_string()) {
                    return Ok(Some(hit));
                }
            }
            if !crate::reference::names_registry(input) && !input.contains('@') {
                // The tail: `python:bookworm` finds `localhost/polysandbox/python:bookworm`.
                let r = &candidates[candidates.len() - 1];
                let path = input.rsplit_once(':').filter(|(_, t)| !t.contains('/')).map_or(input, |(p, _)| p);
                let tail = format!("/{path}:{}", r.tag.as_deref().unwrap_or("latest"));
                let hits: Vec<&(String, &Descriptor)> = named.iter().filter(|(n, _)| n.ends_with(&tail)).collect();
                match hits.as_slice() {
                    [] => {}
                    [(n, d)] => return Ok(Some((n.clone(), (*d).clone()))),
                    many => {
                        let names: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
                        return Err(format!("'{input}' is ambiguous in the store: it could be {}", names.join(", ")));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The image ID of the manifest `manifest_digest`: its config's digest, as podman's, the
    /// same whatever archive or registry the image came from.
    pub fn image_id(&self, manifest_digest: &str) -> Result<String, String> {
        let m: super::oci::Manifest = serde_json::from_slice(&self.read_blob(manifest_digest)?)
            .map_err(|e| format!("manifest {manifest_digest}: {e}"))?;
        Ok(m.config.digest)
    }

    /// The manifest descriptor named `reference`.
    pub fn lookup(&self, reference: &str) -> Result<Option<Descriptor>, String> {
        Ok(self.index()?.manifests.into_iter().find(|d| {
            d.annotations.as_ref().and_then(|a| a.get(REF_ANNOTATION)).map(String::as_str) == Some(reference)
        }))
    }
}

/// What the images in the index use (see [`Store::live`]).
#[derive(Debug, Default)]
pub struct Live {
    pub manifests: Vec<String>,
    pub blobs: std::collections::HashSet<String>,
    pub layers: std::collections::HashSet<String>,
    pub old_layer_blobs: std::collections::HashSet<String>,
    /// Layer blob digest -> DiffID, of the images whose files are objects.
    pub layer_blobs: std::collections::HashMap<String, String>,
}

impl Live {
    /// Whether the blob `digest` is a layer the store keeps as a record and no image of an
    /// older version's layout needs as it is.
    pub fn blob_recorded(&self, digest: &str, layers: &super::layers::Layers) -> bool {
        !self.old_layer_blobs.contains(digest)
            && self.layer_blobs.get(digest).is_some_and(|d| layers.find_any(d).is_some())
    }
}

/// What [`Store::prune`] removed.
#[derive(Debug, Default)]
pub struct Pruned {
    pub blobs: u64,
    pub chains: u64,
    pub roots: u64,
    pub layers: u64,
    pub objects: u64,
    pub bytes: u64,
}

/// What a collection removed.
#[derive(Debug, Default)]
pub struct Collected {
    pub chains: u64,
    pub layers: u64,
    pub objects: u64,
    pub bytes: u64,
}

/// One image of the store, as `images` and `inspect` show it.
#[derive(Debug, Clone)]
pub struct Image {
    /// Its names (`org.opencontainers.image.ref.name`), in index order.
    pub names: Vec<String>,
    /// The manifest digest (the rootfs is unpacked under it).
    pub manifest: String,
    pub media_type: String,
    /// The image ID: the config's digest.
    pub id: String,
    /// The config, as stored.
    pub config: serde_json::Value,
    /// Bytes unpacked (the layers' compressed sizes where unknown).
    pub size: u64,
}

impl Store {
    /// Every image of the store, one per manifest, with its names.
    pub fn images(&self) -> Result<Vec<Image>, String> {
        let mut out: Vec<Image> = Vec::new();
        for d in self.index()?.manifests {
            let name = d.annotations.as_ref().and_then(|a| a.get(REF_ANNOTATION)).cloned();
            if let Some(i) = out.iter_mut().find(|i| i.manifest == d.digest) {
                i.names.extend(name);
                continue;
            }
            let Ok(m) = self
                .read_blob(&d.digest)
                .and_then(|b| serde_json::from_slice::<super::oci::Manifest>(&b).map_err(|e| e.to_string()))
            else {
                continue;
            };
            let config = self
                .read_blob(&m.config.digest)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or(serde_json::Value::Null);
            let changes = self.root.join("rootfs").join(format!("{}.json", d.digest.trim_start_matches("sha256:")));
            let unpacked = fs::read(changes)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| v["bytes"].as_u64());
            let size = unpacked.unwrap_or_else(|| m.layers.iter().map(|l| l.size).sum::<u64>() + m.config.size);
            out.push(Image {
                names: name.into_iter().collect(),
                manifest: d.digest.clone(),
                media_type: d.media_type.clone(),
                id: m.config.digest.clone(),
                config,
                size,
            });
        }
        Ok(out)
    }
}

/// The hex part of a `sha256:` digest (the only algorithm blobs are stored under).
/// The name of the chain of layers `diff_ids` unpacked as `variant` (see
/// [`super::layers::variant`]): the OCI ChainID's hex (ChainID(L1) = DiffID(L1),
/// ChainID(L1..Ln) = sha256(ChainID(L1..Ln-1) + " " + DiffID(Ln))), then the variant.
pub fn chain_name(diff_ids: &[String], variant: &str) -> String {
    let mut chain = String::new();
    for (i, d) in diff_ids.iter().enumerate() {
        chain =
            if i == 0 { d.clone() } else { format!("sha256:{:x}", Sha256::digest(format!("{chain} {d}").as_bytes())) };
    }
    if chain.is_empty() {
        chain = format!("sha256:{:x}", Sha256::digest(b""));
    }
    format!("{}-{variant}", chain.trim_start_matches("sha256:"))
}

/// The disk a chain's tree takes besides its files (as written when it was made).
pub fn chain_tree_bytes(store: &Store, name: &str) -> u64 {
    fs::read(store.chain_path(name).with_extension("json"))
        .ok()
        .and_then(|d| serde_json::from_slice::<serde_json::Value>(&d).ok())
        .and_then(|v| v["tree_bytes"].as_u64())
        .unwrap_or(0)
}

/// Whether `name` is a chain's name as [`chain_name`] makes it: a sha256 hex, `-`, a variant.
pub fn is_chain_name(name: &str) -> bool {
    let Some((hex, variant)) = name.split_once('-') else { return false };
    hex.len() == 64
        && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && matches!(variant, "r" | "rs" | "u" | "us")
}

/// The most a manifest, an index, a config or a record of the store is read to (a registry's
/// config is read up to 16 MiB).
pub const MAX_JSON_BLOB: u64 = 64 << 20;

pub fn sha256_hex(digest: &str) -> Result<&str, String> {
    crate::reference::parse_digest(digest)?;
    digest.strip_prefix("sha256:").ok_or_else(|| format!("unsupported digest {digest}: blobs are stored by sha256"))
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
