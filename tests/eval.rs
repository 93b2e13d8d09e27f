//! `polysandbox eval` end to end: the project's own fixtures in all seven languages, in the real
//! toolchain images (built by `bash .ci/setup`), as root and as the unprivileged test user.
mod common;

use common::eval::*;
use common::*;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn prediction(name: &str) -> String {
    data().join("predictions").join(name).display().to_string()
}

#[test]
fn gold_resolves_and_stub_does_not_in_every_language() {
    for m in modes() {
        let l = langs(m);
        let mut args = vec![polyglot(), "-j".into(), "2".into(), "--filter-category".into()];
        args.extend(l.iter().map(|s| s.to_string()));
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let gold = eval(m, &a);
        assert_eq!(code(&gold.out), 0, "{m:?}: {}\n{}", stdout(&gold.out), stderr(&gold.out));
        for lang in &l {
            let id = format!("{lang}/sum-two");
            assert_eq!(gold.verdict(&id), "resolved", "{m:?} {id}: {}", gold.result(&id));
            let r = gold.result(&id);
            assert!(r["wall_s"].as_f64().unwrap() > 0.0 && r["cpu_s"].as_f64().unwrap() > 0.0, "{m:?}: {r}");
            assert!(r["memory_peak_bytes"].as_u64().unwrap() > 1 << 20, "{m:?}: {r}");
            // Per-test statuses where the runner names its tests (Catch2 gives totals only),
            // the ignored/xtest/@Disabled second test included, as the harnesses run them.
            if *lang != "cpp" {
                let tests = r["tests"].as_array().unwrap();
                assert_eq!(tests.len(), 2, "{m:?} {id}: {r}");
                assert!(tests.iter().all(|t| t["status"] == "passed"), "{m:?} {id}: {r}");
            }
            let logs = gold.dir.join("logs").join(id.replace('/', "__"));
            for f in ["test_output.txt", "patch.diff", "usage.json"] {
                assert!(logs.join(f).is_file(), "{m:?}: {} missing", logs.join(f).display());
            }
            // Every sandbox has a cap on processes: no prediction takes the host's pid space.
            let usage: serde_json::Value =
                serde_json::from_slice(&std::fs::read(logs.join("usage.json")).unwrap()).unwrap();
            assert_eq!(usage["limits"]["pids"]["requested"], 4096, "{m:?} {id}: {usage}");
        }
        let rep = gold.report();
        assert_eq!(rep["resolved"], l.len(), "{m:?}: {rep}");
        assert_eq!(rep["accuracy_score"], 1.0);
        assert_eq!(rep["by_language"]["python"]["resolved"], 1);
        // junit.xml: a suite per instance, a testcase per test its runner reported (the
        // instance its class), valid against the JUnit schemas.
        let junit = std::fs::read_to_string(gold.dir.join("junit.xml")).unwrap();
        assert!(junit.contains("<testcase classname=\"python/sum-two\" name=\""), "{junit}");
        assert_junit_valid(&gold.dir.join("junit.xml"));
        assert!(stdout(&gold.out).contains("resolved"), "the summary table");

        // The stub, with the Markdown summary asked for and a CI step's summary file.
        let mut a = a.clone();
        let md = m.owned_dir("md").join("summary.md");
        let step = m.writable_file("step-summary.md");
        std::fs::write(&step, "an earlier step's summary\n").unwrap();
        let md_arg = md.display().to_string();
        a.extend(["-p", "stub", "--summary-md", md_arg.as_str()]);
        let stub =
            eval_env(m, &m.owned_dir("eval").join("out"), &a, &[("GITHUB_STEP_SUMMARY", step.to_str().unwrap())]);
        // Graded, and not resolved: exit 1 (a CI step fails).
        assert_eq!(code(&stub.out), 1, "{m:?}: {}", stderr(&stub.out));
        for lang in &l {
            assert_eq!(stub.verdict(&format!("{lang}/sum-two")), "unresolved", "{m:?} {lang}");
        }
        assert_eq!(stub.report()["resolved"], 0);
        // Each failed test a testcase with its failure, the test output's tail and where the
        // log is; each measured test's usage among its suite's properties.
        let junit = std::fs::read_to_string(stub.dir.join("junit.xml")).unwrap();
        assert_junit_valid(&stub.dir.join("junit.xml"));
        for lang in &l {
            let id = format!("{lang}/sum-two");
            let r = stub.result(&id);
            let suite = junit_suite(&junit, &id);
            let log = format!("log: logs/{}/test_output.txt", id.replace('/', "__"));
            assert!(suite.contains(&format!("package=\"{lang}\"")), "{m:?}: {suite}");
            assert!(
                suite.contains(&format!("<system-out>unresolved: {}", r["reason"].as_str().unwrap())),
                "{m:?}: {suite}"
            );
            assert!(suite.contains(&log), "{m:?}: {suite}");
            let tests = r["tests"].as_array().cloned().unwrap_or_default();
            // Catch2 gives totals only: the instance's verdict is its testcase then.
            assert_eq!(suite.matches("<testcase ").count(), tests.len().max(1), "{m:?}: {suite}");
            assert!(suite.matches(&format!("<testcase classname=\"{id}\"")).count() >= 1, "{m:?}: {suite}");
            // (A test that threw is an error in JUnit's terms: Java's stub throws.)
            let failure = suite
                .split_once("<failure ")
                .or_else(|| suite.split_once("<error "))
                .unwrap_or_else(|| panic!("{m:?}: no failure: {suite}"))
                .1;
            assert!(
                failure.contains("the last lines of the test output:\n") && failure.contains(&log),
                "{m:?}: {suite}"
            );
            for t in tests.iter().filter(|t| t["usage"].is_object()) {
                let name =
                    t["name"].as_str().unwrap().replace('&', "&amp;").replace('<', "&lt;").replace('"', "&quot;");
                assert!(
                    suite.contains(&format!("<property name=\"{name}: memory_peak_bytes\" value=\"")),
                    "{m:?}: {suite}"
                );
            }
        }
        // The Markdown summary: per language, each failure with its reason and log, the
        // heaviest instances; appended to the step's summary as well.
        let summary = std::fs::read_to_string(&md).unwrap();
        assert!(summary.starts_with(&format!("## polysandbox eval: 0 of {} resolved (0.0%)\n", l.len())), "{summary}");
        assert!(summary.contains(&format!("Predictions: {}.", md_text("stub (the files as shipped)"))), "{summary}");
        for lang in &l {
            let id = format!("{lang}/sum-two");
            assert!(summary.contains(&format!("| {lang} | 1 | 0 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0.0% |\n")), "{summary}");
            let reason = stub.result(&id)["reason"].as_str().unwrap().to_string();
            let row = format!(
                "| `{id}` | unresolved | `{}` | `logs/{}/test_output.txt` |\n",
                reason.replace('`', "'").replace('|', "\\|"),
                id.replace('/', "__")
            );
            assert!(summary.contains(&row), "{row}: {summary}");
        }
        assert!(summary.contains("### Slowest instances") && summary.contains("### Most memory"), "{summary}");
        assert_eq!(std::fs::read_to_string(&step).unwrap(), format!("an earlier step's summary\n{summary}\n"));
        // report.html: rendered in a browser (once), its numbers report.json's.
        if m == modes()[0] {
            assert_report_html(&stub);
        }
    }
}

#[test]
fn timeouts_oom_edited_tests_and_fake_passes_are_caught() {
    for m in modes() {
        let p = polyglot();
        let run = |pred: &str, extra: &[&str]| {
            let mut a = vec![p.as_str(), "--filter-category", "python", "go", "-p", pred];
            a.extend_from_slice(extra);
            eval(m, &a)
        };
        let t = run(&prediction("timeout"), &["--timeout", "3s"]);
        assert_eq!(t.verdict("python/sum-two"), "timeout", "{m:?}: {}", t.result("python/sum-two"));
        assert_eq!(t.result("python/sum-two")["timed_out"], true);
        // A directory of predictions that names no go file: that instance has no prediction.
        assert_eq!(t.verdict("go/sum-two"), "no_prediction");

        let o = run(&prediction("oom"), &["--memory", "128M"]);
        assert_eq!(o.verdict("python/sum-two"), "oom", "{m:?}: {}", o.result("python/sum-two"));
        assert_eq!(o.result("python/sum-two")["oom"], true);

        // Prints a passing run's lines and exits 0 before any test ran: exit 0 is not enough.
        let f = run(&prediction("fake-pass"), &[]);
        for id in ["python/sum-two", "go/sum-two"] {
            let r = f.result(id);
            assert_eq!(r["verdict"], "unresolved", "{m:?} {id}: {r}");
            assert_eq!(r["exit_code"], 0, "{m:?} {id}: the fake did exit 0: {r}");
        }

        // A patch that makes the tests trivially true: test files come from the dataset.
        let e = run(&prediction("edits-tests.jsonl"), &[]);
        assert_eq!(e.verdict("python/sum-two"), "unresolved", "{m:?}: {}", e.result("python/sum-two"));
        let good = run(&prediction("good-patch.jsonl"), &[]);
        assert_eq!(good.verdict("python/sum-two"), "resolved", "{m:?}: {}", good.result("python/sum-two"));
        assert!(std::fs::read_to_string(good.dir.join("logs/python__sum-two/patch.diff"))
            .unwrap()
            .contains("+    return a + b"));
        let bad = run(&prediction("bad-patch.jsonl"), &[]);
        assert_eq!(bad.verdict("python/sum-two"), "patch_failed", "{m:?}: {}", bad.result("python/sum-two"));
    }
}

#[test]
fn resume_skips_only_unchanged_instances() {
    // An instance's line on a terminal: its clock, its id.
    let running = regex::Regex::new(r"\[\d\d:\d\d:\d\d\] python/sum-two ").unwrap();
    for m in modes() {
        let p = polyglot();
        let dir = m.owned_dir("resume").join("out");
        let args = [p.as_str(), "--filter-category", "python", "-p", "stub"];
        // The first run on a terminal where there is one to make (as root): what it shows.
        let first = match eval_on_a_terminal(m, &dir, &args) {
            Some(first) => {
                let tty = stdout(&first.out);
                for shown in [
                    "looking up the calibration",
                    "probing the python toolchain in ",
                    "0/1 0 resolved",
                    "ETA after the first result",
                    "[1/1] python/sum-two ",
                    "resolved 0 of 1 (0.0%)",
                ] {
                    assert!(tty.contains(shown), "{m:?}: the terminal did not show {shown:?}: {tty}");
                }
                // The instance running, its own clock beside it.
                assert!(running.is_match(&tty), "{m:?}: no line for the running instance: {tty}");
                first
            }
            None => eval_in(m, &dir, &args),
        };
        assert_eq!(first.results().len(), 1, "{m:?}: {}", stderr(&first.out));
        // Without --resume an earlier run is never overwritten.
        let again = eval_in(m, &dir, &args);
        assert_eq!(code(&again.out), 125);
        assert!(stderr(&again.out).contains("--resume"), "{}", stderr(&again.out));
        assert_eq!(again.results().len(), 1);
        let mut resumed = args.to_vec();
        resumed.push("--resume");
        let r = eval_in(m, &dir, &resumed);
        assert_eq!(code(&r.out), 1, "the stub is not resolved: {}", stderr(&r.out));
        assert_eq!(r.results().len(), 1, "{m:?}: nothing reran");
        assert!(stderr(&r.out).contains("results.jsonl: 1 verdict kept, 0 to run\n"), "{m:?}: {}", stderr(&r.out));
        assert_eq!(r.report()["unresolved"], 1);
        // Other limits are other settings: a different --pids runs it again, its new result
        // replacing the earlier line (one line per instance, whatever reran).
        // (Each run's key read as it ends: they all write the same results.jsonl.)
        let key = |r: &Run| r.result("python/sum-two")["key"].as_str().unwrap().to_string();
        let resumed_key = key(&r);
        let mut pids = resumed.clone();
        pids.extend(["--pids", "512"]);
        let p2 = eval_in(m, &dir, &pids);
        assert_eq!((code(&p2.out), p2.results().len()), (1, 1), "{m:?}: {}", stderr(&p2.out));
        let pids_key = key(&p2);
        assert_ne!(pids_key, resumed_key, "{m:?}: --pids did not run it again");
        // So is --strict: a flagged prediction resolved without it is unresolved with it, so a
        // verdict reached without it is not kept (it was).
        let mut strict = pids.clone();
        strict.push("--strict");
        let s2 = eval_in(m, &dir, &strict);
        assert_eq!((code(&s2.out), s2.results().len()), (1, 1), "{m:?}: {}", stderr(&s2.out));
        assert_ne!(key(&s2), pids_key, "{m:?}: --strict kept a verdict");
        // A different prediction is a different instance run, replacing the earlier line.
        let mut changed = resumed.clone();
        changed[4] = "gold";
        let c = eval_in(m, &dir, &changed);
        assert_eq!(c.results().len(), 1, "{m:?}: {}", stderr(&c.out));
        assert_eq!(c.verdict("python/sum-two"), "resolved");
        assert_eq!(c.report()["resolved"], 1);
    }
}

/// `polysandbox eval ARGS -o DIR` as root with a terminal for its stderr (script(1)'s), its
/// stdout what the terminal got; `None` as the test user or without script(1).
fn eval_on_a_terminal(m: Mode, dir: &Path, args: &[&str]) -> Option<Run> {
    if m != Mode::Root || !Path::new("/usr/bin/script").exists() {
        return None;
    }
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut cmd = vec![quote(fixtures().bin.to_str().unwrap()), "eval".into()];
    cmd.extend(args.iter().map(|a| quote(a)));
    cmd.extend(["-o".into(), quote(dir.to_str().unwrap())]);
    let out = Command::new("/usr/bin/script")
        .args(["-qefc", &cmd.join(" "), "/dev/null"])
        .env("COLUMNS", "200")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Some(Run { out, dir: dir.to_path_buf() })
}

/// The calc repository as a dataset: a SWE-bench record and a Multi-SWE-bench one, and
/// predictions that "fix" the tests (instance 1) or give an empty patch (instance 2).
fn swe_fixture(root: &Path) -> (PathBuf, PathBuf) {
    let c = calc_repo(root);
    let cheat = "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -1,5 +1,5 @@\n from calc import mul\n \n \n def test_mul():\n-    assert mul(2, 3) == 6\n+    assert True\n";
    let dataset = root.join("swe.jsonl");
    write_jsonl(&dataset, &[c.swe_record("acme__calc-1"), c.multi_record(2)]);
    let preds: Vec<Value> = [("acme__calc-1", cheat), ("acme__calc-2", "")]
        .iter()
        .map(|(id, p)| serde_json::json!({"instance_id": id, "model_name_or_path": "m", "model_patch": p}))
        .collect();
    write_jsonl(&root.join("preds.jsonl"), &preds);
    (dataset, c.repos)
}

#[test]
fn swe_bench_and_multi_swe_bench_records_are_graded_by_their_tests() {
    for m in modes() {
        let root = m.owned_dir("swe");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (dataset, repos) = swe_fixture(&root);
        let (d, r) = (dataset.display().to_string(), repos.display().to_string());
        let gold = eval(m, &[&d, "--repos", &r]);
        assert_eq!(code(&gold.out), 0, "{m:?}: {}", stderr(&gold.out));
        for id in ["acme__calc-1", "acme__calc-2"] {
            let res = gold.result(id);
            assert_eq!(res["verdict"], "resolved", "{m:?} {id}: {res}");
            assert_eq!(res["fail_to_pass"]["success"][0], "tests/test_calc.py::test_add", "{res}");
        }
        // The model "fixes" the tests instead: the test files go back to the dataset's.
        let preds = root.join("preds.jsonl").display().to_string();
        let cheat = eval(m, &[&d, "--repos", &r, "-p", &preds]);
        assert_eq!(cheat.verdict("acme__calc-1"), "unresolved", "{m:?}: {}", cheat.result("acme__calc-1"));
        assert_eq!(cheat.verdict("acme__calc-2"), "empty_patch");
        let rep = cheat.report();
        assert_eq!(rep["empty_patch_ids"][0], "acme__calc-2");
        // Submitted as the harness counts them: both have a prediction, one of them empty.
        assert_eq!(rep["submitted_instances"], 2);
    }
}

#[test]
fn codereval_snippets_run_with_the_interpreter() {
    for m in modes() {
        codereval_snippets_in(m);
    }
}

fn codereval_snippets_in(m: Mode) {
    let root = m.owned_dir("snippets");
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    let recs = [
        serde_json::json!({"_id": "snip-1", "language": "Python", "prompt": "def double(x):\n    pass", "code": "def double(x):\n    return 2 * x", "test": "assert double(4) == 8"}),
        serde_json::json!({"_id": "snip-2", "language": "python", "code": "def half(x):\n    return x // 2", "test": "assert half(9) == 4"}),
        // Leaves with status 0 before the test code runs: no completion line, no pass.
        serde_json::json!({"_id": "snip-3", "language": "python", "code": "import os\ndef one():\n    return 2\nos._exit(0)", "test": "assert one() == 1"}),
        // Reads the completion line's tag from its own file, prints it, leaves: no secret
        // survives code in the same process, so this is flagged, and --strict refuses it.
        serde_json::json!({"_id": "snip-4", "language": "python", "code": "def add(a, b):\n    return 0\nimport re as _re, os as _os\n_t = _re.findall(r\"print\\('(t[0-9a-f]{16})'\", open(__file__).read())\nif _t:\n    print(_t[-1], flush=True); _os._exit(0)", "test": "assert add(1, 2) == 3"}),
        // The third red team's: the file by its literal name, then `raise SystemExit` (graded
        // resolved, unflagged, when the file stayed in the tree): the file is gone before the
        // first statement runs, so there is no tag to print.
        serde_json::json!({"_id": "snip-5", "language": "python", "code": "def add(a, b):\n    return 0\n\n\nimport re\nprint(re.findall(r\"print\\('(t[0-9a-f]{16})'\", open('snippet.py').read())[-1])\nraise SystemExit\n", "test": "assert add(2, 3) == 5"}),
        // The same through another name for the file, no name the rules know.
        serde_json::json!({"_id": "snip-6", "language": "python", "code": "def add(a, b):\n    return 0\n\n\nimport re, glob\nfor _f in glob.glob('*'):\n    _m = re.findall(r\"print\\('(t[0-9a-f]{16})'\", open(_f).read())\n    if _m:\n        print(_m[-1])\n        raise SystemExit\n", "test": "assert add(2, 3) == 5"}),
    ];
    let file = root.join("codereval.json");
    std::fs::write(&file, serde_json::json!({"tasks": recs}).to_string()).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let f = file.display().to_string();
    let gold = eval(m, &[&f]);
    assert_eq!(gold.verdict("snip-1"), "resolved", "{}", stderr(&gold.out));
    // No -p: gold, and every summary names it (the table, report.json, a note before the run).
    let said = "predictions: gold (the dataset's reference solutions: -p was not given)";
    assert!(stdout(&gold.out).contains(said), "{}", stdout(&gold.out));
    assert_eq!(gold.report()["predictions"], "gold");
    assert!(stderr(&gold.out).contains("note: no -p: grading gold"), "{}", stderr(&gold.out));
    assert_eq!(gold.verdict("snip-2"), "resolved");
    let r = gold.result("snip-3");
    assert_eq!((r["verdict"].as_str(), r["exit_code"].as_i64()), (Some("unresolved"), Some(0)), "{r}");
    let r = gold.result("snip-4");
    let flags = r["tampering"].as_array().map(|a| a.len()).unwrap_or(0);
    assert!(flags > 0 && r["tampering"].to_string().contains("__file__"), "{r}");
    let strict = eval(m, &[&f, "-t", "snip-4", "--strict"]);
    assert_eq!(strict.verdict("snip-4"), "unresolved", "{}", strict.result("snip-4"));
    for id in ["snip-5", "snip-6"] {
        let r = gold.result(id);
        assert_eq!(r["verdict"], "unresolved", "{r}");
        assert!(r["tampering"].as_array().is_some_and(|a| !a.is_empty()), "{r}");
    }
    let stub = eval(m, &[&f, "-p", "stub"]);
    assert_eq!(stub.verdict("snip-1"), "unresolved");
    assert_eq!(stub.verdict("snip-2"), "empty_patch");
}

/// A JavaScript snippet that reads its own file for the completion line's tag and leaves (the
/// third red team's: `require('node:' + 'fs')`, the file by its name, `process` through a
/// function's constructor; graded resolved and unflagged while the file stayed in the tree):
/// the file is gone before the first statement runs. Gold still passes.
#[test]
fn javascript_snippets_find_no_tag_in_their_file() {
    for m in modes() {
        if !langs(m).contains(&"javascript") {
            skip("javascript_snippets_find_no_tag_in_their_file", &format!("{m:?}: no javascript image"));
            continue;
        }
        let root = m.owned_dir("snippets-js");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let test = "const assert = require('assert');\nassert.strictEqual(add(2, 3), 5);\n";
        let forge = "function add(a, b) {\n  return 0;\n}\nconst src = require('node:' + 'fs').readFileSync('snippet.js', 'utf8');\nconsole.log(src.match(/console\\.log\\('(t[0-9a-f]{16})'\\)/g).pop().slice(13, 30));\n(() => {}).constructor('return process')().exit(0);\n";
        let dir = "function add(a, b) {\n  return 0;\n}\nconst fs = require('node:' + 'fs');\nfor (const f of fs.readdirSync('.')) {\n  const m = fs.readFileSync(f, 'utf8').match(/console\\.log\\('(t[0-9a-f]{16})'\\)/g);\n  if (m) { console.log(m.pop().slice(13, 30)); (() => {}).constructor('return process')().exit(0); }\n}\n";
        let recs = [
            serde_json::json!({"task_id": "js-gold", "language": "javascript", "code": "function add(a, b) {\n  return a + b;\n}\n", "test": test}),
            serde_json::json!({"task_id": "js-forge", "language": "javascript", "code": "function add(a, b) {\n  return a + b;\n}\n", "test": test}),
            serde_json::json!({"task_id": "js-dir", "language": "javascript", "code": "function add(a, b) {\n  return a + b;\n}\n", "test": test}),
        ];
        let file = root.join("snippets.jsonl");
        write_jsonl(&file, &recs);
        let preds = root.join("preds.jsonl");
        write_jsonl(
            &preds,
            &[
                serde_json::json!({"task_id": "js-gold", "generation": "function add(a, b) {\n  return a + b;\n}\n"}),
                serde_json::json!({"task_id": "js-forge", "generation": forge}),
                serde_json::json!({"task_id": "js-dir", "generation": dir}),
            ],
        );
        let (f, p) = (file.display().to_string(), preds.display().to_string());
        let run = eval(m, &[&f, "-p", &p]);
        assert_eq!(run.verdict("js-gold"), "resolved", "{m:?}: {}", run.result("js-gold"));
        for id in ["js-forge", "js-dir"] {
            let r = run.result(id);
            assert_eq!(r["verdict"], "unresolved", "{m:?}: {r}");
            assert!(r["tampering"].as_array().is_some_and(|a| !a.is_empty()), "{m:?}: {r}");
        }
    }
}

#[test]
fn shards_split_the_dataset_and_samples_are_stable() {
    let m = modes()[0];
    let p = polyglot();
    // One empty patch and no other prediction: every instance graded, none run.
    let empty =
        write_records(m, "one-empty.jsonl", &[serde_json::json!({"instance_id": "python/sum-two", "model_patch": ""})]);
    let empty = empty.display().to_string();
    let ids = |extra: &[&str]| {
        let mut a = vec![p.as_str(), "-p", empty.as_str()];
        a.extend_from_slice(extra);
        let r = eval(m, &a);
        assert_eq!(code(&r.out), 1, "{}", stderr(&r.out));
        let mut v: Vec<String> = r.results().iter().map(|x| x["instance_id"].as_str().unwrap().to_string()).collect();
        v.sort();
        v
    };
    let all = ids(&[]);
    assert_eq!(all.len(), 7, "one exercise per language");
    let (a, b, c) = (ids(&["--shard", "1/3"]), ids(&["--shard", "2/3"]), ids(&["--shard", "3/3"]));
    let mut union = [a.clone(), b.clone(), c.clone()].concat();
    union.sort();
    assert_eq!(union, all, "shards are disjoint and cover everything");
    assert_eq!(a, ids(&["--shard", "1/3"]), "deterministic");
    let s = ids(&["-n", "3"]);
    assert_eq!(s.len(), 3);
    assert_eq!(s, ids(&["-n", "3"]));
    assert_eq!(ids(&["-t", "aider_go_sum-two", "python/sum-two"]), vec!["go/sum-two", "python/sum-two"]);
}

#[test]
fn bad_input_is_one_clear_line_and_writes_nothing() {
    let m = modes()[0];
    let p = polyglot();
    // Predictions that cannot be meant for this dataset: none at all, ids it does not have (the
    // SWE-bench harness refuses them too), an id given twice with different predictions.
    let rec = |id: &str, patch: &str| serde_json::json!({"instance_id": id, "model_patch": patch});
    let none = write_records(m, "none.jsonl", &[]);
    let unknown = write_records(m, "unknown.jsonl", &[rec("python/sum-two", ""), rec("django__django-11099", "")]);
    let twice = write_records(m, "twice.jsonl", &[rec("go/sum-two", "a"), rec("aider_go_sum-two", "b")]);
    let (none, unknown, twice) =
        (none.display().to_string(), unknown.display().to_string(), twice.display().to_string());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![&p, "-p", &none], "no predictions in it"),
        (vec![&p, "-p", &unknown], "1 instance id is not in the dataset (django__django-11099)"),
        (vec![&p, "-p", &twice], "go/sum-two is given twice with different predictions (records 1 and 2)"),
        (vec!["/nonexistent/dataset"], "dataset /nonexistent/dataset"),
        (vec![&p, "-t", "python/nope"], "-t python/nope"),
        (vec![&p, "--image", "cobol=x"], "no language \"cobol\""),
        (vec![&p, "--filter-category", "cobol"], "--filter-category cobol"),
        (vec![&p, "-p", "/nonexistent/preds.jsonl"], "/nonexistent/preds.jsonl"),
    ];
    for (args, msg) in cases {
        let dir = m.owned_dir("bad").join("out");
        let r = eval_in(m, &dir, &args);
        assert_eq!(code(&r.out), 125, "{args:?}");
        let err = stderr(&r.out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: {err}");
        assert!(!dir.exists(), "{args:?}: wrote {}", dir.display());
    }
    // A value clap's parser refuses: a usage error (2), clap's message, nothing written.
    let dir = m.owned_dir("bad").join("out");
    let r = eval_in(m, &dir, &[&p, "--shard", "0/2"]);
    assert_eq!(code(&r.out), 2, "{}", stderr(&r.out));
    assert!(
        stderr(&r.out)
            .starts_with("polysandbox: error: invalid value '0/2' for '--shard <I/N>': 0/2: shards count from 1"),
        "{}",
        stderr(&r.out)
    );
    assert!(!dir.exists(), "wrote {}", dir.display());
}

#[test]
fn a_missing_image_is_an_infrastructure_error_not_a_failure() {
    let m = modes()[0];
    let p = polyglot();
    let r = eval(
        m,
        &[&p, "--filter-category", "python", "--image", "python=localhost/polysandbox/absent:1", "--retries", "0"],
    );
    // Infrastructure, not a failure of the prediction: 3, apart from "not resolved" (1).
    assert_eq!(code(&r.out), 3, "{}", stderr(&r.out));
    let res = r.result("python/sum-two");
    assert_eq!(res["verdict"], "error");
    assert!(res["reason"].as_str().unwrap().contains("absent"), "{res}");
    let rep = r.report();
    assert_eq!(rep["error_ids"][0], "python/sum-two");
    assert_eq!(rep["accuracy_score"], 0.0);
}

#[test]
fn ctrl_c_stops_cleanly_and_leaves_a_resumable_run() {
    let m = modes()[0];
    let p = polyglot();
    let dir = m.owned_dir("interrupt").join("out");
    let timeout = prediction("timeout");
    let args = [p.as_str(), "--filter-category", "python", "-p", timeout.as_str(), "--timeout", "60s"];
    let mut c = m.command();
    // Its stderr a file (a CI log), with a heartbeat every second while nothing ends.
    let log = m.owned_dir("interrupt-log").join("stderr");
    let md = m.owned_dir("interrupt-md").join("summary.md");
    let mut child = c
        .arg("eval")
        .args(args)
        .arg("-o")
        .arg(&dir)
        .arg("--summary-md")
        .arg(&md)
        .env("POLYSANDBOX_EVAL_HEARTBEAT", "1s")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    // Wait until the spinning solution runs in its sandbox and a heartbeat names it, then
    // interrupt eval.
    assert!(eventually(30, || !processes_with(&dir.display().to_string()).is_empty()
        && dir.join("logs/python__sum-two/test_output.txt").exists()));
    assert!(
        eventually(30, || said().lines().any(|l| l.contains("0 of 1 done; running 1: python/sum-two ("))),
        "no heartbeat: {}",
        said()
    );
    std::thread::sleep(std::time::Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let status = child.wait().unwrap();
    let err = said();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(started.elapsed().as_secs() < 20, "stopping took {:?}", started.elapsed());
    // How many were not run, and the command that resumes the run, in the log and the summary.
    let line = err.lines().find(|l| l.starts_with("polysandbox: interrupted: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("1 of 1 instance not run (0 recorded); to resume: ") && line.ends_with(" --resume"),
        "{line}"
    );
    assert!(line.contains(&format!("-o {}", dir.display())), "{line}");
    let summary = std::fs::read_to_string(&md).unwrap();
    let said = md_text("1 of 1 instance not run (0 recorded); to resume: ");
    assert!(summary.contains(&format!("> **Interrupted**: {said}")), "{summary}");
    // Nothing half-done recorded, no sandbox left behind.
    let results = std::fs::read_to_string(dir.join("results.jsonl")).unwrap_or_default();
    assert!(results.trim().is_empty(), "{results}");
    assert!(
        eventually(10, || processes_with(&dir.display().to_string()).is_empty()),
        "sandboxes survived the interrupt"
    );
    // --resume runs it (here with a short timeout: a different setting, so it reruns anyway).
    let r = eval_in(
        m,
        &dir,
        &[p.as_str(), "--filter-category", "python", "-p", timeout.as_str(), "--timeout", "2s", "--resume"],
    );
    assert_eq!(r.verdict("python/sum-two"), "timeout", "{}", stderr(&r.out));
    // What --resume picked up: nothing recorded, the one instance run.
    assert!(stderr(&r.out).contains("results.jsonl: 0 verdicts kept, 1 to run"), "{}", stderr(&r.out));
}

/// Every path on the command line may be relative to the working directory: the dataset,
/// the predictions, -o, --repos, --config and --root. (A relative -o once made every patch
/// prediction patch_failed: the patch was written under one directory and read from another.)
#[test]
fn every_path_argument_may_be_relative() {
    for m in modes() {
        let root = m.owned_dir("rel");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (_, _) = swe_fixture(&root);
        // The honest fix as a model patch.
        let fix = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n";
        let preds = [("acme__calc-1", fix), ("acme__calc-2", fix)]
            .iter()
            .map(|(id, p)| {
                serde_json::json!({"instance_id": id, "model_name_or_path": "m", "model_patch": p}).to_string()
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(root.join("fix.jsonl"), preds).unwrap();
        std::fs::write(root.join("cfg.toml"), "[python]\ntimeout = \"170s\"\n").unwrap();
        Command::new("chmod").args(["-R", "a+rX"]).arg(&root).status().unwrap();
        // --root relative too: from the working directory up to / and down to the store.
        let store =
            if m == Mode::User && is_root() { USER_STORE.to_string() } else { "/var/lib/polysandbox".to_string() };
        let up = "../".repeat(root.components().count() - 1);
        let rel_store = format!("{up}{}", store.trim_start_matches('/'));
        // A calibration made and used with relative paths too.
        let o = m
            .command()
            .current_dir(&root)
            .args([
                "calibrate",
                "swe.jsonl",
                "--runs",
                "1",
                "--no-stub",
                "-o",
                "calruns",
                "--calibration",
                "cal.json",
                "--repos",
                "repos",
                "--config",
                "cfg.toml",
                "--root",
                &rel_store,
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{m:?}: {}\n{}", stdout(&o), stderr(&o));
        assert!(root.join("cal.json").is_file() && root.join("calruns/calibration.json").is_file(), "{m:?}");
        let mut c = m.command();
        c.current_dir(&root)
            .args([
                "eval",
                "swe.jsonl",
                "-p",
                "fix.jsonl",
                "-o",
                "out",
                "--repos",
                "repos",
                "--config",
                "cfg.toml",
                "--root",
                &rel_store,
                "--calibration",
                "cal.json",
            ])
            .stdin(Stdio::null());
        let o = c.output().unwrap();
        assert_eq!(code(&o), 0, "{m:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("calibration") && stderr(&o).contains("cal.json"),
            "{m:?}: the calibration was not used: {}",
            stderr(&o)
        );
        let run = Run { out: o, dir: root.join("out") };
        for id in ["acme__calc-1", "acme__calc-2"] {
            assert_eq!(run.verdict(id), "resolved", "{m:?} {id}: {}", run.result(id));
        }
        assert!(root.join("out/results.jsonl").is_file(), "{m:?}: -o out was not used");
    }
}

/// Predictions are untrusted input: a predictions directory whose solution file is a symlink
/// to a host file, a FIFO, a symlink to /dev/zero, or whose instance directory is a symlink,
/// is refused for that instance (patch_failed, with the reason), never followed: the host
/// file's content reaches neither the sandbox nor the logs, nothing hangs, and the run goes on.
#[test]
fn hostile_prediction_directories_are_refused_never_followed() {
    for m in modes() {
        let secret_text = format!("host-secret-{}-{}", std::process::id(), unique());
        let secret = m.writable_file("secret");
        std::fs::write(&secret, format!("{secret_text}\ndef add(a, b):\n    return a + b\n")).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        for how in ["symlink", "fifo", "zero", "dir-symlink"] {
            let preds = m.owned_dir(&format!("preds-{how}"));
            let inst = preds.join("python/sum-two");
            match how {
                "dir-symlink" => {
                    std::fs::create_dir_all(preds.join("python")).unwrap();
                    let elsewhere = m.owned_dir("elsewhere");
                    std::os::unix::fs::symlink(&secret, elsewhere.join("sum_two.py")).unwrap();
                    std::os::unix::fs::symlink(&elsewhere, &inst).unwrap();
                }
                _ => {
                    std::fs::create_dir_all(&inst).unwrap();
                    let f = inst.join("sum_two.py");
                    match how {
                        "symlink" => std::os::unix::fs::symlink(&secret, &f).unwrap(),
                        "zero" => std::os::unix::fs::symlink("/dev/zero", &f).unwrap(),
                        _ => nix::unistd::mkfifo(&f, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap(),
                    }
                }
            }
            if m == Mode::User && is_root() {
                Command::new("chown")
                    .args(["-hR", &format!("{}:{}", fixtures().uid, fixtures().gid)])
                    .arg(&preds)
                    .status()
                    .unwrap();
            }
            let run = eval(m, &[&polyglot(), "-p", preds.to_str().unwrap(), "--filter-category", "python", "go"]);
            let r = run.result("python/sum-two");
            assert_eq!(r["verdict"], "patch_failed", "{m:?} {how}: {r}");
            assert!(r["reason"].as_str().unwrap_or("").contains("refused"), "{m:?} {how}: {r}");
            let o = Command::new("grep").args(["-rls", &secret_text]).arg(&run.dir).output().unwrap();
            assert!(stdout(&o).is_empty(), "{m:?} {how}: the host file reached the logs: {}", stdout(&o));
            // Other instances are graded as usual (go has no prediction here).
            assert_eq!(run.verdict("go/sum-two"), "no_prediction", "{m:?} {how}");
        }
    }
}

/// When eval is killed outright (SIGKILL: no handler runs), its sandboxes end with it instead
/// of running on to their timeout, and --resume then completes the run: each instance once.
#[test]
fn sigkill_of_eval_ends_its_sandboxes_and_resume_completes() {
    for m in modes() {
        let p = polyglot();
        let dir = m.owned_dir("sigkill").join("out");
        let timeout = prediction("timeout");
        let args = [p.as_str(), "--filter-category", "python", "-p", timeout.as_str(), "--timeout", "120s"];
        let mut c = m.command();
        c.arg("eval").args(args).arg("-o").arg(&dir);
        if m == Mode::User && is_root() {
            c.args(["--root", USER_STORE]);
        }
        let mut child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        assert!(
            eventually(30, || !processes_with(&dir.display().to_string()).is_empty()
                && dir.join("logs/python__sum-two/test_output.txt").exists()),
            "{m:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1500));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            eventually(10, || processes_with(&dir.display().to_string()).is_empty()),
            "{m:?}: sandboxes outlived a SIGKILLed eval: {:?}",
            processes_with(&dir.display().to_string())
        );
        let r = eval_in(
            m,
            &dir,
            &[p.as_str(), "--filter-category", "python", "-p", timeout.as_str(), "--timeout", "2s", "--resume"],
        );
        assert_eq!(r.verdict("python/sum-two"), "timeout", "{m:?}: {}", stderr(&r.out));
        let lines = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
        assert_eq!(lines.lines().filter(|l| l.contains("python/sum-two")).count(), 1, "{m:?}: {lines}");
    }
}

/// An error the dataset makes (its test_patch does not apply, no mirror of its repository) is
/// the same on every attempt: graded error once, not retried; the others still run.
#[test]
fn dataset_errors_are_not_retried() {
    for m in modes() {
        let root = m.owned_dir("dataset-err");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (dataset, repos) = swe_fixture(&root);
        let text = std::fs::read_to_string(&dataset).unwrap();
        let mut lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        lines[0]["test_patch"] = "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -40,1 +40,1 @@\n-no such line\n+x\n".into();
        let broken = root.join("broken.jsonl");
        std::fs::write(&broken, lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("\n")).unwrap();
        Command::new("chmod").args(["-R", "a+rX"]).arg(&root).status().unwrap();
        let run = eval(m, &[broken.to_str().unwrap(), "--repos", repos.to_str().unwrap(), "--retries", "3"]);
        let r = run.result("acme__calc-1");
        assert_eq!(r["verdict"], "error", "{m:?}: {r}");
        assert!(r["reason"].as_str().unwrap_or("").contains("test_patch does not apply"), "{m:?}: {r}");
        assert_eq!(r["attempts"], 1, "{m:?}: a dataset error was retried: {r}");
        assert_eq!(run.verdict("acme__calc-2"), "resolved", "{m:?}");
    }
}

/// A patch prediction may change only the exercise's solution files: a conftest.py it adds
/// (here one that rewrites every test report to passed, the stub left as it is) is removed
/// and named in the log, so the tests judge the unchanged stub.
/// Solutions that forge, neuter or skip their tests from inside the runner's own process, one
/// prediction directory per channel, in every language the channel applies to (each of these
/// was graded `resolved` before the control test; see tests/fixtures/eval/predictions/):
/// - forge: the runner's channel written before any test ran, naming every test of the
///   dataset, then exit 0: pytest's saved stdout behind its fd capture (module import), the Go
///   test binary's test2json frames (`init()`), libtest's lines on the raw fd 1 (`exit(0)` in
///   a test), JUnit XML in the report directory (static initializer), jest's JSON report
///   (module load), Catch2's closing line (global constructor);
/// - neuter: the assertions made vacuous (pytest's `runtest`, jest's `expect`, Catch2's
///   `REQUIRE` through the solution header);
/// - skip / xfail: the test the solution would fail skipped (`pytest.skip`, JUnit
///   `assumeTrue`) or marked an expected failure (`pytest.xfail`).
#[test]
fn solutions_cannot_forge_neuter_or_skip_their_tests() {
    for m in modes() {
        let l = langs(m);
        let channels: [(&str, &[&str], &str); 4] = [
            (
                "forge",
                &["python", "go", "rust", "java", "javascript", "cpp"],
                "|not the runner's own|did not finish its tests|",
            ),
            ("neuter", &["python", "javascript", "cpp"], "not the runner's own"),
            // (Java's `assumeTrue` in the solution is JUnit's: caught first by the solution not
            // building without the tests.)
            ("skip", &["python", "java"], "|skipped|does not build without the test files|"),
            ("xfail", &["python"], "xfailed"),
        ];
        for (dir, langs_of, why) in channels {
            let cases: Vec<&str> = langs_of.iter().copied().filter(|c| l.contains(c)).collect();
            let mut a =
                vec![polyglot(), "-j".into(), "2".into(), "-p".into(), prediction(dir), "--filter-category".into()];
            a.extend(cases.iter().map(|s| s.to_string()));
            let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
            let run = eval(m, &a);
            for c in &cases {
                let r = run.result(&format!("{c}/sum-two"));
                assert_eq!(r["verdict"], "unresolved", "{m:?} {dir} {c}: {r}");
                let reason = r["reason"].as_str().unwrap_or("");
                // `|a|b|`: any of them.
                let ok = if why.starts_with('|') {
                    why.split('|').filter(|w| !w.is_empty()).any(|w| reason.contains(w))
                } else {
                    reason.contains(why)
                };
                assert!(ok, "{m:?} {dir} {c}: {r}");
            }
        }
    }
}

#[test]
fn a_prediction_cannot_add_runner_configuration() {
    for m in modes() {
        let conftest = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = \"passed\"\n";
        let body: String = conftest.lines().map(|l| format!("+{l}\n")).collect();
        let patch = format!(
            "--- /dev/null\n+++ b/python/exercises/practice/sum-two/conftest.py\n@@ -0,0 +1,{} @@\n{body}",
            conftest.lines().count()
        );
        let dir = m.owned_dir("conftest");
        let preds = dir.join("preds.jsonl");
        std::fs::write(
            &preds,
            serde_json::json!({"instance_id": "python/sum-two", "model_name_or_path": "m", "model_patch": patch})
                .to_string(),
        )
        .unwrap();
        Command::new("chmod").args(["-R", "a+rX"]).arg(&dir).status().unwrap();
        let run = eval(m, &[&polyglot(), "--filter-category", "python", "-p", preds.to_str().unwrap()]);
        let r = run.result("python/sum-two");
        assert_eq!(r["verdict"], "unresolved", "{m:?}: a conftest.py from the prediction decided the verdict: {r}");
        let diff = std::fs::read_to_string(run.dir.join("logs/python__sum-two/patch.diff")).unwrap();
        assert!(diff.contains("ignored") && diff.contains("conftest.py"), "{m:?}: not named in the log: {diff}");
    }
}

/// The runner's report directory is written by the sandbox: a report that is a symlink to a
/// host file is never read (as root, eval could read any file), a FIFO does not hang eval,
/// and neither reaches the logs.
#[test]
fn report_files_are_read_as_untrusted_input() {
    for m in modes() {
        let dir = m.owned_dir("reports");
        let secret_name = format!("SECRET{}x{}", std::process::id(), unique());
        let secret = m.writable_file("secret.xml");
        std::fs::write(&secret, format!("<testsuite><testcase classname=\"a\" name=\"{secret_name}\"/></testsuite>\n"))
            .unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let cfg = dir.join("cfg.toml");
        std::fs::write(&cfg, format!("[python]\nparser = \"junit-xml\"\ntest = [\"sh\", \"-c\", \"ln -s {} {{report}}/TEST-a.xml; mkfifo {{report}}/TEST-b.xml; exit 0\"]\n", secret.display())).unwrap();
        Command::new("chmod").args(["-R", "a+rX"]).arg(&dir).status().unwrap();
        let out = dir.join("out");
        let mut c = m.command();
        c.args([
            "eval",
            &polyglot(),
            "--filter-category",
            "python",
            "-p",
            "gold",
            "--config",
            cfg.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        if m == Mode::User && is_root() {
            c.args(["--root", USER_STORE]);
        }
        let mut child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let finished = eventually(120, || child.try_wait().unwrap().is_some());
        if !finished {
            let _ = child.kill();
        }
        assert!(finished, "{m:?}: eval hung on a FIFO in the report directory");
        let run = Run { out: child.wait_with_output().unwrap(), dir: out.clone() };
        let r = run.result("python/sum-two");
        assert_ne!(r["verdict"], "resolved", "{m:?}: {r}");
        let o = Command::new("grep").args(["-rls", &secret_name]).arg(&out).output().unwrap();
        assert!(stdout(&o).is_empty(), "{m:?}: the host file reached the results or logs: {}", stdout(&o));
        let o = Command::new("find").arg(&out).args(["-type", "l", "-o", "-type", "p"]).output().unwrap();
        assert!(stdout(&o).is_empty(), "{m:?}: a symlink or FIFO reached the logs: {}", stdout(&o));
    }
}

/// Calibration (#13): gold failing for want of something in the image becomes an `error`
/// naming the cause, never the model's `unresolved`; every test gold passes must be reported
/// passed by name (a solution that takes a test out of the run is caught only so); two
/// calibrations agree; a broken calibration file is one clear line.
#[test]
fn calibration_turns_environment_failures_into_errors_and_pins_the_tests() {
    for m in modes() {
        let root = m.owned_dir("calibration");
        // The fixtures' python and go exercises, and one whose reference solution needs a module
        // the image does not have.
        let data = root.join("data");
        std::fs::create_dir_all(&data).unwrap();
        for l in ["python", "go"] {
            assert!(Command::new("cp")
                .arg("-a")
                .arg(Path::new(&polyglot()).join(l))
                .arg(data.join(l))
                .status()
                .unwrap()
                .success());
        }
        let needs = data.join("python/exercises/practice/needs-lib");
        assert!(Command::new("cp")
            .arg("-a")
            .arg(data.join("python/exercises/practice/sum-two"))
            .arg(&needs)
            .status()
            .unwrap()
            .success());
        std::fs::write(
            needs.join(".meta/example.py"),
            "import not_in_this_image\n\n\ndef add(a, b):\n    return a + b\n",
        )
        .unwrap();
        Command::new("chmod").args(["-R", "a+rX"]).arg(&root).status().unwrap();
        let dataset = data.display().to_string();
        let calibrate = |name: &str| {
            let out = m.owned_dir(name);
            let file = out.join("calibration.json");
            let mut c = m.command();
            c.args(["calibrate", &dataset, "-j", "2", "-o"]).arg(out.join("runs")).arg("--calibration").arg(&file);
            if m == Mode::User && is_root() {
                c.args(["--root", USER_STORE]);
            }
            let o = c.stdin(Stdio::null()).output().unwrap();
            (o, file)
        };
        let (o, cal) = calibrate("cal-a");
        assert_eq!(code(&o), 1, "{m:?}: gold fails somewhere: {}\n{}", stdout(&o), stderr(&o));
        let report = stdout(&o);
        assert!(
            report.contains("excluded python/needs-lib") && report.contains("not_in_this_image"),
            "{m:?}: {report}"
        );
        let c: Value = serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
        assert_eq!(c["instances"]["python/sum-two"]["gold_passes"], true, "{c}");
        assert_eq!(c["instances"]["python/sum-two"]["tests"].as_array().unwrap().len(), 2, "{c}");
        assert_eq!(c["instances"]["python/sum-two"]["stub"], "unresolved", "{c}");
        assert!(c["instances"]["python/sum-two"]["memory_peak_bytes_max"].as_u64().unwrap() > 0);

        // A second calibration agrees on everything (flaky tests aside: there are none here).
        let (_, cal_b) = calibrate("cal-b");
        let b: Value = serde_json::from_str(&std::fs::read_to_string(&cal_b).unwrap()).unwrap();
        for (id, e) in c["instances"].as_object().unwrap() {
            for k in ["gold_passes", "tests", "flaky", "stub", "image"] {
                assert_eq!(e[k], b["instances"][id][k], "{m:?} {id} {k}");
            }
        }

        let cal_arg = cal.display().to_string();
        let gold = eval(m, &[&dataset, "-j", "2", "--calibration", &cal_arg]);
        let r = gold.result("python/needs-lib");
        assert_eq!(r["verdict"], "error", "{m:?}: {r}");
        assert!(
            r["reason"].as_str().unwrap().starts_with("gold fails here: ")
                && r["reason"].as_str().unwrap().contains("not_in_this_image"),
            "{m:?}: {r}"
        );
        assert_eq!(gold.verdict("python/sum-two"), "resolved");
        assert_eq!(gold.verdict("go/sum-two"), "resolved");
        assert_eq!(gold.report()["accuracy_score"], 1.0, "{m:?}: the environment's failure is not scored");
        // Without the calibration, the same failure is charged as unresolved.
        let plain = eval(m, &[&dataset, "-t", "python/needs-lib", "--no-calibration"]);
        assert_eq!(plain.verdict("python/needs-lib"), "unresolved");

        // Takes the test it would fail out of pytest's collection: a calibration (the tests
        // gold passes here, by name) tells that a test went missing. (Without one it is caught
        // only when a control's fresh name happens to match its filter.)
        let d = prediction("deselect");
        let with = eval(m, &[&dataset, "-t", "python/sum-two", "-p", &d, "--calibration", &cal_arg]);
        let r = with.result("python/sum-two");
        assert_eq!(r["verdict"], "unresolved", "{m:?}: {r}");
        // The missing test is named, or, when the filter also took a control (its fresh name
        // ending as the filter wants), the missing control; or, when the test gave controls
        // and so ran under a fresh name itself, the filter missed it and it failed.
        let reason = r["reason"].as_str().unwrap();
        let failed = r["tests"].as_array().is_some_and(|t| {
            t.iter().any(|t| t["name"] == "sum_two_test.SumTwoTest.test_negative_numbers" && t["status"] == "failed")
        });
        assert!(reason.contains("test_negative_numbers") || reason.contains("control test") || failed, "{m:?}: {r}");

        // A calibration file that is not one: one line, exit 125, nothing written.
        let bad = m.writable_file("bad-calibration.json");
        std::fs::write(&bad, "{\"format\": 1}").unwrap();
        let dir = m.owned_dir("bad-cal").join("out");
        let r = eval_in(m, &dir, &[&dataset, "--calibration", bad.to_str().unwrap()]);
        assert_eq!(code(&r.out), 125, "{m:?}: {}", stderr(&r.out));
        assert_eq!(stderr(&r.out).lines().count(), 1, "{}", stderr(&r.out));
        assert!(!dir.exists());
        // calibrate on a dataset that is not there: the same.
        let o = m
            .command()
            .args(["calibrate", "/nonexistent/dataset", "-o"])
            .arg(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&o), 125, "{m:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
        assert!(!dir.exists(), "{m:?}: calibrate left {}", dir.display());
    }
}

/// A run where the calibration left every instance out scored nothing: no success for a CI
/// step or a Slurm task (#38), exit 3 with the reason. The table, report.json and the Markdown
/// summary (and merge's report) say what was left out, per cause, with the command that
/// calibrates them again; that command runs as printed.
#[test]
fn nothing_scored_exits_3_and_the_reports_say_how_to_calibrate_again() {
    for m in modes() {
        let root = m.owned_dir("nothing-scored");
        // One exercise, whose reference solution needs a module the image does not have.
        let data = root.join("data");
        let needs = data.join("python/exercises/practice/needs-lib");
        std::fs::create_dir_all(needs.parent().unwrap()).unwrap();
        let sum_two = Path::new(&polyglot()).join("python/exercises/practice/sum-two");
        assert!(Command::new("cp").arg("-a").arg(&sum_two).arg(&needs).status().unwrap().success());
        std::fs::write(
            needs.join(".meta/example.py"),
            "import not_in_this_image\n\n\ndef add(a, b):\n    return a + b\n",
        )
        .unwrap();
        Command::new("chmod").args(["-R", "a+rX"]).arg(&root).status().unwrap();
        let dataset = data.display().to_string();
        let calibrate = |args: &[String], name: &str| {
            let out = m.owned_dir(name);
            let file = out.join("calibration.json");
            let mut c = m.command();
            c.args(args).args(["--runs", "1", "--no-stub", "-o"]).arg(out.join("runs")).arg("--calibration").arg(&file);
            if m == Mode::User && is_root() && !args.iter().any(|a| a == "--root") {
                c.args(["--root", USER_STORE]);
            }
            (c.stdin(Stdio::null()).output().unwrap(), file)
        };
        let (o, cal) = calibrate(&["calibrate".into(), dataset.clone()], "cal");
        assert_eq!(code(&o), 1, "{m:?}: gold fails there: {}\n{}", stdout(&o), stderr(&o));
        let cal = cal.display().to_string();

        let summary_md = m.owned_dir("nothing-scored-md").join("summary.md");
        let md_arg = summary_md.display().to_string();
        let run = eval(m, &[&dataset, "--calibration", &cal, "--summary-md", &md_arg]);
        let r = run.result("python/needs-lib");
        assert_eq!((&r["verdict"], &r["excluded"]), (&Value::from("error"), &Value::from(true)), "{m:?}: {r}");
        let reason = r["reason"].as_str().unwrap();
        // Nothing scored: exit 3, whatever else, and the last line says why.
        assert_eq!(code(&run.out), 3, "{m:?}: {}", stderr(&run.out));
        let last = stderr(&run.out).lines().last().unwrap_or("").to_string();
        assert!(
            last.starts_with("polysandbox: exit 3: nothing was scored: 1 instance left out by the calibration ("),
            "{m:?}: {last}"
        );
        // report.json: the cause, the ids and the command.
        let report = run.report();
        let by = report["excluded_by_cause"].as_array().unwrap_or_else(|| panic!("{report}"));
        assert_eq!(by.len(), 1, "{report}");
        let cause = by[0]["cause"].as_str().unwrap();
        assert!(!cause.is_empty() && reason.starts_with(&format!("gold fails here: {cause}")), "{cause:?}: {reason}");
        assert!(last.contains(&format!("({cause}: 1; ")), "{last}");
        assert_eq!((&by[0]["count"], &by[0]["ids"]), (&Value::from(1), &serde_json::json!(["python/needs-lib"])));
        let command = by[0]["command"].as_str().unwrap();
        assert!(command.starts_with(&format!("polysandbox calibrate {dataset} ")), "{command}");
        assert!(command.ends_with(" --instance python/needs-lib"), "{command}");
        assert_eq!(report["excluded_ids"], serde_json::json!(["python/needs-lib"]));
        // The table and the Markdown summary give it too.
        let table = stdout(&run.out);
        assert!(table.contains("resolved 0 of 0 (0.0%)"), "{table}");
        assert!(
            table.contains(&format!("  {cause}: 1 (python/needs-lib)\n    calibrate them again: {command}\n")),
            "{table}"
        );
        let md = std::fs::read_to_string(&summary_md).unwrap();
        assert!(md.contains("### Left out of the score (1)") && md.contains(&format!("```sh\n{command}\n```")), "{md}");

        // The command runs as printed (a calibration file of its own here, to leave the
        // store's alone): gold fails there again, named.
        let words = Command::new("sh").args(["-c", &format!("printf '%s\\0' {command}")]).output().unwrap();
        let words: Vec<String> =
            String::from_utf8(words.stdout).unwrap().split_terminator('\0').map(String::from).collect();
        assert_eq!(words[..2], ["polysandbox", "calibrate"], "{command}");
        let (o, again) = calibrate(&words[1..], "cal-again");
        assert_eq!(code(&o), 1, "{m:?}: {command}: {}\n{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("excluded python/needs-lib: "), "{}", stdout(&o));
        let again: Value = serde_json::from_str(&std::fs::read_to_string(again).unwrap()).unwrap();
        assert_eq!(again["instances"].as_object().unwrap().keys().collect::<Vec<_>>(), ["python/needs-lib"]);

        // merge writes the same of the shards' results, and exits as eval does.
        let shard = m.owned_dir("nothing-scored-shard").join("s1");
        let one = eval_in(m, &shard, &[&dataset, "--calibration", &cal, "--shard", "1/1"]);
        assert_eq!(code(&one.out), 3, "{m:?}: {}", stderr(&one.out));
        let merged = m.owned_dir("nothing-scored-merged").join("out");
        let o = m.command().arg("merge").arg(&merged).arg(&shard).stdin(Stdio::null()).output().unwrap();
        assert_eq!(code(&o), 3, "{m:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("exit 3: nothing was scored: 1 instance left out by the calibration"),
            "{}",
            stderr(&o)
        );
        let merged: Value =
            serde_json::from_str(&std::fs::read_to_string(merged.join("report.json")).unwrap()).unwrap();
        let by = &merged["excluded_by_cause"];
        assert_eq!((&by[0]["cause"], &by[0]["ids"]), (&Value::from(cause), &serde_json::json!(["python/needs-lib"])));
        let merged_command = by[0]["command"].as_str().unwrap();
        assert!(
            merged_command.starts_with(&format!("polysandbox calibrate {dataset} "))
                && merged_command.ends_with(" --instance python/needs-lib"),
            "{merged_command}"
        );
    }
}

/// The images carry what the full Aider polyglot benchmark declares (#13), not only the
/// exercises in shared/: every Rust crate and version its exercises name (vendored, offline),
/// and AssertJ's 2D-array assertions (3.17+; bookworm has 3.14) with JUnit 5.10; the one
/// library no registry here has (RxJava) comes out of calibration as an error naming it.
#[test]
fn the_images_carry_the_whole_benchmarks_dependencies() {
    // The rust and java images are in root's store only: the unprivileged run is a counted skip.
    skip(
        "the_images_carry_the_whole_benchmarks_dependencies",
        "User: the rust and java images are in root's store only",
    );
    if !is_root() {
        return;
    }
    let deps = data().join("deps").display().to_string();
    let dir = Mode::Root.owned_dir("deps-cal");
    let cal = dir.join("calibration.json");
    let o = Mode::Root
        .command()
        .args(["calibrate", &deps, "--runs", "1", "--no-stub", "-j", "2", "-o"])
        .arg(dir.join("runs"))
        .arg("--calibration")
        .arg(&cal)
        .output()
        .unwrap();
    // RxJava (the full benchmark's hangman) is in no registry reachable here: calibration
    // names it, and eval makes that exercise an error, never the model's failure.
    assert_eq!(code(&o), 1, "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("excluded java/needs-rxjava: missing dependency") && stdout(&o).contains("io.reactivex"),
        "{}",
        stdout(&o)
    );
    let run = eval(Mode::Root, &[&deps, "-j", "2", "--calibration", cal.to_str().unwrap()]);
    for id in ["rust/deps", "java/deps"] {
        assert_eq!(run.verdict(id), "resolved", "{}", run.result(id));
    }
    let r = run.result("java/needs-rxjava");
    assert_eq!(r["verdict"], "error", "{r}");
    assert!(r["reason"].as_str().unwrap().contains("io.reactivex"), "{r}");
}

/// The real Multi-SWE-bench records in ../shared as generic repository records (their
/// harness's columns left out, so that they run on the generic toolchain images, not on their
/// own: tests/multi_swebench.rs runs those): every gold failure there is the environment's
/// (crates not vendored, npm needing the network), and calibration says so; eval then grades
/// them `error` naming the cause, where without the calibration it would charge them as
/// `unresolved` (#13).
#[test]
fn multi_swe_bench_gold_failures_on_generic_images_are_named_by_calibration() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/multi-swe-bench");
    if !shared.join("instances.jsonl").exists() {
        return skip(
            "multi_swe_bench_gold_failures_on_generic_images_are_named_by_calibration",
            "no ../shared/multi-swe-bench",
        );
    }
    skip(
        "multi_swe_bench_gold_failures_on_generic_images_are_named_by_calibration",
        "User: the rust and javascript images are in root's store only",
    );
    if !is_root() {
        return;
    }
    let m = Mode::Root;
    let dir = m.owned_dir("msb");
    let repos = dir.join("repos");
    std::fs::create_dir_all(&repos).unwrap();
    assert!(Command::new("tar")
        .arg("xzf")
        .arg(shared.join("repos.tar.gz"))
        .arg("-C")
        .arg(&repos)
        .status()
        .unwrap()
        .success());
    // Generic repository records: `repo` as org/name, `base_commit`, no org or number.
    let generic: String = std::fs::read_to_string(shared.join("instances.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
            r["repo"] = format!("{}/{}", r["org"].as_str().unwrap(), r["repo"].as_str().unwrap()).into();
            r["base_commit"] = r["base"]["sha"].clone();
            r.as_object_mut().unwrap().remove("org");
            r.as_object_mut().unwrap().remove("number");
            r.to_string() + "\n"
        })
        .collect();
    std::fs::write(dir.join("generic.jsonl"), generic).unwrap();
    let records = dir.join("generic.jsonl").display().to_string();
    let cal = dir.join("calibration.json");
    let o = m
        .command()
        .args(["calibrate", &records, "--runs", "1", "--no-stub", "-j", "2", "--repos"])
        .arg(&repos)
        .arg("-o")
        .arg(dir.join("runs"))
        .arg("--calibration")
        .arg(&cal)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}\n{}", stdout(&o), stderr(&o));
    let expect = [
        ("tokio-rs__bytes-732", "missing crate"),
        ("sharkdp__fd-1394", "missing crate"),
        ("iamkun__dayjs-2420", "network needed"),
    ];
    for (id, cause) in expect {
        assert!(stdout(&o).contains(&format!("excluded {id}: {cause}")), "{id}: {}", stdout(&o));
    }
    let repos_arg = repos.display().to_string();
    let cal_arg = cal.display().to_string();
    let with = eval(m, &[&records, "--repos", &repos_arg, "--calibration", &cal_arg]);
    for (id, cause) in expect {
        let r = with.result(id);
        assert_eq!(r["verdict"], "error", "{r}");
        assert!(r["reason"].as_str().unwrap().starts_with(&format!("gold fails here: {cause}")), "{r}");
    }
    let without = eval(m, &[&records, "--repos", &repos_arg, "--no-calibration", "-t", "tokio-rs__bytes-732"]);
    assert_eq!(without.verdict("tokio-rs__bytes-732"), "unresolved");
}

/// A patch is applied on the host; the host then reads the solution files (the diff for the
/// logs) and writes the test files back. A patch that turns a solution file, a directory on
/// its way, or the tests' directory into a symlink must not make the host read or write
/// through it (as root: any file). Each variant was followed by the previous build (the
/// solution-file symlink copied the host file into patch.diff).
#[test]
fn a_patch_cannot_plant_symlinks_the_host_follows() {
    for m in modes() {
        let dir = m.owned_dir("patch-links");
        let marker = format!("SECRET{}x{}", std::process::id(), unique());
        let secret = m.writable_file("secret.py");
        std::fs::write(&secret, format!("# {marker}\n")).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let outside = m.owned_dir("patch-links-outside");
        std::fs::write(outside.join("lib.rs"), format!("// {marker}\n")).unwrap();
        let link = |path: &str, target: &str| {
            format!("diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n")
        };
        let delete = |path: &str, text: &str| {
            let body: String = text.lines().map(|l| format!("-{l}\n")).collect();
            format!("diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n@@ -1,{} +0,0 @@\n{body}", text.lines().count())
        };
        let ex = |lang: &str, rel: &str| {
            std::fs::read_to_string(Path::new(&polyglot()).join(lang).join("exercises/practice/sum-two").join(rel))
                .unwrap()
        };
        let py = ex("python", "sum_two.py");
        let lib = ex("rust", "src/lib.rs");
        let rs_test = ex("rust", "tests/sum_two.rs");
        let cases = [
            ("python/sum-two", delete("sum_two.py", &py) + &link("sum_two.py", secret.to_str().unwrap())),
            ("rust/sum-two", delete("src/lib.rs", &lib) + &link("src", outside.to_str().unwrap())),
            ("rust/sum-two", delete("tests/sum_two.rs", &rs_test) + &link("tests", outside.to_str().unwrap())),
        ];
        for (id, patch) in cases {
            if !langs(m).contains(&id.split('/').next().unwrap()) {
                continue;
            }
            let preds = dir.join(format!("preds-{}.jsonl", unique()));
            std::fs::write(
                &preds,
                serde_json::json!({"instance_id": id, "model_name_or_path": "m", "model_patch": patch}).to_string(),
            )
            .unwrap();
            Command::new("chmod").args(["-R", "a+rX"]).arg(&dir).status().unwrap();
            let run = eval(m, &[&polyglot(), "-t", id, "-p", preds.to_str().unwrap()]);
            let r = run.result(id);
            assert_ne!(r["verdict"], "resolved", "{m:?} {id}: {r}");
            let o = Command::new("grep").args(["-rls", &marker]).arg(&run.dir).output().unwrap();
            assert!(stdout(&o).is_empty(), "{m:?} {id}: a host file reached the results or logs: {}", stdout(&o));
            let names: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, vec![std::ffi::OsString::from("lib.rs")], "{m:?} {id}: the host wrote outside the tree");
        }
    }
}

/// Text as the Markdown summary writes it: every ASCII punctuation character escaped.
fn md_text(s: &str) -> String {
    s.chars().flat_map(|c| if c.is_ascii_punctuation() { vec!['\\', c] } else { vec![c] }).collect()
}

/// A dataset of three python exercises for calibration's tests: `sum-two` (the fixture),
/// `other` (a copy), and `slow` (gold correct but sleeping `slow_s` seconds first); and a
/// predictions directory with the reference solutions of `names`.
fn calibration_dataset(m: Mode, name: &str, slow_s: u32, names: &[&str]) -> (String, String) {
    let root = m.owned_dir(name);
    let practice = root.join("data/python/exercises/practice");
    std::fs::create_dir_all(&practice).unwrap();
    let src = Path::new(&polyglot()).join("python/exercises/practice/sum-two");
    for ex in ["sum-two", "other", "slow"] {
        assert!(Command::new("cp").arg("-a").arg(&src).arg(practice.join(ex)).status().unwrap().success());
    }
    let slow = format!("import time\ntime.sleep({slow_s})\n\n\ndef add(a, b):\n    return a + b\n");
    std::fs::write(practice.join("slow/.meta/example.py"), &slow).unwrap();
    let preds = root.join("preds/python");
    for ex in names {
        std::fs::create_dir_all(preds.join(ex)).unwrap();
        let gold = std::fs::read(practice.join(ex).join(".meta/example.py")).unwrap();
        std::fs::write(preds.join(ex).join("sum_two.py"), gold).unwrap();
    }
    Command::new("chmod").args(["-R", "a+rX"]).arg(&root).status().unwrap();
    (root.join("data").display().to_string(), root.join("preds").display().to_string())
}

/// The dataset's calibration in the mode's store, as eval keeps it.
fn kept_calibration(m: Mode, dataset: &str) -> Value {
    let store = match m {
        Mode::User if is_root() => PathBuf::from(USER_STORE),
        _ if std::env::var_os("POLYSANDBOX_ROOT").is_some() => {
            PathBuf::from(std::env::var_os("POLYSANDBOX_ROOT").unwrap())
        }
        Mode::User => std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".local/share"))
            .join("polysandbox"),
        Mode::Root => PathBuf::from("/var/lib/polysandbox"),
    };
    let dir = store.join("calibrations");
    let name = Path::new(dataset).file_name().unwrap().to_string_lossy().into_owned();
    // The one made for this dataset: its file names the dataset and holds it in "dataset".
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json") && p.file_name().unwrap().to_string_lossy().starts_with(&name) {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            if v["dataset"] == dataset {
                return v;
            }
        }
    }
    Value::Null
}

/// #38: gold failing under a limit below the dataset's (`--timeout 2s`) is an error of that
/// run, nothing kept; a calibration holds for the settings it was made under: the next run
/// under others says so, calibrates again, and grades it. Gold that could not be run (an image
/// that is nowhere) is an `error` of the run, nothing kept; the instance is calibrated when
/// the image is there. Eval calibrates only the instances it will run (those with a
/// prediction).
#[test]
fn a_calibration_holds_for_its_settings_and_keeps_no_infrastructure_fault() {
    for m in modes() {
        let (data, preds) = calibration_dataset(m, "cal-settings", 4, &["slow", "sum-two"]);
        // Under a timeout below the dataset's that gold cannot meet: the setting's doing, an
        // error of the run naming it, never left out, nothing kept.
        let short = eval(m, &[&data, "-p", &preds, "-t", "python/slow", "--timeout", "2s"]);
        let r = short.result("python/slow");
        assert_eq!(r["verdict"], "error", "{m:?}: {r}");
        assert_ne!(r["excluded"], true, "{m:?}: {r}");
        let why = r["reason"].as_str().unwrap();
        assert!(why.contains("below the dataset's (--timeout 2000ms") && why.contains("gold times out"), "{m:?}: {r}");
        assert_eq!(code(&short.out), 3, "{m:?}: {}", stderr(&short.out));
        assert!(kept_calibration(m, &data)["instances"]["python/slow"].is_null(), "{m:?}");
        // A calibration made under one timeout holds for that one: under another, eval says so
        // and calibrates again. Only the instance the run runs is calibrated (sum-two has a
        // prediction, but is not selected).
        let long = eval(m, &[&data, "-p", &preds, "-t", "python/slow", "--timeout", "3600s"]);
        assert_eq!(long.verdict("python/slow"), "resolved", "{m:?}: {}", stderr(&long.out));
        let cal = kept_calibration(m, &data);
        assert_eq!(cal["instances"].as_object().map(|o| o.len()), Some(1), "{m:?}: {cal}");
        assert_eq!(cal["instances"]["python/slow"]["conditions"]["timeout"], "3600000ms", "{m:?}: {cal}");
        let default = eval(m, &[&data, "-p", &preds, "-t", "python/slow"]);
        let err = stderr(&default.out);
        assert!(err.contains("timeout 3600000ms (now ") && err.contains("calibrating again"), "{m:?}: {err}");
        let r = default.result("python/slow");
        assert_eq!(r["verdict"], "resolved", "{m:?}: {r}\n{err}");
        assert_ne!(r["excluded"], true, "{m:?}: {r}");
        assert_eq!(kept_calibration(m, &data)["instances"]["python/slow"]["gold_passes"], true, "{m:?}");

        // Predictions for one of three selected instances: that one is calibrated, not three.
        let (data, preds) = calibration_dataset(m, "cal-partial", 0, &["other"]);
        let one = eval(m, &[&data, "-p", &preds]);
        let err = stderr(&one.out);
        assert!(err.contains("calibrating 1 instance first"), "{m:?}: {err}");
        let cal = kept_calibration(m, &data);
        assert_eq!(
            cal["instances"].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()),
            Some(vec!["python/other".to_string()]),
            "{m:?}: {cal}"
        );
        assert_eq!(one.verdict("python/other"), "resolved", "{m:?}");

        // An image that is nowhere: gold could not run, an error of the run, nothing kept.
        let nowhere = eval(m, &[&data, "-p", &preds, "--image", "python=127.0.0.1:9/nowhere/python:1"]);
        let r = nowhere.result("python/other");
        assert_eq!(r["verdict"], "error", "{m:?}: {r}");
        assert_ne!(r["excluded"], true, "{m:?}: {r}");
        assert!(
            r["reason"].as_str().unwrap().starts_with("calibrating it failed: gold could not be run here"),
            "{m:?}: {r}"
        );
        assert_eq!(code(&nowhere.out), 3, "{m:?}: {}", stderr(&nowhere.out));
        let cal = kept_calibration(m, &data);
        assert_ne!(cal["instances"]["python/other"]["image"], "127.0.0.1:9/nowhere/python:1", "{m:?}: {cal}");
    }
}

/// #38: an eval interrupted while it calibrates prints a command that resumes it, and that
/// command works (it resumes the calibration's runs too).
#[test]
fn an_eval_interrupted_while_calibrating_resumes() {
    let m = modes()[0];
    let (data, preds) = calibration_dataset(m, "cal-resume", 20, &["slow", "sum-two"]);
    let dir = m.owned_dir("cal-resume-out").join("out");
    let log = m.owned_dir("cal-resume-log").join("stderr");
    let args = [data.as_str(), "-p", preds.as_str(), "-t", "python/slow", "python/sum-two", "-j", "2"];
    let mut child = m
        .command()
        .arg("eval")
        .args(args)
        .arg("-o")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // Interrupted once sum-two's gold is recorded and slow's still runs.
    let gold = dir.join("calibration/gold-1/results.jsonl");
    assert!(
        eventually(120, || std::fs::read_to_string(&gold).is_ok_and(|t| t.contains("python/sum-two"))),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(err.contains("interrupted while calibrating"), "{err}");
    let line = err.lines().skip_while(|l| !l.contains("to resume:")).nth(1).unwrap_or_default();
    assert!(line.trim_end().ends_with("--resume") && line.contains(&format!("-o {}", dir.display())), "{err}");
    let mut again: Vec<&str> = args.to_vec();
    again.push("--resume");
    let r = eval_in(m, &dir, &again);
    let err = stderr(&r.out);
    assert_eq!(code(&r.out), 0, "{err}");
    assert!(!err.contains("holds an earlier run's results"), "{err}");
    for id in ["python/slow", "python/sum-two"] {
        assert_eq!(r.verdict(id), "resolved", "{err}");
    }
}

/// #38: calibrations at once on one store (the README's Slurm array of shards) each add their
/// entries to the dataset's calibration: none is lost.
#[test]
fn calibrations_at_once_keep_each_others_entries() {
    for m in modes() {
        let (data, _) = calibration_dataset(m, "cal-shards", 0, &[]);
        let children: Vec<_> = ["python/sum-two", "python/other"]
            .iter()
            .map(|id| {
                let out = m.owned_dir(&format!("cal-shard-{}", id.replace('/', "_")));
                let mut c = m.command();
                c.args(["calibrate", &data, "--runs", "1", "--no-stub", "-t", id, "-o"]).arg(out.join("runs"));
                if m == Mode::User && is_root() {
                    c.args(["--root", USER_STORE]);
                }
                c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert_eq!(code(&o), 0, "{m:?}: {}\n{}", stdout(&o), stderr(&o));
        }
        let cal = kept_calibration(m, &data);
        for id in ["python/sum-two", "python/other"] {
            assert_eq!(cal["instances"][id]["gold_passes"], true, "{m:?}: {id}: {cal}");
        }
    }
}

/// #38: an exclusion holds for the dataset and the image build it was found with: the dataset
/// edited under the same path (a `git pull` of the benchmark) is calibrated again, and an
/// exclusion made with an image the store no longer holds is not applied on its word (the
/// image is pulled first; here it cannot be: an error of the run).
#[test]
fn an_exclusion_holds_for_the_dataset_and_image_it_was_found_with() {
    for m in modes() {
        let (data, preds) = calibration_dataset(m, "cal-changed", 0, &["other"]);
        let example = Path::new(&data).join("python/exercises/practice/other/.meta/example.py");
        let good = std::fs::read_to_string(&example).unwrap();
        let broken = format!("import not_in_this_image\n{good}");
        std::fs::write(&example, &broken).unwrap();
        let a = eval(m, &[&data, "-p", &preds, "-t", "python/other"]);
        let r = a.result("python/other");
        assert_eq!(r["excluded"], true, "{m:?}: {r}");
        assert!(r["reason"].as_str().unwrap().contains("not_in_this_image"), "{m:?}: {r}");
        // The dataset fixed under the same path: calibrated again, graded.
        std::fs::write(&example, &good).unwrap();
        let b = eval(m, &[&data, "-p", &preds, "-t", "python/other"]);
        let err = stderr(&b.out);
        assert!(err.contains("the dataset changed") && err.contains("calibrating again"), "{m:?}: {err}");
        assert_eq!(b.verdict("python/other"), "resolved", "{m:?}: {err}");

        // An exclusion made with a tag of the image, which is then removed.
        std::fs::write(&example, &broken).unwrap();
        let store: Vec<&str> = if m == Mode::User && is_root() { vec!["--root", USER_STORE] } else { vec![] };
        let tag = format!("localhost/psb-cal-test/python:{}", unique());
        let image = format!("python={tag}");
        let o = m.command().args(["tag", "localhost/polysandbox/python:bookworm", &tag]).args(&store).output().unwrap();
        assert_eq!(code(&o), 0, "{m:?}: {}", stderr(&o));
        let file = m.owned_dir("cal-changed-file").join("calibration.json");
        let out = m.owned_dir("cal-changed-runs").join("runs");
        let o = m
            .command()
            .args(["calibrate", &data, "-t", "python/other", "--runs", "1", "--no-stub", "--image", &image, "-o"])
            .arg(&out)
            .arg("--calibration")
            .arg(&file)
            .args(&store)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&o), 1, "{m:?}: {}\n{}", stdout(&o), stderr(&o));
        let o = m.command().args(["rmi", &tag]).args(&store).output().unwrap();
        assert_eq!(code(&o), 0, "{m:?}: {}", stderr(&o));
        let file_arg = file.display().to_string();
        let c = eval(m, &[&data, "-p", &preds, "-t", "python/other", "--image", &image, "--calibration", &file_arg]);
        let r = c.result("python/other");
        assert_eq!(r["verdict"], "error", "{m:?}: {r}");
        assert_ne!(r["excluded"], true, "{m:?}: the old build's word was taken: {r}");
        assert_eq!(code(&c.out), 3, "{m:?}: {}", stderr(&c.out));
    }
}
