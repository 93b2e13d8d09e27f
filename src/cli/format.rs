//! `--format` for `images` and `inspect`: `json`, or a Go template as podman takes one, in the
//! subset its users write: `{{.Field}}`, `{{.Field.Sub}}`, `{{json .}}`, `{{json .Field}}`,
//! `{{lower .F}}`/`{{upper .F}}`, text between, `\t` and `\n`, and a leading `table` (a header
//! row). Fields are looked up by name, then case-insensitively (`{{.Id}}` and `{{.ID}}` alike).
//! Done by hand, in a hundred lines: the Go-template crates bring a whole language (ranges,
//! pipelines, variables) to evaluate a line of field names.

use serde_json::Value;

enum Part {
    Text(String),
    /// A function (`json`, `lower`, `upper`, or none) and a field path (empty: the object).
    Field(Option<String>, Vec<String>),
}

pub struct Template {
    parts: Vec<Part>,
    /// `table ...`: a header row first, the field names.
    pub table: bool,
}

impl Template {
    pub fn parse(s: &str) -> Result<Template, String> {
        let bad = |why: &str| format!("--format {s:?}: {why}");
        let (table, body) = match s.strip_prefix("table") {
            Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => (true, rest.trim_start()),
            _ => (false, s),
        };
        let body = body.replace("\\t", "\t").replace("\\n", "\n");
        let mut parts = Vec::new();
        let mut rest = body.as_str();
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let close = rest[open..].find("}}").ok_or_else(|| bad("a '{{' without its '}}'"))? + open;
            let action = rest[open + 2..close].trim().trim_start_matches('-').trim_end_matches('-').trim();
            let words: Vec<&str> = action.split_whitespace().collect();
            let (func, field) = match words.as_slice() {
                [f] => (None, *f),
                [func @ ("json" | "lower" | "upper"), f] => (Some(func.to_string()), *f),
                _ => {
                    return Err(bad(&format!(
                        "'{{{{{action}}}}}' is not supported (fields, json, lower and upper are)"
                    )))
                }
            };
            if !field.starts_with('.') {
                return Err(bad(&format!("'{field}' is not a field (write .{field})")));
            }
            let path: Vec<String> = field[1..].split('.').filter(|p| !p.is_empty()).map(String::from).collect();
            parts.push(Part::Field(func, path));
            rest = &rest[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        if rest.contains("}}") {
            return Err(bad("a '}}' without its '{{'"));
        }
        Ok(Template { parts, table })
    }

    /// The header row of a `table` template: each field's name, upper case, as podman's.
    pub fn header(&self, label: impl Fn(&str) -> String) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::Field(_, path) => label(path.last().map(String::as_str).unwrap_or("")),
            })
            .collect()
    }

    pub fn render(&self, v: &Value) -> Result<String, String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Field(func, path) => {
                    let mut cur = v;
                    for name in path {
                        cur = field(cur, name).ok_or_else(|| format!("--format: no field .{}", path.join(".")))?;
                    }
                    out.push_str(&match func.as_deref() {
                        Some("json") => serde_json::to_string(cur).unwrap_or_default(),
                        Some("lower") => go_string(cur).to_lowercase(),
                        Some("upper") => go_string(cur).to_uppercase(),
                        _ => go_string(cur),
                    });
                }
            }
        }
        Ok(out)
    }
}

fn field<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    let o = v.as_object()?;
    o.get(name).or_else(|| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
}

/// A value as Go's templates print it: strings bare, lists `[a b]`, maps `map[k:v]`.
fn go_string(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".into(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_string).collect::<Vec<_>>().join(" ")),
        Value::Object(o) => {
            format!("map[{}]", o.iter().map(|(k, v)| format!("{k}:{}", go_string(v))).collect::<Vec<_>>().join(" "))
        }
        other => other.to_string(),
    }
}

/// Rows of cells aligned in columns, two spaces apart, as Go's tabwriter lays podman's tables.
pub fn columns(rows: &[Vec<String>]) -> Vec<String> {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..n).map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0)).collect();
    rows.iter()
        .map(|r| {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                if i + 1 == r.len() {
                    line.push_str(c);
                } else {
                    line.push_str(&format!("{c:<w$}  ", w = widths[i]));
                }
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_template_subset() {
        let v = serde_json::json!({"Repository": "localhost/a", "Tag": "1", "Id": "abc", "Names": ["x", "y"], "Config": {"Cmd": ["sh"]}});
        let t = Template::parse("{{.Repository}}:{{.Tag}}\\t{{.ID}} {{json .Names}} {{.Config.Cmd}} {{upper .Tag}}")
            .unwrap();
        assert_eq!(t.render(&v).unwrap(), "localhost/a:1\tabc [\"x\",\"y\"] [sh] 1");
        let t = Template::parse("table {{.Repository}} {{.Tag}}").unwrap();
        assert!(t.table);
        assert_eq!(t.header(|f| f.to_uppercase()), "REPOSITORY TAG");
        assert!(Template::parse("{{range .Names}}").is_err());
        assert!(Template::parse("{{.Repository").is_err());
        assert!(Template::parse("{{.Nope}}").unwrap().render(&v).is_err());
        assert_eq!(
            columns(&[vec!["A".into(), "BB".into(), "C".into()], vec!["aaa".into(), "b".into(), "c".into()]]),
            ["A    BB  C", "aaa  b   c"]
        );
    }
}
