//! Files made from the command-line definition itself: shell completions
//! (`clap_complete`) and man pages (`clap_mangen`). A hidden subcommand,
//! run by `cargo xtask assets`.

use crate::{exit, fail, Cli};
use clap::{Args, CommandFactory, Subcommand};
use clap_complete::Shell;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What to make.
#[derive(Debug, Args)]
pub struct AssetsArgs {
    #[command(subcommand)]
    what: Asset,
}

#[derive(Debug, Subcommand)]
enum Asset {
    /// The completion script of SHELL, on standard output.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Man pages (`trace-convert.1` and one per subcommand) into DIR.
    Man {
        /// Where to write them (created if missing).
        dir: PathBuf,
    },
}

/// Make the asset asked for.
pub fn run(args: &AssetsArgs) -> ExitCode {
    let mut cmd = visible(&Cli::command());
    match &args.what {
        Asset::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut cmd, "trace-convert", &mut script);
            if *shell == Shell::Bash {
                script = bash_labels(&script);
            }
            match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(exit::OUTPUT, format!("standard output: {e}")),
            }
        }
        Asset::Man { dir } => match man_pages(&cmd, dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(exit::OUTPUT, format!("{}: {e}", dir.display())),
        },
    }
}

/// The command without its hidden subcommands (the completion generators
/// offer them otherwise).
fn visible(cmd: &clap::Command) -> clap::Command {
    let mut out = cmd.clone();
    let hidden: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| s.is_hide_set())
        .map(|s| s.get_name().to_owned())
        .collect();
    if !hidden.is_empty() {
        out = clap::Command::new(cmd.get_name().to_owned())
            .about(cmd.get_about().cloned().unwrap_or_default())
            .long_about(cmd.get_long_about().cloned().unwrap_or_default())
            .version(cmd.get_version().unwrap_or_default().to_owned())
            .args(cmd.get_arguments().cloned())
            .subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    }
    out
}

/// clap_complete's bash script spells the states of a hyphenated program's
/// subcommands one way where it sets them (`trace__convert__subcmd__x`) and
/// another in the branches that complete them (`trace__subcmd__convert__…`),
/// so nothing after a subcommand completed (clap issue 6421): spell the
/// branches as the states.
fn bash_labels(script: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(script)
        .replace("trace__subcmd__convert", "trace__convert")
        .into_bytes()
}

/// The command's page and one per visible subcommand.
fn man_pages(cmd: &clap::Command, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let cmd = visible(cmd).name("trace-convert");
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    std::fs::write(dir.join("trace-convert.1"), page)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("trace-convert-{}", sub.get_name());
        let mut page = Vec::new();
        clap_mangen::Man::new(sub.clone().name(name.clone())).render(&mut page)?;
        std::fs::write(dir.join(format!("{name}.1")), page)?;
    }
    Ok(())
}
