//! ETMv3 (ETM architecture v3.0 to v3.5, ARM IHI 0014) through the seam:
//! the `etm-packets` crate's configuration and parser, the listing of
//! its packets, and their lowering into the engine's operations
//! ([`lower`]), one atom per instruction.

pub mod lower;

use super::fields::{FieldWriter, TextWriter};
use super::regs::{etm_device_regs, Regs};
use super::seam::PacketProtocol;
use super::shape::packet_crate_parser;
use crate::decode::engine::Engine;
use crate::decode::op::{Atoms, TraceOp};
use crate::event::Event;
use alloc::string::String;
use etm_packets::{Atom, Config, ConfigError, Error, ErrorKind, Packet, Parser};

/// ETMv3: see the [module](self) documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Etmv3;

/// What an ETMv3 source's decoder keeps beside the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtmDecoding {
    /// ETMCR bit 12: P-headers carry W (cycle) atoms.
    pub cycle_accurate: bool,
}

impl PacketProtocol for Etmv3 {
    const NAME: &'static str = "etmv3";
    const FLAG: &'static str = "etm";
    const LABEL: &'static str = "ETM";
    const TITLE: &'static str = "ETMv3";
    const ABOUT: &'static str = "ETM architecture v3.0 to v3.5";
    const CODE: u8 = 0;
    /// ETMv3.5 of a Cortex-A7: ETMIDR, and ETMCCER with timestamps
    /// implemented (natural binary, 64-bit).
    const TYPICAL_REGS: Regs = Regs {
        etmcr: 0,
        etmccer: 0x3440_08F2,
        etmidr: 0x410C_F250,
    };

    type Config = Config;
    type ConfigError = ConfigError;

    fn is_device_type(kind: &str) -> bool {
        kind == "ETM3" || kind.starts_with("ETM3.") || kind == "ETMV3" || kind.starts_with("ETMV3.")
    }

    fn device_regs(reg: &dyn Fn(&str) -> Option<u64>) -> Result<(u8, Regs), String> {
        etm_device_regs(reg)
    }

    fn config(regs: Regs) -> Result<Config, ConfigError> {
        Config::from_regs(regs.etmcr, regs.etmccer, regs.etmidr)
    }

    fn cycle_accurate(cfg: &Config) -> bool {
        cfg.cycle_accurate()
    }

    fn timestamps(cfg: &Config) -> bool {
        cfg.timestamps()
    }

    packet_crate_parser!(etm_packets);

    /// A TPIU stream's first A-sync is often cut off: synchronize at an
    /// I-sync too.
    fn in_stream(cfg: Config) -> Config {
        cfg.with_isync_sync(true)
    }

    fn note_loss(parser: &mut Parser) -> Option<Error> {
        parser.note_loss();
        None
    }

    fn error_skipped(e: &Error) -> u64 {
        match e.kind {
            ErrorKind::Unsynchronized { len } => len,
            ErrorKind::Truncated { len, .. } => len as u64,
            _ => 0,
        }
    }

    #[inline]
    fn kind(packet: &Packet) -> &'static str {
        packet.kind()
    }

    fn timestamp(parser: &Parser) -> u64 {
        parser.timestamp()
    }

    fn set_timestamp(parser: &mut Parser, value: u64) {
        parser.set_timestamp(value);
    }

    fn gray_timestamps(parser: &Parser) -> bool {
        parser.config().timestamp_gray()
    }

    #[inline]
    fn packet_timestamp(packet: &Packet) -> Option<(u64, u8)> {
        match packet {
            Packet::Timestamp(t) => Some((t.value, t.bits)),
            _ => None,
        }
    }

    fn same_but_timestamp(a: &Packet, b: &Packet) -> bool {
        match (a, b) {
            (Packet::Timestamp(s), Packet::Timestamp(t)) => {
                s.bits == t.bits && s.clock_changed == t.clock_changed
            }
            _ => a == b,
        }
    }

    #[inline(always)]
    fn fields<W: FieldWriter>(packet: &Packet, w: &mut W) {
        match *packet {
            Packet::ISync(s) => {
                if !s.is_data_only() {
                    w.address("address", s.address());
                    w.text("isa", s.isa().name());
                }
                w.flag("ns", s.ns());
                w.flag("hyp", s.hyp());
                w.text("reason", s.reason().name());
                if let Some(c) = s.cycle_count() {
                    w.num("cycles", u64::from(c));
                }
                if let Some(c) = s.context_id() {
                    w.num("context_id", u64::from(c));
                }
                if let Some(l) = s.lsip() {
                    w.num("lsip_address", u64::from(l.address));
                }
            }
            Packet::Atoms(a) => {
                w.letters("atoms", a.iter().map(atom_letter));
                if a.cycles > 0 {
                    w.num("cycles", u64::from(a.cycles));
                }
            }
            Packet::Branch(b) => {
                w.address("address", b.address);
                w.num("bits", u64::from(b.bits));
                if b.known_bits < 32 {
                    w.num("known_bits", u64::from(b.known_bits));
                }
                w.text("isa", b.isa.name());
                w.flag("ns", b.ns);
                w.flag("hyp", b.hyp);
                if let Some(e) = b.exception {
                    w.num("exception", u64::from(e.number));
                    w.flag("cancel", e.cancel);
                    w.num("resume", u64::from(e.resume));
                }
            }
            Packet::CycleCount(c) => w.num("cycles", u64::from(c)),
            Packet::ContextId(c) => w.num("context_id", u64::from(c)),
            Packet::Vmid(v) => w.num("vmid", u64::from(v)),
            Packet::Timestamp(t) => {
                w.num("bits", u64::from(t.bits));
                w.num("timestamp", t.value);
                w.flag("clock_changed", t.clock_changed);
            }
            Packet::NormalData(d) => {
                if let Some(a) = d.address {
                    w.num("data_address", u64::from(a));
                }
                if let Some(v) = d.value {
                    w.num("value", u64::from(v));
                }
                w.num("size", u64::from(d.size));
                w.flag("first", d.first);
            }
            Packet::ValueNotTraced(d) => {
                if let Some(a) = d.address {
                    w.num("data_address", u64::from(a));
                }
                w.flag("first", d.first);
            }
            Packet::OutOfOrderData(d) => {
                w.num("value", u64::from(d.value));
                w.num("size", u64::from(d.size));
                w.num("tag", u64::from(d.tag));
            }
            Packet::OutOfOrderPlaceholder(d) => {
                if let Some(a) = d.address {
                    w.num("data_address", u64::from(a));
                }
                w.flag("first", d.first);
                w.num("tag", u64::from(d.tag));
            }
            Packet::ASync
            | Packet::ExceptionEntry
            | Packet::ExceptionExit
            | Packet::Trigger
            | Packet::Ignore
            | Packet::StoreFailed
            | Packet::DataSuppressed => {}
        }
    }

    /// P-headers: most of a cycle-accurate stream, and a stream repeats
    /// few of them.
    #[inline]
    fn listing_key(packet: &Packet) -> Option<u64> {
        match packet {
            Packet::Atoms(a) => Some(
                u64::from(a.format.number()) << 40
                    | u64::from(a.count) << 32
                    | u64::from(a.executed) << 16
                    | u64::from(a.cycles),
            ),
            _ => None,
        }
    }

    #[inline(always)]
    fn text<W: TextWriter>(packet: &Packet, w: &mut W) -> bool {
        match packet {
            Packet::Atoms(a) => {
                w.put("P-header ");
                if a.is_empty() {
                    w.put("(empty)");
                }
                for atom in a.iter() {
                    w.byte(atom_letter(atom));
                }
                w.put(" (");
                w.dec(u64::from(a.count));
                w.put(" instruction");
                if a.count != 1 {
                    w.byte(b's');
                }
                if a.cycles > 0 {
                    w.put(", ");
                    w.dec(u64::from(a.cycles));
                    w.put(" cycle");
                    if a.cycles != 1 {
                        w.byte(b's');
                    }
                }
                w.byte(b')');
            }
            Packet::Branch(p) if p.exception.is_none() => {
                w.put("Branch addr=0x");
                w.hex8(p.address);
                w.put(" (");
                w.dec(u64::from(p.bits));
                w.put(" bits) isa=");
                w.put(p.isa.name());
                w.put(if p.ns { " ns" } else { " s" });
                if p.hyp {
                    w.put(" hyp");
                }
            }
            Packet::ASync => w.put("A-sync"),
            _ => return false,
        }
        true
    }

    type Decoding = EtmDecoding;

    fn decoding(cfg: &Config) -> EtmDecoding {
        EtmDecoding {
            cycle_accurate: cfg.cycle_accurate(),
        }
    }

    const INSTRUCTIONS: bool = true;

    const ATOMS: Atoms = Atoms::PerInstruction;

    /// P-headers, most of a cycle-accurate stream, go to the engine's
    /// fast path without an operation being made; the rest are lowered.
    #[inline(always)]
    fn decode<F: FnMut(Event)>(
        state: &mut EtmDecoding,
        engine: &mut Engine,
        offset: u64,
        packet: &Packet,
        out: &mut F,
    ) -> Option<TraceOp> {
        if let Packet::Atoms(a) = packet {
            let (count, executed, cycles) = lower::p_header(a, state.cycle_accurate);
            engine.run_p_header(offset, count, executed, cycles, out);
            None
        } else {
            Some(lower::lower(packet, state.cycle_accurate))
        }
    }

    #[inline]
    fn lower(state: &EtmDecoding, packet: &Packet) -> TraceOp {
        lower::lower(packet, state.cycle_accurate)
    }

    #[inline]
    fn sync_op(state: &EtmDecoding, packet: &Packet) -> Option<TraceOp> {
        match packet {
            Packet::ISync(_) | Packet::ContextId(_) | Packet::Vmid(_) => {
                Some(lower::lower(packet, state.cycle_accurate))
            }
            _ => None,
        }
    }
}

/// An atom's letter: `E` executed, `N` not executed, `W` a cycle.
#[inline(always)]
fn atom_letter(a: Atom) -> u8 {
    match a {
        Atom::E => b'E',
        Atom::N => b'N',
        Atom::W => b'W',
    }
}
