//! Go's test runner: the test binary's framed output ([`gotest`]), `go test -json` events
//! ([`gotest_json`]), and the harness's `parse_log_gotest`, `go test -v`'s lines in the raw log
//! ([`harness`]). The framed parser and the harness's read one line grammar, `result_line`.

use super::{Parsed, Status, StatusMap, TestResult};
use regex::Regex;
use serde::Deserialize;

#[derive(Deserialize)]
struct GoEvent {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Test")]
    test: Option<String>,
    #[serde(rename = "Elapsed")]
    elapsed: Option<f64>,
}

/// The testing package's result line, as both go parsers read it: `--- PASS: `, `--- FAIL: ` or
/// `--- SKIP: `, and what follows (the test's name, then its duration).
fn result_line(line: &str) -> Option<(Status, &str)> {
    [("--- PASS: ", Status::Passed), ("--- FAIL: ", Status::Failed), ("--- SKIP: ", Status::Skipped)]
        .into_iter()
        .find_map(|(prefix, status)| line.strip_prefix(prefix).map(|rest| (status, rest)))
}

/// Go: the test binary's own framed output (`-test.v=test2json` prefixes every line the
/// testing package writes with ^V, so a line the code prints is never taken for a result).
/// Complete when the framed PASS or FAIL came. Nothing else is read: no unframed format the
/// code could choose by editing its argv (dropping the flag) counts.
pub fn gotest(output: &str) -> Parsed {
    const MARK: char = '\u{16}';
    let mut p = Parsed::default();
    // The test whose lines these are: the testing package frames `=== RUN`, `=== NAME` (1.20)
    // or `=== CONT` when the writer changes.
    let mut current: Option<String> = None;
    for raw in output.lines() {
        // A frame glued to text the code printed without a newline is still the runner's line
        // (the testing package starts every frame with the mark); the text before it is the
        // current test's output.
        let Some(at) = raw.find(MARK) else {
            if let Some(t) = &current {
                if !raw.trim().is_empty() {
                    p.spoke.insert(t.clone());
                }
            }
            continue;
        };
        if !raw[..at].trim().is_empty() {
            if let Some(t) = &current {
                p.spoke.insert(t.clone());
            }
        }
        let line = &raw[at + MARK.len_utf8()..];
        let line = line.trim_start();
        if let Some(t) = ["=== RUN ", "=== NAME ", "=== CONT "].iter().find_map(|m| line.strip_prefix(m)) {
            current = Some(t.trim().to_string());
            continue;
        }
        if line == "PASS" || line == "FAIL" {
            p.complete = true;
            continue;
        }
        let Some((status, rest)) = result_line(line) else { continue };
        let (name, secs) = rest.rsplit_once(" (").unwrap_or((rest, ""));
        let duration_s = secs.trim_end_matches(')').strip_suffix('s').and_then(|v| v.parse().ok());
        p.tests.push(TestResult { name: name.trim().to_string(), status, duration_s, usage: None });
        // A result line ends the test's own output; its log lines follow it, still its own.
        current = Some(name.trim().to_string());
    }
    p
}

/// `go test -json` events: complete when a package result came.
pub fn gotest_json(output: &str) -> Parsed {
    let mut p = Parsed::default();
    for line in output.lines().filter(|l| l.starts_with('{')) {
        let Ok(ev) = serde_json::from_str::<GoEvent>(line) else { continue };
        let status = match ev.action.as_str() {
            "pass" => Status::Passed,
            "fail" => Status::Failed,
            "skip" => Status::Skipped,
            _ => continue,
        };
        match ev.test {
            Some(name) => p.tests.push(TestResult { name, status, duration_s: ev.elapsed, usage: None }),
            None => p.complete = true,
        }
    }
    p
}

/// The harness's `parse_log_gotest`: `go test -v`'s result lines anywhere in the log
/// (`--- PASS: TestA/sub (0.00s)`, stripped; the name up to the last ` (` that leaves a
/// duration). The same line grammar as [`gotest`]'s frames, read from the raw log.
pub fn harness(log: &str) -> StatusMap {
    let rest = Regex::new(r"^(.+) \((.+)\)$").unwrap();
    let mut m = StatusMap::new();
    for line in log.split('\n') {
        let Some((status, after)) = result_line(line.trim()) else { continue };
        if let Some(c) = rest.captures(after) {
            m.insert(c[1].to_string(), Some(status));
        }
    }
    m
}

/// Multi-SWE-bench's `go test -v` parser (families msb-7b628ad046d0, beego, caddy, cli, hugo
/// and 10 more, and msb-2f95ed406439, etcd, gin, gorm, grpc-go, go-zero: `base` true, a
/// subtest counted as its parent), as its `parse_log` reads the log, quirks kept: on each
/// stripped line `--- PASS: (\S+)` passes a test not already failed, `--- FAIL: (\S+)` and the
/// loose `FAIL:?\s?(.+?)\s` (so a package's `FAIL\tpkg\t0.1s` line is a failed "test") fail
/// it, whatever passed before; `--- SKIP: (\S+)` is kept only for a test that already failed.
/// Membership is checked by the name as printed, sets hold the base name.
pub fn msb(log: &str, base: bool) -> super::Sets {
    use std::sync::LazyLock;
    static RE: LazyLock<[Regex; 4]> = LazyLock::new(|| {
        [r"^--- PASS: (\S+)", r"^--- FAIL: (\S+)", r"^FAIL:?\s?(.+?)\s", r"^--- SKIP: (\S+)"]
            .map(|p| Regex::new(p).unwrap())
    });
    let name = |t: &str| -> String {
        match t.rfind('/') {
            Some(i) if base => t[..i].to_string(),
            _ => t.to_string(),
        }
    };
    let mut s = super::Sets::default();
    for line in super::py_splitlines(log) {
        let line = line.trim();
        if let Some(c) = RE[0].captures(line) {
            let t = &c[1];
            if !s.failed.contains(t) {
                s.skipped.remove(t);
                s.passed.insert(name(t));
            }
        }
        for re in &RE[1..3] {
            if let Some(c) = re.captures(line) {
                let t = &c[1];
                s.passed.remove(t);
                s.skipped.remove(t);
                s.failed.insert(name(t));
            }
        }
        if let Some(c) = RE[3].captures(line) {
            let t = &c[1];
            if !s.passed.contains(t) && s.failed.contains(t) {
                s.skipped.insert(name(t));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::parsers::LogParser;

    #[test]
    fn gotest_events() {
        let out = "{\"Action\":\"run\",\"Test\":\"TestA\"}\n{\"Action\":\"output\",\"Test\":\"TestA\",\"Output\":\"--- PASS: TestFake\\n\"}\n\
{\"Action\":\"pass\",\"Test\":\"TestA\",\"Elapsed\":0.5}\n{\"Action\":\"fail\",\"Test\":\"TestB\"}\n{\"Action\":\"fail\",\"Package\":\"x\"}\n";
        let p = gotest_json(out);
        assert!(p.complete);
        assert_eq!(p.tests.len(), 2);
        assert_eq!(p.tests[0].duration_s, Some(0.5));
        assert_eq!(p.failed(), 1);
        // The framed parser reads no JSON line the code could print itself.
        let p = gotest(out);
        assert!(!p.complete && p.tests.is_empty());
        // Framed: unframed lines (the code's own printing) are never results.
        let framed = "--- PASS: TestFake (0.00s)\nPASS\n\u{16}=== RUN   TestA\n\u{16}--- PASS: TestA (0.25s)\n\u{16}    --- FAIL: TestA/sub (0.00s)\n\u{16}FAIL\n";
        let p = gotest(framed);
        assert!(p.complete);
        assert_eq!(p.tests.len(), 2);
        assert_eq!(p.tests[0].duration_s, Some(0.25));
        assert_eq!(p.status_of("TestFake"), None);
        assert_eq!(p.status_of("TestA/sub"), Some(Status::Failed));
        assert!(!gotest("--- PASS: TestFake (0.00s)\nPASS\n\u{16}=== RUN   TestA\n").complete);
    }

    #[test]
    fn a_frame_glued_to_printed_text_is_still_read() {
        // The code printed without a newline: the runner's frame follows on the same line.
        let out = "\u{16}=== RUN   TestA\nno newline\u{16}--- FAIL: TestA (0.00s)\n\u{16}FAIL\n";
        let p = gotest(out);
        assert_eq!(p.status_of("TestA"), Some(Status::Failed));
        assert!(p.complete && p.spoke.contains("TestA"));
    }

    /// The harness's parser, through the registry.
    #[test]
    fn parsers_read_what_the_runners_print() {
        let m = LogParser::GoTest
            .parse("    --- PASS: TestA/sub (0.00s)\n--- FAIL: TestB (0.01s)\n--- SKIP: TestC (0.00s)\n");
        assert_eq!(
            (m["TestA/sub"], m["TestB"], m["TestC"]),
            (Some(Status::Passed), Some(Status::Failed), Some(Status::Skipped))
        );
    }

    #[test]
    fn multi_swe_bench_go_test_lines_as_its_harness_reads_them() {
        let log = "=== RUN   TestA\n--- PASS: TestA (0.00s)\n    --- PASS: TestB/sub_1 (0.00s)\n--- FAIL: TestC (0.01s)\n--- PASS: TestC (0.00s)\n--- SKIP: TestD (0.00s)\n--- FAIL: TestE (0.00s)\n--- SKIP: TestE (0.00s)\nFAIL\tgithub.com/o/r/pkg\t0.012s\nFAIL\nok  \tgithub.com/o/r/other\t0.1s\n";
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<std::collections::BTreeSet<_>>();
        let s = msb(log, false);
        // A pass after a failure does not count; a skip counts only for a failed test (and
        // then the test is in two sets, which the harness's TestResult refuses); the package's
        // FAIL line is a failed "test"; a bare FAIL is not.
        assert_eq!(s.passed, names(&["TestA", "TestB/sub_1"]));
        assert_eq!(s.failed, names(&["TestC", "TestE", "github.com/o/r/pkg"]));
        assert_eq!(s.skipped, names(&["TestE"]));
        assert!(s.conflict().is_some());
        // Subtests counted as their parent, the other family.
        let s = msb("--- PASS: TestB/sub_1 (0.00s)\n--- PASS: TestB/sub_2\n--- FAIL: TestF/x/y (0s)\n", true);
        assert_eq!(s.passed, names(&["TestB"]));
        assert_eq!(s.failed, names(&["TestF/x"]));
    }
}
