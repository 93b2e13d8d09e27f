//! The cpu controller: a CFS bandwidth quota, `--cpus 1.5` being 150 ms every 100 ms.
//! (CPU time is measured from the sandbox's own accounting, the same with or without cgroups.)

use super::write;
use std::io;
use std::path::Path;

const PERIOD_US: u64 = 100_000;

fn quota_us(cpus: f64) -> u64 {
    ((cpus * PERIOD_US as f64).round() as u64).max(1000)
}

pub fn set_v1(dir: &Path, cpus: f64) -> io::Result<()> {
    write(dir, "cpu.cfs_period_us", &PERIOD_US.to_string())?;
    write(dir, "cpu.cfs_quota_us", &quota_us(cpus).to_string())
}

pub fn set_v2(dir: &Path, cpus: f64) -> io::Result<()> {
    write(dir, "cpu.max", &format!("{} {PERIOD_US}", quota_us(cpus)))
}
