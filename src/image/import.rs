//! `polysandbox import`: images from archives, for sites with no registry.
//!
//! - an OCI image layout directory (`index.json`, `blobs/`), or an oci-archive (its tar);
//! - a docker-archive (`docker save`: `manifest.json`, config, layer tars), or its directory;
//! - a plain root filesystem tarball (like `docker import`): one layer, a generated config.
//!
//! Archives are opened with the same safe unpacker as layers (into the store's tmp/), blobs
//! are copied into the store verified against their digests, the rootfs is unpacked with
//! each layer checked against its DiffID, and only then is the image named in the index.

use super::assemble::{self, Source};
use super::objects::Linker;
use super::oci::{self, Descriptor, ImageConfig, Index, Manifest, RootFs, RunConfig};
use super::store::{Gc, Store, REF_ANNOTATION};
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
    // Held until the image is named: what the store has (objects, layer records) stays.
    let gc = store.gc_shared()?;
    let gc = &gc;
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
        return import_dir(store, gc, src, kind, tag, opts);
    }
    // A file: an image archive (extracted, safely, then read as a directory), or a rootfs.
    let names = tar_names(src)?;
    let is_image = names.iter().any(|n| n == "index.json" || n == "oci-layout" || n == "manifest.json");
    if !is_image {
        return import_rootfs(store, gc, src, tag, opts);
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
        import_dir(store, gc, &tmp, kind, tag, opts)
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

fn import_dir(
    store: &Store,
    gc: &Gc,
    dir: &Path,
    kind: Kind,
    tag: Option<String>,
    opts: &Options,
) -> Result<Imported, String> {
    match kind {
        Kind::OciLayout => import_layout(store, gc, dir, tag, opts),
        Kind::DockerArchive => import_docker(store, gc, dir, tag, opts),
    }
}

/// Whether the store holds the layer `diff_id` as a record for `opts` (then its blob is
/// neither copied nor read).
fn recorded(store: &Store, diff_id: Option<&String>, opts: &Options) -> bool {
    let opts = store.unpack_options(opts);
    diff_id.is_some_and(|d| store.layers().is_ok_and(|l| l.find(d, super::layers::variant(&opts)).is_some()))
}

fn import_layout(store: &Store, gc: &Gc, dir: &Path, tag: Option<String>, opts: &Options) -> Result<Imported, String> {
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
    for (path, digest) in [(manifest_path, &desc.digest), (blob(&manifest.config.digest)?, &manifest.config.digest)] {
        // Verified against its digest as it is stored.
        // (take: a file that grows after open_untrusted's size check is read to its cap only.)
        store.put_blob(m.file(&path, opts.max_unpacked)?.take(opts.max_unpacked), Some(digest))?;
    }
    let config: ImageConfig =
        serde_json::from_slice(&store.read_blob(&manifest.config.digest)?).map_err(|e| format!("image config: {e}"))?;
    // Layers are read from the layout as they are unpacked (each checked against its digest
    // and DiffID), never copied into the store; a layer the store has is not read at all.
    let mut inputs = Vec::new();
    for (i, l) in manifest.layers.iter().enumerate() {
        inputs.push(if recorded(store, config.rootfs.diff_ids.get(i), opts) {
            None
        } else {
            Some(m.file(&blob(&l.digest)?, opts.max_unpacked)?)
        });
    }
    let name = match (tag, source_name) {
        (Some(t), _) => t,
        (None, Some(n)) if n.contains('/') || n.contains(':') => Reference::parse(&n)?.to_string(),
        (None, Some(n)) => Reference::parse(&format!("localhost/imported:{n}"))?.to_string(),
        (None, None) => return Err(format!("{}: the image has no name; give one with --tag", dir.display())),
    };
    finish(store, gc, &desc.digest, &manifest, inputs, &name, &desc.media_type, opts)
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

fn import_docker(store: &Store, gc: &Gc, dir: &Path, tag: Option<String>, opts: &Options) -> Result<Imported, String> {
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
    let config: ImageConfig =
        serde_json::from_slice(&store.read_blob(&cfg_digest)?).map_err(|e| format!("image config: {e}"))?;
    let mut layers = Vec::new();
    let mut inputs = Vec::new();
    for (i, l) in entry.layers.iter().enumerate() {
        let mut f = m.file(l, opts.max_unpacked)?;
        let media = layer_media(&mut f, &dir.join(l))?;
        let size = f.metadata().map_err(|e| format!("{}: {e}", dir.join(l).display()))?.len();
        let diff_id = config.rootfs.diff_ids.get(i);
        // An uncompressed layer's digest is its DiffID (checked as it is unpacked); a
        // compressed one's is read.
        let digest = match diff_id {
            Some(d) if media == oci::MEDIA_LAYER => d.clone(),
            _ => {
                let d = sha256_of_reader(&mut (&mut f).take(opts.max_unpacked))
                    .map_err(|e| format!("{}: {e}", dir.join(l).display()))?;
                f = m.file(l, opts.max_unpacked)?;
                d
            }
        };
        inputs.push(if recorded(store, diff_id, opts) { None } else { Some(f) });
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
    finish(store, gc, &mdigest, &manifest, inputs, &name, oci::MEDIA_MANIFEST, opts)
}

fn sha256_of_reader(r: &mut impl Read) -> std::io::Result<String> {
    let mut h = Sha256::new();
    std::io::copy(r, &mut h)?;
    Ok(format!("sha256:{:x}", h.finalize()))
}

fn import_rootfs(store: &Store, gc: &Gc, src: &Path, tag: Option<String>, opts: &Options) -> Result<Imported, String> {
    let opts = &store.unpack_options(opts);
    let name =
        tag.ok_or_else(|| format!("{}: a root filesystem tarball has no name; give one with --tag", src.display()))?;
    let mut f = File::open(src).map_err(|e| format!("{}: {e}", src.display()))?;
    let media = layer_media(&mut f, src)?;
    let lsize = f.metadata().map_err(|e| format!("{}: {e}", src.display()))?.len();
    // Unpacked first (under a temporary name), read once: the config needs the DiffID, the
    // manifest the digest.
    let tmp = store.root.join("tmp").join(format!("rootfs-{}-{}", std::process::id(), now_ns()));
    let _ = super::unpack::remove_tree(&tmp);
    let objects = store.objects()?;
    let recs = store.layers()?;
    let mut linker = Linker::new(&objects);
    let layer = Layer { reader: BufReader::new(f), digest: None, diff_id: None };
    let (changes, streamed) =
        match assemble::unpack_to_store(vec![Source::Stream(layer)], &tmp, opts, &recs, &mut linker, None) {
            Ok(r) => r,
            Err(e) => {
                store.forget_objects(gc, &objects, &linker.created);
                return Err(format!("{}: {e}", src.display()));
            }
        };
    let ldigest = streamed.first().and_then(|s| s.as_ref()).map(|s| s.digest.clone()).unwrap_or_default();
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
    // One layer: its tree is the image's chain (see `build`); the image's own directory is
    // empty.
    let chain = super::store::chain_name(&changes.diff_ids, super::layers::variant(opts));
    let chain_dir = store.chain_path(&chain);
    store.make_chains_dir()?;
    if let Err(e) = fs::rename(&tmp, &chain_dir) {
        let _ = super::unpack::remove_tree(&tmp);
        // Another import of the same layer got there first.
        if !chain_dir.is_dir() {
            return Err(format!("store chain: {e}"));
        }
    }
    write_chain_meta(store, &chain, changes.tree_bytes);
    // Which chain it stands on is written before its directory exists: a sandbox that finds the
    // directory finds the chain.
    let changes = Changes { chain: Some(chain), tree_bytes: 0, ..changes };
    record_changes(store, &mdigest, &changes)?;
    let dest = store.rootfs_path(&mdigest);
    if let Err(e) = fs::create_dir(&dest) {
        if !dest.is_dir() {
            return Err(format!("store rootfs: {e}"));
        }
    }
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

/// Unpacks the stored image (verifying each layer's digest and DiffID) and names it. A layer
/// is read from `inputs[i]` (a member of the archive being imported) when given, else from the
/// store's blob; a layer the store holds as a record is applied from it. The caller holds the
/// collection lock `gc` from before it decided which layers to read.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    store: &Store,
    gc: &Gc,
    mdigest: &str,
    manifest: &Manifest,
    inputs: Vec<Option<File>>,
    name: &str,
    media_type: &str,
    opts: &Options,
) -> Result<Imported, String> {
    let opts = &store.unpack_options(opts);
    let config: ImageConfig =
        serde_json::from_slice(&store.read_blob(&manifest.config.digest)?).map_err(|e| format!("image config: {e}"))?;
    check_names(&manifest.layers, &config.rootfs.diff_ids)?;
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
        // Built under a temporary name, its record written, then renamed into place: a
        // sandbox (or a concurrent import of the same image) that finds the directory finds
        // which chain it stands on.
        let tmp = store.root.join("tmp").join(format!("top-{}-{}", std::process::id(), now_ns()));
        changes = build(store, gc, &manifest.layers, &config.rootfs.diff_ids, inputs, &tmp, opts)?;
        record_changes(store, mdigest, &changes)?;
        if let Err(e) = fs::rename(&tmp, &dest) {
            let _ = super::unpack::remove_tree(&tmp);
            // Another import of the same image got there first.
            if !dest.is_dir() {
                return Err(format!("store rootfs: {e}"));
            }
        }
    }
    let size = store.read_blob(mdigest)?.len() as u64;
    store.tag(
        name,
        Descriptor { media_type: media_type.into(), digest: mdigest.into(), size, annotations: None, platform: None },
    )?;
    store.drop_recorded_blobs(&manifest.layers, &config.rootfs.diff_ids);
    Ok(Imported { reference: name.into(), manifest: mdigest.into(), changes })
}

/// Builds an image with `layers` (and their `diff_ids`) in the store's layout: the tree of
/// all its layers but the last (its *chain*, `chains/<ChainID>-<variant>`, shared by every
/// image with those layers: made here unless the store has it), and at `dest` the tree of its
/// last layer alone, as overlayfs's layer over the chain (whiteouts kept). A one-layer image's
/// chain is its whole tree and `dest` is empty. Regular files are the object directory's.
/// Each layer is applied from its record when the store has one, else from `inputs[i]` or its
/// blob (recorded then), else recreated from a record made with other options. `opts` are the
/// store's ([`Store::unpack_options`]).
pub(crate) fn build(
    store: &Store,
    gc: &Gc,
    layers: &[Descriptor],
    diff_ids: &[String],
    mut inputs: Vec<Option<File>>,
    dest: &Path,
    opts: &Options,
) -> Result<Changes, String> {
    check_names(layers, diff_ids)?;
    let objects = store.objects()?;
    let recs = store.layers()?;
    let variant = super::layers::variant(opts);
    let mut recreated = Vec::new();
    let mut source_of = |i: usize| -> Result<Source<Box<dyn Read + Send>>, String> {
        let (l, diff_id) = (&layers[i], &diff_ids[i]);
        if let Some(r) = recs.find(diff_id, variant) {
            return Ok(Source::Stored(r));
        }
        let (reader, digest): (Box<dyn Read + Send>, Option<String>) = match inputs.get_mut(i).and_then(Option::take) {
            Some(f) => (Box::new(BufReader::new(f)), Some(l.digest.clone())),
            None => match File::open(store.blob_path(&l.digest)?) {
                Ok(f) => (Box::new(BufReader::new(f)), Some(l.digest.clone())),
                // Recorded meanwhile by another import (which then dropped the blob).
                Err(_) if recs.find(diff_id, variant).is_some() => {
                    return Ok(Source::Stored(recs.find(diff_id, variant).expect("just found")));
                }
                Err(e) => match recs.find_any(diff_id) {
                    // Recorded with other options (another way of unpacking): recreated
                    // from its record, checked against the DiffID, and unpacked anew.
                    Some(r) => {
                        let t = recreate(store, &objects, &r)?;
                        let f = t.reopen()?;
                        recreated.push(t);
                        (Box::new(BufReader::new(f)), None)
                    }
                    None => {
                        return Err(format!(
                            "layer {}: neither its blob nor a record of it is in the store ({e}): pull or import the image again",
                            l.digest
                        ))
                    }
                },
            },
        };
        Ok(Source::Stream(Layer { reader, digest, diff_id: Some(diff_id.clone()) }))
    };
    let n = layers.len().min(diff_ids.len());
    let k = if n >= 2 { n - 1 } else { n };
    let chain = super::store::chain_name(&diff_ids[..k], variant);
    let chain_dir = store.chain_path(&chain);
    store.make_chains_dir()?;
    if !chain_dir.is_dir() {
        let mut sources = Vec::with_capacity(k);
        for i in 0..k {
            sources.push(source_of(i)?);
        }
        let mut linker = Linker::new(&objects);
        match assemble::unpack_to_store(sources, &chain_dir, opts, &recs, &mut linker, None) {
            Ok((c, _)) => write_chain_meta(store, &chain, c.tree_bytes),
            // Made meanwhile by another import of an image with these layers.
            Err(_) if chain_dir.is_dir() => store.forget_objects(gc, &objects, &linker.created),
            Err(e) => {
                store.forget_objects(gc, &objects, &linker.created);
                return Err(e.to_string());
            }
        }
    }
    // What unpacking changed, layer by layer, from the layers' records.
    let mut total = Changes::default();
    let mut chain_records = Vec::with_capacity(k);
    for d in &diff_ids[..k] {
        let r = recs.find(d, variant).ok_or_else(|| format!("layer {d}: its record is missing from the store"))?;
        total.add(r.meta.changes.clone());
        chain_records.push(r);
    }
    total.layout = unpack::LAYOUT_OBJECTS;
    if n >= 2 {
        let source = source_of(n - 1)?;
        let mut linker = Linker::new(&objects);
        // Two paths of the image are one inode only where the image links them: the top's
        // files take members the chain's files do not.
        for r in &chain_records {
            for e in r.objects() {
                linker.reserve(&e.key, e.count);
            }
        }
        match assemble::unpack_to_store(vec![source], dest, opts, &recs, &mut linker, Some(&chain_dir)) {
            Ok((c, _)) => {
                total.tree_bytes = c.tree_bytes;
                total.add(c);
            }
            Err(e) => {
                store.forget_objects(gc, &objects, &linker.created);
                return Err(e.to_string());
            }
        }
    } else if let Err(e) = fs::create_dir(dest) {
        return Err(format!("{}: {e}", dest.display()));
    }
    total.chain = Some(chain);
    total.diff_ids = diff_ids[..n].to_vec();
    Ok(total)
}

/// Every layer digest and DiffID an image names is a sha256 digest: they name records,
/// chains and blobs in the store, and nothing an image says may become another path (a red
/// team's DiffID `../chains/<...>/evil/x` made root link a file of the image's choosing into
/// any directory).
fn check_names(layers: &[Descriptor], diff_ids: &[String]) -> Result<(), String> {
    for d in diff_ids {
        if !super::layers::valid_diff_id(d) {
            return Err(format!("image config: DiffID {d:?} is not a sha256 digest: refused"));
        }
    }
    for l in layers {
        crate::reference::parse_digest(&l.digest)
            .map_err(|e| format!("manifest: layer digest {:?}: {e}: refused", l.digest))?;
    }
    Ok(())
}

/// The disk a chain's tree takes besides its files, for `system df` (`chains/<name>.json`).
fn write_chain_meta(store: &Store, chain: &str, tree_bytes: u64) {
    let p = store.chain_path(chain).with_extension("json");
    let _ = store
        .write_atomic(&p, &serde_json::to_vec(&serde_json::json!({ "tree_bytes": tree_bytes })).unwrap_or_default());
}

/// A recorded layer's tar, recreated into a temporary file of the store (removed on drop).
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

impl TempFile {
    fn reopen(&self) -> Result<File, String> {
        File::open(&self.0).map_err(|e| format!("{}: {e}", self.0.display()))
    }
}

fn recreate(store: &Store, objects: &super::objects::Objects, r: &super::layers::Record) -> Result<TempFile, String> {
    let t = TempFile(store.root.join("tmp").join(format!("recreate-{}-{}", std::process::id(), now_ns())));
    let mut out = File::create(&t.0).map_err(|e| format!("{}: {e}", t.0.display()))?;
    let mut src = super::layers::Recreated::open(r, objects)?;
    std::io::copy(&mut src, &mut out).map_err(|e| format!("layer {}: {e}", r.meta.diff_id))?;
    Ok(t)
}

/// Per image `migrate` tried: its manifest digest, and the bytes freed or why not.
pub type Migrated = (String, Result<u64, String>);

/// Moves every image of an older version's layout (a tree of its own, its layer blobs) into
/// the shared one: its tree is built anew from its layers (records where the store has them,
/// else its blobs), put in place of the old one while no sandbox runs on it, and the blobs
/// the records now recreate are dropped. Returns, per image tried, the bytes freed or why
/// not.
pub fn migrate(store: &Store, opts: &Options) -> Result<Vec<Migrated>, String> {
    let opts = &store.unpack_options(opts);
    let gc = store.gc_shared()?;
    let mut out = Vec::new();
    let manifests: Vec<String> = {
        let mut v: Vec<String> = store.index()?.manifests.into_iter().map(|d| d.digest).collect();
        v.sort();
        v.dedup();
        v
    };
    for d in manifests {
        if store.layout_of(&d) == unpack::LAYOUT_OBJECTS || !store.rootfs_path(&d).is_dir() {
            continue;
        }
        let r = (|| -> Result<u64, String> {
            let manifest: Manifest =
                serde_json::from_slice(&store.read_blob(&d)?).map_err(|e| format!("manifest: {e}"))?;
            let config: ImageConfig = serde_json::from_slice(&store.read_blob(&manifest.config.digest)?)
                .map_err(|e| format!("image config: {e}"))?;
            let _busy = store
                .lock_rootfs_idle(&d)
                .ok_or_else(|| "a sandbox runs on it: run `polysandbox system migrate` again later".to_string())?;
            let tree = store.rootfs_path(&d);
            let before = super::layers::du(&tree);
            let fresh = store.root.join("tmp").join(format!("migrate-{}-{}", std::process::id(), now_ns()));
            let changes = build(store, &gc, &manifest.layers, &config.rootfs.diff_ids, Vec::new(), &fresh, opts)?;
            let old = store.root.join("tmp").join(format!("old-{}-{}", std::process::id(), now_ns()));
            fs::rename(&tree, &old).map_err(|e| format!("{}: {e}", tree.display()))?;
            if let Err(e) = fs::rename(&fresh, &tree) {
                let _ = fs::rename(&old, &tree);
                let _ = super::unpack::remove_tree(&fresh);
                return Err(format!("{}: {e}", tree.display()));
            }
            record_changes(store, &d, &changes)?;
            let _ = super::unpack::remove_tree(&old);
            let blobs: u64 = manifest
                .layers
                .iter()
                .filter_map(|l| store.blob_path(&l.digest).ok().and_then(|p| fs::metadata(p).ok()))
                .map(|m| std::os::unix::fs::MetadataExt::blocks(&m) * 512)
                .sum();
            store.drop_recorded_blobs(&manifest.layers, &config.rootfs.diff_ids);
            let blobs_after: u64 = manifest
                .layers
                .iter()
                .filter_map(|l| store.blob_path(&l.digest).ok().and_then(|p| fs::metadata(p).ok()))
                .map(|m| std::os::unix::fs::MetadataExt::blocks(&m) * 512)
                .sum();
            Ok((before + blobs).saturating_sub(changes.tree_bytes + blobs_after))
        })();
        out.push((d, r));
    }
    // The disk figures cached for `images` and `system df` (keyed by the index, which a
    // migration does not change) are stale.
    let _ = fs::remove_file(store.root.join("usage.json"));
    Ok(out)
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
