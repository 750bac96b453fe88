//! The seam itself: [`PacketProtocol`], what one trace protocol gives the
//! rest of the toolkit.

use super::fields::{FieldWriter, TextWriter};
use super::regs::Regs;
use crate::decode::engine::Engine;
use crate::decode::op::{Atoms, TraceOp};
use crate::event::Event;
use alloc::string::String;
use core::fmt::{Debug, Display};

/// Counters per trace source, from its packet parser.
///
/// After [`Demux::finish`](crate::demux::Demux::finish), `bytes ==
/// in_packets + skipped`: every payload byte is either part of a packet
/// or reported skipped.
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

/// One trace protocol: its configuration, its packet parser, its listing
/// and how its packets become events. Each protocol implements it on a
/// type of its own in a module of [`crate::protocol`], and one line of
/// the registry ([`crate::protocol::registry`]) makes it one of
/// [`Protocol`](crate::protocol::Protocol)'s variants: the demultiplexer,
/// both capture decodes, the listings and the inputs dispatch through
/// this trait with `match`es that the registry writes (no dynamic
/// dispatch: every call is inlined where the compiler sees fit).
///
/// The functions take the protocol's own values (`Self::Parser`,
/// `Self::Packet`, ...) rather than `self`: the type implementing it is
/// only a name.
pub trait PacketProtocol: 'static {
    // --- What it is ---

    /// Lower-case name in listings, JSON and messages (`etmv3`).
    const NAME: &'static str;
    /// The value of `--protocol` that names it (`etm`).
    const FLAG: &'static str;
    /// Short upper-case label, in the names made for sources (`ETM cpu0`).
    const LABEL: &'static str;
    /// Its name in sentences (`ETMv3`, `PTM/PFT`).
    const TITLE: &'static str;
    /// What it is, in one line without a final period (the help of its
    /// `--protocol` value).
    const ABOUT: &'static str;
    /// Its number in saved-events files: never reused, never changed.
    const CODE: u8;
    /// The registers a source described by flags alone starts from
    /// (typical values of the protocol's common implementation).
    const TYPICAL_REGS: Regs;
    /// Whether bytes of this protocol stand out by how well they parse
    /// as it (most bytes of other data do not form its packets), so that
    /// a capture's protocol can be told from its first bytes. By default
    /// yes; no for a protocol whose packets almost any bytes form (ITM).
    const RECOGNIZABLE: bool = true;

    // --- Configuration ---

    /// The packet parser's configuration.
    type Config: Copy + Debug + PartialEq + Eq + Send + Sync + 'static;
    /// Why registers do not make a [`Self::Config`].
    type ConfigError: Copy + Debug + PartialEq + Eq + Display + Send + Sync + 'static;

    /// Whether a snapshot device of type `kind` (trimmed, upper case:
    /// `ETM3.5`, `PTM1.1`) is a source of this protocol.
    fn is_device_type(kind: &str) -> bool;

    /// The trace ID and registers of a snapshot device of this protocol,
    /// from its register values by name (`reg("ETMCR")`).
    ///
    /// # Errors
    ///
    /// A readable reason when a register it needs is missing or out of
    /// range.
    fn device_regs(reg: &dyn Fn(&str) -> Option<u64>) -> Result<(u8, Regs), String>;

    /// The parser configuration that `regs` describe.
    ///
    /// # Errors
    ///
    /// [`Self::ConfigError`] when they describe no source of this
    /// protocol (e.g. an ETMIDR of another).
    fn config(regs: Regs) -> Result<Self::Config, Self::ConfigError>;

    /// Whether the source is cycle-accurate (the clock of a conversion
    /// follows its cycle counts).
    fn cycle_accurate(cfg: &Self::Config) -> bool;

    /// Whether the source emits timestamps.
    fn timestamps(cfg: &Self::Config) -> bool;

    // --- Packets ---

    /// A packet: plain data, `Copy`.
    type Packet: Copy + Debug + PartialEq + Eq + Display + Send + Sync + 'static;
    /// A parser's report of damaged or unsynchronized bytes, with their
    /// offset.
    type Error: Clone + Debug + PartialEq + Eq + Display + Send + Sync + 'static;
    /// The resumable packet parser of one source.
    type Parser: Clone + Debug + Send + Sync + 'static;

    /// A fresh (unsynchronized) parser.
    fn parser(cfg: Self::Config) -> Self::Parser;

    /// Continue the source's stream with `data`, whose first byte lies at
    /// `offset` of the capture: every packet or error it completes, in
    /// order.
    fn feed<'p>(
        parser: &'p mut Self::Parser,
        offset: u64,
        data: &'p [u8],
    ) -> impl Iterator<Item = Result<(u64, Self::Packet), Self::Error>> + 'p;

    /// End of the capture: the error for an incomplete packet or
    /// unreported skipped bytes, if any.
    fn finish(parser: &mut Self::Parser) -> Option<Self::Error>;

    /// The configuration of a source read from a TPIU stream, which
    /// starts anywhere and may lose bytes (a protocol that can
    /// synchronize sooner there says so here); by default `cfg`.
    fn in_stream(cfg: Self::Config) -> Self::Config {
        cfg
    }

    /// Bytes of the source's stream were lost before the next ones fed
    /// (the frames were realigned): the error for a packet the loss cut
    /// short, if the parser reports it here; by default nothing changes.
    fn note_loss(_parser: &mut Self::Parser) -> Option<Self::Error> {
        None
    }

    /// The parser's counters.
    fn stats(parser: &Self::Parser) -> SourceStats;

    /// Whether two parsers parse any continuation alike (counters aside):
    /// the parallel decode takes a chunk's parser over only then.
    fn same_state(a: &Self::Parser, b: &Self::Parser) -> bool;

    /// Offset of the first byte an error concerns.
    fn error_offset(e: &Self::Error) -> u64;

    /// Bytes an error accounts for as skipped (not part of any packet).
    fn error_skipped(e: &Self::Error) -> u64;

    /// Stable snake_case name of the packet's kind (`p_header`).
    fn kind(packet: &Self::Packet) -> &'static str;

    // --- Timestamps, for the parallel decode's cuts ---
    //
    // A protocol whose timestamp packets carry only the low-order bits
    // that changed keeps a base in its parser; a chunk's parser starts
    // from a guessed base, and the join corrects the timestamps that
    // depended on it. The defaults are those of a protocol without such
    // timestamps.

    /// The base of the next compressed timestamp.
    fn timestamp(_parser: &Self::Parser) -> u64 {
        0
    }

    /// Set the base of the next compressed timestamp.
    fn set_timestamp(_parser: &mut Self::Parser, _value: u64) {}

    /// Whether timestamps travel Gray-coded (else in natural binary): the
    /// domain in which a packet's low-order bits replace the base's.
    fn gray_timestamps(_parser: &Self::Parser) -> bool {
        false
    }

    /// A timestamp packet's value and the number of low-order bits it
    /// carried.
    fn packet_timestamp(_packet: &Self::Packet) -> Option<(u64, u8)> {
        None
    }

    /// Whether two packets are the same but for a timestamp's value
    /// (which a parser started from another base gives).
    fn same_but_timestamp(a: &Self::Packet, b: &Self::Packet) -> bool {
        a == b
    }

    // --- Listing ---

    /// The packet's fields in the JSON Lines listing, after `offset`,
    /// `id` and `kind`, in the order of the schema (`docs/jsonl.md`).
    fn fields<W: FieldWriter>(packet: &Self::Packet, w: &mut W);

    /// For packets that make up most of a stream: a key such that two
    /// packets with the same key list the same (text and JSON), so that
    /// the listing writes each such line once and copies it after.
    fn listing_key(_packet: &Self::Packet) -> Option<u64> {
        None
    }

    /// The packet's text line (its `Display` form, byte for byte) written
    /// with `w`, for the packets that make up most of a stream; `false`
    /// (nothing written) for the others, which are listed by `Display`.
    fn text<W: TextWriter>(_packet: &Self::Packet, _w: &mut W) -> bool {
        false
    }

    // --- Events ---

    /// What a source's decoder keeps for this protocol beside the engine
    /// (ETMv3: whether it is cycle-accurate; a protocol that is not
    /// instruction trace: whatever turning its packets into events
    /// needs).
    type Decoding: Clone + Debug + PartialEq + Eq + Send + Sync + 'static;

    /// The state a source's decoder starts with.
    fn decoding(cfg: &Self::Config) -> Self::Decoding;

    /// Whether its packets trace the instructions executed (ETMv3, PTM):
    /// its sources need a memory image, and a decode of them that walks
    /// no instruction found nothing. `false` for a protocol whose events
    /// are of other kinds (ITM/DWT).
    const INSTRUCTIONS: bool;

    /// How atoms walk the code (instruction trace; any value for other
    /// protocols, whose packets never reach the engine's walk).
    const ATOMS: Atoms;

    /// Whether the source keeps a return stack (PTM's ETMCR bit 29): its
    /// returns are given no address.
    fn return_stack(_cfg: &Self::Config) -> bool {
        false
    }

    /// Whether DMB and DSB are waypoints, from ETMCCER.
    fn barrier_waypoints(_cfg: &Self::Config, _etmccer: u32) -> bool {
        false
    }

    /// Decode one packet: hand the events it completes to `out`, or
    /// return the operation the engine is to run for it. Instruction
    /// trace returns its lowering ([`TraceOp`]), after running the
    /// packets that fill a stream on `engine`'s fast paths itself (and
    /// then returning `None`); another protocol makes its events itself
    /// (stamped with `engine.id()`) and returns `None`. (The decoder runs
    /// the returned operation at one place, where the engine's `run` is
    /// inlined and the operation stays in registers.)
    fn decode<F: FnMut(Event)>(
        state: &mut Self::Decoding,
        engine: &mut Engine,
        offset: u64,
        packet: &Self::Packet,
        out: &mut F,
    ) -> Option<TraceOp>;

    /// The operation a packet stands for (instruction trace);
    /// [`TraceOp::Ignored`] for what does not steer the engine.
    fn lower(_state: &Self::Decoding, _packet: &Self::Packet) -> TraceOp {
        TraceOp::Ignored
    }

    /// [`Self::lower`] of the packets where a decode can start in the
    /// middle of a trace (I-sync) or that set the context the next start
    /// needs (context ID, VMID); `None` for every other packet. A
    /// protocol without such packets is decoded from its start by one
    /// decoder, also in the parallel decode.
    fn sync_op(_state: &Self::Decoding, _packet: &Self::Packet) -> Option<TraceOp> {
        None
    }
}
