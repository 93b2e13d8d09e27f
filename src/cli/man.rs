//! `polysandbox man`: manual pages made from the command line's own definitions (clap_mangen):
//! polysandbox(1), and polysandbox-SUBCOMMAND(1) for each subcommand.

use clap::{Args, CommandFactory};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "\
Without -o, one page in roff on stdout: `polysandbox man | man -l -`, `polysandbox man run | man
-l -`. .ci/setup installs them all (as root into /usr/local/share/man/man1, otherwise into
~/.local/share/man/man1): `man polysandbox`, `man polysandbox-eval`.")]
pub struct ManArgs {
    /// The subcommand whose page to print (polysandbox-SUBCOMMAND.1); polysandbox.1 without.
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "out")]
    subcommand: Option<String>,
    /// Write every page into DIR (polysandbox.1, polysandbox-run.1, ...), creating it, and
    /// print their paths.
    #[arg(short, long = "output", value_name = "DIR")]
    out: Option<PathBuf>,
}

/// polysandbox(1)'s DESCRIPTION (`--help` has the one-line about alone).
const DESCRIPTION: &str = "\
Grades code-editing agents the way their benchmarks do (pytest, jest, go test, cargo test, JUnit,
CMake), one fresh, isolated, limited and measured sandbox per instance, with no daemon and no
root. One binary pulls or imports OCI images into a store of its own (run, pull, import, images,
inspect, tag, save, rmi, prune), runs commands in rootless namespace sandboxes with cgroup limits
and seccomp, records what each run used, and grades benchmark predictions (eval, calibrate, test).

The image store is --root DIR, else $POLYSANDBOX_ROOT, else /var/lib/polysandbox for root and
~/.local/share/polysandbox for other users. README.md and docs/ in the source tree have a tour
and the details.";

/// The pages: polysandbox's own, then one per subcommand a user sees (not `help`, nor hidden
/// ones), each as its file name and its command.
pub(crate) fn pages() -> Vec<(String, clap::Command)> {
    let mut cli = super::Cli::command().disable_help_subcommand(true).long_about(DESCRIPTION);
    cli.build();
    let mut pages = Vec::new();
    fn walk(cmd: &clap::Command, pages: &mut Vec<(String, clap::Command)>) {
        let man = clap_mangen::Man::new(cmd.clone());
        pages.push((man.get_filename(), cmd.clone()));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, pages);
        }
    }
    walk(&cli, &mut pages);
    pages
}

fn render(cmd: &clap::Command) -> std::io::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    Ok(page)
}

pub fn main(a: ManArgs) -> i32 {
    let pages = pages();
    let Some(dir) = a.out else {
        let want = match &a.subcommand {
            Some(sub) => format!("polysandbox-{sub}.1"),
            None => "polysandbox.1".to_string(),
        };
        let Some((_, cmd)) = pages.iter().find(|(name, _)| *name == want) else {
            let names: Vec<&str> = pages[1..].iter().map(|(_, c)| c.get_name()).collect();
            eprintln!(
                "polysandbox: error: no subcommand '{}'; the subcommands: {}",
                a.subcommand.unwrap_or_default(),
                names.join(", ")
            );
            return super::USAGE;
        };
        return match render(cmd) {
            Ok(page) => super::write_stdout(&page),
            Err(e) => super::error(format!("rendering {want}: {e}")),
        };
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return super::error(format!("creating {}: {e}", dir.display()));
    }
    for (name, cmd) in &pages {
        let path = dir.join(name);
        // A new file put in place: never through a link at the page's name.
        let written = render(cmd)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|page| crate::sys::beneath::write_new(&path, &page, 0o644));
        if let Err(e) = written {
            return super::error(format!("writing {e}"));
        }
        out!("{}", path.display());
    }
    0
}
