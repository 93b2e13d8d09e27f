//! The image store: an OCI image layout (blobs by digest, `index.json` naming each image with
//! the `org.opencontainers.image.ref.name` annotation, so `skopeo copy oci:<store>/oci:<name>`
//! reads it), and one unpacked rootfs per image, read-only to sandboxes.
//!
//! ```text
//! $POLYSANDBOX_ROOT (default ~/.local/share/polysandbox, /var/lib/polysandbox for root)
//!   oci/oci-layout, oci/index.json, oci/blobs/sha256/<hex>
//!   rootfs/<manifest hex>/          unpacked by image::unpack, renamed into place when whole
//!   tmp/                            partial downloads and imports
//!   lock                            flock(2) around index updates
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
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        data.join("polysandbox")
    }

    /// Read-only stores searched after this one (e.g. a cluster's shared store on NFS):
    /// `$POLYSANDBOX_SHARED_STORES`, colon-separated. Nothing is ever written to them.
    pub fn shared() -> Vec<Store> {
        std::env::var("POLYSANDBOX_SHARED_STORES")
            .unwrap_or_default()
            .split(':')
            .filter(|p| !p.is_empty())
            .map(|p| Store { root: PathBuf::from(p), shared: true })
            .filter(|s| s.index_path().is_file())
            .collect()
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
        if md.uid() == unsafe { libc::geteuid() } {
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

    fn index_path(&self) -> PathBuf {
        self.root.join("oci/index.json")
    }

    pub fn blob_path(&self, digest: &str) -> Result<PathBuf, String> {
        Ok(self.root.join("oci/blobs/sha256").join(sha256_hex(digest)?))
    }

    pub fn rootfs_path(&self, manifest_digest: &str) -> PathBuf {
        self.root.join("rootfs").join(manifest_digest.trim_start_matches("sha256:"))
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

    pub fn read_blob(&self, digest: &str) -> Result<Vec<u8>, String> {
        fs::read(self.blob_path(digest)?).map_err(|e| format!("blob {digest}: {e}"))
    }

    pub fn index(&self) -> Result<Index, String> {
        let data = fs::read(self.index_path()).map_err(|e| format!("store index: {e}"))?;
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

    /// Removes blobs and rootfs directories no image refers to, and leftovers of dead imports.
    /// Returns (blobs removed, rootfs removed, bytes freed).
    pub fn prune(&self) -> Result<(u64, u64, u64), String> {
        let _lock = self.lock()?;
        let index = self.index()?;
        let mut keep: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut manifests: Vec<String> = Vec::new();
        let mut todo: Vec<String> = index.manifests.iter().map(|d| d.digest.clone()).collect();
        while let Some(d) = todo.pop() {
            if !keep.insert(d.clone()) {
                continue;
            }
            let Ok(data) = self.read_blob(&d) else { continue };
            if let Ok(m) = serde_json::from_slice::<super::oci::Manifest>(&data) {
                manifests.push(d.clone());
                keep.insert(m.config.digest.clone());
                keep.extend(m.layers.iter().map(|l| l.digest.clone()));
            } else if let Ok(i) = serde_json::from_slice::<Index>(&data) {
                todo.extend(i.manifests.iter().map(|m| m.digest.clone()));
            }
        }
        let (mut blobs, mut roots, mut bytes) = (0, 0, 0);
        for e in fs::read_dir(self.root.join("oci/blobs/sha256")).map_err(|e| e.to_string())?.flatten() {
            let d = format!("sha256:{}", e.file_name().to_string_lossy());
            if !keep.contains(&d) {
                bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
                if fs::remove_file(e.path()).is_ok() {
                    blobs += 1;
                }
            }
        }
        for e in fs::read_dir(self.root.join("rootfs")).map_err(|e| e.to_string())?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.contains('.') || !e.path().is_dir() {
                continue;
            }
            let d = format!("sha256:{name}");
            if !manifests.contains(&d) && self.remove_rootfs_if_idle(&d) {
                roots += 1;
            }
        }
        // Temporary files of processes that are gone (named <kind>-<pid>-...).
        for e in fs::read_dir(self.root.join("tmp")).map_err(|e| e.to_string())?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.split('-').nth(1).unwrap_or("");
            if !pid.is_empty() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = super::unpack::remove_tree(&e.path());
            }
        }
        Ok((blobs, roots, bytes))
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
pub fn sha256_hex(digest: &str) -> Result<&str, String> {
    crate::reference::parse_digest(digest)?;
    digest.strip_prefix("sha256:").ok_or_else(|| format!("unsupported digest {digest}: blobs are stored by sha256"))
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
