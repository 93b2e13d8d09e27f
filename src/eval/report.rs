//! The run's reports: report.json (SWE-bench's and HyperAgents' summary fields, a per-language
//! breakdown, resource percentiles), junit.xml, and the summary table.

use super::parsers::Status;
use super::{InstanceResult, Verdict};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

fn percentiles(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
    json!({"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": v[v.len() - 1], "sum": v.iter().sum::<f64>()})
}

fn ids(results: &[InstanceResult], pred: impl Fn(&InstanceResult) -> bool) -> Vec<String> {
    results.iter().filter(|r| pred(r)).map(|r| r.instance_id.clone()).collect()
}

/// The share of resolved instances among those the dataset and its calibration admit: an
/// `error` counts as not resolved (as SWE-bench scores resolved over total); only an instance
/// the calibration found gold failing on is left out.
fn accuracy(results: &[InstanceResult]) -> f64 {
    let scored = results.iter().filter(|r| r.scored()).count();
    let resolved = results.iter().filter(|r| r.verdict == Verdict::Resolved).count();
    if scored == 0 {
        0.0
    } else {
        resolved as f64 / scored as f64
    }
}

fn counts(results: &[InstanceResult]) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("total".into(), json!(results.len()));
    for v in Verdict::RECORDED {
        m.insert(v.name().into(), json!(results.iter().filter(|r| r.verdict == v).count()));
    }
    m.insert("accuracy_score".into(), json!(accuracy(results)));
    m
}

/// report.json: `predictions` names what was graded (gold, stub, or the predictions' path),
/// so that a run of the reference solutions is never read as a model's.
pub fn summary(results: &[InstanceResult], wall: Duration, predictions: &str) -> Value {
    let ran = |r: &InstanceResult| {
        !matches!(r.verdict, Verdict::Error | Verdict::EmptyPatch | Verdict::NoPrediction | Verdict::Interrupted)
    };
    // Submitted, as the SWE-bench harness counts them: the instances with a prediction, empty
    // or not.
    let submitted = |r: &InstanceResult| r.verdict != Verdict::NoPrediction;
    let mut m = Map::new();
    m.insert("predictions".into(), json!(predictions));
    m.insert("accuracy_score".into(), json!(accuracy(results)));
    m.insert("total".into(), json!(results.len()));
    m.insert("submitted".into(), json!(results.iter().filter(|r| submitted(r)).count()));
    m.insert("completed".into(), json!(results.iter().filter(|r| ran(r)).count()));
    for v in Verdict::RECORDED {
        m.insert(v.name().into(), json!(results.iter().filter(|r| r.verdict == v).count()));
    }
    // SWE-bench's names, for tools that read its report.
    m.insert("total_instances".into(), json!(results.len()));
    m.insert("submitted_instances".into(), m["submitted"].clone());
    m.insert("completed_instances".into(), m["completed"].clone());
    for v in Verdict::RECORDED {
        m.insert(format!("{v}_instances"), m[v.name()].clone());
    }
    m.insert("submitted_ids".into(), json!(ids(results, submitted)));
    m.insert("completed_ids".into(), json!(ids(results, ran)));
    m.insert("incomplete_ids".into(), json!(ids(results, |r| !ran(r))));
    for v in Verdict::RECORDED {
        m.insert(format!("{v}_ids"), json!(ids(results, |r| r.verdict == v)));
    }
    let mut by_lang: BTreeMap<String, Vec<InstanceResult>> = BTreeMap::new();
    for r in results {
        by_lang.entry(r.language.clone()).or_default().push(r.clone());
    }
    m.insert(
        "by_language".into(),
        Value::Object(by_lang.iter().map(|(l, rs)| (l.clone(), Value::Object(counts(rs)))).collect()),
    );
    let measured: Vec<&InstanceResult> = results.iter().filter(|r| r.attempts > 0 && r.wall_s > 0.0).collect();
    m.insert(
        "resources".into(),
        json!({
            "wall_s": percentiles(measured.iter().map(|r| r.wall_s).collect()),
            "cpu_s": percentiles(measured.iter().map(|r| r.cpu_s).collect()),
            "memory_peak_bytes": percentiles(measured.iter().map(|r| r.memory_peak_bytes as f64).collect()),
        }),
    );
    m.insert("per_test".into(), per_test(results));
    m.insert("vs_gold".into(), vs_gold(results));
    // What the score is over, and what to run again.
    m.insert("admitted".into(), json!(results.iter().filter(|r| r.scored()).count()));
    m.insert("excluded_ids".into(), json!(ids(results, |r| r.excluded)));
    m.insert("rerun_ids".into(), json!(ids(results, |r| r.scored() && r.verdict == Verdict::Error)));
    m.insert(
        "resolved_rate".into(),
        json!(if results.is_empty() {
            0.0
        } else {
            results.iter().filter(|r| r.verdict == Verdict::Resolved).count() as f64 / results.len() as f64
        }),
    );
    // Whether a calibration stood behind the grading (eval calibrates by default;
    // --no-calibration grades without one, with weaker controls and no tests pinned by name).
    m.insert(
        "calibrated".into(),
        json!(results.iter().all(|r| r.controls.as_deref().is_none_or(|c| !c.contains("uncalibrated")))),
    );
    m.insert("wall_time_s".into(), json!(wall.as_secs_f64()));
    m.insert("schema_version".into(), json!(2));
    Value::Object(m)
}

/// Every report of a finished run, from its results: report.json, junit.xml, and each
/// format's own files (SWE-bench's run report, Multi-SWE-bench's final_report.json) for the
/// instances of `insts` it owns. eval, `--rewrite_reports` and `merge` all write them here.
pub fn write_outputs(
    o: &super::Options,
    preds: &super::predictions::Predictions,
    insts: &[super::instance::Instance],
    results: &[InstanceResult],
    wall: Duration,
) -> Result<(), String> {
    let write = |name: &str, text: String| {
        std::fs::write(o.output.join(name), text).map_err(|e| format!("{}: {e}", o.output.join(name).display()))
    };
    let summary = summary(results, wall, &o.predictions);
    write("report.json", serde_json::to_string_pretty(&summary).unwrap() + "\n")?;
    write("junit.xml", junit(results))?;
    for f in super::formats::REGISTRY {
        let mine: Vec<super::instance::Instance> =
            insts.iter().filter(|i| super::formats::of(i).name() == f.name()).cloned().collect();
        if !mine.is_empty() {
            f.write_files(o, preds, &mine, results)?;
        }
    }
    Ok(())
}

/// Every measured test of the run: (instance, test name, its usage).
fn measured_tests(results: &[InstanceResult]) -> Vec<(&str, &str, &crate::measure::TestUsage)> {
    results
        .iter()
        .flat_map(|r| {
            r.tests.iter().filter_map(move |t| t.usage.as_ref().map(|u| (r.instance_id.as_str(), t.name.as_str(), u)))
        })
        .collect()
}

/// The heaviest `n` tests by `key`, heaviest first.
fn heaviest<'a>(
    all: &[(&'a str, &'a str, &'a crate::measure::TestUsage)],
    key: impl Fn(&crate::measure::TestUsage) -> f64,
    n: usize,
) -> Vec<(&'a str, &'a str, f64)> {
    let mut v: Vec<(&str, &str, f64)> = all.iter().map(|(i, t, u)| (*i, *t, key(u))).collect();
    v.sort_by(|a, b| b.2.partial_cmp(&a.2).unwrap_or(std::cmp::Ordering::Equal));
    v.truncate(n);
    v
}

/// report.json's `per_test`: how many tests were measured and how, percentiles over them,
/// the heaviest, and those stopped for a per-test limit.
fn per_test(results: &[InstanceResult]) -> Value {
    let all = measured_tests(results);
    let mut methods = BTreeMap::new();
    for (_, _, u) in &all {
        *methods
            .entry(serde_json::to_value(u.method).unwrap_or_default().as_str().unwrap_or("").to_string())
            .or_insert(0) += 1;
    }
    let top = |key: &dyn Fn(&crate::measure::TestUsage) -> f64, field: &str| -> Value {
        Value::Array(
            heaviest(&all, key, 10)
                .into_iter()
                .map(|(i, t, v)| json!({"instance_id": i, "test": t, field: v}))
                .collect(),
        )
    };
    json!({
        "measured": all.len(),
        "methods": methods,
        "wall_s": percentiles(all.iter().map(|(_, _, u)| u.wall_s).collect()),
        "cpu_s": percentiles(all.iter().map(|(_, _, u)| u.cpu_s()).collect()),
        "memory_peak_bytes": percentiles(all.iter().map(|(_, _, u)| u.memory_peak_bytes as f64).collect()),
        "slowest": top(&|u| u.wall_s, "wall_s"),
        "most_cpu": top(&|u| u.cpu_s(), "cpu_s"),
        "most_memory": top(&|u| u.memory_peak_bytes as f64, "memory_peak_bytes"),
        "stopped": all.iter().filter_map(|(i, t, u)| u.stopped_by.map(|l| json!({"instance_id": i, "test": t, "stopped_by": l}))).collect::<Vec<_>>(),
    })
}

/// Ratios' distribution: nearest-rank median and 90th percentile, the extremes, how many.
fn ratios(mut v: Vec<f64>) -> Value {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
    json!({"median": at(0.5), "p90": at(0.9), "min": v[0], "max": v[v.len() - 1], "n": v.len()})
}

/// Each compared test's (instance, test, CPU ratio, memory ratio).
fn test_ratios(results: &[InstanceResult]) -> Vec<(&str, &str, Option<f64>, Option<f64>)> {
    measured_tests(results)
        .into_iter()
        .filter(|(_, _, u)| u.cpu_vs_gold.is_some() || u.memory_vs_gold.is_some())
        .map(|(i, t, u)| (i, t, u.cpu_vs_gold, u.memory_vs_gold))
        .collect()
}

/// The instances with an instance-level ratio `f`, largest first.
fn largest_instances(
    results: &[InstanceResult],
    f: impl Fn(&super::vs_gold::VsGold) -> Option<f64>,
) -> Vec<(&str, f64)> {
    let mut v: Vec<(&str, f64)> =
        results.iter().filter_map(|r| r.vs_gold.as_ref().and_then(&f).map(|x| (r.instance_id.as_str(), x))).collect();
    v.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    v
}

/// report.json's `vs_gold`: the ratios to gold's usage (see vs_gold.rs), per test and per
/// instance, their distribution, and the largest CPU ratios.
fn vs_gold(results: &[InstanceResult]) -> Value {
    let tests = test_ratios(results);
    let inst: Vec<&super::vs_gold::VsGold> = results.iter().filter_map(|r| r.vs_gold.as_ref()).collect();
    let mut by_cpu: Vec<_> = tests.iter().filter_map(|(i, t, c, _)| c.map(|c| (*i, *t, c))).collect();
    by_cpu.sort_by(|a, b| b.2.partial_cmp(&a.2).unwrap_or(std::cmp::Ordering::Equal));
    let of = |f: &dyn Fn(&super::vs_gold::VsGold) -> Option<f64>| ratios(inst.iter().filter_map(|v| f(v)).collect());
    json!({
        "cpu_floor_s": super::vs_gold::CPU_FLOOR_S,
        "tests": {
            "compared": tests.len(),
            "cpu": ratios(tests.iter().filter_map(|x| x.2).collect()),
            "memory": ratios(tests.iter().filter_map(|x| x.3).collect()),
        },
        "instances": {
            "compared": inst.len(),
            "cpu": of(&|v| v.cpu),
            "memory": of(&|v| v.memory),
            "wall": of(&|v| v.wall),
            "run_cpu": of(&|v| v.run_cpu),
            "run_memory": of(&|v| v.run_memory),
            "run_wall": of(&|v| v.run_wall),
        },
        "largest_cpu_tests": by_cpu.iter().take(10).map(|(i, t, c)| json!({"instance_id": i, "test": t, "cpu_vs_gold": c})).collect::<Vec<_>>(),
        "largest_cpu_instances": largest_instances(results, |v| v.cpu).into_iter().take(10).map(|(i, c)| json!({"instance_id": i, "cpu": c})).collect::<Vec<_>>(),
    })
}

/// Text for an XML attribute or element: only the characters XML 1.0 allows (no control but
/// tab and newline, no U+FFFE or U+FFFF: a solution's compiler line holding one, in a reason,
/// made the whole junit.xml unreadable), escaped.
fn esc(s: &str) -> String {
    s.chars()
        .filter(|c| (!c.is_control() || *c == '\n' || *c == '\t') && !matches!(*c, '\u{FFFE}' | '\u{FFFF}'))
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One testsuite per language, one testcase per instance.
pub fn junit(results: &[InstanceResult]) -> String {
    let mut by_lang: BTreeMap<&str, Vec<&InstanceResult>> = BTreeMap::new();
    for r in results {
        by_lang.entry(&r.language).or_default().push(r);
    }
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"polysandbox eval\">\n");
    for (lang, rs) in by_lang {
        let fail = rs
            .iter()
            .filter(|r| {
                !matches!(r.verdict, Verdict::Resolved | Verdict::Error | Verdict::EmptyPatch | Verdict::NoPrediction)
            })
            .count();
        let err = rs.iter().filter(|r| r.verdict == Verdict::Error).count();
        let skip = rs.iter().filter(|r| matches!(r.verdict, Verdict::EmptyPatch | Verdict::NoPrediction)).count();
        let time: f64 = rs.iter().map(|r| r.wall_s).sum();
        x += &format!("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{fail}\" errors=\"{err}\" skipped=\"{skip}\" time=\"{time:.3}\">\n", esc(lang), rs.len());
        for r in rs {
            x += &format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                esc(lang),
                esc(&r.instance_id),
                r.wall_s
            );
            let msg = esc(&format!("{}{}", r.verdict, r.reason.as_ref().map(|s| format!(": {s}")).unwrap_or_default()));
            x += &match r.verdict {
                Verdict::Resolved => "/>\n".to_string(),
                Verdict::Error | Verdict::Interrupted => {
                    format!(">\n      <error message=\"{msg}\" type=\"error\"/>\n    </testcase>\n")
                }
                Verdict::EmptyPatch | Verdict::NoPrediction => {
                    format!(">\n      <skipped message=\"{msg}\"/>\n    </testcase>\n")
                }
                v @ (Verdict::Unresolved | Verdict::PatchFailed | Verdict::Timeout | Verdict::Oom) => {
                    format!(">\n      <failure message=\"{msg}\" type=\"{v}\"/>\n    </testcase>\n")
                }
            };
        }
        x += "  </testsuite>\n";
    }
    // Each instance's measured tests: a suite of their own, a testcase per test with its wall
    // time and, as properties, its CPU, peak memory and how they were measured.
    for r in results.iter().filter(|r| r.tests.iter().any(|t| t.usage.is_some())) {
        let tests: Vec<_> = r.tests.iter().filter(|t| t.usage.is_some()).collect();
        // The instance's ratios to gold, where there are some.
        let v = r.vs_gold.clone().unwrap_or_default();
        let props: Vec<(&str, f64)> = [("cpu_vs_gold", v.cpu), ("memory_vs_gold", v.memory), ("wall_vs_gold", v.wall)]
            .into_iter()
            .filter_map(|(k, x)| x.map(|x| (k, x)))
            .collect();
        x += &test_suite(&format!("{} tests", r.instance_id), &r.instance_id, &tests, &props);
    }
    x + "</testsuites>\n"
}

/// A JUnit testsuite of test cases, each with its wall time and, where it was measured, its
/// CPU, peak memory and how they were measured as properties (eval's junit.xml, `test --junit`).
pub fn test_suite(
    name: &str,
    classname: &str,
    tests: &[&crate::eval::parsers::TestResult],
    props: &[(&str, f64)],
) -> String {
    let failed = tests.iter().filter(|t| matches!(t.status, Status::Failed | Status::Error)).count();
    let skipped = tests.iter().filter(|t| t.status == Status::Skipped).count();
    let time: f64 = tests.iter().map(|t| t.usage.as_ref().map(|u| u.wall_s).or(t.duration_s).unwrap_or(0.0)).sum();
    let mut x = format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">\n",
        esc(name),
        tests.len()
    );
    if !props.is_empty() {
        x += "    <properties>\n";
        for (k, v) in props {
            x += &format!("      <property name=\"{k}\" value=\"{v:.3}\"/>\n");
        }
        x += "    </properties>\n";
    }
    for t in tests {
        let wall = t.usage.as_ref().map(|u| u.wall_s).or(t.duration_s).unwrap_or(0.0);
        x += &format!("    <testcase classname=\"{}\" name=\"{}\" time=\"{wall:.3}\">\n", esc(classname), esc(&t.name));
        if let Some(u) = &t.usage {
            let method = serde_json::to_value(u.method).unwrap_or_default();
            let mut props = vec![
                ("cpu_user_s", format!("{:.6}", u.cpu_user_s)),
                ("cpu_system_s", format!("{:.6}", u.cpu_system_s)),
                ("memory_peak_bytes", u.memory_peak_bytes.to_string()),
                ("measured_by", method.as_str().unwrap_or("").to_string()),
            ];
            if let Some(l) = u.stopped_by {
                props.push((
                    "stopped_by",
                    serde_json::to_value(l).unwrap_or_default().as_str().unwrap_or("").to_string(),
                ));
            }
            if let Some(c) = u.cpu_vs_gold {
                props.push(("cpu_vs_gold", format!("{c:.3}")));
            }
            if let Some(m) = u.memory_vs_gold {
                props.push(("memory_vs_gold", format!("{m:.3}")));
            }
            x += "      <properties>\n";
            for (k, v) in props {
                x += &format!("        <property name=\"{k}\" value=\"{}\"/>\n", esc(&v));
            }
            x += "      </properties>\n";
        }
        match t.status {
            Status::Failed | Status::Error => {
                let why = t.usage.as_ref().and_then(|u| u.stopped_by).map(|l| l.describe()).unwrap_or("failed");
                x += &format!("      <failure message=\"{}\" type=\"failed\"/>\n", esc(why));
            }
            Status::Skipped => x += "      <skipped/>\n",
            Status::Passed | Status::Xfail => {}
        }
        x += "    </testcase>\n";
    }
    x + "  </testsuite>\n"
}

/// Per-language counts and resources, then the totals, naming what was graded (`predictions`:
/// "gold (...)" for the reference solutions).
pub fn table(results: &[InstanceResult], wall: Duration, predictions: &str) -> String {
    let mut by_lang: BTreeMap<&str, Vec<&InstanceResult>> = BTreeMap::new();
    for r in results {
        by_lang.entry(&r.language).or_default().push(r);
    }
    let mut t = format!(
        "{:<12} {:>5} {:>8} {:>10} {:>5} {:>7} {:>7} {:>7} {:>4} {:>5} {:>9} {:>9}\n",
        "language",
        "total",
        "resolved",
        "unresolved",
        "empty",
        "no_pred",
        "patch_f",
        "timeout",
        "oom",
        "error",
        "cpu s",
        "peak MiB"
    );
    let mut row = |name: &str, rs: &[&InstanceResult]| {
        let c = |v: Verdict| rs.iter().filter(|r| r.verdict == v).count();
        let cpu: f64 = rs.iter().map(|r| r.cpu_s).sum();
        let peak = rs.iter().map(|r| r.memory_peak_bytes).max().unwrap_or(0) >> 20;
        t += &format!(
            "{:<12} {:>5} {:>8} {:>10} {:>5} {:>7} {:>7} {:>7} {:>4} {:>5} {:>9.1} {:>9}\n",
            name,
            rs.len(),
            c(Verdict::Resolved),
            c(Verdict::Unresolved),
            c(Verdict::EmptyPatch),
            c(Verdict::NoPrediction),
            c(Verdict::PatchFailed),
            c(Verdict::Timeout),
            c(Verdict::Oom),
            c(Verdict::Error),
            cpu,
            peak
        );
    };
    for (l, rs) in &by_lang {
        row(l, rs);
    }
    let all: Vec<&InstanceResult> = results.iter().collect();
    row("all", &all);
    let scored = results.iter().filter(|r| r.scored()).count();
    let errors = results.iter().filter(|r| r.scored() && r.verdict == Verdict::Error).count();
    let excluded = results.iter().filter(|r| r.excluded).count();
    t += &format!(
        "resolved {} of {} ({:.1}%), {:.1} s wall; predictions: {predictions}\n",
        results.iter().filter(|r| r.verdict == Verdict::Resolved).count(),
        scored,
        100.0 * accuracy(results),
        wall.as_secs_f64()
    );
    if errors > 0 {
        t += &format!(
            "{errors} error{} (counted as not resolved; rerun {} with --resume)\n",
            if errors == 1 { "" } else { "s" },
            if errors == 1 { "it" } else { "them" }
        );
    }
    if excluded > 0 {
        t += &format!("{excluded} left out of the score: the calibration found gold failing there\n");
    }
    if results.iter().any(|r| r.controls.as_deref().is_some_and(|c| c.contains("uncalibrated"))) {
        t += "uncalibrated: graded without a calibration (weaker controls; tests gold passes not pinned by name)\n";
    }
    let all = measured_tests(results);
    if !all.is_empty() {
        let show = |v: Vec<(&str, &str, f64)>, f: &dyn Fn(f64) -> String| {
            v.into_iter().take(3).map(|(i, n, x)| format!("{i} {n} ({})", f(x))).collect::<Vec<_>>().join(", ")
        };
        t += &format!("per-test usage: {} tests measured\n", all.len());
        t += &format!("  slowest: {}\n", show(heaviest(&all, |u| u.wall_s, 3), &|x| format!("{x:.2} s")));
        t += &format!("  most CPU: {}\n", show(heaviest(&all, |u| u.cpu_s(), 3), &|x| format!("{x:.2} s")));
        t += &format!(
            "  most memory: {}\n",
            show(heaviest(&all, |u| u.memory_peak_bytes as f64, 3), &|x| format!("{} MiB", x as u64 >> 20))
        );
        let stopped: Vec<String> =
            all.iter().filter_map(|(i, n, u)| u.stopped_by.map(|l| format!("{i} {n} ({})", l.describe()))).collect();
        if !stopped.is_empty() {
            t += &format!("  stopped by a per-test limit: {}\n", stopped.join(", "));
        }
    }
    t += &vs_gold_lines(results);
    t
}

/// The summary's lines on the ratios to gold: the instances' median and largest CPU and memory
/// ratios, then the tests with the largest CPU ratio.
fn vs_gold_lines(results: &[InstanceResult]) -> String {
    let median = |v: Vec<(&str, f64)>| ratios(v.into_iter().map(|x| x.1).collect())["median"].as_f64();
    let cpu = largest_instances(results, |v| v.cpu);
    let mem = largest_instances(results, |v| v.memory);
    let mut parts = vec![];
    if let (Some((id, top)), Some(m)) = (cpu.first().copied(), median(cpu.clone())) {
        parts.push(format!("median CPU {m:.2}x, slowest {id} {top:.2}x"));
    }
    if let (Some((id, top)), Some(m)) = (mem.first().copied(), median(mem.clone())) {
        parts.push(format!("median memory {m:.2}x, largest {id} {top:.2}x"));
    }
    if parts.is_empty() {
        return String::new();
    }
    let mut t = format!("vs gold: {}\n", parts.join("; "));
    let mut tests: Vec<_> = test_ratios(results).into_iter().filter_map(|(i, n, c, _)| c.map(|c| (i, n, c))).collect();
    tests.sort_by(|a, b| b.2.partial_cmp(&a.2).unwrap_or(std::cmp::Ordering::Equal));
    if !tests.is_empty() {
        let top: Vec<String> = tests.iter().take(3).map(|(i, n, c)| format!("{i} {n} ({c:.2}x)")).collect();
        t += &format!("  largest CPU vs gold: {}\n", top.join(", "));
    }
    t
}

#[cfg(test)]
mod tests {
    //! The reports' arithmetic: percentiles, what the score is over, and how each verdict is
    //! written in junit.xml and the table.
    use super::*;
    use crate::eval::instance::{Instance, Kind};

    fn result(id: &str, lang: &str, verdict: Verdict) -> InstanceResult {
        let inst = Instance {
            id: id.into(),
            language: lang.into(),
            image: None,
            kind: Kind::Snippet { gold: String::new(), stub: String::new(), test: String::new() },
        };
        let mut r = InstanceResult::bare(&inst, "img", "key", verdict, None);
        r.attempts = 1;
        r.wall_s = 1.0;
        r
    }

    #[test]
    fn percentiles_are_nearest_rank_with_max_and_sum() {
        assert_eq!(percentiles(vec![]), Value::Null);
        assert_eq!(
            percentiles(vec![3.0, 1.0, 2.0]),
            json!({"p50": 2.0, "p90": 3.0, "p99": 3.0, "max": 3.0, "sum": 6.0})
        );
        let hundred: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentiles(hundred), json!({"p50": 51.0, "p90": 90.0, "p99": 99.0, "max": 100.0, "sum": 5050.0}));
        assert_eq!(percentiles(vec![7.0]), json!({"p50": 7.0, "p90": 7.0, "p99": 7.0, "max": 7.0, "sum": 7.0}));
    }

    #[test]
    fn the_score_counts_errors_as_not_resolved_and_leaves_out_only_exclusions() {
        let mut excluded = result("x", "go", Verdict::Unresolved);
        excluded.excluded = true;
        let rs = vec![
            result("a", "python", Verdict::Resolved),
            result("b", "python", Verdict::Error),
            result("c", "go", Verdict::Unresolved),
            result("d", "go", Verdict::EmptyPatch),
            result("i", "go", Verdict::Interrupted),
            result("n", "go", Verdict::NoPrediction),
            excluded,
        ];
        let s = summary(&rs, Duration::from_secs(2), "gold");
        assert_eq!(s["predictions"], json!("gold"), "what was graded is named");
        // Scored: a, b, c, d, n (x excluded by the calibration, i interrupted).
        assert_eq!(s["admitted"], json!(5));
        assert_eq!(s["accuracy_score"], json!(0.2));
        assert_eq!(s["resolved_rate"], json!(1.0 / 7.0));
        assert_eq!(s["rerun_ids"], json!(["b"]));
        assert_eq!(s["excluded_ids"], json!(["x"]));
        // Submitted as the harness counts them: every instance with a prediction, an empty one
        // included; an instance with none is not, nor an empty patch.
        assert_eq!(s["submitted"], json!(6));
        assert_eq!(s["submitted_instances"], json!(6));
        assert_eq!(s["empty_patch_instances"], json!(1));
        assert_eq!(s["no_prediction_instances"], json!(1));
        assert_eq!(s["no_prediction_ids"], json!(["n"]));
        assert_eq!(s["completed_ids"], json!(["a", "c", "x"]));
        assert_eq!(s["incomplete_ids"], json!(["b", "d", "i", "n"]));
        assert_eq!(s["error_instances"], json!(1));
        assert_eq!(s["by_language"]["python"]["accuracy_score"], json!(0.5));
        assert_eq!(s["by_language"]["go"]["total"], json!(5));
        assert_eq!(s["by_language"]["go"]["no_prediction"], json!(1));
        assert_eq!(accuracy(&[]), 0.0);
    }

    #[test]
    fn resources_are_over_measured_runs_only() {
        let mut a = result("a", "python", Verdict::Resolved);
        (a.wall_s, a.cpu_s, a.memory_peak_bytes) = (2.0, 1.5, 1 << 20);
        let mut never_ran = result("b", "python", Verdict::EmptyPatch);
        (never_ran.attempts, never_ran.wall_s) = (0, 0.0);
        let s = summary(&[a, never_ran], Duration::ZERO, "gold");
        assert_eq!(s["resources"]["wall_s"]["sum"], json!(2.0));
        assert_eq!(s["resources"]["cpu_s"]["max"], json!(1.5));
        assert_eq!(s["resources"]["memory_peak_bytes"]["p50"], json!(1048576.0));
    }

    #[test]
    fn junit_writes_each_verdict_as_its_element() {
        let mut bad = result("t<&\"1", "rust", Verdict::Unresolved);
        // (U+FFFF, as a solution's `//line` directive put it in a compiler line: not XML.)
        bad.reason = Some("no test passed \u{1b}[31m\u{FFFF}\u{FFFE}<".into());
        let rs = vec![
            result("ok", "rust", Verdict::Resolved),
            bad,
            result("err", "rust", Verdict::Error),
            result("empty", "rust", Verdict::EmptyPatch),
            result("slow", "rust", Verdict::Timeout),
            result("none", "rust", Verdict::NoPrediction),
        ];
        let x = junit(&rs);
        assert!(x.contains(r#"<skipped message="no_prediction"/>"#), "{x}");
        assert!(
            x.contains(r#"<testsuite name="rust" tests="6" failures="2" errors="1" skipped="2" time="6.000">"#),
            "{x}"
        );
        assert!(x.contains(r#"<testcase classname="rust" name="ok" time="1.000"/>"#), "{x}");
        assert!(x.contains(r#"name="t&lt;&amp;&quot;1""#), "{x}");
        assert!(x.contains(r#"<failure message="unresolved: no test passed [31m&lt;" type="unresolved"/>"#), "{x}");
        assert!(x.contains(r#"<error message="error" type="error"/>"#), "{x}");
        assert!(x.contains(r#"<skipped message="empty_patch"/>"#), "{x}");
        assert!(x.contains(r#"<failure message="timeout" type="timeout"/>"#), "{x}");
    }

    #[test]
    fn ratios_to_gold_are_in_every_report() {
        use crate::eval::parsers::TestResult;
        use crate::eval::vs_gold::VsGold;
        use crate::measure::{Method, TestUsage};
        let t = |name: &str, cpu: Option<f64>, mem: Option<f64>| TestResult {
            name: name.into(),
            status: Status::Passed,
            duration_s: None,
            usage: Some(TestUsage {
                wall_s: 1.0,
                cpu_user_s: 1.0,
                cpu_system_s: 0.0,
                memory_peak_bytes: 1,
                method: Method::Process,
                memory: None,
                stopped_by: None,
                cpu_vs_gold: cpu,
                memory_vs_gold: mem,
                exit_code: None,
                signal: None,
            }),
        };
        let mut slow = result("python/slow", "python", Verdict::Resolved);
        slow.tests = vec![t("test_burn", Some(21.3), Some(1.0)), t("test_idle", None, Some(1.1))];
        slow.vs_gold =
            Some(VsGold { cpu: Some(20.0), memory: Some(1.1), wall: Some(5.0), tests: 2, ..Default::default() });
        let mut same = result("go/same", "go", Verdict::Resolved);
        same.tests = vec![t("TestA", Some(1.02), Some(0.9))];
        same.vs_gold = Some(VsGold { cpu: Some(1.02), memory: Some(0.9), wall: None, tests: 1, ..Default::default() });
        let rs = vec![same, slow, result("plain", "go", Verdict::Resolved)];
        let s = summary(&rs, Duration::ZERO, "gold");
        let v = &s["vs_gold"];
        assert_eq!(v["tests"]["compared"], json!(3), "{v}");
        assert_eq!(v["tests"]["cpu"]["max"], json!(21.3), "{v}");
        assert_eq!(v["tests"]["cpu"]["n"], json!(2), "{v}");
        assert_eq!(v["instances"]["compared"], json!(2), "{v}");
        assert_eq!(v["instances"]["cpu"]["median"], json!(20.0), "{v}");
        assert_eq!(
            v["largest_cpu_tests"][0],
            json!({"instance_id": "python/slow", "test": "test_burn", "cpu_vs_gold": 21.3})
        );
        assert_eq!(v["largest_cpu_instances"][0], json!({"instance_id": "python/slow", "cpu": 20.0}));
        let x = junit(&rs);
        assert!(x.contains("<property name=\"cpu_vs_gold\" value=\"21.300\"/>"), "{x}");
        assert!(x.contains("<testsuite name=\"python/slow tests\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"0\" time=\"2.000\">\n    <properties>\n      <property name=\"cpu_vs_gold\" value=\"20.000\"/>"), "{x}");
        let t = table(&rs, Duration::ZERO, "gold");
        assert!(t.contains("vs gold: median CPU 20.00x, slowest python/slow 20.00x; median memory 1.10x, largest python/slow 1.10x\n"), "{t}");
        assert!(t.contains("  largest CPU vs gold: python/slow test_burn (21.30x), go/same TestA (1.02x)\n"), "{t}");
        // None compared: no line, and nulls in report.json.
        let plain = [result("plain", "go", Verdict::Resolved)];
        assert!(!table(&plain, Duration::ZERO, "gold").contains("vs gold"));
        assert_eq!(summary(&plain, Duration::ZERO, "gold")["vs_gold"]["tests"]["cpu"], Value::Null);
    }

    #[test]
    fn the_table_says_what_the_score_is_over() {
        let mut excluded = result("x", "go", Verdict::Unresolved);
        excluded.excluded = true;
        let rs = vec![
            result("a", "go", Verdict::Resolved),
            result("b", "go", Verdict::Error),
            result("n", "go", Verdict::NoPrediction),
            excluded,
        ];
        let t = table(&rs, Duration::from_secs(3), "gold");
        assert!(t.contains("resolved 1 of 3 (33.3%), 3.0 s wall; predictions: gold\n"), "{t}");
        assert!(t.contains("1 error (counted as not resolved; rerun it with --resume)"), "{t}");
        assert!(t.contains("1 left out of the score"), "{t}");
        assert!(t.lines().next().unwrap().contains(" empty no_pred patch_f "), "{t}");
        let go = t.lines().find(|l| l.starts_with("go ")).unwrap();
        assert_eq!(
            go.split_whitespace().take(10).collect::<Vec<_>>(),
            ["go", "4", "1", "1", "0", "1", "0", "0", "0", "1"]
        );
    }
}
