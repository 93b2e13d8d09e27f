//! `polysandbox tag IMAGE NAME...`: more names for a stored image (by name or ID).

use crate::image::store::Store;
use crate::reference::Reference;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TagArgs {
    /// The image: a name or an ID.
    image: String,
    /// The new names (a short one is Docker Hub's, as pull and import name them).
    #[arg(required = true)]
    names: Vec<String>,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

pub fn main(a: TagArgs) -> i32 {
    let r = (|| -> Result<(), String> {
        let store = Store::open(&a.root.clone().unwrap_or_else(Store::default_root))?;
        let names =
            a.names.iter().map(|n| Reference::parse(n).map(|r| r.to_string())).collect::<Result<Vec<_>, _>>()?;
        let (_, desc) = store.find(&a.image)?.ok_or_else(|| format!("{}: image not known", a.image))?;
        for n in names {
            let mut d = desc.clone();
            d.annotations = None;
            store.tag(&n, d)?;
        }
        Ok(())
    })();
    match r {
        Ok(()) => 0,
        Err(e) => super::error(e),
    }
}
