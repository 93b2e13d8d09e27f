//! Multi-SWE-bench as its harness runs it (harness.rs): the record's own image, the fix run
//! its per-repository definition gives (images/multi_swebench.json, carried over from the
//! harness's `multi_swe_bench/harness/repos/`), its parser, its grading against the record's
//! base and test-patch results, and its `final_report.json`.

pub mod harness;

use super::{Format, Plan};
use crate::eval::catalogue::Catalogue;
use crate::eval::child::{Children, Job};
use crate::eval::instance::{Instance, Kind, MultiRecord};
use crate::eval::parsers::Sets;
use crate::eval::predictions::Predictions;
use crate::eval::records::{repository_instance, string, test_list};
use crate::eval::{InstanceResult, Options};
use serde_json::Value;
use std::path::Path;

pub struct MultiSweBench;

impl Format for MultiSweBench {
    fn name(&self) -> &'static str {
        "multi-swe-bench"
    }

    /// A record with Multi-SWE-bench's columns: `org`, `repo`, `number`, `fix_patch`, and the
    /// two runs its harness grades against (`run_result`, `test_patch_result`). One without
    /// those runs cannot be graded by the harness's rule: it is a generic repository record
    /// (its f2p/p2p lists run on the language's toolchain image), as before this format.
    fn read(&self, v: &Value, at: &str) -> Option<Result<Instance, String>> {
        let present = |k: &str| v.get(k).is_some_and(|x| !x.is_null());
        if !["fix_patch", "org", "number", "run_result", "test_patch_result"].iter().all(|k| present(k)) {
            return None;
        }
        let mut inst = match repository_instance(v, at)? {
            Ok(i) => i,
            Err(e) => return Some(Err(e)),
        };
        let rec = match record(v, &inst.id) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        if let Some(lang) = harness::definition(&rec).and_then(|d| d["language"].as_str()) {
            if v.get("language").is_none() && v.get("lang").is_none() {
                inst.language = lang.to_string();
            }
        }
        let Kind::Repo { multi, .. } = &mut inst.kind else { return None };
        *multi = Some(Box::new(rec));
        Some(Ok(inst))
    }

    fn owns(&self, inst: &Instance) -> bool {
        matches!(inst.kind, Kind::Repo { multi: Some(_), .. })
    }

    /// Its own image and fix run: of a catalogue runner only the limits count (the python
    /// runner's when its language has none: C, TypeScript), the probe asks for the
    /// repository's tree in the image.
    fn plan(&self, inst: &Instance, cat: &Catalogue, _o: &Options) -> Option<Plan> {
        let Kind::Repo { multi: Some(rec), .. } = &inst.kind else { return None };
        let runner = cat.get(&inst.language).or_else(|| cat.get("python"))?.clone();
        Some(Plan {
            runner: harness::runner(runner, rec),
            image: inst.image.clone().unwrap_or_else(|| harness::image_name(rec)),
            timeout: format!("{}s", harness::DEFAULT_TIMEOUT_S),
        })
    }

    fn attempt(&self, o: &Options, job: &Job, scratch: &Path, logs: &Path, children: &Children) -> InstanceResult {
        harness::run_instance(o, job, scratch, logs, children)
    }

    /// The harness's `final_report.json`, and its per-instance report.json (written by each
    /// attempt).
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
        harness::write_final_report(o, preds, insts, results).map(|_| ())
    }
}

/// A record's Multi-SWE-bench columns.
fn record(v: &Value, id: &str) -> Result<MultiRecord, String> {
    let at = |e: String| format!("{id}: {e}");
    let number = match &v["number"] {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| at(format!("number {}: not a pull request number", v["number"])))?;
    let name = string(v, &["repo"]).ok_or_else(|| at("no repo".into()))?;
    let org = string(v, &["org"]).ok_or_else(|| at("no org".into()))?;
    let list = |k: &str| test_list(v.get(k).unwrap_or(&Value::Null)).map_err(|e| at(format!("{k}: {e}")));
    let result = |k: &str| -> Result<Option<Sets>, String> {
        match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            // A Parquet export may carry the object as a JSON string.
            Some(Value::String(s)) => serde_json::from_str::<Value>(s)
                .map_err(|e| at(format!("{k}: {e}")))
                .and_then(|x| Sets::from_json(&x).map_err(|e| at(format!("{k}: {e}"))))
                .map(Some),
            Some(x) => Sets::from_json(x).map_err(|e| at(format!("{k}: {e}"))).map(Some),
        }
    };
    let (run_result, test_patch_result) = match (result("run_result")?, result("test_patch_result")?) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(at("no run_result or test_patch_result".into())),
    };
    Ok(MultiRecord {
        org,
        name,
        number,
        number_interval: string(v, &["number_interval"]).unwrap_or_default(),
        tag: string(v, &["tag"]).unwrap_or_default(),
        base_ref: v["base"]["ref"].as_str().unwrap_or_default().to_string(),
        base_label: v["base"]["label"].as_str().unwrap_or_default().to_string(),
        f2p: list("f2p_tests")?,
        p2p: list("p2p_tests")?,
        s2p: list("s2p_tests")?,
        n2p: list("n2p_tests")?,
        run_result,
        test_patch_result,
        fix_patch_result: result("fix_patch_result")?,
    })
}
