//! `polysandbox rmi IMAGE...`: removes names, or an image by its ID (every name of it, with
//! `-f` when it has several, as podman asks); an image's rootfs goes with its last name
//! (unless a sandbox runs on it: then at a later `prune`), and with it the files and layers
//! only it used (unless an import or pull is running: then at `prune`); blobs stay until
//! `prune`.

use crate::image::store::{Store, REF_ANNOTATION};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RmiArgs {
    /// Image names or IDs.
    #[arg(required = true)]
    images: Vec<String>,
    /// Remove an image by ID even when several names refer to it.
    #[arg(short, long)]
    force: bool,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

/// The names `input` removes: the name it is, or every name of the image ID it is.
fn names_of(store: &Store, input: &str, force: bool) -> Result<Vec<String>, String> {
    if let Some((name, _)) = store.find_name(input)? {
        return Ok(vec![name]);
    }
    let Some(id) = store.find_id(input)? else {
        let name = crate::reference::Reference::parse(input)?.to_string();
        return Err(format!("image {name} is not in the store"));
    };
    let mut names = Vec::new();
    for d in store.index()?.manifests {
        if store.image_id(&d.digest).ok().as_ref() == Some(&id) {
            names.extend(d.annotations.as_ref().and_then(|a| a.get(REF_ANNOTATION)).cloned());
        }
    }
    if names.len() > 1 && !force {
        return Err(format!(
            "image {input} has {} names ({}): remove them by name, or by ID with -f",
            names.len(),
            names.join(", ")
        ));
    }
    Ok(names)
}

pub fn main(a: RmiArgs) -> i32 {
    let store = match Store::open(&a.root.clone().unwrap_or_else(Store::default_root)) {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let mut code = 0;
    let mut removed = Vec::new();
    for i in &a.images {
        match names_of(&store, i, a.force) {
            Ok(names) => {
                for n in names {
                    match store.untag(&n) {
                        Ok(d) => {
                            out!("Untagged: {n} {d}");
                            removed.push(d);
                        }
                        Err(e) => code = super::error(e),
                    }
                }
            }
            Err(e) => code = super::error(e),
        }
    }
    // What no image left uses: the files only the removed images had, their layers.
    let live = store.index().map(|i| i.manifests.into_iter().map(|d| d.digest).collect::<Vec<_>>()).unwrap_or_default();
    removed.retain(|d| !live.contains(d));
    removed.dedup();
    if let Err(e) = store.collect_removed(&removed) {
        code = super::error(e);
    }
    code
}
