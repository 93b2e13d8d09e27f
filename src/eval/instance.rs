//! What a benchmark instance is, whatever its format, and what a prediction gives for one.

use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub enum Kind {
    /// `<lang>/exercises/practice/<name>/` with `.meta/config.json`.
    Exercise { dir: PathBuf, name: String, solution: Vec<String>, test: Vec<String>, example: Vec<String> },
    /// A repository at a commit, a test patch, and the tests that grade it.
    Repo {
        repo: String,
        base_commit: String,
        gold_patch: String,
        test_patch: String,
        fail_to_pass: Vec<String>,
        pass_to_pass: Vec<String>,
        test_cmd: Option<String>,
        /// A SWE-bench record (its repository in the harness's table, or an eval_script of its
        /// own): run as the harness runs it, in its own image (see formats/swebench/).
        swebench: Option<SweBenchRecord>,
        /// A Multi-SWE-bench record: run as its harness runs it, in its own image (see
        /// formats/multi_swebench/).
        multi: Option<Box<MultiRecord>>,
    },
    /// Solution code and test code, joined into one file and run.
    Snippet { gold: String, stub: String, test: String },
}

#[derive(Debug, Clone)]
pub struct Instance {
    pub id: String,
    pub language: String,
    /// An image the record names itself (SWE-bench style), over the catalogue's.
    pub image: Option<String>,
    pub kind: Kind,
}

impl Instance {
    /// An instance of no consequence, for unit tests of what takes one.
    #[cfg(test)]
    pub(crate) fn for_tests(id: &str) -> Instance {
        Instance {
            id: id.into(),
            language: "python".into(),
            image: None,
            kind: Kind::Snippet { gold: String::new(), stub: String::new(), test: String::new() },
        }
    }

    /// A digest of what the instance is: its record's fields, and for an exercise every file of its
    /// directory (tests, stub, reference solution, configuration), by path and content. Links and
    /// anything but regular files and directories count by their kind alone.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        use std::path::Path;
        let inst = self;
        fn walk(h: &mut Sha256, root: &Path, rel: &Path, depth: usize) {
            let Ok(rd) = std::fs::read_dir(root.join(rel)) else { return };
            let mut names: Vec<std::ffi::OsString> = rd.flatten().map(|e| e.file_name()).collect();
            names.sort();
            for n in names {
                let r = rel.join(&n);
                let Ok(md) = std::fs::symlink_metadata(root.join(&r)) else { continue };
                h.update(r.as_os_str().as_encoded_bytes());
                if md.is_dir() && depth < 16 {
                    h.update(b"/\0");
                    walk(h, root, &r, depth + 1);
                } else if md.is_file() && md.len() <= 64 << 20 {
                    h.update(md.len().to_le_bytes());
                    h.update(std::fs::read(root.join(&r)).unwrap_or_default());
                } else {
                    h.update(format!("\0{:?}\0{}", md.file_type(), md.len()).as_bytes());
                }
            }
        }
        let mut h = Sha256::new();
        h.update(format!("{}|{}|{:?}|{:?}", inst.id, inst.language, inst.image, inst.kind).as_bytes());
        if let Kind::Exercise { dir, .. } = &inst.kind {
            walk(&mut h, dir, Path::new(""), 0);
        }
        format!("{:x}", h.finalize())[..16].to_string()
    }
}

/// What a prediction gives for one instance.
#[derive(Debug, Clone, PartialEq)]
pub enum Prediction {
    Gold,
    Stub,
    /// Edited files by path relative to the instance (an exercise's solution files).
    Files(BTreeMap<String, Vec<u8>>),
    /// A unified diff (an empty one is an empty patch).
    Patch(String),
    /// Code for a snippet instance.
    Code(String),
    /// The predictions name nothing for this instance.
    Missing,
    /// The prediction is not one we take, and why (a symlink, FIFO or device where a file
    /// should be, a path outside the instance): graded as a patch that does not apply.
    Refused(String),
}

impl Prediction {
    /// The bytes that identify this prediction, for `--resume`.
    pub fn content(&self) -> Vec<u8> {
        match self {
            Prediction::Gold => b"gold".to_vec(),
            Prediction::Stub => b"stub".to_vec(),
            Prediction::Missing => b"missing".to_vec(),
            Prediction::Patch(p) | Prediction::Code(p) => p.as_bytes().to_vec(),
            Prediction::Refused(why) => format!("refused: {why}").into_bytes(),
            Prediction::Files(f) => {
                let mut v = Vec::new();
                for (k, b) in f {
                    v.extend_from_slice(k.as_bytes());
                    v.push(0);
                    v.extend_from_slice(&(b.len() as u64).to_le_bytes());
                    v.extend_from_slice(b);
                }
                v
            }
        }
    }
}

/// What a SWE-bench record carries besides a repository instance's common fields.
#[derive(Debug, Clone, PartialEq)]
pub struct SweBenchRecord {
    pub version: String,
    /// The record's own eval script (the newer column), else made from the table.
    pub eval_script: Option<String>,
    /// The record's own parser name (`parse_log_pytest`, ...), else the repository's.
    pub log_parser: Option<String>,
    /// `pass_and_fail` (the default) or `fail_only`.
    pub eval_type: Option<String>,
}

/// What a Multi-SWE-bench record carries besides a repository instance's common fields.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiRecord {
    pub org: String,
    /// The repository's name (without its organisation).
    pub name: String,
    pub number: u64,
    /// The harness's `number_interval` and `tag` (empty when the record has none): which of a
    /// repository's definitions it takes.
    pub number_interval: String,
    pub tag: String,
    pub base_ref: String,
    pub base_label: String,
    /// The record's test lists by kind: fail, skip and none to pass, and pass to pass.
    pub f2p: Vec<String>,
    pub p2p: Vec<String>,
    pub s2p: Vec<String>,
    pub n2p: Vec<String>,
    /// The harness's own results of its three runs, as the record publishes them.
    pub run_result: crate::eval::parsers::Sets,
    pub test_patch_result: crate::eval::parsers::Sets,
    pub fix_patch_result: Option<crate::eval::parsers::Sets>,
}
