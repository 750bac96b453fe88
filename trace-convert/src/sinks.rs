//! Converters as sinks of one decode pass.
//!
//! The [`convert`](crate::convert) driver decodes once and hands every
//! event to each [`Sink`] in turn, in capture order per trace ID, together
//! with an [`EventCtx`] computed once per event and shared by all sinks:
//!
//! - the **thread** the event belongs to (trace ID, i.e. the core, and
//!   the context ID, i.e. the process, when traced);
//! - the **time** before and after the event on the run's clock (cycles,
//!   timestamps or instructions, see [`crate::clock`]) and the cycles the
//!   event carried;
//! - the **call-stack changes** of that thread caused by the event: frames
//!   closed (innermost first) and then frames opened (outermost first),
//!   and the stack as it stands afterwards (see [`crate::callstack`]);
//! - the function names of frames, the [`Symbolizer`] for lines, and the
//!   memory image of the source for a per-instruction view.
//!
//! Stack changes are applied *before* the event they belong to: for a
//! range, `closed`/`opened` describe the call or return that led to its
//! first instruction, and `stack` is where its instructions ran. At the
//! end of each thread an [`EventKind::EndOfTrace`] event closes every open
//! frame, so a sink sees each opened frame closed exactly once.
//!
//! [`EventKind::EndOfTrace`]: trace_core::event::EventKind::EndOfTrace

pub mod chrome;
pub mod events_file;
pub mod folded;
pub mod lcov;
pub mod listing;
pub mod perfetto;

pub use crate::callstack::ThreadKey;

use crate::callstack::{Frame, Names};
use crate::clock::ClockInfo;
use crate::decode::Parts;
use crate::symbols::Symbolizer;
use std::any::Any;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

/// What a sink learns about an event beyond the event itself.
pub struct EventCtx<'a> {
    /// The thread the event belongs to (after a context change, the new
    /// one).
    pub thread: ThreadKey,
    /// Clock ticks when the event began.
    pub time: u64,
    /// Clock ticks after it (a range's end; equal to `time` for instants).
    pub end: u64,
    /// Cycles the event carried (cycle-accurate trace), 0 otherwise.
    pub cycles: u64,
    /// Frames closed before the event, innermost first.
    pub closed: &'a [Frame],
    /// Frames opened before the event, outermost first.
    pub opened: &'a [Frame],
    /// The stack after the changes, outermost first.
    pub stack: &'a [Frame],
    /// Function names of frames.
    pub names: &'a Names,
    /// Symbols, for source lines.
    pub symbols: &'a Symbolizer,
    /// The memory image of the event's source, when decoding from a
    /// capture.
    pub memory: Option<&'a dyn MemoryImage>,
    /// The clock the times are on.
    pub clock: &'a ClockInfo,
}

impl std::fmt::Debug for EventCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventCtx")
            .field("thread", &self.thread)
            .field("time", &self.time)
            .field("end", &self.end)
            .field("closed", &self.closed)
            .field("opened", &self.opened)
            .field("depth", &self.stack.len())
            .finish_non_exhaustive()
    }
}

impl EventCtx<'_> {
    /// The name of a frame's function.
    #[must_use]
    pub fn name(&self, frame: &Frame) -> &str {
        self.names.get(frame.func)
    }
}

/// What every sink is told before the first event and at the end.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The input (snapshot directory, capture or events file).
    pub input: String,
    /// The clock chosen for the run.
    pub clock: ClockInfo,
    /// Trace IDs and names of the sources.
    pub sources: Vec<(u8, String)>,
}

/// Which events a sink is given ([`Sink::interest`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interest {
    /// Every event.
    #[default]
    Every,
    /// Only events that open or close frames, and exceptions, gaps,
    /// trace-on and memory-not-accessible events: what a timeline draws.
    /// Most events (ranges inside one function) are then never handed
    /// over.
    StackChanges,
    /// Every event as fed to the converter, without a context, in batches
    /// ([`Sink::events`]): for sinks that need nothing but the events
    /// (coverage). They are not given the end-of-trace events the
    /// converter makes for each thread still open at the end.
    EventsOnly,
}

impl Interest {
    /// Whether a sink with this interest is given `event` with its context
    /// ([`Sink::event`]), when it opened or closed frames (`changed`).
    #[must_use]
    #[inline]
    pub fn wants(self, event: &Event, changed: bool) -> bool {
        match self {
            Interest::Every => true,
            Interest::StackChanges => changed || is_instant(event),
            Interest::EventsOnly => false,
        }
    }
}

/// Exceptions, gaps, trace-on and memory-not-accessible events: the
/// instants a timeline marks.
#[must_use]
#[inline]
pub fn is_instant(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::Exception { .. }
            | EventKind::Gap(_)
            | EventKind::TraceOn { .. }
            | EventKind::AddrNacc { .. }
    )
}

/// A consumer of decoded events.
///
/// `begin` is called once before any event, `event` once per event in
/// capture order (per trace ID), `finish` once at the end; a sink that
/// writes a file completes it in `finish`. Errors stop the run.
pub trait Sink {
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

    /// One event with its shared context.
    ///
    /// # Errors
    ///
    /// An output error.
    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<()>;

    /// The next events, in order, for a sink whose interest is
    /// [`Interest::EventsOnly`] (instead of [`event`](Self::event)); by
    /// default nothing.
    ///
    /// # Errors
    ///
    /// An output error.
    fn events(&mut self, events: &[Event]) -> io::Result<()> {
        let _ = events;
        Ok(())
    }

    /// For a sink whose interest is [`Interest::EventsOnly`]: work on its
    /// events that a parallel decode can do on its worker threads, one
    /// source's share of a chunk at a time (see [`Parts`]); the results
    /// come back through [`part`](Self::part), in order, in the place of
    /// the events they saw. None by default.
    fn parts(&self) -> Option<Arc<dyn Parts>> {
        None
    }

    /// The result of one of [`parts`](Self::parts)' parts: what trace ID
    /// `id`'s events after those given so far made.
    ///
    /// # Errors
    ///
    /// An output error, or a result the sink's parts did not make.
    fn part(&mut self, id: u8, result: Box<dyn Any + Send>) -> io::Result<()> {
        let _ = (id, result);
        Ok(())
    }

    /// After the last event: write what remains and complete the output.
    ///
    /// # Errors
    ///
    /// An output error.
    fn finish(self: Box<Self>, info: &RunInfo) -> io::Result<()>;
}

/// Where a sink writes: a [`Write`] that can be completed (a file flushed
/// and synced, ready for its set's commit; a buffer handed over).
pub trait Output: Write {
    /// Flush and complete the output.
    ///
    /// # Errors
    ///
    /// The error of flushing or completing.
    fn complete(self) -> io::Result<()>;
}

impl Output for crate::output::OutputFile {
    fn complete(self) -> io::Result<()> {
        crate::output::OutputFile::complete(self)
    }
}

impl Output for std::fs::File {
    fn complete(mut self) -> io::Result<()> {
        self.flush()
    }
}

/// An in-memory output whose bytes stay readable through a clone (for
/// tests and embedding).
#[derive(Debug, Clone, Default)]
pub struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// An empty buffer.
    #[must_use]
    pub fn new() -> SharedBuffer {
        SharedBuffer::default()
    }

    /// A copy of the bytes written so far.
    #[must_use]
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("buffer poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Output for SharedBuffer {
    fn complete(self) -> io::Result<()> {
        Ok(())
    }
}
