//! The language catalogue (`images/LANG.toml`): which image, which probe, setup and test
//! command, which parser, and default limits. Built into the binary; overridden per field from a
//! config file (`--config FILE`, tables named by language) and `--image LANG=REF`.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

const BUILTIN: &[&str] = &[
    include_str!("../../images/cpp.toml"),
    include_str!("../../images/go.toml"),
    include_str!("../../images/java.toml"),
    include_str!("../../images/javascript.toml"),
    include_str!("../../images/python.toml"),
    include_str!("../../images/rust.toml"),
    include_str!("../../images/typescript.toml"),
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runner {
    pub language: String,
    pub image: String,
    /// Proves the toolchain is there; its failure is an infrastructure error.
    pub probe: Vec<String>,
    /// Shell steps run in the instance's directory before the tests.
    #[serde(default)]
    pub setup: Vec<String>,
    /// The test command; `{report}` is a directory the runner may write reports to; `{alone}`,
    /// after a step that builds the solution without its tests, stops the run as one whose
    /// solution uses what only the tests declare (see `prepare::alone`).
    pub test: Vec<String>,
    /// For repository instances (SWE-bench style) without their own test_cmd: `{tests}` is
    /// replaced by the test files the test patch touches.
    #[serde(default)]
    pub repo_test: Vec<String>,
    /// For CoderEval-style instances: the file the joined code goes to, and how to run it.
    #[serde(default)]
    pub snippet_file: Option<String>,
    #[serde(default)]
    pub snippet_run: Vec<String>,
    pub parser: super::parsers::Parser,
    /// The parser of `repo_test`'s output, when not `parser` (Go: `go test -json`).
    #[serde(default)]
    pub repo_parser: Option<super::parsers::Parser>,
    pub timeout: String,
    pub memory: String,
    pub cpus: f64,
    #[serde(default)]
    pub env: Vec<String>,
    /// More environment, only with the image's read-only caches on (`eval --caches on`, the
    /// default): what points the toolchain at caches the image was built with (ccache's
    /// prewarmed Catch2 main, cargo's prebuilt dependencies, the JVM's class data archives).
    /// Each tool decides a hit by its own content check, so verdicts are the same without.
    /// Dropped when a config or `--image` names another image without giving its own.
    #[serde(default)]
    pub cache_env: Vec<String>,
    /// The files the test command writes into `{report}` (default: the parser's, see
    /// parsers::report_files): each is a FIFO the host reads, in a directory the sandbox cannot
    /// write.
    #[serde(default)]
    pub reports: Option<Vec<String>>,
    /// The test command when each test's resource usage is measured (`eval --per-test`, the
    /// default): `{each}` runs the tests one process each (`polysandbox each-test`, measured by
    /// the kernel's rusage of each), `{measure}` is the directory of the in-runner plugins
    /// (images/measure/, bound read-only). Without it, the runner's tests are not measured one
    /// by one.
    #[serde(default)]
    pub measured_test: Vec<String>,
    #[serde(default)]
    pub measured_repo_test: Vec<String>,
    /// The parser of `measured_test`'s reports, when not `parser` (Catch2 run one test per
    /// process writes one JUnit document per test).
    #[serde(default)]
    pub measured_parser: Option<super::parsers::Parser>,
    /// Set once the measured commands replaced the plain ones (see [`Runner::measured`]).
    #[serde(skip)]
    pub measuring: bool,
}

/// Where images/measure/ (and a copy of polysandbox for `each-test`) is bound in a sandbox.
pub const MEASURE: &str = "/polysandbox-measure";
/// The channel's file in the report directory.
pub const MEASURE_REPORT: &str = crate::measure::REPORT;

/// Per-test measurement: on or off, and the per-test limits `each-test` holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerTest {
    pub on: bool,
    pub timeout: Option<std::time::Duration>,
    pub memory: Option<u64>,
    pub cpu_time: Option<std::time::Duration>,
}

impl PerTest {
    /// `each-test`'s command line, up to the runner's own arguments.
    pub fn each(&self) -> Vec<String> {
        let mut v = vec![
            format!("{MEASURE}/bin/polysandbox"),
            "each-test".into(),
            "--end-others".into(),
            "--report".into(),
            format!("{{report}}/{MEASURE_REPORT}"),
        ];
        if let Some(t) = self.timeout {
            v.extend(["--timeout".into(), format!("{}ms", t.as_millis())]);
        }
        if let Some(m) = self.memory {
            v.extend(["--memory".into(), m.to_string()]);
        }
        if let Some(c) = self.cpu_time {
            v.extend(["--cpu-time".into(), format!("{}ms", c.as_millis())]);
        }
        v
    }
}

impl Runner {
    pub fn report_files(&self) -> Vec<String> {
        let mut v = self.reports.clone().unwrap_or_else(|| super::parsers::report_files(self.parser));
        if self.measuring {
            v.push(MEASURE_REPORT.into());
        }
        v
    }

    /// This runner with its measured commands, when it has them and `p` is on.
    pub fn measured(&self, p: &PerTest) -> Runner {
        let mut r = self.clone();
        if !p.on || self.measured_test.is_empty() {
            return r;
        }
        let each = p.each();
        let shell = each.join(" ");
        let expand = |cmd: &[String]| -> Vec<String> {
            cmd.iter()
                .flat_map(|a| {
                    if a == "{each}" {
                        each.clone()
                    } else {
                        vec![a.replace("{each}", &shell).replace("{measure}", MEASURE)]
                    }
                })
                .collect()
        };
        r.test = expand(&self.measured_test);
        if !self.measured_repo_test.is_empty() {
            r.repo_test = expand(&self.measured_repo_test);
        }
        if let Some(p) = self.measured_parser {
            r.parser = p;
        }
        r.measuring = true;
        r
    }
}

impl Runner {
    /// This runner with its image's caches in use (`on`), or not: `cache_env` joins `env`.
    pub fn cached(mut self, on: bool) -> Runner {
        if on {
            self.env.append(&mut self.cache_env);
        } else {
            self.cache_env.clear();
        }
        self
    }
}

pub type Catalogue = BTreeMap<String, Runner>;

/// A config table's keys over the built-in entry's. A config that changes how the tests run or
/// are read (`test`, `parser`, `reports`; `repo_test`, `repo_parser`) without giving its own
/// measured command drops the built-in one: it was written for the built-in command, and
/// running it instead would silently replace the user's.
fn merge(base: &mut toml::Table, over: &toml::Table) {
    let sets = |keys: &[&str]| keys.iter().any(|k| over.contains_key(*k));
    if sets(&["test", "parser", "reports"]) && !sets(&["measured_test"]) {
        base.remove("measured_test");
        base.remove("measured_parser");
        base.remove("measured_repo_test");
    }
    if sets(&["repo_test", "repo_parser"]) && !sets(&["measured_repo_test"]) {
        base.remove("measured_repo_test");
    }
    // The built-in caches are the built-in image's: another image may not have them.
    if sets(&["image"]) && !sets(&["cache_env"]) {
        base.remove("cache_env");
    }
    for (k, v) in over {
        base.insert(k.clone(), v.clone());
    }
}

/// The built-in catalogue with the config file's and the command line's overrides applied.
pub fn load(config: Option<&Path>, images: &[String]) -> Result<Catalogue, String> {
    let mut tables: BTreeMap<String, toml::Table> = BTreeMap::new();
    for text in BUILTIN {
        let t: toml::Table = text.parse().map_err(|e| format!("built-in catalogue: {e}"))?;
        let lang = t.get("language").and_then(|v| v.as_str()).ok_or("built-in catalogue entry without a language")?;
        tables.insert(lang.to_string(), t);
    }
    if let Some(path) = config {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let t: toml::Table = text.parse().map_err(|e| format!("{}: {e}", path.display()))?;
        for (lang, v) in t {
            let over = v.as_table().ok_or_else(|| format!("{}: [{lang}] must be a table", path.display()))?;
            let entry = tables.entry(lang.clone()).or_default();
            entry.insert("language".into(), toml::Value::String(lang.clone()));
            merge(entry, over);
        }
    }
    for spec in images {
        let (lang, image) = spec.split_once('=').ok_or_else(|| format!("--image {spec}: expected LANG=REF"))?;
        let entry =
            tables.get_mut(lang).ok_or_else(|| format!("--image {spec}: no language {lang:?} in the catalogue"))?;
        entry.insert("image".into(), toml::Value::String(image.to_string()));
        entry.remove("cache_env");
    }
    let mut cat = Catalogue::new();
    for (lang, t) in tables {
        if let Some(p) =
            t.get("parser").and_then(|v| v.as_str()).filter(|p| super::parsers::Parser::from_name(p).is_none())
        {
            let known: Vec<&str> = super::parsers::Parser::ALL.iter().map(|p| p.name()).collect();
            return Err(format!("catalogue entry {lang}: unknown parser {p:?} (known: {})", known.join(", ")));
        }
        let r: Runner = toml::Value::Table(t).try_into().map_err(|e| format!("catalogue entry {lang}: {e}"))?;
        cat.insert(lang, r);
    }
    Ok(cat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_loads_and_overrides_apply() {
        let cat = load(None, &["python=example.org/py:1".into()]).unwrap();
        assert_eq!(cat.len(), 7);
        assert_eq!(cat["python"].image, "example.org/py:1");
        assert!(load(None, &["cobol=x".into()]).unwrap_err().contains("no language"));
        assert!(load(None, &["python".into()]).unwrap_err().contains("LANG=REF"));
        let dir = std::env::temp_dir().join(format!("ps-cat-{}", std::process::id()));
        std::fs::write(&dir, "[go]\ntimeout = \"9s\"\n[python]\nparser = \"nope\"\n").unwrap();
        let err = load(Some(&dir), &[]).unwrap_err();
        assert!(err.contains("unknown parser"), "{err}");
        std::fs::write(&dir, "[go]\ntimeout = \"9s\"\n").unwrap();
        assert_eq!(load(Some(&dir), &[]).unwrap()["go"].timeout, "9s");
        // A config's own test command is the one run, measured or not.
        let on = PerTest { on: true, ..PerTest::default() };
        assert!(!load(None, &[]).unwrap()["python"].measured_test.is_empty());
        for over in ["test = [\"true\"]", "parser = \"junit-xml\"", "reports = [\"a.xml\"]"] {
            std::fs::write(&dir, format!("[python]\n{over}\n")).unwrap();
            let r = &load(Some(&dir), &[]).unwrap()["python"];
            let m = r.measured(&on);
            assert!(!m.measuring && m.test == r.test && m.repo_test == r.repo_test, "{over}: {m:?}");
        }
        std::fs::write(&dir, "[python]\nrepo_test = [\"true\"]\n").unwrap();
        let m = load(Some(&dir), &[]).unwrap()["python"].measured(&on);
        assert!(m.measuring && m.repo_test == ["true"], "{m:?}");
        std::fs::write(&dir, "[python]\ntest = [\"t\"]\nmeasured_test = [\"{each}\", \"x\"]\n").unwrap();
        let m = load(Some(&dir), &[]).unwrap()["python"].measured(&on);
        assert!(m.measuring && m.test.last().unwrap() == "x", "{m:?}");
        std::fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn caches_are_the_built_in_images_own() {
        let cat = load(None, &[]).unwrap();
        let cpp = &cat["cpp"];
        assert_eq!(cpp.cache_env, ["CMAKE_CXX_COMPILER_LAUNCHER=ccache"]);
        let on = cpp.clone().cached(true);
        assert!(on.env.ends_with(&cpp.cache_env) && on.cache_env.is_empty(), "{on:?}");
        let off = cpp.clone().cached(false);
        assert_eq!(off.env, cpp.env);
        assert!(off.cache_env.is_empty());
        // Another image, by --image or a config's `image`, may not have them.
        assert!(load(None, &["cpp=docker.io/library/gcc:12".into()]).unwrap()["cpp"].cache_env.is_empty());
        let dir = std::env::temp_dir().join(format!("ps-cat-caches-{}", std::process::id()));
        std::fs::write(&dir, "[rust]\nimage = \"docker.io/library/rust:1.85\"\n[go]\ntimeout = \"9s\"\n").unwrap();
        let cat = load(Some(&dir), &[]).unwrap();
        assert!(cat["rust"].cache_env.is_empty());
        assert_eq!(cat["go"].cache_env, ["GOCACHE=/opt/polysandbox/go-build"]);
        std::fs::write(&dir, "[rust]\nimage = \"x\"\ncache_env = [\"A=b\"]\n").unwrap();
        assert_eq!(load(Some(&dir), &[]).unwrap()["rust"].cache_env, ["A=b"]);
        std::fs::remove_file(&dir).unwrap();
    }
}
