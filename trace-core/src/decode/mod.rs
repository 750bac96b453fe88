//! The instruction-flow decoder (decompressor).
//!
//! Packets of either protocol are lowered into protocol-neutral
//! [`TraceOp`]s ([`lower_etm`], [`lower_ptm`]), which one [`engine`] runs
//! against a [`MemoryImage`]: walking the code with isa-decode, through a
//! [`block`] cache, and emitting [`Event`]s.
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

pub mod block;
pub mod engine;
pub mod lower_etm;
pub mod lower_ptm;
pub mod op;
pub mod rstack;

pub use op::TraceOp;

use crate::demux::{AnyPacket, SourceConfig};
use crate::event::Event;
use crate::memory::MemoryImage;
use engine::{Engine, Flavor};
use std::sync::Arc;

/// ETMCCER bit 24 (PTM): DMB and DSB are waypoints.
pub const ETMCCER_BARRIER_WAYPOINTS: u32 = 1 << 24;

/// How to decode one trace source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderConfig {
    /// Trace ID stamped on the events.
    pub id: u8,
    /// The source's packet configuration.
    pub source: SourceConfig,
    /// DMB/DSB are waypoints (PTM ETMCCER bit 24).
    pub barrier_waypoints: bool,
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
        }
    }

    /// Same, with DMB/DSB waypoints set from a PTM's ETMCCER value (an
    /// ETMv3 source traces every instruction, so the bit does not apply).
    #[must_use]
    pub fn with_etmccer(mut self, etmccer: u32) -> DecoderConfig {
        self.barrier_waypoints =
            matches!(self.source, SourceConfig::Ptm(_)) && etmccer & ETMCCER_BARRIER_WAYPOINTS != 0;
        self
    }
}

/// Decodes one trace source's packets into events.
#[derive(Debug)]
pub struct Decoder {
    cfg: DecoderConfig,
    engine: Engine,
    etm_cycle_accurate: bool,
}

impl Decoder {
    /// A decoder reading code from `memory`.
    #[must_use]
    pub fn new(cfg: DecoderConfig, memory: Arc<dyn MemoryImage>) -> Decoder {
        let (flavor, rs, ca) = match cfg.source {
            SourceConfig::Etm(c) => (Flavor::Etm, false, c.cycle_accurate()),
            SourceConfig::Ptm(c) => (Flavor::Ptm, c.return_stack(), false),
        };
        Decoder {
            cfg,
            engine: Engine::new(cfg.id, flavor, rs, cfg.barrier_waypoints, memory),
            etm_cycle_accurate: ca,
        }
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
        let op = match (packet, self.cfg.source) {
            (AnyPacket::Ptm(p), SourceConfig::Ptm(_)) => lower_ptm::lower(p),
            (AnyPacket::Etm(p), SourceConfig::Etm(_)) => {
                lower_etm::lower(p, self.etm_cycle_accurate)
            }
            _ => TraceOp::Ignored,
        };
        self.engine.run(offset, &op, out);
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
}
