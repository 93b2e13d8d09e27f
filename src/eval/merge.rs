//! `polysandbox merge`: the output directories of one run's shards (`eval --shard I/N`) made
//! one, as the unsharded run would have written it: results.jsonl, logs and each format's
//! per-instance files copied; report.json, junit.xml and the harnesses' run reports written
//! again from the merged results (report::write_outputs, as eval writes them).
//!
//! Refused, with nothing written: shards of different runs (any setting of settings.json but
//! the shard), a shard given twice or missing, an instance in two shards, a shard with
//! instances left to grade, a file two shards both hold.

use super::dataset;
use super::instance::Instance;
use super::predictions::load_predictions;
use super::report;
use super::scheduler::{parse_results, select, MAX_RESULTS_BYTES};
use super::settings::{predictions_sha256, Settings, FILE as SETTINGS};
use super::InstanceResult;
use crate::sys::beneath::{Dir, Kind};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A shard's directory, as read: open once, everything in it read beneath that descriptor
/// (a shard is often another user's: see [`crate::sys::beneath`]).
struct Shard {
    dir: PathBuf,
    root: Dir,
    settings: Settings,
    index: usize,
    results: BTreeMap<String, InstanceResult>,
}

/// What was merged: the results (by id), the merged run's settings, the longest shard's wall
/// time.
pub struct Merged {
    pub results: Vec<InstanceResult>,
    pub settings: Settings,
    pub wall: Duration,
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

fn read_shard(dir: &Path) -> Result<Shard, String> {
    let root = match Dir::open(dir) {
        Ok(d) => d,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(format!("{}: a symbolic link: refused (give the directory it names)", shown(dir)))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) || e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{}: not a directory (a shard's eval --output)", shown(dir)))
        }
        Err(e) => return Err(format!("{}: {e}", shown(dir))),
    };
    let settings = Settings::read_in(&root)?.ok_or_else(|| {
        format!("{}: no {SETTINGS}: not the --output of an eval run (or of one made before merge existed)", shown(dir))
    })?;
    let Some((index, _)) = settings.shard else {
        return Err(format!("{}: not a shard: its run had no --shard I/N", shown(dir)));
    };
    let mut results = BTreeMap::new();
    let lines = root.read("results.jsonl", MAX_RESULTS_BYTES)?.unwrap_or_default();
    for r in parse_results(&lines) {
        // Where its logs are: `logs/NAME` or nothing, never a path out of the output.
        let mut parts = std::path::Path::new(&r.logs).components();
        let beneath = r.logs.is_empty()
            || (parts.next() == Some(std::path::Component::Normal("logs".as_ref()))
                && matches!(parts.next(), Some(std::path::Component::Normal(_)))
                && parts.next().is_none());
        if !beneath {
            return Err(format!("{}: {}'s logs are not under logs/: {:?}", shown(dir), r.instance_id, r.logs));
        }
        results.insert(r.instance_id.clone(), r);
    }
    Ok(Shard { dir: dir.to_path_buf(), root, settings, index, results })
}

/// Every check, nothing written: the shards read, the dataset's instances the merged run
/// covers (in id order), and its predictions.
fn check(shards: &[PathBuf]) -> Result<(Vec<Shard>, Vec<Instance>, super::predictions::Predictions), String> {
    if shards.is_empty() {
        return Err("no shard directories given".into());
    }
    let shards: Vec<Shard> = shards.iter().map(|d| read_shard(d)).collect::<Result<_, _>>()?;
    let first = &shards[0];
    let n = first.settings.shard.unwrap().1;
    for s in &shards[1..] {
        let m = s.settings.shard.unwrap().1;
        if m != n {
            return Err(format!(
                "mixed settings: {} is a shard of {n} and {} a shard of {m} (--shard I/N)",
                shown(&first.dir),
                shown(&s.dir)
            ));
        }
        if let Some((key, a, b)) = first.settings.differs(&s.settings) {
            return Err(format!(
                "mixed settings: {} and {} differ in {key} ({a} and {b}): shards of one run only",
                shown(&first.dir),
                shown(&s.dir)
            ));
        }
    }
    let mut by_index: BTreeMap<usize, &Shard> = BTreeMap::new();
    for s in &shards {
        if let Some(other) = by_index.insert(s.index, s) {
            return Err(format!(
                "overlapping shards: {} and {} are both shard {}/{n}",
                shown(&other.dir),
                shown(&s.dir),
                s.index
            ));
        }
    }
    if let Some(missing) = (1..=n).find(|i| !by_index.contains_key(i)) {
        return Err(format!("shard {missing}/{n} is missing: give every shard's directory"));
    }
    let mut owner: BTreeMap<&str, &Shard> = BTreeMap::new();
    for s in &shards {
        for id in s.results.keys() {
            if let Some(other) = owner.insert(id, s) {
                return Err(format!("overlapping shards: {id} is in both {} and {}", shown(&other.dir), shown(&s.dir)));
            }
        }
    }
    // The dataset and predictions the shards graded, unchanged.
    let set = &first.settings;
    let all = dataset::load(Path::new(&set.dataset)).map_err(|e| format!("the shards' dataset: {e}"))?;
    // eval records a predictions file's SHA-256: a file named without one is a settings.json
    // written by hand (a shard's owner naming a file only merge's user may read).
    if set.predictions_sha256.is_none() && Path::new(&set.predictions).is_file() {
        return Err(format!(
            "{}: {SETTINGS} names the predictions file {} without its predictions_sha256: not as eval writes it",
            shown(&first.dir),
            set.predictions
        ));
    }
    if set.predictions_sha256.is_some() && predictions_sha256(&set.predictions) != set.predictions_sha256 {
        return Err(format!("predictions {} changed since the shards ran (or are gone): merge grades nothing, it needs the file they graded", set.predictions));
    }
    let preds = load_predictions(&set.predictions, &all)?;
    // Each shard holds a result for each of its instances, and for nothing else.
    let mut insts = Vec::new();
    for s in &shards {
        let mut o = set.options(&s.dir);
        o.shard = Some((s.index, n));
        let mine = select(all.clone(), &o)?;
        let ids: BTreeSet<&str> = mine.iter().map(|i| i.id.as_str()).collect();
        if let Some(id) = s.results.keys().find(|id| !ids.contains(id.as_str())) {
            return Err(format!(
                "{} holds a result for {id}, which is not in its shard {}/{n}",
                shown(&s.dir),
                s.index
            ));
        }
        let left = ids.iter().filter(|id| !s.results.contains_key(**id)).count();
        if left > 0 {
            return Err(format!(
                "{} (shard {}/{n}) has no result for {left} of its {} instances (interrupted? finish it with eval --resume)",
                shown(&s.dir),
                s.index,
                ids.len()
            ));
        }
        insts.extend(mine);
    }
    insts.sort_by(|a, b| a.id.cmp(&b.id));
    Ok((shards, insts, preds))
}

/// The deepest directory merge copies, in directories below the shard's.
const MAX_DEPTH: usize = 64;

/// The mode a copy of something of mode `mode` gets: never wider than its own, never
/// writable by others, no setuid, setgid or sticky bit.
fn copy_mode(mode: u32) -> u32 {
    mode & 0o755
}

/// The directory `name` in `to`, for a source directory of mode `mode`: made with the
/// source's mode (and its owner's access, to write into it), or, merged with an earlier
/// shard's, narrowed to this one's too.
fn dest_dir(to: &Dir, name: &OsStr, mode: u32, what: &Path) -> Result<Dir, String> {
    let mode = copy_mode(mode) | 0o700;
    let err = |e: std::io::Error| format!("{}: {e}", shown(what));
    match to.kind(name).map_err(err)? {
        None => to.mkdir(name, mode).map_err(err),
        Some(Kind::Dir) => {
            let d = to.mkdir(name, mode).map_err(err)?;
            let have = d.stat().map_err(err)?.st_mode & 0o777;
            if have & !mode != 0 {
                d.chmod(have & mode).map_err(err)?;
            }
            Ok(d)
        }
        Some(_) => Err(format!("{}: not a directory in the merged output", shown(what))),
    }
}

/// Copies the directory `from` into `to`, directories merged; a file `to` already holds is
/// refused. Walked by descriptor: each directory opened beneath its parent's descriptor with
/// no symlink, each file opened the same way, so a directory swapped for a link while merge
/// walks (`renameat2(RENAME_EXCHANGE)`) is refused, never followed. Each copy has its
/// source's mode, never wider (a 0600 log stays 0600).
fn copy_tree(from: &Dir, to: &Dir, rel: &Path, shard: &Path) -> Result<(), String> {
    // eval's deepest is a harness's logs/run_evaluation/RUN/MODEL/INSTANCE/...: a tree far
    // deeper was made to exhaust descriptors or the stack.
    if rel.components().count() > MAX_DEPTH {
        return Err(format!("{}: more than {MAX_DEPTH} directories deep: refused", shown(from.path())));
    }
    let mut entries = from.entries().map_err(|e| format!("{}: {e}", shown(from.path())))?;
    entries.sort();
    for (name, kind) in entries {
        let src = from.path().join(&name);
        let rel = rel.join(&name);
        let utf8 = name.to_str().ok_or_else(|| format!("{}: not a UTF-8 name: refused", shown(&src)))?;
        match kind {
            Kind::Dir => {
                let sub = from.dir(utf8).map_err(|e| format!("{}: {e}", shown(&src)))?;
                let mode = sub.stat().map_err(|e| format!("{}: {e}", shown(&src)))?.st_mode;
                let dst = dest_dir(to, &name, mode, &rel)?;
                copy_tree(&sub, &dst, &rel, shard)?;
            }
            // eval writes directories and regular files alone: a link (or a device, a FIFO) in
            // a shard was put there by someone else, and would take merge, or whoever reads
            // OUT, outside it.
            Kind::Link | Kind::Other => {
                return Err(format!("{}: not a regular file or directory: refused", shown(&src)));
            }
            Kind::File => {
                if to.kind(&name).map_err(|e| format!("{}: {e}", shown(&rel)))?.is_some() {
                    return Err(format!(
                        "overlapping shards: {} and an earlier shard both hold {}",
                        shown(shard),
                        shown(&rel)
                    ));
                }
                // Opened beneath its directory's descriptor, no link (one may have replaced
                // the file since it was listed), copied into a file made here with its mode.
                let mut f = from.file(utf8, u64::MAX).map_err(|e| format!("{}: {e}", shown(&src)))?;
                let mut copy = || -> std::io::Result<()> {
                    use std::os::unix::fs::MetadataExt;
                    let mode = f.metadata()?.mode();
                    let mut d = to.create(&name, copy_mode(mode))?;
                    std::io::copy(&mut f, &mut d).map(|_| ())
                };
                copy().map_err(|e| format!("{}: {e}", shown(&src)))?;
            }
        }
    }
    Ok(())
}

/// The merged tree, in `tmp` (open as `dir`).
fn write(
    tmp: &Path,
    dir: &Dir,
    shards: &[Shard],
    insts: &[Instance],
    preds: &super::predictions::Predictions,
) -> Result<Merged, String> {
    for s in shards {
        let mut entries = s.root.entries().map_err(|e| format!("{}: {e}", shown(&s.dir)))?;
        entries.sort();
        for (name, kind) in entries {
            // The run's own files (results, settings, every report) are written anew below;
            // its scratch is no output.
            if kind == Kind::Link {
                return Err(format!("{}: a symbolic link: refused", shown(&s.dir.join(&name))));
            }
            if kind != Kind::Dir || name == ".work" {
                continue;
            }
            let src = s.dir.join(&name);
            let utf8 = name.to_str().ok_or_else(|| format!("{}: not a UTF-8 name: refused", shown(&src)))?;
            let sub = s.root.dir(utf8).map_err(|e| format!("{}: {e}", shown(&src)))?;
            let mode = sub.stat().map_err(|e| format!("{}: {e}", shown(&src)))?.st_mode;
            // Each shard's calibration run (instances eval calibrated first) apart.
            let (to, rel) = if name == "calibration" {
                let cal = dest_dir(dir, &name, mode, Path::new("calibration"))?;
                let rel = Path::new("calibration").join(format!("shard-{}", s.index));
                (dest_dir(&cal, rel.file_name().unwrap(), mode, &rel)?, rel)
            } else {
                (dest_dir(dir, &name, mode, Path::new(&name))?, PathBuf::from(&name))
            };
            copy_tree(&sub, &to, &rel, &s.dir)?;
        }
    }
    let mut results: Vec<InstanceResult> = shards.iter().flat_map(|s| s.results.values().cloned()).collect();
    results.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
    let text: String = results.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
    dir.write_new("results.jsonl".as_ref(), text.as_bytes(), 0o644).map_err(|e| format!("{}: {e}", shown(tmp)))?;
    let mut settings = shards[0].settings.clone();
    settings.merged_shards = settings.shard.map(|(_, n)| n);
    settings.shard = None;
    settings.write(tmp)?;
    // The longest shard's: what the run took with its shards at once.
    let wall = shards
        .iter()
        .filter_map(|s| s.root.read("report.json", 16 << 20).ok().flatten())
        .filter_map(|t| serde_json::from_slice::<serde_json::Value>(&t).ok())
        .filter_map(|v| v["wall_time_s"].as_f64())
        .fold(0.0, f64::max);
    let wall = Duration::from_secs_f64(wall);
    let o = settings.options(tmp);
    // (The merged run's Markdown summary goes to $GITHUB_STEP_SUMMARY when that is set.)
    let out = report::Outputs { summary_md: None, step_summary: true, ..report::Outputs::of(&o, wall) };
    report::write_all(&o, preds, insts, &results, &out)?;
    Ok(Merged { results, settings, wall })
}

/// Merges the shards' directories into `out`, which must not exist or be empty: written in a
/// directory beside it, then put in place; on any failure nothing is left.
pub fn merge(out: &Path, shards: &[PathBuf]) -> Result<Merged, String> {
    let out = std::path::absolute(out).map_err(|e| format!("{}: {e}", shown(out)))?;
    match std::fs::read_dir(&out) {
        Ok(mut d) => {
            if d.next().is_some() {
                return Err(format!("{}: exists and is not empty: merge writes a new directory", shown(&out)));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e} (merge writes a new directory)", shown(&out))),
    }
    let shards: Vec<PathBuf> = shards.iter().map(|s| std::path::absolute(s).unwrap_or_else(|_| s.clone())).collect();
    if let Some(s) = shards.iter().find(|s| out.starts_with(s) || s.starts_with(&out)) {
        return Err(format!("{}: the output may not be in a shard, nor a shard in it", shown(s)));
    }
    let (shards, insts, preds) = check(&shards)?;
    let parent = out.parent().ok_or_else(|| format!("{}: no parent directory", shown(&out)))?;
    let name = out.file_name().ok_or_else(|| format!("{}: no directory name", shown(&out)))?.to_os_string();
    let parent_dir = Dir::open(parent).map_err(|e| format!("{}: {e}", shown(parent)))?;
    let mut tmp_name = OsString::from(".");
    tmp_name.push(&name);
    tmp_name.push(format!(".merge-{}", std::process::id()));
    let tmp = parent.join(&tmp_name);
    // The owner's alone while it is written (0700), made here and never a link; then the mode
    // of the first shard's directory (no wider than 0755).
    let dir = parent_dir.create_dir(&tmp_name, 0o700).map_err(|e| format!("{}: {e}", shown(&tmp)))?;
    let top = shards[0].root.stat().map(|st| copy_mode(st.st_mode) | 0o700).unwrap_or(0o700);
    let done = write(&tmp, &dir, &shards, &insts, &preds).and_then(|m| {
        dir.chmod(top).map_err(|e| format!("{}: {e}", shown(&tmp)))?;
        parent_dir.rename(&tmp_name, &parent_dir, &name).map_err(|e| format!("{}: {e}", shown(&out)))?;
        Ok(m)
    });
    if done.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    done
}

#[cfg(test)]
mod tests {
    //! Shard directories made as eval leaves them (settings.json, results.jsonl, logs, a
    //! harness's nested per-instance files), over real datasets; merged, or refused with
    //! nothing written.
    use super::*;
    use crate::eval::{names, Options, Verdict};
    use serde_json::Value;

    fn manifest() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    fn polyglot() -> PathBuf {
        manifest().join("tests/fixtures/eval/polyglot")
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("psb-merge-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn skipped(test: &str, why: &str) {
        use std::io::Write;
        let _ = std::io::stderr().write_all(format!("SKIPPED: {test}: {why}\n").as_bytes());
    }

    /// Shard `i` of `n` of a gold run over `dataset`, as eval writes it: each instance resolved
    /// but the first, its log and a harness-style nested file (the same prefix in every shard).
    fn shard(root: &Path, dataset: &Path, i: usize, n: usize, tweak: impl Fn(&mut Options)) -> PathBuf {
        let dir = root.join(format!("shard-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut o = Options::new(dataset.to_path_buf(), "gold", dir.clone(), "".into());
        o.shard = Some((i, n));
        tweak(&mut o);
        Settings::of(&o).write(&dir).unwrap();
        let all = dataset::load(dataset).unwrap();
        let mine = select(all, &o).unwrap();
        let mut text = String::new();
        for (k, inst) in mine.iter().enumerate() {
            let v = if i == 1 && k == 0 { Verdict::Unresolved } else { Verdict::Resolved };
            let mut r = InstanceResult::bare(inst, "img", "key", v, None);
            let name = names::name(&inst.id);
            r.logs = format!("logs/{name}");
            text += &(serde_json::to_string(&r).unwrap() + "\n");
            std::fs::create_dir_all(dir.join("logs").join(&name)).unwrap();
            std::fs::write(dir.join("logs").join(&name).join("test_output.txt"), &inst.id).unwrap();
            let nested = dir.join("logs/run_evaluation/run/model").join(&name);
            std::fs::create_dir_all(&nested).unwrap();
            std::fs::write(nested.join("report.json"), "{}").unwrap();
        }
        std::fs::write(dir.join("results.jsonl"), text).unwrap();
        std::fs::write(dir.join("report.json"), "{\"wall_time_s\": 2.5}\n").unwrap();
        std::fs::create_dir_all(dir.join(".work")).unwrap();
        dir
    }

    fn lines(p: &Path) -> Vec<Value> {
        std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    fn json(p: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    /// Nothing but the shards (and what the test put there) beside OUT: no temp directory.
    fn only(root: &Path, names: &[&str]) {
        let mut have: Vec<String> =
            std::fs::read_dir(root).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        have.sort();
        let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(have, want);
    }

    /// The merged output of `dataset`'s shards, checked against its instances; returns OUT.
    fn merged_as_one(test: &str, dataset: &Path, n: usize) -> PathBuf {
        let root = scratch(test);
        let shards: Vec<PathBuf> = (1..=n).map(|i| shard(&root, dataset, i, n, |_| {})).collect();
        let out = root.join("out");
        let m = merge(&out, &shards).unwrap();
        let all = dataset::load(dataset).unwrap();
        assert_eq!(m.results.len(), all.len());
        let got = lines(&out.join("results.jsonl"));
        let ids: Vec<&str> = got.iter().map(|r| r["instance_id"].as_str().unwrap()).collect();
        let mut want: Vec<&str> = all.iter().map(|i| i.id.as_str()).collect();
        want.sort();
        assert_eq!(ids, want, "one line per instance, in id order");
        let report = json(&out.join("report.json"));
        assert_eq!(report["total"], all.len());
        assert_eq!(report["unresolved"], 1);
        assert_eq!(report["resolved"], all.len() - 1);
        assert_eq!(report["wall_time_s"], 2.5);
        assert!(std::fs::read_to_string(out.join("junit.xml")).unwrap().contains("<testsuites"));
        let s = json(&out.join(SETTINGS));
        assert_eq!((&s["shard"], &s["merged_shards"]), (&Value::Null, &serde_json::json!(n)));
        for i in &all {
            let name = names::name(&i.id);
            assert_eq!(std::fs::read_to_string(out.join("logs").join(&name).join("test_output.txt")).unwrap(), i.id);
            assert!(out.join("logs/run_evaluation/run/model").join(&name).join("report.json").is_file());
        }
        assert!(!out.join(".work").exists());
        let mut names: Vec<String> = (1..=n).map(|i| format!("shard-{i}")).collect();
        names.push("out".into());
        only(&root, &names.iter().map(String::as_str).collect::<Vec<_>>());
        out
    }

    #[test]
    fn exercise_shards_merge_as_one_run() {
        let out = merged_as_one("exercises", &polyglot(), 3);
        let _ = std::fs::remove_dir_all(out.parent().unwrap());
    }

    #[test]
    fn swebench_shards_merge_with_the_harness_run_report() {
        let records = manifest().join("../shared/swebench/instances.jsonl");
        if !records.exists() {
            return skipped("swebench_shards_merge_with_the_harness_run_report", "no ../shared/swebench records");
        }
        let out = merged_as_one("swebench", &records, 2);
        let all = dataset::load(&records).unwrap();
        let run = json(&out.join("gold.polysandbox.json"));
        assert_eq!(run["total_instances"], all.len());
        assert_eq!(run["resolved_instances"], all.len() - 1);
        assert_eq!(run["unresolved_instances"], 1);
        let _ = std::fs::remove_dir_all(out.parent().unwrap());
    }

    #[test]
    fn multi_swebench_shards_merge_with_the_final_report() {
        let records = manifest().join("../shared/multi-swe-bench/instances.jsonl");
        if !records.exists() {
            return skipped(
                "multi_swebench_shards_merge_with_the_final_report",
                "no ../shared/multi-swe-bench records",
            );
        }
        let out = merged_as_one("multi", &records, 2);
        let all = dataset::load(&records).unwrap();
        let fin = json(&out.join("final_report.json"));
        assert_eq!(fin["total_instances"], all.len());
        assert_eq!(fin["resolved_instances"], all.len() - 1);
        let _ = std::fs::remove_dir_all(out.parent().unwrap());
    }

    /// Each refusal: its message, and nothing written beside the shards.
    #[test]
    fn mixed_overlapping_missing_or_unfinished_shards_are_refused() {
        let root = scratch("refused");
        let data = polyglot();
        let s1 = shard(&root, &data, 1, 2, |_| {});
        let refused = |shards: &[PathBuf], want: &str| {
            let before: Vec<String> = {
                let mut v: Vec<String> = std::fs::read_dir(&root)
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                v.sort();
                v
            };
            let e = merge(&root.join("out"), shards).err().unwrap_or_else(|| panic!("merged; wanted {want:?}"));
            assert!(e.contains(want), "{e:?} lacks {want:?}");
            assert!(!e.contains('\n'), "one line: {e:?}");
            only(&root, &before.iter().map(String::as_str).collect::<Vec<_>>());
        };
        let s2 = |tweak: &dyn Fn(&mut Options)| {
            let _ = std::fs::remove_dir_all(root.join("shard-2"));
            shard(&root, &data, 2, 2, tweak)
        };
        // Mixed settings: a limit, the predictions, their content, the shard count.
        refused(&[s1.clone(), s2(&|o| o.memory = Some(1 << 30))], "differ in memory (null and 1073741824)");
        refused(&[s1.clone(), s2(&|o| o.predictions = "stub".into())], "differ in predictions");
        refused(&[s1.clone(), s2(&|o| o.strict = true)], "differ in strict");
        let other = s2(&|_| {});
        let mut s = Settings::read(&other).unwrap().unwrap();
        s.predictions_sha256 = Some("0".repeat(64));
        s.write(&other).unwrap();
        refused(&[s1.clone(), other], "differ in predictions_sha256");
        let _ = std::fs::remove_dir_all(root.join("shard-2"));
        let three = shard(&root, &data, 2, 3, |_| {});
        refused(&[s1.clone(), three], "a shard of 2 and");
        let s2 = s2(&|_| {});
        // A shard twice, a shard missing, an instance in two shards.
        refused(&[s1.clone(), s1.clone()], "are both shard 1/2");
        refused(std::slice::from_ref(&s1), "shard 2/2 is missing");
        let first = std::fs::read_to_string(s1.join("results.jsonl")).unwrap().lines().next().unwrap().to_string();
        let theirs = std::fs::read_to_string(s2.join("results.jsonl")).unwrap();
        std::fs::write(s2.join("results.jsonl"), format!("{theirs}{first}\n")).unwrap();
        refused(&[s1.clone(), s2.clone()], "is in both");
        // A shard left unfinished.
        let short: String = theirs.lines().skip(1).map(|l| format!("{l}\n")).collect();
        std::fs::write(s2.join("results.jsonl"), short).unwrap();
        refused(&[s1.clone(), s2.clone()], "has no result for 1 of its");
        std::fs::write(s2.join("results.jsonl"), &theirs).unwrap();
        // A file both shards hold.
        std::fs::write(s1.join("logs/same.txt"), "1").unwrap();
        std::fs::write(s2.join("logs/same.txt"), "2").unwrap();
        refused(&[s1.clone(), s2.clone()], "both hold logs/same.txt");
        std::fs::remove_file(s2.join("logs/same.txt")).unwrap();
        // A link in a shard (to a directory outside; in a log's place), a log path out of the
        // output: refused, nothing written through them.
        let outside = root.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, s1.join("logs/evil")).unwrap();
        std::fs::create_dir_all(s2.join("logs/evil")).unwrap();
        std::fs::write(s2.join("logs/evil/pwn.txt"), "x").unwrap();
        refused(&[s1.clone(), s2.clone()], "not a regular file or directory: refused");
        refused(&[s2.clone(), s1.clone()], "not a regular file or directory: refused");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        std::fs::remove_file(s1.join("logs/evil")).unwrap();
        std::fs::remove_dir_all(s2.join("logs/evil")).unwrap();
        let log = std::fs::read_dir(s1.join("logs"))
            .unwrap()
            .map(|e| e.unwrap().path().join("test_output.txt"))
            .find(|p| p.is_file())
            .expect("a shard's test output");
        let kept = std::fs::read(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &log).unwrap();
        refused(&[s1.clone(), s2.clone()], "not a regular file or directory: refused");
        std::fs::remove_file(&log).unwrap();
        std::fs::write(&log, kept).unwrap();
        let text = std::fs::read_to_string(s1.join("results.jsonl")).unwrap();
        let mut v: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        v[0]["logs"] = "logs/../../outside".into();
        std::fs::write(s1.join("results.jsonl"), v.iter().map(|x| x.to_string() + "\n").collect::<String>()).unwrap();
        refused(&[s1.clone(), s2.clone()], "logs are not under logs/");
        std::fs::write(s1.join("results.jsonl"), text).unwrap();
        std::fs::remove_dir(&outside).unwrap();
        // Not a shard, not a run at all, an OUT with something in it.
        let plain = root.join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        refused(&[s1.clone(), plain.clone()], "no settings.json");
        Settings::of(&Options::new(data.clone(), "gold", plain.clone(), "".into())).write(&plain).unwrap();
        refused(&[s1.clone(), plain.clone()], "not a shard");
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::write(root.join("out/x"), "").unwrap();
        refused(&[s1.clone(), s2.clone()], "exists and is not empty");
        std::fs::remove_file(root.join("out/x")).unwrap();
        // An empty OUT is taken.
        merge(&root.join("out"), &[s1, s2]).unwrap();
        assert_eq!(lines(&root.join("out/results.jsonl")).len(), dataset::load(&data).unwrap().len());
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A shard is a tree another user may own (issue 37): read by descriptor beneath its
    /// directory with no symlink anywhere, so a log directory made a link to a protected
    /// directory outside is never copied (swapped in while merge walks, it is refused the
    /// same: each directory is opened beneath its parent's descriptor with no link); its
    /// settings.json and results.jsonl as links are refused; and what is copied keeps its
    /// mode, never wider (a 0600 log stays 0600, a 0700 directory 0700).
    #[test]
    fn a_shard_is_read_by_descriptor_and_copied_no_wider() {
        use std::os::unix::fs::PermissionsExt;
        let root = scratch("beneath");
        let data = polyglot();
        let s1 = shard(&root, &data, 1, 2, |_| {});
        let s2 = shard(&root, &data, 2, 2, |_| {});
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
        let chmod = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        let protected = root.join("protected");
        std::fs::create_dir_all(&protected).unwrap();
        std::fs::write(protected.join("secret.txt"), "s3cr3t-issue-37").unwrap();
        chmod(&protected.join("secret.txt"), 0o600);
        chmod(&protected, 0o700);
        let refused = |out: &str, want: &str| {
            let e = merge(&root.join(out), &[s1.clone(), s2.clone()])
                .err()
                .unwrap_or_else(|| panic!("merged; wanted {want:?}"));
            assert!(e.contains(want), "{e:?} lacks {want:?}");
            assert!(!e.contains('\n'), "one line: {e:?}");
            assert!(!root.join(out).exists(), "{out} written");
        };
        // A log directory (and a harness's nested one) a link to the protected directory.
        let name = std::fs::read_dir(s1.join("logs"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .find(|n| n != "run_evaluation")
            .unwrap();
        let log = s1.join("logs").join(&name);
        std::fs::rename(&log, root.join("kept")).unwrap();
        std::os::unix::fs::symlink(&protected, &log).unwrap();
        refused("out-link", "refused");
        std::fs::remove_file(&log).unwrap();
        std::fs::rename(root.join("kept"), &log).unwrap();
        // settings.json and results.jsonl as links to files outside: refused as links when
        // read, never read through (the files they name would say "mixed settings", "in both").
        let first = std::fs::read_to_string(s1.join("results.jsonl")).unwrap().lines().next().unwrap().to_string();
        for file in [SETTINGS, "results.jsonl"] {
            let at = s2.join(file);
            let text = std::fs::read_to_string(&at).unwrap();
            let outside = root.join(format!("outside-{file}"));
            let mut other = serde_json::from_str::<Value>(&text).ok();
            let content = match other.as_mut() {
                Some(v) if file == SETTINGS => {
                    v["memory"] = 1.into();
                    v.to_string()
                }
                _ => format!("{text}{first}\n"),
            };
            std::fs::write(&outside, content).unwrap();
            std::fs::remove_file(&at).unwrap();
            std::os::unix::fs::symlink(&outside, &at).unwrap();
            refused(&format!("out-{file}"), &format!("{file}: a symlink, or a path out of its directory: refused"));
            std::fs::remove_file(&at).unwrap();
            std::fs::write(&at, text).unwrap();
        }
        // A predictions file named without its SHA-256 (eval always records one): a file
        // merge's user alone may read is not loaded on a shard owner's word.
        let private = root.join("private.jsonl");
        std::fs::write(&private, "{}\n").unwrap();
        for s in [&s1, &s2] {
            let mut set = Settings::read(s).unwrap().unwrap();
            set.predictions = private.to_string_lossy().into_owned();
            set.predictions_sha256 = None;
            set.write(s).unwrap();
        }
        refused("out-private", "without its predictions_sha256");
        for s in [&s1, &s2] {
            let mut set = Settings::read(s).unwrap().unwrap();
            set.predictions = "gold".into();
            set.write(s).unwrap();
        }
        // A 0600 log in a 0700 directory, a 0640 one: copied with their modes.
        let file = log.join("test_output.txt");
        chmod(&file, 0o600);
        chmod(&log, 0o700);
        std::fs::write(log.join("other.txt"), "x").unwrap();
        chmod(&log.join("other.txt"), 0o640);
        let out = root.join("out");
        merge(&out, &[s1.clone(), s2.clone()]).unwrap();
        let copied = out.join("logs").join(&name);
        assert_eq!(mode(&copied.join("test_output.txt")), 0o600, "a 0600 log made wider");
        assert_eq!(mode(&copied.join("other.txt")) & !0o640, 0, "a 0640 log made wider");
        assert_eq!(mode(&copied), 0o700, "a 0700 directory made wider");
        assert_eq!(
            std::fs::read_to_string(copied.join("test_output.txt")).unwrap(),
            std::fs::read_to_string(&file).unwrap()
        );
        let walk = std::process::Command::new("grep").arg("-rl").arg("s3cr3t-issue-37").arg(&out).output().unwrap();
        assert!(walk.stdout.is_empty(), "the protected file reached OUT: {}", String::from_utf8_lossy(&walk.stdout));
        let _ = std::fs::remove_dir_all(&root);
    }
}
