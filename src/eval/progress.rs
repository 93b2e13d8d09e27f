//! What a run tells while it goes: the steps before the first result (probing an image's
//! toolchain, pulling it, calibrating), each instance as it starts and as it ends. The
//! command line draws it (a bar on a terminal, lines and a heartbeat otherwise); the library
//! only calls it.

use super::InstanceResult;

/// Told of a run's progress, from the scheduler's threads.
pub trait Progress: Sync {
    /// What the run is doing now, before or between its instances: "probing the python
    /// toolchain in IMAGE", "calibrating 3 instances first: gold".
    fn step(&self, _what: &str) {}
    /// A line worth keeping in the log (what `--resume` picked up).
    fn note(&self, _line: &str) {}
    /// The runs that follow are a calibration's pass `label` (gold's runs, the stub's), or
    /// (`None`) the run's own: their instances count, their verdicts are not the run's.
    fn pass(&self, _label: Option<&str>) {}
    /// The run's size, once known: every selected instance, and how many of them already
    /// have their verdict (kept by `--resume`).
    fn plan(&self, _total: usize, _kept: usize) {}
    /// An instance's first sandbox starts (it stays running through its retries).
    fn started(&self, _id: &str) {}
    /// An instance ended with this result (recorded, or kept by `--resume`): `done` of
    /// `total`, `resolved` so far.
    fn finished(&self, _r: &InstanceResult, _done: usize, _total: usize, _resolved: usize) {}
}

/// Says nothing.
pub struct Quiet;

impl Progress for Quiet {}
