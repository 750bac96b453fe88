//! Where a chunk's parser takes over: the items a source's parser hands
//! the decoder, and the comparisons of timestamps and counters the join
//! makes.

use crate::demux::{AnyPacket, SourceStats};

/// A timestamp packet's value and the number of low-order bits it
/// carried.
pub(super) fn timestamp_of(op: &Op) -> Option<(u64, u8)> {
    match op {
        Op::Packet(_, p) => p.timestamp(),
        Op::Error(_) => None,
    }
}

/// Whether two items are the same but for the value of a timestamp
/// packet (which a parser started from another timestamp base gives).
pub(super) fn same_but_timestamp(a: &Op, b: &Op) -> bool {
    match (a, b) {
        (Op::Packet(x, p), Op::Packet(y, q)) => x == y && p.same_but_timestamp(q),
        _ => a == b,
    }
}

/// The mask of a timestamp packet's `bits` low-order bits.
pub(super) fn low_bits(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// What a source's decoder runs: a packet, or a parser error (the decoder
/// only needs its offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    /// A packet whose first byte lies at the offset.
    Packet(u64, AnyPacket),
    /// Damaged or unsynchronized bytes reported at the offset.
    Error(u64),
}

/// A source's packet parser, as the parallel decoder drives it: fed
/// payload runs at their offsets, cloned, compared.
pub(super) use crate::demux::Parser as PacketParser;

/// Continue a source's stream with `data`, whose first byte lies at
/// `offset`; hand on every item it completes, in order.
#[inline]
pub(super) fn feed(parser: &mut PacketParser, offset: u64, data: &[u8], each: impl FnMut(Op)) {
    parser.feed(offset, data, Op::Packet, |e| Op::Error(e.offset()), each);
}

/// End of the capture: the error for an incomplete packet or unreported
/// skipped bytes, if any.
pub(super) fn finish(parser: &mut PacketParser) -> Option<Op> {
    parser.finish().map(|e| Op::Error(e.offset()))
}

/// `a + b - c`, field by field, wrapping: counters of a parser that took
/// over from another at a point where both had the same state.
pub(super) fn rebase(a: &SourceStats, b: &SourceStats, c: &SourceStats) -> SourceStats {
    let f = |a: u64, b: u64, c: u64| a.wrapping_add(b).wrapping_sub(c);
    SourceStats {
        bytes: f(a.bytes, b.bytes, c.bytes),
        in_packets: f(a.in_packets, b.in_packets, c.in_packets),
        packets: f(a.packets, b.packets, c.packets),
        skipped: f(a.skipped, b.skipped, c.skipped),
        errors: f(a.errors, b.errors, c.errors),
    }
}
