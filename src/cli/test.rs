//! `polysandbox test`: a project's test suite in a sandbox with one of eval's runners, each
//! test's CPU, peak memory and wall printed as a table (or JSON lines) and, on request, a
//! JUnit XML report with them as properties. The sandbox takes `run`'s options.

use crate::eval::catalogue::{self, PerTest};
use crate::eval::parsers::Status;
use crate::eval::project::{self, Project};
use crate::units;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

const AFTER_HELP: &str = "\
The project is mounted copy-on-write at /work/NAME: the tests' writes (build output, caches)
are discarded and the host's copy is never changed. The runner's command is eval's for the
language (`--config` overrides it, as in eval); its report files come back through FIFOs in a
directory the sandbox cannot write. Test output goes to stderr, the table to stdout.

Exit status: 0 when every test passed; 1 when a test failed, was stopped, or the runner failed
without reporting one; 125 when polysandbox could not run the tests (the reason on one line).";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct TestArgs {
    /// The runner: a language of eval's catalogue (python, go, rust, javascript, typescript,
    /// java, cpp).
    #[arg(short = 'r', long)]
    runner: String,
    /// The image to run in (default: the runner's).
    #[arg(long)]
    image: Option<String>,
    /// A TOML file overriding the runner's fields (eval's --config; a table named after the
    /// runner).
    #[arg(long)]
    config: Option<PathBuf>,
    /// `{name}` in the runner's command (C++: the CMake target; default: the directory's name).
    #[arg(long)]
    name: Option<String>,
    /// Measure each test's wall, CPU and peak memory (default on); `off` runs the runner's
    /// plain command.
    #[arg(long, default_value = "on", value_parser = ["on", "off"], value_name = "on|off")]
    per_test: String,
    /// Per-test wall-clock limit where tests run one per process (Rust, Go, C++).
    #[arg(long, value_parser = units::parse_duration, allow_hyphen_values = true)]
    test_timeout: Option<Duration>,
    /// Per-test memory limit where tests run one per process (resident memory, sampled).
    #[arg(long, value_parser = units::parse_size, allow_hyphen_values = true)]
    test_memory: Option<u64>,
    /// Per-test CPU time limit where tests run one per process (RLIMIT_CPU).
    #[arg(long, value_parser = units::parse_duration, allow_hyphen_values = true)]
    test_cpu_time: Option<Duration>,
    /// Run the runner's setup steps first, as eval does for an exercise (JavaScript links the
    /// image's node_modules and turns `xtest` into `test`; Java drops `@Disabled`).
    #[arg(long)]
    setup: bool,
    /// Write a JUnit XML report to FILE: a testcase per test, its usage as properties.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Print each test as a JSON line (name, status, usage) instead of the table.
    #[arg(long)]
    json: bool,
    /// `run`: set an environment variable (K=V), or pass K from the caller's environment.
    #[arg(short = 'e', long = "env", value_name = "K=V")]
    env: Vec<String>,
    /// `run`: another bind mount HOST:CTR[:ro|rw|O].
    #[arg(short = 'v', long = "volume", value_name = "HOST:CTR[:ro|rw|O]")]
    volumes: Vec<String>,
    /// `run`: a tmpfs at PATH[:size=N].
    #[arg(long, value_name = "PATH[:size=N]")]
    tmpfs: Vec<String>,
    /// `run`: memory limit of the whole run, no swap.
    #[arg(short = 'm', long, value_parser = units::parse_size, allow_hyphen_values = true)]
    memory: Option<u64>,
    /// `run`: CPU limit.
    #[arg(long, value_parser = units::parse_cpus, allow_hyphen_values = true)]
    cpus: Option<f64>,
    /// `run`: most processes and threads at once.
    #[arg(long, value_parser = units::parse_count, allow_hyphen_values = true)]
    pids: Option<u64>,
    /// `run`: wall-clock limit of the whole run.
    #[arg(long, value_parser = units::parse_duration, allow_hyphen_values = true)]
    timeout: Option<Duration>,
    /// `run`: CPU-time limit of the whole run.
    #[arg(long = "cpu-time", value_parser = units::parse_duration, allow_hyphen_values = true)]
    cpu_time: Option<Duration>,
    /// `run`: size of the writable layer (the project's changes included).
    #[arg(long, value_parser = units::parse_size, allow_hyphen_values = true)]
    disk: Option<u64>,
    /// `run`: none (only loopback), or the host's network.
    #[arg(long, default_value = "none", value_parser = ["none", "host"])]
    network: String,
    /// `run`: image store directory.
    #[arg(long)]
    root: Option<PathBuf>,
    /// `run`: pull the image: missing, always, or never.
    #[arg(long, default_value = "missing", value_parser = ["missing", "always", "never"])]
    pull: String,
    /// The project's directory (default: the current one).
    #[arg(value_name = "PROJECT")]
    project: Option<PathBuf>,
}

fn secs(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.3}s")
    } else {
        format!("{s:.1}s")
    }
}

pub fn main(a: TestArgs) -> i32 {
    match test(a) {
        Ok(code) => code,
        Err(e) => super::error(e),
    }
}

fn test(a: TestArgs) -> Result<i32, String> {
    let dir = super::common::abs(a.project.clone().unwrap_or_else(|| PathBuf::from(".")));
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    if dir.to_string_lossy().contains(':') {
        return Err(format!("{}: a project path with ':' cannot be bound (run's -v HOST:CTR)", dir.display()));
    }
    let images: Vec<String> = a.image.iter().map(|i| format!("{}={i}", a.runner)).collect();
    let cat = catalogue::load(a.config.as_deref(), &[])?;
    if !cat.contains_key(&a.runner) {
        let known: Vec<&str> = cat.keys().map(|k| k.as_str()).collect();
        return Err(format!("--runner {}: no such runner (known: {})", a.runner, known.join(", ")));
    }
    let cat = catalogue::load(a.config.as_deref(), &images)?;
    let per_test =
        PerTest { on: a.per_test == "on", timeout: a.test_timeout, memory: a.test_memory, cpu_time: a.test_cpu_time };
    if !per_test.on && (a.test_timeout.is_some() || a.test_memory.is_some() || a.test_cpu_time.is_some()) {
        return Err("--test-timeout, --test-memory and --test-cpu-time need --per-test on".into());
    }
    // The image's read-only caches, as eval uses them (POLYSANDBOX_CACHES=off: not).
    let caches = std::env::var("POLYSANDBOX_CACHES").map_or(true, |v| v != "off");
    let runner = cat[&a.runner].measured(&per_test).cached(caches);
    if per_test.on && !runner.measuring {
        eprintln!("polysandbox: note: runner {} has no measured command: tests are not measured one by one", a.runner);
    }
    let name = match &a.name {
        Some(n) if project::plain_name(n) => n.clone(),
        Some(n) => return Err(format!("--name {n:?}: letters, digits and ._- only")),
        None => project::name_of(&dir),
    };
    let binary = std::env::current_exe().map_err(|e| format!("cannot find the polysandbox binary: {e}"))?;
    let mut run_args: Vec<String> = Vec::new();
    for e in &a.env {
        run_args.extend(["-e".into(), e.clone()]);
    }
    for v in &a.volumes {
        run_args.extend(["-v".into(), v.clone()]);
    }
    for t in &a.tmpfs {
        run_args.extend(["--tmpfs".into(), t.clone()]);
    }
    if let Some(m) = a.memory {
        run_args.extend(["--memory".into(), m.to_string()]);
    }
    if let Some(c) = a.cpus {
        run_args.extend(["--cpus".into(), c.to_string()]);
    }
    if let Some(p) = a.pids {
        run_args.extend(["--pids".into(), p.to_string()]);
    }
    if let Some(t) = a.timeout {
        run_args.extend(["--timeout".into(), format!("{}ms", t.as_millis())]);
    }
    if let Some(t) = a.cpu_time {
        run_args.extend(["--cpu-time".into(), format!("{}ms", t.as_millis())]);
    }
    if let Some(d) = a.disk {
        run_args.extend(["--disk".into(), d.to_string()]);
    }
    if let Some(r) = &a.root {
        run_args.extend(["--root".into(), super::common::abs(r.clone()).display().to_string()]);
    }
    run_args.extend(["--network".into(), a.network.clone(), "--pull".into(), a.pull.clone()]);
    let image = runner.image.clone();
    let p = Project {
        dir,
        runner,
        image,
        name,
        binary,
        run_args,
        memory: a.memory.unwrap_or_else(crate::eval::scheduler::host_memory),
        setup: a.setup,
    };
    let mut err = std::io::stderr();
    let o = project::run(&p, &mut err)?;
    // polysandbox itself failed, or the command never started: `run` said why on its one line.
    let Some(record) = o.record.as_ref() else {
        return Err("the sandbox left no usage record".into());
    };
    {
        use crate::sandbox::report::Status as S;
        if matches!(record.status, S::Error | S::NotStarted) {
            return Ok(crate::sandbox::exit::ERROR);
        }
    }
    let record = Some(record);
    if a.json {
        for t in &o.tests {
            out!("{}", serde_json::to_string(t).unwrap_or_default());
        }
    } else {
        out!("{:<8} {:>9} {:>9} {:>11}  {:<10} TEST", "STATUS", "WALL", "CPU", "PEAK MEM", "BY");
        for t in &o.tests {
            let status =
                serde_json::to_value(t.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            match &t.usage {
                Some(u) => {
                    let by = serde_json::to_value(u.method)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default();
                    let status = if u.stopped_by.is_some() { "stopped".to_string() } else { status };
                    out!(
                        "{:<8} {:>9} {:>9} {:>11}  {:<10} {}",
                        status,
                        secs(u.wall_s),
                        secs(u.cpu_s()),
                        units::human_bytes(u.memory_peak_bytes),
                        by,
                        crate::eval::result::clean(&t.name)
                    );
                }
                None => out!(
                    "{:<8} {:>9} {:>9} {:>11}  {:<10} {}",
                    status,
                    t.duration_s.map(secs).unwrap_or_else(|| "-".into()),
                    "-",
                    "-",
                    "-",
                    crate::eval::result::clean(&t.name)
                ),
            }
        }
    }
    let count = |s: Status| o.tests.iter().filter(|t| t.status == s).count();
    let (passed, failed) = (count(Status::Passed) + count(Status::Xfail), count(Status::Failed) + count(Status::Error));
    let measured: Vec<&crate::measure::TestUsage> = o.tests.iter().filter_map(|t| t.usage.as_ref()).collect();
    let mut lines = vec![format!(
        "{} tests: {passed} passed, {failed} failed, {} skipped; {} measured",
        o.tests.len(),
        count(Status::Skipped),
        measured.len()
    )];
    let top = |key: &dyn Fn(&crate::measure::TestUsage) -> f64| {
        o.tests
            .iter()
            .filter_map(|t| t.usage.as_ref().map(|u| (t.name.as_str(), u)))
            .max_by(|x, y| key(x.1).total_cmp(&key(y.1)))
    };
    if let (Some(w), Some(c), Some(m)) = (top(&|u| u.wall_s), top(&|u| u.cpu_s()), top(&|u| u.memory_peak_bytes as f64))
    {
        lines.push(format!(
            "slowest {} ({}); most CPU {} ({}); most memory {} ({})",
            w.0,
            secs(w.1.wall_s),
            c.0,
            secs(c.1.cpu_s()),
            m.0,
            units::human_bytes(m.1.memory_peak_bytes)
        ));
    }
    let stopped: Vec<&str> = o
        .tests
        .iter()
        .filter(|t| t.usage.as_ref().is_some_and(|u| u.stopped_by.is_some()))
        .map(|t| t.name.as_str())
        .collect();
    if !stopped.is_empty() {
        lines.push(format!("{} stopped at a per-test limit: {}", stopped.len(), stopped.join(", ")));
    }
    if let Some(rec) = record {
        lines.push(format!(
            "the whole run: {} wall, {} CPU, {} peak memory, {}",
            secs(rec.wall_time_s),
            secs(rec.cpu_total_s),
            units::human_bytes(rec.memory_peak_bytes),
            match (rec.exit_code, rec.signal) {
                (_, Some(s)) => format!("signal {s}"),
                (Some(c), _) => format!("exit {c}"),
                _ => format!("{:?}", rec.status).to_lowercase(),
            }
        ));
    }
    // A failing run whose results show no failure: something rewrote them (a process the
    // project started before the tests can reach the report channel; docs/threat-model.md).
    let contradicted = failed == 0 && record.is_some_and(|r| r.exit_code.is_some_and(|c| c != 0));
    if contradicted {
        lines.push(format!(
            "the tests exited {} while their results report no failure: the results cannot be trusted",
            record.and_then(|r| r.exit_code).unwrap_or(-1)
        ));
    }
    if let Some(t) = &o.tampered {
        lines.push(format!("the runner's report cannot be trusted: {t}"));
    }
    if let Some(u) = &o.unverified {
        lines.push(format!("the per-test results cannot be trusted (the exit status can): {u}"));
    }
    for l in &lines {
        // One line each (test names come from the runner's reports: a line break in one could
        // draw a summary of its own).
        let l = l.replace(['\n', '\r'], " ");
        if a.json {
            eprintln!("polysandbox: {}", crate::eval::result::terminal_safe(&l));
        } else {
            out!("{l}");
        }
    }
    if let Some(path) = &a.junit {
        let mut tests: Vec<&crate::eval::parsers::TestResult> = o.tests.iter().collect();
        // An untrustworthy run says so in the junit too, as an error of its own.
        let whole = crate::eval::parsers::TestResult {
            name: "polysandbox: these results cannot be trusted".into(),
            status: Status::Error,
            duration_s: None,
            usage: None,
        };
        if contradicted || o.tampered.is_some() || o.unverified.is_some() {
            tests.push(&whole);
        }
        let x = crate::eval::report::test_junit(&p.name, &a.runner, &tests);
        super::common::write_new(path, x.as_bytes())?;
    }
    let ran_clean = record.is_some_and(|r| r.exit_code == Some(0) && r.signal.is_none());
    if o.tests.is_empty() {
        eprintln!("polysandbox: no test results from runner {} (exit {})", a.runner, o.exit);
        return Ok(1);
    }
    Ok(if failed == 0 && o.tampered.is_none() && ran_clean { 0 } else { 1 })
}
