//! The pids controller: a cap on processes and threads, and how often a fork hit it. The files
//! are the same in v1 and v2.

use super::{read_key, write};
use std::io;
use std::path::Path;

pub fn set(dir: &Path, max: u64) -> io::Result<()> {
    write(dir, "pids.max", &max.to_string())
}

/// Forks refused because of the limit.
pub fn limit_hits(dir: &Path) -> u64 {
    read_key(dir, "pids.events", "max").unwrap_or(0)
}
