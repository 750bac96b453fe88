//! What a capture decode hands its events to: a [`Consumer`], and the
//! counting hand-off every decode goes through.

use super::parts::Delivery;
use super::summary::SourceCounts;
use crate::event::Event;
use std::io;

/// Takes a decode's deliveries, on the calling thread, in capture order
/// per trace ID.
///
/// [`each_event`] makes a consumer of a closure taking every event
/// (results of parts are dropped); [`deliveries`] one of a closure taking
/// every [`Delivery`]. An error stops the decode and is returned
/// as [`CaptureError::Consumer`](super::CaptureError::Consumer).
pub trait Consumer {
    /// The decode counts each source's events for its summary (a
    /// constant: a decode that counts pays no test for it).
    const COUNTS: bool = true;

    /// The decode on the calling thread hands the events in slices
    /// ([`take_slice`](Self::take_slice)): the decoder writes each event
    /// into a buffer, and the consumer reads them later, when the stores
    /// are done, instead of right after each was written field by field.
    const SLICES: bool = false;

    /// Take one delivery.
    ///
    /// # Errors
    ///
    /// An error of what the delivery is handed on to.
    fn take(&mut self, d: Delivery<'_>) -> io::Result<()>;

    /// Take events no part has seen, in order (only when
    /// [`SLICES`](Self::SLICES)).
    ///
    /// # Errors
    ///
    /// As [`Consumer::take`].
    fn take_slice(&mut self, events: &[Event]) -> io::Result<()> {
        events
            .iter()
            .try_for_each(|e| self.take(Delivery::Event(e)))
    }

    /// Take a run of a parallel decode's events (each with the key of the
    /// item that produced it), in order: seen by a part if `folded`
    /// ([`Delivery::Folded`]), else not ([`Delivery::Event`]).
    ///
    /// # Errors
    ///
    /// As [`Consumer::take`].
    fn take_run(&mut self, run: &[(u64, Event)], folded: bool) -> io::Result<()> {
        run.iter().try_for_each(|(_, e)| {
            self.take(if folded {
                Delivery::Folded(e)
            } else {
                Delivery::Event(e)
            })
        })
    }

    /// The decode has ended (after every delivery).
    ///
    /// # Errors
    ///
    /// An error of what is handed on then.
    fn end(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A consumer of events, from a closure ([`each_event`]).
#[derive(Debug)]
pub struct EachEvent<F>(F);

/// A consumer handing every event to `f` (results of parts are dropped).
pub fn each_event<F: FnMut(&Event) -> io::Result<()>>(f: F) -> EachEvent<F> {
    EachEvent(f)
}

impl<F: FnMut(&Event) -> io::Result<()>> Consumer for EachEvent<F> {
    // Always inlined: with the match left to the optimiser, a converter's
    // per-event code was no longer inlined into the decoder's loop, and
    // conversions were slower.
    #[inline(always)]
    fn take(&mut self, d: Delivery<'_>) -> io::Result<()> {
        match d {
            Delivery::Event(e) | Delivery::Folded(e) => (self.0)(e),
            Delivery::Part { .. } => Ok(()),
        }
    }
}

/// A consumer of every delivery, from a closure ([`deliveries`]).
#[derive(Debug)]
pub struct Deliveries<F>(F);

/// A consumer handing every delivery to `f`.
pub fn deliveries<F: FnMut(Delivery<'_>) -> io::Result<()>>(f: F) -> Deliveries<F> {
    Deliveries(f)
}

impl<F: FnMut(Delivery<'_>) -> io::Result<()>> Consumer for Deliveries<F> {
    #[inline(always)]
    fn take(&mut self, d: Delivery<'_>) -> io::Result<()> {
        (self.0)(d)
    }
}

/// Counts the events per trace ID and hands them to the consumer, keeping
/// its first error (nothing is handed on after it).
pub(crate) struct Sink<'a, F: Consumer + ?Sized> {
    /// Per trace ID (an array indexed by a `u8`: no bounds check on the
    /// count of every event).
    pub(crate) counts: Box<[SourceCounts; 256]>,
    pub(crate) failure: Option<io::Error>,
    pub(crate) each: &'a mut F,
}

impl<'a, F: Consumer + ?Sized> Sink<'a, F> {
    /// Hand-off to `each`, nothing counted yet.
    pub(crate) fn new(each: &'a mut F) -> Self {
        Sink {
            counts: Box::new([SourceCounts::default(); 256]),
            failure: None,
            each,
        }
    }

    /// The counts of source `id`.
    #[inline]
    pub(crate) fn counts_of(&mut self, id: u8) -> &mut SourceCounts {
        &mut self.counts[usize::from(id)]
    }

    /// Count `e` and hand it on. By reference: the decoder has only just
    /// written the event field by field, and a copy of it as a whole
    /// would wait for those stores.
    #[inline]
    pub(crate) fn on(&mut self, e: &Event) {
        if F::COUNTS {
            self.counts_of(e.id).count(e);
        }
        self.hand(Delivery::Event(e));
    }

    /// Count `events` and hand them on as one slice.
    #[inline]
    pub(crate) fn on_slice(&mut self, events: &[Event]) {
        if F::COUNTS {
            for e in events {
                self.counts_of(e.id).count(e);
            }
        }
        self.attempt(|each| each.take_slice(events));
    }

    /// Hand on a run of a parallel decode's events (seen by a part if
    /// `folded`), counted already.
    #[cfg(feature = "parallel")]
    #[inline]
    pub(crate) fn hand_run(&mut self, run: &[(u64, Event)], folded: bool) {
        if !run.is_empty() {
            self.attempt(|each| each.take_run(run, folded));
        }
    }

    /// Hand `d` on.
    #[inline(always)]
    pub(crate) fn hand(&mut self, d: Delivery<'_>) {
        self.attempt(|each| each.take(d));
    }

    /// The consumer's end, unless it failed before.
    pub(crate) fn end(&mut self) {
        self.attempt(|each| each.end());
    }

    /// `f` on the consumer unless it failed before; its error is kept
    /// (nothing is handed on after it).
    #[inline(always)]
    fn attempt(&mut self, f: impl FnOnce(&mut F) -> io::Result<()>) {
        if self.failure.is_none() {
            if let Err(err) = f(self.each) {
                self.failure = Some(err);
            }
        }
    }
}
