//! `polysandbox inspect REF`: the image's manifest, config, rootfs, and what unpacking changed.

use crate::image::{import, store::Store};
use crate::reference::Reference;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct InspectArgs {
    image: String,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

pub fn main(a: InspectArgs) -> i32 {
    let r = (|| -> Result<serde_json::Value, String> {
        let store = Store::open(&a.root.clone().unwrap_or_else(Store::default_root))?;
        let (digest, config, rootfs) = import::resolve(&store, &a.image)?;
        let manifest: serde_json::Value =
            serde_json::from_slice(&store.read_blob(&digest)?).map_err(|e| e.to_string())?;
        let changes: serde_json::Value =
            std::fs::read(store.root.join("rootfs").join(format!("{}.json", digest.trim_start_matches("sha256:"))))
                .ok()
                .and_then(|d| serde_json::from_slice(&d).ok())
                .unwrap_or(serde_json::Value::Null);
        Ok(serde_json::json!({
            "name": Reference::parse(&a.image)?.to_string(),
            "digest": digest,
            "manifest": manifest,
            "config": config,
            "rootfs": rootfs,
            "unpack_changes": changes,
        }))
    })();
    match r {
        Ok(v) => {
            out!("{}", serde_json::to_string_pretty(&v).unwrap());
            0
        }
        Err(e) => super::error(e),
    }
}
