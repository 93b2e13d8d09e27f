//! What per-test measurement costs (issue #24): eval of the shared polyglot exercises, language
//! by language, with `--per-test on` (each test's CPU, peak memory and wall: one process per
//! test for cargo, Go and Catch2, an in-runner plugin for pytest, jest and JUnit) against
//! `--per-test off` (the runners' plain commands), side by side in one run: wall time per
//! language and its ratio, the sum over the languages against the goal (at most 1.3x), and the
//! CPU the sandboxes used (summed from results.jsonl, less noisy than wall on a shared host).
//!
//! `cargo bench --bench per_test` (as root, after `.ci/setup`; `../shared/polyglot-benchmark`
//! beside the repository; `POLYSANDBOX_BIN` for a build elsewhere than `target/`).
//!
//! Each eval is `eval DATASET -p gold --filter-category LANG --no-calibration -j JOBS
//! --per-test on|off`: no calibration, whose two gold runs would otherwise come first and
//! dominate both. The two configurations of a language run one after the other, which goes
//! first alternating from language to language and round to round (the first of a pair tends
//! to be the slower: its image's files may not be in the page cache yet); outputs go to
//! /dev/shm (no ext4 deletes between runs). Figures are medians over the rounds.
//!
//! Coverage, from every `on` run's results.jsonl: tests with usage / tests that ran, per
//! language, and the instances not resolved. The bench exits 1 if a test that ran in a resolved
//! instance has no usage (issue #24: numbers for every test of every instance); never for
//! timing. Counted apart and printed, not failures: Go subtests whose top-level test has usage
//! (one process runs both, measured as one), Rust doc tests (run, not measured: README's
//! "Per-test resource usage") and skipped tests (no span to measure). `BENCH_STRICT=1` fails
//! on the first two as well.
//!
//! Environment: BENCH_DATASET (../shared/polyglot-benchmark), BENCH_ROUNDS (1), BENCH_LANGS
//! (cpp,go,java,javascript,python,rust), BENCH_JOBS (2), BENCH_STRICT (0).

mod common;
use common::{binary, median};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const GOAL: f64 = 1.3;

/// What one eval came to.
struct Run {
    /// The eval's own wall time, seconds.
    wall: f64,
    /// Sums over results.jsonl: the sandboxes' wall and CPU seconds.
    sandbox_wall: f64,
    cpu: f64,
    instances: usize,
    resolved: usize,
    /// Tests reported; those with usage of their own; Go subtests without (each runs in its
    /// top-level test's process, measured as that test); Rust doc tests (run, not measured);
    /// tests that did not run (skipped: no span to measure).
    tests: usize,
    measured: usize,
    via_parent: usize,
    doc: usize,
    skipped: usize,
    /// Instances not resolved: id, and `verdict: reason`.
    unresolved: Vec<(String, String)>,
    /// Tests of resolved instances with no usage: `instance: test`.
    missing: Vec<String>,
}

fn eval(bin: &Path, dataset: &str, lang: &str, jobs: &str, per_test: &str, out: &Path, strict: bool) -> Run {
    let _ = std::fs::remove_dir_all(out);
    let t = Instant::now();
    let status = Command::new(bin)
        .args(["eval", dataset, "-p", "gold", "--filter-category", lang, "--no-calibration", "-j", jobs])
        .args(["--per-test", per_test, "--format", "json", "-o"])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("eval");
    let wall = t.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap_or_else(|e| panic!("eval {lang} --per-test {per_test} ({status}): no results.jsonl: {e}"));
    let mut r = Run {
        wall,
        sandbox_wall: 0.0,
        cpu: 0.0,
        instances: 0,
        resolved: 0,
        tests: 0,
        measured: 0,
        via_parent: 0,
        doc: 0,
        skipped: 0,
        unresolved: vec![],
        missing: vec![],
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a line of results.jsonl");
        let id = v["instance_id"].as_str().unwrap_or("?").to_string();
        let verdict = v["verdict"].as_str().unwrap_or("?");
        r.instances += 1;
        r.sandbox_wall += v["wall_s"].as_f64().unwrap_or(0.0);
        r.cpu += v["cpu_s"].as_f64().unwrap_or(0.0);
        let resolved = verdict == "resolved";
        if resolved {
            r.resolved += 1;
        } else {
            let reason: String =
                v["reason"].as_str().unwrap_or("").lines().next().unwrap_or("").chars().take(90).collect();
            r.unresolved.push((id.clone(), format!("{verdict}: {reason}")));
        }
        let tests = v["tests"].as_array().map(Vec::as_slice).unwrap_or_default();
        let with: BTreeSet<&str> =
            tests.iter().filter(|t| t["usage"].is_object()).filter_map(|t| t["name"].as_str()).collect();
        for t in tests {
            let name = t["name"].as_str().unwrap_or("?");
            r.tests += 1;
            if with.contains(name) {
                r.measured += 1;
            } else if t["status"] == "skipped" {
                r.skipped += 1;
            } else if strict {
                if resolved {
                    r.missing.push(format!("{id}: {name}"));
                }
            } else if v["language"] == "go" && name.contains('/') && with.contains(name.split('/').next().unwrap()) {
                r.via_parent += 1;
            } else if v["language"] == "rust" && name.contains(" - ") && name.contains(" (line ") {
                r.doc += 1;
            } else if resolved {
                r.missing.push(format!("{id}: {name}"));
            }
        }
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
        .unwrap_or_else(|_| "cpp,go,java,javascript,python,rust".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let strict = std::env::var("BENCH_STRICT").is_ok_and(|v| v == "1");
    let scratch = std::path::PathBuf::from(format!("/dev/shm/polysandbox-bench-per-test-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();

    println!(
        "eval {dataset} -p gold --no-calibration -j {jobs}, per language: --per-test on vs off, {rounds} round(s)"
    );
    // Per language: every round's (on, off) runs.
    let mut runs: Vec<(Vec<Run>, Vec<Run>)> = langs.iter().map(|_| (vec![], vec![])).collect();
    for round in 0..rounds {
        for (i, lang) in langs.iter().enumerate() {
            // Which goes first alternates from one language to the next, and for each language
            // from one round to the next.
            let order = if (round + i) % 2 == 0 { ["on", "off"] } else { ["off", "on"] };
            for per_test in order {
                let r = eval(&bin, &dataset, lang, &jobs, per_test, &scratch.join(per_test), strict);
                eprintln!(
                    "  round {round} {lang:<10} --per-test {per_test:<3} {:>7.1} s  cpu {:>7.1} s  {}/{} resolved",
                    r.wall, r.cpu, r.resolved, r.instances
                );
                if per_test == "on" {
                    runs[i].0.push(r);
                } else {
                    runs[i].1.push(r);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);

    println!();
    println!(
        "{:<11} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7}  {:>15}  resolved (on | off)",
        "language", "wall on", "wall off", "ratio", "cpu on", "cpu off", "ratio", "measured/ran"
    );
    let (mut sum_on, mut sum_off, mut cpu_on, mut cpu_off) = (0.0, 0.0, 0.0, 0.0);
    let mut missing: BTreeSet<String> = BTreeSet::new();
    let mut notes: Vec<String> = vec![];
    let mut unresolved: Vec<String> = vec![];
    for (lang, (on, off)) in langs.iter().zip(&runs) {
        let med = |rs: &[Run], f: fn(&Run) -> f64| median(&mut rs.iter().map(f).collect::<Vec<_>>());
        let (w1, w0) = (med(on, |r| r.wall), med(off, |r| r.wall));
        let (c1, c0) = (med(on, |r| r.cpu), med(off, |r| r.cpu));
        (sum_on, sum_off, cpu_on, cpu_off) = (sum_on + w1, sum_off + w0, cpu_on + c1, cpu_off + c0);
        let last = on.last().unwrap();
        let ran = last.tests - last.skipped;
        let measured = format!("{}/{ran}", last.measured + last.via_parent);
        if last.via_parent > 0 {
            notes.push(format!(
                "{lang}: {} subtests measured with their top-level test (one process runs both)",
                last.via_parent
            ));
        }
        if last.doc > 0 {
            notes.push(format!(
                "{lang}: {} doc tests run, not measured (each-test runs them in one `cargo test --doc`)",
                last.doc
            ));
        }
        if last.skipped > 0 {
            notes.push(format!("{lang}: {} tests skipped by the exercise (not run, nothing to measure)", last.skipped));
        }
        println!(
            "{lang:<11} {w1:>8.1}s {w0:>8.1}s {:>6.2}x {c1:>8.1}s {c0:>8.1}s {:>6.2}x  {measured:>15}  {}/{} | {}/{}",
            w1 / w0,
            c1 / c0,
            last.resolved,
            last.instances,
            off.last().unwrap().resolved,
            off.last().unwrap().instances,
        );
        for r in on {
            missing.extend(r.missing.iter().cloned());
        }
        // Each instance not resolved, in which configuration's runs, and the first reason given.
        let not: BTreeSet<&String> = on.iter().chain(off).flat_map(|r| r.unresolved.iter().map(|u| &u.0)).collect();
        for id in not {
            let has = |rs: &[Run]| rs.iter().any(|r| r.unresolved.iter().any(|u| &u.0 == id));
            let (a, b) = (has(on), has(off));
            let why = on.iter().chain(off).flat_map(|r| &r.unresolved).find(|u| &u.0 == id).map(|u| &u.1).unwrap();
            let which = if a && b {
                "on and off"
            } else if a {
                "on only"
            } else {
                "off only"
            };
            unresolved.push(format!("  [{which}] {id} ({why})"));
        }
    }
    let ratio = sum_on / sum_off;
    println!(
        "{:<11} {sum_on:>8.1}s {sum_off:>8.1}s {ratio:>6.2}x {cpu_on:>8.1}s {cpu_off:>8.1}s {:>6.2}x  goal: wall at most {GOAL}x: {}",
        "all",
        cpu_on / cpu_off,
        if ratio <= GOAL { "met" } else { "NOT MET" }
    );
    println!();
    for n in &notes {
        println!("{n}");
    }
    if unresolved.is_empty() {
        println!("every instance resolved in every run");
    } else {
        println!("not resolved:");
    }
    for u in &unresolved {
        println!("{u}");
    }
    if !missing.is_empty() {
        println!();
        println!(
            "FAILED: {} test(s) that ran in resolved instances have no per-test usage in an `on` run:",
            missing.len()
        );
        for m in &missing {
            println!("  {m}");
        }
        std::process::exit(1);
    }
    println!("coverage: every test that ran in every resolved instance has per-test usage (notes above)");
}
