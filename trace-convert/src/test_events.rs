//! Events for the unit tests.

use trace_core::event::{Event, EventKind, InsnClass, Isa, Range};
use trace_core::memory::Space;

/// An executed A32 range of trace ID 1: `count` instructions from
/// `start`, the last of class `last`, linking or a return as told.
pub(crate) fn range(start: u32, count: u32, last: InsnClass, link: bool, ret: bool) -> Event {
    Event {
        offset: 0,
        id: 1,
        kind: EventKind::Range(Range {
            start,
            end: start + 4 * count,
            count,
            isa: Isa::A32,
            last_size: 4,
            last,
            link,
            ret,
            cond: false,
            executed: true,
            cycles: None,
            space: Space::Any,
        }),
    }
}
