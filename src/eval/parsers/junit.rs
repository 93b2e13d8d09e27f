//! JUnit: XML report files (the JUnit console launcher's, pytest's `--junitxml`:
//! [`junit_reports`]); and the harness's Ant and Maven parsers, their console lines in the raw
//! log ([`harness_ant`], [`harness_maven`]).

use super::{by_line, Parsed, Status, StatusMap, TestResult};
use crate::eval::channel::Reports;
use regex::Regex;

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    Some(unescape(&tag[start..end]))
}

/// JUnit XML (`<testcase classname name time>` with `<failure>`, `<error>` or `<skipped>`).
pub fn junit_xml(xml: &str, p: &mut Parsed) {
    let mut rest = xml;
    while let Some(i) = rest.find("<testcase") {
        rest = &rest[i..];
        // The tag ends at the first `>` outside an attribute value (Catch2 writes test names
        // such as "Real part -> ..." with the `>` as it is).
        let mut quoted = false;
        let Some(end) = rest.char_indices().find_map(|(k, c)| {
            if c == '"' {
                quoted = !quoted;
            }
            (c == '>' && !quoted).then_some(k)
        }) else {
            break;
        };
        let tag = &rest[..end];
        let self_closing = tag.ends_with('/');
        // The body ends at its closing tag, looked for only up to the next testcase (a report
        // of unclosed testcases must not cost quadratic time).
        let next = rest[end..].find("<testcase").map(|k| k + end).unwrap_or(rest.len());
        let body_end = if self_closing { end } else { rest[..next].find("</testcase>").unwrap_or(next) };
        let body = &rest[end..body_end];
        let status = if body.contains("<failure") {
            Status::Failed
        } else if body.contains("<error") {
            Status::Error
        } else if body.contains("<skipped") {
            Status::Skipped
        } else {
            Status::Passed
        };
        let name = attr(tag, "name").unwrap_or_default();
        let name = match attr(tag, "classname") {
            Some(c) if !c.is_empty() => format!("{c}.{name}"),
            _ => name,
        };
        let duration_s = attr(tag, "time").and_then(|t| t.parse().ok());
        p.tests.push(TestResult { name, status, duration_s, usage: None });
        rest = &rest[body_end.max(end)..];
    }
}

/// Every XML report the runner wrote (JUnit's --reports-dir, pytest --junitxml): each one
/// document, written once.
pub fn junit_reports(reports: &Reports) -> Parsed {
    let mut p = Parsed::default();
    for (name, xml) in &reports.files {
        let xml = String::from_utf8_lossy(xml);
        if !xml.contains("<testsuite") {
            continue;
        }
        // A runner writes one suite per file (the console launcher one per engine, pytest and
        // Catch2 one inside <testsuites>): a second prolog or suite is a second write.
        let suites = xml.matches("<testsuite ").count() + xml.matches("<testsuite>").count();
        if xml.matches("<?xml").count() > 1 || suites > 1 {
            p.tampered = Some(format!("the report {name} was written more than once"));
        }
        p.complete = true;
        junit_xml(&xml, &mut p);
    }
    p
}

/// The reports of a binary run once per test (Catch2 under `each-test`): each file a stream of
/// documents, one per run, each of at most one test case; a name twice is a second write.
pub fn junit_reports_each(reports: &Reports) -> Parsed {
    let mut p = Parsed::default();
    for (name, xml) in &reports.files {
        if name == crate::measure::REPORT {
            continue;
        }
        let xml = String::from_utf8_lossy(xml);
        for doc in xml.split("<?xml").filter(|d| d.contains("<testsuite")) {
            p.complete = true;
            let before = p.tests.len();
            junit_xml(doc, &mut p);
            if p.tests.len() > before + 1 {
                p.tampered = Some(format!("a run of one test wrote {} test cases to {name}", p.tests.len() - before));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(t) = p.tests.iter().find(|t| !seen.insert(t.name.clone())) {
            p.tampered = Some(format!("{name} names {} twice", t.name));
        }
    }
    p
}

// ---- The harness's: the raw log, Ant's and Maven's console lines ----

/// The harness's `parse_log_ant`: Ant's JUnit task lines (`[junit] [PASS] name`; `[FAIL]`
/// and `[ERR]` failures).
pub fn harness_ant(log: &str) -> StatusMap {
    by_line(log, r"^\s*\[junit\]\s+\[(PASS|FAIL|ERR)\]\s+(.*)$", |c| {
        Some((c[2].to_string(), if &c[1] == "PASS" { Status::Passed } else { Status::Failed }))
    })
}

/// The harness's `parse_log_maven`. Maven prints no passing tests: each test runs alone
/// (`-Dtest=NAME`), and the BUILD line that follows says how it went; results that come before
/// their command are matched in order.
pub fn harness_maven(log: &str) -> StatusMap {
    let (name_re, result_re) =
        (Regex::new(r"^.*-Dtest=(\S+).*$").unwrap(), Regex::new(r"^.*BUILD (SUCCESS|FAILURE)$").unwrap());
    let mut m = StatusMap::new();
    let (mut pending, mut unmatched): (std::collections::VecDeque<String>, std::collections::VecDeque<String>) =
        Default::default();
    let status = |s: &str| Some(if s == "SUCCESS" { Status::Passed } else { Status::Failed });
    for line in log.split('\n') {
        let line = line.trim();
        if let Some(c) = name_re.captures(line) {
            pending.push_back(c[1].to_string());
        }
        if let Some(c) = result_re.captures(line) {
            match pending.pop_front() {
                Some(t) => {
                    m.insert(t, status(&c[1]));
                }
                None => unmatched.push_back(c[1].to_string()),
            }
        }
    }
    while let (Some(t), Some(s)) = (pending.front().cloned(), unmatched.pop_front()) {
        pending.pop_front();
        m.insert(t, status(&s));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::parsers::LogParser;

    #[test]
    fn junit_and_catch2() {
        let mut p = Parsed::default();
        junit_xml(
            r#"<testsuite><testcase name="a()" classname="T" time="0.5"/><testcase name="b&amp;c" classname="T" time="1"><failure message="x"/></testcase><testcase name="s" classname=""><skipped/></testcase></testsuite>"#,
            &mut p,
        );
        assert_eq!(p.tests.len(), 3);
        assert_eq!(p.tests[0].name, "T.a()");
        assert_eq!(p.status_of("T.b&c"), Some(Status::Failed));
        assert_eq!(p.status_of("s"), Some(Status::Skipped));
    }

    #[test]
    fn a_greater_than_sign_in_a_name_is_part_of_it() {
        let mut p = Parsed::default();
        junit_xml("<testcase classname=\"x.global\" name=\"a -> b\" time=\"0.1\"/><testcase classname=\"x.global\" name=\"a -> c\"/>", &mut p);
        let names: Vec<_> = p.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["x.global.a -> b", "x.global.a -> c"]);
    }

    /// The harness's parser, through the registry.
    #[test]
    fn parsers_read_what_the_runners_print() {
        let m = LogParser::Ant.parse("    [junit] [PASS] testA\n    [junit] [ERR] testB\n");
        assert_eq!((m["testA"], m["testB"]), (Some(Status::Passed), Some(Status::Failed)));
        let m = LogParser::Maven.parse("+ mvn test -Dtest=FooTest#a\n[INFO] BUILD SUCCESS\n+ mvn test -Dtest=FooTest#b\n+ mvn test -Dtest=FooTest#c\n[INFO] BUILD FAILURE\n[INFO] BUILD SUCCESS\n");
        assert_eq!(
            (m["FooTest#a"], m["FooTest#b"], m["FooTest#c"]),
            (Some(Status::Passed), Some(Status::Failed), Some(Status::Passed))
        );
    }
}
