//! The scripts that run inside an instance's sandbox before any code of the prediction does:
//! they apply the prediction's patch with the image's own git and GNU patch, in the SWE-bench
//! harness's attempts (v5: `git apply`, `--3way`, `--reject`, then `patch --forward
//! --fuzz=5`, the tree put back between them, then the reverse check), put the dataset's test
//! files back, and hand over to the tests. The host never runs a tool over a tree a
//! prediction has touched: everything here happens in the sandbox, on its own copy-on-write
//! layer.
//!
//! Every git command they run has hooks, fsmonitor and pagers off, no external diff or
//! textconv, and no system configuration; the patch itself was refused before the sandbox
//! started if it names anything under `.git` ([`super::patch::refuse_git_dir`]), and a change
//! to the repository's configuration or hooks after the attempts refuses it here too.
//!
//! Exit codes before the separator line (nothing of the prediction's has run then; the line
//! carries a nonce the host draws for each run, see [`separator`]):
//! [`APPLY_FAILED`], [`REFUSED`], [`TEST_PATCH_FAILED`], [`SETUP_FAILED`]. After it, the exit
//! status is the tests'.

/// No attempt applied the patch.
pub const APPLY_FAILED: i32 = 97;
/// The patch applied but left what no prediction may (a changed `.git`, a solution file that
/// is a symlink): refused, with the reason on the line before.
pub const REFUSED: i32 = 98;
/// The dataset's test patch did not apply after the prediction's (and the test files' reset).
pub const TEST_PATCH_FAILED: i32 = 96;
/// The driver's own setup failed before the prediction was applied.
pub const SETUP_FAILED: i32 = 95;
/// The line a driver prints just before the tests (or the eval script) start, with the run's
/// nonce: what comes before it is the driver's, after it the code under test's. The nonce is
/// drawn by the host for each run, after the prediction exists, so nothing the patch tools echo
/// can be this line (and every line they print is prefixed with `| ` besides).
pub fn separator(nonce: &str) -> String {
    format!(">>>>> polysandbox: eval script {nonce}")
}

/// A fresh nonce.
pub fn nonce() -> String {
    format!("{:016x}", super::control::random_u64())
}

/// The line a refusal's reason follows.
pub const REFUSAL: &str = ">>>>> polysandbox: refused: ";
/// The start of a line in which the Multi-SWE-bench driver says what digests one file of the
/// test patch may have after the fix run: its index in the host's list, then the digests.
pub const DIGEST: &str = "polysandbox: test file may end as ";

/// What every driver starts with: a clean git environment and the apply attempts. After each
/// attempt `ps_check` (the driver's own) runs before anything else, git included.
const PRELUDE: &str = r#"set -u
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_EXTERNAL_DIFF GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_EXEC_PATH GIT_TEMPLATE_DIR 2>/dev/null
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat PAGER=cat GIT_EDITOR=true GIT_OPTIONAL_LOCKS=0
# Every git command of ours: no hook, no fsmonitor, no untracked cache, no pager.
g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.untrackedCache=false -c core.pager=cat -c advice.detachedHead=false "$@"; }
# What a tool prints (names the patch chose among it) is shown cut and prefixed, so that no
# line of it can be one of the driver's.
ps_show() { head -c "$1" | sed 's/^/| /'; }
# The harness's attempts (SWE-bench v5), the tree put back (reset_tree) between them; then its
# reverse check for a patch already applied.
ps_apply() {
  ps_n=0; ps_applied=""
  for ps_cmd in "git apply --verbose" "git apply --verbose --3way" "git apply --verbose --reject" "patch --batch --forward --fuzz=5 -p1 -i"; do
    if [ $ps_n -gt 0 ]; then reset_tree; fi
    ps_n=$((ps_n + 1))
    case $ps_cmd in
      git*) g ${ps_cmd#git } "$1" > /tmp/.ps-apply.log 2>&1 ;;
      *) $ps_cmd "$1" > /tmp/.ps-apply.log 2>&1 ;;
    esac
    ps_rc=$?
    ps_show 65536 < /tmp/.ps-apply.log
    echo
    ps_check
    if [ $ps_rc = 0 ]; then ps_applied=1; echo ">>>>> Applied Patch ($ps_cmd)"; break; fi
    echo "Failed to apply patch to container: $ps_cmd"
  done
  rm -f /tmp/.ps-apply.log
  if [ -z "$ps_applied" ] && g apply --check --reverse "$1" >/dev/null 2>&1; then
    ps_applied=1; echo ">>>>> Applied Patch: verified already applied"
  fi
  [ -n "$ps_applied" ]
}
"#;

/// The repository's own executing state: its configuration, hooks, and what redirects it; the
/// names and types at the top of `.git` (a lock, a `config.worktree`, a `commondir` appearing).
const GITSTATE: &str = r#"gitstate() {
  ( cd "$1" || exit 0
    [ -d .git ] && [ ! -L .git ] || { echo "no .git directory"; ls -ld .git 2>&1; exit 0; }
    ls -lA .git | sed 1d | awk '{print $1, $NF}'
    for f in config config.worktree HEAD commondir gitdir info/attributes info/exclude info/grafts objects/info/alternates packed-refs; do
      if [ -e ".git/$f" ] || [ -L ".git/$f" ]; then echo "== $f"; ls -ld ".git/$f" | cut -c1-10; cat ".git/$f" 2>&1; fi
    done
    ls -lA .git/hooks .git/info .git/objects/info 2>&1 | awk '{print $1, $5, $NF}'
    cat .git/hooks/* 2>/dev/null
    [ -d .git/modules ] && find .git/modules -name config -exec cat {} + 2>&1
  ) | md5sum
}
"#;

/// An exercise's first sandbox (only for a prediction given as a patch): the pristine exercise
/// (`/polysandbox-in/tree`, read-only) copied to the working directory `$1`, the patch
/// applied there; then, on stdout and nothing else, a tar of the solution files
/// (`/polysandbox-in/solution`, one per line) that exist, each checked to be a regular file
/// below plain directories. The patch tools' output, and the list of other files the patch
/// changed (not kept: the host takes only the solution files), go to stderr. git works on the
/// tree through a repository of the driver's own (`GIT_DIR`): a `.git` the patch made is never
/// one git reads.
pub fn exercise_prepare() -> String {
    format!(
        r#"{PRELUDE}W=$1
git init -q --bare /tmp/.ps-git >/dev/null 2>&1 || {{ echo "polysandbox: no git in the image" >&2; exit {SETUP_FAILED}; }}
export GIT_DIR=/tmp/.ps-git GIT_WORK_TREE="$W"
reset_tree() {{ cd / && rm -rf "$W" && mkdir -p "$W" && cp -a /polysandbox-in/tree/. "$W"/ && cd "$W"; }}
ps_check() {{ if [ -e "$W/.git" ] || [ -L "$W/.git" ]; then echo "{REFUSAL}the patch makes a .git" >&2; exit {REFUSED}; fi; }}
reset_tree || {{ echo "polysandbox: could not copy the exercise" >&2; exit {SETUP_FAILED}; }}
ps_apply /polysandbox-in/patch.diff >&2 || {{ echo ">>>>> Patch Apply Failed" >&2; exit {APPLY_FAILED}; }}
echo ">>>>> polysandbox: files the patch changed besides the solution (put back):" >&2
diff -rq --no-dereference /polysandbox-in/tree "$W" 2>&1 | ps_show 16384 >&2
echo >&2
: > /tmp/.ps-files
while IFS= read -r f; do
  [ -n "$f" ] || continue
  d=$(dirname -- "$f")
  while [ "$d" != "." ] && [ "$d" != "/" ]; do
    if [ -L "$d" ] || {{ [ -e "$d" ] && [ ! -d "$d" ]; }}; then echo "{REFUSAL}$d is not a plain directory" >&2; exit {REFUSED}; fi
    d=$(dirname -- "$d")
  done
  if [ -L "$f" ]; then echo "{REFUSAL}$f is a symlink" >&2; exit {REFUSED}; fi
  if [ -e "$f" ] && [ ! -f "$f" ]; then echo "{REFUSAL}$f is not a regular file" >&2; exit {REFUSED}; fi
  [ -f "$f" ] && printf '%s\0' "$f" >> /tmp/.ps-files
done < /polysandbox-in/solution
exec tar --null --no-recursion -T /tmp/.ps-files -cf -
"#
    )
}

/// A repository instance's sandbox, up to the tests: in `/testbed` (the host's checkout at
/// the base commit, copy on write), the prediction's patch (`/polysandbox-in/patch.diff`, if
/// not empty) applied, `.git`'s configuration and hooks checked unchanged after each attempt;
/// the files the test patch names (`/polysandbox-in/test_files`) put back to the base commit
/// (`/polysandbox-in/base_commit`), or removed where the base has none, whatever the prediction
/// put on their way; the applied diff printed (cut at 1 MiB, prefixed); then `tail`, the kind's
/// own last steps, which end by printing the separator and handing over to the tests.
fn repo_driver(tail: &str) -> String {
    format!(
        r#"{PRELUDE}{GITSTATE}cd /testbed || exit {SETUP_FAILED}
reset_tree() {{ g checkout -q -- . >/dev/null 2>&1; g clean -fdq >/dev/null 2>&1; }}
ps_state=$(gitstate /testbed)
ps_check() {{ if [ "$(gitstate /testbed)" != "$ps_state" ]; then echo "{REFUSAL}the patch changed the repository's configuration or hooks (.git)"; exit {REFUSED}; fi; }}
if [ -s /polysandbox-in/patch.diff ]; then
  ps_apply /polysandbox-in/patch.diff || {{ echo ">>>>> Patch Apply Failed"; exit {APPLY_FAILED}; }}
fi
ps_check
base=$(cat /polysandbox-in/base_commit)
while IFS= read -r f; do
  [ -n "$f" ] || continue
  # A file or link the prediction put where the test file's directory goes.
  d=$(dirname -- "$f")
  while [ "$d" != "." ]; do
    if [ -L "$d" ] || {{ [ -e "$d" ] && [ ! -d "$d" ]; }}; then rm -f -- "$d" && echo "polysandbox: $d removed (a directory of the test patch's)"; fi
    d=$(dirname -- "$d")
  done
  if g cat-file -e "$base:$f" 2>/dev/null; then
    g diff --quiet --no-ext-diff "$base" -- "$f" 2>/dev/null || {{ rm -rf -- "$f" 2>/dev/null; g checkout -q "$base" -- "$f" && echo "polysandbox: the prediction's change to $f undone (a file of the test patch)" || {{ echo "{REFUSAL}the test file $f could not be put back"; exit {TEST_PATCH_FAILED}; }}; }}
  elif [ -e "$f" ] || [ -L "$f" ]; then
    rm -rf -- "$f" && echo "polysandbox: $f removed (the test patch makes it; the prediction had)"
  fi
done < /polysandbox-in/test_files
ps_check
echo "Git diff before:"
g -c core.fileMode=false diff --no-ext-diff --no-textconv 2>&1 | ps_show 1048576
echo
{tail}"#
    )
}

/// A SWE-bench record's sandbox: [`repo_driver`], then the record's eval script, with hooks
/// and fsmonitor off for every git command it runs (`GIT_CONFIG_PARAMETERS`, which git reads
/// as `-c` options, older gits included).
pub fn swebench(nonce: &str) -> String {
    let sep = separator(nonce);
    repo_driver(&format!(
        r#"cp /polysandbox-in/eval.sh /eval.sh
echo "{sep}"
export GIT_CONFIG_PARAMETERS="'core.hookspath=/dev/null' 'core.fsmonitor=false'"
exec /bin/bash /eval.sh
"#
    ))
}

/// A generic repository instance's sandbox (Multi-SWE-bench and other records without an
/// image of their own): [`repo_driver`], then the dataset's test patch, then the test command
/// (`/polysandbox-in/test.sh`).
pub fn repo(nonce: &str) -> String {
    let sep = separator(nonce);
    repo_driver(&format!(
        r#"if [ -s /polysandbox-in/test.patch ]; then
  g apply --whitespace=nowarn /polysandbox-in/test.patch > /tmp/.ps-test-patch.log 2>&1 || {{ ps_show 65536 < /tmp/.ps-test-patch.log; echo ">>>>> polysandbox: the dataset's test patch does not apply"; exit {TEST_PATCH_FAILED}; }}
fi
echo "{sep}"
export GIT_CONFIG_PARAMETERS="'core.hookspath=/dev/null' 'core.fsmonitor=false'"
exec /bin/sh /polysandbox-in/test.sh
"#
    ))
}

/// A Multi-SWE-bench record's sandbox, in the harness's image as its prepare.sh left it (the
/// repository at `/home/<repo>`, dependencies built, tracked files it changed left changed):
/// the record's test patch and the prediction (its sections for the test patch's files left
/// out on the host, see patch::without_files) put at `/home/test.patch` and `/home/fix.patch`,
/// where the harness mounts them; `git apply --check` of the two, as the fix run's own
/// `git apply` will take them, so that a prediction that does not apply is told from one whose
/// tests fail (no code of the prediction's runs before it); then the harness's fix-run command
/// (`/polysandbox-in/fix_run`, e.g. `bash /home/fix-run.sh`), which applies both and runs the
/// tests. Nothing but `git apply` touches the tree: the prediction is applied exactly as the
/// harness applies it.
pub fn multi_swebench(nonce: &str, workdir: &str) -> String {
    let sep = separator(nonce);
    let wd = super::prepare::shell_quote(workdir);
    format!(
        r#"{PRELUDE}cd {wd} 2>/dev/null || {{ echo "polysandbox: the image has no {workdir} (the harness's tree)"; exit {SETUP_FAILED}; }}
cp /polysandbox-in/test.patch /home/test.patch || {{ echo "polysandbox: could not write /home/test.patch"; exit {SETUP_FAILED}; }}
# The prediction is linked, not copied: however large, it takes no room in the sandbox's disk.
rm -rf /home/fix.patch && ln -s /polysandbox-in/fix.patch /home/fix.patch || {{ echo "polysandbox: could not link /home/fix.patch"; exit {SETUP_FAILED}; }}
if [ -s /home/test.patch ] && ! g apply --check /home/test.patch > /tmp/.ps-apply.log 2>&1; then
  ps_show 65536 < /tmp/.ps-apply.log; echo ">>>>> polysandbox: the dataset's test patch does not apply"; exit {TEST_PATCH_FAILED}
fi
if ! g apply --check /home/test.patch /home/fix.patch > /tmp/.ps-apply.log 2>&1; then
  ps_show 65536 < /tmp/.ps-apply.log; echo ">>>>> Patch Apply Failed"; exit {APPLY_FAILED}
fi
rm -f /tmp/.ps-apply.log
# What the test patch's files become: as the test patch alone makes them, and with the
# prediction after it, each read by git itself (any prefix, quoting, renames, modes, binary) on
# a copy of the index that holds the tree as it is. A prediction that still changes one of
# them (the host left out the sections it recognised) is refused, naming the file, so the
# tests run as the test patch makes them.
ps_index=$(g rev-parse --git-path index) && cp "$ps_index" /tmp/.ps-i0 && GIT_INDEX_FILE=/tmp/.ps-i0 g add -u >/dev/null 2>&1 \
  && ps_t0=$(GIT_INDEX_FILE=/tmp/.ps-i0 g write-tree) && cp /tmp/.ps-i0 /tmp/.ps-i1 \
  && {{ ! [ -s /home/test.patch ] || GIT_INDEX_FILE=/tmp/.ps-i1 g apply --cached /home/test.patch >/dev/null 2>&1; }} \
  && ps_t1=$(GIT_INDEX_FILE=/tmp/.ps-i1 g write-tree) && cp /tmp/.ps-i1 /tmp/.ps-i2 \
  || {{ echo "polysandbox: the test patch's files could not be read from the index"; exit {SETUP_FAILED}; }}
if ! GIT_INDEX_FILE=/tmp/.ps-i2 g apply --cached /home/fix.patch > /tmp/.ps-apply.log 2>&1; then
  ps_show 4096 < /tmp/.ps-apply.log; echo "{REFUSAL}git apply --cached refuses the prediction after the test patch: it changes what git does not track"; exit {REFUSED}
fi
ps_t2=$(GIT_INDEX_FILE=/tmp/.ps-i2 g write-tree) || exit {SETUP_FAILED}
g diff --no-renames --name-only -z "$ps_t0" "$ps_t1" | LC_ALL=C sort -zu > /tmp/.ps-test-paths
g diff --no-renames --name-only -z "$ps_t1" "$ps_t2" | LC_ALL=C sort -zu > /tmp/.ps-fix-paths
ps_both=$(LC_ALL=C comm -z -12 /tmp/.ps-test-paths /tmp/.ps-fix-paths | tr '\0' ' ' | head -c 1000 | sed 's/ $//')
rm -f /tmp/.ps-i0 /tmp/.ps-i1 /tmp/.ps-i2 /tmp/.ps-test-paths /tmp/.ps-fix-paths /tmp/.ps-apply.log
if [ -n "$ps_both" ]; then echo "{REFUSAL}the prediction changes the test patch's files: $ps_both"; exit {REFUSED}; fi
# What each of the test patch's files (the host's list, in its order) may be after the fix
# run: as it is now (the run's apply may leave it out), as the test patch makes it (as git
# stores it, and as git would check it out). The init reads them again once every process of
# the run is gone; the host compares. Printed before any code of the prediction's runs.
: > /tmp/.ps-expect || exit {SETUP_FAILED}
ps_i=0
while IFS= read -r -d '' ps_p; do
  ps_d0=absent; ps_d1=absent; ps_d2=absent
  if [ -f "$ps_p" ] && ! [ -L "$ps_p" ]; then ps_d0=$(sha256sum < "$ps_p" | cut -c1-64); fi
  if g cat-file -e "$ps_t1:$ps_p" 2>/dev/null; then
    ps_d1=$(g cat-file blob "$ps_t1:$ps_p" | sha256sum | cut -c1-64)
    ps_d2=$(g cat-file --filters "$ps_t1:$ps_p" 2>/dev/null | sha256sum | cut -c1-64)
  fi
  echo "{DIGEST}$ps_i $ps_d0 $ps_d1 $ps_d2"
  echo "$ps_d0 $ps_d1 $ps_d2" >> /tmp/.ps-expect
  ps_i=$((ps_i + 1))
done < /polysandbox-in/digest_paths
echo "polysandbox: the test patch and the prediction apply; the fix run: $(cat /polysandbox-in/fix_run)"
echo "{sep}"
export GIT_CONFIG_PARAMETERS="'core.hookspath=/dev/null' 'core.fsmonitor=false'"
# The fix run's git is ours first (/polysandbox-in/bin/git, GIT_WRAPPER): after its apply it
# has the test patch's files protected.
PS_GIT=$(command -v git) PS_WD=$PWD
export PS_GIT PS_WD PATH="/polysandbox-in/bin:$PATH"
exec /bin/bash -c "$(cat /polysandbox-in/fix_run)"
"#
    )
}

/// What the output of a driver says happened before the tests: `None` when the separator came
/// (the tests ran; their exit status is theirs); else the driver's own exit, which no code of
/// the prediction's can have chosen.
pub fn before_tests(output: &str, exit: Option<i32>, nonce: &str) -> Option<Stopped> {
    let sep = separator(nonce);
    if output.split('\n').any(|l| l == sep) {
        return None;
    }
    let reason = || output.lines().rev().find_map(|l| l.strip_prefix(REFUSAL)).map(super::clean).unwrap_or_default();
    Some(match exit {
        Some(APPLY_FAILED) => Stopped::ApplyFailed,
        Some(REFUSED) => Stopped::Refused(reason()),
        Some(TEST_PATCH_FAILED) => Stopped::TestPatchFailed,
        Some(SETUP_FAILED) => Stopped::Setup,
        other => Stopped::Other(other),
    })
}

/// The output of a driver's run from just after its separator: the tests' (empty if they
/// never started).
pub fn tests_output<'a>(output: &'a str, nonce: &str) -> &'a str {
    let sep = format!("\n{}\n", separator(nonce));
    output.split_once(&sep).map(|x| x.1).unwrap_or("")
}

/// The fix run's `git` (`/polysandbox-in/bin/git` on its PATH): the image's own (`PS_GIT`);
/// then, after the first `git apply` that leaves each of the test patch's files (the host's
/// list, `PS_WD`-relative) as the test patch makes it or as it was, and one at least changed,
/// it asks the init to protect them (`--protect`, SIGUSR2 to pid 1) and waits for the answer:
/// before any code of the prediction's runs, the tests it will run can no longer be
/// rewritten, renamed or replaced. Nothing the prediction shapes runs before it: the fix
/// run's first command is its `git apply`.
pub const GIT_WRAPPER: &str = r#"#!/bin/bash
"$PS_GIT" "$@"
ps_rc=$?
{ [ $ps_rc -eq 0 ] && ! [ -e /tmp/.ps-protected ]; } || exit $ps_rc
case " $* " in *" apply "*) ;; *) exit $ps_rc ;; esac
ps_new=0
exec 3< /tmp/.ps-expect || exit $ps_rc
while IFS= read -r -d '' ps_p; do
  read -r ps_d0 ps_d1 ps_d2 <&3 || exit $ps_rc
  ps_f=$PS_WD/$ps_p ps_d=absent
  if [ -f "$ps_f" ] && ! [ -L "$ps_f" ]; then ps_d=$(sha256sum < "$ps_f" | cut -c1-64); fi
  if [ "$ps_d" = "$ps_d1" ] || [ "$ps_d" = "$ps_d2" ]; then
    [ "$ps_d" = "$ps_d0" ] || ps_new=1
  elif [ "$ps_d" != "$ps_d0" ]; then
    exit $ps_rc
  fi
done < /polysandbox-in/digest_paths
exec 3<&-
[ $ps_new = 1 ] || exit $ps_rc
: > /tmp/.ps-protected
ps_done=
trap 'ps_done=1' USR2
kill -USR2 1
for ps_n in $(seq 1 1000); do [ -n "$ps_done" ] && break; sleep 0.01; done
trap - USR2
exit $ps_rc
"#;

/// What the driver said each listed file may be after the run (see [`DIGEST`]), by index: from
/// the output before the separator, which no code of the prediction's wrote.
pub fn expected_digests(before: &str) -> std::collections::BTreeMap<usize, Vec<String>> {
    before
        .lines()
        .filter_map(|l| l.strip_prefix(DIGEST))
        .filter_map(|l| {
            let mut w = l.split(' ');
            let i = w.next()?.parse().ok()?;
            Some((i, w.map(str::to_string).collect()))
        })
        .collect()
}

/// Why a driver stopped before the tests.
#[derive(Debug, PartialEq)]
pub enum Stopped {
    ApplyFailed,
    Refused(String),
    TestPatchFailed,
    Setup,
    /// Killed, or an exit of no meaning here (a limit, the sandbox): the record says which.
    Other(Option<i32>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sh(script: &str, dir: &std::path::Path) -> std::process::Output {
        Command::new("sh").arg("-c").arg(script).current_dir(dir).output().unwrap()
    }

    /// The drivers are POSIX sh (dash runs the exercise images' `sh`): each parses.
    #[test]
    fn drivers_parse_as_posix_sh() {
        for s in [exercise_prepare(), swebench("0123"), repo("0123"), multi_swebench("0123", "/home/it's")] {
            let o = Command::new("dash")
                .args(["-n", "-c", &s])
                .output()
                .or_else(|_| Command::new("sh").args(["-n", "-c", &s]).output())
                .unwrap();
            assert!(o.status.success(), "{}\n{s}", String::from_utf8_lossy(&o.stderr));
        }
    }

    /// The attempts in order, the tree put back between them, and a patch GNU patch alone
    /// applies (fuzz) applied by it; on a tree that is no repository (an exercise) too.
    #[test]
    fn the_attempts_apply_as_the_harness_does() {
        let d = std::env::temp_dir().join(format!("ps-driver-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("f.txt"), "1\n2\n3\n4\n5\n6\n7\nX\n").unwrap();
        // Context off by one line: git apply refuses, patch applies with fuzz.
        let p = "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n 1\n 2\n-3\n+three\n 9\n";
        std::fs::write(d.join("p.diff"), p).unwrap();
        let script = format!("{PRELUDE}ps_check() {{ :; }}\nreset_tree() {{ printf '1\\n2\\n3\\n4\\n5\\n6\\n7\\nX\\n' > f.txt; rm -f f.txt.orig f.txt.rej; }}\nps_apply p.diff; echo rc=$?; cat f.txt");
        let o = sh(&script, &d);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("Failed to apply patch to container: git apply --verbose\n"), "{out}");
        assert!(out.contains(">>>>> Applied Patch (patch --batch --forward --fuzz=5 -p1 -i)"), "{out}");
        assert!(out.contains("rc=0") && out.contains("three"), "{out}");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The Multi-SWE-bench driver on a real repository: a prediction that touches a test
    /// patch's file however it names it (another prefix than a/ b/, a plain ---/+++ diff,
    /// doubled slashes, a rename away) is refused with the file named; one that does not goes
    /// on to the fix run, whose command sees both patches at /home.
    #[test]
    fn multi_swe_bench_driver_refuses_a_prediction_on_the_test_files() {
        let d = std::env::temp_dir().join(format!("ps-msb-driver-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let (repo, input) = (d.join("repo"), d.join("in"));
        std::fs::create_dir_all(repo.join("tests")).unwrap();
        std::fs::create_dir_all(&input).unwrap();
        std::fs::write(repo.join("src.txt"), "a\nb\n").unwrap();
        std::fs::write(repo.join("tests/t.txt"), "1\n2\n").unwrap();
        let git = |args: &[&str]| {
            let o = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(&repo)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-qm", "base"]);
        let test_patch = "diff --git a/tests/t.txt b/tests/t.txt\n--- a/tests/t.txt\n+++ b/tests/t.txt\n@@ -1,2 +1,3 @@\n 1\n 2\n+3\n";
        let fix = "diff --git a/src.txt b/src.txt\n--- a/src.txt\n+++ b/src.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n";
        let on_tests = [
            "diff --git x/tests/t.txt y/tests/t.txt\n--- x/tests/t.txt\n+++ y/tests/t.txt\n@@ -1,2 +1,2 @@\n-1\n+one\n 2\n",
            "--- a/tests/t.txt\n+++ b/tests/t.txt\n@@ -1,2 +1,2 @@\n-1\n+one\n 2\n",
            "diff --git a/tests//t.txt b/tests//t.txt\n--- a/tests//t.txt\n+++ b/tests//t.txt\n@@ -1,2 +1,2 @@\n-1\n+one\n 2\n",
            "diff --git a/tests/t.txt b/tests/u.txt\nsimilarity index 100%\nrename from tests/t.txt\nrename to tests/u.txt\n",
            "diff --git a/tests/t.txt b/tests/t.txt\nold mode 100644\nnew mode 100755\n",
            "diff --git a/tests/t.txt b/tests/t.txt\ndeleted file mode 100644\n--- a/tests/t.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-1\n-2\n-3\n",
        ];
        let home = d.join("home");
        let run = |prediction: &str| -> (Option<i32>, String) {
            std::fs::write(input.join("test.patch"), test_patch).unwrap();
            std::fs::write(input.join("fix.patch"), prediction).unwrap();
            let h = home.display();
            let fix_run = format!("git apply {h}/test.patch {h}/fix.patch && cat src.txt tests/t.txt");
            std::fs::write(input.join("fix_run"), fix_run).unwrap();
            let _ = std::fs::remove_dir_all(&home);
            std::fs::create_dir_all(&home).unwrap();
            git(&["checkout", "-q", "--", "."]);
            // The driver's fixed paths (/polysandbox-in, /home) moved under the test's directory.
            let script = multi_swebench("0123", &repo.display().to_string())
                .replace("/polysandbox-in", &input.display().to_string())
                .replace("/home/", &format!("{h}/"));
            let o = sh(&script, &d);
            (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
        };
        let (code, out) = run(fix);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("a\nB\n1\n2\n3\n"), "{out}");
        assert!(std::fs::symlink_metadata(home.join("fix.patch")).unwrap().file_type().is_symlink());
        for p in on_tests {
            let (code, out) = run(&format!("{fix}{p}"));
            // (git apply refuses a deletion of a file an earlier patch of the set changed: the
            // fix run would fail, graded patch_failed.)
            if p.contains("deleted file") && code == Some(APPLY_FAILED) {
                continue;
            }
            assert_eq!(code, Some(REFUSED), "{p}: {out}");
            assert!(
                out.contains(&format!("{REFUSAL}the prediction changes the test patch's files: tests/t.txt")),
                "{p}: {out}"
            );
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn what_happened_before_the_tests() {
        let sep = separator("ab12");
        assert_eq!(before_tests(&format!("x\n{sep}\n>>>>> Patch Apply Failed\n"), Some(APPLY_FAILED), "ab12"), None);
        assert_eq!(before_tests(">>>>> Patch Apply Failed\n", Some(APPLY_FAILED), "ab12"), Some(Stopped::ApplyFailed));
        assert_eq!(
            before_tests(&format!("{REFUSAL}x is a symlink\n"), Some(REFUSED), "ab12"),
            Some(Stopped::Refused("x is a symlink".into()))
        );
        assert_eq!(before_tests("", None, "ab12"), Some(Stopped::Other(None)));
        // A separator of another run's (or a guess) is no separator.
        assert_eq!(before_tests(&format!("{}\n", separator("0000")), Some(0), "ab12"), Some(Stopped::Other(Some(0))));
        assert_eq!(tests_output(&format!("a\n{sep}\nPASSED x\n"), "ab12"), "PASSED x\n");
    }
}
