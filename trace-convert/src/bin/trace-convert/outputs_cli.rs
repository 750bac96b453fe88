//! The command line's side of the outputs: the files a run reads (which
//! no output may be), errors as exit codes, the listing's one output.

use super::{exit, fail};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use trace_convert::output::{OutputError, OutputPlan, OutputSet};
use trace_convert::sinks::registry::{Format, FORMATS};

/// The exit code and message of an output error: a usage error when the
/// command line names one file twice, else an output error.
pub fn output_failure(e: &OutputError) -> ExitCode {
    let code = if e.is_misuse() {
        exit::USAGE
    } else {
        exit::OUTPUT
    };
    fail(code, e)
}

/// The plan of a listing's output (`-o FILE`, standard output without
/// it), checked against the inputs named on the command line.
pub fn listing_plan<'p>(
    output: Option<&Path>,
    inputs: impl IntoIterator<Item = &'p Path>,
) -> Result<OutputPlan, ExitCode> {
    let mut plan = OutputPlan::new();
    plan.add("-o", output.unwrap_or(Path::new("-")), false)
        .map_err(|e| output_failure(&e))?;
    plan.check_inputs(inputs).map_err(|e| output_failure(&e))?;
    Ok(plan)
}

/// Create the outputs of `plan`, printing what was found on the way
/// (temporary files left by killed runs).
pub fn create(plan: OutputPlan) -> Result<OutputSet, ExitCode> {
    let set = plan.create().map_err(|e| output_failure(&e))?;
    for n in set.notes() {
        eprintln!("trace-convert: note: {}", trace_convert::escape::guarded(n));
    }
    Ok(set)
}

/// Run `body` with the listing's writer, and commit the output only when
/// `body` succeeds. A reader that closed standard output early (`| head`)
/// is not an error.
pub fn with_output(
    plan: OutputPlan,
    body: impl FnOnce(&mut dyn Write) -> Result<(), ExitCode>,
) -> ExitCode {
    let mut set = match create(plan) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let Some(mut out) = set.writers().pop() else {
        return fail(exit::OUTPUT, "no output");
    };
    if let Err(code) = body(&mut out) {
        return code;
    }
    match out.complete() {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
        Err(e) => return fail(exit::OUTPUT, e),
    }
    match set.commit() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => output_failure(&e),
    }
}

/// The output flags of a conversion, made from the formats' registry
/// ([`FORMATS`]): `--FLAG FILE` for each format, and `--out-dir DIR`.
#[derive(Debug, Default)]
pub struct OutputArgs {
    /// Per format (same index as [`FORMATS`]): the file given.
    files: Vec<Option<PathBuf>>,
    out_dir: Option<PathBuf>,
}

/// The id of `--out-dir`.
const OUT_DIR: &str = "out_dir";

impl OutputArgs {
    /// The file given for `format`.
    pub fn file(&self, format: &Format) -> Option<&Path> {
        let i = FORMATS.iter().position(|f| f == format)?;
        self.files.get(i)?.as_deref()
    }

    /// Write `format` to `path` (in place of any file given for it).
    pub fn set_file(&mut self, format: &Format, path: PathBuf) {
        if let Some(i) = FORMATS.iter().position(|f| f == format) {
            if self.files.len() < FORMATS.len() {
                self.files.resize(FORMATS.len(), None);
            }
            if let Some(slot) = self.files.get_mut(i) {
                *slot = Some(path);
            }
        }
    }

    /// The folder given with `--out-dir`.
    pub fn out_dir(&self) -> Option<&Path> {
        self.out_dir.as_deref()
    }

    /// Whether no output is given at all.
    pub fn is_empty(&self) -> bool {
        self.out_dir.is_none() && self.files.iter().all(Option::is_none)
    }
}

/// The help of `--out-dir`, naming each format's file there.
fn out_dir_help() -> String {
    let names: Vec<String> = FORMATS
        .iter()
        .filter_map(|f| {
            let name = f.in_folder?;
            Some(if f.needs.lines {
                format!("{name} with --elf")
            } else {
                name.to_owned()
            })
        })
        .collect();
    format!(
        "Write every format into DIR ({}), made when the outputs are complete. Example: --out-dir out",
        names.join(", ")
    )
}

impl clap::Args for OutputArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let cmd = FORMATS.iter().fold(cmd, |cmd, f| {
            cmd.arg(
                clap::Arg::new(f.flag)
                    .long(f.flag)
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help_heading("Outputs")
                    .help(f.help),
            )
        });
        cmd.arg(
            clap::Arg::new(OUT_DIR)
                .long("out-dir")
                .value_name("DIR")
                .value_parser(clap::value_parser!(PathBuf))
                .help_heading("Outputs")
                .help(out_dir_help()),
        )
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for OutputArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(OutputArgs {
            files: FORMATS
                .iter()
                .map(|f| matches.get_one::<PathBuf>(f.flag).cloned())
                .collect(),
            out_dir: matches.get_one::<PathBuf>(OUT_DIR).cloned(),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}
