//! The PTM return stack model (PFT B.3.2): branch-with-link waypoints push
//! their return address; an indirect branch traced by an E atom (no
//! branch address packet) pops it.

use crate::event::Isa;

/// Entries kept; older ones are overwritten (the hardware's stack is
/// small, and the trace only omits addresses the hardware predicted).
pub const DEPTH: usize = 16;

/// A fixed-size return stack.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReturnStack {
    entries: [(u32, Isa); DEPTH],
    top: usize,
    len: usize,
}

impl ReturnStack {
    /// Push a return address.
    #[inline]
    pub fn push(&mut self, addr: u32, isa: Isa) {
        self.entries[self.top] = (addr, isa);
        self.top = (self.top + 1) % DEPTH;
        self.len = (self.len + 1).min(DEPTH);
    }

    /// Pop the most recent return address, `None` when empty.
    #[inline]
    pub fn pop(&mut self) -> Option<(u32, Isa)> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        self.top = (self.top + DEPTH - 1) % DEPTH;
        Some(self.entries[self.top])
    }

    /// Empty the stack.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Number of entries.
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
}
