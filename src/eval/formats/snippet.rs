//! CoderEval-style snippets: a record's solution code and test code joined into one file and
//! run by the catalogue runner's snippet command; graded by the exit status, and only when the
//! file ran to its end (a trailer line with a tag drawn for this run). Python's and
//! JavaScript's commands feed the file to the interpreter through a pipe and remove it before
//! its first statement runs, so no file holds the tag while the code runs.

use super::Format;
use crate::eval::attempt::{self, Steps};
use crate::eval::catalogue::Runner;
use crate::eval::child::{Children, Job};
use crate::eval::control;
use crate::eval::instance::{Instance, Kind, Prediction};
use crate::eval::parsers::Parser;
use crate::eval::prepare::{Context, NotRun, Prepared};
use crate::eval::records::string;
use crate::eval::verdict::Check;
use crate::eval::{InstanceResult, Options};
use serde_json::Value;
use std::path::Path;

pub struct Snippet;

impl Format for Snippet {
    fn name(&self) -> &'static str {
        "snippet"
    }

    fn read(&self, v: &Value, at: &str) -> Option<Result<Instance, String>> {
        let test = string(v, &["test", "test_code", "tests"])?;
        let Some(id) = string(v, &["instance_id", "task_id", "_id", "id"]) else {
            return Some(Err(format!("{at}: no instance_id or task_id")));
        };
        Some(Ok(Instance {
            id,
            language: string(v, &["language", "lang"]).map(|l| l.to_lowercase()).unwrap_or_else(|| "python".into()),
            image: string(v, &["image", "image_name", "docker_image"]),
            kind: Kind::Snippet {
                gold: string(v, &["solution", "canonical_solution", "code"]).unwrap_or_default(),
                stub: string(v, &["stub", "prompt", "signature"]).unwrap_or_default(),
                test,
            },
        }))
    }

    fn owns(&self, inst: &Instance) -> bool {
        matches!(inst.kind, Kind::Snippet { .. })
    }

    fn attempt(&self, o: &Options, job: &Job, scratch: &Path, logs: &Path, children: &Children) -> InstanceResult {
        attempt::run_instance(self, o, job, scratch, logs, children)
    }
}

impl Steps for Snippet {
    fn prepare(&self, job: &Job, cx: &Context) -> Result<Prepared, NotRun> {
        let (inst, pred, runner) = (&job.inst, &job.pred, &job.runner);
        let Kind::Snippet { gold, stub, test } = &inst.kind else { unreachable!("a snippet format's instance") };
        let code = match pred {
            Prediction::Gold => gold.clone(),
            Prediction::Stub => stub.clone(),
            Prediction::Code(c) => c.clone(),
            Prediction::Patch(p) => p.clone(),
            Prediction::Missing => String::new(),
            Prediction::Refused(why) => return Err(NotRun::PatchFailed(format!("prediction refused: {why}"))),
            Prediction::Files(_) => {
                return Err(NotRun::PatchFailed("a directory of files for a snippet instance: it takes code".into()))
            }
        };
        if code.trim().is_empty() {
            return Err(NotRun::EmptyPatch);
        }
        let file = runner
            .snippet_file
            .clone()
            .ok_or_else(|| NotRun::Dataset(format!("{}: the {} runner has no snippet_file", inst.id, inst.language)))?;
        let tree = cx.scratch.join("tree");
        std::fs::create_dir_all(&tree).map_err(|e| NotRun::Host(e.to_string()))?;
        // The prediction's code as bytes, in a file of ours; no tool reads it on the host.
        std::fs::write(tree.join(&file), format!("{code}\n\n{test}\n")).map_err(|e| NotRun::Host(e.to_string()))?;
        Ok(Prepared {
            tree,
            mount: "/work/snippet".into(),
            binds: vec![],
            command: runner.snippet_run.clone(),
            driver: false,
            nonce: String::new(),
            // The same static look as an exercise's solution gets, the joined file as the test
            // file: code that names it, reaches the interpreter's frames (the completion line's
            // tag is in the program it runs) or ends the process is flagged.
            tampering: crate::eval::tamper::scan_solution(
                &inst.language,
                [(file.as_str(), code.as_bytes())],
                std::slice::from_ref(&file),
            ),
            applied: code,
        })
    }

    /// The trailer: a line printed after the test code, with a tag drawn for this run.
    fn check(
        &self,
        _o: &Options,
        job: &Job,
        prepared: &Prepared,
        _r: &mut InstanceResult,
    ) -> Result<Check, (String, bool)> {
        let tag = control::new_tag();
        match job.runner.snippet_file.as_deref().and_then(|f| control::snippet_trailer(f, &tag).map(|t| (f, t))) {
            Some((f, t)) => {
                use std::io::Write;
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(prepared.tree.join(f))
                    .and_then(|mut w| w.write_all(t.as_bytes()))
                    .map_err(|e| (format!("{f}: {e}"), false))?;
                Ok(Check::Trailer(tag))
            }
            None => Ok(Check::None),
        }
    }

    /// Snippets are graded by their exit status: the test code is plain asserts.
    fn parser(&self, _runner: &Runner) -> Parser {
        Parser::ExitCode
    }
}
