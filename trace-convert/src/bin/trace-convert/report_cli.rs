//! `trace-convert report`: the per-function report on standard output
//! (or `-o FILE`), made by a conversion with the report as its output.

use super::{exit, fail};
use crate::convert_cli::{self, ConvertArgs};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use trace_convert::sinks::registry;
use trace_convert::sinks::report::{ReportFormat, ReportOptions, SortKey};

/// The arguments of `report`: a conversion's, and the report's own.
#[derive(Debug, Args)]
#[command(mut_arg("path", |a| a.help(
    "A snapshot directory (snapshot.ini) or a capture file; none at all reports on the bundled example"
)))]
pub struct ReportArgs {
    // The report's own options come first, so its help starts with them.
    /// A table of the RTOS tasks (instructions, cycles, share of the run),
    /// then each task's own report (see docs/tasks.md).
    #[arg(help_heading = "Report", long)]
    by_task: bool,
    /// The report's form: aligned text, CSV with a header, or a JSON array
    /// (schema in docs/report.md).
    #[arg(help_heading = "Report", long, value_enum, default_value_t = FormatArg::Text)]
    format: FormatArg,
    /// The order of the rows: self instructions, total instructions or
    /// calls (most first), or name.
    #[arg(help_heading = "Report", long, value_enum, default_value_t = SortArg::SelfCount)]
    sort: SortArg,
    /// Write the report to FILE instead of standard output (`-`: standard
    /// output). The file appears only when the report is complete.
    #[arg(help_heading = "Report", short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    convert: ConvertArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    /// Aligned columns, as `perf report --stdio`.
    Text,
    /// Comma-separated values with a header line.
    Csv,
    /// A JSON array of objects, one per function.
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SortArg {
    /// Self instructions (as the innermost frame), most first.
    #[value(name = "self")]
    SelfCount,
    /// Total instructions (while on the stack), most first.
    Total,
    /// Calls, most first.
    Calls,
    /// Function name.
    Name,
}

/// Run `report`.
pub fn run(mut args: ReportArgs) -> ExitCode {
    let Some(format) = registry::by_flag("report") else {
        return fail(exit::USAGE, "no report format");
    };
    if args.convert.outputs_mut().file(format).is_some() {
        return fail(
            exit::USAGE,
            "report writes the report itself: give -o FILE instead of --report",
        );
    }
    if args.output.is_none() {
        let outputs = args.convert.outputs_mut();
        if let Some(other) = registry::FORMATS
            .iter()
            .find(|f| outputs.file(f).is_some_and(|p| p.as_os_str() == "-"))
        {
            return fail(
                exit::USAGE,
                format!(
                    "the report goes to standard output, and so would --{}: give the report -o FILE, or --{} a file",
                    other.flag, other.flag
                ),
            );
        }
    }
    let path = args.output.take().unwrap_or_else(|| PathBuf::from("-"));
    args.convert.outputs_mut().set_file(format, path);
    args.convert.report = ReportOptions {
        format: Some(match args.format {
            FormatArg::Text => ReportFormat::Text,
            FormatArg::Csv => ReportFormat::Csv,
            FormatArg::Json => ReportFormat::Json,
        }),
        sort: match args.sort {
            SortArg::SelfCount => SortKey::SelfCount,
            SortArg::Total => SortKey::Total,
            SortArg::Calls => SortKey::Calls,
            SortArg::Name => SortKey::Name,
        },
        // Inlined functions have rows as they have frames in every
        // output; `--no-inline` leaves them out of all.
        inline: true,
        by_task: args.by_task,
    };
    convert_cli::run(&args.convert)
}
