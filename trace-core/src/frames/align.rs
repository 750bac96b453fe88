//! Finding the frame alignment of a TPIU stream from the frames themselves.
//!
//! A stream captured from a TPIU in continuous mode (a parallel trace port
//! or a serial wire output decoded by a probe or a logic analyser) may
//! carry no full-frame sync at all, start anywhere, and gain or lose bytes
//! on the way. The only evidence of where frames begin is then the frames'
//! own structure. Every even byte with bit 0 set is an ID change, so a
//! wrong alignment shows as ID changes that a formatter does not write:
//!
//! - IDs `0x70..=0x7C`, `0x7E` and `0x7F` never appear (`0x7D` marks a
//!   trigger, and `FF` at an even byte is the start of a sync);
//! - an ID change in byte 14 has no data byte after it in its frame, so its
//!   auxiliary bit (bit 7 of byte 15) is never set;
//! - a capture uses a handful of IDs, the same ones all along; an
//!   alignment that is off by an odd number of bytes reads data bytes as ID
//!   changes to IDs seen nowhere else;
//! - data under the null ID is padding, written as zeros;
//! - bursts of one source begin at a frame start, and formatters restate
//!   the ID in force, both at byte 0.
//!
//! The first two are impossible in a formatter's output and cost
//! [`IMPOSSIBLE`]; the others are priors with small costs. The search
//! explains a window of bytes as a sequence of frames, full-frame syncs
//! and skipped bytes of least total cost (dynamic programming over byte
//! positions, keeping at each the best explanation for each of up to
//! [`BEAM`] IDs in force), and commits
//! only the part on which every explanation within [`MARGIN`] of the best
//! agrees; when none agrees yet the window grows, up to [`MAX_WINDOW`],
//! and if they still disagree there the bytes are skipped rather than read
//! at a guessed alignment.
//! Skipping bytes costs [`SKIP_OPEN`] per stretch (a realignment is rare)
//! plus [`SKIP_BYTE`] per byte, except for the first partial frame of a
//! stream (up to 15 bytes, free); a stretch right after a full-frame sync
//! always pays the open cost, as a frame starts there.
//!
//! Alignments an even number of bytes apart differ only in which byte is
//! read as the auxiliary byte: they are told apart by the second rule and
//! the priors, which takes more frames (the window grows) and can fail on
//! streams with few ID changes, such as a single source that a formatter
//! never restates. A full-frame sync settles the alignment at once.

use super::{FRAME_SIZE, FSYNC, HSYNC, NULL_ID};
use alloc::vec::Vec;

/// Cost of a frame holding an ID change a formatter never writes.
pub(crate) const IMPOSSIBLE: i32 = 100;
/// Cost of an ID change to an ID not seen before on this explanation.
const NEW_ID: i32 = 8;
/// Cost of an ID change to another known ID.
const CHANGE: i32 = 1;
/// Cost of an ID change to the ID in force anywhere but an immediate
/// restatement in byte 0.
const REDUNDANT: i32 = 3;
/// Reward for an ID change in byte 0.
const AT_FRAME_START: i32 = -2;
/// Reward for a full-frame sync: nothing else explains its bytes, and a
/// frame starts after it.
const FULL_SYNC: i32 = -40;
/// Cost of non-zero data under the null ID.
const NULL_DATA: i32 = 2;
/// Cost of starting a stretch of skipped bytes.
const SKIP_OPEN: i32 = 30;
/// Cost of each skipped byte.
const SKIP_BYTE: i32 = 1;
/// ID states kept per byte position.
pub(crate) const BEAM: usize = 4;
/// Explanations within this cost of the best one must agree before a
/// decision is taken.
const MARGIN: i32 = 30;
/// Window of the first search, and the step it grows by.
pub(crate) const WINDOW: usize = 512;
/// Largest window: explanations that still disagree there are not read.
pub(crate) const MAX_WINDOW: usize = 8192;
/// Bytes at the end of a window that a skipped window leaves to the next
/// search.
const LAG: usize = 128;

/// The trace IDs an explanation has met: the ID in force and every ID an
/// ID change has named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct IdState {
    /// The ID in force, `None` before the first ID change.
    pub cur: Option<u8>,
    /// Bit `n` set: ID `n` has been named.
    pub known: u128,
}

impl IdState {
    fn knows(&self, id: u8) -> bool {
        self.known >> (id & 0x7F) & 1 == 1
    }

    /// Records the IDs named by `f`'s ID changes and the ID it leaves in
    /// force.
    pub(crate) fn after(mut self, f: &[u8; FRAME_SIZE]) -> Self {
        for i in (0..FRAME_SIZE - 1).step_by(2) {
            if f[i] & 1 == 1 {
                let id = f[i] >> 1;
                self.known |= 1 << id;
                self.cur = Some(id);
            }
        }
        self
    }
}

/// Whether `id` can never follow an ID change flag in a formatter frame.
fn impossible_id(id: u8) -> bool {
    id >= 0x70 && id != 0x7D
}

/// The cost of explaining `f` as a frame after `st`, and the state after,
/// byte by byte as the costs are defined (the search takes them from a
/// [`Summary`] of the frame, made once for all the states it is read
/// after).
#[cfg(test)]
pub(crate) fn frame_cost(f: &[u8; FRAME_SIZE], st: IdState) -> (i32, IdState) {
    let aux = f[FRAME_SIZE - 1];
    let mut cost = 0;
    let mut cur = st.cur;
    let mut known = st.known;
    let mut null_data = false;
    for i in (0..FRAME_SIZE - 1).step_by(2) {
        let flag = (aux >> (i / 2)) & 1 == 1;
        if f[i] & 1 == 1 {
            let id = f[i] >> 1;
            if impossible_id(id) || (i == 14 && flag) {
                cost += IMPOSSIBLE;
            } else if Some(id) == cur {
                if i != 0 || flag {
                    cost += REDUNDANT;
                }
            } else if known >> id & 1 == 0 {
                cost += NEW_ID;
            } else {
                cost += CHANGE;
            }
            if i == 0 {
                cost += AT_FRAME_START;
            }
            if i < 14 {
                let owner = if flag { cur } else { Some(id) };
                null_data |= owner == Some(NULL_ID) && f[i + 1] != 0;
            }
            known |= 1 << (id & 0x7F);
            cur = Some(id);
        } else if cur == Some(NULL_ID) {
            null_data |= (f[i] | (aux >> (i / 2)) & 1) != 0 || (i < 14 && f[i + 1] != 0);
        }
    }
    if null_data {
        cost += NULL_DATA;
    }
    (cost, IdState { cur, known })
}

/// What `frame_cost` (the costs byte by byte, kept for tests) finds in a
/// frame whatever the ID state before it, worked out once per position of
/// a search and then applied to each ID state kept there
/// ([`Summary::cost`] gives what `frame_cost` gives).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    /// The cost of the frame's ID changes after the first whose cost is
    /// the same after any state: impossible IDs, restatements, changes
    /// to IDs the frame named before, the reward at byte 0.
    fixed: i32,
    /// The first ID change, when its ID is possible: (ID, whether it
    /// restates the ID in force for free: at byte 0 with no data flag).
    first: Option<(u8, bool)>,
    /// IDs of later ID changes to IDs the frame did not name before them
    /// (each `NEW_ID` or `CHANGE` by the state's known IDs).
    fresh: [u8; 7],
    fresh_len: u8,
    /// Null data that the frame's own ID changes put under the null ID.
    null_own: bool,
    /// Non-zero bytes (or flags) under the ID in force before the first
    /// ID change: null data when that is the null ID.
    null_before: bool,
    /// The IDs named and the one in force after the frame, if it has an
    /// ID change.
    named: u128,
    last: Option<u8>,
}

impl Summary {
    /// The summary of frame `f`.
    pub(crate) fn of(f: &[u8; FRAME_SIZE]) -> Summary {
        let aux = f[FRAME_SIZE - 1];
        let mut s = Summary {
            fixed: 0,
            first: None,
            fresh: [0; 7],
            fresh_len: 0,
            null_own: false,
            null_before: false,
            named: 0,
            last: None,
        };
        for i in (0..FRAME_SIZE - 1).step_by(2) {
            let flag = (aux >> (i / 2)) & 1 == 1;
            if f[i] & 1 == 1 {
                let id = f[i] >> 1;
                let data = i < 14 && f[i + 1] != 0;
                if impossible_id(id) || (i == 14 && flag) {
                    s.fixed += IMPOSSIBLE;
                } else if let Some(prev) = s.last {
                    if id == prev {
                        s.fixed += REDUNDANT;
                    } else if s.named >> id & 1 == 1 {
                        s.fixed += CHANGE;
                    } else {
                        s.fresh[usize::from(s.fresh_len)] = id;
                        s.fresh_len += 1;
                    }
                } else {
                    s.first = Some((id, i == 0 && !flag));
                }
                if i == 0 {
                    s.fixed += AT_FRAME_START;
                }
                match s.last {
                    // The data byte of a flagged first change belongs to
                    // the ID in force before the frame.
                    None if flag => s.null_before |= data,
                    None => s.null_own |= id == NULL_ID && data,
                    Some(prev) => {
                        let owner = if flag { prev } else { id };
                        s.null_own |= owner == NULL_ID && data;
                    }
                }
                s.named |= 1 << (id & 0x7F);
                s.last = Some(id);
            } else {
                let nonzero = (f[i] | (aux >> (i / 2)) & 1) != 0 || (i < 14 && f[i + 1] != 0);
                match s.last {
                    None => s.null_before |= nonzero,
                    Some(cur) => s.null_own |= cur == NULL_ID && nonzero,
                }
            }
        }
        s
    }

    /// The cost of the frame after `st`, and the state after: as
    /// `frame_cost`.
    pub(crate) fn cost(&self, st: IdState) -> (i32, IdState) {
        let mut cost = self.fixed;
        if let Some((id, free)) = self.first {
            cost += if Some(id) == st.cur {
                if free {
                    0
                } else {
                    REDUNDANT
                }
            } else if st.knows(id) {
                CHANGE
            } else {
                NEW_ID
            };
        }
        for &id in &self.fresh[..usize::from(self.fresh_len)] {
            cost += if st.knows(id) { CHANGE } else { NEW_ID };
        }
        if self.null_own || (st.cur == Some(NULL_ID) && self.null_before) {
            cost += NULL_DATA;
        }
        let after = IdState {
            cur: self.last.or(st.cur),
            known: st.known | self.named,
        };
        (cost, after)
    }
}

/// Whether a frame read at the alignment in force calls the alignment into
/// question: an ID change a formatter never writes, or one to an ID not
/// seen before (a new source, or data read as an ID change).
pub(crate) fn suspicious(f: &[u8; FRAME_SIZE], st: &IdState) -> bool {
    let aux = f[FRAME_SIZE - 1];
    let mut cur = st.cur;
    for i in (0..FRAME_SIZE - 1).step_by(2) {
        if f[i] & 1 == 1 {
            let id = f[i] >> 1;
            if impossible_id(id) || (i == 14 && aux & 0x80 != 0) {
                return true;
            }
            if Some(id) != cur && !st.knows(id) {
                return true;
            }
            cur = Some(id);
        }
    }
    false
}

/// The frame whose first byte is `buf[p]`: its 16 bytes, the position of
/// each in `buf`, and the position after it. Half-word syncs at even
/// positions of the frame are left out. `None` if `buf` ends first.
pub(crate) fn frame_at(
    buf: &[u8],
    p: usize,
) -> Option<([u8; FRAME_SIZE], [u16; FRAME_SIZE], usize)> {
    let mut f = [0u8; FRAME_SIZE];
    let mut at = [0u16; FRAME_SIZE];
    let mut q = p;
    let mut n = 0;
    while n < FRAME_SIZE {
        if n % 2 == 0 && buf.get(q..q + 2) == Some(&HSYNC[..]) {
            q += 2;
            continue;
        }
        f[n] = *buf.get(q)?;
        at[n] = q as u16;
        n += 1;
        q += 1;
    }
    Some((f, at, q))
}

/// The frame whose first byte is `buf[p]` and the position after it, as
/// [`frame_at`] finds them (without the bytes' positions).
fn frame_end(buf: &[u8], p: usize) -> Option<([u8; FRAME_SIZE], usize)> {
    if let Some(b) = buf.get(p..p + FRAME_SIZE) {
        // No half-word sync can start at an even byte of the frame: its
        // 16 bytes are the frame.
        if b.iter().step_by(2).all(|&x| x != HSYNC[0]) {
            let mut f = [0u8; FRAME_SIZE];
            f.copy_from_slice(b);
            return Some((f, p + FRAME_SIZE));
        }
    }
    frame_at(buf, p).map(|(f, _, end)| (f, end))
}

/// One step of an explanation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The byte at `at` is skipped.
    Skip {
        /// Its position in the window.
        at: usize,
    },
    /// A full-frame sync at `at`.
    FSync {
        /// Its position in the window.
        at: usize,
    },
    /// A frame from `at` to `end` (half-word syncs inside it removed).
    Frame {
        /// Its first byte's position in the window.
        at: usize,
        /// The position after it.
        end: usize,
    },
}

impl Step {
    /// The position after the step.
    pub(crate) fn end(&self) -> usize {
        match *self {
            Step::Skip { at } => at + 1,
            Step::FSync { at } => at + FSYNC.len(),
            Step::Frame { end, .. } => end,
        }
    }
}

const KIND_NONE: u8 = 0;
const KIND_SKIP: u8 = 1;
const KIND_FSYNC: u8 = 2;
const KIND_FRAME: u8 = 3;

/// A partial explanation ending at a position.
#[derive(Debug, Clone, Copy)]
struct Entry {
    cost: i32,
    st: IdState,
    /// Index of the previous entry (`position * BEAM + slot`), or
    /// `u32::MAX` at the start.
    prev: u32,
    kind: u8,
    /// Only skipped bytes so far (the stream's leading bytes).
    lead: bool,
}

/// What the search decided.
#[derive(Debug, Default)]
pub(crate) struct Decision {
    /// The steps taken, in order (empty: wait for more bytes).
    pub steps: Vec<Step>,
    /// The ID state after the last step.
    pub st: IdState,
}

/// The dynamic-programming tables, kept between searches: a search of a
/// window that extends the last one's (same start, same bytes, more after
/// them) goes on from where the last one's explanations were complete
/// instead of starting over, so a window that grows to [`MAX_WINDOW`]
/// costs about as much as one search of it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Search {
    entries: Vec<Entry>,
    counts: Vec<u8>,
    marks: Vec<bool>,
    /// The last window: its start, ID state and leading flag, and bytes.
    last: Option<(u64, IdState, bool)>,
    seen: Vec<u8>,
    /// The first position of the last window whose steps did not all
    /// fit in it (a frame or full-frame sync running past its end): the
    /// positions before it are final, and so are their steps.
    resume: usize,
    /// Positions whose steps were looked at, counted in tests (the cost
    /// that must grow in proportion to the bytes searched).
    #[cfg(test)]
    pub(crate) visited: usize,
}

/// Where a search stands.
pub(crate) struct Window<'a> {
    /// The bytes.
    pub buf: &'a [u8],
    /// Stream offset of `buf[0]`.
    pub offset: u64,
    /// The ID state before `buf[0]`.
    pub st: IdState,
    /// No frame has been found in the stream yet.
    pub leading: bool,
    /// The input ends with `buf`: decide everything.
    pub last: bool,
}

impl Search {
    fn relax(&mut self, q: usize, e: Entry) {
        let base = q * BEAM;
        let n = usize::from(self.counts[q]);
        let slots = &mut self.entries[base..base + BEAM];
        if let Some(i) = slots[..n].iter().position(|x| x.st.cur == e.st.cur) {
            if e.cost < slots[i].cost {
                slots[i] = e;
            }
        } else if n < BEAM {
            slots[n] = e;
            self.counts[q] += 1;
        } else {
            let (worst, w) = slots
                .iter()
                .enumerate()
                .max_by_key(|(_, x)| x.cost)
                .map_or((0, i32::MIN), |(i, x)| (i, x.cost));
            if e.cost < w {
                slots[worst] = e;
            }
        }
    }

    /// Explains `w.buf` and decides what can be decided: see the module
    /// documentation. An empty decision asks for a larger window (only
    /// when `w.buf` is shorter than [`MAX_WINDOW`] and `w.last` is false).
    pub(crate) fn run(&mut self, w: &Window<'_>) -> Decision {
        let buf = w.buf;
        let n = buf.len();
        let blank = Entry {
            cost: 0,
            st: IdState::default(),
            prev: u32::MAX,
            kind: KIND_NONE,
            lead: false,
        };
        // The steps out of positions before `from` are taken, those that
        // end after `had` are not (the last window ended there).
        let key = (w.offset, w.st, w.leading);
        let extends = self.last == Some(key) && buf.starts_with(&self.seen);
        let (from, had) = if extends {
            (self.resume, self.seen.len())
        } else {
            self.counts.clear();
            self.seen.clear();
            (0, 0)
        };
        // Only the first `counts[q]` entries of position `q` are read:
        // those after them need no clearing.
        if self.entries.len() < (n + 1) * BEAM {
            self.entries.resize((n + 1) * BEAM, blank);
        }
        self.counts.resize(n + 1, 0);
        if !extends {
            self.entries[0] = Entry {
                cost: 0,
                st: w.st,
                prev: u32::MAX,
                kind: KIND_NONE,
                lead: w.leading,
            };
            self.counts[0] = 1;
        }
        self.last = Some(key);
        self.seen.extend_from_slice(&buf[had..]);
        self.resume = n;
        #[cfg(test)]
        {
            self.visited += n - from;
        }
        for p in from..n {
            let frame = frame_end(buf, p);
            let fsync_end = p + FSYNC.len();
            let fsync = buf.get(p..fsync_end) == Some(&FSYNC[..]);
            if self.resume == n && (frame.is_none() || fsync_end > n) {
                self.resume = p;
            }
            // Taken by the last search: the skip out of every position
            // before its end, a full-frame sync or frame that fit in it.
            let skip_new = p + 1 > had;
            let fsync_new = fsync && fsync_end > had;
            let frame = frame
                .filter(|&(_, end)| end > had)
                .map(|(f, end)| (end, Summary::of(&f)));
            for slot in 0..usize::from(self.counts[p]) {
                let idx = p * BEAM + slot;
                let e = self.entries[idx];
                let prev = idx as u32;
                let abs = w.offset + p as u64;
                let skip = if e.kind == KIND_FSYNC {
                    // A frame starts after a full-frame sync.
                    SKIP_BYTE + SKIP_OPEN
                } else if e.lead && abs < FRAME_SIZE as u64 - 1 {
                    0
                } else if e.kind == KIND_SKIP && !(e.lead && abs == FRAME_SIZE as u64 - 1) {
                    SKIP_BYTE
                } else {
                    SKIP_BYTE + SKIP_OPEN
                };
                if skip_new {
                    self.relax(
                        p + 1,
                        Entry {
                            cost: e.cost + skip,
                            st: e.st,
                            prev,
                            kind: KIND_SKIP,
                            lead: e.lead,
                        },
                    );
                }
                if fsync_new {
                    self.relax(
                        p + FSYNC.len(),
                        Entry {
                            cost: e.cost + FULL_SYNC,
                            st: e.st,
                            prev,
                            kind: KIND_FSYNC,
                            lead: false,
                        },
                    );
                }
                if let Some((end, summary)) = &frame {
                    let (end, (c, st)) = (*end, summary.cost(e.st));
                    self.relax(
                        end,
                        Entry {
                            cost: e.cost + c,
                            st,
                            prev,
                            kind: KIND_FRAME,
                            lead: false,
                        },
                    );
                }
            }
        }
        // The explanations of the whole window, or of all but a partial
        // frame after a frame or sync, best first. The partial frame costs
        // nothing while more input may complete it; at the end of the input
        // its bytes cost as skipped ones.
        let mut ends: Vec<(i32, usize)> = Vec::new();
        for q in n.saturating_sub(FRAME_SIZE - 1)..=n {
            for slot in 0..usize::from(self.counts[q]) {
                let idx = q * BEAM + slot;
                let e = &self.entries[idx];
                if q == n || e.kind != KIND_SKIP {
                    let tail = if w.last {
                        (n - q) as i32 * SKIP_BYTE
                    } else {
                        0
                    };
                    ends.push((e.cost + tail, idx));
                }
            }
        }
        ends.sort_unstable_by_key(|&(c, idx)| (c, core::cmp::Reverse(idx)));
        let Some(&(best_cost, best)) = ends.first() else {
            return Decision::default();
        };
        let path = self.path(best);
        if w.last {
            return self.decision(&path, path.len());
        }
        // The longest prefix of the best path that every close
        // explanation shares.
        self.marks.clear();
        self.marks.resize((n + 1) * BEAM, false);
        for &idx in &path {
            self.marks[idx] = true;
        }
        let mut agreed = path.len();
        for &(cost, idx) in ends.iter().skip(1) {
            if cost > best_cost + MARGIN {
                break;
            }
            let mut at = idx;
            loop {
                if self.marks[at] {
                    break;
                }
                let prev = self.entries[at].prev;
                if prev == u32::MAX {
                    break;
                }
                at = prev as usize;
            }
            let depth = path.iter().position(|&i| i == at).map_or(0, |d| d + 1);
            agreed = agreed.min(depth);
        }
        // `path[0]` is the start entry, not a step.
        if agreed > 1 {
            return self.decision(&path, agreed);
        }
        if n < MAX_WINDOW {
            return Decision::default();
        }
        // Explanations that disagree from the start stay within the
        // margin over the largest window: the bytes do not say where the
        // frames are, and reading them at a guessed alignment could hand on
        // wrong data. They are skipped (but the last few, which the next
        // search starts from).
        Decision {
            steps: (0..n - LAG).map(|at| Step::Skip { at }).collect(),
            st: w.st,
        }
    }

    /// The entries of the explanation ending at `idx`, from the start.
    fn path(&self, idx: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = idx;
        loop {
            path.push(at);
            let prev = self.entries[at].prev;
            if prev == u32::MAX {
                break;
            }
            at = prev as usize;
        }
        path.reverse();
        path
    }

    /// The steps of `path[1..keep]`.
    fn decision(&self, path: &[usize], keep: usize) -> Decision {
        let mut d = Decision::default();
        let keep = keep.min(path.len());
        for pair in path[..keep].windows(2) {
            let (from, to) = (pair[0] / BEAM, pair[1] / BEAM);
            let e = &self.entries[pair[1]];
            d.steps.push(match e.kind {
                KIND_SKIP => Step::Skip { at: from },
                KIND_FSYNC => Step::FSync { at: from },
                _ => Step::Frame { at: from, end: to },
            });
            d.st = e.st;
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_id_changes_cost_the_most() {
        let mut f = [0u8; 16];
        f[4] = (0x72 << 1) | 1;
        assert!(frame_cost(&f, IdState::default()).0 >= IMPOSSIBLE);
        let mut f = [0u8; 16];
        f[14] = (0x10 << 1) | 1;
        assert!(frame_cost(&f, IdState::default()).0 < IMPOSSIBLE);
        f[15] = 0x80;
        assert!(frame_cost(&f, IdState::default()).0 >= IMPOSSIBLE);
        assert!(suspicious(&f, &IdState::default()));
    }

    #[test]
    fn a_frame_in_force_is_cheap_and_a_new_id_is_not() {
        let mut f = [0u8; 16];
        f[0] = (0x10 << 1) | 1;
        let st = IdState::default().after(&f);
        assert!(!suspicious(&f, &st));
        let mut g = [0u8; 16];
        g[6] = (0x22 << 1) | 1;
        assert!(suspicious(&g, &st));
        assert!(frame_cost(&g, st).0 > frame_cost(&f, st).0);
    }

    /// A frame's summary costs what [`frame_cost`] does after any state,
    /// on frames biased to the IDs the costs tell apart (null, impossible,
    /// trigger, a few sources) with and without data flags.
    #[test]
    fn a_frames_summary_costs_what_the_frame_does() {
        let mut rng = test_support::Rng(0x5A11_0C05);
        let ids = [0x00u8, 0x01, 0x10, 0x11, 0x12, 0x70, 0x7C, 0x7D, 0x7E, 0x7F];
        for _ in 0..200_000 {
            let mut f = [0u8; FRAME_SIZE];
            for (i, b) in f.iter_mut().enumerate() {
                *b = match rng.below(4) {
                    0 => 0,
                    1 if i % 2 == 0 => ids[rng.below(ids.len())] << 1 | 1,
                    _ => rng.below(256) as u8,
                };
            }
            let cur = [None, Some(0x00), Some(0x10), Some(0x11), Some(0x7D)][rng.below(5)];
            let mut known = 0u128;
            for &id in &ids {
                if rng.below(2) == 0 {
                    known |= 1 << id;
                }
            }
            let st = IdState { cur, known };
            assert_eq!(
                Summary::of(&f).cost(st),
                frame_cost(&f, st),
                "{f:02x?} after {st:?}"
            );
        }
    }

    #[test]
    fn half_word_syncs_inside_a_frame_are_left_out() {
        let mut buf = [0x10u8; 20];
        buf[4] = 0xFF;
        buf[5] = 0x7F;
        let (f, at, end) = frame_at(&buf, 0).expect("a frame");
        assert_eq!(end, 18);
        assert_eq!(at[3], 3);
        assert_eq!(at[4], 6);
        assert!(f.iter().all(|&b| b == 0x10));
    }
}
