//! `polysandbox inspect IMAGE...`: a JSON array, one object per image with podman's keys (`Id`,
//! `Digest`, `RepoTags`, `Config`, `Architecture`, `RootFS`, ...) and ours (`Manifest`, `Rootfs`:
//! the unpacked directory, `UnpackChanges`: what unpacking changed); `--format` as `images`'.
//! An image is named as `run` names one: a name (short or not) or an image ID (or its prefix).

use super::format::Template;
use super::images::{json_of, repo_tag};
use crate::image::store::Store;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// Image names or IDs.
    #[arg(required = true)]
    images: Vec<String>,
    /// json (the default), or a Go template over each image's keys: {{.Id}}, {{.Config.Cmd}},
    /// {{.Architecture}}, {{json .RepoTags}}, ...
    #[arg(short, long)]
    format: Option<String>,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

fn inspect(store: &Store, name: &str) -> Result<serde_json::Value, String> {
    let (_, desc) = store.find(name)?.ok_or_else(|| format!("{name}: image not known"))?;
    let img = store
        .images()?
        .into_iter()
        .find(|i| i.manifest == desc.digest)
        .ok_or_else(|| format!("{name}: image not known"))?;
    let manifest: serde_json::Value =
        serde_json::from_slice(&store.read_blob(&img.manifest)?).map_err(|e| e.to_string())?;
    let changes: serde_json::Value =
        std::fs::read(store.root.join("rootfs").join(format!("{}.json", img.manifest.trim_start_matches("sha256:"))))
            .ok()
            .and_then(|d| serde_json::from_slice(&d).ok())
            .unwrap_or(serde_json::Value::Null);
    let c = &img.config;
    let rootfs = store.rootfs_path(&img.manifest);
    // The trees a sandbox stacks, the top first (podman's overlay driver says LowerDir).
    let (base, over) = store.lowers(&img.manifest, &rootfs).unwrap_or((rootfs.clone(), Vec::new()));
    let stack: Vec<&std::path::Path> = over.iter().map(|p| p.as_path()).chain([base.as_path()]).collect();
    let lower = stack.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":");
    let list = json_of(&img, None);
    Ok(serde_json::json!({
        "Id": list["Id"],
        "Digest": img.manifest,
        "RepoTags": img.names,
        "RepoDigests": img.names.iter().map(|n| format!("{}@{}", repo_tag(n).0, img.manifest)).collect::<Vec<_>>(),
        "Parent": "",
        "Comment": c["comment"].as_str().unwrap_or(""),
        "Created": c["created"],
        "Config": c["config"],
        "Version": "",
        "Author": c["author"].as_str().unwrap_or(""),
        "Architecture": c["architecture"],
        "Os": c["os"],
        "Variant": c["variant"],
        "Size": img.size,
        "VirtualSize": img.size,
        "GraphDriver": {"Name": "polysandbox", "Data": {"LowerDir": lower}},
        "RootFS": {"Type": "layers", "Layers": c["rootfs"]["diff_ids"]},
        "Labels": c["config"]["Labels"],
        "Annotations": manifest["annotations"],
        "ManifestType": img.media_type,
        "User": c["config"]["User"].as_str().unwrap_or(""),
        "History": c["history"],
        "Manifest": manifest,
        "Rootfs": rootfs,
        "UnpackChanges": changes,
    }))
}

pub fn main(a: InspectArgs) -> i32 {
    let store = match Store::open(&a.root.clone().unwrap_or_else(Store::default_root)) {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let template = match a.format.as_deref().filter(|f| *f != "json").map(Template::parse).transpose() {
        Ok(t) => t,
        Err(e) => return super::error(e),
    };
    // As podman: what is found is shown, each name not found is an error, and the exit says so.
    let mut code = 0;
    let mut found = Vec::new();
    for name in &a.images {
        match inspect(&store, name) {
            Ok(v) => found.push(v),
            Err(e) => code = super::error(e),
        }
    }
    match template {
        Some(t) => {
            for v in &found {
                match t.render(v) {
                    Ok(l) => out!("{l}"),
                    Err(e) => return super::error(e),
                }
            }
        }
        None => out!("{}", serde_json::to_string_pretty(&found).unwrap()),
    }
    code
}
