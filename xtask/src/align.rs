//! Aligning two long sequences (OpenCSD's instructions and ours) so that
//! one difference does not hide the agreement after it.
//!
//! Both sequences carry, per element, the trace offset (`Idx`) of the
//! packet that produced it. They are cut at the same offsets (the address
//! packets, where both decoders learn the address anew), and each pair of
//! pieces is diffed with Myers' algorithm. The pieces are short, so the
//! whole costs about linear time even where the two differ a lot.

use similar::{capture_diff_slices, Algorithm, DiffTag};
use std::hash::Hash;
use std::ops::Range;

/// A stretch where the two sequences differ: elements of `theirs` and of
/// `ours` (either may be empty) between two agreeing stretches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Positions in the first sequence.
    pub theirs: Range<usize>,
    /// Positions in the second sequence.
    pub ours: Range<usize>,
}

/// The result of [`align`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Alignment {
    /// Pairs of equal elements: (position in theirs, position in ours).
    pub matched: Vec<(usize, usize)>,
    /// The differing stretches, in order.
    pub hunks: Vec<Hunk>,
}

/// Position ranges of consecutive elements per piece: piece `k` holds the
/// elements whose offset lies in `cuts[k-1]..cuts[k]` (piece 0: before
/// `cuts[0]`). Offsets that go backwards stay in the current piece.
fn pieces(idx: &[u64], cuts: &[u64]) -> Vec<Range<usize>> {
    let mut out = vec![0..0; cuts.len() + 1];
    let mut piece = 0;
    for (pos, &i) in idx.iter().enumerate() {
        piece = piece.max(cuts.partition_point(|&c| c <= i));
        let r = &mut out[piece];
        if Range::is_empty(r) {
            *r = pos..pos + 1;
        } else {
            r.end = pos + 1;
        }
    }
    out
}

/// Align `theirs` with `ours`; `*_idx` give each element's offset (same
/// length as the sequence) and `cuts` the sorted offsets to cut at.
#[must_use]
pub fn align<T: Eq + Hash + Ord>(
    theirs: &[T],
    theirs_idx: &[u64],
    ours: &[T],
    ours_idx: &[u64],
    cuts: &[u64],
) -> Alignment {
    let a = pieces(theirs_idx, cuts);
    let b = pieces(ours_idx, cuts);
    let mut out = Alignment::default();
    // The open hunk, extended while differences follow each other.
    let mut open: Option<Hunk> = None;
    let (mut at_a, mut at_b) = (0, 0);
    for (ra, rb) in a.into_iter().zip(b) {
        // Empty pieces keep their place in the sequence.
        let ra = if ra.is_empty() { at_a..at_a } else { ra };
        let rb = if rb.is_empty() { at_b..at_b } else { rb };
        for op in capture_diff_slices(Algorithm::Myers, &theirs[ra.clone()], &ours[rb.clone()]) {
            let (tag, x, y) = op.as_tag_tuple();
            let x = x.start + ra.start..x.end + ra.start;
            let y = y.start + rb.start..y.end + rb.start;
            if tag == DiffTag::Equal {
                out.hunks.extend(open.take());
                out.matched.extend(x.zip(y));
            } else {
                match &mut open {
                    Some(h) => {
                        h.theirs.end = x.end;
                        h.ours.end = y.end;
                    }
                    None => open = Some(Hunk { theirs: x, ours: y }),
                }
            }
        }
        at_a = ra.end;
        at_b = rb.end;
    }
    out.hunks.extend(open);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_difference_does_not_hide_what_follows() {
        // Ours lacks element 2 and has an extra one before the last.
        let theirs = [1, 2, 3, 4, 5, 6];
        let ours = [1, 2, 4, 5, 9, 6];
        let idx_t = [0, 0, 0, 10, 10, 10];
        let idx_o = [0, 0, 10, 10, 10, 10];
        let al = align(&theirs, &idx_t, &ours, &idx_o, &[10]);
        assert_eq!(al.matched.len(), 5);
        assert_eq!(
            al.hunks,
            vec![
                Hunk {
                    theirs: 2..3,
                    ours: 2..2
                },
                Hunk {
                    theirs: 5..5,
                    ours: 4..5
                }
            ]
        );
    }

    #[test]
    fn pieces_keep_equal_values_from_pairing_across_cuts() {
        // The same value in different pieces is not paired.
        let theirs = [7, 8];
        let ours = [8, 7];
        let al = align(&theirs, &[0, 5], &ours, &[0, 5], &[5]);
        assert_eq!(al.matched.len(), 0);
        assert_eq!(
            al.hunks,
            vec![Hunk {
                theirs: 0..2,
                ours: 0..2
            }]
        );
    }

    #[test]
    fn a_side_with_nothing_in_a_piece() {
        let theirs = [1, 2, 3];
        let ours = [1, 3];
        let al = align(&theirs, &[0, 4, 8], &ours, &[0, 8], &[4, 8]);
        assert_eq!(al.matched, vec![(0, 0), (2, 1)]);
        assert_eq!(
            al.hunks,
            vec![Hunk {
                theirs: 1..2,
                ours: 1..1
            }]
        );
    }
}
