//! Tampering, surfaced: what a prediction's code does that reaches into the runner instead of
//! solving the task. A static look at the text, never a verdict by itself (code can always
//! hide what it does from a scan: `getattr(__import__("s"+"ys"), ...)`), so it is a flag in
//! the result; `eval --strict` grades a flagged prediction unresolved.
//!
//! Two scans:
//! - an exercise's solution files, per language: the test framework's internals, argv and the
//!   runner's flags, exit and shutdown hooks, code run at load, re-executing the test binary
//!   or any process, reading the test files or the process's own /proc, and text shaped like
//!   the runner's report. None of these appears in any of the 114 reference solutions in
//!   ../shared (tests/tampering.rs), which use only what a solution needs.
//! - a repository patch (SWE-bench and its kind): changes to what configures the test run
//!   rather than the code under test: `conftest.py`, pytest's configuration and `addopts`,
//!   plugins put on the path (`.pth`, `sitecustomize`, `pytest_plugins`, `pytest11` entry
//!   points), and the other languages' equivalents (jest and babel configs, `TestMain`, a
//!   `build.rs` or `harness = false`, surefire settings). The official harness is fooled by
//!   such a conftest too; it stays graded as the harness grades it unless `--strict`.

use regex::Regex;
use std::sync::OnceLock;

/// One thing looked for: the languages it applies to ("*" for all), a pattern, and what it
/// means.
struct Rule {
    langs: &'static [&'static str],
    pattern: &'static str,
    what: &'static str,
}

pub const REDECLARES_GO: &str =
    "redeclares a name Go predeclares (true, false, nil, len, ...), which the package's tests then use";
const SHADOWS_RUST: &str = "shadows the prelude or the assertion macros the tests use";
/// A control test reported passed: what a forger who guessed a control for a real test leaves
/// (an honest wrong answer meets a control's changed expectation only by coincidence).
/// Evidence beside the verdict (which is `unresolved` already), not a flag of the text's.
pub const CONTROL_PASSED: &str = "a control test reported passed";

/// Flags no solution has a reason for: they change what the tests' own code means, so eval
/// grades them unresolved with or without `--strict`.
pub fn decisive(flag: &str) -> bool {
    flag.starts_with(REDECLARES_GO) || flag.starts_with(SHADOWS_RUST)
}

/// Text shaped like a runner's report: go test's and test2json's frames, libtest's lines,
/// JUnit XML, jest's JSON counts and its ✓/✕ marks, Catch2's and pytest's words.
const REPORT_SHAPED: &str = r"--- (PASS|FAIL|SKIP)\b|=== (RUN|CONT|PAUSE)\b|\\x16|\\026|\\u0016|\\u\{16\}| \.\.\. (ok|FAILED|ignored)\b|test result: |<testcase|<testsuite|numPassedTests|numFailedTests|All tests passed|\bPASSED\b|[✓✕]";

const RULES: &[Rule] = &[
    // Every language.
    Rule { langs: &["*"], pattern: r"/proc/(self|thread-self|[0-9]+)\b|/dev/fd/|/dev/std(out|err)", what: "reads or writes the process's own /proc or descriptors" },
    Rule { langs: &["*"], pattern: r"(?i)polysandbox", what: "names polysandbox" },
    Rule {
        langs: &["*"],
        pattern: REPORT_SHAPED,
        what: "writes text shaped like the runner's report",
    },
    // Python.
    Rule {
        langs: &["python"],
        pattern: r"(?m)^\s*(import|from)\s+(_pytest|pytest|unittest|pluggy|atexit|inspect|traceback|gc|ctypes|importlib|subprocess|signal|faulthandler|builtins|runpy|multiprocessing|pty|__main__|trace|tracemalloc|code|pdb|bdb)\b|(?m)^\s*from\s+(sys|os)\s+import\b",
        what: "imports the test framework or the interpreter's and process's internals",
    },
    Rule { langs: &["python"], pattern: r"\b(__import__|__builtins__|__loader__|__spec__|_getframe|settrace|setprofile|addaudithook|f_back|f_globals|f_locals|co_filename|__code__|__globals__|__subclasses__|__file__)\b", what: "reaches the interpreter's frames, imports or builtins" },
    Rule { langs: &["python"], pattern: r"\b(exec|eval|compile|globals|setattr|delattr)\s*\(\s*[^)\s]", what: "runs code from strings, or sets attributes by name" },
    Rule {
        langs: &["python"],
        pattern: r"\bsys\s*\.\s*(argv|orig_argv|modules|exit|settrace|setprofile|_getframe|meta_path|path_hooks|path|addaudithook|stdout|stderr|__stdout__|__stderr__|excepthook|displayhook|executable)\b|\bos\s*\.\s*(_exit|exec\w*|spawn\w*|system|popen|fork\w*|kill\w*|dup2?|write|environ|getenv|putenv|listdir|walk|scandir|chdir|remove|unlink|rename|replace|open|fdopen|getpid|pipe)\b",
        what: "uses argv, the interpreter's modules, exit, the process's output, processes or the file system",
    },
    Rule {
        langs: &["python"],
        pattern: r"(?s)def\s+__(eq|ne)__\s*\([^)]*\)\s*(->\s*\w+\s*)?:\s*(#[^\n]*\s*)?return\s+(True|False|not\s+False|not\s+True)\s*(\n|$|;|#)|__(eq|ne)__\s*=\s*lambda\b[^:]*:\s*(True|False)\b",
        what: "makes a value equal to anything (an __eq__ or __ne__ that ignores what it is compared with)",
    },
    // JavaScript and TypeScript.
    Rule {
        langs: &["javascript", "typescript"],
        pattern: r"\bprocess\s*(\.\s*(argv|exit|exitCode|on|once|addListener|prependListener|stdout|stderr|env|kill|execArgv|binding|reallyExit|mainModule|_\w+)|\[)",
        what: "uses the process: argv, exit, hooks or its output",
    },
    Rule {
        langs: &["javascript", "typescript"],
        pattern: r#"(require\s*\(|import\s*\(|from\s+)\s*['"`](node:)?(child_process|fs|fs/promises|module|vm|worker_threads|cluster|inspector|v8|path|os|process|async_hooks|perf_hooks|@jest/[\w-]+|jest[\w-]*|expect)['"`]"#,
        what: "loads the process's, the file system's or the test framework's modules",
    },
    Rule {
        langs: &["javascript", "typescript"],
        pattern: r#"\b(globalThis|global|jest|__filename|__dirname)\b|import\.meta|\bError\s*\.\s*(prepareStackTrace|captureStackTrace|stackTraceLimit)|Error\(\)\s*\.\s*stack|\bFunction\s*\(|constructor\s*\.\s*constructor|\[\s*['"`]constructor['"`]\s*\]|\beval\s*\(|(^|[^.\w$])(test|it|describe|xtest|xit|fit|xdescribe|fdescribe|expect|beforeAll|beforeEach|afterAll|afterEach)\s*\.\s*(skip|only|each|todo|concurrent|failing|extend|assertions|hasAssertions|addSnapshotSerializer)\b|(?m)(^|[;{}(,]\s*)(test|it|describe|xtest|xit|fit|expect|beforeAll|beforeEach|afterAll|afterEach)\s*=[^=]"#,

        what: "reaches the test framework's globals, the stack or code from strings",
    },
    Rule { langs: &["javascript", "typescript"], pattern: r"\b(Object|Array|Function|Promise|Error|String|Number|Symbol|Reflect)\s*\.\s*(prototype\s*\.\s*\w+\s*=[^=]|defineProperty\s*\(\s*(globalThis|global|Object|Array|Function|Promise|Error))", what: "rewrites the language's built-ins" },
    Rule { langs: &["javascript", "typescript"], pattern: r#"\basymmetricMatch\b|\$\$typeof|Symbol\s*\.\s*for\s*\(\s*['"`]jest"#, what: "makes a value match anything in jest's comparisons" },
    // Go.
    Rule {
        langs: &["go"],
        pattern: r"\bos\s*\.\s*(Args|Exit|Stdout|Stderr|Stdin|Getenv|LookupEnv|Setenv|Environ|Executable|StartProcess|NewFile|Open|OpenFile|ReadFile|ReadDir|WriteFile|Create|Remove|RemoveAll|Getwd|Chdir|Pipe|Getpid)\b|\bflag\s*\.\s*\w+|\btesting\s*\.\s*(Init|MainStart|Verbose|Short|CoverMode|Coverage|RegisterCover|Testing|M\b)|\bfunc\s+init\s*\(\s*\)",
        what: "uses argv, the runner's flags, exit, the process's output or files, or runs code at load",
    },
    Rule {
        langs: &["go"],
        pattern: r#""(os/exec|syscall|unsafe|runtime/debug|os/signal|io/ioutil|plugin|golang\.org/x/sys/[\w/]+|internal/[\w/]+|runtime/pprof|log)"|go:linkname|//export\b|import\s+"C"|\bruntime\s*\.\s*(Caller|Callers|CallersFrames|FuncForPC|Goexit|Stack|SetFinalizer|Breakpoint)\b"#,
        what: "uses processes, system calls, unsafe memory or the call stack",
    },
    Rule {
        langs: &["go"],
        pattern: r"(?m)^(const|var|func|type)\s+(true|false|nil|iota|len|cap|append|make|new|panic|print|println|copy|delete|close|complex|real|imag|recover|min|max|clear|error|string|bool|byte|rune|any|comparable|u?int(8|16|32|64|ptr)?|float(32|64)|complex(64|128))\b|(?m)^\s+(true|false|nil|iota|len|cap|append|make|new|panic|copy|delete|min|max|error|string|bool|int)\s*(,\s*\w+\s*)*(\s[\w\[\]*.]+\s*)?=[^=]",
        what: REDECLARES_GO,
    },
    // Java.
    Rule {
        langs: &["java", "kotlin"],
        pattern: r"addShutdownHook|Runtime\s*\.\s*getRuntime|\bSystem\s*\.\s*(exit|halt|setOut|setErr|setIn|getProperty|setProperty|getProperties|getenv|setSecurityManager|load|loadLibrary|console|lineSeparator\(\)\s*;\s*$)|ProcessBuilder|ProcessHandle|getAllStackTraces|getStackTrace|StackWalker|setDefaultUncaughtExceptionHandler|setAccessible|java\.lang\.instrument|sun\.misc|jdk\.internal|java\.lang\.invoke|ClassLoader|Class\s*\.\s*forName|java\.nio\.file|java\.io\.(File|RandomAccess|FileOutputStream|FileWriter|FileInputStream|FileReader)\b|\bnew\s+File(OutputStream|Writer|InputStream|Reader)?\s*\(|org\.junit|org\.assertj|org\.opentest4j|java\.lang\.management",
        what: "installs exit or shutdown hooks, replaces the process's streams, runs processes, reads files or the stack, or reaches the test framework",
    },
    Rule { langs: &["java", "kotlin"], pattern: r"(?s)boolean\s+equals\s*\(\s*(final\s+)?Object\s+\w+\s*\)\s*\{\s*return\s+true\s*;\s*\}", what: "makes a value equal to anything (an equals that ignores its argument)" },
    // Rust.
    Rule {
        langs: &["rust"],
        pattern: r"\benv\s*::\s*(args|args_os|var|var_os|vars|vars_os|current_exe|set_var|remove_var|current_dir|set_current_dir)\b|\bprocess\s*::\s*(exit|abort|Command|id)\b|\bstd\s*::\s*(os|net|backtrace)\b|\bfs\s*::\s*(read_dir|read_link|write|OpenOptions|remove_file|rename|copy|hard_link)\b|\bFile\s*::\s*(options|create|create_new)\b|\bthread\s*::\s*current\b|\btrack_caller\b|\bLocation\s*::\s*caller\b|\bpanic\s*::\s*Location\b|\bpanic\s*::\s*(set_hook|take_hook|catch_unwind|resume_unwind)\b|\bio\s*::\s*(stdout|stderr|stdin)\b|\b(print|eprint|println|eprintln)\s*!",
        what: "uses argv, the environment, exit, processes, lists or writes files, the thread's test name or its caller's place, panic hooks or the runner's output",
    },
    Rule {
        langs: &["rust"],
        pattern: r#"#\s*!?\s*\[\s*(ctor|dtor|no_mangle|export_name|link_section|used|global_allocator|link|linkage|unsafe\s*\()|\.init_array|\.fini_array|extern\s+"C"|\blibc\s*::|\b(asm|global_asm|include_str|include_bytes|include|file|env|option_env)\s*!|\bextern\s+crate\s+(test|libc|core)\b"#,
        what: "runs code at load or exit, calls C, or reads files at compile time",
    },
    Rule {
        langs: &["rust"],
        pattern: r"\bfn\s+(Some|Ok|Err|None|drop|assert\w*)\b|\b(const|static)\s+(None|Some|Ok|Err)\b|\b(struct|enum|type|trait)\s+(Option|Vec|String|Box|PartialEq|Eq|PartialOrd|Ord|Debug|Clone|Some|Ok|Err|None)\b|macro_rules!\s*(assert\w*|panic|vec|matches|debug_assert\w*)\b",
        what: SHADOWS_RUST,
    },
    Rule { langs: &["rust"], pattern: r"(?s)\bfn\s+(eq|ne)\s*\([^)]*\)\s*->\s*bool\s*\{\s*(true|false|!false|!true)\s*\}", what: "makes a value equal to anything (an eq that ignores its operand)" },
    // C and C++.
    Rule {
        langs: &["cpp", "c"],
        pattern: r"#\s*(define|undef)\s+(REQUIRE\w*|CHECK\w*|TEST_CASE\w*|SECTION|DYNAMIC_SECTION|SCENARIO\w*|GIVEN|AND_GIVEN|WHEN|AND_WHEN|THEN|AND_THEN|FAIL\w*|SUCCEED|INFO|UNSCOPED_INFO|WARN|CAPTURE|STATIC_REQUIRE\w*|STATIC_CHECK\w*|TEMPLATE_\w+|METHOD_AS_TEST_CASE|REGISTER_TEST_CASE|CATCH_\w+|INTERNAL_CATCH\w*|Approx|main)\b|\bCatch\s*::|catch\.hpp|catch2|catch_amalgamated",
        what: "redefines or reaches the test framework (Catch2)",
    },
    Rule {
        langs: &["cpp", "c"],
        pattern: r"\b(atexit|at_quick_exit|quick_exit|_Exit|_exit|exit|abort|set_terminate|signal|sigaction|raise)\s*\(|__attribute__\s*\(\(\s*(constructor|destructor)|\[\[\s*gnu\s*::\s*(constructor|destructor)|\.init_array|\.fini_array",
        what: "installs exit hooks or runs code at load or exit",
    },
    Rule {
        langs: &["cpp", "c"],
        pattern: r"(^|[^.\w>:])(system|popen|fork|vfork|execv\w*|execl\w*|posix_spawn\w*|dup2|dup3|freopen|fopen|openat|ptrace|dlsym|dlopen|syscall|printf|puts|putchar|fprintf|fputs|fwrite)\s*\(|std\s*::\s*(ifstream|ofstream|fstream|filesystem|cout|cerr|clog|printf|puts)\b|<(fstream|filesystem|unistd\.h|fcntl\.h|dlfcn\.h|sys/\w+\.h|cstdio|stdio\.h)>|__FILE__|__builtin_(FILE|LINE|FUNCTION)\b|source_location\b|\basm\s*\(|__asm__|\bargv\b|environ\b|getenv\s*\(",
        what: "runs processes, opens files or descriptors, writes the runner's output, or reads argv",
    },
    Rule {
        langs: &["cpp", "c"],
        pattern: r"(?s)operator\s*(==|!=)\s*\([^)]*\)\s*(const\s*)?(noexcept\s*)?(->\s*bool\s*)?\{\s*return\s+(true|false)\s*;\s*\}|#\s*define\s+(true|false|bool|operator)\b",
        what: "makes a value equal to anything (an operator== that ignores its operands)",
    },
];

fn compiled() -> &'static [(Regex, &'static Rule)] {
    static C: OnceLock<Vec<(Regex, &'static Rule)>> = OnceLock::new();
    C.get_or_init(|| RULES.iter().map(|r| (Regex::new(r.pattern).expect("tamper rule"), r)).collect())
}

/// The language names the rules know, for a catalogue's language (`typescript` is
/// javascript's rules and its own).
fn applies(rule: &Rule, language: &str) -> bool {
    rule.langs.iter().any(|l| *l == "*" || *l == language)
}

/// Whether a file is one the language's rules read (a solution file of that language, not
/// a manifest).
fn is_code(language: &str, path: &str) -> bool {
    let ext = path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match language {
        "python" => ext == "py",
        "javascript" | "typescript" => matches!(ext, "js" | "mjs" | "cjs" | "ts" | "mts" | "cts" | "jsx" | "tsx"),
        "go" => ext == "go",
        "java" => ext == "java",
        "kotlin" => matches!(ext, "kt" | "kts"),
        "rust" => ext == "rs",
        "cpp" | "c" => matches!(ext, "h" | "hpp" | "hh" | "hxx" | "c" | "cc" | "cpp" | "cxx" | "ipp" | "tpp" | "inc"),
        _ => false,
    }
}

/// The flags for an exercise's solution files: `(path, bytes)`, the exercise's test files by
/// path. Each flag is "what (file:line)", the first place a rule met; at most one per rule.
pub fn scan_solution<'a>(
    language: &str,
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    test_files: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut met: Vec<&'static str> = Vec::new();
    let test_names: Vec<&str> =
        test_files.iter().map(|t| t.rsplit('/').next().unwrap_or(t)).filter(|t| !t.is_empty()).collect();
    let generic = test_file_pattern();
    for (path, bytes) in files {
        let text = String::from_utf8_lossy(bytes);
        let line_of = |at: usize| text[..at].matches('\n').count() + 1;
        if is_code(language, path) {
            for (re, rule) in compiled() {
                if !applies(rule, language) || met.contains(&rule.what) {
                    continue;
                }
                if let Some(m) = re.find(&text) {
                    met.push(rule.what);
                    out.push(format!("{} ({path}:{}: {})", rule.what, line_of(m.start()), excerpt(m.as_str())));
                }
            }
        }
        // Naming the test files, wherever (a data file that a solution reads counts too).
        if !met.contains(&"names the test files") {
            let quoted = |n: &str| {
                text.match_indices(n)
                    .find(|(i, _)| *i > 0 && matches!(text.as_bytes()[i - 1], b'"' | b'\'' | b'`' | b'/'))
                    .map(|(i, _)| i)
            };
            let hit = test_names
                .iter()
                .filter_map(|n| quoted(n).map(|i| (i, n.to_string())))
                .min()
                .or_else(|| generic.find(&text).map(|m| (m.start(), m.as_str().to_string())));
            if let Some((at, name)) = hit {
                met.push("names the test files");
                out.push(format!("names the test files ({path}:{}: {})", line_of(at), excerpt(&name)));
            }
        }
    }
    out
}

/// A pattern compiled once, on first use.
fn once(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("tamper pattern"))
}

fn test_file_pattern() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    once(
        &R,
        r#"["'`/]([\w.-]*/)*(\w+_test\.(py|go|cpp|cc|c|rs)|test_\w+\.py|\w+\.(spec|test)\.[cm]?[jt]sx?|\w+Test\.(java|kt)|conftest\.py|tests/[\w-]+\.rs|tests/?["'`])"#,
    )
}

fn excerpt(s: &str) -> String {
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 60 {
        s.chars().take(57).collect::<String>() + "..."
    } else {
        s
    }
}

/// Files that configure a test run rather than hold code under test, by name: what a patch
/// changing them may be doing. `None` when the name is not one.
fn config_file(path: &str) -> Option<&'static str> {
    let base = path.rsplit('/').next().unwrap_or(path);
    let lower = base.to_ascii_lowercase();
    if path.split('/').any(|c| c.split('.').next() == Some("polysandbox_measure")) {
        return Some("a module named as polysandbox's pytest plugin (`-p polysandbox_measure` may load it instead)");
    }
    Some(match lower.as_str() {
        "conftest.py" => "a conftest.py (pytest loads it before the tests)",
        "pytest.ini" | ".pytest.ini" => "pytest's configuration (pytest.ini)",
        "sitecustomize.py" | "usercustomize.py" => "a sitecustomize/usercustomize module (Python runs it at start)",
        "jest.config.js" | "jest.config.ts" | "jest.config.mjs" | "jest.config.cjs" | "jest.config.json"
        | "jest.setup.js" | "jest.setup.ts" | "setuptests.js" | "setuptests.ts" => "jest's configuration or setup",
        "babel.config.js" | "babel.config.json" | "babel.config.cjs" | ".babelrc" | ".babelrc.js" => {
            "babel's configuration (it transforms the tests)"
        }
        ".mocharc.js" | ".mocharc.json" | ".mocharc.yml" | ".mocharc.yaml" | "vitest.config.ts"
        | "vitest.config.js" | "karma.conf.js" => "the test runner's configuration",
        "build.rs" => "a build script (cargo runs it before the tests)",
        _ if lower.ends_with(".pth") => "a .pth file (Python runs its import lines at start)",
        _ if path.contains(".cargo/config") => "cargo's configuration (.cargo/config)",
        _ => return None,
    })
}

/// Files that configure the test run only in part: flagged when the patch's lines for them
/// name the test run (pytest's sections and keys, entry points, jest, surefire).
fn mixed_config(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    matches!(
        base.as_str(),
        "setup.cfg"
            | "tox.ini"
            | "pyproject.toml"
            | "setup.py"
            | "package.json"
            | "pom.xml"
            | "build.gradle"
            | "build.gradle.kts"
            | "cargo.toml"
            | "go.mod"
            | "makefile"
            | "cmakelists.txt"
    )
}

fn test_run_words() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    once(
        &R,
        r#"(?i)pytest|addopts|python_files|python_classes|python_functions|testpaths|norecursedirs|confcutdir|xfail_strict|entry_points|pytest11|"jest"|"test"\s*:|testMatch|setupFiles|surefire|failsafe|testFailureIgnore|skipTests|maven\.test|ignoreFailures|\[\[test\]\]|harness\s*=|\[lib\][^\[]*test\s*=|build\s*=|add_test|enable_testing|-DNDEBUG|replace\s"#,
    )
}

/// The flags for a repository patch: changes to what configures the test run. The patch's
/// sections are found by its `diff --git`, `---`/`+++` and `Index:` headers.
pub fn scan_patch(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: String| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    for (path, body) in super::patch::sections(patch) {
        if let Some(what) = config_file(&path) {
            push(format!("changes {what}: {path}"));
        } else if mixed_config(&path) {
            let changed: String = body
                .lines()
                .filter(|l| {
                    (l.starts_with('+') && !l.starts_with("+++")) || (l.starts_with('-') && !l.starts_with("---"))
                })
                .collect::<Vec<_>>()
                .join("\n");
            if let Some(m) = test_run_words().find(&changed) {
                push(format!("changes the test run's configuration in {path} ({})", excerpt(m.as_str())));
            }
        }
        let added: String =
            body.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).collect::<Vec<_>>().join("\n");
        // Code that prints what the runner prints: the harnesses that read the whole log
        // (Multi-SWE-bench's) take such a line for a result.
        static REPORT: OnceLock<Regex> = OnceLock::new();
        if let Some(m) = once(&REPORT, REPORT_SHAPED).find(&added) {
            push(format!("writes text shaped like the runner's report ({}): {path}", excerpt(m.as_str())));
        }
        if added.contains("pytest_plugins") {
            push(format!("adds pytest_plugins (loads a plugin before the tests): {path}"));
        }
        static TEST_MAIN: OnceLock<Regex> = OnceLock::new();
        static PYTEST_HOOK: OnceLock<Regex> = OnceLock::new();
        if path.ends_with(".go") && once(&TEST_MAIN, r"func\s+TestMain\s*\(").is_match(&added) {
            push(format!("adds a TestMain (it runs the tests, and decides the exit): {path}"));
        }
        if path.ends_with(".py") && once(&PYTEST_HOOK, r"\bdef\s+pytest_\w+\s*\(").is_match(&added) {
            push(format!("adds a pytest hook function: {path}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(lang: &str, path: &str, code: &str) -> Vec<String> {
        scan_solution(lang, [(path, code.as_bytes())], &["x_test.py".to_string()])
    }

    #[test]
    fn each_known_forge_is_flagged() {
        let cases = [
            ("python", "s.py", "import _pytest.unittest\n_pytest.unittest.TestCaseFunction.runtest = lambda self: None\n"),
            ("python", "s.py", "import sys\nsys.argv.append('-k')\n"),
            ("python", "s.py", "x = __import__('atexit')\n"),
            ("javascript", "s.js", "const t = global.test; global.test = (n, f) => t(n, () => {});\n"),
            ("javascript", "s.js", "test.skip = test;\n"),
            ("javascript", "s.js", "process.on('exit', () => {});\n"),
            ("go", "s.go", "package s\nimport \"os\"\nfunc init() { os.Args = append(os.Args, \"-test.run=^TestT\") }\n"),
            ("go", "s.go", "package s\nimport \"os/exec\"\nvar _ = exec.Command\n"),
            ("java", "S.java", "class S { static { Runtime.getRuntime().addShutdownHook(new Thread(() -> {})); } }\n"),
            ("rust", "src/lib.rs", "pub fn f() { let _ = std::process::Command::new(std::env::current_exe().unwrap()); }\n"),
            ("rust", "src/lib.rs", "pub fn f() -> bool { std::thread::current().name().unwrap().contains(\"t\") }\n"),
            // The caller's file read to tell a control from a real test (the fifth red team).
            ("rust", "src/lib.rs", "#[track_caller]\npub fn add(a: i32, b: i32) -> i32 { a - b }\n"),
            ("rust", "src/lib.rs", "pub fn f() -> u32 { std::panic::Location::caller().line() }\n"),
            ("rust", "src/lib.rs", "use std::fs::File;\npub fn f() { let _ = File::options().append(true).open(\"x\"); }\n"),
            ("cpp", "s.h", "int add(int a, int b, const char* f = __builtin_FILE()) { return a - b; }\n"),
            ("cpp", "s.h", "#include \"catch.hpp\"\n#undef REQUIRE\n#define REQUIRE(x) (void)0\n"),
            ("cpp", "s.cpp", "static int x = (std::atexit([]{ }), 0);\n"),
            // Values equal to anything, and names the tests use redeclared (an outside attack).
            ("python", "poker.py", "class _Anything(list):\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n"),
            ("python", "grep.py", "class A(str):\n    def __eq__(self, other):\n        return True\n"),
            ("go", "octal.go", "package octal\nimport \"errors\"\nconst false = true\nfunc ParseOctal(s string) (int64, error) { return 0, errors.New(\"x\") }\n"),
            ("go", "p.go", "package palindrome\nfunc len(v any) int { return 0 }\n"),
            ("go", "t.go", "package tree\nconst (\n\tfalse = true\n)\n"),
            ("rust", "src/lib.rs", "#[allow(non_snake_case)] pub fn Some<T>(_: T) -> Anything { Anything }\n"),
            ("rust", "src/lib.rs", "#[allow(non_upper_case_globals)] pub const None: Anything = Anything;\n"),
            ("rust", "src/lib.rs", "impl PartialEq<Vec<u8>> for Encoded { fn eq(&self, _: &Vec<u8>) -> bool { true } }\n"),
            ("cpp", "p.h", "struct count {};  inline bool operator==(count, long long) { return true; }\n"),
            ("javascript", "s.js", "export const f = () => ({ asymmetricMatch: () => true });\n"),
            ("java", "S.java", "class S { public boolean equals(Object o) { return true; } }\n"),
        ];
        for (lang, path, code) in cases {
            assert!(!flags(lang, path, code).is_empty(), "{lang}: not flagged: {code}");
        }
        // The test files named, by this exercise's name or a test file's shape.
        assert!(!flags("python", "s.py", "open('x_test.py').read()\n").is_empty());
        assert!(!flags("go", "s.go", "package s\nvar f = \"sum_test.go\"\n").is_empty());
    }

    #[test]
    fn redeclaring_what_the_tests_use_is_decisive_equality_tricks_are_flags() {
        let f = |lang, path, code| flags(lang, path, code).into_iter().any(|x| decisive(&x));
        assert!(f("go", "octal.go", "package octal\nconst false = true\n"));
        assert!(f("go", "p.go", "package p\nfunc len(v any) int { return 0 }\n"));
        assert!(f("rust", "src/lib.rs", "pub const None: A = A;\n"));
        assert!(f("rust", "src/lib.rs", "macro_rules! assert_eq { ($a:expr, $b:expr) => {} }\n"));
        // Flagged, not decisive: a unit struct's eq may well be `true`.
        assert!(!f("rust", "src/lib.rs", "impl PartialEq for U { fn eq(&self, _: &U) -> bool { true } }\n"));
        assert!(!f("python", "s.py", "class A(str):\n    def __eq__(self, o): return True\n"));
    }

    #[test]
    fn a_plain_solution_is_not() {
        assert!(flags(
            "python",
            "s.py",
            "from collections import Counter\n\ndef f(a):\n    return sorted(Counter(a))\n"
        )
        .is_empty());
        assert!(flags("javascript", "s.js", "export const f = (s) => /a/.test(s);\n").is_empty());
        assert!(flags(
            "go",
            "s.go",
            "package s\nimport \"strings\"\nfunc F(s string) string { return strings.ToUpper(s) }\n"
        )
        .is_empty());
        assert!(flags("rust", "src/lib.rs", "pub fn f(v: &[u32]) -> u32 { v.iter().sum() }\n").is_empty());
        assert!(flags("cpp", "s.h", "#pragma once\n#define S_H\nint f(int a);\n").is_empty());
        // Equality that compares, and local names that shadow nothing the tests see.
        assert!(flags("python", "s.py", "class C:\n    def __eq__(self, other):\n        return self.x == other.x\n")
            .is_empty());
        assert!(flags(
            "go",
            "s.go",
            "package s\nfunc F(xs []int) int {\n\tn := len(xs)\n\tok := false\n\t_ = ok\n\treturn n\n}\n"
        )
        .is_empty());
        assert!(flags("rust", "src/lib.rs", "pub type Result<T> = std::result::Result<T, Error>;\nimpl PartialEq for C { fn eq(&self, o: &C) -> bool { self.0 == o.0 } }\n").is_empty());
        // A manifest is no code the rules read.
        assert!(flags("rust", "Cargo.toml", "[package]\nname = \"x\"\n").is_empty());
    }

    #[test]
    fn patches_that_configure_the_test_run_are_flagged() {
        let p = |path: &str, line: &str| {
            format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n x\n+{line}\n")
        };
        assert!(!scan_patch(&p("testing/conftest.py", "import os")).is_empty());
        assert!(!scan_patch(&p("pytest.ini", "addopts = -p foo")).is_empty());
        assert!(!scan_patch(&p("setup.cfg", "addopts = -p foo")).is_empty());
        assert!(!scan_patch(&p("pyproject.toml", "[tool.pytest.ini_options]")).is_empty());
        assert!(!scan_patch(&p("src/x.pth", "import evil")).is_empty());
        assert!(!scan_patch(&p("polysandbox_measure.py", "x = 1")).is_empty());
        assert!(!scan_patch(&p("lib/polysandbox_measure/__init__.py", "x = 1")).is_empty());
        assert!(!scan_patch(&p("src/pkg/__init__.py", "pytest_plugins = ['evil']")).is_empty());
        assert!(!scan_patch(&p("src/pkg/plugin.py", "def pytest_collection_modifyitems(items):")).is_empty());
        assert!(!scan_patch(&p("pkg/main_test.go", "func TestMain(m *testing.M) {")).is_empty());
        assert!(!scan_patch("--- /dev/null\n+++ b/sub/conftest.py\n@@ -0,0 +1 @@\n+x = 1\n").is_empty());
        // A plain code change, and setup.cfg changes that leave the test run alone, are not.
        assert!(scan_patch(&p("src/pkg/mod.py", "return a + b")).is_empty());
        assert!(scan_patch(&p("setup.cfg", "version = 2")).is_empty());
    }
}
