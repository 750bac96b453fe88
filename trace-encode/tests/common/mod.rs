//! Round-trip helpers: decode encoded trace with the toolkit's own packet
//! parsers (through the same demultiplexer real captures go through) and
//! decoder, and compare the result with the flow record by record.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::{Demux, Item, SourceConfig};
use trace_core::event::{EventKind, Isa};
use trace_core::frames::FrameMode;
use trace_core::memory::{MemoryImage, MemoryMap, Space};
use trace_core::protocol::Atoms;
use trace_encode::{
    a_profile_exception_number, m_profile_exception_number, ExceptionKind, FlowItem, Protocol,
};

/// One record of a flow as the trace shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rec {
    /// An instruction; `atom` is its E/N atom when the trace carries one
    /// (ETMv3: every instruction; PTM: waypoints only).
    Insn {
        addr: u32,
        isa: Isa,
        size: u8,
        atom: Option<bool>,
    },
    Exception {
        number: u16,
        ret: Option<u32>,
    },
    ExceptionReturn,
}

/// A source to decode out of a capture.
pub struct Source {
    pub id: u8,
    pub protocol: Protocol,
    pub config: SourceConfig,
    pub decoder: DecoderConfig,
    pub memory: Arc<MemoryMap>,
}

/// What decoding one source gave.
#[derive(Debug, Default)]
pub struct Decoded {
    pub recs: Vec<Rec>,
    pub packets: u64,
    pub errors: Vec<String>,
    pub skipped: u64,
    /// W atoms and cycle counts seen, summed.
    pub cycles: u64,
}

/// Decodes `capture` (laid out as `layout`) for each source.
pub fn decode(
    capture: &[u8],
    layout: FrameMode,
    sources: &[Source],
    chunk: usize,
) -> HashMap<u8, Decoded> {
    decode_among(capture, layout, sources, chunk, &[])
}

/// [`decode`] of a capture that also holds the sources `others`, which are
/// not decoded.
pub fn decode_among(
    capture: &[u8],
    layout: FrameMode,
    sources: &[Source],
    chunk: usize,
    others: &[u8],
) -> HashMap<u8, Decoded> {
    let mut demux = Demux::new(layout, sources.iter().map(|s| (s.id, s.config)), None);
    let mut items = Vec::new();
    for c in capture.chunks(chunk.max(1)) {
        demux.feed(c, &mut items);
    }
    demux.finish(&mut items);
    let mut decoders: HashMap<u8, (Decoder, Vec<trace_core::event::Event>, Decoded)> = sources
        .iter()
        .map(|s| {
            let mem: Arc<dyn MemoryImage> = s.memory.clone();
            (
                s.id,
                (Decoder::new(s.decoder, mem), Vec::new(), Decoded::default()),
            )
        })
        .collect();
    for item in items {
        match item {
            Item::Packet { id, offset, packet } => {
                if let Some((d, ev, out)) = decoders.get_mut(&id) {
                    out.packets += 1;
                    d.push(offset, &packet, &mut |e| ev.push(e));
                }
            }
            Item::Error { id, error } => {
                if let Some((_, _, out)) = decoders.get_mut(&id) {
                    out.errors.push(error.to_string());
                }
            }
            Item::Unconfigured { run } if others.contains(&run.id) => {}
            Item::Unconfigured { run } => panic!("unconfigured bytes under ID {:#x}", run.id),
            Item::Frame(_) => {}
        }
    }
    let mut result = HashMap::new();
    for s in sources {
        let (mut d, mut ev, mut out) = decoders.remove(&s.id).expect("source");
        d.finish(&mut |e| ev.push(e));
        if let Some(st) = demux.stats(s.id) {
            out.skipped = st.skipped;
            assert_eq!(st.bytes, st.in_packets + st.skipped);
        }
        events_to_recs(
            &ev,
            s.protocol,
            &*s.memory,
            s.decoder.barrier_waypoints,
            &mut out,
        );
        result.insert(s.id, out);
    }
    result
}

/// The records the trace of `items` must decode to, from instruction
/// `start` on: instructions that raised a fault are left out (they did not
/// complete), exception numbers in the protocol's numbering.
pub fn expected(
    items: &[FlowItem],
    start: u64,
    protocol: Protocol,
    memory: &dyn MemoryImage,
    barriers: bool,
) -> Vec<Rec> {
    let mut out = Vec::new();
    let mut index = 0u64;
    let mut started = false;
    for (i, item) in items.iter().enumerate() {
        match *item {
            FlowItem::Insn {
                addr,
                isa,
                size,
                cond,
            } => {
                index += 1;
                if index <= start {
                    continue;
                }
                started = true;
                let cancelled = cond.passed()
                    && matches!(items.get(i + 1), Some(FlowItem::Exception { kind, ret, .. })
                        if kind.is_synchronous_fault() && *ret == addr);
                if cancelled {
                    continue;
                }
                let atom = match protocol.atoms() {
                    Atoms::PerInstruction => Some(cond.passed()),
                    Atoms::PerWaypoint => {
                        let mut buf = [0u8; 4];
                        let n = memory.read(Space::Secure, addr, &mut buf);
                        let insn = isa_decode::decode(isa, &buf[..n], addr).expect("code");
                        insn.is_waypoint_with(barriers).then_some(cond.passed())
                    }
                };
                out.push(Rec::Insn {
                    addr,
                    isa,
                    size,
                    atom,
                });
            }
            FlowItem::Exception { kind, ret, .. } if started => {
                let number = match (protocol, kind) {
                    (Protocol::Etmv3, ExceptionKind::M(n)) => m_profile_exception_number(n),
                    (_, k) => a_profile_exception_number(k),
                };
                out.push(Rec::Exception {
                    number,
                    ret: Some(ret),
                });
            }
            FlowItem::ExceptionReturn { .. } if started => out.push(Rec::ExceptionReturn),
            FlowItem::Halt => break,
            _ => {}
        }
    }
    out
}

/// Compares record lists; on a difference, panics showing where.
pub fn compare(what: &str, got: &[Rec], want: &[Rec]) {
    let first = got.iter().zip(want).position(|(g, w)| g != w);
    if first.is_none() && got.len() == want.len() {
        return;
    }
    let at = first.unwrap_or(got.len().min(want.len()));
    let lo = at.saturating_sub(4);
    panic!(
        "{what}: decoded flow differs at record {at} (decoded {}, expected {})\n decoded: {:#?}\n expected: {:#?}",
        got.len(),
        want.len(),
        &got[lo..(at + 4).min(got.len())],
        &want[lo..(at + 4).min(want.len())]
    );
}

/// Instructions in a record list.
pub fn insn_count(recs: &[Rec]) -> usize {
    recs.iter()
        .filter(|r| matches!(r, Rec::Insn { .. }))
        .count()
}

/// Turns decoder events into records (and errors, cycle sums).
pub fn events_to_recs(
    ev: &[trace_core::event::Event],
    protocol: Protocol,
    memory: &dyn MemoryImage,
    barriers: bool,
    out: &mut Decoded,
) {
    for e in ev.iter().copied() {
        match e.kind {
            EventKind::Range(r) => {
                let n = r.count as usize;
                let insns: Vec<_> = r.instructions(memory).collect();
                assert_eq!(insns.len(), n, "range {r:?} not fully in memory");
                for (k, i) in insns.iter().enumerate() {
                    let last = k + 1 == n;
                    let atom = match protocol.atoms() {
                        // Every instruction of a range but the last
                        // executed; the last one's atom is `executed`.
                        Atoms::PerInstruction => Some(!last || r.executed),
                        Atoms::PerWaypoint => {
                            (last && i.insn.is_waypoint_with(barriers)).then_some(r.executed)
                        }
                    };
                    out.recs.push(Rec::Insn {
                        addr: i.addr,
                        isa: r.isa,
                        size: i.insn.size,
                        atom,
                    });
                }
                out.cycles += u64::from(r.cycles.unwrap_or(0));
            }
            EventKind::Exception { number, ret } => out.recs.push(Rec::Exception { number, ret }),
            EventKind::ExceptionReturn => out.recs.push(Rec::ExceptionReturn),
            EventKind::CycleCount(c) => out.cycles += u64::from(c),
            EventKind::TraceOn { cycles, .. } => out.cycles += u64::from(cycles.unwrap_or(0)),
            EventKind::Timestamp { cycles, .. } => out.cycles += u64::from(cycles.unwrap_or(0)),
            EventKind::Context(c) => out.cycles += u64::from(c.cycles.unwrap_or(0)),
            EventKind::Gap(g) => out
                .errors
                .push(format!("decoder gap {g:?} at offset {}", e.offset)),
            EventKind::AddrNacc { addr } => out
                .errors
                .push(format!("decoder: memory not accessible at {addr:#x}")),
            _ => {}
        }
    }
}
