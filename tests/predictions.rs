//! Nothing a prediction shapes is run or walked by the host (#20), as root and as the
//! unprivileged user: patches that plant git configuration that executes, or hooks, whatever
//! tool would apply them and however they spell `.git`; paths too long for a host walk; strings
//! from the dataset or the predictions used as path components; writes that would fill the
//! disk under `-o`. Exercises, generic repository records (Multi-SWE-bench's shape), SWE-bench
//! records and snippets. Each attack tries to touch a file in a host directory (the canary):
//! had any host process run its command, the file would be there. And each is graded: never an
//! `error` the prediction chose.
mod common;

use common::eval::*;
use common::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A host directory an attack's command writes into (`touch DIR/<name>`) if a host process
/// runs it; inside a sandbox the path does not exist.
struct Canary(PathBuf);

impl Canary {
    fn new(m: Mode) -> Canary {
        let d = m.owned_dir("canary");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        Canary(d)
    }
    fn cmd(&self, name: &str) -> String {
        format!("touch {}/{name}", self.0.display())
    }
    fn hits(&self) -> Vec<String> {
        std::fs::read_dir(&self.0).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
    }
}

/// A unified diff adding `lines` at the top of `path` (an existing file), as GNU patch applies
/// it; `headers` spells the path as the attack wants.
fn prepend(old: &str, new: &str, lines: &[&str]) -> String {
    let body: String = lines.iter().map(|l| format!("+{l}\n")).collect();
    format!("--- {old}\n+++ {new}\n@@ -0,0 +1,{} @@\n{body}", lines.len())
}

/// A new file in git's format (mode 100644 or 100755).
fn new_file(path: &str, mode: &str, text: &str) -> String {
    let body: String = text.lines().map(|l| format!("+{l}\n")).collect();
    format!(
        "diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{body}",
        text.lines().count()
    )
}

/// A new symlink in git's format.
fn symlink(path: &str, target: &str) -> String {
    format!("diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n")
}

/// Every way a patch could make git run a command, in every spelling that reaches `.git`: the
/// names of the variants and their patches (each after the honest fix, so that a patch that
/// got through would resolve).
fn git_attacks(canary: &Canary, fix: &str) -> Vec<(String, String)> {
    let config = |lines: &[&str]| prepend("a/.git/config", "b/.git/config", lines);
    let hook =
        |name: &str, cmd: &str| new_file(&format!(".git/hooks/{name}"), "100755", &format!("#!/bin/sh\n{cmd}\n"));
    let fsmonitor = format!("\tfsmonitor = \"{}; false\"", canary.cmd("fsmonitor"));
    let mut v: Vec<(String, String)> = vec![
        ("fsmonitor".into(), config(&["[core]", &fsmonitor])),
        ("diff-external".into(), config(&["[diff]", &format!("\texternal = \"{}; true\"", canary.cmd("diff-external"))])),
        ("textconv".into(), new_file(".gitattributes", "100644", "* diff=ev") + &config(&["[diff \"ev\"]", &format!("\ttextconv = \"{}; cat\"", canary.cmd("textconv"))])),
        ("filter".into(), new_file(".gitattributes", "100644", "* filter=ev") + &config(&["[filter \"ev\"]", &format!("\tclean = \"{}; cat\"", canary.cmd("filter-clean")), &format!("\tsmudge = \"{}; cat\"", canary.cmd("filter-smudge"))])),
        ("include-path".into(), new_file("evil.cfg", "100644", &format!("[core]\n\tfsmonitor = \"{}; false\"", canary.cmd("include-path"))) + &config(&["[include]", "\tpath = ../evil.cfg"])),
        ("include-if".into(), new_file("evil.cfg", "100644", &format!("[core]\n\tfsmonitor = \"{}; false\"", canary.cmd("include-if"))) + &config(&["[includeIf \"gitdir:/\"]", "\tpath = ../evil.cfg"])),
        ("ssh-command".into(), config(&["[core]", &format!("\tsshCommand = \"{}\"", canary.cmd("ssh-command"))])),
        ("hooks-path".into(), new_file("hooks/post-checkout", "100755", &format!("#!/bin/sh\n{}", canary.cmd("hooks-path"))) + &config(&["[core]", "\thooksPath = ../hooks"])),
        ("hook-post-checkout".into(), hook("post-checkout", &canary.cmd("hook-post-checkout"))),
        ("hook-post-index-change".into(), hook("post-index-change", &canary.cmd("hook-post-index-change"))),
        ("hook-reference-transaction".into(), hook("reference-transaction", &canary.cmd("hook-reference-transaction"))),
        // Spellings: quoted with an octal escape; an Index: line over a normal diff; a symlink
        // to .git made by the same patch; a symlink to the tree itself; a nested repository.
        ("quoted".into(), prepend("\"a/\\056git/config\"", "\"b/\\056git/config\"", &["[core]", &fsmonitor.replace("fsmonitor; false", "quoted; false")])),
        ("index-line".into(), format!("Index: x/.git/config\n0a1,2\n> [core]\n> {}\n", fsmonitor.replace("fsmonitor; false", "index-line; false").trim_start())),
        ("symlink-to-git".into(), symlink("g", ".git") + &prepend("a/g/config", "b/g/config", &["[core]", &fsmonitor.replace("fsmonitor; false", "symlink-to-git; false")])),
        ("symlink-to-tree".into(), symlink("h", ".") + &prepend("a/h/.git/config", "b/h/.git/config", &["[core]", &fsmonitor.replace("fsmonitor; false", "symlink-to-tree; false")])),
        ("nested".into(), new_file("sub/.git/config", "100644", &format!("[core]\n\tfsmonitor = \"{}; false\"", canary.cmd("nested")))),
        // A rename onto .git/config: a configuration git cannot read (the test patch then
        // failed to apply, which was graded as the dataset's fault).
        ("broken-config".into(), "diff --git a/calc.py b/.git/config\nsimilarity index 100%\nrename from calc.py\nrename to .git/config\n".into()),
        // Headers after a git binary patch, which GNU patch reads on (it applies no binary
        // part): a filter driver in .git/config and .git/info/attributes, run by git's reverse
        // check, killing every process before the tests.
        ("binary-gap".into(), format!("diff --git a/zz.dat b/zz.dat\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 0\nHcmV?d00001\n\nliteral 0\nHcmV?d00001\n\n--- /dev/null\n+++ b/.git/info/attributes\n@@ -0,0 +1 @@\n+zz_trigger.txt filter=pwn\n{}{}", prepend("a/.git/config", "b/.git/config", &["[filter \"pwn\"]", &format!("\tclean = \"{}; kill -9 -1\"", canary.cmd("binary-gap"))]), new_file("zz_trigger.txt", "100644", "trigger"))),
        // A quoted name with an escaped quote in it, hiding a second quoted `\056git`.
        ("escaped-quote".into(), format!("diff --git \"a/x1\\\" \\056\" \"b/\\056git/config\"\nnew file mode 100644\n--- /dev/null\n+++ b/z/z/z/z/z/long_name\n@@ -0,0 +1,2 @@\n+[core]\n+\tfsmonitor = \"{}; false\"\n", canary.cmd("escaped-quote"))),
    ];
    for (_, p) in v.iter_mut() {
        *p = format!("{fix}{p}");
    }
    v
}

/// Generic repository records (Multi-SWE-bench's shape, the calc repository): every git
/// configuration key and hook a patch could plant, in every spelling. Before, GNU patch applied
/// them on the host's clone and the host's next git ran them (as root, for root's eval).
#[test]
fn git_configuration_and_hooks_a_patch_plants_run_nowhere() {
    for m in modes() {
        let root = m.owned_dir("git-attacks");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let calc = calc_repo(&root);
        let canary = Canary::new(m);
        let attacks = git_attacks(&canary, &calc.fix);
        let mut records = Vec::new();
        let mut preds = Vec::new();
        for (n, (name, patch)) in attacks.iter().enumerate() {
            let mut r = calc.multi_record(100 + n as u64);
            r["instance_id"] = json!(format!("attack-{name}"));
            records.push(r);
            preds.push(json!({"instance_id": format!("attack-{name}"), "model_name_or_path": "attacker", "model_patch": patch}));
        }
        // The honest fix beside them still resolves.
        let mut honest = calc.multi_record(99);
        honest["instance_id"] = json!("honest");
        records.push(honest);
        preds.push(json!({"instance_id": "honest", "model_name_or_path": "attacker", "model_patch": calc.fix}));
        let (dataset, predictions) = (root.join("attacks.jsonl"), root.join("preds.jsonl"));
        write_jsonl(&dataset, &records);
        write_jsonl(&predictions, &preds);
        let run = eval(
            m,
            &[
                dataset.to_str().unwrap(),
                "--repos",
                calc.repos.to_str().unwrap(),
                "-p",
                predictions.to_str().unwrap(),
                "-j",
                "2",
            ],
        );
        let mut bad: Vec<String> =
            canary.hits().iter().map(|h| format!("{m:?}: a host process ran the attack's command: {h}")).collect();
        if run.verdict("honest") != "resolved" {
            bad.push(format!("{m:?}: honest: {}", run.result("honest")));
        }
        for (name, _) in &attacks {
            let r = run.result(&format!("attack-{name}"));
            if r["verdict"] != "patch_failed" || !r["reason"].as_str().unwrap_or("").contains(".git") {
                bad.push(format!("{m:?} {name}: {} ({})", r["verdict"], r["reason"]));
            }
        }
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

/// An eval of a generic-repository dataset and predictions written to `root`, output in `out`.
fn eval_records_in(
    m: Mode,
    root: &Path,
    out: &Path,
    repos: &Path,
    records: &[Value],
    preds: &[Value],
    extra: &[&str],
) -> Run {
    let (dataset, predictions) = (root.join("records.jsonl"), root.join("predictions.jsonl"));
    write_jsonl(&dataset, records);
    write_jsonl(&predictions, preds);
    let mut args = vec![
        dataset.to_str().unwrap(),
        "--repos",
        repos.to_str().unwrap(),
        "-p",
        predictions.to_str().unwrap(),
        "-j",
        "2",
    ];
    args.extend_from_slice(extra);
    eval_in(m, out, &args)
}

/// The total size of the files under `dir`.
fn size_of(dir: &Path) -> u64 {
    let o = Command::new("du").args(["-sb"]).arg(dir).output().unwrap();
    String::from_utf8_lossy(&o.stdout).split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// A 4,090-character relative path (40 directories of 100 characters and a file name): git
/// apply accepts it, and a host walk by absolute path fails on it (ENAMETOOLONG).
fn long_path() -> String {
    let dir = "d".repeat(100);
    let mut p = vec![dir.as_str(); 40].join("/");
    p.push('/');
    p.push_str(&"f".repeat(4090 - p.len()));
    assert_eq!(p.len(), 4090);
    p
}

/// An output directory on a filesystem of its own, 128 MiB, as root (a tmpfs mounted for the
/// test): the disk a prediction's writes must never reach. As the test user, a plain
/// directory (it cannot mount), where the size of what eval left is checked.
struct SmallDisk(PathBuf, bool);

impl SmallDisk {
    fn new(m: Mode) -> SmallDisk {
        let d = m.owned_dir("small-disk");
        if m == Mode::Root {
            let ok = Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=128M,mode=0755", "tmpfs"])
                .arg(&d)
                .status()
                .unwrap()
                .success();
            assert!(ok, "mount a tmpfs for the test");
            return SmallDisk(d, true);
        }
        skip(
            "the output directory on a small filesystem of its own",
            "the test user cannot mount one: its size is checked instead",
        );
        SmallDisk(d, false)
    }
    fn out(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        if self.1 {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Paths and disk: a patch that makes a 4,090-character path (the host's walk of the tree
/// failed on it: `error`), and code that writes far more than `--disk` into its tree (which was
/// a read-write bind of a host directory under `-o`: the host's disk, uncounted). Both graded;
/// the output directory holds only what eval wrote.
#[test]
fn long_paths_and_disk_filling_writes_stay_in_the_sandbox() {
    for m in modes() {
        let root = m.owned_dir("paths-disk");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let calc = calc_repo(&root);
        let long = new_file(&long_path(), "100644", "x");
        // The repository's tests run code that fills the disk, then the right answer.
        let filler = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,10 @@\n+try:\n+    with open('fill.bin', 'wb') as f:\n+        for _ in range(256):\n+            f.write(b'x' * (1 << 20))\n+except OSError:\n+    pass\n+\n+\n def add(a, b):\n-    return a - b\n+    return a + b\n";
        let mut records = vec![];
        let mut preds = vec![];
        for (id, patch) in [("long-path", format!("{}{long}", calc.fix)), ("fills-disk", filler.to_string())] {
            let mut r = calc.multi_record(1);
            r["instance_id"] = json!(id);
            records.push(r);
            preds.push(json!({"instance_id": id, "model_name_or_path": "m", "model_patch": patch}));
        }
        let disk = SmallDisk::new(m);
        let run = eval_records_in(m, &root, &disk.out("repo"), &calc.repos, &records, &preds, &["--disk", "64M"]);
        let mut bad = vec![];
        for id in ["long-path", "fills-disk"] {
            if run.verdict(id) != "resolved" {
                bad.push(format!("{m:?} repository {id}: {}", run.result(id)));
            }
        }
        if size_of(&run.dir) > 16 << 20 {
            bad.push(format!("{m:?}: the output directory grew to {} bytes", size_of(&run.dir)));
        }

        // An exercise: the same long path beside the gold solution, and a solution that fills
        // its directory before it answers.
        let ex = data().join("polyglot");
        let gold = std::fs::read_to_string(ex.join("python/exercises/practice/sum-two/.meta/example.py")).unwrap();
        let body: String = gold.lines().map(|l| format!("+{l}\n")).collect();
        let stub = std::fs::read_to_string(ex.join("python/exercises/practice/sum-two/sum_two.py")).unwrap();
        let minus: String = stub.lines().map(|l| format!("-{l}\n")).collect();
        let replace = |add: &str, n: usize| {
            format!("--- a/sum_two.py\n+++ b/sum_two.py\n@@ -1,{} +1,{n} @@\n{minus}{add}", stub.lines().count())
        };
        let gold_patch = replace(&body, gold.lines().count());
        let fill = "import os\ntry:\n    with open(os.path.join(os.path.dirname(__file__), 'fill.bin'), 'wb') as f:\n        for _ in range(256):\n            f.write(b'x' * (1 << 20))\nexcept OSError:\n    pass\n";
        let fill_body: String = fill.lines().chain(gold.lines()).map(|l| format!("+{l}\n")).collect();
        let cases = [
            ("long", format!("{gold_patch}{long}")),
            ("fill", replace(&fill_body, fill.lines().count() + gold.lines().count())),
        ];
        for (name, patch) in cases {
            let preds = root.join(format!("ex-{name}.jsonl"));
            write_jsonl(
                &preds,
                &[json!({"instance_id": "python/sum-two", "model_name_or_path": "m", "model_patch": patch})],
            );
            let run = eval_in(
                m,
                &disk.out(name),
                &[ex.to_str().unwrap(), "--filter-category", "python", "-p", preds.to_str().unwrap(), "--disk", "64M"],
            );
            if run.verdict("python/sum-two") != "resolved" {
                bad.push(format!("{m:?} exercise {name}: {}", run.result("python/sum-two")));
            }
            if size_of(&run.dir) > 16 << 20 {
                bad.push(format!("{m:?} exercise {name}: the output directory grew to {} bytes", size_of(&run.dir)));
            }
        }
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

/// Strings from the dataset and the predictions as directory names: instance ids with `../`,
/// 300 characters or a NUL, and model names likewise (a 300-character model name made the
/// SWE-bench log directory fail for the instances the attacker chose: `error`). Each graded;
/// every directory eval made is under `-o`, none named with `..`, each name at most 255 bytes.
#[test]
fn dataset_and_prediction_strings_never_become_raw_path_components() {
    for m in modes() {
        let root = m.owned_dir("names");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let recs = ["../../escape", &"i".repeat(300), "nul\u{0}id", "a/b", "a__b"].iter().map(|id| json!({"_id": id, "language": "python", "code": "def one():\n    return 1", "test": "assert one() == 1"})).collect::<Vec<_>>();
        let dataset = root.join("snippets.jsonl");
        write_jsonl(&dataset, &recs);
        let run = eval(m, &[dataset.to_str().unwrap()]);
        let bad: Vec<String> = recs
            .iter()
            .map(|r| r["_id"].as_str().unwrap())
            .filter(|id| run.verdict(id) != "resolved")
            .map(|id| format!("{m:?} {id:?}: {}", run.result(id)))
            .collect();
        assert!(bad.is_empty(), "{bad:#?}");
        assert_eq!(code(&run.out), 0, "{m:?}: {}", stderr(&run.out));
        let dirs: Vec<String> = run.results().iter().map(|r| r["logs"].as_str().unwrap().to_string()).collect();
        let mut unique = dirs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), dirs.len(), "{m:?}: two instances share a log directory: {dirs:?}");
        check_tree(&run.dir, &root);
    }
}

/// Every entry under `out` is a plain name of at most 255 bytes, and nothing was made beside
/// `out` in `parent` but what the test made.
fn check_tree(out: &Path, parent: &Path) {
    let o = Command::new("find").arg(out).args(["-printf", "%f\n"]).output().unwrap();
    for name in String::from_utf8_lossy(&o.stdout).lines() {
        assert!(name.len() <= 255 && name != ".." && !name.contains('\0'), "{name:?}");
    }
    let made: Vec<String> =
        std::fs::read_dir(parent).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(
        made.iter().all(|n| ["snippets.jsonl", "out", "eval"].contains(&n.as_str()) || n.ends_with(".jsonl")),
        "{made:?}"
    );
}

/// SWE-bench records in their replica image (pytest-dev__pytest-10051; root's store, and the
/// test user's, filled by .ci/setup): a hook planted by GNU patch that the eval script's own
/// `git checkout` ran (it printed a forged block of PASSED lines: `resolved` for a patch that
/// fixes nothing), `diff.external` killing every process from the driver's own diff (`error`),
/// a small binary patch whose diff is 80 MB (the driver printed it past the output limit:
/// `error`), and long, `..` or NUL model names (`error` for the instances they named).
#[test]
fn swebench_patches_cannot_plant_hooks_and_their_output_is_graded() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench/instances.jsonl");
    let Ok(text) = std::fs::read_to_string(&shared) else {
        return skip("swebench_patches_cannot_plant_hooks_and_their_output_is_graded", "no ../shared/swebench");
    };
    let id = "pytest-dev__pytest-10051";
    let rec: Value =
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|r| r["instance_id"] == id).unwrap();
    for m in modes() {
        let store = if m == Mode::User && is_root() { USER_STORE.to_string() } else { "/var/lib/polysandbox".into() };
        let listed = stdout(&m.command().args(["images", "--root", &store]).output().unwrap());
        if !listed.contains("pytest-dev_1776_pytest-10051") {
            skip(
                &format!("swebench_patches_cannot_plant_hooks_and_their_output_is_graded ({m:?})"),
                "the replica of pytest-dev__pytest-10051 is not in the store: run bash .ci/setup",
            );
            continue;
        }
        let root = m.owned_dir("swe-attacks");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let canary = Canary::new(m);
        let tests: Vec<String> = ["FAIL_TO_PASS", "PASS_TO_PASS"]
            .iter()
            .flat_map(|k| serde_json::from_str::<Vec<String>>(rec[k].as_str().unwrap()).unwrap())
            .collect();
        let forged: String = tests.iter().map(|t| format!("echo 'PASSED {t}'\n")).collect();
        let hook = new_file(
            ".git/hooks/post-checkout",
            "100755",
            &format!(
                "#!/bin/sh\n{}\necho '>>>>> Start Test Output'\n{forged}echo '>>>>> End Test Output'",
                canary.cmd("swe-hook")
            ),
        );
        let external = prepend("a/.git/config", "b/.git/config", &["[diff]", "\texternal = \"kill -9 -1\""]);
        let big = binary_expansion(&root, &rec, "AUTHORS");
        let gold = rec["patch"].as_str().unwrap().to_string();
        let cases: Vec<(&str, String, String, &str)> = vec![
            ("hook", wrong_patch(&rec) + &hook, "attacker".into(), "patch_failed"),
            ("external", wrong_patch(&rec) + &external, "attacker".into(), "patch_failed"),
            ("big-diff", gold.clone() + &big, "attacker".into(), "unresolved"),
            ("long-model", gold.clone(), "m".repeat(300), "resolved"),
            ("dotdot-model", gold.clone(), "../../../../escape".into(), "resolved"),
            ("nul-model", gold.clone(), "a\u{0}b".into(), "resolved"),
            ("wrong", wrong_patch(&rec), "attacker".into(), "unresolved"),
        ];
        let mut records = vec![];
        let mut preds = vec![];
        for (name, patch, model, _) in &cases {
            let mut r = rec.clone();
            r["instance_id"] = json!(format!("{id}-{name}"));
            records.push(r);
            preds.push(
                json!({"instance_id": format!("{id}-{name}"), "model_name_or_path": model, "model_patch": patch}),
            );
        }
        let (dataset, predictions) = (root.join("records.jsonl"), root.join("preds.jsonl"));
        write_jsonl(&dataset, &records);
        write_jsonl(&predictions, &preds);
        let run =
            eval(m, &[dataset.to_str().unwrap(), "-p", predictions.to_str().unwrap(), "-j", "2", "--root", &store]);
        let mut bad: Vec<String> =
            canary.hits().iter().map(|h| format!("{m:?}: a host process ran the attack's command: {h}")).collect();
        for (name, _, _, want) in &cases {
            let r = run.result(&format!("{id}-{name}"));
            if r["verdict"] != *want {
                bad.push(format!("{m:?} {name}: {} ({}), not {want}", r["verdict"], r["reason"]));
            }
        }
        assert!(bad.is_empty(), "{bad:#?}");
        let big = run.result(&format!("{id}-big-diff"));
        assert!(big["reason"].as_str().unwrap().contains("output limit"), "{m:?}: {big}");
        let o = Command::new("find").arg(&run.dir).args(["-name", "*escape*"]).output().unwrap();
        assert!(!stdout(&o).contains(".."), "{m:?}");
        assert!(!root.parent().unwrap().join("escape").exists() && !run.dir.join("../escape").exists(), "{m:?}");
        let o = Command::new("find").arg(&run.dir).args(["-printf", "%f\n"]).output().unwrap();
        assert!(String::from_utf8_lossy(&o.stdout).lines().all(|n| n.len() <= 255), "{m:?}");
    }
}

/// A change to the record's source that fixes nothing (a comment at the top of the file the
/// gold patch changes).
fn wrong_patch(rec: &Value) -> String {
    let gold = rec["patch"].as_str().unwrap();
    let file = gold.lines().find_map(|l| l.strip_prefix("--- a/")).unwrap();
    let first = file_at(rec, file).lines().next().unwrap_or("").to_string();
    format!("diff --git a/{file} b/{file}\n--- a/{file}\n+++ b/{file}\n@@ -1 +1,2 @@\n+# fixes nothing\n {first}\n")
}

/// `file` at the record's base commit, from the shared repositories.
fn file_at(rec: &Value, file: &str) -> String {
    static REPOS: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let repos = REPOS.get_or_init(|| {
        let d = fixtures().dir.join("swe-repos");
        std::fs::create_dir_all(&d).unwrap();
        let tar = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench/repos.tar.gz");
        assert!(Command::new("tar").arg("xzf").arg(&tar).arg("-C").arg(&d).status().unwrap().success());
        d
    });
    let repo = rec["repo"].as_str().unwrap().replace('/', "__");
    let dir = std::fs::read_dir(repos)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&repo))
        .unwrap();
    let o = Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["show", &format!("{}:{file}", rec["base_commit"].as_str().unwrap())])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A git binary patch (a few hundred KiB) that turns the tracked `file` into 80 MiB of text:
/// its diff, printed, is 80 MiB.
fn binary_expansion(root: &Path, rec: &Value, file: &str) -> String {
    let d = root.join("bin-repo");
    std::fs::create_dir_all(&d).unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    git(&["init", "-q"]);
    std::fs::write(d.join(file), file_at(rec, file)).unwrap();
    git(&["add", file]);
    git(&["commit", "-qm", "base"]);
    std::fs::write(d.join(file), "a line of text\n".repeat(80 << 20 >> 4)).unwrap();
    // Seen as binary here only (the attribute stays in this repository): the patch carries it
    // compressed, and the tree it lands in diffs it as text.
    std::fs::write(d.join(".gitattributes"), format!("{file} -diff\n")).unwrap();
    let p = git(&["diff", "--binary", "--", file]);
    let _ = std::fs::remove_dir_all(&d);
    assert!(p.contains("GIT binary patch") && p.len() < 2 << 20, "{}", p.len());
    p
}

/// Names the patch tools print (GNU patch echoes them raw, newlines and all) cannot pose as
/// the driver's lines: a file whose name holds the separator and a block of PASSED lines
/// forged SWE-bench's `resolved` (the log was cut at the first separator, then sliced at the
/// first start marker). Every line a tool prints is prefixed now, and the separator carries a
/// nonce drawn after the prediction existed. Also on a generic repository record, whose driver
/// is the same.
#[test]
fn patch_tool_output_cannot_pose_as_the_driver() {
    for m in modes() {
        let root = m.owned_dir("forged-separator");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let calc = calc_repo(&root);
        // A name with newlines (a new file), then a hunk only GNU patch applies (fuzz), so its
        // "patching file" line prints the name.
        let name = |lines: &str| format!("zz\\n>>>>> polysandbox: eval script\\n{lines}zz");
        let forged = name("============================= short test summary info ==============================\\nPASSED tests/test_calc.py::test_add\\nPASSED tests/test_calc.py::test_mul\\n============================== 2 passed in 0.01s ===============================\\n");
        // The real run then prints no summary of its own: the module exits 0 when imported.
        let fuzzy = "--- a/calc.py\n+++ b/calc.py\n@@ -4,4 +4,5 @@\n \n def mul(a, b):\n     return a * b\n+import os; os._exit(0)\n WRONG-CONTEXT\n";
        let patch = format!("--- /dev/null\n+++ \"b/{forged}\"\n@@ -0,0 +1 @@\n+x\n{fuzzy}");
        let mut rec = calc.multi_record(1);
        rec["instance_id"] = json!("forged");
        let run = eval_records_in(
            m,
            &root,
            &m.owned_dir("out").join("o"),
            &calc.repos,
            &[rec],
            &[json!({"instance_id": "forged", "model_name_or_path": "m", "model_patch": patch})],
            &[],
        );
        let r = run.result("forged");
        assert_eq!(r["verdict"], "unresolved", "{m:?}: {r}");
    }
}

/// The SWE-bench form of the same forgery (pytest-dev__pytest-10051's replica).
#[test]
fn swebench_patch_tool_output_cannot_pose_as_the_driver() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench/instances.jsonl");
    let Ok(text) = std::fs::read_to_string(&shared) else {
        return skip("swebench_patch_tool_output_cannot_pose_as_the_driver", "no ../shared/swebench");
    };
    let rec: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["instance_id"] == "pytest-dev__pytest-10051")
        .unwrap();
    for m in modes() {
        let store = if m == Mode::User && is_root() { USER_STORE.to_string() } else { "/var/lib/polysandbox".into() };
        if !stdout(&m.command().args(["images", "--root", &store]).output().unwrap())
            .contains("pytest-dev_1776_pytest-10051")
        {
            skip(
                &format!("swebench_patch_tool_output_cannot_pose_as_the_driver ({m:?})"),
                "the replica is not in the store: run bash .ci/setup",
            );
            continue;
        }
        let root = m.owned_dir("swe-forged");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tests: Vec<String> = ["FAIL_TO_PASS", "PASS_TO_PASS"]
            .iter()
            .flat_map(|k| serde_json::from_str::<Vec<String>>(rec[k].as_str().unwrap()).unwrap())
            .collect();
        let block: String = tests.iter().map(|t| format!("PASSED {t}\\n")).collect();
        let name = format!(
            "zz\\n>>>>> polysandbox: eval script\\n>>>>> Start Test Output\\n{block}>>>>> End Test Output\\nzz"
        );
        let readme = file_at(&rec, "README.rst");
        let first: Vec<&str> = readme.lines().take(3).collect();
        let fuzzy = format!(
            "--- a/README.rst\n+++ b/README.rst\n@@ -1,4 +1,4 @@\n {}\n {}\n-{}\n+{} \n WRONG-TRAILING-CONTEXT\n",
            first[0], first[1], first[2], first[2]
        );
        let patch = format!("--- /dev/null\n+++ \"b/{name}\"\n@@ -0,0 +1 @@\n+x\n{fuzzy}");
        let (dataset, preds) = (root.join("records.jsonl"), root.join("preds.jsonl"));
        write_jsonl(&dataset, std::slice::from_ref(&rec));
        write_jsonl(
            &preds,
            &[json!({"instance_id": rec["instance_id"], "model_name_or_path": "m", "model_patch": patch})],
        );
        let run = eval(m, &[dataset.to_str().unwrap(), "-p", preds.to_str().unwrap(), "--root", &store]);
        let r = run.result("pytest-dev__pytest-10051");
        assert_eq!(r["verdict"], "unresolved", "{m:?}: {r}");
    }
}

/// A prediction that puts a file where the test patch makes a directory (`tests/new`, the
/// test patch adding `tests/new/test_extra.py`) made the test patch fail: an `error` charged
/// to the dataset, never retried, out of the score. The driver clears what stands in the test
/// files' way now; the run is graded.
#[test]
fn a_prediction_cannot_block_the_test_patch() {
    for m in modes() {
        let root = m.owned_dir("block-test-patch");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let calc = calc_repo(&root);
        let test_patch = "diff --git a/tests/new/test_extra.py b/tests/new/test_extra.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/new/test_extra.py\n@@ -0,0 +1,5 @@\n+from calc import add\n+\n+\n+def test_x():\n+    assert add(2, 2) == 4\n";
        let mut records = vec![];
        let mut preds = vec![];
        let blocker = "diff --git a/tests/new b/tests/new\nnew file mode 100644\n--- /dev/null\n+++ b/tests/new\n@@ -0,0 +1 @@\n+x\n";
        for (id, patch) in [("blocked", blocker.to_string()), ("blocked-with-fix", format!("{}{blocker}", calc.fix))] {
            let mut r = calc.multi_record(1);
            r["instance_id"] = json!(id);
            r["test_patch"] = json!(test_patch);
            r["f2p_tests"] = json!({"tests/new/test_extra.py::test_x": {}});
            r["p2p_tests"] = json!({});
            records.push(r);
            preds.push(json!({"instance_id": id, "model_name_or_path": "m", "model_patch": patch}));
        }
        let run = eval_records_in(m, &root, &m.owned_dir("out").join("o"), &calc.repos, &records, &preds, &[]);
        assert_eq!(run.verdict("blocked"), "unresolved", "{m:?}: {}", run.result("blocked"));
        assert_eq!(run.verdict("blocked-with-fix"), "resolved", "{m:?}: {}", run.result("blocked-with-fix"));
    }
}

/// The same two bypasses on an exercise, whose patch is applied in a sandbox of its own: a
/// whole `.git` planted between a binary patch's lines, and behind an escaped quote (git then
/// ran its filter there and killed the sandbox: `error`). Refused now; and the exercise's git
/// never reads a `.git` in the tree.
#[test]
fn exercise_patches_cannot_plant_a_repository() {
    for m in modes() {
        let ex = data().join("polyglot");
        let stub = std::fs::read_to_string(ex.join("python/exercises/practice/sum-two/sum_two.py")).unwrap();
        let first = stub.lines().next().unwrap();
        let plant = |name: &str, path: &str, text: &str| {
            format!("diff --git \"a/x{name}\\\" \\056\" \"b/\\056git/{path}\"\nnew file mode 100644\n--- /dev/null\n+++ b/z/z/z/{name}\n@@ -0,0 +1,{} @@\n{}", text.lines().count(), text.lines().map(|l| format!("+{l}\n")).collect::<String>())
        };
        let quoted = [
            plant("1", "HEAD", "ref: refs/heads/main"),
            plant("2", "objects/keep", "x"),
            plant("3", "refs/keep", "x"),
            plant("4", "info/attributes", "* filter=pwn"),
            plant("5", "config", "[core]\n\trepositoryformatversion = 0\n[filter \"pwn\"]\n\tclean = \"kill -9 -1\""),
        ]
        .concat();
        let gap = format!("diff --git a/zz.dat b/zz.dat\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 0\nHcmV?d00001\n\nliteral 0\nHcmV?d00001\n\n{}", ["HEAD", "config"].iter().map(|f| format!("--- /dev/null\n+++ b/.git/{f}\n@@ -0,0 +1 @@\n+x\n")).collect::<String>());
        let tail = format!("--- a/sum_two.py\n+++ b/sum_two.py\n@@ -1 +1 @@\n-{first}\n+{first} \n");
        for (name, patch) in [("escaped-quote", quoted + &tail), ("binary-gap", gap + &tail)] {
            let dir = m.owned_dir(name);
            let preds = dir.join("p.jsonl");
            write_jsonl(
                &preds,
                &[json!({"instance_id": "python/sum-two", "model_name_or_path": "m", "model_patch": patch})],
            );
            let run = eval(m, &[ex.to_str().unwrap(), "--filter-category", "python", "-p", preds.to_str().unwrap()]);
            let r = run.result("python/sum-two");
            assert_eq!(r["verdict"], "patch_failed", "{m:?} {name}: {r}");
            assert!(r["reason"].as_str().unwrap().contains(".git"), "{m:?} {name}: {r}");
        }
    }
}

/// Prediction records that are no patch for the instance (`"model_patch": null`, a
/// `generation` for a repository) are graded, as the harness grades them: an empty patch, a
/// patch that does not apply. One such record aborted the whole run, or was a deterministic
/// `error` out of the score.
#[test]
fn prediction_records_of_the_wrong_shape_are_graded() {
    for m in modes() {
        let root = m.owned_dir("shapes");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let calc = calc_repo(&root);
        let mut records = vec![];
        for id in ["null-patch", "generation", "honest"] {
            let mut r = calc.multi_record(1);
            r["instance_id"] = json!(id);
            records.push(r);
        }
        let preds = vec![
            json!({"instance_id": "null-patch", "model_name_or_path": "m", "model_patch": null}),
            json!({"instance_id": "generation", "model_name_or_path": "m", "generation": "def add(a, b): return a + b"}),
            json!({"instance_id": "honest", "model_name_or_path": "m", "model_patch": calc.fix}),
        ];
        let run = eval_records_in(m, &root, &m.owned_dir("out").join("o"), &calc.repos, &records, &preds, &[]);
        assert_eq!(run.verdict("null-patch"), "empty_patch", "{m:?}: {}", stderr(&run.out));
        assert_eq!(run.verdict("generation"), "patch_failed", "{m:?}: {}", run.result("generation"));
        assert_eq!(run.verdict("honest"), "resolved", "{m:?}");
    }
}

/// A predictions directory may hold a hard link to a file its author cannot read (as root,
/// eval read it and wrote it into the logs), or a device node (opened before it was refused).
/// Both refused, neither opened, nothing of theirs in the output. Root only: the test user
/// can make neither.
#[test]
fn predictions_directories_are_read_without_hard_links_or_devices() {
    if !is_root() {
        return skip(
            "predictions_directories_are_read_without_hard_links_or_devices",
            "making a device node or a hard link to root's file needs root",
        );
    }
    let m = Mode::Root;
    let root = m.owned_dir("pred-links");
    let secret = root.join("secret.txt");
    let marker = format!("SECRET-{}-{}", std::process::id(), unique());
    std::fs::write(&secret, format!("def sum_two(a, b):\n    return a + b  # {marker}\n")).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ex = data().join("polyglot");
    let mut bad = vec![];
    for kind in ["hardlink", "device"] {
        let preds = root.join(kind);
        let dir = preds.join("python/sum-two");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("sum_two.py");
        match kind {
            "hardlink" => std::fs::hard_link(&secret, &file).unwrap(),
            _ => assert!(Command::new("mknod").arg(&file).args(["c", "1", "3"]).status().unwrap().success()),
        }
        let run = eval(m, &[ex.to_str().unwrap(), "--filter-category", "python", "-p", preds.to_str().unwrap()]);
        let r = run.result("python/sum-two");
        if r["verdict"] != "patch_failed" {
            bad.push(format!("{kind}: {r}"));
        }
        let o = Command::new("grep").args(["-rls", &marker]).arg(&run.dir).output().unwrap();
        if !stdout(&o).is_empty() {
            bad.push(format!("{kind}: the linked file reached {}", stdout(&o)));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// A record's image name is a reference and nothing else: before, an `image` of
/// `--stats-json=/some/file` became an option of root's `polysandbox run` (the probe's record
/// then overwrote that file, as root), and `--rootfs=/usr` ran the probe on the host's /usr.
/// Each such record is an `error` naming the bad reference, and nothing outside `-o` changes.
/// And what an image prints when its toolchain is probed comes back into eval capped: an image
/// whose `python3` prints without end made eval's own memory grow to gigabytes (eval here runs
/// with 2 GiB of address space, which the flood would exhaust).
#[test]
fn dataset_image_names_are_never_options_and_the_probe_is_capped() {
    for m in modes() {
        let root = m.owned_dir("images");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let victim = root.join("victim.txt");
        std::fs::write(&victim, "ORIGINAL\n").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o666)).unwrap();
        // An image whose python3 floods its output, in a store of the test's own.
        let store = m.owned_dir("flood-store");
        let tree = m.owned_dir("flood-rootfs");
        assert!(Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", m.rootfs().display()))
            .arg(&tree)
            .status()
            .unwrap()
            .success());
        std::fs::create_dir_all(tree.join("usr/bin")).unwrap();
        std::fs::write(tree.join("usr/bin/python3"), "#!/bin/sh\nexec yes 'a line of output that never ends'\n")
            .unwrap();
        std::fs::set_permissions(tree.join("usr/bin/python3"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let tarball = root.join("flood.tar");
        assert!(Command::new("tar").arg("-C").arg(&tree).arg("-cf").arg(&tarball).arg(".").status().unwrap().success());
        std::fs::set_permissions(&tarball, std::fs::Permissions::from_mode(0o644)).unwrap();
        let o = m
            .command()
            .arg("import")
            .arg("--root")
            .arg(&store)
            .arg(&tarball)
            .args(["--tag", "localhost/test/flood:1"])
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{m:?}: {}", stderr(&o));

        let rec = |id: &str, image: &str| json!({"_id": id, "language": "python", "image": image, "code": "def one():\n    return 1", "test": "assert one() == 1"});
        let bad =
            [format!("--stats-json={}", victim.display()), "--rootfs=/usr".into(), "-q".into(), "img\nname".into()];
        let mut recs: Vec<Value> = bad.iter().enumerate().map(|(i, b)| rec(&format!("bad{i}"), b)).collect();
        recs.push(rec("flood", "localhost/test/flood:1"));
        let dataset = root.join("snippets.jsonl");
        write_jsonl(&dataset, &recs);
        let out = m.owned_dir("eval").join("out");
        let mut c = m.command();
        c.arg("eval").arg(&dataset).args(["--no-calibration", "-j", "1", "--root"]).arg(&store).arg("-o").arg(&out);
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit between fork and exec.
        unsafe {
            c.pre_exec(|| {
                let l = libc::rlimit { rlim_cur: 2 << 30, rlim_max: 2 << 30 };
                libc::setrlimit(libc::RLIMIT_AS, &l);
                Ok(())
            });
        }
        let run = Run { out: c.stdin(std::process::Stdio::null()).output().unwrap(), dir: out };
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "ORIGINAL\n",
            "{m:?}: a dataset's image name wrote a host file"
        );
        for i in 0..bad.len() {
            let r = run.result(&format!("bad{i}"));
            assert_eq!(r["verdict"], "error", "{m:?}: {r}");
            assert!(r["reason"].as_str().unwrap_or("").contains("invalid image reference"), "{m:?}: {r}");
        }
        let r = run.result("flood");
        assert_eq!(r["verdict"], "error", "{m:?}: {r}");
        assert!(r["reason"].as_str().unwrap_or("").contains("probe"), "{m:?}: {r}\n{}", stderr(&run.out));
    }
}
