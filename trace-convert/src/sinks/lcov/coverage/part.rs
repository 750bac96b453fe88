//! Coverage of a part of the events, made apart and merged in order: the
//! work of a parallel decode's worker on its share of a chunk
//! ([`Parts`](trace_core::capture::Parts)).
//!
//! The range table adds up whatever the order, but a range's IT state
//! comes from the range before it when the flow goes on sequentially (see
//! [`Coverage::add`]), and a part does not know the range before its
//! first. So a part holds its ranges back while each goes on from the one
//! before (the first always does, as far as the part knows); the first
//! range that does not, or a break in the flow, settles it, and from then
//! on it counts as [`Coverage`] does. [`Coverage::merge`] replays the
//! ranges held back on the whole, whose state is the real one, then adds
//! the part's table, new ranges in the order the part first saw them: the
//! table ends as one pass leaves it, order included.

use super::{isa_space, Coverage};
use std::sync::Arc;
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

/// The coverage of a run of one trace source's events.
pub struct CoveragePart {
    id: u8,
    coverage: Coverage,
    /// Events held back until the part is settled.
    held: Vec<Event>,
    settled: bool,
    /// Where the last range held back ends (with its ISA and space).
    last_end: Option<u64>,
}

impl std::fmt::Debug for CoveragePart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoveragePart")
            .field("id", &self.id)
            .field("held", &self.held.len())
            .field("settled", &self.settled)
            .finish_non_exhaustive()
    }
}

impl CoveragePart {
    /// An empty part for trace ID `id`'s events, reading code from
    /// `memory` (the whole's).
    #[must_use]
    pub fn new(id: u8, memory: Arc<dyn MemoryImage>) -> CoveragePart {
        CoveragePart {
            id,
            coverage: Coverage::new(memory),
            held: Vec::new(),
            settled: false,
            last_end: None,
        }
    }

    /// Account for the next event of the source.
    #[inline]
    pub fn add(&mut self, event: &Event) {
        if !self.settled {
            match event.kind {
                EventKind::Range(ref r) => {
                    let isa_space = isa_space(r.isa, r.space);
                    let start = u64::from(r.start) | isa_space;
                    if self.last_end.is_none_or(|end| end == start) {
                        self.held.push(*event);
                        self.last_end = Some(u64::from(r.end) | isa_space);
                        return;
                    }
                }
                EventKind::Gap(_)
                | EventKind::AddrNacc { .. }
                | EventKind::TraceOn { .. }
                | EventKind::NoSync => {}
                _ => return,
            }
            self.settled = true;
        }
        self.coverage.add(event);
    }
}

impl Coverage {
    /// The memory image the code is read from.
    #[must_use]
    pub fn memory(&self) -> Arc<dyn MemoryImage> {
        Arc::clone(&self.memory)
    }

    /// Add `part`, made of the events right after those added so far for
    /// its trace ID.
    pub fn merge(&mut self, part: CoveragePart) {
        for e in &part.held {
            self.add(e);
        }
        let CoveragePart {
            id,
            coverage,
            settled,
            ..
        } = part;
        for (c, key) in coverage.ranges.iter().zip(&coverage.keys) {
            let i = match self.index.get(&c.key) {
                Some(&i) => i as usize,
                None => self.insert(c.key, *key, c.it_out),
            };
            if let Some(r) = self.ranges.get_mut(i) {
                r.passed += c.passed;
                r.failed += c.failed;
            }
        }
        if settled {
            self.next[usize::from(id)] = coverage.next[usize::from(id)];
        }
    }
}
