//! What the eval suites share: the fixtures copied where the test user can read them, a run of
//! `polysandbox eval` in a mode and what it left, and a tiny repository in SWE-bench's shape.

use super::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The unprivileged user's own store, filled by .ci/setup (python and go, and one SWE-bench
/// replica).
pub const USER_STORE: &str = "/var/tmp/polysandbox-psbtest";

/// The eval fixtures, copied where the test user can read them.
pub fn data() -> PathBuf {
    static D: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    D.get_or_init(|| {
        let dst = fixtures().dir.join("eval-fixtures");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval");
        let ok = Command::new("cp").arg("-a").arg(&src).arg(&dst).status().unwrap().success();
        assert!(ok);
        Command::new("chmod").args(["-R", "a+rX"]).arg(&dst).status().unwrap();
        dst
    })
    .clone()
}

/// The polyglot fixtures (one exercise per language).
pub fn polyglot() -> String {
    data().join("polyglot").display().to_string()
}

/// The languages each mode's store has images for.
pub fn langs(m: Mode) -> Vec<&'static str> {
    match m {
        Mode::Root => vec!["cpp", "go", "java", "javascript", "python", "rust", "typescript"],
        Mode::User => vec!["go", "python"],
    }
}

pub struct Run {
    pub out: Output,
    pub dir: PathBuf,
}

impl Run {
    pub fn results(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.join("results.jsonl")).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
    pub fn verdict(&self, id: &str) -> String {
        self.result(id)["verdict"].as_str().unwrap().to_string()
    }
    pub fn result(&self, id: &str) -> Value {
        self.results()
            .into_iter()
            .rev()
            .find(|r| r["instance_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}: {}", stderr(&self.out)))
    }
    /// The results by instance id (the last of each).
    pub fn by_id(&self) -> BTreeMap<String, Value> {
        self.results().into_iter().map(|r| (r["instance_id"].as_str().unwrap().to_string(), r)).collect()
    }
    pub fn verdicts(&self) -> BTreeMap<String, String> {
        self.by_id().into_iter().map(|(k, r)| (k, r["verdict"].as_str().unwrap().to_string())).collect()
    }
    /// A JSON file the run wrote, by its path under the output directory.
    pub fn json(&self, rel: &str) -> Value {
        let p = self.dir.join(rel);
        serde_json::from_str(
            &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}\n{}", p.display(), stderr(&self.out))),
        )
        .unwrap()
    }
    pub fn report(&self) -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(self.dir.join("report.json"))
                .unwrap_or_else(|e| panic!("report.json: {e}: {}", stderr(&self.out))),
        )
        .unwrap()
    }
}

/// `polysandbox eval ARGS -o DIR` in mode `m` (the test user with its own store).
pub fn eval_in(m: Mode, dir: &Path, args: &[&str]) -> Run {
    eval_env(m, dir, args, &[])
}

/// The same with environment variables set.
pub fn eval_env(m: Mode, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = m.command();
    c.arg("eval").args(args).arg("-o").arg(dir).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    if m == Mode::User && is_root() && !args.contains(&"--root") {
        c.args(["--root", USER_STORE]);
    }
    Run { out: c.output().unwrap(), dir: dir.to_path_buf() }
}

/// The same into a fresh output directory that eval creates itself, as the mode's user.
pub fn eval(m: Mode, args: &[&str]) -> Run {
    eval_in(m, &m.owned_dir("eval").join("out"), args)
}

/// A tiny python repository: its mirror in `root/repos/acme__calc.git`, the base commit, the
/// fix of its bug, and a test patch adding the test the fix makes pass.
pub struct Calc {
    pub repos: PathBuf,
    pub base: String,
    pub fix: String,
    pub test_patch: String,
}

pub fn calc_repo(root: &Path) -> Calc {
    let repos = root.join("repos");
    let work = root.join("src");
    std::fs::create_dir_all(work.join("tests")).unwrap();
    std::fs::write(work.join("calc.py"), "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n")
        .unwrap();
    std::fs::write(
        work.join("tests/test_calc.py"),
        "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    )
    .unwrap();
    let git = |args: &[&str], dir: &Path| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    git(&["init", "-q"], &work);
    git(&["add", "."], &work);
    git(&["commit", "-qm", "base"], &work);
    let base = git(&["rev-parse", "HEAD"], &work);
    std::fs::create_dir_all(&repos).unwrap();
    git(&["clone", "-q", "--mirror", work.to_str().unwrap(), repos.join("acme__calc.git").to_str().unwrap()], root);
    let fix = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n".to_string();
    let test_patch = "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -1,5 +1,9 @@\n-from calc import mul\n+from calc import add, mul\n \n \n def test_mul():\n     assert mul(2, 3) == 6\n+\n+\n+def test_add():\n+    assert add(2, 3) == 5\n".to_string();
    Command::new("chmod").args(["-R", "a+rX"]).arg(root).status().unwrap();
    let _ = std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755));
    Calc { repos, base, fix, test_patch }
}

impl Calc {
    /// A SWE-bench-style record of the repository.
    pub fn swe_record(&self, id: &str) -> Value {
        serde_json::json!({"instance_id": id, "repo": "acme/calc", "base_commit": self.base, "patch": self.fix, "test_patch": self.test_patch,
            "FAIL_TO_PASS": "[\"tests/test_calc.py::test_add\"]", "PASS_TO_PASS": ["tests/test_calc.py::test_mul"], "language": "python"})
    }
    /// A Multi-SWE-bench record of the repository.
    pub fn multi_record(&self, number: u64) -> Value {
        serde_json::json!({"org": "acme", "repo": "calc", "number": number, "base": {"sha": self.base}, "fix_patch": self.fix, "test_patch": self.test_patch,
            "f2p_tests": {"tests/test_calc.py::test_add": {}}, "p2p_tests": {"tests/test_calc.py::test_mul": {}}, "language": "python"})
    }
}

/// Records written where the mode's user can read them: a JSON list for a `.json` name, else
/// one per line.
pub fn write_records(m: Mode, name: &str, recs: &[Value]) -> PathBuf {
    let p = m.owned_dir("records").join(name);
    let text: String = if name.ends_with(".json") {
        serde_json::to_string(recs).unwrap()
    } else {
        recs.iter().map(|r| r.to_string() + "\n").collect()
    };
    std::fs::write(&p, text).unwrap();
    p
}

/// Writes JSON records, one per line, readable by every user.
pub fn write_jsonl(path: &Path, records: &[Value]) {
    std::fs::write(path, records.iter().map(|r| r.to_string()).collect::<Vec<_>>().join("\n") + "\n").unwrap();
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644));
}

/// A program on PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

/// A run's junit.xml valid against both JUnit schemas in tests/fixtures/junit (Apache Ant's,
/// which the most readers follow, and Jenkins'), by xmllint.
pub fn assert_junit_valid(path: &Path) {
    if on_path("xmllint").is_none() {
        skip("junit.xml against the JUnit schemas", "no xmllint (apt-get install libxml2-utils)");
        return;
    }
    let schemas = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit");
    for xsd in ["JUnit.xsd", "junit-10.xsd"] {
        let o =
            Command::new("xmllint").arg("--noout").arg("--schema").arg(schemas.join(xsd)).arg(path).output().unwrap();
        assert!(o.status.success(), "{} against {xsd}: {}", path.display(), stderr(&o));
    }
}

/// The suite of junit.xml `x` named `name` (an instance), from its `<testsuite` to its end.
pub fn junit_suite<'a>(x: &'a str, name: &str) -> &'a str {
    let start = x.find(&format!("<testsuite name=\"{name}\"")).unwrap_or_else(|| panic!("no suite {name}: {x}"));
    let len = x[start..].find("</testsuite>").unwrap_or_else(|| panic!("suite {name} not closed: {x}"));
    &x[start..start + len]
}

/// Text of an HTML attribute as written, unescaped.
fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"").replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// `dir`'s report.html as a headless Chromium leaves it once its script ran, opened at
/// `#fragment`; `None`, said SKIPPED, without Chromium.
pub fn rendered_report(dir: &Path, fragment: &str) -> Option<String> {
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|n| on_path(n)) else {
        skip("report.html in a headless browser", "no chromium (apt-get install chromium)");
        return None;
    };
    let profile = fixtures().dir.join(format!("{}-chromium", unique()));
    let page = format!("file://{}#{fragment}", dir.join("report.html").display());
    let o = Command::new("timeout")
        .arg("120")
        .arg(chromium)
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(&page)
        .env("HOME", &profile)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    assert!(o.status.success(), "chromium {page}: {}", stderr(&o));
    Some(stdout(&o))
}

/// `run`'s report.html: one page that loads nothing, and, rendered by a headless browser with
/// its failures sorted by wall time, every number it shows equal to report.json's and each
/// chart bar to its instance's in results.jsonl, each failure linked to its log.
pub fn assert_report_html(run: &Run) {
    let page = std::fs::read_to_string(run.dir.join("report.html")).unwrap();
    for external in ["http://", "https://", "//cdn", "<link", " src="] {
        assert!(!page.contains(external), "report.html refers to {external}: {page}");
    }
    assert!(page.contains("Content-Security-Policy\" content=\"default-src 'none'"), "{page}");
    let Some(dom) = rendered_report(&run.dir, "sort=wall:descending") else { return };
    assert!(dom.contains("data-ready=\"true\""), "the page's script did not run: {dom}");
    let report = run.report();
    let numbers = regex::Regex::new(r#"data-json="([^"]*)" data-value="([^"]*)">([^<]*)<"#).unwrap();
    let mut seen = 0;
    for c in numbers.captures_iter(&dom) {
        let at = unescape(&c[1]);
        let want = report.pointer(&at).and_then(Value::as_f64).unwrap_or_else(|| panic!("{at} not in report.json"));
        let shown: f64 = c[2].parse().unwrap();
        assert!((shown - want).abs() <= 1e-9 * want.abs().max(1.0), "{at}: page {shown}, report.json {want}");
        // Counts as they are; the rest rounded for people (the value is report.json's).
        let counted = ["total", "admitted", "resolved", "unresolved", "empty_patch", "no_prediction", "patch_failed"];
        if counted.iter().chain(&["timeout", "oom", "error"]).any(|k| at.ends_with(&format!("/{k}"))) {
            assert_eq!(c[3].trim(), format!("{want:.0}"), "{at} as shown");
        }
        seen += 1;
    }
    assert!(seen >= 20, "{seen} numbers of report.json's on the page: {dom}");
    // The charts: a bar per instance that ran, its value its instance's.
    let results = run.by_id();
    let bar = regex::Regex::new(r#"<rect class="\w+" data-id="([^"]*)" data-value="([^"]*)""#).unwrap();
    let ran = results.values().filter(|r| r["attempts"].as_u64() > Some(0) && r["wall_s"].as_f64() > Some(0.0)).count();
    for metric in ["wall_s", "cpu_s", "memory_peak_bytes"] {
        let svg = dom.split(&format!("data-metric=\"{metric}\"")).nth(1).unwrap_or_else(|| panic!("no {metric} chart"));
        let svg = &svg[..svg.find("</svg>").unwrap()];
        let bars: Vec<_> = bar.captures_iter(svg).collect();
        assert_eq!(bars.len(), ran, "{metric}: {svg}");
        for b in bars {
            let r = &results[&unescape(&b[1])];
            assert_eq!(b[2].parse::<f64>().unwrap(), r[metric].as_f64().unwrap(), "{metric} of {}", &b[1]);
        }
    }
    // The failures, sorted by the address's fragment: wall time, largest first; each links its log.
    let failed = results.values().filter(|r| r["verdict"] != "resolved").count();
    if failed == 0 {
        assert!(dom.contains("Every instance resolved."), "{dom}");
        return;
    }
    let table = dom.split("id=\"failures\"").nth(1).expect("a failures table");
    let table = &table[..table.find("</table>").unwrap()];
    let th = table.split("data-sort=\"wall\"").nth(1).unwrap();
    assert!(th[..th.find('>').unwrap()].contains("aria-sort=\"descending\""), "{table}");
    let row =
        regex::Regex::new(r#"<tr data-id="([^"]*)">.*?<td data-v="([^"]*)">.*?(?:<a href="([^"]*)">|</tr>)"#).unwrap();
    let rows: Vec<(String, f64, Option<String>)> = row
        .captures_iter(table)
        .map(|c| (unescape(&c[1]), c[2].parse().unwrap(), c.get(3).map(|h| unescape(h.as_str()))))
        .collect();
    assert_eq!(rows.len(), failed, "{table}");
    assert!(rows.windows(2).all(|w| w[0].1 >= w[1].1), "not sorted by wall time: {rows:?}");
    for (id, wall, log) in &rows {
        assert_eq!(*wall, results[id]["wall_s"].as_f64().unwrap(), "{id}");
        let log = log.as_ref().unwrap_or_else(|| panic!("{id}: no link to its log: {table}"));
        assert!(run.dir.join(log).is_file(), "{id}: {log} is not beside report.html");
    }
}
