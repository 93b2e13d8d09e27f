//! The command line: a thin layer over the library, one file per subcommand.

/// `println!` for what a subcommand prints on stdout: a reader that went away (`images | head
/// -1`, `grep -q`) ends the process quietly with 141, as SIGPIPE ends podman, instead of the
/// panic `println!` makes of a broken pipe. Controls and bidirectional overrides come out as
/// `?` (names from registries, test names from the code under test: no escape sequence of
/// theirs reaches the terminal).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = crate::eval::result::terminal_safe(&format!($($arg)*));
        let mut o = std::io::stdout().lock();
        if let Err(e) = writeln!(o, "{text}").and_then(|_| o.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(141);
            }
            eprintln!("polysandbox: error: writing to stdout: {e}");
            std::process::exit(125);
        }
    }};
}

mod calibrate;
mod common;
mod completions;
mod each_test;
mod eval;
mod format;
mod hf;
mod host;
mod images;
mod import;
mod inspect;
mod login;
mod man;
mod merge;
mod progress;
mod prune;
mod pull;
mod rmi;
mod run;
mod save;
mod system;
mod tag;
mod test;

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Exit status of a command line that cannot be parsed: 2, with what is wrong and the usage; for
`run`, 125 (as podman's: 2 may be its command's own). Each subcommand's --help has the rest;
`man polysandbox-SUBCOMMAND` too, once the pages are installed (`polysandbox man --help`).
Shell completions: `polysandbox completions bash` (zsh, fish, ...).";

#[derive(Parser)]
#[command(
    name = "polysandbox",
    version,
    about = "Rootless, resource-limited, measured sandboxes for running test suites",
    long_about = None,
    arg_required_else_help = true,
    after_help = AFTER_HELP
)]
struct Cli {
    /// The image store for every subcommand (as $POLYSANDBOX_ROOT; a subcommand's own --root
    /// wins): `polysandbox --root DIR images`.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a command in a fresh sandbox, on a root filesystem or an image.
    Run(Box<run::RunArgs>),
    /// Run a benchmark's tests, one sandbox per instance, and grade them.
    Eval(Box<eval::EvalArgs>),
    /// Merge the output directories of one eval run's shards (--shard I/N) into one.
    Merge(merge::MergeArgs),
    /// Run the gold solution (N times) and the stub of every instance here, and keep what passes.
    Calibrate(calibrate::CalibrateArgs),
    /// Run a project's test suite in a sandbox with one of eval's runners; each test's CPU,
    /// peak memory and wall.
    Test(test::TestArgs),
    /// Pull an image from a registry into the store.
    Pull(pull::PullArgs),
    /// Import an image from a docker-archive, oci-archive, OCI layout or rootfs tarball.
    Import(import::ImportArgs),
    /// List the images in the store.
    Images(images::ImagesArgs),
    /// Show images (by name or ID) as JSON: config, manifest, rootfs, what unpacking changed.
    Inspect(inspect::InspectArgs),
    /// Remove images by name or ID (their rootfs goes with their last name, when unused).
    Rmi(rmi::RmiArgs),
    /// Give a stored image more names.
    Tag(tag::TagArgs),
    /// Write an image to a docker-archive or oci-archive (import reads it back).
    Save(save::SaveArgs),
    /// Check credentials with a registry and keep them in the containers auth file.
    Login(login::LoginArgs),
    /// Remove a registry's credentials from the containers auth file.
    Logout(login::LogoutArgs),
    /// Remove blobs, rootfs, layers and files no image refers to.
    Prune(prune::PruneArgs),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
    /// Print the manual page of polysandbox or of a subcommand, or write them all (-o DIR).
    Man(man::ManArgs),
    /// The store's disk use (`system df [-v]`), and moving images of an older version's layout
    /// into the shared one (`system migrate`).
    System(system::SystemArgs),
    /// Inside a sandbox: run a runner's tests one process each, measured (eval and `test` use it).
    #[command(hide = true)]
    EachTest(each_test::EachTestArgs),
    /// eval's: plant an exercise's control tests (a request on stdin, the answer on stdout), in
    /// a process of its own so that no failure there ends the run.
    #[command(hide = true)]
    PlantControls,
}

/// The exit status of a command line clap refuses (its own, 2), for every subcommand but
/// `run`, whose exit status is its command's own: there a refusal is 125, as podman's is.
pub(crate) const USAGE: i32 = 2;

/// Parses the command line, runs the subcommand, returns the exit status.
pub fn main() -> i32 {
    let started = std::time::Instant::now();
    let args = swebench_spellings(std::env::args_os().collect());
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => return refused(e, &args, started),
    };
    if let Some(root) = &cli.root {
        // Every store lookup, and eval's sandboxes (its children), take the store from here.
        let root = std::path::absolute(root).unwrap_or_else(|_| root.clone());
        std::env::set_var("POLYSANDBOX_ROOT", root);
    }
    // Every sandbox needs a user namespace: a host that forbids them is said on one line,
    // naming the setting and the fix, before any work starts.
    if matches!(cli.command, Command::Run(_) | Command::Eval(_) | Command::Calibrate(_) | Command::Test(_)) {
        if let Err(why) = host::check_user_namespaces() {
            if let Some(path) = stats_json_of(args.iter().cloned()) {
                let err = crate::sandbox::Error::new(crate::sandbox::ErrorKind::Host, why);
                return run::failed(Some(&path), Vec::new(), err, started);
            }
            return error(why);
        }
    }
    let code = match cli.command {
        Command::Run(args) => run::main(*args),
        Command::Eval(args) => eval::main(*args),
        Command::Merge(args) => merge::main(args),
        Command::Calibrate(args) => calibrate::main(args),
        Command::Test(args) => test::main(args),
        Command::Pull(args) => pull::main(args),
        Command::Import(args) => import::main(args),
        Command::Images(args) => images::main(args),
        Command::Inspect(args) => inspect::main(args),
        Command::Rmi(args) => rmi::main(args),
        Command::Tag(args) => tag::main(args),
        Command::Save(args) => save::main(args),
        Command::Login(args) => login::login(args),
        Command::Logout(args) => login::logout(args),
        Command::Prune(args) => prune::main(args),
        Command::Completions(args) => completions::main(args),
        Command::Man(args) => man::main(args),
        Command::System(args) => system::main(args),
        Command::EachTest(args) => each_test::main(args),
        Command::PlantControls => crate::eval::control::plant_controls_main(),
    };
    // No init of ours outlives us unreaped.
    crate::sandbox::reap_all();
    code
}

/// A command line clap did not run: `--help` and `--version` on stdout (exit 0); no
/// subcommand at all, the help on stderr (exit 2); a usage error, one line of clap's message
/// (what is wrong, the missing arguments, its suggestion or the possible values), exit 2 (125
/// for `run`, which still writes the record its `--stats-json` names).
fn refused(e: clap::Error, args: &[OsString], started: std::time::Instant) -> i32 {
    use clap::error::ErrorKind;
    if !e.use_stderr() {
        // --help, --version: asked for, not an error. A closed stdout ends it quietly.
        let _ = e.print();
        return 0;
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return USAGE;
    }
    let text = one_line(&e.to_string());
    // A `run --stats-json FILE` that clap refused still leaves its record, with the message.
    if let Some(path) = stats_json_of(args.iter().cloned()) {
        let err = crate::sandbox::Error::new(crate::sandbox::ErrorKind::Usage, text);
        return run::failed(Some(&path), Vec::new(), err, started);
    }
    eprintln!("polysandbox: error: {text}");
    if is_run(args) {
        crate::sandbox::exit::ERROR
    } else {
        USAGE
    }
}

/// clap's message as one line: what is wrong, then what it adds (the missing arguments, the
/// possible values, its suggestion for a typo), without the usage and the pointer to --help
/// (`--help` has them).
fn one_line(text: &str) -> String {
    let text = text.strip_prefix("error: ").unwrap_or(text);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut out = lines.next().unwrap_or("invalid arguments").to_string();
    for l in lines {
        if l.starts_with("Usage:") || l.starts_with("For more information") {
            break;
        }
        if !out.ends_with(':') {
            out.push(';');
        }
        out.push(' ');
        out.push_str(l);
    }
    out
}

/// Where the subcommand is on the command line: after polysandbox's own options (`--root
/// DIR`, `--root=DIR`).
fn subcommand_at(args: &[OsString]) -> Option<usize> {
    let mut i = 1;
    loop {
        let a = args.get(i)?;
        if a == "--root" {
            i += 2;
        } else if a.to_string_lossy().starts_with("--root=") {
            i += 1;
        } else {
            return Some(i);
        }
    }
}

/// Whether the command line is `polysandbox [--root DIR] run ...`.
fn is_run(args: &[OsString]) -> bool {
    subcommand_at(args).is_some_and(|i| args[i] == "run")
}

/// The SWE-bench harness's `-id RUN_ID` (argparse's two-letter option), which clap would read
/// as `-i d`: written `--run_id` for `eval` and `calibrate`, before the first `--`.
fn swebench_spellings(mut args: Vec<OsString>) -> Vec<OsString> {
    let Some(at) = subcommand_at(&args).filter(|i| args[*i] == "eval" || args[*i] == "calibrate") else {
        return args;
    };
    for a in args.iter_mut().skip(at + 1) {
        if a == "--" {
            break;
        }
        if a == "-id" {
            *a = OsString::from("--run_id");
        } else if let Some(v) = a.to_str().and_then(|s| s.strip_prefix("-id=")) {
            *a = OsString::from(format!("--run_id={v}"));
        }
    }
    args
}

/// The `--stats-json FILE` of a `run` command line clap refused, as far as it can be made out:
/// the options of `run` are read as clap would (knowing which take a value), passing over
/// what clap could not parse, up to the image or command, whose own arguments follow.
fn stats_json_of(args: impl IntoIterator<Item = OsString>) -> Option<PathBuf> {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    cli.build();
    let run = cli.find_subcommand("run")?;
    let takes_value = |long: Option<&str>, short: Option<char>| {
        run.get_arguments().any(|a| {
            ((long.is_some() && a.get_long() == long) || (short.is_some() && a.get_short() == short))
                && a.get_action().takes_values()
        })
    };
    let mut args = args.into_iter().skip(1);
    // polysandbox's own option (--root DIR) may come before the subcommand.
    let mut first = args.next()?;
    while first.to_string_lossy().starts_with("--root") {
        if first == "--root" {
            args.next()?;
        }
        first = args.next()?;
    }
    if first != "run" {
        return None;
    }
    let mut found = None;
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        if arg == "--" || arg == "-" || !arg.starts_with('-') {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(OsString::from(v))),
                None if takes_value(Some(long), None) => (long, args.next()),
                None => (long, None),
            };
            if name == "stats-json" {
                found = value.map(PathBuf::from);
            }
        } else {
            // -x VALUE, -xVALUE, or flags together (-qx VALUE).
            let shorts: Vec<char> = arg[1..].chars().collect();
            if let Some(i) = shorts.iter().position(|c| takes_value(None, Some(*c))) {
                if i + 1 == shorts.len() {
                    args.next();
                }
            }
        }
    }
    found
}

/// Writes what a subcommand made (a script, a page) to stdout, as `out!` does: a reader that
/// went away ends the process quietly with 141. Returns the exit status.
pub(crate) fn write_stdout(bytes: &[u8]) -> i32 {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    match o.write_all(bytes).and_then(|_| o.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 141,
        Err(e) => error(format!("writing to stdout: {e}")),
    }
}

/// Prints one error line, the way every subcommand reports its own failures.
pub(crate) fn error(msg: impl std::fmt::Display) -> i32 {
    // (An error may quote its input: ids of a predictions file, names in an archive.)
    eprintln!("polysandbox: error: {}", crate::eval::result::terminal_safe(&msg.to_string()));
    crate::sandbox::exit::ERROR
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    /// The harness's `-id RUN_ID` is the run id for eval and calibrate (clap alone would read
    /// `-i d`, an instance named "d"), and nothing else's, nor after `--`.
    #[test]
    fn the_harness_run_id_spelling_is_the_run_id() {
        let line = os(&["polysandbox", "eval", "d.jsonl", "-id", "my-run", "-i", "x", "-id=other"]);
        assert_eq!(
            swebench_spellings(line),
            os(&["polysandbox", "eval", "d.jsonl", "--run_id", "my-run", "-i", "x", "--run_id=other"])
        );
        let run = os(&["polysandbox", "run", "img", "-id"]);
        assert_eq!(swebench_spellings(run.clone()), run);
        let after = os(&["polysandbox", "calibrate", "d", "--", "-id"]);
        assert_eq!(swebench_spellings(after.clone()), after);
        // After polysandbox's own --root.
        let rooted = os(&["polysandbox", "--root", "/s", "eval", "d", "-id", "r"]);
        assert_eq!(swebench_spellings(rooted), os(&["polysandbox", "--root", "/s", "eval", "d", "--run_id", "r"]));
        assert!(
            is_run(&os(&["polysandbox", "--root=/s", "run", "x"])) && !is_run(&os(&["polysandbox", "--root", "run"]))
        );
        let Ok(cli) = Cli::try_parse_from(swebench_spellings(os(&["polysandbox", "eval", "d.jsonl", "-id", "r1"])))
        else {
            panic!("refused")
        };
        assert!(matches!(cli.command, Command::Eval(_)));
    }

    fn stats_json(args: &[&str]) -> Option<PathBuf> {
        stats_json_of(args.iter().map(OsString::from))
    }

    /// A `run` command line clap refuses still names its record, before or after the bad part;
    /// an argument of the command is the command's, and other subcommands have none.
    #[test]
    fn a_refused_run_line_still_names_its_record() {
        let want = Some(PathBuf::from("/r.json"));
        for (opt, bad) in [("--memory", "5x"), ("--cpus", "lots"), ("--network", "bridge")] {
            let before = ["polysandbox", "run", opt, bad, "--stats-json", "/r.json", "img", "--", "true"];
            let after = ["polysandbox", "run", "--stats-json=/r.json", opt, bad, "img", "true"];
            for line in [&before[..], &after[..]] {
                assert!(Cli::try_parse_from(line).is_err(), "{line:?}");
                assert_eq!(stats_json(line), want, "{line:?}");
            }
        }
        let shorts = ["polysandbox", "run", "-e", "A=1", "-qv", "/a:/b", "-m", "5x", "--stats-json", "/r.json", "img"];
        assert!(Cli::try_parse_from(shorts).is_err());
        assert_eq!(stats_json(&shorts), want);
        let no_value = ["polysandbox", "run", "--stats-json", "/r.json", "--memory"];
        assert!(Cli::try_parse_from(no_value).is_err());
        assert_eq!(stats_json(&no_value), want);
        let of_the_command = ["polysandbox", "run", "--memory", "5x", "img", "--", "cmd", "--stats-json", "/r.json"];
        assert!(Cli::try_parse_from(of_the_command).is_err());
        assert_eq!(stats_json(&of_the_command), None);
        assert_eq!(stats_json(&["polysandbox", "pull", "--no-such-option", "--stats-json", "/r.json"]), None);
    }
}
