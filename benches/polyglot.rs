//! The whole polyglot benchmark from the images' read-only caches (issue #26): eval of every
//! shared polyglot exercise (gold, `--no-calibration`, `--jobs 2`) with `--caches on` (ccache's
//! prewarmed Catch2 main, cargo's prebuilt dependencies, the JVM's class data archives) against
//! `--caches off`, side by side in one run, alternating which goes first round by round. It
//! prints each eval's wall time, their ratio against the goal (at most 0.6x), per language the
//! sandboxes' summed wall and CPU (from results.jsonl), and whether every instance's verdict,
//! reason (less its numbers: the planted control tests are drawn afresh each run) and per-test
//! outcomes (each test's name and status) are identical in every run. It exits 1 if they are
//! not; never for timing.
//!
//! `cargo bench --bench polyglot` (as root, after `.ci/setup`; `../shared/polyglot-benchmark`
//! beside the repository; `POLYSANDBOX_BIN` for a build elsewhere than `target/`). Outputs go
//! to /dev/shm.
//!
//! Environment: BENCH_DATASET (../shared/polyglot-benchmark), BENCH_ROUNDS (1), BENCH_JOBS (2),
//! BENCH_LANGS (all: every language of the dataset; else comma-separated).

mod common;
use common::{binary, median};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const GOAL: f64 = 0.6;

/// What one instance came to: verdict, reason, and each test's name and status, sorted.
type Outcome = (String, String, Vec<(String, String)>);

struct Run {
    wall: f64,
    /// Per language: the sandboxes' summed wall and CPU seconds, instances, resolved.
    langs: BTreeMap<String, (f64, f64, usize, usize)>,
    outcomes: BTreeMap<String, Outcome>,
}

fn eval(bin: &Path, dataset: &str, langs: &[String], jobs: &str, caches: &str, out: &Path) -> Run {
    let _ = std::fs::remove_dir_all(out);
    let t = Instant::now();
    let mut c = Command::new(bin);
    c.args(["eval", dataset, "-p", "gold", "--no-calibration", "-j", jobs, "--caches", caches, "--format", "json"]);
    if !langs.is_empty() {
        c.arg("--filter-category").args(langs);
    }
    let status = c.arg("-o").arg(out).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
    let wall = t.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap_or_else(|e| panic!("eval --caches {caches} ({status:?}): no results.jsonl: {e}"));
    let mut r = Run { wall, langs: BTreeMap::new(), outcomes: BTreeMap::new() };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a line of results.jsonl");
        let id = v["instance_id"].as_str().unwrap_or("?").to_string();
        let verdict = v["verdict"].as_str().unwrap_or("?").to_string();
        let e = r.langs.entry(v["language"].as_str().unwrap_or("?").to_string()).or_default();
        e.0 += v["wall_s"].as_f64().unwrap_or(0.0);
        e.1 += v["cpu_s"].as_f64().unwrap_or(0.0);
        e.2 += 1;
        e.3 += usize::from(verdict == "resolved");
        let mut tests: Vec<(String, String)> = v["tests"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|t| (t["name"].as_str().unwrap_or("?").to_string(), t["status"].as_str().unwrap_or("?").to_string()))
            .collect();
        tests.sort();
        // Its numbers left out: how many planted control tests a run reported differs run by run
        // (they are drawn afresh each time), with or without the caches.
        let reason: String = v["reason"].as_str().unwrap_or("").chars().filter(|c| !c.is_ascii_digit()).collect();
        r.outcomes.insert(id, (verdict, reason, tests));
    }
    let _ = std::fs::remove_dir_all(out);
    r
}

fn main() {
    let bin = binary();
    let dataset = std::env::var("BENCH_DATASET").unwrap_or_else(|_| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/polyglot-benchmark").display().to_string()
    });
    let jobs = std::env::var("BENCH_JOBS").unwrap_or_else(|_| "2".into());
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1).max(1);
    let langs: Vec<String> = std::env::var("BENCH_LANGS")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let scratch = std::path::PathBuf::from(format!("/dev/shm/polysandbox-bench-polyglot-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();

    println!("eval {dataset} -p gold --no-calibration -j {jobs}: --caches on vs off, {rounds} round(s)");
    let (mut on, mut off): (Vec<Run>, Vec<Run>) = (vec![], vec![]);
    for round in 0..rounds {
        // Which goes first alternates round by round (the first tends to pay for a cold page
        // cache).
        let order = if round % 2 == 0 { ["off", "on"] } else { ["on", "off"] };
        for caches in order {
            let r = eval(&bin, &dataset, &langs, &jobs, caches, &scratch.join(caches));
            let resolved: usize = r.langs.values().map(|l| l.3).sum();
            eprintln!(
                "  round {round} --caches {caches:<3} {:>7.1} s  {resolved}/{} resolved",
                r.wall,
                r.outcomes.len()
            );
            if caches == "on" {
                on.push(r);
            } else {
                off.push(r);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);

    println!();
    println!(
        "{:<11} {:>13} {:>13} {:>7} {:>9} {:>9} {:>7}  resolved (on | off)",
        "language", "sandboxes on", "sandboxes off", "ratio", "cpu on", "cpu off", "ratio"
    );
    let names: Vec<String> = on[0].langs.keys().cloned().collect();
    for lang in &names {
        let med = |rs: &[Run], f: fn(&(f64, f64, usize, usize)) -> f64| {
            median(&mut rs.iter().map(|r| r.langs.get(lang).map(f).unwrap_or(0.0)).collect::<Vec<_>>())
        };
        let (w1, w0) = (med(&on, |l| l.0), med(&off, |l| l.0));
        let (c1, c0) = (med(&on, |l| l.1), med(&off, |l| l.1));
        let count = |r: &Run| r.langs.get(lang).map(|l| format!("{}/{}", l.3, l.2)).unwrap_or_default();
        println!(
            "{lang:<11} {w1:>12.1}s {w0:>12.1}s {:>6.2}x {c1:>8.1}s {c0:>8.1}s {:>6.2}x  {} | {}",
            w1 / w0,
            c1 / c0,
            count(on.last().unwrap()),
            count(off.last().unwrap())
        );
    }
    let w1 = median(&mut on.iter().map(|r| r.wall).collect::<Vec<_>>());
    let w0 = median(&mut off.iter().map(|r| r.wall).collect::<Vec<_>>());
    let ratio = w1 / w0;
    println!(
        "whole eval wall: caches on {w1:.1} s, off {w0:.1} s: {ratio:.2}x; goal at most {GOAL}x: {}",
        if ratio <= GOAL { "met" } else { "NOT MET" }
    );

    // Verdicts, reasons and per-test outcomes: the same in every run, on or off.
    let reference = &off[0].outcomes;
    let mut differ: Vec<String> = vec![];
    for (i, r) in on.iter().chain(&off).enumerate() {
        let which = if i < on.len() { format!("on #{i}") } else { format!("off #{}", i - on.len()) };
        for (id, o) in &r.outcomes {
            match reference.get(id) {
                Some(x) if x == o => {}
                Some(x) => differ.push(format!("  {id} ({which}): {} ({}) against {} ({})", o.0, o.1, x.0, x.1)),
                None => differ.push(format!("  {id} ({which}): not in the first `off` run")),
            }
        }
        for id in reference.keys().filter(|id| !r.outcomes.contains_key(*id)) {
            differ.push(format!("  {id} ({which}): missing"));
        }
    }
    let tests: usize = reference.values().map(|o| o.2.len()).sum();
    if differ.is_empty() {
        println!(
            "verdicts identical: {} instances, {tests} tests, each the same verdict, reason and per-test status in all {} runs",
            reference.len(),
            on.len() + off.len()
        );
        let not: Vec<&String> = reference.iter().filter(|(_, o)| o.0 != "resolved").map(|(id, _)| id).collect();
        if !not.is_empty() {
            println!(
                "not resolved (on and off alike): {}",
                not.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            );
        }
    } else {
        println!("FAILED: outcomes differ between runs:");
        for d in &differ {
            println!("{d}");
        }
        std::process::exit(1);
    }
}
