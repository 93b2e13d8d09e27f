//! Predictions: `gold`, `stub`, a directory of edited files, or JSON/JSONL/Parquet records
//! (`model_patch`, `completion`, files), matched to the dataset's instances.

use super::instance::{Instance, Kind, Prediction};
use super::records::{read_records, string};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Accepts `aider_<lang>_<name>` for `<lang>/<name>`.
pub fn canonical_id(id: &str, known: &std::collections::HashSet<String>) -> String {
    if known.contains(id) {
        return id.to_string();
    }
    if let Some(rest) = id.strip_prefix("aider_") {
        if let Some((lang, name)) = rest.split_once('_') {
            let c = format!("{lang}/{name}");
            if known.contains(&c) {
                return c;
            }
        }
    }
    id.to_string()
}

pub enum Predictions {
    Gold,
    Stub,
    Dir(PathBuf),
    /// The predictions by instance, and the model each names (`model_name_or_path`).
    Records(BTreeMap<String, Prediction>, BTreeMap<String, String>),
}

/// `gold`, `stub`, a directory of edited files, or a JSON/JSONL file of records.
pub fn load_predictions(spec: &str, instances: &[Instance]) -> Result<Predictions, String> {
    load_noted(spec, instances, &mut Vec::new())
}

/// The same, with what is worth saying about the file though not refused (`notes`): ids given
/// twice with the same prediction. Refused, as mistakes: a file with no predictions, ids the
/// dataset does not have (the SWE-bench harness refuses them too), and an id given twice with
/// different predictions (which would be graded?).
pub fn load_noted(spec: &str, instances: &[Instance], notes: &mut Vec<String>) -> Result<Predictions, String> {
    match spec {
        "gold" => return Ok(Predictions::Gold),
        "stub" => return Ok(Predictions::Stub),
        _ => {}
    }
    let path = Path::new(spec);
    if path.is_dir() {
        return Ok(Predictions::Dir(path.to_path_buf()));
    }
    let known: std::collections::HashSet<String> = instances.iter().map(|i| i.id.clone()).collect();
    let mut map = BTreeMap::new();
    let mut models = BTreeMap::new();
    // Each id's first record, and the ids given more than once (with the same prediction).
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    let mut repeated: BTreeMap<String, usize> = BTreeMap::new();
    let mut unknown: Vec<String> = Vec::new();
    let records = read_records(path).map_err(|e| format!("predictions: {e}"))?;
    if records.is_empty() {
        return Err(format!("predictions {spec}: no predictions in it (an empty file)"));
    }
    for (n, v) in records.iter().enumerate() {
        // Multi-SWE-bench's own patch files name an instance by org, repo and number.
        let harness_id = || match (string(v, &["org"]), string(v, &["repo"]), string(v, &["number"])) {
            (Some(o), Some(r), Some(n)) => Some(format!("{o}__{r}-{n}")),
            _ => None,
        };
        let id = string(v, &["instance_id", "task_id", "_id", "id"])
            .or_else(harness_id)
            .ok_or_else(|| format!("predictions {spec} record {}: no instance_id (nor org, repo and number)", n + 1))?;
        let pred = if super::records::has_lone_surrogate(v) {
            // Text that is not Unicode (a byte Python's surrogateescape kept): no patch or file
            // can be written of it, as the SWE-bench harness cannot either. The prediction's.
            Prediction::Refused("the prediction holds an unpaired surrogate (\\udXXX): it is not Unicode text".into())
        } else if let Some(p) = string(v, &["model_patch", "fix_patch", "patch"]) {
            Prediction::Patch(p)
        } else if ["model_patch", "fix_patch", "patch"].iter().any(|k| v.get(*k).is_some_and(|x| x.is_null())) {
            // `"model_patch": null`: the harness counts it an empty patch.
            Prediction::Patch(String::new())
        } else if let Some(c) = string(v, &["generation", "completion", "code", "solution"]) {
            Prediction::Code(c)
        } else if let Some(Value::Array(a)) = v.get("generate_results") {
            Prediction::Code(a.first().and_then(|x| x.as_str()).unwrap_or("").to_string())
        } else {
            return Err(format!("predictions {spec}: {id}: no model_patch, generation or code"));
        };
        let id = canonical_id(&id, &known);
        if !known.contains(&id) {
            unknown.push(id);
            continue;
        }
        if let Some(m) = string(v, &["model_name_or_path", "model"]) {
            models.insert(id.clone(), m);
        }
        if let Some(earlier) = map.get(&id) {
            if *earlier != pred {
                return Err(format!(
                    "predictions {spec}: {id} is given twice with different predictions (records {} and {}): keep one",
                    first[&id] + 1,
                    n + 1
                ));
            }
            *repeated.entry(id).or_insert(1) += 1;
            continue;
        }
        first.insert(id.clone(), n);
        map.insert(id, pred);
    }
    if !unknown.is_empty() {
        unknown.sort();
        unknown.dedup();
        let shown: Vec<&str> = unknown.iter().take(5).map(String::as_str).collect();
        return Err(format!(
            "predictions {spec}: {} instance id{} not in the dataset ({}{}): predictions made for another dataset or split? (the SWE-bench harness refuses them too)",
            unknown.len(),
            if unknown.len() == 1 { " is" } else { "s are" },
            shown.join(", "),
            if unknown.len() > shown.len() { ", ..." } else { "" }
        ));
    }
    for (id, times) in repeated {
        notes.push(format!(
            "predictions {spec}: {id} is given {times} times, the same prediction each time: graded once"
        ));
    }
    Ok(Predictions::Records(map, models))
}

/// The most one predicted file may hold.
const PREDICTED_FILE_CAP: u64 = 16 << 20;

/// An exercise's solution files from a predictions directory, read as untrusted input: the
/// instance's directory and every file are resolved beneath the predictions directory with no
/// symlink on the way (a `solution.py -> /etc/shadow` is never followed, as root or not),
/// opened without blocking, and taken only if they are regular files of a sane size; a
/// solution path from the dataset that leaves the instance is refused too.
fn read_prediction_dir(
    d: &Path,
    language: &str,
    name: &str,
    id: &str,
    solution: &[String],
) -> Result<Prediction, String> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let beneath = crate::sys::RESOLVE_BENEATH | crate::sys::RESOLVE_NO_SYMLINKS | crate::sys::RESOLVE_NO_MAGICLINKS;
    let root = crate::sys::open(&crate::sys::cpath(d), libc::O_PATH | libc::O_DIRECTORY, "the predictions directory")?;
    let why = |rel: &str, e: std::io::Error| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::EXDEV) => format!("{rel} is a symlink (or leads through one)"),
        _ => format!("{rel}: {e}"),
    };
    let candidates =
        [format!("{language}/exercises/practice/{name}"), format!("{language}/{name}"), id.replace('/', "__")];
    let mut base = None;
    for c in &candidates {
        match crate::sys::openat2(root.as_raw_fd(), c, libc::O_PATH | libc::O_DIRECTORY, beneath) {
            Ok(fd) => {
                base = Some(fd);
                break;
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {}
            Err(e) => return Ok(Prediction::Refused(why(c, e))),
        }
    }
    let Some(base) = base else { return Ok(Prediction::Missing) };
    let mut files = BTreeMap::new();
    for s in solution {
        if s.starts_with('/') || s.split('/').any(|c| c == "..") {
            return Ok(Prediction::Refused(format!("{s}: a path outside the exercise")));
        }
        let f = match crate::sys::open_untrusted(base.as_raw_fd(), s, beneath, PREDICTED_FILE_CAP) {
            Ok(f) => f,
            Err(crate::sys::Untrusted::Io(e)) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(crate::sys::Untrusted::Escapes) => {
                return Ok(Prediction::Refused(format!("{s} is a symlink (or leads through one)")))
            }
            Err(e) => return Ok(Prediction::Refused(format!("{s}: {e}"))),
        };
        // A hard link's other names may be anyone's file (as root, one the predictions' author
        // could never read): not read.
        use std::os::unix::fs::MetadataExt;
        if f.metadata().map(|m| m.nlink() > 1).unwrap_or(true) {
            return Ok(Prediction::Refused(format!(
                "{s} is a hard link (its other names may be files the prediction's author cannot read)"
            )));
        }
        let mut b = Vec::new();
        f.take(PREDICTED_FILE_CAP).read_to_end(&mut b).map_err(|e| format!("{s}: {e}"))?;
        files.insert(s.clone(), b);
    }
    Ok(if files.is_empty() { Prediction::Missing } else { Prediction::Files(files) })
}

impl Predictions {
    /// The model an instance's prediction names, as the SWE-bench harness names it in its log
    /// directories and report (`gold` for the reference patches).
    pub fn model_of(&self, id: &str) -> String {
        match self {
            Predictions::Gold => "gold".into(),
            Predictions::Stub => "stub".into(),
            Predictions::Dir(_) => "predictions".into(),
            Predictions::Records(_, models) => models.get(id).cloned().unwrap_or_else(|| "unknown".into()),
        }
    }

    /// How many predictions were submitted (the harness's `submitted_instances`).
    pub fn submitted(&self) -> Option<usize> {
        match self {
            Predictions::Records(m, _) => Some(m.len()),
            _ => None,
        }
    }

    pub fn for_instance(&self, inst: &Instance) -> Result<Prediction, String> {
        Ok(match self {
            Predictions::Gold => Prediction::Gold,
            Predictions::Stub => Prediction::Stub,
            Predictions::Records(m, _) => m.get(&inst.id).cloned().unwrap_or(Prediction::Missing),
            Predictions::Dir(d) => {
                let Kind::Exercise { name, solution, .. } = &inst.kind else {
                    return Err(format!(
                        "{}: a predictions directory holds exercise files; use a JSONL of model_patch for this dataset",
                        inst.id
                    ));
                };
                read_prediction_dir(d, &inst.language, name, &inst.id, solution)?
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::instance::Kind;

    fn dataset(ids: &[&str]) -> Vec<Instance> {
        ids.iter()
            .map(|id| Instance {
                id: id.to_string(),
                language: "python".into(),
                image: None,
                kind: Kind::Snippet { gold: String::new(), stub: String::new(), test: String::new() },
            })
            .collect()
    }

    /// A predictions file with `text`, read against instances `a` and `b`.
    fn load(name: &str, text: &str) -> (Result<Predictions, String>, Vec<String>) {
        let dir = std::env::temp_dir().join(format!("psb-preds-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("preds.jsonl");
        std::fs::write(&path, text).unwrap();
        let mut notes = Vec::new();
        let r = load_noted(path.to_str().unwrap(), &dataset(&["a", "b"]), &mut notes);
        std::fs::remove_dir_all(&dir).unwrap();
        (r, notes)
    }

    fn refused(name: &str, text: &str) -> String {
        match load(name, text).0 {
            Err(e) => e,
            Ok(_) => panic!("{name}: taken"),
        }
    }

    /// What can only be a mistake is refused, on one line that says which: no predictions,
    /// ids the dataset lacks, an id given twice with different predictions.
    #[test]
    fn predictions_that_do_not_fit_the_dataset_are_refused() {
        for (name, text) in [("empty", ""), ("blank", "\n\n"), ("empty-list", "[]")] {
            let e = refused(name, text);
            assert!(e.contains("no predictions in it"), "{name}: {e}");
        }
        let e = refused(
            "unknown",
            "{\"instance_id\": \"a\", \"model_patch\": \"x\"}\n{\"instance_id\": \"zz\", \"model_patch\": \"x\"}\n",
        );
        assert!(e.contains("1 instance id is not in the dataset (zz)") && !e.contains('\n'), "{e}");
        let many: String = (0..7).map(|i| format!("{{\"instance_id\": \"x{i}\", \"model_patch\": \"\"}}\n")).collect();
        let e = refused("many", &many);
        assert!(e.contains("7 instance ids are not in the dataset (x0, x1, x2, x3, x4, ...)"), "{e}");
        let e = refused("twice", "{\"instance_id\": \"a\", \"model_patch\": \"x\"}\n{\"instance_id\": \"b\", \"model_patch\": \"\"}\n{\"instance_id\": \"a\", \"model_patch\": \"y\"}\n");
        assert!(e.contains("a is given twice with different predictions (records 1 and 3)"), "{e}");
    }

    /// A prediction that is not Unicode (Python's json writes a lone surrogate, `\udce4`, and
    /// reads it back) is that prediction's failure, never a reason to refuse the file: the
    /// others are graded (before, one such record made eval refuse every instance).
    #[test]
    fn a_lone_surrogate_refuses_its_prediction_alone() {
        for (name, text) in [
            ("jsonl", "{\"instance_id\": \"a\", \"model_patch\": \"+x\\udce4\"}\n{\"instance_id\": \"b\", \"model_patch\": \"y\"}\n"),
            ("json", "[{\"instance_id\": \"a\", \"model_patch\": \"+x\\udce4\"}, {\"instance_id\": \"b\", \"model_patch\": \"y\"}]"),
        ] {
            let (r, _) = load(name, text);
            let Ok(Predictions::Records(m, _)) = r else { panic!("{name}: refused: {:?}", r.err()) };
            assert!(matches!(&m["a"], Prediction::Refused(w) if w.contains("unpaired surrogate")), "{name}: {:?}", m["a"]);
            assert_eq!(m["b"], Prediction::Patch("y".into()), "{name}");
        }
    }

    /// Said, not refused: an id given twice alike; `"model_patch": null` is an empty patch,
    /// as the harness takes it.
    #[test]
    fn repeated_and_null_predictions_are_said_and_taken() {
        let line = "{\"instance_id\": \"a\", \"model_patch\": \"x\"}\n";
        let (r, notes) = load("same", &line.repeat(3));
        let Ok(Predictions::Records(m, _)) = r else { panic!("refused") };
        assert_eq!(m.len(), 1);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("a is given 3 times, the same prediction each time"), "{notes:?}");
        let (r, notes) = load("null", "{\"instance_id\": \"b\", \"model_patch\": null}\n");
        let Ok(Predictions::Records(m, _)) = r else { panic!("refused") };
        assert_eq!(m.get("b"), Some(&Prediction::Patch(String::new())));
        assert!(!m.contains_key("a") && notes.is_empty());
    }
}
