//! The toolchain images' read-only caches (issue #26: ccache's prewarmed Catch2 main, cargo's
//! prebuilt dependencies, Go's std built in the runner's environment, the JVM's class data
//! archives) change no outcome: real exercises of
//! ../shared/polyglot-benchmark, the ones the caches serve, graded gold, as shipped (the stubs)
//! and with a wrong solution (gold with one rule broken: some tests pass, some fail), each with
//! `--caches on` and `--caches off`, come out with the same verdict and per-test statuses (and
//! reason, but for the count of planted control tests, which are drawn afresh each run); and
//! the cache is hit (cargo builds no vendored crate with it, every one without).
//! As root, and as the unprivileged user with the images its store has.
mod common;

use common::eval::*;
use common::*;
use polysandbox::eval::formats::exercise::gold_files;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The exercises, and for each its solution file and the edit that breaks gold.
const EXERCISES: &[(&str, &str, &str, &str, &str)] = &[
    ("cpp", "yacht", "yacht.cpp", "is_yacht(dice) ? 50 : 0", "is_yacht(dice) ? 40 : 0"),
    ("go", "bowling", "bowling.go", "pinsPerFrame + g.spareBonus(frameStart)", "pinsPerFrame"),
    ("rust", "gigasecond", "src/lib.rs", "1_000_000_000", "1_000_000_001"),
    ("rust", "grep", "src/lib.rs", "format!(\"{}:\", line_number + 1)", "format!(\"{}:\", line_number)"),
    (
        "java",
        "wordy",
        "src/main/java/WordProblemSolver.java",
        "return firstValue * secondValue;",
        "return firstValue * secondValue + 1;",
    ),
];

/// An exercise's gold solution: each solution file and the reference file it is (as eval's
/// gold pairs them), and Rust's `.meta/Cargo-example.toml` as its Cargo.toml where there is one.
fn gold(dir: &Path) -> Vec<(String, PathBuf)> {
    let cfg: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(".meta/config.json")).unwrap()).unwrap();
    let list = |k: &str| -> Vec<String> {
        cfg["files"][k].as_array().unwrap().iter().filter_map(|v| v.as_str().map(String::from)).collect()
    };
    let mut v: Vec<(String, PathBuf)> =
        gold_files(&list("solution"), &list("example")).into_iter().map(|(ex, sol)| (sol, dir.join(ex))).collect();
    if dir.join(".meta/Cargo-example.toml").is_file() {
        v.push(("Cargo.toml".into(), dir.join(".meta/Cargo-example.toml")));
    }
    v
}

/// An instance's outcome: verdict, reason, each test's name and status.
type Outcome = (String, String, Vec<(String, String)>);

fn outcomes(run: &Run) -> BTreeMap<String, Outcome> {
    run.by_id()
        .into_iter()
        .map(|(id, r)| {
            let mut tests: Vec<(String, String)> = r["tests"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|t| (t["name"].as_str().unwrap().to_string(), t["status"].as_str().unwrap().to_string()))
                .collect();
            tests.sort();
            let reason = r["reason"].as_str().unwrap_or("").to_string();
            (id, (r["verdict"].as_str().unwrap().to_string(), reason, tests))
        })
        .collect()
}

/// A reason with its numbers left out (how many planted control tests a run reported).
fn digitless(s: &str) -> String {
    s.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// Whether mode `m`'s store has the language's toolchain image.
fn has_image(m: Mode, lang: &str) -> bool {
    let mut c = m.command();
    c.args(["images", "--format", "{{.Repository}}:{{.Tag}}"]);
    if m == Mode::User && is_root() {
        c.args(["--root", USER_STORE]);
    }
    let out = c.output().unwrap();
    stdout(&out).lines().any(|l| l == format!("localhost/polysandbox/{lang}:bookworm"))
}

#[test]
fn caches_change_no_verdict_and_are_hit() {
    const NAME: &str = "caches_change_no_verdict_and_are_hit";
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/polyglot-benchmark");
    if !shared.is_dir() {
        return skip(NAME, "no ../shared/polyglot-benchmark");
    }
    // The exercises and the wrong solutions, where the test user can read them.
    let root = fixtures().dir.join(format!("caches-{}", unique()));
    let (dataset, wrong) = (root.join("dataset"), root.join("wrong"));
    for (lang, name, solution, from, to) in EXERCISES {
        let rel = Path::new(lang).join("exercises/practice").join(name);
        std::fs::create_dir_all(dataset.join(&rel).parent().unwrap()).unwrap();
        let ok = Command::new("cp").arg("-r").arg(shared.join(&rel)).arg(dataset.join(&rel)).status().unwrap();
        assert!(ok.success());
        // Every solution file gold's, the one broken.
        let files = gold(&shared.join(&rel));
        assert!(files.iter().any(|f| f.0 == *solution), "{lang}/{name}: {files:?}");
        for (sol, from_file) in files {
            let mut text = std::fs::read_to_string(from_file).unwrap();
            if sol == *solution {
                assert!(text.contains(from), "{lang}/{name}: the gold file no longer has {from:?}");
                text = text.replacen(from, to, 1);
            }
            let file = wrong.join(&rel).join(&sol);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
    }
    Command::new("chmod").args(["-R", "u+w,a+rX"]).arg(&root).status().unwrap();
    let (dataset, wrong) = (dataset.display().to_string(), wrong.display().to_string());

    for m in modes() {
        let langs: Vec<&str> = ["cpp", "go", "rust", "java"].into_iter().filter(|l| has_image(m, l)).collect();
        if langs.is_empty() {
            skip(NAME, &format!("{m:?}: no cpp, go, rust or java image in the store"));
            continue;
        }
        if langs.len() < 4 {
            eprintln!("{NAME}: {m:?}: only {langs:?} (the others' images are not in its store)");
        }
        let ids: Vec<String> =
            EXERCISES.iter().filter(|e| langs.contains(&e.0)).map(|(l, n, ..)| format!("{l}/{n}")).collect();
        for preds in ["gold", "stub", wrong.as_str()] {
            let run = |caches: &str| {
                let mut a =
                    vec![dataset.as_str(), "-p", preds, "--no-calibration", "-j", "2", "--caches", caches, "-t"];
                a.extend(ids.iter().map(|s| s.as_str()));
                eval(m, &a)
            };
            let (on, off) = (run("on"), run("off"));
            let (a, b) = (outcomes(&on), outcomes(&off));
            assert_eq!(a.len(), ids.len(), "{m:?} {preds}: {}", stderr(&on.out));
            for (id, (verdict, reason, tests)) in &a {
                let (v0, r0, t0) = &b[id];
                assert_eq!((verdict, tests), (v0, t0), "{m:?} {preds} {id}: differs with and without the caches");
                // (Controls are drawn anew each run: a wrong answer may meet one run's changed
                // expectation and not the other's, which the reason says.)
                if !reason.contains("control test") && !r0.contains("control test") {
                    assert_eq!(digitless(reason), digitless(r0), "{m:?} {preds} {id}");
                }
                // Gold resolves, every test passed; the stubs and the wrong solutions do not.
                if preds == "gold" {
                    assert_eq!(verdict, "resolved", "{m:?} {id}: {reason}");
                    assert!(!tests.is_empty() && tests.iter().all(|t| t.1 == "passed"), "{m:?} {id}: {tests:?}");
                } else {
                    assert_eq!(verdict, "unresolved", "{m:?} {preds} {id}: {reason}");
                }
                if preds == wrong {
                    assert!(tests.iter().any(|t| t.1 == "failed"), "{m:?} wrong {id}: {tests:?}");
                    // (The broken rule leaves the others passing where tests are per rule.)
                    if !id.ends_with("gigasecond") {
                        assert!(tests.iter().any(|t| t.1 == "passed"), "{m:?} wrong {id}: {tests:?}");
                    }
                }
            }
            // The cache is what served the dependencies: cargo compiled none of the vendored
            // crates with it (all fresh in the image's target directory), and every one without.
            if preds == "gold" && langs.contains(&"rust") {
                let log = |r: &Run, id: &str| {
                    std::fs::read_to_string(r.dir.join(format!("logs/rust__{id}/test_output.txt"))).unwrap_or_default()
                };
                for (id, krate) in [("gigasecond", "time"), ("grep", "thiserror")] {
                    let (lon, loff) = (log(&on, id), log(&off, id));
                    assert!(loff.contains(&format!("Compiling {krate} v")), "{m:?} off: {loff}");
                    assert!(!lon.contains(&format!("Compiling {krate} v")), "{m:?} on: {lon}");
                    assert!(lon.contains(&format!("Compiling {id} v")), "{m:?} on: {lon}");
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}
