//! `polysandbox images [--format table|json]`.

use crate::image::store::{Store, REF_ANNOTATION};
use crate::units::human_bytes;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ImagesArgs {
    #[arg(long, default_value = "table", value_parser = ["table", "json"])]
    format: String,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

pub fn main(a: ImagesArgs) -> i32 {
    let store = match Store::open(&a.root.clone().unwrap_or_else(Store::default_root)) {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let index = match store.index() {
        Ok(i) => i,
        Err(e) => return super::error(e),
    };
    let rows: Vec<serde_json::Value> = index
        .manifests
        .iter()
        .map(|d| {
            let name = d.annotations.as_ref().and_then(|a| a.get(REF_ANNOTATION)).cloned().unwrap_or_default();
            let size = store
                .read_blob(&d.digest)
                .ok()
                .and_then(|m| serde_json::from_slice::<crate::image::oci::Manifest>(&m).ok())
                .map(|m| m.layers.iter().map(|l| l.size).sum::<u64>() + m.config.size)
                .unwrap_or(0);
            serde_json::json!({"name": name, "digest": d.digest, "size": size})
        })
        .collect();
    if a.format == "json" {
        out!("{}", serde_json::to_string_pretty(&rows).unwrap());
    } else {
        out!("{:<50} {:<20} {:>10}", "IMAGE", "ID", "SIZE");
        for r in &rows {
            let id =
                r["digest"].as_str().unwrap_or("").trim_start_matches("sha256:").chars().take(12).collect::<String>();
            out!(
                "{:<50} {:<20} {:>10}",
                r["name"].as_str().unwrap_or(""),
                id,
                human_bytes(r["size"].as_u64().unwrap_or(0))
            );
        }
    }
    0
}
