//! The command line's side of the outputs: the files a run reads (which
//! no output may be), errors as exit codes, the listing's one output.

use super::{exit, fail};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use trace_convert::input::Input;
use trace_convert::output::{OutputError, OutputPlan};

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

/// The files that reading `input` opens: its capture files and, for a
/// snapshot, `snapshot.ini`, the other `.ini` files beside it, the
/// device files and the memory dumps.
pub fn input_files(input: &Input) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = input.captures.iter().map(|c| c.path.clone()).collect();
    if let Some(snap) = &input.snapshot {
        v.push(snap.dir.join("snapshot.ini"));
        if let Ok(rd) = std::fs::read_dir(&snap.dir) {
            v.extend(
                rd.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "ini")),
            );
        }
        for d in &snap.devices {
            v.push(d.file.clone());
            v.extend(d.dumps.iter().map(|m| m.path.clone()));
        }
        v.extend(snap.buffers.iter().map(|b| b.path.clone()));
    }
    v
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

/// Run `body` with the listing's writer, and commit the output only when
/// `body` succeeds. A reader that closed standard output early (`| head`)
/// is not an error.
pub fn with_output(
    plan: OutputPlan,
    body: impl FnOnce(&mut dyn Write) -> Result<(), ExitCode>,
) -> ExitCode {
    let mut set = match plan.create() {
        Ok(s) => s,
        Err(e) => return output_failure(&e),
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
