//! SWE-bench as its users run it (#14), on the real records in ../shared/swebench: the replica
//! images (built by `bash .ci/setup` with `rootfs/build.sh swebench`, in root's store), the
//! records' own eval scripts and parsers or the ones made from the harness's table, JSON, JSONL
//! and Parquet input, the harness's report files, patches applied inside the sandbox, and the
//! images pulled from a registry through a docker.io mirror (as root and as the unprivileged
//! user, each into a store of its own).
mod common;

use common::eval::write_records;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench")
}

fn records() -> Vec<Value> {
    let t = std::fs::read_to_string(shared().join("instances.jsonl")).unwrap();
    t.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn ids() -> Vec<String> {
    records().iter().map(|r| r["instance_id"].as_str().unwrap().to_string()).collect()
}

/// Whether root's store has every replica; if not, says so on fd 2 (the test is then skipped).
fn replicas_ready(test: &str) -> bool {
    if !shared().join("instances.jsonl").exists() {
        skip(test, "no ../shared/swebench");
        return false;
    }
    if !is_root() {
        skip(test, "the replica images are in root's store (bash .ci/setup builds them as root)");
        return false;
    }
    let o = Mode::Root.command().args(["images", "--format", "{{.Repository}}:{{.Tag}}"]).output().unwrap();
    let listed = stdout(&o);
    let missing: Vec<String> = records()
        .iter()
        .map(|r| r["image"].as_str().unwrap().to_string())
        .filter(|i| !listed.contains(i.as_str()))
        .collect();
    if !missing.is_empty() {
        skip(test, &format!("replica images missing from root's store ({}): run bash .ci/setup", missing.join(", ")));
        return false;
    }
    true
}

struct Run {
    out: Output,
    dir: PathBuf,
}

impl Run {
    fn results(&self) -> BTreeMap<String, Value> {
        let text = std::fs::read_to_string(self.dir.join("results.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|r| (r["instance_id"].as_str().unwrap().to_string(), r))
            .collect()
    }
    fn verdicts(&self) -> BTreeMap<String, String> {
        self.results().into_iter().map(|(k, r)| (k, r["verdict"].as_str().unwrap().to_string())).collect()
    }
    fn json(&self, rel: &str) -> Value {
        let p = self.dir.join(rel);
        serde_json::from_str(
            &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}\n{}", p.display(), stderr(&self.out))),
        )
        .unwrap()
    }
    fn text(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }
}

fn eval(m: Mode, name: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = m.owned_dir(name).join("out");
    let mut c = m.command();
    c.arg("eval").args(args).arg("-o").arg(&dir).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    Run { out: c.output().unwrap(), dir }
}

fn all(v: &BTreeMap<String, String>, verdict: &str) -> bool {
    v.len() == ids().len() && v.values().all(|x| x == verdict)
}

/// The records without the newer columns (image, eval_script, log_parser, eval_type), as the
/// dataset was published before them.
fn classic(recs: &[Value]) -> Vec<Value> {
    recs.iter()
        .map(|r| {
            let mut r = r.clone();
            for k in ["image", "eval_script", "log_parser", "eval_type"] {
                r.as_object_mut().unwrap().remove(k);
            }
            r
        })
        .collect()
}

/// JSONL to Parquet with pyarrow, as Hugging Face's `datasets` writes the published files (a
/// venv that .ci/setup makes).
fn parquet(jsonl: &Path) -> Option<PathBuf> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/pyarrow/bin/python");
    if !py.exists() {
        return None;
    }
    let out = jsonl.with_extension("parquet");
    let script = "import sys, json, pyarrow as pa, pyarrow.parquet as pq\nrows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]\npq.write_table(pa.Table.from_pylist(rows), sys.argv[2])\n";
    let o = Command::new(py).arg("-c").arg(script).arg(jsonl).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    Some(out)
}

/// Gold resolves every record, no patch resolves none, an empty model_patch is not run, two
/// runs (JSONL, then Parquet) agree test by test; the harness's files are where its tools
/// look for them.
#[test]
fn gold_resolves_every_record_no_patch_none_and_runs_agree() {
    if !replicas_ready("gold_resolves_every_record_no_patch_none_and_runs_agree") {
        return;
    }
    let m = Mode::Root;
    let recs = records();
    let file = write_records(m, "all.jsonl", &recs);
    let f = file.to_str().unwrap();
    let a = eval(m, "swe-gold-a", &[f, "-p", "gold", "--max-workers", "2", "--run-id", "first"], &[]);
    assert!(all(&a.verdicts(), "resolved"), "{:?}\n{}", a.verdicts(), stderr(&a.out));
    // The second run reads the same records as Parquet, the way the dataset is published
    // (JSONL again without pyarrow): test by test, the runs agree.
    let pq = parquet(&file);
    let pq_arg = pq.as_ref().map_or(f.to_string(), |p| p.to_string_lossy().into_owned());
    if pq.is_none() {
        skip(
            "gold_resolves_every_record_no_patch_none_and_runs_agree (Parquet half)",
            "no .cache/pyarrow: run bash .ci/setup",
        );
    }
    // ... and without per-test measurement, which the first had on (the default).
    let b = eval(m, "swe-gold-b", &[&pq_arg, "-p", "gold", "-j", "2", "--run_id", "second", "--per-test", "off"], &[]);
    assert!(all(&b.verdicts(), "resolved"), "{:?}", b.verdicts());
    // Test by test, the two runs agree: the pytest plugin that measured the first changed no
    // test's outcome (pytest's own suite included, whose inner runs print PASSED lines too).
    let (ra, rb) = (a.results(), b.results());
    let statuses = |r: &Value| -> Vec<(String, String)> {
        r["tests"].as_array().unwrap().iter().map(|t| (t["name"].to_string(), t["status"].to_string())).collect()
    };
    for r in &recs {
        let id = r["instance_id"].as_str().unwrap().to_string();
        assert_eq!(statuses(&ra[&id]), statuses(&rb[&id]), "{id}: the runs disagree");
        assert!(!ra[&id]["tests"].as_array().unwrap().is_empty(), "{id}: no tests parsed");
        // Every test of the two lists has its numbers (all 7 run pytest itself), but a name
        // the harness's parser cut at a space that several node ids share (pytest-7373's
        // `test_mark_option[xyz`): that name is no one test.
        let usage: BTreeMap<String, Value> = ra[&id]["tests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| !t["usage"].is_null())
            .map(|t| (t["name"].as_str().unwrap().to_string(), t["usage"].clone()))
            .collect();
        let lists: Vec<String> = ["FAIL_TO_PASS", "PASS_TO_PASS"]
            .iter()
            .flat_map(|k| serde_json::from_str::<Vec<String>>(r[*k].as_str().unwrap()).unwrap())
            .collect();
        for t in &lists {
            let cut = t.contains('[') && !t.ends_with(']');
            assert!(usage.contains_key(t) || cut, "{id}: {t} has no per-test usage");
            if let Some(u) = usage.get(t) {
                assert_eq!(u["method"], "in-runner", "{id} {t}: {u}");
                assert!(u["memory_peak_bytes"].as_u64().unwrap() > 1 << 20, "{id} {t}: {u}");
                assert!(u["wall_s"].as_f64().unwrap() > 0.0, "{id} {t}: {u}");
            }
        }
        assert!(usage.len() * 10 >= lists.len() * 9, "{id}: {} of {} measured", usage.len(), lists.len());
        assert!(rb[&id]["tests"].as_array().unwrap().iter().all(|t| t["usage"].is_null()), "{id}: measured while off");
    }
    // The harness's files.
    let report = a.json("gold.first.json");
    assert_eq!(report["resolved_instances"], 7, "{report}");
    assert_eq!(report["completed_instances"], 7);
    assert_eq!(report["error_instances"], 0);
    assert_eq!(report["schema_version"], 2);
    for r in &recs {
        let id = r["instance_id"].as_str().unwrap();
        let d = format!("logs/run_evaluation/first/gold/{id}");
        let rep = a.json(&format!("{d}/report.json"));
        assert_eq!(rep[id]["resolved"], true, "{rep}");
        assert_eq!(rep[id]["patch_successfully_applied"], true);
        assert_eq!(rep[id]["tests_status"]["FAIL_TO_PASS"]["failure"], serde_json::json!([]));
        let out = a.text(&format!("{d}/test_output.txt"));
        assert!(out.contains(">>>>> Start Test Output") && out.contains(">>>>> End Test Output"), "{id}");
        assert_eq!(a.text(&format!("{d}/patch.diff")), r["patch"].as_str().unwrap());
        assert_eq!(a.text(&format!("{d}/eval.sh")), r["eval_script"].as_str().unwrap());
        let usage = a.json(&format!("{d}/usage.json"));
        assert!(
            usage["memory_peak_bytes"].as_u64().unwrap() > 0 && usage["wall_time_s"].as_f64().unwrap() > 0.0,
            "{usage}"
        );
        let log = a.text(&format!("{d}/run_instance.log"));
        assert!(log.contains(">>>>> Applied Patch") && log.contains("network: none"), "{log}");
    }
    // No patch at all: the tests at the base commit; every FAIL_TO_PASS test fails. The
    // records without the newer columns, as Parquet (as JSON without pyarrow).
    let classic_jsonl = write_records(m, "pq-classic.jsonl", &classic(&recs));
    let stub_records = parquet(&classic_jsonl).unwrap_or(classic_jsonl);
    let stub = eval(m, "swe-stub", &[stub_records.to_str().unwrap(), "-p", "stub", "-j", "2"], &[]);
    assert!(all(&stub.verdicts(), "unresolved"), "{:?}", stub.verdicts());
    for (id, r) in stub.results() {
        assert!(!r["fail_to_pass"]["failure"].as_array().unwrap().is_empty(), "{id}: {r}");
    }
    // An empty model_patch is not run, as the harness does not run it.
    let preds = m.owned_dir("records").join("empty.jsonl");
    std::fs::write(&preds, recs.iter().map(|r| serde_json::json!({"instance_id": r["instance_id"], "model_name_or_path": "org/empty", "model_patch": ""}).to_string() + "\n").collect::<String>()).unwrap();
    let empty = eval(m, "swe-empty", &[f, "-p", preds.to_str().unwrap()], &[]);
    assert!(all(&empty.verdicts(), "empty_patch"), "{:?}", empty.verdicts());
    let report = empty.json("org__empty.polysandbox.json");
    assert_eq!(report["empty_patch_instances"], 7, "{report}");
    assert_eq!(report["resolved_instances"], 0);
}

/// Predictions for some of the records: an empty patch (`""` or `null`) is the harness's
/// empty_patch, an instance with no prediction is apart (not submitted, in the harness's run
/// report incomplete), each said before the run; neither is run, and the exit status says not
/// everything resolved.
#[test]
fn instances_without_a_prediction_are_counted_apart_from_empty_patches() {
    if !replicas_ready("instances_without_a_prediction_are_counted_apart_from_empty_patches") {
        return;
    }
    let m = Mode::Root;
    let recs = records();
    let file = write_records(m, "all.jsonl", &recs);
    let (a, b) = (recs[0]["instance_id"].as_str().unwrap(), recs[1]["instance_id"].as_str().unwrap());
    let preds = write_records(
        m,
        "two.jsonl",
        &[
            serde_json::json!({"instance_id": a, "model_name_or_path": "m", "model_patch": ""}),
            serde_json::json!({"instance_id": b, "model_name_or_path": "m", "model_patch": null}),
        ],
    );
    let reports = m.owned_dir("swe-some-reports").join("r");
    let run = eval(
        m,
        "swe-some",
        &[
            file.to_str().unwrap(),
            "-p",
            preds.to_str().unwrap(),
            "--no-calibration",
            "--report_dir",
            reports.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code(&run.out), 1, "{}", stderr(&run.out));
    let err = stderr(&run.out);
    assert!(err.contains("5 of the 7 selected instances have no prediction in"), "{err}");
    let v = run.verdicts();
    assert_eq!((v[a].as_str(), v[b].as_str()), ("empty_patch", "empty_patch"), "{v:?}");
    assert_eq!(v.values().filter(|x| *x == "no_prediction").count(), 5, "{v:?}");
    let ours = run.json("report.json");
    assert_eq!(ours["empty_patch_instances"], 2, "{ours}");
    assert_eq!(ours["no_prediction_instances"], 5, "{ours}");
    assert_eq!(ours["submitted_instances"], 2, "{ours}");
    assert_eq!(ours["total_instances"], 7, "{ours}");
    let harness = run.json("m.polysandbox.json");
    assert_eq!(harness["empty_patch_instances"], 2, "{harness}");
    assert_eq!(harness["submitted_instances"], 2, "{harness}");
    assert_eq!(harness["incomplete_ids"].as_array().unwrap().len(), 5, "{harness}");
    // --report_dir (the harness's): the run report there too.
    assert_eq!(std::fs::read_to_string(reports.join("m.polysandbox.json")).unwrap(), run.text("m.polysandbox.json"));
    // Nothing ran: no sandbox's usage record anywhere in the output.
    let o = Command::new("find").arg(&run.dir).args(["-name", "usage.json"]).output().unwrap();
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

/// `--rewrite_reports` (the harness's): the run in -o graded again from the test_output.txt it
/// left, nothing run, every report written again: a log whose FAIL_TO_PASS test now reads
/// FAILED makes the instance unresolved (exit 1), the log as it was makes it resolved again.
#[test]
fn rewrite_reports_grades_the_logs_again_and_runs_nothing() {
    if !replicas_ready("rewrite_reports_grades_the_logs_again_and_runs_nothing") {
        return;
    }
    let m = Mode::Root;
    let file = write_records(m, "all.jsonl", &records());
    let f = file.to_str().unwrap();
    let id = "pallets__flask-4992";
    let test = "tests/test_config.py::test_config_from_file_toml";
    let first = eval(m, "swe-rewrite", &[f, "-p", "gold", "-i", id, "-id", "again"], &[]);
    assert_eq!(code(&first.out), 0, "{}", stderr(&first.out));
    let hdir = first.dir.join(format!("logs/run_evaluation/again/gold/{id}"));
    let log = std::fs::read_to_string(hdir.join("test_output.txt")).unwrap();
    let usage = std::fs::read(hdir.join("usage.json")).unwrap();
    let passed = format!("PASSED {test}");
    assert!(log.contains(&passed), "{log}");
    let rewrite = || {
        let mut c = m.command();
        c.args(["eval", f, "-p", "gold", "-i", id, "-id", "again", "--rewrite_reports", "True", "-o"]).arg(&first.dir);
        c.stdin(Stdio::null()).output().unwrap()
    };
    std::fs::write(hdir.join("test_output.txt"), log.replace(&passed, &format!("FAILED {test}"))).unwrap();
    let o = rewrite();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nothing ran") && stderr(&o).contains(&format!("{id} resolved -> unresolved")),
        "{}",
        stderr(&o)
    );
    let r = &first.results()[id];
    assert_eq!(r["verdict"], "unresolved", "{r}");
    assert_eq!(r["fail_to_pass"]["failure"], serde_json::json!([test]), "{r}");
    assert_eq!(first.results().len(), 1);
    let rep = first.json(&format!("logs/run_evaluation/again/gold/{id}/report.json"));
    assert_eq!(rep[id]["resolved"], false, "{rep}");
    assert_eq!(first.json("gold.again.json")["resolved_instances"], 0);
    assert_eq!(first.json("report.json")["unresolved_instances"], 1);
    // Nothing ran: the sandbox's record is the first run's.
    assert_eq!(std::fs::read(hdir.join("usage.json")).unwrap(), usage);
    std::fs::write(hdir.join("test_output.txt"), &log).unwrap();
    let o = rewrite();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(first.results()[id]["verdict"], "resolved");
    assert_eq!(first.json("gold.again.json")["resolved_instances"], 1);
    // An output directory with no run in it: one line, nothing written.
    let empty = m.owned_dir("swe-rewrite-none").join("out");
    let mut c = m.command();
    c.args(["eval", f, "-p", "gold", "--rewrite_reports", "-o"]).arg(&empty);
    let o = c.stdin(Stdio::null()).output().unwrap();
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(stderr(&o).contains("holds no results of an earlier run"), "{}", stderr(&o));
    assert!(!empty.exists());
}

/// Without the newer columns the image name, eval script and parser are derived as the
/// harness derives them, and grade the same; the published formats (a JSON list here,
/// Parquet in the test above) are read as JSONL is.
#[test]
fn records_without_the_newer_columns_grade_the_same() {
    if !replicas_ready("records_without_the_newer_columns_grade_the_same") {
        return;
    }
    let m = Mode::Root;
    let recs = records();
    let old = write_records(m, "classic.json", &classic(&recs));
    let run = eval(m, "swe-classic", &[old.to_str().unwrap(), "-p", "gold", "-j", "2"], &[]);
    assert!(all(&run.verdicts(), "resolved"), "{:?}\n{}", run.verdicts(), stderr(&run.out));
    for r in &recs {
        let id = r["instance_id"].as_str().unwrap();
        // The script made from the harness's table is the record's own, byte for byte.
        assert_eq!(
            run.text(&format!("logs/run_evaluation/polysandbox/gold/{id}/eval.sh")),
            r["eval_script"].as_str().unwrap(),
            "{id}"
        );
        assert_eq!(run.results()[id]["image"], r["image"]);
    }
}

/// The model patch reaches only the sandbox: it is applied there, by the image's git and
/// patch, in the harness's three attempts. A patch that applies nowhere is `patch_failed` (an
/// error in the harness's report, as there); one that needs fuzz goes on with `patch`; a patch
/// that links to a host file reads nothing of the host's; edits to the test files are undone by
/// the eval script, as in the harness.
#[test]
fn patches_are_applied_in_the_sandbox_never_on_the_host() {
    if !replicas_ready("patches_are_applied_in_the_sandbox_never_on_the_host") {
        return;
    }
    let m = Mode::Root;
    let recs = records();
    let rec = recs.iter().find(|r| r["instance_id"] == "pallets__flask-4992").unwrap().clone();
    let id = "pallets__flask-4992";
    let gold = rec["patch"].as_str().unwrap().to_string();
    let marker = format!("HOSTSECRET{}x{}", std::process::id(), unique());
    let secret = m.writable_file("swe-secret.txt");
    std::fs::write(&secret, format!("{marker}\n")).unwrap();
    // Gold with its hunks moved by 3 lines and one context line changed: git apply refuses it,
    // patch --fuzz takes it.
    let fuzzy = {
        let mut out = String::new();
        let mut changed = false;
        for l in gold.lines() {
            if let Some(rest) = l.strip_prefix("@@ -") {
                let (a, tail) = rest.split_once(' ').unwrap();
                let (start, len) = a.split_once(',').unwrap_or((a, "1"));
                let n: usize = start.parse().unwrap();
                out.push_str(&format!("@@ -{},{len} {tail}\n", n + 3));
            } else if !changed && l.starts_with(' ') && l.trim().len() > 10 {
                out.push_str(&format!(" {}  # context\n", &l[1..]));
                changed = true;
            } else {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    };
    let link = format!("diff --git a/leak b/leak\nnew file mode 120000\n--- /dev/null\n+++ b/leak\n@@ -0,0 +1 @@\n+{}\n\\ No newline at end of file\n", secret.display());
    // (tests/test_config.py at the base commit begins with these three lines.)
    let tests_only = "diff --git a/tests/test_config.py b/tests/test_config.py\n--- a/tests/test_config.py\n+++ b/tests/test_config.py\n@@ -1,3 +1,4 @@\n+raise SystemExit('a prediction edited the tests')\n import json\n import os\n import textwrap\n".to_string();
    let cases: Vec<(&str, String, &str)> = vec![
        ("garbage", "diff --git a/nothing.py b/nothing.py\n--- a/nothing.py\n+++ b/nothing.py\n@@ -1,1 +1,1 @@\n-no such line\n+x\n".into(), "patch_failed"),
        ("fuzzy", fuzzy, "resolved"),
        ("link", link.clone() + &gold, "resolved"),
        ("link-only", link, "unresolved"),
        // The fifth red team's: gold plus `__init__.py`'s unchecked-hash bytecode with a no-op
        // pytest `runtest`, as a GIT binary patch (no `+` line to scan): it was `resolved` under
        // --strict with no flag. Now decisive, with or without --strict.
        (
            "pyc",
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval/attacks/flask-4992-pyc.patch"))
                .unwrap(),
            "unresolved",
        ),
    ];
    let dir = m.owned_dir("swe-patches");
    let records_file = write_records(m, "one.jsonl", std::slice::from_ref(&rec));
    for (name, patch, want) in cases {
        let preds = dir.join(format!("{name}.jsonl"));
        std::fs::write(
            &preds,
            serde_json::json!({"instance_id": id, "model_name_or_path": format!("m/{name}"), "model_patch": patch})
                .to_string(),
        )
        .unwrap();
        let run = eval(
            m,
            &format!("swe-patch-{name}"),
            &[records_file.to_str().unwrap(), "-p", preds.to_str().unwrap()],
            &[],
        );
        assert_eq!(run.verdicts()[id], want, "{name}: {}", run.results()[id]);
        let o = Command::new("grep").args(["-rls", &marker]).arg(&run.dir).output().unwrap();
        assert!(stdout(&o).is_empty(), "{name}: a host file reached the logs: {}", stdout(&o));
        let log = run.text(&format!("logs/run_evaluation/polysandbox/m__{name}/{id}/run_instance.log"));
        match name {
            "garbage" => {
                assert!(log.contains(">>>>> Patch Apply Failed"), "{log}");
                let report = run.json(&format!("m__{name}.polysandbox.json"));
                assert_eq!(report["error_ids"], serde_json::json!([id]), "{report}");
            }
            "fuzzy" => assert!(log.contains(">>>>> Applied Patch (patch --batch --forward --fuzz=5 -p1 -i)"), "{log}"),
            _ => {}
        }
    }
    // A prediction that is not Unicode (Python's json writes `\udce4` for a byte it kept) is
    // that prediction's failure: before, the file was refused and no instance graded.
    let preds = dir.join("surrogate.jsonl");
    let line =
        serde_json::json!({"instance_id": id, "model_name_or_path": "m", "model_patch": gold.clone() + "SURROGATE"})
            .to_string()
            .replace("SURROGATE", "\\udce4");
    std::fs::write(&preds, line).unwrap();
    let run = eval(m, "swe-patch-surrogate", &[records_file.to_str().unwrap(), "-p", preds.to_str().unwrap()], &[]);
    assert_eq!(run.verdicts()[id], "patch_failed", "{}", run.results()[id]);
    assert!(run.results()[id].to_string().contains("unpaired surrogate"), "{}", run.results()[id]);

    // The prediction's edits to the test files are undone before the tests run (the eval
    // script checks them out again): gold with them still resolves, they alone do not.
    for (name, patch, want) in
        [("tests-and-gold", tests_only.clone() + &gold, "resolved"), ("tests", tests_only, "unresolved")]
    {
        let preds = dir.join(format!("{name}.jsonl"));
        std::fs::write(
            &preds,
            serde_json::json!({"instance_id": id, "model_name_or_path": "m", "model_patch": patch}).to_string(),
        )
        .unwrap();
        let run = eval(
            m,
            &format!("swe-patch-{name}"),
            &[records_file.to_str().unwrap(), "-p", preds.to_str().unwrap()],
            &[],
        );
        assert_eq!(run.verdicts()[id], want, "{name}: {}", run.results()[id]);
    }
}

/// A process killed when dropped.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The official images' path: replicas pushed to a registry (Debian's docker-registry on
/// 127.0.0.1) under swebench/..., reached through a registries.conf mirror for docker.io, pulled
/// by eval into an empty store, as root and as the unprivileged user.
#[test]
fn replicas_pulled_through_a_docker_io_mirror_grade_the_same() {
    if !replicas_ready("replicas_pulled_through_a_docker_io_mirror_grade_the_same") {
        return;
    }
    let pick = ["pytest-dev__pytest-9359", "pytest-dev__pytest-10051"];
    let recs: Vec<Value> =
        records().into_iter().filter(|r| pick.contains(&r["instance_id"].as_str().unwrap())).collect();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = Mode::Root.scratch_dir("swe-registry");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let cfg = dir.join("config.yml");
    std::fs::write(&cfg, format!("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n", data.display())).unwrap();
    let _reg = Proc(
        Command::new("docker-registry")
            .arg("serve")
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry"),
    );
    assert!(eventually(20, || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()));
    let store = std::env::var("POLYSANDBOX_ROOT").unwrap_or_else(|_| "/var/lib/polysandbox".into());
    for r in &recs {
        let image = r["image"].as_str().unwrap();
        let o = push_from_store(&store, &format!("docker.io/{image}"), &format!("docker://127.0.0.1:{port}/{image}"));
        assert!(o.status.success(), "push {image}: {}", stderr(&o));
    }
    let conf = dir.join("registries.conf");
    std::fs::write(&conf, format!("[[registry]]\nprefix = \"docker.io\"\nlocation = \"docker.io\"\n[[registry.mirror]]\nlocation = \"127.0.0.1:{port}\"\ninsecure = true\n")).unwrap();
    Command::new("chmod").args(["-R", "a+rX"]).arg(&dir).status().unwrap();
    for m in modes() {
        let file = write_records(m, "pulled.jsonl", &recs);
        let own = m.scratch_dir("swe-pulled-store");
        let env = [("POLYSANDBOX_REGISTRIES_CONF", conf.to_str().unwrap())];
        let gold =
            eval(m, "swe-pulled-gold", &[file.to_str().unwrap(), "-p", "gold", "--root", own.to_str().unwrap()], &env);
        let v = gold.verdicts();
        assert!(v.len() == 2 && v.values().all(|x| x == "resolved"), "{m:?}: {v:?}\n{}", stderr(&gold.out));
        let listed = stdout(
            &m.command()
                .args(["images", "--format", "{{.Repository}}:{{.Tag}}", "--root", own.to_str().unwrap()])
                .output()
                .unwrap(),
        );
        for r in &recs {
            assert!(listed.contains(&format!("docker.io/{}", r["image"].as_str().unwrap())), "{m:?}: {listed}");
        }
        // The pulled image is the one the results name, by digest.
        for (id, r) in gold.results() {
            assert!(r["image_digest"].as_str().is_some_and(|d| d.starts_with("sha256:")), "{id}: {r}");
        }
        let stub =
            eval(m, "swe-pulled-stub", &[file.to_str().unwrap(), "-p", "stub", "--root", own.to_str().unwrap()], &env);
        let v = stub.verdicts();
        assert!(v.len() == 2 && v.values().all(|x| x == "unresolved"), "{m:?}: {v:?}");
    }
}

/// `rootfs/build.sh swebench` as the unprivileged user (mmdebstrap and the build steps in user
/// namespaces, its own store): the replica is byte for byte the one root built (.ci/setup), and
/// resolves gold in that user's own store.
#[test]
fn a_replica_built_rootless_is_roots_byte_for_byte() {
    let test = "a_replica_built_rootless_is_roots_byte_for_byte";
    if !replicas_ready(test) {
        return;
    }
    let id = "pallets__flask-4992";
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let roots: Vec<PathBuf> = std::fs::read_dir(top.join(".cache/swebench"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.starts_with(&format!("{id}-")) && n.ends_with(".tar")
        })
        .collect();
    let [root_archive] = roots.as_slice() else {
        return skip(test, &format!("root's build of {id} is not in .cache/swebench (bash .ci/setup)"));
    };
    let m = Mode::User;
    let dir = m.scratch_dir("swe-rootless-build");
    for what in ["rootfs", "images"] {
        assert!(Command::new("cp").arg("-a").arg(top.join(what)).arg(&dir).status().unwrap().success());
    }
    std::fs::create_dir_all(dir.join("repos")).unwrap();
    assert!(Command::new("tar")
        .arg("xzf")
        .arg(shared().join("repos.tar.gz"))
        .arg("-C")
        .arg(dir.join("repos"))
        .status()
        .unwrap()
        .success());
    let bin = dir.join("polysandbox");
    std::fs::copy(&fixtures().bin, &bin).unwrap();
    std::fs::write(
        dir.join("one.jsonl"),
        records().iter().find(|r| r["instance_id"] == id).unwrap().to_string() + "\n",
    )
    .unwrap();
    assert!(Command::new("chown").args(["-R", TEST_USER]).arg(&dir).status().unwrap().success());
    let store = dir.join("store");
    let o = Command::new("runuser")
        .args(["-u", TEST_USER, "--", "env"])
        .arg(format!("HOME={}", dir.display()))
        .arg(format!("POLYSANDBOX_BIN={}", bin.display()))
        .arg(format!("POLYSANDBOX_ROOT={}", store.display()))
        .args(["bash", "rootfs/build.sh", "swebench", "one.jsonl", "--repos", "repos"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o).lines().rev().take(30).collect::<Vec<_>>().join("\n"));
    let built = dir.join(".cache/swebench").join(root_archive.file_name().unwrap());
    assert!(built.exists(), "the rootless build has another key than root's: {}", stdout(&o));
    let same = Command::new("cmp").arg("-s").arg(root_archive).arg(&built).status().unwrap().success();
    assert!(same, "{} and {} differ", root_archive.display(), built.display());
    let file = write_records(
        m,
        "rootless.jsonl",
        &records().into_iter().filter(|r| r["instance_id"] == id).collect::<Vec<_>>(),
    );
    let run =
        eval(m, "swe-rootless-eval", &[file.to_str().unwrap(), "-p", "gold", "--root", store.to_str().unwrap()], &[]);
    assert_eq!(run.verdicts()[id], "resolved", "{}", stderr(&run.out));
}

/// The eighth red team's: a prediction whose `.gitattributes` makes git fail on a test file
/// breaks the driver's reset of the test files, an `error` after the prediction was in. It was
/// made infrastructure's for good: the retry found the first attempt's report FIFO in its
/// scratch directory (`File exists`), an error before the prediction. And where gold's check
/// run decided it, gold's run wrote over the prediction's harness files (patch.diff,
/// test_output.txt, report.json `resolved: true`), which `--rewrite_reports` then graded:
/// `resolved`. Now each attempt starts from an empty scratch directory, gold's check writes
/// beside them, and the verdict and the files are the prediction's.
#[test]
fn a_prediction_that_breaks_the_reset_is_graded_on_its_own_files() {
    if !replicas_ready("a_prediction_that_breaks_the_reset_is_graded_on_its_own_files") {
        return;
    }
    let m = Mode::Root;
    let id = "pallets__flask-4992";
    let rec = records().into_iter().find(|r| r["instance_id"] == id).unwrap();
    let file = write_records(m, "gitattributes.jsonl", &[rec]);
    // (src/flask/config.py and tests/test_config.py at the base commit begin so.)
    let patch = "diff --git a/src/flask/config.py b/src/flask/config.py\n--- a/src/flask/config.py\n+++ b/src/flask/config.py\n@@ -1,3 +1,4 @@\n+# a wrong fix\n import errno\n import json\n import os\ndiff --git a/tests/test_config.py b/tests/test_config.py\n--- a/tests/test_config.py\n+++ b/tests/test_config.py\n@@ -1,3 +1,4 @@\n+# touched\n import json\n import os\n import textwrap\ndiff --git a/.gitattributes b/.gitattributes\nnew file mode 100644\n--- /dev/null\n+++ b/.gitattributes\n@@ -0,0 +1 @@\n+tests/test_config.py working-tree-encoding\n";
    let preds = m.owned_dir("swe-gitattributes-preds").join("preds.jsonl");
    std::fs::write(
        &preds,
        serde_json::json!({"instance_id": id, "model_name_or_path": "evil", "model_patch": patch}).to_string() + "\n",
    )
    .unwrap();
    let (f, p) = (file.to_str().unwrap(), preds.to_str().unwrap());
    let args = [f, "-p", p, "--no-calibration", "-id", "x"];
    let run = eval(m, "swe-gitattributes", &args, &[]);
    let r = &run.results()[id];
    assert_eq!(r["verdict"], "unresolved", "{r}\n{}", stderr(&run.out));
    assert_eq!(r["attempts"], 2, "{r}");
    let why = r["reason"].as_str().unwrap_or("");
    assert!(why.contains("gold resolves here the same way"), "{r}");
    assert!(!why.contains("File exists"), "{r}");
    assert_eq!(code(&run.out), 1, "{}", stderr(&run.out));
    // The harness's files are the prediction's run, not gold's check.
    let hdir = run.dir.join(format!("logs/run_evaluation/x/evil/{id}"));
    assert_eq!(std::fs::read_to_string(hdir.join("patch.diff")).unwrap(), patch);
    let note = std::fs::read_to_string(hdir.join("run_instance.log")).unwrap_or_default();
    assert!(!note.contains("verdict: resolved"), "{note}");
    if let Ok(rep) = std::fs::read_to_string(hdir.join("report.json")) {
        let rep: Value = serde_json::from_str(&rep).unwrap();
        assert_ne!(rep[id]["resolved"], true, "{rep}");
    }
    // Graded again from those files: still not resolved, and nothing ran.
    let mut c = m.command();
    c.arg("eval").args(args).args(["--rewrite_reports", "True", "-o"]).arg(&run.dir);
    let o = c.stdin(Stdio::null()).output().unwrap();
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("-> resolved"), "{}", stderr(&o));
    assert_eq!(run.results()[id]["verdict"], "unresolved", "{}", stderr(&o));
    assert_eq!(run.json("report.json")["resolved_instances"], 0);
}
