//! Options `eval` and `calibrate` share: the dataset, the catalogue, limits and the store.

use crate::eval::Options;
use crate::units;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The dataset, as eval and calibrate name it: DATASET, or SWE-bench's `-d/--dataset_name`
/// (a file, a directory with SPLIT.parquet, or a Hugging Face name read from the local cache)
/// with `-s/--split`.
#[derive(Args, Debug)]
#[group(skip)]
#[command(group(clap::ArgGroup::new("data").required(true).multiple(false).args(["dataset", "dataset_name"])))]
pub struct Dataset {
    /// The dataset: an Aider-layout directory, or a JSON, JSONL or Parquet file of records.
    dataset: Option<PathBuf>,
    /// The dataset as SWE-bench's harness names it: a file, a directory holding SPLIT.parquet,
    /// or a Hugging Face dataset (SWE-bench/SWE-bench_Lite, princeton-nlp/SWE-bench_Verified,
    /// lite) found in the local Hugging Face cache; nothing is downloaded.
    #[arg(short = 'd', long = "dataset-name", visible_alias = "dataset_name", value_name = "NAME|FILE")]
    dataset_name: Option<String>,
    /// The split of a --dataset-name (SWE-bench's -s/--split).
    #[arg(short = 's', long, default_value = "test")]
    split: String,
}

impl Dataset {
    /// The dataset's path: DATASET, or the file `--dataset-name` and `--split` name.
    pub fn path(&self) -> Result<PathBuf, String> {
        match (&self.dataset, &self.dataset_name) {
            (Some(p), _) => Ok(p.clone()),
            (None, Some(name)) => {
                let p = super::hf::resolve(name, &self.split, &|k| std::env::var(k).ok())?;
                if p.to_string_lossy() != name.as_str() {
                    eprintln!("polysandbox: dataset {name} (split {}): {}", self.split, p.display());
                }
                Ok(p)
            }
            (None, None) => Err("no dataset: give DATASET or --dataset-name".into()),
        }
    }
}

/// What eval and calibrate both take: which instances, where from, with what images and limits.
#[derive(Args, Debug)]
pub struct Common {
    /// Sandboxes at once (also bounded by the host's memory and the limits).
    #[arg(
        short = 'j',
        long,
        default_value_t = 2,
        visible_aliases = ["max-workers", "max_workers"],
        allow_hyphen_values = true
    )]
    jobs: usize,
    /// Only these languages.
    #[arg(long = "filter-category", num_args = 1.., value_name = "LANG")]
    filter_category: Vec<String>,
    /// Only these instance ids (SWE-bench's -i/--instance_ids; its -t is --timeout here).
    #[arg(short = 't', long = "instance", num_args = 1.., value_name = "ID", visible_short_alias = 'i', visible_alias = "instance-ids", alias = "instance_ids")]
    instances: Vec<String>,
    /// Wall-clock limit per instance, e.g. 1800 (seconds) or 30m (default: the catalogue's per
    /// language; 1800 s for SWE-bench records, as its harness).
    #[arg(long, value_parser = units::parse_duration, allow_hyphen_values = true)]
    timeout: Option<Duration>,
    /// CPUs per instance (default: the catalogue's).
    #[arg(long, value_parser = units::parse_cpus, allow_hyphen_values = true)]
    cpus: Option<f64>,
    /// Memory per instance, no swap (default: the catalogue's).
    #[arg(short = 'm', long, value_parser = units::parse_size, allow_hyphen_values = true)]
    memory: Option<u64>,
    /// The most an instance may write, its tree's changes included (default: its memory
    /// limit; the writable layer is a tmpfs that counts against it).
    #[arg(long, value_parser = units::parse_size, allow_hyphen_values = true)]
    disk: Option<u64>,
    /// Processes and threads at once per sandbox (default 4096): a prediction cannot take
    /// the host's process ids from its neighbours or the host.
    #[arg(long, default_value_t = crate::eval::options::DEFAULT_PIDS, value_parser = clap::value_parser!(u64).range(1..), allow_hyphen_values = true)]
    pids: u64,
    /// Use this image for a language: LANG=REF.
    #[arg(long = "image", value_name = "LANG=REF")]
    images: Vec<String>,
    /// A TOML file overriding catalogue fields, one table per language.
    #[arg(long)]
    config: Option<PathBuf>,
    /// A directory of git mirrors, for repository instances (SWE-bench style).
    #[arg(long)]
    repos: Option<PathBuf>,
    /// Image store directory.
    #[arg(long)]
    root: Option<PathBuf>,
    /// SWE-bench: the registry namespace of the instance images (`none`: the names a local
    /// build gives, sweb.eval.<arch>.<id>); with it, images are named as the harness names them
    /// rather than by the records' `image` column.
    #[arg(long)]
    namespace: Option<String>,
    /// SWE-bench: the instance images' tag.
    #[arg(long, visible_alias = "instance_image_tag", value_name = "TAG")]
    instance_image_tag: Option<String>,
    /// SWE-bench: the run's name, in logs/run_evaluation/<RUN_ID>/ and <model>.<RUN_ID>.json
    /// (also -id RUN_ID, the harness's spelling).
    #[arg(long, visible_alias = "run_id", default_value = "polysandbox")]
    run_id: String,
    /// The sandboxes' network: none (only loopback), or the host's (the SWE-bench harness's
    /// containers have one; code under test could then fetch anything).
    #[arg(long, default_value = "none", value_parser = ["none", "host"])]
    network: String,
    /// Measure each test case's wall, CPU and peak memory (default on): one process per test
    /// where the runner allows it (Rust, Go, C++), the kernel's counters at each test's
    /// boundaries in the others (pytest, jest, JUnit). `off` runs the runner's plain command.
    #[arg(long, default_value = "on", value_parser = ["on", "off"], value_name = "on|off")]
    per_test: String,
    /// Use the toolchain images' read-only caches (default on): work every instance repeats
    /// whatever the prediction, done once when the image was built (C++: Catch2's main in a
    /// ccache; Rust: the vendored crates compiled; Go: std built in the runner's environment;
    /// Java: class data archives for javac and the JUnit launcher). Each tool checks a hit by
    /// content; `off` (or POLYSANDBOX_CACHES=off) builds everything in the sandbox.
    #[arg(long, value_parser = ["on", "off"], value_name = "on|off")]
    caches: Option<String>,
    /// Per-test wall-clock limit where tests run one per process: a test past it is stopped
    /// and failed, the others go on.
    #[arg(long, value_parser = units::parse_duration, allow_hyphen_values = true)]
    test_timeout: Option<Duration>,
    /// Per-test memory limit where tests run one per process (resident memory, sampled).
    #[arg(long, value_parser = units::parse_size, allow_hyphen_values = true)]
    test_memory: Option<u64>,
    /// Per-test CPU time limit where tests run one per process (RLIMIT_CPU).
    #[arg(long, value_parser = units::parse_duration, allow_hyphen_values = true)]
    test_cpu_time: Option<Duration>,
}

/// A path made absolute, once: the runs read and write them from other working directories
/// (a relative -o once sent every patch to a path read from elsewhere).
pub fn abs(p: PathBuf) -> PathBuf {
    std::path::absolute(&p).unwrap_or(p)
}

impl Common {
    /// The options for `dataset` with these set; the binary that runs each sandbox.
    pub fn options(self, dataset: PathBuf, predictions: &str, output: PathBuf) -> Result<Options, String> {
        if self.jobs == 0 {
            return Err("--jobs must be at least 1".into());
        }
        let binary = std::env::current_exe().map_err(|e| format!("cannot find the polysandbox binary: {e}"))?;
        let mut o = Options::new(abs(dataset), predictions, abs(output), binary);
        o.jobs = self.jobs;
        o.languages = self.filter_category;
        o.ids = self.instances;
        o.timeout = self.timeout;
        o.cpus = self.cpus;
        o.memory = self.memory;
        o.disk = self.disk;
        o.pids = self.pids;
        o.images = self.images;
        o.config = self.config.map(abs);
        o.repos = self.repos.map(abs);
        o.root = self.root.map(abs);
        o.namespace = self.namespace;
        o.instance_image_tag = self.instance_image_tag;
        if self.run_id.is_empty() || self.run_id.contains('/') || self.run_id.starts_with('.') {
            return Err(format!("--run-id {:?}: a name, not a path", self.run_id));
        }
        o.run_id = self.run_id;
        o.network_host = self.network == "host";
        o.caches = match (self.caches.as_deref(), std::env::var("POLYSANDBOX_CACHES").ok().as_deref()) {
            (Some(v), _) | (None, Some(v @ ("on" | "off"))) => v == "on",
            (None, None | Some("")) => true,
            (None, Some(v)) => return Err(format!("POLYSANDBOX_CACHES={v:?}: expected on or off")),
        };
        o.per_test = crate::eval::catalogue::PerTest {
            on: self.per_test == "on",
            timeout: self.test_timeout,
            memory: self.test_memory,
            cpu_time: self.test_cpu_time,
        };
        if !o.per_test.on && (self.test_timeout.is_some() || self.test_memory.is_some() || self.test_cpu_time.is_some())
        {
            return Err("--test-timeout, --test-memory and --test-cpu-time need --per-test on".into());
        }
        Ok(o)
    }
}

pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let (i, n) = s.split_once('/').ok_or("expected I/N, e.g. 2/8")?;
    let (i, n): (usize, usize) =
        (i.trim().parse().map_err(|_| "I must be a number")?, n.trim().parse().map_err(|_| "N must be a number")?);
    if n == 0 || i == 0 || i > n {
        return Err(format!("{s}: shards count from 1 to N"));
    }
    Ok((i, n))
}

/// A new file beside `path`, `.NAME.RANDOM.partial`, created with O_CREAT|O_EXCL (which
/// follows no link and opens nothing that already exists).
pub fn create_beside(path: &std::path::Path) -> Result<(std::path::PathBuf, std::fs::File), String> {
    use std::io::Read;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut last = None;
    for _ in 0..16 {
        let mut r = [0u8; 8];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut r))
            .map_err(|e| format!("/dev/urandom: {e}"))?;
        let tmp = path.with_file_name(format!(".{name}.{:016x}.partial", u64::from_ne_bytes(r)));
        match std::fs::File::options().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Err(format!("{}: {}", path.display(), last.map(|e| e.to_string()).unwrap_or_default()))
}

/// `data` written to `path` as a new file put in place by rename: never through a link or into
/// a file someone put there first (a checkout may hold a link at the name), and nothing half
/// written left behind.
pub fn write_new(path: &std::path::Path, data: &[u8]) -> Result<(), String> {
    crate::sys::beneath::write_new(path, data, 0o666)
}
