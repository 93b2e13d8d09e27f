//! Verdicts against a cheater who has read polysandbox (#21), as root and as the unprivileged
//! user, with the calibration eval makes by default and without one (--no-calibration): each
//! forge the issue names, written as it was written against the old controls (a module-level
//! function, a file of its own, a `t` + 16 hex digits name, two six-digit numbers), is graded
//! `unresolved`, never `resolved` or an unscored `error`. Forges that carry the dataset's own
//! test names (what an outside attack did next) are flagged, and `--strict` grades them
//! unresolved. A wrong answer that fails loudly instead stays in the score.
mod common;

use common::eval::*;
use common::*;

fn hostile(round: &str) -> String {
    data().join("predictions/hostile").join(round).display().to_string()
}

/// One round of predictions, graded: every instance it has a prediction for comes out
/// `unresolved`, and the report scores them all.
fn graded_unresolved(m: Mode, round: &str, extra: &[&str]) -> usize {
    let (p, pred) = (polyglot(), hostile(round));
    let mut args = vec![p.as_str(), "-j", "2", "-p", pred.as_str(), "--filter-category"];
    args.extend(langs(m));
    args.extend(extra);
    let run = eval(m, &args);
    // Graded, none resolved: exit 1 (never 3, an infrastructure error, nor 0).
    assert_eq!(code(&run.out), 1, "{m:?} {round} {extra:?}: {}", stderr(&run.out));
    let mut n = 0;
    for r in run.results() {
        let id = r["instance_id"].as_str().unwrap();
        let v = r["verdict"].as_str().unwrap();
        // The round's directory holds no files for it.
        if v == "no_prediction" {
            continue;
        }
        n += 1;
        assert_eq!(v, "unresolved", "{m:?} {round} {extra:?} {id}: {r}");
        // Flagged as well: each reaches into the runner in a way its text shows.
        assert!(r["tampering"].as_array().is_some_and(|a| !a.is_empty()), "{m:?} {round} {id}: not flagged: {r}");
    }
    let rep = run.report();
    assert_eq!(rep["resolved_instances"], 0, "{m:?} {round}: {rep}");
    assert_eq!(rep["accuracy_score"], 0.0, "{m:?} {round}: {rep}");
    assert_eq!(rep["calibrated"], !extra.contains(&"--no-calibration"), "{m:?} {round} {extra:?}: {rep}");
    n
}

/// python: unittest's runtest a no-op; javascript: only control-shaped names run; go: argv
/// narrowed to the control with framed passes printed, a re-exec that turns failures into
/// passes, the framing flag dropped; java: a shutdown hook rewriting the JUnit XML; rust: a
/// re-exec rewriting `FAILED` into `ok`; cpp: REQUIRE redefined by the control's shape;
/// jest: every test a skip at load.
#[test]
fn the_issues_forges_are_unresolved_with_and_without_a_calibration() {
    for m in modes() {
        for extra in [&[][..], &["--no-calibration"][..]] {
            let mut n = 0;
            for round in ["a", "b", "c"] {
                n += graded_unresolved(m, round, extra);
            }
            let want = if m == Mode::Root { 9 } else { 4 };
            assert_eq!(n, want, "{m:?} {extra:?}: graded {n} forges");
        }
    }
}

/// Per-test measurement (the default) runs each Rust and C++ test in a process of its own: a
/// real test's process, known by its public name, that writes its own pass into the runner's
/// report and aborts before the runner writes the failure (the fifth red team's forge, graded
/// `resolved` before) is failed: a pass counts only if each-test saw its process exit 0.
#[test]
fn a_tests_own_process_cannot_report_its_pass_and_leave() {
    for m in modes() {
        if !langs(m).contains(&"rust") {
            skip("a_tests_own_process_cannot_report_its_pass_and_leave", &format!("{m:?}: no rust or cpp image"));
            continue;
        }
        for extra in [&[][..], &["--no-calibration"][..]] {
            assert_eq!(graded_unresolved(m, "each", extra), 2, "{m:?} {extra:?}");
        }
    }
}

/// An allow-list of the exercise's own test names (public data) tells a copied control from
/// the real tests without looking at their bodies: that is flagged where the code shows it,
/// and `--strict` grades it unresolved. It no longer passes a real test that gave controls:
/// that one runs under a fresh name beside them (both of sum-two's tests here), so the list
/// misses it and it fails, `unresolved` without `--strict` too.
#[test]
fn name_allow_lists_are_flagged_and_strict_grades_them_unresolved() {
    for m in modes() {
        let (p, pred) = (polyglot(), hostile("names"));
        let run = eval(m, &[&p, "--filter-category", "python", "-p", &pred]);
        let r = run.result("python/sum-two");
        assert!(
            r["tampering"].as_array().is_some_and(|a| a.iter().any(|f| f.as_str().unwrap().contains("_pytest"))),
            "{m:?}: {r}"
        );
        assert_eq!(r["verdict"], "unresolved", "{m:?}: {r}");
        assert!(r["reason"].as_str().unwrap().contains("failed"), "{m:?}: {r}");
        let strict = eval(m, &[&p, "--filter-category", "python", "-p", &pred, "--strict"]);
        let r = strict.result("python/sum-two");
        assert_eq!(r["verdict"], "unresolved", "{m:?}: {r}");
        assert_eq!(strict.report()["accuracy_score"], 0.0);
    }
}

/// A wrong answer that kills every process in its sandbox at import: graded, and scored over
/// the whole dataset (an error would be too, named for a rerun).
#[test]
fn a_loud_failure_stays_in_the_score() {
    for m in modes() {
        let (p, pred) = (polyglot(), hostile("dodge"));
        let run = eval(m, &[&p, "--filter-category", "python", "go", "-p", &pred]);
        let r = run.result("python/sum-two");
        assert_ne!(r["verdict"], "resolved", "{m:?}: {r}");
        let rep = run.report();
        // Two instances selected, one with a prediction: both in the denominator.
        assert_eq!(rep["admitted"], 2, "{m:?}: {rep}");
        assert_eq!(rep["accuracy_score"], 0.0, "{m:?}: {rep}");
        if r["verdict"] == "error" {
            assert_eq!(rep["rerun_ids"], serde_json::json!(["python/sum-two"]), "{m:?}: {rep}");
        }
    }
}

fn channels(kind: &str) -> String {
    data().join("predictions/channels").join(kind).display().to_string()
}

/// A solution must build without its tests, and no test process can read the tests' sources:
/// - `alone`: a right answer that names what only the test files declare (a Go test function,
///   Java's test class; the first red team's Go solution read the tests' table variable) is
///   `unresolved`, with or without `--strict`: the package is built alone first;
/// - `peek`: a solution that answers wrong whenever it can see a test source (Go's *_test.go
///   through os.DirFS, Java's src/test/java, Rust's tests/*.rs, C++'s *_test.cpp) is `resolved`:
///   once the tests are built their sources are gone from the sandbox's tree;
/// - `embed`: Go's `//go:embed *.go` (the second red team's) reads the tests at build time: no
///   solution has a reason to, so it is `unresolved` without `--strict`.
#[test]
fn a_solution_neither_builds_on_nor_reads_its_tests() {
    for m in modes() {
        let p = polyglot();
        let only = |want: &[&'static str]| -> Vec<&'static str> {
            want.iter().copied().filter(|l| langs(m).contains(l)).collect()
        };
        let run = |kind: &str, wanted: &[&'static str]| {
            let pred = channels(kind);
            let mut args = vec![p.as_str(), "-j", "2", "--no-calibration", "-p", pred.as_str(), "--filter-category"];
            let ls = only(wanted);
            args.extend(ls.iter().copied());
            let run = eval(m, &args);
            assert!(matches!(code(&run.out), 0 | 1), "{m:?} {kind}: {}", stderr(&run.out));
            (run, ls)
        };
        let (alone, ls) = run("alone", &["go", "java"]);
        for l in ls {
            let r = alone.result(&format!("{l}/sum-two"));
            assert_eq!(r["verdict"], "unresolved", "{m:?} alone {l}: {r}");
            assert!(r["reason"].as_str().unwrap().contains("does not build without the test files"), "{m:?} {l}: {r}");
        }
        let (peek, ls) = run("peek", &["go", "java", "rust", "cpp"]);
        for l in ls {
            let r = peek.result(&format!("{l}/sum-two"));
            assert_eq!(r["verdict"], "resolved", "{m:?} peek {l}: a test process saw a test source: {r}");
        }
        let (embed, _) = run("embed", &["go"]);
        let r = embed.result("go/sum-two");
        assert_eq!(r["verdict"], "unresolved", "{m:?} embed: {r}");
        assert!(r["reason"].as_str().unwrap().contains("reads files into the build"), "{m:?} embed: {r}");
    }
}
