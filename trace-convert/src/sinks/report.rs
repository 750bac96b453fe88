//! The per-function report (`trace-convert report`, `--report FILE`):
//! the `perf report` view of an exact trace. One row per function
//! (inlined functions too, unless left out), with its calls, the instructions
//! and cycles it ran itself (*self*: as the innermost frame) and with
//! everything it called (*total*: while on the stack, once per
//! recursion), sorted. See [`table`] for the counting and [`write`](mod@write) for
//! the forms (text, CSV, JSON; schema in `docs/report.md`).
//!
//! A function's self count equals the sum of the weights of the folded
//! stacks ending in it ([`super::folded`]), and its total count the sum of
//! those of the folded stacks holding it.

pub mod by_task;
pub mod table;
pub mod write;

#[cfg(test)]
mod tests;

use self::table::ReportTable;
use self::write::Report;
use crate::sinks::{EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink};
use std::io;
use std::path::Path;
use trace_core::event::Event;

/// The forms of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportFormat {
    /// Aligned columns, as `perf report --stdio` prints.
    #[default]
    Text,
    /// Comma-separated values with a header line.
    Csv,
    /// A JSON array of objects, one per function.
    Json,
}

impl ReportFormat {
    /// The form a file name asks for: `.csv` CSV, `.json` JSON, anything
    /// else (and standard output) text.
    #[must_use]
    pub fn for_path(path: &Path) -> ReportFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => ReportFormat::Csv,
            Some(e) if e.eq_ignore_ascii_case("json") => ReportFormat::Json,
            _ => ReportFormat::Text,
        }
    }
}

/// The order of a report's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// Self instructions, most first.
    #[default]
    SelfCount,
    /// Total instructions, most first.
    Total,
    /// Calls, most first.
    Calls,
    /// Function name.
    Name,
}

/// How a report is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// Its form (`None`: from the output's file name, see
    /// [`ReportFormat::for_path`]).
    pub format: Option<ReportFormat>,
    /// The order of its rows.
    pub sort: SortKey,
    /// Inlined functions get rows of their own, as they get frames in the
    /// timelines and folded stacks (the default); otherwise their code
    /// counts for the function it was inlined into.
    pub inline: bool,
    /// A table of the RTOS tasks, then a report per task (see
    /// [`by_task`]).
    pub by_task: bool,
}

impl Default for ReportOptions {
    fn default() -> ReportOptions {
        ReportOptions {
            format: None,
            sort: SortKey::default(),
            inline: true,
            by_task: false,
        }
    }
}

/// The report sink: aggregates per function and writes the table at the
/// end.
#[derive(Debug)]
pub struct ReportSink<W: Output> {
    out: W,
    table: ReportTable,
    format: ReportFormat,
    sort: SortKey,
    by_task: Option<by_task::ByTask>,
}

impl<W: Output> ReportSink<W> {
    /// A sink writing to `out` in `format`.
    pub fn new(out: W, format: ReportFormat, options: &ReportOptions) -> ReportSink<W> {
        ReportSink {
            out,
            table: ReportTable::new(options.inline),
            format,
            sort: options.sort,
            by_task: options
                .by_task
                .then(|| by_task::ByTask::new(options.inline)),
        }
    }
}

impl<W: Output> Sink for ReportSink<W> {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "report"
    }

    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        if let Some(t) = &mut self.by_task {
            t.begin(info);
        }
        Ok(())
    }

    fn interest(&self) -> Interest {
        // Quiet ranges count on the frame they run in, in any number.
        Interest::Weights
    }

    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow> {
        match &mut self.by_task {
            Some(t) => t.event(event, ctx),
            None => self.table.event(event, ctx),
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self, _info: &RunInfo) -> io::Result<()> {
        if let Some(t) = &mut self.by_task {
            t.write(self.format, self.sort, &mut self.out)?;
            return self.out.complete();
        }
        self.table.close_all();
        let report = Report::new(
            self.table.rows(),
            self.sort,
            self.table.instructions(),
            self.table.cycles(),
        );
        report.write(self.format, &mut self.out)?;
        self.out.complete()
    }
}
