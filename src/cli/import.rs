//! `polysandbox import FILE|DIR [--tag REF]`.

use crate::image::{import, store::Store, unpack};
use crate::units;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A docker-archive, an oci-archive, an OCI image layout directory, or a rootfs tarball.
    source: PathBuf,
    /// Name for the image (required for a rootfs tarball).
    #[arg(long, short = 't')]
    tag: Option<String>,
    /// Refuse images that unpack to more than this.
    #[arg(long = "max-unpacked-size", default_value = "64G", value_parser = units::parse_size)]
    max_unpacked: u64,
    /// Fill a store meant for other users (e.g. a cluster's POLYSANDBOX_SHARED_STORES): a new
    /// or empty store is marked so, kept readable by all, and its images are unpacked without
    /// setuid/setgid bits, device nodes or file capabilities.
    #[arg(long)]
    shared: bool,
    /// Store directory (default: $POLYSANDBOX_ROOT, ~/.local/share/polysandbox, or /var/lib/polysandbox as root).
    #[arg(long)]
    root: Option<PathBuf>,
}

pub fn main(a: ImportArgs) -> i32 {
    let store = match Store::open_as(&a.root.clone().unwrap_or_else(Store::default_root), a.shared) {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let opts = unpack::Options { max_unpacked: a.max_unpacked, ..Default::default() };
    match import::import(&store, &a.source, a.tag.as_deref(), &opts) {
        Ok(i) => {
            let c = &i.changes;
            out!("{} {}", i.reference, i.manifest);
            if c.device_nodes_skipped + c.setid_bits_stripped + c.ownership_taken + c.xattrs_skipped > 0 {
                // SAFETY: geteuid cannot fail.
                let why = if store.shared {
                    "for a shared store"
                } else if unsafe { libc::geteuid() } != 0 {
                    "rootless"
                } else {
                    "as root"
                };
                eprintln!(
                    "polysandbox: note: unpacked {why}: {} device nodes skipped, {} setuid/setgid bits stripped, {} xattrs skipped (privileged, or overlayfs's own), {} files owned by you instead of their owner",
                    c.device_nodes_skipped, c.setid_bits_stripped, c.xattrs_skipped, c.ownership_taken
                );
            }
            0
        }
        Err(e) => super::error(e),
    }
}
