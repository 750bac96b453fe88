//! Lowering ETMv3 packets into [`TraceOp`]s.

use crate::decode::op::{Branch, InsnAtoms, Sync, SyncReason, Target, TraceOp};
use crate::event::{Isa, TraceOnReason};
use etm_packets::{Atoms, Isa as EIsa, Packet, Reason};

fn target(addr: u32, isa: EIsa) -> Target {
    Target {
        addr,
        isa: match isa {
            EIsa::Arm => Some(Isa::A32),
            EIsa::Thumb | EIsa::ThumbEE => Some(Isa::T32),
            EIsa::Jazelle => None,
        },
    }
}

/// Split a P-header's W atoms into those before the first instruction,
/// before each later one, and after the last one (counts saturate at 255).
///
/// This is the closed form of replaying the atoms in trace order
/// ([`Atoms::iter`]) and counting the W runs, one per format: it runs once
/// per P-header, and cycle-accurate streams are mostly P-headers, so it
/// must not step through the W atoms one by one. The test
/// `cycle_split_matches_the_atom_replay` checks it against the replay.
#[inline(always)]
fn cycles_of(a: &Atoms) -> (u8, u8, u8) {
    let s = split_of(a);
    (s as u8, (s >> 8) as u8, (s >> 16) as u8)
}

/// [`cycles_of`] packed as `first | each << 8 | trailing << 16`: one load
/// from [`SPLITS`] for the P-headers that exist (up to 16 instructions
/// and 15 W atoms), computed otherwise.
#[inline(always)]
pub(crate) fn split_of(a: &Atoms) -> u32 {
    let format = usize::from(a.format.number());
    SPLITS
        .get(format * SPLIT_ROW + usize::from(a.count) * 16 + usize::from(a.cycles))
        .filter(|_| a.count <= 16 && a.cycles < 16)
        .copied()
        .unwrap_or_else(|| split(a.format.number(), a.count, a.cycles))
}

/// Entries of [`SPLITS`] per format: 17 instruction counts of 16 W
/// counts.
const SPLIT_ROW: usize = 17 * 16;

/// [`split`] of every format, instruction count (0 to 16) and W count (0
/// to 15), so that a P-header's split costs one load instead of a jump on
/// its format, which changes from one P-header to the next.
static SPLITS: [u32; 5 * SPLIT_ROW] = {
    let mut t = [0u32; 5 * SPLIT_ROW];
    let mut i = 0;
    while i < t.len() {
        let format = (i / SPLIT_ROW) as u8;
        let count = ((i % SPLIT_ROW) / 16) as u8;
        let cycles = (i % 16) as u8;
        t[i] = split(format, count, cycles);
        i += 1;
    }
    t
};

/// The W split of a P-header of format number `format` with `count` E/N
/// atoms and `cycles` W atoms, packed as in [`split_of`].
const fn split(format: u8, count: u8, cycles: u8) -> u32 {
    let total = count as u32 + cycles as u32;
    let (first, each, trailing) = match format {
        // Cycle-accurate format 1 alternates W, E/N, W, E/N, ...: one W
        // before each instruction, and a last unpaired W trails.
        1 if cycles > 0 => (
            (total >= 2) as u8,
            (total >= 4) as u8,
            (total % 2 == 1) as u8,
        ),
        // Cycle-accurate format 2: one W, then the E/N atoms.
        2 if cycles > 0 => {
            if total >= 2 {
                (1, 0, 0)
            } else {
                (0, 0, 1)
            }
        }
        // All W atoms first, then the E/N atoms.
        0 | 3 => {
            if count > 0 {
                (cycles, 0, 0)
            } else {
                (0, 0, cycles)
            }
        }
        // No W atom.
        _ => (0, 0, 0),
    };
    first as u32 | (each as u32) << 8 | (trailing as u32) << 16
}

/// The operation an ETMv3 packet stands for; `cycle_accurate` is the
/// source's ETMCR bit 12.
#[must_use]
pub fn lower(packet: &Packet, cycle_accurate: bool) -> TraceOp {
    // P-headers are most of a cycle-accurate stream: lowered here, without
    // the setup that the other packet kinds need.
    match packet {
        Packet::Atoms(a) => TraceOp::InsnAtoms(insn_atoms(a, cycle_accurate)),
        _ => lower_other(packet, cycle_accurate),
    }
}

/// A P-header as the engine's fast path takes it: the number of
/// instructions, their E bits, and in cycle-accurate mode the W split
/// packed as in [`split_of`].
#[inline(always)]
pub(crate) fn p_header(a: &Atoms, cycle_accurate: bool) -> (u32, u16, Option<u32>) {
    (
        u32::from(a.count.min(16)),
        a.executed,
        cycle_accurate.then(|| split_of(a)),
    )
}

/// The operation of a P-header.
#[inline(always)]
fn insn_atoms(a: &Atoms, cycle_accurate: bool) -> InsnAtoms {
    InsnAtoms {
        count: a.count.min(16),
        executed: a.executed,
        cycles: cycle_accurate.then(|| cycles_of(a)),
    }
}

/// [`lower`], out of line for the packets other than P-headers.
#[inline(never)]
fn lower_other(packet: &Packet, cycle_accurate: bool) -> TraceOp {
    match *packet {
        Packet::ASync => TraceOp::ASync,
        Packet::ISync(s) if s.is_data_only() => TraceOp::Ignored,
        Packet::ISync(s) => TraceOp::Sync(Sync {
            target: target(s.address(), s.isa()),
            ns: s.ns(),
            hyp: s.hyp(),
            context_id: s.context_id(),
            reason: match s.reason() {
                Reason::Periodic => SyncReason::Periodic,
                Reason::TraceOn => SyncReason::TraceOn(TraceOnReason::Filter),
                Reason::Overflow => SyncReason::TraceOn(TraceOnReason::Overflow),
                Reason::DebugExit => SyncReason::TraceOn(TraceOnReason::DebugExit),
            },
            cycles: s.cycle_count(),
            lsip: s.lsip().map(|l| l.address),
        }),
        Packet::Atoms(a) => TraceOp::InsnAtoms(insn_atoms(&a, cycle_accurate)),
        Packet::Branch(b) => TraceOp::Branch(Branch {
            target: target(b.address, b.isa),
            bits: b.known_bits,
            exception: b.exception.map_or(0, |e| e.number),
            cancel: b.exception.is_some_and(|e| e.cancel),
            ns: b.exception.map(|_| b.ns),
            hyp: b.exception.map(|_| b.hyp),
            cycles: None,
        }),
        Packet::CycleCount(c) => TraceOp::CycleCount(c),
        Packet::ContextId(c) => TraceOp::ContextId(c),
        Packet::Vmid(v) => TraceOp::Vmid(v),
        Packet::Timestamp(t) => TraceOp::Timestamp {
            value: t.value,
            cycles: None,
        },
        Packet::ExceptionEntry => TraceOp::ExceptionEntry,
        Packet::ExceptionExit => TraceOp::ExceptionReturn,
        Packet::Trigger
        | Packet::Ignore
        | Packet::StoreFailed
        | Packet::DataSuppressed
        | Packet::ValueNotTraced(_)
        | Packet::NormalData(_)
        | Packet::OutOfOrderData(_)
        | Packet::OutOfOrderPlaceholder(_) => TraceOp::Ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etm_packets::{Atom, PHeaderFormat};

    /// The W runs counted by replaying the atoms in trace order.
    fn cycles_by_replay(a: &Atoms) -> (u8, u8, u8) {
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

    #[test]
    fn cycle_split_matches_the_atom_replay() {
        use PHeaderFormat::*;
        for format in [Format0, Format1, Format2, Format3, Format4] {
            for count in 0..=20u8 {
                for cycles in 0..=255u8 {
                    let a = Atoms {
                        format,
                        count,
                        executed: 0x5555,
                        cycles,
                    };
                    assert_eq!(cycles_of(&a), cycles_by_replay(&a), "{a:?}");
                }
            }
        }
    }

    #[test]
    fn cycle_split_follows_the_formats() {
        let f1 = Atoms {
            format: PHeaderFormat::Format1,
            count: 3,
            executed: 0b011,
            cycles: 3,
        };
        assert_eq!(cycles_of(&f1), (1, 1, 0));
        let f2 = Atoms {
            format: PHeaderFormat::Format2,
            count: 2,
            executed: 0b11,
            cycles: 1,
        };
        assert_eq!(cycles_of(&f2), (1, 0, 0));
        let f3 = Atoms {
            format: PHeaderFormat::Format3,
            count: 0,
            executed: 0,
            cycles: 8,
        };
        assert_eq!(cycles_of(&f3), (0, 0, 8));
        let f3e = Atoms {
            format: PHeaderFormat::Format3,
            count: 1,
            executed: 1,
            cycles: 3,
        };
        assert_eq!(cycles_of(&f3e), (3, 0, 0));
    }
}
