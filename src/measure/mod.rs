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
    /// Ratios to the reference solution's run of the same test (the calibration's), CPU and
    /// peak memory: this test's over gold's, when both were measured the same way and the test
    /// passed; CPU only above a floor of gold's CPU (see eval's vs_gold.rs). Filled by eval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_vs_gold: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_vs_gold: Option<f64>,
    /// `process`: how the test's process ended, its exit status or the signal that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
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
    /// `process` lines: HMAC-SHA256 of the line without it, under the run's key (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

/// The first line `each-test` writes, before any test runs: the key its lines are
/// authenticated with. It drew the key itself, is not dumpable (a test can read neither its
/// memory nor its environment) and waits for the host to have read the line before the first
/// test starts; code of the project that ran earlier (a test binary's listing runs its static
/// constructors) was killed before the key was drawn. So a `process` line the host accepts
/// was written by `each-test`: a test can destroy the numbers (write a key line of its own,
/// flood the channel), never forge them.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyLine {
    pub key: String,
    /// The tests it is about to run, by the names their lines carry.
    #[serde(default)]
    pub tests: Vec<String>,
    /// Processes of the sandbox that were running when the key was drawn and that each-test
    /// could not end (not its own: started before it, by a build script or a setup step, and
    /// now the init's): any of them could have read the key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<i32>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// A fresh key: 32 bytes of getrandom(2), hex.
pub fn new_key() -> String {
    let mut b = [0u8; 32];
    // SAFETY: a 32-byte buffer for the kernel to fill.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    assert_eq!(n, 32, "getrandom");
    hex(&b)
}

/// The line's MAC under `key` (hex): over its JSON without the MAC.
pub fn mac(key: &str, test: &str, usage: &TestUsage) -> String {
    use hmac::{Hmac, Mac};
    let body = serde_json::to_vec(&Line { test: test.to_string(), alias: None, usage: usage.clone(), mac: None })
        .unwrap_or_default();
    let mut m = Hmac::<sha2::Sha256>::new_from_slice(&unhex(key).unwrap_or_default()).expect("any key length");
    m.update(&body);
    hex(&m.finalize().into_bytes())
}

fn mac_ok(key: &str, test: &str, usage: &TestUsage, given: &str) -> bool {
    use hmac::{Hmac, Mac};
    let body = serde_json::to_vec(&Line { test: test.to_string(), alias: None, usage: usage.clone(), mac: None })
        .unwrap_or_default();
    let Some(given) = unhex(given) else { return false };
    let mut m = Hmac::<sha2::Sha256>::new_from_slice(&unhex(key).unwrap_or_default()).expect("any key length");
    m.update(&body);
    m.verify_slice(&given).is_ok()
}

/// The most lines read: a runner of more tests than that gets no numbers past it.
const MAX_LINES: usize = 200_000;

/// What the channel says.
#[derive(Debug, Default)]
pub struct Measured {
    /// Each test's numbers, by name: the first line for a name (each test runs once).
    pub usage: BTreeMap<String, TestUsage>,
    /// `process`: the tests `each-test` ran (its key line's list), when the channel is its own.
    pub ran: Vec<String>,
    /// `process`: tests with an authenticated line whose process ended other than by exit 0.
    pub unclean: std::collections::BTreeSet<String>,
    /// Why the channel is not `each-test`'s alone (its first line is not the key, or a second
    /// key line came).
    pub tampered: Option<String>,
    /// `process`: the key line's `others` (processes that could have read the key).
    pub others: Vec<i32>,
}

/// The channel's lines. `expect` is how the runner's tests are measured: for `process`, only
/// lines authenticated under the key of the channel's first line count, and none when a second
/// key line shows that someone else wrote one; for `in-runner`, only in-runner lines (a test
/// cannot pass its numbers off as the kernel's).
pub fn read(bytes: &[u8], expect: Method) -> Measured {
    let mut m = Measured::default();
    let mut key: Option<KeyLine> = None;
    let mut keys = 0;
    let mut first_is_key = false;
    for (i, line) in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()).take(MAX_LINES).enumerate() {
        if let Ok(k) = serde_json::from_slice::<KeyLine>(line) {
            keys += 1;
            if i == 0 {
                first_is_key = true;
                key = Some(k);
            }
            continue;
        }
        let Ok(l) = serde_json::from_slice::<Line>(line) else { continue };
        let finite =
            [l.usage.wall_s, l.usage.cpu_user_s, l.usage.cpu_system_s].iter().all(|v| v.is_finite() && *v >= 0.0);
        if !finite || l.test.is_empty() || l.usage.method != expect {
            continue;
        }
        if expect != Method::InRunner {
            let signed = match (&key, &l.mac) {
                (Some(k), Some(mac)) => mac_ok(&k.key, &l.test, &l.usage, mac),
                _ => false,
            };
            if !signed {
                continue;
            }
            if l.usage.exit_code != Some(0) || l.usage.signal.is_some() {
                m.unclean.insert(l.test.clone());
            }
        }
        // The ratios to gold are the host's to fill (eval's vs_gold.rs), never the channel's.
        let usage = TestUsage { cpu_vs_gold: None, memory_vs_gold: None, ..l.usage };
        // pytest's node id (what a repository run's summary names) beside the JUnit name.
        if let Some(alias) = l.alias.filter(|a| !a.is_empty() && *a != l.test && expect == Method::InRunner) {
            m.usage.entry(alias).or_insert_with(|| usage.clone());
        }
        m.usage.entry(l.test).or_insert(usage);
    }
    if expect != Method::InRunner && !bytes.iter().all(|b| b.is_ascii_whitespace()) {
        if !first_is_key || keys != 1 {
            m.tampered = Some(format!(
                "the per-test channel ({REPORT}) holds lines each-test did not write ({})",
                if first_is_key { "a second key" } else { "a line before its key" }
            ));
            m.usage.clear();
            m.unclean.clear();
        } else if let Some(k) = key {
            m.ran = k.tests;
            m.others = k.others;
        }
    }
    m
}

/// The channel's file in the runner's report directory.
pub const REPORT: &str = "measure.jsonl";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::parsers::{attach_usage as attach, Status, TestResult};

    const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    /// A line as each-test writes it, signed under KEY.
    fn line(name: &str, cpu: f64, stopped: Option<&str>) -> String {
        signed(KEY, name, cpu, stopped)
    }

    fn usage(cpu: f64, stopped: Option<&str>) -> TestUsage {
        TestUsage {
            wall_s: 1.0,
            cpu_user_s: cpu,
            cpu_system_s: 0.0,
            memory_peak_bytes: 10,
            method: Method::Process,
            memory: None,
            stopped_by: stopped.map(|s| serde_json::from_value(serde_json::json!(s)).unwrap()),
            cpu_vs_gold: None,
            memory_vs_gold: None,
            exit_code: Some(if stopped.is_some() { 137 } else { 0 }),
            signal: None,
        }
    }

    fn signed(key: &str, name: &str, cpu: f64, stopped: Option<&str>) -> String {
        let u = usage(cpu, stopped);
        let m = mac(key, name, &u);
        serde_json::to_string(&Line { test: name.into(), alias: None, usage: u, mac: Some(m) }).unwrap() + "\n"
    }

    fn keyed(lines: &str) -> String {
        format!("{{\"key\":\"{KEY}\",\"tests\":[\"a\",\"b\",\"c\"]}}\n{lines}")
    }

    #[test]
    fn the_first_line_of_a_test_counts_and_garbage_is_skipped() {
        let text = line("a", 0.3, None) + "not json\n" + &line("a", 9.0, None) + "{\"test\":\"b\",\"wall_s\":-1}\n";
        let m = read(keyed(&text).as_bytes(), Method::Process).usage;
        assert_eq!(m.len(), 1);
        assert_eq!(m["a"].cpu_user_s, 0.3);
    }

    /// What a test can write into the channel: lines for itself or a later test, unsigned,
    /// signed under a key of its own, announced after each-test's, or marked in-runner; none
    /// counts. Destroying the numbers (a second key line) is all it can do.
    #[test]
    fn a_test_cannot_forge_process_lines() {
        let other = "ff".repeat(32);
        let unsigned =
            serde_json::to_string(&Line { test: "b".into(), alias: None, usage: usage(0.0, None), mac: None }).unwrap();
        let tampered = line("b", 5.0, None).replace("5.0", "0.01");
        let in_runner = signed(KEY, "b", 0.0, None).replace("\"process\"", "\"in-runner\"");
        for forged in [unsigned + "\n", signed(&other, "b", 0.0, None), tampered, in_runner] {
            // Before each-test's line for b: first per name would have won.
            let m = read(keyed(&(forged.clone() + &line("b", 5.0, None))).as_bytes(), Method::Process);
            assert_eq!(m.usage["b"].cpu_user_s, 5.0, "{forged}");
            assert!(m.tampered.is_none());
        }
        // Its own key first (before each-test's), a key line after each-test's, or no key at
        // all: nothing counts, and the channel says it was written by someone else.
        let own = format!("{{\"key\":\"{other}\"}}\n") + &signed(&other, "b", 0.0, None);
        let late = keyed(&line("a", 1.0, None)) + &format!("{{\"key\":\"{other}\"}}\n");
        for text in [own + &keyed(&line("b", 5.0, None)), late, line("a", 1.0, None)] {
            let m = read(text.as_bytes(), Method::Process);
            assert!(m.usage.is_empty() && m.ran.is_empty() && m.tampered.is_some(), "{text}");
        }
        // An in-runner channel takes no process lines, signed or not, and has no key.
        let m = read(keyed(&line("a", 1.0, None)).as_bytes(), Method::InRunner);
        assert!(m.usage.is_empty() && m.tampered.is_none());
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
        assert!(attach(&mut tests, read(text.as_bytes(), Method::InRunner)).is_none());
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
        assert!(attach(&mut tests, read(keyed(&text).as_bytes(), Method::Process)).is_none());
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
        let mut u = usage(0.1, Some("memory"));
        u.method = Method::InRunner;
        let text = serde_json::to_string(&Line { test: "a".into(), alias: None, usage: u, mac: None }).unwrap();
        assert!(attach(&mut tests, read(text.as_bytes(), Method::InRunner)).is_none());
        assert_eq!(tests[0].status, Status::Passed);
        assert_eq!(tests.len(), 1);
    }

    /// A test's own process writes a pass line for itself into the runner's report and aborts
    /// (the fifth red team: each test in a process of its own made it cost nothing): each-test
    /// saw the process end by a signal, so the test is failed; one each-test ran that has no
    /// line at all is failed too; a test each-test did not run (a doc test) is left alone.
    #[test]
    fn a_pass_counts_only_if_each_test_saw_its_process_exit_0() {
        let pass = |n: &str| TestResult { name: n.into(), status: Status::Passed, duration_s: None, usage: None };
        let mut tests = vec![pass("a"), pass("b"), pass("c"), pass("src/lib.rs - f (line 3)")];
        let mut aborted = usage(0.1, None);
        aborted.exit_code = None;
        aborted.signal = Some(6);
        let m = mac(KEY, "b", &aborted);
        let b = serde_json::to_string(&Line { test: "b".into(), alias: None, usage: aborted, mac: Some(m) }).unwrap()
            + "\n";
        let text = keyed(&(line("a", 0.1, None) + &b));
        assert!(attach(&mut tests, read(text.as_bytes(), Method::Process)).is_none());
        let status: Vec<Status> = tests.iter().map(|t| t.status).collect();
        assert_eq!(status, [Status::Passed, Status::Failed, Status::Failed, Status::Passed]);
    }

    /// A measured pass is signed over its figures as each-test wrote them, and the host checks
    /// the signature over the figures it read back: every float must read back to the same
    /// bits. Walls such as 1.0180227020000001 s (17 significant digits) did not with
    /// serde_json's default parser, and a correct solution's passing test was failed (seen as
    /// a flaky `ratios_to_gold_are_reported_beside_the_verdict`).
    #[test]
    fn every_measured_figure_reads_back_to_its_signature() {
        let walls = [1.0180227020000001, 1.1147972369999999, 1.2295847819999999, 0.1 + 0.2, 1e-7, 123456.789012345];
        let names: Vec<String> = (0..walls.len()).map(|i| format!("t{i}")).collect();
        let mut text = format!("{{\"key\":\"{KEY}\",\"tests\":{}}}\n", serde_json::to_string(&names).unwrap());
        let mut tests = Vec::new();
        for (i, w) in walls.iter().enumerate() {
            let mut u = usage(*w / 3.0, None);
            u.wall_s = *w;
            u.cpu_system_s = w / 7.0;
            let m = mac(KEY, &names[i], &u);
            text += &(serde_json::to_string(&Line { test: names[i].clone(), alias: None, usage: u, mac: Some(m) })
                .unwrap()
                + "\n");
            tests.push(TestResult { name: names[i].clone(), status: Status::Passed, duration_s: None, usage: None });
        }
        assert!(attach(&mut tests, read(text.as_bytes(), Method::Process)).is_none());
        assert!(tests.iter().all(|t| t.status == Status::Passed && t.usage.is_some()), "{tests:?}");
    }

    /// A report that names a test twice (the runner's line and a forged one) gives both the
    /// same numbers and the same check: neither is failed for want of a line of its own.
    #[test]
    fn a_name_given_twice_is_measured_and_checked_alike() {
        let pass = |n: &str| TestResult { name: n.into(), status: Status::Passed, duration_s: None, usage: None };
        let mut tests = vec![pass("a"), pass("a")];
        assert!(attach(&mut tests, read(keyed(&line("a", 0.1, None)).as_bytes(), Method::Process)).is_none());
        assert!(tests.iter().all(|t| t.status == Status::Passed && t.usage.is_some()), "{tests:?}");
    }
}
