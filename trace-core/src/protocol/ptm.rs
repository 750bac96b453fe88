//! PTM (Program Flow Trace v1.0/v1.1, ARM IHI 0035) through the seam:
//! the `ptm-packets` crate's configuration and parser, the listing of
//! its packets, and their lowering into the engine's operations
//! ([`lower`]), one atom per waypoint.

pub mod lower;

use super::fields::{FieldWriter, TextWriter};
use super::regs::{etm_device_regs, Regs};
use super::seam::PacketProtocol;
use super::shape::packet_crate_parser;
use crate::decode::engine::Engine;
use crate::decode::op::{Atoms, TraceOp};
use crate::event::Event;
use alloc::string::String;
use ptm_packets::{Atom, Config, ConfigError, Error, ErrorKind, Packet, Parser};

/// PTM: see the [module](self) documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ptm;

/// ETMCCER bit 24 (PTM): DMB and DSB are waypoints.
pub const ETMCCER_BARRIER_WAYPOINTS: u32 = 1 << 24;

impl PacketProtocol for Ptm {
    const NAME: &'static str = "ptm";
    const FLAG: &'static str = "ptm";
    const LABEL: &'static str = "PTM";
    const TITLE: &'static str = "PTM/PFT";
    const ABOUT: &'static str = "PTM, Program Flow Trace v1.0/v1.1";
    const CODE: u8 = 1;
    /// PFT 1.1 of a Cortex-A15: ETMIDR and ETMCCER.
    const TYPICAL_REGS: Regs = Regs {
        etmcr: 0,
        etmccer: 0x34C0_1AC2,
        etmidr: 0x411C_F312,
    };

    type Config = Config;
    type ConfigError = ConfigError;

    fn is_device_type(kind: &str) -> bool {
        kind.starts_with("PTM") || kind.starts_with("PFT")
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

    packet_crate_parser!(ptm_packets);

    fn error_skipped(e: &Error) -> u64 {
        match e.kind {
            ErrorKind::Unsynchronized { len } | ErrorKind::Truncated { len, .. } => len,
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
        !parser.config().timestamp_binary()
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
                s.bits == t.bits && s.clock_changed == t.clock_changed && s.cycles == t.cycles
            }
            _ => a == b,
        }
    }

    #[inline(always)]
    fn fields<W: FieldWriter>(packet: &Packet, w: &mut W) {
        match *packet {
            Packet::ISync(s) => {
                w.address("address", s.address);
                w.text("isa", s.isa.name());
                w.flag("ns", s.ns);
                w.flag("hyp", s.hyp);
                w.text("reason", s.reason.name());
                if let Some(c) = s.cycles {
                    w.num("cycles", u64::from(c));
                }
                if let Some(c) = s.context_id {
                    w.num("context_id", u64::from(c));
                }
            }
            Packet::Atom { atoms, cycles } => {
                w.letters("atoms", atoms.iter().map(atom_letter));
                if let Some(c) = cycles {
                    w.num("cycles", u64::from(c));
                }
            }
            Packet::BranchAddress(b) => {
                w.address("address", b.address);
                w.num("bits", u64::from(b.bits));
                w.text("isa", b.isa.name());
                if let Some(e) = b.exception {
                    w.flag("ns", e.ns);
                    if let Some(h) = e.hyp {
                        w.flag("hyp", h);
                    }
                    w.flag("alt_isa", e.alt_isa);
                }
                if let Some(c) = b.cycles {
                    w.num("cycles", u64::from(c));
                }
                if let Some(e) = b.exception {
                    w.num("exception", u64::from(e.number));
                }
            }
            Packet::WaypointUpdate(u) => {
                w.address("address", u.address);
                w.num("bits", u64::from(u.bits));
                w.text("isa", u.isa.name());
                if let Some(a) = u.alt_isa {
                    w.flag("alt_isa", a);
                }
            }
            Packet::ContextId(c) => w.num("context_id", u64::from(c)),
            Packet::Vmid(v) => w.num("vmid", u64::from(v)),
            Packet::Timestamp(t) => {
                w.num("bits", u64::from(t.bits));
                if let Some(c) = t.cycles {
                    w.num("cycles", u64::from(c));
                }
                w.num("timestamp", t.value);
                w.flag("clock_changed", t.clock_changed);
            }
            Packet::ASync | Packet::Trigger | Packet::ExceptionReturn | Packet::Ignore => {}
        }
    }

    /// Atoms without a cycle count: most of a stream that is not
    /// cycle-accurate, and there are 62 of them.
    #[inline]
    fn listing_key(packet: &Packet) -> Option<u64> {
        match packet {
            Packet::Atom {
                atoms,
                cycles: None,
            } => Some(u64::from(atoms.len() as u8) << 8 | u64::from(atoms.e_bits())),
            _ => None,
        }
    }

    #[inline(always)]
    fn text<W: TextWriter>(packet: &Packet, w: &mut W) -> bool {
        match packet {
            Packet::Atom { atoms, cycles } => {
                w.put("atom");
                for a in atoms.iter() {
                    w.byte(b' ');
                    w.byte(atom_letter(a));
                }
                text_cycles(w, *cycles);
            }
            Packet::BranchAddress(p) if p.exception.is_none() => {
                w.put("branch addr=0x");
                w.hex8(p.address);
                w.put(" bits=");
                w.dec(u64::from(p.bits));
                w.put(" isa=");
                w.put(p.isa.name());
                text_cycles(w, p.cycles);
            }
            Packet::ASync => w.put("a-sync"),
            _ => return false,
        }
        true
    }

    type Decoding = ();

    fn decoding(_cfg: &Config) {}

    const INSTRUCTIONS: bool = true;

    const ATOMS: Atoms = Atoms::PerWaypoint;

    fn return_stack(cfg: &Config) -> bool {
        cfg.return_stack()
    }

    fn barrier_waypoints(_cfg: &Config, etmccer: u32) -> bool {
        etmccer & ETMCCER_BARRIER_WAYPOINTS != 0
    }

    /// Atoms, most of a stream, go to the engine's fast path without an
    /// operation being made; the rest are lowered.
    #[inline(always)]
    fn decode<F: FnMut(Event)>(
        _state: &mut (),
        engine: &mut Engine,
        offset: u64,
        packet: &Packet,
        out: &mut F,
    ) -> Option<TraceOp> {
        if let Packet::Atom { atoms, cycles } = packet {
            engine.run_waypoint_atoms(offset, atoms.len() as u8, atoms.e_bits(), *cycles, out);
            None
        } else {
            Some(lower::lower(packet))
        }
    }

    #[inline]
    fn lower(_state: &(), packet: &Packet) -> TraceOp {
        lower::lower(packet)
    }

    #[inline]
    fn sync_op(_state: &(), packet: &Packet) -> Option<TraceOp> {
        match packet {
            Packet::ISync(_) | Packet::ContextId(_) | Packet::Vmid(_) => Some(lower::lower(packet)),
            _ => None,
        }
    }
}

/// ` cycles=N` of a packet that carries a count.
#[inline(always)]
fn text_cycles<W: TextWriter>(w: &mut W, cycles: Option<u32>) {
    if let Some(c) = cycles {
        w.put(" cycles=");
        w.dec(u64::from(c));
    }
}

/// An atom's letter: `E` executed, `N` not executed.
#[inline(always)]
fn atom_letter(a: Atom) -> u8 {
    match a {
        Atom::E => b'E',
        Atom::N => b'N',
    }
}
