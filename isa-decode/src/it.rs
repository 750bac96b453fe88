//! Following a T32 IT block: the ITSTATE register.

use crate::insn::{Cond, Insn, ItBlock, Kind};

/// The T32 ITSTATE register (CPSR.IT, ARM ARM A2.5.2): which of the next
/// instructions are conditional, and on what.
///
/// Bits 7..4 hold the condition of the current instruction and bits 3..0
/// the remaining mask; all zero means "not in an IT block".
///
/// ```
/// use isa_decode::{decode_t32, Cond, ItState};
///
/// // ITTE EQ ; then two instructions on EQ and one on NE.
/// let it = decode_t32(0xBF06, 0, 0x1000);
/// let mut st = ItState::new();
/// assert_eq!(st.step(&it), Cond::Al); // the IT instruction itself
/// let nop = decode_t32(0xBF00, 0, 0x1002);
/// assert_eq!(st.step(&nop), Cond::Eq);
/// assert_eq!(st.step(&nop), Cond::Eq);
/// assert!(st.is_last());
/// assert_eq!(st.step(&nop), Cond::Ne);
/// assert!(!st.in_block());
/// assert_eq!(st.step(&nop), Cond::Al);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ItState(u8);

impl ItState {
    /// Outside any IT block (the state after reset, a branch, or an
    /// exception).
    #[inline]
    pub const fn new() -> ItState {
        ItState(0)
    }

    /// From a raw ITSTATE value (`IT[7:0]`, e.g. from a saved CPSR).
    #[inline]
    pub const fn from_raw(bits: u8) -> ItState {
        if bits & 0xF == 0 {
            ItState(0)
        } else {
            ItState(bits)
        }
    }

    /// The raw ITSTATE value.
    #[inline]
    pub const fn raw(self) -> u8 {
        self.0
    }

    /// Whether the current instruction is inside an IT block.
    #[inline]
    pub const fn in_block(self) -> bool {
        self.0 & 0xF != 0
    }

    /// Whether the current instruction is the last one of an IT block.
    #[inline]
    pub const fn is_last(self) -> bool {
        self.0 & 0xF == 0x8
    }

    /// Number of instructions of the block still to execute, the current
    /// one included (0 outside a block).
    #[inline]
    pub const fn remaining(self) -> u8 {
        if self.in_block() {
            4 - (self.0 & 0xF).trailing_zeros() as u8
        } else {
            0
        }
    }

    /// Condition of the current instruction, or `None` outside a block.
    #[inline]
    pub const fn cond(self) -> Option<Cond> {
        if self.in_block() {
            Some(Cond::from_bits((self.0 >> 4) as u32))
        } else {
            None
        }
    }

    /// Move past the current instruction (the ARM ARM's `ITAdvance()`).
    #[inline]
    pub fn advance(&mut self) {
        if self.0 & 0x7 == 0 {
            self.0 = 0;
        } else {
            self.0 = (self.0 & 0xE0) | ((self.0 << 1) & 0x1F);
        }
    }

    /// Account for executing `insn` (a T32 instruction at the current
    /// position) and return its effective condition: the IT block's
    /// condition inside a block, otherwise the instruction's own
    /// [`Insn::cond`].
    ///
    /// An `IT` instruction starts a new block; any other instruction
    /// advances the state. After a branch is taken, or on any
    /// discontinuity in the trace, start again from [`ItState::new`].
    #[inline]
    pub fn step(&mut self, insn: &Insn) -> Cond {
        let cond = match self.cond() {
            Some(c) => c,
            None => insn.cond,
        };
        match (insn.kind, insn.it) {
            (Kind::It, Some(block)) => *self = block.state(),
            _ => self.advance(),
        }
        cond
    }
}

impl ItBlock {
    /// The ITSTATE value right after the `IT` instruction.
    #[inline]
    #[must_use]
    pub const fn state(self) -> ItState {
        ItState::from_raw(((self.firstcond & 0xF) << 4) | (self.mask & 0xF))
    }
}
