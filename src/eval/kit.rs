//! The measurement kit: what is bound read-only at [`super::catalogue::MEASURE`] in a sandbox whose runner is
//! measured: a copy of this binary for `each-test` (a copy, so that the host's own binary is
//! never reachable from a sandbox, see the init's CVE-2019-5736 check), and the in-runner
//! plugins of images/measure/.

use super::Options;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The plugins, by their path under [`MEASURE`].
pub const FILES: &[(&str, &str)] = &[
    (
        "java/META-INF/services/org.junit.platform.launcher.TestExecutionListener",
        include_str!("../../images/measure/java/META-INF/services/org.junit.platform.launcher.TestExecutionListener"),
    ),
    ("java/PolysandboxMeasure.java", include_str!("../../images/measure/java/PolysandboxMeasure.java")),
    ("jest/measure.js", include_str!("../../images/measure/jest/measure.js")),
    ("jest/runner.js", include_str!("../../images/measure/jest/runner.js")),
    ("python/polysandbox_measure.py", include_str!("../../images/measure/python/polysandbox_measure.py")),
];

static MADE: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The kit's directory for this eval (made once, under the output's work directory).
pub fn prepare(o: &Options) -> Result<PathBuf, String> {
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = o.output.join(".work").join("measure");
    if made.as_ref() == Some(&dir) && dir.join("bin/polysandbox").is_file() {
        return Ok(dir);
    }
    make(&dir, &o.binary)?;
    *made = Some(dir.clone());
    Ok(dir)
}

/// Makes the kit in `dir` (emptied first): a copy of `binary` and the plugins.
pub fn make(dir: &Path, binary: &Path) -> Result<(), String> {
    let err = |e: std::io::Error| {
        format!("{}: {e} (the per-test measurement kit; --per-test off runs without it)", dir.display())
    };
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("bin")).map_err(err)?;
    let bin = dir.join("bin/polysandbox");
    std::fs::copy(binary, &bin).map_err(err)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o555)).map_err(err)?;
    for (rel, text) in FILES {
        let at = dir.join(rel);
        if let Some(p) = at.parent() {
            std::fs::create_dir_all(p).map_err(err)?;
        }
        std::fs::write(&at, text).map_err(err)?;
    }
    Ok(())
}
