//! The PTM return stack model (PFT B.3.2): branch-with-link waypoints push
//! their return address; an indirect branch traced by an E atom (no
//! branch address packet) pops it.

use crate::event::Isa;

/// Entries kept; older ones are overwritten (the hardware's stack is
/// small, and the trace only omits addresses the hardware predicted).
pub const DEPTH: usize = 16;

/// A fixed-size return stack.
///
/// A stack can also continue an unknown *base* (the entries a decoder that
/// starts at an I-sync in the middle of a trace cannot know): it then
/// records whether a pop reached below its own entries
/// ([`ReturnStack::underflowed`]), and [`ReturnStack::rebase`] puts the real
/// base beneath its entries once that base is known.
#[derive(Debug, Clone, Copy)]
pub struct ReturnStack {
    entries: [(u32, Isa); DEPTH],
    /// Per entry, a value its pusher gave for it ([`NO_HINT`]: none),
    /// which is not part of the stack's contents: entries compare by
    /// address and instruction set alone.
    hints: [u64; DEPTH],
    top: usize,
    len: usize,
    /// Entries of an unknown base may lie beneath these.
    based: bool,
    /// A pop found no own entry while `based`.
    underflow: bool,
    /// Most own entries held at once while `based`: pushes beyond the
    /// depth dropped that many of the base's oldest entries for good.
    peak: usize,
}

/// No hint.
pub const NO_HINT: u64 = u64::MAX;

impl Default for ReturnStack {
    fn default() -> ReturnStack {
        ReturnStack {
            entries: [(0, Isa::A32); DEPTH],
            hints: [NO_HINT; DEPTH],
            top: 0,
            len: 0,
            based: false,
            underflow: false,
            peak: 0,
        }
    }
}

impl ReturnStack {
    /// Push a return address.
    #[inline]
    pub fn push(&mut self, addr: u32, isa: Isa) {
        self.push_hinted(addr, isa, NO_HINT);
    }

    /// Push a return address with a hint that
    /// [`pop_hinted`](Self::pop_hinted) gives back.
    #[inline]
    pub fn push_hinted(&mut self, addr: u32, isa: Isa, hint: u64) {
        self.hints[self.top] = hint;
        self.entries[self.top] = (addr, isa);
        self.top = (self.top + 1) % DEPTH;
        self.len = (self.len + 1).min(DEPTH);
        self.peak = self.peak.max(self.len);
        if self.len == DEPTH {
            // A full stack has overwritten whatever lay beneath.
            self.based = false;
        }
    }

    /// Pop the most recent return address, `None` when empty.
    #[inline]
    pub fn pop(&mut self) -> Option<(u32, Isa)> {
        self.pop_hinted().map(|(a, i, _)| (a, i))
    }

    /// [`pop`](Self::pop), with the entry's hint.
    #[inline]
    pub fn pop_hinted(&mut self) -> Option<(u32, Isa, u64)> {
        if self.len == 0 {
            self.underflow |= self.based;
            return None;
        }
        self.len -= 1;
        self.top = (self.top + DEPTH - 1) % DEPTH;
        let (addr, isa) = self.entries[self.top];
        Some((addr, isa, self.hints[self.top]))
    }

    /// Drop every entry's hint.
    pub fn forget_hints(&mut self) {
        self.hints = [NO_HINT; DEPTH];
    }

    /// Empty the stack.
    pub fn clear(&mut self) {
        self.len = 0;
        self.based = false;
    }

    /// Empty the stack and treat what follows as continuing an unknown
    /// base stack.
    pub fn continue_unknown(&mut self) {
        self.len = 0;
        self.based = true;
        self.underflow = false;
        self.peak = 0;
    }

    /// Treat the entries held now as this stack's own from here on, for a
    /// later [`rebase`](Self::rebase) onto what lies beneath them: pops
    /// and depth are counted from this point.
    pub fn mark(&mut self) {
        self.underflow = false;
        self.peak = self.len;
    }

    /// This stack without its newest entries, when those are `top`'s
    /// entries: all of this stack's when `top` holds a whole stack (it
    /// continues no unknown base), its newest ones otherwise. `None` when
    /// they differ.
    #[must_use]
    pub fn beneath(&self, top: &ReturnStack) -> Option<ReturnStack> {
        let n = top.len;
        if n > self.len || (!top.based && n != self.len) {
            return None;
        }
        let mut rest = *self;
        for i in 0..n {
            let want = top.entries[(top.top + DEPTH - 1 - i) % DEPTH];
            if rest.pop() != Some(want) {
                return None;
            }
        }
        Some(rest)
    }

    /// Whether a pop reached below this stack's own entries into the
    /// unknown base (the pop then returned `None`, which is right only if
    /// the base is empty).
    #[must_use]
    pub fn underflowed(&self) -> bool {
        self.underflow
    }

    /// Put `base` beneath this stack's own entries, when this stack
    /// continues an unknown base: the base's newest entries that the
    /// deepest point of this stack left room for, then this stack's own.
    pub fn rebase(&mut self, base: &ReturnStack) {
        if !self.based {
            self.underflow = false;
            return;
        }
        let room = DEPTH - self.peak.min(DEPTH);
        let mut joined = ReturnStack::default();
        for e in base.iter().skip(base.len.saturating_sub(room)) {
            joined.push(e.0, e.1);
        }
        for e in self.iter() {
            joined.push(e.0, e.1);
        }
        *self = joined;
        self.underflow = false;
    }

    /// The entries, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = (u32, Isa)> + '_ {
        (0..self.len)
            .rev()
            .map(move |i| self.entries[(self.top + DEPTH - 1 - i) % DEPTH])
    }

    /// Number of entries.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifo_with_overwrite() {
        let mut s = ReturnStack::default();
        assert_eq!(s.pop(), None);
        for i in 0..20u32 {
            s.push(i * 4, Isa::A32);
        }
        assert_eq!(s.len(), DEPTH);
        assert_eq!(s.pop(), Some((76, Isa::A32)));
        for _ in 1..DEPTH {
            assert!(s.pop().is_some());
        }
        assert_eq!(s.pop(), None);
    }

    /// Pushes and pops on a stack continuing an unknown base, then
    /// rebased, end as the same operations on the real stack.
    #[test]
    fn rebase_equals_running_on_the_base() {
        let ops: [&[i32]; 5] = [
            &[1, 2, -1, 3],
            &[1, -1, 2, 3, 4],
            &[1; 20],
            &[1, 2, 3, -1, -1, 4],
            &[5; 16],
        ];
        for (n, ops) in ops.iter().enumerate() {
            for base_len in [0u32, 3, 16] {
                let mut base = ReturnStack::default();
                for i in 0..base_len {
                    base.push(0x1000 + i * 4, Isa::T32);
                }
                let mut real = base;
                let mut part = ReturnStack::default();
                part.continue_unknown();
                for (k, &op) in ops.iter().enumerate() {
                    let addr = 0x8000 + (n * 100 + k) as u32 * 4;
                    if op > 0 {
                        real.push(addr, Isa::A32);
                        part.push(addr, Isa::A32);
                    } else {
                        assert_eq!(real.pop(), part.pop());
                    }
                }
                assert!(!part.underflowed());
                part.rebase(&base);
                assert_eq!(
                    part.iter().collect::<Vec<_>>(),
                    real.iter().collect::<Vec<_>>()
                );
            }
        }
        let mut part = ReturnStack::default();
        part.continue_unknown();
        assert_eq!(part.pop(), None);
        assert!(part.underflowed());
    }

    /// A xorshift generator of pseudo-random numbers from `x` (not 0).
    fn xorshift(mut x: u32) -> impl FnMut() -> u32 {
        move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        }
    }

    /// The same on pseudo-random sequences: whenever no pop reached below
    /// the part's own entries, the rebased part equals the real stack.
    #[test]
    fn rebase_equals_running_on_the_base_for_random_sequences() {
        let mut next = xorshift(0x1234_5678_u32);
        for _ in 0..3000 {
            let mut base = ReturnStack::default();
            for i in 0..next() % 20 {
                base.push(0x1000 + i * 4, Isa::T32);
            }
            let mut real = base;
            let mut part = ReturnStack::default();
            part.continue_unknown();
            for k in 0..next() % 40 {
                if next() % 3 == 0 {
                    let got = part.pop();
                    let want = real.pop();
                    if !part.underflowed() {
                        assert_eq!(got, want);
                    }
                } else {
                    real.push(0x8000 + k * 4, Isa::A32);
                    part.push(0x8000 + k * 4, Isa::A32);
                }
            }
            if !part.underflowed() || base.is_empty() {
                part.rebase(&base);
                assert_eq!(
                    part.iter().collect::<Vec<_>>(),
                    real.iter().collect::<Vec<_>>()
                );
            }
        }
    }

    /// A part started on an unknown base (a warm-up), then marked and run
    /// on: at the mark its entries are the newest of the real stack's
    /// (all of them once a clear or a full stack made the part whole), and
    /// when no later pop reached below them into the rest, the part
    /// rebased onto that rest equals the real stack.
    #[test]
    fn marked_parts_rebase_onto_the_entries_beneath_them() {
        let mut next = xorshift(0x9e37_79b9_u32);
        let mut checked = 0;
        for _ in 0..3000 {
            let mut real = ReturnStack::default();
            for i in 0..next() % 20 {
                real.push(0x1000 + i * 4, Isa::T32);
            }
            let mut part = ReturnStack::default();
            part.continue_unknown();
            let step = |real: &mut ReturnStack, part: &mut ReturnStack, k: u32, r: u32| match r % 16
            {
                0 => {
                    real.clear();
                    part.clear();
                }
                1..=5 => {
                    part.pop();
                    real.pop();
                }
                _ => {
                    real.push(0x8000 + k * 4, Isa::A32);
                    part.push(0x8000 + k * 4, Isa::A32);
                }
            };
            for k in 0..next() % 30 {
                step(&mut real, &mut part, k, next());
            }
            let at_mark = part;
            part.mark();
            let base = real
                .beneath(&at_mark)
                .expect("the warm-up's entries are the newest");
            for k in 100..100 + next() % 30 {
                let (want, got) = (real, part);
                step(&mut real, &mut part, k, next());
                // A pop of an own entry gives the real one.
                if part.len() < got.len() && !part.underflowed() {
                    assert_eq!(got.iter().last(), want.iter().last());
                }
            }
            if !part.underflowed() || base.is_empty() {
                part.rebase(&base);
                assert_eq!(
                    part.iter().collect::<Vec<_>>(),
                    real.iter().collect::<Vec<_>>()
                );
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn hints_come_back_with_their_entries_and_are_no_part_of_them() {
        let mut s = ReturnStack::default();
        s.push_hinted(0x10, Isa::A32, 7);
        s.push(0x20, Isa::T32);
        s.push_hinted(0x30, Isa::A32, 9);
        let mut plain = ReturnStack::default();
        plain.continue_unknown();
        plain.push(0x30, Isa::A32);
        assert!(s.beneath(&plain).is_some(), "compared without hints");
        assert_eq!(s.pop_hinted(), Some((0x30, Isa::A32, 9)));
        assert_eq!(s.pop_hinted(), Some((0x20, Isa::T32, NO_HINT)));
        s.forget_hints();
        assert_eq!(s.pop_hinted(), Some((0x10, Isa::A32, NO_HINT)));
    }

    #[test]
    fn beneath_needs_the_same_newest_entries() {
        let mut real = ReturnStack::default();
        real.push(0x10, Isa::A32);
        real.push(0x20, Isa::A32);
        let mut top = ReturnStack::default();
        top.continue_unknown();
        top.push(0x20, Isa::A32);
        let rest = real.beneath(&top).expect("newest entry matches");
        assert_eq!(rest.iter().collect::<Vec<_>>(), [(0x10, Isa::A32)]);
        top.push(0x30, Isa::A32);
        assert!(
            real.beneath(&top).is_none(),
            "0x30 is not on the real stack"
        );
        // A whole stack (no unknown base) must be all of the real one.
        let mut whole = ReturnStack::default();
        whole.push(0x20, Isa::A32);
        assert!(real.beneath(&whole).is_none());
        whole.clear();
        whole.push(0x10, Isa::A32);
        whole.push(0x20, Isa::A32);
        assert!(real.beneath(&whole).is_some_and(|r| r.is_empty()));
    }
}
