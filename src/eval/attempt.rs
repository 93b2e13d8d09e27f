//! One attempt at a catalogue instance (exercise, snippet, repository): prepare the tree,
//! plant what the run must show, run the tests in a sandbox, grade.

use super::catalogue::Runner;
use super::child::{job_command, run_sandbox, Job};
use super::instance::Instance;
use super::parsers::Parser;
use super::prepare::{Context, NotRun, Prepared};
use super::verdict::{grade, stopped_before_tests, strict, Check, Evidence};
use super::{channel, driver, prepare};
use super::{InstanceResult, Options, Verdict};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

/// What a catalogue format brings to the common attempt.
pub(crate) trait Steps {
    /// The tree the tests run in, the prediction in it.
    fn prepare(&self, job: &Job, cx: &Context) -> Result<Prepared, NotRun>;
    /// What the run must show besides its results (planted in the tree now), or why there can
    /// be no run: the reason, and whether it would be the same on every attempt.
    fn check(
        &self,
        o: &Options,
        job: &Job,
        prepared: &Prepared,
        r: &mut InstanceResult,
    ) -> Result<Check, (String, bool)>;
    /// The parser (parse.rs) that reads the run's results.
    fn parser(&self, runner: &Runner) -> Parser;
    /// The lists that grade the run, where the record has them (FAIL_TO_PASS, PASS_TO_PASS).
    fn lists<'a>(&self, _inst: &'a Instance) -> Option<(&'a [String], &'a [String])> {
        None
    }
}

pub(crate) fn run_instance(
    steps: &dyn Steps,
    o: &Options,
    job: &Job,
    scratch: &Path,
    logs: &Path,
    children: &Mutex<HashSet<u32>>,
) -> InstanceResult {
    let mut r = InstanceResult::bare(&job.inst, &job.image, &job.key, Verdict::Error, None);
    r.image_digest = job.image_digest.clone();
    let _ = std::fs::remove_dir_all(scratch);
    if let Err(e) = std::fs::create_dir_all(scratch) {
        r.reason = Some(format!("{}: {e}", scratch.display()));
        return r;
    }
    // An exercise's patch is applied in a sandbox of its own (see prepare.rs).
    let prepare_sandbox = |binds: &[String], cmd: &[String]| -> Result<prepare::Ran, String> {
        let mut c = job_command(o, job, logs, "64M", "prepare-usage.json");
        c.args(binds);
        super::child::image_then(&mut c, &job.image).args(cmd);
        run_sandbox(
            o,
            c,
            &logs.join("prepare.log"),
            Some(&scratch.join("prepare.out")),
            &logs.join("prepare-usage.json"),
            children,
        )
    };
    let cx = prepare::Context { scratch, repos: o.repos.as_deref(), sandbox: &prepare_sandbox };
    let prepared = match steps.prepare(job, &cx) {
        Ok(p) => p,
        Err(prepare::NotRun::EmptyPatch) => {
            r.verdict = Verdict::EmptyPatch;
            return r;
        }
        Err(prepare::NotRun::PatchFailed(e)) => {
            r.verdict = Verdict::PatchFailed;
            r.reason = Some(e);
            return r;
        }
        Err(prepare::NotRun::Dataset(e)) => {
            r.reason = Some(e);
            r.deterministic = true;
            return r;
        }
        Err(prepare::NotRun::Host(e)) => {
            r.reason = Some(e);
            return r;
        }
        Err(prepare::NotRun::HostShort(e)) => {
            r.mark_host_fault(e);
            return r;
        }
    };
    let _ = std::fs::write(logs.join("patch.diff"), &prepared.applied);
    r.tampering = prepared.tampering.clone();
    let check = match steps.check(o, job, &prepared, &mut r) {
        Ok(c) => c,
        Err((why, deterministic)) => {
            r.reason = Some(why);
            r.deterministic = deterministic;
            return r;
        }
    };
    // The runner's report files come out through FIFOs in a directory it cannot write.
    let channel = match channel::open_channel(&scratch.join("report"), &job.runner.report_files()) {
        Ok(c) => c,
        Err(e) => {
            r.reason = Some(e);
            return r;
        }
    };
    let mut cmd = job_command(o, job, logs, "16M", "usage.json");
    cmd.arg("-v").arg(format!("{}:{}:O", prepared.tree.display(), prepared.mount));
    for (host, ctr) in &prepared.binds {
        cmd.arg("-v").arg(format!("{}:{ctr}:ro", host.display()));
    }
    cmd.arg("-v").arg(format!("{}:{}:ro", channel.dir.display(), prepare::REPORT)).args(["-w", &prepared.mount]);
    // Each test's usage: the kit (each-test, the in-runner plugins) and where lines go.
    if job.runner.measuring {
        match super::kit::prepare(o) {
            Ok(dir) => {
                cmd.arg("-v").arg(format!("{}:{}:ro", dir.display(), super::catalogue::MEASURE));
                cmd.args([
                    "-e",
                    &format!("POLYSANDBOX_MEASURE={}/{}", prepare::REPORT, super::catalogue::MEASURE_REPORT),
                ]);
            }
            Err(e) => {
                r.reason = Some(e);
                return r;
            }
        }
    }
    // `{memory}` in an environment value is the memory limit in bytes (e.g. the JVM's MaxRAM:
    // it cannot see a v1 cgroup's limit from inside the sandbox).
    for e in &job.runner.env {
        cmd.args(["-e", &e.replace("{memory}", &job.memory.to_string())]);
    }
    super::child::image_then(&mut cmd, &job.image).args(&prepared.command);
    let ran = run_sandbox(o, cmd, &logs.join("test_output.txt"), None, &logs.join("usage.json"), children);
    let reports = channel.finish();
    let (output, record) = match ran {
        Ok(x) => (x.stderr, x.record),
        Err(e) => {
            r.reason = Some(e);
            return r;
        }
    };
    // A driver's own lines (the patch application, the diff) come before its separator; only
    // what follows is the tests'.
    let tests_output = if prepared.driver {
        match driver::before_tests(&output, record.as_ref().and_then(|x| x.exit_code), &prepared.nonce) {
            Some(stopped) if record.as_ref().is_some_and(|x| x.status == crate::sandbox::report::Status::Exited) => {
                stopped_before_tests(&mut r, stopped, record);
                super::verdict::host_fault_in_output(&mut r, &output);
                return r;
            }
            _ => driver::tests_output(&output, &prepared.nonce),
        }
    } else {
        output.as_str()
    };
    let lists = steps.lists(&job.inst);
    let evidence = Evidence {
        parser: steps.parser(&job.runner),
        lists,
        check: &check,
        cal: job.cal.as_ref(),
        record,
        output: tests_output,
        reports: &reports,
    };
    grade(evidence, &mut r);
    strict(o, &mut r);
    if !o.controls.verifies() {
        r.verified.clear();
    } else {
        // Calibration's candidates: those gold passes are left out of the pool, nothing more.
        r.tampering.retain(|f| !f.starts_with(super::tamper::CONTROL_PASSED));
    }
    // The runner's reports go with the logs, as regular files the host writes.
    if reports.files.values().any(|b| !b.is_empty()) {
        let dir = logs.join("reports");
        let _ = std::fs::create_dir_all(&dir);
        for (name, bytes) in reports.files.iter().filter(|(_, b)| !b.is_empty()) {
            let _ = std::fs::write(dir.join(name), bytes);
        }
    }
    r
}
