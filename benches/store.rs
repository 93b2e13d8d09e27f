//! The store at benchmark scale (issue #26): the seven shared SWE-bench replicas imported into
//! an empty store, the disk the store takes against the distinct file contents in it, and what
//! one more replica of a repository version already stored (flask 2.3's second instance,
//! imported last) adds beyond its own new contents.
//!
//! `cargo bench --bench store` (as root, after `.ci/setup` has built the replicas: their
//! archives are in `.cache/swebench/`). `POLYSANDBOX_BIN_BEFORE=PATH` also builds the store
//! with another build (an older layout) and prints both; `BENCH_KEEP=DIR` keeps this build's
//! store there. The store goes under /var/tmp (ext4,
//! where stores live; disk use is what is measured, not time), removed at the end.
//!
//! Printed: per import the store's disk (`du`, every inode once) and time; then the store's
//! disk against the distinct contents (goal: at most 1.3x), and the last replica's cost against
//! its new contents (goal: at most 10 MiB more). Exits 1 if an import fails; never for a goal.

mod common;
use common::binary;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const MIB: f64 = 1024.0 * 1024.0;

/// The replica archives setup built, the flask 2.3 pair's second instance last.
fn replicas() -> Vec<(String, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/swebench");
    let records =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench/instances.jsonl"))
            .expect("../shared/swebench/instances.jsonl");
    let mut out = Vec::new();
    for l in records.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let id = v["instance_id"].as_str().unwrap().to_string();
        let archive = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (run bash .ci/setup first)", dir.display()))
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with(&format!("{id}-")) && n.ends_with(".tar")
            })
            .unwrap_or_else(|| panic!("no replica archive of {id} in {} (run bash .ci/setup)", dir.display()));
        out.push((id, archive));
    }
    let last = out.iter().position(|(id, _)| id == "pallets__flask-5063").expect("pallets__flask-5063");
    let l = out.remove(last);
    out.push(l);
    out
}

/// Disk blocks of everything under `p`, each inode once (as `du -s`).
fn du(p: &Path) -> u64 {
    let o = Command::new("du").args(["-s", "--block-size=1"]).arg(p).output().unwrap();
    String::from_utf8_lossy(&o.stdout).split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The contents of the regular files under `root` (hashed once per inode): hash -> size.
fn contents(root: &Path, seen: &mut HashMap<(u64, u64), [u8; 32]>, out: &mut HashMap<[u8; 32], u64>) {
    let Ok(rd) = std::fs::read_dir(root) else { return };
    for e in rd.flatten() {
        let Ok(m) = e.path().symlink_metadata() else { continue };
        if m.is_dir() {
            contents(&e.path(), seen, out);
        } else if m.is_file() {
            let k = (m.dev(), m.ino());
            let h = match seen.get(&k) {
                Some(h) => *h,
                None => {
                    let mut f = std::fs::File::open(e.path()).unwrap();
                    let mut s = Sha256::new();
                    std::io::copy(&mut f, &mut s).unwrap();
                    let h: [u8; 32] = s.finalize().into();
                    seen.insert(k, h);
                    h
                }
            };
            out.insert(h, m.len());
        }
    }
}

/// The image trees of the store (`rootfs/<hex>`, and the layer trees if the layout has them).
fn trees(store: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for sub in ["rootfs", "chains"] {
        if let Ok(rd) = std::fs::read_dir(store.join(sub)) {
            v.extend(
                rd.flatten().map(|e| e.path()).filter(|p| p.is_dir() && !p.to_string_lossy().ends_with(".partial")),
            );
        }
    }
    v
}

struct Run {
    label: String,
    after: Vec<(String, u64, f64)>,
    distinct: u64,
    last_new: u64,
}

fn build(bin: &Path, label: &str, replicas: &[(String, PathBuf)]) -> Run {
    let store = PathBuf::from(format!("/var/tmp/polysandbox-bench-store-{}-{label}", std::process::id()));
    let _ = std::fs::remove_dir_all(&store);
    let mut after = Vec::new();
    let mut before_last: HashMap<[u8; 32], u64> = HashMap::new();
    for (i, (id, archive)) in replicas.iter().enumerate() {
        if i == replicas.len() - 1 {
            let mut seen = HashMap::new();
            for t in trees(&store) {
                contents(&t, &mut seen, &mut before_last);
            }
        }
        let t = Instant::now();
        let o = Command::new(bin)
            .args(["import", "--root"])
            .arg(&store)
            .arg(archive)
            .args(["--tag", &format!("localhost/bench/{}:latest", id.to_lowercase().replace("__", "_1776_"))])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        if !o.status.success() {
            eprintln!("import {id}: {}", String::from_utf8_lossy(&o.stderr));
            std::process::exit(1);
        }
        after.push((id.clone(), du(&store), t.elapsed().as_secs_f64()));
    }
    let mut all = HashMap::new();
    let mut seen = HashMap::new();
    for t in trees(&store) {
        contents(&t, &mut seen, &mut all);
    }
    let distinct: u64 = all.values().sum();
    let before_keys: HashSet<_> = before_last.keys().collect();
    let last_new: u64 = all.iter().filter(|(k, _)| !before_keys.contains(k)).map(|(_, s)| *s).sum();
    // BENCH_KEEP=DIR: the store is moved there (e.g. for `POLYSANDBOX_ROOT=DIR cargo bench
    // --bench swebench`, start-up on this layout), else removed.
    match std::env::var_os("BENCH_KEEP") {
        Some(keep) if label == "this build" => {
            let _ = Command::new("rm").arg("-rf").arg(&keep).status();
            std::fs::rename(&store, &keep).unwrap();
            println!("(the store is kept in {})", Path::new(&keep).display());
        }
        _ => {
            let _ = Command::new("rm").arg("-rf").arg(&store).status();
        }
    }
    Run { label: label.into(), after, distinct, last_new }
}

fn report(r: &Run) {
    println!("\n{}: the store after each import", r.label);
    println!("{:<32} {:>12} {:>10}", "replica", "store MiB", "import s");
    for (id, disk, secs) in &r.after {
        println!("{:<32} {:>12.1} {:>10.1}", id, *disk as f64 / MIB, secs);
    }
    let total = r.after.last().map(|a| a.1).unwrap_or(0);
    let n = r.after.len();
    let last_cost = total.saturating_sub(r.after[n - 2].1);
    println!(
        "store {:.1} MiB, distinct file contents {:.1} MiB: {:.2}x (goal: at most 1.3x)",
        total as f64 / MIB,
        r.distinct as f64 / MIB,
        total as f64 / r.distinct.max(1) as f64
    );
    println!(
        "the last replica ({}) added {:.1} MiB, its new contents {:.1} MiB: {:.1} MiB more (goal: at most 10 MiB)",
        r.after[n - 1].0,
        last_cost as f64 / MIB,
        r.last_new as f64 / MIB,
        (last_cost as f64 - r.last_new as f64) / MIB
    );
}

fn main() {
    let replicas = replicas();
    let mut runs = Vec::new();
    if let Some(before) = std::env::var_os("POLYSANDBOX_BIN_BEFORE") {
        runs.push(build(Path::new(&before), "before", &replicas));
    }
    runs.push(build(&binary(), "this build", &replicas));
    for r in &runs {
        report(r);
    }
}
