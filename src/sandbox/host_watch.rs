//! The budgets the host shares, watched while a sandbox runs. Some have no per-sandbox bound
//! (docs/threat-model.md's census: the file table above all), and any can be taken by another
//! process of the host: a run that coincided with one of them exhausted met failures that are
//! not its code's (ENFILE from the runner, a fork refused), so its record says which ran short
//! and eval makes the run an `error` to rerun, never a verdict.
//!
//! Sampled by the supervisor every [`INTERVAL`] while the run goes and once at its end: a few
//! small reads of /proc, none on the start's path. Eval asks the same question before and after
//! each attempt ([`short_now`]), with the free space of the filesystems it writes beside.

use std::path::Path;
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
        // The files opened now, while the host can still give them (a few opens, no reads).
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        for (slot, path) in open.iter_mut().zip(FILES).filter(|(s, _)| s.is_none()) {
            *slot = std::fs::File::open(path).ok();
        }
    }

    /// Samples if one is due (or `force`).
    pub fn sample(&mut self, now: Instant, force: bool) {
        if !force && self.next.is_none_or(|n| now < n) {
            return;
        }
        self.next = Some(now + INTERVAL);
        for name in exhausted(&Readings::now()) {
            if !self.short.iter().any(|s| s == name) {
                self.short.push(name.to_string());
            }
        }
    }
}

/// The host's shared budgets exhausted now (as the supervisor's samples name them), and the
/// filesystems under `paths` (each with what to call it: `--output`, the image store) that are
/// out of room ([`disk_short`]); each name once. Empty when the host is healthy, or when
/// nothing can be read.
pub(crate) fn short_now(paths: &[(&str, &Path)]) -> Vec<String> {
    let mut out: Vec<String> = exhausted(&Readings::now()).into_iter().map(String::from).collect();
    let mut seen: Vec<libc::c_ulong> = Vec::new();
    for (label, path) in paths {
        let Some((fsid, d)) = disk_of(path) else { continue };
        if seen.contains(&fsid) {
            continue;
        }
        seen.push(fsid);
        if let Some(what) = disk_short(&d) {
            out.push(format!("{what} under {label} ({})", path.display()));
        }
    }
    out
}

/// The /proc files the watch reads, as read (None: unreadable), and whether a read failed for
/// want of a file (ENFILE: the file table is full, which is itself the answer).
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
    pub enfile: bool,
}

/// What the watch reads, in [`Readings`]'s order.
const FILES: [&str; 10] = [
    "/proc/sys/fs/file-nr",
    "/proc/sys/fs/aio-nr",
    "/proc/sys/fs/aio-max-nr",
    "/proc/sys/kernel/pty/nr",
    "/proc/sys/kernel/pty/max",
    "/proc/sys/kernel/pty/reserve",
    "/proc/loadavg",
    "/proc/sys/kernel/threads-max",
    "/proc/sys/kernel/pid_max",
    "/proc/meminfo",
];

/// The files, held open by this process from its first reading on: once the host's file table
/// is full an unprivileged process can open nothing, /proc included, so a watch that opened
/// them for each sample would be blind exactly then; pread(2) of an open one takes no file.
static OPEN: std::sync::Mutex<[Option<std::fs::File>; 10]> = std::sync::Mutex::new([const { None }; 10]);

/// One file's text by pread from its start (opened first if it is not yet), and whether the
/// attempt failed with ENFILE.
fn pread(slot: &mut Option<std::fs::File>, path: &str) -> (Option<String>, bool) {
    use std::os::unix::fs::FileExt;
    let enfile = |e: &std::io::Error| e.raw_os_error() == Some(libc::ENFILE);
    if slot.is_none() {
        match std::fs::File::open(path) {
            Ok(f) => *slot = Some(f),
            Err(e) => return (None, enfile(&e)),
        }
    }
    let f = slot.as_ref().unwrap();
    let mut buf = vec![0u8; 8192];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (None, enfile(&e)),
        }
    }
    buf.truncate(len);
    (String::from_utf8(buf).ok(), false)
}

impl Readings {
    /// The files as they are now.
    pub fn now() -> Readings {
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        let mut enfile = false;
        let mut text: Vec<Option<String>> = Vec::with_capacity(FILES.len());
        for (slot, path) in open.iter_mut().zip(FILES) {
            let (t, e) = pread(slot, path);
            enfile |= e;
            text.push(t);
        }
        let mut t = text.into_iter();
        let mut next = || t.next().flatten();
        Readings {
            file_nr: next(),
            aio_nr: next(),
            aio_max: next(),
            pty_nr: next(),
            pty_max: next(),
            pty_reserve: next(),
            loadavg: next(),
            threads_max: next(),
            pid_max: next(),
            meminfo: next(),
            enfile,
        }
    }
}

/// A filesystem's room, as statvfs(3) gives it (what an unprivileged writer may use).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Disk {
    pub size_bytes: u64,
    pub avail_bytes: u64,
    /// Inodes in all and free; 0 in all where the filesystem has no fixed count (tmpfs without
    /// `nr_inodes`, btrfs).
    pub inodes: u64,
    pub avail_inodes: u64,
}

/// Free space under this is short, when it is also under [`DISK_SHORT_SHARE`] of the
/// filesystem: eval's logs and results, a prediction's tree, an image unpacked, need room; a
/// few hundred MiB is what one instance's logs and scratch tree take at most.
pub(crate) const DISK_SHORT_BYTES: u64 = 256 << 20;
/// ... and under this share of the filesystem (a small filesystem, a 1 GiB tmpfs as `-o`, is
/// short only when nearly full: 51 MiB of 1 GiB).
pub(crate) const DISK_SHORT_SHARE: f64 = 0.05;
/// Free inodes under this many, and under [`DISK_SHORT_SHARE`] of them, are short too.
pub(crate) const INODES_SHORT: u64 = 4096;

/// What a filesystem is short of (`free space`, `free inodes`), if anything: free space under
/// [`DISK_SHORT_BYTES`] and under [`DISK_SHORT_SHARE`] of its size (whichever is less), or free
/// inodes under [`INODES_SHORT`] and that share of its inodes.
pub(crate) fn disk_short(d: &Disk) -> Option<&'static str> {
    let under = |avail: u64, all: u64, floor: u64| {
        all > 0 && (avail as f64) < (floor as f64).min(DISK_SHORT_SHARE * all as f64)
    };
    if under(d.avail_bytes, d.size_bytes, DISK_SHORT_BYTES) {
        Some("free space")
    } else if under(d.avail_inodes, d.inodes, INODES_SHORT) {
        Some("free inodes")
    } else {
        None
    }
}

/// The filesystem `path` is on (its nearest existing ancestor: `-o` or a store not made yet):
/// its id and its room.
fn disk_of(path: &Path) -> Option<(libc::c_ulong, Disk)> {
    use std::os::unix::ffi::OsStrExt;
    let mut p = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().ok()?.join(path) };
    loop {
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
        // SAFETY: statvfs of a NUL-terminated path into a zeroed struct it fills.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 {
            let frsize = if st.f_frsize > 0 { st.f_frsize } else { st.f_bsize } as u64;
            return Some((
                st.f_fsid as libc::c_ulong,
                Disk {
                    size_bytes: st.f_blocks as u64 * frsize,
                    avail_bytes: st.f_bavail as u64 * frsize,
                    inodes: st.f_files as u64,
                    avail_inodes: st.f_favail as u64,
                },
            ));
        }
        if !p.pop() {
            return None;
        }
    }
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
    if r.enfile || over(nth(&r.file_nr, 0), nth(&r.file_nr, 2)) {
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
            enfile: false,
        }
    }

    /// A reading that failed with ENFILE is the file table full: an unprivileged process
    /// cannot even open /proc then.
    #[test]
    fn a_read_refused_for_want_of_a_file_is_the_file_table_full() {
        let r = Readings { enfile: true, ..Readings::default() };
        assert_eq!(exhausted(&r), ["the host's file table (fs.file-max)"]);
    }

    /// The watch still reads the host once this process can open nothing (as an unprivileged
    /// one cannot while the host's file table is full): its files were opened before. Run in
    /// a child (this test's own binary), whose descriptor limit it lowers to nothing.
    #[test]
    fn the_watch_reads_the_host_when_nothing_can_be_opened() {
        if std::env::var_os("PSB_HOST_WATCH_CHILD").is_some() {
            let first = Readings::now();
            assert!(first.file_nr.is_some() && first.meminfo.is_some());
            let none = libc::rlimit { rlim_cur: 0, rlim_max: libc::RLIM_INFINITY };
            // SAFETY: setrlimit with a valid struct; this child process only.
            let mut cur: libc::rlimit = unsafe { std::mem::zeroed() };
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut cur) };
            let none = libc::rlimit { rlim_max: cur.rlim_max, ..none };
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &none) }, 0);
            assert!(std::fs::File::open("/proc/sys/fs/file-nr").is_err(), "the limit does not blind an open");
            let later = Readings::now();
            assert!(later.file_nr.is_some() && later.meminfo.is_some() && later.loadavg.is_some());
            assert!(!later.enfile);
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "sandbox::host_watch::tests::the_watch_reads_the_host_when_nothing_can_be_opened"])
            .args(["--test-threads", "1", "--nocapture"])
            .env("PSB_HOST_WATCH_CHILD", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
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

    #[test]
    fn a_filesystem_out_of_room_is_short_by_the_lesser_of_the_floor_and_the_share() {
        const G: u64 = 1 << 30;
        const M: u64 = 1 << 20;
        let disk = |size: u64, avail: u64| Disk { size_bytes: size, avail_bytes: avail, ..Disk::default() };
        // A large disk: short under 256 MiB, whatever its share (1% of 1 TiB is 10 GiB).
        assert_eq!(disk_short(&disk(1024 * G, 10 * G)), None);
        assert_eq!(disk_short(&disk(1024 * G, 300 * M)), None);
        assert_eq!(disk_short(&disk(1024 * G, 200 * M)), Some("free space"));
        // A small one (a 1 GiB tmpfs): short under 5% of it, 51 MiB.
        assert_eq!(disk_short(&disk(G, 100 * M)), None);
        assert_eq!(disk_short(&disk(G, 40 * M)), Some("free space"));
        // Inodes: short under 4096 free and 5%; a filesystem without a count never is.
        let inodes = |all: u64, avail: u64| Disk { inodes: all, avail_inodes: avail, ..disk(1024 * G, 10 * G) };
        assert_eq!(disk_short(&inodes(1_000_000, 3000)), Some("free inodes"));
        assert_eq!(disk_short(&inodes(1_000_000, 5000)), None);
        assert_eq!(disk_short(&inodes(0, 0)), None);
        // Nothing known (statvfs gave zeros): nothing said.
        assert_eq!(disk_short(&Disk::default()), None);
    }

    #[test]
    fn a_path_not_made_yet_is_asked_about_by_its_nearest_ancestor() {
        let d = disk_of(Path::new("/nonexistent/out")).map(|(_, d)| d.size_bytes);
        assert_eq!(d, disk_of(Path::new("/")).map(|(_, d)| d.size_bytes));
        assert!(d.is_some_and(|b| b > 0));
        // The same filesystem under two names is said once (if short at all).
        let now = short_now(&[("--output", Path::new("/nonexistent/out")), ("the image store", Path::new("/"))]);
        assert!(now.iter().filter(|n| n.starts_with("free ")).count() <= 1, "{now:?}");
    }
}
