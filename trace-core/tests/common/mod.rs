//! What the decoder tests share: a small A32 program, memory maps made of
//! it, trace operations built by hand, and a run to the end.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use trace_core::decode::op::{Branch, Sync, SyncReason, Target, TraceOp};
use trace_core::decode::Decoder;
use trace_core::event::{Check, Event, EventKind, Isa, Range, TraceOnReason};
use trace_core::memory::{MemoryMap, Region, Space};

/// Where [`A32`] is placed.
pub const A32_BASE: u32 = 0x1000;
/// A32 program (encodings from the ARM ARM, A8.8).
pub const A32: [u32; 10] = [
    0xE3A0_0000, // 1000 MOV r0, #0
    0xE280_0001, // 1004 ADD r0, r0, #1
    0xE350_000A, // 1008 CMP r0, #10
    0x1AFF_FFFC, // 100C BNE 0x1004   (PC+8 - 16)
    0xEB00_0002, // 1010 BL 0x1020    (PC+8 + 8)
    0xEAFF_FFFE, // 1014 B .
    0xE320_F000, // 1018 NOP
    0xE320_F000, // 101C NOP
    0xE280_0001, // 1020 ADD r0, r0, #1
    0xE12F_FF1E, // 1024 BX lr
];

/// A map holding [`A32`] at [`A32_BASE`] and `more` (name, address,
/// little-endian bytes).
pub fn memory_with(more: &[(&str, u32, Vec<u8>)]) -> Arc<MemoryMap> {
    let mut map = MemoryMap::new();
    let a: Vec<u8> = A32.iter().flat_map(|w| w.to_le_bytes()).collect();
    let n = a.len();
    map.add(Region::new("a32", A32_BASE, Space::Any, a.into(), 0, n).unwrap());
    for (name, at, bytes) in more {
        let n = bytes.len();
        map.add(Region::new(*name, *at, Space::Any, bytes.clone().into(), 0, n).unwrap());
    }
    Arc::new(map)
}

/// The bytes of T32 halfwords.
pub fn halfwords(h: &[u16]) -> Vec<u8> {
    h.iter().flat_map(|h| h.to_le_bytes()).collect()
}

/// Every operation, then the end of the trace; the events in order.
pub fn run(d: &mut Decoder, ops: &[TraceOp]) -> Vec<Event> {
    let mut out = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        d.run_op(i as u64, op, &mut |e| out.push(e));
    }
    d.finish(&mut |e| out.push(e));
    out
}

/// An I-sync at `addr` for `reason`.
pub fn sync(addr: u32, isa: Isa, reason: SyncReason) -> TraceOp {
    TraceOp::Sync(Sync {
        target: Target {
            addr,
            isa: Some(isa),
        },
        ns: false,
        hyp: false,
        context_id: None,
        reason,
        cycles: None,
        lsip: None,
    })
}

/// An I-sync that (re)starts the trace.
pub fn trace_on(addr: u32, isa: Isa) -> TraceOp {
    sync(addr, isa, SyncReason::TraceOn(TraceOnReason::Filter))
}

/// A branch address packet that gave `bits` low bits of `addr`.
pub fn branch_bits(addr: u32, isa: Isa, bits: u8, exception: u16) -> TraceOp {
    TraceOp::Branch(Branch {
        target: Target {
            addr,
            isa: Some(isa),
        },
        bits,
        exception,
        cancel: false,
        ns: None,
        hyp: None,
        cycles: None,
    })
}

/// A PTM atom packet, one atom per waypoint, oldest first: `E` or `N`.
pub fn atoms(pattern: &str) -> TraceOp {
    let e_bits = pattern
        .bytes()
        .enumerate()
        .fold(0u8, |b, (i, c)| b | (u8::from(c == b'E') << i));
    TraceOp::WaypointAtoms {
        count: pattern.len() as u8,
        e_bits,
        cycles: None,
    }
}

/// (offset, check, expected, traced) of every inconsistency event.
pub fn inconsistencies(ev: &[Event]) -> Vec<(u64, Check, u32, Option<u32>)> {
    ev.iter()
        .filter_map(|e| match e.kind {
            EventKind::Inconsistent {
                check,
                expected,
                traced,
            } => Some((e.offset, check, expected, traced)),
            _ => None,
        })
        .collect()
}

/// Check that `runs`, the events of an ETMv3 decode by runs
/// (`DecoderConfig::with_block_ranges`), are `per`, the events of the same
/// decode with one range per instruction, with runs of consecutive
/// ranges merged: every other event equal and in the same place; each
/// merged range the contiguous instructions of the ranges it stands for,
/// at the first one's offset, all but the last executed, with the last
/// one's description and the sum of their cycles, those of the cycle
/// counts between them included; consecutive cycle counts may come as
/// one, at the first one's offset. Returns how many ranges of `per` were
/// merged into fewer.
pub fn check_runs(per: &[Event], runs: &[Event]) -> usize {
    let mut p = per.iter().peekable();
    let mut merged = 0;
    for e in runs {
        let big = match e.kind {
            EventKind::Range(r) => r,
            EventKind::CycleCount(c) => {
                let mut sum = 0;
                while sum < c {
                    let q = p.next().unwrap_or_else(|| panic!("{e:?}: cycles missing"));
                    let EventKind::CycleCount(d) = q.kind else {
                        panic!("{q:?} where {e:?} was expected");
                    };
                    if sum == 0 {
                        assert_eq!(q.offset, e.offset, "{e:?}");
                    }
                    sum += d;
                }
                assert_eq!(sum, c, "{e:?}");
                continue;
            }
            _ => {
                assert_eq!(p.next(), Some(e), "events differ outside the ranges");
                continue;
            }
        };
        let (mut n, mut at, mut cycles, mut last) = (0u32, big.start, None::<u32>, None::<Range>);
        while n < big.count {
            let q = p
                .next()
                .unwrap_or_else(|| panic!("{e:?}: instructions missing"));
            let r = match q.kind {
                EventKind::Range(r) => r,
                EventKind::CycleCount(c) if n > 0 => {
                    cycles = Some(cycles.unwrap_or(0) + c);
                    continue;
                }
                _ => panic!("{q:?} comes inside the run {e:?}"),
            };
            assert_eq!(
                (q.id, r.start, r.isa, r.space),
                (e.id, at, big.isa, big.space)
            );
            if n == 0 {
                assert_eq!(
                    q.offset, e.offset,
                    "a run has its first instruction's offset"
                );
            }
            if let Some(l) = last {
                assert!(l.executed, "{e:?}: an instruction before the last failed");
            }
            if let Some(c) = r.cycles {
                cycles = Some(cycles.unwrap_or(0) + c);
            }
            n += r.count;
            at = r.end;
            last = Some(r);
        }
        let l = last.expect("a range has instructions");
        assert_eq!(n, big.count);
        assert_eq!(
            Range {
                start: big.start,
                count: big.count,
                cycles,
                ..l
            },
            big
        );
        merged += usize::from(big.count > 1);
    }
    assert_eq!(p.next(), None, "events left over");
    merged
}
