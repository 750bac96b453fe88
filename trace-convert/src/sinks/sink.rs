//! The [`Sink`] trait: a consumer of decoded events, and its optional work
//! on the decoding threads ([`WorkerParts`]).

use super::{EventCtx, Interest, RunInfo};
use std::io;
use trace_core::event::Event;

/// What a sink says after it was handed events: go on, or it needs no
/// more.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flow {
    /// Hand it the next events.
    #[default]
    Continue,
    /// It needs no more events: the converter hands it none from now on
    /// (it is still finished at the end), and stops decoding once every
    /// sink has stopped.
    Stop,
}

/// A consumer of decoded events.
///
/// `begin` is called once before any event, `event` once per event in
/// capture order (per trace ID), `finish` once at the end; a sink that
/// writes a file completes it in `finish`. Errors stop the run.
///
/// A sink whose work on plain events can be split by source and chunk
/// has it done on the decoding threads: it names its [`WorkerParts`] in
/// `Parts`, makes them in [`parts`](Self::parts) and takes their results,
/// typed, in [`merge`](Self::merge). Others say `type Parts = NoParts;`.
pub trait Sink {
    /// The work this sink has done on the decoding threads
    /// ([`NoParts`]: none).
    type Parts: WorkerParts;

    /// A short name for messages (`chrome`, `folded`, ...).
    fn name(&self) -> &str;

    /// Before the first event.
    ///
    /// # Errors
    ///
    /// An output error.
    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        let _ = info;
        Ok(())
    }

    /// Which events [`event`](Self::event) is called for (every event
    /// unless the sink says otherwise).
    fn interest(&self) -> Interest {
        Interest::Every
    }

    /// Whether a window (`--since`, `--function`, ..., see
    /// [`crate::window`]) applies to this sink: yes by default. A sink
    /// that keeps the decode itself rather than a view of it (saved
    /// events) says no, and is handed every event.
    fn windowed(&self) -> bool {
        true
    }

    /// One event with its shared context.
    ///
    /// # Errors
    ///
    /// An output error.
    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow>;

    /// The next events, in order, for a sink whose interest is
    /// [`Interest::EventsOnly`] (instead of [`event`](Self::event)); by
    /// default nothing.
    ///
    /// # Errors
    ///
    /// An output error.
    fn events(&mut self, events: &[Event]) -> io::Result<Flow> {
        let _ = events;
        Ok(Flow::Continue)
    }

    /// For a sink whose interest is [`Interest::EventsOnly`]: its work on
    /// the events that a parallel decode can do on its worker threads, one
    /// source's share of a chunk at a time; the results come back through
    /// [`merge`](Self::merge), in order, in the place of the events they
    /// saw. None by default.
    fn parts(&self) -> Option<Self::Parts> {
        None
    }

    /// The result of one of [`parts`](Self::parts)' parts: what trace ID
    /// `id`'s events after those given so far made.
    ///
    /// # Errors
    ///
    /// An output error.
    fn merge(&mut self, id: u8, part: <Self::Parts as WorkerParts>::Part) -> io::Result<()> {
        let _ = (id, part);
        Ok(())
    }

    /// After the last event: write what remains and complete the output.
    /// Called once.
    ///
    /// # Errors
    ///
    /// An output error.
    fn finish(&mut self, info: &RunInfo) -> io::Result<()>;

    /// After [`finish`](Self::finish): what the user should know about
    /// the output (why it is empty, what it left out), one line each;
    /// nothing by default.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Makes the parts of a sink's work done on the decoding threads: a
/// fresh [`WorkerPart`] for each source's share of a chunk.
pub trait WorkerParts: Send + Sync + 'static {
    /// One share's work, and its result.
    type Part: WorkerPart;

    /// A fresh part for a share of trace ID `id`'s events (`None`: that
    /// source's events are handed to the sink instead).
    fn part(&self, id: u8) -> Option<Self::Part>;

    /// Whether the parts read the values of timestamp events (see
    /// [`trace_core::capture::Parts`]); by default, they do.
    fn reads_timestamps(&self) -> bool {
        true
    }
}

/// One source's share of a chunk, worked on a decoding thread; the part
/// itself is what [`Sink::merge`] is handed.
pub trait WorkerPart: Send + 'static {
    /// The next event of the source, as the decoder emits it.
    fn event(&mut self, event: &Event);
}

/// The [`Sink::Parts`] of a sink that does no work on the decoding
/// threads (there is no value of this type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoParts {}

impl WorkerParts for NoParts {
    type Part = NoParts;

    fn part(&self, _id: u8) -> Option<NoParts> {
        match *self {}
    }
}

impl WorkerPart for NoParts {
    fn event(&mut self, _event: &Event) {
        match *self {}
    }
}
