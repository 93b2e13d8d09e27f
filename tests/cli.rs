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
/// suggestion for a typo, the usage line) and exit 2, the status of a usage error; no
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
        assert!(err.contains("For more information, try '--help'."), "{args:?}: {err}");
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
/// clap's whole message, and the record `--stats-json` names is still written (its `error` is
/// the message's first line).
#[test]
fn run_usage_errors_are_125_and_still_leave_the_record() {
    let dir = tempdir("run-usage");
    let rec = dir.join("r.json");
    let flag = format!("--stats-json={}", rec.display());
    let o = polysandbox(&["run", &flag, "--network", "bridge", "--rootfs", "/", "--", "true"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 125, "{err}");
    let first = err.lines().next().unwrap();
    assert!(first.starts_with("polysandbox: error: invalid value 'bridge'"), "{err}");
    assert!(err.contains("[possible values: none, host]"), "{err}");
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    assert_eq!((s["status"].as_str(), s["error_kind"].as_str()), (Some("error"), Some("usage")), "{s}");
    assert_eq!(s["error"], first.trim_start_matches("polysandbox: error: "), "{s}");
    let o = polysandbox(&["run", "--no-such-option", "--rootfs", "/", "--", "true"]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
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
