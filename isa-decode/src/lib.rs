//! Control-flow classification of single A32 and T32 instructions, for
//! program-flow trace decoding (CoreSight ETMv3 and PTM/PFT).
//!
//! A trace decompressor walks the program image instruction by instruction
//! between trace packets and must know, for each instruction, what the PFT
//! architecture (ARM IHI 0035B, B.3.2 `decode_instr()`) asks of it: its
//! size, whether it is a *waypoint*, whether a waypoint is a direct or an
//! indirect branch, whether it links, and the target and instruction set of
//! a direct branch. This crate answers exactly that, for one instruction at
//! a time, with no allocation, no `unsafe`, and no panics on any input.
//!
//! Decoding follows the ARMv7 Architecture Reference Manual (ARMv7-A/R with
//! the Security and Virtualization Extensions, DDI 0406C; T32 is a superset
//! of ARMv7-M). Only the encodings that matter to control flow are decoded
//! in detail; everything else is [`Kind::Other`]. UNDEFINED encodings are
//! [`Kind::Undefined`]; UNPREDICTABLE ones set [`Insn::unpredictable`].
//!
//! ```
//! use isa_decode::{decode_a32, decode_t32, t32_size, Isa, Kind, ReturnHint};
//!
//! // A32: BLX to Thumb code. The PC reads 8 ahead; H adds 2.
//! let blx = decode_a32(0xFB00_0000, 0x8000);
//! assert!(blx.is_waypoint() && blx.is_direct() && blx.link);
//! let t = blx.target.unwrap();
//! assert_eq!((t.addr, t.isa), (0x800A, Isa::T32));
//!
//! // T32: POP {r4, pc} is an indirect branch and a return.
//! let pop = decode_t32(0xBD10, 0, 0x1000);
//! assert_eq!(pop.size, 2);
//! assert_eq!(pop.kind, Kind::IndirectBranch);
//! assert_eq!(pop.ret, Some(ReturnHint::Pop));
//!
//! // Walking T32 code: the first halfword gives the size.
//! let code: [u16; 3] = [0xF000, 0xF800, 0x4770]; // BL .+4 ; BX LR
//! let mut pc = 0x2000;
//! let mut i = 0;
//! let mut waypoints = 0;
//! while i < code.len() {
//!     let hw1 = code[i];
//!     let hw2 = code.get(i + 1).copied().unwrap_or(0);
//!     let insn = decode_t32(hw1, hw2, pc);
//!     assert_eq!(insn.size, t32_size(hw1));
//!     waypoints += insn.is_waypoint() as u32;
//!     pc += insn.size as u32;
//!     i += insn.size as usize / 2;
//! }
//! assert_eq!(waypoints, 2);
//! ```
//!
//! Inside an IT block the condition of a T32 instruction comes from the
//! block, not from its encoding: follow it with [`ItState`].
//!
//! With the `disasm` feature, `disassemble` renders instruction text
//! through Capstone for listings (this needs a C compiler at build time;
//! nothing else in the crate does).
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]

mod a32;
mod coproc;
#[cfg(feature = "disasm")]
mod disasm;
mod insn;
mod it;
mod t32;

pub use a32::decode_a32;
#[cfg(feature = "disasm")]
pub use disasm::disassemble;
pub use insn::{Cond, Insn, Isa, ItBlock, Kind, ReturnHint, Target};
pub use it::ItState;
pub use t32::{decode_t32, t32_size};

/// Decode the instruction at the start of `bytes` (little-endian
/// instruction order, as in ARMv7 images including BE-8 ones), or `None`
/// when `bytes` is shorter than the instruction.
///
/// ```
/// use isa_decode::{decode, Isa, Kind};
///
/// let insn = decode(Isa::T32, &[0x70, 0x47], 0x100).unwrap(); // BX LR
/// assert_eq!(insn.kind, Kind::IndirectBranch);
/// assert!(decode(Isa::T32, &[0x00, 0xF0], 0x100).is_none()); // half a BL
/// ```
#[inline]
pub fn decode(isa: Isa, bytes: &[u8], addr: u32) -> Option<Insn> {
    match isa {
        Isa::A32 => {
            let b: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
            Some(decode_a32(u32::from_le_bytes(b), addr))
        }
        Isa::T32 => {
            let hw1 = u16::from_le_bytes(bytes.get(..2)?.try_into().ok()?);
            if t32_size(hw1) == 2 {
                return Some(decode_t32(hw1, 0, addr));
            }
            let hw2 = u16::from_le_bytes(bytes.get(2..4)?.try_into().ok()?);
            Some(decode_t32(hw1, hw2, addr))
        }
    }
}
