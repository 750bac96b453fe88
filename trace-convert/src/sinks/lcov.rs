//! The LCOV sink: instruction coverage from every range, written as LCOV
//! line, function and branch coverage with the DWARF line tables of the
//! `--elf` files (see [`crate::sinks::lcov::coverage`]).

pub mod coverage;
pub mod tracefile;

use self::coverage::{Coverage, CoveragePart, LcovOptions, LineInfo};
use crate::sinks::{EventCtx, Flow, Interest, Output, RunInfo, Sink, WorkerPart, WorkerParts};
use crate::symbols::Symbolizer;
use std::io;
use std::sync::Arc;
use trace_core::event::{Event, Isa};
use trace_core::memory::{MemoryImage, Space};

/// Accumulates coverage and writes LCOV at the end.
pub struct LcovSink<'a, W: Output> {
    out: W,
    coverage: Coverage,
    symbols: &'a Symbolizer,
    options: LcovOptions,
}

impl<W: Output> std::fmt::Debug for LcovSink<'_, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LcovSink")
            .field("coverage", &self.coverage)
            .finish_non_exhaustive()
    }
}

impl<'a, W: Output> LcovSink<'a, W> {
    /// A sink reading code from `memory` (the image the events are decoded
    /// with) and lines from `symbols`; every function symbol's code is
    /// known, so functions never reached are reported with 0.
    pub fn new(
        out: W,
        memory: Arc<dyn MemoryImage>,
        symbols: &'a Symbolizer,
        options: LcovOptions,
    ) -> LcovSink<'a, W> {
        let mut coverage = Coverage::new(memory);
        for f in symbols.functions() {
            let isa = if f.thumb { Isa::T32 } else { Isa::A32 };
            coverage.add_code(Space::Any, f.start, f.end, isa);
        }
        LcovSink {
            out,
            coverage,
            symbols,
            options,
        }
    }
}

impl<W: Output> Sink for LcovSink<'_, W> {
    type Parts = CoverageParts;

    fn name(&self) -> &str {
        "lcov"
    }

    fn interest(&self) -> Interest {
        Interest::EventsOnly
    }

    fn event(&mut self, event: &Event, _ctx: &EventCtx<'_>) -> io::Result<Flow> {
        self.coverage.add(event);
        Ok(Flow::Continue)
    }

    fn events(&mut self, events: &[Event]) -> io::Result<Flow> {
        for e in events {
            self.coverage.add(e);
        }
        Ok(Flow::Continue)
    }

    fn parts(&self) -> Option<CoverageParts> {
        Some(CoverageParts(self.coverage.memory()))
    }

    fn merge(&mut self, _id: u8, part: CoveragePart) -> io::Result<()> {
        self.coverage.merge(part);
        Ok(())
    }

    fn finish(&mut self, _info: &RunInfo) -> io::Result<()> {
        let symbols = self.symbols;
        let report = self.coverage.to_lcov_inlined(
            |a| line_info(symbols, a),
            symbols.line_rows(),
            &symbols.inlined_copies(),
            &self.options,
        );
        report.write(&mut self.out)?;
        self.out.complete()
    }
}

/// Coverage counted on the decoding threads, a share at a time (see
/// [`CoveragePart`]).
pub struct CoverageParts(Arc<dyn MemoryImage>);

impl std::fmt::Debug for CoverageParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoverageParts").finish_non_exhaustive()
    }
}

impl WorkerParts for CoverageParts {
    type Part = CoveragePart;

    fn part(&self, id: u8) -> Option<CoveragePart> {
        Some(CoveragePart::new(id, Arc::clone(&self.0)))
    }

    fn reads_timestamps(&self) -> bool {
        false
    }
}

impl WorkerPart for CoveragePart {
    #[inline]
    fn event(&mut self, event: &Event) {
        self.add(event);
    }
}

/// The source line of `addr` with its function (symbol name, entry
/// address and the line of the entry), as the coverage writer takes it.
fn line_info(symbols: &Symbolizer, addr: u32) -> Option<LineInfo> {
    let l = symbols.line(addr)?;
    // A function belongs to the file its entry lies in as seen from the
    // function itself (the outermost frame, not code inlined into it from
    // a header); it is listed there only.
    let function = symbols.function(addr).and_then(|f| {
        let home = symbols
            .inline_frames(f.start)
            .last()
            .and_then(|fr| fr.location.clone())
            .or_else(|| symbols.line(f.start))?;
        (*home.file == *l.file).then(|| (f.name.clone(), f.start, home.line))
    });
    Some(LineInfo {
        file: l.file.to_string(),
        line: l.line,
        function,
    })
}
