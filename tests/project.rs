//! `polysandbox test`: a project's own test suite in a sandbox with one of eval's runners, each
//! test measured (the resource fixtures' usage exercises, their reference solution in place, as a
//! CI user's project). As root and as the test user.
mod common;

use common::eval::*;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A copy of a resource fixture as a project of `m`'s user: the reference solution in place.
fn project(m: Mode, lang: &str) -> PathBuf {
    let src = data().join("resources").join(lang).join("exercises/practice/usage");
    let dir = m.owned_dir(&format!("project-{lang}")).join("usage");
    assert!(Command::new("cp").arg("-a").arg(&src).arg(&dir).status().unwrap().success());
    let cfg: Value = serde_json::from_slice(&std::fs::read(dir.join(".meta/config.json")).unwrap()).unwrap();
    let (ex, sol) = (cfg["files"]["example"].as_array().unwrap(), cfg["files"]["solution"].as_array().unwrap());
    for (e, s) in ex.iter().zip(sol) {
        std::fs::copy(dir.join(e.as_str().unwrap()), dir.join(s.as_str().unwrap())).unwrap();
    }
    Command::new("chmod").args(["-R", "a+rwX"]).arg(&dir).status().unwrap();
    dir
}

/// `polysandbox test ARGS` as `m`'s user, with its store, and TMPDIR a fresh directory of its
/// own: what the command leaves there is seen.
fn test_cmd(m: Mode, args: &[&str], tmp: &Path) -> Output {
    let mut c = m.command();
    c.arg("test").args(args).env("TMPDIR", tmp).stdin(Stdio::null());
    if m == Mode::User && is_root() {
        c.args(["--root", USER_STORE]);
    }
    c.output().unwrap()
}

/// Every file's path and content under `dir`: what the project was before and after.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let o = Command::new("find").arg(dir).args(["-type", "f"]).output().unwrap();
    let mut v: Vec<(String, Vec<u8>)> =
        stdout(&o).lines().map(|p| (p.to_string(), std::fs::read(p).unwrap_or_default())).collect();
    v.sort();
    v
}

fn langs_here(m: Mode) -> Vec<&'static str> {
    // One process per test (go, rust) and in-runner (python); the user's store has go and python.
    langs(m).into_iter().filter(|l| ["go", "python", "rust"].contains(l)).collect()
}

fn cpu(u: &Value) -> f64 {
    u["cpu_user_s"].as_f64().unwrap() + u["cpu_system_s"].as_f64().unwrap()
}

#[test]
fn a_projects_tests_are_each_measured_in_a_sandbox() {
    for m in modes() {
        for lang in langs_here(m) {
            let dir = project(m, lang);
            let before = tree(&dir);
            let tmp = m.owned_dir("tmp");
            let junit = m.owned_dir("junit").join("junit.xml");
            let p = dir.to_str().unwrap();
            let o = test_cmd(m, &["--runner", lang, p, "--junit", junit.to_str().unwrap()], &tmp);
            assert_eq!(code(&o), 0, "{m:?} {lang}: {}\n{}", stdout(&o), stderr(&o));
            let table = stdout(&o);
            let method = if lang == "python" { "in-runner" } else { "process" };
            let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("passed")).collect();
            assert_eq!(rows.len(), 4, "{m:?} {lang}: {table}");
            assert!(rows.iter().all(|r| r.contains(method)), "{m:?} {lang}: {table}");
            assert!(table.contains("4 tests: 4 passed, 0 failed, 0 skipped; 4 measured"), "{m:?} {lang}: {table}");
            assert!(
                table.to_lowercase().replace([' ', '_'], "").contains("mostcpu") && table.contains("the whole run")
            );
            let x = std::fs::read_to_string(&junit).unwrap();
            assert_eq!(x.matches("<testcase ").count(), 4, "{x}");
            // Each test's usage among the suite's properties, valid JUnit.
            assert_eq!(x.matches(": memory_peak_bytes\"").count(), 4, "{x}");
            assert_junit_valid(&junit);
            assert!(x.contains(&format!("value=\"{method}\"")), "{x}");
            // The same as JSON lines: the burner charged with its CPU, nobody else.
            let o = test_cmd(m, &["--runner", lang, p, "--json"], &tmp);
            assert_eq!(code(&o), 0, "{m:?} {lang}: {}", stderr(&o));
            let tests: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            assert_eq!(tests.len(), 4, "{m:?} {lang}: {}", stdout(&o));
            for t in &tests {
                let name = t["name"].as_str().unwrap().to_lowercase().replace([' ', '_'], "");
                let c = cpu(&t["usage"]);
                if name.contains("burnscpu") {
                    assert!((0.26..=0.34).contains(&c), "{m:?} {lang}: {t}");
                } else {
                    // The burner's work is user time (the allocator's page faults are system
                    // time, stretched on a loaded machine).
                    let user = t["usage"]["cpu_user_s"].as_f64().unwrap();
                    assert!(user < 0.15, "{m:?} {lang}: charged with the burner's work: {t}");
                }
                if name.contains("allocatesmemory") {
                    assert!(t["usage"]["memory_peak_bytes"].as_u64().unwrap() >= 200 << 20, "{m:?} {lang}: {t}");
                }
            }
            // Copy-on-write: the build and the tests' writes stayed in the sandbox; the work
            // directory is gone.
            assert!(tree(&dir) == before, "{m:?} {lang}: the project changed");
            let left = std::fs::read_dir(&tmp).unwrap().count();
            assert_eq!(left, 0, "{m:?} {lang}: left in TMPDIR");
            // Unmeasured, the same tests, no numbers.
            let o = test_cmd(m, &["--runner", lang, p, "--per-test", "off", "--json"], &tmp);
            assert_eq!(code(&o), 0, "{m:?} {lang}: {}", stderr(&o));
            let tests: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            assert!(tests.len() == 4 && tests.iter().all(|t| t.get("usage").is_none()), "{m:?} {lang}: {tests:?}");
        }
    }
}

/// A per-test limit stops only its test, the run fails; a failing test fails the run; the
/// others are reported as they went.
#[test]
fn a_stopped_or_failing_test_fails_the_run_and_only_itself() {
    for m in modes() {
        for lang in langs_here(m).into_iter().filter(|l| *l != "python") {
            let dir = project(m, lang);
            let tmp = m.owned_dir("tmp");
            let p = dir.to_str().unwrap();
            // (A memory limit: the burner's wall depends on the machine's load, its peak does not.)
            let o = test_cmd(m, &["--runner", lang, p, "--test-memory", "100M"], &tmp);
            assert_eq!(code(&o), 1, "{m:?} {lang}: {}\n{}", stdout(&o), stderr(&o));
            let table = stdout(&o);
            let stopped: Vec<&str> = table.lines().filter(|l| l.starts_with("stopped")).collect();
            let alloc = |l: &str| l.to_lowercase().replace([' ', '_'], "").contains("allocatesmemory");
            assert!(stopped.len() == 1 && alloc(stopped[0]), "{m:?} {lang}: {table}");
            assert_eq!(table.lines().filter(|l| l.starts_with("passed")).count(), 3, "{m:?} {lang}: {table}");
            assert!(table.contains("stopped at a per-test limit"), "{table}");
            // The stub solution: its tests fail, the run fails.
            let stub = data().join("resources").join(lang).join("exercises/practice/usage");
            let cfg: Value = serde_json::from_slice(&std::fs::read(stub.join(".meta/config.json")).unwrap()).unwrap();
            for s in cfg["files"]["solution"].as_array().unwrap() {
                let s = s.as_str().unwrap();
                std::fs::copy(stub.join(s), dir.join(s)).unwrap();
            }
            let o = test_cmd(m, &["--runner", lang, p], &tmp);
            assert_eq!(code(&o), 1, "{m:?} {lang}: {}\n{}", stdout(&o), stderr(&o));
            assert!(stdout(&o).lines().any(|l| l.starts_with("failed")), "{m:?} {lang}: {}", stdout(&o));
            assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "{m:?} {lang}: left in TMPDIR");
        }
    }
}

/// Bad input: one clear line, 125, nothing left behind.
#[test]
fn bad_input_to_test_is_one_clear_line() {
    for m in modes() {
        let tmp = m.owned_dir("tmp");
        let dir = project(m, "go");
        let p = dir.to_str().unwrap();
        let cases: Vec<(Vec<&str>, &str)> = vec![
            (vec!["--runner", "go", "/no/such/project"], "not a directory"),
            (vec!["--runner", "cobol", p], "no such runner"),
            (vec!["--runner", "go", p, "--name", "../x"], "--name"),
            (vec!["--runner", "go", p, "--per-test", "off", "--test-timeout", "1s"], "need --per-test on"),
            (vec!["--runner", "go", p, "--image", "localhost/no/such:image", "--pull", "never"], "no/such"),
        ];
        for (args, want) in cases {
            let o = test_cmd(m, &args, &tmp);
            let err = stderr(&o);
            assert_eq!(code(&o), 125, "{m:?} {args:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{m:?} {args:?}: {err}");
            assert!(err.contains(want), "{m:?} {args:?}: {err}");
            assert!(stdout(&o).is_empty(), "{m:?} {args:?}: {}", stdout(&o));
        }
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "{m:?}: left in TMPDIR");
    }
}

/// `each-test` ends whatever the listing left before it draws the key, however deep the chain
/// (a chain comes back to it one link a round: a bounded number of rounds once left 50 links
/// of a 150-deep chain alive to read the key from the channel; the second red team), and runs
/// no test at all when they will not end.
#[test]
fn each_test_ends_what_the_listing_left_before_any_test_runs() {
    let dir = Mode::Root.owned_dir("each-chain");
    let marker = format!("psbchain{}x{}", std::process::id(), unique());
    // A libtest-shaped test binary: its listing leaves a 150-deep chain of sleepers behind.
    let chain = dir.join(format!("{marker}.sh"));
    std::fs::write(&chain, "[ \"$1\" -gt 0 ] && sh \"$0\" $(($1 - 1)) &\nsleep 60\n").unwrap();
    let bin = dir.join("fake-test");
    std::fs::write(
        &bin,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --list ]; then\n  setsid sh {} 150 </dev/null >/dev/null 2>&1 &\n  sleep 2\n  echo 'a: test'\n  exit 0\nfi\necho \"ok a\" >> \"$6\"\nexit 0\n",
            chain.display()
        ),
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&bin).status().unwrap();
    let report = dir.join("measure.jsonl");
    std::fs::write(&report, "").unwrap();
    let log = dir.join("libtest.log");
    let o = Mode::Root
        .command()
        .args(["each-test", "--runner", "libtest", "--report"])
        .arg(&report)
        .arg("--logfile")
        .arg(&log)
        .arg(&bin)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let alive = processes_with(&marker);
    for p in &alive {
        let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
    }
    assert!(alive.is_empty(), "{} links of the chain outlived each-test: {}", alive.len(), stderr(&o));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let lines = std::fs::read_to_string(&report).unwrap();
    assert!(lines.starts_with("{\"key\":"), "{lines}");
    assert_eq!(lines.lines().count(), 2, "{lines}");
}

/// What a checkout under test plants cannot turn `test`'s own outputs against the host or the
/// reader (a red team's findings): a link at the `--junit` path is replaced, never written
/// through (it pointed at a file of the caller's), and a run whose exit status says it failed
/// while its results show no failure (here a conftest that changes pytest's exit status, as
/// code that rewrote the results would leave it) is said to be untrustworthy, in the table,
/// the exit status and the junit.xml.
#[test]
fn a_checkout_cannot_turn_the_outputs_against_the_host() {
    for m in modes() {
        let dir = project(m, "python");
        let tmp = m.owned_dir("tmp-planted");
        let victim = m.owned_dir("victim").join("precious");
        std::fs::write(&victim, "precious\n").unwrap();
        let junit = dir.join("junit.xml");
        std::os::unix::fs::symlink(&victim, &junit).unwrap();
        std::fs::write(
            dir.join("conftest.py"),
            "def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 3\n",
        )
        .unwrap();
        Command::new("chmod").args(["-R", "a+rwX"]).arg(&dir).status().unwrap();
        let p = dir.to_str().unwrap();
        let o = test_cmd(m, &["--runner", "python", p, "--junit", junit.to_str().unwrap()], &tmp);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n", "{m:?}: written through the link");
        let md = std::fs::symlink_metadata(&junit).unwrap();
        assert!(md.file_type().is_file(), "{m:?}: {md:?}");
        let x = std::fs::read_to_string(&junit).unwrap();
        assert!(x.contains("<testsuites"), "{x}");
        assert_eq!(code(&o), 1, "{m:?}: {}\n{}", stdout(&o), stderr(&o));
        assert!(
            stdout(&o).contains("the tests exited 3 while their results report no failure"),
            "{m:?}: {}\n{}",
            stdout(&o),
            stderr(&o)
        );
        assert!(x.contains("polysandbox: these results cannot be trusted"), "{m:?}: {x}");
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "{m:?}: left in TMPDIR");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
            .collect();
        assert!(left.is_empty(), "{m:?}: {left:?}");
    }
}

/// A process the checkout starts before the tests and leaves running (here a build script's
/// daemon) is the sandbox init's, out of each-test's reach, and could read the key that signs
/// each test's line (a red team's forge): the run says its per-test results cannot be trusted,
/// in the table and the junit.xml; the exit status stays each-test's own.
#[test]
fn a_daemon_left_before_the_tests_is_ended() {
    for m in modes() {
        if !langs_here(m).contains(&"rust") {
            skip("a_daemon_left_before_the_tests_is_ended", &format!("{m:?}: no rust image"));
            continue;
        }
        let dir = project(m, "rust");
        let tmp = m.owned_dir("tmp-daemon");
        let p = dir.to_str().unwrap();
        // Without one: nothing said.
        let o = test_cmd(m, &["--runner", "rust", p], &tmp);
        assert!(!stderr(&o).contains("processes the setup or the build left"), "{m:?}: {}", stderr(&o));
        // A build script's daemon (reparented to init: `cargo test --no-run` runs before
        // each-test) that would read the key from the report channel and forge the results.
        // It is ended before the key exists, and the results are not flagged.
        // Two: a plain sleeper; and (the ninth red team's) one whose main thread exits alone
        // while another runs, so that /proc shows its leader as a zombie.
        let sleeper = "fn main() { let _ = std::process::Command::new(\"sh\").args([\"-c\", \"sleep 300 </dev/null >/dev/null 2>&1 &\"]).status(); }\n";
        let zombie_leader = r#"use std::process::{Command, Stdio};
extern "C" { fn syscall(n: i64, ...) -> i64; }
#[cfg(target_arch = "aarch64")]
const SYS_EXIT: i64 = 93;
#[cfg(not(target_arch = "aarch64"))]
const SYS_EXIT: i64 = 60;
fn main() {
    if std::env::var_os("PSB_DAEMON").is_some() {
        std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(300)));
        std::thread::sleep(std::time::Duration::from_millis(100));
        // The main thread alone (exit, not exit_group): no unwinding, the other runs on.
        unsafe { syscall(SYS_EXIT, 0i64) };
        loop { std::thread::sleep(std::time::Duration::from_secs(1)) }
    }
    let _ = Command::new(std::env::current_exe().unwrap()).env("PSB_DAEMON", "1")
        .stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
}
"#;
        for (k, build) in [sleeper, zombie_leader].into_iter().enumerate() {
            std::fs::write(dir.join("build.rs"), build).unwrap();
            Command::new("chmod").args(["-R", "a+rwX"]).arg(&dir).status().unwrap();
            let junit = m.owned_dir(&format!("junit-daemon-{k}")).join("junit.xml");
            let o = test_cmd(m, &["--runner", "rust", p, "--junit", junit.to_str().unwrap()], &tmp);
            let (out, err) = (stdout(&o), stderr(&o));
            assert!(err.contains("ended 1 processes the setup or the build left running"), "{m:?} {k}: {out}\n{err}");
            assert!(!out.contains("cannot be trusted"), "{m:?} {k}: the daemon is gone before the key: {out}\n{err}");
            assert_eq!(code(&o), 0, "{m:?} {k}: the tests pass, and the exit status says so: {out}\n{err}");
            let x = std::fs::read_to_string(&junit).unwrap();
            assert!(!x.contains("cannot be trusted"), "{m:?} {k}: {x}");
            assert!(x.contains("<testcase"), "{m:?} {k}: {x}");
        }
    }
}
