//! What eval records of an instance: its verdict and one line of results.jsonl.

use super::control;
use super::instance::Instance;
use super::parsers::TestResult;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How a FAIL_TO_PASS or PASS_TO_PASS list fared.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Grade {
    pub success: Vec<String>,
    pub failure: Vec<String>,
}

/// What became of an instance. Every place that reads one matches it exhaustively or asks
/// [`Verdict::scored`]: a new kind cannot slip into a score unnoticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Resolved,
    Unresolved,
    /// A prediction that is empty, or changes nothing: not run.
    EmptyPatch,
    /// No prediction for the instance at all (the harness's instances not submitted): not
    /// run, scored as not resolved.
    NoPrediction,
    PatchFailed,
    Timeout,
    Oom,
    /// Infrastructure: retried, then scored as not resolved and listed to rerun.
    Error,
    /// Stopped by Ctrl-C: never recorded, run again by --resume.
    Interrupted,
}

impl Verdict {
    /// The verdicts a results file holds, in report order.
    pub const RECORDED: [Verdict; 8] = [
        Verdict::Resolved,
        Verdict::Unresolved,
        Verdict::EmptyPatch,
        Verdict::NoPrediction,
        Verdict::PatchFailed,
        Verdict::Timeout,
        Verdict::Oom,
        Verdict::Error,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Resolved => "resolved",
            Verdict::Unresolved => "unresolved",
            Verdict::EmptyPatch => "empty_patch",
            Verdict::NoPrediction => "no_prediction",
            Verdict::PatchFailed => "patch_failed",
            Verdict::Timeout => "timeout",
            Verdict::Oom => "oom",
            Verdict::Error => "error",
            Verdict::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One line of results.jsonl.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstanceResult {
    pub instance_id: String,
    pub language: String,
    pub verdict: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub memory_peak_bytes: u64,
    pub timed_out: bool,
    pub oom: bool,
    pub tests: Vec<TestResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_to_pass: Option<Grade>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_to_pass: Option<Grade>,
    pub image: String,
    /// The image's manifest digest, when the store names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_digest: Option<String>,
    pub attempts: u32,
    /// Tests the calibration found flaky here: left out of grading, named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flaky_ignored: Vec<String>,
    /// An `error` that would be the same on every attempt (the dataset's doing): not retried.
    #[serde(skip)]
    pub deterministic: bool,
    /// Hash of the prediction and the settings; `--resume` reruns an instance when it changes.
    pub key: String,
    /// Where its logs are, relative to the output directory (`logs/<name>`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub logs: String,
    /// How many controls the run had, and why they are weaker than calibrated ones if they
    /// are (see control/).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controls: Option<String>,
    /// A calibration's verification run: each candidate control, and whether it failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verified: Vec<(control::Candidate, bool)>,
    /// Left out of the score: the calibration found gold failing here (the environment's
    /// doing, whatever the prediction).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub excluded: bool,
    /// An `error` that came after the prediction was in: the prediction's doing unless gold
    /// fails the same way (decided before it is recorded).
    #[serde(skip)]
    pub after_prediction: bool,
    /// An `error` of the host's: a budget the host shares (its file table, memory, processes,
    /// AIO, ptys, the disk under `-o` or the store) was exhausted before, during or after the
    /// run, or the run's output shows the host's file table full (ENFILE), whatever the runner
    /// printed. Retried after waiting for the host; never decided by gold (arbitration), never
    /// `deterministic`, never evidence of what gold does here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_fault: bool,
    /// What the prediction does that reaches into the runner rather than solving the task,
    /// where a look at its text can tell (see tamper.rs): flagged, and unresolved under
    /// `--strict`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tampering: Vec<String>,
    /// The gold patch's run against what the dataset records of the harness's own (a
    /// Multi-SWE-bench record's `fix_patch_result`): every test's status compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_check: Option<RecordCheck>,
    /// Its usage as ratios to gold's in the calibration (its tests' and its whole run's; each
    /// test's own in `tests[].usage`): measurements beside the verdict, never part of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_gold: Option<super::vs_gold::VsGold>,
}

/// A run's per-test statuses against the ones the dataset records for the same patch.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RecordCheck {
    /// How many tests the record names.
    pub tests: usize,
    /// Each of them whose status here differs (absent here included), and how.
    pub differ: Vec<String>,
    /// Tests this run reports that the record does not name (a runner printing more than the
    /// harness's run did), counted, and the first few named.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub extra: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_names: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl InstanceResult {
    /// Whether it counts in the score's denominator: every instance the dataset and its
    /// calibration admit, an `error` included (as not resolved, as SWE-bench counts it).
    pub fn scored(&self) -> bool {
        !self.excluded && self.verdict != Verdict::Interrupted
    }
}

impl InstanceResult {
    /// Makes this result an `error` of the host's (see its `host_fault`), its
    /// reason `why`: retried, never arbitrated.
    pub(crate) fn mark_host_fault(&mut self, why: String) {
        self.verdict = Verdict::Error;
        self.reason = Some(why);
        self.host_fault = true;
        self.deterministic = false;
    }

    /// Writing a run's inputs on the host (the prediction's patch among them) failed: the
    /// host's fault (a full file table, memory, an I/O error, a disk another process filled),
    /// rerun; unless the disk ran out while the prediction was `input_bytes` large enough to
    /// be its doing, which gold's run the same way decides (`after_prediction`).
    pub(crate) fn host_write_failed(&mut self, what: String, e: &std::io::Error, input_bytes: usize) {
        const LARGE: usize = 64 << 20;
        let full = matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT));
        if full && input_bytes >= LARGE {
            self.verdict = Verdict::Error;
            self.reason = Some(format!("{what}: {e}"));
            self.after_prediction = true;
        } else {
            self.mark_host_fault(format!("writing the run's inputs on the host failed: {what}: {e}: rerun"));
        }
    }

    pub(crate) fn bare(
        inst: &Instance,
        image: &str,
        key: &str,
        verdict: Verdict,
        reason: Option<String>,
    ) -> InstanceResult {
        InstanceResult {
            instance_id: inst.id.clone(),
            language: inst.language.clone(),
            verdict,
            reason,
            exit_code: None,
            signal: None,
            wall_s: 0.0,
            cpu_s: 0.0,
            memory_peak_bytes: 0,
            timed_out: false,
            oom: false,
            tests: vec![],
            fail_to_pass: None,
            pass_to_pass: None,
            image: image.into(),
            image_digest: None,
            attempts: 0,
            flaky_ignored: vec![],
            deterministic: false,
            key: key.into(),
            logs: String::new(),
            controls: None,
            verified: vec![],
            excluded: false,
            after_prediction: false,
            host_fault: false,
            tampering: vec![],
            record_check: None,
            vs_gold: None,
        }
    }
}

/// Text from a sandbox, or from a predictions file, made fit for a terminal and a log line: no
/// control character (escape sequences, carriage returns), cut at 500 characters.
pub fn clean(s: &str) -> String {
    let out: String = s.chars().map(|c| if unsafe_for_terminal(c) || c == '\n' { '?' } else { c }).take(500).collect();
    out.trim().to_string()
}

/// Whether a character would do something on a terminal or reorder what a reader sees rather
/// than show: C0 (tab and newline aside) and C1 controls (ESC starts every escape sequence,
/// U+009B is CSI on its own), DEL, and the bidirectional overrides, embeddings and isolates.
fn unsafe_for_terminal(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text for a terminal whose parts came from predictions, sandboxes or shards (test names in
/// the summary table, instance ids in an error): every character [`unsafe_for_terminal`] made
/// `?`, lines kept. Everything eval and merge print to stdout and stderr goes through it.
pub fn terminal_safe(s: &str) -> String {
    s.chars().map(|c| if unsafe_for_terminal(c) { '?' } else { c }).collect()
}

/// The last lines of an instance's test output (40 lines, 4 KiB at most), read from the end of
/// `logs/<name>/test_output.txt`; `None` when it has none.
pub fn output_tail(output: &Path, r: &InstanceResult) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = open_log(output, r)?;
    let from = f.metadata().ok()?.len().saturating_sub(16 << 10);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut buf = Vec::new();
    f.take(16 << 10).read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    // A line cut at the start of the read is dropped.
    let lines: Vec<&str> = text.lines().skip(usize::from(from > 0)).collect();
    let mut tail = lines[lines.len().saturating_sub(40)..].join("\n");
    if tail.len() > 4096 {
        let mut cut = tail.len() - 4096;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail = tail[cut..].to_string();
    }
    let tail = tail.trim_end().to_string();
    (!tail.is_empty()).then_some(tail)
}

/// Where an instance's test output is, relative to the output directory `output`, if it has one.
pub fn log_path(output: &Path, r: &InstanceResult) -> Option<String> {
    open_log(output, r).map(|_| format!("{}/test_output.txt", r.logs))
}

/// An instance's test output, beneath `output` and through no link (`logs` comes from a
/// results.jsonl, which merge reads from shards): a regular file, or `None`.
fn open_log(output: &Path, r: &InstanceResult) -> Option<std::fs::File> {
    use std::os::fd::AsRawFd;
    if r.logs.is_empty() {
        return None;
    }
    let dir = std::fs::File::open(output).ok()?;
    let rel = format!("{}/test_output.txt", r.logs);
    let resolve = crate::sys::RESOLVE_BENEATH | crate::sys::RESOLVE_NO_SYMLINKS;
    crate::sys::open_untrusted(dir.as_raw_fd(), &rel, resolve, u64::MAX).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_sandboxes_is_clean_for_terminals() {
        assert_eq!(clean("a\x1b]0;title\x07\x1b[2K\rb"), "a?]0;title??[2K?b");
        assert_eq!(clean(&"x".repeat(1000)).len(), 500);
        assert_eq!(clean("a\nb\u{9b}2J\u{202e}c"), "a?b?2J?c");
        assert_eq!(terminal_safe("t\x1b]52;c;eA==\x07\n\u{9b}H\u{2067}x\ty"), "t?]52;c;eA==?\n?H?x\ty");
    }

    /// #38: a run's inputs that could not be written on the host are the host's fault (rerun,
    /// never arbitrated), unless the disk ran out under a patch large enough to be the cause.
    #[test]
    fn inputs_the_host_could_not_write_are_its_fault() {
        let inst = crate::eval::instance::Instance::for_tests("x");
        let err = |n| std::io::Error::from_raw_os_error(n);
        for (e, bytes, host) in [
            (libc::ENFILE, 10, true),
            (libc::EIO, 1 << 30, true),
            (libc::ENOSPC, 4096, true),
            (libc::ENOSPC, 1 << 30, false),
        ] {
            let mut r = InstanceResult::bare(&inst, "", "", Verdict::Error, None);
            r.host_write_failed("/scratch".into(), &err(e), bytes);
            assert_eq!((r.verdict, r.host_fault, r.after_prediction), (Verdict::Error, host, !host), "{e} {bytes}");
        }
    }

    #[test]
    fn verdicts_have_names() {
        for v in Verdict::RECORDED {
            assert_eq!(serde_json::to_value(v).unwrap(), v.name());
        }
    }
}
