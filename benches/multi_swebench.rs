//! Multi-SWE-bench without Docker, at what cost: `polysandbox eval` of the real records in
//! ../shared/multi-swe-bench at `--jobs 2`, against running each record's fix run (the
//! harness's `bash /home/fix-run.sh`) directly in the same unpacked image (the store's rootfs of
//! that image under a fresh overlay, in a chroot, with no network: the floor a harness could
//! reach with no isolation at all), two at a time. Both put the record's test patch and the
//! gold fix patch at /home/test.patch and /home/fix.patch and run the same fix-run script, which
//! `git apply`s them in /home/<repo> and runs the tests, with the image's environment; eval also
//! probes each image, checks that the patches apply, parses and grades the log as the harness
//! does, and writes its reports. Each sandbox may use all the host's CPUs (`--cpus`), as the
//! chroot's processes may. Printed: wall time of each and the ratio (goal: at
//! most 1.1x).
//!
//! `cargo bench --bench multi_swebench` (as root, after `rootfs/build.sh multi-swe-bench` has
//! built the three images into the store; without them it says so and stops). The two alternate
//! round by round (BENCH_ROUNDS, default 3); outputs and overlays live on /dev/shm (no ext4
//! deletes between runs). A chroot run counts only if its log shows each of the record's
//! fail-to-pass tests passing (`test NAME ... ok` from libtest, `PASS FILE` from jest); an eval
//! run only if every instance is resolved.

mod common;
use common::binary;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the chroot runs: the harness's fix run, with the image's environment and nothing else
/// (`$R` the root, then the environment's `NAME=value`s).
const CHROOT_STEP: &str = r#"set -e
R=$1; shift
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
exec chroot "$R" /usr/bin/env -i "$@" /bin/bash -c 'cd /home && exec /bin/bash /home/fix-run.sh'
"#;

/// One record: the image's rootfs, its environment, the two patches, its fail-to-pass tests.
struct Job {
    id: String,
    rootfs: Vec<PathBuf>,
    env: Vec<String>,
    test_patch: String,
    fix_patch: String,
    f2p: Vec<String>,
}

/// Whether a fix run's log shows `test` passing: libtest's `test NAME ... ok`, or jest's
/// `PASS FILE` (a suite, with its time after it when slow).
fn passed(log: &str, test: &str) -> bool {
    let (libtest, jest) = (format!("test {test} ... ok"), format!("PASS {test}"));
    log.lines()
        .map(|l| strip_ansi(l.trim_end_matches('\r')).trim().to_string())
        .any(|l| l == libtest || l == jest || l.strip_prefix(&jest).is_some_and(|rest| rest.starts_with(' ')))
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One record in a chroot: a fresh overlay over the image's rootfs, the patches copied in, the
/// fix run. Err with where its log is when a fail-to-pass test is not shown passing.
fn chroot_one(job: &Job, scratch: &Path) -> Result<(), String> {
    let (opts, merged) = common::overlay(&job.rootfs, scratch);
    std::fs::write(scratch.join("test.patch"), &job.test_patch).unwrap();
    std::fs::write(scratch.join("fix.patch"), &job.fix_patch).unwrap();
    // Everything inside a private mount and pid namespace and an empty network namespace: the
    // mounts go with it.
    let inner = format!(
        "mount -t overlay overlay -o {opts} {m} && cat > {m}/home/test.patch < {s}/test.patch && cat > {m}/home/fix.patch < {s}/fix.patch && exec bash -c \"$0\" step {m} \"$@\"",
        m = merged.display(),
        s = scratch.display(),
    );
    // A session of its own: the scheduler's autogroup, one entity a run, as each sandbox is
    // one cgroup (else both chroot runs share the bench's one share of a busy host's CPUs).
    let out = Command::new("setsid")
        .args(["unshare", "--mount", "--pid", "--fork", "--net", "--mount-proc", "bash", "-c", &inner, CHROOT_STEP])
        .args(&job.env)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let missing: Vec<&String> = job.f2p.iter().filter(|t| !passed(&log, t)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let path = scratch.with_extension("log");
    std::fs::write(&path, &log).unwrap();
    Err(format!(
        "{}: {:?} not shown passing in the chroot (exit {}; log at {})",
        job.id,
        missing,
        out.status,
        path.display()
    ))
}

/// The environment the image's config gives (`HOME=/root` and the default PATH under it, as a
/// sandbox has), read from the store's blobs by the manifest digest.
fn image_env(store: &Path, manifest_digest: &str) -> Vec<String> {
    let blob = |d: &str| -> Value {
        let d = d.trim_start_matches("sha256:");
        serde_json::from_slice(&std::fs::read(store.join("oci/blobs/sha256").join(d)).unwrap()).unwrap()
    };
    let manifest = blob(manifest_digest);
    let config = blob(manifest["config"]["digest"].as_str().unwrap());
    let mut env: Vec<String> =
        vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(), "HOME=/root".into()];
    for e in config["config"]["Env"].as_array().into_iter().flatten().filter_map(|e| e.as_str()) {
        let name = e.split('=').next().unwrap();
        env.retain(|x| x.split('=').next() != Some(name));
        env.push(e.to_string());
    }
    env
}

fn main() {
    let bin = binary();
    let records_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/multi-swe-bench/instances.jsonl");
    let records: Vec<Value> = std::fs::read_to_string(&records_path)
        .expect("../shared/multi-swe-bench/instances.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let store = PathBuf::from(std::env::var("POLYSANDBOX_ROOT").unwrap_or_else(|_| "/var/lib/polysandbox".into()));

    // The harness's images, by their names: without them there is nothing to measure.
    let listed = Command::new(&bin)
        .args(["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .stderr(Stdio::null())
        .output()
        .expect("polysandbox images");
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    let missing: Vec<String> = records
        .iter()
        .map(|r| {
            format!(
                "mswebench/{}_m_{}:pr-{}",
                r["org"].as_str().unwrap(),
                r["repo"].as_str().unwrap(),
                r["number"].as_u64().unwrap()
            )
            .to_lowercase()
        })
        .filter(|n| !listed.lines().any(|l| l.split_whitespace().next().is_some_and(|i| i.ends_with(n.as_str()))))
        .collect();
    if !missing.is_empty() {
        println!(
            "multi_swebench: skipped: the store has no {} (build them with rootfs/build.sh multi-swe-bench)",
            missing.join(", ")
        );
        return;
    }

    let scratch = PathBuf::from(format!("/dev/shm/polysandbox-bench-multi-swebench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    // Each image's rootfs in the store, by its manifest digest (a first eval, which also warms
    // the caches, pulls nothing: the images are there).
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
    assert_eq!(
        v["resolved"],
        records.len(),
        "every gold record must resolve in eval (results in {}): {v}",
        warm.display()
    );
    let results: Vec<Value> = std::fs::read_to_string(warm.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let jobs: Vec<Job> = records
        .iter()
        .map(|rec| {
            let id = rec["instance_id"].as_str().unwrap();
            let r = results.iter().find(|r| r["instance_id"] == id).unwrap();
            let digest = r["image_digest"].as_str().unwrap();
            Job {
                id: id.to_string(),
                rootfs: common::image_lowers(&store, digest),
                env: image_env(&store, digest),
                test_patch: rec["test_patch"].as_str().unwrap().to_string(),
                fix_patch: rec["fix_patch"].as_str().unwrap().to_string(),
                f2p: rec["f2p_tests"].as_object().unwrap().keys().cloned().collect(),
            }
        })
        .collect();
    for j in &jobs {
        assert!(!j.f2p.is_empty(), "{}: no f2p_tests to check the chroot's run by", j.id);
        assert!(
            j.rootfs.iter().any(|r| r.join("home/fix-run.sh").is_file()),
            "{}: no /home/fix-run.sh in {:?}",
            j.id,
            j.rootfs
        );
    }
    let _ = std::fs::remove_dir_all(&warm);

    let ours = |round: usize, jobs: usize| -> Duration {
        let out = scratch.join(format!("eval-{round}"));
        let t = Instant::now();
        // The same CPUs as the chroot gets: each sandbox may use all the host's, as each
        // chroot's processes may (a share each, host CPUs / jobs, left the last instance of a
        // round on one CPU while the chroot's took both: 1.47x on 2 CPUs, most of it that).
        let cpus = format!("{}", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
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
        let results = std::fs::read_to_string(out.join("results.jsonl")).unwrap_or_default();
        let resolved = results
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["verdict"] == "resolved")
            .count();
        assert!(
            v["resolved"] == records.len() && resolved == records.len(),
            "eval round {round}: {resolved} of {} resolved in {}: {v}",
            records.len(),
            out.join("results.jsonl").display()
        );
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
                    let Some(job) = jobs.get(i) else { return };
                    let dir = scratch.join(format!("chroot-{round}-{w}-{i}"));
                    if let Err(why) = chroot_one(job, &dir) {
                        panic!("chroot round {round}: {why}");
                    }
                    let _ = Command::new("rm").arg("-rf").arg(&dir).status();
                });
            }
        });
        t.elapsed()
    };
    let at_once: Vec<usize> = std::env::var("BENCH_JOBS")
        .ok()
        .map(|v| v.split(',').filter_map(|j| j.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![2]);
    println!(
        "Multi-SWE-bench's {} shared records, gold: polysandbox eval vs the fix runs in a chroot (mean of {rounds} rounds)",
        records.len()
    );
    println!("{:<10} {:>12} {:>12} {:>8}", "at once", "polysandbox", "chroot", "ratio");
    for jobs in at_once {
        let (mut a, mut b) = (Duration::ZERO, Duration::ZERO);
        for round in 0..rounds {
            let (x, y) = if round % 2 == 0 {
                let x = ours(round, jobs);
                (x, chroot(round, jobs))
            } else {
                let y = chroot(round, jobs);
                (ours(round, jobs), y)
            };
            println!("  round {round}: {:.2} s, {:.2} s", x.as_secs_f64(), y.as_secs_f64());
            a += x;
            b += y;
        }
        let n = rounds as f64;
        let (a, b) = (a.as_secs_f64() / n, b.as_secs_f64() / n);
        println!("{:<10} {:>10.2} s {:>10.2} s {:>7.2}x   (goal: at most 1.1x)", format!("--jobs {jobs}"), a, b, a / b);
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
