//! Benchmark formats: each one module behind [`Format`], peers in one registry.
//!
//! A format reads its records (or lays out a dataset directory), plans an instance's image,
//! runner and default time limit, runs one attempt (prepare the prediction, run the tests in a
//! sandbox, grade them) and writes its own files beside eval's. The scheduler knows formats only
//! through this registry: it asks [`of`] which one an instance is and calls it.
//!
//! Adding a format is a module here and a line in [`REGISTRY`], as Multi-SWE-bench was added:
//! `multi_swebench/`, whose `read` takes records with `org`, `repo`, `number` and `fix_patch`
//! (before [`repo::Repo`], which takes other repository records on the generic toolchain
//! images), whose `plan` names the harness's image (`mswebench/<org>_m_<repo>:pr-<number>`),
//! whose `attempt` runs the harness's fix run for the repository (its per-repository
//! definitions carried as data in images/multi_swebench.json, as `images/swebench.json` carries
//! SWE-bench's) and grades with the parser the registry (parsers) names for it, and whose
//! `write_files` writes the harness's `final_report.json`.

pub mod exercise;
pub mod multi_swebench;
pub mod repo;
pub mod snippet;
pub mod swebench;

use super::catalogue::{Catalogue, Runner};
use super::child::{Children, Job};
use super::instance::Instance;
use super::predictions::Predictions;
use super::{InstanceResult, Options};
use serde_json::Value;
use std::path::Path;

/// How an instance runs: the runner whose limits (and, for catalogue formats, whose commands)
/// it gets, its image, and its time limit unless `--timeout` says otherwise.
pub struct Plan {
    pub runner: Runner,
    pub image: String,
    pub timeout: String,
}

pub trait Format: Sync {
    /// The format's name, as errors and documents say it.
    fn name(&self) -> &'static str;

    /// Reads a dataset record as this format's instance: `None` when the record is not this
    /// format's; `Some(Err)` when it is but is malformed (`at` names the record).
    fn read(&self, record: &Value, at: &str) -> Option<Result<Instance, String>>;

    /// Reads a dataset directory laid out the way this format lays its datasets out: `None`
    /// when it has no directory layout.
    fn load_dir(&self, _dir: &Path) -> Option<Result<Vec<Instance>, String>> {
        None
    }

    /// Whether an instance (read by some format) is this format's.
    fn owns(&self, inst: &Instance) -> bool;

    /// The instance's runner, image and default time limit: by default the catalogue's runner
    /// for its language, the image the record names or else the runner's.
    fn plan(&self, inst: &Instance, cat: &Catalogue, _o: &Options) -> Option<Plan> {
        let runner = cat.get(&inst.language)?.clone();
        let image = inst.image.clone().unwrap_or_else(|| runner.image.clone());
        let timeout = runner.timeout.clone();
        Some(Plan { runner, image, timeout })
    }

    /// One attempt: the prediction prepared, the tests run in a sandbox, the run graded.
    fn attempt(&self, o: &Options, job: &Job, scratch: &Path, logs: &Path, children: &Children) -> InstanceResult;

    /// `--rewrite_reports`: an instance's earlier result graded again from the logs its run
    /// left in `o.output`, nothing run: None when this format's logs cannot change it (the
    /// default: results are kept as graded).
    fn regrade(
        &self,
        _o: &Options,
        _inst: &Instance,
        _preds: &Predictions,
        _old: &InstanceResult,
    ) -> Option<InstanceResult> {
        None
    }

    /// The format's own files beside eval's, for the instances of this run that are its own
    /// (`insts`, in the order selected); `results` holds every instance's.
    fn write_files(
        &self,
        _o: &Options,
        _preds: &Predictions,
        _insts: &[Instance],
        _results: &[InstanceResult],
    ) -> Result<(), String> {
        Ok(())
    }
}

/// Every format, in the order a record is offered to them: the first that reads it has it.
pub static REGISTRY: &[&dyn Format] =
    &[&swebench::SweBench, &multi_swebench::MultiSweBench, &repo::Repo, &snippet::Snippet, &exercise::Exercise];

/// The format an instance is (the one that read it).
pub fn of(inst: &Instance) -> &'static dyn Format {
    REGISTRY.iter().copied().find(|f| f.owns(inst)).expect("every instance was read by a format of the registry")
}

/// A record read by the first format that takes it.
pub fn read_record(record: &Value, at: &str) -> Result<Instance, String> {
    REGISTRY.iter().find_map(|f| f.read(record, at)).unwrap_or_else(|| {
        Err(format!(
            "{at}: no format reads it: neither base_commit (SWE-bench), fix_patch (Multi-SWE-bench) nor test (CoderEval)"
        ))
    })
}

/// A dataset directory read by the first format with a directory layout that finds it its own.
pub fn load_dir(dir: &Path) -> Result<Vec<Instance>, String> {
    REGISTRY
        .iter()
        .find_map(|f| f.load_dir(dir))
        .unwrap_or_else(|| Err(format!("dataset {}: no format lays out a directory so", dir.display())))
}

#[cfg(test)]
mod tests {
    //! Dataset detection: which format reads a record or a directory, and what each refuses.
    use super::*;
    use crate::eval::instance::Kind;
    use serde_json::json;

    fn format_of(v: Value) -> Result<&'static str, String> {
        read_record(&v, "record 1").map(|i| of(&i).name())
    }

    #[test]
    fn a_record_is_read_by_the_first_format_that_takes_it() {
        // SWE-bench: base_commit, a version, a repository the harness table knows.
        let swe = json!({"instance_id": "astropy__astropy-12907", "repo": "astropy/astropy",
            "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607", "version": "4.3",
            "patch": "", "test_patch": "", "FAIL_TO_PASS": "[\"a\"]", "PASS_TO_PASS": "[]"});
        assert_eq!(format_of(swe.clone()), Ok("swe-bench"));
        // The same record for a repository the table does not know, without an eval script:
        // a generic repository; with one, SWE-bench's.
        let mut other = swe.clone();
        other["repo"] = json!("someone/elsewhere");
        assert_eq!(format_of(other.clone()), Ok("repository"));
        other["eval_script"] = json!("pytest -rA");
        assert_eq!(format_of(other), Ok("swe-bench"));
        // No version: a generic repository record.
        let mut plain = swe;
        plain.as_object_mut().unwrap().remove("version");
        assert_eq!(format_of(plain), Ok("repository"));
        // Multi-SWE-bench's shape (org, repo, number, base.sha, fix_patch, the harness's own
        // results): its format, id made from its parts, language from the harness's table.
        let result = json!({"passed_count": 1, "failed_count": 0, "skipped_count": 0,
            "passed_tests": ["t"], "failed_tests": [], "skipped_tests": []});
        let mut multi = json!({"org": "sharkdp", "repo": "fd", "number": 513, "base": {"sha": "abc123"},
            "fix_patch": "", "test_patch": "", "f2p_tests": {}, "p2p_tests": {}, "version": "1",
            "run_result": result, "test_patch_result": result});
        let i = read_record(&multi, "r").unwrap();
        assert_eq!((of(&i).name(), i.id.as_str(), i.language.as_str()), ("multi-swe-bench", "sharkdp__fd-513", "rust"));
        // Without the harness's own two runs it cannot be graded as the harness grades it: a
        // generic repository record, named owner/name from org and repo.
        multi.as_object_mut().unwrap().remove("test_patch_result");
        let i = read_record(&multi, "r").unwrap();
        assert_eq!((of(&i).name(), i.id.as_str()), ("repository", "sharkdp__fd-513"));
        // A fix_patch record without org and number: a generic repository's.
        let plain = json!({"repo": "o/r", "instance_id": "o__r-1", "base_commit": "abc", "fix_patch": ""});
        assert_eq!(format_of(plain), Ok("repository"));
        // CoderEval-style snippets: a test and an id.
        let snippet = json!({"task_id": "t1", "test": "assert f() == 1", "language": "Python"});
        let i = read_record(&snippet, "r").unwrap();
        assert_eq!((of(&i).name(), i.language.as_str()), ("snippet", "python"));
    }

    /// Formats are told apart by name (the scheduler groups instances so for each one's
    /// files): unit structs may share an address, so a pointer says nothing.
    #[test]
    fn every_format_has_a_name_of_its_own() {
        let names: std::collections::BTreeSet<&str> = REGISTRY.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), REGISTRY.len());
    }

    #[test]
    fn a_record_no_format_reads_or_a_malformed_one_is_refused_with_its_place() {
        let e = format_of(json!({"instance_id": "x", "problem": "?"})).unwrap_err();
        assert!(e.starts_with("record 1: no format reads it"), "{e}");
        let e = format_of(json!({"test": "assert True"})).unwrap_err();
        assert_eq!(e, "record 1: no instance_id or task_id");
        let e = format_of(json!({"base_commit": "abc", "instance_id": "i"})).unwrap_err();
        assert_eq!(e, "record 1: no repo");
        let e =
            format_of(json!({"repo": "o/r", "base_commit": "abc", "instance_id": "i", "FAIL_TO_PASS": 3})).unwrap_err();
        assert!(e.starts_with("i: "), "{e}");
    }

    #[test]
    fn a_directory_is_an_exercise_dataset_or_nothing() {
        let d = std::env::temp_dir().join(format!("psb-formats-{}", std::process::id()));
        let ex = d.join("go/exercises/practice/two-fer");
        std::fs::create_dir_all(ex.join(".meta")).unwrap();
        std::fs::write(
            ex.join(".meta/config.json"),
            r#"{"files": {"solution": ["two_fer.go"], "test": ["two_fer_test.go"], "example": [".meta/example.go"]}}"#,
        )
        .unwrap();
        let got = load_dir(&d).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].id.as_str(), of(&got[0]).name()), ("go/two-fer", "aider-polyglot exercise"));
        assert!(matches!(&got[0].kind, Kind::Exercise { .. }));
        // A file leaving the exercise is refused.
        std::fs::write(ex.join(".meta/config.json"), r#"{"files": {"solution": ["../x.go"], "test": ["t.go"]}}"#)
            .unwrap();
        assert!(load_dir(&d).unwrap_err().contains("leaves the exercise"));
        let empty = d.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        assert!(load_dir(&empty).unwrap_err().contains("no <lang>/exercises/practice/<name>/.meta/config.json"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
