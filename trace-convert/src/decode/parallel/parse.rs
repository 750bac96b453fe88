//! One trace source's packet parser, of either protocol, as the parallel
//! decoder drives it: fed payload runs at their offsets, cloned, compared.

use trace_core::demux::{AnyPacket, SourceConfig, SourceStats};

/// A timestamp packet's value and the number of low-order bits it
/// carried.
pub(super) fn timestamp_of(op: &Op) -> Option<(u64, u8)> {
    match op {
        Op::Packet(_, AnyPacket::Etm(etm_packets::Packet::Timestamp(t))) => Some((t.value, t.bits)),
        Op::Packet(_, AnyPacket::Ptm(ptm_packets::Packet::Timestamp(t))) => Some((t.value, t.bits)),
        _ => None,
    }
}

/// Whether two items are the same but for the value of a timestamp
/// packet (which a parser started from another timestamp base gives).
pub(super) fn same_but_timestamp(a: &Op, b: &Op) -> bool {
    match (a, b) {
        (
            Op::Packet(x, AnyPacket::Etm(etm_packets::Packet::Timestamp(s))),
            Op::Packet(y, AnyPacket::Etm(etm_packets::Packet::Timestamp(t))),
        ) => x == y && s.bits == t.bits && s.clock_changed == t.clock_changed,
        (
            Op::Packet(x, AnyPacket::Ptm(ptm_packets::Packet::Timestamp(s))),
            Op::Packet(y, AnyPacket::Ptm(ptm_packets::Packet::Timestamp(t))),
        ) => {
            x == y && s.bits == t.bits && s.clock_changed == t.clock_changed && s.cycles == t.cycles
        }
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

/// A packet parser of either protocol. Boxed: an ETMv3 parser carries its
/// decode tables.
#[derive(Debug, Clone)]
pub(super) enum PacketParser {
    Etm(Box<etm_packets::Parser>),
    Ptm(Box<ptm_packets::Parser>),
}

impl PacketParser {
    /// A fresh (unsynchronized) parser.
    pub(super) fn new(cfg: SourceConfig) -> Self {
        match cfg {
            SourceConfig::Etm(c) => PacketParser::Etm(Box::new(etm_packets::Parser::new(c))),
            SourceConfig::Ptm(c) => PacketParser::Ptm(Box::new(ptm_packets::Parser::new(c))),
        }
    }

    /// Continue the source's stream with `data`, whose first byte lies at
    /// `offset`; hand on every item it completes, in order.
    #[inline]
    pub(super) fn feed(&mut self, offset: u64, data: &[u8], mut each: impl FnMut(Op)) {
        match self {
            PacketParser::Etm(p) => {
                for item in p.feed_at(offset, data) {
                    each(match item {
                        Ok((o, packet)) => Op::Packet(o, AnyPacket::Etm(packet)),
                        Err(e) => Op::Error(e.offset),
                    });
                }
            }
            PacketParser::Ptm(p) => {
                for item in p.feed_at(offset, data) {
                    each(match item {
                        Ok((o, packet)) => Op::Packet(o, AnyPacket::Ptm(packet)),
                        Err(e) => Op::Error(e.offset),
                    });
                }
            }
        }
    }

    /// End of the capture: the error for an incomplete packet or
    /// unreported skipped bytes, if any.
    pub(super) fn finish(&mut self) -> Option<Op> {
        match self {
            PacketParser::Etm(p) => p.finish().map(|e| Op::Error(e.offset)),
            PacketParser::Ptm(p) => p.finish().map(|e| Op::Error(e.offset)),
        }
    }

    /// The counters, as the demultiplexer reports them.
    pub(super) fn stats(&self) -> SourceStats {
        match self {
            PacketParser::Etm(p) => p.stats().into(),
            PacketParser::Ptm(p) => p.stats().into(),
        }
    }

    /// The timestamp `value` as the packets carry it (Gray code or
    /// natural binary): the domain where a packet's low-order bits replace
    /// the base's.
    pub(super) fn value_wire(&self, value: u64) -> u64 {
        if self.gray_timestamps() {
            value ^ (value >> 1)
        } else {
            value
        }
    }

    /// The inverse of [`PacketParser::value_wire`].
    pub(super) fn wire_value(&self, wire: u64) -> u64 {
        if self.gray_timestamps() {
            let mut v = wire;
            let mut shift = 1;
            while shift < 64 {
                v ^= v >> shift;
                shift <<= 1;
            }
            v
        } else {
            wire
        }
    }

    fn gray_timestamps(&self) -> bool {
        match self {
            PacketParser::Etm(p) => p.config().timestamp_gray(),
            PacketParser::Ptm(p) => !p.config().timestamp_binary(),
        }
    }

    /// The base of the next compressed timestamp.
    pub(super) fn timestamp(&self) -> u64 {
        match self {
            PacketParser::Etm(p) => p.timestamp(),
            PacketParser::Ptm(p) => p.timestamp(),
        }
    }

    /// Set the base of the next compressed timestamp.
    pub(super) fn set_timestamp(&mut self, value: u64) {
        match self {
            PacketParser::Etm(p) => p.set_timestamp(value),
            PacketParser::Ptm(p) => p.set_timestamp(value),
        }
    }

    /// Whether the two parse any continuation alike (counters aside).
    pub(super) fn same_state(&self, other: &PacketParser) -> bool {
        match (self, other) {
            (PacketParser::Etm(a), PacketParser::Etm(b)) => a.same_state(b),
            (PacketParser::Ptm(a), PacketParser::Ptm(b)) => a.same_state(b),
            _ => false,
        }
    }
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
