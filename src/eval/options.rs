//! What `polysandbox eval` was asked to do: every option, with its default.

use super::calibration;
use std::path::PathBuf;
use std::time::Duration;

/// What control tests an exercise run gets (see control/).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ControlMode {
    /// Several, drawn from the calibration's verified pool (or exact copies without one).
    Run,
    /// None: the tests as the dataset ships them (calibration's plain gold runs).
    Off,
    /// Every candidate once, each outcome recorded (calibration verifies the pool).
    Verify,
    /// The same with the candidates that change no input only: calibration's second try where
    /// the first changed a test gold passes (a Go input that makes gold panic ends the table's
    /// test, every row after it with it).
    VerifyExpected,
}

impl ControlMode {
    /// Whether the run verifies candidates (calibration), rather than drawing controls.
    pub fn verifies(self) -> bool {
        matches!(self, ControlMode::Verify | ControlMode::VerifyExpected)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ReportFormat {
    Table,
    Json,
    Junit,
}

/// Each sandbox's cap on processes and threads: far above what a test suite uses (a JVM, go
/// build's compilers, cargo's test threads), far below the host's pid space (32768 by default),
/// so that no prediction exhausts it for the host, other users or its neighbours.
pub const DEFAULT_PIDS: u64 = 4096;

#[derive(Debug, Clone)]
pub struct Options {
    pub dataset: PathBuf,
    pub predictions: String,
    pub jobs: usize,
    pub languages: Vec<String>,
    pub sample: Option<usize>,
    pub ids: Vec<String>,
    pub timeout: Option<Duration>,
    pub cpus: Option<f64>,
    pub memory: Option<u64>,
    pub images: Vec<String>,
    pub config: Option<PathBuf>,
    pub output: PathBuf,
    pub resume: bool,
    pub retries: u32,
    /// (index from 1, count)
    pub shard: Option<(usize, usize)>,
    pub format: ReportFormat,
    pub repos: Option<PathBuf>,
    pub root: Option<PathBuf>,
    /// The polysandbox binary that runs each sandbox.
    pub binary: PathBuf,
    /// What gold does here, per instance (see calibration.rs).
    pub calibration: Option<calibration::Calibration>,
    /// The calibration file named by --calibration (none: the dataset's default, or none).
    pub calibration_file: Option<PathBuf>,
    /// Instances whose calibration failed just now (gold could not be run), and why: each an
    /// `error` of this run.
    pub calibration_errors: std::collections::BTreeMap<String, String>,
    /// SWE-bench: the registry namespace of the instance images (`none`: locally built
    /// names), and their tag; given, they name every instance's image, over the record's.
    pub namespace: Option<String>,
    pub instance_image_tag: Option<String>,
    /// SWE-bench: the run's name in its log directories and report file.
    pub run_id: String,
    /// The host's network in each sandbox (the SWE-bench harness's containers have one);
    /// default none.
    pub network_host: bool,
    /// The size of each sandbox's writable layer (default: its memory limit, which the layer's
    /// tmpfs counts against anyway).
    pub disk: Option<u64>,
    /// Processes and threads at once in each sandbox (`run --pids`).
    pub pids: u64,
    pub controls: ControlMode,
    /// Grades a prediction flagged for tampering (see tamper.rs) unresolved.
    pub strict: bool,
    /// Per-test resource usage and limits (see crate::measure).
    pub per_test: super::catalogue::PerTest,
    /// The images' read-only caches in use (the runners' `cache_env`); default on.
    pub caches: bool,
    /// SWE-bench's --report_dir: where its run report goes too.
    pub report_dir: Option<PathBuf>,
    /// What was graded, for people (the Markdown summary's title line): "gold (the dataset's
    /// reference solutions)"; empty: `predictions`.
    pub label: String,
    /// `--summary-md FILE`: the Markdown summary written there too.
    pub summary_md: Option<PathBuf>,
    /// The Markdown summary appended to `$GITHUB_STEP_SUMMARY` when that is set (eval's own
    /// run; a calibration's passes leave it alone).
    pub step_summary: bool,
}

impl Options {
    /// Every option at its default.
    pub fn new(dataset: PathBuf, predictions: &str, output: PathBuf, binary: PathBuf) -> Options {
        Options {
            dataset,
            predictions: predictions.into(),
            jobs: 2,
            languages: vec![],
            sample: None,
            ids: vec![],
            timeout: None,
            cpus: None,
            memory: None,
            images: vec![],
            config: None,
            output,
            resume: false,
            retries: 1,
            shard: None,
            format: ReportFormat::Table,
            repos: None,
            root: None,
            binary,
            calibration: None,
            calibration_file: None,
            calibration_errors: Default::default(),
            namespace: None,
            instance_image_tag: None,
            run_id: "polysandbox".into(),
            network_host: false,
            disk: None,
            pids: DEFAULT_PIDS,
            controls: ControlMode::Run,
            strict: false,
            per_test: super::catalogue::PerTest { on: true, ..Default::default() },
            caches: true,
            report_dir: None,
            label: String::new(),
            summary_md: None,
            step_summary: false,
        }
    }
}
