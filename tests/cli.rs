//! The command line as a user of clap-based tools and of the SWE-bench harness meets it: usage
//! errors with clap's whole message and exit 2 (125 for `run`), help with no arguments, and
//! bad input refused before anything runs. No sandbox starts here.
mod common;

use common::*;
use std::process::Output;

fn polysandbox(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_polysandbox"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// Usage errors keep what clap says (which argument is missing, the possible values, the
/// suggestion for a typo), on one line, and exit 2, the status of a usage error; no
/// arguments at all print the help.
#[test]
fn usage_errors_say_what_clap_says_and_exit_2() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["eval"], &["required arguments were not provided", "<DATASET"]),
        (&["eval", "x", "--format", "xml"], &["invalid value 'xml'", "[possible values: table, json, junit]"]),
        (&["evl"], &["unrecognized subcommand 'evl'", "tip: ", "'eval'"]),
        (&["eval", "x", "--jbos", "2"], &["unexpected argument '--jbos'", "similar argument exists: '--jobs'"]),
        (&["calibrate", "x", "--runs", "0"], &["invalid value '0' for '--runs"]),
        (&["images", "--no-such-option"], &["unexpected argument '--no-such-option'"]),
    ];
    for (args, want) in cases {
        let o = polysandbox(args);
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{args:?}: {err}");
        assert!(err.starts_with("polysandbox: error: "), "{args:?}: {err}");
        for w in *want {
            assert!(err.contains(w), "{args:?}: no {w:?} in: {err}");
        }
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
    // No arguments: the help, on stderr, exit 2 (a usage error still).
    let o = polysandbox(&[]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("Usage: polysandbox") && err.contains("Commands:") && err.contains("eval"), "{err}");
    assert!(!err.contains("error"), "{err}");
    // Asked for: stdout, exit 0.
    for args in [&["--help"][..], &["eval", "--help"], &["--version"]] {
        let o = polysandbox(args);
        assert_eq!(code(&o), 0, "{args:?}");
        assert!(!stdout(&o).is_empty() && stderr(&o).is_empty(), "{args:?}");
    }
}

/// `run`'s exit status is its command's own: a line it cannot parse is 125, as podman's, with
/// clap's message on one line, and the record `--stats-json` names is still written (its
/// `error` is that line).
#[test]
fn run_usage_errors_are_125_and_still_leave_the_record() {
    let dir = tempdir("run-usage");
    let rec = dir.join("r.json");
    let flag = format!("--stats-json={}", rec.display());
    let o = polysandbox(&["run", &flag, "--network", "bridge", "--rootfs", "/", "--", "true"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 125, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let first = err.lines().next().unwrap();
    assert!(first.starts_with("polysandbox: error: invalid value 'bridge'"), "{err}");
    assert!(err.contains("[possible values: none, host]"), "{err}");
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    assert_eq!((s["status"].as_str(), s["error_kind"].as_str()), (Some("error"), Some("usage")), "{s}");
    assert_eq!(s["error"], first.trim_start_matches("polysandbox: error: "), "{s}");
    let o = polysandbox(&["run", "--no-such-option", "--rootfs", "/", "--", "true"]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    // After polysandbox's own --root too; other subcommands' are 2 there as well.
    let o = polysandbox(&["--root", "/nonexistent/store", "run", "--no-such-option", "--rootfs", "/", "--", "true"]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    let o = polysandbox(&["--root=/nonexistent/store", "images", "--no-such-option"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A negative duration is an invalid duration (and a negative size an invalid size),
/// whichever subcommand takes it, never an unknown option.
#[test]
fn a_negative_duration_is_an_invalid_duration_everywhere() {
    let cases: &[(&[&str], &str)] = &[
        (&["eval", "x", "--timeout", "-1"], "invalid duration '-1'"),
        (&["eval", "x", "--test-timeout", "-5s"], "invalid duration '-5s'"),
        (&["eval", "x", "--memory", "-1G"], "invalid size '-1G'"),
        (&["calibrate", "x", "--timeout", "-1"], "invalid duration '-1'"),
        (&["test", "--runner", "go", "--timeout", "-1"], "invalid duration '-1'"),
        (&["run", "--timeout", "-1", "--rootfs", "/", "--", "true"], "invalid duration '-1'"),
    ];
    for (args, want) in cases {
        let o = polysandbox(args);
        let err = stderr(&o);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        assert_ne!(code(&o), 0, "{args:?}");
    }
}

/// A fresh directory of this test process's own (no sandbox fixtures are needed here).
fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("polysandbox-cli-{}-{}-{name}", std::process::id(), unique()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The binary where every user can run it, in a directory every user can write (the test
/// user's records and output go there too).
fn shared_binary() -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let d = tempdir("shared");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let bin = d.join("polysandbox");
    std::fs::copy(env!("CARGO_BIN_EXE_polysandbox"), &bin).unwrap();
    (d, bin)
}

/// `argv` as the test user (when the tests run as root) or as ourselves.
fn as_user(user: bool) -> std::process::Command {
    if user && is_root() {
        let id = |flag: &str| {
            let o = std::process::Command::new("id").args([flag, TEST_USER]).output().unwrap();
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        };
        let mut c = std::process::Command::new("setpriv");
        c.arg(format!("--reuid={}", id("-u")))
            .arg(format!("--regid={}", id("-g")))
            .args(["--clear-groups", "--inh-caps=-all"])
            .env("HOME", "/tmp");
        c
    } else {
        let mut c = std::process::Command::new("env");
        c.arg("--");
        c
    }
}

/// A host that forbids user namespaces is said on one line, naming the setting and its fix,
/// before any work: nothing read, nothing written, and `run` still leaves its record. The
/// setting is user.max_user_namespaces=0, set in a fresh user namespace of the test's own (what
/// a process there sees; the host's own setting is never changed), entered as root and as the
/// unprivileged user, as that namespace's root and as a user mapped to itself.
#[test]
fn forbidden_user_namespaces_are_said_before_any_work() {
    let host = std::fs::read_to_string("/proc/sys/user/max_user_namespaces").unwrap();
    let probe = std::process::Command::new("unshare").args(["-U", "-r", "true"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return skip("forbidden_user_namespaces_are_said_before_any_work", "unshare -U -r fails here");
    }
    let (dir, bin) = shared_binary();
    let users = if is_root() { vec![false, true] } else { vec![true] };
    for user in users {
        for map in [&["-r"][..], &["--map-current-user", "--keep-caps"]] {
            let what = format!("user {user}, unshare {map:?}");
            let out = dir.join(format!("out-{}", unique()));
            let rec = dir.join(format!("rec-{}.json", unique()));
            let forbid = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"";
            let o = as_user(user)
                .args(["unshare", "-U"])
                .args(map)
                .args(["sh", "-c", forbid, "sh"])
                .arg(&bin)
                .args(["eval", "/nonexistent/dataset", "-p", "gold", "-o"])
                .arg(&out)
                .output()
                .unwrap();
            let err = stderr(&o);
            assert_eq!(code(&o), 125, "{what}: {err}");
            assert_eq!(err.lines().count(), 1, "{what}: {err}");
            assert!(
                err.contains("user.max_user_namespaces=0") && err.contains("sysctl -w user.max_user_namespaces="),
                "{what}: {err}"
            );
            assert!(!err.contains("nonexistent"), "{what}: the dataset was looked at first: {err}");
            assert!(!out.exists(), "{what}: wrote {}", out.display());
            let o = as_user(user)
                .args(["unshare", "-U"])
                .args(map)
                .args(["sh", "-c", forbid, "sh"])
                .arg(&bin)
                .arg("run")
                .arg(format!("--stats-json={}", rec.display()))
                .args(["--rootfs", "/", "--", "true"])
                .output()
                .unwrap();
            assert_eq!(code(&o), 125, "{what}: {}", stderr(&o));
            let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
            assert_eq!((s["status"].as_str(), s["error_kind"].as_str()), (Some("error"), Some("host")), "{what}: {s}");
            assert!(s["error"].as_str().unwrap().contains("user.max_user_namespaces=0"), "{what}: {s}");
        }
    }
    assert_eq!(std::fs::read_to_string("/proc/sys/user/max_user_namespaces").unwrap(), host, "the host's setting");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rootless with no cgroup delegated, eval says so once, with the fix (systemd's delegation),
/// and goes on: limits fall back. As root, or with a delegated subtree, it says nothing.
#[test]
fn a_missing_cgroup_delegation_is_a_note_that_names_the_fix() {
    let (dir, bin) = shared_binary();
    let data = dir.join("snippets.jsonl");
    let snippet = |id: &str| {
        serde_json::json!({"_id": id, "language": "python", "code": "def one():\n    return 1", "test": "assert one() == 1"})
            .to_string()
    };
    std::fs::write(&data, format!("{}\n{}\n", snippet("s1"), snippet("s2"))).unwrap();
    // s2's prediction alone: s1, selected, has none, and nothing runs.
    let preds = dir.join("preds.jsonl");
    std::fs::write(&preds, "{\"task_id\": \"s2\", \"generation\": \"\"}\n").unwrap();
    let users = if is_root() { vec![false, true] } else { vec![true] };
    for user in users {
        let out = dir.join(format!("out-{}", unique()));
        let mut c = as_user(user);
        c.arg(&bin).arg("eval").arg(&data).arg("-p").arg(&preds).args(["-t", "s1", "--no-calibration", "-o"]).arg(&out);
        // Where the test user has a delegated subtree (POLYSANDBOX_TEST_USER_CGROUP), it runs
        // in a leaf of it, as Mode::command() starts it.
        let delegated = user && user_cgroup().is_some();
        if delegated {
            c = Mode::User.command();
            c.arg("eval").arg(&data).arg("-p").arg(&preds).args(["-t", "s1", "--no-calibration", "-o"]).arg(&out);
        }
        let o = c.output().unwrap();
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "user {user}: {err}");
        let noted = err.contains("note: no cgroup for the limits")
            && err.contains("systemd-run --user --scope -p Delegate=yes")
            && err.contains("docs/sandbox.md");
        let rootless = user || !is_root();
        assert_eq!(noted, rootless && !delegated, "user {user}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A SWE-bench `run_evaluation` command line, its flags in the harness's spellings, runs: the
/// dataset by its Hugging Face name from the local cache (`-d`, `-s`), `-i` for ids, `-id` for
/// the run id, `--predictions_path`, `--max_workers`, `--timeout 1800`, `--report_dir`, and
/// the options with no counterpart here, each said on one line. Nothing runs (the one
/// instance selected has no prediction).
#[test]
fn a_swebench_harness_command_line_runs() {
    let dir = tempdir("harness-line");
    // The hub cache as `huggingface-cli download --repo-type dataset acme/snips` leaves it:
    // the snapshot's file a symlink to its blob (records read by their content).
    let hf = dir.join("hf");
    let entry = hf.join("hub/datasets--acme--snips");
    std::fs::create_dir_all(entry.join("blobs")).unwrap();
    std::fs::create_dir_all(entry.join("snapshots/0123abc/data")).unwrap();
    std::fs::create_dir_all(entry.join("refs")).unwrap();
    std::fs::write(entry.join("refs/main"), "0123abc").unwrap();
    let snippet = |id: &str| {
        serde_json::json!({"_id": id, "language": "python", "code": "def one():\n    return 1", "test": "assert one() == 1"})
            .to_string()
            + "\n"
    };
    std::fs::write(entry.join("blobs/b1"), snippet("s1") + &snippet("s2")).unwrap();
    std::os::unix::fs::symlink(
        entry.join("blobs/b1"),
        entry.join("snapshots/0123abc/data/test-00000-of-00001.parquet"),
    )
    .unwrap();
    let preds = dir.join("preds.jsonl");
    std::fs::write(&preds, "{\"instance_id\": \"s2\", \"model_name_or_path\": \"m\", \"model_patch\": \"\"}\n")
        .unwrap();
    let out = dir.join("out");
    let reports = dir.join("reports");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_polysandbox"))
            .arg("eval")
            .args(args)
            .arg("-o")
            .arg(&out)
            .env("HF_HOME", &hf)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let p = preds.to_str().unwrap();
    let harness = [
        "-d",
        "acme/snips",
        "-s",
        "test",
        "--predictions_path",
        p,
        "-i",
        "s1",
        "-id",
        "my-run",
        "--max_workers",
        "1",
        "--timeout",
        "1800",
        "--cache_level",
        "env",
        "--clean",
        "True",
        "--force_rebuild",
        "false",
        "--modal",
        "f",
        "--open_file_limit",
        "4096",
        "--env_image_tag",
        "latest",
        "--instance_image_tag",
        "latest",
        "--report_dir",
        reports.to_str().unwrap(),
        "--rewrite_reports",
        "false",
        "--no-calibration",
    ];
    let o = run(&harness);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "not resolved: {err}");
    assert!(err.contains("dataset acme/snips (split test): ") && err.contains("test-00000-of-00001.parquet"), "{err}");
    for opt in [
        "--cache_level env",
        "--clean true",
        "--force_rebuild false",
        "--modal false",
        "--open_file_limit 4096",
        "--env_image_tag latest",
    ] {
        assert_eq!(
            err.lines().filter(|l| l.starts_with("polysandbox: note: ") && l.contains(opt)).count(),
            1,
            "{opt}: {err}"
        );
    }
    let results = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert_eq!(results.lines().count(), 1, "{results}");
    assert!(
        results.contains("\"instance_id\":\"s1\"") && results.contains("\"verdict\":\"no_prediction\""),
        "{results}"
    );
    // SWE-bench's -t is its timeout: a number there is said to be one, never taken as an id
    // that matches nothing; its -n is the namespace, said too.
    let _ = std::fs::remove_dir_all(&out);
    let o = run(&["-d", "acme/snips", "-p", p, "-t", "1800"]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("-t 1800: no such instance") && stderr(&o).contains("--timeout 1800"),
        "{}",
        stderr(&o)
    );
    let o = run(&["-d", "acme/snips", "-p", p, "-n", "swebench"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("SWE-bench's -n/--namespace is --namespace swebench"), "{}", stderr(&o));
    // A dataset not in the cache: where it looked, and how to get it, on one line.
    let o = run(&["-d", "princeton-nlp/SWE-bench_Verified", "-p", "gold"]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("not in the local Hugging Face cache") && e.contains(&format!("{}/hub", hf.display())), "{e}");
    assert!(e.contains("huggingface-cli download --repo-type dataset princeton-nlp/SWE-bench_Verified"), "{e}");
    // DATASET and -d together, or neither: a usage error.
    let o = run(&["x.jsonl", "-d", "acme/snips"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
