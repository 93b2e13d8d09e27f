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

/// A fresh overlay's directories under `scratch` (emptied first) over the read-only `lower`:
/// the `mount -t overlay` options and the directory to mount it on.
pub fn overlay(lower: &Path, scratch: &Path) -> (String, PathBuf) {
    let _ = std::fs::remove_dir_all(scratch);
    let (upper, work, merged) = (scratch.join("upper"), scratch.join("work"), scratch.join("merged"));
    for d in [&upper, &work, &merged] {
        std::fs::create_dir_all(d).unwrap();
    }
    (format!("lowerdir={},upperdir={},workdir={}", lower.display(), upper.display(), work.display()), merged)
}
