//! SWE-bench without Docker, at what cost (issue #14): `polysandbox eval` of the real records
//! in ../shared/swebench at `--jobs 2`, against running each record's eval script directly in
//! the same unpacked image (the store's rootfs of that image under a fresh overlay, in a
//! chroot, with no network: the floor a harness could reach with no isolation at all), two at a
//! time. Both apply the gold patch inside the root with git apply and run the same script with
//! the same offline pip settings; eval also probes each image, grades, and writes its reports.
//! Each sandbox gets the host's CPUs divided by the jobs (`--cpus`), as the chroot does
//! unlimited (the catalogue's default, one CPU, would make `--jobs 1` slower by the limit).
//! Printed: wall time of each and the ratio (goal: at most 1.1x).
//!
//! `cargo bench --bench swebench` (as root, after `.ci/setup` has built the replica images).
//! The two alternate round by round (BENCH_ROUNDS, default 3); outputs and overlays live on
//! /dev/shm (no ext4 deletes between runs).

mod common;
use common::binary;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the chroot runs: the same steps as polysandbox's driver (patch, then the eval script).
const CHROOT_STEP: &str = r#"set -e
R=$1; shift
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
exec chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  PIP_NO_INDEX=1 PIP_NO_BUILD_ISOLATION=0 /bin/bash -c 'cd /testbed && git apply --verbose /tmp/patch.diff && exec /bin/bash /eval.sh'
"#;

/// One record in a chroot: a fresh overlay over the image's rootfs, patch and script copied in.
fn chroot_one(rootfs: &[PathBuf], scratch: &Path, patch: &str, script: &str) -> bool {
    let (opts, merged) = common::overlay(rootfs, scratch);
    // Everything inside a private mount and pid namespace and an empty network namespace: the
    // mounts go with it.
    let inner = format!(
        "mount -t overlay overlay -o {opts} {m} && mkdir -p {m}/tmp && cat > {m}/tmp/patch.diff < {s}/patch.diff && cat > {m}/eval.sh < {s}/eval.sh && exec bash -c '{step}' step {m}",
        m = merged.display(),
        s = scratch.display(),
        step = CHROOT_STEP.replace('\'', "'\\''")
    );
    std::fs::write(scratch.join("patch.diff"), patch).unwrap();
    std::fs::write(scratch.join("eval.sh"), script).unwrap();
    let out = Command::new("unshare")
        .args(["--mount", "--pid", "--fork", "--net", "--mount-proc", "bash", "-c", &inner])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    text.contains(">>>>> End Test Output")
}

fn main() {
    let bin = binary();
    let records_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench/instances.jsonl");
    let records: Vec<Value> = std::fs::read_to_string(&records_path)
        .expect("../shared/swebench/instances.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let store = std::env::var("POLYSANDBOX_ROOT").unwrap_or_else(|_| "/var/lib/polysandbox".into());
    let scratch = PathBuf::from(format!("/dev/shm/polysandbox-bench-swebench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    // Each image's rootfs in the store, by its manifest digest (a first eval pulls nothing: the
    // replicas are there).
    let warm = scratch.join("warm");
    let o = Command::new(&bin)
        .arg("eval")
        .arg(&records_path)
        .args(["-p", "gold", "-j", "2", "--format", "json", "-o"])
        .arg(&warm)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    assert_eq!(v["resolved"], records.len(), "the replica images must be in the store (bash .ci/setup): {v}");
    let results: Vec<Value> = std::fs::read_to_string(warm.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rootfs_of = |id: &str| -> Vec<PathBuf> {
        let r = results.iter().find(|r| r["instance_id"] == id).unwrap();
        common::image_lowers(Path::new(&store), r["image_digest"].as_str().unwrap())
    };
    let jobs: Vec<(Vec<PathBuf>, String, String)> = records
        .iter()
        .map(|r| {
            (
                rootfs_of(r["instance_id"].as_str().unwrap()),
                r["patch"].as_str().unwrap().to_string(),
                r["eval_script"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let _ = std::fs::remove_dir_all(&warm);

    let ours = |round: usize, jobs: usize| -> Duration {
        let out = scratch.join(format!("eval-{round}"));
        let t = Instant::now();
        // The same CPUs as the chroot gets: each sandbox its share of the host's.
        let cpus = format!(
            "{}",
            (std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64 / jobs as f64).max(1.0)
        );
        let o = Command::new(&bin)
            .arg("eval")
            .arg(&records_path)
            .args(["-p", "gold", "-j", &jobs.to_string(), "--cpus", &cpus, "--format", "json", "-o"])
            .arg(&out)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        let wall = t.elapsed();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        assert_eq!(v["resolved"], records.len(), "{v}");
        let _ = std::fs::remove_dir_all(&out);
        wall
    };
    let chroot = |round: usize, workers: usize| -> Duration {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let t = Instant::now();
        std::thread::scope(|s| {
            for w in 0..workers {
                let (next, jobs, scratch) = (&next, &jobs, &scratch);
                s.spawn(move || loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((rootfs, patch, script)) = jobs.get(i) else { return };
                    let dir = scratch.join(format!("chroot-{round}-{w}"));
                    assert!(chroot_one(rootfs, &dir, patch, script), "record {i} did not run to its end in the chroot");
                    let _ = Command::new("rm").arg("-rf").arg(&dir).status();
                });
            }
        });
        t.elapsed()
    };
    println!("SWE-bench's {} shared records, gold: polysandbox eval vs the eval scripts in a chroot (mean of {rounds} rounds)", records.len());
    println!("{:<10} {:>12} {:>12} {:>8}", "at once", "polysandbox", "chroot", "ratio");
    // Two at a time (the packing of jobs onto two workers may differ), then one at a time (no
    // packing: the whole cost of each instance, end to end).
    for jobs in [2, 1] {
        let (mut a, mut b) = (Duration::ZERO, Duration::ZERO);
        for round in 0..rounds {
            if round % 2 == 0 {
                a += ours(round, jobs);
                b += chroot(round, jobs);
            } else {
                b += chroot(round, jobs);
                a += ours(round, jobs);
            }
        }
        let n = rounds as f64;
        let (a, b) = (a.as_secs_f64() / n, b.as_secs_f64() / n);
        println!("{:<10} {:>10.2} s {:>10.2} s {:>7.2}x   (goal: at most 1.1x)", format!("--jobs {jobs}"), a, b, a / b);
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
