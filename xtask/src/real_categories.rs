//! Naming what differs between OpenCSD's instructions and ours in one
//! hunk of the alignment (see `real_decode`). The categories and what
//! each means are explained in docs/conformance.md.

use crate::align::Hunk;
use crate::real_decode::{Listed, MarkKind, Side};
use std::collections::BTreeMap;
use trace_core::memory::{MemoryImage, Space};

/// Ours only, before OpenCSD's first I-sync.
pub const BEFORE_ISYNC: &str =
    "decoded before OpenCSD's first I-sync, from a full branch address (the I-sync confirms the walk)";
/// Ours only, after OpenCSD stopped.
pub const AFTER_FATAL: &str = "decoded after OpenCSD stopped at a fatal error";
/// OpenCSD keeps the instruction the cancel bit names.
pub const CANCELLED: &str = "instruction cancelled by an exception: OpenCSD keeps it, we drop it";
/// The same address decoded in the other instruction set.
pub const ISA: &str =
    "same address, other instruction set: OpenCSD goes back to T32 after a BLX into A32 code";
/// The instruction before the hunk is a branch for one decoder only.
pub const CLASS: &str = "an instruction one decoder takes for a branch and the other not";
/// A branch to the second halfword of a 32-bit T32 instruction.
pub const MID_INSN: &str =
    "branch into the middle of a 32-bit T32 instruction (image mismatch): OpenCSD decodes on from the halfword, we stop";
/// Another encoding we stop at.
pub const UNDEFINED: &str = "an encoding we call undefined: OpenCSD decodes it, we stop";
/// Memory not accessible on one side only.
pub const NACC: &str = "memory not accessible on one side";
/// Anything else.
pub const OTHER: &str = "other";

/// Instructions not matched, per category: (OpenCSD's, ours, first hunk).
pub type Tally = BTreeMap<&'static str, (usize, usize, Hunk)>;

/// Whether the halfword before `addr` starts a 32-bit T32 instruction
/// (first halfword 0b11101, 0b11110 or 0b11111 in bits \[15:11\]).
fn after_t32_prefix(mem: &dyn MemoryImage, addr: u32) -> bool {
    let mut b = [0u8; 2];
    addr.checked_sub(2)
        .is_some_and(|a| mem.read(Space::Any, a, &mut b) == 2)
        && (u16::from_le_bytes(b) >> 11) >= 0b11101
}

/// The category of one hunk.
#[must_use]
pub fn categorize(listed: &Listed, ours: &Side, h: &Hunk, mem: &dyn MemoryImage) -> &'static str {
    let first_ours = ours.idx.get(h.ours.start).copied();
    if h.theirs.is_empty() {
        if let Some(i) = first_ours {
            if listed.first_isync.is_none_or(|s| i < s) {
                return BEFORE_ISYNC;
            }
            if listed.fatal.is_some_and(|f| i >= f) {
                return AFTER_FATAL;
            }
        }
    }
    if let (Some(t), Some(o)) = (
        listed.side.insns.get(h.theirs.start),
        ours.insns.get(h.ours.start),
    ) {
        if t.addr == o.addr && t.thumb != o.thumb {
            return ISA;
        }
    }
    if let (Some(t), Some(o)) = (h.theirs.start.checked_sub(1), h.ours.start.checked_sub(1)) {
        if listed.side.class.get(t) != ours.class.get(o) {
            return CLASS;
        }
    }
    let theirs_marks = listed.side.marks_between(h.theirs.start, h.theirs.end);
    let ours_marks = ours.marks_between(h.ours.start, h.ours.end);
    if h.ours.is_empty()
        && h.theirs.len() == 1
        && theirs_marks
            .iter()
            .any(|m| m.at == h.theirs.end && m.kind == MarkKind::Cancel)
    {
        return CANCELLED;
    }
    if ours_marks
        .iter()
        .any(|m| matches!(m.kind, MarkKind::Gap("inside_instruction", _)))
    {
        return MID_INSN;
    }
    if let Some(gap) = ours_marks.iter().find_map(|m| match m.kind {
        MarkKind::Gap("undefined", addr) => Some(addr),
        _ => None,
    }) {
        let first = listed.side.insns.get(h.theirs.start);
        let at = first.map_or(gap, |i| Some(i.addr));
        return match (first, at) {
            (Some(i), Some(a)) if i.thumb && after_t32_prefix(mem, a) => MID_INSN,
            _ => UNDEFINED,
        };
    }
    let nacc = |m: &&crate::real_decode::Mark| matches!(m.kind, MarkKind::Nacc(_));
    if theirs_marks.iter().filter(nacc).count() != ours_marks.iter().filter(nacc).count() {
        return NACC;
    }
    OTHER
}

/// Every hunk's category, with the instructions it leaves unmatched.
#[must_use]
pub fn tally(listed: &Listed, ours: &Side, hunks: &[Hunk], mem: &dyn MemoryImage) -> Tally {
    let mut t = Tally::new();
    for h in hunks {
        let e = t
            .entry(categorize(listed, ours, h, mem))
            .or_insert_with(|| (0, 0, h.clone()));
        e.0 += h.theirs.len();
        e.1 += h.ours.len();
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real_decode::{Class, Insn, Mark};
    use std::sync::Arc;
    use trace_core::memory::{MemoryMap, Region};

    fn insn(addr: u32, thumb: bool) -> Insn {
        Insn {
            addr,
            thumb,
            executed: true,
        }
    }

    fn side(insns: &[(u32, bool, u64)], marks: Vec<Mark>) -> Side {
        Side {
            insns: insns.iter().map(|&(a, t, _)| insn(a, t)).collect(),
            idx: insns.iter().map(|&(_, _, i)| i).collect(),
            class: vec![Class::Other; insns.len()],
            marks,
        }
    }

    fn hunk(theirs: std::ops::Range<usize>, ours: std::ops::Range<usize>) -> Hunk {
        Hunk { theirs, ours }
    }

    /// Memory with a T32 `BL` (F000 F800) at 0x1000 and two `NOP`s.
    fn memory() -> MemoryMap {
        let mut m = MemoryMap::new();
        let data: Arc<[u8]> = Arc::from(&[0x00, 0xF0, 0x00, 0xF8, 0x00, 0xBF, 0x00, 0xBF][..]);
        m.add(Region::new("code", 0x1000, Space::Any, data, 0, 8).expect("region"));
        m
    }

    #[test]
    fn ours_only_before_the_first_isync() {
        let listed = Listed {
            side: side(&[(0x2000, true, 50)], vec![]),
            first_isync: Some(40),
            ..Listed::default()
        };
        let ours = side(&[(0x1234, false, 10), (0x2000, true, 50)], vec![]);
        let h = hunk(0..0, 0..1);
        assert_eq!(categorize(&listed, &ours, &h, &memory()), BEFORE_ISYNC);
    }

    #[test]
    fn cancelled_instruction_and_mid_instruction_branch() {
        let mark = |at, kind| Mark { at, idx: 7, kind };
        let listed = Listed {
            side: side(
                &[(0x2000, true, 5), (0x2002, true, 5), (0x1002, true, 9)],
                vec![mark(2, MarkKind::Cancel), mark(2, MarkKind::Exception(1))],
            ),
            first_isync: Some(0),
            ..Listed::default()
        };
        let ours = side(
            &[(0x2000, true, 5)],
            vec![
                mark(1, MarkKind::Exception(1)),
                mark(1, MarkKind::Gap("undefined", Some(0x1002))),
            ],
        );
        let mem = memory();
        assert_eq!(
            categorize(&listed, &ours, &hunk(1..2, 1..1), &mem),
            CANCELLED
        );
        assert_eq!(
            categorize(&listed, &ours, &hunk(2..3, 1..1), &mem),
            MID_INSN
        );
        // At 0x1006 the halfword before (BF00) does not start a 32-bit
        // instruction: another undefined encoding.
        let mut listed = listed;
        listed.side.insns[2].addr = 0x1006;
        assert_eq!(
            categorize(&listed, &ours, &hunk(2..3, 1..1), &mem),
            UNDEFINED
        );
    }

    #[test]
    fn other_instruction_set_and_branch_class() {
        let listed = Listed {
            side: side(&[(0x100, true, 1), (0x200, true, 2)], vec![]),
            first_isync: Some(0),
            ..Listed::default()
        };
        let mut ours = side(&[(0x100, true, 1), (0x200, false, 2)], vec![]);
        let mem = memory();
        assert_eq!(categorize(&listed, &ours, &hunk(1..2, 1..2), &mem), ISA);
        ours.insns[1].addr = 0x300;
        ours.class[0] = Class::Indirect;
        assert_eq!(categorize(&listed, &ours, &hunk(1..2, 1..2), &mem), CLASS);
        ours.class[0] = Class::Other;
        assert_eq!(categorize(&listed, &ours, &hunk(1..2, 1..2), &mem), OTHER);
        let t = tally(&listed, &ours, &[hunk(1..2, 1..2)], &mem);
        assert_eq!(t.get(OTHER).map(|e| (e.0, e.1)), Some((1, 1)));
    }
}
