//! Builds one instance's working tree on the host: the exercise or repository, the prediction
//! applied (patches as SWE-bench applies them), and the test files put back from the dataset.

use super::catalogue::Runner;
use super::dataset::{Instance, Kind, Prediction};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Prepared {
    /// The tree bound into the sandbox at `mount`.
    pub tree: PathBuf,
    pub mount: String,
    /// The argv run in the sandbox after the setup steps.
    pub test: Vec<String>,
    /// Shell steps before the tests.
    pub setup: Vec<String>,
    /// What the prediction changed, as a unified diff.
    pub applied: String,
}

/// Why an instance did not get as far as its tests.
pub enum NotRun {
    EmptyPatch,
    PatchFailed(String),
    /// The dataset (or its pairing with the predictions or the catalogue) cannot give this
    /// instance a run: the same every time, so an `error` that is not retried.
    Dataset(String),
    /// The host failed us (a copy, a clone): an `error` worth retrying.
    Host(String),
}

fn copy_tree(src: &Path, dst: &Path, skip_top: &[&str]) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for e in std::fs::read_dir(src)? {
        let e = e?;
        let name = e.file_name();
        if skip_top.iter().any(|s| name == *s) {
            continue;
        }
        let (from, to) = (e.path(), dst.join(&name));
        let ft = e.file_type()?;
        if ft.is_dir() {
            copy_tree(&from, &to, &[])?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
        } else {
            std::fs::copy(&from, &to)?;
        }
    }
    Ok(())
}

/// (example, solution path) pairs, as Exercism lays reference solutions out: an example with a
/// solution's file name replaces it; otherwise one (`example.*`, `proof.ci.js`) replaces the
/// only remaining solution file with its extension (C++: example.h is the header); any other
/// (Java's helper classes) goes beside the first solution file.
pub fn gold_files(solution: &[String], example: &[String]) -> Vec<(String, String)> {
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let ext = |p: &str| base(p).rsplit_once('.').map(|(_, e)| e.to_string()).unwrap_or_default();
    let mut sols: Vec<String> = solution.to_vec();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut rest = Vec::new();
    for ex in example {
        match sols.iter().position(|s| base(s) == base(ex)) {
            Some(i) => pairs.push((ex.clone(), sols.remove(i))),
            None => rest.push(ex.clone()),
        }
    }
    for ex in rest {
        let same: Vec<usize> = (0..sols.len()).filter(|&i| ext(&sols[i]) == ext(&ex)).collect();
        if same.len() == 1 {
            pairs.push((ex.clone(), sols.remove(same[0])));
        } else {
            let dir = solution[0].rsplit_once('/').map(|(d, _)| format!("{d}/")).unwrap_or_default();
            pairs.push((ex.clone(), format!("{dir}{}", base(&ex))));
        }
    }
    pairs
}

fn run_quiet(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        Ok(text)
    } else {
        Err(text.trim().to_string())
    }
}

/// The unified diff from `orig` to `new` for one relative path.
fn diff(tree_a: &Path, tree_b: &Path, rel: &str) -> String {
    let a = tree_a.join(rel);
    let a = if a.exists() { a } else { PathBuf::from("/dev/null") };
    Command::new("diff")
        .args(["-u", "--label", &format!("a/{rel}"), "--label", &format!("b/{rel}")])
        .arg(a)
        .arg(tree_b.join(rel))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default()
}

/// Applies a unified diff in `dir` as SWE-bench does: `git apply`, then `git apply --reject`,
/// then `patch --fuzz`. Returns which one worked.
pub fn apply_patch(dir: &Path, patch: &str, scratch: &Path) -> Result<&'static str, String> {
    let file = scratch.join("prediction.patch");
    std::fs::write(&file, patch).map_err(|e| e.to_string())?;
    let attempts: [(&str, Vec<&str>); 3] = [
        ("git apply", vec!["git", "apply", "--verbose", "--whitespace=nowarn"]),
        ("git apply --reject", vec!["git", "apply", "--verbose", "--reject", "--whitespace=nowarn"]),
        ("patch --fuzz=5", vec!["patch", "--batch", "--fuzz=5", "-p1", "-i"]),
    ];
    let mut errors = Vec::new();
    for (name, argv) in attempts {
        let mut cmd = Command::new(argv[0]);
        cmd.args(&argv[1..]).arg(&file).current_dir(dir);
        match run_quiet(&mut cmd) {
            Ok(_) => return Ok(name),
            Err(e) => errors.push(format!("{name}: {}", e.lines().last().unwrap_or(""))),
        }
    }
    Err(errors.join("; "))
}

/// Paths a unified diff touches (its `b/` side, and `a/` for deletions).
pub fn patch_paths(patch: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in patch.lines() {
        let p = line.strip_prefix("+++ ").or_else(|| line.strip_prefix("--- "));
        if let Some(p) = p {
            let p = p.split('\t').next().unwrap_or(p).trim();
            if let Some(rel) = p.strip_prefix("b/").or_else(|| p.strip_prefix("a/")) {
                if !out.iter().any(|x| x == rel) {
                    out.push(rel.to_string());
                }
            }
        }
    }
    out
}

/// Drops the `<lang>/exercises/practice/<name>/` prefix a patch made at the benchmark's root has.
fn relative_to_exercise(patch: &str, inst: &Instance, name: &str) -> String {
    let prefix = format!("{}/exercises/practice/{name}/", inst.language);
    patch.replace(&format!("a/{prefix}"), "a/").replace(&format!("b/{prefix}"), "b/")
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir).args(["-c", "advice.detachedHead=false", "-c", "core.hooksPath=/dev/null"]);
    c
}

fn shell_quote(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-:=+,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Makes every file of `tree` that is not one of `solution` what it is in `pristine` (the
/// exercise as shipped): changed ones copied back, added ones (files, symlinks, directories)
/// removed, removed ones restored. Returns the paths it put right.
/// After a prediction is applied, its solution files must be regular files (or gone) and
/// every directory on their way a real directory: a patch can make them symlinks (`new file
/// mode 120000`), and the host reads and writes them afterwards (the diff for the logs, the
/// test files put back), as root perhaps. A symlink there is refused, never followed.
fn solution_is_plain(tree: &Path, solution: &[String]) -> Result<(), String> {
    for s in solution {
        let mut at = PathBuf::new();
        let parts: Vec<_> = Path::new(s).components().collect();
        for (i, c) in parts.iter().enumerate() {
            at.push(c);
            let last = i + 1 == parts.len();
            match std::fs::symlink_metadata(tree.join(&at)) {
                Err(_) => break,
                Ok(m) if last && m.is_file() => {}
                Ok(m) if !last && m.is_dir() => {}
                Ok(m) => {
                    let what = if m.file_type().is_symlink() { "a symlink" } else if m.is_dir() { "a directory" } else { "not a regular file" };
                    return Err(format!("{} is {what}", at.display()));
                }
            }
        }
    }
    Ok(())
}

fn keep_only_solution(tree: &Path, pristine: &Path, solution: &[String]) -> std::io::Result<Vec<String>> {
    use std::collections::BTreeSet;
    fn walk(root: &Path, rel: &Path, out: &mut BTreeSet<PathBuf>) -> std::io::Result<()> {
        for e in std::fs::read_dir(root.join(rel))? {
            let e = e?;
            let r = rel.join(e.file_name());
            out.insert(r.clone());
            if e.file_type()?.is_dir() {
                walk(root, &r, out)?;
            }
        }
        Ok(())
    }
    let (mut now, mut was) = (BTreeSet::new(), BTreeSet::new());
    walk(tree, Path::new(""), &mut now)?;
    walk(pristine, Path::new(""), &mut was)?;
    let is_solution = |r: &Path| solution.iter().any(|s| Path::new(s) == r);
    // A solution file's parent directories are the prediction's to have, too.
    let is_solution_dir = |r: &Path| solution.iter().any(|s| Path::new(s).starts_with(r) && Path::new(s) != r);
    let same = |r: &Path| -> bool {
        let (a, b) = (std::fs::symlink_metadata(tree.join(r)), std::fs::symlink_metadata(pristine.join(r)));
        match (a, b) {
            (Ok(a), Ok(b)) if a.is_dir() && b.is_dir() => true,
            (Ok(a), Ok(b)) if a.is_file() && b.is_file() => std::fs::read(tree.join(r)).ok() == std::fs::read(pristine.join(r)).ok(),
            (Ok(a), Ok(b)) if a.file_type().is_symlink() && b.file_type().is_symlink() => std::fs::read_link(tree.join(r)).ok() == std::fs::read_link(pristine.join(r)).ok(),
            _ => false,
        }
    };
    let mut fixed = Vec::new();
    for r in now.union(&was) {
        if is_solution(r) || is_solution_dir(r) || same(r) {
            continue;
        }
        // Not yet put right by an ancestor's restore.
        if fixed.iter().any(|f: &String| r.starts_with(f)) {
            continue;
        }
        let t = tree.join(r);
        if let Ok(md) = std::fs::symlink_metadata(&t) {
            if md.is_dir() {
                std::fs::remove_dir_all(&t)?;
            } else {
                std::fs::remove_file(&t)?;
            }
        }
        if was.contains(r) {
            copy_tree_entry(&pristine.join(r), &t)?;
        }
        fixed.push(r.display().to_string());
    }
    Ok(fixed)
}

fn copy_tree_entry(from: &Path, to: &Path) -> std::io::Result<()> {
    let md = std::fs::symlink_metadata(from)?;
    if let Some(p) = to.parent() {
        std::fs::create_dir_all(p)?;
    }
    if md.is_dir() {
        copy_tree(from, to, &[])
    } else if md.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}

/// Whether a predicted Cargo.toml runs nothing at build time: no build script (`build`, or a
/// `build.rs` cargo would find: the tree's own is the dataset's), no `links`, no
/// build-dependencies, no `[patch]`/`[replace]` of sources, no proc-macro library.
fn cargo_manifest_is_inert(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot be read: {e}"))?;
    let t: toml::Table = text.parse().map_err(|e| format!("is not valid TOML: {e}"))?;
    let pkg = t.get("package").and_then(|v| v.as_table());
    if let Some(b) = pkg.and_then(|p| p.get("build")) {
        if b.as_bool() != Some(false) {
            return Err("names a build script".into());
        }
    }
    if pkg.and_then(|p| p.get("links")).is_some() {
        return Err("links a native library (a build script)".into());
    }
    for key in ["build-dependencies", "build_dependencies", "patch", "replace"] {
        if t.contains_key(key) {
            return Err(format!("has [{key}]"));
        }
    }
    if let Some(target) = t.get("target").and_then(|v| v.as_table()) {
        if target.values().filter_map(|v| v.as_table()).any(|c| c.contains_key("build-dependencies") || c.contains_key("build_dependencies")) {
            return Err("has target build-dependencies".into());
        }
    }
    if t.get("lib").and_then(|v| v.as_table()).and_then(|l| l.get("proc-macro").or(l.get("proc_macro"))).and_then(|v| v.as_bool()) == Some(true) {
        return Err("makes a proc-macro library".into());
    }
    Ok(())
}

pub fn prepare(inst: &Instance, pred: &Prediction, runner: &Runner, scratch: &Path, repos: Option<&Path>) -> Result<Prepared, NotRun> {
    let err = |e: String| NotRun::Host(e);
    let data = |e: String| NotRun::Dataset(e);
    let tree = scratch.join("tree");
    match &inst.kind {
        Kind::Exercise { dir, name, solution, test, example } => {
            // The exercise as shipped, without the reference solution and the docs.
            copy_tree(dir, &tree, &[".meta", ".docs", ".approaches", ".articles"]).map_err(|e| err(format!("copying {}: {e}", dir.display())))?;
            let stub = scratch.join("stub");
            copy_tree(dir, &stub, &[".meta", ".docs", ".approaches", ".articles"]).map_err(|e| err(e.to_string()))?;
            let mut touched: Vec<String> = solution.clone();
            match pred {
                Prediction::Gold => {
                    for (ex, sol) in gold_files(solution, example) {
                        if let Some(parent) = tree.join(&sol).parent() {
                            std::fs::create_dir_all(parent).map_err(|e| err(e.to_string()))?;
                        }
                        std::fs::copy(dir.join(&ex), tree.join(&sol)).map_err(|e| err(format!("{ex}: {e}")))?;
                        touched.push(sol);
                    }
                    // Rust reference solutions declare their own dependencies.
                    if dir.join(".meta/Cargo-example.toml").exists() {
                        std::fs::copy(dir.join(".meta/Cargo-example.toml"), tree.join("Cargo.toml")).map_err(|e| err(e.to_string()))?;
                        touched.push("Cargo.toml".into());
                    }
                }
                Prediction::Stub => {}
                Prediction::Files(files) => {
                    for (rel, bytes) in files {
                        std::fs::write(tree.join(rel), bytes).map_err(|e| err(format!("{rel}: {e}")))?;
                    }
                }
                Prediction::Patch(p) if p.trim().is_empty() => return Err(NotRun::EmptyPatch),
                Prediction::Patch(p) => {
                    let p = relative_to_exercise(p, inst, name);
                    apply_patch(&tree, &p, scratch).map_err(NotRun::PatchFailed)?;
                    touched.extend(patch_paths(&p));
                }
                Prediction::Missing => return Err(NotRun::EmptyPatch),
                Prediction::Refused(why) => return Err(NotRun::PatchFailed(format!("prediction refused: {why}"))),
                Prediction::Code(_) => return Err(data(format!("{}: a code prediction for an exercise; give files or a model_patch", inst.id))),
            }
            // Only the solution files are the prediction's. Everything else (the tests, and every
            // file a runner loads besides the solution: conftest.py, jest and babel configs,
            // package.json, CMakeLists.txt, go.mod, a build.rs) is the dataset's, whatever the
            // prediction did to it: put back, or removed if the prediction added it. Compared
            // over the whole tree, so no rename or odd diff header gets past it.
            let untrusted = matches!(pred, Prediction::Files(_) | Prediction::Patch(_));
            if untrusted {
                solution_is_plain(&tree, solution).map_err(|why| NotRun::PatchFailed(format!("prediction refused: {why}")))?;
            }
            let ignored = if untrusted { keep_only_solution(&tree, &stub, solution).map_err(|e| err(format!("restoring the exercise: {e}")))? } else { Vec::new() };
            for t in test {
                std::fs::copy(dir.join(t), tree.join(t)).map_err(|e| err(format!("restoring {t}: {e}")))?;
            }
            // A Cargo.toml may change its dependencies, not make code run at build time.
            if untrusted && solution.iter().any(|s| s == "Cargo.toml") {
                if let Err(why) = cargo_manifest_is_inert(&tree.join("Cargo.toml")) {
                    return Err(NotRun::PatchFailed(format!("prediction refused: Cargo.toml {why}")));
                }
            }
            touched.sort();
            touched.dedup();
            if untrusted {
                touched.retain(|t| solution.contains(t));
            }
            let mut applied: String = touched.iter().map(|rel| diff(&stub, &tree, rel)).collect();
            if !ignored.is_empty() {
                applied = format!("# polysandbox: ignored the prediction's changes to files that are not the exercise's solution: {}\n{applied}", ignored.join(", "));
            }
            let _ = std::fs::remove_dir_all(&stub);
            if matches!(pred, Prediction::Files(_)) && applied.is_empty() {
                return Err(NotRun::EmptyPatch);
            }
            Ok(Prepared { tree, mount: format!("/work/{name}"), test: runner.test.clone(), setup: runner.setup.clone(), applied })
        }
        Kind::Repo { repo, base_commit, gold_patch, test_patch, test_cmd, .. } => {
            let patch = match pred {
                Prediction::Gold => gold_patch.clone(),
                Prediction::Patch(p) => p.clone(),
                Prediction::Stub | Prediction::Missing => String::new(),
                Prediction::Refused(why) => return Err(NotRun::PatchFailed(format!("prediction refused: {why}"))),
                Prediction::Files(_) | Prediction::Code(_) => return Err(data(format!("{}: repository instances take a model_patch", inst.id))),
            };
            if patch.trim().is_empty() && !matches!(pred, Prediction::Stub) {
                return Err(NotRun::EmptyPatch);
            }
            let repos = repos.ok_or_else(|| data(format!("{}: repository instances need --repos DIR (a directory of git mirrors)", inst.id)))?;
            let flat = repo.replace('/', "__");
            let name = repo.rsplit('/').next().unwrap_or(repo);
            let mirror = [repos.join(repo), repos.join(format!("{repo}.git")), repos.join(&flat), repos.join(format!("{flat}.git")), repos.join(name), repos.join(format!("{name}.git"))]
                .into_iter()
                .find(|p| p.is_dir())
                .ok_or_else(|| data(format!("{}: no mirror of {repo} in {}", inst.id, repos.display())))?;
            // The mirrors may belong to someone else (a shared, read-only directory): reading
            // them is all we do, so git's ownership check does not apply (git 2.39 reads
            // safe.directory from the global config only, not from -c).
            let gitconfig = scratch.join("gitconfig");
            std::fs::write(&gitconfig, "[safe]\n\tdirectory = *\n").map_err(|e| err(e.to_string()))?;
            run_quiet(Command::new("git").env("GIT_CONFIG_GLOBAL", &gitconfig).args(["clone", "--quiet", "--shared", "--no-checkout"]).arg(&mirror).arg(&tree)).map_err(|e| err(format!("git clone {}: {e}", mirror.display())))?;
            run_quiet(git(&tree).args(["checkout", "--quiet", "--force", base_commit])).map_err(|e| data(format!("checkout {base_commit}: {e}")))?;
            if !patch.trim().is_empty() {
                apply_patch(&tree, &patch, scratch).map_err(NotRun::PatchFailed)?;
            }
            let applied = run_quiet(git(&tree).args(["diff", "--no-color"])).unwrap_or_default();
            // The tests the test patch touches go back to the base commit, then the test patch
            // goes on: the prediction's edits to them never count.
            let tests = patch_paths(test_patch);
            for t in &tests {
                if run_quiet(git(&tree).args(["cat-file", "-e", &format!("{base_commit}:{t}")])).is_ok() {
                    run_quiet(git(&tree).args(["checkout", "--quiet", base_commit, "--", t])).map_err(|e| err(format!("restoring {t}: {e}")))?;
                } else {
                    let _ = std::fs::remove_file(tree.join(t));
                }
            }
            if !test_patch.trim().is_empty() {
                let f = scratch.join("test.patch");
                std::fs::write(&f, test_patch).map_err(|e| err(e.to_string()))?;
                run_quiet(git(&tree).args(["apply", "--whitespace=nowarn"]).arg(&f)).map_err(|e| data(format!("the dataset's test_patch does not apply: {e}")))?;
            }
            let test = match test_cmd {
                Some(c) => vec!["sh".into(), "-c".into(), c.clone()],
                None if !runner.repo_test.is_empty() => {
                    let quoted: Vec<String> = tests.iter().map(|t| shell_quote(t)).collect();
                    runner.repo_test.iter().map(|a| a.replace("{tests}", &quoted.join(" "))).collect::<Vec<_>>()
                }
                None => runner.test.clone(),
            };
            // `{tests}` stands for several arguments: run it through the shell.
            let test = if runner.repo_test.iter().any(|a| a.contains("{tests}")) && test_cmd.is_none() {
                vec!["sh".into(), "-c".into(), test.join(" ")]
            } else {
                test
            };
            Ok(Prepared { tree, mount: "/testbed".into(), test, setup: vec![], applied })
        }
        Kind::Snippet { gold, stub, test } => {
            let code = match pred {
                Prediction::Gold => gold.clone(),
                Prediction::Stub => stub.clone(),
                Prediction::Code(c) => c.clone(),
                Prediction::Patch(p) => p.clone(),
                Prediction::Missing => String::new(),
                Prediction::Refused(why) => return Err(NotRun::PatchFailed(format!("prediction refused: {why}"))),
                Prediction::Files(_) => return Err(data(format!("{}: snippet instances take code", inst.id))),
            };
            if code.trim().is_empty() {
                return Err(NotRun::EmptyPatch);
            }
            let file = runner.snippet_file.clone().ok_or_else(|| data(format!("{}: the {} runner has no snippet_file", inst.id, inst.language)))?;
            std::fs::create_dir_all(&tree).map_err(|e| err(e.to_string()))?;
            std::fs::write(tree.join(&file), format!("{code}\n\n{test}\n")).map_err(|e| err(e.to_string()))?;
            let applied = code.clone();
            Ok(Prepared { tree, mount: "/work/snippet".into(), test: runner.snippet_run.clone(), setup: vec![], applied })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gold_file_mapping() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(gold_files(&s(&["a.h", "a.cpp"]), &s(&[".meta/example.h", ".meta/example.cpp"])), vec![(".meta/example.h".into(), "a.h".into()), (".meta/example.cpp".into(), "a.cpp".into())]);
        assert_eq!(
            gold_files(&s(&["src/main/java/A.java"]), &s(&[".meta/src/reference/java/A.java", ".meta/src/reference/java/B.java"])),
            vec![(".meta/src/reference/java/A.java".into(), "src/main/java/A.java".into()), (".meta/src/reference/java/B.java".into(), "src/main/java/B.java".into())]
        );
        assert_eq!(gold_files(&s(&["src/lib.rs", "Cargo.toml"]), &s(&[".meta/example.rs"])), vec![(".meta/example.rs".into(), "src/lib.rs".into())]);
        assert_eq!(gold_files(&s(&["sum-two.js"]), &s(&[".meta/proof.ci.js"])), vec![(".meta/proof.ci.js".into(), "sum-two.js".into())]);
    }

    #[test]
    fn patch_paths_and_quoting() {
        let p = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/new.py\n";
        assert_eq!(patch_paths(p), vec!["x.py", "new.py"]);
        assert_eq!(shell_quote("tests/t.py"), "tests/t.py");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }

    /// The host tools a patch goes through (git apply, then GNU patch) write nothing outside
    /// the tree: not beyond a symlink the same patch makes, not through `..`.
    #[test]
    fn patches_write_nothing_outside_the_tree() {
        let base = std::env::temp_dir().join(format!("psb-patch-{}", std::process::id()));
        let (tree, out, scratch) = (base.join("tree"), base.join("out"), base.join("scratch"));
        for d in [&tree, &out, &scratch] {
            std::fs::create_dir_all(d).unwrap();
        }
        let o = out.display();
        let through_link = format!("diff --git a/tests b/tests\nnew file mode 120000\n--- /dev/null\n+++ b/tests\n@@ -0,0 +1 @@\n+{o}\n\\ No newline at end of file\ndiff --git a/tests/evil.rs b/tests/evil.rs\nnew file mode 100644\n--- /dev/null\n+++ b/tests/evil.rs\n@@ -0,0 +1 @@\n+evil\n");
        let up = "--- /dev/null\n+++ b/../out/evil.rs\n@@ -0,0 +1 @@\n+evil\n".to_string();
        for p in [through_link, up] {
            let _ = apply_patch(&tree, &p, &scratch);
            assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "{p}");
        }
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_predicted_cargo_manifest_runs_nothing_at_build_time() {
        let dir = std::env::temp_dir().join(format!("ps-cargo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("Cargo.toml");
        let check = |text: &str| {
            std::fs::write(&p, text).unwrap();
            cargo_manifest_is_inert(&p)
        };
        let base = "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
        assert!(check(&format!("{base}[dependencies]\nregex = \"1\"\n")).is_ok());
        assert!(check(&format!("{base}build = false\n")).is_ok());
        assert!(check(&base.replace("edition", "build = \"build.rs\"\nedition")).unwrap_err().contains("build script"));
        assert!(check(&base.replace("edition", "links = \"z\"\nedition")).is_err());
        assert!(check(&format!("{base}[build-dependencies]\ncc = \"1\"\n")).is_err());
        assert!(check(&format!("{base}[target.'cfg(unix)'.build-dependencies]\ncc = \"1\"\n")).is_err());
        assert!(check(&format!("{base}[patch.crates-io]\nregex = {{ path = \"/tmp\" }}\n")).is_err());
        assert!(check(&format!("{base}[lib]\nproc-macro = true\n")).is_err());
        assert!(check("not toml [").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
