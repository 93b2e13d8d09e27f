//! The one diff module: every reading and writing of unified diffs eval does.
//! - the paths a patch names for safety ([`named_paths`], [`refuse_git_dir`], [`touched`]);
//! - its per-file sections, for the tamper checks ([`sections`]);
//! - the SWE-bench harness's own readings, kept to its regexes so its scripts come out the
//!   same ([`modified_files`], [`test_patch_paths`]);
//! - the diff of a file for the logs ([`unified_diff`]);
//! - a patch less the files of another ([`without_files`]): Multi-SWE-bench's test files kept
//!   as its test patch makes them, whatever the prediction does to them.
//!
//! Patches are applied inside the sandbox, never on the host: by the drivers (driver.rs), in
//! the harness's three attempts.
//!
//! Unified diffs as data: the paths a patch names, in every header the tools that apply it
//! read (git apply and GNU patch), and the refusal every prediction's patch gets before any
//! tool sees it: nothing under a `.git` directory, at any depth, by any spelling, through a
//! rename, or through a symlink the same patch makes.
//!
//! Why a refusal of our own: `git apply` refuses `.git/` paths, but GNU patch (the harness's
//! last attempt) does not: it takes names from `Index:` lines and context or normal diffs
//! too, and follows symlinks that stay inside the tree (`g -> .git`, then `g/config`). A
//! patch that reaches `.git/` plants a hook or an executing configuration key
//! (`core.fsmonitor`, `diff.external`, ...) for the next git command to run.

/// Where a path was named, for the reason given back.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    pub path: String,
    /// The header that names it (`+++`, `rename to`, `symlink target`, ...).
    pub how: &'static str,
}

/// Undoes git's and GNU patch's C-style quoting of a name (`"a/\056git/x"`), if quoted.
pub fn unquote(s: &str) -> String {
    let s = s.trim();
    let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else { return s.to_string() };
    let b = inner.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        out.push(match c {
            b'a' => 7,
            b'b' => 8,
            b't' => b'\t',
            b'n' => b'\n',
            b'v' => 11,
            b'f' => 12,
            b'r' => b'\r',
            b'0'..=b'7' => {
                let mut v = (c - b'0') as u32;
                for _ in 0..2 {
                    if i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                        v = v * 8 + (b[i] - b'0') as u32;
                        i += 1;
                    }
                }
                v as u8
            }
            other => other,
        });
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every way a header line's rest can be read as names: each `"..."` segment unquoted (escapes
/// honoured, an escaped quote inside one included), each whitespace-separated word, the rest up
/// to a tab, and the whole rest. Over-reading is safe: any of them naming `.git` refuses.
fn names_in(rest: &str) -> Vec<String> {
    let rest = rest.trim_end_matches(['\r', '\n']);
    let mut v = vec![rest.trim().to_string(), rest.split('\t').next().unwrap_or(rest).trim().to_string()];
    v.extend(rest.split_whitespace().map(String::from));
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let mut e = i + 1;
            while e < b.len() && b[e] != b'"' {
                e += if b[e] == b'\\' { 2 } else { 1 };
            }
            let seg = &rest[i..(e + 1).min(rest.len())];
            v.push(unquote(seg));
            // The text between quoted segments too (`"a/x" b/y`).
            i = e + 1;
            continue;
        }
        i += 1;
    }
    // Unquoted segments after removing the quoted ones.
    let mut plain = String::new();
    let mut q = false;
    let mut k = 0;
    while k < b.len() {
        if b[k] == b'"' {
            q = !q;
        } else if q && b[k] == b'\\' {
            k += 1;
        } else if !q {
            plain.push(b[k] as char);
        }
        k += 1;
    }
    v.extend(plain.split_whitespace().map(String::from));
    v
}

/// Whether a path component is git's own directory, however spelt: `.git` in any case, with
/// the trailing dots or spaces some filesystems drop, or its 8.3 short name.
pub fn is_git_dir(component: &str) -> bool {
    let c = component.to_ascii_lowercase();
    let c = c.trim_end_matches([' ', '.']);
    c == ".git" || c == "git~1"
}

/// Every path a patch names, in the order met: `diff --git` names, `rename`/`copy` names,
/// `---`/`+++`/`***` and `Index:` names, and the targets of symlinks it makes. The bodies of
/// unified hunks (counted by their headers) are skipped, so a line of content is never taken
/// for a header.
pub fn named_paths(patch: &str) -> Vec<Named> {
    let mut out = Vec::new();
    let lines: Vec<&str> = patch.split('\n').collect();
    let mut i = 0;
    // The current `diff --git` section makes a symlink (mode 120000).
    let mut symlink = false;
    while i < lines.len() {
        let line = lines[i].trim_end_matches('\r');
        i += 1;
        if let Some(rest) = line.strip_prefix("diff --git ") {
            symlink = false;
            for p in names_in(rest) {
                out.push(Named { path: p, how: "diff --git" });
            }
            continue;
        }
        if line.starts_with("new file mode 120000") || line.starts_with("new mode 120000") {
            symlink = true;
            continue;
        }
        for (prefix, how) in [
            ("rename from ", "rename from"),
            ("rename to ", "rename to"),
            ("copy from ", "copy from"),
            ("copy to ", "copy to"),
            ("rename old ", "rename from"),
            ("rename new ", "rename to"),
        ] {
            if let Some(rest) = line.strip_prefix(prefix) {
                for p in names_in(rest) {
                    out.push(Named { path: p, how });
                }
            }
        }
        for (prefix, how) in
            [("--- ", "---"), ("+++ ", "+++"), ("*** ", "***"), ("Index: ", "Index:"), ("Index:", "Index:")]
        {
            if let Some(rest) = line.strip_prefix(prefix) {
                // `*** 1,5 ****` is a context hunk's range, not a name.
                if how == "***" && rest.trim_end().ends_with("****") {
                    continue;
                }
                for p in names_in(rest) {
                    out.push(Named { path: p, how });
                }
                break;
            }
        }
        // A binary patch's base85 lines are read as any other line: none can be a header (each
        // starts with a length letter and holds no space), and GNU patch, which does not apply
        // binary patches, goes on reading headers among them.
        if let Some(h) = line.strip_prefix("@@ -") {
            // @@ -a[,b] +c[,d] @@: b lines of the old side, d of the new.
            let count = |s: &str| -> usize { s.split(',').nth(1).and_then(|n| n.parse().ok()).unwrap_or(1) };
            let mut it = h.split(' ');
            let (old, new) = (
                it.next().map(count).unwrap_or(0),
                it.next().and_then(|n| n.strip_prefix('+')).map(count).unwrap_or(0),
            );
            let (mut o, mut n) = (0, 0);
            while i < lines.len() && (o < old || n < new) {
                let l = lines[i];
                match l.as_bytes().first() {
                    Some(b'+') => {
                        n += 1;
                        if symlink {
                            out.push(Named { path: l[1..].trim_end_matches('\r').to_string(), how: "symlink target" });
                        }
                    }
                    Some(b'-') => o += 1,
                    Some(b'\\') => {}
                    // A context line (an empty one is a context line whose space was lost).
                    _ => {
                        o += 1;
                        n += 1;
                    }
                }
                i += 1;
            }
            // "\ No newline at end of file" after the last line.
            while i < lines.len() && lines[i].starts_with('\\') {
                i += 1;
            }
        }
    }
    out
}

/// The refusal made before any tool applies a prediction's patch: `Err` naming the first path
/// that is, or leads into, a `.git` directory (a symlink target counts, as it leads there).
pub fn refuse_git_dir(patch: &str) -> Result<(), String> {
    for n in named_paths(patch) {
        if n.path.split(['/', '\\']).any(is_git_dir) {
            let shown: String = n.path.chars().take(200).map(|c| if c.is_control() { '?' } else { c }).collect();
            return Err(format!("the patch reaches into .git ({} {shown:?}): no tool applies it", n.how));
        }
    }
    Ok(())
}

/// Paths a unified diff touches, as `git apply` names them: the `b/` side, and `a/` for
/// deletions, each once.
pub fn touched(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in named_paths(patch) {
        if n.how != "---" && n.how != "+++" {
            continue;
        }
        let p = n.path.trim();
        if let Some(rel) = p.strip_prefix("b/").or_else(|| p.strip_prefix("a/")) {
            if !out.iter().any(|x| x == rel) {
                out.push(rel.to_string());
            }
        }
    }
    out
}

/// A patch's per-file sections: (the path it changes, its lines), in order.
pub fn sections(patch: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let strip = |p: &str| -> String {
        let p = unquote(p.split('\t').next().unwrap_or(p));
        p.strip_prefix("a/").or_else(|| p.strip_prefix("b/")).unwrap_or(&p).to_string()
    };
    for line in patch.split('\n') {
        let line = line.trim_end_matches('\r');
        let start = if let Some(rest) = line.strip_prefix("diff --git ") {
            rest.rsplit_once(" b/").map(|(_, b)| b.to_string()).or_else(|| Some(strip(rest)))
        } else if let Some(rest) = line.strip_prefix("+++ ") {
            let p = strip(rest);
            (p != "/dev/null" && out.last().is_none_or(|(last, _)| *last != p)).then_some(p)
        } else if let Some(rest) = line.strip_prefix("Index: ") {
            Some(strip(rest))
        } else {
            line.strip_prefix("rename to ").or_else(|| line.strip_prefix("copy to ")).map(&strip)
        };
        match start {
            Some(p) => out.push((p, String::new())),
            None => {
                if let Some((_, body)) = out.last_mut() {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

/// A patch less its file sections that name any of `paths` (as `git apply` and GNU patch read
/// names: `diff --git`, `---`/`+++` less their `a/`/`b/`, `rename`/`copy` names): what is left,
/// byte for byte, and the paths of the sections left out. A section starts at `diff --git` or
/// `Index:`, or at a `---`/`+++` pair outside a section's header; hunk bodies are counted by
/// their headers, so no line of content starts one.
pub fn without_files(patch: &str, paths: &[String]) -> (String, Vec<String>) {
    let lines: Vec<&str> = patch.split_inclusive('\n').collect();
    let bare = |i: usize| lines.get(i).map(|l| l.trim_end_matches(['\n', '\r'])).unwrap_or("");
    let mut starts = Vec::new();
    // In the header of a `diff --git` or `Index:` section (no hunk yet): its `---` is its own.
    let mut header = false;
    let mut i = 0;
    while i < lines.len() {
        let line = bare(i);
        if line.starts_with("diff --git ") || line.starts_with("Index: ") {
            starts.push(i);
            header = true;
        } else if line.starts_with("--- ") && bare(i + 1).starts_with("+++ ") {
            if !header {
                starts.push(i);
            }
            header = false;
            i += 2;
            continue;
        } else if let Some(h) = line.strip_prefix("@@ -") {
            header = false;
            let count = |s: &str| -> usize { s.split(',').nth(1).and_then(|n| n.parse().ok()).unwrap_or(1) };
            let mut it = h.split(' ');
            let (old, new) = (
                it.next().map(count).unwrap_or(0),
                it.next().and_then(|n| n.strip_prefix('+')).map(count).unwrap_or(0),
            );
            let (mut o, mut n) = (0, 0);
            i += 1;
            while i < lines.len() && (o < old || n < new) {
                match lines[i].as_bytes().first() {
                    Some(b'+') => n += 1,
                    Some(b'-') => o += 1,
                    Some(b'\\') => {}
                    _ => {
                        o += 1;
                        n += 1;
                    }
                }
                i += 1;
            }
            continue;
        } else if line.starts_with("GIT binary patch") {
            header = false;
        }
        i += 1;
    }
    let mut kept = String::new();
    let mut dropped = Vec::new();
    let bounds: Vec<usize> = starts.iter().copied().chain([lines.len()]).collect();
    kept.extend(lines[..bounds[0]].iter().copied());
    for w in bounds.windows(2) {
        let text: String = lines[w[0]..w[1]].concat();
        // Every way git could read each name (it strips the first component, whatever it is,
        // and squashes doubled slashes): over-reading only leaves out more of the prediction.
        let paths: Vec<String> = paths.iter().map(|p| squash_slashes(p)).collect();
        let names: Vec<String> = named_paths(&text)
            .into_iter()
            .flat_map(|n| {
                let full = squash_slashes(&n.path);
                let stripped = full.split_once('/').map(|(_, rest)| rest.to_string());
                match n.how {
                    "diff --git" | "---" | "+++" => [Some(full), stripped],
                    _ => [Some(full), None],
                }
            })
            .flatten()
            .collect();
        match names.iter().find(|n| paths.contains(n)) {
            Some(hit) => dropped.push(hit.clone()),
            None => kept.push_str(&text),
        }
    }
    (kept, dropped)
}

/// A path with each run of slashes made one, and no leading `./` (as git reads a patch's).
fn squash_slashes(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for c in p.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    while let Some(rest) = out.strip_prefix("./") {
        out = rest.to_string();
    }
    out
}

/// Files a patch touches, as the harness's eval script names them (`diff --git a/X b/Y`: Y,
/// the name after a rename).
pub fn modified_files(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            if let Some(i) = rest.find(" b/") {
                let f = rest[i + 3..].to_string();
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
    }
    out
}

/// Every path the test patch names, before and after a rename: what is put back to the base
/// commit (or removed, when the base has no such file) before the eval script.
pub fn test_patch_paths(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            if let Some(i) = rest.find(" b/") {
                for f in [&rest[..i], &rest[i + 3..]] {
                    if !out.iter().any(|x| x == f) {
                        out.push(f.to_string());
                    }
                }
            }
        }
    }
    out
}

/// The unified diff of one file, for the logs (`None`: absent).
pub fn unified_diff(rel: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    if old == new {
        return String::new();
    }
    let (la, lb) = (
        if old.is_some() { format!("a/{rel}") } else { "/dev/null".into() },
        if new.is_some() { format!("b/{rel}") } else { "/dev/null".into() },
    );
    // The host's time is bounded whatever the prediction: a diff of at most a few MiB, within a
    // deadline (past it, similar gives a coarser but correct diff).
    const MOST: usize = 4 << 20;
    let (o, n) = (old.unwrap_or_default(), new.unwrap_or_default());
    if o.len() > MOST || n.len() > MOST {
        return format!(
            "--- {la}\n+++ {lb}\n# polysandbox: {} bytes to {} bytes; too large to show as a diff\n",
            o.len(),
            n.len()
        );
    }
    let (a, b) = (String::from_utf8_lossy(o), String::from_utf8_lossy(n));
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(a.as_ref(), b.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&la, &lb)
        .to_string()
}

#[cfg(test)]
mod without_files_tests {
    use super::*;

    #[test]
    fn the_sections_of_other_files_are_left_out_whatever_their_style() {
        let tests = vec!["tests/t.rs".to_string(), "old/name.rs".to_string()];
        let git = "diff --git a/src/lib.rs b/src/lib.rs\nindex 1..2 100644\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1 @@\n-a\n+b\n--- not a header\n";
        let test = "diff --git a/tests/t.rs b/tests/t.rs\n--- a/tests/t.rs\n+++ b/tests/t.rs\n@@ -1 +1 @@\n-x\n+y\n";
        let renamed = "diff --git a/old/name.rs b/src/new.rs\nsimilarity index 90%\nrename from old/name.rs\nrename to src/new.rs\n";
        let plain = "--- tests/t.rs\n+++ tests/t.rs\n@@ -1 +1 @@\n-x\n+z\n";
        let binary = "diff --git a/tests/t.rs b/tests/t.rs\nGIT binary patch\nliteral 3\nKcmZ>\n\n";
        let patch = format!("From: someone\n\n{git}{test}{plain}{renamed}{binary}");
        let (kept, dropped) = without_files(&patch, &tests);
        // The hunk's own `--- not a header` line is content: no section starts there.
        assert_eq!(kept, format!("From: someone\n\n{git}"));
        assert_eq!(dropped, vec!["tests/t.rs", "tests/t.rs", "old/name.rs", "tests/t.rs"]);
        // Nothing to leave out: the patch as it was.
        assert_eq!(without_files(&patch, &[]), (patch.clone(), vec![]));
        assert_eq!(without_files(git, &tests).0, git);
    }

    /// git strips a name's first component whatever it is (`x/`, `y/`, `--src-prefix`) and
    /// squashes doubled slashes: a section so named is the test file's too (the red team's
    /// bypass: `diff --git x/tests/t.rs y/tests/t.rs`, graded resolved before).
    #[test]
    fn a_section_named_with_other_prefixes_is_still_the_test_files() {
        let tests = vec!["tests/t.rs".to_string()];
        let body = "@@ -1 +1 @@\n-x\n+y\n";
        for head in [
            "diff --git x/tests/t.rs y/tests/t.rs\n--- x/tests/t.rs\n+++ y/tests/t.rs\n",
            "--- orig/tests/t.rs\n+++ new/tests/t.rs\n",
            "diff --git a/tests//t.rs b/tests//t.rs\n--- a/tests//t.rs\n+++ b/tests//t.rs\n",
            "diff --git \"a/tests/t.rs\" \"b/tests/t.rs\"\n--- \"a/tests/t.rs\"\n+++ \"b/tests/t.rs\"\n",
        ] {
            let (kept, dropped) = without_files(&format!("{head}{body}"), &tests);
            assert_eq!((kept.as_str(), dropped.len()), ("", 1), "{head}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(p: &str) -> bool {
        refuse_git_dir(p).is_err()
    }

    #[test]
    fn every_way_into_git_is_refused() {
        let body = "@@ -0,0 +1 @@\n+[core]\n";
        // Unified, both sides, any depth, any case or spelling.
        for name in [
            ".git/config",
            "sub/.git/hooks/post-checkout",
            ".GIT/config",
            ".git./config",
            ".git /config",
            "git~1/config",
            "a/b/c/.Git/info/attributes",
        ] {
            assert!(refused(&format!("--- a/{name}\n+++ b/{name}\n{body}")), "{name}");
            assert!(refused(&format!("--- /dev/null\n+++ b/{name}\n{body}")), "{name}");
        }
        // git's headers, quoted with an octal escape, renames and copies.
        assert!(refused(&format!("diff --git \"a/\\056git/config\" \"b/\\056git/config\"\n--- \"a/\\056git/config\"\n+++ \"b/\\056git/config\"\n{body}")));
        assert!(refused("diff --git a/x b/.git/config\nsimilarity index 100%\nrename from x\nrename to .git/config\n"));
        assert!(refused("diff --git a/x b/y\ncopy from x\ncopy to sub/.git/HEAD\n"));
        // GNU patch's other formats: Index: names, context and normal diffs.
        assert!(refused("Index: x/.git/info/exclude\n1a2\n> foo\n"));
        assert!(refused(
            "*** a/.git/config\t2020-01-01\n--- b/.git/config\t2020-01-01\n***************\n*** 1 ****\n--- 1,2 ----\n"
        ));
        // A symlink into .git made by the same patch, then written through.
        assert!(refused("diff --git a/g b/g\nnew file mode 120000\n--- /dev/null\n+++ b/g\n@@ -0,0 +1 @@\n+.git\n\\ No newline at end of file\ndiff --git a/g/config b/g/config\n--- a/g/config\n+++ b/g/config\n@@ -0,0 +1 @@\n+x\n"));
        assert!(refused(
            "diff --git a/h b/h\nnew file mode 120000\n--- /dev/null\n+++ b/h\n@@ -0,0 +1 @@\n+./sub/../.git/hooks\n"
        ));
        // A symlink to the tree itself, then .git through it: the path names .git.
        assert!(refused("diff --git a/h b/h\nnew file mode 120000\n--- /dev/null\n+++ b/h\n@@ -0,0 +1 @@\n+.\n--- a/h/.git/config\n+++ b/h/.git/config\n@@ -0,0 +1 @@\n+x\n"));
        // Headers after a binary patch, which GNU patch reads (it skips the binary part).
        assert!(refused("diff --git a/b.dat b/b.dat\nnew file mode 100644\nGIT binary patch\nliteral 0\nHcmV?d00001\n\nliteral 0\nHcmV?d00001\n\n--- /dev/null\n+++ b/.git/info/attributes\n@@ -0,0 +1 @@\n+* filter=pwn\n"));
        // An escaped quote inside a quoted name does not end it.
        assert!(refused("diff --git \"a/x1\\\" \\056\" \"b/\\056git/HEAD\"\nnew file mode 100644\n--- /dev/null\n+++ b/z/z/long_name\n@@ -0,0 +1 @@\n+x\n"));
        // A timestamp after the name does not hide it.
        assert!(refused(
            "--- a/.git/config 2020-01-01 00:00:00\n+++ b/.git/config 2020-01-01 00:00:00\n@@ -0,0 +1 @@\n+x\n"
        ));
    }

    #[test]
    fn ordinary_patches_pass_and_content_is_not_a_header() {
        let ok = "diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\
diff --git a/.gitignore b/.gitignore\n--- a/.gitignore\n+++ b/.gitignore\n@@ -1 +1,2 @@\n x\n+.git-cache/\n\
diff --git a/docs/git.md b/docs/git.md\n--- a/docs/git.md\n+++ b/docs/git.md\n@@ -1,3 +1,3 @@\n--- a/.git/config is a removed line\n+++ b/.git/config is an added line\n- old\n+ new\n";
        assert_eq!(refuse_git_dir(ok), Ok(()), "{:?}", named_paths(ok));
        let symlink_elsewhere =
            "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+../lib/.gitkeep-not\n";
        assert_eq!(refuse_git_dir(symlink_elsewhere), Ok(()));
        assert_eq!(touched("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x\n"), vec!["x.py", "new.py"]);
        assert_eq!(unquote("\"a/b\\tc\\303\\251\""), "a/b\tcé");
    }
}
