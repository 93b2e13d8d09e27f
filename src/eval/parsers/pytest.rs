//! pytest: its `-rA` short test summary and `--durations=0` lines in the run's output
//! ([`pytest`]); and the harness's pytest parsers ([`harness`], [`harness_v2`],
//! [`harness_seaborn`]), which take any line of the raw log that looks like a result.

use super::{Parsed, Status, StatusMap, TestResult};
use regex::Regex;

fn is_rule(line: &str, inner: impl Fn(&str) -> bool) -> bool {
    let t = line.trim();
    t.starts_with('=') && t.ends_with('=') && inner(t.trim_matches('=').trim())
}

/// pytest -rA: the last "short test summary info" section and the closing "N passed in Xs"
/// rule after it; durations from `--durations=0`.
pub fn pytest(output: &str) -> Parsed {
    let lines: Vec<&str> = output.lines().collect();
    let mut p = Parsed::default();
    let Some(start) = lines.iter().rposition(|l| is_rule(l, |s| s == "short test summary info")) else {
        // No summary section: pytest -rA prints one whenever it collected a test, so this run
        // ended early or collected nothing; the closing rule alone says which.
        p.complete = lines
            .iter()
            .any(|l| is_rule(l, |s| s.contains(" in ") && s.ends_with('s') || s.starts_with("no tests ran")));
        return p;
    };
    for line in &lines[start + 1..] {
        if is_rule(line, |s| s.contains(" in ")) {
            p.complete = true;
            break;
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let status = match word {
            "PASSED" => Status::Passed,
            "XFAIL" => Status::Xfail,
            "FAILED" | "XPASS" => Status::Failed,
            "ERROR" => Status::Error,
            // "SKIPPED [1] t.py:9: reason": a file and line, not a test; kept under that name,
            // so a skip is seen (a skipped exercise test is not a pass).
            "SKIPPED" => {
                let loc = rest.split_once(' ').map_or(rest, |(_, r)| r);
                let loc = loc.split(": ").next().unwrap_or(loc).trim();
                p.tests.push(TestResult {
                    name: format!("skipped at {loc}"),
                    status: Status::Skipped,
                    duration_s: None,
                    usage: None,
                });
                continue;
            }
            _ => continue,
        };
        let name = rest.split(" - ").next().unwrap_or(rest).trim();
        if !name.is_empty() {
            p.tests.push(TestResult { name: name.to_string(), status, duration_s: None, usage: None });
        }
    }
    // "0.01s call     tests/test_x.py::test_a" lines (setup/call/teardown summed). By name,
    // in one pass: the output is the code under test's to make long.
    if let Some(d) = lines.iter().position(|l| is_rule(l, |s| s.contains("slowest") && s.contains("durations"))) {
        let mut at: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
        for (i, t) in p.tests.iter().enumerate() {
            at.entry(t.name.as_str()).or_default().push(i);
        }
        let mut add: Vec<(usize, f64)> = Vec::new();
        for line in &lines[d + 1..start] {
            let mut it = line.split_whitespace();
            let (Some(secs), Some(_phase), Some(name)) = (it.next(), it.next(), it.next()) else { continue };
            let Some(secs) = secs.strip_suffix('s').and_then(|s| s.parse::<f64>().ok()) else { continue };
            for &i in at.get(name).map(|v| v.as_slice()).unwrap_or_default() {
                add.push((i, secs));
            }
        }
        for (i, secs) in add {
            *p.tests[i].duration_s.get_or_insert(0.0) += secs;
        }
    }
    p
}

// ---- The harness's: the raw log, any line ----

/// A line the harness's pytest parsers take for a result: one starting with a status word.
fn starts_with_status(line: &str) -> bool {
    Status::ALL.iter().any(|s| line.starts_with(s.harness_name()))
}

/// pytest's `SKIPPED [N] path:line: reason` summary, where `[N]` is not a test.
fn is_skip_summary(status: &str, name: &str) -> bool {
    status == "SKIPPED"
        && name.len() > 2
        && name.starts_with('[')
        && name.ends_with(']')
        && name[1..name.len() - 1].chars().all(|c| c.is_ascii_digit())
}

/// The harness's `parse_log_pytest` (`options`: `parse_log_pytest_options`, a parameter that
/// is an absolute path cut to its file name; `matplotlib`: `parse_log_matplotlib`, mouse
/// buttons by number): every line of the log that starts with a status word, the word (kept
/// as it is: see [`StatusMap`]) and the line's second word.
pub fn harness(log: &str, options: bool, matplotlib: bool) -> StatusMap {
    let mut m = StatusMap::new();
    let option = Regex::new(r"(.*?)\[(.*)\]").unwrap();
    for line in log.split('\n') {
        let mut line = line.to_string();
        if matplotlib {
            line = line.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3");
        }
        if !starts_with_status(&line) {
            continue;
        }
        if line.starts_with("FAILED") {
            line = line.replace(" - ", " ");
        }
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() <= 1 || is_skip_summary(t[0], t[1]) {
            continue;
        }
        let mut name = t[1].to_string();
        if options {
            if let Some(c) = option.captures(t[1]) {
                let (main, mut opt) = (c[1].to_string(), c[2].to_string());
                if opt.starts_with('/') && !opt.starts_with("//") && !opt.contains('*') {
                    opt = format!("/{}", opt.rsplit('/').next().unwrap_or(""));
                }
                name = format!("{main}[{opt}]");
            }
        }
        m.insert(name, Status::from_harness(t[0]));
    }
    m
}

/// The harness's `parse_log_pytest_v2`: colours stripped, a status word first (the rest of
/// the line the test) or last (the line before it the test).
pub fn harness_v2(log: &str) -> StatusMap {
    let mut m = StatusMap::new();
    let colour = Regex::new(r"\[(\d+)m").unwrap();
    for line in log.split('\n') {
        let line = colour.replace_all(line, "");
        let line: String = line.chars().filter(|c| !(('\u{1}'..='\u{1f}').contains(c))).collect();
        if starts_with_status(&line) {
            let line =
                if line.starts_with("FAILED") { line.split(" - ").next().unwrap_or("").to_string() } else { line };
            let t: Vec<&str> = line.split_whitespace().collect();
            if t.len() >= 2 && !is_skip_summary(t[0], t[1]) {
                m.insert(t[1..].join(" "), Status::from_harness(t[0]));
            }
        } else if Status::ALL.iter().any(|s| line.ends_with(s.harness_name())) {
            let t: Vec<&str> = line.split_whitespace().collect();
            if t.len() >= 2 {
                m.insert(t[..t.len() - 1].join(" "), Status::from_harness(t[t.len() - 1]));
            }
        }
    }
    m
}

/// The harness's `parse_log_seaborn`: `FAILED test`, `test PASSED [ n%]` and `PASSED test`.
pub fn harness_seaborn(log: &str) -> StatusMap {
    let mut m = StatusMap::new();
    for line in log.split('\n') {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() < 2 {
            continue;
        }
        if line.starts_with("FAILED") {
            m.insert(parts[1].to_string(), Some(Status::Failed));
        } else if line.contains(" PASSED ") {
            if parts[1] == "PASSED" {
                m.insert(parts[0].to_string(), Some(Status::Passed));
            }
        } else if line.starts_with("PASSED") {
            m.insert(parts[1].to_string(), Some(Status::Passed));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::parsers::LogParser;

    #[test]
    fn pytest_reads_only_the_last_summary() {
        let out = "\
PASSED fake::a
============================= short test summary info ==============================
PASSED also_fake::b
=== fake rule ===
================================== PASSES ==================================
============================= slowest durations =============================
0.50s call     t.py::test_a
0.25s setup    t.py::test_a
============================= short test summary info ==============================
PASSED t.py::test_a
FAILED t.py::test_b - AssertionError: assert 1 == 2
SKIPPED [1] t.py:9: unconditional skip
========================= 1 failed, 1 passed in 0.02s ==========================
";
        let p = pytest(out);
        assert!(p.complete);
        assert_eq!(p.tests.len(), 3);
        assert_eq!(p.status_of("skipped at t.py:9"), Some(Status::Skipped));
        assert_eq!(p.status_of("t.py::test_a"), Some(Status::Passed));
        assert_eq!(p.tests[0].duration_s, Some(0.75));
        assert_eq!(p.status_of("t.py::test_b"), Some(Status::Failed));
        assert_eq!(p.status_of("fake::a"), None);
        let cut = pytest("============ short test summary info ============\nPASSED t.py::x\n");
        assert!(!cut.complete);
    }

    /// The harness's parser, through the registry.
    #[test]
    fn parsers_read_what_the_runners_print() {
        let log = "PASSED tests/a.py::test_x\nFAILED tests/a.py::test_y - assert 1 == 2\nSKIPPED [2] tests/a.py:10: no\nXFAIL tests/a.py::test_z - reason\nERROR tests/b.py::test_w\nFAILED\n";
        let m = LogParser::Pytest.parse(log);
        assert_eq!(m["tests/a.py::test_x"], Some(Status::Passed));
        assert_eq!(m["tests/a.py::test_y"], Some(Status::Failed));
        assert_eq!(m["tests/a.py::test_z"], Some(Status::Xfail));
        assert_eq!(m["tests/b.py::test_w"], Some(Status::Error));
        assert!(!m.contains_key("[2]"));
        let m = LogParser::PytestOptions
            .parse("PASSED tests/t.py::test_f[/tmp/abc/input.py]\nPASSED tests/t.py::test_g[//x/y]\n");
        assert!(m.contains_key("tests/t.py::test_f[/input.py]"), "{m:?}");
        assert!(m.contains_key("tests/t.py::test_g[//x/y]"));
        let m = LogParser::PytestV2.parse("\x1b[32mPASSED\x1b[0m tests/t.py::test_a\ntests/t.py::test_b FAILED\n");
        assert_eq!(m["tests/t.py::test_a"], Some(Status::Passed), "{m:?}");
        assert_eq!(m["tests/t.py::test_b"], Some(Status::Failed));
        let m = LogParser::Seaborn.parse("tests/t.py::T::test_a PASSED [ 50%]\nFAILED tests/t.py::T::test_b - x\n");
        assert_eq!(m["tests/t.py::T::test_a"], Some(Status::Passed));
        assert_eq!(m["tests/t.py::T::test_b"], Some(Status::Failed));
        assert_eq!(
            LogParser::Matplotlib.parse("PASSED t.py::test[MouseButton.LEFT]\n")["t.py::test[1]"],
            Some(Status::Passed)
        );
    }

    #[test]
    fn a_word_that_is_no_status_is_kept_as_none() {
        // The harness keeps the line's first (v2: last) word, whatever it is.
        let m = LogParser::Pytest.parse("ERROR: file or directory not found: t.py\n");
        assert_eq!(m.get("file"), Some(&None));
        let m = LogParser::PytestV2.parse("t.py::b XPASSED\n");
        assert_eq!(m.get("t.py::b"), Some(&None));
    }
}
