//! A32 (ARM state) decoding.
//!
//! Conditional instructions (`cond != 0b1111`) are classified by a
//! 4096-entry table indexed by bits 27..20 and 7..4, the fields the ARM ARM
//! (DDI 0406C, chapter A5) uses to pick an instruction family; a short
//! handler per family then looks at the registers. The unconditional space
//! (`cond == 0b1111`, A5.7) is decoded by hand.

use crate::coproc;
use crate::insn::{Cond, Insn, Isa, Kind, ReturnHint};

/// Instruction families, as far as control flow is concerned.
mod class {
    /// Cannot write the PC.
    pub const OTHER: u8 = 0;
    /// Unallocated: UNDEFINED.
    pub const UNDEF: u8 = 1;
    /// Data processing, immediate or immediate-shifted register, with a
    /// destination (not TST/TEQ/CMP/CMN).
    pub const DP: u8 = 2;
    /// Data processing, register-shifted register, with a destination.
    pub const DP_RSR: u8 = 3;
    /// Destination in bits 15..12; PC there is UNPREDICTABLE.
    pub const D12: u8 = 4;
    /// Destination in bits 19..16; PC there is UNPREDICTABLE.
    pub const D16: u8 = 5;
    /// Destinations in bits 19..16 and 15..12; PC is UNPREDICTABLE.
    pub const D16_12: u8 = 6;
    /// Miscellaneous (A5.2.12): BX, BLX, BXJ, ERET, BKPT, HVC, SMC, …
    pub const MISC: u8 = 7;
    /// MSR (immediate) and hints.
    pub const HINT: u8 = 8;
    /// LDR / LDRT (word).
    pub const LDR: u8 = 9;
    /// Other single loads: LDRB, LDRH, LDRSB, LDRSH and their T forms.
    pub const LDRX: u8 = 10;
    /// Single and dual stores (only base write-back matters).
    pub const STORE: u8 = 11;
    /// LDRD.
    pub const LDRD: u8 = 12;
    /// LDREXD.
    pub const LDREXD: u8 = 13;
    /// LDM (all forms).
    pub const LDM: u8 = 14;
    /// STM (all forms).
    pub const STM: u8 = 15;
    /// B.
    pub const B: u8 = 16;
    /// BL.
    pub const BL: u8 = 17;
    /// SVC.
    pub const SVC: u8 = 18;
    /// Coprocessor, VFP and Advanced SIMD transfers.
    pub const COPROC: u8 = 19;
    /// Permanently UNDEFINED (UDF).
    pub const UDF: u8 = 20;
}

/// Class of a data-processing opcode (`op` = bits 24..20).
const fn dp(op: u32, rsr: bool) -> u8 {
    if op & 0b11000 == 0b10000 {
        // TST, TEQ, CMP, CMN: no destination.
        class::OTHER
    } else if rsr {
        class::DP_RSR
    } else {
        class::DP
    }
}

/// Multiply and multiply accumulate (A5.2.5), `op` = bits 23..20.
const fn multiply(op: u32) -> u8 {
    match op & 0xF {
        0b0000..=0b0011 | 0b0110 => class::D16,
        0b0100 | 0b1000..=0b1111 => class::D16_12,
        _ => class::UNDEF,
    }
}

/// Synchronization primitives (A5.2.10), `op` = bits 23..20.
const fn sync(op: u32) -> u8 {
    match op & 0xF {
        0b0000 | 0b0100 | 0b1000 | 0b1001 | 0b1010 | 0b1100..=0b1111 => class::D12,
        0b1011 => class::LDREXD,
        _ => class::UNDEF,
    }
}

/// Extra load/store (A5.2.8, A5.2.9), `op` = bits 24..20, `op2` = bits 7..4.
const fn extra_ls(op: u32, op2: u32) -> u8 {
    let load = op & 1 == 1;
    match (op2, load) {
        (0b1011, false) | (0b1111, false) => class::STORE,
        (0b1101, false) => class::LDRD,
        _ => class::LDRX,
    }
}

/// Load/store word and unsigned byte (A5.3), `op` = bits 27..20.
const fn ls(op: u32) -> u8 {
    let load = op & 1 == 1;
    let byte = op & 0b100 != 0;
    match (load, byte) {
        (false, _) => class::STORE,
        (true, false) => class::LDR,
        (true, true) => class::LDRX,
    }
}

/// Packing, unpacking, saturation and reversal (A5.4.3): `op1` = bits
/// 22..20, `op2` = bits 7..5.
const fn pack(op1: u32, op2: u32) -> bool {
    matches!(
        (op1, op2),
        (0b000, 0b000 | 0b010..=0b110)
            | (0b010 | 0b011, 0b000 | 0b010 | 0b100 | 0b110)
            | (0b010, 0b001 | 0b011)
            | (0b011, 0b001 | 0b011 | 0b101)
            | (0b100, 0b011)
            | (0b110 | 0b111, 0b000 | 0b010 | 0b100 | 0b110)
            | (0b110, 0b001 | 0b011)
            | (0b111, 0b001 | 0b011 | 0b101)
    )
}

/// Media instructions (A5.4): `op` = bits 24..20, `op2` = bits 7..5.
const fn media(op: u32, op2: u32) -> u8 {
    if op & 0b11000 == 0b00000 {
        // Parallel addition and subtraction, signed and unsigned.
        if op & 0b11 == 0 || op2 == 0b101 || op2 == 0b110 {
            class::UNDEF
        } else {
            class::D12
        }
    } else if op & 0b11000 == 0b01000 {
        if pack(op & 0b111, op2) {
            class::D12
        } else {
            class::UNDEF
        }
    } else if op & 0b11000 == 0b10000 {
        // Signed multiplies, SDIV, UDIV.
        match (op & 0b111, op2) {
            (0b000, 0b000..=0b011) => class::D16,
            (0b001 | 0b011, 0b000) => class::D16,
            (0b100, 0b000..=0b011) => class::D16_12,
            (0b101, 0b000 | 0b001 | 0b110 | 0b111) => class::D16,
            _ => class::UNDEF,
        }
    } else {
        match (op, op2) {
            (0b11000, 0b000) => class::D16,
            (0b11010 | 0b11011, 0b010 | 0b110) => class::D12,
            (0b11100 | 0b11101, 0b000 | 0b100) => class::D12,
            (0b11110 | 0b11111, 0b010 | 0b110) => class::D12,
            (0b11111, 0b111) => class::UDF,
            _ => class::UNDEF,
        }
    }
}

/// Family of a conditional A32 instruction from bits 27..20 (`op1`) and
/// 7..4 (`op2`).
const fn classify(op1: u32, op2: u32) -> u8 {
    let op = op1 & 0x1F;
    match op1 >> 5 {
        0b000 => {
            if op2 & 0b1001 == 0b1001 {
                // op2 = 1xx1: multiplies, synchronization, extra load/store.
                if op2 == 0b1001 {
                    if op & 0x10 == 0 {
                        multiply(op)
                    } else {
                        sync(op)
                    }
                } else {
                    extra_ls(op, op2)
                }
            } else if op & 0b11001 == 0b10000 {
                if op2 & 0b1000 == 0 {
                    class::MISC
                } else {
                    // Halfword multiply (A5.2.7), op = bits 22..21.
                    match (op >> 1) & 3 {
                        0b10 => class::D16_12,
                        _ => class::D16,
                    }
                }
            } else {
                dp(op, op2 & 1 == 1)
            }
        }
        0b001 => match op {
            0b10000 | 0b10100 => class::D12,
            0b10010 | 0b10110 => class::HINT,
            _ => dp(op, false),
        },
        0b010 => ls(op1),
        0b011 => {
            if op2 & 1 == 0 {
                ls(op1)
            } else {
                media(op, op2 >> 1)
            }
        }
        0b100 => {
            if op1 & 1 == 1 {
                class::LDM
            } else {
                class::STM
            }
        }
        0b101 => {
            if op1 & 0x10 == 0 {
                class::B
            } else {
                class::BL
            }
        }
        _ => {
            if op1 & 0xF0 == 0xF0 {
                class::SVC
            } else if op1 & 0xFE == 0xC0 {
                class::UNDEF
            } else {
                class::COPROC
            }
        }
    }
}

/// Table-entry flags: which register fields, when they hold the PC, make
/// the instruction need a closer look. Anything else is [`Kind::Other`]
/// at once.
mod look {
    /// Bits 15..12 (Rd, Rt) are the PC.
    pub const RD: u16 = 0x100;
    /// Bits 19..16 (Rn, or a second destination) are the PC.
    pub const RN: u16 = 0x200;
    /// Bit 15 is set (the PC is in an LDM register list).
    pub const LIST: u16 = 0x400;
    /// Always.
    pub const ALWAYS: u16 = 0x800;
}

/// When the handler of `class` has something to say.
const fn look_at(class: u8) -> u16 {
    match class {
        class::OTHER => 0,
        class::DP | class::DP_RSR | class::D12 => look::RD,
        class::D16 | class::STORE | class::STM => look::RN,
        class::D16_12 | class::LDR | class::LDRX => look::RD | look::RN,
        class::LDM => look::LIST | look::RN,
        _ => look::ALWAYS,
    }
}

const fn build_table() -> [u16; 4096] {
    let mut t = [0u16; 4096];
    let mut i = 0;
    while i < 4096 {
        let c = classify((i >> 4) as u32, (i & 0xF) as u32);
        t[i] = c as u16 | look_at(c);
        i += 1;
    }
    t
}

/// Family of every conditional instruction, indexed by
/// `bits[27:20] << 4 | bits[7:4]`: the class in bits 7..0, the [`look`]
/// flags above.
static CLASS: [u16; 4096] = build_table();

#[inline(always)]
const fn rd(word: u32) -> u32 {
    (word >> 12) & 0xF
}

#[inline(always)]
const fn rn(word: u32) -> u32 {
    (word >> 16) & 0xF
}

/// An indirect branch that is UNPREDICTABLE (a PC destination the
/// architecture does not allow).
#[inline(always)]
const fn pc_dest(cond: Cond) -> Insn {
    Insn::new(4, Kind::IndirectBranch, cond).unpred_if(true)
}

/// Write-back (P == 0 or W == 1) for single loads and stores.
#[inline(always)]
const fn wback(word: u32) -> bool {
    word & (1 << 24) == 0 || word & (1 << 21) != 0
}

/// Signed offset of B, BL and BLX (immediate): `imm24:'00'`.
#[inline(always)]
const fn imm24(word: u32) -> u32 {
    (((word << 8) as i32) >> 6) as u32
}

/// Decode one A32 instruction `word` at address `addr`.
///
/// `addr` is used only for the targets of direct branches (the PC reads as
/// `addr + 8`). Every `u32` is accepted.
///
/// ```
/// use isa_decode::{decode_a32, Isa, Kind, ReturnHint};
///
/// let bx_lr = decode_a32(0xE12F_FF1E, 0x8000);
/// assert_eq!(bx_lr.kind, Kind::IndirectBranch);
/// assert_eq!(bx_lr.ret, Some(ReturnHint::BxLr));
///
/// let bl = decode_a32(0xEB00_0000, 0x8000);
/// assert!(bl.link);
/// assert_eq!(bl.target.map(|t| (t.addr, t.isa)), Some((0x8008, Isa::A32)));
/// ```
pub fn decode_a32(word: u32, addr: u32) -> Insn {
    let cbits = word >> 28;
    if cbits == 0xF {
        return fill_next_target(unconditional(word, addr), addr, Isa::A32);
    }
    let cond = Cond::from_bits(cbits);
    let idx = ((word >> 16) & 0xFF0) | ((word >> 4) & 0xF);
    let entry = CLASS[idx as usize];
    // Fast path: no PC where this family could write it.
    let pc = look::ALWAYS
        | (u16::from((word >> 12) & 0xF == 0xF) << 8)
        | (u16::from((word >> 16) & 0xF == 0xF) << 9)
        | (((word >> 5) & 0x400) as u16);
    if entry & pc == 0 {
        return Insn::new(4, Kind::Other, cond);
    }
    match entry as u8 {
        class::OTHER => Insn::new(4, Kind::Other, cond),
        class::DP => data_processing(word, cond),
        class::DP_RSR | class::D12 => dest(rd(word) == 15, cond),
        class::D16 => dest(rn(word) == 15, cond),
        class::D16_12 => dest(rn(word) == 15 || rd(word) == 15, cond),
        class::MISC => misc(word, cond),
        class::HINT => hint(word, cond),
        class::LDR => ldr(word, cond),
        class::LDRX => {
            if rd(word) == 15 || (wback(word) && rn(word) == 15) {
                pc_dest(cond)
            } else {
                Insn::new(4, Kind::Other, cond)
            }
        }
        class::STORE => dest(wback(word) && rn(word) == 15, cond),
        class::LDRD => {
            let t = rd(word);
            let wb = wback(word) && rn(word) == 15;
            if t >= 14 || wb {
                pc_dest(cond)
            } else {
                // Odd Rt, or P == 0 with W == 1, is UNPREDICTABLE.
                let unpriv = word & (1 << 24) == 0 && word & (1 << 21) != 0;
                Insn::new(4, Kind::Other, cond).unpred_if(t & 1 == 1 || unpriv)
            }
        }
        class::LDREXD => {
            let t = rd(word);
            if t >= 14 {
                pc_dest(cond)
            } else {
                Insn::new(4, Kind::Other, cond).unpred_if(t & 1 == 1)
            }
        }
        class::LDM => ldm(word, cond),
        class::STM => {
            let n = rn(word);
            let list = word & 0xFFFF;
            let w = word & (1 << 21) != 0;
            let user = word & (1 << 22) != 0;
            let unpred = n == 15 || list == 0 || (user && w);
            if w && n == 15 {
                pc_dest(cond)
            } else {
                Insn::new(4, Kind::Other, cond).unpred_if(unpred)
            }
        }
        class::B => Insn::new(4, Kind::Branch, cond)
            .with_target(addr.wrapping_add(8).wrapping_add(imm24(word)), Isa::A32),
        class::BL => {
            let mut i = Insn::new(4, Kind::Branch, cond)
                .with_target(addr.wrapping_add(8).wrapping_add(imm24(word)), Isa::A32);
            i.link = true;
            i
        }
        class::SVC => Insn::new(4, Kind::Svc, cond),
        class::COPROC => fill_next_target(coproc::decode(word, cond, false), addr, Isa::A32),
        class::UDF => Insn::new(4, Kind::Udf, cond).unpred_if(cbits != 0xE),
        _ => Insn::new(4, Kind::Undefined, cond),
    }
}

/// Other (when `pc` is false) or an UNPREDICTABLE PC destination.
#[inline(always)]
const fn dest(pc: bool, cond: Cond) -> Insn {
    if pc {
        pc_dest(cond)
    } else {
        Insn::new(4, Kind::Other, cond)
    }
}

/// Data processing (register or immediate) with a destination register.
#[inline]
fn data_processing(word: u32, cond: Cond) -> Insn {
    if rd(word) != 15 {
        return Insn::new(4, Kind::Other, cond);
    }
    // MOV and MVN (opcodes 1101, 1111) have Rn as (0)(0)(0)(0).
    let sbz = (word >> 21) & 0b1101 == 0b1101 && rn(word) != 0;
    if word & (1 << 20) != 0 {
        // SUBS PC, LR, #imm and related instructions (B9.3.20): an
        // exception return, copying SPSR to CPSR.
        Insn::new(4, Kind::ExceptionReturn, cond)
            .with_ret(Some(ReturnHint::SubsPc))
            .unpred_if(sbz)
    } else {
        let ret = if word & 0x0FFF_FFFF == 0x01A0_F00E {
            Some(ReturnHint::MovPcLr)
        } else {
            None
        };
        Insn::new(4, Kind::IndirectBranch, cond)
            .with_ret(ret)
            .unpred_if(sbz)
    }
}

/// Miscellaneous instructions (A5.2.12).
fn misc(word: u32, cond: Cond) -> Insn {
    let op = (word >> 21) & 3;
    let op2 = (word >> 4) & 7;
    let m = word & 0xF;
    let sbo = (word >> 8) & 0xFFF == 0xFFF;
    match (op2, op) {
        (0b000, _) => {
            // MRS / MSR, banked or not: MRS writes Rd.
            dest(op & 1 == 0 && rd(word) == 15, cond)
        }
        (0b001, 0b01) => {
            let ret = if m == 14 {
                Some(ReturnHint::BxLr)
            } else {
                None
            };
            Insn::new(4, Kind::IndirectBranch, cond)
                .with_ret(ret)
                .unpred_if(!sbo)
        }
        (0b001, 0b11) => dest(rd(word) == 15, cond), // CLZ
        (0b010, 0b01) => Insn::new(4, Kind::IndirectBranch, cond).unpred_if(!sbo || m == 15), // BXJ
        (0b011, 0b01) => {
            let mut i = Insn::new(4, Kind::IndirectBranch, cond).unpred_if(!sbo || m == 15);
            i.link = true;
            i
        }
        (0b101, _) => dest(rd(word) == 15, cond), // saturating add/subtract
        (0b110, 0b11) => {
            if m == 0b1110 {
                Insn::new(4, Kind::ExceptionReturn, cond)
                    .with_ret(Some(ReturnHint::Eret))
                    .unpred_if((word >> 8) & 0xFFF != 0)
            } else {
                Insn::new(4, Kind::Undefined, cond)
            }
        }
        (0b111, 0b01) => Insn::new(4, Kind::Bkpt, cond).unpred_if(cond as u8 != Cond::Al as u8),
        (0b111, 0b10) => Insn::new(4, Kind::Hvc, cond).unpred_if(cond as u8 != Cond::Al as u8),
        (0b111, 0b11) => Insn::new(4, Kind::Smc, cond).unpred_if((word >> 8) & 0xFFF != 0),
        _ => Insn::new(4, Kind::Undefined, cond),
    }
}

/// MSR (immediate) and hints (A5.2.11).
fn hint(word: u32, cond: Cond) -> Insn {
    if word & (1 << 22) != 0 || rn(word) != 0 {
        return Insn::new(4, Kind::Other, cond); // MSR (immediate)
    }
    let kind = match word & 0xFF {
        0b0000_0010 => Kind::Wfe,
        0b0000_0011 => Kind::Wfi,
        _ => Kind::Other, // NOP, YIELD, SEV, DBG, unallocated hints
    };
    Insn::new(4, kind, cond).unpred_if((word >> 8) & 0xFF != 0xF0)
}

/// LDR and LDRT (word).
fn ldr(word: u32, cond: Cond) -> Insn {
    let t = rd(word);
    let n = rn(word);
    let p = word & (1 << 24) != 0;
    let w = word & (1 << 21) != 0;
    let wb = !p || w;
    let reg = word & (1 << 25) != 0;
    if wb && n == 15 {
        return pc_dest(cond);
    }
    let unpriv = !p && w;
    let unpred = (wb && n == t) || (reg && (word & 0xF) == 15) || (unpriv && t == 15);
    if t != 15 {
        return Insn::new(4, Kind::Other, cond).unpred_if(unpred);
    }
    // LDR PC, [SP], #imm: a pop of the return address.
    let pop = n == 13 && !p && !w && !reg && word & (1 << 23) != 0;
    let ret = if pop { Some(ReturnHint::Pop) } else { None };
    Insn::new(4, Kind::IndirectBranch, cond)
        .with_ret(ret)
        .unpred_if(unpred)
}

/// LDM in all its forms (A8.8.57-60, B9.3.5-6).
fn ldm(word: u32, cond: Cond) -> Insn {
    let n = rn(word);
    let list = word & 0xFFFF;
    let p = word & (1 << 24) != 0;
    let u = word & (1 << 23) != 0;
    let s = word & (1 << 22) != 0;
    let w = word & (1 << 21) != 0;
    let pc = list & 0x8000 != 0;
    let unpred = n == 15 || list == 0 || (w && list & (1 << n) != 0);
    if s {
        if pc {
            // LDM (exception return).
            return Insn::new(4, Kind::ExceptionReturn, cond)
                .with_ret(Some(ReturnHint::LdmException))
                .unpred_if(unpred);
        }
        // LDM (User registers): write-back is UNPREDICTABLE.
        if w && n == 15 {
            return pc_dest(cond);
        }
        return Insn::new(4, Kind::Other, cond).unpred_if(unpred || w);
    }
    if !pc {
        if w && n == 15 {
            return pc_dest(cond);
        }
        return Insn::new(4, Kind::Other, cond).unpred_if(unpred);
    }
    let pop = (n == 13 && !p && u) || (n == 11 && p && !u && list & (1 << 13) != 0);
    let ret = if pop { Some(ReturnHint::Pop) } else { None };
    Insn::new(4, Kind::IndirectBranch, cond)
        .with_ret(ret)
        .unpred_if(unpred)
}

/// The unconditional instruction space, `cond == 0b1111` (A5.7).
fn unconditional(word: u32, addr: u32) -> Insn {
    const AL: Cond = Cond::Al;
    let op1 = (word >> 20) & 0xFF;
    if op1 & 0x80 == 0 {
        return uncond_misc(word);
    }
    match op1 >> 5 {
        0b100 => match op1 & 0b101 {
            0b100 => Insn::new(4, Kind::Other, AL), // SRS
            0b001 => {
                // RFE
                let n = rn(word);
                Insn::new(4, Kind::ExceptionReturn, AL)
                    .with_ret(Some(ReturnHint::Rfe))
                    .unpred_if(n == 15 || word & 0xFFFF != 0x0A00)
            }
            _ => Insn::new(4, Kind::Undefined, AL),
        },
        0b101 => {
            // BLX (immediate): to T32, offset imm24:H:'0'.
            let off = imm24(word) | ((word >> 23) & 2);
            let mut i = Insn::new(4, Kind::Branch, AL)
                .with_target(addr.wrapping_add(8).wrapping_add(off), Isa::T32);
            i.link = true;
            i
        }
        0b110 => {
            if op1 & 0xFE == 0xC0 {
                Insn::new(4, Kind::Undefined, AL)
            } else {
                coproc::decode(word, AL, true)
            }
        }
        _ => {
            if op1 & 0xF0 == 0xE0 {
                coproc::decode(word, AL, true)
            } else {
                Insn::new(4, Kind::Undefined, AL)
            }
        }
    }
}

/// Memory hints, Advanced SIMD and miscellaneous instructions (A5.7.1).
fn uncond_misc(word: u32) -> Insn {
    const AL: Cond = Cond::Al;
    let op1 = (word >> 20) & 0x7F;
    let op2 = (word >> 4) & 0xF;
    let other = Insn::new(4, Kind::Other, AL);
    let unpred = other.unpred_if(true);
    let undef = Insn::new(4, Kind::Undefined, AL);
    if op1 == 0b001_0000 {
        // CPS (op2 = xx0x, Rn = xxx0) or SETEND (op2 = 0000, Rn = xxx1).
        let r = rn(word);
        return if (r & 1 == 0 && op2 & 0b0010 == 0) || (r & 1 == 1 && op2 == 0) {
            other
        } else {
            undef
        };
    }
    if op1 & 0b110_0000 == 0b010_0000 {
        return other; // Advanced SIMD data processing
    }
    if op1 & 0b111_0001 == 0b100_0000 {
        // Advanced SIMD element or structure load/store: Rn == PC is
        // UNPREDICTABLE, and with write-back (Rm != PC) it names the PC as
        // a destination.
        let n = rn(word);
        let m = word & 0xF;
        return if n == 15 && m != 15 {
            pc_dest(AL)
        } else {
            other.unpred_if(n == 15)
        };
    }
    if op1 & 0b100_0000 == 0 {
        return undef;
    }
    if op1 & 0b010_0000 != 0 {
        // Register forms of the memory hints.
        if op2 & 1 != 0 {
            return undef;
        }
        return match op1 & 0b001_0111 {
            0b000_0001 | 0b000_0101 | 0b001_0001 | 0b001_0101 => other,
            _ if op1 & 0b11 == 0b11 => unpred,
            _ => undef,
        };
    }
    match op1 & 0b111_0111 {
        0b100_0001 | 0b100_0101 | 0b101_0101 => return other,
        0b101_0001 => return other.unpred_if(rn(word) == 15), // PLDW
        _ => {}
    }
    match op1 {
        0b101_0011 | 0b101_1011 | 0b101_1111 => unpred,
        0b101_0111 => {
            let sb = (word >> 8) & 0xFFF != 0xFF0;
            let kind = match op2 {
                0b0001 => return other.unpred_if(sb || word & 0xF != 0xF), // CLREX
                0b0100 => Kind::Dsb,
                0b0101 => Kind::Dmb,
                0b0110 => Kind::Isb,
                _ => return unpred,
            };
            Insn::new(4, kind, AL).unpred_if(sb)
        }
        _ => undef,
    }
}

/// Give barriers (and ENTERX/LEAVEX) their "next instruction" target.
#[inline]
pub(crate) const fn fill_next_target(mut i: Insn, addr: u32, isa: Isa) -> Insn {
    if matches!(
        i.kind,
        Kind::Isb | Kind::Dsb | Kind::Dmb | Kind::EnterX | Kind::LeaveX
    ) {
        i.target = Some(crate::insn::Target {
            addr: addr.wrapping_add(i.size as u32),
            isa,
        });
    }
    i
}
