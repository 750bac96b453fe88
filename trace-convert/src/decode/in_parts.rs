//! [`Parts`] on the calling thread: a decode done on one thread hands each
//! source's events to a part as the decoder emits them, as a worker of a
//! parallel decode does, and the parts' results on at regular cuts. Work
//! that parts do well (coverage) is then done without the events being
//! handed on at all, which takes less time than handing them on (figures
//! in `docs/performance.md`).

use super::{Delivery, Part, Parts, Take};
use crate::input::source::CaptureSpec;
use crate::packets::ReadError;
use std::io;
use std::sync::Arc;
use trace_core::event::Event;
use trace_core::memory::MemoryImage;

/// Decode `spec` on the calling thread, feeding the events of each source
/// to parts made by `parts` when they keep no events (their results handed
/// on about every `cut_bytes` of the capture, and at the end), and handing
/// the deliveries to `each`. Parts that keep events are not made: every
/// event is handed on, and the consumer does the part's work on it (as
/// fast, without a second call per event).
pub(crate) fn decode_sequential_parts<T: Take>(
    spec: &CaptureSpec,
    memory: impl FnMut(&str) -> Arc<dyn MemoryImage>,
    parts: Option<&dyn Parts>,
    cut_bytes: u64,
    each: &mut T,
) -> Result<super::DecodeSummary, ReadError> {
    match parts {
        Some(p) if !p.keep_events() => {
            let mut take = InParts::new(p, cut_bytes, each);
            super::decode_sequential_into(spec, memory, &mut take)
        }
        _ => super::decode_sequential_into(spec, memory, each),
    }
}

/// Hands events to parts made by `parts` and the deliveries on to `each`.
struct InParts<'a, T> {
    each: &'a mut T,
    parts: &'a dyn Parts,
    /// Per trace ID: its open part, if any.
    open: Box<[Option<Box<dyn Part>>; 256]>,
    /// Trace IDs with an open part, in order of opening.
    ids: Vec<u8>,
    /// Per trace ID: `parts` makes no part for it.
    without: Box<[bool; 256]>,
    /// Bytes of the capture between cuts.
    cut_bytes: u64,
    /// The open parts are handed on after an event at this offset or
    /// later.
    next_cut: u64,
    /// Offset of the latest event.
    last: u64,
}

impl<'a, T: Take> InParts<'a, T> {
    /// Parts made by `parts` (which keep no events), cut every
    /// `cut_bytes`, results and events handed to `each`.
    fn new(parts: &'a dyn Parts, cut_bytes: u64, each: &'a mut T) -> InParts<'a, T> {
        let cut_bytes = cut_bytes.max(1);
        InParts {
            each,
            parts,
            open: Box::new(std::array::from_fn(|_| None)),
            ids: Vec::new(),
            without: Box::new([false; 256]),
            cut_bytes,
            next_cut: cut_bytes,
            last: 0,
        }
    }

    /// `e`, whose trace ID has no open part: a new part for it, or `e`
    /// handed on as it is when `parts` makes none for its trace ID.
    #[cold]
    fn first(&mut self, e: &Event) -> io::Result<()> {
        let id = usize::from(e.id);
        if !self.without[id] {
            if let Some(mut part) = self.parts.part(e.id) {
                part.event(e);
                self.open[id] = Some(part);
                self.ids.push(e.id);
                return Ok(());
            }
            self.without[id] = true;
        }
        self.each.take(Delivery::Event(e))
    }

    /// Hand every open part's result on.
    #[cold]
    fn cut(&mut self) -> io::Result<()> {
        self.next_cut = self.last.saturating_add(self.cut_bytes);
        for id in std::mem::take(&mut self.ids) {
            if let Some(part) = self.open[usize::from(id)].take() {
                self.each.take(Delivery::Part {
                    id,
                    result: part.into_any(),
                    chunk_end: self.last,
                })?;
            }
        }
        Ok(())
    }
}

impl<T: Take> Take for InParts<'_, T> {
    const COUNTS: bool = T::COUNTS;

    #[inline(always)]
    fn take(&mut self, d: Delivery<'_>) -> io::Result<()> {
        let Delivery::Event(e) = d else {
            return self.each.take(d);
        };
        match &mut self.open[usize::from(e.id)] {
            Some(part) => part.event(e),
            None => self.first(e)?,
        }
        self.last = e.offset;
        if e.offset >= self.next_cut {
            self.cut()?;
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        self.cut()?;
        self.each.end()
    }
}
