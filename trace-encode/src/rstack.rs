//! The return stack both the PTM and the decoder keep: the encoder leaves
//! out the address of an indirect branch whose target is on top of it.

use crate::flow::Isa;

/// Entries kept: the decoder's depth, so the two never disagree.
pub const RETURN_STACK_DEPTH: usize = 16;

#[derive(Debug, Clone, Default)]
pub(crate) struct ReturnStack {
    entries: [(u32, bool); RETURN_STACK_DEPTH],
    top: usize,
    len: usize,
}

impl ReturnStack {
    pub(crate) fn push(&mut self, addr: u32, isa: Isa) {
        self.entries[self.top] = (addr, isa == Isa::T32);
        self.top = (self.top + 1) % RETURN_STACK_DEPTH;
        self.len = (self.len + 1).min(RETURN_STACK_DEPTH);
    }

    /// Pops the top entry if it is `(addr, isa)`.
    pub(crate) fn pop_if(&mut self, addr: u32, isa: Isa) -> bool {
        if self.len == 0 {
            return false;
        }
        let t = (self.top + RETURN_STACK_DEPTH - 1) % RETURN_STACK_DEPTH;
        if self.entries[t] != (addr, isa == Isa::T32) {
            return false;
        }
        self.top = t;
        self.len -= 1;
        true
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}
