//! settings.json: what a run of eval was asked to grade and how, written into `--output`
//! before anything runs. `merge` reads it from each shard: shards of one run differ in their
//! shard alone, and the merged output is written with the same settings, unsharded.

use super::Options;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

pub const FILE: &str = "settings.json";

/// The most settings.json may hold (eval writes a few KiB).
const MAX_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The polysandbox version that graded.
    pub polysandbox: String,
    /// The dataset, as eval loaded it (absolute).
    pub dataset: String,
    /// gold, stub, or the predictions' path (absolute).
    pub predictions: String,
    /// The predictions file's SHA-256, when they are a file.
    pub predictions_sha256: Option<String>,
    pub languages: Vec<String>,
    pub ids: Vec<String>,
    pub sample: Option<usize>,
    /// (index from 1, count); none for an unsharded or a merged run.
    pub shard: Option<(usize, usize)>,
    pub timeout_ms: Option<u64>,
    pub cpus: Option<f64>,
    pub memory: Option<u64>,
    pub images: Vec<String>,
    pub config: Option<String>,
    pub repos: Option<String>,
    pub namespace: Option<String>,
    pub instance_image_tag: Option<String>,
    pub run_id: String,
    pub network_host: bool,
    pub disk: Option<u64>,
    pub pids: u64,
    pub strict: bool,
    /// Per-test measurement and limits.
    pub per_test: String,
    pub controls: String,
    /// `none` (--no-calibration, or none for the dataset), `default` (the dataset's, beside the
    /// store), or the file named by --calibration with its SHA-256.
    pub calibration: String,
    /// A merged run: how many shards it was merged from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_shards: Option<usize>,
}

fn sha256_of(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(format!("{:x}", Sha256::digest(&bytes)))
}

/// The predictions file's SHA-256 (none for gold, stub or a directory).
pub fn predictions_sha256(predictions: &str) -> Option<String> {
    let p = Path::new(predictions);
    if p.is_file() {
        sha256_of(p)
    } else {
        None
    }
}

impl Settings {
    pub fn of(o: &Options) -> Settings {
        let s = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
        let calibration = match (&o.calibration, &o.calibration_file) {
            (None, _) => "none".to_string(),
            (Some(_), None) => "default".to_string(),
            (Some(_), Some(f)) => {
                format!("{} sha256:{}", f.display(), sha256_of(f).unwrap_or_else(|| "unreadable".into()))
            }
        };
        Settings {
            polysandbox: env!("CARGO_PKG_VERSION").into(),
            dataset: o.dataset.to_string_lossy().into_owned(),
            predictions: o.predictions.clone(),
            predictions_sha256: predictions_sha256(&o.predictions),
            languages: o.languages.clone(),
            ids: o.ids.clone(),
            sample: o.sample,
            shard: o.shard,
            timeout_ms: o.timeout.map(|t| t.as_millis() as u64),
            cpus: o.cpus,
            memory: o.memory,
            images: o.images.clone(),
            config: s(&o.config),
            repos: s(&o.repos),
            namespace: o.namespace.clone(),
            instance_image_tag: o.instance_image_tag.clone(),
            run_id: o.run_id.clone(),
            network_host: o.network_host,
            disk: o.disk,
            pids: o.pids,
            strict: o.strict,
            per_test: format!("{:?}", o.per_test),
            controls: format!("{:?}", o.controls),
            calibration,
            merged_shards: None,
        }
    }

    /// The options that select and report as these settings did (output in `output`), for
    /// `merge`: what grading needs beyond that (store, binary, calibration) is not there.
    pub fn options(&self, output: &Path) -> Options {
        let mut o = Options::new(self.dataset.clone().into(), &self.predictions, output.to_path_buf(), "".into());
        o.languages = self.languages.clone();
        o.ids = self.ids.clone();
        o.sample = self.sample;
        o.shard = self.shard;
        o.timeout = self.timeout_ms.map(std::time::Duration::from_millis);
        o.cpus = self.cpus;
        o.memory = self.memory;
        o.images = self.images.clone();
        o.config = self.config.clone().map(Into::into);
        o.repos = self.repos.clone().map(Into::into);
        o.namespace = self.namespace.clone();
        o.instance_image_tag = self.instance_image_tag.clone();
        o.run_id = self.run_id.clone();
        o.network_host = self.network_host;
        o.disk = self.disk;
        o.pids = self.pids;
        o.strict = self.strict;
        o
    }

    /// The first setting (by name) in which `other` differs from these, the shard and a
    /// merge's count aside, with both values.
    pub fn differs(&self, other: &Settings) -> Option<(String, String, String)> {
        let fields = |s: &Settings| match serde_json::to_value(s).unwrap() {
            Value::Object(mut m) => {
                m.remove("shard");
                m.remove("merged_shards");
                m
            }
            _ => unreachable!(),
        };
        let (a, b) = (fields(self), fields(other));
        a.iter().find(|(k, v)| b.get(*k) != Some(v)).map(|(k, v)| {
            (k.clone(), v.to_string(), b.get(k).map(|x| x.to_string()).unwrap_or_else(|| "nothing".into()))
        })
    }

    /// settings.json of the run in `dir`; `None` when there is none.
    pub fn read(dir: &Path) -> Result<Option<Settings>, String> {
        let d = crate::sys::beneath::Dir::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Settings::read_in(&d)
    }

    /// settings.json of the run whose directory is open as `dir`: read beneath it, a regular
    /// file and no symlink (the directory may be another user's: a shard given to merge).
    pub fn read_in(dir: &crate::sys::beneath::Dir) -> Result<Option<Settings>, String> {
        let path = dir.path().join(FILE);
        match dir.read(FILE, MAX_BYTES)? {
            Some(t) => serde_json::from_slice(&t).map(Some).map_err(|e| format!("{}: {e}", path.display())),
            None => Ok(None),
        }
    }

    /// Written as a new file put in place by rename: never through a link at the name.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).unwrap() + "\n";
        crate::sys::beneath::write_new(&dir.join(FILE), text.as_bytes(), 0o644)
    }
}
