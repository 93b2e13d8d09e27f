//! Generic repository records (a repository at a commit, a test patch, FAIL_TO_PASS and
//! PASS_TO_PASS; Multi-SWE-bench's records today) on the catalogue's toolchain images: the
//! repository cloned from `--repos` on the host, the patches applied inside the sandbox by a
//! driver (driver.rs), the runner's repository test command, graded by the two lists.

use super::Format;
use crate::eval::attempt::{self, Steps};
use crate::eval::catalogue::Runner;
use crate::eval::child::{Children, Job};
use crate::eval::instance::{Instance, Kind, Prediction};
use crate::eval::parsers::Parser;
use crate::eval::prepare::*;
use crate::eval::records::repository_instance;
use crate::eval::verdict::Check;
use crate::eval::{InstanceResult, Options};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub struct Repo;

impl Format for Repo {
    fn name(&self) -> &'static str {
        "repository"
    }

    fn read(&self, v: &Value, at: &str) -> Option<Result<Instance, String>> {
        repository_instance(v, at)
    }

    fn owns(&self, inst: &Instance) -> bool {
        matches!(inst.kind, Kind::Repo { swebench: None, multi: None, .. })
    }

    fn attempt(&self, o: &Options, job: &Job, scratch: &Path, logs: &Path, children: &Children) -> InstanceResult {
        attempt::run_instance(self, o, job, scratch, logs, children)
    }
}

impl Steps for Repo {
    fn prepare(&self, job: &Job, cx: &Context) -> Result<Prepared, NotRun> {
        prepare(&job.inst, &job.pred, &job.runner, cx)
    }

    /// Nothing more: graded by FAIL_TO_PASS and PASS_TO_PASS, as SWE-bench grades them.
    fn check(
        &self,
        _o: &Options,
        _job: &Job,
        _prepared: &Prepared,
        _r: &mut InstanceResult,
    ) -> Result<Check, (String, bool)> {
        Ok(Check::None)
    }

    fn parser(&self, runner: &Runner) -> Parser {
        runner.repo_parser.unwrap_or(runner.parser)
    }

    fn lists<'a>(&self, inst: &'a Instance) -> Option<(&'a [String], &'a [String])> {
        match &inst.kind {
            Kind::Repo { fail_to_pass, pass_to_pass, .. } => Some((fail_to_pass, pass_to_pass)),
            _ => None,
        }
    }
}

fn prepare(inst: &Instance, pred: &Prediction, runner: &Runner, cx: &Context) -> Result<Prepared, NotRun> {
    let Kind::Repo { repo, base_commit, gold_patch, test_patch, test_cmd, .. } = &inst.kind else { unreachable!() };
    let (host, data) = (|e: String| NotRun::Host(e), |e: String| NotRun::Dataset(e));
    let patch = match pred {
        Prediction::Gold => gold_patch.clone(),
        Prediction::Patch(p) => p.clone(),
        Prediction::Stub | Prediction::Missing => String::new(),
        Prediction::Refused(why) => return Err(NotRun::PatchFailed(format!("prediction refused: {why}"))),
        Prediction::Files(_) | Prediction::Code(_) => {
            return Err(NotRun::PatchFailed("not a patch: repository instances take a model_patch".into()))
        }
    };
    if patch.trim().is_empty() && !matches!(pred, Prediction::Stub) {
        return Err(NotRun::EmptyPatch);
    }
    crate::eval::patch::refuse_git_dir(&patch)
        .map_err(|why| NotRun::PatchFailed(format!("prediction refused: {why}")))?;
    if !is_repo_name(repo) {
        return Err(data(format!("{}: repo {repo:?} is not owner/name", inst.id)));
    }
    if !is_commit(base_commit) {
        return Err(data(format!("{}: base_commit {base_commit:?} is not a commit name", inst.id)));
    }
    let tests = crate::eval::patch::touched(test_patch);
    if let Some(bad) =
        crate::eval::patch::test_patch_paths(test_patch).iter().chain(&tests).find(|t| !is_plain_relative(t))
    {
        return Err(data(format!("{}: the test patch names {bad:?}", inst.id)));
    }
    let repos = cx.repos.ok_or_else(|| {
        data(format!("{}: repository instances need --repos DIR (a directory of git mirrors)", inst.id))
    })?;
    let flat = repo.replace('/', "__");
    let short = repo.rsplit('/').next().unwrap_or(repo);
    let mirror = [
        repos.join(repo),
        repos.join(format!("{repo}.git")),
        repos.join(&flat),
        repos.join(format!("{flat}.git")),
        repos.join(short),
        repos.join(format!("{short}.git")),
    ]
    .into_iter()
    .find(|p| p.is_dir())
    .ok_or_else(|| data(format!("{}: no mirror of {repo} in {}", inst.id, repos.display())))?;
    // The mirrors may belong to someone else (a shared, read-only directory): reading them is
    // all we do, so git's ownership check does not apply (git 2.39 reads safe.directory from
    // the global config only, not from -c).
    std::fs::write(cx.scratch.join("gitconfig"), "[safe]\n\tdirectory = *\n").map_err(|e| host(e.to_string()))?;
    let tree = cx.scratch.join("tree");
    run_quiet(
        host_git(cx.scratch, cx.scratch)
            .args(["clone", "--quiet", "--shared", "--no-checkout"])
            .arg(&mirror)
            .arg(&tree),
    )
    .map_err(|e| host(format!("git clone {}: {e}", mirror.display())))?;
    run_quiet(host_git(&tree, cx.scratch).args(["checkout", "--quiet", "--force", base_commit]))
        .map_err(|e| data(format!("checkout {base_commit}: {e}")))?;
    // The clone borrows the mirror's objects (`--shared`; a shallow mirror is copied instead):
    // inside the sandbox they are bound read-only where the clone's alternates file now points.
    let mut binds = Vec::new();
    let alternates = tree.join(".git/objects/info/alternates");
    if let Ok(objects) = std::fs::read_to_string(&alternates) {
        let objects = PathBuf::from(objects.lines().next().unwrap_or("").trim());
        if objects.join("info/alternates").exists() {
            return Err(data(format!(
                "{}: the mirror {} borrows objects from another (alternates): repack it (git repack -a -d)",
                inst.id,
                mirror.display()
            )));
        }
        std::fs::write(&alternates, "/polysandbox-objects\n").map_err(|e| host(e.to_string()))?;
        binds.push((objects, "/polysandbox-objects".to_string()));
    }
    let input = cx.scratch.join("in");
    std::fs::create_dir_all(&input).map_err(|e| host(e.to_string()))?;
    let test = match test_cmd {
        Some(c) => c.clone(),
        None if !runner.repo_test.is_empty() => {
            let quoted: Vec<String> = tests.iter().map(|t| shell_quote(t)).collect();
            runner
                .repo_test
                .iter()
                .map(|a| if a.contains("{tests}") { a.replace("{tests}", &quoted.join(" ")) } else { shell_quote(a) })
                .collect::<Vec<_>>()
                .join(" ")
        }
        None => runner.test.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "),
    };
    let test = test.replace("{report}", REPORT);
    let write = |f: &str, text: &str| std::fs::write(input.join(f), text).map_err(|e| host(format!("{f}: {e}")));
    write("patch.diff", &patch)?;
    write("test.patch", test_patch)?;
    write("test_files", &(crate::eval::patch::test_patch_paths(test_patch).join("\n") + "\n"))?;
    write("base_commit", base_commit)?;
    write("test.sh", &format!("{test}\n"))?;
    let nonce = crate::eval::driver::nonce();
    write("run.sh", &crate::eval::driver::repo(&nonce))?;
    Ok(Prepared {
        tree,
        mount: "/testbed".into(),
        binds: binds.into_iter().chain([(input, INPUT.to_string())]).collect(),
        command: vec!["/bin/sh".into(), format!("{INPUT}/run.sh")],
        driver: true,
        nonce,
        tampering: crate::eval::tamper::scan_patch(&patch),
        applied: patch,
    })
}
