//! What a trace source is: its protocol and the register values that
//! configure its packet parser and decoder. The protocols themselves are
//! in [`crate::protocol`].

pub use crate::protocol::{Protocol, Regs, RegsError};
