//! Records files as benchmarks publish them: JSON (a list, a dict of records, or an object
//! holding a list), JSONL, or Parquet; and the column helpers every format's reader uses.

use super::instance::{Instance, Kind};
use serde_json::Value;
use std::path::Path;

/// The rows of a Parquet file (SWE-bench's datasets are published so), each as a JSON object
/// of its columns.
fn read_parquet(path: &Path) -> Result<Vec<Value>, String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let at = |e: &dyn std::fmt::Display| format!("{}: parquet: {e}", path.display());
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reader = SerializedFileReader::new(f).map_err(|e| at(&e))?;
    let mut out = Vec::with_capacity(reader.metadata().file_metadata().num_rows().max(0) as usize);
    for row in reader.get_row_iter(None).map_err(|e| at(&e))? {
        out.push(row.map_err(|e| at(&e))?.to_json_value());
    }
    Ok(out)
}

pub fn read_records(path: &Path) -> Result<Vec<Value>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.starts_with(b"PAR1") {
        return read_parquet(path);
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{}: neither JSON, JSONL (UTF-8 text) nor Parquet", path.display()))?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            return match v {
                Value::Array(a) => Ok(a),
                Value::Object(ref o) => {
                    for key in ["tasks", "instances", "predictions"] {
                        if let Some(Value::Array(a)) = o.get(key) {
                            return Ok(a.clone());
                        }
                    }
                    // A SWE-bench predictions dict: {instance_id: {...}}.
                    if o.values().all(|x| x.is_object()) && !o.is_empty() {
                        return Ok(o
                            .iter()
                            .map(|(k, x)| {
                                let mut x = x.clone();
                                x.as_object_mut().unwrap().entry("instance_id").or_insert(Value::String(k.clone()));
                                x
                            })
                            .collect());
                    }
                    Ok(vec![v])
                }
                _ => Err(format!("{}: expected JSON records", path.display())),
            };
        }
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?);
    }
    Ok(out)
}

pub fn string(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match &v[*k] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// A test list: a JSON list, a JSON-encoded list in a string (SWE-bench on Hugging Face), or a
/// Multi-SWE-bench map from test name to its runs.
pub fn test_list(v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::Null => Ok(vec![]),
        Value::Array(a) => Ok(a.iter().filter_map(|x| x.as_str().map(String::from)).collect()),
        Value::Object(o) => Ok(o.keys().cloned().collect()),
        Value::String(s) if s.trim().is_empty() => Ok(vec![]),
        Value::String(s) => test_list(&serde_json::from_str::<Value>(s).map_err(|e| format!("test list {s:?}: {e}"))?),
        _ => Err("test list: expected a list".into()),
    }
}

/// A repository record's language when it names none (Multi-SWE-bench's records often do
/// not): from the files its test patch touches, the most common kind; SWE-bench's own are
/// Python.
pub fn language_of_tests(test_patch: &str) -> Option<&'static str> {
    let mut counts: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for p in super::patch::touched(test_patch) {
        let ext = p.rsplit('.').next().unwrap_or("");
        let lang = match ext {
            "py" => "python",
            "rs" => "rust",
            "go" => "go",
            "java" => "java",
            "js" | "jsx" | "mjs" | "cjs" => "javascript",
            "ts" | "tsx" => "typescript",
            "c" | "cc" | "cpp" | "cxx" | "h" | "hpp" => "cpp",
            "php" => "php",
            "rb" => "ruby",
            _ => continue,
        };
        *counts.entry(lang).or_default() += 1;
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(l, _)| l)
}

/// A repository record's common fields (SWE-bench's, Multi-SWE-bench's, a generic
/// repository's), as an instance with no SWE-bench columns: `None` when the record is not a
/// repository's (neither `base_commit` nor `fix_patch`).
pub fn repository_instance(v: &Value, at: &str) -> Option<Result<Instance, String>> {
    if v.get("base_commit").is_none() && v.get("fix_patch").is_none() {
        return None;
    }
    Some(repository_fields(v, at))
}

fn repository_fields(v: &Value, at: &str) -> Result<Instance, String> {
    let language = string(v, &["language", "lang"]).map(|l| l.to_lowercase());
    let image = string(v, &["image", "image_name", "docker_image"]);
    let multi = v.get("fix_patch").is_some();
    let name = string(v, &["repo"]).ok_or_else(|| format!("{at}: no repo"))?;
    // Multi-SWE-bench's `org` and `repo` name it together; a record without `org` names it in
    // `repo` as owner/name.
    let repo = match string(v, &["org"]) {
        Some(org) if multi => format!("{org}/{name}"),
        _ => name,
    };
    let id = match string(v, &["instance_id"]) {
        Some(id) => id,
        None if multi => format!("{}-{}", repo.replace('/', "__"), string(v, &["number"]).unwrap_or_default()),
        None => return Err(format!("{at}: no instance_id")),
    };
    let base_commit = string(v, &["base_commit"])
        .or_else(|| v["base"]["sha"].as_str().map(String::from))
        .ok_or_else(|| format!("{id}: no base_commit"))?;
    Ok(Instance {
        id: id.clone(),
        language: language
            .or_else(|| language_of_tests(&string(v, &["test_patch"]).unwrap_or_default()).map(String::from))
            .unwrap_or_else(|| "python".into()),
        image,
        kind: Kind::Repo {
            repo,
            base_commit,
            gold_patch: string(v, &["patch", "fix_patch"]).unwrap_or_default(),
            test_patch: string(v, &["test_patch"]).unwrap_or_default(),
            fail_to_pass: test_list(v.get("FAIL_TO_PASS").or(v.get("f2p_tests")).unwrap_or(&Value::Null))
                .map_err(|e| format!("{id}: {e}"))?,
            pass_to_pass: test_list(v.get("PASS_TO_PASS").or(v.get("p2p_tests")).unwrap_or(&Value::Null))
                .map_err(|e| format!("{id}: {e}"))?,
            test_cmd: string(v, &["test_cmd", "test_command"]),
            swebench: None,
            multi: None,
        },
    })
}
