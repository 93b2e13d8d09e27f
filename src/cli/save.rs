//! `polysandbox save IMAGE -o FILE [--format docker-archive|oci-archive]`: an image of the
//! store as an archive `import` (and podman, docker, skopeo) read back. The store keeps a
//! layer as its files and a tar-split, not as its blob: the layer's tar is recreated byte for
//! byte (checked against its DiffID as it is written) and goes uncompressed, as `docker save`
//! writes layers, named by its DiffID (the manifest in an oci-archive says so). A blob the
//! store still has (an image unpacked by an older version) goes as it is. Either way the
//! config goes as stored, so the image ID, the config's digest, is the same after the round
//! trip.

use crate::image::oci::{Descriptor, ImageConfig, Index, Manifest, DOCKER_MANIFEST, MEDIA_INDEX, MEDIA_LAYER};
use crate::image::store::{Store, REF_ANNOTATION};
use clap::Args;
use sha2::Digest;

/// An uncompressed layer in a Docker schema 2 manifest.
const DOCKER_LAYER: &str = "application/vnd.docker.image.rootfs.diff.tar";
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SaveArgs {
    /// The image: a name or an ID.
    image: String,
    /// Write to FILE (default: stdout, unless it is a terminal).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// docker-archive (docker save's) or oci-archive (a tar of an OCI image layout).
    #[arg(long, default_value = "docker-archive", value_parser = ["docker-archive", "oci-archive"])]
    format: String,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

fn add(b: &mut tar::Builder<impl Write>, path: &str, data: &mut dyn std::io::Read, size: u64) -> Result<(), String> {
    let mut h = tar::Header::new_ustar();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_entry_type(tar::EntryType::Regular);
    b.append_data(&mut h, path, data).map_err(|e| format!("write {path}: {e}"))
}

/// Where a layer's bytes come from.
enum Source {
    Blob,
    Record(crate::image::layers::Record),
}

fn write_archive(store: &Store, name: &str, desc: &Descriptor, format: &str, out: impl Write) -> Result<(), String> {
    let manifest: Manifest =
        serde_json::from_slice(&store.read_blob(&desc.digest)?).map_err(|e| format!("manifest: {e}"))?;
    let config: ImageConfig =
        serde_json::from_slice(&store.read_blob(&manifest.config.digest)?).map_err(|e| format!("image config: {e}"))?;
    // No object goes while the archive is written.
    let _gc = store.gc_shared()?;
    let objects = store.objects()?;
    let records = store.layers()?;
    let docker = desc.media_type == DOCKER_MANIFEST || manifest.media_type.as_deref() == Some(DOCKER_MANIFEST);
    let mut sources = Vec::new();
    let mut layers = Vec::new();
    for (i, l) in manifest.layers.iter().enumerate() {
        let p = store.blob_path(&l.digest)?;
        if p.exists() {
            sources.push(Source::Blob);
            layers.push(l.clone());
            continue;
        }
        let diff_id =
            config.rootfs.diff_ids.get(i).ok_or_else(|| format!("image config: no DiffID for layer {}", i + 1))?;
        let r = records
            .find_any(diff_id)
            .ok_or_else(|| format!("layer {}: neither its blob nor its record is in the store", l.digest))?;
        if !crate::image::layers::valid_diff_id(diff_id) || r.meta.diff_id != *diff_id {
            return Err(format!("layer {}: its record is not of DiffID {diff_id}: the store is damaged", l.digest));
        }
        layers.push(Descriptor {
            media_type: if docker { DOCKER_LAYER.into() } else { MEDIA_LAYER.into() },
            digest: diff_id.clone(),
            size: r.meta.size,
            annotations: None,
            platform: None,
        });
        sources.push(Source::Record(r));
    }
    let rewritten = layers != manifest.layers;
    let (mdata, mdesc) = if rewritten {
        let m = Manifest { layers: layers.clone(), ..manifest.clone() };
        let data = serde_json::to_vec(&m).map_err(|e| e.to_string())?;
        let digest = format!("sha256:{:x}", sha2::Sha256::digest(&data));
        let d = Descriptor { digest, size: data.len() as u64, annotations: None, ..desc.clone() };
        (data, d)
    } else {
        (store.read_blob(&desc.digest)?, desc.clone())
    };
    let mut b = tar::Builder::new(out);
    let hex = |d: &str| d.trim_start_matches("sha256:").to_string();
    let blob = |b: &mut tar::Builder<_>, d: &str, path: &str| -> Result<(), String> {
        let p = store.blob_path(d)?;
        let mut f = std::fs::File::open(&p).map_err(|e| format!("blob {d}: {e}"))?;
        let size = f.metadata().map_err(|e| e.to_string())?.len();
        add(b, path, &mut f, size)
    };
    let layer = |b: &mut tar::Builder<_>, s: &Source, d: &Descriptor, path: &str| -> Result<(), String> {
        match s {
            Source::Blob => blob(b, &d.digest, path),
            Source::Record(r) => {
                let mut src = crate::image::layers::Recreated::open(r, &objects)?;
                add(b, path, &mut src, r.meta.size)
            }
        }
    };
    if format == "oci-archive" {
        let layout = br#"{"imageLayoutVersion":"1.0.0"}"#;
        add(&mut b, "oci-layout", &mut &layout[..], layout.len() as u64)?;
        add(&mut b, &format!("blobs/sha256/{}", hex(&mdesc.digest)), &mut &mdata[..], mdata.len() as u64)?;
        blob(&mut b, &manifest.config.digest, &format!("blobs/sha256/{}", hex(&manifest.config.digest)))?;
        for (s, d) in sources.iter().zip(&layers) {
            layer(&mut b, s, d, &format!("blobs/sha256/{}", hex(&d.digest)))?;
        }
        let mut top = mdesc.clone();
        top.annotations = Some([(REF_ANNOTATION.to_string(), name.to_string())].into());
        let index = Index { schema_version: 2, media_type: Some(MEDIA_INDEX.into()), manifests: vec![top] };
        let data = serde_json::to_vec(&index).map_err(|e| e.to_string())?;
        add(&mut b, "index.json", &mut &data[..], data.len() as u64)?;
    } else {
        let config = format!("{}.json", hex(&manifest.config.digest));
        blob(&mut b, &manifest.config.digest, &config)?;
        let mut paths = Vec::new();
        for (s, d) in sources.iter().zip(&layers) {
            let path = format!("{}.tar", hex(&d.digest));
            layer(&mut b, s, d, &path)?;
            paths.push(path);
        }
        let entry = serde_json::json!([{"Config": config, "RepoTags": [name], "Layers": paths}]);
        let data = serde_json::to_vec(&entry).map_err(|e| e.to_string())?;
        add(&mut b, "manifest.json", &mut &data[..], data.len() as u64)?;
    }
    b.into_inner().and_then(|mut w| w.flush()).map_err(|e| format!("write: {e}"))
}

pub fn main(a: SaveArgs) -> i32 {
    let r = (|| -> Result<(), String> {
        let store = Store::open(&a.root.clone().unwrap_or_else(Store::default_root))?;
        let (name, desc) = store.find(&a.image)?.ok_or_else(|| format!("{}: image not known", a.image))?;
        match &a.output {
            Some(path) => {
                // Under a temporary name beside it, renamed when whole: a failure leaves nothing.
                // Made new (O_EXCL: never a file or link someone put there first), under a name
                // not known in advance.
                let (tmp, f) = super::common::create_beside(path)?;
                let r = write_archive(&store, &name, &desc, &a.format, std::io::BufWriter::new(f))
                    .and_then(|_| std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display())));
                if r.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                r
            }
            None if std::io::stdout().is_terminal() => {
                Err("refusing to write an archive to a terminal: give -o FILE, or redirect stdout".into())
            }
            None => write_archive(&store, &name, &desc, &a.format, std::io::stdout().lock()),
        }
    })();
    match r {
        Ok(()) => 0,
        Err(e) => super::error(e),
    }
}
