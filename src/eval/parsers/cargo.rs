//! libtest (`cargo test`): its `--logfile` report, else its result lines ([`cargo`]); and the
//! harness's `parse_log_cargo`, its result lines in the raw log ([`harness`]); and
//! Multi-SWE-bench's libtest family, the same lines in three sets ([`msb`]).

use super::{by_line, Parsed, Sets, Status, StatusMap, TestResult};
use crate::eval::channel::Reports;

/// libtest: its log (`--logfile {report}/libtest.log`, a FIFO: `ok NAME`, `failed NAME`,
/// `ignored NAME` per test, whatever the code prints), else its result lines on stdout
/// (`test NAME ... ok|FAILED|ignored`); complete when a `test result:` line came.
pub fn cargo(output: &str, reports: &Reports) -> Parsed {
    let mut p = Parsed::default();
    let log = reports.get("libtest.log").map(|b| String::from_utf8_lossy(b).into_owned());
    for line in output.lines() {
        if line.starts_with("test result: ") {
            p.complete = true;
            continue;
        }
        if log.is_some() {
            continue;
        }
        let Some(rest) = line.strip_prefix("test ") else { continue };
        let Some((name, result)) = rest.rsplit_once(" ... ") else { continue };
        let status = match result.trim() {
            "ok" => Status::Passed,
            "FAILED" => Status::Failed,
            r if r.starts_with("ignored") => Status::Skipped,
            _ => continue,
        };
        p.tests.push(TestResult { name: name.to_string(), status, duration_s: None, usage: None });
    }
    for line in log.as_deref().unwrap_or("").lines() {
        let (result, name) = line.split_once(' ').unwrap_or((line, ""));
        let status = match result {
            "ok" => Status::Passed,
            "failed" => Status::Failed,
            "ignored" => Status::Skipped,
            _ => continue,
        };
        // Written twice for one test (a re-run writing its own log into the same stream).
        if p.tests.iter().any(|t| t.name == name) && p.tests.len() < 100_000 {
            p.tampered = Some(format!("libtest's log names {name} twice"));
        }
        p.tests.push(TestResult { name: name.to_string(), status, duration_s: None, usage: None });
    }
    p
}

/// The harness's `parse_log_cargo`: `test NAME ... ok|FAILED` lines anywhere in the log (a
/// name without spaces; `ignored` not kept). Not the line grammar [`cargo`] reads on stdout
/// (a name with spaces, `ignored` a skip), so each keeps its own.
pub fn harness(log: &str) -> StatusMap {
    by_line(log, r"^test\s+(\S+)\s+\.\.\.\s+(\w+)$", |c| match &c[2] {
        "ok" => Some((c[1].to_string(), Status::Passed)),
        "FAILED" => Some((c[1].to_string(), Status::Failed)),
        _ => None,
    })
}

/// Multi-SWE-bench's libtest family (tokio-rs/bytes, sharkdp/fd, ...): each stripped line
/// matched from its start against `test (\S+) ... ok`, `... FAILED`, `... ignored` (the dots
/// any character, as its unescaped regexes have them), each name added to its set.
pub fn msb(log: &str) -> Sets {
    use std::sync::LazyLock;
    static RE: LazyLock<[regex::Regex; 3]> = LazyLock::new(|| {
        [r"^test (\S+) ... ok", r"^test (\S+) ... FAILED", r"^test (\S+) ... ignored"]
            .map(|p| regex::Regex::new(p).unwrap())
    });
    let mut s = Sets::default();
    for line in super::py_splitlines(log) {
        let line = line.trim();
        for (re, set) in RE.iter().zip([&mut s.passed, &mut s.failed, &mut s.skipped]) {
            if let Some(c) = re.captures(line) {
                set.insert(c[1].to_string());
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
    fn libtest_log_over_stdout() {
        let mut r = Reports::default();
        r.files.insert("libtest.log".into(), b"ok a\nfailed b\nignored c\n".to_vec());
        let p = cargo("test a ... FAILED\ntest forged ... ok\ntest result: FAILED. 1 passed\n", &r);
        assert!(p.complete);
        assert_eq!((p.passed(), p.failed(), p.tests.len()), (1, 1, 3));
        assert_eq!(p.status_of("forged"), None, "stdout's lines do not count beside a log");
        r.files.insert("libtest.log".into(), b"failed a\nok a\n".to_vec());
        assert!(cargo("test result: ok.\n", &r).tampered.is_some());
    }

    #[test]
    fn cargo_lines() {
        let out = "running 3 tests\ntest a ... ok\ntest b::c ... FAILED\ntest d ... ignored, slow\ntest src/lib.rs - f (line 3) ... ok\n\ntest result: FAILED. 2 passed; 1 failed\n";
        let p = cargo(out, &Reports::default());
        assert!(p.complete);
        assert_eq!((p.passed(), p.failed(), p.tests.len()), (2, 1, 4));
    }

    #[test]
    fn multi_swe_bench_libtest_lines_as_its_harness_reads_them() {
        let s = msb("running 3 tests\ntest a ... ok\n  test b::c ... FAILED\ntest d ... ignored, slow\ntest e ... okay\ntest with space ... ok\ntest f ... FAILED\ntest f ... ok\n");
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<std::collections::BTreeSet<_>>();
        // `... ok` matches from the line's start, so `okay` is ok too, as its regex has it; a
        // name with a space is not one; a test in two sets is what its TestResult refuses.
        assert_eq!(s.passed, names(&["a", "e", "f"]));
        assert_eq!(s.failed, names(&["b::c", "f"]));
        assert_eq!(s.skipped, names(&["d"]));
        assert_eq!(s.conflict(), Some(("f".into(), "passed", "failed")));
    }

    /// The harness's parser, through the registry.
    #[test]
    fn parsers_read_what_the_runners_print() {
        let m = LogParser::Cargo.parse("test a::b ... ok\ntest c ... FAILED\ntest d ... ignored\n");
        assert_eq!((m["a::b"], m["c"], m.get("d")), (Some(Status::Passed), Some(Status::Failed), None));
    }
}
