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
        let o = Command::new("skopeo")
            .args(["copy", "--quiet", "--dest-tls-verify=false"])
            .arg(format!("oci:{store}/oci:docker.io/{image}"))
            .arg(format!("docker://127.0.0.1:{port}/{image}"))
            .output()
            .unwrap();
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
