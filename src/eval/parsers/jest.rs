//! jest: its `--json` report file ([`jest`]); and the harness's `parse_log_jest`, `--verbose`'s
//! console lines in the raw log ([`harness`]); Multi-SWE-bench's jest family, suites and
//! their tests ([`msb`]).

use super::{by_line, Parsed, Sets, Status, StatusMap, TestResult};
use crate::eval::channel::Reports;

/// jest --json --outputFile={report}/jest.json: one JSON document, written once.
pub fn jest(reports: &Reports) -> Parsed {
    let mut p = Parsed::default();
    let Some(bytes) = reports.get("jest.json") else { return p };
    let v = match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(v) => v,
        Err(e) => {
            // Two documents (or one and the rest of another): written more than once.
            if e.is_syntax()
                && serde_json::Deserializer::from_slice(bytes)
                    .into_iter::<serde_json::Value>()
                    .next()
                    .is_some_and(|d| d.is_ok())
            {
                p.tampered = Some("jest's report was written more than once".into());
            }
            return p;
        }
    };
    p.complete = true;
    for file in v["testResults"].as_array().into_iter().flatten() {
        let asserts = file["assertionResults"].as_array().cloned().unwrap_or_default();
        if asserts.is_empty() && file["status"] == "failed" {
            // The file did not load (syntax error, missing export): one failure for it.
            let name = file["name"].as_str().unwrap_or("test file").rsplit('/').next().unwrap_or("").to_string();
            p.tests.push(TestResult { name, status: Status::Error, duration_s: None, usage: None });
        }
        for a in asserts {
            let status = match a["status"].as_str() {
                Some("passed") => Status::Passed,
                Some("failed") => Status::Failed,
                _ => Status::Skipped,
            };
            let name = a["fullName"].as_str().or(a["title"].as_str()).unwrap_or("").to_string();
            p.tests.push(TestResult {
                name,
                status,
                duration_s: a["duration"].as_f64().map(|ms| ms / 1000.0),
                usage: None,
            });
        }
    }
    p
}

/// The harness's `parse_log_jest`: jest --verbose's console lines (`✓ name (3 ms)`, `✕`,
/// `○`), anywhere in the log.
pub fn harness(log: &str) -> StatusMap {
    by_line(log, r"^\s*(✓|✕|○)\s(.+?)(?:\s\((\d+\s*m?s)\))?$", |c| {
        Some((
            c[2].trim().to_string(),
            match &c[1] {
                "✓" => Status::Passed,
                "✕" => Status::Failed,
                _ => Status::Skipped,
            },
        ))
    })
}

/// Multi-SWE-bench's jest family (iamkun/dayjs, ...): on stripped lines, `PASS <file>` and
/// `FAIL <file>` (a trailing `(1.2 s)` dropped) make the file a test of that status and the
/// current suite; `✓ <name>` and `✕ <name>` make `<suite>:<name>` one. A test line before any
/// suite is the error its parser raises.
pub fn msb(log: &str) -> Result<Sets, String> {
    use std::sync::LazyLock;
    static RE: LazyLock<[regex::Regex; 4]> = LazyLock::new(|| {
        [
            r"^PASS (.+?)(?:\s\(\d*\.?\d+\s*\w+\))?$",
            r"^✓ (.+?)(?:\s\(\d*\.?\d+\s*\w+\))?$",
            r"^FAIL (.+?)(?:\s\(\d*\.?\d+\s*\w+\))?$",
            r"^✕ (.+?)(?:\s\(\d*\.?\d+\s*\w+\))?$",
        ]
        .map(|p| regex::Regex::new(p).unwrap())
    });
    let mut s = Sets::default();
    let mut suite: Option<String> = None;
    for line in super::py_splitlines(log) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = RE[0].captures(line) {
            suite = Some(c[1].to_string());
            s.passed.insert(c[1].to_string());
        }
        if let Some(c) = RE[2].captures(line) {
            suite = Some(c[1].to_string());
            s.failed.insert(c[1].to_string());
        }
        for (re, passed) in [(&RE[1], true), (&RE[3], false)] {
            if let Some(c) = re.captures(line) {
                let Some(suite) = &suite else {
                    return Err(format!("Test {} without suite: {line}", if passed { "passed" } else { "failed" }));
                };
                let name = format!("{suite}:{}", &c[1]);
                if passed { &mut s.passed } else { &mut s.failed }.insert(name);
            }
        }
    }
    Ok(s)
}

/// Where a jest log contradicts itself as no jest writes it: a failed test (`✕`) under a suite
/// it reports `PASS`. A suite with a failed test is `FAIL`; code in the runner's process that
/// rewrites its output (the sixth red team's: `Socket.prototype._write` wrapped to turn
/// `FAIL` into `PASS`, the `✕` lines left, so that nothing was reported both ways) leaves it.
pub fn msb_contradiction(log: &str) -> Option<String> {
    let mut pass_suite: Option<&str> = None;
    for line in super::py_splitlines(log) {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("PASS ") {
            pass_suite = Some(rest);
        } else if line.starts_with("FAIL ") {
            pass_suite = None;
        } else if let (Some(suite), true) = (pass_suite, line.starts_with("✕ ")) {
            return Some(format!("a failed test ({line}) under a suite it reports passed ({suite})"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failed_test_under_a_passed_suite_is_a_contradiction() {
        let honest = "PASS test/a.test.js\n  ✓ one (2 ms)\nFAIL test/b.test.js\n  ✕ two (3 ms)\n";
        assert_eq!(super::msb_contradiction(honest), None);
        let forged = "PASS test/a.test.js\n  ✓ one (2 ms)\nPASS test/b.test.js\n  ✓ three\n  ✕ two (3 ms)\n";
        let why = super::msb_contradiction(forged).unwrap();
        assert!(why.contains("✕ two") && why.contains("test/b.test.js"), "{why}");
    }

    use crate::eval::parsers::{LogParser, Status};

    #[test]
    fn multi_swe_bench_jest_suites_as_its_harness_reads_them() {
        let log =
            "PASS test/a.test.js (1.2 s)\n  ✓ adds (3 ms)\n  ✕ subtracts\nFAIL test/b.test.js\n  ✓ x\n  ○ skipped\n";
        let s = super::msb(log).unwrap();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<std::collections::BTreeSet<_>>();
        assert_eq!(s.passed, names(&["test/a.test.js", "test/a.test.js:adds", "test/b.test.js:x"]));
        assert_eq!(s.failed, names(&["test/a.test.js:subtracts", "test/b.test.js"]));
        assert!(s.skipped.is_empty());
        assert_eq!(super::msb("  ✓ early\nPASS t.js\n").unwrap_err(), "Test passed without suite: ✓ early");
    }

    /// The harness's parser, through the registry.
    #[test]
    fn parsers_read_what_the_runners_print() {
        let m = LogParser::Jest.parse("  ✓ adds numbers (3 ms)\n  ✕ subtracts\n  ○ skipped one\n");
        assert_eq!(
            (m["adds numbers"], m["subtracts"], m["skipped one"]),
            (Some(Status::Passed), Some(Status::Failed), Some(Status::Skipped))
        );
    }
}
