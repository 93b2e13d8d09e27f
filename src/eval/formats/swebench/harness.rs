//! SWE-bench as its harness runs it: the instance's own image, its eval script, its log parser,
//! and the harness's grading and report files.
//!
//! What the harness does, and where it is done here:
//! - the image: the record's `image`, or `swebench/sweb.eval.<arch>.<id, "__" as "_1776_">:<tag>`
//!   ([`image_name`]);
//! - the eval script: the record's `eval_script`, or made from the harness's per-repository table
//!   (`images/swebench.json`, SWE-bench v4.1.0's `MAP_REPO_VERSION_TO_SPECS_PY`) as its
//!   `make_eval_script_list_py` does ([`eval_script`]);
//! - the patch, applied inside the sandbox by the image's own tools, in the harness's three
//!   attempts ([`driver`]);
//! - the log: only what lies between the start and end markers is parsed, by the record's
//!   `log_parser` or the repository's ([`LogParser`], in eval/parsers/, and [`logs_eval`]);
//! - grading: a test passes when its status is PASSED or XFAIL, a test missing from the log
//!   fails, resolved when every FAIL_TO_PASS and PASS_TO_PASS passes (`eval_type`
//!   `fail_only`: only a FAILED test fails) ([`grade`]).

use crate::eval::parsers::{LogParser, Status, StatusMap, TestResult};
use regex::Regex;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::LazyLock;

pub const START: &str = ">>>>> Start Test Output";
pub const END: &str = ">>>>> End Test Output";
pub const APPLY_PATCH_FAIL: &str = ">>>>> Patch Apply Failed";
pub const APPLY_PATCH_PASS: &str = ">>>>> Applied Patch";
const BAD_CODES: [&str; 4] = [APPLY_PATCH_FAIL, ">>>>> Reset Failed", ">>>>> Tests Errored", ">>>>> Tests Timed Out"];
/// The harness's marker (v5) for the test command's exit status, and its variable.
pub const TEST_EXIT_CODE: &str = ">>>>> Test Exit Code";
const TEST_EXIT_CODE_VAR: &str = "SWEBENCH_TEST_EXIT_CODE";
/// The harness's default per-instance timeout.
pub const DEFAULT_TIMEOUT_S: u64 = 1800;
const HEREDOC: &str = "EOF_114329324912";
const NON_TEST_EXTS: [&str; 11] =
    [".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml"];

/// The harness's per-repository table, embedded.
static TABLE: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../../../images/swebench.json")).expect("images/swebench.json")
});

pub use crate::eval::instance::SweBenchRecord as Record;

/// The table's spec for a repository at a version.
pub fn spec(repo: &str, version: &str) -> Option<&'static Value> {
    TABLE["specs"].get(repo)?.get(version)
}

/// Whether the harness's table knows this repository.
pub fn knows(repo: &str) -> bool {
    TABLE["specs"].get(repo).is_some()
}

/// The architecture in the official images' names.
pub fn host_arch() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "arm64"
    } else {
        "x86_64"
    }
}

/// The harness's instance image name: `<namespace>/sweb.eval.<arch>.<id>:<tag>`, with `__`
/// written `_1776_` under a namespace (Docker Hub forbids `__`); without one, the name a local
/// build gives.
pub fn image_name(instance_id: &str, namespace: Option<&str>, tag: &str, arch: &str) -> String {
    let key = format!("sweb.eval.{arch}.{}:{tag}", instance_id.to_lowercase());
    match namespace {
        Some(ns) if !ns.is_empty() && ns != "none" => format!("{ns}/{key}").replace("__", "_1776_"),
        _ => key,
    }
}

/// The harness's `get_test_directives`: the test patch's files, less data files; Django's as
/// dotted module names.
pub fn test_directives(repo: &str, test_patch: &str) -> Vec<String> {
    if repo == "swe-bench/humaneval" {
        return vec!["test.py".into()];
    }
    let re = Regex::new(r"diff --git a/.* b/(.*)").unwrap();
    let mut d: Vec<String> = re
        .captures_iter(test_patch)
        .map(|c| c[1].to_string())
        .filter(|d| !NON_TEST_EXTS.iter().any(|e| d.ends_with(e)))
        .collect();
    if repo == "django/django" {
        d = d
            .into_iter()
            .map(|x| {
                let x = x.strip_suffix(".py").unwrap_or(&x);
                let x = x.strip_prefix("tests/").unwrap_or(x);
                x.replace('/', ".")
            })
            .collect();
    }
    d
}

/// The eval script the harness makes for an instance (`make_eval_script_list_py`, joined as
/// `TestSpec.eval_script` joins it).
pub fn eval_script(repo: &str, version: &str, base_commit: &str, test_patch: &str) -> Result<String, String> {
    let spec = spec(repo, version).ok_or_else(|| format!("{repo} {version}: not in the harness's table (images/swebench.json); a record with an eval_script column needs none"))?;
    let strs = |k: &str| -> Vec<String> {
        spec[k].as_array().into_iter().flatten().filter_map(|x| x.as_str().map(String::from)).collect()
    };
    let test_cmd = match &spec["test_cmd"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.last().and_then(|x| x.as_str()).unwrap_or_default().to_string(),
        _ => return Err(format!("{repo} {version}: the table has no test_cmd")),
    };
    let files = crate::eval::patch::modified_files(test_patch).join(" ");
    let reset = format!("git checkout {base_commit} {files}");
    let mut l: Vec<String> =
        vec!["source /opt/miniconda3/bin/activate".into(), "conda activate testbed".into(), "cd /testbed".into()];
    l.extend(strs("eval_commands"));
    l.extend([
        "git config --global --add safe.directory /testbed".into(),
        "cd /testbed".into(),
        "git status".into(),
        "git show".into(),
        format!("git -c core.fileMode=false diff {base_commit}"),
        "source /opt/miniconda3/bin/activate".into(),
        "conda activate testbed".into(),
    ]);
    if let Some(i) = spec["install"].as_str() {
        l.push(i.to_string());
    }
    let mut cmd = vec![test_cmd];
    cmd.extend(test_directives(repo, test_patch));
    l.extend([
        reset.clone(),
        format!("git apply -v - <<'{HEREDOC}'\n{test_patch}\n{HEREDOC}"),
        format!(": '{START}'"),
        cmd.join(" "),
        format!(": '{END}'"),
        reset,
    ]);
    Ok(format!("#!/bin/bash\nset -uxo pipefail\n{}\n", l.join("\n")))
}

/// The harness's `record_test_exit_code` (v5): the test command's own exit status, kept in
/// a variable right after it and printed after the end marker (outside the parsed region).
/// A script without the end marker is left as it is (grading then trusts the log alone, as
/// the harness does).
pub fn record_test_exit_code(script: &str) -> String {
    let lines: Vec<&str> = script.split('\n').collect();
    let Some(i) = lines.iter().position(|l| l.contains(END)) else { return script.to_string() };
    let mut out: Vec<String> = lines[..i].iter().map(|l| l.to_string()).collect();
    out.push(format!("{TEST_EXIT_CODE_VAR}=$?"));
    out.push(lines[i].to_string());
    out.push(format!("echo \"{TEST_EXIT_CODE}: ${TEST_EXIT_CODE_VAR}\""));
    out.extend(lines[i + 1..].iter().map(|l| l.to_string()));
    out.join("\n")
}

/// The eval script with polysandbox's pytest plugin loaded for its test command (each test's
/// CPU, peak memory and wall, `in-runner`, images/measure/python): `PYTHONPATH` and
/// `PYTEST_ADDOPTS` exported on the line before the start marker, outside the section the
/// log parsers read, so that the reinstall step and everything before runs as the harness
/// runs it. Only when the command the marker opens is pytest itself (`pytest`, `python -m
/// pytest`, after any `NAME=value` words): a runner in between may drop the path and keep the
/// option (tox keeps PYTEST_ADDOPTS and drops PYTHONPATH: the plugin would not import), and
/// django's runtests.py and sympy's bin/test are not pytest. `None`: not measured.
pub fn measured_script(script: &str) -> Option<String> {
    let lines: Vec<&str> = script.split('\n').collect();
    let i = lines.iter().position(|l| l.contains(START))?;
    let command = lines[i + 1..].iter().find(|l| !l.trim().is_empty())?;
    let assignment = |w: &str| {
        w.split_once('=').is_some_and(|(n, _)| {
            !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !n.starts_with(|c: char| c.is_ascii_digit())
        })
    };
    let words: Vec<&str> = command.split_whitespace().skip_while(|w| assignment(w)).collect();
    let pytest = match words.as_slice() {
        ["pytest", ..] | ["py.test", ..] => true,
        [python, "-m", "pytest", ..] => {
            let base = python.rsplit('/').next().unwrap_or(python);
            base == "python"
                || base.strip_prefix("python").is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        }
        _ => false,
    };
    if !pytest {
        return None;
    }
    let dir = format!("{}/python", crate::eval::catalogue::MEASURE);
    let export = format!(
        "export PYTHONPATH=\"${{PYTHONPATH:+$PYTHONPATH:}}{dir}\" PYTEST_ADDOPTS=\"${{PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }}-p polysandbox_measure\""
    );
    let mut out: Vec<&str> = lines[..i].to_vec();
    out.push(&export);
    out.extend(&lines[i..]);
    Some(out.join("\n"))
}

/// A test of the lists that the log between the markers reports failing (or erroring) and
/// later passing: a line printed after the runner's own (an atexit hook printing `PASSED
/// <test>` after pytest's summary), which the harness's parsers, keeping the last status,
/// would take. Each line is parsed alone.
pub fn reported_failed_then_passed<'a>(
    parser: LogParser,
    log: &str,
    graded: impl Iterator<Item = &'a String>,
) -> Option<String> {
    let graded: std::collections::BTreeSet<&String> = graded.collect();
    let (s, _) = (log.find(START)?, log.find(END)?);
    let region = log[s + START.len()..].split(END).next().unwrap_or("");
    let mut failing: std::collections::BTreeSet<String> = Default::default();
    for line in region.lines() {
        for (name, status) in parser.parse(line) {
            if matches!(status, Some(Status::Failed | Status::Error)) {
                failing.insert(name);
            } else if passing(status) && failing.contains(&name) && graded.contains(&name) {
                return Some(name);
            }
        }
    }
    None
}

/// The exit status the eval script recorded for its test command, if it did.
/// Read after the last end marker (the script prints it there), at the last place: code under
/// test that prints the marker inside the tests' output is not taken for it.
pub fn test_exit_code(log: &str) -> Option<i32> {
    let after = &log[log.rfind(END)?..];
    let i = after.rfind(&format!("{TEST_EXIT_CODE}:"))?;
    after[i + TEST_EXIT_CODE.len()..].trim_start_matches(':').split_whitespace().next()?.parse().ok()
}

/// The harness's `get_logs_eval` on a test_output.txt: the status map, or why there is none
/// (a bad code in the log, or the markers missing).
pub fn logs_eval(parser: LogParser, content: &str) -> Result<StatusMap, String> {
    if let Some(bad) = BAD_CODES.iter().find(|b| content.contains(*b)) {
        return Err(format!("the eval script's output holds {bad:?}"));
    }
    let (Some(s), true) = (content.find(START), content.contains(END)) else {
        return Err("the eval script's output lacks the start and end markers (the test patch did not apply, or the script was cut short)".into());
    };
    let after = &content[s + START.len()..];
    let sliced = after.split(END).next().unwrap_or("");
    let map = parser.parse(sliced);
    Ok(if map.is_empty() { parser.parse(content) } else { map })
}

/// The status-map key for an expected test: itself, or, for an id cut short inside its
/// parameters (676 of SWE-bench Verified's are), the one key it starts when every candidate
/// agrees on pass or fail (the harness's `_resolve_case`).
fn resolve<'a>(case: &str, sm: &'a StatusMap) -> Option<&'a String> {
    if let Some((k, _)) = sm.get_key_value(case) {
        return Some(k);
    }
    if case.matches('[').count() > case.matches(']').count() {
        let hits: Vec<&String> = sm.keys().filter(|k| k.starts_with(case)).collect();
        let outcomes: std::collections::BTreeSet<bool> = hits.iter().map(|k| passing(sm[*k])).collect();
        if !hits.is_empty() && outcomes.len() == 1 {
            return Some(hits[0]);
        }
    }
    None
}

fn passing(status: Option<Status>) -> bool {
    matches!(status, Some(Status::Passed | Status::Xfail))
}

/// A list of tests graded: (success, failure).
pub type Graded = (Vec<String>, Vec<String>);

/// One list graded: (success, failure).
pub fn grade_list(tests: &[String], sm: &StatusMap, fail_only: bool) -> Graded {
    let (mut ok, mut bad) = (Vec::new(), Vec::new());
    for t in tests {
        let status = resolve(t, sm).map(|k| sm[k]);
        let passed = if fail_only { status != Some(Some(Status::Failed)) } else { status.is_some_and(passing) };
        if passed {
            ok.push(t.clone());
        } else {
            bad.push(t.clone());
        }
    }
    (ok, bad)
}

/// The harness's report.json for one instance.
pub fn instance_report(
    id: &str,
    patch_exists: bool,
    applied: bool,
    resolved: bool,
    lists: Option<(&Graded, &Graded)>,
) -> Value {
    let mut r = json!({
        "patch_is_None": false,
        "patch_exists": patch_exists,
        "patch_successfully_applied": applied,
        "resolved": resolved,
    });
    if let Some((f2p, p2p)) = lists {
        r["tests_status"] = json!({
            "FAIL_TO_PASS": {"success": f2p.0, "failure": f2p.1},
            "PASS_TO_PASS": {"success": p2p.0, "failure": p2p.1},
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        });
    }
    json!({ id: r })
}

// ---- Running an instance the harness's way ----

use crate::eval::catalogue::Runner;
use crate::eval::child::{job_command, run_sandbox, Job};
use crate::eval::instance::{Instance, Kind, Prediction};
use crate::eval::predictions::Predictions;
use crate::eval::verdict::strict;
use crate::eval::{Grade, InstanceResult, Options, Verdict};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

/// The SWE-bench columns of an instance, when it is one.
pub fn of(inst: &Instance) -> Option<&Record> {
    match &inst.kind {
        Kind::Repo { swebench: Some(r), .. } => Some(r),
        _ => None,
    }
}

/// The image an instance runs in: named by `--namespace`/`--instance-image-tag` when given,
/// else the record's `image`, else the harness's name for it under `swebench`.
pub fn image_for(inst: &Instance, o: &Options) -> String {
    if o.namespace.is_some() || o.instance_image_tag.is_some() {
        return image_name(
            &inst.id,
            Some(o.namespace.as_deref().unwrap_or("swebench")),
            o.instance_image_tag.as_deref().unwrap_or("latest"),
            host_arch(),
        );
    }
    inst.image.clone().unwrap_or_else(|| image_name(&inst.id, Some("swebench"), "latest", host_arch()))
}

/// The catalogue's runner for a SWE-bench instance: its limits, a probe that asks only for the
/// image's /testbed, and none of the toolchain image's environment.
pub fn runner(mut r: Runner) -> Runner {
    r.probe = vec!["/bin/sh".into(), "-c".into(), "test -d /testbed".into()];
    r.env.clear();
    r.setup.clear();
    r
}

/// The network each instance gets, and why: said in every run_instance.log.
fn network_note(host: bool) -> &'static str {
    if host {
        "network: the host's (--network host), as the harness's containers have"
    } else {
        "network: none (polysandbox's default; the harness's containers have one: pass --network host for that). Code under test cannot reach the network, e.g. to fetch the upstream fix. The eval script's `pip install` runs offline: PIP_NO_INDEX=1, PIP_NO_BUILD_ISOLATION=0 (build from the environment's own setuptools)"
    }
}

/// The harness's log directory for an instance: logs/run_evaluation/<run_id>/<model>/<id>,
/// each a safe name (names.rs: the id itself when it is one, as the harness has it; a model's
/// `/` as `__`, as the harness writes it).
pub fn harness_dir(o: &Options, model: &str, id: &str) -> std::path::PathBuf {
    use crate::eval::names::name;
    o.output.join("logs").join("run_evaluation").join(name(&o.run_id)).join(name(model)).join(name(id))
}

/// The log parser of a record: its `log_parser`, else its repository's in the harness's table.
fn parser_of(repo: &str, rec: &Record) -> Result<LogParser, String> {
    match &rec.log_parser {
        Some(n) => LogParser::by_name(n).ok_or_else(|| format!("log parser {n:?}: not one this build has (the harness's Python parsers, and Multilingual's cargo, gotest, phpunit, jest, ant and maven)")),
        None => LogParser::for_repo(repo)
            .ok_or_else(|| format!("{repo}: no log parser for this repository in the harness's table")),
    }
}

pub(crate) fn run_instance(
    o: &Options,
    job: &Job,
    scratch: &Path,
    logs: &Path,
    children: &Mutex<HashSet<u32>>,
) -> InstanceResult {
    let inst = &job.inst;
    let mut r = InstanceResult::bare(inst, &job.image, &job.key, Verdict::Error, None);
    r.image_digest = job.image_digest.clone();
    let Kind::Repo {
        repo, base_commit, gold_patch, test_patch, fail_to_pass, pass_to_pass, swebench: Some(rec), ..
    } = &inst.kind
    else {
        r.reason = Some("not a SWE-bench instance".into());
        return r;
    };
    let patch = match &job.pred {
        Prediction::Gold => gold_patch.clone(),
        Prediction::Patch(p) => p.clone(),
        // No patch at all: the tests at the base commit (an empty model_patch is not run).
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
            r.reason = Some("not a patch: SWE-bench instances take a model_patch".into());
            return r;
        }
    };
    if patch.trim().is_empty() && job.pred != Prediction::Stub {
        r.verdict = Verdict::EmptyPatch;
        return r;
    }
    // Nothing under .git, whichever attempt would apply it (see patch.rs).
    if let Err(why) = crate::eval::patch::refuse_git_dir(&patch) {
        r.verdict = Verdict::PatchFailed;
        r.reason = Some(format!("prediction refused: {why}"));
        return r;
    }
    let fail = |mut r: InstanceResult, why: String| {
        r.reason = Some(why);
        r.deterministic = true;
        r
    };
    if !(4..=64).contains(&base_commit.len()) || !base_commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return fail(r, format!("base_commit {base_commit:?} is not a commit name"));
    }
    if let Some(bad) = crate::eval::patch::test_patch_paths(test_patch)
        .iter()
        .find(|t| t.starts_with('/') || t.split('/').any(|c| c == "..") || t.chars().any(|c| c.is_control()))
    {
        return fail(r, format!("the test patch names {bad:?}"));
    }
    let script = match &rec.eval_script {
        Some(s) => s.clone(),
        None => match eval_script(repo, &rec.version, base_commit, test_patch) {
            Ok(s) => s,
            Err(e) => return fail(r, e),
        },
    };
    let parser = match parser_of(repo, rec) {
        Ok(p) => p,
        Err(e) => return fail(r, e),
    };
    let fail_only = rec.eval_type.as_deref() == Some("fail_only");
    // The harness's per-instance files are the prediction's: gold's check run (arbitrate)
    // writes its own under its scratch directory, never over them.
    let hdir = if job.gold_check { scratch.join("harness") } else { harness_dir(o, &job.model, &inst.id) };
    let _ = std::fs::remove_dir_all(&hdir);
    let input = scratch.join("in");
    let nonce = crate::eval::driver::nonce();
    // Each test's usage, where the test command is pytest's (see measured_script).
    let measured = if o.per_test.on { measured_script(&script) } else { None };
    let setup = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(&input)?;
        std::fs::create_dir_all(&hdir)?;
        std::fs::write(input.join("patch.diff"), &patch)?;
        std::fs::write(input.join("eval.sh"), record_test_exit_code(measured.as_deref().unwrap_or(&script)))?;
        std::fs::write(input.join("run.sh"), crate::eval::driver::swebench(&nonce))?;
        std::fs::write(input.join("base_commit"), base_commit)?;
        std::fs::write(input.join("test_files"), crate::eval::patch::test_patch_paths(test_patch).join("\n") + "\n")?;
        std::fs::write(hdir.join("patch.diff"), &patch)?;
        std::fs::write(hdir.join("eval.sh"), &script)?;
        Ok(())
    })();
    if let Err(e) = setup {
        // The host's, unless a patch large enough to fill the disk (gold's check decides).
        r.host_write_failed(scratch.display().to_string(), &e, patch.len());
        return r;
    }
    let mut cmd = job_command(o, job, logs, "64M", "usage.json");
    cmd.arg("-v").arg(format!("{}:/polysandbox-in:ro", input.display())).args(["-w", "/testbed"]);
    if !o.network_host {
        cmd.args(["-e", "PIP_NO_INDEX=1", "-e", "PIP_NO_BUILD_ISOLATION=0"]);
    }
    // The plugin's lines come out through a FIFO in a directory the sandbox cannot write
    // (channel.rs), as in the catalogue's runs; the kit is bound read-only.
    let channel = match measured {
        Some(_) => {
            let names = [crate::eval::catalogue::MEASURE_REPORT.to_string()];
            let kit = crate::eval::kit::prepare(o);
            match (crate::eval::channel::open_channel(&scratch.join("report"), &names), kit) {
                (Ok(c), Ok(kit)) => {
                    cmd.arg("-v").arg(format!("{}:{}:ro", c.dir.display(), crate::eval::prepare::REPORT));
                    cmd.arg("-v").arg(format!("{}:{}:ro", kit.display(), crate::eval::catalogue::MEASURE));
                    cmd.args([
                        "-e",
                        &format!(
                            "POLYSANDBOX_MEASURE={}/{}",
                            crate::eval::prepare::REPORT,
                            crate::eval::catalogue::MEASURE_REPORT
                        ),
                    ]);
                    Some(c)
                }
                (Err(e), _) | (_, Err(e)) => {
                    r.reason = Some(e);
                    return r;
                }
            }
        }
        None => None,
    };
    crate::eval::child::image_then(&mut cmd, &job.image).args(["/bin/bash", "/polysandbox-in/run.sh"]);
    let ran = run_sandbox(o, cmd, &logs.join("test_output.txt"), None, &logs.join("usage.json"), children);
    let reports = channel.map(|c| c.finish()).unwrap_or_default();
    let (output, record) = match ran {
        Ok(x) => (x.stderr, x.record),
        Err(e) => {
            r.reason = Some(e);
            return r;
        }
    };
    let sep = format!("\n{}\n", crate::eval::driver::separator(&nonce));
    let (apply_log, test_output) = match output.find(&sep) {
        Some(i) => (&output[..i], Some(&output[i + sep.len()..])),
        None => (output.as_str(), None),
    };
    let mut graded = grade(
        &mut r,
        record,
        apply_log,
        test_output,
        parser,
        fail_only,
        fail_to_pass,
        pass_to_pass,
        &job.timeout,
        &nonce,
        &reports,
    );
    // Patches that configure the test run (a conftest, pytest's addopts, a plugin on the
    // path) fool the harness too: graded as it grades them, flagged here and in its report,
    // unresolved under --strict.
    r.tampering = crate::eval::tamper::scan_patch(&patch);
    // A failure whose log shows the host's file table full is the host's (verdict.rs).
    crate::eval::verdict::host_fault_in_output(&mut r, &output);
    strict(o, &mut r);
    if let Some(Value::Object(m)) = graded.as_mut() {
        if let Some(Value::Object(inst)) = m.get_mut(&inst.id) {
            if !r.tampering.is_empty() {
                inst.insert("tampering".into(), json!(r.tampering));
            }
            inst.insert("resolved".into(), json!(r.verdict == Verdict::Resolved));
        }
    }
    // The harness's files: test_output.txt (the eval script's output), report.json (when the
    // log was graded), run_instance.log; patch.diff and eval.sh went in above.
    let mut test_text = test_output.unwrap_or("").to_string();
    if r.verdict == Verdict::Timeout {
        test_text.push_str(&format!("\n\nTimeout error: {} exceeded.", job.timeout));
    }
    let _ = std::fs::write(hdir.join("test_output.txt"), &test_text);
    if let Some(report) = &graded {
        let _ = std::fs::write(hdir.join("report.json"), serde_json::to_string_pretty(report).unwrap() + "\n");
    }
    let note = format!(
        "polysandbox eval: {}\nimage: {}{}\n{}\ntimeout: {}, memory: {} bytes, cpus: {}\n--- patch application (in the sandbox, by the image's git and patch) ---\n{}\n--- result ---\nverdict: {}{}\nwall {:.1} s, cpu {:.1} s, peak memory {} MiB\n",
        inst.id,
        job.image,
        job.image_digest.as_deref().map(|d| format!(" ({d})")).unwrap_or_default(),
        network_note(o.network_host),
        job.timeout,
        job.memory,
        job.cpus,
        apply_log.trim_end(),
        r.verdict,
        r.reason.as_deref().map(|x| format!(" ({x})")).unwrap_or_default(),
        r.wall_s,
        r.cpu_s,
        r.memory_peak_bytes >> 20,
    );
    let _ = std::fs::write(hdir.join("run_instance.log"), note);
    // Our measurements beside the harness's files: the sandbox's usage record (wall, CPU,
    // peak memory, OOM, exit or signal, limits).
    let _ = std::fs::copy(logs.join("usage.json"), hdir.join("usage.json"));
    let _ = std::fs::write(logs.join("patch.diff"), &patch);
    r
}

/// Grades one run: the verdict, measurements and tests into `r`; the harness's report.json
/// when the eval script's log was graded.
#[allow(clippy::too_many_arguments)]
fn grade(
    r: &mut InstanceResult,
    record: Option<crate::sandbox::report::Report>,
    apply_log: &str,
    test_output: Option<&str>,
    parser: LogParser,
    fail_only: bool,
    f2p: &[String],
    p2p: &[String],
    timeout: &str,
    nonce: &str,
    reports: &crate::eval::channel::Reports,
) -> Option<Value> {
    let Some(rec) = record else {
        r.reason = Some("the sandbox left no usage record".into());
        return None;
    };
    crate::eval::verdict::take_measurements(r, &rec);
    if let Some((verdict, reason)) = crate::eval::verdict::ended_early(&rec) {
        r.host_fault = crate::eval::verdict::ran_short(&rec);
        r.reason = match verdict {
            Verdict::Timeout => reason.map(|why| format!("{why} ({timeout})")),
            _ => reason,
        };
        r.verdict = verdict;
        return None;
    }
    let id = r.instance_id.clone();
    let Some(test_output) = test_output else {
        // The driver stopped before the eval script: no code of the prediction's ran.
        match crate::eval::driver::before_tests(apply_log, rec.exit_code, nonce) {
            Some(crate::eval::driver::Stopped::ApplyFailed) => {
                r.verdict = Verdict::PatchFailed;
                r.reason = Some("no attempt applied it (git apply, --3way, --reject, patch --fuzz=5)".into());
            }
            Some(crate::eval::driver::Stopped::Refused(why)) => {
                r.verdict = Verdict::PatchFailed;
                r.reason = Some(format!("prediction refused: {why}"));
            }
            Some(crate::eval::driver::Stopped::TestPatchFailed) => {
                r.reason = Some("the test files could not be put back after the prediction".into());
                r.after_prediction = true;
            }
            _ => {
                r.reason = Some(format!(
                    "the sandbox stopped before the eval script (exit {:?}): {}",
                    rec.exit_code,
                    apply_log.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
                ))
            }
        }
        return None;
    };
    if rec.output_limit_exceeded {
        r.verdict = Verdict::Unresolved;
        r.reason = Some("output limit reached: the log was cut short".into());
        return Some(instance_report(&id, true, false, false, None));
    }
    let report = grade_log(r, test_output, parser, fail_only, f2p, p2p);
    // Each test's usage, by pytest's node id (what the harness's pytest parsers name): a
    // measurement beside the verdict, never part of it (in-runner lines change no status).
    if let Some(bytes) = reports.get(crate::measure::REPORT).filter(|_| !r.tests.is_empty()) {
        let mut measured = crate::measure::read(bytes, crate::measure::Method::InRunner);
        by_first_word(&mut measured.usage);
        crate::eval::parsers::attach_usage(&mut r.tests, measured);
        let peak = r.tests.iter().filter_map(|t| t.usage.as_ref()).map(|u| u.memory_peak_bytes).max();
        r.memory_peak_bytes = r.memory_peak_bytes.max(peak.unwrap_or(0));
    }
    Some(report)
}

/// Grades the eval script's output as the harness grades its test_output.txt: the verdict,
/// the tests and the two lists into `r`; the harness's report.json.
fn grade_log(
    r: &mut InstanceResult,
    test_output: &str,
    parser: LogParser,
    fail_only: bool,
    f2p: &[String],
    p2p: &[String],
) -> Value {
    let id = r.instance_id.clone();
    let sm = match logs_eval(parser, test_output) {
        Ok(sm) => sm,
        Err(why) => {
            r.verdict = Verdict::Unresolved;
            r.reason = Some(why);
            return instance_report(&id, true, false, false, None);
        }
    };
    r.tests = sm
        .iter()
        // A word that is none of the harness's statuses: failed, here.
        .map(|(name, s)| TestResult {
            name: name.clone(),
            status: s.unwrap_or(Status::Failed),
            duration_s: None,
            usage: None,
        })
        .collect();
    let (a, b) = (grade_list(f2p, &sm, fail_only), grade_list(p2p, &sm, fail_only));
    // v5's cross-check (SWE-bench PR #620): the test command's own exit status against the
    // parsed log. A command that failed while its log reports no failure at all has lines in
    // it that are not the runner's (a conftest printing PASSED); a log with no test in it is
    // no sign the suite ran.
    let flipped = reported_failed_then_passed(parser, test_output, f2p.iter().chain(p2p));
    let inconsistent = match test_exit_code(test_output) {
        _ if sm.is_empty() => Some("the log names no test: no sign the suite ran".to_string()),
        _ if flipped.is_some() => Some(format!(
            "{} is reported failed, then passed: the log is not the runner's alone",
            flipped.unwrap_or_default()
        )),
        Some(code) if code != 0 && !sm.values().any(|s| matches!(s, Some(Status::Failed | Status::Error))) => {
            Some(format!(
                "the test command exited {code} while its log reports no failure: the log is not the runner's alone"
            ))
        }
        _ => None,
    };
    let resolved = a.1.is_empty() && b.1.is_empty() && inconsistent.is_none();
    r.verdict = if resolved { Verdict::Resolved } else { Verdict::Unresolved };
    r.reason = None;
    if let Some(why) = inconsistent {
        r.reason = Some(why);
    } else if !resolved {
        let first = a.1.first().or(b.1.first()).unwrap();
        r.reason = Some(format!(
            "{} of FAIL_TO_PASS and {} of PASS_TO_PASS not passing (first: {first})",
            a.1.len(),
            b.1.len()
        ));
    }
    let report = instance_report(&id, true, true, resolved, Some((&a, &b)));
    r.fail_to_pass = Some(Grade { success: a.0, failure: a.1 });
    r.pass_to_pass = Some(Grade { success: b.0, failure: b.1 });
    report
}

/// `--rewrite_reports`: an instance's result graded again from the test_output.txt its run
/// left in the harness's log directory, nothing run; its report.json written again. None when
/// its log cannot change it: no graded log (a patch that did not apply, a timeout, an OOM, an
/// error), the output cut at the limit, or no test_output.txt.
pub fn regrade(o: &Options, inst: &Instance, preds: &Predictions, old: &InstanceResult) -> Option<InstanceResult> {
    if !matches!(old.verdict, Verdict::Resolved | Verdict::Unresolved) {
        return None;
    }
    let Kind::Repo { repo, fail_to_pass, pass_to_pass, swebench: Some(rec), .. } = &inst.kind else {
        return None;
    };
    let hdir = harness_dir(o, &preds.model_of(&inst.id), &inst.id);
    let test_output = std::fs::read_to_string(hdir.join("test_output.txt")).ok()?;
    let cut = std::fs::read_to_string(hdir.join("usage.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<crate::sandbox::report::Report>(&t).ok())
        .is_none_or(|u| u.output_limit_exceeded);
    if cut {
        return None;
    }
    let parser = parser_of(repo, rec).ok()?;
    let mut r = old.clone();
    let mut report = grade_log(
        &mut r,
        &test_output,
        parser,
        rec.eval_type.as_deref() == Some("fail_only"),
        fail_to_pass,
        pass_to_pass,
    );
    // The usage each test was measured with, by name, as the run had it.
    for t in r.tests.iter_mut() {
        t.usage = old.tests.iter().find(|u| u.name == t.name).and_then(|u| u.usage.clone());
    }
    crate::eval::verdict::host_fault_in_output(&mut r, &test_output);
    strict(o, &mut r);
    if let Some(Value::Object(inst)) = report.get_mut(&inst.id) {
        if !r.tampering.is_empty() {
            inst.insert("tampering".into(), json!(r.tampering));
        }
        inst.insert("resolved".into(), json!(r.verdict == Verdict::Resolved));
    }
    std::fs::write(hdir.join("report.json"), serde_json::to_string_pretty(&report).unwrap() + "\n").ok()?;
    Some(r)
}

/// The harness's pytest parsers name a test by the first word after its status (`PASSED
/// tests/t.py::test[a b]` is `tests/t.py::test[a`): each node id with a space is also known by
/// that word, when no other node id cuts to the same one (the parser could not tell them
/// apart either).
fn by_first_word<T: Clone>(usage: &mut BTreeMap<String, T>) {
    let mut cut: BTreeMap<String, Option<T>> = BTreeMap::new();
    for (name, u) in usage.iter() {
        let Some(first) = name.split_whitespace().next().filter(|f| f.len() < name.len()) else { continue };
        cut.entry(first.to_string()).and_modify(|e| *e = None).or_insert_with(|| Some(u.clone()));
    }
    for (first, u) in cut {
        if let Some(u) = u {
            usage.entry(first).or_insert(u);
        }
    }
}

/// The harness's run report, `<model>.<run_id>.json` in the output directory (its
/// `make_run_report`, schema 2): how the selected SWE-bench instances fared.
pub fn write_run_report(
    o: &Options,
    preds: &Predictions,
    ids: &[String],
    results: &[InstanceResult],
) -> Result<std::path::PathBuf, String> {
    let by_id: std::collections::HashMap<&str, &InstanceResult> =
        results.iter().map(|r| (r.instance_id.as_str(), r)).collect();
    let submitted: Option<&BTreeMap<String, Prediction>> = match preds {
        Predictions::Records(m, _) => Some(m),
        _ => None,
    };
    let (mut completed, mut resolved, mut unresolved, mut errors, mut incomplete, mut empty) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for id in ids {
        if submitted.is_some_and(|m| !m.contains_key(id)) {
            incomplete.push(id.clone());
            continue;
        }
        match by_id.get(id.as_str()).map(|r| r.verdict) {
            Some(Verdict::Resolved) => {
                completed.push(id.clone());
                resolved.push(id.clone());
            }
            Some(Verdict::Unresolved) => {
                completed.push(id.clone());
                unresolved.push(id.clone());
            }
            Some(Verdict::EmptyPatch) => empty.push(id.clone()),
            Some(Verdict::PatchFailed | Verdict::Timeout | Verdict::Oom | Verdict::Error) => errors.push(id.clone()),
            Some(Verdict::NoPrediction | Verdict::Interrupted) | None => incomplete.push(id.clone()),
        }
    }
    let submitted_ids: Vec<String> = match submitted {
        Some(m) => m.keys().cloned().collect(),
        None => ids.to_vec(),
    };
    // The model its first prediction names, as the harness names the file.
    let model = ids
        .iter()
        .find(|id| submitted.is_none_or(|m| m.contains_key(*id)))
        .map(|id| preds.model_of(id))
        .unwrap_or_else(|| "gold".into());
    let report = json!({
        "total_instances": ids.len(),
        "submitted_instances": submitted_ids.len(),
        "completed_instances": completed.len(),
        "resolved_instances": resolved.len(),
        "unresolved_instances": unresolved.len(),
        "empty_patch_instances": empty.len(),
        "error_instances": errors.len(),
        "completed_ids": completed,
        "incomplete_ids": incomplete,
        "empty_patch_ids": empty,
        "submitted_ids": submitted_ids,
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "error_ids": errors,
        "schema_version": 2,
        "unstopped_instances": 0,
        "unstopped_containers": [],
        "unremoved_images": [],
    });
    let file = format!("{}.{}.json", crate::eval::names::name(&model), crate::eval::names::name(&o.run_id));
    let text = serde_json::to_string_pretty(&report).unwrap() + "\n";
    // In --output, and in --report_dir (SWE-bench's) too when given.
    for dir in std::iter::once(&o.output).chain(o.report_dir.as_ref()) {
        let path = dir.join(&file);
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        crate::sys::beneath::write_new(&path, text.as_bytes(), 0o644)?;
    }
    Ok(o.output.join(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Vec<Value> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench/instances.jsonl");
        match std::fs::read_to_string(&p) {
            Ok(t) => t.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect(),
            Err(_) => {
                eprintln!("SKIPPED: {} is not here", p.display());
                vec![]
            }
        }
    }

    #[test]
    fn derived_eval_scripts_are_the_records_own() {
        let recs = records();
        for r in &recs {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            let made = eval_script(&s("repo"), &s("version"), &s("base_commit"), &s("test_patch")).unwrap();
            assert_eq!(made, s("eval_script"), "{}", s("instance_id"));
        }
    }

    /// The published datasets (SWE-bench's `data/*/test.parquet`, named in
    /// SWEBENCH_PARQUET, colon-separated): every record read from Parquet, and for every
    /// record of a repository in the table, the script, image name and parser made here are
    /// the record's own.
    #[test]
    fn published_parquet_records_match_what_is_derived() {
        let Ok(files) = std::env::var("SWEBENCH_PARQUET") else {
            eprintln!("SKIPPED: published_parquet_records_match_what_is_derived: SWEBENCH_PARQUET names no files");
            return;
        };
        for f in files.split(':').filter(|f| !f.is_empty()) {
            let insts = crate::eval::dataset::load(std::path::Path::new(f)).unwrap();
            let (mut checked, mut differ) = (0, Vec::new());
            for i in &insts {
                let (Kind::Repo { repo, base_commit, test_patch, swebench: Some(rec), .. }, Some(image)) =
                    (&i.kind, &i.image)
                else {
                    continue;
                };
                let (Some(script), Some(spec)) = (&rec.eval_script, spec(repo, &rec.version)) else { continue };
                let _ = spec;
                checked += 1;
                if &eval_script(repo, &rec.version, base_commit, test_patch).unwrap() != script {
                    differ.push(format!("{} (script)", i.id));
                }
                if &image_name(&i.id, Some("swebench"), "latest", "x86_64") != image {
                    differ.push(format!("{} (image {image})", i.id));
                }
                if rec.log_parser.as_deref().map(LogParser::by_name) != Some(LogParser::for_repo(repo)) {
                    differ.push(format!("{} (parser {:?})", i.id, rec.log_parser));
                }
            }
            eprintln!(
                "{f}: {} records, {checked} in the table checked, {} differ: {:?}",
                insts.len(),
                differ.len(),
                &differ[..differ.len().min(10)]
            );
            assert!(differ.is_empty());
        }
    }

    #[test]
    fn derived_image_names_and_parsers_are_the_records_own() {
        for r in &records() {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            assert_eq!(image_name(&s("instance_id"), Some("swebench"), "latest", "x86_64"), s("image"));
            assert_eq!(LogParser::for_repo(&s("repo")), LogParser::by_name(&s("log_parser")), "{}", s("instance_id"));
        }
        assert_eq!(
            image_name("django__django-11099", None, "latest", "arm64"),
            "sweb.eval.arm64.django__django-11099:latest"
        );
        assert_eq!(
            image_name("Django__django-1", Some("me"), "v2", "x86_64"),
            "me/sweb.eval.x86_64.django_1776_django-1:v2"
        );
    }

    #[test]
    fn only_the_marked_section_is_graded_and_bad_codes_void_it() {
        let p = LogParser::Pytest;
        let log = format!("PASSED early::test\n+ : '{START}'\nPASSED t::a\nFAILED t::b\n+ : '{END}'\nPASSED t::b\n");
        let m = logs_eval(p, &log).unwrap();
        assert_eq!(m.get("t::b"), Some(&Some(Status::Failed)));
        assert!(!m.contains_key("early::test"));
        assert!(logs_eval(p, "PASSED t::a\n").is_err());
        assert!(logs_eval(p, &format!("{log}\n>>>>> Tests Timed Out\n")).is_err());
        // Nothing parsed between the markers: the whole log, as the harness falls back.
        let m = logs_eval(p, &format!("PASSED x::y\n{START}\n{END}\n")).unwrap();
        assert_eq!(m["x::y"], Some(Status::Passed));
    }

    #[test]
    fn a_pass_printed_after_the_runners_failure_is_not_taken() {
        // helper-3's forge: an atexit hook prints PASSED for the failing FAIL_TO_PASS test
        // after pytest's own summary, before the end marker.
        let t = "tests/test_config.py::test_config_from_file_toml".to_string();
        let log = format!("{START}\n{t} FAILED\n=== short test summary info ===\nFAILED {t} - AssertionError\n=== 1 failed ===\nPASSED {t}\n{END}\n");
        let p = LogParser::by_name("parse_log_pytest").unwrap();
        assert_eq!(p.parse(&log).get(&t), Some(&Some(Status::Passed)), "the harness's parser keeps the last");
        assert_eq!(reported_failed_then_passed(p, &log, [&t].into_iter()), Some(t.clone()));
        // A plain pass, and a failure of a test outside the lists, are not.
        let ok = format!("{START}\nPASSED {t}\nFAILED tests/other.py::x\nPASSED tests/other.py::x\n{END}\n");
        assert_eq!(reported_failed_then_passed(p, &ok, [&t].into_iter()), None);
    }

    #[test]
    fn the_plugin_is_loaded_only_for_pytest_itself() {
        let script = |cmd: &str| {
            format!("#!/bin/bash\nset -uxo pipefail\npip install -e .\ngit apply -v - <<'E'\nx\nE\n: '{START}'\n{cmd}\n: '{END}'\ngit checkout\n")
        };
        for cmd in [
            "pytest -rA tests/test_a.py",
            "pytest --no-header -rA --tb=no -p no:cacheprovider t.py",
            "python -m pytest -rA t.py",
            "/opt/miniconda3/envs/testbed/bin/python3.9 -m pytest t.py",
            "PYTHONWARNINGS=ignore::DeprecationWarning pytest -rA t.py",
            "py.test t.py",
        ] {
            let s = script(cmd);
            let m = measured_script(&s).unwrap_or_else(|| panic!("{cmd}: not measured"));
            // The exports stand just before the start marker: the reinstall step runs without
            // them, and the section the parsers read is the harness's own.
            let export = "export PYTHONPATH=\"${PYTHONPATH:+$PYTHONPATH:}/polysandbox-measure/python\" PYTEST_ADDOPTS=\"${PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }-p polysandbox_measure\"";
            assert_eq!(m, s.replace(&format!(": '{START}'"), &format!("{export}\n: '{START}'")), "{cmd}");
            let after = &m[m.find(START).unwrap()..];
            assert!(!after.contains("polysandbox"), "{cmd}: {after}");
            // The exit code is still the test command's.
            assert!(record_test_exit_code(&m).contains(&format!("{cmd}\n{TEST_EXIT_CODE_VAR}=$?")), "{cmd}");
        }
        // Not pytest, or a runner between (tox drops PYTHONPATH, keeps PYTEST_ADDOPTS).
        for cmd in [
            "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 admin_views",
            "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose sympy/x.py",
            "tox --current-env -epy39 -v -- tests/test_build.py",
            "python setup.py test",
            "python -m unittest t",
            "pytestx t.py",
            "echo pytest",
        ] {
            assert_eq!(measured_script(&script(cmd)), None, "{cmd}");
        }
        assert_eq!(measured_script("pytest t.py\n"), None, "no start marker");
    }

    #[test]
    fn a_node_id_cut_at_its_first_space_is_known_by_the_cut() {
        let mut m: BTreeMap<String, u32> = [
            ("t.py::a[x y]".to_string(), 1),
            ("t.py::b[p q]".to_string(), 2),
            ("t.py::b[p r]".to_string(), 3),
            ("t.py::c".to_string(), 4),
        ]
        .into();
        by_first_word(&mut m);
        assert_eq!(m.get("t.py::a[x"), Some(&1));
        // Two node ids cut to one word: the parser's one name is neither's.
        assert_eq!(m.get("t.py::b[p"), None);
        assert_eq!(m.len(), 5);
    }

    #[test]
    fn the_exit_code_is_the_scripts_own() {
        // The script prints it after the end marker; code under test printing the marker in
        // the tests' output (before the end) is not taken for it.
        let log = format!("{START}\n{TEST_EXIT_CODE}: 0\nPASSED t\n+ : '{END}'\n{END}\n{TEST_EXIT_CODE}: 1\n");
        assert_eq!(test_exit_code(&log), Some(1));
        assert_eq!(test_exit_code(&format!("{START}\n{TEST_EXIT_CODE}: 0\n")), None);
        let script = "#!/bin/bash\nset -uxo pipefail\npytest x\n: '>>>>> End Test Output'\ngit checkout\n";
        let rec = record_test_exit_code(script);
        assert!(rec.contains(&format!("pytest x\n{TEST_EXIT_CODE_VAR}=$?\n: '>>>>> End Test Output'\necho \"{TEST_EXIT_CODE}: ${TEST_EXIT_CODE_VAR}\"")), "{rec}");
    }

    #[test]
    fn grading_counts_missing_as_failed_and_honours_fail_only() {
        use Status::*;
        let sm: StatusMap = [("a", Passed), ("b", Xfail), ("c", Skipped), ("d", Error), ("t[log(photon) x]", Passed)]
            .iter()
            .map(|(a, b)| (a.to_string(), Some(*b)))
            .collect();
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (ok, bad) = grade_list(&l(&["a", "b", "c", "d", "e", "t[log(photon"]), &sm, false);
        assert_eq!(ok, l(&["a", "b", "t[log(photon"]));
        assert_eq!(bad, l(&["c", "d", "e"]));
        let (ok, bad) = grade_list(&l(&["a", "c", "d", "e"]), &sm, true);
        assert_eq!(ok, l(&["a", "c", "d", "e"]));
        assert!(bad.is_empty());
    }

    #[test]
    fn a_word_that_is_no_status_grades_as_it_did() {
        // "ERROR: file or directory not found: t.py": the harness keeps `ERROR:` for "file".
        let sm = LogParser::Pytest.parse("ERROR: file or directory not found: t.py\nPASSED t.py::a\n");
        assert_eq!(sm.get("file"), Some(&None));
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // No pass; under fail_only, no failure either.
        assert_eq!(grade_list(&l(&["file", "t.py::a"]), &sm, false), (l(&["t.py::a"]), l(&["file"])));
        assert_eq!(grade_list(&l(&["file", "t.py::a"]), &sm, true), (l(&["file", "t.py::a"]), vec![]));
        // Neither a failure that a later pass would contradict, nor a pass.
        let log = format!("{START}\nERROR: file\nPASSED file\n{END}\n");
        assert_eq!(reported_failed_then_passed(LogParser::Pytest, &log, l(&["file"]).iter()), None);
    }
}
