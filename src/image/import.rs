//! `polysandbox import`: images from archives, for sites with no registry.
//!
//! - an OCI image layout directory (`index.json`, `blobs/`), or an oci-archive (its tar);
//! - a docker-archive (`docker save`: `manifest.json`, config, layer tars), or its directory;
//! - a plain root filesystem tarball (like `docker import`): one layer, a generated config.
//!
//! Archives are opened with the same safe unpacker as layers (into the store's tmp/), blobs
//! are copied into the store verified against their digests, the rootfs is unpacked with
//! each layer checked against its DiffID, and only then is the image named in the index.

use super::oci::{self, Descriptor, ImageConfig, Index, Manifest, RootFs, RunConfig};
use super::store::{Store, REF_ANNOTATION};
use super::unpack::{self, Changes, Layer, Options};
use crate::reference::Reference;
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

pub struct Imported {
    pub reference: String,
    pub manifest: String,
    pub changes: Changes,
}

/// What an archive or directory holds.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    OciLayout,
    DockerArchive,
}

fn kind_of_dir(d: &Path) -> Option<Kind> {
    if d.join("index.json").is_file() && d.join("blobs").is_dir() {
        Some(Kind::OciLayout)
    } else if d.join("manifest.json").is_file() {
        Some(Kind::DockerArchive)
    } else {
        None
    }
}

/// Imports `src` into `store`, named `tag` (else the name the archive carries).
pub fn import(store: &Store, src: &Path, tag: Option<&str>, opts: &Options) -> Result<Imported, String> {
    let tag = tag.map(|t| Reference::parse(t).map(|r| r.to_string())).transpose()?;
    let meta = fs::metadata(src).map_err(|e| format!("{}: {e}", src.display()))?;
    if !meta.is_dir() && !meta.is_file() {
        return Err(format!("{}: not a regular file or directory (a FIFO or device): refused", src.display()));
    }
    if meta.is_dir() {
        let kind = kind_of_dir(src).ok_or_else(|| {
            format!(
                "{}: neither an OCI image layout (index.json, blobs/) nor a docker-archive (manifest.json)",
                src.display()
            )
        })?;
        return import_dir(store, src, kind, tag, opts);
    }
    // A file: an image archive (extracted, safely, then read as a directory), or a rootfs.
    let names = tar_names(src)?;
    let is_image = names.iter().any(|n| n == "index.json" || n == "oci-layout" || n == "manifest.json");
    if !is_image {
        return import_rootfs(store, src, tag, opts);
    }
    let tmp = store.root.join("tmp").join(format!("archive-{}-{}", std::process::id(), now_ns()));
    let _ = super::unpack::remove_tree(&tmp);
    let f = File::open(src).map_err(|e| format!("{}: {e}", src.display()))?;
    let archive_opts = Options { rootless: true, strip_privilege: true, max_unpacked: opts.max_unpacked };
    let r = unpack::unpack_image(
        vec![Layer { reader: BufReader::new(f), digest: None, diff_id: None }],
        &tmp,
        &archive_opts,
    )
    .map_err(|e| format!("{}: {e}", src.display()))
    .and_then(|_| {
        let kind = kind_of_dir(&tmp).ok_or_else(|| format!("{}: not an image archive", src.display()))?;
        import_dir(store, &tmp, kind, tag, opts)
    });
    let _ = super::unpack::remove_tree(&tmp);
    r
}

/// The member names of a (possibly compressed) tar, to tell what it is.
fn tar_names(src: &Path) -> Result<Vec<String>, String> {
    let f = BufReader::new(File::open(src).map_err(|e| format!("{}: {e}", src.display()))?);
    let reader = decompressing(f).map_err(|e| format!("{}: {e}", src.display()))?;
    let mut a = tar::Archive::new(reader);
    let mut names = Vec::new();
    for e in a.entries().map_err(|e| format!("{}: not a tar archive: {e}", src.display()))? {
        let e = e.map_err(|e| format!("{}: corrupt tar archive: {e}", src.display()))?;
        let p = String::from_utf8_lossy(&e.path_bytes()).trim_start_matches("./").to_string();
        names.push(p);
        if names.len() > 64 {
            break; // image archives name their index in the first entries
        }
    }
    if names.is_empty() {
        return Err(format!("{}: an empty archive", src.display()));
    }
    Ok(names)
}

fn decompressing<R: std::io::BufRead + 'static>(mut r: R) -> std::io::Result<Box<dyn Read>> {
    let magic = r.fill_buf()?.get(..4).map(|m| m.to_vec()).unwrap_or_default();
    Ok(if magic.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::bufread::MultiGzDecoder::new(r))
    } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(zstd::stream::read::Decoder::with_buffer(r)?)
    } else {
        Box::new(r)
    })
}

/// The compression of a layer by its magic bytes; leaves `f` at its start.
fn layer_media(f: &mut File, what: &Path) -> Result<&'static str, String> {
    use std::io::Seek;
    let mut m = [0u8; 4];
    let n = f.read(&mut m).map_err(|e| format!("{}: {e}", what.display()))?;
    f.rewind().map_err(|e| format!("{}: {e}", what.display()))?;
    Ok(if n >= 2 && m[..2] == [0x1f, 0x8b] {
        oci::MEDIA_LAYER_GZIP
    } else if n == 4 && m == [0x28, 0xb5, 0x2f, 0xfd] {
        oci::MEDIA_LAYER_ZSTD
    } else {
        oci::MEDIA_LAYER
    })
}

/// The members of an image layout or extracted archive, read only as what they must be:
/// regular files inside it. A member is resolved beneath the directory with no symlink on the
/// way (a `blobs/sha256/<hex> -> /etc/shadow` would otherwise put a host file into the store,
/// readable), opened without blocking (a FIFO would hang the import) and refused unless it is a
/// regular file (`/dev/zero` would fill the disk) no larger than the cap.
struct Members {
    dir: std::os::fd::OwnedFd,
    path: PathBuf,
}

/// The most a JSON member (index, manifest, config) may hold.
const JSON_CAP: u64 = 16 << 20;

impl Members {
    fn open(dir: &Path) -> Result<Members, String> {
        let fd =
            crate::sys::open(&crate::sys::cpath(dir), libc::O_PATH | libc::O_DIRECTORY, &dir.display().to_string())?;
        Ok(Members { dir: fd, path: dir.to_path_buf() })
    }

    fn file(&self, rel: &str, cap: u64) -> Result<File, String> {
        use std::os::fd::AsRawFd;
        let shown = self.path.join(rel);
        if rel.split('/').any(|c| c == "..") || rel.starts_with('/') || rel.is_empty() {
            return Err(format!("archive names '{rel}', outside the archive"));
        }
        crate::sys::open_untrusted(
            self.dir.as_raw_fd(),
            rel,
            crate::sys::RESOLVE_BENEATH | crate::sys::RESOLVE_NO_SYMLINKS,
            cap,
        )
        .map_err(|e| match e {
            crate::sys::Untrusted::Escapes => format!(
                "{}: a symlink in the image: refused (members must be regular files inside it)",
                shown.display()
            ),
            e => format!("{}: {e}", shown.display()),
        })
    }

    fn json<T: serde::de::DeserializeOwned>(&self, rel: &str) -> Result<T, String> {
        self.json_checked(rel, None)
    }

    /// A JSON member named by its digest: checked against it before it is parsed.
    fn json_checked<T: serde::de::DeserializeOwned>(&self, rel: &str, digest: Option<&str>) -> Result<T, String> {
        let shown = self.path.join(rel);
        let mut data = Vec::new();
        self.file(rel, JSON_CAP)?
            .take(JSON_CAP)
            .read_to_end(&mut data)
            .map_err(|e| format!("{}: {e}", shown.display()))?;
        if let Some(d) = digest {
            let got = format!("sha256:{:x}", Sha256::digest(&data));
            if got != d {
                return Err(format!("{}: content is {got}, not {d}", shown.display()));
            }
        }
        serde_json::from_slice(&data).map_err(|e| format!("{}: {e}", shown.display()))
    }
}

fn import_dir(store: &Store, dir: &Path, kind: Kind, tag: Option<String>, opts: &Options) -> Result<Imported, String> {
    match kind {
        Kind::OciLayout => import_layout(store, dir, tag, opts),
        Kind::DockerArchive => import_docker(store, dir, tag, opts),
    }
}

fn import_layout(store: &Store, dir: &Path, tag: Option<String>, opts: &Options) -> Result<Imported, String> {
    let m = Members::open(dir)?;
    let index: Index = m.json("index.json")?;
    let blob = |d: &str| -> Result<String, String> { Ok(format!("blobs/sha256/{}", super::store::sha256_hex(d)?)) };
    // One image: the named one (by --tag's tag, if the layout names several), for our arch.
    let mut desc = match index.manifests.as_slice() {
        [] => return Err(format!("{}: the index lists no image", dir.display())),
        [one] => one.clone(),
        many => {
            let want = tag.as_deref().and_then(|t| Reference::parse(t).ok()).and_then(|r| r.tag);
            many.iter()
                .find(|d| {
                    d.annotations.as_ref().and_then(|a| a.get(REF_ANNOTATION)).is_some_and(|n| {
                        Some(n) == want.as_ref() || n.ends_with(&format!(":{}", want.clone().unwrap_or_default()))
                    })
                })
                .or_else(|| {
                    many.iter().find(|d| d.platform.as_ref().is_some_and(|p| p.architecture == oci::native_arch()))
                })
                .cloned()
                .ok_or_else(|| {
                    format!("{}: the index lists {} images; name one with --tag", dir.display(), many.len())
                })?
        }
    };
    let source_name = desc.annotations.as_ref().and_then(|a| a.get(REF_ANNOTATION)).cloned();
    // A nested index (multi-arch): pick our platform.
    if desc.media_type == oci::MEDIA_INDEX || desc.media_type == oci::DOCKER_LIST {
        let nested: Index = m.json_checked(&blob(&desc.digest)?, Some(&desc.digest))?;
        desc = nested
            .manifests
            .into_iter()
            .find(|d| d.platform.as_ref().is_some_and(|p| p.os == "linux" && p.architecture == oci::native_arch()))
            .ok_or_else(|| format!("{}: no linux/{} image in the index", dir.display(), oci::native_arch()))?;
    }
    let manifest_path = blob(&desc.digest)?;
    let manifest: Manifest = m.json_checked(&manifest_path, Some(&desc.digest))?;
    let mut files =
        vec![(manifest_path, desc.digest.clone()), (blob(&manifest.config.digest)?, manifest.config.digest.clone())];
    for l in &manifest.layers {
        files.push((blob(&l.digest)?, l.digest.clone()));
    }
    for (path, digest) in &files {
        // Verified against its digest as it is stored.
        // (take: a file that grows after open_untrusted's size check is read to its cap only.)
        store.put_blob(m.file(path, opts.max_unpacked)?.take(opts.max_unpacked), Some(digest))?;
    }
    let name = match (tag, source_name) {
        (Some(t), _) => t,
        (None, Some(n)) if n.contains('/') || n.contains(':') => Reference::parse(&n)?.to_string(),
        (None, Some(n)) => Reference::parse(&format!("localhost/imported:{n}"))?.to_string(),
        (None, None) => return Err(format!("{}: the image has no name; give one with --tag", dir.display())),
    };
    finish(store, &desc.digest, &manifest, &name, &desc.media_type, opts)
}

#[derive(serde::Deserialize)]
struct DockerEntry {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

fn import_docker(store: &Store, dir: &Path, tag: Option<String>, opts: &Options) -> Result<Imported, String> {
    let m = Members::open(dir)?;
    let entries: Vec<DockerEntry> = m.json("manifest.json")?;
    let entry = match entries.as_slice() {
        [one] => one,
        [] => return Err(format!("{}: manifest.json lists no image", dir.display())),
        many => {
            let want = tag.clone().unwrap_or_default();
            many.iter()
                .find(|e| {
                    e.repo_tags
                        .iter()
                        .flatten()
                        .any(|t| Reference::parse(t).map(|r| r.to_string()).ok() == Some(want.clone()))
                })
                .ok_or_else(|| {
                    format!("{}: the archive holds {} images; name one with --tag", dir.display(), many.len())
                })?
        }
    };
    let (cfg_digest, cfg_size) = store.put_blob(m.file(&entry.config, JSON_CAP)?.take(JSON_CAP), None)?;
    let mut layers = Vec::new();
    for l in &entry.layers {
        let mut f = m.file(l, opts.max_unpacked)?;
        let media = layer_media(&mut f, &dir.join(l))?;
        let (digest, size) = store.put_blob(f.take(opts.max_unpacked), None)?;
        layers.push(Descriptor { media_type: media.into(), digest, size, annotations: None, platform: None });
    }
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(oci::MEDIA_MANIFEST.into()),
        config: Descriptor {
            media_type: oci::MEDIA_CONFIG.into(),
            digest: cfg_digest,
            size: cfg_size,
            annotations: None,
            platform: None,
        },
        layers,
    };
    let data = serde_json::to_vec(&manifest).map_err(|e| e.to_string())?;
    let (mdigest, _) = store.put_blob(&data[..], None)?;
    let name = match (tag, entry.repo_tags.as_ref().and_then(|t| t.first())) {
        (Some(t), _) => t,
        (None, Some(t)) => Reference::parse(t)?.to_string(),
        (None, None) => return Err(format!("{}: the image has no name; give one with --tag", dir.display())),
    };
    finish(store, &mdigest, &manifest, &name, oci::MEDIA_MANIFEST, opts)
}

fn import_rootfs(store: &Store, src: &Path, tag: Option<String>, opts: &Options) -> Result<Imported, String> {
    // A store other users read gets images without privilege in them.
    let opts = &Options { strip_privilege: opts.strip_privilege || store.shared, ..opts.clone() };
    let name =
        tag.ok_or_else(|| format!("{}: a root filesystem tarball has no name; give one with --tag", src.display()))?;
    let mut f = File::open(src).map_err(|e| format!("{}: {e}", src.display()))?;
    let media = layer_media(&mut f, src)?;
    let (ldigest, lsize) = store.put_blob(f, None)?;
    // Unpack first (under a temporary name): the config needs the DiffID.
    let tmp = store.root.join("tmp").join(format!("rootfs-{}-{}", std::process::id(), now_ns()));
    let _ = super::unpack::remove_tree(&tmp);
    let blob = File::open(store.blob_path(&ldigest)?).map_err(|e| e.to_string())?;
    let changes = unpack::unpack_image(
        vec![Layer { reader: BufReader::new(blob), digest: Some(ldigest.clone()), diff_id: None }],
        &tmp,
        opts,
    )
    .map_err(|e| format!("{}: {e}", src.display()))?;
    let config = ImageConfig {
        architecture: oci::native_arch().into(),
        os: "linux".into(),
        created: None,
        config: Some(RunConfig {
            env: Some(vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()]),
            cmd: Some(vec!["/bin/sh".into()]),
            ..Default::default()
        }),
        rootfs: RootFs { kind: "layers".into(), diff_ids: changes.diff_ids.clone() },
    };
    let cdata = serde_json::to_vec(&config).map_err(|e| e.to_string())?;
    let (cdigest, csize) = store.put_blob(&cdata[..], None)?;
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(oci::MEDIA_MANIFEST.into()),
        config: Descriptor {
            media_type: oci::MEDIA_CONFIG.into(),
            digest: cdigest,
            size: csize,
            annotations: None,
            platform: None,
        },
        layers: vec![Descriptor {
            media_type: media.into(),
            digest: ldigest,
            size: lsize,
            annotations: None,
            platform: None,
        }],
    };
    let mdata = serde_json::to_vec(&manifest).map_err(|e| e.to_string())?;
    let (mdigest, msize) = store.put_blob(&mdata[..], None)?;
    let dest = store.rootfs_path(&mdigest);
    if let Err(e) = fs::rename(&tmp, &dest) {
        let _ = super::unpack::remove_tree(&tmp);
        // Another import of the same image got there first.
        if !dest.is_dir() {
            return Err(format!("store rootfs: {e}"));
        }
    }
    record_changes(store, &mdigest, &changes)?;
    store.tag(
        &name,
        Descriptor {
            media_type: oci::MEDIA_MANIFEST.into(),
            digest: mdigest.clone(),
            size: msize,
            annotations: None,
            platform: None,
        },
    )?;
    Ok(Imported { reference: name, manifest: mdigest, changes })
}

/// Unpacks the stored image (verifying each layer's digest and DiffID) and names it.
pub(crate) fn finish(
    store: &Store,
    mdigest: &str,
    manifest: &Manifest,
    name: &str,
    media_type: &str,
    opts: &Options,
) -> Result<Imported, String> {
    // A store other users read gets images without privilege in them.
    let opts = &Options { strip_privilege: opts.strip_privilege || store.shared, ..opts.clone() };
    let config: ImageConfig =
        serde_json::from_slice(&store.read_blob(&manifest.config.digest)?).map_err(|e| format!("image config: {e}"))?;
    if config.rootfs.diff_ids.len() != manifest.layers.len() {
        return Err(format!(
            "image config lists {} layers, the manifest {}",
            config.rootfs.diff_ids.len(),
            manifest.layers.len()
        ));
    }
    let dest = store.rootfs_path(mdigest);
    let mut changes = Changes::default();
    if !dest.exists() {
        let mut layers = Vec::new();
        for (l, diff_id) in manifest.layers.iter().zip(&config.rootfs.diff_ids) {
            let f = File::open(store.blob_path(&l.digest)?).map_err(|e| format!("layer {}: {e}", l.digest))?;
            layers.push(Layer {
                reader: BufReader::new(f),
                digest: Some(l.digest.clone()),
                diff_id: Some(diff_id.clone()),
            });
        }
        changes = unpack::unpack_image(layers, &dest, opts).map_err(|e| e.to_string())?;
        record_changes(store, mdigest, &changes)?;
    }
    let size = store.read_blob(mdigest)?.len() as u64;
    store.tag(
        name,
        Descriptor { media_type: media_type.into(), digest: mdigest.into(), size, annotations: None, platform: None },
    )?;
    Ok(Imported { reference: name.into(), manifest: mdigest.into(), changes })
}

/// What unpacking changed (rootless), kept beside the rootfs for `inspect`.
fn record_changes(store: &Store, mdigest: &str, c: &Changes) -> Result<(), String> {
    let p = store.root.join("rootfs").join(format!("{}.json", mdigest.trim_start_matches("sha256:")));
    store.write_atomic(&p, &serde_json::to_vec_pretty(c).map_err(|e| e.to_string())?)
}

/// The stored image `reference` names (a name, short or not, or an image ID: see
/// [`Store::find`]): its manifest digest, config and rootfs directory.
pub fn resolve(store: &Store, reference: &str) -> Result<(String, ImageConfig, PathBuf), String> {
    let (name, desc) = match store.find(reference)? {
        Some(hit) => hit,
        None => {
            let name = Reference::parse(reference)?.to_string();
            return Err(format!(
                "image {name} is not in the store {} (polysandbox import FILE --tag {name})",
                store.root.display()
            ));
        }
    };
    let manifest: Manifest =
        serde_json::from_slice(&store.read_blob(&desc.digest)?).map_err(|e| format!("manifest: {e}"))?;
    let config: ImageConfig =
        serde_json::from_slice(&store.read_blob(&manifest.config.digest)?).map_err(|e| format!("image config: {e}"))?;
    let rootfs = store.rootfs_path(&desc.digest);
    if !rootfs.is_dir() {
        return Err(format!("image {name}: its rootfs is missing from the store; import it again"));
    }
    Ok((desc.digest, config, rootfs))
}

fn now_ns() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}
