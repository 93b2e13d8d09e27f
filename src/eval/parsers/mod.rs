//! Every parser polysandbox has, in one registry ([`by_name`]): each turns what a test run
//! left into per-test statuses. Two families, told apart by the channel they read:
//!
//! - the runners' own ([`Parser`], by the catalogue's names: images/*.toml `parser`), for
//!   exercises and repositories graded by polysandbox. Each reads only what the runner itself
//!   writes in a form a test's own printing does not imitate: pytest's final short summary (its
//!   fd-level capture keeps the code's output out), `go test -json` events (test2json frames
//!   real results, since Go 1.20), jest's and JUnit's report files (written to a directory bound
//!   for this run), libtest's result lines (it captures test output), Catch2's closing totals.
//!   `complete` says the runner got as far as its own summary: a run that exits 0 without it
//!   (the code called exit(0)) is not a pass.
//! - the SWE-bench harness's log parsers ([`LogParser`], by its `log_parser` names), for SWE-bench
//!   instances graded as the harness grades them. Each reads the eval script's log, as the
//!   harness slices it (swebench::logs_eval), whatever the tests printed into it; each is the
//!   harness's own (swebench/harness/log_parsers/*.py), line for line, for published verdicts
//!   are reproduced with them. Their output is a [`StatusMap`].
//! - Multi-SWE-bench's per-repository `parse_log`s ([`MsbParser`], by the names its table,
//!   images/multi_swebench.json, gives their families), for its records graded as its harness
//!   grades them: the fix run's whole log, three sets of names as its `TestResult` keeps them
//!   ([`Sets`]).
//!
//! One module per runner. Where both families parse one runner (pytest, go test, cargo, jest,
//! JUnit), both entry points are in its module, named by what they read; they share the
//! parsing of a line where they read the same line grammar (go's `--- PASS: ` lines), and
//! otherwise each keeps its own, since their inputs differ (a report file or a framed line
//! beside the raw log) and each one's results are what they are.

pub mod cargo;
pub mod catch2;
pub mod django;
pub mod go;
pub mod jest;
pub mod junit;
pub mod phpunit;
pub mod pytest;
pub mod sympy;

use crate::eval::channel::Reports;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A parser of either family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// The runner's own channels: the catalogue's names.
    Runner(Parser),
    /// The harness's: the eval script's log, by the `log_parser` column's names.
    Log(LogParser),
    /// Multi-SWE-bench's: the fix run's log, by its table's family names.
    Multi(MsbParser),
}

/// The registry: a parser by any name it goes by. The catalogue's names (`pytest`,
/// `gotest-json`, ...) are the runners' own parsers; the `log_parser` column's
/// (`parse_log_pytest`, and the repositories' aliases, `parse_log_astropy`, ...) are the
/// harness's. One runner's two parsers have two names: `pytest` reads pytest's last short
/// summary, `parse_log_pytest` any line of the log as the harness does.
pub fn by_name(name: &str) -> Option<Named> {
    if let Some(p) = MsbParser::by_name(name) {
        return Some(Named::Multi(p));
    }
    match name.strip_prefix(LogParser::PREFIX) {
        Some(short) => LogParser::by_short_name(short).map(Named::Log),
        None => Parser::from_name(name).map(Named::Runner),
    }
}

/// Every name [`by_name`] knows, with its parser: each parser's own name, then the harness's
/// aliases.
pub fn names() -> Vec<(String, Named)> {
    let runners = Parser::ALL.into_iter().map(|p| (p.name().to_string(), Named::Runner(p)));
    let logs = LogParser::ALL.into_iter().map(|p| (p.name().to_string(), Named::Log(p)));
    let aliases = LogParser::ALIASES.into_iter().map(|(a, p)| (format!("{}{a}", LogParser::PREFIX), Named::Log(p)));
    let multi = MsbParser::ALL.into_iter().map(|p| (p.name().to_string(), Named::Multi(p)));
    runners.chain(logs).chain(aliases).chain(multi).collect()
}

// ---- The runners' own: the channels the code under test cannot forge ----

/// The runners' result formats. A closed set: a catalogue naming another is refused when it
/// loads (the harness's log parsers included: they read what the tests print), and every match
/// on it is exhaustive (no name can fall through to "complete").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Parser {
    Pytest,
    /// The Go test binary's own framed output (`-test.v=test2json`): only framed lines count.
    Gotest,
    /// `go test -json` events (repositories, where the test binaries are go test's).
    GotestJson,
    Cargo,
    Jest,
    JunitXml,
    /// JUnit XML written once per test, by a binary run once per test (Catch2 under
    /// `each-test`): one document per run, each of at most one test case, no name twice.
    JunitXmlEach,
    Catch2,
    /// No per-test results: the exit status alone (snippet instances).
    ExitCode,
}

impl Parser {
    pub const ALL: [Parser; 9] = [
        Parser::Pytest,
        Parser::Gotest,
        Parser::GotestJson,
        Parser::Cargo,
        Parser::Jest,
        Parser::JunitXml,
        Parser::JunitXmlEach,
        Parser::Catch2,
        Parser::ExitCode,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Parser::Pytest => "pytest",
            Parser::Gotest => "gotest",
            Parser::GotestJson => "gotest-json",
            Parser::Cargo => "cargo",
            Parser::Jest => "jest",
            Parser::JunitXml => "junit-xml",
            Parser::JunitXmlEach => "junit-xml-each",
            Parser::Catch2 => "catch2",
            Parser::ExitCode => "exit-code",
        }
    }

    /// Whether every skip this runner reports was declared in the test files (jest's
    /// `xtest`/`test.skip`: "pending"), which a prediction cannot change; other runners let the
    /// code under test skip at run time (`pytest.skip`, JUnit assumptions).
    pub fn skips_are_declared(self) -> bool {
        matches!(self, Parser::Jest)
    }

    pub fn from_name(name: &str) -> Option<Parser> {
        Parser::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl std::fmt::Display for Parser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    Failed,
    Skipped,
    Error,
    /// An expected failure (pytest's XFAIL): a pass for SWE-bench's grading of repository
    /// instances, as its harness counts it; not a pass for an exercise, whose tests are all
    /// expected to pass (an `xfail()` called from the solution is a way to hide a failure).
    Xfail,
}

impl Status {
    pub const ALL: [Status; 5] = [Status::Failed, Status::Passed, Status::Skipped, Status::Error, Status::Xfail];

    /// The harness's word for this status (its `TestStatus`), as its log parsers store it.
    pub fn harness_name(self) -> &'static str {
        match self {
            Status::Passed => "PASSED",
            Status::Failed => "FAILED",
            Status::Skipped => "SKIPPED",
            Status::Error => "ERROR",
            Status::Xfail => "XFAIL",
        }
    }

    /// The status a word the harness keeps names, when it is one of its five.
    pub fn from_harness(word: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.harness_name() == word)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub name: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// What the test used, measured apart from every other test (see [`crate::measure`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::measure::TestUsage>,
}

#[derive(Debug, Default, Clone)]
pub struct Parsed {
    pub tests: Vec<TestResult>,
    /// Totals from a runner that gives no names (Catch2): (passed, failed).
    pub totals: Option<(u64, u64)>,
    /// The runner's own end-of-run summary was found.
    pub complete: bool,
    /// Why the results cannot be the runner's own, when their channel shows it (a report
    /// written twice, or past its cap).
    pub tampered: Option<String>,
    /// Go: tests that wrote lines of their own while they were the test running (their own
    /// `t.Error`s, not only their subtests'), by name.
    pub spoke: std::collections::BTreeSet<String>,
    /// `process`: why the per-test results may not be each-test's own although the channel
    /// looks whole (processes it could not end were running when it drew its key). `test`
    /// says so; eval, where nothing of a prediction runs before each-test, does not use it.
    pub unverified: Option<String>,
}

impl Parsed {
    pub fn failed(&self) -> usize {
        self.tests.iter().filter(|t| matches!(t.status, Status::Failed | Status::Error)).count()
            + self.totals.map_or(0, |(_, f)| f as usize)
    }
    pub fn passed(&self) -> usize {
        self.tests.iter().filter(|t| t.status == Status::Passed).count() + self.totals.map_or(0, |(p, _)| p as usize)
    }
    pub fn status_of(&self, name: &str) -> Option<Status> {
        self.tests.iter().rev().find(|t| t.name == name).map(|t| t.status)
    }
}

/// Puts each test's numbers beside its result. A test `each-test` stopped for its own limit,
/// which no runner report names (it never got to say), is added as failed, and one a report
/// names passed is failed all the same (its process was killed before it ended). Where the
/// tests ran one process each, a test the report names passed counts only if `each-test` saw
/// its process exit 0: what the test's own process wrote into the report (a pass line, then an
/// abort) is not enough. Returns why the results cannot be trusted, when the channel shows it.
pub fn attach_usage(tests: &mut Vec<TestResult>, measured: crate::measure::Measured) -> Option<String> {
    use crate::measure::Method;
    let crate::measure::Measured { usage: measured, ran, unclean, tampered, others: _ } = measured;
    let ran: std::collections::BTreeSet<String> = ran.into_iter().collect();
    // A name a report gives twice (a forged line beside the runner's own) gets the same line.
    let mut named = std::collections::BTreeSet::new();
    for t in tests.iter_mut() {
        let passed = matches!(t.status, Status::Passed | Status::Xfail);
        let u = measured.get(&t.name).cloned();
        named.insert(t.name.clone());
        if passed && ran.contains(&t.name) && (u.is_none() || unclean.contains(&t.name)) {
            t.status = Status::Failed;
        }
        if let Some(u) = u {
            if u.stopped_by.is_some() && u.method == Method::Process {
                t.status = Status::Failed;
            }
            t.usage = Some(u);
        }
    }
    for (name, u) in measured {
        if !named.contains(&name) && u.stopped_by.is_some() && u.method == Method::Process {
            tests.push(TestResult { name, status: Status::Failed, duration_s: Some(u.wall_s), usage: Some(u) });
        }
    }
    tampered
}

/// Parses `output` (stdout and stderr, interleaved) and the report files with `parser`.
pub fn parse(parser: Parser, output: &str, reports: &Reports) -> Parsed {
    let mut p = match parser {
        Parser::Pytest => pytest::pytest(output),
        Parser::Gotest => go::gotest(output),
        Parser::GotestJson => go::gotest_json(output),
        Parser::Cargo => cargo::cargo(output, reports),
        Parser::Jest => jest::jest(reports),
        Parser::JunitXml => junit::junit_reports(reports),
        Parser::JunitXmlEach => junit::junit_reports_each(reports),
        Parser::Catch2 => catch2::catch2(output),
        // Nothing to read but the exit status, which the caller judges.
        Parser::ExitCode => Parsed { complete: true, ..Parsed::default() },
    };
    if let Some(f) = reports.overflow.iter().find(|f| *f != crate::measure::REPORT) {
        p.tampered = Some(format!("the report {f} went past {} MiB", crate::eval::channel::CAP >> 20));
    }
    // Each test's usage, when it was measured (a measurement, never a verdict, but for a test
    // each-test stopped for its own limit).
    if let Some(bytes) = reports.get(crate::measure::REPORT) {
        // Runners whose tests `each-test` runs one process each: their parsers.
        let expect = match parser {
            Parser::Cargo | Parser::Gotest | Parser::JunitXmlEach => crate::measure::Method::Process,
            _ => crate::measure::Method::InRunner,
        };
        let read = crate::measure::read(bytes, expect);
        if !read.others.is_empty() {
            p.unverified = Some(format!(
                "{} process(es) that each-test did not start (pids {:?} in the sandbox: a daemon from a setup step or a build script?) were running when it drew the key that signs each test's line: they could have read it",
                read.others.len(),
                read.others
            ));
        }
        if let Some(why) = attach_usage(&mut p.tests, read) {
            p.tampered.get_or_insert(why);
        }
    }
    p
}

/// The report files each runner writes into `{report}` (see channel.rs): a FIFO each.
pub fn report_files(parser: Parser) -> Vec<String> {
    match parser {
        Parser::Jest => vec!["jest.json".into()],
        Parser::Cargo => vec!["libtest.log".into()],
        // The JUnit console launcher writes one file per test engine it finds.
        Parser::JunitXmlEach => vec!["catch2.xml".into()],
        Parser::JunitXml => ["TEST-junit-jupiter.xml", "TEST-junit-vintage.xml", "TEST-junit-platform-suite.xml"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        _ => vec![],
    }
}

// ---- The SWE-bench harness's: the eval script's log, as the harness reads it ----

/// What a harness log parser makes: test name to status, as the harness's `dict[str, str]`
/// (the last line naming a test decides it). `None`: a word the harness keeps as a status
/// that is none of its five. Its pytest parsers take the first word of any line that starts
/// with one (`ERROR:` of pytest's "ERROR: file or directory not found: t.py"), and its grading
/// takes such a word for no pass (and, under `fail_only`, for no failure).
pub type StatusMap = BTreeMap<String, Option<Status>>;

/// The harness's log parsers (swebench/harness/log_parsers/python.py), by what they do. Each
/// reads the eval script's log (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogParser {
    Pytest,
    PytestOptions,
    PytestV2,
    Django,
    Seaborn,
    Sympy,
    Matplotlib,
    /// SWE-bench Multilingual's: `cargo test`, `go test -v`, PHPUnit's testdox, jest --verbose,
    /// Ant's JUnit lines, Maven (one `-Dtest=` run per test, graded by its BUILD line).
    Cargo,
    GoTest,
    PhpUnit,
    Jest,
    Ant,
    Maven,
}

impl LogParser {
    pub const ALL: [LogParser; 13] = [
        LogParser::Pytest,
        LogParser::PytestOptions,
        LogParser::PytestV2,
        LogParser::Django,
        LogParser::Seaborn,
        LogParser::Sympy,
        LogParser::Matplotlib,
        LogParser::Cargo,
        LogParser::GoTest,
        LogParser::PhpUnit,
        LogParser::Jest,
        LogParser::Ant,
        LogParser::Maven,
    ];

    /// What the harness's names for its parsers start with.
    pub const PREFIX: &str = "parse_log_";

    /// The harness's other names for its parsers, its repositories' (`parse_log_astropy =
    /// parse_log_pytest_v2`, ...), less the prefix.
    pub const ALIASES: [(&str, LogParser); 13] = [
        ("astroid", LogParser::Pytest),
        ("flask", LogParser::Pytest),
        ("marshmallow", LogParser::Pytest),
        ("pvlib", LogParser::Pytest),
        ("pyvista", LogParser::Pytest),
        ("sqlfluff", LogParser::Pytest),
        ("xarray", LogParser::Pytest),
        ("pydicom", LogParser::PytestOptions),
        ("requests", LogParser::PytestOptions),
        ("pylint", LogParser::PytestOptions),
        ("astropy", LogParser::PytestV2),
        ("scikit", LogParser::PytestV2),
        ("sphinx", LogParser::PytestV2),
    ];

    /// The harness's name for it.
    pub fn name(self) -> &'static str {
        match self {
            LogParser::Pytest => "parse_log_pytest",
            LogParser::PytestOptions => "parse_log_pytest_options",
            LogParser::PytestV2 => "parse_log_pytest_v2",
            LogParser::Django => "parse_log_django",
            LogParser::Seaborn => "parse_log_seaborn",
            LogParser::Sympy => "parse_log_sympy",
            LogParser::Matplotlib => "parse_log_matplotlib",
            LogParser::Cargo => "parse_log_cargo",
            LogParser::GoTest => "parse_log_gotest",
            LogParser::PhpUnit => "parse_log_phpunit",
            LogParser::Jest => "parse_log_jest",
            LogParser::Ant => "parse_log_ant",
            LogParser::Maven => "parse_log_maven",
        }
    }

    /// A parser by the harness's name for it (the `log_parser` column), aliases included, with
    /// or without the prefix.
    pub fn by_name(name: &str) -> Option<LogParser> {
        LogParser::by_short_name(name.strip_prefix(LogParser::PREFIX).unwrap_or(name))
    }

    /// A parser by its name or alias less the prefix.
    fn by_short_name(short: &str) -> Option<LogParser> {
        LogParser::ALL
            .into_iter()
            .find(|p| &p.name()[LogParser::PREFIX.len()..] == short)
            .or_else(|| LogParser::ALIASES.into_iter().find(|(a, _)| *a == short).map(|(_, p)| p))
    }

    /// The repository's parser (`MAP_REPO_TO_PARSER_PY`).
    pub fn for_repo(repo: &str) -> Option<LogParser> {
        let name = match repo {
            "astropy/astropy" => "astropy",
            "django/django" => "django",
            "marshmallow-code/marshmallow" => "marshmallow",
            "matplotlib/matplotlib" => "matplotlib",
            "mwaskom/seaborn" => "seaborn",
            "pallets/flask" => "flask",
            "psf/requests" => "requests",
            "pvlib/pvlib-python" => "pvlib",
            "pydata/xarray" => "xarray",
            "pydicom/pydicom" => "pydicom",
            "pylint-dev/astroid" => "astroid",
            "pylint-dev/pylint" => "pylint",
            "pytest-dev/pytest" => "pytest",
            "pyvista/pyvista" => "pyvista",
            "scikit-learn/scikit-learn" => "scikit",
            "sqlfluff/sqlfluff" => "sqlfluff",
            "sphinx-doc/sphinx" => "sphinx",
            "sympy/sympy" => "sympy",
            "dbt-labs/dbt-core" => "pytest",
            _ => return None,
        };
        LogParser::by_name(name)
    }

    /// The status map of a log (or of one line of it).
    pub fn parse(self, log: &str) -> StatusMap {
        match self {
            LogParser::Pytest => pytest::harness(log, false, false),
            LogParser::PytestOptions => pytest::harness(log, true, false),
            LogParser::Matplotlib => pytest::harness(log, false, true),
            LogParser::PytestV2 => pytest::harness_v2(log),
            LogParser::Django => django::harness(log),
            LogParser::Seaborn => pytest::harness_seaborn(log),
            LogParser::Sympy => sympy::harness(log),
            LogParser::Cargo => cargo::harness(log),
            LogParser::GoTest => go::harness(log),
            LogParser::Jest => jest::harness(log),
            LogParser::PhpUnit => phpunit::harness(log),
            LogParser::Ant => junit::harness_ant(log),
            LogParser::Maven => junit::harness_maven(log),
        }
    }
}

// ---- Multi-SWE-bench's: the fix run's log, as its harness reads it ----

/// Multi-SWE-bench's parsers (its instances' `parse_log`), one per family of identical code
/// (rootfs/multi_swebench_table.py names the families). Each reads the fix run's whole log,
/// whatever the code under test printed into it, as the harness does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsbParser {
    /// `test NAME ... ok|FAILED|ignored` on stripped lines (tokio-rs/bytes, sharkdp/fd, ...).
    Libtest,
    /// jest --verbose: `PASS|FAIL <file>` opens a suite (itself a test), `✓|✕ <name>` under it
    /// is `<file>:<name>` (iamkun/dayjs, ...).
    JestSuites,
    /// `go test -v`: `--- PASS|FAIL|SKIP: NAME`, and a package's `FAIL pkg` line (beego, caddy,
    /// cli/cli, hugo, ...).
    GoTest,
    /// The same, a subtest counted as its parent (etcd, gin, gorm, grpc-go, go-zero).
    GoTestParents,
}

impl MsbParser {
    pub const ALL: [MsbParser; 4] =
        [MsbParser::Libtest, MsbParser::JestSuites, MsbParser::GoTest, MsbParser::GoTestParents];

    pub fn name(self) -> &'static str {
        match self {
            MsbParser::Libtest => "msb-libtest",
            MsbParser::JestSuites => "msb-jest-suites",
            MsbParser::GoTest => "msb-gotest",
            MsbParser::GoTestParents => "msb-gotest-parents",
        }
    }

    pub fn by_name(name: &str) -> Option<MsbParser> {
        MsbParser::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The harness's `TestResult` of a log, or the error its parser raises on it.
    pub fn parse(self, log: &str) -> Result<Sets, String> {
        match self {
            MsbParser::Libtest => Ok(cargo::msb(log)),
            MsbParser::JestSuites => jest::msb(log),
            MsbParser::GoTest => Ok(go::msb(log, false)),
            MsbParser::GoTestParents => Ok(go::msb(log, true)),
        }
    }
}

/// Python's `str.splitlines()`, which the harnesses' `parse_log`s split a log with: besides
/// `\n` and `\r\n`, a lone `\r` (a progress line's return), `\v`, `\f`, `\x1c`-`\x1e`,
/// `\x85`, U+2028 and U+2029 end a line.
pub fn py_splitlines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let t = rest?;
        if t.is_empty() {
            rest = None;
            return None;
        }
        match t.char_indices().find(|(_, c)| {
            matches!(c, '\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}')
        }) {
            Some((i, c)) => {
                let next = i + c.len_utf8();
                let next = if c == '\r' && t[next..].starts_with('\n') { next + 1 } else { next };
                rest = Some(&t[next..]);
                Some(&t[..i])
            }
            None => {
                rest = None;
                Some(t)
            }
        }
    })
}

/// Multi-SWE-bench's `TestResult`: the names its parser put in each set. The harness refuses a
/// result where a name is in two sets (its `__post_init__` raises): [`Sets::conflict`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sets {
    pub passed: std::collections::BTreeSet<String>,
    pub failed: std::collections::BTreeSet<String>,
    pub skipped: std::collections::BTreeSet<String>,
}

impl Sets {
    /// The harness's status word of a test: PASS, FAIL, SKIP (a name in two sets: the last of
    /// these its `_tests` map is filled with, skipped over failed over passed), or NONE.
    pub fn status(&self, name: &str) -> &'static str {
        if self.skipped.contains(name) {
            "SKIP"
        } else if self.failed.contains(name) {
            "FAIL"
        } else if self.passed.contains(name) {
            "PASS"
        } else {
            "NONE"
        }
    }

    /// A name in two sets, which the harness's `TestResult` refuses (with the two sets).
    pub fn conflict(&self) -> Option<(String, &'static str, &'static str)> {
        let two = |a: &std::collections::BTreeSet<String>, b: &std::collections::BTreeSet<String>| {
            a.intersection(b).next().cloned()
        };
        two(&self.passed, &self.failed)
            .map(|n| (n, "passed", "failed"))
            .or_else(|| two(&self.passed, &self.skipped).map(|n| (n, "passed", "skipped")))
            .or_else(|| two(&self.failed, &self.skipped).map(|n| (n, "failed", "skipped")))
    }

    /// Every name, once.
    pub fn names(&self) -> std::collections::BTreeSet<&String> {
        self.passed.iter().chain(&self.failed).chain(&self.skipped).collect()
    }

    /// The harness's `TestResult` as JSON (its field names; sets as sorted lists).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "passed_count": self.passed.len(), "failed_count": self.failed.len(), "skipped_count": self.skipped.len(),
            "passed_tests": self.passed, "failed_tests": self.failed, "skipped_tests": self.skipped,
        })
    }

    /// A record's `run_result`, `test_patch_result` or `fix_patch_result`.
    pub fn from_json(v: &serde_json::Value) -> Result<Sets, String> {
        let set = |k: &str| -> Result<std::collections::BTreeSet<String>, String> {
            match &v[k] {
                serde_json::Value::Null => Ok(Default::default()),
                serde_json::Value::Array(a) => a
                    .iter()
                    .map(|x| x.as_str().map(String::from).ok_or_else(|| format!("{k}: a name that is not a string")))
                    .collect(),
                _ => Err(format!("{k}: not a list of names")),
            }
        };
        Ok(Sets { passed: set("passed_tests")?, failed: set("failed_tests")?, skipped: set("skipped_tests")? })
    }
}

/// A harness parser that matches each stripped line against one pattern.
fn by_line(log: &str, pattern: &str, f: impl Fn(&regex::Captures) -> Option<(String, Status)>) -> StatusMap {
    let re = regex::Regex::new(pattern).unwrap();
    let mut m = StatusMap::new();
    for line in log.split('\n') {
        if let Some((name, status)) = re.captures(line.trim()).as_ref().and_then(&f) {
            m.insert(name, Some(status));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_split_as_python_splits_them() {
        let v: Vec<&str> = py_splitlines("a\nb\r\nc\rd\x0be\u{2028}f\n\ng\n").collect();
        assert_eq!(v, ["a", "b", "c", "d", "e", "f", "", "g"]);
        assert_eq!(py_splitlines("").count(), 0);
        assert_eq!(py_splitlines("x").collect::<Vec<_>>(), ["x"]);
    }

    use super::*;

    #[test]
    fn the_registry_names_every_parser_once() {
        let names = names();
        let mut seen = std::collections::BTreeSet::new();
        for (name, p) in &names {
            assert!(seen.insert(name.clone()), "{name} twice");
            assert_eq!(by_name(name), Some(*p), "{name}");
        }
        assert_eq!(
            names.len(),
            Parser::ALL.len() + LogParser::ALL.len() + LogParser::ALIASES.len() + MsbParser::ALL.len()
        );
        for p in Parser::ALL {
            assert!(names.contains(&(p.name().to_string(), Named::Runner(p))));
            // The catalogue's (serde's) name is the registry's.
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
        }
        for p in LogParser::ALL {
            assert!(names.contains(&(p.name().to_string(), Named::Log(p))));
        }
        // One runner's two parsers, by their two names; the catalogue takes none of the harness's.
        assert_eq!(by_name("pytest"), Some(Named::Runner(Parser::Pytest)));
        assert_eq!(by_name("parse_log_pytest"), Some(Named::Log(LogParser::Pytest)));
        assert_eq!(by_name("astropy"), None);
        assert_eq!(Parser::from_name("parse_log_pytest"), None);
        assert_eq!(Parser::from_name("django"), None);
        // The log_parser column's names, with the prefix or without it.
        assert_eq!(LogParser::by_name("pytest"), Some(LogParser::Pytest));
        assert_eq!(LogParser::by_name("parse_log_astropy"), Some(LogParser::PytestV2));
        assert_eq!(LogParser::by_name("parse_log_parse_log_pytest"), None);
        assert_eq!(LogParser::for_repo("sympy/sympy"), Some(LogParser::Sympy));
    }

    #[test]
    fn statuses_are_lowercase_in_our_json_and_the_harnesss_words_in_its() {
        for s in Status::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.harness_name().to_lowercase());
            assert_eq!(Status::from_harness(s.harness_name()), Some(s));
        }
        assert_eq!(Status::Xfail.harness_name(), "XFAIL");
        assert_eq!(Status::from_harness("ERROR:"), None);
        assert_eq!(Status::from_harness("passed"), None);
    }
}
