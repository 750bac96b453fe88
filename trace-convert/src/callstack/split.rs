//! Ranges split where the chain of inlined functions changes, so that the
//! call stacks can show each piece in its own inlined frames.
//!
//! A range is a run of sequential instructions; where it crosses from
//! code of one inlined function (or none) into another, [`pieces`] cuts it
//! into ranges of one chain each ([`Symbolizer::inline_scope`]). The
//! instruction count of each piece comes from the instructions' sizes:
//! 4 bytes in A32, decoded again from the memory image in T32 (without
//! one, a T32 range stays whole). Only the last piece keeps what the
//! range says of its last instruction (class, link, return, condition,
//! executed); the others end in a plain instruction that executed. The
//! range's cycles are shared over its instructions:
//! each piece carries its instructions' share, so inlined code is not
//! left without cycles. Other events, and ranges inside one chain, are
//! one piece: themselves.

use crate::fast_map::FastMap;
use crate::symbols::{InlineScope, Symbolizer};
use trace_core::event::{Event, EventKind, InsnClass, Isa, Range};
use trace_core::memory::{MemoryImage, Space};

/// The pieces of an event, in order (see the module documentation).
#[derive(Debug)]
pub enum Pieces {
    /// The event itself, once.
    One(Option<Event>),
    /// The pieces of a split range.
    Many(std::vec::IntoIter<Event>),
}

impl Iterator for Pieces {
    type Item = Event;

    #[inline]
    fn next(&mut self) -> Option<Event> {
        match self {
            Pieces::One(e) => e.take(),
            Pieces::Many(v) => v.next(),
        }
    }
}

/// `e` as pieces that each run in one chain of inlined functions; `memory`
/// is the image of its source, for T32 instruction sizes.
#[must_use]
#[inline]
pub fn pieces(e: &Event, memory: Option<&dyn MemoryImage>, symbols: &Symbolizer) -> Pieces {
    if let EventKind::Range(r) = &e.kind {
        if r.count > 1 && symbols.has_inline_scopes() {
            let first = symbols.inline_scope(r.start);
            if r.end > first.hi {
                if let Some(v) = split(r, first, memory, symbols) {
                    let mut events: Vec<Event> = v
                        .into_iter()
                        .map(|p| Event {
                            kind: EventKind::Range(p),
                            ..*e
                        })
                        .collect();
                    share_cycles(r, &mut events);
                    return Pieces::Many(events.into_iter());
                }
            }
        }
    }
    Pieces::One(Some(*e))
}

/// [`pieces`] remembered per distinct range: loops run the same ranges
/// over and over, and a T32 split decodes its instructions again.
#[derive(Debug, Default)]
pub struct SplitCache {
    /// Per range (trace ID, start, end, count, ISA, space): where its
    /// pieces start, end and their instruction counts and last sizes
    /// (empty: one piece).
    map: FastMap<RangeKey, Box<[Cut]>>,
}

/// A range as the cache knows it: trace ID, start, end, count, ISA, space.
type RangeKey = (u8, u32, u32, u32, Isa, Space);

/// A piece of a cut range: start, end, instruction count, size of its
/// last instruction.
type Cut = (u32, u32, u32, u8);

/// Distinct ranges remembered before the cache starts again (bounds its
/// memory).
const SPLITS_KEPT: usize = 1 << 16;

impl SplitCache {
    /// [`pieces`], remembering the cut of each distinct range.
    #[inline]
    pub fn pieces(
        &mut self,
        e: &Event,
        memory: Option<&dyn MemoryImage>,
        symbols: &Symbolizer,
    ) -> Pieces {
        let mut v = Vec::new();
        if self.pieces_into(e, memory, symbols, &mut v) {
            Pieces::Many(v.into_iter())
        } else {
            Pieces::One(Some(*e))
        }
    }

    /// [`pieces`](Self::pieces) into `out` (cleared first; a buffer kept
    /// from event to event allocates nothing): true when `e` is a range
    /// cut in pieces, false when it is one piece (left out of `out`).
    #[inline]
    pub fn pieces_into(
        &mut self,
        e: &Event,
        memory: Option<&dyn MemoryImage>,
        symbols: &Symbolizer,
        out: &mut Vec<Event>,
    ) -> bool {
        out.clear();
        let EventKind::Range(r) = &e.kind else {
            return false;
        };
        if r.count <= 1 || !symbols.has_inline_scopes() {
            return false;
        }
        let key = (e.id, r.start, r.end, r.count, r.isa, r.space);
        let cuts = match self.map.get(&key) {
            Some(c) => c,
            None => {
                let cuts: Box<[Cut]> = match pieces(e, memory, symbols) {
                    Pieces::Many(v) => v
                        .filter_map(|p| match p.kind {
                            EventKind::Range(p) => Some((p.start, p.end, p.count, p.last_size)),
                            _ => None,
                        })
                        .collect(),
                    Pieces::One(_) => Box::new([]),
                };
                if self.map.len() >= SPLITS_KEPT {
                    self.map.clear();
                }
                self.map.entry(key).or_insert(cuts)
            }
        };
        if cuts.is_empty() {
            return false;
        }
        let last = cuts.len() - 1;
        out.extend(
            cuts.iter()
                .enumerate()
                .map(|(i, &(start, end, count, last_size))| {
                    let piece = if i == last {
                        Range { start, count, ..*r }
                    } else {
                        inner_piece(r, start, end, count, last_size)
                    };
                    Event {
                        kind: EventKind::Range(piece),
                        ..*e
                    }
                }),
        );
        share_cycles(r, out);
        true
    }
}

/// Share the cycles of `whole` over `pieces`, the ranges it was cut into,
/// in proportion to their instructions: the pieces' instructions up to
/// and including piece `i` carry `cycles * before_and_i / count`
/// (rounded down), so the shares add up to the range's cycles exactly.
/// A range without cycles leaves every piece without.
fn share_cycles(whole: &Range, pieces: &mut [Event]) {
    let Some(cycles) = whole.cycles else {
        for p in pieces.iter_mut() {
            if let EventKind::Range(r) = &mut p.kind {
                r.cycles = None;
            }
        }
        return;
    };
    let total = u64::from(pieces.iter().fold(0u32, |n, p| match &p.kind {
        EventKind::Range(r) => n.saturating_add(r.count),
        _ => n,
    }))
    .max(1);
    let (mut seen, mut given) = (0u64, 0u64);
    for p in pieces.iter_mut() {
        if let EventKind::Range(r) = &mut p.kind {
            seen += u64::from(r.count);
            let upto = u64::from(cycles) * seen.min(total) / total;
            // `upto` never exceeds `cycles`, a u32.
            r.cycles = Some(u32::try_from(upto - given).unwrap_or(u32::MAX));
            given = upto;
        }
    }
}

/// A piece of `r` before its last: `count` instructions from `start` to
/// `end`, ending in a plain instruction that executed (its cycles are
/// shared out over the pieces afterwards).
fn inner_piece(r: &Range, start: u32, end: u32, count: u32, last_size: u8) -> Range {
    Range {
        start,
        end,
        count,
        last_size,
        last: InsnClass::Other,
        link: false,
        ret: false,
        cond: false,
        executed: true,
        cycles: None,
        ..*r
    }
}

/// The pieces of `r`, whose first instruction runs in `first`; `None`
/// when it is one piece or its instructions cannot be told apart.
fn split(
    r: &Range,
    first: InlineScope<'_>,
    memory: Option<&dyn MemoryImage>,
    symbols: &Symbolizer,
) -> Option<Vec<Range>> {
    let mut out: Vec<Range> = Vec::new();
    let mut scope = first;
    let mut start = r.start;
    let mut count = 0u32;
    let mut last_size = 0u8;
    let mut taken = 0u32;
    let mut visit = |addr: u32, size: u8| {
        if addr < scope.lo || addr >= scope.hi {
            let next = symbols.inline_scope(addr);
            if next.chain != scope.chain && count > 0 {
                out.push(inner_piece(r, start, addr, count, last_size));
                taken += count;
                start = addr;
                count = 0;
            }
            scope = next;
        }
        count += 1;
        last_size = size;
    };
    match (r.isa, memory) {
        (Isa::A32, _) => {
            for k in 0..r.count {
                visit(r.start.wrapping_add(k.wrapping_mul(4)), 4);
            }
        }
        (Isa::T32, Some(m)) => {
            for i in r.instructions(m) {
                visit(i.addr, i.insn.size);
            }
        }
        (Isa::T32, None) => return None,
    }
    if out.is_empty() {
        return None;
    }
    // The rest (all of it when decoding stopped early) is the last piece.
    out.push(Range {
        start,
        count: r.count.saturating_sub(taken),
        ..*r
    });
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::Function;
    use trace_core::memory::Space;

    fn range(start: u32, count: u32, isa: Isa) -> Range {
        Range {
            start,
            end: start + 4 * count,
            count,
            isa,
            last_size: 4,
            last: InsnClass::Branch,
            link: true,
            ret: false,
            cond: true,
            executed: true,
            cycles: Some(9),
            space: Space::Any,
        }
    }

    fn event(r: Range) -> Event {
        Event {
            offset: 7,
            id: 3,
            kind: EventKind::Range(r),
        }
    }

    fn symbols() -> Symbolizer {
        let mut s = Symbolizer::with_functions(vec![Function {
            start: 0x100,
            end: 0x200,
            name: "f".into(),
            thumb: false,
        }]);
        s.with_test_scopes(
            0,
            &[
                (0x110, 0x120, &[("g", 0x110)]),
                (0x118, 0x11c, &[("g", 0x110), ("h", 0x118)]),
            ],
        );
        s
    }

    #[test]
    fn a32_range_is_cut_where_the_chain_changes() {
        let s = symbols();
        // 0x108..0x128 runs in f, f | g, g | g;h | g | f, f.
        let got: Vec<Range> = pieces(&event(range(0x108, 8, Isa::A32)), None, &s)
            .map(|e| match e.kind {
                EventKind::Range(r) => r,
                _ => panic!("a range"),
            })
            .collect();
        let spans: Vec<(u32, u32, u32)> = got.iter().map(|r| (r.start, r.end, r.count)).collect();
        assert_eq!(
            spans,
            [
                (0x108, 0x110, 2),
                (0x110, 0x118, 2),
                (0x118, 0x11c, 1),
                (0x11c, 0x120, 1),
                (0x120, 0x128, 2)
            ]
        );
        for p in &got[..4] {
            assert_eq!(
                (p.last, p.link, p.cond, p.executed),
                (InsnClass::Other, false, false, true)
            );
        }
        let last = got.last().expect("pieces");
        assert_eq!(
            (last.last, last.link, last.cond),
            (InsnClass::Branch, true, true)
        );
        assert_eq!(got.iter().map(|r| r.count).sum::<u32>(), 8);
        // The range's 9 cycles over its 8 instructions: the pieces up to
        // each cut carry 9 * 2/8, 9 * 4/8, 9 * 5/8, 9 * 6/8 and 9 cycles.
        let cycles: Vec<Option<u32>> = got.iter().map(|r| r.cycles).collect();
        assert_eq!(cycles, [Some(2), Some(2), Some(1), Some(1), Some(3)]);
    }

    #[test]
    fn cycles_are_shared_whole_and_absent_ones_stay_absent() {
        let s = symbols();
        for (cycles, want) in [
            (Some(0), vec![Some(0); 5]),
            (Some(1), vec![Some(0), Some(0), Some(0), Some(0), Some(1)]),
            (
                Some(u32::MAX),
                vec![
                    Some(1_073_741_823),
                    Some(1_073_741_824),
                    Some(536_870_912),
                    Some(536_870_912),
                    Some(1_073_741_824),
                ],
            ),
            (None, vec![None; 5]),
        ] {
            let mut r = range(0x108, 8, Isa::A32);
            r.cycles = cycles;
            let e = event(r);
            let mut cache = SplitCache::default();
            for got in [
                pieces(&e, None, &s).collect::<Vec<_>>(),
                cache.pieces(&e, None, &s).collect(),
            ] {
                let got: Vec<Option<u32>> = got
                    .iter()
                    .map(|p| match p.kind {
                        EventKind::Range(r) => r.cycles,
                        _ => panic!("a range"),
                    })
                    .collect();
                assert_eq!(got, want, "{cycles:?}");
                if let Some(c) = cycles {
                    assert_eq!(
                        got.iter().flatten().map(|&x| u64::from(x)).sum::<u64>(),
                        u64::from(c)
                    );
                }
            }
        }
    }

    #[test]
    fn the_cache_cuts_as_pieces_does() {
        let s = symbols();
        let mut cache = SplitCache::default();
        for r in [
            range(0x108, 8, Isa::A32),
            range(0x110, 2, Isa::A32),
            range(0x108, 8, Isa::A32),
            range(0x104, 3, Isa::A32),
        ] {
            let mut e = event(r);
            for executed in [true, false] {
                if let EventKind::Range(r) = &mut e.kind {
                    r.executed = executed;
                    r.cycles = executed.then_some(3);
                }
                let want: Vec<Event> = pieces(&e, None, &s).collect();
                let got: Vec<Event> = cache.pieces(&e, None, &s).collect();
                assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn ranges_in_one_chain_and_other_events_stay_whole() {
        let s = symbols();
        let e = event(range(0x110, 2, Isa::A32));
        assert_eq!(pieces(&e, None, &s).collect::<Vec<_>>(), [e]);
        // T32 without memory: the sizes are unknown.
        let t = event(range(0x108, 8, Isa::T32));
        assert_eq!(pieces(&t, None, &s).collect::<Vec<_>>(), [t]);
        let x = Event {
            offset: 0,
            id: 1,
            kind: EventKind::NoSync,
        };
        assert_eq!(pieces(&x, None, &s).count(), 1);
        let mut off = symbols();
        off.set_inline_scopes(false);
        let e = event(range(0x108, 8, Isa::A32));
        assert_eq!(pieces(&e, None, &off).collect::<Vec<_>>(), [e]);
    }
}
