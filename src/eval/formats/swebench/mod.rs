//! SWE-bench as its harness runs it (harness.rs): the instance's own image, its eval
//! script, its log parser, the harness's grading and report files.

pub mod harness;

use super::{Format, Plan};
use crate::eval::catalogue::Catalogue;
use crate::eval::child::{Children, Job};
use crate::eval::instance::{Instance, Kind, SweBenchRecord};
use crate::eval::predictions::Predictions;
use crate::eval::records::{repository_instance, string};

use crate::eval::{InstanceResult, Options};
use serde_json::Value;
use std::path::Path;

pub struct SweBench;

impl Format for SweBench {
    fn name(&self) -> &'static str {
        "swe-bench"
    }

    /// A repository record with SWE-bench's own columns.
    fn read(&self, v: &Value, at: &str) -> Option<Result<Instance, String>> {
        let mut inst = match repository_instance(v, at)? {
            Ok(i) => i,
            Err(e) => return Some(Err(e)),
        };
        let Kind::Repo { repo, swebench, .. } = &mut inst.kind else { return None };
        *swebench = Some(swebench_record(v, v.get("fix_patch").is_some(), repo)?);
        Some(Ok(inst))
    }

    fn owns(&self, inst: &Instance) -> bool {
        matches!(inst.kind, Kind::Repo { swebench: Some(_), .. })
    }

    /// Its own image and script: of a catalogue runner only the limits count (the python
    /// runner's when its language has none: Multilingual's PHP, Ruby, C), the probe is the
    /// image's /testbed, and the harness's default timeout.
    fn plan(&self, inst: &Instance, cat: &Catalogue, o: &Options) -> Option<Plan> {
        let runner = cat.get(&inst.language).or_else(|| cat.get("python"))?.clone();
        Some(Plan {
            runner: harness::runner(runner),
            image: harness::image_for(inst, o),
            timeout: format!("{}s", harness::DEFAULT_TIMEOUT_S),
        })
    }

    fn attempt(&self, o: &Options, job: &Job, scratch: &Path, logs: &Path, children: &Children) -> InstanceResult {
        harness::run_instance(o, job, scratch, logs, children)
    }

    /// The harness's grading of the test_output.txt the run left (its --rewrite_reports).
    fn regrade(
        &self,
        o: &Options,
        inst: &Instance,
        preds: &Predictions,
        old: &InstanceResult,
    ) -> Option<InstanceResult> {
        harness::regrade(o, inst, preds, old)
    }

    /// The harness's run report (`<model>.<run_id>.json`) and its per-instance report.json.
    fn write_files(
        &self,
        o: &Options,
        preds: &Predictions,
        insts: &[Instance],
        results: &[InstanceResult],
    ) -> Result<(), String> {
        if insts.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = insts.iter().map(|i| i.id.clone()).collect();
        harness::write_run_report(o, preds, &ids, results).map(|_| ())
    }
}

/// A SWE-bench record's own columns: one whose repository the harness's table knows, or that
/// brings its eval script (the newer columns, e.g. SWE-bench Multilingual). Multi-SWE-bench's
/// records are not (they carry no version and no eval script).
fn swebench_record(v: &Value, multi: bool, repo: &str) -> Option<SweBenchRecord> {
    let version = string(v, &["version"])?;
    let eval_script = string(v, &["eval_script"]).filter(|s| !s.trim().is_empty());
    if multi || (eval_script.is_none() && !harness::knows(repo)) {
        return None;
    }
    Some(SweBenchRecord {
        version,
        eval_script,
        log_parser: string(v, &["log_parser"]).filter(|s| !s.is_empty()),
        eval_type: string(v, &["eval_type"]).filter(|s| !s.is_empty()),
    })
}
