//! `polysandbox save IMAGE -o FILE [--format docker-archive|oci-archive]`: an image of the
//! store as an archive `import` (and podman, docker, skopeo) read back. The blobs go as they
//! are stored (a layer stays compressed as it was pulled), so the image ID, the config's
//! digest, is the same after the round trip.

use crate::image::oci::{Descriptor, Index, Manifest, MEDIA_INDEX};
use crate::image::store::{Store, REF_ANNOTATION};
use clap::Args;
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

fn write_archive(store: &Store, name: &str, desc: &Descriptor, format: &str, out: impl Write) -> Result<(), String> {
    let manifest: Manifest =
        serde_json::from_slice(&store.read_blob(&desc.digest)?).map_err(|e| format!("manifest: {e}"))?;
    let mut b = tar::Builder::new(out);
    let hex = |d: &str| d.trim_start_matches("sha256:").to_string();
    let blob = |b: &mut tar::Builder<_>, d: &str, path: &str| -> Result<(), String> {
        let p = store.blob_path(d)?;
        let mut f = std::fs::File::open(&p).map_err(|e| format!("blob {d}: {e}"))?;
        let size = f.metadata().map_err(|e| e.to_string())?.len();
        add(b, path, &mut f, size)
    };
    if format == "oci-archive" {
        let layout = br#"{"imageLayoutVersion":"1.0.0"}"#;
        add(&mut b, "oci-layout", &mut &layout[..], layout.len() as u64)?;
        for d in std::iter::once(&desc.digest)
            .chain([&manifest.config.digest])
            .chain(manifest.layers.iter().map(|l| &l.digest))
        {
            blob(&mut b, d, &format!("blobs/sha256/{}", hex(d)))?;
        }
        let mut top = desc.clone();
        top.annotations = Some([(REF_ANNOTATION.to_string(), name.to_string())].into());
        let index = Index { schema_version: 2, media_type: Some(MEDIA_INDEX.into()), manifests: vec![top] };
        let data = serde_json::to_vec(&index).map_err(|e| e.to_string())?;
        add(&mut b, "index.json", &mut &data[..], data.len() as u64)?;
    } else {
        let config = format!("{}.json", hex(&manifest.config.digest));
        blob(&mut b, &manifest.config.digest, &config)?;
        let mut layers = Vec::new();
        for l in &manifest.layers {
            let path = format!("{}.tar", hex(&l.digest));
            blob(&mut b, &l.digest, &path)?;
            layers.push(path);
        }
        let entry = serde_json::json!([{"Config": config, "RepoTags": [name], "Layers": layers}]);
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
