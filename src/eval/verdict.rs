//! The verdict table: what a finished run shows, turned into a verdict and its reason. Pure
//! logic over the run's usage record, its parsed results and what the run had to show.

use super::calibration;
use super::channel;
use super::control;
use super::driver;
use super::parsers::{self, Status};
use super::tamper;
use super::{Grade, InstanceResult, Options, Verdict};
use crate::sandbox::report::Report;

/// What a run must show besides its tests' results for them to be believed.
pub enum Check {
    /// The control test: reported failed by name, and the runner exiting non-zero for it.
    Control(control::Control),
    /// A snippet's completion line, printed after its test code: the last line of output.
    Trailer(String),
    /// Nothing more (repository instances, graded by their FAIL_TO_PASS and PASS_TO_PASS as
    /// SWE-bench grades them; snippet languages that start at a `main`).
    None,
}

/// Whether a run graded by FAIL_TO_PASS and PASS_TO_PASS (a repository instance) can be
/// believed, as SWE-bench v5 cross-checks its logs (PR #620), and more: the runner's results
/// must be whole and its own. `None` when they are; else why not, which makes the run
/// `unresolved` whatever the lists say.
fn lists_cross_check<'a>(
    parser: parsers::Parser,
    parsed: &parsers::Parsed,
    output: &str,
    rec: &crate::sandbox::report::Report,
    graded: impl Iterator<Item = &'a String>,
) -> Option<String> {
    const NOT_ITS_OWN: &str = "the results are not the runner's own";
    if rec.output_limit_exceeded {
        return Some("output limit reached: the runner's results are cut".into());
    }
    if let Some(why) = &parsed.tampered {
        return Some(format!("{NOT_ITS_OWN}: {why}"));
    }
    if let Some(s) = rec.signal {
        return Some(format!("tests ended by signal {s}"));
    }
    // A listed test reported failing and later passing: a line printed after the runner's own
    // (an atexit hook printing a second summary), which the parsers, keeping the last status,
    // would take. Each result line is read alone, as the harness reads its logs.
    let graded: std::collections::BTreeSet<&String> = graded.collect();
    let passing = |s: Option<Status>| matches!(s, Some(Status::Passed | Status::Xfail));
    let failing = |s: Option<Status>| matches!(s, Some(Status::Failed | Status::Error));
    let mut failed: std::collections::BTreeSet<String> = Default::default();
    let mut flipped = None;
    let mut see = |name: &str, status: Option<Status>| {
        if failing(status) {
            failed.insert(name.to_string());
        } else if passing(status) && failed.contains(name) && graded.contains(&name.to_string()) {
            flipped.get_or_insert_with(|| name.to_string());
        }
    };
    if parser == parsers::Parser::Pytest {
        for line in output.lines() {
            for (name, status) in parsers::LogParser::Pytest.parse(line) {
                see(&name, status);
            }
        }
    }
    for t in &parsed.tests {
        see(&t.name, Some(t.status));
    }
    if let Some(name) = flipped {
        return Some(format!("{name} is reported failed, then passed: {NOT_ITS_OWN}"));
    }
    // The runner's exit status against its results: a failing run whose results show no
    // failure has results in it that are not the runner's.
    match rec.exit_code {
        Some(code) if code != 0 && !parsed.tests.iter().any(|t| failing(Some(t.status))) => {
            Some(format!("the tests exited {code} while their results report no failure: {NOT_ITS_OWN}"))
        }
        _ => None,
    }
}

/// The run's figures from its usage record, into its result.
pub(crate) fn take_measurements(r: &mut InstanceResult, rec: &Report) {
    r.exit_code = rec.exit_code;
    r.signal = rec.signal;
    r.wall_s = rec.wall_time_s;
    r.cpu_s = rec.cpu_total_s;
    r.memory_peak_bytes = rec.memory_peak_bytes;
    r.timed_out = rec.timed_out || rec.cpu_time_exceeded;
    r.oom = rec.oom_killed;
}

/// A host that ran short while the run went (another process took the file table, say) makes
/// whatever it printed the host's doing as much as the code's: a host fault (see
/// [`InstanceResult::host_fault`]), rerun, never graded. An interrupted run is only that.
pub(crate) fn ran_short(rec: &Report) -> bool {
    !rec.host_short.is_empty() && rec.status != crate::sandbox::report::Status::Interrupted
}

/// A run whose results are not to be graded, by its usage record's status alone: a limit
/// (`timeout`, `oom`), an interrupt, or the sandbox's own failure (`error`: never the
/// prediction's). The verdict and its reason; `None` when the tests' results decide. A host
/// that ran short ([`ran_short`]) comes first: the caller marks that error a host fault.
pub(crate) fn ended_early(rec: &Report) -> Option<(Verdict, Option<String>)> {
    use crate::sandbox::report::Status as RunStatus;
    let error = |why: String| Some((Verdict::Error, Some(why)));
    if ran_short(rec) {
        return error(format!("the host ran short of {} while the tests ran: rerun", rec.host_short.join(", ")));
    }
    match rec.status {
        RunStatus::Timeout | RunStatus::CpuTime => Some((
            Verdict::Timeout,
            Some(format!("{} limit reached", if rec.timed_out { "wall-clock" } else { "cpu-time" })),
        )),
        RunStatus::Oom => Some((Verdict::Oom, Some("memory limit reached".into()))),
        RunStatus::Interrupted => Some((Verdict::Interrupted, None)),
        // The command never started (its working directory, seccomp, exec...): the sandbox's or
        // the image's fault, never the prediction's.
        RunStatus::NotStarted => error(format!(
            "the sandbox could not start the command: {}",
            rec.start_error.as_deref().unwrap_or("no reason given")
        )),
        RunStatus::Error => error(format!("the sandbox failed: {}", rec.error_line())),
        RunStatus::Exited if rec.exit_code.is_none() => {
            error("the usage record says the command exited but gives no exit status".into())
        }
        RunStatus::Exited | RunStatus::Signaled | RunStatus::OutputLimit => None,
    }
}

/// What a finished run shows, for [`grade`].
pub(crate) struct Evidence<'a> {
    /// The parser of the runner's output and report files.
    pub parser: parsers::Parser,
    /// FAIL_TO_PASS and PASS_TO_PASS, for instances graded by lists.
    pub lists: Option<(&'a [String], &'a [String])>,
    /// What the run must show besides its tests' results.
    pub check: &'a Check,
    /// The calibration's entry for the instance (its flaky tests, gold's tests).
    pub cal: Option<&'a calibration::Entry>,
    /// The run's usage record; none when the sandbox left none.
    pub record: Option<crate::sandbox::report::Report>,
    /// The tests' output.
    pub output: &'a str,
    /// The report files the runner wrote through the report channel.
    pub reports: &'a channel::Reports,
}

/// What a run's output shows of the host's file table full: the kernel's ENFILE, which it
/// returns only at the host-wide `fs.file-max` (a process's own descriptor limit is EMFILE,
/// "Too many open files", not this). As C's strerror, Python (`[Errno 23]`), Rust (`os error
/// 23`), Go, Java and node/libuv (`ENFILE: file table overflow`) print it.
pub(crate) fn shows_enfile(output: &str) -> bool {
    let lower = output.to_ascii_lowercase();
    if lower.contains("too many open files in system") || lower.contains("file table overflow") {
        return true;
    }
    // `needle` standing alone: no letter, digit or `_` on either side.
    let word = |hay: &str, needle: &str| {
        let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        hay.match_indices(needle)
            .any(|(i, _)| !part(hay[..i].chars().next_back()) && !part(hay[i + needle.len()..].chars().next()))
    };
    word(output, "ENFILE") || word(&lower, "os error 23") || word(&lower, "errno 23")
}

/// A run that did not resolve and whose output shows the host's file table full
/// ([`shows_enfile`]) failed for the host, not for its code (a correct Rust solution's tests
/// exit 101 when rustc cannot install its Ctrl-C handler; jest fails writing its cache): a
/// host fault, rerun. A prediction can print the text to make its own run an `error`, which
/// is scored as not resolved all the same (docs/threat-model.md).
pub(crate) fn host_fault_in_output(r: &mut InstanceResult, output: &str) {
    let failed = matches!(r.verdict, Verdict::Unresolved | Verdict::Timeout | Verdict::Oom | Verdict::PatchFailed);
    if failed && shows_enfile(output) {
        let was = match r.reason.as_deref() {
            Some(why) => format!("{}: {why}", r.verdict),
            None => r.verdict.to_string(),
        };
        r.mark_host_fault(format!(
            "the run's output shows the host's file table full (ENFILE: Too many open files in system), so its failure is the host's ({was}): rerun"
        ));
    }
}

/// Grades one finished run; a failure whose output shows the host's file table full is the
/// host's ([`host_fault_in_output`]).
pub(crate) fn grade(e: Evidence<'_>, r: &mut InstanceResult) {
    let output = e.output;
    let ran_short = e.record.as_ref().is_some_and(ran_short);
    judge(e, r);
    r.host_fault |= ran_short && r.verdict == Verdict::Error;
    host_fault_in_output(r, output);
}

fn judge(e: Evidence<'_>, r: &mut InstanceResult) {
    let Evidence { parser, lists, check, cal, record, output, reports } = e;
    let Some(rec) = record else {
        r.verdict = Verdict::Error;
        r.reason = Some("the sandbox left no usage record".into());
        return;
    };
    take_measurements(r, &rec);
    let mut parsed = parsers::parse(parser, output, reports);
    let control = match check {
        Check::Control(c) => {
            control::restore(&mut parsed, c);
            if !c.planted.is_empty() && c.planted.len() == c.names.len() {
                r.verified = c.planted.iter().cloned().zip(control::failed_each(&parsed, c)).collect();
            }
            Some(control::check(&mut parsed, c))
        }
        _ => None,
    };
    // Flaky tests (the calibration saw them differ between gold runs) are left out, by name.
    if let Some(e) = cal {
        r.flaky_ignored = parsed.tests.iter().filter(|t| e.flaky.contains(&t.name)).map(|t| t.name.clone()).collect();
        parsed.tests.retain(|t| !e.flaky.contains(&t.name));
    }
    r.tests = parsed.tests.clone();
    // An in-runner plugin resets the runner process's peak RSS at each test: without a memory
    // cgroup the run's own peak (rusage) then starts over too, so the tests' peaks bound it.
    let tests_peak = r.tests.iter().filter_map(|t| t.usage.as_ref()).map(|u| u.memory_peak_bytes).max().unwrap_or(0);
    r.memory_peak_bytes = r.memory_peak_bytes.max(tests_peak);
    if let Some((verdict, reason)) = ended_early(&rec) {
        (r.verdict, r.reason) = (verdict, reason);
        return;
    }
    let (f2p, p2p) = lists.map(|(a, b)| (a.to_vec(), b.to_vec())).unwrap_or_default();
    let not_flaky = |l: Vec<String>| -> Vec<String> {
        l.into_iter().filter(|t| !cal.is_some_and(|e| e.flaky.contains(t))).collect()
    };
    let (f2p, p2p) = (not_flaky(f2p), not_flaky(p2p));
    if !f2p.is_empty() || !p2p.is_empty() {
        let g = |list: &[String]| {
            let mut gr = Grade::default();
            for t in list {
                // PASSED and XFAIL pass, as SWE-bench's harness counts them.
                if matches!(parsed.status_of(t), Some(Status::Passed | Status::Xfail)) {
                    gr.success.push(t.clone());
                } else {
                    gr.failure.push(t.clone());
                }
            }
            gr
        };
        let (a, b) = (g(&f2p), g(&p2p));
        let inconsistent = lists_cross_check(parser, &parsed, output, &rec, f2p.iter().chain(&p2p));
        let ok = a.failure.is_empty() && b.failure.is_empty() && inconsistent.is_none();
        r.verdict = if ok { Verdict::Resolved } else { Verdict::Unresolved };
        if let Some(why) = inconsistent {
            r.reason = Some(why);
        } else if !ok {
            let first = a.failure.first().or(b.failure.first()).unwrap();
            r.reason = Some(format!(
                "{} of FAIL_TO_PASS and {} of PASS_TO_PASS not passing (first: {first})",
                a.failure.len(),
                b.failure.len()
            ));
        }
        r.fail_to_pass = Some(a);
        r.pass_to_pass = Some(b);
        return;
    }
    // Exit 0 alone is not enough: the runner must have reached its own summary, with at least
    // one test passing and none failing or skipped, and (where the runner names its tests) with
    // the control test reported failed and the runner exiting non-zero for it.
    let (passed, failed) = (parsed.passed(), parsed.failed());
    // A skip is no pass, unless the test files declared it (jest) or gold skips it here too.
    let skipped = parsed
        .tests
        .iter()
        .filter(|t| {
            matches!(t.status, Status::Skipped | Status::Xfail)
                && !parser.skips_are_declared()
                && !cal.is_some_and(|e| e.skipped.contains(&t.name))
        })
        .count();
    let exited = || match rec.signal {
        Some(s) => format!("tests ended by signal {s}"),
        None => format!("tests exited {}; {failed} failed, {passed} passed", rec.exit_code.unwrap_or(-1)),
    };
    const FORGED: &str = "the results are not the runner's own";
    let reason = if rec.output_limit_exceeded {
        Some("output limit reached".to_string())
    } else if let Some(why) = not_alone(&rec, output) {
        Some(why)
    } else if let Some(why) = &parsed.tampered {
        Some(format!("{FORGED}: {why}"))
    } else if rec.signal.is_some() {
        Some(exited())
    } else if let Some(outcome) = control {
        match outcome {
            // Skipped or xfailed with the real tests it copies: the skips say it.
            control::Outcome::Passed(_) if skipped > 0 => Some(format!("{skipped} skipped or xfailed (controls among them): every test of an exercise must pass")),
            control::Outcome::Passed(n) => Some(format!("{n} control test{} (a copy of a real test with its expectation changed, which gold fails) reported passed or skipped: {} or a wrong answer that meets the changed expectation", if n == 1 { "" } else { "s" }, FORGED.replace("the results are", "results that are"))),
            // A test file that did not load takes its control with it: an error, not a forgery.
            control::Outcome::Missing(_) if parsed.complete && failed > 0 => Some(exited()),
            // Skips pytest reports by place, not by name: a control skipped with the rest.
            control::Outcome::Missing(_) if parsed.complete && skipped > 0 => Some(format!("{skipped} skipped or xfailed (controls among them): every test of an exercise must pass")),
            control::Outcome::Missing(n) if parsed.complete => Some(format!("{FORGED}: the {parser} summary does not report {n} of the control tests")),
            control::Outcome::Missing(_) if rec.exit_code == Some(0) => Some(format!("exit 0 but no {parser} summary: the run did not finish its tests")),
            control::Outcome::Missing(_) => Some(exited()),
            control::Outcome::Held if rec.exit_code == Some(0) => Some(format!("{FORGED}: exit 0 although the control tests failed")),
            control::Outcome::Held if !parsed.complete => Some(format!("no {parser} summary: the run did not finish its tests")),
            control::Outcome::Held if failed > 0 => Some(format!("{failed} failed, {passed} passed")),
            control::Outcome::Held => None,
        }
    } else if rec.exit_code != Some(0) {
        Some(exited())
    } else if !parsed.complete {
        Some(format!("exit 0 but no {parser} summary: the run did not finish its tests"))
    } else if failed > 0 {
        Some(format!("exit 0 but {failed} tests failed"))
    } else {
        None
    };
    let reason = reason.or_else(|| {
        // A skip says what happened to a test gold passes better than its absence from the
        // passes does (the skipped one may be a real test renamed beside its controls, its
        // controls run and failed).
        if skipped > 0 {
            return Some(format!("{skipped} skipped or xfailed: every test of an exercise must pass"));
        }
        // Every test gold passes here (calibrated) must be reported passed, by name: a run
        // that leaves tests out, however it does it, is not a pass.
        if let Some(e) = cal {
            let missing: Vec<&String> =
                e.tests.iter().filter(|t| parsed.status_of(t) != Some(Status::Passed)).collect();
            if let Some(first) = missing.first() {
                return Some(format!(
                    "{} of the {} tests gold passes here not reported passed (first: {first})",
                    missing.len(),
                    e.tests.len()
                ));
            }
        }
        if let Check::Trailer(tag) = check {
            if output.lines().rev().find(|l| !l.trim().is_empty()).map(str::trim) != Some(tag.as_str()) {
                return Some("exit 0 but the test code did not run to its end".to_string());
            }
        }
        if parsed.tests.is_empty()
            && parsed.totals.is_none_or(|(p, f)| p + f == 0)
            && parser != parsers::Parser::ExitCode
        {
            Some("the runner reported no test of the dataset's (none ran)".to_string())
        } else if passed == 0 && parser != parsers::Parser::ExitCode {
            Some("no test passed".to_string())
        } else {
            None
        }
    });
    r.verdict = if reason.is_none() { Verdict::Resolved } else { Verdict::Unresolved };
    r.reason = reason;
    // A control reported passed (not skipped with the rest) is evidence of a forge attempt.
    if let Some(control::Outcome::Passed(n)) = control {
        if skipped == 0 {
            r.tampering.push(format!(
                "{}: {n} of them, which gold fails and an honest wrong answer passes only by coincidence",
                tamper::CONTROL_PASSED
            ));
        }
    }
}

/// A run whose runner built the solution without its tests first (`{alone}`) and could not:
/// the solution uses what only the test files declare (a Go table variable, a Java test
/// class), so it is no solution whatever the tests say. The reason, with the build's first
/// error line.
fn not_alone(rec: &Report, output: &str) -> Option<String> {
    use super::prepare::{ALONE_FAILED, ALONE_MARKER};
    if rec.exit_code != Some(ALONE_FAILED) || rec.signal.is_some() {
        return None;
    }
    let at = output.lines().position(|l| l.trim_end() == ALONE_MARKER)?;
    let lines: Vec<&str> = output.lines().take(at).collect();
    // The compiler's first error: go's `./x.go:3:5: undefined: y`, javac's `X.java:3: error: ...`.
    let first = lines
        .iter()
        .find(|l| l.contains("error") || l.contains("undefined") || l.contains(": cannot find symbol"))
        .or_else(|| lines.iter().rev().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().chars().take(200).collect::<String>());
    Some(format!(
        "the solution does not build without the test files (a solution must; one that uses what only the tests declare does not){}",
        first.map(|f| format!(": {f}")).unwrap_or_default()
    ))
}

/// `--strict`: a resolved prediction flagged for tampering is graded unresolved, with the
/// flags as the reason.
/// A flag no solution has a reason for (redeclaring Go's `false` or Rust's `Some`, which the
/// tests then use) grades it unresolved with or without `--strict`.
pub(crate) fn strict(o: &Options, r: &mut InstanceResult) {
    if r.verdict != Verdict::Resolved {
        return;
    }
    let decisive: Vec<&String> = r.tampering.iter().filter(|f| tamper::decisive(f)).collect();
    if !decisive.is_empty() {
        r.verdict = Verdict::Unresolved;
        r.reason = Some(format!(
            "the prediction does what no solution has a reason to (changes what the tests' own code means, reads files into its build, or hides code from every scan): {}",
            decisive.iter().map(|f| f.as_str()).collect::<Vec<_>>().join("; ")
        ));
    } else if o.strict && !r.tampering.is_empty() {
        r.verdict = Verdict::Unresolved;
        r.reason = Some(format!("--strict: the prediction reaches into the test run: {}", r.tampering.join("; ")));
    }
}

/// A repository driver stopped before the tests (nothing of the prediction's ran as code).
pub(crate) fn stopped_before_tests(
    r: &mut InstanceResult,
    stopped: driver::Stopped,
    record: Option<crate::sandbox::report::Report>,
) {
    if let Some(rec) = &record {
        r.exit_code = rec.exit_code;
        r.wall_s = rec.wall_time_s;
        r.cpu_s = rec.cpu_total_s;
        r.memory_peak_bytes = rec.memory_peak_bytes;
    }
    if let Some(rec) = record.as_ref().filter(|rec| ran_short(rec)) {
        r.mark_host_fault(format!(
            "the host ran short of {} while the patch was applied: rerun",
            rec.host_short.join(", ")
        ));
        return;
    }
    match stopped {
        driver::Stopped::ApplyFailed => {
            r.verdict = Verdict::PatchFailed;
            r.reason = Some("no attempt applied it (git apply, --3way, --reject, patch --fuzz=5)".into());
        }
        driver::Stopped::Refused(why) => {
            r.verdict = Verdict::PatchFailed;
            r.reason = Some(format!("prediction refused: {why}"));
        }
        driver::Stopped::TestPatchFailed => {
            r.verdict = Verdict::Error;
            r.reason = Some("the dataset's test files could not be put back, or its test_patch does not apply, after the prediction".into());
            r.deterministic = true;
            r.after_prediction = true;
        }
        driver::Stopped::Setup => {
            r.verdict = Verdict::Error;
            r.reason = Some("the sandbox's setup failed before the prediction was applied".into());
        }
        driver::Stopped::Other(code) => {
            r.verdict = Verdict::Error;
            r.reason = Some(format!("the sandbox stopped before the tests (exit {code:?})"));
        }
    }
}

#[cfg(test)]
mod tests {
    //! The verdict table, row by row: each test pins one row (what the run shows, and the
    //! verdict it gets), so that changing a row fails the test that states it.
    use super::*;
    use crate::eval::channel::Reports;
    use crate::eval::parsers::Parser;
    use crate::sandbox::report::Report;
    use serde_json::{json, Value};

    /// A usage record as `polysandbox run --stats-json` writes it (a real one), with changes.
    fn record(changes: Value) -> Report {
        let mut v = json!({
            "command": ["/bin/true"], "status": "exited", "exit_code": 0, "signal": null,
            "polysandbox_exit_code": 0, "wall_time_s": 0.027, "cpu_user_s": 0.002, "cpu_system_s": 0.0,
            "cpu_total_s": 0.002, "memory_peak_bytes": 2600960, "memory_peak_source": "cgroup v1 memory controller",
            "oom_killed": false, "timed_out": false, "cpu_time_exceeded": false, "output_limit_exceeded": false,
            "pids_limit_reached": false, "disk_limit_reached": false, "disk_used_bytes": 0, "layer_xattrs": true,
            "tasks_peak": null, "output_bytes": null, "limits": {}, "cgroup": "cgroup v1",
            "cgroup_unavailable": null, "rootless": false
        });
        for (k, x) in changes.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    /// pytest's closing summary naming `tests` (status, name), and its totals line.
    fn pytest_output(tests: &[(&str, &str)]) -> String {
        let mut s = "=========== short test summary info ===========\n".to_string();
        for (status, name) in tests {
            s += &format!("{status} {name}\n");
        }
        let failed = tests.iter().filter(|(s, _)| *s == "FAILED").count();
        s + &format!("=========== {failed} failed, {} passed in 0.01s ===========\n", tests.len() - failed)
    }

    struct Run<'a> {
        parser: Parser,
        lists: Option<(&'a [String], &'a [String])>,
        check: Check,
        cal: Option<calibration::Entry>,
        record: Option<Report>,
        output: String,
    }

    impl Default for Run<'_> {
        fn default() -> Self {
            Run {
                parser: Parser::Pytest,
                lists: None,
                check: Check::None,
                cal: None,
                record: Some(record(json!({}))),
                output: pytest_output(&[("PASSED", "t.py::test_a"), ("PASSED", "t.py::test_b")]),
            }
        }
    }

    fn grade_run(run: Run) -> InstanceResult {
        let inst = crate::eval::instance::Instance::for_tests("i");
        let mut r = InstanceResult::bare(&inst, "img", "key", Verdict::Error, None);
        let reports = Reports::default();
        let evidence = Evidence {
            parser: run.parser,
            lists: run.lists,
            check: &run.check,
            cal: run.cal.as_ref(),
            record: run.record,
            output: &run.output,
            reports: &reports,
        };
        grade(evidence, &mut r);
        r
    }

    fn verdict(run: Run) -> Verdict {
        grade_run(run).verdict
    }

    fn control(name: &str) -> Check {
        Check::Control(control::Control { names: vec![control::Matcher::suffix(name)], ..Default::default() })
    }

    fn cal(tests: &[&str], skipped: &[&str]) -> calibration::Entry {
        serde_json::from_value(json!({
            "image": "img", "gold_passes": true, "gold_verdicts": ["resolved"], "tests": tests,
            "flaky": [], "skipped": skipped, "wall_s_max": 1.0, "cpu_s_max": 1.0, "memory_peak_bytes_max": 0,
        }))
        .unwrap()
    }

    #[test]
    fn limits_and_interrupts_decide_before_the_tests() {
        let with = |changes: Value| Run { record: Some(record(changes)), ..Run::default() };
        assert_eq!(verdict(with(json!({"status": "timeout", "timed_out": true, "exit_code": null}))), Verdict::Timeout);
        let r = grade_run(with(json!({"status": "cpu_time", "cpu_time_exceeded": true, "exit_code": null})));
        assert_eq!((r.verdict, r.reason.as_deref()), (Verdict::Timeout, Some("cpu-time limit reached")));
        assert_eq!(verdict(with(json!({"status": "oom", "oom_killed": true, "exit_code": null}))), Verdict::Oom);
        assert_eq!(verdict(with(json!({"status": "interrupted", "exit_code": null}))), Verdict::Interrupted);
    }

    /// A run during which the host ran short of a budget it shares (another process took the
    /// file table: a correct solution's runner met ENFILE) is an error to rerun, whatever it
    /// printed or how it exited: never charged to the prediction, nor to gold in calibration.
    #[test]
    fn a_run_the_host_ran_short_under_is_an_error() {
        let with = |changes: Value| Run { record: Some(record(changes)), ..Run::default() };
        let short = json!(["the host's file table (fs.file-max)"]);
        for run in [
            json!({"status": "exited", "exit_code": 1, "host_short": short}),
            json!({"status": "exited", "exit_code": 0, "host_short": short}),
            json!({"status": "oom", "oom_killed": true, "exit_code": null, "host_short": short}),
            json!({"status": "timeout", "timed_out": true, "exit_code": null, "host_short": short}),
        ] {
            let r = grade_run(with(run.clone()));
            assert_eq!(r.verdict, Verdict::Error, "{run}");
            assert!(r.reason.as_deref().is_some_and(|w| w.contains("file table") && w.contains("rerun")), "{r:?}");
            assert!(r.host_fault, "{run}: a host fault, marked so (never arbitrated, never deterministic)");
        }
        // Interrupted is only that; a healthy run's error is no host fault.
        let r = grade_run(with(json!({"status": "interrupted", "exit_code": null, "host_short": short})));
        assert!(r.verdict == Verdict::Interrupted && !r.host_fault, "{r:?}");
        let r = grade_run(with(json!({"status": "not_started", "exit_code": null, "start_error": "exec: ENOENT"})));
        assert!(r.verdict == Verdict::Error && !r.host_fault, "{r:?}");
    }

    /// ENFILE is returned only at the host-wide fs.file-max: each runtime's way of printing it
    /// is found; EMFILE (a process's own limit) and words that merely contain it are not.
    #[test]
    fn the_host_file_table_full_is_read_in_every_runtimes_words() {
        for text in [
            "failed to set the Ctrl-C handler: Too many open files in system (os error 23)",
            "OSError: [Errno 23] Too many open files in system: '/tmp/x'",
            "Error: ENFILE: file table overflow, open '/tmp/jest_rs/haste-map'",
            "open /tmp/go-build123: too many open files in system",
            "java.io.FileNotFoundException: x (Too many open files in system)",
            "errno=ENFILE",
            "Os { code: 23, kind: Uncategorized, message: \"...\" } os error 23)",
        ] {
            assert!(shows_enfile(text), "{text}");
        }
        for text in [
            "Too many open files (os error 24)",
            "OSError: [Errno 24] Too many open files",
            "EMFILE: too many open files, open 'x'",
            "OPENFILE failed",
            "ENFILES",
            "os error 230",
            "",
        ] {
            assert!(!shows_enfile(text), "{text}");
        }
    }

    /// A correct solution whose runner met the host's file table full (rustc's Ctrl-C handler,
    /// jest's cache) did not resolve for the host: a host fault, rerun, never `unresolved`. A
    /// run that resolved anyway is what it is.
    #[test]
    fn a_failure_whose_output_shows_enfile_is_the_hosts() {
        let out = "thread 'main' panicked: failed to set Ctrl-C handler: Too many open files in system (os error 23)\n";
        let r = grade_run(Run {
            parser: Parser::Cargo,
            record: Some(record(json!({"exit_code": 101}))),
            output: out.into(),
            ..Run::default()
        });
        assert_eq!(r.verdict, Verdict::Error, "{r:?}");
        assert!(r.host_fault, "{r:?}");
        let why = r.reason.unwrap();
        assert!(why.contains("file table full") && why.contains("rerun") && why.contains("unresolved: "), "{why}");
        // The same words in a run that passed: resolved.
        let passing = pytest_output(&[("PASSED", "t.py::test_a")]) + "note: Too many open files in system\n";
        let r = grade_run(Run { output: passing, ..Run::default() });
        assert!(r.verdict == Verdict::Resolved && !r.host_fault, "{r:?}");
        // A timeout with ENFILE in its output: the host's too.
        let mut r = grade_run(Run::default());
        (r.verdict, r.reason) = (Verdict::Timeout, Some("wall-clock limit reached".into()));
        host_fault_in_output(&mut r, "Error: ENFILE: file table overflow");
        assert!(r.verdict == Verdict::Error && r.host_fault, "{r:?}");
        // A failure without it stays the prediction's.
        let r = grade_run(Run { record: Some(record(json!({"exit_code": 1}))), ..Run::default() });
        assert!(r.verdict == Verdict::Unresolved && !r.host_fault, "{r:?}");
    }

    /// A driver stopped before the tests (its patch did not apply) in a run the host ran short
    /// under: a host fault, not `patch_failed`.
    #[test]
    fn a_patch_that_did_not_apply_while_the_host_was_short_is_the_hosts() {
        let inst = crate::eval::instance::Instance::for_tests("i");
        let short = record(json!({"exit_code": 3, "host_short": ["the host's file table (fs.file-max)"]}));
        let mut r = InstanceResult::bare(&inst, "img", "key", Verdict::Error, None);
        stopped_before_tests(&mut r, driver::Stopped::ApplyFailed, Some(short));
        assert!(r.verdict == Verdict::Error && r.host_fault, "{r:?}");
        let mut r = InstanceResult::bare(&inst, "img", "key", Verdict::Error, None);
        stopped_before_tests(&mut r, driver::Stopped::ApplyFailed, Some(record(json!({"exit_code": 3}))));
        assert!(r.verdict == Verdict::PatchFailed && !r.host_fault, "{r:?}");
    }

    /// The runner built the solution alone first and could not (`{alone}`): unresolved with the
    /// compiler's line, whatever came before; the same marker from code that ran later, with
    /// another exit status, changes nothing.
    #[test]
    fn a_solution_that_does_not_build_alone_is_unresolved() {
        use crate::eval::prepare::{ALONE_FAILED, ALONE_MARKER};
        let out = format!("# sublist\n./sublist.go:19:21: undefined: testCases\n{ALONE_MARKER}\n");
        let run = |code: i32, output: String| Run {
            parser: Parser::Gotest,
            check: control("TestT"),
            record: Some(record(json!({"exit_code": code}))),
            output,
            ..Run::default()
        };
        let r = grade_run(run(ALONE_FAILED, out.clone()));
        assert_eq!(r.verdict, Verdict::Unresolved);
        let why = r.reason.unwrap();
        assert!(why.contains("does not build without the test files") && why.contains("undefined: testCases"), "{why}");
        let r = grade_run(run(1, out));
        assert!(!r.reason.unwrap_or_default().contains("does not build"));
    }

    #[test]
    fn the_sandbox_failing_is_an_error_never_the_predictions() {
        assert_eq!(verdict(Run { record: None, ..Run::default() }), Verdict::Error);
        let not_started = record(json!({"status": "not_started", "exit_code": null, "start_error": "exec: ENOENT",
            "polysandbox_exit_code": 127}));
        assert_eq!(verdict(Run { record: Some(not_started), ..Run::default() }), Verdict::Error);
        let failed = record(json!({"status": "error", "exit_code": null, "error_kind": "setup",
            "error": "mount refused", "polysandbox_exit_code": crate::sandbox::exit::ERROR}));
        assert_eq!(verdict(Run { record: Some(failed), ..Run::default() }), Verdict::Error);
        // A record that says the command exited but gives no exit status is not the command's.
        let torn = record(json!({"status": "exited", "exit_code": null, "polysandbox_exit_code": 125}));
        assert_eq!(verdict(Run { record: Some(torn), ..Run::default() }), Verdict::Error);
    }

    #[test]
    fn lists_grade_repository_runs_passed_and_xfail_pass() {
        let (f2p, p2p) = (vec!["t.py::test_a".to_string()], vec!["t.py::test_b".to_string()]);
        let out = |a: &str, b: &str| pytest_output(&[(a, "t.py::test_a"), (b, "t.py::test_b")]);
        let run = |output: String| Run { lists: Some((&f2p, &p2p)), output, ..Run::default() };
        assert_eq!(verdict(run(out("PASSED", "PASSED"))), Verdict::Resolved);
        assert_eq!(verdict(run(out("XFAIL", "PASSED"))), Verdict::Resolved);
        assert_eq!(verdict(run(out("FAILED", "PASSED"))), Verdict::Unresolved);
        assert_eq!(verdict(run(out("PASSED", "FAILED"))), Verdict::Unresolved);
        // A listed test the log does not name fails.
        let r = grade_run(run(pytest_output(&[("PASSED", "t.py::test_a")])));
        assert_eq!(r.verdict, Verdict::Unresolved);
        assert_eq!(r.pass_to_pass.unwrap().failure, p2p);
    }

    #[test]
    fn repository_results_must_be_whole_and_the_runners_own() {
        let (f2p, p2p) = (vec!["t.py::test_a".to_string()], vec!["t.py::test_b".to_string()]);
        let real = pytest_output(&[("FAILED", "t.py::test_a"), ("PASSED", "t.py::test_b")]);
        let forged = pytest_output(&[("PASSED", "t.py::test_a"), ("PASSED", "t.py::test_b")]);
        let run = |output: String, changes: Value| Run {
            lists: Some((&f2p, &p2p)),
            output,
            record: Some(record(changes)),
            ..Run::default()
        };
        let reason = |run: Run| {
            let r = grade_run(run);
            (r.verdict, r.reason.unwrap_or_default())
        };
        // A second summary after pytest's own (an atexit hook), the process made to exit 0.
        let (v, why) = reason(run(real.clone() + &forged, json!({})));
        assert_eq!(v, Verdict::Unresolved);
        assert!(why.contains("t.py::test_a is reported failed, then passed"), "{why}");
        // The same with pytest's exit status kept: caught either way.
        let (v, _) = reason(run(real.clone() + &forged, json!({"exit_code": 1, "polysandbox_exit_code": 1})));
        assert_eq!(v, Verdict::Unresolved);
        // pytest's own summary hidden, a forged one printed, and the failing exit status kept.
        let (v, why) = reason(run(forged.clone(), json!({"exit_code": 1, "polysandbox_exit_code": 1})));
        assert_eq!(v, Verdict::Unresolved);
        assert!(why.contains("exited 1 while their results report no failure"), "{why}");
        // A failing exit is the runner's when a test (any, listed or not) failed.
        let other =
            pytest_output(&[("PASSED", "t.py::test_a"), ("PASSED", "t.py::test_b"), ("FAILED", "t.py::test_c")]);
        assert_eq!(reason(run(other, json!({"exit_code": 1, "polysandbox_exit_code": 1}))).0, Verdict::Resolved);
        // Cut output, or a signal: the results are not whole.
        let cut = json!({"status": "output_limit", "output_limit_exceeded": true, "polysandbox_exit_code": 120});
        assert_eq!(reason(run(forged.clone(), cut)).0, Verdict::Unresolved);
        let killed = json!({"status": "signaled", "exit_code": null, "signal": 9, "polysandbox_exit_code": 137});
        assert_eq!(reason(run(forged.clone(), killed)).0, Verdict::Unresolved);
        // go test -json: a fail event, then a pass event printed for the same test.
        let (gf2p, gp2p) = (vec!["TestA".to_string()], vec![]);
        let events = [("fail", "TestA"), ("pass", "TestA")]
            .iter()
            .map(|(a, t)| format!("{{\"Action\":\"{a}\",\"Package\":\"p\",\"Test\":\"{t}\"}}\n"))
            .collect::<String>()
            + "{\"Action\":\"pass\",\"Package\":\"p\"}\n";
        let go = Run { parser: Parser::GotestJson, lists: Some((&gf2p, &gp2p)), output: events, ..Run::default() };
        let (v, why) = reason(go);
        assert_eq!(v, Verdict::Unresolved);
        assert!(why.contains("TestA is reported failed, then passed"), "{why}");
        // The plain case still resolves.
        assert_eq!(reason(run(forged, json!({}))).0, Verdict::Resolved);
    }

    #[test]
    fn exit_zero_alone_is_not_a_pass() {
        assert_eq!(verdict(Run::default()), Verdict::Resolved);
        let exit1 = Run { record: Some(record(json!({"exit_code": 1}))), ..Run::default() };
        assert_eq!(verdict(exit1), Verdict::Unresolved);
        // No summary: the run did not finish its tests.
        assert_eq!(verdict(Run { output: "PASSED t.py::test_a\n".into(), ..Run::default() }), Verdict::Unresolved);
        let failing = pytest_output(&[("PASSED", "t.py::test_a"), ("FAILED", "t.py::test_b")]);
        assert_eq!(verdict(Run { output: failing, ..Run::default() }), Verdict::Unresolved);
        let nothing = pytest_output(&[]);
        let r = grade_run(Run { output: nothing, ..Run::default() });
        assert_eq!(
            (r.verdict, r.reason.as_deref()),
            (Verdict::Unresolved, Some("the runner reported no test of the dataset's (none ran)"))
        );
        let cut = Run {
            record: Some(record(
                json!({"status": "output_limit", "output_limit_exceeded": true, "polysandbox_exit_code": 120}),
            )),
            ..Run::default()
        };
        assert_eq!(verdict(cut), Verdict::Unresolved);
        let signalled = Run {
            record: Some(record(
                json!({"status": "signaled", "exit_code": null, "signal": 9, "polysandbox_exit_code": 137}),
            )),
            ..Run::default()
        };
        assert_eq!(verdict(signalled), Verdict::Unresolved);
        // Snippets: the exit status is the result.
        assert_eq!(
            verdict(Run { parser: Parser::ExitCode, output: String::new(), ..Run::default() }),
            Verdict::Resolved
        );
    }

    #[test]
    fn skips_pass_only_where_declared_or_gold_skips_too() {
        // pytest names a skip by its place: "SKIPPED [1] t.py:9: why".
        let skipping = || pytest_output(&[("PASSED", "t.py::test_a"), ("SKIPPED", "[1] t.py:9: why")]);
        assert_eq!(verdict(Run { output: skipping(), ..Run::default() }), Verdict::Unresolved);
        let gold_skips = Some(cal(&["t.py::test_a"], &["skipped at t.py:9"]));
        assert_eq!(verdict(Run { output: skipping(), cal: gold_skips, ..Run::default() }), Verdict::Resolved);
    }

    #[test]
    fn every_test_gold_passes_must_be_reported_passed() {
        let c = Some(cal(&["t.py::test_a", "t.py::test_b", "t.py::test_c"], &[]));
        let r = grade_run(Run { cal: c, ..Run::default() });
        assert_eq!(r.verdict, Verdict::Unresolved);
        assert!(r.reason.unwrap().contains("1 of the 3 tests gold passes"));
        let c = Some(cal(&["t.py::test_a", "t.py::test_b"], &[]));
        assert_eq!(verdict(Run { cal: c, ..Run::default() }), Verdict::Resolved);
    }

    #[test]
    fn controls_must_be_reported_failed_with_a_failing_exit() {
        let held = pytest_output(&[("PASSED", "t.py::test_a"), ("FAILED", "t.py::test_ctl")]);
        let exit1 = || Some(record(json!({"exit_code": 1})));
        let run = |output: String, record: Option<Report>| Run {
            output,
            record,
            check: control("test_ctl"),
            ..Run::default()
        };
        assert_eq!(verdict(run(held.clone(), exit1())), Verdict::Resolved);
        // The control reported passed: forged, or a wrong answer meeting its changed expectation.
        let forged = pytest_output(&[("PASSED", "t.py::test_a"), ("PASSED", "t.py::test_ctl")]);
        assert_eq!(verdict(run(forged, Some(record(json!({}))))), Verdict::Unresolved);
        // Exit 0 although the control failed.
        assert_eq!(verdict(run(held, Some(record(json!({}))))), Verdict::Unresolved);
        // The summary does not name the control.
        assert_eq!(verdict(run(pytest_output(&[("PASSED", "t.py::test_a")]), exit1())), Verdict::Unresolved);
        // A real failure beside the control.
        let both = pytest_output(&[("FAILED", "t.py::test_a"), ("FAILED", "t.py::test_ctl")]);
        assert_eq!(verdict(run(both, exit1())), Verdict::Unresolved);
    }

    /// A control reported passed is a flag in the result beside the unresolved verdict; a real
    /// test that ran under a fresh name beside its controls is reported by its own name.
    #[test]
    fn a_control_that_passes_is_flagged_and_originals_get_their_names_back() {
        let check = || {
            Check::Control(control::Control {
                names: vec![control::Matcher::suffix("test_ctl")],
                renamed: vec![(control::Matcher::suffix("test_fresh"), "test_a".into())],
                ..Default::default()
            })
        };
        let run =
            |output: String, record: Report| Run { output, record: Some(record), check: check(), ..Run::default() };
        let held = pytest_output(&[("PASSED", "t.py::test_fresh"), ("FAILED", "t.py::test_ctl")]);
        let r = grade_run(run(held, record(json!({"exit_code": 1}))));
        assert_eq!(r.verdict, Verdict::Resolved, "{r:?}");
        assert!(r.tests.iter().any(|t| t.name == "t.py::test_a"), "{:?}", r.tests);
        assert!(!r.tests.iter().any(|t| t.name.contains("test_fresh")), "{:?}", r.tests);
        assert!(r.tampering.is_empty(), "{:?}", r.tampering);
        let forged = pytest_output(&[("PASSED", "t.py::test_fresh"), ("PASSED", "t.py::test_ctl")]);
        let r = grade_run(run(forged, record(json!({}))));
        assert_eq!(r.verdict, Verdict::Unresolved);
        assert!(r.tampering.iter().any(|f| f.starts_with(tamper::CONTROL_PASSED)), "{:?}", r.tampering);
    }

    #[test]
    fn a_snippet_must_run_to_its_trailer() {
        let run = |output: &str| Run {
            parser: Parser::ExitCode,
            check: Check::Trailer("tag-1".into()),
            output: output.into(),
            ..Run::default()
        };
        assert_eq!(verdict(run("ok\ntag-1\n")), Verdict::Resolved);
        assert_eq!(verdict(run("ok\n")), Verdict::Unresolved);
    }

    #[test]
    fn strict_and_decisive_flags_turn_resolved_into_unresolved() {
        let o = |strict: bool| Options { strict, ..Options::new("d".into(), "gold", "o".into(), "b".into()) };
        let flagged = |flag: &str| {
            let mut r = grade_run(Run::default());
            r.tampering = vec![flag.to_string()];
            r
        };
        let mut r = flagged("names polysandbox");
        strict(&o(false), &mut r);
        assert_eq!(r.verdict, Verdict::Resolved);
        strict(&o(true), &mut r);
        assert_eq!(r.verdict, Verdict::Unresolved);
        let mut r = flagged(&format!("{} false", tamper::REDECLARES_GO));
        strict(&o(false), &mut r);
        assert_eq!(r.verdict, Verdict::Unresolved);
    }
}
