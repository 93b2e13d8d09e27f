//! `polysandbox prune`: drops blobs, rootfs, layer records and objects no image refers to, and
//! the cgroups of sandboxes whose supervisor was SIGKILLed (each run also sweeps those it can
//! find cheaply). Waits for imports and pulls into the store to finish.

use crate::image::store::Store;
use crate::units::human_bytes;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct PruneArgs {
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

pub fn main(a: PruneArgs) -> i32 {
    match Store::open(&a.root.clone().unwrap_or_else(Store::default_root)).and_then(|s| s.prune()) {
        Ok(p) => {
            out!(
                "removed {} blobs, {} image trees, {} chains, {} layer records and {} objects ({})",
                p.blobs,
                p.roots,
                p.chains,
                p.layers,
                p.objects,
                human_bytes(p.bytes)
            );
            let groups = crate::cgroups::sweep_everywhere();
            if groups > 0 {
                out!("removed {groups} stale sandbox cgroups");
            }
            0
        }
        Err(e) => super::error(e),
    }
}
