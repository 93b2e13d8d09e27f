//! `polysandbox each-test` (internal, run inside a sandbox by eval and `polysandbox test`): a
//! runner's tests one process each, measured; see measure::each.

use crate::measure::each::{self, Runner};
use crate::units;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct EachTestArgs {
    /// How to list and run the tests.
    #[arg(long, value_enum)]
    runner: Runner,
    /// Where each test's line goes.
    #[arg(long)]
    report: Option<PathBuf>,
    /// libtest's --logfile for each run.
    #[arg(long)]
    logfile: Option<String>,
    /// Per-test wall-clock limit.
    #[arg(long, value_parser = units::parse_duration)]
    timeout: Option<Duration>,
    /// Per-test memory limit (sampled resident memory of the test's process group).
    #[arg(long, value_parser = units::parse_size)]
    memory: Option<u64>,
    /// Per-test CPU time limit (RLIMIT_CPU of the test's process).
    #[arg(long, value_parser = units::parse_duration)]
    cpu_time: Option<Duration>,
    /// End every other process of the sandbox before the first test (kill(-1) from init's
    /// child): what the setup or the build left. Only inside a sandbox: eval and `test` say so.
    #[arg(long)]
    end_others: bool,
    /// Cargo: more `cargo test` arguments; otherwise the test binary, then flags for each run.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

pub fn main(a: EachTestArgs) -> i32 {
    each::main(&each::Options {
        runner: a.runner,
        report: a.report,
        logfile: a.logfile,
        timeout: a.timeout,
        memory: a.memory,
        cpu_time: a.cpu_time,
        end_others: a.end_others,
        args: a.args,
    })
}
