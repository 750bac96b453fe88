//! The decoder on hand-built packet sequences over small hand-assembled
//! programs. Expected flows are derived from the ARM ARM encodings and the
//! PFT/ETMv3 rules, not from the decoder's output.

#![allow(clippy::unwrap_used)]

mod common;

use common::{atoms, check_runs, inconsistencies, run};

use std::sync::Arc;
use trace_core::decode::op::{Branch, InsnAtoms, Sync, SyncReason, Target, TraceOp};
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::{AnyPacket, SourceConfig};
use trace_core::event::{Check, Event, EventKind, GapReason, InsnClass, Isa, Range, TraceOnReason};
use trace_core::memory::{MemoryMap, Region, Space};

/// T32 code at 0x2000: NOP ; NOP ; BX lr.
const T32_BASE: u32 = 0x2000;
const T32: [u16; 3] = [0xBF00, 0xBF00, 0x4770];

/// The shared A32 program (`common::A32`) at 0x1000 and [`T32`].
fn memory() -> Arc<MemoryMap> {
    common::memory_with(&[("t32", T32_BASE, common::halfwords(&T32))])
}

/// A PTM source on trace ID 0x13.
fn ptm_config(return_stack: bool) -> DecoderConfig {
    let cfg = ptm_packets::Config::default().with_return_stack(return_stack);
    DecoderConfig::new(0x13, &SourceConfig::Ptm(cfg))
}

fn ptm(return_stack: bool) -> Decoder {
    Decoder::new(ptm_config(return_stack), memory())
}

fn etm() -> Decoder {
    let cfg = etm_packets::Config::new();
    Decoder::new(DecoderConfig::new(0x10, &SourceConfig::Etm(cfg)), memory())
}

/// [`etm`], its instructions by runs.
fn etm_runs() -> Decoder {
    let cfg = etm_packets::Config::new();
    let cfg = DecoderConfig::new(0x10, &SourceConfig::Etm(cfg)).with_block_ranges(true);
    Decoder::new(cfg, memory())
}

fn isync(addr: u32, isa: Isa) -> TraceOp {
    common::trace_on(addr, isa)
}

/// A periodic I-sync (which by itself keeps the return stack).
fn periodic(addr: u32, isa: Isa) -> TraceOp {
    match isync(addr, isa) {
        TraceOp::Sync(s) => TraceOp::Sync(Sync {
            reason: SyncReason::Periodic,
            ..s
        }),
        op => op,
    }
}

fn branch(addr: u32, isa: Isa, exception: u16) -> TraceOp {
    common::branch_bits(addr, isa, 32, exception)
}

/// ETMv3 instruction atoms: `count` instructions, bit `i` of `executed`
/// for the `i`th, W atoms `cycles` (before, between, after).
fn insn_atoms(count: u8, executed: u16, cycles: Option<(u8, u8, u8)>) -> TraceOp {
    TraceOp::InsnAtoms(InsnAtoms {
        count,
        executed,
        cycles,
    })
}

/// Exception `exception` to the A32 vector 0x18, cancelling the last
/// instruction traced.
fn cancelling_exception(exception: u16) -> TraceOp {
    TraceOp::Branch(Branch {
        target: Target {
            addr: 0x18,
            isa: Some(Isa::A32),
        },
        bits: 32,
        exception,
        cancel: true,
        ns: None,
        hyp: None,
        cycles: None,
    })
}

fn ranges(ev: &[Event]) -> Vec<Range> {
    ev.iter()
        .filter_map(|e| match e.kind {
            EventKind::Range(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// (start, end, count, executed, class)
fn short(r: &Range) -> (u32, u32, u32, bool, InsnClass) {
    (r.start, r.end, r.count, r.executed, r.last)
}

#[test]
fn ptm_atoms_walk_to_waypoints_and_use_the_return_stack() {
    let mut d = ptm(true);
    let ev = run(&mut d, &[isync(0x1000, Isa::A32), atoms("ENEEE")]);
    let r = ranges(&ev);
    assert_eq!(
        r.iter().map(short).collect::<Vec<_>>(),
        [
            // BNE taken back to the ADD
            (0x1000, 0x1010, 4, true, InsnClass::Branch),
            // BNE not taken
            (0x1004, 0x1010, 3, false, InsnClass::Branch),
            // BL 0x1020 pushes 0x1014
            (0x1010, 0x1014, 1, true, InsnClass::Branch),
            // BX lr: E atom without address = predicted by the return stack
            (0x1020, 0x1028, 2, true, InsnClass::IndirectBranch),
            // back at 0x1014: B .
            (0x1014, 0x1018, 1, true, InsnClass::Branch),
        ]
    );
    assert!(r[0].cond && r[1].cond && !r[2].cond);
    assert!(r[2].link && !r[2].ret);
    assert!(r[3].ret && !r[3].link);
    assert!(ev.iter().all(|e| e.id == 0x13));
    assert!(matches!(ev[0].kind, EventKind::NoSync));
    assert!(matches!(
        ev.last().map(|e| e.kind),
        Some(EventKind::EndOfTrace)
    ));
}

#[test]
fn ptm_without_return_stack_waits_for_the_address() {
    let mut d = ptm(false);
    let ev = run(
        &mut d,
        &[
            isync(0x1010, Isa::A32),
            atoms("EE"),
            atoms("E"),
            branch(0x1014, Isa::A32, 0),
            atoms("E"),
        ],
    );
    let gap = ev.iter().find_map(|e| match e.kind {
        EventKind::Gap(g) => Some(g),
        _ => None,
    });
    assert_eq!(gap, Some(GapReason::UnknownTarget { addr: 0x1024 }));
    let r: Vec<_> = ranges(&ev).iter().map(short).collect();
    // BL, BX lr (gap), nothing until the branch address, then B .
    assert_eq!(
        r,
        [
            (0x1010, 0x1014, 1, true, InsnClass::Branch),
            (0x1020, 0x1028, 2, true, InsnClass::IndirectBranch),
            (0x1014, 0x1018, 1, true, InsnClass::Branch),
        ]
    );
}

#[test]
fn return_stack_underflow_is_a_gap() {
    // BX lr traced by an E atom, but no BL was seen since trace started.
    let mut d = ptm(true);
    let ev = run(&mut d, &[isync(0x1020, Isa::A32), atoms("EE")]);
    let gaps: Vec<_> = ev
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Gap(g) => Some((e.offset, g)),
            _ => None,
        })
        .collect();
    assert_eq!(gaps, [(1, GapReason::UnknownTarget { addr: 0x1024 })]);
    assert_eq!(ranges(&ev).len(), 1);
}

#[test]
fn ptm_branch_address_completes_the_indirect_branch() {
    // PFT branch_no_excp: walk to the waypoint (BX lr), then go to the
    // packet's target, here T32 code; then back to A32 through BX lr.
    let mut d = ptm(false);
    let ev = run(
        &mut d,
        &[
            isync(0x1020, Isa::A32),
            branch(T32_BASE, Isa::T32, 0),
            branch(0x1018, Isa::A32, 0),
        ],
    );
    let r = ranges(&ev);
    assert_eq!(
        short(&r[0]),
        (0x1020, 0x1028, 2, true, InsnClass::IndirectBranch)
    );
    assert_eq!(
        short(&r[1]),
        (0x2000, 0x2006, 3, true, InsnClass::IndirectBranch)
    );
    assert_eq!((r[1].isa, r[1].last_size, r[1].ret), (Isa::T32, 2, true));
}

#[test]
fn back_to_back_exceptions_follow_ptm_5_2_3() {
    // IRQ after the ADD at 0x1004: waypoint update 0x1004, exception IRQ
    // to 0x18; FIQ immediately after: exception to 0x1C, whose preferred
    // return address is the IRQ vector (no instruction executed there).
    let mut d = ptm(true);
    let ev = run(
        &mut d,
        &[
            isync(0x1000, Isa::A32),
            TraceOp::WaypointUpdate(Target {
                addr: 0x1004,
                isa: Some(Isa::A32),
            }),
            branch(0x18, Isa::A32, 14),
            branch(0x1C, Isa::A32, 15),
        ],
    );
    let r: Vec<_> = ranges(&ev).iter().map(short).collect();
    assert_eq!(r, [(0x1000, 0x1008, 2, true, InsnClass::Other)]);
    let exc: Vec<_> = ev
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Exception { number, ret } => Some((number, ret)),
            _ => None,
        })
        .collect();
    assert_eq!(exc, [(14, Some(0x1008)), (15, Some(0x18))]);
}

#[test]
fn unmapped_code_gives_one_nacc_then_resumes_at_the_next_address() {
    let mut d = ptm(true);
    let ev = run(
        &mut d,
        &[
            isync(0x9000, Isa::A32),
            atoms("EEE"),
            atoms("N"),
            branch(0x1000, Isa::A32, 0),
            atoms("E"),
        ],
    );
    let nacc: Vec<_> = ev
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::AddrNacc { addr } => Some((e.offset, addr)),
            _ => None,
        })
        .collect();
    assert_eq!(nacc, [(1, 0x9000)]);
    let r: Vec<_> = ranges(&ev).iter().map(short).collect();
    assert_eq!(r, [(0x1000, 0x1010, 4, true, InsnClass::Branch)]);
}

#[test]
fn missing_image_reports_nacc_and_never_panics() {
    let cfg = ptm_packets::Config::default();
    let mut d = Decoder::new(
        DecoderConfig::new(1, &SourceConfig::Ptm(cfg)),
        Arc::new(MemoryMap::new()),
    );
    let ev = run(
        &mut d,
        &[
            isync(0x8000_0000, Isa::T32),
            atoms("EEEEE"),
            branch(0x8000_0100, Isa::A32, 0),
            atoms("E"),
        ],
    );
    let n = ev
        .iter()
        .filter(|e| matches!(e.kind, EventKind::AddrNacc { .. }))
        .count();
    assert_eq!(n, 2);
    assert!(ranges(&ev).is_empty());
}

#[test]
fn runaway_walk_is_bounded() {
    let nops: Vec<u8> = std::iter::repeat_n(0xE320_F000u32.to_le_bytes(), 10_000)
        .flatten()
        .collect();
    let mut map = MemoryMap::new();
    let n = nops.len();
    map.add(Region::new("nops", 0x4000, Space::Any, nops.into(), 0, n).unwrap());
    let cfg = ptm_packets::Config::default();
    let mut d = Decoder::new(
        DecoderConfig::new(1, &SourceConfig::Ptm(cfg)),
        Arc::new(map),
    );
    let ev = run(&mut d, &[isync(0x4000, Isa::A32), atoms("E"), atoms("E")]);
    let gaps: Vec<_> = ev
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Gap(g) => Some(g),
            _ => None,
        })
        .collect();
    assert_eq!(gaps, [GapReason::NoWaypoint { addr: 0x4000 }]);
}

#[test]
fn undefined_code_is_reported() {
    let word = 0xE7F0_00F0u32; // UDF: takes an exception, not a waypoint
    assert!(!isa_decode::decode_a32(word, 0).is_waypoint());
    let undefined = (0u32..=0xFFFF)
        .map(|i| 0xF000_0000 | (i << 12))
        .find(|&w| isa_decode::decode_a32(w, 0).kind == isa_decode::Kind::Undefined)
        .expect("an undefined A32 encoding");
    let mut map = MemoryMap::new();
    let bytes: Vec<u8> = [0xE3A0_0000u32, undefined]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    map.add(Region::new("u", 0x3000, Space::Any, bytes.into(), 0, 8).unwrap());
    let cfg = ptm_packets::Config::default();
    let mut d = Decoder::new(
        DecoderConfig::new(1, &SourceConfig::Ptm(cfg)),
        Arc::new(map),
    );
    let ev = run(&mut d, &[isync(0x3000, Isa::A32), atoms("E")]);
    assert!(ev
        .iter()
        .any(|e| e.kind == EventKind::Gap(GapReason::Undefined { addr: 0x3004 })));
}

#[test]
fn etm_atoms_are_per_instruction() {
    let mut d = etm();
    let ev = run(
        &mut d,
        &[
            isync(0x1000, Isa::A32),
            // MOV, ADD, CMP, BNE taken, ADD, CMP, BNE not taken, BL
            insn_atoms(8, 0b1011_1111, None),
            // ADD, BX lr (indirect: target from the branch address)
            insn_atoms(2, 0b11, None),
            branch(0x1014, Isa::A32, 0),
        ],
    );
    let starts: Vec<_> = ranges(&ev).iter().map(|r| (r.start, r.executed)).collect();
    assert_eq!(
        starts,
        [
            (0x1000, true),
            (0x1004, true),
            (0x1008, true),
            (0x100C, true),
            (0x1004, true),
            (0x1008, true),
            (0x100C, false),
            (0x1010, true),
            (0x1020, true),
            (0x1024, true),
        ]
    );
    assert!(ranges(&ev).iter().all(|r| r.count == 1));
    // Every I-sync reports the context in ETMv3.
    assert!(ev.iter().any(|e| matches!(e.kind, EventKind::Context(_))));
}

#[test]
fn etm_cancelled_instruction_is_dropped() {
    // An exception with the Cancel bit: the last traced instruction (the
    // CMP at 0x1008) did not complete; it is the preferred return address.
    let mut d = etm();
    let ev = run(
        &mut d,
        &[
            isync(0x1000, Isa::A32),
            insn_atoms(3, 0b111, Some((1, 1, 0))),
            cancelling_exception(14),
        ],
    );
    let starts: Vec<_> = ranges(&ev).iter().map(|r| (r.start, r.cycles)).collect();
    assert_eq!(starts, [(0x1000, Some(1)), (0x1004, Some(1))]);
    assert!(ev.iter().any(|e| e.kind
        == EventKind::Exception {
            number: 14,
            ret: Some(0x1008)
        }));
}

#[test]
fn etm_runs_end_at_waypoints_and_failed_conditions() {
    let ops = [
        isync(0x1000, Isa::A32),
        // MOV, ADD, CMP, BNE taken | ADD, CMP, BNE not taken | BL
        insn_atoms(8, 0b1011_1111, Some((2, 1, 0))),
        // ADD (goes on from the BL's target), then BX lr in the next
        // P-header: one run across the two.
        insn_atoms(1, 0b1, Some((3, 0, 0))),
        insn_atoms(1, 0b1, Some((4, 0, 0))),
        branch(0x1014, Isa::A32, 0),
    ];
    let per = run(&mut etm(), &ops);
    let runs = run(&mut etm_runs(), &ops);
    let got: Vec<_> = ranges(&runs)
        .iter()
        .map(|r| (r.start, r.count, r.executed, r.cycles))
        .collect();
    // Cycles: 2 W before the first instruction, 1 before each later one.
    assert_eq!(
        got,
        [
            (0x1000, 4, true, Some(5)),
            (0x1004, 3, false, Some(3)),
            (0x1010, 1, true, Some(1)),
            (0x1020, 2, true, Some(7)),
        ]
    );
    assert_eq!(check_runs(&per, &runs), 3);
}

#[test]
fn etm_cancel_keeps_the_rest_of_a_run() {
    // As `etm_cancelled_instruction_is_dropped`, the run MOV, ADD, CMP
    // merged: the CMP is cancelled, MOV and ADD stay as one range.
    let ops = [
        isync(0x1000, Isa::A32),
        insn_atoms(2, 0b11, Some((1, 1, 0))),
        insn_atoms(1, 0b1, Some((5, 0, 0))),
        cancelling_exception(14),
    ];
    let per = run(&mut etm(), &ops);
    let runs = run(&mut etm_runs(), &ops);
    let got: Vec<_> = ranges(&runs)
        .iter()
        .map(|r| (r.start, r.end, r.count, r.cycles))
        .collect();
    assert_eq!(got, [(0x1000, 0x1008, 2, Some(2))]);
    assert!(runs.iter().any(|e| e.kind
        == EventKind::Exception {
            number: 14,
            ret: Some(0x1008)
        }));
    check_runs(&per, &runs);
}

#[test]
fn etm_cancel_keeps_the_cycles_before_the_cancelled_instruction() {
    // MOV, then a W atom alone after it (trailing), then ADD, cancelled:
    // one range per instruction hands on MOV and the cycle count before
    // the ADD comes; by runs MOV and ADD are one run until the cancel,
    // which must leave MOV and the cycle count.
    let ops = [
        isync(0x1000, Isa::A32),
        insn_atoms(1, 0b1, Some((0, 0, 1))),
        insn_atoms(1, 0b1, Some((2, 0, 0))),
        cancelling_exception(14),
    ];
    let per = run(&mut etm(), &ops);
    let runs = run(&mut etm_runs(), &ops);
    let got: Vec<_> = ranges(&runs)
        .iter()
        .map(|r| (r.start, r.count, r.cycles))
        .collect();
    assert_eq!(got, [(0x1000, 1, Some(0))]);
    assert!(runs.iter().any(|e| e.kind == EventKind::CycleCount(1)));
    assert!(runs.iter().any(|e| e.kind
        == EventKind::Exception {
            number: 14,
            ret: Some(0x1004)
        }));
    check_runs(&per, &runs);
}

#[test]
fn etm_lsip_isync_implies_the_data_instruction() {
    // LSiP: the data instruction at the I-sync address (the ADD at 0x1004)
    // executed; tracing continues at the LSiP address (0x1008).
    let mut d = etm();
    let mut s = match isync(0x1004, Isa::A32) {
        TraceOp::Sync(s) => s,
        _ => unreachable!(),
    };
    s.lsip = Some(0x1008);
    let ev = run(&mut d, &[TraceOp::Sync(s), insn_atoms(1, 0, None)]);
    let r: Vec<_> = ranges(&ev).iter().map(|r| (r.start, r.executed)).collect();
    assert_eq!(r, [(0x1004, true), (0x1008, false)]);
}

#[test]
fn context_changes_and_debug_halt() {
    let mut d = ptm(true);
    let mut s = match isync(0x1010, Isa::A32) {
        TraceOp::Sync(s) => s,
        _ => unreachable!(),
    };
    s.context_id = Some(5);
    let mut exit = s;
    exit.reason = SyncReason::TraceOn(TraceOnReason::DebugExit);
    exit.target.addr = 0x1020;
    let ev = run(
        &mut d,
        &[
            TraceOp::Sync(s),
            TraceOp::ContextId(5),
            TraceOp::ContextId(6),
            TraceOp::Vmid(1),
            // BL taken, then the core halts before executing the target:
            // exception 1 (debug halt) returns to the BL's target.
            atoms("E"),
            branch(0, Isa::A32, 1),
            TraceOp::Sync(exit),
        ],
    );
    let ctx: Vec<_> = ev
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Context(c) => Some((c.context_id, c.vmid)),
            _ => None,
        })
        .collect();
    // The debug-exit I-sync carries context ID 5 again: a change.
    assert_eq!(
        ctx,
        [
            (Some(5), None),
            (Some(6), None),
            (Some(6), Some(1)),
            (Some(5), Some(1))
        ]
    );
    assert!(ev.iter().any(|e| e.kind
        == EventKind::Exception {
            number: 1,
            ret: Some(0x1020)
        }));
    assert!(ev.iter().any(|e| e.kind
        == EventKind::TraceOn {
            reason: TraceOnReason::DebugExit,
            cycles: None
        }));
}

#[test]
fn real_packets_lower_through_push() {
    use ptm_packets::{Atoms, BranchAddress, ISync, ISyncReason, Isa as PIsa, Packet};
    let mut d = ptm(true);
    let mut ev = Vec::new();
    let packets = [
        Packet::ASync,
        Packet::ISync(ISync {
            address: 0x1010,
            isa: PIsa::Arm,
            reason: ISyncReason::Periodic,
            ..ISync::default()
        }),
        Packet::Atom {
            atoms: Atoms::new(1, 1).unwrap(),
            cycles: None,
        },
        Packet::BranchAddress(BranchAddress {
            address: 0x1018,
            bits: 32,
            isa: PIsa::Arm,
            exception: None,
            cycles: Some(7),
        }),
    ];
    for (i, p) in packets.iter().enumerate() {
        d.push(i as u64 * 10, &AnyPacket::Ptm(*p), &mut |e| ev.push(e));
    }
    // Atom packets take a short cut through `push`: the same events as
    // their operation run directly, also for an atom before any I-sync
    // and several atoms with cycles.
    let more = [
        Packet::Atom {
            atoms: Atoms::new(2, 0b01).unwrap(),
            cycles: None,
        },
        Packet::ASync,
        Packet::ISync(ISync {
            address: 0x1000,
            isa: PIsa::Arm,
            reason: ISyncReason::Periodic,
            ..ISync::default()
        }),
        Packet::Atom {
            atoms: Atoms::new(4, 0b1101).unwrap(),
            cycles: Some(4),
        },
        Packet::Atom {
            atoms: Atoms::new(3, 0b111).unwrap(),
            cycles: None,
        },
    ];
    let (mut pushed, mut ran) = (ptm(true), ptm(true));
    let (mut ev_pushed, mut ev_ran) = (Vec::new(), Vec::new());
    for (i, p) in more.iter().enumerate() {
        pushed.push(i as u64, &AnyPacket::Ptm(*p), &mut |e| ev_pushed.push(e));
        let op = ran.lower(&AnyPacket::Ptm(*p));
        ran.run_op(i as u64, &op, &mut |e| ev_ran.push(e));
    }
    assert!(ranges(&ev_ran).len() >= 5);
    assert_eq!(ev_pushed, ev_ran);
    let r = ranges(&ev);
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[1].start, r[1].end, r[1].cycles),
        (0x1020, 0x1028, Some(7))
    );
    assert_eq!(
        ev.iter()
            .find(|e| matches!(e.kind, EventKind::TraceOn { .. }))
            .map(|e| e.offset),
        Some(10)
    );
    // A packet of the other protocol is ignored.
    d.push(
        99,
        &AnyPacket::Etm(etm_packets::Packet::Trigger),
        &mut |e| ev.push(e),
    );
    assert_eq!(d.ignored(), 1);
}

#[test]
fn per_instruction_view_follows_it_blocks() {
    // ITE EQ ; NOP ; NOP ; BX lr
    let code: [u16; 4] = [0xBF0C, 0xBF00, 0xBF00, 0x4770];
    let bytes: Vec<u8> = code.iter().flat_map(|h| h.to_le_bytes()).collect();
    let mut map = MemoryMap::new();
    map.add(Region::new("it", 0x5000, Space::Any, bytes.into(), 0, 8).unwrap());
    let cfg = ptm_packets::Config::default();
    let map = Arc::new(map);
    let mut d = Decoder::new(DecoderConfig::new(1, &SourceConfig::Ptm(cfg)), map.clone());
    let ev = run(
        &mut d,
        &[isync(0x5000, Isa::T32), branch(0x1000, Isa::A32, 0)],
    );
    let r = ranges(&ev)[0];
    assert_eq!((r.start, r.end, r.count), (0x5000, 0x5008, 4));
    let conds: Vec<_> = r.instructions(&*map).map(|i| (i.addr, i.cond)).collect();
    use isa_decode::Cond;
    assert_eq!(
        conds,
        [
            (0x5000, Cond::Al),
            (0x5002, Cond::Eq),
            (0x5004, Cond::Ne),
            (0x5006, Cond::Al)
        ]
    );
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// ETMv3's operations, with cancelling exceptions and W atoms.
    fn etm_op() -> impl Strategy<Value = TraceOp> {
        let addr = prop_oneof![0x1000u32..0x1030, 0x2000u32..0x2008, any::<u32>()];
        let isa = prop_oneof![Just(Isa::A32), Just(Isa::T32)];
        prop_oneof![
            1 => (addr.clone(), isa.clone()).prop_map(|(a, i)| isync(a & !1, i)),
            4 => (0u8..=16, any::<u16>(), 0u8..3, 0u8..2, 0u8..2).prop_map(|(c, e, f, x, t)| {
                TraceOp::InsnAtoms(InsnAtoms {
                    count: c,
                    executed: e,
                    cycles: Some((f, x, t)),
                })
            }),
            1 => (addr.clone(), isa.clone(), 0u16..20, any::<bool>()).prop_map(|(a, i, x, c)| {
                TraceOp::Branch(Branch {
                    target: Target {
                        addr: a & !1,
                        isa: Some(i),
                    },
                    bits: 32,
                    exception: x,
                    cancel: c && x != 0,
                    ns: None,
                    hyp: None,
                    cycles: None,
                })
            }),
            1 => Just(TraceOp::ExceptionReturn),
            1 => any::<u32>().prop_map(TraceOp::ContextId),
            1 => (1u32..5).prop_map(TraceOp::CycleCount),
        ]
    }

    fn op() -> impl Strategy<Value = TraceOp> {
        let addr = prop_oneof![0x1000u32..0x1030, 0x2000u32..0x2008, any::<u32>()];
        let isa = prop_oneof![Just(Isa::A32), Just(Isa::T32)];
        prop_oneof![
            (addr.clone(), isa.clone()).prop_map(|(a, i)| isync(a & !1, i)),
            (1u8..=5, any::<u8>()).prop_map(|(c, e)| TraceOp::WaypointAtoms {
                count: c,
                e_bits: e & ((1 << c) - 1),
                cycles: None
            }),
            (0u8..=16, any::<u16>()).prop_map(|(c, e)| TraceOp::InsnAtoms(InsnAtoms {
                count: c,
                executed: e,
                cycles: Some((1, 1, 0))
            })),
            (addr.clone(), isa.clone(), 0u16..20).prop_map(|(a, i, x)| branch(a & !1, i, x)),
            (addr, isa).prop_map(|(a, i)| TraceOp::WaypointUpdate(Target {
                addr: a & !1,
                isa: Some(i)
            })),
            Just(TraceOp::ExceptionReturn),
            any::<u32>().prop_map(TraceOp::ContextId),
        ]
    }

    proptest! {
        #[test]
        fn etm_by_runs_is_the_per_instruction_decode_merged(
            code in proptest::collection::vec(any::<u8>(), 0..256),
            ops in proptest::collection::vec(etm_op(), 0..64),
        ) {
            let mut map = MemoryMap::new();
            let n = code.len();
            map.add(Region::new("r", 0x1000, Space::Any, code.clone().into(), 0, n).unwrap());
            map.add(Region::new("t", 0x2000, Space::Any, code.into(), 0, n).unwrap());
            let map = Arc::new(map);
            let src = SourceConfig::Etm(etm_packets::Config::new().with_cycle_accurate(true));
            let cfg = DecoderConfig::new(3, &src);
            let per = run(&mut Decoder::new(cfg, map.clone()), &ops);
            let runs = run(&mut Decoder::new(cfg.with_block_ranges(true), map), &ops);
            check_runs(&per, &runs);
        }

        #[test]
        fn random_ops_on_random_memory_never_panic(
            code in proptest::collection::vec(any::<u8>(), 0..256),
            ops in proptest::collection::vec(op(), 0..64),
            etm_flavor in any::<bool>(),
        ) {
            let mut map = MemoryMap::new();
            let n = code.len();
            map.add(Region::new("r", 0x1000, Space::Any, code.clone().into(), 0, n).unwrap());
            map.add(Region::new("t", 0x2000, Space::Any, code.into(), 0, n).unwrap());
            let src = if etm_flavor {
                SourceConfig::Etm(etm_packets::Config::new().with_cycle_accurate(true))
            } else {
                SourceConfig::Ptm(ptm_packets::Config::default().with_return_stack(true))
            };
            let mut d = Decoder::new(DecoderConfig::new(3, &src), Arc::new(map));
            let mut count = 0usize;
            for (i, op) in ops.iter().enumerate() {
                d.run_op(i as u64, op, &mut |e| {
                    count += 1;
                    if let EventKind::Range(r) = e.kind {
                        assert!(r.count >= 1 && r.count <= 4096);
                    }
                });
            }
            d.finish(&mut |_| count += 1);
            prop_assert!(count <= ops.len() * 40 + 2);
        }
    }

    fn ptm_packet() -> impl Strategy<Value = ptm_packets::Packet> {
        use ptm_packets::{
            Atoms, BranchAddress, ExceptionInfo, ISync, ISyncReason, Isa as P, Packet,
            WaypointUpdate,
        };
        let addr = prop_oneof![0x1000u32..0x1030, 0x2000u32..0x2008, any::<u32>()];
        let isa = prop_oneof![
            Just(P::Arm),
            Just(P::Thumb),
            Just(P::ThumbEE),
            Just(P::Jazelle)
        ];
        prop_oneof![
            Just(Packet::ASync),
            (addr.clone(), isa.clone(), 0u8..4).prop_map(|(a, i, r)| Packet::ISync(ISync {
                address: a & !1,
                isa: i,
                reason: ISyncReason::from_bits(r),
                ..ISync::default()
            })),
            (1u8..=5, any::<u8>()).prop_map(|(c, e)| Packet::Atom {
                atoms: Atoms::new(c, e & ((1 << c) - 1)).unwrap(),
                cycles: None
            }),
            (addr.clone(), isa.clone(), 0u16..16).prop_map(|(a, i, n)| {
                Packet::BranchAddress(BranchAddress {
                    address: a & !1,
                    bits: 32,
                    isa: i,
                    exception: (n > 0).then_some(ExceptionInfo {
                        number: n,
                        ..ExceptionInfo::default()
                    }),
                    cycles: None,
                })
            }),
            (addr, isa).prop_map(|(a, i)| Packet::WaypointUpdate(WaypointUpdate {
                address: a & !1,
                bits: 32,
                isa: i,
                alt_isa: None
            })),
            any::<u32>().prop_map(Packet::ContextId),
            any::<u8>().prop_map(Packet::Vmid),
            Just(Packet::ExceptionReturn),
        ]
    }

    proptest! {
        #[test]
        fn random_ptm_packets_never_panic(
            code in proptest::collection::vec(any::<u8>(), 0..128),
            packets in proptest::collection::vec(ptm_packet(), 0..64),
        ) {
            let mut map = MemoryMap::new();
            let n = code.len();
            map.add(Region::new("r", 0x1000, Space::Any, code.into(), 0, n).unwrap());
            let cfg = ptm_packets::Config::default().with_return_stack(true);
            let mut d = Decoder::new(DecoderConfig::new(3, &SourceConfig::Ptm(cfg)), Arc::new(map));
            let mut events = 0usize;
            for (i, p) in packets.iter().enumerate() {
                d.push(i as u64, &AnyPacket::Ptm(*p), &mut |_| events += 1);
            }
            d.finish(&mut |_| events += 1);
            prop_assert!(events <= packets.len() * 12 + 2);
        }
    }
}

#[test]
fn lost_packets_forget_the_return_stack() {
    // BL 0x1020 pushes 0x1014; then packets are lost, and trace resumes
    // with an I-sync at 0x1020. The BX lr there, traced by an E atom
    // alone, was predicted by the processor's return stack, whose state
    // after the lost packets nobody knows: an unknown target, not 0x1014.
    let mut d = ptm(true);
    let mut ev = Vec::new();
    let mut out = |e| ev.push(e);
    d.run_op(0, &isync(0x1010, Isa::A32), &mut out);
    d.run_op(1, &atoms("E"), &mut out);
    d.packet_error(2, &mut out);
    // A periodic I-sync: by itself it keeps the return stack.
    d.run_op(3, &periodic(0x1020, Isa::A32), &mut out);
    d.run_op(4, &atoms("E"), &mut out);
    d.finish(&mut out);
    assert!(
        ev.iter()
            .any(|e| e.offset == 2 && e.kind == EventKind::Gap(GapReason::PacketError)),
        "{ev:?}"
    );
    let after: Vec<&Event> = ev.iter().filter(|e| e.offset == 4).collect();
    assert!(
        after.iter().any(|e| matches!(
            e.kind,
            EventKind::Gap(GapReason::UnknownTarget { addr: 0x1024 })
        )),
        "{after:?}"
    );
    assert!(
        !ev.iter()
            .any(|e| matches!(e.kind, EventKind::Range(r) if r.start == 0x1014)),
        "no code decoded from a stale return address: {ev:?}"
    );
}

fn waypoint_update(addr: u32) -> TraceOp {
    TraceOp::WaypointUpdate(Target {
        addr,
        isa: Some(Isa::A32),
    })
}

#[test]
fn waypoint_update_outside_the_straight_line_code_is_inconsistent() {
    // From 0x1000 the straight-line code runs to the BNE at 0x100C, the
    // next waypoint. A waypoint update names the last instruction executed
    // (PFT 5.2.3, as in back_to_back_exceptions_follow_ptm_5_2_3): any of
    // 0x1000 to 0x100C agrees with the walk.
    for addr in [0x1000, 0x1004, 0x1008, 0x100C] {
        let ev = run(
            &mut ptm(true),
            &[isync(0x1000, Isa::A32), waypoint_update(addr)],
        );
        assert_eq!(inconsistencies(&ev), [], "{addr:#x}");
        let r: Vec<_> = ranges(&ev).iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(r, [(0x1000, addr + 4)]);
    }
    // The BL at 0x1010 lies beyond the BNE: without an atom for the BNE
    // the processor cannot have gone there. The decoder follows the trace:
    // the instruction named executed, and the exception returns after it.
    for addr in [0x1010, 0x1020] {
        let ev = run(
            &mut ptm(true),
            &[
                isync(0x1000, Isa::A32),
                waypoint_update(addr),
                branch(0x18, Isa::A32, 14),
            ],
        );
        assert_eq!(
            inconsistencies(&ev),
            [(1, Check::Waypoint, 0x1000, Some(addr))],
            "{addr:#x}"
        );
        let r: Vec<_> = ranges(&ev).iter().map(|r| (r.start, r.count)).collect();
        assert_eq!(r, [(addr, 1)]);
        assert!(ev.iter().any(|e| e.kind
            == EventKind::Exception {
                number: 14,
                ret: Some(addr + 4)
            }));
    }
    // Behind the position: the walk is somewhere the processor was not.
    let ev = run(
        &mut ptm(true),
        &[isync(0x1004, Isa::A32), waypoint_update(0x1000)],
    );
    assert_eq!(
        inconsistencies(&ev),
        [(1, Check::Waypoint, 0x1004, Some(0x1000))]
    );
}

#[test]
fn etm_packet_error_while_waiting_for_a_branch_target_is_a_gap() {
    // ADD, BX lr executed: the target comes in the next branch address
    // packet. Damage instead: that packet may be what was lost, and the
    // instructions until the next address are unknown.
    let mut d = etm();
    let mut ev = Vec::new();
    let mut out = |e| ev.push(e);
    d.run_op(0, &isync(0x1020, Isa::A32), &mut out);
    d.run_op(1, &insn_atoms(2, 0b11, None), &mut out);
    d.packet_error(2, &mut out);
    d.finish(&mut out);
    assert!(
        ev.iter()
            .any(|e| e.offset == 2 && e.kind == EventKind::Gap(GapReason::PacketError)),
        "{ev:?}"
    );
}

/// Run `ops` on `a`, handing the code cache between `a` and `b` before
/// every operation (`b` runs them too, a step behind).
fn run_swapping(a: &mut Decoder, b: &mut Decoder, ops: &[TraceOp]) -> (Vec<Event>, Vec<Event>) {
    let (mut out_a, mut out_b) = (Vec::new(), Vec::new());
    for (i, op) in ops.iter().enumerate() {
        assert!(a.set_cache(b.take_cache()), "same image and settings");
        a.run_op(i as u64, op, &mut |e| out_a.push(e));
        assert!(b.set_cache(a.take_cache()));
        b.run_op(i as u64, op, &mut |e| out_b.push(e));
    }
    a.finish(&mut |e| out_a.push(e));
    b.finish(&mut |e| out_b.push(e));
    (out_a, out_b)
}

#[test]
fn moving_the_code_cache_between_decoders_changes_no_event() {
    let image: Arc<dyn trace_core::memory::MemoryImage> = memory();
    let ptm_cfg = ptm_config(true);
    let etm_cfg = DecoderConfig::new(0x10, &SourceConfig::Etm(etm_packets::Config::new()));
    let etm_atoms = |count: u8, executed: u16| {
        TraceOp::InsnAtoms(InsnAtoms {
            count,
            executed,
            cycles: None,
        })
    };
    let cases = [
        (
            ptm_cfg,
            vec![
                isync(0x1000, Isa::A32),
                atoms("EEEE"),
                atoms("ENEEE"),
                isync(0x1004, Isa::A32),
                atoms("EEN"),
                atoms("EEEE"),
                branch(0x2000, Isa::T32, 0),
                atoms("E"),
                branch(0x1000, Isa::A32, 0),
                atoms("EENE"),
            ],
        ),
        (
            etm_cfg,
            vec![
                isync(0x1000, Isa::A32),
                etm_atoms(5, 0b1_1111),
                etm_atoms(3, 0b111),
                etm_atoms(4, 0b1011),
                etm_atoms(2, 0b11),
                branch(0x1014, Isa::A32, 0),
                isync(0x1004, Isa::A32),
                etm_atoms(7, 0b101_1111),
                etm_atoms(2, 0b11),
                branch(0x2000, Isa::T32, 0),
                etm_atoms(3, 0b111),
            ],
        ),
    ];
    for (cfg, ops) in cases {
        let mut alone = Decoder::new(cfg, Arc::clone(&image));
        let want = run(&mut alone, &ops);
        assert!(ranges(&want).len() > 5, "the case walks code");
        let mut a = Decoder::new(cfg, Arc::clone(&image));
        let mut b = Decoder::new(cfg, Arc::clone(&image));
        let (got_a, got_b) = run_swapping(&mut a, &mut b, &ops);
        assert_eq!(got_a, want);
        assert_eq!(got_b, want);
        // A cache of another image is refused and changes nothing.
        let mut c = Decoder::new(cfg, Arc::clone(&image));
        let mut other = Decoder::new(cfg, memory());
        assert!(!c.set_cache(other.take_cache()));
        assert_eq!(run(&mut c, &ops), want);
    }
}

/// A return popped from the return stack goes on at the block after its
/// call, which the decoder finds through the call's block once it has
/// been there (a hint kept with the stack entry): the same flow, round
/// after round, as a decoder that forgets every block before each
/// operation and looks the return target up again.
#[test]
fn returns_through_the_calls_block_go_where_a_lookup_goes() {
    // BL 0x1020 and BX lr back to 0x1014, then B . there; three rounds
    // (the I-syncs keep the return stack).
    let mut ops = vec![isync(0x1010, Isa::A32)];
    for _ in 0..3 {
        ops.extend([atoms("EEE"), periodic(0x1010, Isa::A32)]);
    }
    let image: Arc<dyn trace_core::memory::MemoryImage> = memory();
    let decoder = || Decoder::new(ptm_config(true), Arc::clone(&image));
    let got = run(&mut decoder(), &ops);
    let want_round = [
        (0x1010, 0x1014, 1, true, InsnClass::Branch),
        (0x1020, 0x1028, 2, true, InsnClass::IndirectBranch),
        (0x1014, 0x1018, 1, true, InsnClass::Branch),
    ];
    let flow: Vec<_> = ranges(&got).iter().map(short).collect();
    assert_eq!(flow, want_round.repeat(3), "{got:?}");
    let (got_a, got_b) = run_swapping(&mut decoder(), &mut decoder(), &ops);
    assert_eq!(got_a, got);
    assert_eq!(got_b, got);
}
