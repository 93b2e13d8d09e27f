//! `polysandbox pull REF [--platform linux/arm64]`.

use crate::image::pull::{self, Options};
use crate::image::{store::Store, unpack};
use crate::units;
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct PullArgs {
    /// The image: NAME[:TAG][@sha256:DIGEST] (python:3.12 is docker.io/library/python:3.12).
    reference: String,
    /// The platform to pull from a multi-arch index (default: this machine's).
    #[arg(long, value_parser = pull::parse_platform)]
    platform: Option<crate::image::oci::Platform>,
    /// Blobs downloaded at once.
    #[arg(long, default_value_t = 6)]
    jobs: usize,
    /// false: allow plain http and unverified TLS (loopback registries always may).
    #[arg(long = "tls-verify", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    tls_verify: Option<bool>,
    /// A directory of extra CA certificates (*.crt) for the registry.
    #[arg(long = "cert-dir")]
    cert_dir: Option<PathBuf>,
    /// Registries file: mirrors, locations, insecure registries (default:
    /// $POLYSANDBOX_REGISTRIES_CONF, ~/.config/polysandbox/registries.conf, /etc/polysandbox/registries.conf).
    #[arg(long = "registries-conf")]
    registries_conf: Option<PathBuf>,
    /// Refuse images that unpack to more than this.
    #[arg(long = "max-unpacked-size", default_value = "64G", value_parser = units::parse_size)]
    max_unpacked: u64,
    /// Fill a store meant for other users (e.g. a cluster's POLYSANDBOX_SHARED_STORES): a new
    /// or empty store is marked so, kept readable by all, and its images are unpacked without
    /// setuid/setgid bits, device nodes or file capabilities.
    #[arg(long)]
    shared: bool,
    /// The auth file to take credentials from (alone), as podman's --authfile.
    #[arg(long, value_name = "FILE")]
    authfile: Option<PathBuf>,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
    /// No progress output.
    #[arg(short, long)]
    quiet: bool,
}

/// Pulls with the default settings (for `run IMAGE` when the image is missing).
pub fn pull_quietly(
    store: &Store,
    reference: &str,
    show: bool,
    platform: Option<crate::image::oci::Platform>,
) -> Result<(), String> {
    let o = Options {
        platform: platform.unwrap_or_else(pull::native_platform),
        jobs: 6,
        tls_verify: None,
        cert_dir: None,
        registries_conf: None,
        progress: show && std::io::stderr().is_terminal(),
        unpack: unpack::Options::default(),
    };
    pull::pull(store, reference, &o).map(|_| ())
}

pub fn main(a: PullArgs) -> i32 {
    if let Some(f) = a.authfile.clone() {
        crate::image::auth::use_file(f);
    }
    let store = match Store::open_as(&a.root.clone().unwrap_or_else(Store::default_root), a.shared) {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let o = Options {
        platform: a.platform.unwrap_or_else(pull::native_platform),
        jobs: a.jobs.max(1),
        tls_verify: a.tls_verify,
        cert_dir: a.cert_dir,
        registries_conf: a.registries_conf,
        progress: !a.quiet && std::io::stderr().is_terminal(),
        unpack: unpack::Options { max_unpacked: a.max_unpacked, ..Default::default() },
    };
    match pull::pull(&store, &a.reference, &o) {
        Ok(p) => {
            out!("{} {}", p.imported.reference, p.imported.manifest);
            if !a.quiet {
                eprintln!(
                    "polysandbox: {} blobs fetched ({}), the rest already in the store",
                    p.blobs_fetched,
                    units::human_bytes(p.bytes_fetched)
                );
            }
            0
        }
        Err(e) => super::error(e),
    }
}
