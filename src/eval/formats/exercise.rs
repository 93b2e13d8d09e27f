//! Aider Polyglot's exercises (`<lang>/exercises/practice/<name>/` with `.meta/config.json`):
//! the prediction's solution files (or a patch of them, applied in a sandbox of its own) in a
//! copy of the exercise, the catalogue runner's test command, control tests planted beside the
//! exercise's own (control/), graded by the runner's own report.

use super::Format;
use crate::eval::attempt::{self, Steps};
use crate::eval::catalogue::Runner;
use crate::eval::child::{Children, Job};
use crate::eval::control;
use crate::eval::instance::{Instance, Kind, Prediction};
use crate::eval::parsers::Parser;
use crate::eval::prepare::*;
use crate::eval::verdict::Check;
use crate::eval::{ControlMode, InstanceResult, Options};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub struct Exercise;

impl Format for Exercise {
    fn name(&self) -> &'static str {
        "aider-polyglot exercise"
    }

    fn read(&self, _record: &Value, _at: &str) -> Option<Result<Instance, String>> {
        None
    }

    fn load_dir(&self, path: &Path) -> Option<Result<Vec<Instance>, String>> {
        Some(load_dir(path))
    }

    fn owns(&self, inst: &Instance) -> bool {
        matches!(inst.kind, Kind::Exercise { .. })
    }

    fn attempt(&self, o: &Options, job: &Job, scratch: &Path, logs: &Path, children: &Children) -> InstanceResult {
        attempt::run_instance(self, o, job, scratch, logs, children)
    }
}

impl Steps for Exercise {
    fn prepare(&self, job: &Job, cx: &Context) -> Result<Prepared, NotRun> {
        prepare(&job.inst, &job.pred, &job.runner, cx)
    }

    /// The control test goes into the host's own copy of the exercise, after the prediction's
    /// solution files, with a name drawn for this run alone (see control/).
    fn check(
        &self,
        o: &Options,
        job: &Job,
        prepared: &Prepared,
        r: &mut InstanceResult,
    ) -> Result<Check, (String, bool)> {
        let Kind::Exercise { test, .. } = &job.inst.kind else { return Ok(Check::None) };
        if o.controls == ControlMode::Off {
            return Ok(Check::None);
        }
        if job.cal.as_ref().is_some_and(|e| e.control_sensitive) {
            r.controls = Some("none: calibration saw controls change this instance's own tests".into());
            return Ok(Check::None);
        }
        let plan = match o.controls {
            ControlMode::Verify | ControlMode::VerifyExpected => {
                control::PlanRequest::All { inputs: o.controls == ControlMode::Verify }
            }
            _ => control::PlanRequest::Run(
                job.cal.as_ref().filter(|e| e.controls_made == control::CANDIDATES).map(|e| e.controls.clone()),
            ),
        };
        let stale = job.cal.as_ref().is_some_and(|e| e.controls_made != control::CANDIDATES && !e.controls.is_empty());
        if job.runner.parser == Parser::ExitCode || control::lang_of(&job.inst.language).is_none() {
            return Ok(Check::None);
        }
        // In a child process: the dataset's test files are data, and nothing the model does
        // with them may end eval (see control::plant_contained).
        let req = control::Request {
            language: job.inst.language.clone(),
            parser: job.runner.parser,
            tree: prepared.tree.clone(),
            tests: test.clone(),
            plan,
        };
        let planted = match control::plant_contained(&o.binary, &req) {
            Ok(answer) => answer,
            // The generator died or hung: another attempt draws anew.
            Err(e) => return Err((format!("planting the control tests: {e}"), false)),
        };
        match planted {
            Ok(Some(mut c)) => {
                if stale && !o.controls.verifies() {
                    c.weak = Some(
                        "the calibration's candidates were made by an older polysandbox (calibrate again): each control is a copy of a real test with one expectation changed".into(),
                    );
                }
                r.controls = Some(format!(
                    "{} control{}{}",
                    c.names.len(),
                    if c.names.len() == 1 { "" } else { "s" },
                    c.weak.as_ref().map(|w| format!(" ({w})")).unwrap_or_default()
                ));
                Ok(Check::Control(c))
            }
            Ok(None) => Ok(Check::None),
            Err(e) => Err((format!("planting the control tests: {e}"), true)),
        }
    }

    fn parser(&self, runner: &Runner) -> Parser {
        runner.parser
    }
}

/// Every exercise beneath `path`, in the Aider polyglot layout.
fn load_dir(path: &Path) -> Result<Vec<Instance>, String> {
    let mut out = Vec::new();
    let mut langs: Vec<_> =
        std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?.flatten().map(|e| e.path()).collect();
    langs.sort();
    for l in langs {
        let practice = l.join("exercises/practice");
        let Ok(rd) = std::fs::read_dir(&practice) else { continue };
        let lang = l.file_name().unwrap().to_string_lossy().to_string();
        let mut dirs: Vec<_> =
            rd.flatten().map(|e| e.path()).filter(|p| p.join(".meta/config.json").is_file()).collect();
        dirs.sort();
        for d in dirs {
            out.push(exercise(&lang, &d)?);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "dataset {}: no <lang>/exercises/practice/<name>/.meta/config.json beneath it",
            path.display()
        ));
    }
    Ok(out)
}

fn exercise(lang: &str, dir: &Path) -> Result<Instance, String> {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let cfg_path = dir.join(".meta/config.json");
    let cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg_path).map_err(|e| format!("{}: {e}", cfg_path.display()))?)
            .map_err(|e| format!("{}: {e}", cfg_path.display()))?;
    let list = |k: &str| -> Vec<String> {
        cfg["files"][k].as_array().into_iter().flatten().filter_map(|x| x.as_str().map(String::from)).collect()
    };
    let (solution, test, example) = (list("solution"), list("test"), list("example"));
    if solution.is_empty() || test.is_empty() {
        return Err(format!("{}: files.solution and files.test must name files", cfg_path.display()));
    }
    for f in solution.iter().chain(&test).chain(&example) {
        if f.starts_with('/') || f.split('/').any(|c| c == "..") {
            return Err(format!("{}: file {f:?} leaves the exercise", cfg_path.display()));
        }
    }
    Ok(Instance {
        id: format!("{lang}/{name}"),
        language: lang.to_string(),
        image: None,
        kind: Kind::Exercise { dir: dir.to_path_buf(), name, solution, test, example },
    })
}

fn prepare(inst: &Instance, pred: &Prediction, runner: &Runner, cx: &Context) -> Result<Prepared, NotRun> {
    let Kind::Exercise { dir, name, solution, example, test } = &inst.kind else { unreachable!() };
    let host = |e: String| NotRun::Host(e);
    let input = cx.scratch.join("in");
    let pristine = input.join("tree");
    // The exercise as shipped, without the reference solution and the docs.
    copy_tree(dir, &pristine, &[".meta", ".docs", ".approaches", ".articles"])
        .map_err(|e| host(format!("copying {}: {e}", dir.display())))?;
    let read = |rel: &str| std::fs::read(pristine.join(rel)).ok();
    // What the prediction makes of each solution file: its bytes, or None (deleted).
    let mut files: BTreeMap<String, Option<Vec<u8>>> = BTreeMap::new();
    let mut ignored: Vec<String> = Vec::new();
    let untrusted = matches!(pred, Prediction::Files(_) | Prediction::Patch(_));
    match pred {
        Prediction::Gold => {
            for (ex, sol) in gold_files(solution, example) {
                files.insert(sol, Some(std::fs::read(dir.join(&ex)).map_err(|e| host(format!("{ex}: {e}")))?));
            }
            // Rust reference solutions declare their own dependencies.
            if dir.join(".meta/Cargo-example.toml").exists() {
                files.insert(
                    "Cargo.toml".into(),
                    Some(std::fs::read(dir.join(".meta/Cargo-example.toml")).map_err(|e| host(e.to_string()))?),
                );
            }
        }
        Prediction::Stub => {}
        Prediction::Files(given) => {
            for (rel, bytes) in given {
                files.insert(rel.clone(), Some(bytes.clone()));
            }
        }
        Prediction::Patch(p) if p.trim().is_empty() => return Err(NotRun::EmptyPatch),
        Prediction::Patch(p) => {
            crate::eval::patch::refuse_git_dir(p)
                .map_err(|why| NotRun::PatchFailed(format!("prediction refused: {why}")))?;
            let p = relative_to_exercise(p, inst, name);
            let write =
                |f: &str, text: &str| std::fs::write(input.join(f), text).map_err(|e| host(format!("{f}: {e}")));
            write("patch.diff", &p)?;
            write("solution", &(solution.join("\n") + "\n"))?;
            write("prepare.sh", &crate::eval::driver::exercise_prepare())?;
            let binds = vec!["-v".to_string(), format!("{}:{INPUT}:ro", input.display()), "-w".into(), "/".into()];
            let cmd = vec!["/bin/sh".to_string(), format!("{INPUT}/prepare.sh"), format!("/work/{name}")];
            let ran = (cx.sandbox)(&binds, &cmd).map_err(host)?;
            let Some(rec) = &ran.record else {
                return Err(host(format!(
                    "applying the patch: the sandbox left no usage record: {}",
                    ran.stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("")
                )));
            };
            use crate::sandbox::report::Status as RunStatus;
            if crate::eval::verdict::ran_short(rec) {
                return Err(NotRun::HostShort(format!(
                    "the host ran short of {} while the patch was applied: rerun",
                    rec.host_short.join(", ")
                )));
            }
            match rec.status {
                RunStatus::Timeout | RunStatus::CpuTime => {
                    return Err(NotRun::PatchFailed("applying the patch did not finish within the time limit".into()))
                }
                RunStatus::Oom => {
                    return Err(NotRun::PatchFailed("applying the patch exceeded the memory limit".into()))
                }
                RunStatus::OutputLimit => {
                    return Err(NotRun::PatchFailed("the patched solution files exceed the output limit".into()))
                }
                RunStatus::Interrupted => return Err(host("interrupted".into())),
                RunStatus::NotStarted => {
                    let why = rec.start_error.as_deref().unwrap_or("no reason given");
                    return Err(host(format!("applying the patch: the sandbox could not start: {why}")));
                }
                RunStatus::Error => {
                    return Err(host(format!("applying the patch: the sandbox failed: {}", rec.error_line())))
                }
                RunStatus::Exited | RunStatus::Signaled => {}
            }
            match crate::eval::driver::before_tests(&ran.stderr, rec.exit_code, &crate::eval::driver::nonce()) {
                Some(crate::eval::driver::Stopped::ApplyFailed) if crate::eval::verdict::shows_enfile(&ran.stderr) => {
                    return Err(NotRun::HostShort(
                        "applying the patch met the host's file table full (ENFILE: Too many open files in system): rerun"
                            .into(),
                    ))
                }
                Some(crate::eval::driver::Stopped::ApplyFailed) => {
                    return Err(NotRun::PatchFailed(
                        "no attempt applied it (git apply, --3way, --reject, patch --fuzz=5)".into(),
                    ))
                }
                Some(crate::eval::driver::Stopped::Refused(why)) => {
                    return Err(NotRun::PatchFailed(format!("prediction refused: {why}")))
                }
                Some(crate::eval::driver::Stopped::Other(Some(0))) => {}
                Some(other) if rec.exit_code != Some(0) => {
                    return Err(host(format!(
                        "applying the patch: the sandbox ended {other:?}: {}",
                        ran.stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("")
                    )))
                }
                _ => {}
            }
            let got = solution_files_from_tar(&ran.stdout, solution)
                .map_err(|why| NotRun::PatchFailed(format!("prediction refused: {why}")))?;
            for s in solution {
                files.insert(s.clone(), got.get(s).cloned());
            }
            ignored = ignored_changes(&ran.stderr, solution);
        }
        Prediction::Missing => return Err(NotRun::EmptyPatch),
        Prediction::Refused(why) => return Err(NotRun::PatchFailed(format!("prediction refused: {why}"))),
        Prediction::Code(_) => {
            return Err(NotRun::PatchFailed(
                "a code prediction for an exercise: it takes files or a model_patch".into(),
            ))
        }
    }
    // A Cargo.toml may change its dependencies, not make code run at build time.
    if untrusted {
        if let Some(Some(b)) = files.get("Cargo.toml").filter(|_| solution.iter().any(|s| s == "Cargo.toml")) {
            cargo_manifest_is_inert(b)
                .map_err(|why| NotRun::PatchFailed(format!("prediction refused: Cargo.toml {why}")))?;
        }
    }
    // The tree the tests see: a fresh copy of the exercise with the solution files written in
    // as bytes. The test files, and every file a runner loads besides the solution
    // (conftest.py, jest and babel configs, package.json, CMakeLists.txt, go.mod, a build.rs),
    // are the dataset's, whatever the prediction did.
    let tree = cx.scratch.join("tree");
    copy_tree(&pristine, &tree, &[]).map_err(|e| host(format!("copying the exercise: {e}")))?;
    let mut applied = String::new();
    for (rel, bytes) in &files {
        let at = plain_path(&tree, rel).map_err(NotRun::Dataset)?;
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent).map_err(|e| host(format!("{rel}: {e}")))?;
        }
        match bytes {
            Some(b) => std::fs::write(&at, b).map_err(|e| host(format!("{rel}: {e}")))?,
            None => {
                let _ = std::fs::remove_file(&at);
            }
        }
        if untrusted {
            applied += &crate::eval::patch::unified_diff(rel, read(rel).as_deref(), bytes.as_deref());
        }
    }
    if !ignored.is_empty() {
        applied = format!("# polysandbox: ignored the prediction's changes to files that are not the exercise's solution: {}\n{applied}", ignored.join(", "));
    }
    if matches!(pred, Prediction::Files(_)) && applied.is_empty() {
        return Err(NotRun::EmptyPatch);
    }
    // The dataset's test files as they are in the tree (no control planted yet): Go's, every
    // `_test.go` of the package.
    let test_texts: Vec<String> =
        std::fs::read_dir(tree.join(test.first().and_then(|t| t.rsplit_once('/')).map(|x| x.0).unwrap_or("")))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with("_test.go"))
            .map(|e| e.path())
            .chain(test.iter().map(|t| tree.join(t)))
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect();
    let script = runner.setup.iter().map(|s| s.as_str()).chain(["exec \"$@\""]).collect::<Vec<_>>().join(" && ");
    let mut command = vec!["sh".to_string(), "-c".into(), script, "sh".into()];
    let helpers = if inst.language == "go" { go_test_helpers(&test_texts) } else { vec![] };
    command.extend(
        runner.test.iter().map(|a| expand_test_arg(&a.replace("{only_declared}", &only_declared(&helpers)), name)),
    );
    let tampering = crate::eval::tamper::scan_solution_beside(
        &inst.language,
        files.iter().filter_map(|(rel, b)| b.as_deref().map(|b| (rel.as_str(), b))),
        test,
        Some(&test_texts),
    );
    Ok(Prepared {
        tree,
        mount: format!("/work/{name}"),
        binds: vec![],
        command,
        driver: false,
        nonce: String::new(),
        applied,
        tampering,
    })
}

/// The helper functions a Go exercise's test files declare for the solution to call (held-out
/// go/bottle-song's `Title`, a copy of the deprecated `strings.Title`): top-level functions
/// that are not tests, benchmarks, examples or fuzz targets, and that reach none of the test
/// files' package-level variables or constants (the tests' tables, the answers), directly or
/// through another function.
pub(crate) fn go_test_helpers(texts: &[String]) -> Vec<String> {
    use crate::eval::control::lex::{lex, matching, Kind, Lang};
    let mut funcs: Vec<(String, Vec<String>)> = Vec::new();
    let mut data: Vec<String> = Vec::new();
    for src in texts {
        let toks = lex(src, Lang::Go);
        let w = |k: usize| toks.get(k).map(|t| t.text(src)).unwrap_or("");
        let mut depth = 0usize;
        let mut k = 0;
        while k < toks.len() {
            match w(k) {
                "{" | "(" | "[" => depth += 1,
                "}" | ")" | "]" => depth = depth.saturating_sub(1),
                "func" if depth == 0 && toks.get(k + 1).is_some_and(|t| t.kind == Kind::Ident) && w(k + 2) == "(" => {
                    let Some(open) = (k..toks.len()).find(|&x| w(x) == "{") else { break };
                    let Some(close) = matching(src, &toks, open) else { break };
                    let used =
                        toks[open..close].iter().filter(|t| t.kind == Kind::Ident).map(|t| t.text(src).to_string());
                    funcs.push((w(k + 1).to_string(), used.collect()));
                    k = close + 1;
                    continue;
                }
                "var" | "const" if depth == 0 => {
                    if w(k + 1) == "(" {
                        let Some(close) = matching(src, &toks, k + 1) else { break };
                        let mut inner = 0usize;
                        for j in k + 2..close {
                            let line_start = src[..toks[j].start]
                                .rfind('\n')
                                .is_none_or(|n| src[n + 1..toks[j].start].trim().is_empty());
                            if inner == 0 && line_start && toks[j].kind == Kind::Ident {
                                data.push(w(j).to_string());
                            }
                            match w(j) {
                                "{" | "(" | "[" => inner += 1,
                                "}" | ")" | "]" => inner = inner.saturating_sub(1),
                                _ => {}
                            }
                        }
                        k = close + 1;
                        continue;
                    }
                    let mut j = k + 1;
                    while toks.get(j).is_some_and(|t| t.kind == Kind::Ident) {
                        data.push(w(j).to_string());
                        if w(j + 1) != "," {
                            break;
                        }
                        j += 2;
                    }
                }
                _ => {}
            }
            k += 1;
        }
    }
    let test_like = |n: &str| ["Test", "Benchmark", "Example", "Fuzz"].iter().any(|p| n.starts_with(p)) || n == "init";
    let mut bad: Vec<String> = data;
    bad.extend(funcs.iter().filter(|(n, _)| test_like(n)).map(|(n, _)| n.clone()));
    loop {
        let more: Vec<String> = funcs
            .iter()
            .filter(|(n, used)| !bad.contains(n) && used.iter().any(|u| bad.contains(u)))
            .map(|(n, _)| n.clone())
            .collect();
        if more.is_empty() {
            break;
        }
        bad.extend(more);
    }
    let mut out: Vec<String> = funcs.into_iter().map(|(n, _)| n).filter(|n| !bad.contains(n)).collect();
    out.sort();
    out.dedup();
    out
}

// ---- Exercise material and the prepare sandbox's answer ----

/// Copies dataset material (trusted) into a fresh directory of ours.
pub(crate) fn copy_tree(src: &Path, dst: &Path, skip_top: &[&str]) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for e in std::fs::read_dir(src)? {
        let e = e?;
        let name = e.file_name();
        if skip_top.iter().any(|s| name == *s) {
            continue;
        }
        let (from, to) = (e.path(), dst.join(&name));
        let ft = e.file_type()?;
        if ft.is_dir() {
            copy_tree(&from, &to, &[])?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
        } else {
            std::fs::copy(&from, &to)?;
        }
    }
    Ok(())
}

/// (example, solution path) pairs, as Exercism lays reference solutions out: an example with a
/// solution's file name replaces it; otherwise one (`example.*`, `proof.ci.js`) replaces the
/// only remaining solution file with its extension (C++: example.h is the header); any other
/// (Java's helper classes) goes beside the first solution file.
pub fn gold_files(solution: &[String], example: &[String]) -> Vec<(String, String)> {
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let ext = |p: &str| base(p).rsplit_once('.').map(|(_, e)| e.to_string()).unwrap_or_default();
    let mut sols: Vec<String> = solution.to_vec();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut rest = Vec::new();
    for ex in example {
        match sols.iter().position(|s| base(s) == base(ex)) {
            Some(i) => pairs.push((ex.clone(), sols.remove(i))),
            None => rest.push(ex.clone()),
        }
    }
    for ex in rest {
        let same: Vec<usize> = (0..sols.len()).filter(|&i| ext(&sols[i]) == ext(&ex)).collect();
        if same.len() == 1 {
            pairs.push((ex.clone(), sols.remove(same[0])));
        } else {
            let dir = solution[0].rsplit_once('/').map(|(d, _)| format!("{d}/")).unwrap_or_default();
            pairs.push((ex.clone(), format!("{dir}{}", base(&ex))));
        }
    }
    pairs
}

/// Drops the `<lang>/exercises/practice/<name>/` prefix a patch made at the benchmark's root has.
pub(crate) fn relative_to_exercise(patch: &str, inst: &Instance, name: &str) -> String {
    let prefix = format!("{}/exercises/practice/{name}/", inst.language);
    patch.replace(&format!("a/{prefix}"), "a/").replace(&format!("b/{prefix}"), "b/")
}

/// Whether a predicted Cargo.toml runs nothing at build time: no build script (`build`, or a
/// `build.rs` cargo would find: the tree's own is the dataset's), no `links`, no
/// build-dependencies, no `[patch]`/`[replace]` of sources, no proc-macro library.
pub(crate) fn cargo_manifest_is_inert(bytes: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "is not UTF-8".to_string())?;
    let t: toml::Table = text.parse().map_err(|e| format!("is not valid TOML: {e}"))?;
    let pkg = t.get("package").and_then(|v| v.as_table());
    if let Some(b) = pkg.and_then(|p| p.get("build")) {
        if b.as_bool() != Some(false) {
            return Err("names a build script".into());
        }
    }
    if pkg.and_then(|p| p.get("links")).is_some() {
        return Err("links a native library (a build script)".into());
    }
    for key in ["build-dependencies", "build_dependencies", "patch", "replace"] {
        if t.contains_key(key) {
            return Err(format!("has [{key}]"));
        }
    }
    if let Some(target) = t.get("target").and_then(|v| v.as_table()) {
        if target
            .values()
            .filter_map(|v| v.as_table())
            .any(|c| c.contains_key("build-dependencies") || c.contains_key("build_dependencies"))
        {
            return Err("has target build-dependencies".into());
        }
    }
    if t.get("lib")
        .and_then(|v| v.as_table())
        .and_then(|l| l.get("proc-macro").or(l.get("proc_macro")))
        .and_then(|v| v.as_bool())
        == Some(true)
    {
        return Err("makes a proc-macro library".into());
    }
    Ok(())
}

/// The solution files a prepare sandbox handed back: its stdout, a tar that may hold only
/// regular files at the solution's paths, each at most [`SOLUTION_FILE_CAP`]. Parsed, never
/// unpacked.
pub(crate) fn solution_files_from_tar(
    tar_bytes: &[u8],
    solution: &[String],
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    use std::io::Read;
    let mut out = BTreeMap::new();
    let mut a = tar::Archive::new(tar_bytes);
    for e in a.entries().map_err(|e| format!("the solution files: {e}"))? {
        let mut e = e.map_err(|e| format!("the solution files: {e}"))?;
        let path = e.path().map_err(|e| format!("the solution files: {e}"))?.to_string_lossy().into_owned();
        let path = path.trim_start_matches("./").to_string();
        if !solution.contains(&path) {
            return Err(format!("{path:?} is not a solution file"));
        }
        if e.header().entry_type() != tar::EntryType::Regular {
            return Err(format!("{path} is not a regular file"));
        }
        if e.size() > SOLUTION_FILE_CAP {
            return Err(format!("{path} holds {} bytes, more than {}", e.size(), SOLUTION_FILE_CAP));
        }
        let mut b = Vec::with_capacity(e.size() as usize);
        e.read_to_end(&mut b).map_err(|err| format!("{path}: {err}"))?;
        out.insert(path, b);
    }
    Ok(out)
}

/// The files a prepare sandbox listed as changed besides the solution (`diff -rq` lines), as
/// relative paths, the solution's own left out: what the logs say was not kept.
pub(crate) fn ignored_changes(stderr: &str, solution: &[String]) -> Vec<String> {
    let Some((_, list)) =
        stderr.split_once(">>>>> polysandbox: files the patch changed besides the solution (put back):\n")
    else {
        return vec![];
    };
    let tree = format!("{INPUT}/tree");
    let mut out = Vec::new();
    for l in list.lines().map_while(|l| l.strip_prefix("| ")) {
        let rel = if let Some(rest) = l.strip_prefix("Only in ") {
            let (dir, name) = rest.split_once(": ").unwrap_or((rest, ""));
            let dir = dir.strip_prefix(&tree).map(|d| d.to_string()).unwrap_or_else(|| {
                dir.split_once("/work/")
                    .map(|(_, d)| d.split_once('/').map(|x| x.1).unwrap_or("").to_string())
                    .unwrap_or_default()
            });
            let dir = dir.trim_start_matches('/');
            if dir.is_empty() {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            }
        } else if let Some(rest) = l.strip_prefix("Files ").and_then(|r| r.strip_prefix(&tree)) {
            rest.trim_start_matches('/').split(" and ").next().unwrap_or("").to_string()
        } else {
            continue;
        };
        if !rel.is_empty() && !solution.contains(&rel) && !out.contains(&rel) {
            out.push(rel.chars().map(|c| if c.is_control() { '?' } else { c }).take(300).collect());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gold_file_mapping() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            gold_files(&s(&["a.h", "a.cpp"]), &s(&[".meta/example.h", ".meta/example.cpp"])),
            vec![(".meta/example.h".into(), "a.h".into()), (".meta/example.cpp".into(), "a.cpp".into())]
        );
        assert_eq!(
            gold_files(
                &s(&["src/main/java/A.java"]),
                &s(&[".meta/src/reference/java/A.java", ".meta/src/reference/java/B.java"])
            ),
            vec![
                (".meta/src/reference/java/A.java".into(), "src/main/java/A.java".into()),
                (".meta/src/reference/java/B.java".into(), "src/main/java/B.java".into())
            ]
        );
        assert_eq!(
            gold_files(&s(&["src/lib.rs", "Cargo.toml"]), &s(&[".meta/example.rs"])),
            vec![(".meta/example.rs".into(), "src/lib.rs".into())]
        );
        assert_eq!(
            gold_files(&s(&["sum-two.js"]), &s(&[".meta/proof.ci.js"])),
            vec![(".meta/proof.ci.js".into(), "sum-two.js".into())]
        );
    }

    #[test]
    fn the_solution_comes_back_as_regular_files_only() {
        let sol = vec!["a.py".to_string(), "src/b.py".to_string()];
        let tar_of = |entries: &[(&str, tar::EntryType, &[u8])]| {
            let mut b = tar::Builder::new(Vec::new());
            for (p, t, data) in entries {
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(*t);
                h.set_size(data.len() as u64);
                h.set_mode(0o644);
                if *t == tar::EntryType::Symlink {
                    h.set_link_name("/etc/shadow").unwrap();
                    h.set_size(0);
                }
                b.append_data(&mut h, p, if *t == tar::EntryType::Symlink { &[][..] } else { *data }).unwrap();
            }
            b.into_inner().unwrap()
        };
        let ok = solution_files_from_tar(&tar_of(&[("a.py", tar::EntryType::Regular, b"x = 1\n")]), &sol).unwrap();
        assert_eq!(ok["a.py"], b"x = 1\n");
        assert!(solution_files_from_tar(&tar_of(&[("a.py", tar::EntryType::Symlink, b"")]), &sol).is_err());
        assert!(solution_files_from_tar(&tar_of(&[("conftest.py", tar::EntryType::Regular, b"x")]), &sol).is_err());
        assert!(
            solution_files_from_tar(b"not a tar at all, just bytes that go on", &sol).is_err()
                || solution_files_from_tar(b"", &sol).unwrap().is_empty()
        );
        let ig = ignored_changes(">>>>> polysandbox: files the patch changed besides the solution (put back):\n| Only in /work/x: conftest.py\n| Files /polysandbox-in/tree/t_test.py and /work/x/t_test.py differ\n| Files /polysandbox-in/tree/a.py and /work/x/a.py differ\n\n", &sol);
        assert_eq!(ig, vec!["conftest.py", "t_test.py"]);
    }

    #[test]
    fn a_predicted_cargo_manifest_runs_nothing_at_build_time() {
        let check = |text: &str| cargo_manifest_is_inert(text.as_bytes());
        let base = "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
        assert!(check(&format!("{base}[dependencies]\nregex = \"1\"\n")).is_ok());
        assert!(check(&format!("{base}build = false\n")).is_ok());
        assert!(check(&base.replace("edition", "build = \"build.rs\"\nedition")).unwrap_err().contains("build script"));
        assert!(check(&base.replace("edition", "links = \"z\"\nedition")).is_err());
        assert!(check(&format!("{base}[build-dependencies]\ncc = \"1\"\n")).is_err());
        assert!(check(&format!("{base}[target.'cfg(unix)'.build-dependencies]\ncc = \"1\"\n")).is_err());
        assert!(check(&format!("{base}[patch.crates-io]\nregex = {{ path = \"/tmp\" }}\n")).is_err());
        assert!(check(&format!("{base}[lib]\nproc-macro = true\n")).is_err());
        assert!(check("not toml [").is_err());
    }

    /// Held-out go/bottle-song: its test file declares `Title` (and `isSeparator`, `equal`) for
    /// the solution, and gold calls `Title`. The build of the solution alone may use those,
    /// never the tests' table, nor a function that reads it; a name nobody declares still fails
    /// it. Run through sh as the catalogue's command runs, a compiler's errors stood in for.
    #[test]
    fn the_build_alone_allows_the_helpers_the_test_files_declare() {
        let test = "package bottlesong\n\nimport (\n\t\"strings\"\n\t\"testing\"\n)\n\nfunc TestRecite(t *testing.T) {\n\tfor _, tc := range testCases {\n\t\tif !equal(Recite(tc.input), tc.expected) {\n\t\t\tt.Fail()\n\t\t}\n\t}\n}\n\nfunc equal(a, b []string) bool {\n\treturn len(a) == len(b)\n}\n\n// Title is a copy of strings.Title.\nfunc Title(s string) string {\n\tprev := ' '\n\treturn strings.Map(func(r rune) rune {\n\t\tif isSeparator(prev) {\n\t\t\tprev = r\n\t\t}\n\t\treturn r\n\t}, s)\n}\n\nfunc isSeparator(r rune) bool {\n\treturn r == ' '\n}\n\nfunc answers() []string {\n\treturn testCases[0].expected\n}\n\nfunc viaAnswers() int {\n\treturn len(answers())\n}\n\nfunc BenchmarkRecite(b *testing.B) {}\n";
        let cases = "package bottlesong\n\ntype bottleSongInput struct {\n\tstartBottles int\n}\n\nvar testCases = []struct {\n\tdescription string\n\texpected    []string\n}{\n\t{description: \"one\", expected: []string{\"x\"}},\n}\n\nconst (\n\tmaxBottles = 10\n)\n";
        let helpers = go_test_helpers(&[test.to_string(), cases.to_string()]);
        assert_eq!(helpers, ["Title", "equal", "isSeparator"]);
        let build = |errors: &str| {
            let d = std::env::temp_dir().join(format!("ps-alone-{}-{}", std::process::id(), errors.len()));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("errors"), errors).unwrap();
            let fake = if errors.is_empty() {
                "true".to_string()
            } else {
                format!("{{ cat {} >&2; false; }}", d.join("errors").display())
            };
            let cmd = format!("{fake} {} {} && echo TESTS RAN", only_declared(&helpers), alone());
            let o = std::process::Command::new("sh").args(["-c", &cmd]).output().unwrap();
            let _ = std::fs::remove_dir_all(&d);
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stdout).to_string(),
                String::from_utf8_lossy(&o.stderr).to_string(),
            )
        };
        // Gold: Title undefined without the test files, declared by them.
        let (code, out, err) = build("# bottlesong\n./bottle_song.go:57:42: undefined: Title\n");
        assert_eq!((code, out.as_str()), (Some(0), "TESTS RAN\n"), "{err}");
        assert!(err.contains("undefined: Title"), "the build's errors are shown: {err}");
        assert_eq!(build("").0, Some(0));
        // The tests' table, a function that reads it, a name nobody declares, another error.
        for bad in [
            "# p\n./p.go:3:5: undefined: testCases\n",
            "# p\n./p.go:3:5: undefined: Title\n./p.go:4:5: undefined: viaAnswers\n",
            "# p\n./p.go:3:5: undefined: Nowhere\n",
            "# p\n./p.go:3:5: syntax error: unexpected }\n",
        ] {
            let (code, out, err) = build(bad);
            assert_eq!(code, Some(ALONE_FAILED), "{bad}: {out}{err}");
            assert!(out.is_empty() && err.contains(ALONE_MARKER), "{bad}: {out}{err}");
        }
        // No helper declared: as before, any error fails.
        let cmd = format!(
            "{{ echo './p.go:1:1: undefined: Title' >&2; false; }} {} {} && echo TESTS RAN",
            only_declared(&[]),
            alone()
        );
        let o = std::process::Command::new("sh").args(["-c", &cmd]).output().unwrap();
        assert_eq!(o.status.code(), Some(ALONE_FAILED));
    }
}
