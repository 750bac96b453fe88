//! `decode --format none` on several threads: the workers count each
//! source's events for the summary, and keep none of them, so that no
//! event crosses to the calling thread only to be dropped there.

use std::any::Any;
use trace_core::capture::{Part, Parts};
use trace_core::event::Event;

/// Parts that take every source's events and do nothing more with them
/// (the decode counts them for its summary where they are decoded).
pub(crate) struct CountedOnly;

/// A share of one source's events, already counted.
struct Dropped;

impl Part for Dropped {
    #[inline]
    fn event(&mut self, _event: &Event) {}

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        Box::new(())
    }
}

impl Parts for CountedOnly {
    fn part(&self, _id: u8) -> Option<Box<dyn Part>> {
        Some(Box::new(Dropped))
    }

    fn keep_events(&self) -> bool {
        false
    }

    fn reads_timestamps(&self) -> bool {
        false
    }
}
