//! An instance's inputs, made on the host from trusted material only: the dataset's exercise or
//! repository (cloned at its base commit by a git that reads no configuration of the
//! repository's and runs no hook), and, for an exercise, the prediction's solution files as
//! bytes. Everything a prediction shapes happens in a sandbox:
//!
//! - an exercise's patch is applied in a sandbox of its own ([`super::driver::exercise_prepare`]),
//!   which hands back only the solution files, as a tar on its stdout; the host writes those
//!   bytes into its own fresh copy of the exercise, so the test files, and every file a runner
//!   loads besides the solution, are the dataset's by construction;
//! - a repository's patch is applied in the sandbox that runs its tests
//!   ([`super::driver::repo`]), on a copy-on-write layer over the host's checkout;
//! - the trees are bound as overlay volumes (`-v HOST:CTR:O`): the sandbox writes only its own
//!   layer, counted against `--disk`, and the host's directories never change.
//!
//! So the host never runs a tool over, or walks, a tree a prediction has touched: no patch
//! tool, no `git diff`, no ownership change, no "keep only the solution" walk.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where the runner's report files are, inside the sandbox (a read-only directory of FIFOs the
/// host reads, see channel.rs).
pub const REPORT: &str = "/polysandbox-report";
/// Where a sandbox finds its inputs (read-only).
pub const INPUT: &str = "/polysandbox-in";
/// The most a solution file may hold, whoever made it.
pub const SOLUTION_FILE_CAP: u64 = 16 << 20;

pub struct Prepared {
    /// The tree the sandbox works in: a host directory nothing untrusted wrote, bound at
    /// `mount` as an overlay volume.
    pub tree: PathBuf,
    pub mount: String,
    /// Read-only binds beside it: (host, container).
    pub binds: Vec<(PathBuf, String)>,
    /// The command after the image: a driver for repositories, the setup steps and the test
    /// command for exercises, the snippet's run.
    pub command: Vec<String>,
    /// Whether `command` is a driver (see driver.rs): its output before the separator is its
    /// own, and only what follows is the tests'.
    pub driver: bool,
    /// The nonce of the driver's separator line.
    pub nonce: String,
    /// What the prediction changed, as a unified diff, for the logs.
    pub applied: String,
    /// What its solution files do that reaches into the runner (see tamper.rs).
    pub tampering: Vec<String>,
}

/// Why an instance did not get as far as its tests.
pub enum NotRun {
    EmptyPatch,
    PatchFailed(String),
    /// The dataset (or its pairing with the predictions or the catalogue) cannot give this
    /// instance a run: the same every time, so an `error` that is not retried.
    Dataset(String),
    /// The host failed us (a copy, a clone, a sandbox that did not start): an `error` worth
    /// retrying.
    Host(String),
    /// A budget the host shares ran short while the patch was applied (the sandbox's record
    /// says so, or its output shows ENFILE): a host fault, retried, never the prediction's.
    HostShort(String),
}

/// What running a sandbox gave: its stdout (bytes), stderr (text), and usage record.
pub struct Ran {
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub record: Option<crate::sandbox::report::Report>,
}

/// Runs one sandbox for the preparation: `args` go before the image (limits, binds), `cmd`
/// after it.
pub type Sandbox<'a> = dyn Fn(&[String], &[String]) -> Result<Ran, String> + 'a;

/// `rel` under `tree` (a host tree of ours, copied from the dataset) if every directory on its
/// way is a real one and it is a regular file or absent: a symlink the dataset ships there is
/// never written through.
pub fn plain_path(tree: &Path, rel: &str) -> Result<PathBuf, String> {
    let mut at = tree.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, c) in parts.iter().enumerate() {
        if c.is_empty() || *c == "." || *c == ".." {
            return Err(format!("{rel}: not a plain relative path"));
        }
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Err(_) => break,
            Ok(m) if i + 1 < parts.len() && m.is_dir() => {}
            Ok(m) if i + 1 == parts.len() && m.is_file() => {}
            Ok(_) => {
                return Err(format!(
                    "{rel}: {} is a symlink or not a plain file or directory in the dataset",
                    at.strip_prefix(tree).unwrap_or(&at).display()
                ))
            }
        }
    }
    Ok(tree.join(rel))
}

/// A runner's build of the solution without its tests failed (`{alone}` in a catalogue test
/// command): the exit status, after the line [`ALONE_MARKER`]. Nothing of the prediction's
/// has run by then (a compiler's build runs no code of the package), so the line is the
/// runner's; code that prints it later only fails its own run.
pub const ALONE_FAILED: i32 = 94;
pub const ALONE_MARKER: &str = ">>>>> polysandbox: the solution does not build without the test files";

/// What `{alone}` stands for in a catalogue test command: after the step that builds the
/// solution alone, the marker and [`ALONE_FAILED`] when it failed.
pub fn alone() -> String {
    format!("|| {{ echo '{ALONE_MARKER}' >&2; exit {ALONE_FAILED}; }}")
}

/// What `{only_declared}` stands for in a catalogue test command, right after the build of the
/// solution alone (`go build -gcflags=-e ...`, whose errors it takes): the build counts as
/// passed when its only errors are `undefined:` names in `declared`, the helper functions the
/// dataset's own test files give the solution (held-out go/bottle-song's `Title`, which its
/// gold calls, as the benchmark's harness lets it). Any other error (the tests' table, a name
/// nobody declares) still fails the build alone, shown, and `{alone}` after it says so.
pub fn only_declared(declared: &[String]) -> String {
    const LOG: &str = "/tmp/polysandbox-alone.log";
    let names: Vec<&String> =
        declared.iter().filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).collect();
    let pattern = if names.is_empty() {
        "'^$'".to_string()
    } else {
        format!("': undefined: ({})$'", names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join("|"))
    };
    format!("2>{LOG} || {{ cat {LOG} >&2; ! grep -v '^#' {LOG} | grep -Eqv {pattern}; }}")
}

/// A catalogue test command's argument with the placeholders every exercise-like run fills:
/// `{report}`, `{name}` (shell-quoted), `{alone}`, `{only_declared}` (no name declared).
pub fn expand_test_arg(a: &str, name: &str) -> String {
    a.replace("{report}", REPORT)
        .replace("{name}", &shell_quote(name))
        .replace("{alone}", &alone())
        .replace("{only_declared}", &only_declared(&[]))
}

pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-:=+,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A git for the host's own checkouts: of the mirrors (dataset material) into trees nothing
/// untrusted has written; no system or global configuration but ours, no hook, no
/// fsmonitor, no prompt.
pub(crate) fn host_git(dir: &Path, scratch: &Path) -> Command {
    let gitconfig = scratch.join("gitconfig");
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", &gitconfig)
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "advice.detachedHead=false"]);
    c
}

pub(crate) fn run_quiet(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        Ok(text)
    } else {
        Err(text.trim().to_string())
    }
}

/// A full commit name, or a short one: hex only, so that it is never taken for an option.
pub(crate) fn is_commit(s: &str) -> bool {
    (4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A repository name as `owner/name`: letters, digits, `.`, `_`, `-`, never `..`.
pub(crate) fn is_repo_name(s: &str) -> bool {
    let parts: Vec<&str> = s.split('/').collect();
    (1..=2).contains(&parts.len())
        && parts.iter().all(|p| {
            !p.is_empty() && !p.starts_with('.') && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        })
}

/// A relative path from the dataset (a test file): no `..`, not absolute, no control
/// characters (a newline would split the driver's list).
pub(crate) fn is_plain_relative(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && !p.split('/').any(|c| c == ".." || c.is_empty())
        && !p.chars().any(|c| c.is_control())
}

pub struct Context<'a> {
    pub scratch: &'a Path,
    pub repos: Option<&'a Path>,
    /// Runs the exercise's prepare sandbox (its image, limits and binds).
    pub sandbox: &'a Sandbox<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_dataset_strings() {
        assert_eq!(shell_quote("tests/t.py"), "tests/t.py");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert!(is_commit("0123abcd") && !is_commit("--upload-pack=x") && !is_commit("HEAD"));
        assert!(
            is_repo_name("acme/calc") && !is_repo_name("../etc") && !is_repo_name("a/../b") && !is_repo_name("a/.git")
        );
        assert!(
            is_plain_relative("tests/a.py")
                && !is_plain_relative("../a")
                && !is_plain_relative("/etc/x")
                && !is_plain_relative("a\nb")
        );
    }

    #[test]
    fn dataset_symlinks_are_never_written_through() {
        let d = std::env::temp_dir().join(format!("ps-plain-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::write(d.join("src/lib.rs"), "").unwrap();
        std::os::unix::fs::symlink("/etc", d.join("etc")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("src/link.rs")).unwrap();
        assert_eq!(plain_path(&d, "src/lib.rs").unwrap(), d.join("src/lib.rs"));
        assert!(plain_path(&d, "src/new.rs").is_ok() && plain_path(&d, "new/dir/x.rs").is_ok());
        assert!(plain_path(&d, "etc/passwd").is_err());
        assert!(plain_path(&d, "src/link.rs").is_err());
        assert!(plain_path(&d, "src/../../x").is_err());
        let _ = std::fs::remove_dir_all(&d);
    }
}
