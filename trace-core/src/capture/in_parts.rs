//! [`Parts`] on the calling thread: a decode done on one thread hands each
//! source's events to a part as the decoder emits them, as a worker of a
//! parallel decode does, and the parts' results on at regular cuts. Work
//! that parts do well (coverage) is then done without the events being
//! handed on at all, which takes less time than handing them on (figures
//! in `docs/performance.md`).

use super::consumer::Consumer;
use super::sequential::decode_sequential;
use super::{CaptureError, DecodeSummary, Delivery, Part, Parts, Plan};
use crate::event::Event;
use crate::per_id::PerId;
use std::io::{self, Read};

/// Decode the capture read from `input` on the calling thread, feeding the events of each source
/// to parts made by `parts` when they keep no events (their results handed
/// on about every `cut_bytes` of the capture, and at the end), and handing
/// the deliveries to `each`. Parts that keep events are not made: every
/// event is handed on, and the consumer does the part's work on it (as
/// fast, without a second call per event).
pub(crate) fn decode_sequential_parts<R: Read, T: Consumer + ?Sized>(
    plan: &Plan,
    input: R,
    parts: Option<&dyn Parts>,
    cut_bytes: u64,
    each: &mut T,
) -> Result<DecodeSummary, CaptureError> {
    match parts {
        Some(p) if !p.keep_events() => {
            let mut take = InParts::new(p, cut_bytes, each);
            decode_sequential(plan, input, &mut take)
        }
        _ => decode_sequential(plan, input, each),
    }
}

/// Hands events to parts made by `parts` and the deliveries on to `each`.
struct InParts<'a, T: ?Sized> {
    each: &'a mut T,
    parts: &'a dyn Parts,
    /// Per trace ID: its open part, if any, in order of opening (`None`:
    /// `parts` makes no part for it).
    open: PerId<Option<Box<dyn Part>>>,
    /// Bytes of the capture between cuts.
    cut_bytes: u64,
    /// The open parts are handed on after an event at this offset or
    /// later.
    next_cut: u64,
    /// Offset of the latest event.
    last: u64,
}

impl<'a, T: Consumer + ?Sized> InParts<'a, T> {
    /// Parts made by `parts` (which keep no events), cut every
    /// `cut_bytes`, results and events handed to `each`.
    fn new(parts: &'a dyn Parts, cut_bytes: u64, each: &'a mut T) -> InParts<'a, T> {
        let cut_bytes = cut_bytes.max(1);
        InParts {
            each,
            parts,
            open: PerId::new(),
            cut_bytes,
            next_cut: cut_bytes,
            last: 0,
        }
    }

    /// `e`, whose trace ID has no open part: a new part for it, or `e`
    /// handed on as it is when `parts` makes none for its trace ID.
    #[cold]
    fn first(&mut self, e: &Event) -> io::Result<()> {
        let part = self.parts.part(e.id).map(|mut part| {
            part.event(e);
            part
        });
        let made = part.is_some();
        self.open.insert(e.id, part);
        if made {
            return Ok(());
        }
        self.each.take(Delivery::Event(e))
    }

    /// Hand every open part's result on.
    #[cold]
    fn cut(&mut self) -> io::Result<()> {
        self.next_cut = self.last.saturating_add(self.cut_bytes);
        // In order of opening; those without a part stay, so that no part
        // is asked for again.
        let open = std::mem::take(&mut self.open);
        for (id, part) in open.into_insertion_order() {
            match part {
                Some(part) => self.each.take(Delivery::Part {
                    id,
                    result: part.into_any(),
                    chunk_end: self.last,
                })?,
                None => {
                    self.open.insert(id, None);
                }
            }
        }
        Ok(())
    }
}

impl<T: Consumer + ?Sized> Consumer for InParts<'_, T> {
    const COUNTS: bool = T::COUNTS;

    #[inline(always)]
    fn take(&mut self, d: Delivery<'_>) -> io::Result<()> {
        let Delivery::Event(e) = d else {
            return self.each.take(d);
        };
        match self.open.get_mut(e.id) {
            Some(Some(part)) => part.event(e),
            Some(None) => self.each.take(Delivery::Event(e))?,
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
