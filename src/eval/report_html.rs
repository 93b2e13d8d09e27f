//! report.html: the run on one page that needs nothing else. Its style, its script and its
//! charts (SVG) are inline, and its Content-Security-Policy lets it fetch nothing: opened from
//! a CI job's artifacts or a laptop, offline, it shows per-language results with report.json's
//! numbers, each instance's wall time, CPU time and peak memory as bar charts, and the
//! instances that did not resolve in a table sorted by a click on a column, each with a link
//! to its log (a relative path, beside the page in the output directory). An address ending
//! in `#sort=wall` (or cpu, memory, verdict, ...; `:ascending`) opens it sorted.
//!
//! Every number taken from report.json carries its place there (`data-json`, a JSON pointer)
//! and its value (`data-value`), and every chart bar its instance and value, so that a test
//! can hold the page to the files it was made from.

use super::{InstanceResult, Verdict};
use serde_json::Value;
use std::fmt::Write;

/// Text for HTML, in an element or an attribute value: no markup, no control character.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A relative path as a link's target: the characters a URL gives a meaning to, escaped.
fn href(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A JSON pointer to `path` (RFC 6901).
fn pointer(path: &[&str]) -> String {
    path.iter().map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1"))).collect()
}

/// A number of report.json, shown with `show`, labelled with where it is.
fn num(summary: &Value, path: &[&str], show: &dyn Fn(f64) -> String) -> String {
    let p = pointer(path);
    match summary.pointer(&p) {
        Some(v) if v.is_number() => {
            format!("<td data-json=\"{}\" data-value=\"{v}\">{}</td>", esc(&p), esc(&show(v.as_f64().unwrap_or(0.0))))
        }
        _ => "<td>–</td>".into(),
    }
}

fn count(x: f64) -> String {
    format!("{x:.0}")
}

fn percent(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn seconds(x: f64) -> String {
    format!("{x:.2} s")
}

fn mib(x: f64) -> String {
    format!("{:.1} MiB", x / (1u64 << 20) as f64)
}

const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 76em; padding: 0 1em; color: #1f2328; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
h2 { font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #d0d7de; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: .25em .7em; border-bottom: 1px solid #eaeef2; text-align: right; vertical-align: top; }
th:first-child, td:first-child, td.text, th.text { text-align: left; }
th { background: #f6f8fa; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort=descending]::after { content: " ▼"; }
table.sortable th[aria-sort=ascending]::after { content: " ▲"; }
td.reason { max-width: 40em; white-space: pre-wrap; word-break: break-word; font-size: .92em; }
.score { font-size: 1.2em; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(22em, 1fr)); gap: 1em; }
.chart { max-height: 30em; overflow: auto; border: 1px solid #eaeef2; padding: .3em; }
.chart h3 { font-size: 1em; margin: .2em 0 .4em; }
svg text { font: 11px system-ui, sans-serif; fill: #1f2328; }
rect.resolved { fill: #2da44e; } rect.failed { fill: #cf222e; } rect.other { fill: #9a6700; }
.verdict-resolved { color: #1a7f37; } .verdict-failed { color: #cf222e; }
"#;

/// Sorts a table by a column (numbers by their `data-v`), and makes each header a button.
const SCRIPT: &str = r#"
(function () {
  "use strict";
  function sortTable(table, key, direction) {
    var th = table.querySelector('th[data-sort="' + key + '"]');
    if (!th) { return; }
    var i = th.cellIndex, numeric = th.hasAttribute("data-numeric");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[i], y = b.cells[i], c;
      if (numeric) { c = parseFloat(x.getAttribute("data-v")) - parseFloat(y.getAttribute("data-v")); }
      else { c = x.textContent.localeCompare(y.textContent); }
      if (direction === "descending") { c = -c; }
      return c !== 0 ? c : a.getAttribute("data-id").localeCompare(b.getAttribute("data-id"));
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.querySelectorAll("th"), function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", direction);
  }
  window.polysandboxSort = sortTable;
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable th[data-sort]"), function (th) {
    th.setAttribute("tabindex", "0");
    var go = function () {
      var table = th.closest("table");
      sortTable(table, th.getAttribute("data-sort"), th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending");
    };
    th.addEventListener("click", go);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
  });
  // An address ending in #sort=COLUMN[:ascending|descending] opens the failures sorted.
  var m = /^#sort=(\w+)(?::(ascending|descending))?$/.exec(window.location.hash);
  var failures = document.getElementById("failures");
  if (m && failures) { sortTable(failures, m[1], m[2] || "descending"); }
  document.body.setAttribute("data-ready", "true");
})();
"#;

/// A horizontal bar per instance, largest first.
fn chart(title: &str, metric: &str, rows: &[(&InstanceResult, f64)], show: &dyn Fn(f64) -> String) -> String {
    let mut rows: Vec<&(&InstanceResult, f64)> = rows.iter().collect();
    rows.sort_by(|a, b| {
        b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal).then(a.0.instance_id.cmp(&b.0.instance_id))
    });
    let max = rows.iter().map(|r| r.1).fold(0.0f64, f64::max);
    let (label, bar, value, step) = (190.0, 200.0, 80.0, 18.0);
    let height = step * rows.len() as f64 + 4.0;
    let mut s = format!(
        "<div class=\"chart\"><h3>{}</h3><svg data-metric=\"{metric}\" role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{height}\" viewBox=\"0 0 {} {height}\">",
        esc(title),
        esc(title),
        label + bar + value,
        label + bar + value
    );
    for (k, (r, v)) in rows.iter().enumerate() {
        let y = 2.0 + step * k as f64;
        let w = if max > 0.0 { (v / max * bar).max(1.0) } else { 1.0 };
        let class = match r.verdict {
            Verdict::Resolved => "resolved",
            Verdict::Unresolved | Verdict::PatchFailed => "failed",
            _ => "other",
        };
        let id: String = r.instance_id.chars().take(30).collect();
        let _ = write!(
            s,
            "<g><title>{}: {}</title><text x=\"0\" y=\"{}\">{}</text><rect class=\"{class}\" data-id=\"{}\" data-value=\"{v}\" x=\"{label}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text></g>",
            esc(&r.instance_id),
            esc(&show(*v)),
            y + 12.0,
            esc(&id),
            esc(&r.instance_id),
            step - 4.0,
            label + w + 4.0,
            y + 12.0,
            esc(&show(*v))
        );
    }
    s + "</svg></div>"
}

/// The page, from the run's results and its report.json (`summary`).
pub fn html(results: &[InstanceResult], summary: &Value, output: &std::path::Path) -> String {
    let resolved = summary["resolved"].as_u64().unwrap_or(0);
    let admitted = summary["admitted"].as_u64().unwrap_or(0);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>polysandbox eval: {resolved} of {admitted} resolved</title><style>{STYLE}</style></head><body>\n"
    );
    h += "<h1>polysandbox eval</h1>\n<table class=\"score\"><tr>";
    h += "<th>accuracy</th>";
    h += &num(summary, &["accuracy_score"], &percent);
    h += "<th>resolved</th>";
    h += &num(summary, &["resolved"], &count);
    h += "<th>of</th>";
    h += &num(summary, &["admitted"], &count);
    h += "<th>instances</th>";
    h += &num(summary, &["total"], &count);
    h += "<th>wall</th>";
    h += &num(summary, &["wall_time_s"], &|x| format!("{x:.1} s"));
    h += "</tr></table>\n";
    if let Some(p) = summary["predictions"].as_str() {
        let what = match p {
            "gold" => "gold, the dataset's reference solutions",
            "stub" => "stub, the files as shipped",
            p => p,
        };
        let _ = writeln!(h, "<p id=\"predictions\">Predictions: <code>{}</code></p>", esc(what));
    }
    if summary["calibrated"] == Value::Bool(false) {
        h += "<p>Graded without a calibration (weaker controls; the tests gold passes are not pinned by name).</p>\n";
    }

    // Per language, then every instance.
    let verdicts =
        ["resolved", "unresolved", "empty_patch", "no_prediction", "patch_failed", "timeout", "oom", "error"];
    h += "<h2>Per language</h2>\n<table id=\"languages\"><thead><tr><th>language</th><th>total</th>";
    for v in verdicts {
        let _ = write!(h, "<th>{}</th>", v.replace('_', " "));
    }
    h += "<th>accuracy</th></tr></thead><tbody>\n";
    let mut row = |label: &str, base: &[&str]| {
        let _ = write!(h, "<tr data-language=\"{}\"><td>{}</td>", esc(label), esc(label));
        fn at<'a>(base: &[&'a str], k: &'a str) -> Vec<&'a str> {
            base.iter().copied().chain(std::iter::once(k)).collect()
        }
        h += &num(summary, &at(base, "total"), &count);
        for v in verdicts {
            h += &num(summary, &at(base, v), &count);
        }
        h += &num(summary, &at(base, "accuracy_score"), &percent);
        h += "</tr>\n";
    };
    if let Some(langs) = summary["by_language"].as_object() {
        for l in langs.keys() {
            row(l, &["by_language", l]);
        }
    }
    row("all", &[]);
    h += "</tbody></table>\n";

    // Resources: the distribution, then each instance.
    h += "<h2>Resources</h2>\n<table id=\"resources\"><thead><tr><th>per instance</th><th>median</th><th>p90</th><th>max</th><th>sum</th></tr></thead><tbody>\n";
    for (label, key, show) in [
        ("wall time", "wall_s", &seconds as &dyn Fn(f64) -> String),
        ("CPU time", "cpu_s", &seconds),
        ("peak memory", "memory_peak_bytes", &mib),
    ] {
        let _ = write!(h, "<tr><td>{label}</td>");
        for q in ["p50", "p90", "max", "sum"] {
            h += &num(summary, &["resources", key, q], show);
        }
        h += "</tr>\n";
    }
    h += "</tbody></table>\n";
    let measured: Vec<&InstanceResult> = results.iter().filter(|r| r.attempts > 0 && r.wall_s > 0.0).collect();
    if measured.is_empty() {
        h += "<p>No instance ran.</p>\n";
    } else {
        h += "<div class=\"charts\">";
        let of = |f: &dyn Fn(&InstanceResult) -> f64| measured.iter().map(|r| (*r, f(r))).collect::<Vec<_>>();
        h += &chart("Wall time", "wall_s", &of(&|r| r.wall_s), &seconds);
        h += &chart("CPU time", "cpu_s", &of(&|r| r.cpu_s), &seconds);
        h += &chart("Peak memory", "memory_peak_bytes", &of(&|r| r.memory_peak_bytes as f64), &mib);
        h += "</div>\n";
    }

    // What did not resolve.
    let failed: Vec<&InstanceResult> = results.iter().filter(|r| r.verdict != Verdict::Resolved).collect();
    let _ = writeln!(h, "<h2>Not resolved ({})</h2>", failed.len());
    if failed.is_empty() {
        h += "<p>Every instance resolved.</p>\n";
    } else {
        h += "<table id=\"failures\" class=\"sortable\"><thead><tr>\
              <th data-sort=\"instance\" class=\"text\">instance</th><th data-sort=\"language\" class=\"text\">language</th>\
              <th data-sort=\"verdict\" class=\"text\">verdict</th><th data-sort=\"reason\" class=\"text\">reason</th>\
              <th data-sort=\"wall\" data-numeric>wall</th><th data-sort=\"cpu\" data-numeric>CPU</th>\
              <th data-sort=\"memory\" data-numeric>peak memory</th><th class=\"text\">log</th></tr></thead><tbody>\n";
        for r in &failed {
            let log = super::result::log_path(output, r)
                .map(|path| format!("<a href=\"{}\">{}</a>", esc(&href(&path)), esc(&path)))
                .unwrap_or_default();
            let class = if r.verdict == Verdict::Resolved { "verdict-resolved" } else { "verdict-failed" };
            let _ = writeln!(
                h,
                "<tr data-id=\"{}\"><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text {class}\">{}</td><td class=\"text reason\">{}</td>\
                 <td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td><td class=\"text\">{log}</td></tr>",
                esc(&r.instance_id),
                esc(&r.instance_id),
                esc(&r.language),
                r.verdict,
                esc(r.reason.as_deref().unwrap_or("")),
                r.wall_s,
                seconds(r.wall_s),
                r.cpu_s,
                seconds(r.cpu_s),
                r.memory_peak_bytes,
                mib(r.memory_peak_bytes as f64),
            );
        }
        h += "</tbody></table>\n";
    }
    h += "<p>Per instance: <code>results.jsonl</code>; per test: <code>junit.xml</code>; the numbers: <code>report.json</code>.</p>\n";
    let _ = write!(h, "<script>{SCRIPT}</script>\n</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::instance::{Instance, Kind};

    #[test]
    fn the_page_fetches_nothing_and_shows_text_as_text() {
        let inst = Instance {
            id: "x/<script>alert(1)</script>".into(),
            language: "py\"thon".into(),
            image: None,
            kind: Kind::Snippet { gold: String::new(), stub: String::new(), test: String::new() },
        };
        let mut r =
            InstanceResult::bare(&inst, "img", "key", Verdict::Unresolved, Some("<img src=x onerror=alert(1)>".into()));
        (r.attempts, r.wall_s, r.logs) = (1, 2.0, "logs/x".into());
        let mut o = crate::eval::Options::new("/data".into(), "gold", "/out".into(), "".into());
        o.root = Some("/store".into());
        let redo = super::super::report::Recalibrate::of(&o);
        let summary =
            super::super::report::summary(std::slice::from_ref(&r), std::time::Duration::from_secs(3), "gold", &redo);
        let dir = std::env::temp_dir().join(format!("polysandbox-html-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("logs/x")).unwrap();
        std::fs::write(dir.join("logs/x/test_output.txt"), "out").unwrap();
        let page = html(&[r], &summary, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!page.contains("<script>alert") && !page.contains("<img"), "{page}");
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"), "{page}");
        assert!(!page.contains("http://") && !page.contains("https://"), "{page}");
        assert!(page.contains("default-src 'none'"), "{page}");
        assert!(page.contains(r#"data-json="/by_language/py&quot;thon/unresolved" data-value="1">1</td>"#), "{page}");
        assert!(page.contains(r#"<a href="logs/x/test_output.txt">"#), "{page}");
        assert_eq!(pointer(&["a/b", "c~d"]), "/a~1b/c~0d");
        assert_eq!(href("logs/a b#1?/test_output.txt"), "logs/a%20b%231%3F/test_output.txt");
    }
}
