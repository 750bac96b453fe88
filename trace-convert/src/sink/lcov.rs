//! The LCOV sink: instruction coverage from every range, written as LCOV
//! line, function and branch coverage with the DWARF line tables of the
//! `--elf` files (see [`crate::formats::coverage`]).

use crate::formats::coverage::{Coverage, LcovOptions};
use crate::sink::{EventCtx, Interest, Output, RunInfo, Sink};
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
    fn name(&self) -> &str {
        "lcov"
    }

    fn interest(&self) -> Interest {
        Interest::EventsOnly
    }

    fn event(&mut self, event: &Event, _ctx: &EventCtx<'_>) -> io::Result<()> {
        self.coverage.add(event);
        Ok(())
    }

    fn events(&mut self, events: &[Event]) -> io::Result<()> {
        for e in events {
            self.coverage.add(e);
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, _info: &RunInfo) -> io::Result<()> {
        let symbols = self.symbols;
        let report =
            self.coverage
                .to_lcov(|a| symbols.line_info(a), symbols.line_rows(), &self.options);
        report.write(&mut self.out)?;
        self.out.complete()
    }
}
