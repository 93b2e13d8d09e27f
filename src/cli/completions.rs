//! `polysandbox completions SHELL`: the shell's completion script, made from the command line's
//! own definitions (clap_complete), on stdout.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

#[derive(Args, Debug)]
#[command(after_help = "\
Installed for bash by .ci/setup (as root into /usr/local/share/bash-completion/completions,
otherwise into ~/.local/share/bash-completion/completions). By hand:
  polysandbox completions bash > ~/.local/share/bash-completion/completions/polysandbox
  polysandbox completions zsh > ~/.zfunc/_polysandbox     # with fpath+=(~/.zfunc) before compinit
  polysandbox completions fish > ~/.config/fish/completions/polysandbox.fish")]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    shell: Shell,
}

pub fn main(a: CompletionsArgs) -> i32 {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut visible(super::Cli::command()), "polysandbox", &mut script);
    super::write_stdout(&script)
}

/// The command line without its hidden subcommands, which clap_complete would otherwise offer
/// (`polysandbox e<TAB>` would give `each-test` beside `eval`).
fn visible(cmd: clap::Command) -> clap::Command {
    let subs: Vec<clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned().collect();
    cmd.get_arguments()
        .fold(clap::Command::new("polysandbox"), |c, a| c.arg(a.clone()))
        .subcommand_required(true)
        .subcommands(subs)
}
