//! Where a damaged capture's decode differs from the clean decode, and
//! whether the decoder said so there.
//!
//! Definitions (per trace ID):
//!
//! - The instruction-level streams are the `Range` events. A damaged
//!   range *agrees* with a clean one when both are equal in every field
//!   and come from the same packet: the clean range's offset, placed in
//!   the damaged capture by the damage's offset map, is the damaged
//!   range's offset. Clean ranges whose offset the map drops (bytes cut
//!   off the end of a truncated capture) are not compared.
//! - Both streams are ordered by (damaged) offset, and a range can only
//!   agree with one of the same offset, so their longest common
//!   subsequence is the concatenation, offset by offset, of the longest
//!   common subsequences of the ranges of each offset. Those are the
//!   agreeing pairs.
//! - Decoding *agrees again* at a run of `min_run` consecutive agreeing
//!   pairs (consecutive in both streams), or at a run that starts or ends
//!   both streams. A shorter run between disagreements is a coincidence
//!   of a wrong walk (the same block reached from the wrong place) and
//!   belongs to the disagreement around it.
//! - A *stretch* is what lies between two places where decoding agrees
//!   again (or the start or end of the streams), when it holds ranges
//!   that do not agree: the damaged decode has ranges there that the
//!   clean one has not, or lacks some that it has, or both.
//! - A stretch is *reported* when a report event of the ID (any gap,
//!   `no_sync`, `addr_nacc`, `inconsistent`, trace restarted after an
//!   overflow) lies strictly between the agreeing damaged ranges that
//!   enclose it, in the damaged event order, and the clean decode has no
//!   equal report at that packet (a report the clean capture gets too
//!   says nothing about the damage). A report after decoding agrees again
//!   does not count.
//! - A stretch *spans* the damaged capture from the packet of the agreeing
//!   range before it (the capture's start when there is none) up to,
//!   not including, the packet where decoding agrees again (to the end of
//!   the capture when it never does).
//! - A stretch is *visible* when the decoder reported it, or when
//!   something in the damaged trace it spans could contradict the flow
//!   decoded there: a packet of the ID that gives an address the flow must
//!   reach (a periodic I-sync, a branch address, a waypoint update) or a
//!   packet error of the ID. An A-sync carries no address, and an I-sync
//!   that starts trace (after a filter, an overflow or debug) follows a
//!   stretch of untraced execution. Other stretches are *invisible*: no
//!   decoder can tell them from the processor's real flow. (Some visible
//!   ones cannot be told either: a branch address after a wrong walk that
//!   ends on an indirect branch is that branch's legal target.)
//! - The *share* is that of the visible stretches that are reported.
//!   For comparison, the share is also given with the sync points alone
//!   (any A-sync or I-sync) making a stretch visible.

use std::collections::HashSet;
use trace_core::event::{Event, EventKind, Range, TraceOnReason};

/// One stretch of disagreement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stretch {
    /// The damaged offset of the agreeing range before it (0 when there
    /// is none).
    pub from: u64,
    /// The smallest damaged offset of its ranges (a clean range lacking
    /// from the damaged decode counts at its place in the damaged
    /// capture).
    pub start: u64,
    /// The damaged offset of the first agreeing range after it; `None`
    /// when decoding never agrees again.
    pub end: Option<u64>,
    /// Damaged ranges without a clean counterpart.
    pub extra: usize,
    /// Clean ranges without a damaged counterpart.
    pub missing: usize,
    /// The first report within it (see the module documentation).
    pub report: Option<EventKind>,
}

/// How a stretch counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    /// The decoder reported trouble within it.
    pub reported: bool,
    /// No sync point (A-sync, I-sync) lies within it.
    pub no_sync: bool,
    /// Not reported, and nothing in the trace it spans could contradict
    /// the flow decoded there (see the module documentation).
    pub invisible: bool,
}

/// Whether `e` is a report of trouble.
pub fn is_report(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::Gap(_)
            | EventKind::NoSync
            | EventKind::AddrNacc { .. }
            | EventKind::Inconsistent { .. }
            | EventKind::TraceOn {
                reason: TraceOnReason::Overflow,
                ..
            }
    )
}

/// A range at an offset; for the damaged stream also its index in the
/// damaged event list.
#[derive(Debug, Clone, Copy)]
struct At {
    offset: u64,
    range: Range,
    index: usize,
}

fn ranges(events: &[Event], id: u8, place: impl Fn(u64) -> Option<u64>) -> Vec<At> {
    let mut v: Vec<At> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.id == id)
        .filter_map(|(index, e)| match e.kind {
            EventKind::Range(range) => Some(At {
                offset: place(e.offset)?,
                range,
                index,
            }),
            _ => None,
        })
        .collect();
    // Stable: the order within a packet stays.
    v.sort_by_key(|a| a.offset);
    v
}

/// The longest common subsequence of `a` and `b` (small: the ranges of
/// one packet), as index pairs in increasing order.
fn lcs(a: &[At], b: &[At]) -> Vec<(usize, usize)> {
    let (n, m) = (a.len(), b.len());
    let mut t = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[at(i, j)] = if a[i].range == b[j].range {
                t[at(i + 1, j + 1)] + 1
            } else {
                t[at(i + 1, j)].max(t[at(i, j + 1)])
            };
        }
    }
    let mut pairs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if a[i].range == b[j].range {
            pairs.push((i, j));
            i += 1;
            j += 1;
        } else if t[at(i + 1, j)] >= t[at(i, j + 1)] {
            i += 1;
        } else {
            j += 1;
        }
    }
    pairs
}

/// The agreeing pairs (damaged index, clean index) of two offset-ordered
/// range lists.
fn agreeing(d: &[At], c: &[At]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < d.len() && j < c.len() {
        let (od, oc) = (d[i].offset, c[j].offset);
        if od < oc {
            i += 1;
        } else if oc < od {
            j += 1;
        } else {
            let i2 = i + d[i..].iter().take_while(|x| x.offset == od).count();
            let j2 = j + c[j..].iter().take_while(|x| x.offset == od).count();
            pairs.extend(
                lcs(&d[i..i2], &c[j..j2])
                    .into_iter()
                    .map(|(a, b)| (i + a, j + b)),
            );
            (i, j) = (i2, j2);
        }
    }
    pairs
}

/// The stretches where the decode `damaged` of ID `id` differs from
/// `clean`; `place` gives the damaged offset of a clean offset (`None`:
/// not in the damaged capture). Decoding agrees again at `min_run`
/// consecutive agreeing ranges.
pub fn stretches(
    clean: &[Event],
    damaged: &[Event],
    id: u8,
    min_run: usize,
    place: impl Fn(u64) -> Option<u64>,
) -> Vec<Stretch> {
    let d = ranges(damaged, id, Some);
    let c = ranges(clean, id, &place);
    let clean_reports: HashSet<(u64, EventKind)> = clean
        .iter()
        .filter(|e| e.id == id && is_report(e))
        .filter_map(|e| Some((place(e.offset)?, e.kind)))
        .collect();
    // Indices in `damaged` of the reports the damage brought.
    let reports: Vec<usize> = damaged
        .iter()
        .enumerate()
        .filter(|(_, e)| e.id == id && is_report(e))
        .filter(|(_, e)| !clean_reports.contains(&(e.offset, e.kind)))
        .map(|(k, _)| k)
        .collect();
    let pairs = agreeing(&d, &c);
    let (mut agrees_d, mut agrees_c) = (vec![false; d.len()], vec![false; c.len()]);
    for &(i, j) in &pairs {
        (agrees_d[i], agrees_c[j]) = (true, true);
    }
    // Decoding agrees again at a run of `min_run` consecutive agreeing
    // pairs, or at one that starts or ends both streams; shorter runs
    // between disagreements belong to the stretch.
    let mut anchors = Vec::new();
    let mut k = 0;
    while k < pairs.len() {
        let mut e = k + 1;
        while e < pairs.len() && pairs[e] == (pairs[e - 1].0 + 1, pairs[e - 1].1 + 1) {
            e += 1;
        }
        let edge = pairs[k] == (0, 0) || pairs[e - 1] == (d.len() - 1, c.len() - 1);
        if e - k >= min_run || edge {
            anchors.extend_from_slice(&pairs[k..e]);
        }
        k = e;
    }
    // A sentinel past both ends closes the last stretch.
    anchors.push((d.len(), c.len()));
    let mut out = Vec::new();
    let mut prev: Option<(usize, usize)> = None;
    for (di, ci) in anchors {
        let (d0, c0) = prev.map_or((0, 0), |(a, b)| (a + 1, b + 1));
        let extra: Vec<&At> = (d0..di).filter(|&i| !agrees_d[i]).map(|i| &d[i]).collect();
        let missing: Vec<&At> = (c0..ci).filter(|&j| !agrees_c[j]).map(|j| &c[j]).collect();
        if !extra.is_empty() || !missing.is_empty() {
            let start = extra
                .iter()
                .chain(&missing)
                .map(|a| a.offset)
                .min()
                .unwrap_or_default();
            let lo = prev.map(|(a, _)| d[a].index);
            let hi = d.get(di).map_or(usize::MAX, |a| a.index);
            let report = reports
                .iter()
                .find(|&&k| lo.is_none_or(|lo| k > lo) && k < hi)
                .map(|&k| damaged[k].kind);
            out.push(Stretch {
                from: prev.map_or(0, |(a, _)| d[a].offset),
                start,
                end: d.get(di).map(|a| a.offset),
                extra: extra.len(),
                missing: missing.len(),
                report,
            });
        }
        prev = Some((di, ci));
    }
    out
}

/// Whether one of `points` (sorted damaged offsets) lies in the span of
/// `s`.
fn within(s: &Stretch, points: &[u64]) -> bool {
    let k = points.partition_point(|&o| o < s.from);
    points
        .get(k)
        .is_some_and(|&o| s.end.is_none_or(|end| o < end))
}

/// How `s` counts, given the damaged offsets (sorted) of the intact sync
/// points of its ID, and those of everything that can contradict a wrong
/// flow (periodic I-syncs, other packets with an address, packet errors).
pub fn classify(s: &Stretch, syncs: &[u64], evidence: &[u64]) -> Class {
    let reported = s.report.is_some();
    Class {
        reported,
        no_sync: !within(s, syncs),
        invisible: !reported && !within(s, evidence),
    }
}

/// Counts of stretches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// All stretches.
    pub stretches: usize,
    /// Those reported.
    pub reported: usize,
    /// Those without a sync point, and how many of them are reported.
    pub no_sync: (usize, usize),
    /// Those invisible (never reported).
    pub invisible: usize,
}

impl Tally {
    /// Count one stretch.
    pub fn add(&mut self, class: Class) {
        let r = usize::from(class.reported);
        self.stretches += 1;
        self.reported += r;
        if class.no_sync {
            self.no_sync.0 += 1;
            self.no_sync.1 += r;
        }
        self.invisible += usize::from(class.invisible);
    }

    /// Add another tally.
    pub fn merge(&mut self, o: Tally) {
        self.stretches += o.stretches;
        self.reported += o.reported;
        self.no_sync.0 += o.no_sync.0;
        self.no_sync.1 += o.no_sync.1;
        self.invisible += o.invisible;
    }

    /// Share of the stretches outside `excluded` (a count and how many of
    /// them are reported) that are reported (1 when there are none).
    fn share_without(&self, excluded: (usize, usize)) -> f64 {
        let left = self.stretches - excluded.0;
        if left == 0 {
            1.0
        } else {
            (self.reported - excluded.1) as f64 / left as f64
        }
    }

    /// Share of the visible stretches (see [`Class::invisible`]) that are
    /// reported.
    pub fn share(&self) -> f64 {
        self.share_without((self.invisible, 0))
    }

    /// Share of the stretches with a sync point that are reported.
    pub fn share_with_sync(&self) -> f64 {
        self.share_without(self.no_sync)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_core::event::{Check, GapReason, InsnClass, Isa};
    use trace_core::memory::Space;

    fn range(start: u32) -> EventKind {
        EventKind::Range(Range {
            start,
            end: start + 4,
            count: 1,
            isa: Isa::A32,
            last_size: 4,
            last: InsnClass::Other,
            link: false,
            ret: false,
            cond: false,
            executed: true,
            cycles: None,
            space: Space::Secure,
        })
    }

    fn ev(offset: u64, kind: EventKind) -> Event {
        Event {
            offset,
            id: 1,
            kind,
        }
    }

    fn r(offset: u64, start: u32) -> Event {
        ev(offset, range(start))
    }

    const GAP: EventKind = EventKind::Gap(GapReason::PacketError);

    #[test]
    fn equal_decodes_have_no_stretch() {
        let clean = [r(0, 0x100), r(0, 0x104), r(5, 0x200)];
        assert!(stretches(&clean, &clean, 1, 1, Some).is_empty());
        // Another ID's differences are not this one's.
        let mut other = clean.to_vec();
        other.push(Event {
            offset: 3,
            id: 2,
            kind: range(0x300),
        });
        assert!(stretches(&clean, &other, 1, 1, Some).is_empty());
    }

    #[test]
    fn a_wrong_walk_between_agreeing_ranges_is_one_stretch() {
        let clean = [r(0, 0x100), r(4, 0x200), r(4, 0x204), r(8, 0x300)];
        // The same packets, one walked elsewhere; then a gap report.
        let damaged = [r(0, 0x100), r(4, 0x900), ev(6, GAP), r(8, 0x300)];
        let s = stretches(&clean, &damaged, 1, 1, Some);
        assert_eq!(
            s,
            [Stretch {
                from: 0,
                start: 4,
                end: Some(8),
                extra: 1,
                missing: 2,
                report: Some(GAP),
            }]
        );
        // A range equal in content but from another packet is no match.
        let damaged = [r(0, 0x100), r(5, 0x200), r(5, 0x204), r(8, 0x300)];
        let s = stretches(&clean, &damaged, 1, 1, Some);
        assert_eq!((s.len(), s[0].extra, s[0].missing), (1, 2, 2));
        assert!(s[0].report.is_none());
    }

    #[test]
    fn a_coincidence_inside_a_wrong_walk_does_not_end_the_stretch() {
        let clean = [
            r(0, 0x100),
            r(1, 0x200),
            r(2, 0x300),
            r(3, 0x400),
            r(4, 0x500),
            r(5, 0x600),
            r(6, 0x700),
        ];
        // Wrong at 1 and 3, right by chance at 2, right again from 4.
        let damaged = [
            r(0, 0x100),
            r(1, 0x900),
            r(2, 0x300),
            r(3, 0x900),
            r(4, 0x500),
            r(5, 0x600),
            r(6, 0x700),
        ];
        let spans = |min_run| {
            stretches(&clean, &damaged, 1, min_run, Some)
                .iter()
                .map(|s| (s.from, s.start, s.end, s.extra, s.missing))
                .collect::<Vec<_>>()
        };
        assert_eq!(spans(1), [(0, 1, Some(2), 1, 1), (2, 3, Some(4), 1, 1)]);
        assert_eq!(spans(2), [(0, 1, Some(4), 2, 2)]);
        // The agreeing runs at both ends count however short they are.
        assert_eq!(spans(4), [(0, 1, Some(4), 2, 2)]);
    }

    #[test]
    fn offsets_are_placed_by_the_damage_map() {
        // Three bytes inserted at 4: clean offsets from 4 on move by 3.
        let clean = [r(0, 0x100), r(4, 0x200), r(8, 0x300)];
        let damaged = [r(0, 0x100), r(7, 0x200), r(11, 0x300)];
        let place = |c: u64| Some(if c >= 4 { c + 3 } else { c });
        assert!(stretches(&clean, &damaged, 1, 1, place).is_empty());
        // Unplaced clean ranges are not compared.
        let cut = |c: u64| (c < 8).then_some(c);
        assert!(stretches(&clean, &clean[..2], 1, 1, cut).is_empty());
    }

    #[test]
    fn reports_count_only_inside_the_stretch_and_when_new() {
        let clean = [
            r(0, 0x100),
            ev(2, GAP),
            r(4, 0x200),
            r(8, 0x300),
            r(12, 0x400),
        ];
        // The range at 4 is missing; the report at 2 lies between the
        // agreeing ranges at 0 and 8, but the clean decode has it too.
        let damaged = [r(0, 0x100), ev(2, GAP), r(8, 0x300), r(12, 0x400)];
        let s = stretches(&clean, &damaged, 1, 1, Some);
        assert_eq!(s.len(), 1);
        assert!(s[0].report.is_none(), "the clean decode reports it too");
        // A report after decoding agrees again is not where it happens.
        let late = EventKind::Inconsistent {
            check: Check::Sync,
            expected: 0,
            traced: Some(4),
        };
        let damaged = [
            r(0, 0x100),
            ev(2, GAP),
            r(8, 0x300),
            ev(9, late),
            r(12, 0x400),
        ];
        assert!(stretches(&clean, &damaged, 1, 1, Some)[0].report.is_none());
        // Before the first agreeing range, and to the end of the stream.
        let damaged = [ev(0, EventKind::NoSync), r(8, 0x300), r(12, 0x999)];
        let s = stretches(&clean, &damaged, 1, 1, Some);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].report, s[0].end), (Some(EventKind::NoSync), Some(8)));
        assert!(s[1].report.is_none() && s[1].end.is_none() && s[1].start == 12);
    }

    #[test]
    fn invisible_means_nothing_to_contradict_the_flow_in_the_span() {
        let s = |from, end| Stretch {
            from,
            start: from + 2,
            end,
            extra: 1,
            missing: 0,
            report: None,
        };
        let invisible = |s: &Stretch, points: &[u64]| classify(s, &[], points).invisible;
        // Nothing in the span.
        assert!(invisible(&s(10, Some(20)), &[5, 20, 30]));
        assert!(!invisible(&s(10, Some(21)), &[5, 20, 30]));
        assert!(!invisible(&s(10, Some(20)), &[10]));
        assert!(invisible(&s(10, None), &[5]));
        assert!(!invisible(&s(10, None), &[5, 40]));
        // A reported stretch is visible.
        let mut reported = s(10, Some(20));
        reported.report = Some(GAP);
        assert_eq!(
            classify(&reported, &[5], &[]),
            Class {
                reported: true,
                no_sync: true,
                invisible: false,
            }
        );
        let mut t = Tally::default();
        for (reported, invisible) in [(true, false), (false, true), (false, false), (true, false)] {
            t.add(Class {
                reported,
                no_sync: true,
                invisible,
            });
        }
        assert_eq!((t.stretches, t.reported, t.invisible), (4, 2, 1));
        // Two of the three visible stretches are reported.
        assert!((t.share() - 2.0 / 3.0).abs() < 1e-12);
        assert!((t.share_with_sync() - 1.0).abs() < 1e-12, "none left");
    }
}
