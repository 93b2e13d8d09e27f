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
    // Python's json writes an unpaired surrogate (`\udce4`, a byte `surrogateescape` kept) and
    // reads it back; serde_json refuses it. Each is read as U+10FFFF, which marks its record
    // (see `LONE_SURROGATE`): one record with one cannot refuse the whole file.
    let text = repair_lone_surrogates(&text).unwrap_or(text);
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

/// What an unpaired UTF-16 surrogate escape in a records file is read as: a noncharacter no
/// real prediction or dataset holds. A record with one in any string holds text that is not
/// Unicode (the SWE-bench harness could not write its patch either).
pub const LONE_SURROGATE: char = '\u{10FFFF}';

/// Whether any string of `v` (keys included) holds [`LONE_SURROGATE`].
pub fn has_lone_surrogate(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(LONE_SURROGATE),
        Value::Array(a) => a.iter().any(has_lone_surrogate),
        Value::Object(o) => o.iter().any(|(k, x)| k.contains(LONE_SURROGATE) || has_lone_surrogate(x)),
        _ => false,
    }
}

/// `text` with every `\uD800`..`\uDFFF` escape that is not half of a pair written as the
/// pair of [`LONE_SURROGATE`]; `None` when there is none. Escapes are found as JSON has them:
/// a backslash escapes the next character, whatever it is.
fn repair_lone_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let hex = |i: usize| -> Option<u32> {
        let h = b.get(i..i + 4)?;
        u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok().filter(|_| h.iter().all(u8::is_ascii_hexdigit))
    };
    let escape_at = |i: usize| -> Option<u32> {
        (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u')).then(|| hex(i + 2)).flatten()
    };
    let mut out: Option<String> = None;
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(u) = escape_at(i) else {
            i += 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&u);
        let low_next = escape_at(i + 6).is_some_and(|n| (0xDC00..0xE000).contains(&n));
        if high && low_next {
            i += 12;
        } else if (0xD800..0xE000).contains(&u) {
            let o = out.get_or_insert_with(String::new);
            o.push_str(&text[copied..i]);
            o.push_str("\\uDBFF\\uDFFF");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    out.map(|mut o| {
        o.push_str(&text[copied..]);
        o
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_mark_their_record_and_pairs_stay() {
        let text = r#"{"a": "x\udce4y", "b": "\ud83d\ude00", "c": "\\udce4", "d": "\ud800\u0041", "e": "\\\udc00"}"#;
        let fixed = repair_lone_surrogates(text).unwrap();
        let v: Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["a"], format!("x{LONE_SURROGATE}y"));
        assert_eq!(v["b"], "\u{1F600}");
        assert_eq!(v["c"], "\\udce4", "an escaped backslash is no escape");
        assert_eq!(v["d"], format!("{LONE_SURROGATE}A"));
        assert_eq!(v["e"], format!("\\{LONE_SURROGATE}"));
        assert!(has_lone_surrogate(&v));
        assert!(repair_lone_surrogates(r#"{"a": "\ud83d\ude00 \\u0041"}"#).is_none());
        assert!(!has_lone_surrogate(&serde_json::json!({"a": ["\u{FFFD}"]})));
    }
}
