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

/// The subcommands `polysandbox --help` lists (but `help`), read from the help itself.
fn listed_subcommands() -> Vec<String> {
    let help = stdout(&polysandbox(&["--help"]));
    let listed = help.split("Commands:\n").nth(1).expect("a Commands: section").split("\n\n").next().unwrap();
    let names: Vec<String> = listed
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(String::from)
        .collect();
    assert!(names.len() > 10 && names.iter().any(|n| n == "run") && names.iter().any(|n| n == "man"), "{help}");
    names
}

/// `completions bash` is a bash script bash accepts, whose completion function completes a
/// subcommand's name and a subcommand's option; the other shells get theirs; a shell clap does
/// not know is a usage error naming the ones it knows.
#[test]
fn bash_completion_parses_and_completes_subcommands() {
    let o = polysandbox(&["completions", "bash"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let dir = tempdir("completions");
    let script = dir.join("polysandbox.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let check = std::process::Command::new("bash").arg("-n").arg(&script).output().unwrap();
    assert!(check.status.success(), "bash -n: {}", stderr(&check));
    // As bash calls it on TAB: COMP_WORDS/COMP_CWORD set, then FUNCTION COMMAND WORD PREVIOUS.
    let complete = |words: &[&str]| -> Vec<String> {
        let line = words.join(" ");
        let cword = words.len() - 1;
        let words: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let prog = format!(
            "source '{}' || exit 9
             complete -p polysandbox >/dev/null || exit 8
             COMP_WORDS=({}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}
             _polysandbox polysandbox \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.join(" ")
        );
        let o = std::process::Command::new("bash").arg("-c").arg(&prog).output().unwrap();
        assert_eq!(code(&o), 0, "{prog}: {}", stderr(&o));
        stdout(&o).lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect()
    };
    assert_eq!(complete(&["polysandbox", "ev"]), ["eval"]);
    // Hidden subcommands are not offered.
    assert_eq!(complete(&["polysandbox", "e"]), ["eval"]);
    assert_eq!(complete(&["polysandbox", "compl"]), ["completions"]);
    assert!(complete(&["polysandbox", "run", "--mem"]).contains(&"--memory".to_string()));
    assert!(complete(&["polysandbox", "completions", "z"]).contains(&"zsh".to_string()));
    for (shell, want) in [("zsh", "#compdef polysandbox"), ("fish", "complete -c polysandbox")] {
        let o = polysandbox(&["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        assert!(stdout(&o).contains(want) && stdout(&o).contains("eval"), "{shell}");
    }
    let o = polysandbox(&["completions", "tcsh"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("[possible values: bash, elvish, fish, powershell, zsh]"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `man -o DIR` writes each page as a new file put in place: a link another user planted at
/// a page's name in DIR is replaced, never written through (issue 37).
#[test]
fn man_pages_are_not_written_through_a_planted_link() {
    let dir = tempdir("man-link");
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let pages = dir.join("pages");
    std::fs::create_dir_all(&pages).unwrap();
    for n in ["polysandbox.1", "polysandbox-run.1"] {
        std::os::unix::fs::symlink(&victim, pages.join(n)).unwrap();
    }
    let o = polysandbox(&["man", "-o", pages.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep", "a page written through a link");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for n in ["polysandbox.1", "polysandbox-run.1"] {
        assert!(std::fs::symlink_metadata(pages.join(n)).unwrap().is_file(), "{n}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `man -o DIR` writes polysandbox.1 and a page for every subcommand `--help` lists, each of
/// which groff renders without a warning, with its name, synopsis and options; `man SUBCOMMAND`
/// prints the same page on stdout.
#[test]
fn man_pages_render_for_every_subcommand() {
    let dir = tempdir("man");
    let o = polysandbox(&["man", "-o", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let subs = listed_subcommands();
    let mut want: Vec<String> = subs.iter().map(|s| format!("polysandbox-{s}.1")).collect();
    // A subcommand's own subcommands (`system df`) get pages too, as git's do.
    for s in &subs {
        let help = stdout(&polysandbox(&[s, "--help"]));
        if let Some(listed) = help.split("Commands:\n").nth(1) {
            for l in listed.split("\n\n").next().unwrap().lines() {
                if let Some(n) =
                    l.strip_prefix("  ").filter(|l| !l.starts_with(' ')).and_then(|l| l.split_whitespace().next())
                {
                    if n != "help" {
                        want.push(format!("polysandbox-{s}-{n}.1"));
                    }
                }
            }
        }
    }
    want.push("polysandbox.1".into());
    want.sort();
    let mut written: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    written.sort();
    assert_eq!(written, want, "hidden subcommands (each-test) and `help` have none");
    assert_eq!(stdout(&o).lines().count(), want.len(), "{}", stdout(&o));
    // The same page on stdout; a subcommand that does not exist, a usage error.
    let run = polysandbox(&["man", "run"]);
    assert_eq!(code(&run), 0);
    assert_eq!(run.stdout, std::fs::read(dir.join("polysandbox-run.1")).unwrap());
    let o = polysandbox(&["man", "no-such"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no subcommand 'no-such'") && stderr(&o).contains("eval"), "{}", stderr(&o));

    if std::process::Command::new("groff").arg("--version").output().is_err() {
        common::skip("man_pages_render_for_every_subcommand", "no groff here (Debian's groff-base)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let render = |page: &str| -> String {
        let o = std::process::Command::new("groff")
            // No hyphenation, long lines: the words as written, on one line each.
            .args(["-man", "-Tutf8", "-ww", "-rHY=0", "-rLL=500n"])
            .arg(dir.join(page))
            .env("GROFF_NO_SGR", "1")
            .output()
            .unwrap();
        assert!(o.status.success() && o.stderr.is_empty(), "{page}: {}", stderr(&o));
        // Bold and underline are overstrikes without SGR: the letters alone, spaces single.
        let mut plain = String::new();
        for c in stdout(&o).chars() {
            if c == '\u{8}' {
                plain.pop();
            } else {
                plain.push(c);
            }
        }
        plain.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let main = render("polysandbox.1");
    for w in ["NAME", "polysandbox - Rootless", "SYNOPSIS", "--root", "polysandbox-eval(1)", "polysandbox-man(1)"] {
        assert!(main.contains(w), "no {w:?} in polysandbox.1:\n{main}");
    }
    assert!(!main.contains("each-test"), "{main}");
    for sub in &subs {
        let page = render(&format!("polysandbox-{sub}.1"));
        assert!(page.contains(&format!("polysandbox-{sub} - ")), "{sub}:\n{page}");
        assert!(page.contains(&format!("polysandbox {sub}")), "{sub}: no synopsis:\n{page}");
    }
    let run = render("polysandbox-run.1");
    assert!(run.contains("--memory") && run.contains("--stats-json"), "{run}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a predictions file or a shard chose reaches the terminal with its controls shown as
/// `?`: an instance id with an OSC 52 (clipboard) sequence and a C1 CSI in eval's refusal.
#[test]
fn escape_sequences_from_input_do_not_reach_the_terminal() {
    let d = tempdir("escapes");
    let preds = d.join("p.jsonl");
    std::fs::write(
        &preds,
        "{\"instance_id\":\"python/sum-two\",\"model_patch\":\"\"}\n\
         {\"instance_id\":\"zz\\u001b]52;c;cHduZWQ=\\u0007\\u009b2J\",\"model_patch\":\"x\"}\n",
    )
    .unwrap();
    let data = format!("{}/tests/fixtures/eval/polyglot", env!("CARGO_MANIFEST_DIR"));
    let out = d.join("out");
    let o = polysandbox(&["eval", &data, "-p", preds.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let err = stderr(&o);
    assert_ne!(code(&o), 0, "{err}");
    assert!(err.contains("zz?]52;c;cHduZWQ=??2J"), "{err:?}");
    assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
    let _ = std::fs::remove_dir_all(&d);
}
