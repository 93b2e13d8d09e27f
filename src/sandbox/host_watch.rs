//! The budgets the host shares, watched while a sandbox runs. Some have no per-sandbox bound
//! (docs/threat-model.md's census: the file table above all), and any can be taken by another
//! process of the host: a run that coincided with one of them exhausted met failures that are
//! not its code's (ENFILE from the runner, a fork refused), so its record says which ran short
//! and eval makes the run an `error` to rerun, never a verdict.
//!
//! Sampled by the supervisor every [`INTERVAL`] while the run goes and once at its end: a few
//! small reads of /proc, none on the start's path.

use std::time::{Duration, Instant};

/// How often the supervisor samples the host's budgets while a run goes.
pub(crate) const INTERVAL: Duration = Duration::from_millis(200);

/// Past this share of its maximum a budget counts as exhausted: the kernel refuses before 100%
/// is seen by a sampler (a table filled between two samples is seen nearly full at one of them
/// as it drains, or at the end).
const SHORT: f64 = 0.95;

/// What ran short, in the order found; each name said once.
#[derive(Debug, Default)]
pub(crate) struct HostWatch {
    pub short: Vec<String>,
    next: Option<Instant>,
}

impl HostWatch {
    /// When the next sample is due.
    pub fn due(&self) -> Option<Instant> {
        self.next
    }

    /// Starts the sampling now (no sample yet: the start's path stays free of it).
    pub fn start(&mut self, now: Instant) {
        self.next = Some(now + INTERVAL);
    }

    /// Samples if one is due (or `force`).
    pub fn sample(&mut self, now: Instant, force: bool) {
        if !force && self.next.is_none_or(|n| now < n) {
            return;
        }
        self.next = Some(now + INTERVAL);
        let read = |p: &str| std::fs::read_to_string(p).ok();
        for name in exhausted(&Readings {
            file_nr: read("/proc/sys/fs/file-nr"),
            aio_nr: read("/proc/sys/fs/aio-nr"),
            aio_max: read("/proc/sys/fs/aio-max-nr"),
            pty_nr: read("/proc/sys/kernel/pty/nr"),
            pty_max: read("/proc/sys/kernel/pty/max"),
            pty_reserve: read("/proc/sys/kernel/pty/reserve"),
            loadavg: read("/proc/loadavg"),
            threads_max: read("/proc/sys/kernel/threads-max"),
            pid_max: read("/proc/sys/kernel/pid_max"),
            meminfo: read("/proc/meminfo"),
        }) {
            if !self.short.iter().any(|s| s == name) {
                self.short.push(name.to_string());
            }
        }
    }
}

/// The /proc files the watch reads, as read (None: unreadable).
#[derive(Default)]
pub(crate) struct Readings {
    pub file_nr: Option<String>,
    pub aio_nr: Option<String>,
    pub aio_max: Option<String>,
    pub pty_nr: Option<String>,
    pub pty_max: Option<String>,
    pub pty_reserve: Option<String>,
    pub loadavg: Option<String>,
    pub threads_max: Option<String>,
    pub pid_max: Option<String>,
    pub meminfo: Option<String>,
}

/// The names of the budgets `r` shows exhausted.
pub(crate) fn exhausted(r: &Readings) -> Vec<&'static str> {
    let num = |s: &Option<String>| s.as_deref().and_then(|s| s.trim().parse::<f64>().ok());
    let nth =
        |s: &Option<String>, i: usize| s.as_deref().and_then(|s| s.split_whitespace().nth(i)?.parse::<f64>().ok());
    let over =
        |used: Option<f64>, max: Option<f64>| matches!((used, max), (Some(u), Some(m)) if m > 0.0 && u >= SHORT * m);
    let mut out = Vec::new();
    // file-nr: allocated, allocated but unused (0 since 2.6), maximum.
    if over(nth(&r.file_nr, 0), nth(&r.file_nr, 2)) {
        out.push("the host's file table (fs.file-max)");
    }
    if over(num(&r.aio_nr), num(&r.aio_max)) {
        out.push("the host's AIO events (fs.aio-max-nr)");
    }
    // Every devpts instance but the host's own shares max less the reserve.
    let pty_pool = match (num(&r.pty_max), num(&r.pty_reserve)) {
        (Some(m), Some(res)) => Some(m - res),
        (m, _) => m,
    };
    if over(num(&r.pty_nr), pty_pool) {
        out.push("the host's pseudo-terminals (kernel.pty.max)");
    }
    // loadavg's fourth field: running/total threads of the host.
    let threads =
        r.loadavg.as_deref().and_then(|s| s.split_whitespace().nth(3)?.split_once('/')?.1.parse::<f64>().ok());
    let most = match (num(&r.threads_max), num(&r.pid_max)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if over(threads, most) {
        out.push("the host's processes (kernel.threads-max, kernel.pid_max)");
    }
    let mem = |key: &str| {
        r.meminfo.as_deref()?.lines().find_map(|l| l.strip_prefix(key)?.trim().split(' ').next()?.parse::<f64>().ok())
    };
    if let (Some(total), Some(avail)) = (mem("MemTotal:"), mem("MemAvailable:")) {
        if total > 0.0 && avail < (1.0 - SHORT) / 2.5 * total {
            out.push("the host's memory (MemAvailable under 2%)");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    fn healthy() -> Readings {
        Readings {
            file_nr: s("1024\t0\t2466170\n"),
            aio_nr: s("0\n"),
            aio_max: s("65536\n"),
            pty_nr: s("3\n"),
            pty_max: s("4096\n"),
            pty_reserve: s("1024\n"),
            loadavg: s("0.50 0.40 0.30 2/300 1234\n"),
            threads_max: s("192730\n"),
            pid_max: s("4194304\n"),
            meminfo: s("MemTotal:       24000000 kB\nMemFree:        1000 kB\nMemAvailable:   20000000 kB\n"),
        }
    }

    #[test]
    fn a_healthy_host_is_short_of_nothing() {
        assert!(exhausted(&healthy()).is_empty());
        // Unreadable files (a /proc mounted with less) say nothing either.
        assert!(exhausted(&Readings::default()).is_empty());
    }

    #[test]
    fn each_budget_near_its_maximum_is_named() {
        type Tweak = Box<dyn Fn(&mut Readings)>;
        let cases: Vec<(Tweak, &str)> = vec![
            (Box::new(|r| r.file_nr = s("2400000\t0\t2466170\n")), "file table"),
            (Box::new(|r| r.aio_nr = s("65536\n")), "AIO"),
            (Box::new(|r| r.pty_nr = s("3072\n")), "pseudo-terminals"),
            (Box::new(|r| r.loadavg = s("1.0 1.0 1.0 3/190000 1\n")), "processes"),
            (Box::new(|r| r.pid_max = s("300\n")), "processes"),
            (Box::new(|r| r.meminfo = s("MemTotal: 24000000 kB\nMemAvailable: 100000 kB\n")), "memory"),
        ];
        for (tweak, name) in cases {
            let mut r = healthy();
            tweak(&mut r);
            let found = exhausted(&r);
            assert!(found.len() == 1 && found[0].contains(name), "{name}: {found:?}");
        }
        // fs.file-max as systemd sets it (LONG_MAX) is never near.
        let mut r = healthy();
        r.file_nr = s("5000000\t0\t9223372036854775807\n");
        assert!(exhausted(&r).is_empty());
    }
}
