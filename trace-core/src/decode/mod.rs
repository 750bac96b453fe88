//! The instruction-flow decoder (decompressor).
//!
//! Packets of an instruction-trace protocol are lowered into
//! protocol-neutral [`TraceOp`]s ([`Decoder::lower`]; each protocol's
//! lowering is in its module of [`crate::protocol`]), which one
//! [`Engine`] runs against a [`MemoryImage`]: walking the code with
//! isa-decode, through a cache of decoded blocks and a return stack, and
//! emitting [`Event`]s. A [`Decoder`] hands each packet to its protocol
//! ([`PacketProtocol::decode`]), which drives the engine or, for a
//! protocol that is not instruction trace, makes its events itself.
//!
//! ```no_run
//! use std::sync::Arc;
//! use trace_core::decode::{Decoder, DecoderConfig};
//! use trace_core::demux::SourceConfig;
//! use trace_core::memory::MemoryMap;
//!
//! let memory = Arc::new(MemoryMap::new());
//! let cfg = DecoderConfig::new(0x13, &SourceConfig::Ptm(ptm_packets::Config::default()));
//! let mut decoder = Decoder::new(cfg, memory);
//! let mut events = Vec::new();
//! // for each (offset, packet) of trace ID 0x13:
//! //     decoder.push(offset, &packet, &mut |e| events.push(e));
//! decoder.finish(&mut |e| events.push(e));
//! ```

mod block;
pub(crate) mod engine;
pub mod op;
mod rstack;

pub use crate::protocol::ptm::ETMCCER_BARRIER_WAYPOINTS;
pub use engine::Engine;
pub use op::{Atoms, TraceOp};

use crate::event::Event;
use crate::memory::MemoryImage;
use crate::protocol::registry::for_each_protocol;
use crate::protocol::{AnyPacket, PacketProtocol, Protocol, Regs, RegsError, SourceConfig};
use alloc::sync::Arc;

/// How to decode one trace source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderConfig {
    /// Trace ID stamped on the events.
    pub id: u8,
    /// The source's packet configuration.
    pub source: SourceConfig,
    /// DMB/DSB are waypoints (PTM ETMCCER bit 24).
    pub barrier_waypoints: bool,
    /// ETMv3: one range per run of instructions rather than per
    /// instruction (see [`DecoderConfig::with_block_ranges`]).
    pub block_ranges: bool,
}

impl DecoderConfig {
    /// A configuration for trace ID `id` with the source's packet
    /// configuration (return stack and cycle-accurate mode come from it).
    #[must_use]
    pub fn new(id: u8, source: &SourceConfig) -> DecoderConfig {
        DecoderConfig {
            id,
            source: *source,
            barrier_waypoints: false,
            block_ranges: false,
        }
    }

    /// Same, with ETMv3's instructions handed on by runs: each run of
    /// instructions inside one block, up to and including a waypoint, a
    /// conditional instruction or an instruction that failed its
    /// condition (across P-headers and their W atoms while no other
    /// packet comes between), is one range with the cycles of its
    /// instructions summed. The instructions and their order, what a
    /// range says of its last instruction and the cycles' total are those
    /// of one range per instruction (OpenCSD's elements, the default);
    /// the instructions before a range's last one all executed. PTM
    /// reports ranges by waypoints either way.
    #[must_use]
    pub fn with_block_ranges(mut self, on: bool) -> DecoderConfig {
        self.block_ranges = on;
        self
    }

    /// Same, with DMB/DSB waypoints set from an ETMCCER value as the
    /// source's protocol reads it (a PTM's bit 24; an ETMv3 source traces
    /// every instruction, so the bit does not apply).
    #[must_use]
    pub fn with_etmccer(mut self, etmccer: u32) -> DecoderConfig {
        self.barrier_waypoints = self.source.barrier_waypoints(etmccer);
        self
    }
}

impl Regs {
    /// The decoder configuration of trace ID `id`, a source of `protocol`
    /// with these registers (DMB/DSB waypoints from ETMCCER).
    ///
    /// # Errors
    ///
    /// As [`Regs::source_config`].
    pub fn decoder_config(self, protocol: Protocol, id: u8) -> Result<DecoderConfig, RegsError> {
        Ok(DecoderConfig::new(id, &self.source_config(protocol)?).with_etmccer(self.etmccer))
    }
}

/// What a source's decoder keeps for its protocol beside the engine
/// ([`PacketProtocol::Decoding`]), and the `match`es that hand a packet
/// to its protocol.
macro_rules! decode_state {
    ($( $(#[$doc:meta])* $name:ident ($var:ident) = $imp:ty; )*) => {
        #[derive(Debug, Clone, PartialEq, Eq)]
        enum DecodeState {
            $( $var(<$imp as PacketProtocol>::Decoding), )*
        }

        impl DecodeState {
            /// The state of a fresh decoder of a source configured as
            /// `source`.
            fn of(source: &SourceConfig) -> DecodeState {
                match source {
                    $( SourceConfig::$var(c) => DecodeState::$var(<$imp>::decoding(c)), )*
                }
            }

            /// The state of a fresh decoder of a source configured as
            /// `cfg`, and the engine it runs.
            fn new(cfg: &DecoderConfig, memory: Arc<dyn MemoryImage>) -> (DecodeState, Engine) {
                let (state, mut engine) = match &cfg.source {
                    $( SourceConfig::$var(c) => (
                        DecodeState::$var(<$imp>::decoding(c)),
                        Engine::new(
                            cfg.id,
                            <$imp>::ATOMS,
                            <$imp>::return_stack(c),
                            cfg.barrier_waypoints,
                            memory,
                        ),
                    ), )*
                };
                engine.set_block_ranges(cfg.block_ranges);
                (state, engine)
            }

            /// Decode `packet` on `engine` (a packet of another protocol
            /// is ignored).
            #[inline(always)]
            fn decode<F: FnMut(Event)>(
                &mut self,
                engine: &mut Engine,
                offset: u64,
                packet: &AnyPacket,
                out: &mut F,
            ) {
                let op = match (packet, self) {
                    $( (AnyPacket::$var(p), DecodeState::$var(s)) => <$imp>::decode(s, engine, offset, p, out), )*
                    #[allow(unreachable_patterns)]
                    _ => Some(TraceOp::Ignored),
                };
                if let Some(op) = op {
                    engine.run_inline(offset, &op, out);
                }
            }

            /// The operation `packet` stands for.
            #[inline]
            fn lower(&self, packet: &AnyPacket) -> TraceOp {
                match (packet, self) {
                    $( (AnyPacket::$var(p), DecodeState::$var(s)) => <$imp>::lower(s, p), )*
                    #[allow(unreachable_patterns)]
                    _ => TraceOp::Ignored,
                }
            }

            /// The operation of a packet where a part can start or that
            /// sets the context, if `packet` is one.
            #[inline]
            fn sync_op(&self, packet: &AnyPacket) -> Option<TraceOp> {
                match (packet, self) {
                    $( (AnyPacket::$var(p), DecodeState::$var(s)) => <$imp>::sync_op(s, p), )*
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
        }
    };
}

for_each_protocol!(decode_state);

/// Decodes one trace source's packets into events.
#[derive(Debug)]
pub struct Decoder {
    cfg: DecoderConfig,
    engine: Engine,
    state: DecodeState,
}

impl Decoder {
    /// A decoder reading code from `memory`.
    #[must_use]
    pub fn new(cfg: DecoderConfig, memory: Arc<dyn MemoryImage>) -> Decoder {
        let (state, engine) = DecodeState::new(&cfg, memory);
        Decoder { cfg, engine, state }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &DecoderConfig {
        &self.cfg
    }

    /// Decode the packet whose first byte lies at `offset`, handing every
    /// event it completes to `out`. A packet of the other protocol is
    /// ignored (counted in [`Decoder::ignored`]).
    #[inline]
    pub fn push<F: FnMut(Event)>(&mut self, offset: u64, packet: &AnyPacket, out: &mut F) {
        self.state.decode(&mut self.engine, offset, packet, out);
    }

    /// Run a protocol-neutral operation directly.
    pub fn run_op<F: FnMut(Event)>(&mut self, offset: u64, op: &TraceOp, out: &mut F) {
        self.engine.run(offset, op, out);
    }

    /// The packet parser reported damaged input at `offset`: the position
    /// is lost until the next address packet or I-sync.
    pub fn packet_error<F: FnMut(Event)>(&mut self, offset: u64, out: &mut F) {
        self.engine.lose_sync(offset, out);
    }

    /// End of the trace: flush held-back events and report the end.
    pub fn finish<F: FnMut(Event)>(&mut self, out: &mut F) {
        self.engine.finish(out);
    }

    /// Packets that carried nothing for instruction flow (data trace,
    /// triggers, ignore packets).
    #[must_use]
    pub fn ignored(&self) -> u64 {
        self.engine.ignored()
    }

    /// The operation `packet` stands for in this source (what
    /// [`Decoder::push`] runs; a packet of the other protocol is
    /// [`TraceOp::Ignored`]).
    #[must_use]
    pub fn lower(&self, packet: &AnyPacket) -> TraceOp {
        self.state.lower(packet)
    }

    /// Take out the decoder's cache of instructions decoded from its
    /// memory image, leaving it an empty one (it goes on as before,
    /// decoding them again when it needs them). Give the cache to another
    /// decoder of the same image with [`Decoder::set_cache`] to spare it
    /// that work: the parts of a trace decoded on one thread share one.
    pub fn take_cache(&mut self) -> CodeCache {
        CodeCache {
            memory: Arc::clone(self.engine.memory()),
            barriers: self.cfg.barrier_waypoints,
            blocks: self.engine.take_cache(),
        }
    }

    /// Use `cache` from [`Decoder::take_cache`] instead of this decoder's
    /// own, when it was made for the same memory image (the same `Arc`)
    /// and barrier setting; returns whether it was taken (otherwise it is
    /// dropped). What the decoder emits does not depend on its cache.
    pub fn set_cache(&mut self, cache: CodeCache) -> bool {
        if !self.engine.same_code(&cache.memory, cache.barriers) {
            return false;
        }
        self.engine.set_cache(cache.blocks);
        true
    }

    /// A decoder that joins a trace already under way at the I-sync
    /// `packet` (at `offset`), for decoding a trace in independent parts.
    /// `before` is the context the packets before the I-sync set
    /// ([`SyncPoints`] tracks it). The I-sync's own events are not
    /// emitted: they belong to the decoder that runs up to and including
    /// it. Returns `None` when `packet` is not an I-sync of this source.
    ///
    /// Its events are the ones the decoder of the whole trace emits only
    /// if [`Decoder::join`] says so.
    #[must_use]
    pub fn at_sync(
        cfg: DecoderConfig,
        memory: Arc<dyn MemoryImage>,
        before: SyncContext,
        offset: u64,
        packet: &AnyPacket,
    ) -> Option<Decoder> {
        let mut d = Decoder::new(cfg, memory);
        let TraceOp::Sync(sync) = d.lower(packet) else {
            return None;
        };
        d.engine
            .start_at_sync(offset, &sync, before.context_id, before.vmid);
        Some(d)
    }

    /// For a decoder made by [`Decoder::at_sync`] that has since run
    /// packets: whether it emitted exactly what `prev` would have emitted
    /// for them, where `prev` is the decoder of the trace before, having
    /// run every packet up to and including that I-sync. When it did, this
    /// decoder takes over `prev`'s return stack and counters (its state is
    /// then the whole trace's) and `true` is returned; otherwise nothing
    /// changes, and the packets must be run again on `prev`.
    ///
    /// The check compares the state right after the I-sync (position,
    /// instruction set, security state, context, held-back event) with
    /// `prev`'s, and requires that no return-stack pop reached below the
    /// entries pushed since the I-sync unless `prev`'s stack is empty.
    ///
    /// A decoder marked with [`Decoder::mark_share`] is checked the same
    /// way from its mark, and its return stack there must be the newest
    /// entries of `prev`'s.
    pub fn join(&mut self, prev: &Decoder) -> bool {
        self.cfg == prev.cfg && self.engine.join(&prev.engine)
    }

    /// For a decoder made by [`Decoder::at_sync`] that has since run
    /// packets up to and including a later I-sync, whose events were
    /// dropped (a warm-up): make that I-sync the start of the share that
    /// [`Decoder::join`] checks. The return addresses pushed during the
    /// warm-up and not popped stay on the stack, so returns to them need
    /// nothing from before the warm-up: with a return stack, a share
    /// started at a bare I-sync is refused when a return pops an entry
    /// pushed before it, and one with a warm-up only when the return's
    /// call is older than the warm-up too.
    pub fn mark_share(&mut self) {
        self.engine.mark_share();
    }
}

/// Instructions a [`Decoder`] decoded from its memory image, moved from
/// one decoder to another with [`Decoder::take_cache`] and
/// [`Decoder::set_cache`].
pub struct CodeCache {
    memory: Arc<dyn MemoryImage>,
    barriers: bool,
    blocks: block::BlockCache,
}

impl core::fmt::Debug for CodeCache {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CodeCache")
            .field("blocks", &self.blocks)
            .finish_non_exhaustive()
    }
}

impl CodeCache {
    /// Number of cached blocks.
    #[must_use]
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Number of cached instructions (what its memory use follows).
    #[must_use]
    pub fn instructions(&self) -> usize {
        self.blocks.arena.len()
    }
}

/// The context (context ID, VMID) that packets set, as the decoder would
/// follow it: it changes only with packets, never with the program flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncContext {
    /// Last context ID.
    pub context_id: Option<u32>,
    /// Last VMID.
    pub vmid: Option<u8>,
}

/// Finds the I-syncs at which a source's packet stream can be split into
/// parts decoded independently ([`Decoder::at_sync`]), and tracks the
/// context each part starts with.
#[derive(Debug, Clone)]
pub struct SyncPoints {
    state: DecodeState,
    context: SyncContext,
}

impl SyncPoints {
    /// For a source configured as `cfg`.
    #[must_use]
    pub fn new(cfg: &DecoderConfig) -> SyncPoints {
        SyncPoints {
            state: DecodeState::of(&cfg.source),
            context: SyncContext::default(),
        }
    }

    /// Follow the next packet of the source. Returns the context before it
    /// when the packet is an I-sync a part can start at.
    #[inline]
    pub fn observe(&mut self, packet: &AnyPacket) -> Option<SyncContext> {
        let op = self.state.sync_op(packet)?;
        let before = self.context;
        match op {
            TraceOp::Sync(s) => {
                if s.context_id.is_some() {
                    self.context.context_id = s.context_id;
                }
                Some(before)
            }
            TraceOp::ContextId(c) => {
                self.context.context_id = Some(c);
                None
            }
            TraceOp::Vmid(v) => {
                self.context.vmid = Some(v);
                None
            }
            _ => None,
        }
    }
}
