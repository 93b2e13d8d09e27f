//! SWE-bench's `-d/--dataset_name` and `-s/--split`, as its harness reads them: a local file,
//! a directory holding `SPLIT.parquet`, or a Hugging Face dataset name (`SWE-bench/SWE-bench_Lite`,
//! or the harness's short names `lite`, `swe-bench`), found in the local Hugging Face cache as
//! `huggingface-cli download --repo-type dataset NAME` or `datasets.load_dataset` leave it
//! (`datasets--ORG--NAME/snapshots/REV/**/*.parquet`). Nothing is downloaded.

use std::path::{Path, PathBuf};

/// The harness's short names for its datasets (its `load_swebench_dataset`).
fn alias(name: &str) -> &str {
    match name.to_lowercase().as_str() {
        "swe-bench" | "swebench" | "swe_bench" => "SWE-bench/SWE-bench",
        "swe-bench-lite" | "swebench-lite" | "swe_bench_lite" | "swe-bench_lite" | "lite" => "SWE-bench/SWE-bench_Lite",
        _ => name,
    }
}

/// Where the Hugging Face libraries keep datasets, in the order they look: `datasets`' cache
/// (`$HF_DATASETS_CACHE`, `$HF_HOME/datasets`), then the hub's (`$HF_HUB_CACHE`,
/// `$HF_HOME/hub`), `$HF_HOME` defaulting to `$XDG_CACHE_HOME/huggingface` or
/// `~/.cache/huggingface`.
pub fn cache_roots(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = set("HF_HOME").unwrap_or_else(|| {
        set("XDG_CACHE_HOME")
            .or_else(|| set("HOME").map(|h| h.join(".cache")))
            .unwrap_or_else(|| PathBuf::from(".cache"))
            .join("huggingface")
    });
    let mut roots = Vec::new();
    for r in [
        set("HF_DATASETS_CACHE"),
        Some(home.join("datasets")),
        set("HUGGINGFACE_HUB_CACHE"),
        set("HF_HUB_CACHE"),
        Some(home.join("hub")),
    ]
    .into_iter()
    .flatten()
    {
        if !roots.contains(&r) {
            roots.push(r);
        }
    }
    roots
}

/// The dataset file a `-d/--dataset_name` and `-s/--split` name: a file as it is; a directory's
/// `SPLIT.parquet` (else the directory itself, an Aider layout); a Hugging Face name, its
/// split's Parquet file in the first cache root that holds the dataset. One line when none.
pub fn resolve(name: &str, split: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, String> {
    let path = Path::new(name);
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    if path.is_dir() {
        let p = path.join(format!("{split}.parquet"));
        return Ok(if p.is_file() { p } else { path.to_path_buf() });
    }
    let lower = name.to_lowercase();
    if [".json", ".jsonl", ".parquet"].iter().any(|e| lower.ends_with(e)) || name.starts_with(['.', '/']) {
        return Err(format!("--dataset_name {name}: no such file"));
    }
    let full = alias(name);
    let Some((org, repo)) = full.split_once('/').filter(|(o, r)| !o.is_empty() && !r.is_empty() && !r.contains('/'))
    else {
        return Err(format!(
            "--dataset_name {name}: neither a file nor a Hugging Face dataset name (ORG/NAME, e.g. SWE-bench/SWE-bench_Lite)"
        ));
    };
    // The SWE-bench datasets are published under both organisations (princeton-nlp, the older).
    let mut orgs = vec![org.to_string()];
    for (a, b) in [("princeton-nlp", "SWE-bench"), ("SWE-bench", "princeton-nlp")] {
        if org.eq_ignore_ascii_case(a) {
            orgs.push(b.to_string());
        }
    }
    let roots = cache_roots(env);
    let mut arrow_only = None;
    for root in &roots {
        for org in &orgs {
            if let Some(dir) = find_dir(root, &format!("datasets--{org}--{repo}")) {
                return split_file(&dir, full, split);
            }
            // `datasets`' own Arrow cache (`ORG___NAME`, lower case): not read here.
            if arrow_only.is_none() {
                arrow_only = find_dir(root, &format!("{org}___{repo}"));
            }
        }
    }
    let looked: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    let arrow = arrow_only
        .map(|d| format!(" ({} holds only datasets' Arrow cache, which is not read)", d.display()))
        .unwrap_or_default();
    Err(format!(
        "--dataset_name {full}: not in the local Hugging Face cache (looked in {}){arrow}: download it with `huggingface-cli download --repo-type dataset {full}`, or give its Parquet, JSON or JSONL file as DATASET",
        looked.join(", ")
    ))
}

/// `root/name`, its name compared without case (the hub's names are not case-sensitive).
fn find_dir(root: &Path, name: &str) -> Option<PathBuf> {
    let exact = root.join(name);
    if exact.is_dir() {
        return Some(exact);
    }
    std::fs::read_dir(root)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().eq_ignore_ascii_case(name) && e.path().is_dir())
        .map(|e| e.path())
}

/// The split's Parquet file in a hub cache entry: the snapshot `refs/main` names, else the
/// newest; in it, `SPLIT.parquet`, `SPLIT-*.parquet`, or any `*.parquet` in a directory named
/// SPLIT. A split in several files is refused, naming them.
fn split_file(dir: &Path, name: &str, split: &str) -> Result<PathBuf, String> {
    let snapshots = dir.join("snapshots");
    let main = std::fs::read_to_string(dir.join("refs/main")).ok().map(|s| snapshots.join(s.trim()));
    let snapshot = match main.filter(|p| p.is_dir()) {
        Some(p) => p,
        None => std::fs::read_dir(&snapshots)
            .map_err(|e| format!("--dataset_name {name}: {}: {e}", snapshots.display()))?
            .flatten()
            .filter(|e| e.path().is_dir())
            .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
            .map(|e| e.path())
            .ok_or_else(|| format!("--dataset_name {name}: {} holds no snapshot", snapshots.display()))?,
    };
    let mut all = Vec::new();
    parquet_files(&snapshot, 0, &mut all);
    let is_split = |p: &Path| {
        let file = p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let parent = p.parent().and_then(|d| d.file_name()).map(|d| d.to_string_lossy().into_owned());
        file == format!("{split}.parquet") || file.starts_with(&format!("{split}-")) || parent.as_deref() == Some(split)
    };
    let mut files: Vec<PathBuf> = all.iter().filter(|p| is_split(p)).cloned().collect();
    files.sort();
    match files.len() {
        1 => Ok(files.remove(0)),
        0 => {
            let mut splits: Vec<String> = all
                .iter()
                .filter_map(|p| p.file_name())
                .map(|f| f.to_string_lossy().split(['-', '.']).next().unwrap_or("").to_string())
                .collect();
            splits.sort();
            splits.dedup();
            Err(format!(
                "--dataset_name {name}: no split {split:?} in {} (its Parquet files: {})",
                snapshot.display(),
                if splits.is_empty() { "none".to_string() } else { splits.join(", ") }
            ))
        }
        n => Err(format!(
            "--dataset_name {name}: split {split:?} is in {n} files ({}): join them into one and give it as DATASET",
            files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Every `*.parquet` under `dir` (a snapshot's files are symlinks to the cache's blobs).
fn parquet_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 4 {
        return;
    }
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            parquet_files(&p, depth + 1, out);
        } else if p.extension().is_some_and(|x| x == "parquet") && p.is_file() {
            out.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tmp(PathBuf);
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tmp(name: &str) -> Tmp {
        let d = std::env::temp_dir().join(format!("psb-hf-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }

    /// A hub cache entry as huggingface-cli leaves it: a blob, and the snapshot's symlink to it.
    fn hub_entry(root: &Path, dir: &str, rev: &str, files: &[&str], main: bool) {
        let d = root.join(dir);
        std::fs::create_dir_all(d.join("blobs")).unwrap();
        for (i, f) in files.iter().enumerate() {
            let blob = d.join("blobs").join(format!("{rev}{i}"));
            std::fs::write(&blob, "PAR1").unwrap();
            let link = d.join("snapshots").join(rev).join(f);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&blob, &link).unwrap();
        }
        if main {
            std::fs::create_dir_all(d.join("refs")).unwrap();
            std::fs::write(d.join("refs/main"), rev).unwrap();
        }
    }

    #[test]
    fn the_cache_roots_follow_the_hugging_face_variables() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(
            cache_roots(&env(&[("HOME", "/home/u")])),
            [PathBuf::from("/home/u/.cache/huggingface/datasets"), PathBuf::from("/home/u/.cache/huggingface/hub")]
        );
        assert_eq!(
            cache_roots(&env(&[
                ("HOME", "/h"),
                ("HF_HOME", "/hf"),
                ("HF_DATASETS_CACHE", "/d"),
                ("HF_HUB_CACHE", "/hub")
            ])),
            [PathBuf::from("/d"), PathBuf::from("/hf/datasets"), PathBuf::from("/hub"), PathBuf::from("/hf/hub")]
        );
        assert_eq!(cache_roots(&env(&[("XDG_CACHE_HOME", "/x")]))[0], PathBuf::from("/x/huggingface/datasets"));
    }

    #[test]
    fn a_dataset_name_is_found_in_the_local_cache() {
        let t = tmp("cache");
        let hub = t.0.join("hub");
        // Two revisions, refs/main naming the older: its file is the one.
        hub_entry(
            &hub,
            "datasets--princeton-nlp--SWE-bench_Lite",
            "aaa",
            &["data/test-00000-of-00001.parquet", "data/dev-00000-of-00001.parquet"],
            true,
        );
        hub_entry(&hub, "datasets--princeton-nlp--SWE-bench_Lite", "bbb", &["data/test-00000-of-00001.parquet"], false);
        let home = t.0.display().to_string();
        let env = move |k: &str| (k == "HF_HOME").then(|| home.clone());
        let p = resolve("princeton-nlp/SWE-bench_Lite", "test", &env).unwrap();
        assert!(p.ends_with("snapshots/aaa/data/test-00000-of-00001.parquet"), "{}", p.display());
        assert!(resolve("princeton-nlp/SWE-bench_Lite", "dev", &env)
            .unwrap()
            .ends_with("data/dev-00000-of-00001.parquet"));
        // The harness's short name, the other organisation, another case.
        assert_eq!(resolve("lite", "test", &env).unwrap(), p);
        assert_eq!(resolve("swe-bench/swe-bench_lite", "test", &env).unwrap(), p);
        // A split it lacks, named with the ones it has.
        let e = resolve("princeton-nlp/SWE-bench_Lite", "train", &env).unwrap_err();
        assert!(e.contains("no split \"train\"") && e.contains("dev, test"), "{e}");
        // A split in several files; one in a directory of its name (the parquet conversion's
        // layout) in datasets' own cache directory.
        hub_entry(
            &t.0.join("datasets"),
            "datasets--o--sharded",
            "r",
            &["data/test-00000-of-00002.parquet", "data/test-00001-of-00002.parquet"],
            true,
        );
        let e = resolve("o/sharded", "test", &env).unwrap_err();
        assert!(e.contains("is in 2 files"), "{e}");
        hub_entry(&t.0.join("datasets"), "datasets--o--conv", "r", &["default/test/0000.parquet"], true);
        assert!(resolve("o/conv", "test", &env).unwrap().ends_with("default/test/0000.parquet"));
        // Absent: where it looked, and how to get it; datasets' Arrow cache is named.
        std::fs::create_dir_all(t.0.join("datasets/o___arrow-only")).unwrap();
        let e = resolve("o/arrow-only", "test", &env).unwrap_err();
        assert!(
            e.contains("not in the local Hugging Face cache") && e.contains(&format!("{}/hub", t.0.display())),
            "{e}"
        );
        assert!(
            e.contains("huggingface-cli download --repo-type dataset o/arrow-only") && e.contains("Arrow cache"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_local_file_or_directory_is_taken_as_the_harness_takes_it() {
        let t = tmp("local");
        let f = t.0.join("records.jsonl");
        std::fs::write(&f, "{}\n").unwrap();
        let none = |_: &str| None;
        assert_eq!(resolve(f.to_str().unwrap(), "test", &none).unwrap(), f);
        // A directory with SPLIT.parquet (the harness's local layout), else the directory.
        std::fs::write(t.0.join("dev.parquet"), "PAR1").unwrap();
        assert_eq!(resolve(t.0.to_str().unwrap(), "dev", &none).unwrap(), t.0.join("dev.parquet"));
        assert_eq!(resolve(t.0.to_str().unwrap(), "test", &none).unwrap(), t.0);
        let e = resolve("missing.jsonl", "test", &none).unwrap_err();
        assert!(e.contains("missing.jsonl: no such file"), "{e}");
        let e = resolve("justaname", "test", &none).unwrap_err();
        assert!(e.contains("neither a file nor a Hugging Face dataset name"), "{e}");
    }
}
