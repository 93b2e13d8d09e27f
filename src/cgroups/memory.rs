//! The memory controller: a hard limit with no swap, the peak, and OOM kills.

use super::{read_key, read_u64, write};
use std::io;
use std::path::Path;

pub fn set_v1(dir: &Path, bytes: u64) -> io::Result<()> {
    write(dir, "memory.limit_in_bytes", &bytes.to_string())?;
    // With swap accounting on, memory+swap gets the same limit: no swap.
    if dir.join("memory.memsw.limit_in_bytes").exists() {
        write(dir, "memory.memsw.limit_in_bytes", &bytes.to_string())?;
    }
    // v1 charges socket buffers to a counter of their own, and only once its limit is written:
    // unwritten, a sandbox's TCP buffers (its own loopback) are counted nowhere and bounded
    // only by the host's `net.ipv4.tcp_mem`, which every TCP socket of the host shares. The
    // same limit as memory's (v2 counts them in memory itself); the peak adds the two.
    if dir.join(V1_TCP_LIMIT).exists() {
        write(dir, V1_TCP_LIMIT, &bytes.to_string())?;
    }
    Ok(())
}

const V1_TCP_LIMIT: &str = "memory.kmem.tcp.limit_in_bytes";

pub fn set_v2(dir: &Path, bytes: u64) -> io::Result<()> {
    write(dir, "memory.max", &bytes.to_string())?;
    if dir.join("memory.swap.max").exists() {
        write(dir, "memory.swap.max", "0")?;
    }
    Ok(())
}

/// (peak bytes, OOM kills)
pub fn usage_v1(dir: &Path) -> (Option<u64>, u64) {
    // Socket buffers are counted apart (see `set_v1`): the sum of the two peaks, which is at
    // least the true peak of both together, never below it.
    let tcp = read_u64(dir, "memory.kmem.tcp.max_usage_in_bytes").unwrap_or(0);
    let peak = read_u64(dir, "memory.max_usage_in_bytes").map(|m| m + tcp);
    let oom = read_key(dir, "memory.oom_control", "oom_kill").unwrap_or(0);
    (peak, oom)
}

/// (peak bytes, OOM kills); `memory.peak` needs Linux 5.19.
pub fn usage_v2(dir: &Path) -> (Option<u64>, u64) {
    let peak = read_u64(dir, "memory.peak");
    let oom = read_key(dir, "memory.events", "oom_kill").unwrap_or(0);
    (peak, oom)
}
