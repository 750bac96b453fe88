#![doc = include_str!("../README.md")]
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
