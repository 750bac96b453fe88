//! From capture bytes to packets: the deformatter feeding one packet
//! parser per trace source.

use crate::frames::{Deformatter, FrameEvent, FrameMode, Run};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

/// Configuration of one trace source's packet parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceConfig {
    /// An ETMv3 source.
    Etm(etm_packets::Config),
    /// A PTM (PFT) source.
    Ptm(ptm_packets::Config),
}

/// A packet of either protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnyPacket {
    /// An ETMv3 packet.
    Etm(etm_packets::Packet),
    /// A PTM packet.
    Ptm(ptm_packets::Packet),
}

impl AnyPacket {
    /// Stable snake_case name of the packet kind.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            AnyPacket::Etm(p) => p.kind(),
            AnyPacket::Ptm(p) => p.kind(),
        }
    }
}

impl fmt::Display for AnyPacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyPacket::Etm(p) => p.fmt(f),
            AnyPacket::Ptm(p) => p.fmt(f),
        }
    }
}

/// A packet parser's error, of either protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PacketError {
    /// From the ETMv3 parser.
    Etm(etm_packets::Error),
    /// From the PTM parser.
    Ptm(ptm_packets::Error),
}

impl PacketError {
    /// Offset in the capture of the first byte concerned.
    #[must_use]
    pub fn offset(&self) -> u64 {
        match self {
            PacketError::Etm(e) => e.offset,
            PacketError::Ptm(e) => e.offset,
        }
    }

    /// Number of bytes skipped (not part of any packet) that this error
    /// accounts for.
    #[must_use]
    pub fn skipped(&self) -> u64 {
        use etm_packets::ErrorKind as E;
        use ptm_packets::ErrorKind as P;
        match self {
            PacketError::Etm(e) => match e.kind {
                E::Unsynchronized { len } => len,
                E::Truncated { len, .. } => len as u64,
                _ => 0,
            },
            PacketError::Ptm(e) => match e.kind {
                P::Unsynchronized { len } | P::Truncated { len, .. } => len,
                _ => 0,
            },
        }
    }
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PacketError::Etm(e) => e.fmt(f),
            PacketError::Ptm(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for PacketError {}

/// What [`Demux`] hands on, in capture order per trace ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A packet of source `id` whose first byte lies at `offset`.
    Packet {
        /// Trace ID.
        id: u8,
        /// Offset of the packet's first byte in the capture.
        offset: u64,
        /// The packet.
        packet: AnyPacket,
    },
    /// A packet parser reported damage or unsynchronized bytes.
    Error {
        /// Trace ID.
        id: u8,
        /// What and where.
        error: PacketError,
    },
    /// Bytes under a trace ID that has no configured source.
    Unconfigured {
        /// The payload bytes and where they lie.
        run: Run,
    },
    /// The deformatter discarded bytes or lost frame alignment.
    Frame(FrameEvent),
}

/// Counters per trace source, from its packet parser.
///
/// After [`Demux::finish`], `bytes == in_packets + skipped`: every payload
/// byte is either part of a packet or reported skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Payload bytes handed to the parser.
    pub bytes: u64,
    /// Bytes that formed packets.
    pub in_packets: u64,
    /// Packets parsed.
    pub packets: u64,
    /// Bytes skipped by the parser (unsynchronized or damaged).
    pub skipped: u64,
    /// Errors reported.
    pub errors: u64,
}

/// The two packet crates' counters have the same fields.
macro_rules! source_stats_from {
    ($stats:ty) => {
        impl From<$stats> for SourceStats {
            fn from(s: $stats) -> SourceStats {
                SourceStats {
                    bytes: s.bytes_fed,
                    in_packets: s.bytes_in_packets,
                    packets: s.packets,
                    skipped: s.bytes_skipped,
                    errors: s.errors,
                }
            }
        }
    };
}
source_stats_from!(etm_packets::Stats);
source_stats_from!(ptm_packets::Stats);

/// Parsers are boxed: an ETMv3 parser carries its decode tables (about
/// 1.7 KB), and the demultiplexer keeps a slot per trace ID.
enum Parser {
    Etm(Box<etm_packets::Parser>),
    Ptm(Box<ptm_packets::Parser>),
}

struct Source {
    parser: Parser,
}

impl Source {
    fn new(cfg: SourceConfig) -> Self {
        let parser = match cfg {
            SourceConfig::Etm(c) => Parser::Etm(Box::new(etm_packets::Parser::new(c))),
            SourceConfig::Ptm(c) => Parser::Ptm(Box::new(ptm_packets::Parser::new(c))),
        };
        Source { parser }
    }

    fn stats(&self) -> SourceStats {
        match &self.parser {
            Parser::Etm(p) => p.stats().into(),
            Parser::Ptm(p) => p.stats().into(),
        }
    }

    fn feed(&mut self, id: u8, offset: u64, data: &[u8], out: &mut Vec<Item>) {
        match &mut self.parser {
            Parser::Etm(p) => push_items(
                p.feed_at(offset, data),
                id,
                AnyPacket::Etm,
                PacketError::Etm,
                out,
            ),
            Parser::Ptm(p) => push_items(
                p.feed_at(offset, data),
                id,
                AnyPacket::Ptm,
                PacketError::Ptm,
                out,
            ),
        }
    }

    fn finish(&mut self, id: u8, out: &mut Vec<Item>) {
        let error = match &mut self.parser {
            Parser::Etm(p) => p.finish().map(PacketError::Etm),
            Parser::Ptm(p) => p.finish().map(PacketError::Ptm),
        };
        if let Some(error) = error {
            out.push(Item::Error { id, error });
        }
    }
}

/// Append a parser's items to `out` as demultiplexer items of source `id`.
/// Each item is written into `out` straight from the parser's result
/// (`packet` and `error` are inlined: called through pointers, they made
/// one more copy of every packet, whose just-written bytes the copy had
/// to wait for).
#[inline]
fn push_items<P, E>(
    items: impl Iterator<Item = Result<(u64, P), E>>,
    id: u8,
    packet: impl Fn(P) -> AnyPacket,
    error: impl Fn(E) -> PacketError,
    out: &mut Vec<Item>,
) {
    for r in items {
        out.push(match r {
            Ok((offset, p)) => Item::Packet {
                id,
                offset,
                packet: packet(p),
            },
            Err(e) => Item::Error {
                id,
                error: error(e),
            },
        });
    }
}

/// Splits a capture into trace sources and parses each source's packets.
///
/// Feed the capture in chunks of any size; items come out in capture order
/// within each trace ID, with offsets of the capture file.
pub struct Demux {
    deformatter: Option<Deformatter>,
    raw_id: u8,
    sources: Vec<Option<Source>>,
    any_id: Option<SourceConfig>,
    offset: u64,
}

impl fmt::Debug for Demux {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Demux")
            .field("offset", &self.offset)
            .field("ids", &self.ids())
            .finish_non_exhaustive()
    }
}

impl Demux {
    /// A demultiplexer for a capture laid out as `layout`, with the given
    /// sources; `any_id`, when given, configures every other trace ID found.
    #[must_use]
    pub fn new(
        layout: FrameMode,
        sources: impl IntoIterator<Item = (u8, SourceConfig)>,
        any_id: Option<SourceConfig>,
    ) -> Self {
        let mut table: Vec<Option<Source>> = (0..128).map(|_| None).collect();
        for (id, cfg) in sources {
            table[usize::from(id & 0x7F)] = Some(Source::new(cfg));
        }
        let (deformatter, raw_id) = match layout {
            FrameMode::Raw { id } => (None, id & 0x7F),
            other => (Some(Deformatter::new(other)), 0),
        };
        if deformatter.is_none() && table[usize::from(raw_id)].is_none() {
            if let Some(cfg) = any_id {
                table[usize::from(raw_id)] = Some(Source::new(cfg));
            }
        }
        Demux {
            deformatter,
            raw_id,
            sources: table,
            any_id,
            offset: 0,
        }
    }

    /// This demultiplexer fed a capture that starts at `offset` of a file
    /// (e.g. a piece of AUX data in a perf.data file): items carry file
    /// offsets. Frames are counted from `offset`. Call before feeding.
    #[must_use]
    pub fn starting_at(mut self, offset: u64) -> Self {
        self.offset = offset;
        if let Some(d) = &self.deformatter {
            if d.mode() == FrameMode::Memory {
                self.deformatter = Some(Deformatter::resume_memory(offset, None));
            }
        }
        self
    }

    /// Trace IDs with a parser so far.
    #[must_use]
    pub fn ids(&self) -> Vec<u8> {
        (0u8..128)
            .filter(|&id| self.sources[usize::from(id)].is_some())
            .collect()
    }

    /// Counters of source `id`.
    #[must_use]
    pub fn stats(&self, id: u8) -> Option<SourceStats> {
        self.sources
            .get(usize::from(id))
            .and_then(|s| s.as_ref())
            .map(Source::stats)
    }

    /// Continue the capture with `chunk`; append what it completes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Item>) {
        let base = self.offset;
        self.offset += chunk.len() as u64;
        match self.deformatter.as_mut() {
            None => {
                let id = self.raw_id;
                match self.sources[usize::from(id)].as_mut() {
                    Some(src) => src.feed(id, base, chunk, out),
                    None => {
                        for (i, part) in chunk.chunks(15).enumerate() {
                            out.push(Item::Unconfigured {
                                run: raw_run(id, base + 15 * i as u64, part),
                            });
                        }
                    }
                }
            }
            Some(d) => {
                for ev in d.feed(chunk) {
                    match ev {
                        FrameEvent::Data(run) => {
                            let slot = &mut self.sources[usize::from(run.id)];
                            if slot.is_none() {
                                *slot = self.any_id.map(Source::new);
                            }
                            match slot.as_mut() {
                                Some(src) => src.feed(run.id, run.offset, run.data(), out),
                                None => out.push(Item::Unconfigured { run }),
                            }
                        }
                        other => out.push(Item::Frame(other)),
                    }
                }
            }
        }
    }

    /// End of the capture: report incomplete frames and packets.
    pub fn finish(&mut self, out: &mut Vec<Item>) {
        if let Some(ev) = self.deformatter.as_mut().and_then(Deformatter::finish) {
            out.push(Item::Frame(ev));
        }
        for id in 0u8..128 {
            if let Some(src) = self.sources[usize::from(id)].as_mut() {
                src.finish(id, out);
            }
        }
    }
}

fn raw_run(id: u8, offset: u64, bytes: &[u8]) -> Run {
    let mut run = Run::new(id, offset, offset);
    for &b in bytes {
        run.push(b);
    }
    run
}
