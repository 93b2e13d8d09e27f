//! Catch2: its console reporter's totals and failed test cases.

use super::{Parsed, Status, TestResult};

fn number_before(s: &str, word: &str) -> Option<u64> {
    let i = s.find(word)?;
    s[..i].split(|c: char| !c.is_ascii_digit()).rfind(|w| !w.is_empty())?.parse().ok()
}

/// Catch2's totals: "All tests passed (N assertions in M test cases)" or
/// "test cases: M | P passed | F failed"; and the names of the failed test cases, from the
/// console reporter's header of each (a rule of dashes, the name, a rule of dashes). The
/// totals count the named failures once: `totals` keeps only the unnamed ones.
pub fn catch2(output: &str) -> Parsed {
    let mut p = Parsed::default();
    let lines: Vec<&str> = output.lines().collect();
    let rule = |l: &str| l.len() >= 40 && l.bytes().all(|b| b == b'-');
    let mut names: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut i = 0;
    while i < lines.len() {
        // The header: the test case's name, then its sections, between two rules.
        if rule(lines[i]) {
            if let Some(j) = (i + 2..lines.len().min(i + 8)).find(|&j| rule(lines[j])) {
                let name = lines[i + 1].trim().to_string();
                if !name.is_empty() && seen.insert(name.clone()) {
                    names.push(name);
                }
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    for line in &lines {
        if line.starts_with("All tests passed") {
            let m = number_before(line, "test case").unwrap_or(0);
            p.totals = Some((m, 0));
            p.complete = true;
        } else if let Some(rest) = line.strip_prefix("test cases:") {
            let passed = number_before(rest, "passed").unwrap_or(0);
            let failed = number_before(rest, "failed").unwrap_or(0);
            p.totals = Some((passed, failed));
            p.complete = true;
        }
    }
    if let Some((passed, failed)) = p.totals {
        let named = names.len().min(failed as usize);
        p.tests = names
            .into_iter()
            .take(named)
            .map(|name| TestResult { name, status: Status::Failed, duration_s: None, usage: None })
            .collect();
        p.totals = Some((passed, failed - named as u64));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_and_catch2() {
        let c = catch2("===\nAll tests passed (12 assertions in 5 test cases)\n");
        assert_eq!((c.passed(), c.failed(), c.complete), (5, 0, true));
        let c = catch2("test cases:  5 |  3 passed | 2 failed\nassertions: 9 | 7 passed | 2 failed\n");
        assert_eq!((c.passed(), c.failed()), (3, 2));
        let dash = "-".repeat(79);
        let out = format!("{dash}\nt00ff\n{dash}\nx_test.cpp:9\n{}\n\nx_test.cpp:9: FAILED:\n  REQUIRE( 1 == 2 )\n\n{dash}\nbig\n  section a\n{dash}\nx.cpp:3\n\n{}\ntest cases: 5 | 2 passed | 3 failed\n", ".".repeat(79), "=".repeat(79));
        let c = catch2(&out);
        assert_eq!(c.status_of("t00ff"), Some(Status::Failed));
        assert_eq!(c.status_of("big"), Some(Status::Failed));
        assert_eq!((c.passed(), c.failed(), c.totals), (2, 3, Some((2, 1))));
    }
}
