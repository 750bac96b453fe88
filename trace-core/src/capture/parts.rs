//! Work on the events done on the thread that decoded them ([`Parts`]).

use crate::event::Event;
use std::any::Any;

/// The work on one source's events in one chunk, done on a worker thread.
pub trait Part: Send {
    /// The next event of the source, as the decoder emits it.
    fn event(&mut self, event: &Event);

    /// The result, handed to the calling thread as [`Delivery::Part`].
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

/// Makes the [`Part`]s of a decode: work on the events done on the
/// thread that decoded them.
///
/// Handing every event from the worker that decoded it to the calling
/// thread costs about as much as decoding it (the events are written to
/// memory by one core and read back by another), and whatever the calling
/// thread then does with each event is done on one core. A consumer whose
/// work on a source's events can be split into runs, one per chunk, and
/// the runs' results combined in order afterwards (counts, coverage,
/// histograms) gives a [`Parts`]: each worker feeds the events of its
/// share of a chunk to a fresh [`Part`] as the decoder emits them, and
/// the calling thread receives the part's result ([`Delivery::Part`]) in
/// the place of those events.
///
/// A part sees exactly the events the calling thread would have been
/// handed for that share: a share the join cannot take over is decoded
/// again on the calling thread, its part dropped, and its events handed
/// on one by one ([`Delivery::Event`]). A worker's parser starts from a
/// guessed timestamp base (see the parallel decode
/// in [`CaptureDecoder::run`](super::CaptureDecoder::run)), so the
/// values of the timestamp events a part sees may differ from the single
/// pass's in their high-order bits: the join corrects the events it hands
/// on, but not what a part made of them. Parts that read timestamp values
/// say so ([`Parts::reads_timestamps`]), and then a share whose
/// timestamps need correcting is decoded again on the calling thread
/// instead.
///
/// Counting the instructions of each trace ID on the decoding threads:
///
/// ```
/// use std::any::Any;
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
/// use trace_core::capture::{deliveries, CaptureDecoder, Delivery, Part, Parts};
/// use trace_core::event::{Event, EventKind};
/// use trace_core::frames::FrameMode;
/// use trace_core::source::{Protocol, Regs};
///
/// struct Count(u64);
///
/// impl Part for Count {
///     fn event(&mut self, e: &Event) {
///         if let EventKind::Range(r) = &e.kind {
///             self.0 += u64::from(r.count);
///         }
///     }
///     fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
///         Box::new(self.0)
///     }
/// }
///
/// struct Counting;
///
/// impl Parts for Counting {
///     fn part(&self, _id: u8) -> Option<Box<dyn Part>> {
///         Some(Box::new(Count(0)))
///     }
///     fn keep_events(&self) -> bool {
///         false
///     }
///     fn reads_timestamps(&self) -> bool {
///         false
///     }
/// }
///
/// let regs = Regs { etmcr: 0, etmccer: 0, etmidr: 0x4114_f310 };
/// let capture: &[u8] = &[0, 0, 0, 0, 0, 0x80, 0x08, 0x00, 0x10, 0x00, 0x00, 0x01, 0x84];
/// let mut decoder = CaptureDecoder::builder(FrameMode::Raw { id: 0x10 })
///     .source(regs.decoder_config(Protocol::Ptm, 0x10)?)
///     .parts(Arc::new(Counting))
///     .build();
/// let mut per_id: BTreeMap<u8, u64> = BTreeMap::new();
/// decoder.run(capture, &mut deliveries(|d| {
///     match d {
///         // Events of shares decoded on the calling thread.
///         Delivery::Event(e) | Delivery::Folded(e) => {
///             if let EventKind::Range(r) = &e.kind {
///                 *per_id.entry(e.id).or_default() += u64::from(r.count);
///             }
///         }
///         Delivery::Part { id, result, .. } => {
///             *per_id.entry(id).or_default() += result.downcast::<u64>().map_or(0, |n| *n);
///         }
///     }
///     Ok(())
/// }))?;
/// println!("{per_id:?}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Parts: Send + Sync {
    /// A fresh part for a share of trace ID `id`'s events (`None`: that
    /// source's events are handed on one by one).
    fn part(&self, id: u8) -> Option<Box<dyn Part>>;

    /// Whether the events a part has seen are still handed on too, as
    /// [`Delivery::Folded`] (for consumers that need some of them in
    /// order). When not, a worker keeps none of its events.
    fn keep_events(&self) -> bool;

    /// Whether the parts read the values of
    /// [`EventKind::Timestamp`](crate::event::EventKind::Timestamp)
    /// events (see [`Parts`]); by default, they do.
    fn reads_timestamps(&self) -> bool {
        true
    }
}

/// What the calling thread is handed, in capture order per trace ID.
pub enum Delivery<'a> {
    /// An event no part has seen.
    Event(&'a Event),
    /// An event a part has seen (only when [`Parts::keep_events`]).
    Folded(&'a Event),
    /// The result of a part: trace ID `id`'s events after those handed
    /// on so far, up to those handed on from now on. It comes after the
    /// [`Folded`](Delivery::Folded) events it has seen.
    Part {
        /// The trace ID.
        id: u8,
        /// What [`Part::into_any`] returned.
        result: Box<dyn Any + Send>,
        /// Offset in the capture just past the chunk the share was in
        /// (for progress reports).
        chunk_end: u64,
    },
}
