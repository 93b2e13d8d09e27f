//! Scheduling by measured peaks (issue #13): the whole shared polyglot set with `--jobs 4`,
//! eval with a calibration (admission by gold's measured peak memory) against eval without
//! one (admission by the flat `--memory` limit), side by side in one run: wall time and the
//! host's peak memory in use, printed with their ratios.
//!
//! `cargo bench --bench scheduling` (as root, after `.ci/setup`; `../shared/polyglot-benchmark`
//! beside the repository).
//!
//! Two settings: `--memory` left at the catalogue's defaults (2 GiB per sandbox: on a 24 GiB
//! host twelve fit, so `--jobs 4` is never held back and both should take the same time), and
//! `--memory 8G` (a cautious flat limit: three fit without a calibration, four with one). The
//! two evals of a setting alternate round by round; outputs go to /dev/shm (no ext4 deletes
//! between runs). Host memory in use is MemTotal - MemAvailable, sampled every 100 ms, less
//! its value before the run.
//! Environment: BENCH_DATASET, BENCH_JOBS (4), BENCH_ROUNDS (1), BENCH_CALIBRATION (a
//! calibration file to use instead of making one, which takes two gold runs of the set).

mod common;
use common::binary;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn used_bytes() -> u64 {
    let m = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kb = |k: &str| {
        m.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (kb("MemTotal:") - kb("MemAvailable:")) * 1024
}

/// Runs `eval` and returns (wall, peak host memory in use above the start, resolved count).
fn eval(bin: &Path, dataset: &str, jobs: &str, extra: &[&str], out: &Path) -> (Duration, u64, String) {
    let _ = std::fs::remove_dir_all(out);
    let base = used_bytes();
    let peak = Arc::new(AtomicU64::new(base));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                peak.fetch_max(used_bytes(), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let t = Instant::now();
    let o = Command::new(bin)
        .args(["eval", dataset, "-j", jobs, "--format", "json", "-o"])
        .arg(out)
        .args(extra)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("eval");
    let wall = t.elapsed();
    stop.store(true, Ordering::SeqCst);
    sampler.join().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let _ = std::fs::remove_dir_all(out);
    (
        wall,
        peak.load(Ordering::SeqCst).saturating_sub(base),
        format!("{} resolved, {} error", v["resolved"], v["error"]),
    )
}

fn main() {
    let bin = binary();
    let dataset = std::env::var("BENCH_DATASET").unwrap_or_else(|_| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/polyglot-benchmark").display().to_string()
    });
    let jobs = std::env::var("BENCH_JOBS").unwrap_or_else(|_| "4".into());
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let scratch = PathBuf::from(format!("/dev/shm/polysandbox-bench-scheduling-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let cal = match std::env::var("BENCH_CALIBRATION") {
        Ok(c) => c,
        Err(_) => {
            let file = scratch.join("calibration.json");
            eprintln!("calibrating {dataset} (two gold runs) ...");
            let s = Command::new(&bin)
                .args(["calibrate", &dataset, "--no-stub", "-j", "2", "-o"])
                .arg(scratch.join("cal"))
                .arg("--calibration")
                .arg(&file)
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(s.code().is_some_and(|c| c <= 1), "calibrate failed");
            let _ = std::fs::remove_dir_all(scratch.join("cal"));
            file.display().to_string()
        }
    };
    println!("eval of {dataset}, --jobs {jobs}: without a calibration (admission by --memory) vs with one (by gold's measured peak)");
    println!(
        "{:<22} {:>10} {:>10} {:>8} {:>12} {:>12} {:>8}   results (without | with)",
        "--memory", "wall w/o", "wall with", "ratio", "peak w/o", "peak with", "ratio"
    );
    for memory in [None, Some("8G")] {
        let mut extra: Vec<&str> = vec![];
        if let Some(m) = memory {
            extra.extend(["--memory", m]);
        }
        let (mut w0, mut w1, mut p0, mut p1) = (Duration::ZERO, Duration::ZERO, 0u64, 0u64);
        let (mut r0, mut r1) = (String::new(), String::new());
        for round in 0..rounds {
            let mut without = extra.clone();
            without.push("--no-calibration");
            let mut with = extra.clone();
            with.extend(["--calibration", &cal]);
            // Alternate which goes first, round by round.
            let order: [(&[&str], bool); 2] =
                if round % 2 == 0 { [(&without, false), (&with, true)] } else { [(&with, true), (&without, false)] };
            for (args, calibrated) in order {
                let (w, p, r) = eval(&bin, &dataset, &jobs, args, &scratch.join("out"));
                if calibrated {
                    (w1, p1, r1) = (w1 + w, p1.max(p), r);
                } else {
                    (w0, p0, r0) = (w0 + w, p0.max(p), r);
                }
            }
        }
        let n = rounds as f64;
        let (a, b) = (w0.as_secs_f64() / n, w1.as_secs_f64() / n);
        println!(
            "{:<22} {:>9.1}s {:>9.1}s {:>7.2}x {:>10} MiB {:>8} MiB {:>7.2}x   {r0} | {r1}",
            memory.unwrap_or("catalogue default"),
            a,
            b,
            b / a,
            p0 >> 20,
            p1 >> 20,
            p1 as f64 / p0.max(1) as f64
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
