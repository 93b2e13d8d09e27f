//! A real Slurm (Debian's slurm-wlm, one node, started by `.ci/slurm-up`): the README's
//! SWE-bench job array, taken from the README itself, sharding the shared records over array
//! tasks and merged by the README's dependent `polysandbox merge` job; and a job array
//! submitted by the unprivileged user, as on an HPC node with no root and no Docker, merged by
//! a dependent job of the user's into the verdicts of an unsharded run.
mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn slurm_ready(test: &str) -> bool {
    let idle = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| ["idle", "mixed"].contains(&l.trim())))
        .unwrap_or(false);
    if !idle {
        skip(test, "no idle Slurm node here: bash .ci/slurm-up (as root) starts one");
    }
    idle
}

/// The README's code block that starts with `first_line`.
fn readme_block(first_line: &str) -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find(first_line).unwrap_or_else(|| panic!("README has no block starting {first_line:?}"));
    let end = readme[start..].find("```").unwrap();
    readme[start..start + end].to_string()
}

/// sbatch as the mode's user, in `dir` (the job id); the jobs' output files are returned on
/// failure.
fn sbatch(m: Mode, dir: &Path, args: &[&str]) -> String {
    let mut c = match m {
        Mode::Root => Command::new("sbatch"),
        Mode::User => {
            let mut c = Command::new("runuser");
            c.args(["-u", TEST_USER, "--", "sbatch"]);
            c
        }
    };
    let o = c.current_dir(dir).args(["--parsable", "-o", "slurm-%A_%a.out"]).args(args).output().unwrap();
    assert!(o.status.success(), "sbatch: {}\n{}\njob output:\n{}", stdout(&o), stderr(&o), job_logs(dir));
    stdout(&o).trim().to_string()
}

/// Every job's output file in `dir`.
fn job_logs(dir: &Path) -> String {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("slurm-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect()
}

fn results(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The README's job script, as written there, over the shared SWE-bench records (gold as a
/// predictions file), two array tasks; then the README's dependent merge job.
#[test]
fn the_readmes_swebench_job_array_shards_and_merges() {
    let test = "the_readmes_swebench_job_array_shards_and_merges";
    if !slurm_ready(test) {
        return;
    }
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench/instances.jsonl");
    if !is_root() || !shared.exists() {
        return skip(test, "needs root's store of SWE-bench replicas and ../shared/swebench");
    }
    let images = stdout(&Mode::Root.command().arg("images").output().unwrap());
    if !images.contains("sweb.eval.x86_64.pallets_1776_flask-4992") {
        return skip(test, "no SWE-bench replica images in root's store: bash .ci/setup");
    }
    let dir = Mode::Root.owned_dir("slurm-swebench");
    let records: Vec<Value> =
        std::fs::read_to_string(&shared).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let preds: String = records.iter().map(|r| serde_json::json!({"instance_id": r["instance_id"], "model_name_or_path": "gold-as-predictions", "model_patch": r["patch"]}).to_string() + "\n").collect();
    std::fs::write(dir.join("preds.jsonl"), preds).unwrap();
    std::fs::create_dir_all(dir.join("SWE-bench_Verified")).unwrap();
    std::fs::copy(&shared, dir.join("SWE-bench_Verified/test.parquet")).unwrap();
    // The README's script, with polysandbox where it is here (the dataset file name is kept:
    // eval reads JSONL whatever the name).
    let bin = fixtures().bin.display().to_string();
    let script =
        readme_block("#!/bin/bash\n#SBATCH --job-name=swebench").replace("polysandbox eval", &format!("{bin} eval"));
    std::fs::write(dir.join("eval.sbatch"), script).unwrap();
    // The README's submission, run as written but for the sizes of this two-CPU node, the jobs'
    // output files, and --wait on the merge job (which returns when it ended, or was cancelled
    // for a failed shard).
    let submit = readme_block("array=$(sbatch")
        .replace(
            "sbatch --parsable eval.sbatch",
            "sbatch --parsable --array=1-2 --cpus-per-task=1 --mem=4G -o slurm-%A_%a.out eval.sbatch",
        )
        .replace("sbatch --dependency", "sbatch --wait --cpus-per-task=1 --mem=1G -o slurm-merge-%j.out --dependency")
        .replace("polysandbox merge", &format!("{bin} merge"));
    let o = Command::new("bash").arg("-c").arg(&submit).current_dir(&dir).output().unwrap();
    assert!(o.status.success(), "{}\n{}\njob output:\n{}", stdout(&o), stderr(&o), job_logs(&dir));
    let merged = dir.join("out/merged");
    let all = results(&merged.join("results.jsonl"));
    let mut ids: Vec<&str> = all.iter().map(|r| r["instance_id"].as_str().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 7, "every record once: {ids:?}");
    // Gold's verdicts, as an unsharded run grades them (tests/swebench.rs): every one resolved.
    for r in &all {
        assert_eq!(r["verdict"], "resolved", "{r}");
    }
    let report: Value = serde_json::from_str(&std::fs::read_to_string(merged.join("report.json")).unwrap()).unwrap();
    assert_eq!((&report["resolved"], &report["total"]), (&7.into(), &7.into()), "{report}");
    // The harness's run report, made from the merged results, and its logs, from both shards.
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("gold-as-predictions.verified.json")).unwrap())
            .unwrap();
    assert_eq!((&run["resolved_instances"], &run["total_instances"]), (&7.into(), &7.into()), "{run}");
    let logs = merged.join("logs/run_evaluation/verified/gold-as-predictions");
    assert_eq!(std::fs::read_dir(&logs).unwrap().count(), 7, "{}", logs.display());
    for shard in 1..=2 {
        assert!(dir.join(format!("out/shard-{shard}/logs/run_evaluation/verified/gold-as-predictions")).is_dir());
    }
}

/// An array submitted by the unprivileged user: each task a rootless eval of its shard, in the
/// user's own store, no root and no cgroup delegated.
#[test]
fn an_unprivileged_job_array_runs_rootless_shards() {
    let test = "an_unprivileged_job_array_runs_rootless_shards";
    if !slurm_ready(test) {
        return;
    }
    if !is_root() {
        return skip(test, "submits as the test user (runuser): run as root");
    }
    let m = Mode::User;
    let dir = m.owned_dir("slurm-user");
    let data: PathBuf = dir.join("polyglot");
    assert!(Command::new("cp")
        .arg("-a")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval/polyglot"))
        .arg(&data)
        .status()
        .unwrap()
        .success());
    Command::new("chown").args(["-R", TEST_USER]).arg(&data).status().unwrap();
    let script = format!(
        "#!/bin/bash\nexec {} eval {} -p gold -j 1 --filter-category python go --root /var/tmp/polysandbox-psbtest --shard \"$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT\" -o \"out/shard-$SLURM_ARRAY_TASK_ID\"\n",
        fixtures().bin.display(),
        data.display()
    );
    let path = dir.join("user.sbatch");
    std::fs::write(&path, script).unwrap();
    Command::new("chown").arg(TEST_USER).arg(&path).status().unwrap();
    // The same run unsharded, as the user, beside the array (its verdicts are compared below).
    let unsharded = m
        .command()
        .current_dir(&dir)
        .arg("eval")
        .arg(&data)
        .args(["-p", "gold", "-j", "1", "--filter-category", "python", "go", "--root", "/var/tmp/polysandbox-psbtest"])
        .args(["-o", "out/unsharded"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The array, then the user's merge job waiting on it (--wait: until it ended, or was
    // cancelled for a failed shard).
    let array = sbatch(m, &dir, &["--array=1-2", "--cpus-per-task=1", "--mem=4G", "user.sbatch"]);
    let merge = format!("{} merge out/merged out/shard-1 out/shard-2", fixtures().bin.display());
    sbatch(
        m,
        &dir,
        &[
            "--wait",
            "--cpus-per-task=1",
            "--mem=1G",
            &format!("--dependency=afterok:{array}"),
            "--kill-on-invalid-dep=yes",
            "--wrap",
            &merge,
        ],
    );
    let o = unsharded.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "the unsharded run: {}", stderr(&o));
    let mut all = Vec::new();
    for shard in 1..=2 {
        let r = results(&dir.join(format!("out/shard-{shard}/results.jsonl")));
        assert!(!r.is_empty(), "shard {shard} ran nothing");
        all.extend(r);
    }
    let mut ids: Vec<String> = all.iter().map(|r| r["instance_id"].as_str().unwrap().to_string()).collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "an instance ran in two shards");
    let expected = std::fs::read_dir(data.join("python/exercises/practice")).unwrap().count()
        + std::fs::read_dir(data.join("go/exercises/practice")).unwrap().count();
    assert_eq!(n, expected, "every python and go exercise in exactly one shard");
    // The merged verdicts are an unsharded run's (the same eval, run here as the user).
    let verdicts = |p: &Path| -> std::collections::BTreeMap<String, String> {
        results(p)
            .iter()
            .map(|r| (r["instance_id"].as_str().unwrap().into(), r["verdict"].as_str().unwrap().into()))
            .collect()
    };
    let merged = verdicts(&dir.join("out/merged/results.jsonl"));
    assert_eq!(merged.len(), expected, "{merged:?}");
    assert_eq!(merged, verdicts(&dir.join("out/unsharded/results.jsonl")));
    for (id, v) in &merged {
        assert_eq!(v, "resolved", "{id}");
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/merged/report.json")).unwrap()).unwrap();
    assert_eq!(report["resolved"], expected, "{report}");
}
