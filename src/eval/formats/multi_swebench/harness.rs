//! Multi-SWE-bench as its harness runs it: the record's image, its fix run, its parser and its
//! grading, and its report files.
//!
//! What the harness does (multi_swe_bench/harness/, run_evaluation.py and gen_report.py), and
//! where it is done here:
//! - the definition: `Instance.create` picks the repository's class by `org/number_interval`,
//!   `org/repo_tag` or `org/repo` ([`key`]); its image chain, files, fix-run command and
//!   parser are carried as data in images/multi_swebench.json ([`definition`]), generated from
//!   its sources by rootfs/multi_swebench_table.py;
//! - the image: the instance image's full name, `mswebench/<org>_m_<repo>:pr-<number>` for most
//!   ([`image_name`]), built without Docker by `rootfs/build.sh multi-swe-bench` or pulled;
//! - the run: evaluation runs only the fix stage, `bash /home/fix-run.sh` (which `git apply`s
//!   /home/test.patch and /home/fix.patch, then runs the tests) with the prediction at
//!   /home/fix.patch ([`run_instance`], driver::multi_swebench); the prediction's sections for
//!   the test patch's files are left out first, so the tests run as the test patch makes them
//!   (the harness's fix-run.sh puts nothing back: a prediction that also edits them conflicts
//!   or wins there);
//! - grading: the fix run's log parsed by the repository's parser, compared with the record's
//!   `run_result` and `test_patch_result` as its `Report.check` does, then every p2p, f2p, s2p
//!   and n2p test of the record must be in the report's list of that kind ([`judge`]);
//! - reports: per instance `<org>/<repo>/evaluation/pr-<number>/{fix.patch, fix-patch-run.log,
//!   report.json}`, and `final_report.json` ([`write_final_report`]), under the output directory.
//!
//! Where polysandbox differs on purpose: a fix-run log whose parse puts one test in two sets
//! (the harness's `TestResult` raises, and the instance becomes an `error_ids` entry, left out
//! of resolved and unresolved alike) is graded unresolved here, since a prediction can print
//! such lines; a prediction `git apply` refuses is `patch_failed` (unresolved in
//! final_report.json, as the harness has it); with the gold patch every test's status is
//! compared with the record's `fix_patch_result` and any difference named.

use crate::eval::catalogue::Runner;
use crate::eval::child::{job_command, run_sandbox, Job};
use crate::eval::instance::{Instance, Kind, MultiRecord, Prediction};
use crate::eval::names::name;
use crate::eval::parsers::{MsbParser, Sets, Status, TestResult};
use crate::eval::predictions::Predictions;
use crate::eval::result::RecordCheck;
use crate::eval::{Grade, InstanceResult, Options, Verdict};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

/// The per-instance time limit unless `--timeout` says otherwise (the harness has none).
pub const DEFAULT_TIMEOUT_S: u64 = 1800;

/// The harness's per-repository definitions, embedded.
static TABLE: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../../../images/multi_swebench.json")).expect("images/multi_swebench.json")
});

/// The harness's registry key for a record (`Instance.create`).
pub fn key(rec: &MultiRecord) -> String {
    if !rec.number_interval.is_empty() {
        format!("{}/{}", rec.org, rec.number_interval)
    } else if !rec.tag.is_empty() {
        format!("{}/{}_{}", rec.org, rec.name, rec.tag.replace('.', "_"))
    } else {
        format!("{}/{}", rec.org, rec.name)
    }
}

/// The record's definition in the table, if the harness has one.
pub fn definition(rec: &MultiRecord) -> Option<&'static Value> {
    TABLE["instances"].get(key(rec))
}

/// The commit of the harness's sources the table was made from.
pub fn table_commit() -> &'static str {
    TABLE["source"]["commit"].as_str().unwrap_or("?")
}

/// A text of the table with the record's values for its placeholders.
fn fill(text: &str, rec: &MultiRecord, base_sha: &str) -> String {
    text.replace("@@ORG@@", &rec.org)
        .replace("@@REPO@@", &rec.name)
        .replace("@@NUMBER@@", &rec.number.to_string())
        .replace("@@BASE_SHA@@", base_sha)
        .replace("@@BASE_REF@@", &rec.base_ref)
        .replace("@@BASE_LABEL@@", &rec.base_label)
}

/// The instance image's full name as the harness gives it (its `image_name()` lowercased,
/// then the tag): the table's last image, or `mswebench/<org>_m_<repo>:pr-<number>`.
pub fn image_name(rec: &MultiRecord) -> String {
    let last = definition(rec).and_then(|d| d["images"].as_array()).and_then(|a| a.last());
    match last.and_then(|i| Some((i["name"].as_str()?, i["tag"].as_str()?))) {
        Some((n, t)) => format!("{}:{}", fill(n, rec, "").to_lowercase(), fill(t, rec, "")),
        None => format!("mswebench/{}_m_{}:pr-{}", rec.org, rec.name, rec.number).to_lowercase(),
    }
}

/// The record's parser: the one its definition's family is carried over as, or why none is.
pub fn parser(rec: &MultiRecord) -> Result<MsbParser, String> {
    let k = key(rec);
    let Some(d) = definition(rec) else {
        return Err(format!(
            "{k}: the harness defines no instance so (images/multi_swebench.json, from multi-swe-bench {})",
            &table_commit()[..table_commit().len().min(12)]
        ));
    };
    match d["parser"].as_str() {
        Some(n) => MsbParser::by_name(n).ok_or_else(|| format!("{k}: parser {n:?}: not one this build has")),
        None => Err(format!(
            "{k}: its parse_log (family {}, {}) is not carried over to polysandbox yet",
            d["parser_family"].as_str().unwrap_or("?"),
            d["module"].as_str().unwrap_or("?")
        )),
    }
}

/// The fix run's command (`bash /home/fix-run.sh` for most).
pub fn fix_run(rec: &MultiRecord) -> String {
    definition(rec).and_then(|d| d["fix_run"].as_str()).unwrap_or("bash /home/fix-run.sh").to_string()
}

/// Where the harness's scripts work: `/home/<repo>`.
pub fn workdir(rec: &MultiRecord) -> String {
    format!("/home/{}", rec.name)
}

/// The harness's id of an instance: `org/repo:pr-number`.
pub fn report_id(rec: &MultiRecord) -> String {
    format!("{}/{}:pr-{}", rec.org, rec.name, rec.number)
}

/// The catalogue's runner for a Multi-SWE-bench instance: its limits, a probe that asks only
/// for the repository's tree in the image, and none of the toolchain image's environment.
pub fn runner(mut r: Runner, rec: &MultiRecord) -> Runner {
    r.probe =
        vec!["/bin/sh".into(), "-c".into(), format!("test -d {}", crate::eval::prepare::shell_quote(&workdir(rec)))];
    r.env.clear();
    r.setup.clear();
    r
}

/// The harness's per-instance directory: `<org>/<repo>/evaluation/pr-<number>` under the
/// output directory, each a safe name (names.rs).
pub fn instance_dir(o: &Options, rec: &MultiRecord) -> PathBuf {
    o.output.join(name(&rec.org)).join(name(&rec.name)).join("evaluation").join(format!("pr-{}", rec.number))
}

/// A patch that changes nothing the tests read: what the fix run applies for `stub` (no
/// patch), since its `git apply` refuses an empty one.
pub const NO_CHANGE: &str =
    "diff --git a/.polysandbox-no-patch b/.polysandbox-no-patch\nnew file mode 100644\nindex 0000000..e69de29\n";

/// One test's statuses in the three runs, as the harness's `Test`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stages {
    pub run: &'static str,
    pub test: &'static str,
    pub fix: &'static str,
}

/// The harness's judgement of a fix run: its `Report.check` and `gen_eval_reports`.
#[derive(Debug, Default)]
pub struct Judged {
    pub valid: bool,
    /// Why not valid (the harness's `error_msg`, or the missing test of a kind).
    pub error: String,
    /// Whether `Report.check` passed (the report's own validity, before the record's lists).
    pub report_valid: bool,
    pub tests: BTreeMap<String, Stages>,
    pub fixed: Vec<String>,
    pub p2p: Vec<String>,
    pub f2p: Vec<String>,
    pub s2p: Vec<String>,
    pub n2p: Vec<String>,
}

/// Grades a fix run's results as the harness does in evaluation mode.
pub fn judge(run: &Sets, test: &Sets, fix: &Sets, rec: &MultiRecord) -> Judged {
    let mut j = Judged::default();
    let all: std::collections::BTreeSet<&String> =
        run.names().into_iter().chain(test.names()).chain(fix.names()).collect();
    for n in all {
        j.tests.insert(n.clone(), Stages { run: run.status(n), test: test.status(n), fix: fix.status(n) });
    }
    let short = format!(
        "run = ({}, {}, {}), test = ({}, {}, {}), fix = ({}, {}, {})",
        run.passed.len(),
        run.failed.len(),
        run.skipped.len(),
        test.passed.len(),
        test.failed.len(),
        test.skipped.len(),
        fix.passed.len(),
        fix.failed.len(),
        fix.skipped.len()
    );
    let invalid = |mut j: Judged, why: String| {
        j.error = why;
        j
    };
    if fix.names().is_empty() {
        return invalid(
            j,
            format!(
                "After applying the fix patch, no test results were captured when executing the test command ({short})"
            ),
        );
    }
    if let Some((n, _)) = j.tests.iter().find(|(_, t)| t.test == "PASS" && t.fix == "FAIL") {
        let n = n.clone();
        return invalid(j, format!("Before applying the fix patch, the test passed; however, after applying the fix patch, the test failed ({short}): `{n}`"));
    }
    j.fixed = j.tests.iter().filter(|(_, t)| t.test != "PASS" && t.fix == "PASS").map(|(n, _)| n.clone()).collect();
    if j.fixed.is_empty() {
        return invalid(
            j,
            format!("After applying the fix patch, no test cases transitioned from failed to passed ({short})"),
        );
    }
    if let Some((n, _)) =
        j.tests.iter().find(|(_, t)| matches!(t.test, "NONE" | "SKIP") && t.fix == "FAIL" && t.run == "PASS")
    {
        let n = n.clone();
        return invalid(j, format!("By comparing the test results before and after applying the fix patch, an anomalous pattern was detected ({short}): `{n}`"));
    }
    for (n, t) in &j.tests {
        let into = match (t.test, t.fix) {
            ("PASS", "PASS") => &mut j.p2p,
            ("FAIL", "PASS") => &mut j.f2p,
            ("SKIP", "PASS") => &mut j.s2p,
            ("NONE", "PASS") => &mut j.n2p,
            _ => continue,
        };
        into.push(n.clone());
    }
    j.report_valid = true;
    let missing =
        [("p2p", &rec.p2p, &j.p2p), ("f2p", &rec.f2p, &j.f2p), ("s2p", &rec.s2p, &j.s2p), ("n2p", &rec.n2p, &j.n2p)]
            .into_iter()
            .find_map(|(kind, wanted, have)| {
                wanted.iter().find(|w| !have.contains(w)).map(|m| format!("Invalid {kind}_tests: missing {m}"))
            });
    if let Some(why) = missing {
        return invalid(j, why);
    }
    j.valid = true;
    j
}

/// Where a fix run's per-test statuses differ from the record's `fix_patch_result`: every
/// test the record names, with its status here; and the tests only this run reports (which
/// the harness's rules cannot turn against a prediction: a test absent from the record's runs
/// is NONE there, and NONE to FAIL with NONE at the base is none of its failures).
pub fn against_record(fix: &Sets, recorded: &Sets) -> RecordCheck {
    let named = recorded.names();
    let differ = named
        .iter()
        .filter(|n| fix.status(n) != recorded.status(n))
        .map(|n| format!("{n}: the record has {}, this run {}", recorded.status(n), fix.status(n)))
        .collect();
    let extra: Vec<&String> = fix.names().into_iter().filter(|n| !named.contains(n)).collect();
    RecordCheck {
        tests: named.len(),
        differ,
        extra: extra.len(),
        extra_names: extra.iter().take(10).map(|n| n.to_string()).collect(),
    }
}

/// The harness's report.json for an instance.
fn instance_report(rec: &MultiRecord, j: &Judged, fix: &Sets) -> Value {
    let tests = |names: &[String]| -> Value {
        names
            .iter()
            .map(|n| {
                let t = j.tests[n];
                (n.clone(), json!({"run": t.run, "test": t.test, "fix": t.fix}))
            })
            .collect::<serde_json::Map<String, Value>>()
            .into()
    };
    json!({
        "org": rec.org, "repo": rec.name, "number": rec.number,
        "valid": j.report_valid, "error_msg": if j.report_valid { "" } else { j.error.as_str() },
        "fixed_tests": tests(&j.fixed), "p2p_tests": tests(&j.p2p), "f2p_tests": tests(&j.f2p),
        "s2p_tests": tests(&j.s2p), "n2p_tests": tests(&j.n2p),
        "run_result": rec.run_result.to_json(), "test_patch_result": rec.test_patch_result.to_json(),
        "fix_patch_result": fix.to_json(),
    })
}

pub(crate) fn run_instance(
    o: &Options,
    job: &Job,
    scratch: &Path,
    logs: &Path,
    children: &Mutex<HashSet<u32>>,
) -> InstanceResult {
    let mut changed = Vec::new();
    let mut r = run_once(o, job, scratch, logs, children, !job.gold_check, &mut changed);
    if changed.is_empty() || r.verdict != Verdict::Resolved || job.pred == Prediction::Gold {
        return r;
    }
    // The test patch's files ended otherwise than the test patch made them, and the run is
    // resolved: the code under test may have rewritten its tests while they ran (dayjs runs
    // jest five times: a first run's import of the fix can cut a test out of the file the last
    // run reads). The fix run's own build may also rewrite them (a formatter): whether gold's
    // run leaves each the same way decides.
    let mut gold = job.clone();
    gold.pred = Prediction::Gold;
    let (gs, gl) = (scratch.with_extension("gold"), logs.join("gold-check"));
    let _ = std::fs::create_dir_all(&gl);
    let mut gold_changed = Vec::new();
    let g = run_once(o, &gold, &gs, &gl, children, false, &mut gold_changed);
    let _ = std::fs::remove_dir_all(&gs);
    let ours: Vec<&Changed> = changed.iter().filter(|c| !gold_changed.contains(c)).collect();
    if ours.is_empty() {
        return r;
    }
    let names: Vec<String> = ours.iter().map(|c| c.path.clone()).collect();
    r.verdict = Verdict::Unresolved;
    r.reason = Some(format!(
        "the test patch's files changed while the tests ran, and gold's run ({}) leaves them as the test patch makes them: {}",
        g.verdict.name(),
        names.join(", ")
    ));
    r
}

/// A file of the test patch that a fix run left otherwise than the driver said it may be: its
/// path and what the init read there at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Changed {
    pub path: String,
    pub found: String,
}

/// The files of `tests` that `after` (the init's digests, in the same order) shows otherwise
/// than `expected` (the driver's, by index) allows.
pub fn changed_test_files(
    tests: &[String],
    expected: &BTreeMap<usize, Vec<String>>,
    after: &[crate::sandbox::report::DigestAfter],
) -> Vec<Changed> {
    tests
        .iter()
        .enumerate()
        .filter_map(|(i, path)| {
            let allowed = expected.get(&i)?;
            let d = after.get(i)?;
            let found = match (&d.sha256, d.error.as_deref()) {
                (Some(h), _) => h.clone(),
                (None, Some(e)) => e.to_string(),
                (None, None) => return None,
            };
            (!allowed.contains(&found)).then(|| Changed { path: path.clone(), found })
        })
        .collect()
}

/// One run of the instance: its result, and the test patch's files the run left changed.
/// `harness_files`: write the harness's per-instance files (not for gold's check run).
fn run_once(
    o: &Options,
    job: &Job,
    scratch: &Path,
    logs: &Path,
    children: &Mutex<HashSet<u32>>,
    harness_files: bool,
    changed: &mut Vec<Changed>,
) -> InstanceResult {
    let inst = &job.inst;
    let mut r = InstanceResult::bare(inst, &job.image, &job.key, Verdict::Error, None);
    r.image_digest = job.image_digest.clone();
    let Kind::Repo { gold_patch, test_patch, multi: Some(rec), .. } = &inst.kind else {
        r.reason = Some("not a Multi-SWE-bench instance".into());
        return r;
    };
    let fail = |mut r: InstanceResult, why: String| {
        r.reason = Some(why);
        r.deterministic = true;
        r
    };
    let parser = match parser(rec) {
        Ok(p) => p,
        Err(why) => return fail(r, why),
    };
    let patch = match &job.pred {
        Prediction::Gold => gold_patch.clone(),
        Prediction::Patch(p) => p.clone(),
        Prediction::Stub => String::new(),
        Prediction::Missing => {
            r.verdict = Verdict::EmptyPatch;
            return r;
        }
        Prediction::Refused(why) => {
            r.verdict = Verdict::PatchFailed;
            r.reason = Some(format!("prediction refused: {why}"));
            return r;
        }
        Prediction::Files(_) | Prediction::Code(_) => {
            r.verdict = Verdict::PatchFailed;
            r.reason = Some("not a patch: Multi-SWE-bench instances take a fix_patch (or model_patch)".into());
            return r;
        }
    };
    if patch.trim().is_empty() && job.pred != Prediction::Stub {
        r.verdict = Verdict::EmptyPatch;
        return r;
    }
    if let Err(why) = crate::eval::patch::refuse_git_dir(&patch) {
        r.verdict = Verdict::PatchFailed;
        r.reason = Some(format!("prediction refused: {why}"));
        return r;
    }
    // The test patch's files are the test patch's: the prediction's sections for them are
    // left out (named in the log).
    let tests = crate::eval::patch::test_patch_paths(test_patch);
    let (fix_patch, undone) = crate::eval::patch::without_files(&patch, &tests);
    if fix_patch.trim().is_empty() && job.pred != Prediction::Stub {
        r.verdict = Verdict::EmptyPatch;
        r.reason = Some(format!(
            "the prediction changes only the test patch's files ({}): nothing of it is run",
            undone.join(", ")
        ));
        return r;
    }
    let fix_patch = if job.pred == Prediction::Stub { NO_CHANGE.to_string() } else { fix_patch };
    // The check run for gold writes none of the harness's files (the prediction's are there).
    let hdir = harness_files.then(|| instance_dir(o, rec));
    if let Some(h) = &hdir {
        let _ = std::fs::remove_dir_all(h);
    }
    let input = scratch.join("in");
    let nonce = crate::eval::driver::nonce();
    let mut digest_paths = Vec::new();
    for t in &tests {
        digest_paths.extend_from_slice(t.as_bytes());
        digest_paths.push(0);
    }
    let setup = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(&input)?;
        std::fs::write(input.join("fix.patch"), &fix_patch)?;
        std::fs::write(input.join("test.patch"), test_patch)?;
        std::fs::write(input.join("fix_run"), fix_run(rec))?;
        std::fs::write(input.join("digest_paths"), &digest_paths)?;
        std::fs::write(input.join("run.sh"), crate::eval::driver::multi_swebench(&nonce, &workdir(rec)))?;
        std::fs::create_dir_all(input.join("bin"))?;
        std::fs::write(input.join("bin/git"), crate::eval::driver::GIT_WRAPPER)?;
        std::fs::set_permissions(input.join("bin/git"), std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        if let Some(h) = &hdir {
            std::fs::create_dir_all(h)?;
            std::fs::write(h.join("fix.patch"), &patch)?;
        }
        Ok(())
    })();
    if let Err(e) = setup {
        // The prediction is written here too: the host's, unless a patch large enough to fill
        // the disk (gold's check decides: after_prediction).
        r.host_write_failed(scratch.display().to_string(), &e, patch.len());
        return r;
    }
    let mut cmd = job_command(o, job, logs, "64M", "usage.json");
    cmd.arg("-v").arg(format!("{}:/polysandbox-in:ro", input.display())).arg("-w").arg(workdir(rec));
    for t in &tests {
        let at = format!("{}/{t}", workdir(rec));
        cmd.arg("--digest-after").arg(&at).arg("--protect").arg(&at);
    }
    crate::eval::child::image_then(&mut cmd, &job.image).args(["/bin/bash", "/polysandbox-in/run.sh"]);
    let (output, record) = match run_sandbox(o, cmd, &logs.join("output.txt"), None, &logs.join("usage.json"), children)
    {
        Ok(x) => (x.stderr, x.record),
        Err(e) => {
            r.reason = Some(e);
            return r;
        }
    };
    let sep = format!("{}\n", crate::eval::driver::separator(&nonce));
    // The separator is a line of its own (the first, or after a newline).
    let at = if output.starts_with(&sep) { Some(0) } else { output.find(&format!("\n{sep}")).map(|i| i + 1) };
    let (before, fix_log) = match at {
        Some(i) => (&output[..i], Some(&output[i + sep.len()..])),
        None => (output.as_str(), None),
    };
    if fix_log.is_some() {
        let after = record.as_ref().map(|u| u.digests_after.as_slice()).unwrap_or_default();
        *changed = changed_test_files(&tests, &crate::eval::driver::expected_digests(before), after);
    }
    let report = grade(&mut r, record, before, fix_log, parser, rec, job, &nonce);
    // A failure whose log shows the host's file table full is the host's (verdict.rs).
    crate::eval::verdict::host_fault_in_output(&mut r, &output);
    // What the prediction changes that reaches into the test run (flags; `--strict` refuses
    // them), as for SWE-bench.
    for flag in crate::eval::tamper::scan_patch(&fix_patch) {
        if !r.tampering.contains(&flag) {
            r.tampering.push(flag);
        }
    }
    // Code that names a test patch's file may mean to rewrite it while the tests run: the files
    // are protected (GIT_WRAPPER, --protect) and checked after the run (run_instance), and
    // naming one in the clear is flagged too.
    for flag in names_test_files(&fix_patch, &tests) {
        if !r.tampering.contains(&flag) {
            r.tampering.push(flag);
        }
    }
    crate::eval::verdict::strict(o, &mut r);
    if !undone.is_empty() && r.reason.is_none() {
        r.reason = Some(format!("the prediction's changes to the test patch's files left out: {}", undone.join(", ")));
    }
    if let Some(hdir) = &hdir {
        let _ = std::fs::write(hdir.join("fix-patch-run.log"), fix_log.unwrap_or(""));
        if let Some(report) = &report {
            let _ = std::fs::write(hdir.join("report.json"), serde_json::to_string_pretty(report).unwrap() + "\n");
        }
        let _ = std::fs::copy(logs.join("usage.json"), hdir.join("usage.json"));
    }
    let _ = std::fs::write(logs.join("patch.diff"), &patch);
    r
}

/// Grades one fix run into `r`: the verdict, measurements and tests; the harness's report.json
/// when the fix run's log was graded.
#[allow(clippy::too_many_arguments)]
fn grade(
    r: &mut InstanceResult,
    record: Option<crate::sandbox::report::Report>,
    before: &str,
    fix_log: Option<&str>,
    parser: MsbParser,
    rec: &MultiRecord,
    job: &Job,
    nonce: &str,
) -> Option<Value> {
    use crate::eval::driver::Stopped;
    let Some(usage) = record else {
        r.reason = Some("the sandbox left no usage record".into());
        return None;
    };
    crate::eval::verdict::take_measurements(r, &usage);
    if let Some((verdict, reason)) = crate::eval::verdict::ended_early(&usage) {
        r.host_fault = crate::eval::verdict::ran_short(&usage);
        r.reason = match verdict {
            Verdict::Timeout => reason.map(|why| format!("{why} ({})", job.timeout)),
            _ => reason,
        };
        r.verdict = verdict;
        return None;
    }
    let Some(fix_log) = fix_log else {
        match crate::eval::driver::before_tests(before, usage.exit_code, nonce) {
            Some(Stopped::ApplyFailed) => {
                r.verdict = Verdict::PatchFailed;
                r.reason = Some("git apply refuses it with the test patch, as the fix run would".into());
            }
            Some(Stopped::TestPatchFailed) => {
                r.reason = Some("the record's test patch does not apply in the image".into());
                r.deterministic = true;
            }
            Some(Stopped::Refused(why)) => {
                r.verdict = Verdict::Unresolved;
                r.reason = Some(why);
            }
            Some(Stopped::Setup) => {
                r.reason = Some(
                    before.lines().rev().find(|l| l.starts_with("polysandbox: ")).unwrap_or("setup failed").to_string(),
                );
                r.deterministic = true;
            }
            _ => {
                // Killed, or an exit the driver does not make, with the prediction in the
                // sandbox (git reading a huge patch): whose it is, gold decides (the scheduler
                // runs it: after_prediction).
                r.reason = Some(format!("the sandbox stopped before the fix run (exit {:?})", usage.exit_code));
                r.after_prediction = true;
            }
        }
        return None;
    };
    if usage.output_limit_exceeded {
        r.verdict = Verdict::Unresolved;
        r.reason = Some("output limit reached: the log was cut short".into());
        return None;
    }
    let fix = match parser.parse(fix_log) {
        Ok(s) => s,
        Err(why) => {
            r.verdict = Verdict::Unresolved;
            r.reason = Some(format!("the fix run's log does not parse ({why}): the harness's report fails on it"));
            return None;
        }
    };
    r.tests = fix
        .passed
        .iter()
        .map(|n| (n, Status::Passed))
        .chain(fix.failed.iter().map(|n| (n, Status::Failed)))
        .chain(fix.skipped.iter().map(|n| (n, Status::Skipped)))
        .map(|(n, s)| TestResult { name: n.clone(), status: s, duration_s: None, usage: None })
        .collect();
    if job.pred == Prediction::Gold {
        if let Some(recorded) = &rec.fix_patch_result {
            r.record_check = Some(against_record(&fix, recorded));
        }
    }
    if let Some((n, a, b)) = fix.conflict() {
        r.verdict = Verdict::Unresolved;
        r.reason = Some(format!(
            "the fix run's log reports {n} both {a} and {b}: not the runner's alone (the harness's report fails on it)"
        ));
        return None;
    }
    if parser == MsbParser::JestSuites {
        if let Some(why) = crate::eval::parsers::jest::msb_contradiction(fix_log) {
            r.verdict = Verdict::Unresolved;
            r.reason = Some(format!("the fix run's log reports {why}: not the runner's alone"));
            return None;
        }
    }
    // No result at all, and the log shows the image lacking what the run needs (the network,
    // a crate it does not hold): the environment's failure, not a verdict on the prediction,
    // unless gold gets further here (the scheduler runs it to decide: after_prediction).
    if let Some(cause) = environment_failure(&fix, fix_log) {
        r.verdict = Verdict::Error;
        r.reason = Some(format!("the image lacks what the fix run needs: {cause}"));
        r.after_prediction = true;
        return None;
    }
    let j = judge(&rec.run_result, &rec.test_patch_result, &fix, rec);
    let status = |n: &String| fix.status(n) == "PASS";
    let grade_of = |names: Vec<&String>| {
        let (ok, bad): (Vec<&String>, Vec<&String>) = names.into_iter().partition(|n| status(n));
        Grade { success: ok.into_iter().cloned().collect(), failure: bad.into_iter().cloned().collect() }
    };
    r.fail_to_pass = Some(grade_of(rec.f2p.iter().collect()));
    r.pass_to_pass = Some(grade_of(rec.p2p.iter().chain(&rec.s2p).chain(&rec.n2p).collect()));
    r.verdict = if j.valid { Verdict::Resolved } else { Verdict::Unresolved };
    if !j.valid {
        r.reason = Some(j.error.clone());
    }
    // The harness reads only the log. A fix run that failed while its log reports no failed
    // test is what a forger who stops the real tests leaves (a test binary of its own that
    // prints the record's tests as passing, then exits non-zero, so cargo runs no other): a
    // flag, which `--strict` grades unresolved.
    if j.valid && fix.failed.is_empty() && usage.exit_code.is_some_and(|c| c != 0) {
        r.tampering.push(format!(
            "the fix run exited {} while its log reports no failed test",
            usage.exit_code.unwrap_or_default()
        ));
    }
    Some(instance_report(rec, &j, &fix))
}

/// Flags for the lines a patch adds that name one of the test patch's files (its file name, as
/// code that opens it would write it).
pub fn names_test_files(patch: &str, tests: &[String]) -> Vec<String> {
    let added: String =
        patch.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).collect::<Vec<_>>().join("\n");
    tests
        .iter()
        .filter(|t| added.contains(t.rsplit('/').next().unwrap_or(t)))
        .map(|t| format!("names a file of the test patch, which code can rewrite while the tests run: {t}"))
        .collect()
}

/// Why a fix run with no test result at all is the environment's failure, when its log says
/// so: the network it lacks, a crate it does not hold.
pub fn environment_failure(fix: &Sets, log: &str) -> Option<String> {
    if !fix.names().is_empty() {
        return None;
    }
    crate::eval::calibration::cause_in(log)
        .filter(|c| c.starts_with("network needed") || c.starts_with("missing crate"))
}

/// The harness's `final_report.json` (its `FinalReport`), in the output directory: how the
/// selected Multi-SWE-bench instances fared, by its ids (`org/repo:pr-number`). Resolved and
/// unresolved are its completed instances (a prediction that does not apply, a timeout, an
/// OOM: unresolved, as its invalid reports are); `error` instances are its failed tasks;
/// empty and missing patches are its empty_patch ones.
pub fn write_final_report(
    o: &Options,
    preds: &Predictions,
    insts: &[Instance],
    results: &[InstanceResult],
) -> Result<PathBuf, String> {
    let by_id: std::collections::HashMap<&str, &InstanceResult> =
        results.iter().map(|r| (r.instance_id.as_str(), r)).collect();
    let _ = preds;
    let (mut submitted, mut completed, mut incomplete, mut resolved, mut unresolved, mut empty, mut errors) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for inst in insts {
        let hid = match &inst.kind {
            Kind::Repo { multi: Some(rec), .. } => report_id(rec),
            _ => inst.id.clone(),
        };
        match by_id.get(inst.id.as_str()).map(|r| r.verdict) {
            Some(Verdict::Resolved) => {
                submitted.push(hid.clone());
                completed.push(hid.clone());
                resolved.push(hid);
            }
            Some(Verdict::Unresolved | Verdict::PatchFailed | Verdict::Timeout | Verdict::Oom) => {
                submitted.push(hid.clone());
                completed.push(hid.clone());
                unresolved.push(hid);
            }
            Some(Verdict::EmptyPatch | Verdict::NoPrediction) => empty.push(hid),
            Some(Verdict::Error) => {
                submitted.push(hid.clone());
                incomplete.push(hid.clone());
                errors.push(hid);
            }
            Some(Verdict::Interrupted) | None => incomplete.push(hid),
        }
    }
    let report = json!({
        "total_instances": insts.len(),
        "submitted_instances": submitted.len(),
        "completed_instances": completed.len(),
        "incomplete_instances": incomplete.len(),
        "resolved_instances": resolved.len(),
        "unresolved_instances": unresolved.len(),
        "empty_patch_instances": empty.len(),
        "error_instances": errors.len(),
        "submitted_ids": submitted,
        "completed_ids": completed,
        "incomplete_ids": incomplete,
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "empty_patch_ids": empty,
        "error_ids": errors,
    });
    let path = o.output.join("final_report.json");
    let text = serde_json::to_string_pretty(&report).unwrap() + "\n";
    crate::sys::beneath::write_new(&path, text.as_bytes(), 0o644)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(p: &[&str], f: &[&str], s: &[&str]) -> Sets {
        let v = |x: &[&str]| x.iter().map(|n| n.to_string()).collect();
        Sets { passed: v(p), failed: v(f), skipped: v(s) }
    }

    fn record(f2p: &[&str], p2p: &[&str], n2p: &[&str]) -> MultiRecord {
        let v = |x: &[&str]| x.iter().map(|n| n.to_string()).collect();
        MultiRecord {
            org: "Org".into(),
            name: "Repo".into(),
            number: 7,
            number_interval: String::new(),
            tag: String::new(),
            base_ref: "main".into(),
            base_label: "Org:main".into(),
            f2p: v(f2p),
            p2p: v(p2p),
            s2p: vec![],
            n2p: v(n2p),
            run_result: sets(&["a", "b"], &[], &[]),
            test_patch_result: sets(&["a"], &["b"], &[]),
            fix_patch_result: None,
        }
    }

    /// Its `Report.check` and `gen_eval_reports`, rule by rule.
    #[test]
    fn graded_as_the_harness_grades_in_evaluation_mode() {
        let rec = record(&["b"], &["a"], &["c"]);
        let (run, test) = (rec.run_result.clone(), rec.test_patch_result.clone());
        let j = judge(&run, &test, &sets(&["a", "b", "c"], &[], &[]), &rec);
        assert!(j.valid, "{}", j.error);
        assert_eq!(
            (j.f2p.clone(), j.p2p.clone(), j.n2p.clone(), j.fixed.len()),
            (vec!["b".to_string()], vec!["a".to_string()], vec!["c".to_string()], 2)
        );
        // 1. No results at all.
        let j = judge(&run, &test, &sets(&[], &[], &[]), &rec);
        assert!(
            !j.valid && !j.report_valid && j.error.starts_with("After applying the fix patch, no test results"),
            "{}",
            j.error
        );
        // 2. A test that passed with the test patch fails with the fix.
        let j = judge(&run, &test, &sets(&["b", "c"], &["a"], &[]), &rec);
        assert!(
            j.error.starts_with("Before applying the fix patch, the test passed") && j.error.ends_with("`a`"),
            "{}",
            j.error
        );
        // 3. Nothing goes to pass.
        let j = judge(&run, &test, &sets(&["a"], &["b"], &[]), &rec);
        assert!(j.error.starts_with("After applying the fix patch, no test cases transitioned"), "{}", j.error);
        // 4. A test that ran, then was absent with the test patch, fails with the fix.
        let mut test2 = test.clone();
        test2.passed.clear();
        let j = judge(&run, &test2, &sets(&["b"], &["a"], &[]), &rec);
        assert!(j.error.starts_with("By comparing the test results"), "{}", j.error);
        // The record's lists: a test of one missing from the report's list of that kind.
        let j = judge(&run, &test, &sets(&["a", "b"], &[], &[]), &rec);
        assert!(j.report_valid && !j.valid && j.error == "Invalid n2p_tests: missing c", "{}", j.error);
        let j = judge(&run, &test, &sets(&["a", "b"], &[], &["c"]), &rec);
        assert_eq!(j.error, "Invalid n2p_tests: missing c");
    }

    #[test]
    fn a_test_file_the_run_left_otherwise_than_the_driver_allowed_is_named() {
        use crate::sandbox::report::DigestAfter;
        let tests: Vec<String> = ["a.test.js", "b.test.js", "gone.test.js", "c.test.js"].map(String::from).to_vec();
        let before = "polysandbox: test file may end as 0 h0 h1 h1\n\
            | polysandbox: test file may end as 1 x x x\n\
            polysandbox: test file may end as 1 b0 b1 b2\n\
            polysandbox: test file may end as 2 g0 absent absent\n";
        let expected = crate::eval::driver::expected_digests(before);
        // A line the driver did not write (a tool's, prefixed) is not read.
        assert_eq!(expected[&1], vec!["b0", "b1", "b2"]);
        let d = |p: &str, h: Option<&str>, e: Option<&str>| DigestAfter {
            path: p.into(),
            sha256: h.map(String::from),
            error: e.map(String::from),
        };
        // As the test patch made it, as it was, and removed as the test patch removes it: none
        // changed; c.test.js has no expectation (the driver said nothing of it): not judged.
        let fine =
            [d("a", Some("h1"), None), d("b", Some("b0"), None), d("g", None, Some("absent")), d("c", Some("z"), None)];
        assert!(changed_test_files(&tests, &expected, &fine).is_empty());
        // Rewritten, turned into a symlink, recreated after the test patch removed it.
        let bad = [d("a", Some("h2"), None), d("b", None, Some("not a regular file")), d("g", Some("g1"), None)];
        let got: Vec<String> = changed_test_files(&tests, &expected, &bad).into_iter().map(|c| c.path).collect();
        assert_eq!(got, ["a.test.js", "b.test.js", "gone.test.js"]);
    }

    #[test]
    fn code_that_names_a_test_file_is_flagged() {
        let tests = vec!["test/plugin/timezone.test.js".to_string(), "tests/test_buf.rs".to_string()];
        let rewrite =
            "+++ b/src/index.js\n+const p = path.join(__dirname, '..', 'test', 'plugin', 'timezone.test.js')\n";
        assert_eq!(names_test_files(rewrite, &tests).len(), 1);
        // The diff's own header naming it, or context lines, are not code.
        assert!(names_test_files("+++ b/tests/test_buf.rs\n test_buf.rs\n+fn f() {}\n", &tests).is_empty());
    }

    #[test]
    fn a_run_the_image_cannot_serve_is_the_environments_not_the_predictions() {
        let none = Sets::default();
        let cargo = "    Updating crates.io index\nwarning: spurious network error: Could not resolve host: index.crates.io\nerror: failed to download from `https://index.crates.io/`\n";
        assert!(environment_failure(&none, cargo).unwrap().starts_with("network needed"));
        let npm = "npm ERR! code EAI_AGAIN\nnpm ERR! request to https://registry.npmjs.org/x failed\n";
        assert!(environment_failure(&none, npm).unwrap().starts_with("network needed"));
        let krate = "error: no matching package named `serde` found\n";
        assert!(environment_failure(&none, krate).unwrap().starts_with("missing crate"));
        // A compile error of the prediction's is no such failure; nor is one once tests ran.
        assert_eq!(environment_failure(&none, "error[E0425]: cannot find value `x` in this scope\n"), None);
        assert_eq!(environment_failure(&sets(&["a"], &[], &[]), cargo), None);
    }

    #[test]
    fn names_keys_and_the_per_test_comparison_are_the_harnesss() {
        let mut rec = record(&[], &[], &[]);
        assert_eq!(key(&rec), "Org/Repo");
        assert_eq!(image_name(&rec), "mswebench/org_m_repo:pr-7");
        assert_eq!(report_id(&rec), "Org/Repo:pr-7");
        rec.tag = "v1.2".into();
        assert_eq!(key(&rec), "Org/Repo_v1_2");
        rec.number_interval = "repo_10_to_1".into();
        assert_eq!(key(&rec), "Org/repo_10_to_1");
        // The table's own definitions: fd's image, fix run and parser.
        let mut fd = record(&[], &[], &[]);
        (fd.org, fd.name, fd.number) = ("sharkdp".into(), "fd".into(), 1394);
        assert_eq!(image_name(&fd), "mswebench/sharkdp_m_fd:pr-1394");
        assert_eq!(fix_run(&fd), "bash /home/fix-run.sh");
        assert_eq!(parser(&fd), Ok(MsbParser::Libtest));
        assert!(parser(&rec).unwrap_err().contains("the harness defines no instance so"));
        // Against the record: every test either names, each difference said.
        let c = against_record(&sets(&["a", "b"], &["c"], &[]), &sets(&["a", "c"], &[], &["d"]));
        assert_eq!(c.tests, 3);
        assert_eq!(c.differ, vec!["c: the record has PASS, this run FAIL", "d: the record has SKIP, this run NONE"]);
        assert_eq!((c.extra, c.extra_names), (1, vec!["b".to_string()]));
    }
}
