//! ITM and DWT (ARMv7-M instrumentation and data watchpoint trace, ARM
//! DDI 0403 appendix D4) through the seam: the `itm-packets` crate's
//! parser, the listing of its packets, and the events they make
//! (stimulus-port writes, exception trace, PC samples, data trace,
//! overflows and timestamps). It is not instruction trace: its sources
//! need no memory image and it makes its events itself.

use super::fields::{FieldWriter, TextWriter};
use super::regs::Regs;
use super::seam::PacketProtocol;
use super::shape::packet_crate_parser;
use crate::decode::engine::Engine;
use crate::decode::op::{Atoms, TraceOp};
use crate::event::{DataItem, Event, EventKind, ExceptionAction, TimeRelation};
use alloc::format;
use alloc::string::{String, ToString};
use core::convert::Infallible;
use itm_packets::{
    Config, DataTraceKind, Error, ExceptionAction as Action, Packet, Parser, TimestampRelation,
};

/// ITM/DWT: see the [module](self) documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Itm;

/// ITM_TCR bit 2, SYNCENA: the ITM sends synchronization packets.
pub const ITM_TCR_SYNCENA: u32 = 1 << 2;

/// The trace ID (ATB ID) in ITM_TCR bits 22:16, TraceBusID.
#[must_use]
pub const fn itm_tcr_trace_id(tcr: u32) -> u8 {
    ((tcr >> 16) & 0x7F) as u8
}

/// What an ITM source's decoder keeps: the global timestamp assembled
/// from its GTS1 (low-order bits) and GTS2 (high-order bits) packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ItmDecoding {
    /// Bits 25:0 of the global timestamp.
    low: u64,
    /// Bits above 25 (shifted down by 26): 0 until a GTS2 says otherwise
    /// (the counter starts at 0, and a GTS2 follows each change of them).
    high: u64,
    /// A GTS1 flagged that the high-order bits changed: its timestamp
    /// waits for the GTS2 that gives them.
    waiting: bool,
}

impl ItmDecoding {
    fn global(&self) -> u64 {
        self.high << 26 | self.low
    }
}

impl PacketProtocol for Itm {
    const NAME: &'static str = "itm";
    const FLAG: &'static str = "itm";
    const LABEL: &'static str = "ITM";
    const TITLE: &'static str = "ITM/DWT";
    const ABOUT: &'static str =
        "ITM/DWT, ARMv7-M instrumentation trace (stimulus ports, PC samples, exception trace)";
    const CODE: u8 = 2;
    /// Almost any bytes form ITM packets when read from a packet header.
    const RECOGNIZABLE: bool = false;
    /// ITM_TCR (in `etmcr`) of an ITM sending no synchronization packets,
    /// as on a serial wire output: ITMENA, DWTENA, trace ID 1.
    const TYPICAL_REGS: Regs = Regs {
        etmcr: 0x0001_0009,
        etmccer: 0,
        etmidr: 0,
    };

    type Config = Config;
    type ConfigError = Infallible;

    fn is_device_type(kind: &str) -> bool {
        kind == "ITM"
    }

    /// ITM_TCR (`ITMTCR` or `ITM_TCR`) gives the trace ID (TraceBusID,
    /// bits 22:16) and whether synchronization packets come (SYNCENA);
    /// it is kept in [`Regs::etmcr`].
    fn device_regs(reg: &dyn Fn(&str) -> Option<u64>) -> Result<(u8, Regs), String> {
        let tcr = reg("ITMTCR")
            .or_else(|| reg("ITM_TCR"))
            .ok_or_else(|| "ITMTCR missing".to_string())?;
        let tcr = u32::try_from(tcr).map_err(|_| format!("ITMTCR={tcr:#x} is out of range"))?;
        Ok((
            itm_tcr_trace_id(tcr),
            Regs {
                etmcr: tcr,
                etmccer: 0,
                etmidr: 0,
            },
        ))
    }

    /// Without synchronization packets (SYNCENA clear) the stream is read
    /// from its first byte as a packet header; with them, from the first
    /// synchronization packet (as OpenCSD does).
    fn config(regs: Regs) -> Result<Config, Infallible> {
        Ok(Config::new().with_aligned_start(regs.etmcr & ITM_TCR_SYNCENA == 0))
    }

    fn cycle_accurate(_cfg: &Config) -> bool {
        false
    }

    fn timestamps(_cfg: &Config) -> bool {
        false
    }

    packet_crate_parser!(itm_packets);

    /// A TPIU stream's bursts of ITM bytes begin at packet headers (the
    /// ITM sends whole packets): read from the first byte.
    fn in_stream(cfg: Config) -> Config {
        cfg.with_aligned_start(true)
    }

    /// Bytes were lost where the frames realigned: the packet under way
    /// is reported, and reading goes on at the next byte as a header.
    fn note_loss(parser: &mut Parser) -> Option<Error> {
        parser.assume_aligned()
    }

    fn error_skipped(e: &Error) -> u64 {
        e.skipped()
    }

    #[inline]
    fn kind(packet: &Packet) -> &'static str {
        packet.kind()
    }

    fn fields<W: FieldWriter>(packet: &Packet, w: &mut W) {
        match *packet {
            Packet::Sync | Packet::Overflow => {}
            Packet::LocalTimestamp(t) => {
                w.num("delta", u64::from(t.value));
                w.text("relation", t.relation.name());
            }
            Packet::GlobalTimestamp(g) => {
                w.num("bits", u64::from(g.width()));
                w.num("timestamp", if g.high { g.bits << 26 } else { g.bits });
                w.flag("high", g.high);
                if !g.high && g.len == 4 {
                    w.flag("wrap", g.wrap);
                    w.flag("clock_changed", g.clock_change);
                }
            }
            Packet::Extension(e) => {
                w.flag("hardware", e.hardware);
                w.num("value", u64::from(e.value));
            }
            Packet::Stimulus(s) => {
                w.num("port", u64::from(s.port));
                w.num("value", u64::from(s.value));
                w.num("size", u64::from(s.size));
            }
            Packet::EventCounter(c) => {
                w.flag("cpi", c.cpi());
                w.flag("exc", c.exc());
                w.flag("sleep", c.sleep());
                w.flag("lsu", c.lsu());
                w.flag("fold", c.fold());
                w.flag("cyc", c.cyc());
            }
            Packet::ExceptionTrace(x) => {
                w.num("exception", u64::from(x.number));
                w.text("action", x.action.name());
            }
            Packet::PcSample(s) => match s.pc {
                Some(pc) => w.address("address", pc),
                None => w.flag("sleep", true),
            },
            Packet::DataTrace(d) => {
                w.num("comparator", u64::from(d.comparator));
                w.text("item", d.kind.name());
                match d.kind {
                    DataTraceKind::Pc(pc) => w.address("address", pc),
                    DataTraceKind::Address(a) => w.num("data_address", u64::from(a)),
                    DataTraceKind::Value { value, size, write } => {
                        w.num("value", u64::from(value));
                        w.num("size", u64::from(size));
                        w.flag("write", write);
                    }
                }
            }
        }
    }

    fn text<W: TextWriter>(_packet: &Packet, _w: &mut W) -> bool {
        false
    }

    type Decoding = ItmDecoding;

    fn decoding(_cfg: &Config) -> ItmDecoding {
        ItmDecoding::default()
    }

    const INSTRUCTIONS: bool = false;

    /// Never used: no packet reaches the engine's walk.
    const ATOMS: Atoms = Atoms::PerInstruction;

    fn decode<F: FnMut(Event)>(
        state: &mut ItmDecoding,
        engine: &mut Engine,
        offset: u64,
        packet: &Packet,
        out: &mut F,
    ) -> Option<TraceOp> {
        let kind = match *packet {
            Packet::Stimulus(s) => EventKind::Stimulus {
                port: s.port,
                value: s.value,
                size: s.size,
            },
            Packet::ExceptionTrace(x) => EventKind::ExceptionTrace {
                number: x.number,
                action: match x.action {
                    Action::Enter => ExceptionAction::Enter,
                    Action::Exit => ExceptionAction::Exit,
                    Action::Return => ExceptionAction::Return,
                },
            },
            Packet::PcSample(s) => EventKind::PcSample { pc: s.pc },
            Packet::DataTrace(d) => EventKind::DataTrace {
                comparator: d.comparator,
                item: match d.kind {
                    DataTraceKind::Pc(pc) => DataItem::Pc(pc),
                    DataTraceKind::Address(a) => DataItem::Address(a),
                    DataTraceKind::Value { value, size, write } => {
                        DataItem::Value { value, size, write }
                    }
                },
            },
            Packet::Overflow => EventKind::Overflow,
            Packet::LocalTimestamp(t) => EventKind::LocalTimestamp {
                delta: t.value,
                relation: match t.relation {
                    TimestampRelation::Synchronous => TimeRelation::Sync,
                    TimestampRelation::TimestampDelayed => TimeRelation::TimestampDelayed,
                    TimestampRelation::PacketDelayed => TimeRelation::PacketDelayed,
                    TimestampRelation::BothDelayed => TimeRelation::BothDelayed,
                },
            },
            Packet::GlobalTimestamp(g) => {
                if g.high {
                    state.high = g.bits;
                    if !core::mem::take(&mut state.waiting) {
                        return None;
                    }
                } else {
                    let width = g.width();
                    let mask = (1u64 << width) - 1;
                    state.low = (state.low & !mask) | (g.bits & mask);
                    if g.wrap {
                        state.waiting = true;
                        return None;
                    }
                }
                EventKind::Timestamp {
                    value: state.global(),
                    cycles: None,
                }
            }
            Packet::Sync | Packet::Extension(_) | Packet::EventCounter(_) => return None,
        };
        out(Event {
            offset,
            id: engine.id(),
            kind,
        });
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryMap;
    use alloc::sync::Arc;
    use alloc::vec::Vec;
    use itm_packets::GlobalTimestamp;

    fn run(packets: &[Packet]) -> Vec<EventKind> {
        let mut engine = Engine::new(
            9,
            Atoms::PerInstruction,
            false,
            false,
            Arc::new(MemoryMap::new()),
        );
        let mut state = ItmDecoding::default();
        let mut out = Vec::new();
        for (i, p) in packets.iter().enumerate() {
            let op = Itm::decode(&mut state, &mut engine, i as u64, p, &mut |e: Event| {
                assert_eq!(e.id, 9);
                out.push(e.kind);
            });
            assert!(op.is_none());
        }
        out
    }

    /// A GTS1 that flags a change of the high-order bits waits for the
    /// GTS2; short GTS1s replace only their low-order bits.
    #[test]
    fn global_timestamps_assemble() {
        let t = 0x1234_5678_9ABC_u64;
        let short = GlobalTimestamp {
            high: false,
            bits: 0x7F,
            len: 1,
            wrap: false,
            clock_change: false,
        };
        let got = run(&[
            Packet::GlobalTimestamp(GlobalTimestamp::low(t, true, false)),
            Packet::GlobalTimestamp(GlobalTimestamp::high(t, false)),
            Packet::GlobalTimestamp(short),
        ]);
        assert_eq!(
            got,
            [
                EventKind::Timestamp {
                    value: t,
                    cycles: None
                },
                EventKind::Timestamp {
                    value: (t & !0x7F) | 0x7F,
                    cycles: None
                },
            ]
        );
    }

    /// The trace ID and the start come from ITM_TCR.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn device_registers() {
        let (id, regs) = Itm::device_regs(&|n| (n == "ITM_TCR").then_some(0x0023_000D)).unwrap();
        assert_eq!(id, 0x23);
        assert!(!Itm::config(regs).unwrap().aligned_start());
        let (_, regs) = Itm::device_regs(&|n| (n == "ITMTCR").then_some(0x0001_0009)).unwrap();
        assert!(Itm::config(regs).unwrap().aligned_start());
        assert!(Itm::device_regs(&|_| None).is_err());
    }
}
