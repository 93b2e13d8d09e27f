//! eval's and calibrate's progress on stderr. On a terminal: from the first second, a line
//! saying what happens (probing an image's toolchain, pulling it, calibrating), then a bar
//! whose clock ticks every second with the instances done, resolved and an ETA, and below it
//! each instance running now with its time so far. Not on a terminal (a CI log): a line when
//! the runs start and per result, and a heartbeat line every 30 s while nothing else is said
//! (the step, or what runs, for how long), so that a log that goes quiet says why.

use crate::eval::{InstanceResult, Progress, Verdict};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The heartbeat's interval when stderr is not a terminal (`POLYSANDBOX_EVAL_HEARTBEAT`
/// changes it: `10s`, `2m`).
const HEARTBEAT: Duration = Duration::from_secs(30);
/// How many running instances a terminal shows a line for (the others are counted).
const SHOWN: usize = 8;

/// `1h 2m`, `4m 10s`, `7s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, s % 3600 / 60),
    }
}

/// One result's line: `[done/total] id verdict wall cpu memory (reason)`.
pub fn result_line(r: &InstanceResult, done: usize, total: usize) -> String {
    format!(
        "[{done}/{total}] {:<40} {:<12} {:>7.1}s {:>6.1}s cpu {:>5} MiB{}",
        r.instance_id,
        r.verdict,
        r.wall_s,
        r.cpu_s,
        r.memory_peak_bytes >> 20,
        r.reason
            .as_ref()
            .filter(|_| r.verdict != Verdict::Resolved)
            .map(|s| format!("  ({})", s.lines().next().unwrap_or("")))
            .unwrap_or_default()
    )
}

struct Running {
    id: String,
    since: Instant,
    bar: Option<ProgressBar>,
}

struct State {
    step: String,
    step_since: Instant,
    /// The calibration pass the runs belong to, if they are one's.
    pass: Option<String>,
    total: usize,
    kept: usize,
    done: usize,
    resolved: usize,
    /// When this run's first instance started, and how many that started have ended since.
    began: Option<Instant>,
    ended: usize,
    running: Vec<Running>,
    /// When the last line was written (the heartbeat fills silences).
    said: Instant,
}

struct Tty {
    multi: MultiProgress,
    main: ProgressBar,
}

struct Inner {
    tty: Option<Tty>,
    heartbeat: Duration,
    start: Instant,
    stop: AtomicBool,
    state: Mutex<State>,
}

/// Draws a run's progress on stderr; [`Reporter::finish`] before anything else is printed.
pub struct Reporter {
    inner: Arc<Inner>,
    ticker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Reporter {
    /// A bar on a terminal, lines otherwise.
    pub fn new() -> Reporter {
        let heartbeat = std::env::var("POLYSANDBOX_EVAL_HEARTBEAT")
            .ok()
            .and_then(|v| crate::units::parse_duration(&v).ok())
            .filter(|d| !d.is_zero())
            .unwrap_or(HEARTBEAT);
        let tty = std::io::stderr().is_terminal().then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let main = multi.add(ProgressBar::new_spinner());
            main.set_style(ProgressStyle::with_template("{spinner:.cyan} [{elapsed_precise}] {msg}").unwrap());
            main.set_message("starting");
            main.enable_steady_tick(Duration::from_millis(250));
            Tty { multi, main }
        });
        let now = Instant::now();
        let inner = Arc::new(Inner {
            tty,
            heartbeat,
            start: now,
            stop: AtomicBool::new(false),
            state: Mutex::new(State {
                step: "starting".into(),
                step_since: now,
                pass: None,
                total: 0,
                kept: 0,
                done: 0,
                resolved: 0,
                began: None,
                ended: 0,
                running: vec![],
                said: now,
            }),
        });
        // Every second: the terminal's ETA; otherwise, a heartbeat after a silence.
        let ticker = {
            let inner = inner.clone();
            let every = inner.heartbeat.min(Duration::from_secs(1));
            std::thread::spawn(move || {
                let mut next = Instant::now() + every;
                while !inner.stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                    if Instant::now() >= next {
                        inner.tick();
                        next += every;
                    }
                }
            })
        };
        Reporter { inner, ticker: Mutex::new(Some(ticker)) }
    }

    /// Clears the terminal's lines and stops the clock.
    pub fn finish(&self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.ticker.lock().unwrap().take() {
            let _ = t.join();
        }
        if let Some(t) = &self.inner.tty {
            for r in self.inner.state.lock().unwrap().running.iter_mut() {
                if let Some(b) = r.bar.take() {
                    b.finish_and_clear();
                }
            }
            t.main.finish_and_clear();
            let _ = t.multi.clear();
        }
    }

    /// The last run's size and how many of its instances have a result: (total, done).
    pub fn counts(&self) -> (usize, usize) {
        let s = self.inner.state.lock().unwrap();
        (s.total, s.done)
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Inner {
    fn line(&self, s: &mut State, line: &str) {
        let line = crate::eval::result::terminal_safe(line);
        match &self.tty {
            Some(t) => t.multi.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
        s.said = Instant::now();
    }

    fn note(&self, line: &str) {
        let mut s = self.state.lock().unwrap();
        self.line(&mut s, &format!("polysandbox: {line}"));
    }

    /// What is running, for the terminal's bar or the heartbeat.
    fn status(&self, s: &State) -> String {
        let pass = s.pass.as_ref().map(|p| format!("calibrating ({p}): ")).unwrap_or_default();
        if s.step != "running" {
            return format!("{pass}{}", s.step);
        }
        let mut parts = vec![format!("{} resolved", s.resolved)];
        if !s.running.is_empty() {
            parts.push(format!("{} running", s.running.len()));
        }
        let left = s.total.saturating_sub(s.done);
        match s.began {
            Some(b) if s.ended > 0 && left > 0 => {
                let per = b.elapsed().as_secs_f64() / s.ended as f64;
                parts.push(format!("ETA {}", human(Duration::from_secs_f64(per * left as f64))));
            }
            _ if left > 0 => parts.push("ETA after the first result".into()),
            _ => {}
        }
        format!("{pass}{}", parts.join(" · "))
    }

    fn tick(&self) {
        let mut s = self.state.lock().unwrap();
        if let Some(t) = &self.tty {
            t.main.set_message(self.status(&s));
            return;
        }
        if s.said.elapsed() < self.heartbeat {
            return;
        }
        let now = Instant::now();
        let what = if s.running.is_empty() {
            format!("{} (for {})", self.status(&s), human(now - s.step_since))
        } else {
            let mut ids: Vec<String> =
                s.running.iter().take(10).map(|r| format!("{} ({})", r.id, human(now - r.since))).collect();
            if s.running.len() > 10 {
                ids.push(format!("{} more", s.running.len() - 10));
            }
            let pass = s.pass.as_ref().map(|p| format!("calibrating ({p}): ")).unwrap_or_default();
            format!("{pass}{} of {} done; running {}: {}", s.done, s.total, s.running.len(), ids.join(", "))
        };
        let line = format!("polysandbox: [{}] {what}", human(self.start.elapsed()));
        self.line(&mut s, &line);
    }

    /// A bar for a running instance, its clock from `since`.
    fn bar(t: &Tty, id: &str, since: Instant) -> ProgressBar {
        let b = ProgressBar::new_spinner().with_elapsed(since.elapsed());
        b.set_style(ProgressStyle::with_template("  {spinner:.green} [{elapsed_precise}] {prefix}").unwrap());
        b.set_prefix(crate::eval::result::terminal_safe(id));
        let b = t.multi.add(b);
        b.enable_steady_tick(Duration::from_millis(250));
        b
    }
}

impl Progress for Reporter {
    fn step(&self, what: &str) {
        let i = &self.inner;
        let mut s = i.state.lock().unwrap();
        s.step = what.to_string();
        s.step_since = Instant::now();
        match &i.tty {
            Some(t) => t.main.set_message(i.status(&s)),
            // The runs themselves say enough; a calibration's steps repeat each pass.
            None if what == "running" && s.pass.is_none() => {
                let line = format!("polysandbox: running {} instances", s.total - s.kept);
                i.line(&mut s, &line);
            }
            // Piped, the steps before it are the heartbeat's to name (every 30 s): a command
            // line refused while it reads its input stays one line.
            None => {}
        }
    }

    fn note(&self, line: &str) {
        self.inner.note(line);
    }

    fn pass(&self, label: Option<&str>) {
        self.inner.state.lock().unwrap().pass = label.map(String::from);
    }

    fn plan(&self, total: usize, kept: usize) {
        let i = &self.inner;
        let mut s = i.state.lock().unwrap();
        (s.total, s.kept, s.done, s.resolved, s.began, s.ended) = (total, kept, 0, 0, None, 0);
        if let Some(t) = &i.tty {
            t.main.set_style(
                ProgressStyle::with_template(
                    "{spinner:.cyan} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} {msg}",
                )
                .unwrap()
                .progress_chars("█▉▊▋▌▍▎▏ "),
            );
            t.main.set_length(total as u64);
            t.main.set_position(0);
        }
    }

    fn started(&self, id: &str) {
        let i = &self.inner;
        let mut s = i.state.lock().unwrap();
        let now = Instant::now();
        s.began.get_or_insert(now);
        let shown = s.running.iter().filter(|r| r.bar.is_some()).count();
        let bar = i.tty.as_ref().filter(|_| shown < SHOWN).map(|t| Inner::bar(t, id, now));
        s.running.push(Running { id: id.to_string(), since: now, bar });
    }

    fn finished(&self, r: &InstanceResult, done: usize, total: usize, resolved: usize) {
        let i = &self.inner;
        let mut s = i.state.lock().unwrap();
        (s.done, s.total, s.resolved) = (done, total, resolved);
        if let Some(k) = s.running.iter().position(|x| x.id == r.instance_id) {
            let gone = s.running.remove(k);
            s.ended += 1;
            if let (Some(b), Some(t)) = (gone.bar, &i.tty) {
                b.finish_and_clear();
                t.multi.remove(&b);
                // The next one waiting for a line gets it.
                if let Some(next) = s.running.iter_mut().find(|x| x.bar.is_none()) {
                    next.bar = Some(Inner::bar(t, &next.id, next.since));
                }
            }
        }
        if let Some(t) = &i.tty {
            t.main.set_length(total as u64);
            t.main.set_position(done as u64);
            t.main.set_message(i.status(&s));
        }
        // A calibration's verdicts are gold's and the stub's, not the run's: counted, not listed.
        if s.pass.is_none() {
            i.line(&mut s, &result_line(r, done, total));
        }
    }
}
