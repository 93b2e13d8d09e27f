//! `POLYSANDBOX_TRACE=1`: one stderr line per sandbox step with the time since start, from
//! the supervisor and the init, for finding where start-up time goes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static T0: AtomicU64 = AtomicU64::new(0);

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: plain clock read.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn init() {
    if std::env::var_os("POLYSANDBOX_TRACE").is_some_and(|v| v != "0") {
        T0.store(now_ns(), Ordering::Relaxed);
        ON.store(true, Ordering::Relaxed);
    }
}

pub fn step(what: &str) {
    if ON.load(Ordering::Relaxed) {
        let ms = (now_ns() - T0.load(Ordering::Relaxed)) as f64 / 1e6;
        let line = format!("[{ms:8.3} ms] {:>6} {what}\n", std::process::id());
        let _ = crate::sys::write_all(2, line.as_bytes());
    }
}
