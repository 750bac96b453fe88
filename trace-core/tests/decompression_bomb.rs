//! Tiny traces that claim huge amounts of execution: the decoder's output
//! and work stay linear in the trace, and a walk that never finds a
//! waypoint is cut off and reported once.
//!
//! Memory: A32 code, 4095 `NOP`s (`0xE320F000`, ARM ARM A8.8.120) and a
//! `B` back to the first (`0xEA......`, A8.8.18). Under PTM every E atom
//! then stands for a walk of 4096 instructions: one byte of atoms claims
//! up to 20,480 instructions.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use trace_core::decode::op::{Sync, SyncReason, Target, TraceOp};
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::SourceConfig;
use trace_core::event::{Event, EventKind, GapReason, Isa, TraceOnReason};
use trace_core::memory::{MemoryMap, Region, Space};

const BASE: u32 = 0x8000;
const NOP: u32 = 0xE320_F000;

/// `n` NOPs, then (when `loop_back`) `B BASE`.
fn memory(n: u32, loop_back: bool) -> Arc<MemoryMap> {
    let mut words = vec![NOP; n as usize];
    if loop_back {
        // B: imm24 = (target - (pc + 8)) / 4, two's complement.
        let pc = BASE + 4 * n;
        let imm = (BASE.wrapping_sub(pc + 8) as i32 >> 2) as u32 & 0x00FF_FFFF;
        words.push(0xEA00_0000 | imm);
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let len = bytes.len();
    let mut map = MemoryMap::new();
    map.add(Region::new("code", BASE, Space::Any, bytes.into(), 0, len).unwrap());
    Arc::new(map)
}

fn sync(addr: u32) -> TraceOp {
    TraceOp::Sync(Sync {
        target: Target {
            addr,
            isa: Some(Isa::A32),
        },
        ns: false,
        hyp: false,
        context_id: None,
        reason: SyncReason::TraceOn(TraceOnReason::Filter),
        cycles: None,
        lsip: None,
    })
}

/// Five E atoms: the most one PTM atom packet carries.
const FIVE_E: TraceOp = TraceOp::WaypointAtoms {
    count: 5,
    e_bits: 0b1_1111,
    cycles: None,
};

fn ptm_decoder(memory: Arc<MemoryMap>) -> Decoder {
    let cfg = ptm_packets::Config::default();
    Decoder::new(DecoderConfig::new(0x13, &SourceConfig::Ptm(cfg)), memory)
}

#[test]
fn atoms_over_a_long_loop_give_one_range_each() {
    let mut d = ptm_decoder(memory(4095, true));
    let packets = 40_000u64;
    let mut ranges = 0u64;
    let mut instructions = 0u64;
    let mut other = 0u64;
    let mut on = |e: Event| match e.kind {
        EventKind::Range(r) => {
            assert_eq!((r.start, r.count), (BASE, 4096));
            ranges += 1;
            instructions += u64::from(r.count);
        }
        _ => other += 1,
    };
    d.run_op(0, &sync(BASE), &mut on);
    for i in 0..packets {
        d.run_op(1 + i, &FIVE_E, &mut on);
    }
    d.finish(&mut on);
    // 40,000 one-byte packets claim 819,200,000 instructions: one compact
    // event per atom, nothing else.
    assert_eq!(ranges, 5 * packets);
    assert_eq!(instructions, 5 * packets * 4096);
    assert!(other <= 4, "{other} events besides the ranges");
}

#[test]
fn a_walk_without_waypoint_is_cut_off_and_reported_once() {
    // 64 Ki NOPs and no branch at all.
    let mut d = ptm_decoder(memory(65_536, false));
    let mut events = Vec::new();
    let mut on = |e: Event| events.push(e);
    d.run_op(0, &sync(BASE), &mut on);
    for i in 0..10_000 {
        d.run_op(1 + i, &FIVE_E, &mut on);
    }
    // A new sync point brings the decoder back.
    d.run_op(20_000, &sync(BASE + 4 * 65_536 - 8), &mut on);
    d.finish(&mut on);
    let gaps: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Gap(_)))
        .collect();
    assert_eq!(gaps.len(), 1, "one gap for the whole stretch: {gaps:?}");
    assert!(matches!(
        gaps[0].kind,
        EventKind::Gap(GapReason::NoWaypoint { addr: BASE })
    ));
    assert_eq!(gaps[0].offset, 1, "reported at the first atom packet");
    let ranges = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Range(_)))
        .count();
    // Nothing is invented between the gap and the next sync point.
    assert!(ranges <= 1, "{ranges} ranges");
    assert!(
        events
            .iter()
            .any(|e| e.offset == 20_000 && matches!(e.kind, EventKind::TraceOn { .. })),
        "decoding resumes at the next sync point"
    );
}
