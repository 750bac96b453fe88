//! The saved-events sink (`--save-events`): every decoded event, in
//! order, into a file that `--from-events` converts later without
//! decoding again (format in [`crate::input::saved::format`]).

pub use crate::input::saved::format;

use self::format::{EventWriter, Header};
use crate::sinks::{EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink};
use std::io;
use trace_core::event::Event;

/// Writes the events file.
pub struct EventsSink<W: Output> {
    writer: Option<EventWriter<W>>,
}

impl<W: Output> std::fmt::Debug for EventsSink<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventsSink").finish_non_exhaustive()
    }
}

impl<W: Output> EventsSink<W> {
    /// Start the file with `header`.
    ///
    /// # Errors
    ///
    /// The error of writing the header.
    pub fn new(out: W, header: &Header) -> io::Result<EventsSink<W>> {
        Ok(EventsSink {
            writer: Some(EventWriter::new(out, header)?),
        })
    }
}

impl<W: Output> Sink for EventsSink<W> {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "save-events"
    }

    fn event(&mut self, event: &Event, _ctx: &EventCtx<'_>) -> io::Result<Flow> {
        match &mut self.writer {
            Some(w) => w.write(event)?,
            None => return Err(io::Error::other("events file already finished")),
        }
        Ok(Flow::Continue)
    }

    /// The events as decoded (not split for the call stacks).
    /// The saved events are the decode itself: every event, so that a
    /// later `--from-events` run (with or without a window) converts
    /// them as the capture.
    fn windowed(&self) -> bool {
        false
    }

    fn interest(&self) -> Interest {
        Interest::EventsOnly
    }

    fn events(&mut self, events: &[Event]) -> io::Result<Flow> {
        events.iter().try_for_each(|e| match &mut self.writer {
            Some(w) => w.write(e),
            None => Err(io::Error::other("events file already finished")),
        })?;
        Ok(Flow::Continue)
    }

    fn finish(&mut self, _info: &RunInfo) -> io::Result<()> {
        match self.writer.take() {
            Some(w) => w.finish()?.complete(),
            None => Ok(()),
        }
    }
}
