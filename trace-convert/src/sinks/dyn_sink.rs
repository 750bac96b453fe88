//! [`DynSink`]: the object-safe form of every [`Sink`], which a
//! [`Converter`](crate::convert::Converter) holds so that sinks of any
//! types run side by side. Each call is one call of the sink's own
//! method (the adapter is inlined into it), and a part's result reaches
//! the sink that made it with its own type.

use super::{EventCtx, Flow, Interest, RunInfo, Sink, WorkerPart, WorkerParts};
use std::any::Any;
use std::io;
use std::sync::Arc;
use trace_core::capture::{Part, Parts};
use trace_core::event::Event;

/// A [`Sink`] of any type, as the converter drives it: implemented for
/// every sink (`Box::new(sink)` is a `Box<dyn DynSink>`).
pub trait DynSink {
    /// [`Sink::name`].
    fn name(&self) -> &str;

    /// [`Sink::begin`].
    ///
    /// # Errors
    ///
    /// The sink's output error.
    fn begin(&mut self, info: &RunInfo) -> io::Result<()>;

    /// [`Sink::interest`].
    fn interest(&self) -> Interest;

    /// [`Sink::windowed`].
    fn windowed(&self) -> bool;

    /// [`Sink::event`].
    ///
    /// # Errors
    ///
    /// The sink's output error.
    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow>;

    /// [`Sink::events`].
    ///
    /// # Errors
    ///
    /// The sink's output error.
    fn events(&mut self, events: &[Event]) -> io::Result<Flow>;

    /// [`Sink::parts`], as the parts of a decode: their results come back
    /// through [`merge`](Self::merge).
    fn decode_parts(&self) -> Option<Arc<dyn Parts>>;

    /// [`Sink::merge`] of what one of [`decode_parts`](Self::decode_parts)'
    /// parts gave ([`Part::into_any`]).
    ///
    /// # Errors
    ///
    /// The sink's output error; a result that none of this sink's parts
    /// made.
    fn merge(&mut self, id: u8, result: Box<dyn Any + Send>) -> io::Result<()>;

    /// [`Sink::finish`].
    ///
    /// # Errors
    ///
    /// The sink's output error.
    fn finish(&mut self, info: &RunInfo) -> io::Result<()>;

    /// [`Sink::notes`].
    fn notes(&self) -> Vec<String>;
}

impl<S: Sink> DynSink for S {
    #[inline]
    fn name(&self) -> &str {
        Sink::name(self)
    }

    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        Sink::begin(self, info)
    }

    fn interest(&self) -> Interest {
        Sink::interest(self)
    }

    fn windowed(&self) -> bool {
        Sink::windowed(self)
    }

    #[inline]
    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow> {
        Sink::event(self, event, ctx)
    }

    #[inline]
    fn events(&mut self, events: &[Event]) -> io::Result<Flow> {
        Sink::events(self, events)
    }

    fn decode_parts(&self) -> Option<Arc<dyn Parts>> {
        let parts = Sink::parts(self)?;
        Some(Arc::new(PartsOf(parts)))
    }

    fn merge(&mut self, id: u8, result: Box<dyn Any + Send>) -> io::Result<()> {
        // Made by `decode_parts`, whose parts give this type.
        let part = result
            .downcast::<PartOf<<S::Parts as WorkerParts>::Part>>()
            .map_err(|_| io::Error::other("a part result of another sink"))?;
        Sink::merge(self, id, part.0)
    }

    fn finish(&mut self, info: &RunInfo) -> io::Result<()> {
        Sink::finish(self, info)
    }

    fn notes(&self) -> Vec<String> {
        Sink::notes(self)
    }
}

/// A sink's [`WorkerParts`] as the parts of a decode.
struct PartsOf<P>(P);

/// A sink's [`WorkerPart`] as a part of a decode.
struct PartOf<T>(T);

impl<P: WorkerParts> Parts for PartsOf<P> {
    fn part(&self, id: u8) -> Option<Box<dyn Part>> {
        Some(Box::new(PartOf(self.0.part(id)?)))
    }

    /// The events a part saw go to the sink as its result only.
    fn keep_events(&self) -> bool {
        false
    }

    fn reads_timestamps(&self) -> bool {
        self.0.reads_timestamps()
    }
}

impl<T: WorkerPart> Part for PartOf<T> {
    #[inline]
    fn event(&mut self, event: &Event) {
        self.0.event(event);
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}
