//! Conversion work done on the decoding threads: a sink that takes plain
//! events and can work on them a share at a time
//! ([`Sink::parts`](crate::sinks::Sink::parts)) has that done by the
//! workers of a parallel decode (see [`Parts`]), and merges the results
//! in order ([`Sink::merge`](crate::sinks::Sink::merge)). When no call stacks
//! are built, the workers also count the events for the report, and the
//! calling thread is handed none of them.

use super::{Converter, IdReport};
use crate::sinks::Interest;
use std::any::Any;
use std::io;
use std::sync::Arc;
use trace_core::capture::{Delivery, Part, Parts};
use trace_core::event::Event;
use trace_core::memory::MemoryImage;

/// The parts of a conversion: the sink's, with the report's counters
/// when the calling thread is not handed the events.
struct ConvertParts {
    sink: Arc<dyn Parts>,
    /// Per trace ID: its cycles are ignored ([`Converter::ignore_cycles`]).
    no_cycles: Box<[bool; 256]>,
    /// The calling thread is handed the events too (call stacks are
    /// built).
    keep: bool,
}

/// One share's part.
struct ConvertPart {
    sink: Box<dyn Part>,
    /// Counters, and the offset of the last event, when the events are
    /// not handed on.
    report: Option<(IdReport, u64)>,
    /// Its source's cycles are ignored.
    no_cycles: bool,
}

/// What a [`ConvertPart`] gives the calling thread.
struct PartResult {
    sink: Box<dyn Any + Send>,
    report: Option<(IdReport, u64)>,
}

impl Part for ConvertPart {
    #[inline]
    fn event(&mut self, event: &Event) {
        if let Some((r, last)) = self.report.as_mut() {
            if self.no_cycles {
                r.count_ignoring_cycles(event);
            } else {
                r.count(event);
            }
            *last = event.offset;
        }
        self.sink.event(event);
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        Box::new(PartResult {
            sink: self.sink.into_any(),
            report: self.report,
        })
    }
}

impl Parts for ConvertParts {
    fn part(&self, id: u8) -> Option<Box<dyn Part>> {
        Some(Box::new(ConvertPart {
            sink: self.sink.part(id)?,
            report: (!self.keep).then(|| (IdReport::default(), 0)),
            no_cycles: self.no_cycles[usize::from(id)],
        }))
    }

    fn keep_events(&self) -> bool {
        self.keep
    }

    fn reads_timestamps(&self) -> bool {
        self.sink.reads_timestamps()
    }
}

impl Converter<'_> {
    /// The work a parallel decode can do for this conversion on its
    /// worker threads: that of the one sink taking plain events, if there
    /// is exactly one and it offers parts (with two, the events would be
    /// handed to the calling thread for the other anyway).
    #[must_use]
    pub fn parts(&self) -> Option<Arc<dyn Parts>> {
        // A window decides event by event what the sinks see.
        if self.window.is_some() {
            return None;
        }
        let mut plain = self
            .sinks
            .iter()
            .zip(&self.interests)
            .filter(|(_, i)| **i == Interest::EventsOnly);
        let (sink, _) = plain.next()?;
        if plain.next().is_some() {
            return None;
        }
        // The sink's parts see the events as decoded (coverage reads no
        // cycles); the counters made beside them ignore the cycles of the
        // sources that are not cycle-accurate.
        Some(Arc::new(ConvertParts {
            no_cycles: self.no_cycles.clone(),
            sink: sink.decode_parts()?,
            keep: self.report.stacks_built,
        }))
    }

    /// Feed one delivery of a decode with [`parts`](Self::parts) (an
    /// event from a source whose memory image is `memory`).
    ///
    /// # Errors
    ///
    /// A sink's output error, naming the sink, trace ID and offset; a
    /// part result of another kind than [`parts`](Self::parts) makes.
    #[inline(always)]
    pub fn deliver(&mut self, d: Delivery<'_>, memory: Option<&dyn MemoryImage>) -> io::Result<()> {
        self.deliver_from(d, memory)
    }

    /// [`deliver`](Self::deliver), the image looked up only for the events
    /// that need it.
    #[inline(always)]
    pub(crate) fn deliver_from<'m>(
        &mut self,
        d: Delivery<'_>,
        memory: impl super::MemoryOf<'m>,
    ) -> io::Result<()> {
        match d {
            Delivery::Event(e) => self.take(e, memory, true),
            Delivery::Folded(e) => self.take(e, memory, false),
            Delivery::Part { id, result, .. } => self.merge_part(id, result),
        }
    }

    /// Hand a part's result to the sink that made it, after the events
    /// before it.
    fn merge_part(&mut self, id: u8, result: Box<dyn Any + Send>) -> io::Result<()> {
        let result = result
            .downcast::<PartResult>()
            .map_err(|_| io::Error::other("a part result of another conversion"))?;
        if !self.began {
            self.begin()?;
        }
        if let Some((r, last)) = &result.report {
            if r.events > 0 {
                let lane = &mut self.ids[usize::from(id)];
                lane.report.add(r);
                lane.last_offset = *last;
            }
        }
        self.flush()?;
        let sink = self
            .sinks
            .iter_mut()
            .zip(&self.interests)
            .find(|(_, i)| **i == Interest::EventsOnly)
            .map(|(s, _)| s);
        match sink {
            Some(s) => s.merge(id, result.sink),
            None => Ok(()),
        }
    }
}
