//! Multi-SWE-bench as its users run it (#23), on the real records in ../shared/multi-swe-bench:
//! the replica images (built by `bash .ci/setup` with `rootfs/build.sh multi-swe-bench`, under
//! the official names, in root's store), the harness's fix runs and parsers carried over as
//! data, its grading, its report files, per-test statuses equal to the records' own, and the
//! images pulled from a registry through a docker.io mirror (as root and as the unprivileged
//! user, each into a store of its own).
mod common;

use common::eval::*;
use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/multi-swe-bench")
}

fn records() -> Vec<Value> {
    let t = std::fs::read_to_string(shared().join("instances.jsonl")).unwrap();
    t.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn id(r: &Value) -> String {
    r["instance_id"].as_str().unwrap().to_string()
}

/// The harness's name for an instance's image.
fn image(r: &Value) -> String {
    format!("mswebench/{}_m_{}:pr-{}", r["org"].as_str().unwrap(), r["repo"].as_str().unwrap(), r["number"])
        .to_lowercase()
}

/// The harness's id of an instance.
fn harness_id(r: &Value) -> String {
    format!("{}/{}:pr-{}", r["org"].as_str().unwrap(), r["repo"].as_str().unwrap(), r["number"])
}

/// Whether root's store has every replica; if not, says so (the test is then skipped).
fn replicas_ready(test: &str) -> bool {
    if !shared().join("instances.jsonl").exists() {
        skip(test, "no ../shared/multi-swe-bench");
        return false;
    }
    if !is_root() {
        skip(test, "the replica images are in root's store (bash .ci/setup builds them as root)");
        return false;
    }
    let listed =
        stdout(&Mode::Root.command().args(["images", "--format", "{{.Repository}}:{{.Tag}}"]).output().unwrap());
    let missing: Vec<String> = records().iter().map(image).filter(|i| !listed.contains(i.as_str())).collect();
    if !missing.is_empty() {
        skip(test, &format!("replica images missing from root's store ({}): run bash .ci/setup", missing.join(", ")));
        return false;
    }
    true
}

/// Every verdict of a run is `want`, for each of `n` records; else each verdict and reason.
fn all(run: &Run, want: &str, n: usize) -> Result<(), String> {
    let v = run.verdicts();
    if v.len() == n && v.values().all(|x| x == want) {
        return Ok(());
    }
    let why: Vec<String> = run
        .by_id()
        .iter()
        .map(|(id, r)| format!("{id}: {} {}", r["verdict"], r["reason"].as_str().unwrap_or("")))
        .collect();
    Err(format!("{}\n{}", why.join("\n"), stderr(&run.out)))
}

fn eval(m: Mode, name: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    eval_env(m, &m.owned_dir(name).join("out"), args, env)
}

/// A harness result's sets by test name: PASS, FAIL or SKIP.
fn statuses(result: &Value) -> BTreeMap<String, &'static str> {
    let mut m = BTreeMap::new();
    for (k, word) in [("passed_tests", "PASS"), ("failed_tests", "FAIL"), ("skipped_tests", "SKIP")] {
        for t in result[k].as_array().unwrap() {
            m.insert(t.as_str().unwrap().to_string(), word);
        }
    }
    m
}

/// Our results' tests by name, in the harness's words.
fn our_statuses(r: &Value) -> BTreeMap<String, &'static str> {
    r["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let s = match t["status"].as_str().unwrap() {
                "passed" => "PASS",
                "failed" => "FAIL",
                _ => "SKIP",
            };
            (t["name"].as_str().unwrap().to_string(), s)
        })
        .collect()
}

/// Gold resolves every record, and every test's status equals the record's fix_patch_result
/// (the harness's own run of the same patch); two runs (JSONL, then one record as a JSON list
/// with the predictions in the harness's own shape) agree test by test; the harness's files
/// are where its tools look for them.
#[test]
fn gold_resolves_every_record_test_by_test_as_the_harness_recorded() {
    if !replicas_ready("gold_resolves_every_record_test_by_test_as_the_harness_recorded") {
        return;
    }
    let m = Mode::Root;
    let recs = records();
    let file = write_records(m, "all.jsonl", &recs);
    let a = eval(m, "msb-gold-a", &[file.to_str().unwrap(), "-p", "gold", "-j", "2"], &[]);
    all(&a, "resolved", recs.len()).unwrap();
    for r in &recs {
        let got = &a.by_id()[&id(r)];
        // Every test the record names, as the harness recorded it; what this run reports
        // beyond them is counted apart (dayjs: the harness's log had no per-test lines from
        // its last, many-file jest run, only its suites; here jest --verbose prints them).
        let ours = our_statuses(got);
        let want = statuses(&r["fix_patch_result"]);
        let want_all: BTreeMap<String, ()> = ["f2p_tests", "p2p_tests", "s2p_tests", "n2p_tests"]
            .iter()
            .flat_map(|k| r[*k].as_object().unwrap().keys().map(|t| (t.clone(), ())))
            .collect();
        for (t, s) in &want {
            assert_eq!(ours.get(t), Some(s), "{}: {t}", id(r));
        }
        assert_eq!(got["record_check"]["differ"], serde_json::json!([]), "{}", id(r));
        assert_eq!(got["record_check"]["tests"], want.len(), "{}", id(r));
        // Nothing in gold or its run is flagged (no exit failure beside a clean log, no
        // report-shaped text in the patch): --strict leaves gold resolved.
        assert!(got["tampering"].as_array().is_none_or(|a| a.is_empty()), "{}: {}", id(r), got["tampering"]);
        assert_eq!(got["record_check"]["extra"].as_u64().unwrap_or(0) as usize, ours.len() - want.len(), "{}", id(r));
        // The harness's per-instance report: valid, its lists as the record's.
        let dir =
            format!("{}/{}/evaluation/pr-{}", r["org"].as_str().unwrap(), r["repo"].as_str().unwrap(), r["number"]);
        let report = a.json(&format!("{dir}/report.json"));
        assert_eq!(report["valid"], true, "{report}");
        // Its lists hold the record's; what they hold beyond them are tests this run reports
        // and the harness's log did not (dayjs), each counted in record_check's extra.
        let mut beyond = 0;
        for kind in ["f2p_tests", "p2p_tests", "s2p_tests", "n2p_tests"] {
            let want: BTreeSet<&String> = r[kind].as_object().unwrap().keys().collect();
            let have: BTreeSet<&String> = report[kind].as_object().unwrap().keys().collect();
            let missing: Vec<_> = want.difference(&have).collect();
            assert!(missing.is_empty(), "{}: {kind} lacks {missing:?}", id(r));
            for t in have.difference(&want) {
                assert!(!want_all.contains_key(t.as_str()), "{}: {kind} has {t}, another kind in the record", id(r));
                beyond += 1;
            }
        }
        assert!(beyond <= got["record_check"]["extra"].as_u64().unwrap_or(0), "{}", id(r));
        assert!(a.dir.join(format!("{dir}/fix-patch-run.log")).exists());
    }
    let fin = a.json("final_report.json");
    assert_eq!(fin["resolved_instances"], 3, "{fin}");
    assert_eq!(fin["error_instances"], 0);
    let mut want: Vec<String> = recs.iter().map(harness_id).collect();
    want.sort();
    let mut have: Vec<String> =
        fin["resolved_ids"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect();
    have.sort();
    assert_eq!(have, want);
    // The second run: a record as a JSON list, gold as predictions in the harness's own
    // patch-file shape ({org, repo, number, fix_patch}). (One record, dayjs: the formats are
    // read alike for every record, and CI's time is short.)
    let recs: Vec<Value> = recs.into_iter().filter(|r| r["repo"] == "dayjs").collect();
    let list = write_records(m, "all.json", &recs);
    let preds: Vec<Value> = recs
        .iter()
        .map(|r| serde_json::json!({"org": r["org"], "repo": r["repo"], "number": r["number"], "fix_patch": r["fix_patch"]}))
        .collect();
    let preds = write_records(m, "gold-patches.jsonl", &preds);
    let b = eval(m, "msb-gold-b", &[list.to_str().unwrap(), "-p", preds.to_str().unwrap(), "-j", "2"], &[]);
    all(&b, "resolved", recs.len()).unwrap();
    // Test by test, the names trimmed: the harness's jest regex keeps a test name's trailing
    // space when jest prints the test's time after it, and drops it when the test was quick
    // (dayjs's "Format Complex with other string - : / "), so the name itself varies run to
    // run, as it would in the harness.
    let (ra, rb) = (a.by_id(), b.by_id());
    let trimmed = |r: &Value| -> BTreeMap<String, String> {
        r["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["name"].as_str().unwrap().trim_end().to_string(), t["status"].to_string()))
            .collect()
    };
    for r in &recs {
        assert_eq!(trimmed(&ra[&id(r)]), trimmed(&rb[&id(r)]), "{}: the runs disagree", id(r));
    }
}

/// No patch resolves none (the tests the record's fix makes pass fail at the base); an empty
/// patch is not run; a prediction that carries the test patch's own changes besides the fix
/// (as model patches that add tests do) has them left out and resolves, where the harness's
/// fix run, applying both, would refuse it.
#[test]
fn no_patch_resolves_none_and_a_patch_that_edits_the_tests_is_undone() {
    if !replicas_ready("no_patch_resolves_none_and_a_patch_that_edits_the_tests_is_undone") {
        return;
    }
    let m = Mode::Root;
    let recs = records();
    let file = write_records(m, "all.jsonl", &recs);
    let f = file.to_str().unwrap();
    let stub = eval(m, "msb-stub", &[f, "-p", "stub", "-j", "2"], &[]);
    all(&stub, "unresolved", recs.len()).unwrap();
    for r in &recs {
        let got = &stub.by_id()[&id(r)];
        // The record's fail-to-pass test fails (or is absent) at the base, as it did in the
        // harness's test run.
        let f2p = r["f2p_tests"].as_object().unwrap().keys().next().unwrap();
        assert!(got["fail_to_pass"]["failure"].as_array().unwrap().iter().any(|t| t == f2p.as_str()), "{got}");
    }
    let fin = stub.json("final_report.json");
    assert_eq!((fin["unresolved_instances"].as_u64(), fin["resolved_instances"].as_u64()), (Some(3), Some(0)), "{fin}");
    // Empty patches are not run.
    let empty: Vec<Value> = recs.iter().map(|r| serde_json::json!({"instance_id": id(r), "model_patch": ""})).collect();
    let empty = write_records(m, "empty.jsonl", &empty);
    let e = eval(m, "msb-empty", &[f, "-p", empty.to_str().unwrap()], &[]);
    all(&e, "empty_patch", recs.len()).unwrap();
    assert_eq!(e.json("final_report.json")["empty_patch_instances"], 3);
    // The fix with the test patch's changes in it: those are left out, the fix resolves. They
    // are named with other prefixes than a/ and b/ (git strips any first component): a
    // section `diff --git x/tests/test_buf.rs y/...` that edits the tests passed the host's
    // filter once, and was graded resolved.
    let other_prefixes = |p: &str| -> String {
        p.split_inclusive('\n')
            .map(|l| {
                if let Some(rest) = l.strip_prefix("diff --git a/") {
                    format!("diff --git x/{}", rest.replacen(" b/", " y/", 1))
                } else if let Some(rest) = l.strip_prefix("--- a/") {
                    format!("--- x/{rest}")
                } else if let Some(rest) = l.strip_prefix("+++ b/") {
                    format!("+++ y/{rest}")
                } else {
                    l.to_string()
                }
            })
            .collect()
    };
    // (fd and dayjs: the prefixes are read by the host and by git in the sandbox alike, in
    // any language; bytes's fix run is the longest.)
    let some: Vec<Value> = recs.iter().filter(|r| r["repo"] != "bytes").cloned().collect();
    let both: Vec<Value> = some
        .iter()
        .map(|r| {
            let p =
                format!("{}{}", r["fix_patch"].as_str().unwrap(), other_prefixes(r["test_patch"].as_str().unwrap()));
            serde_json::json!({"instance_id": id(r), "model_patch": p})
        })
        .collect();
    let both = write_records(m, "fix-and-tests.jsonl", &both);
    let some_file = write_records(m, "some.jsonl", &some);
    let b = eval(m, "msb-fix-and-tests", &[some_file.to_str().unwrap(), "-p", both.to_str().unwrap(), "-j", "2"], &[]);
    all(&b, "resolved", some.len()).unwrap();
    for (i, r) in b.by_id() {
        let why = r["reason"].as_str().unwrap_or_default();
        assert!(why.starts_with("the prediction's changes to the test patch's files left out: "), "{i}: {r}");
    }
    // The test patch alone (no fix): its changes left out, nothing fixed.
    let tests_only: Vec<Value> =
        recs.iter().map(|r| serde_json::json!({"instance_id": id(r), "model_patch": r["test_patch"]})).collect();
    let tests_only = write_records(m, "tests-only.jsonl", &tests_only);
    let t = eval(m, "msb-tests-only", &[f, "-p", tests_only.to_str().unwrap(), "-j", "2"], &[]);
    // Nothing of it is left: an empty patch, not run, and said so.
    all(&t, "empty_patch", recs.len()).unwrap();
    for (i, r) in t.by_id() {
        assert!(
            r["reason"].as_str().unwrap_or_default().starts_with("the prediction changes only the test patch's files"),
            "{i}: {r}"
        );
    }
}

/// Code under test that rewrites a test file while the tests run: dayjs's `npm test` runs jest
/// five times, and the fix's module, imported by the first runs, cuts the record's new test
/// out of the file the last run reads (`it` made `it.skip`: the file still passes), naming the
/// file only in pieces, then puts the file back as the process exits. Graded resolved once
/// (the harness would too). The test patch's files are read-only from the fix run's `git apply`
/// on: the rewrite fails, the test fails, unresolved; the usage record says they were
/// protected.
#[test]
fn code_that_rewrites_its_tests_while_they_run_cannot() {
    if !replicas_ready("code_that_rewrites_its_tests_while_they_run_cannot") {
        return;
    }
    let m = Mode::Root;
    let rec = records().into_iter().find(|r| r["repo"] == "dayjs").unwrap();
    let file = write_records(m, "dayjs.jsonl", std::slice::from_ref(&rec));
    let code = concat!(
        ";(function () { try { const f = require('fs'); ",
        "const p = require('path').join(__dirname, '..', 'test', 'plugin', ['time', 'zone.test.js'].join('')); ",
        "const o = f.readFileSync(p, 'utf8'); ",
        "if (o.indexOf('/*x*/') < 0) f.writeFileSync(p, o.split(\"it('preserves locality\").join(\"/*x*/it.skip('preserves locality\")); ",
        "process.on('exit', () => { try { f.writeFileSync(p, o) } catch (e) {} }) } catch (e) {} })()"
    );
    let patch = format!(
        "diff --git a/src/index.js b/src/index.js\n--- a/src/index.js\n+++ b/src/index.js\n@@ -1,3 +1,4 @@\n+{code}\n \
         import * as C from './constant'\n import en from './locale/en'\n import U from './utils'\n"
    );
    let pred = write_records(m, "rewrite.jsonl", &[serde_json::json!({"instance_id": id(&rec), "model_patch": patch})]);
    let run = eval(m, "msb-rewrite", &[file.to_str().unwrap(), "-p", pred.to_str().unwrap()], &[]);
    all(&run, "unresolved", 1).unwrap();
    let r = &run.by_id()[&id(&rec)];
    assert!(
        r["fail_to_pass"]["failure"].as_array().unwrap().iter().any(|t| t == "test/plugin/timezone.test.js"),
        "{r}"
    );
    let usage = run.json(&format!("{}/usage.json", r["logs"].as_str().unwrap()));
    assert_eq!(usage["protect"]["asked"], true, "{usage}");
    assert_eq!(usage["protect"]["protected"], 1, "{usage}");
    let log = std::fs::read_to_string(run.dir.join(r["logs"].as_str().unwrap()).join("output.txt")).unwrap();
    assert!(log.contains("FAIL test/plugin/timezone.test.js"), "{log}");
}

/// Code in jest's process that rewrites the runner's output (the sixth red team's: the fix
/// module, imported by the test, wraps `Socket.prototype._write` to turn the suite's `FAIL`
/// into `PASS` in its header and in the summary, every telling literal built at run time;
/// the `✕` lines stay, so nothing is reported both ways and the non-zero exit's flag did not
/// fire). It fixes nothing: graded resolved under --strict, unflagged. A failed test under a
/// suite reported passed is no log jest writes: unresolved.
#[test]
fn a_log_rewritten_in_the_runners_process_contradicts_itself() {
    if !replicas_ready("a_log_rewritten_in_the_runners_process_contradicts_itself") {
        return;
    }
    let m = Mode::Root;
    let rec = records().into_iter().find(|r| r["repo"] == "dayjs").unwrap();
    let file = write_records(m, "dayjs.jsonl", std::slice::from_ref(&rec));
    let patch = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval/attacks/dayjs-2420-stream.patch"),
    )
    .unwrap();
    let pred = write_records(m, "stream.jsonl", &[serde_json::json!({"instance_id": id(&rec), "model_patch": patch})]);
    let run = eval(m, "msb-stream", &[file.to_str().unwrap(), "-p", pred.to_str().unwrap(), "--no-calibration"], &[]);
    all(&run, "unresolved", 1).unwrap();
    let r = &run.by_id()[&id(&rec)];
    assert!(r["reason"].as_str().unwrap_or("").contains("under a suite it reports passed"), "{r}");
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The official images' path: replicas pushed to a registry (Debian's docker-registry on
/// 127.0.0.1) under mswebench/..., reached through a registries.conf mirror for docker.io,
/// pulled by eval into an empty store, as root and as the unprivileged user.
#[test]
fn replicas_pulled_through_a_docker_io_mirror_grade_the_same() {
    if !replicas_ready("replicas_pulled_through_a_docker_io_mirror_grade_the_same") {
        return;
    }
    // bytes (libtest) as root and dayjs (jest) as the user: both parser families and both
    // modes, without pushing and pulling fd's 2 GiB (the gold test grades all three from
    // root's store), and with one fix run per mode (CI's time).
    let recs: Vec<Value> = records().into_iter().filter(|r| r["repo"] != "fd").collect();
    let pulled_by = |m: Mode| -> Vec<Value> {
        let repo = if m == Mode::Root { "bytes" } else { "dayjs" };
        recs.iter().filter(|r| r["repo"] == repo).cloned().collect()
    };
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = Mode::Root.scratch_dir("msb-registry");
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
        let image = image(r);
        let o = push_from_store(&store, &format!("docker.io/{image}"), &format!("docker://127.0.0.1:{port}/{image}"));
        assert!(o.status.success(), "push {image}: {}", stderr(&o));
    }
    let conf = dir.join("registries.conf");
    std::fs::write(&conf, format!("[[registry]]\nprefix = \"docker.io\"\nlocation = \"docker.io\"\n[[registry.mirror]]\nlocation = \"127.0.0.1:{port}\"\ninsecure = true\n")).unwrap();
    Command::new("chmod").args(["-R", "a+rX"]).arg(&dir).status().unwrap();
    for m in modes() {
        let recs = pulled_by(m);
        let file = write_records(m, "pulled.jsonl", &recs);
        let own = m.scratch_dir("msb-pulled-store");
        let env = [("POLYSANDBOX_REGISTRIES_CONF", conf.to_str().unwrap())];
        let gold = eval(
            m,
            "msb-pulled-gold",
            &[file.to_str().unwrap(), "-p", "gold", "--root", own.to_str().unwrap(), "-j", "2"],
            &env,
        );
        all(&gold, "resolved", recs.len()).map_err(|e| format!("{m:?}: {e}")).unwrap();
        for r in &recs {
            let got = &gold.by_id()[&id(r)];
            assert_eq!(got["record_check"]["differ"], serde_json::json!([]), "{m:?} {}: {got}", id(r));
            assert!(got["image_digest"].as_str().is_some_and(|d| d.starts_with("sha256:")), "{got}");
        }
        let listed = stdout(
            &m.command()
                .args(["images", "--root", own.to_str().unwrap(), "--format", "{{.Repository}}:{{.Tag}}"])
                .output()
                .unwrap(),
        );
        for r in &recs {
            assert!(listed.contains(&format!("docker.io/{}", image(r))), "{m:?}: {listed}");
        }
    }
}

/// An environment that cannot be had is an `error` naming why, never `unresolved`: an image no
/// registry here serves (Docker Hub is not reachable), and, with the replicas, a record the
/// harness's definitions do not cover (its `tag` names a class the harness lacks).
#[test]
fn an_environment_that_cannot_be_had_is_an_error_naming_why() {
    if !shared().join("instances.jsonl").exists() {
        return skip("an_environment_that_cannot_be_had_is_an_error_naming_why", "no ../shared/multi-swe-bench");
    }
    let fd = records().into_iter().find(|r| r["repo"] == "fd").unwrap();
    for m in modes() {
        let mut missing = fd.clone();
        missing["number"] = 999_999.into();
        missing["instance_id"] = "sharkdp__fd-999999".into();
        let file = write_records(m, "missing.jsonl", &[missing]);
        let own = m.scratch_dir("msb-missing-store");
        let run = eval(
            m,
            "msb-missing",
            &[file.to_str().unwrap(), "-p", "gold", "--no-calibration", "--root", own.to_str().unwrap()],
            &[],
        );
        let r = &run.by_id()["sharkdp__fd-999999"];
        assert_eq!(r["verdict"], "error", "{m:?}: {r}");
        assert!(r["reason"].as_str().unwrap().starts_with("image mswebench/sharkdp_m_fd:pr-999999: "), "{m:?}: {r}");
        let fin = run.json("final_report.json");
        assert_eq!((fin["error_instances"].as_u64(), fin["resolved_instances"].as_u64()), (Some(1), Some(0)), "{fin}");
    }
    if !replicas_ready("an_environment_that_cannot_be_had_is_an_error_naming_why (definitions)") {
        return;
    }
    let mut tagged = fd.clone();
    tagged["tag"] = "v9.9".into();
    let file = write_records(Mode::Root, "tagged.jsonl", &[tagged]);
    let run = eval(Mode::Root, "msb-tagged", &[file.to_str().unwrap(), "-p", "gold", "--no-calibration"], &[]);
    let r = &run.by_id()["sharkdp__fd-1394"];
    assert_eq!(r["verdict"], "error", "{r}");
    assert!(r["reason"].as_str().unwrap().starts_with("sharkdp/fd_v9_9: the harness defines no instance so"), "{r}");
}

/// The eighth red team's: a prediction whose build fails with a network error's words is an
/// `error` after the prediction, which gold's check run decides (no calibration here). Gold's
/// run used to write the harness's files over the prediction's (fix.patch, the fix run's log,
/// report.json with gold's 133 passing tests), the files the harness's own tools read. Now the
/// verdict and those files are the prediction's.
#[test]
fn gold_s_check_run_leaves_the_prediction_s_harness_files() {
    if !replicas_ready("gold_s_check_run_leaves_the_prediction_s_harness_files") {
        return;
    }
    let m = Mode::Root;
    let rec = records().into_iter().find(|r| r["repo"] == "bytes").unwrap();
    let file = write_records(m, "bytes.jsonl", std::slice::from_ref(&rec));
    // (src/buf/buf_impl.rs at the base commit, around line 66.)
    let patch = "diff --git a/src/buf/buf_impl.rs b/src/buf/buf_impl.rs\n--- a/src/buf/buf_impl.rs\n+++ b/src/buf/buf_impl.rs\n@@ -66,6 +66,8 @@ macro_rules! buf_get_impl {\n     }};\n }\n \n+compile_error!(\"Could not resolve host: index.crates.io\");\n+\n /// Read bytes from a buffer.\n ///\n /// A buffer stores bytes in memory such that read operations are infallible.\n";
    let pred =
        write_records(m, "bytes-pred.jsonl", &[serde_json::json!({"instance_id": id(&rec), "model_patch": patch})]);
    let run =
        eval(m, "msb-gold-check", &[file.to_str().unwrap(), "-p", pred.to_str().unwrap(), "--no-calibration"], &[]);
    all(&run, "unresolved", 1).unwrap();
    let r = &run.by_id()[&id(&rec)];
    assert!(r["reason"].as_str().unwrap_or("").contains("gold resolves here the same way"), "{r}");
    let dir = run.dir.join(format!(
        "{}/{}/evaluation/pr-{}",
        rec["org"].as_str().unwrap(),
        rec["repo"].as_str().unwrap(),
        rec["number"]
    ));
    assert_eq!(std::fs::read_to_string(dir.join("fix.patch")).unwrap(), patch);
    let log = std::fs::read_to_string(dir.join("fix-patch-run.log")).unwrap_or_default();
    assert!(log.contains("Could not resolve host"), "{log}");
    if let Ok(rep) = std::fs::read_to_string(dir.join("report.json")) {
        assert!(!rep.contains("\"valid\": true"), "{rep}");
    }
}
