//! Coprocessor, floating-point and Advanced SIMD register transfers, shared
//! by A32 and T32.
//!
//! A32 (A5.6) and 32-bit T32 (A6.3.18) encode these instructions with the
//! same field layout once a T32 instruction is viewed as `hw1 << 16 | hw2`:
//! `op1` in bits 25..20, `Rn`/`CRn`/`Rt2` in 19..16, `Rt` in 15..12, the
//! coprocessor number in 11..8 and `op` in bit 4.

use crate::insn::{Cond, Insn, Kind};

/// Decode a coprocessor-space instruction (`op1` not `11xxxx`, which is SVC
/// in A32 and Advanced SIMD data processing in T32).
///
/// `two` is true for the `*2` forms: A32 `cond == 0b1111`, or T32 with bit
/// 28 of the combined word set. Those have no floating-point meaning in
/// ARMv7 (coprocessors 10 and 11 there are UNDEFINED) and no CP15
/// barriers.
pub(crate) fn decode(word: u32, cond: Cond, two: bool) -> Insn {
    let op1 = (word >> 20) & 0x3F;
    let cp = (word >> 8) & 0xF;
    let rt = (word >> 12) & 0xF;
    let rn = (word >> 16) & 0xF;
    let other = Insn::new(4, Kind::Other, cond);
    let pc_dest = Insn::new(4, Kind::IndirectBranch, cond).unpred_if(true);
    let fp = cp & 0b1110 == 0b1010;
    if op1 & 0b11_1110 == 0 || (two && fp) {
        return Insn::new(4, Kind::Undefined, cond);
    }
    if op1 & 0b10_0000 == 0 {
        if op1 & 0b11_1110 == 0b00_0100 {
            // MCRR / MRRC, or VMOV between two core registers and
            // extension registers: a transfer to core registers names
            // Rt and Rt2 as destinations.
            if op1 & 1 == 1 && (rt == 15 || rn == 15) {
                return pc_dest;
            }
            return other;
        }
        // LDC / STC, or extension register load/store: W is bit 21.
        if word & (1 << 21) != 0 && rn == 15 {
            return pc_dest;
        }
        return other;
    }
    if op1 & 0b11_0000 == 0b11_0000 || word & 0x10 == 0 {
        return other; // CDP, floating-point data processing
    }
    if op1 & 1 == 0 {
        // MCR, VMOV to extension registers, VMSR. CP15 barrier operations:
        // MCR p15, 0, Rt, c7, c5, 4 (ISB), c7, c10, 4 (DSB), c7, c10, 5 (DMB).
        if cp == 15 && !two && (word >> 21) & 7 == 0 && rn == 7 {
            let kind = match (word & 0xF, (word >> 5) & 7) {
                (5, 4) => Kind::Isb,
                (10, 4) => Kind::Dsb,
                (10, 5) => Kind::Dmb,
                _ => Kind::Other,
            };
            return Insn::new(4, kind, cond);
        }
        return other;
    }
    if fp {
        // 8, 16 and 32-bit transfers to a core register (A7.8).
        let c = word & 0x100 != 0;
        let a = (word >> 21) & 7;
        return match (c, a) {
            // VMRS: Rt == PC means APSR_nzcv, allowed only for FPSCR.
            (false, 0b111) => other.unpred_if(rt == 15 && rn != 1),
            (false, 0b000) | (true, _) => {
                if rt == 15 {
                    pc_dest
                } else {
                    other
                }
            }
            _ => Insn::new(4, Kind::Undefined, cond),
        };
    }
    // MRC: Rt == PC means APSR_nzcv, not the PC.
    other
}
