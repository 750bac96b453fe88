//! What the decoder does where the trace does not let it know, or
//! contradicts the flow decoded so far: addresses with unknown high bits
//! are not followed, a target inside an instruction of the image is named,
//! and the trace's own redundancy (periodic I-syncs, branch addresses,
//! atoms after an indirect branch) is checked. Expected events follow from
//! the ARM ARM encodings of the programs below and the PFT/ETMv3 rules.

#![allow(clippy::unwrap_used)]

mod common;

use common::{atoms, halfwords, inconsistencies, memory_with, run, sync, trace_on};
use std::sync::Arc;
use trace_core::decode::op::{InsnAtoms, SyncReason, TraceOp};
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::SourceConfig;
use trace_core::event::{Check, Event, EventKind, GapReason, Isa};
use trace_core::memory::MemoryMap;

/// T32 at 0x3000: a BL (F7FE FA1C) whose second halfword, read as the
/// first of an instruction, gives FA1C 9801: an UNDEFINED encoding (a
/// register data-processing encoding whose bits [15:12] must be 1111).
const T32: [u16; 4] = [0xF7FE, 0xFA1C, 0x9801, 0xBF00];

/// The shared A32 program at 0x1000 (MOV, ADD, CMP, BNE 0x1004, BL 0x1020,
/// B ., NOP, NOP, ADD, BX lr) and [`T32`] at 0x3000.
fn memory() -> Arc<MemoryMap> {
    memory_with(&[("t32", 0x3000, halfwords(&T32))])
}

fn etm() -> Decoder {
    let cfg = etm_packets::Config::new();
    Decoder::new(DecoderConfig::new(0x10, &SourceConfig::Etm(cfg)), memory())
}

fn ptm() -> Decoder {
    let cfg = ptm_packets::Config::default();
    Decoder::new(DecoderConfig::new(0x13, &SourceConfig::Ptm(cfg)), memory())
}

fn periodic(addr: u32, isa: Isa) -> TraceOp {
    sync(addr, isa, SyncReason::Periodic)
}

/// ETMv3 P-header: one atom per instruction, `E` or `N`.
fn insns(pattern: &str) -> TraceOp {
    let executed = pattern
        .bytes()
        .enumerate()
        .fold(0u16, |b, (i, c)| b | (u16::from(c == b'E') << i));
    TraceOp::InsnAtoms(InsnAtoms {
        count: pattern.len() as u8,
        executed,
        cycles: None,
    })
}

fn branch(addr: u32, bits: u8) -> TraceOp {
    common::branch_bits(addr, Isa::A32, bits, 0)
}

/// The address of every instruction of the ranges (A32 instructions are
/// 4 bytes; the T32 ranges here are of one instruction).
fn starts(ev: &[Event]) -> Vec<u32> {
    ev.iter()
        .flat_map(|e| match e.kind {
            EventKind::Range(r) => {
                assert!(r.isa == Isa::A32 || r.count == 1, "{r:?}");
                (0..r.count).map(|i| r.start + 4 * i).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

/// (check, expected, traced) of every inconsistency.
fn checks(ev: &[Event]) -> Vec<(Check, u32, Option<u32>)> {
    inconsistencies(ev)
        .into_iter()
        .map(|(_, check, expected, traced)| (check, expected, traced))
        .collect()
}

#[test]
fn an_address_with_unknown_high_bits_is_not_followed() {
    // Before any I-sync: a branch packet that carried 22 bits, then atoms.
    // The target's low bits name 0x1004, but bits 31:22 were never traced.
    let ev = run(&mut etm(), &[branch(0x1004, 22), insns("EE")]);
    assert_eq!(starts(&ev), Vec::<u32>::new());
    assert!(ev
        .iter()
        .all(|e| !matches!(e.kind, EventKind::AddrNacc { .. })));
    // A branch packet that gives all 32 bits is followed.
    let ev = run(
        &mut etm(),
        &[branch(0x1004, 22), branch(0x1004, 32), insns("EE")],
    );
    assert_eq!(starts(&ev), vec![0x1004, 0x1008]);
}

#[test]
fn after_an_isync_compressed_addresses_are_followed() {
    let ev = run(
        &mut etm(),
        &[trace_on(0x1000, Isa::A32), branch(0x1020, 8), insns("E")],
    );
    assert_eq!(starts(&ev), vec![0x1020]);
}

#[test]
fn a_target_inside_a_32_bit_instruction_is_named() {
    // The trace starts at 0x3002, the second halfword of the BL at 0x3000.
    let ev = run(&mut etm(), &[trace_on(0x3002, Isa::T32), insns("E")]);
    let gaps: Vec<GapReason> = ev
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Gap(g) => Some(g),
            _ => None,
        })
        .collect();
    assert_eq!(gaps, vec![GapReason::InsideInstruction { addr: 0x3002 }]);
    // At the BL itself the code decodes: one instruction, no gap.
    let ev = run(&mut etm(), &[trace_on(0x3000, Isa::T32), insns("N")]);
    assert_eq!(starts(&ev), vec![0x3000]);
    assert!(ev.iter().all(|e| !matches!(e.kind, EventKind::Gap(_))));
}

#[test]
fn etm_periodic_isync_must_name_the_next_instruction() {
    // MOV, ADD, CMP executed: the next instruction is the BNE at 0x100C.
    let good = run(
        &mut etm(),
        &[
            trace_on(0x1000, Isa::A32),
            insns("EEE"),
            periodic(0x100C, Isa::A32),
        ],
    );
    assert_eq!(checks(&good), vec![]);
    let bad = run(
        &mut etm(),
        &[
            trace_on(0x1000, Isa::A32),
            insns("EEE"),
            periodic(0x1010, Isa::A32),
        ],
    );
    assert_eq!(checks(&bad), vec![(Check::Sync, 0x100C, Some(0x1010))]);
    // The trace is followed from there.
    let after = run(
        &mut etm(),
        &[
            trace_on(0x1000, Isa::A32),
            insns("EEE"),
            periodic(0x1010, Isa::A32),
            insns("N"),
        ],
    );
    assert_eq!(starts(&after), vec![0x1000, 0x1004, 0x1008, 0x1010]);
}

#[test]
fn etm_branch_address_after_no_indirect_branch_must_match_the_walk() {
    // After MOV, ADD, CMP the walk is at 0x100C: a branch packet naming it
    // agrees (branch broadcast), one naming 0x1018 does not.
    let same = run(
        &mut etm(),
        &[trace_on(0x1000, Isa::A32), insns("EEE"), branch(0x100C, 32)],
    );
    assert_eq!(checks(&same), vec![]);
    let other = run(
        &mut etm(),
        &[trace_on(0x1000, Isa::A32), insns("EEE"), branch(0x1018, 8)],
    );
    assert_eq!(checks(&other), vec![(Check::Branch, 0x100C, Some(0x1018))]);
    // After the BX lr at 0x1024 (indirect) any target is fine.
    let indirect = run(
        &mut etm(),
        &[trace_on(0x1020, Isa::A32), insns("EE"), branch(0x1018, 8)],
    );
    assert_eq!(checks(&indirect), vec![]);
}

#[test]
fn etm_atoms_before_an_indirect_branch_target_are_inconsistent() {
    // ADD, BX lr executed, then more atoms before any branch address: in
    // a later P-header, and in the same one.
    for ops in [
        vec![trace_on(0x1020, Isa::A32), insns("EE"), insns("E")],
        vec![trace_on(0x1020, Isa::A32), insns("EEE")],
    ] {
        let ev = run(&mut etm(), &ops);
        assert_eq!(checks(&ev), vec![(Check::Atoms, 0x1024, None)], "{ops:?}");
        assert_eq!(starts(&ev), vec![0x1020, 0x1024]);
    }
}

#[test]
fn ptm_branch_address_after_a_direct_branch_must_name_its_target() {
    // From 0x1000 the first waypoint is the BNE at 0x100C (to 0x1004).
    let same = run(&mut ptm(), &[trace_on(0x1000, Isa::A32), branch(0x1004, 8)]);
    assert_eq!(checks(&same), vec![]);
    let other = run(&mut ptm(), &[trace_on(0x1000, Isa::A32), branch(0x1020, 8)]);
    assert_eq!(checks(&other), vec![(Check::Branch, 0x1004, Some(0x1020))]);
}

#[test]
fn ptm_periodic_isync_lies_before_the_next_waypoint() {
    // A PTM I-sync may fall between two waypoints: anywhere in
    // 0x1000..=0x100C (the BNE) is consistent with the walk at 0x1000.
    let inside = run(
        &mut ptm(),
        &[trace_on(0x1000, Isa::A32), periodic(0x1008, Isa::A32)],
    );
    assert_eq!(checks(&inside), vec![]);
    let outside = run(
        &mut ptm(),
        &[trace_on(0x1000, Isa::A32), periodic(0x1014, Isa::A32)],
    );
    assert_eq!(checks(&outside), vec![(Check::Sync, 0x1000, Some(0x1014))]);
    // After the BNE taken, the walk is at 0x1004.
    let taken = run(
        &mut ptm(),
        &[
            trace_on(0x1000, Isa::A32),
            atoms("E"),
            periodic(0x1004, Isa::A32),
        ],
    );
    assert_eq!(checks(&taken), vec![]);
}
