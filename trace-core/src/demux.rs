//! From capture bytes to packets: the deformatter feeding one packet
//! parser per trace source, each of its protocol (see
//! [`crate::protocol`]).

use crate::frames::{Deformatter, FrameEvent, FrameMode, Run};
use crate::per_id::PerId;
use crate::protocol::registry::for_each_protocol;
use crate::protocol::PacketProtocol;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

pub use crate::protocol::{AnyPacket, PacketError, SourceConfig, SourceStats};

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

/// One trace source's packet parser, of any protocol (see
/// [`crate::protocol`]). Boxed: an ETMv3 parser carries its decode tables
/// (about 1.7 KB).
macro_rules! parser_type {
    ($( $(#[$doc:meta])* $name:ident ($var:ident) = $imp:ty; )*) => {
        #[derive(Debug, Clone)]
        pub(crate) enum Parser {
            $( $var(Box<<$imp as PacketProtocol>::Parser>), )*
        }

        impl Parser {
            /// A fresh (unsynchronized) parser.
            pub(crate) fn new(cfg: SourceConfig) -> Self {
                match cfg {
                    $( SourceConfig::$var(c) => Parser::$var(Box::new(<$imp>::parser(c))), )*
                }
            }

            /// Bytes of the stream were lost before the next ones fed:
            /// the error for a packet the loss cut short, if any.
            fn note_loss(&mut self) -> Option<PacketError> {
                match self { $( Parser::$var(p) => <$imp>::note_loss(p).map(PacketError::$var), )* }
            }

            /// The counters.
            pub(crate) fn stats(&self) -> SourceStats {
                match self { $( Parser::$var(p) => <$imp>::stats(p), )* }
            }

            /// Continue the source's stream with `data`, whose first byte
            /// lies at `offset`; hand what `packet` or `error` makes of
            /// every packet or error it completes to `each`, in order.
            /// Each is made straight from the parser's result (`packet`,
            /// `error` and `each` are inlined: called through pointers,
            /// they made one more copy of every packet, whose just-written
            /// bytes the copy had to wait for).
            #[cfg(feature = "parallel")]
            #[inline]
            pub(crate) fn feed<O>(
                &mut self,
                offset: u64,
                data: &[u8],
                packet: impl Fn(u64, AnyPacket) -> O,
                error: impl Fn(PacketError) -> O,
                mut each: impl FnMut(O),
            ) {
                match self {
                    $( Parser::$var(p) => {
                        for r in <$imp>::feed(p, offset, data) {
                            each(match r {
                                Ok((o, pk)) => packet(o, AnyPacket::$var(pk)),
                                Err(e) => error(PacketError::$var(e)),
                            });
                        }
                    } )*
                }
            }

            /// [`Parser::feed`] appending demultiplexer items of source
            /// `id` to `out`.
            #[inline]
            fn push(&mut self, id: u8, offset: u64, data: &[u8], out: &mut Vec<Item>) {
                match self {
                    $( Parser::$var(p) => push_items(
                        <$imp>::feed(p, offset, data),
                        id,
                        AnyPacket::$var,
                        PacketError::$var,
                        out,
                    ), )*
                }
            }

            /// End of the capture: the error for an incomplete packet or
            /// unreported skipped bytes, if any.
            pub(crate) fn finish(&mut self) -> Option<PacketError> {
                match self { $( Parser::$var(p) => <$imp>::finish(p).map(PacketError::$var), )* }
            }

            /// Whether timestamps travel Gray-coded.
            #[cfg(feature = "parallel")]
            fn gray_timestamps(&self) -> bool {
                match self { $( Parser::$var(p) => <$imp>::gray_timestamps(p), )* }
            }

            /// The base of the next compressed timestamp.
            #[cfg(feature = "parallel")]
            pub(crate) fn timestamp(&self) -> u64 {
                match self { $( Parser::$var(p) => <$imp>::timestamp(p), )* }
            }

            /// Set the base of the next compressed timestamp.
            #[cfg(feature = "parallel")]
            pub(crate) fn set_timestamp(&mut self, value: u64) {
                match self { $( Parser::$var(p) => <$imp>::set_timestamp(p, value), )* }
            }

            /// Whether the two parse any continuation alike (counters
            /// aside).
            #[cfg(feature = "parallel")]
            pub(crate) fn same_state(&self, other: &Parser) -> bool {
                match (self, other) {
                    $( (Parser::$var(a), Parser::$var(b)) => <$imp>::same_state(a, b), )*
                    #[allow(unreachable_patterns)]
                    _ => false,
                }
            }
        }
    };
}

for_each_protocol!(parser_type);

impl Parser {
    /// The timestamp `value` as the packets carry it (Gray code or
    /// natural binary): the domain where a packet's low-order bits replace
    /// the base's.
    #[cfg(feature = "parallel")]
    pub(crate) fn value_wire(&self, value: u64) -> u64 {
        if self.gray_timestamps() {
            value ^ (value >> 1)
        } else {
            value
        }
    }

    /// The inverse of [`Parser::value_wire`].
    #[cfg(feature = "parallel")]
    pub(crate) fn wire_value(&self, wire: u64) -> u64 {
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
    sources: PerId<Parser>,
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
    /// In [`FrameMode::Continuous`] (a TPIU stream), ETMv3 sources also
    /// synchronize at an I-sync ([`etm_packets::Config::with_isync_sync`]).
    #[must_use]
    pub fn new(
        layout: FrameMode,
        sources: impl IntoIterator<Item = (u8, SourceConfig)>,
        any_id: Option<SourceConfig>,
    ) -> Self {
        // A TPIU stream starts anywhere, its first A-sync often cut off:
        // ETMv3 sources synchronize at an I-sync too.
        let stream = |cfg: SourceConfig| match layout {
            FrameMode::Continuous => cfg.in_stream(),
            _ => cfg,
        };
        let any_id = any_id.map(stream);
        let mut table = PerId::new();
        for (id, cfg) in sources {
            table.insert(id & 0x7F, Parser::new(stream(cfg)));
        }
        let (deformatter, raw_id) = match layout {
            FrameMode::Raw { id } => (None, id & 0x7F),
            other => (Some(Deformatter::new(other)), 0),
        };
        if deformatter.is_none() && !table.contains(raw_id) {
            if let Some(cfg) = any_id {
                table.insert(raw_id, Parser::new(cfg));
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
        self.sources.ids()
    }

    /// Counters of source `id`.
    #[must_use]
    pub fn stats(&self, id: u8) -> Option<SourceStats> {
        self.sources.get(id).map(Parser::stats)
    }

    /// Counters of every trace ID with a parser, in ascending order.
    #[must_use]
    pub fn counters(&self) -> Vec<(u8, SourceStats)> {
        self.sources.iter().map(|(id, p)| (id, p.stats())).collect()
    }

    /// Continue the capture with `chunk`; append what it completes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Item>) {
        let base = self.offset;
        self.offset += chunk.len() as u64;
        match self.deformatter.as_mut() {
            None => {
                let id = self.raw_id;
                match self.sources.get_mut(id) {
                    Some(p) => p.push(id, base, chunk, out),
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
                let (sources, any) = (&mut self.sources, self.any_id);
                d.feed_each(chunk, |ev| route(sources, any, ev, out));
            }
        }
    }

    /// End of the capture: hand on what the deformatter still held, report
    /// incomplete frames and packets.
    pub fn finish(&mut self, out: &mut Vec<Item>) {
        if let Some(d) = self.deformatter.as_mut() {
            let (sources, any) = (&mut self.sources, self.any_id);
            d.finish_each(|ev| route(sources, any, ev, out));
        }
        for (id, p) in self.sources.iter_mut() {
            if let Some(error) = p.finish() {
                out.push(Item::Error { id, error });
            }
        }
    }
}

/// Hands a deformatter event on: a source's payload to its parser (made on
/// first use when any ID is decoded), everything else as it is.
#[inline(always)]
fn route(
    sources: &mut PerId<Parser>,
    any: Option<SourceConfig>,
    ev: FrameEvent,
    out: &mut Vec<Item>,
) {
    match ev {
        FrameEvent::Data(run) => {
            let id = run.id;
            match sources.get_or_insert_with(id, || any.map(Parser::new)) {
                Some(p) => p.push(id, run.offset, run.data(), out),
                None => out.push(Item::Unconfigured { run }),
            }
        }
        other => {
            if let FrameEvent::Unsynchronized { .. } = other {
                // The frames were realigned: every source may have lost
                // packets there.
                for (id, p) in sources.iter_mut() {
                    if let Some(error) = p.note_loss() {
                        out.push(Item::Error { id, error });
                    }
                }
            }
            out.push(Item::Frame(other));
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
