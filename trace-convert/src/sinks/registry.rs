//! The output formats of a conversion, listed once ([`FORMATS`]): the
//! command line makes a flag of each (`--chrome FILE`, ...), the files of
//! `--out-dir`, the help and the summary of what was written from this
//! list, and opens each format's sink through it.
//!
//! ```
//! use trace_convert::sinks::registry::{self, FORMATS};
//!
//! let lcov = registry::by_flag("lcov").expect("listed");
//! assert_eq!(lcov.in_folder, Some("coverage.info"));
//! assert!(lcov.needs.lines);
//! assert!(FORMATS.iter().all(|f| !f.help.is_empty()));
//! ```

use super::autofdo::dwarf::ProfileDwarf;
use super::autofdo::AutofdoSink;
use super::chrome::ChromeSink;
use super::events_file::EventsSink;
use super::folded::{FoldedSink, Weight};
use super::itm::ItmTextSink;
use super::lcov::coverage::LcovOptions;
use super::lcov::LcovSink;
use super::perfetto::PerfettoSink;
use super::report::{ReportFormat, ReportOptions, ReportSink};
use super::tasks::TasksSink;
use super::DynSink;
use crate::input::saved::format::Header;
use crate::output::OutputFile;
use crate::symbols::Symbolizer;
use std::io;
use std::sync::Arc;
use trace_core::memory::MemoryImage;

/// What a format needs besides the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// Source lines: the DWARF line tables of `--elf` files (checked to be
    /// readable before the run; left out of `--out-dir` without `--elf`).
    pub lines: bool,
    /// The code of the memory image, to look at each instruction
    /// ([`Setup::code`]).
    pub code: bool,
    /// A capture that is decoded in this run, not saved events
    /// ([`Setup::header`]).
    pub capture: bool,
}

/// What the sinks of a run are made from (each format takes what it
/// needs).
pub struct Setup<'a> {
    /// Function names and source lines.
    pub symbols: &'a Symbolizer,
    /// The memory image of the code, for the formats that need it
    /// ([`Needs::code`]).
    pub code: Option<Arc<dyn MemoryImage>>,
    /// The header of a saved-events file, for a run that decodes a
    /// capture ([`Needs::capture`]).
    pub header: Option<Header>,
    /// Weight of folded stacks.
    pub folded_weight: Weight,
    /// Options of the LCOV output.
    pub lcov: LcovOptions,
    /// Options of the per-function report.
    pub report: ReportOptions,
}

impl std::fmt::Debug for Setup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("code", &self.code.is_some())
            .field("header", &self.header.is_some())
            .field("folded_weight", &self.folded_weight)
            .field("lcov", &self.lcov)
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

/// Opens a format's sink writing to an output file. An error of kind
/// [`io::ErrorKind::InvalidData`] says an input the sink reads (an ELF
/// file's DWARF) is unusable; any other, that the output is.
pub type Open = for<'a> fn(OutputFile, &Setup<'a>) -> io::Result<Box<dyn DynSink + 'a>>;

/// One output format.
#[derive(Clone, Copy)]
pub struct Format {
    /// Its flag, without the dashes (`chrome` for `--chrome FILE`), and
    /// its name in messages.
    pub flag: &'static str,
    /// What it is, in the summary of what was written.
    pub what: &'static str,
    /// The help of its flag.
    pub help: &'static str,
    /// Its file name in `--out-dir` (`None`: not written there).
    pub in_folder: Option<&'static str>,
    /// What it needs besides the events.
    pub needs: Needs,
    /// How to open the result, `FILE` standing for its path.
    pub how_to_open: &'static str,
    /// Open its sink.
    pub open: Open,
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Format")
            .field("flag", &self.flag)
            .field("in_folder", &self.in_folder)
            .field("needs", &self.needs)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.flag == other.flag
    }
}

impl Eq for Format {}

/// Every output format, in the order they are listed (help, summary).
pub const FORMATS: &[Format] = &[
    Format {
        flag: "chrome",
        what: "Chrome trace",
        help: "Write a Chrome trace (JSON; chrome://tracing or https://ui.perfetto.dev); `-` for standard output. Example: --chrome trace.json",
        in_folder: Some("trace.json"),
        needs: Needs {
            lines: false,
            code: false,
            capture: false,
        },
        how_to_open: "open chrome://tracing or https://ui.perfetto.dev and load it",
        open: |out, _| Ok(Box::new(ChromeSink::new(out))),
    },
    Format {
        flag: "perfetto",
        what: "Perfetto trace",
        help: "Write a Perfetto trace (open in https://ui.perfetto.dev); `-` for standard output. Example: --perfetto trace.pftrace",
        in_folder: Some("trace.pftrace"),
        needs: Needs {
            lines: false,
            code: false,
            capture: false,
        },
        how_to_open: "open https://ui.perfetto.dev and load it",
        open: |out, _| Ok(Box::new(PerfettoSink::new(out))),
    },
    Format {
        flag: "lcov",
        what: "LCOV coverage",
        help: "Write LCOV line, function and branch coverage (needs --elf with DWARF; `genhtml app.info -o html`); `-` for standard output. Example: --lcov app.info",
        in_folder: Some("coverage.info"),
        needs: Needs {
            lines: true,
            code: true,
            capture: false,
        },
        how_to_open: "genhtml --branch-coverage FILE -o coverage-html, run where the source paths in FILE lead from; --path-map FROM=TO rewrites them",
        open: open_lcov,
    },
    Format {
        flag: "folded",
        what: "folded stacks",
        help: "Write folded stacks for flame graphs (`inferno-flamegraph app.folded > app.svg`, or speedscope); `-` for standard output. Example: --folded app.folded",
        in_folder: Some("stacks.folded"),
        needs: Needs {
            lines: false,
            code: false,
            capture: false,
        },
        how_to_open: "inferno-flamegraph FILE > flame.svg, or load it in speedscope",
        open: |out, setup| Ok(Box::new(FoldedSink::new(out, setup.folded_weight))),
    },
    Format {
        flag: "report",
        what: "report",
        help: "Write the per-function report (calls, self and total instructions and cycles; text, or CSV/JSON by the extension .csv/.json; `trace-convert report` shows it); `-` for standard output. Example: --report report.txt",
        in_folder: Some("report.txt"),
        needs: Needs {
            lines: false,
            code: false,
            capture: false,
        },
        how_to_open: "less FILE",
        open: |out, setup| {
            let format = setup
                .report
                .format
                .unwrap_or_else(|| ReportFormat::for_path(out.path()));
            Ok(Box::new(ReportSink::new(out, format, &setup.report)))
        },
    },
    Format {
        flag: "autofdo",
        what: "AutoFDO profile",
        help: "Write an LLVM sample profile (text) for `clang -fprofile-sample-use=FILE` (needs --elf with DWARF); `-` for standard output. Example: --autofdo app.afdo",
        in_folder: Some("profile.afdo"),
        needs: Needs {
            lines: true,
            code: true,
            capture: false,
        },
        how_to_open: "clang -O2 -g -fprofile-sample-use=FILE ..., or llvm-profdata show --sample FILE",
        open: open_autofdo,
    },
    Format {
        flag: "tasks",
        what: "task switches",
        help: "Write the RTOS tasks found and every task switch as JSON lines (docs/tasks.md, docs/jsonl.md); `-` for standard output. Example: --tasks switches.jsonl",
        in_folder: None,
        needs: Needs {
            lines: false,
            code: false,
            capture: false,
        },
        how_to_open: "jq . FILE",
        open: |out, _| Ok(Box::new(TasksSink::new(out))),
    },
    Format {
        flag: "itm-text",
        what: "ITM stimulus text",
        help: "Write the text software wrote to ITM stimulus ports, as a console (lines prefixed by port when several are used; ITM sources: --protocol itm or --itm-trace-id); `-` for standard output. Example: --itm-text console.txt",
        in_folder: None,
        needs: Needs {
            lines: false,
            code: false,
            capture: false,
        },
        how_to_open: "less FILE",
        open: |out, _| Ok(Box::new(ItmTextSink::new(out))),
    },
    Format {
        flag: "save-events",
        what: "saved events",
        help: "Save the decoded events, to convert later with --from-events without decoding again. Example: --save-events run.events",
        in_folder: None,
        needs: Needs {
            lines: false,
            code: false,
            capture: true,
        },
        how_to_open: "trace-convert --from-events FILE --chrome ...",
        open: open_events,
    },
];

/// The format whose flag is `flag` (without the dashes).
#[must_use]
pub fn by_flag(flag: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.flag == flag)
}

fn open_lcov<'a>(out: OutputFile, setup: &Setup<'a>) -> io::Result<Box<dyn DynSink + 'a>> {
    let Some(code) = &setup.code else {
        return Err(io::Error::other("no memory image for --lcov"));
    };
    Ok(Box::new(LcovSink::new(
        out,
        Arc::clone(code),
        setup.symbols,
        setup.lcov.clone(),
    )))
}

fn open_autofdo<'a>(out: OutputFile, setup: &Setup<'a>) -> io::Result<Box<dyn DynSink + 'a>> {
    let Some(code) = &setup.code else {
        return Err(io::Error::other("no memory image for --autofdo"));
    };
    let dwarf = ProfileDwarf::of(setup.symbols)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(Box::new(AutofdoSink::new(out, Arc::clone(code), dwarf)))
}

fn open_events<'a>(out: OutputFile, setup: &Setup<'a>) -> io::Result<Box<dyn DynSink + 'a>> {
    let Some(header) = &setup.header else {
        return Err(io::Error::other(
            "--save-events needs a capture to decode, not --from-events",
        ));
    };
    let path = out.path().to_path_buf();
    let sink = EventsSink::new(out, header)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(Box::new(sink))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_folder_names_are_unique() {
        for (i, f) in FORMATS.iter().enumerate() {
            for g in &FORMATS[i + 1..] {
                assert_ne!(f.flag, g.flag);
                if f.in_folder.is_some() {
                    assert_ne!(f.in_folder, g.in_folder, "{} and {}", f.flag, g.flag);
                }
            }
            assert!(
                !f.flag.starts_with('-') && !f.flag.contains(' '),
                "{}",
                f.flag
            );
            assert!(f.help.contains("Example: --"), "{} help", f.flag);
        }
    }

    #[test]
    fn sinks_are_named_for_their_flag() {
        // The sink's messages name the format as the command line does.
        let symbols = Symbolizer::empty();
        let setup = Setup {
            symbols: &symbols,
            code: Some(Arc::new(trace_core::memory::MemoryMap::new())),
            header: Some(Header {
                input: String::new(),
                images: Vec::new(),
                sources: Vec::new(),
            }),
            folded_weight: Weight::Instructions,
            lcov: LcovOptions::default(),
            report: ReportOptions::default(),
        };
        let dir = tempfile::tempdir().expect("dir");
        for f in FORMATS {
            let mut plan = crate::output::OutputPlan::new();
            plan.add(f.flag, &dir.path().join(f.flag), false)
                .expect("plan");
            let mut set = plan.create().expect("create");
            let out = set.writers().pop().expect("writer");
            let sink = (f.open)(out, &setup).expect("open");
            assert_eq!(sink.name(), f.flag);
        }
    }
}
