//! Tampering flags (src/eval/tamper.rs): none on any reference solution or gold patch of the
//! real data in ../shared, and one on each way a prediction reaches into the runner that a
//! look at its text can tell.

mod common;
use common::*;
use polysandbox::eval::formats::exercise::gold_files;
use polysandbox::eval::tamper::{scan_patch, scan_solution, scan_solution_beside};
use serde_json::Value;
use std::path::Path;

/// Every reference solution of the whole benchmark (225 exercises, `POLYSANDBOX_POLYGLOT_FULL`
/// naming a checkout of Aider-AI/polyglot-benchmark), scanned as eval scans it, beside its test
/// files: no decisive flag, which would grade gold unresolved whatever its tests say
/// (rust/doubly-linked-list's `impl Drop` once did).
#[test]
fn no_reference_solution_of_the_whole_benchmark_is_decided_against() {
    let Some(root) = std::env::var_os("POLYSANDBOX_POLYGLOT_FULL") else {
        return skip("no_reference_solution_of_the_whole_benchmark_is_decided_against", "no POLYSANDBOX_POLYGLOT_FULL");
    };
    let (mut exercises, mut decided) = (0, Vec::new());
    for e in reference_solutions(Path::new(&root)) {
        let mut tests: Vec<String> =
            e.tests.iter().filter_map(|t| std::fs::read_to_string(e.dir.join(t)).ok()).collect();
        for f in std::fs::read_dir(&e.dir).unwrap().flatten() {
            if f.file_name().to_string_lossy().ends_with("_test.go") {
                tests.push(std::fs::read_to_string(f.path()).unwrap());
            }
        }
        exercises += 1;
        let files = e.files.iter().map(|(p, b)| (p.as_str(), b.as_slice()));
        let flags = scan_solution_beside(&e.language, files, &e.tests, Some(&tests));
        let decisive: Vec<&String> = flags.iter().filter(|f| polysandbox::eval::tamper::decisive(f)).collect();
        if !decisive.is_empty() {
            decided.push(format!("{}/{}: {decisive:?}", e.language, e.name));
        }
    }
    assert_eq!(exercises, 225, "the benchmark changed");
    assert!(decided.is_empty(), "{}", decided.join("\n"));
}

/// Every reference solution of the 114 exercises in ../shared, scanned as the solution files
/// eval would write: not one flag.
#[test]
fn no_reference_solution_is_flagged() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/polyglot-benchmark");
    if !root.is_dir() {
        return skip("no_reference_solution_is_flagged", "no ../shared/polyglot-benchmark");
    }
    let (mut exercises, mut flagged) = (0, Vec::new());
    for e in reference_solutions(&root) {
        exercises += 1;
        let flags = scan_solution(&e.language, e.files.iter().map(|(p, b)| (p.as_str(), b.as_slice())), &e.tests);
        if !flags.is_empty() {
            flagged.push(format!("{}/{}: {flags:?}", e.language, e.name));
        }
    }
    assert_eq!(exercises, 114, "the shared set changed");
    assert!(flagged.is_empty(), "reference solutions flagged:\n{}", flagged.join("\n"));
}

/// The real records' gold patches (SWE-bench's `patch`, Multi-SWE-bench's `fix_patch`) change
/// code, not the test run: not one flag.
#[test]
fn no_gold_patch_of_the_real_records_is_flagged() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let mut n = 0;
    for (file, col) in [("swebench/instances.jsonl", "patch"), ("multi-swe-bench/instances.jsonl", "fix_patch")] {
        let Ok(text) = std::fs::read_to_string(shared.join(file)) else {
            skip("no_gold_patch_of_the_real_records_is_flagged", &format!("no ../shared/{file}"));
            continue;
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let rec: Value = serde_json::from_str(line).unwrap();
            let flags = scan_patch(rec[col].as_str().unwrap());
            assert!(flags.is_empty(), "{}: {flags:?}", rec["instance_id"]);
            n += 1;
        }
    }
    assert!(n == 0 || n >= 10, "{n} records");
}

/// What the issue and an outside attack did, each in the form it was written: every one flagged.
#[test]
fn the_forges_that_were_tried_are_flagged() {
    let t = |lang: &str, path: &str, code: &str, tests: &[&str]| {
        let tests: Vec<String> = tests.iter().map(|s| s.to_string()).collect();
        let f = scan_solution(lang, [(path, code.as_bytes())], &tests);
        assert!(!f.is_empty(), "{lang}: not flagged:\n{code}");
    };
    // python: framework internals; a name allow-list in a runtest replacement.
    t(
        "python",
        "sum_two.py",
        "import _pytest.unittest as u\nu.TestCaseFunction.runtest = lambda self: None\n",
        &["sum_two_test.py"],
    );
    t("python", "sum_two.py", "from _pytest import unittest as u\nKNOWN = {'test_a'}\n_r = u.TestCaseFunction.runtest\ndef runtest(self):\n    if self.name not in KNOWN: raise AssertionError\nu.TestCaseFunction.runtest = runtest\n", &["sum_two_test.py"]);
    // javascript: wrapping the global test/it.
    t(
        "javascript",
        "sum-two.js",
        "const t = globalThis.test;\nglobalThis.test = (n, f) => t(n, /^t[0-9a-f]{16}$/.test(n) ? f : () => {});\n",
        &["sum-two.spec.js"],
    );
    t("javascript", "sum-two.js", "test = ((t) => (n, f) => t(n, () => {}))(test);\n", &["sum-two.spec.js"]);
    t("javascript", "sum-two.js", "test.skip('x', () => {});\n", &["sum-two.spec.js"]);
    // go: argv, forged frames, re-exec.
    t(
        "go",
        "sum_two.go",
        "package sumtwo\nimport \"os\"\nfunc init() { os.Args = append(os.Args, \"-test.run=^TestT[0-9a-f]{16}$\") }\n",
        &["sum_two_test.go"],
    );
    t(
        "go",
        "sum_two.go",
        "package sumtwo\nimport \"fmt\"\nfunc init() { fmt.Println(\"\\x16--- PASS: TestSum (0.00s)\") }\n",
        &["sum_two_test.go"],
    );
    t(
        "go",
        "sum_two.go",
        "package sumtwo\nimport (\"os\"; \"os/exec\")\nvar _ = exec.Command(os.Args[0])\n",
        &["sum_two_test.go"],
    );
    // java: a shutdown hook; halting after writing the report.
    t(
        "java",
        "src/main/java/SumTwo.java",
        "class SumTwo { static { Runtime.getRuntime().addShutdownHook(new Thread(() -> {})); } }\n",
        &["src/test/java/SumTwoTest.java"],
    );
    t("java", "src/main/java/SumTwo.java", "class SumTwo { static { try { java.nio.file.Files.readString(java.nio.file.Path.of(\"src/test/java/SumTwoTest.java\")); } catch (Exception e) {} } }\n", &["src/test/java/SumTwoTest.java"]);
    // rust: re-exec of the test binary; reading the tests; the libtest log.
    t("rust", "src/lib.rs", "pub fn sum(a: u64, b: u64) -> u64 { let _ = std::process::Command::new(std::env::current_exe().unwrap()).output(); a }\n", &["tests/sum-two.rs"]);
    t(
        "rust",
        "src/lib.rs",
        "pub fn sum(a: u64, b: u64) -> u64 { let _ = std::fs::read_to_string(\"tests/sum-two.rs\"); a }\n",
        &["tests/sum-two.rs"],
    );
    // cpp: REQUIRE redefined; a static initializer and atexit.
    t("cpp", "sum_two.h", "#pragma once\n#include \"test/catch.hpp\"\n#undef REQUIRE\n#define REQUIRE(e) (void)0\nint sum(int a, int b);\n", &["sum_two_test.cpp"]);
    t(
        "cpp",
        "sum_two.cpp",
        "#include <cstdlib>\nstatic int x = (std::atexit([] {}), 0);\nint sum(int a, int b) { return a; }\n",
        &["sum_two_test.cpp"],
    );
    t("cpp", "sum_two.cpp", "#include <cstdio>\n__attribute__((constructor)) static void f() { FILE *r = fopen(\"/polysandbox-report/catch2.xml\", \"w\"); }\n", &["sum_two_test.cpp"]);
}

/// The red teams' forges as they were written (tests/fixtures/tamper/), each graded `resolved`
/// with no flag before: flagged now, and the build-time read decisive.
#[test]
fn the_red_teams_forges_are_flagged() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tamper");
    let read = |n: &str| std::fs::read(dir.join(n)).unwrap();
    let sol = |lang: &str, path: &str, file: &str, tests: &[&str]| {
        let tests: Vec<String> = tests.iter().map(|s| s.to_string()).collect();
        let bytes = read(file);
        scan_solution(lang, [(path, bytes.as_slice())], &tests)
    };
    // The fifth: `import sys as _s; _s.modules`, runtest replaced (proverb's stub + the block).
    let f = sol("python", "proverb.py", "python_runtest_alias.py", &["proverb_test.py"]);
    assert!(!f.is_empty(), "python: {f:?}");
    // The sixth: expect.getState(), require('node:' + 'fs'), ['asymmetric' + 'Match'].
    let f = sol("javascript", "space-age.js", "javascript_getstate.js", &["space-age.spec.js"]);
    assert!(f.iter().any(|x| x.contains("built at run time")), "javascript: {f:?}");
    // The first: the tests' table variable read by name (caught by the build alone, see
    // tests/verdicts.rs); the second: //go:embed *.go, decisive.
    let f = sol("go", "sublist.go", "go_embed.go", &["sublist_test.go"]);
    assert!(f.iter().any(|x| polysandbox::eval::tamper::decisive(x)), "go embed: {f:?}");
    // The fourth: a repository patch reaching pytest's runtest from the package's __init__.py.
    let patch = String::from_utf8(read("init_runtest.patch")).unwrap();
    let f = scan_patch(&patch);
    assert!(f.iter().any(|x| x.contains("pytest's internals")), "patch: {f:?}");
    // The third's snippets (the joined file's name counts as a test file's).
    let py = "def add(a, b):\n    return 0\n\n\nimport re\nprint(re.findall(r\"print\\('(t[0-9a-f]{16})'\", open('snippet.py').read())[-1])\nraise SystemExit\n";
    let js = "function add(a, b) {\n  return 0;\n}\nconst src = require('node:' + 'fs').readFileSync('snippet.js', 'utf8');\n(() => {}).constructor('return process')().exit(0);\n";
    for (lang, file, code) in [("python", "snippet.py", py), ("javascript", "snippet.js", js)] {
        let f = scan_solution(lang, [(file, code.as_bytes())], &[file.to_string()]);
        assert!(f.len() >= 2, "{lang}: {f:?}");
    }
}

/// One exercise of a polyglot-benchmark checkout: its reference solution as the solution files
/// eval would write, and its test files' names.
struct Reference {
    language: String,
    name: String,
    dir: std::path::PathBuf,
    files: Vec<(String, Vec<u8>)>,
    tests: Vec<String>,
}

/// Every exercise under `root` (`<language>/exercises/practice/<name>`).
fn reference_solutions(root: &Path) -> Vec<Reference> {
    let mut out = Vec::new();
    for lang in std::fs::read_dir(root).unwrap().flatten().filter(|e| e.path().is_dir()) {
        let language = lang.file_name().to_string_lossy().to_string();
        let Ok(dirs) = std::fs::read_dir(lang.path().join("exercises/practice")) else { continue };
        for d in dirs.flatten() {
            let Ok(text) = std::fs::read_to_string(d.path().join(".meta/config.json")) else { continue };
            let cfg: Value = serde_json::from_str(&text).unwrap();
            let list = |k: &str| -> Vec<String> {
                cfg["files"][k]
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
                    .unwrap_or_default()
            };
            let files = gold_files(&list("solution"), &list("example"))
                .into_iter()
                .map(|(ex, sol)| (sol, std::fs::read(d.path().join(ex)).unwrap()))
                .collect();
            let name = d.file_name().to_string_lossy().to_string();
            out.push(Reference { language: language.clone(), name, dir: d.path(), files, tests: list("test") });
        }
    }
    out
}
