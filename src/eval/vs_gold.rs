//! Efficiency beside correctness: each test's CPU and peak memory, and the instance's, as ratios
//! to what the reference solution (gold) used in the calibration (a prediction / gold).
//!
//! A ratio is a measurement, never a verdict: [`compare`] is handed the tests alone, after the
//! verdict is decided, and writes nothing but the ratio fields.
//!
//! - A test is compared only when it passed, gold passed it in every calibration run, and both
//!   were measured the same way (method, and what the peak is): a failed test did other work
//!   than gold's, and numbers from two methods are not one quantity.
//! - CPU: a ratio whose gold CPU is below [`CPU_FLOOR_S`] is left out (null): a process's
//!   start-up, a JIT's threads or the clock's grain are that big, and a ratio of them says
//!   nothing of the solution. The same floor holds for the instance's sums (CPU and wall).
//! - Memory: a ratio whenever both peaks were measured (above zero).

use super::calibration::{Entry, GoldTest};
use super::parsers::{Status, TestResult};
use super::InstanceResult;
use serde::{Deserialize, Serialize};

/// Below this much of gold's CPU time (or wall time, for the instance's sum), no ratio: 50 ms.
/// The JVM's JIT threads charge an in-runner test that does nothing up to ~40 ms, a Go test
/// process's start-up a few ms; a test that burns a known 0.3 s is well above it.
pub const CPU_FLOOR_S: f64 = 0.05;

/// An instance's usage against gold's.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct VsGold {
    /// The CPU of the compared tests, summed, over gold's of the same tests.
    pub cpu: Option<f64>,
    /// The largest peak among the compared tests over gold's largest among them.
    pub memory: Option<f64>,
    /// Their wall time, summed, over gold's.
    pub wall: Option<f64>,
    /// How many tests were compared (passed here, by gold in every run, measured alike).
    pub tests: usize,
    /// The whole run (the build, the controls eval plants and calibration's gold runs do not,
    /// the runner's start-up: closer to 1 than the tests'), when it ran to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_cpu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_memory: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_wall: Option<f64>,
}

impl VsGold {
    fn is_empty(&self) -> bool {
        [self.cpu, self.memory, self.wall, self.run_cpu, self.run_memory, self.run_wall].iter().all(Option::is_none)
    }
}

fn ratio(ours: f64, gold: f64, floor: f64) -> Option<f64> {
    (gold >= floor && gold > 0.0 && ours.is_finite() && ours >= 0.0).then(|| ours / gold)
}

/// Fills each test's `cpu_vs_gold` and `memory_vs_gold` (cleared first: a number from the
/// run's own channel is not the host's) and returns the tests' sums as ratios; `run` the whole
/// run's figures (wall, CPU, peak) when it ran to the end.
pub fn compare(tests: &mut [TestResult], gold: &Entry, run: Option<(f64, f64, u64)>) -> Option<VsGold> {
    let mut v = VsGold::default();
    let (mut cpu, mut wall, mut peak) = ((0.0, 0.0), (0.0, 0.0), (0u64, 0u64));
    let mut peaks_alike = true;
    for t in tests.iter_mut() {
        let Some(u) = t.usage.as_mut() else { continue };
        (u.cpu_vs_gold, u.memory_vs_gold) = (None, None);
        let Some(g): Option<&GoldTest> = gold.gold_tests.get(&t.name) else { continue };
        if t.status != Status::Passed || u.stopped_by.is_some() || u.method != g.method {
            continue;
        }
        v.tests += 1;
        u.cpu_vs_gold = ratio(u.cpu_s(), g.cpu_s, CPU_FLOOR_S);
        cpu = (cpu.0 + u.cpu_s(), cpu.1 + g.cpu_s);
        wall = (wall.0 + u.wall_s, wall.1 + g.wall_s);
        if u.memory == g.memory {
            u.memory_vs_gold = ratio(u.memory_peak_bytes as f64, g.memory_peak_bytes as f64, 1.0);
            peak = (peak.0.max(u.memory_peak_bytes), peak.1.max(g.memory_peak_bytes));
        } else {
            peaks_alike = false;
        }
    }
    if v.tests > 0 {
        v.cpu = ratio(cpu.0, cpu.1, CPU_FLOOR_S);
        v.wall = ratio(wall.0, wall.1, CPU_FLOOR_S);
        v.memory = if peaks_alike { ratio(peak.0 as f64, peak.1 as f64, 1.0) } else { None };
    }
    if let (Some((wall_s, cpu_s, peak)), Some(g)) = (run, &gold.gold_usage) {
        v.run_wall = ratio(wall_s, g.wall_s, CPU_FLOOR_S);
        v.run_cpu = ratio(cpu_s, g.cpu_s, CPU_FLOOR_S);
        v.run_memory = ratio(peak as f64, g.memory_peak_bytes as f64, 1.0);
    }
    (!v.is_empty()).then_some(v)
}

/// [`compare`] for a finished result: its `vs_gold` and its tests' ratios. The whole run is
/// compared when its tests ran to the end (`resolved` or `unresolved`).
pub fn fill(r: &mut InstanceResult, gold: Option<&Entry>) {
    use super::Verdict;
    let Some(gold) = gold else {
        r.vs_gold = None;
        return;
    };
    let ran = matches!(r.verdict, Verdict::Resolved | Verdict::Unresolved) && r.attempts > 0 && r.wall_s > 0.0;
    let run = ran.then_some((r.wall_s, r.cpu_s, r.memory_peak_bytes));
    r.vs_gold = compare(&mut r.tests, gold, run);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::calibration::GoldUsage;
    use crate::measure::{Method, TestUsage};

    fn usage(cpu: f64, peak: u64, method: Method) -> TestUsage {
        TestUsage {
            wall_s: cpu + 0.01,
            cpu_user_s: cpu,
            cpu_system_s: 0.0,
            memory_peak_bytes: peak,
            method,
            memory: Some("maxrss".into()),
            stopped_by: None,
            cpu_vs_gold: Some(123.0),
            memory_vs_gold: None,
            exit_code: None,
            signal: None,
        }
    }

    fn test(name: &str, status: Status, u: TestUsage) -> TestResult {
        TestResult { name: name.into(), status, duration_s: None, usage: Some(u) }
    }

    fn gold() -> Entry {
        let mut e: Entry = serde_json::from_value(serde_json::json!({
            "image": "img", "gold_passes": true, "gold_verdicts": ["resolved"], "tests": [], "flaky": [],
            "wall_s_max": 2.0, "cpu_s_max": 1.0, "memory_peak_bytes_max": 100
        }))
        .unwrap();
        let g = |cpu: f64, peak: u64| GoldTest {
            wall_s: cpu + 0.01,
            cpu_s: cpu,
            memory_peak_bytes: peak,
            method: Method::Process,
            memory: Some("maxrss".into()),
        };
        e.gold_tests = [("burn", g(0.3, 10 << 20)), ("alloc", g(0.06, 200 << 20)), ("idle", g(0.004, 5 << 20))]
            .into_iter()
            .map(|(n, g)| (n.to_string(), g))
            .collect();
        e.gold_usage = Some(GoldUsage { wall_s: 2.0, cpu_s: 1.0, memory_peak_bytes: 300 << 20 });
        e
    }

    #[test]
    fn ratios_per_test_and_per_instance_with_the_floor() {
        let mut tests = vec![
            test("burn", Status::Passed, usage(0.9, 10 << 20, Method::Process)),
            test("alloc", Status::Passed, usage(0.06, 400 << 20, Method::Process)),
            test("idle", Status::Passed, usage(0.5, 5 << 20, Method::Process)),
            test("failed", Status::Failed, usage(0.5, 5 << 20, Method::Process)),
            test("new", Status::Passed, usage(0.5, 5 << 20, Method::Process)),
        ];
        let v = compare(&mut tests, &gold(), Some((4.0, 3.0, 600 << 20))).unwrap();
        let u = |i: usize| tests[i].usage.clone().unwrap();
        assert!((u(0).cpu_vs_gold.unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(u(0).memory_vs_gold, Some(1.0));
        assert_eq!(u(1).memory_vs_gold, Some(2.0));
        // Gold's 4 ms is below the floor: no CPU ratio, a memory one.
        assert_eq!((u(2).cpu_vs_gold, u(2).memory_vs_gold), (None, Some(1.0)));
        // Not passed, or not gold's: no ratio, and a number that came with the test is gone.
        assert_eq!((u(3).cpu_vs_gold, u(4).cpu_vs_gold), (None, None));
        assert_eq!(v.tests, 3);
        assert!((v.cpu.unwrap() - 1.46 / 0.364).abs() < 1e-9, "{v:?}");
        assert_eq!(v.memory, Some(2.0));
        assert_eq!((v.run_cpu, v.run_wall, v.run_memory), (Some(3.0), Some(2.0), Some(2.0)));
        assert!(tests.iter().map(|t| t.status).eq([
            Status::Passed,
            Status::Passed,
            Status::Passed,
            Status::Failed,
            Status::Passed
        ]));
    }

    #[test]
    fn only_numbers_measured_alike_are_compared() {
        let mut tests = vec![test("burn", Status::Passed, usage(0.9, 10 << 20, Method::InRunner))];
        let mut peaks = vec![test("burn", Status::Passed, usage(0.9, 10 << 20, Method::Process))];
        peaks[0].usage.as_mut().unwrap().memory = Some("vmhwm".into());
        let mut g = gold();
        g.gold_usage = None;
        assert_eq!(compare(&mut tests, &g, None), None);
        assert_eq!(tests[0].usage.as_ref().unwrap().cpu_vs_gold, None);
        let v = compare(&mut peaks, &g, None).unwrap();
        assert_eq!((peaks[0].usage.as_ref().unwrap().memory_vs_gold, v.memory), (None, None));
        assert!(v.cpu.is_some());
    }

    #[test]
    fn a_calibration_from_before_the_ratios_gives_none() {
        let mut g = gold();
        (g.gold_tests, g.gold_usage) = (Default::default(), None);
        let mut tests = vec![test("burn", Status::Passed, usage(0.9, 10 << 20, Method::Process))];
        assert_eq!(compare(&mut tests, &g, Some((1.0, 1.0, 1))), None);
    }
}
