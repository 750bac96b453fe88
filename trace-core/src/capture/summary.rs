//! Counters of a decoded capture: per trace ID, the events, ranges,
//! instructions, gaps and mismatches, and the packet parsers' counters.

use super::mismatches::Mismatches;
use crate::demux::SourceStats;
use crate::event::{Event, EventKind};

/// Counters of one decoded capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodeSummary {
    /// Per trace ID: events, instructions and ranges (empty when the
    /// consumer counts for itself, [`Consumer::COUNTS`](super::Consumer::COUNTS)).
    pub sources: Vec<(u8, SourceCounts)>,
    /// Per configured trace ID: the packet parser's counters (bytes,
    /// packets, bytes skipped, errors).
    pub parsed: Vec<(u8, SourceStats)>,
    /// Bytes read from the capture.
    pub bytes: u64,
}

/// Counters of one trace source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceCounts {
    /// Events emitted.
    pub events: u64,
    /// Instruction ranges.
    pub ranges: u64,
    /// Instructions.
    pub instructions: u64,
    /// Memory-not-accessible events.
    pub nacc: u64,
    /// Gaps (decode errors).
    pub gaps: u64,
    /// Where the trace contradicted its memory image or itself.
    pub mismatches: Mismatches,
}

impl SourceCounts {
    /// Count one event.
    #[inline]
    pub fn count(&mut self, e: &Event) {
        self.events += 1;
        match e.kind {
            EventKind::Range(r) => {
                self.ranges += 1;
                self.instructions += u64::from(r.count);
            }
            EventKind::AddrNacc { .. } => self.nacc += 1,
            EventKind::Gap(_) => {
                self.gaps += 1;
                self.mismatches.count(e);
            }
            EventKind::Inconsistent { .. } => self.mismatches.count(e),
            _ => {}
        }
    }

    /// Add another's counts.
    #[inline]
    pub fn add(&mut self, other: &SourceCounts) {
        self.events += other.events;
        self.ranges += other.ranges;
        self.instructions += other.instructions;
        self.nacc += other.nacc;
        self.gaps += other.gaps;
        self.mismatches.add(&other.mismatches);
    }
}
