//! `--rewrite_reports` (SWE-bench's): a finished run in `--output` graded again from the logs
//! it left, with nothing run, and every report written again. Each instance's format decides
//! what its logs can change (formats::Format::regrade); the rest are kept as graded.

use super::formats;
use super::instance::Instance;
use super::predictions::load_predictions;
use super::scheduler::read_results;
use super::{dataset, report, InstanceResult, Options};
use std::collections::BTreeMap;

/// The run's results, graded again where their logs allow, and notes on what was kept. The
/// results file, report.json, junit.xml and each format's own files are written again.
pub fn rewrite(o: &Options) -> Result<(Vec<InstanceResult>, Vec<String>), String> {
    let started = std::time::Instant::now();
    let all = dataset::load(&o.dataset)?;
    let preds = load_predictions(&o.predictions, &all)?;
    let path = o.output.join("results.jsonl");
    let earlier = read_results(&path)?;
    if earlier.is_empty() {
        return Err(format!(
            "--rewrite_reports: {} holds no results of an earlier run (results.jsonl): nothing to grade again",
            o.output.display()
        ));
    }
    // The last result of each instance, as --resume reads them.
    let mut by_id: BTreeMap<String, InstanceResult> = BTreeMap::new();
    for r in earlier {
        by_id.insert(r.instance_id.clone(), r);
    }
    let insts: BTreeMap<&str, &Instance> = all.iter().map(|i| (i.id.as_str(), i)).collect();
    if let Some(id) = by_id.keys().find(|id| !insts.contains_key(id.as_str())) {
        return Err(format!(
            "--rewrite_reports: {} holds a result for {id}, which the dataset lacks: is it the dataset of that run?",
            path.display()
        ));
    }
    let (mut regraded, mut changed) = (0, Vec::new());
    let mut results = Vec::new();
    for (id, old) in by_id {
        let inst = insts[id.as_str()];
        match formats::of(inst).regrade(o, inst, &preds, &old) {
            Some(new) => {
                regraded += 1;
                if new.verdict != old.verdict {
                    changed.push(format!("{id} {} -> {}", old.verdict, new.verdict));
                }
                results.push(new);
            }
            None => results.push(old),
        }
    }
    let mut notes = vec![format!(
        "graded again from their logs: {regraded} of {} instances; the others kept as graded (no graded log: not SWE-bench's, or a patch that did not apply, a timeout, an OOM, an error)",
        results.len()
    )];
    if !changed.is_empty() {
        notes.push(format!("verdicts changed: {}", changed.join(", ")));
    }
    // The results file is written whole, then put in place.
    let text: String = results.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
    let tmp = path.with_extension("jsonl.tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mine: Vec<Instance> = results.iter().map(|r| insts[r.instance_id.as_str()].clone()).collect();
    let out = report::Outputs::of(o, started.elapsed());
    report::write_all(o, &preds, &mine, &results, &out)?;
    Ok((results, notes))
}
