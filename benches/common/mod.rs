//! What several benches share: the binary under test, and a fresh overlay for a chroot run.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The polysandbox binary to measure: `POLYSANDBOX_BIN`, else this checkout's release build.
pub fn binary() -> PathBuf {
    if let Some(b) = std::env::var_os("POLYSANDBOX_BIN") {
        return b.into();
    }
    let out = Command::new("rustc").arg("-vV").output().expect("rustc");
    let host =
        String::from_utf8_lossy(&out.stdout).lines().find_map(|l| l.strip_prefix("host: ").map(String::from)).unwrap();
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target").join(host).join("release/polysandbox")
}

/// The trees of the image `digest` in `store`, top first, as the store's layout stacks them:
/// the image's last layer over its chain (`rootfs/<hex>.json` names it), or one tree for an
/// image an older version unpacked.
pub fn image_lowers(store: &Path, digest: &str) -> Vec<PathBuf> {
    let hex = digest.trim_start_matches("sha256:");
    let own = store.join("rootfs").join(hex);
    let changes: serde_json::Value = std::fs::read(store.join("rootfs").join(format!("{hex}.json")))
        .ok()
        .and_then(|d| serde_json::from_slice(&d).ok())
        .unwrap_or_default();
    match changes["chain"].as_str() {
        Some(chain) => {
            let base = store.join("chains").join(chain);
            if changes["diff_ids"].as_array().map_or(0, |a| a.len()) >= 2 {
                vec![own, base]
            } else {
                vec![base]
            }
        }
        None => vec![own],
    }
}

/// A fresh overlay's directories under `scratch` (emptied first) over the read-only trees
/// `lowers` (top first): the `mount -t overlay` options and the directory to mount it on.
pub fn overlay(lowers: &[PathBuf], scratch: &Path) -> (String, PathBuf) {
    let lower = lowers.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":");
    let _ = std::fs::remove_dir_all(scratch);
    let (upper, work, merged) = (scratch.join("upper"), scratch.join("work"), scratch.join("merged"));
    for d in [&upper, &work, &merged] {
        std::fs::create_dir_all(d).unwrap();
    }
    // userxattr: the store's layer trees mark opaque directories with user.overlay.opaque.
    (format!("lowerdir={lower},upperdir={},workdir={},userxattr", upper.display(), work.display()), merged)
}

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
