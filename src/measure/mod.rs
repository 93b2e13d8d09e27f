//! Per-test resource usage: what each test case used (wall, CPU user and system, peak memory),
//! measured apart from every other test, and how.
//!
//! Two methods, one record ([`TestUsage`]), one channel: JSON lines written to a FIFO the host
//! reads (`measure.jsonl` in the runner's report directory, see eval's channel.rs).
//!
//! - `process` ([`each`]): the runner's tests run one per process (a libtest binary with
//!   `--exact NAME`, a Go test binary with `-test.run '^NAME$'`, a Catch2 binary with the test's
//!   name), each started and reaped by `polysandbox each-test` inside the sandbox. The numbers are
//!   the kernel's accounting of that process and what it started (`wait4`'s rusage: CPU user
//!   and system, the largest resident set), read by a process the test does not run in. Per-test
//!   limits hold here: wall time and memory (sampled), CPU time (`RLIMIT_CPU`).
//! - `in-runner` (images/measure/): the runner runs every test in one long-lived process
//!   (pytest, jest's workers, the JVM); a plugin takes the kernel's counters of that process at
//!   each test's boundaries (CPU time deltas; peak RSS reset through `/proc/self/clear_refs` at
//!   the start and read from `VmHWM` at the end). The code under test runs in that process and
//!   could write other numbers: they are measurements, never verdicts.
//!
//! Neither changes a verdict, with one exception that is the point of per-test limits: a test
//! `each-test` stopped for its own limit is failed (it never reported a pass).

pub mod each;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a test's numbers were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// A child cgroup of the sandbox's, one per test.
    Cgroup,
    /// The kernel's rusage of the test's own process (and what it started), read by its parent.
    Process,
    /// The kernel's counters of the runner's process, read by a plugin in it at the test's
    /// boundaries: the code under test could have written them.
    InRunner,
}

/// A per-test limit a test ran over (BenchExec's termination reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    Walltime,
    Memory,
    Cputime,
}

impl Limit {
    pub fn describe(self) -> &'static str {
        match self {
            Limit::Walltime => "ran past its per-test time limit",
            Limit::Memory => "went past its per-test memory limit",
            Limit::Cputime => "used up its per-test CPU time limit",
        }
    }
}

/// What one test used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestUsage {
    pub wall_s: f64,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    pub memory_peak_bytes: u64,
    pub method: Method,
    /// What the peak is: `maxrss` (the largest resident set of the test's processes, rusage),
    /// `vmhwm` (the runner process's peak RSS since the test started), `vmhwm-unreset` (since
    /// the process started: clear_refs was refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// The per-test limit it was stopped for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<Limit>,
    /// Ratios to the reference solution's run of the same test (calibration), CPU and memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_vs_gold: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_vs_gold: Option<f64>,
}

impl TestUsage {
    pub fn cpu_s(&self) -> f64 {
        self.cpu_user_s + self.cpu_system_s
    }
}

/// One line of the channel.
#[derive(Debug, Serialize, Deserialize)]
pub struct Line {
    pub test: String,
    /// The same test's name in another form a parser of the same runner's output may give it:
    /// pytest's node id (`tests/test_x.py::test_y`, what the repository runner's `-rA` summary
    /// names) beside the JUnit XML name in `test` (`tests.test_x.test_y`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    #[serde(flatten)]
    pub usage: TestUsage,
}

/// The most lines read: a runner of more tests than that gets no numbers past it.
const MAX_LINES: usize = 200_000;

/// The channel's lines, by test name (and by its alias too, when it has one): the first line
/// for a name is kept (a second one is not the measurer's: each test runs once).
pub fn read(bytes: &[u8]) -> BTreeMap<String, TestUsage> {
    let mut out = BTreeMap::new();
    for line in bytes.split(|b| *b == b'\n').take(MAX_LINES) {
        let Ok(l) = serde_json::from_slice::<Line>(line) else { continue };
        let finite =
            [l.usage.wall_s, l.usage.cpu_user_s, l.usage.cpu_system_s].iter().all(|v| v.is_finite() && *v >= 0.0);
        if finite && !l.test.is_empty() {
            if let Some(alias) = l.alias.filter(|a| !a.is_empty() && *a != l.test) {
                out.entry(alias).or_insert_with(|| l.usage.clone());
            }
            out.entry(l.test).or_insert(l.usage);
        }
    }
    out
}

/// Puts each test's numbers beside its result; a test `each-test` stopped for its own limit,
/// which no runner report names (it never got to say), is added as failed, and one a report
/// names passed is failed all the same (its process was killed before it ended).
pub fn attach(tests: &mut Vec<crate::eval::parsers::TestResult>, measured: BTreeMap<String, TestUsage>) {
    use crate::eval::parsers::{Status, TestResult};
    let mut measured = measured;
    for t in tests.iter_mut() {
        if let Some(u) = measured.remove(&t.name) {
            if u.stopped_by.is_some() && u.method == Method::Process {
                t.status = Status::Failed;
            }
            t.usage = Some(u);
        }
    }
    for (name, u) in measured {
        if u.stopped_by.is_some() && u.method == Method::Process {
            tests.push(TestResult { name, status: Status::Failed, duration_s: Some(u.wall_s), usage: Some(u) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::parsers::{Status, TestResult};

    fn line(name: &str, cpu: f64, stopped: Option<&str>) -> String {
        let s = stopped.map(|s| format!(",\"stopped_by\":\"{s}\"")).unwrap_or_default();
        format!("{{\"test\":\"{name}\",\"wall_s\":1.0,\"cpu_user_s\":{cpu},\"cpu_system_s\":0.0,\"memory_peak_bytes\":10,\"method\":\"process\"{s}}}\n")
    }

    #[test]
    fn the_first_line_of_a_test_counts_and_garbage_is_skipped() {
        let text = line("a", 0.3, None) + "not json\n" + &line("a", 9.0, None) + "{\"test\":\"b\",\"wall_s\":-1}\n";
        let m = read(text.as_bytes());
        assert_eq!(m.len(), 1);
        assert_eq!(m["a"].cpu_user_s, 0.3);
    }

    #[test]
    fn a_line_is_found_by_its_alias_too() {
        // pytest's plugin: the JUnit name, and the node id the repository runner's parser gives.
        let text = "{\"test\":\"tests.test_x.test_a\",\"alias\":\"tests/test_x.py::test_a\",\"wall_s\":1.0,\"cpu_user_s\":0.3,\"cpu_system_s\":0.0,\"memory_peak_bytes\":10,\"method\":\"in-runner\"}\n";
        let mut tests = vec![
            TestResult {
                name: "tests/test_x.py::test_a".into(),
                status: Status::Passed,
                duration_s: None,
                usage: None,
            },
            TestResult { name: "tests.test_x.test_a".into(), status: Status::Passed, duration_s: None, usage: None },
        ];
        attach(&mut tests, read(text.as_bytes()));
        assert!(tests.iter().all(|t| t.usage.as_ref().is_some_and(|u| u.cpu_user_s == 0.3)), "{tests:?}");
        assert_eq!(tests.len(), 2);
    }

    #[test]
    fn a_test_stopped_for_its_limit_is_failed_even_if_a_report_says_it_passed() {
        let mut tests = vec![
            TestResult { name: "a".into(), status: Status::Passed, duration_s: None, usage: None },
            TestResult { name: "b".into(), status: Status::Passed, duration_s: None, usage: None },
        ];
        let text = line("a", 0.1, None) + &line("b", 0.1, Some("memory")) + &line("c", 0.1, Some("walltime"));
        attach(&mut tests, read(text.as_bytes()));
        assert_eq!(tests[0].status, Status::Passed);
        assert!(tests[0].usage.is_some());
        assert_eq!(tests[1].status, Status::Failed);
        assert_eq!(tests[2].name, "c");
        assert_eq!(tests[2].status, Status::Failed);
        assert_eq!(tests[2].usage.as_ref().unwrap().stopped_by, Some(Limit::Walltime));
    }

    #[test]
    fn in_runner_lines_never_fail_a_test() {
        let mut tests = vec![TestResult { name: "a".into(), status: Status::Passed, duration_s: None, usage: None }];
        let text = line("a", 0.1, Some("memory")).replace("\"process\"", "\"in-runner\"");
        attach(&mut tests, read(text.as_bytes()));
        assert_eq!(tests[0].status, Status::Passed);
        assert_eq!(tests.len(), 1);
    }
}
