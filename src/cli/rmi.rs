//! `polysandbox rmi REF...`: removes names; an image's rootfs goes with its last name (unless
//! a sandbox runs on it); blobs stay until `prune`.

use crate::image::store::Store;
use crate::reference::Reference;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RmiArgs {
    #[arg(required = true)]
    images: Vec<String>,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

pub fn main(a: RmiArgs) -> i32 {
    let store = match Store::open(&a.root.clone().unwrap_or_else(Store::default_root)) {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let mut code = 0;
    for i in &a.images {
        match Reference::parse(i).map(|r| r.to_string()).and_then(|n| store.untag(&n).map(|d| (n, d))) {
            Ok((n, d)) => out!("Untagged: {n} {d}"),
            Err(e) => code = super::error(e),
        }
    }
    code
}
