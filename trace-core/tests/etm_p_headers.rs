//! ETMv3 P-headers pushed as packets (the path real captures take) against
//! the same atoms run as protocol-neutral operations, with the W atoms
//! counted here by replaying each P-header's atoms in trace order; and the
//! ETMv3 rule that every E/N atom is one instruction, whatever the packet
//! boundaries. Expected flows come from the ARM ARM encodings of a small
//! hand-assembled program.

#![allow(clippy::unwrap_used)]

mod common;

use etm_packets::{Atom, Atoms, PHeaderFormat, Packet};
use proptest::prelude::*;
use std::sync::Arc;
use trace_core::decode::op::{InsnAtoms, TraceOp};
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::{AnyPacket, SourceConfig};
use trace_core::event::{Event, EventKind, Isa};
use trace_core::memory::MemoryMap;

/// The shared A32 program at 0x1000 (`common::A32`).
const BASE: u32 = common::A32_BASE;

fn memory() -> Arc<MemoryMap> {
    common::memory_with(&[])
}

fn decoder(cycle_accurate: bool) -> Decoder {
    let cfg = etm_packets::Config::new().with_cycle_accurate(cycle_accurate);
    Decoder::new(DecoderConfig::new(0x10, &SourceConfig::Etm(cfg)), memory())
}

fn isync(addr: u32) -> TraceOp {
    common::trace_on(addr, Isa::A32)
}

fn branch(addr: u32) -> TraceOp {
    common::branch_bits(addr, Isa::A32, 32, 0)
}

/// The W runs before the first E/N atom, before the second, and after the
/// last one, counted by replaying the atoms in trace order.
fn replayed_cycles(a: &Atoms) -> (u8, u8, u8) {
    let (mut first, mut each, mut run, mut seen) = (0u8, 0u8, 0u8, 0u32);
    for atom in a.iter() {
        match atom {
            Atom::W => run = run.saturating_add(1),
            Atom::E | Atom::N => {
                match seen {
                    0 => first = run,
                    1 => each = run,
                    _ => {}
                }
                seen += 1;
                run = 0;
            }
        }
    }
    (first, each, run)
}

/// What a test feeds: an operation, or a P-header packet.
#[derive(Debug, Clone)]
enum Step {
    Op(TraceOp),
    PHeader(Atoms),
}

fn run(d: &mut Decoder, steps: &[Step], as_packets: bool, cycle_accurate: bool) -> Vec<Event> {
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let off = i as u64;
        match step {
            Step::Op(op) => d.run_op(off, op, &mut |e| out.push(e)),
            Step::PHeader(a) if as_packets => {
                d.push(off, &AnyPacket::Etm(Packet::Atoms(*a)), &mut |e| {
                    out.push(e)
                });
            }
            Step::PHeader(a) => {
                let op = TraceOp::InsnAtoms(InsnAtoms {
                    count: a.count,
                    executed: a.executed,
                    cycles: cycle_accurate.then(|| replayed_cycles(a)),
                });
                d.run_op(off, &op, &mut |e| out.push(e));
            }
        }
    }
    d.finish(&mut |e| out.push(e));
    out
}

fn p_header(format: PHeaderFormat, count: u8, executed: u16, cycles: u8) -> Atoms {
    Atoms {
        format,
        count,
        executed,
        cycles,
    }
}

fn step() -> impl Strategy<Value = Step> {
    let format = prop_oneof![
        Just(PHeaderFormat::Format0),
        Just(PHeaderFormat::Format1),
        Just(PHeaderFormat::Format2),
        Just(PHeaderFormat::Format3),
        Just(PHeaderFormat::Format4),
    ];
    let addr = (0u32..10).prop_map(|i| BASE + 4 * i);
    prop_oneof![
        6 => (format, 0u8..=16, any::<u16>(), 0u8..=20)
            .prop_map(|(f, c, e, w)| Step::PHeader(p_header(f, c, e, w))),
        1 => addr.clone().prop_map(|a| Step::Op(isync(a))),
        1 => addr.prop_map(|a| Step::Op(branch(a))),
        1 => Just(Step::Op(TraceOp::ExceptionReturn)),
    ]
}

proptest! {
    /// Packets and operations give the same events, in the same order.
    #[test]
    fn pushed_p_headers_equal_replayed_operations(
        steps in proptest::collection::vec(step(), 0..80),
        cycle_accurate in any::<bool>(),
    ) {
        let mut a = decoder(cycle_accurate);
        let mut b = decoder(cycle_accurate);
        let packets = run(&mut a, &steps, true, cycle_accurate);
        let ops = run(&mut b, &steps, false, cycle_accurate);
        prop_assert_eq!(packets, ops);
    }

    /// One P-header of n atoms and n P-headers of one atom each report the
    /// same instructions (ETMv3 traces one atom per instruction).
    #[test]
    fn packet_boundaries_do_not_change_the_instructions(
        start in (0u32..10).prop_map(|i| BASE + 4 * i),
        atoms in proptest::collection::vec(any::<bool>(), 1..=16),
    ) {
        let bits = atoms.iter().rev().fold(0u16, |b, &e| b << 1 | u16::from(e));
        let whole = [
            Step::Op(isync(start)),
            Step::PHeader(p_header(PHeaderFormat::Format1, atoms.len() as u8, bits, 0)),
        ];
        let mut split = vec![Step::Op(isync(start))];
        split.extend(
            atoms
                .iter()
                .map(|&e| Step::PHeader(p_header(PHeaderFormat::Format1, 1, u16::from(e), 0))),
        );
        let kinds = |ev: Vec<Event>| -> Vec<EventKind> { ev.into_iter().map(|e| e.kind).collect() };
        let one = kinds(run(&mut decoder(false), &whole, true, false));
        let many = kinds(run(&mut decoder(false), &split, true, false));
        prop_assert_eq!(one, many);
    }
}

/// (start, executed) of the ranges, and the other events by name.
fn flow(ev: &[Event]) -> Vec<(String, u32, bool)> {
    ev.iter()
        .map(|e| match e.kind {
            EventKind::Range(r) => ("range".to_owned(), r.start, r.executed),
            EventKind::AddrNacc { addr } => ("addr_nacc".to_owned(), addr, false),
            k => (k.name().to_owned(), 0, false),
        })
        .collect()
}

#[test]
fn leaving_the_image_inside_a_p_header() {
    // NOP, NOP, ADD, BX lr failing its condition (N): execution falls
    // through to 0x1028, past the end of the image.
    let steps = [
        Step::Op(isync(0x1018)),
        Step::PHeader(p_header(PHeaderFormat::Format1, 6, 0b11_0111, 0)),
    ];
    let ev = run(&mut decoder(false), &steps, true, false);
    let want = [
        ("no_sync", 0, false),
        ("trace_on", 0, false),
        ("context", 0, false),
        ("range", 0x1018, true),
        ("range", 0x101C, true),
        ("range", 0x1020, true),
        ("range", 0x1024, false),
        ("addr_nacc", 0x1028, false),
        ("end_of_trace", 0, false),
    ];
    let want: Vec<_> = want.iter().map(|&(k, a, x)| (k.to_owned(), a, x)).collect();
    assert_eq!(flow(&ev), want);
}

#[test]
fn an_indirect_branch_inside_a_p_header_waits_for_its_address() {
    // BL 0x1020, ADD, BX lr: the return address comes in the branch
    // address packet; the atoms after the BX lr have no known instruction.
    // Cycle-accurate format 1 with a W before each instruction: the W
    // atoms of the P-header are on the ranges, none trails.
    let steps = [
        Step::Op(isync(0x1010)),
        Step::PHeader(p_header(PHeaderFormat::Format1, 5, 0b1_1111, 5)),
        Step::Op(branch(0x1014)),
        Step::PHeader(p_header(PHeaderFormat::Format1, 1, 1, 1)),
    ];
    let ev = run(&mut decoder(true), &steps, true, true);
    let got: Vec<_> = ev
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Range(r) => Some((r.start, r.cycles)),
            EventKind::CycleCount(c) => Some((0, Some(c))),
            _ => None,
        })
        .collect();
    assert_eq!(
        got,
        [
            (0x1010, Some(1)),
            (0x1020, Some(1)),
            (0x1024, Some(1)),
            (0x1014, Some(1)),
        ]
    );
}
