//! T32 (Thumb state) decoding: 16-bit (ARM ARM A6.2) and 32-bit (A6.3)
//! encodings.

use crate::a32::fill_next_target;
use crate::coproc;
use crate::insn::{Cond, Insn, Isa, ItBlock, Kind, ReturnHint};

const AL: Cond = Cond::Al;

/// Size in bytes (2 or 4) of the T32 instruction whose first halfword is
/// `hw1`: 4 when bits 15..11 are `0b11101`, `0b11110` or `0b11111`.
#[inline]
pub const fn t32_size(hw1: u16) -> u8 {
    if hw1 >= 0xE800 {
        4
    } else {
        2
    }
}

/// Decode one T32 instruction at address `addr`.
///
/// `hw1` is the first halfword; `hw2` the second, used only when
/// [`t32_size`]`(hw1)` is 4. `addr` is used only for the targets of direct
/// branches (the PC reads as `addr + 4`). Every input is accepted.
///
/// The instruction is decoded as ARMv7-A/R with the Security and
/// Virtualization Extensions, a superset of ARMv7-M: on an M-profile core
/// `BLX (immediate)`, `SUBS PC, LR`/`ERET`, `RFE`, `SRS`, `SMC`, `HVC`,
/// `ENTERX`/`LEAVEX` and `SETEND` are UNDEFINED instead.
///
/// ```
/// use isa_decode::{decode_t32, Isa, Kind};
///
/// // BL to addr + 4 + 0
/// let bl = decode_t32(0xF000, 0xF800, 0x1000);
/// assert_eq!(bl.size, 4);
/// assert!(bl.link);
/// assert_eq!(bl.target.map(|t| (t.addr, t.isa)), Some((0x1004, Isa::T32)));
///
/// // PUSH {r4, lr} is no branch
/// assert_eq!(decode_t32(0xB510, 0, 0x1000).kind, Kind::Other);
/// ```
#[inline]
pub fn decode_t32(hw1: u16, hw2: u16, addr: u32) -> Insn {
    // Fast path: 16-bit instruction groups that never affect control flow.
    if (NEEDS_LOOK >> (hw1 >> 10)) & 1 == 0 {
        return Insn::new(2, Kind::Other, AL);
    }
    if hw1 >= 0xE800 {
        decode32(hw1 as u32, hw2 as u32, addr)
    } else {
        decode16(hw1 as u32, addr)
    }
}

/// Bit `n` is set when a first halfword with bits 15..10 equal to `n` needs
/// decoding: special data and branch/exchange (010001), miscellaneous
/// (1011xx), conditional branch/UDF/SVC (1101xx), B (11100x) and the
/// 32-bit prefixes (11101x, 1111xx).
const NEEDS_LOOK: u64 =
    (1 << 0b01_0001) | (0xF << 0b10_1100) | (0xF << 0b11_0100) | (0xFF << 0b11_1000);

/// Sign-extend the low `bits` bits of `v`.
#[inline(always)]
const fn sext(v: u32, bits: u32) -> u32 {
    (((v << (32 - bits)) as i32) >> (32 - bits)) as u32
}

#[inline(always)]
const fn branch(size: u8, cond: Cond, addr: u32, off: u32, isa: Isa) -> Insn {
    Insn::new(size, Kind::Branch, cond).with_target(addr.wrapping_add(4).wrapping_add(off), isa)
}

// ---------------------------------------------------------------------------
// 16-bit encodings
// ---------------------------------------------------------------------------

fn decode16(h: u32, addr: u32) -> Insn {
    match h >> 10 {
        0b01_0001 => special16(h),
        0b10_1100..=0b10_1111 => misc16(h, addr),
        0b11_0100..=0b11_0111 => {
            // B<c> (T1), UDF (cond 1110), SVC (cond 1111).
            match (h >> 8) & 0xF {
                0b1110 => Insn::new(2, Kind::Udf, AL),
                0b1111 => Insn::new(2, Kind::Svc, AL),
                c => branch(
                    2,
                    Cond::from_bits(c),
                    addr,
                    sext((h & 0xFF) << 1, 9),
                    Isa::T32,
                ),
            }
        }
        0b11_1000 | 0b11_1001 => branch(2, AL, addr, sext((h & 0x7FF) << 1, 12), Isa::T32),
        _ => Insn::new(2, Kind::Other, AL),
    }
}

/// Special data instructions and branch and exchange (A6.2.3).
fn special16(h: u32) -> Insn {
    let m = (h >> 3) & 0xF;
    let dn = ((h >> 4) & 8) | (h & 7);
    match (h >> 6) & 0xF {
        0b0000..=0b0011 => {
            // ADD (register), T2.
            if dn == 15 {
                Insn::new(2, Kind::IndirectBranch, AL).unpred_if(m == 15)
            } else {
                Insn::new(2, Kind::Other, AL)
            }
        }
        0b0100..=0b0111 => {
            // CMP (register), T2; both registers low is UNPREDICTABLE.
            let unpred = (dn < 8 && m < 8) || dn == 15 || m == 15;
            Insn::new(2, Kind::Other, AL).unpred_if(unpred)
        }
        0b1000..=0b1011 => {
            // MOV (register), T1.
            if dn == 15 {
                let ret = if m == 14 {
                    Some(ReturnHint::MovPcLr)
                } else {
                    None
                };
                Insn::new(2, Kind::IndirectBranch, AL).with_ret(ret)
            } else {
                Insn::new(2, Kind::Other, AL)
            }
        }
        0b1100 | 0b1101 => {
            // BX
            let ret = if m == 14 {
                Some(ReturnHint::BxLr)
            } else {
                None
            };
            Insn::new(2, Kind::IndirectBranch, AL)
                .with_ret(ret)
                .unpred_if(h & 7 != 0)
        }
        _ => {
            // BLX (register)
            let mut i = Insn::new(2, Kind::IndirectBranch, AL).unpred_if(h & 7 != 0 || m == 15);
            i.link = true;
            i
        }
    }
}

/// Miscellaneous 16-bit instructions (A6.2.5).
fn misc16(h: u32, addr: u32) -> Insn {
    let other = Insn::new(2, Kind::Other, AL);
    let undef = Insn::new(2, Kind::Undefined, AL);
    match (h >> 8) & 0xF {
        0x0 | 0x2 => other, // ADD/SUB SP, SXTH, SXTB, UXTH, UXTB
        0x1 | 0x3 | 0x9 | 0xB => {
            // CBZ, CBNZ: forward only, offset i:imm5:'0'.
            let off = ((h >> 2) & 0x3E) | ((h >> 3) & 0x40);
            Insn::new(2, Kind::CompareBranch, AL).with_target(addr.wrapping_add(4 + off), Isa::T32)
        }
        0x4 | 0x5 => other.unpred_if(h & 0x1FF == 0), // PUSH
        0x6 => match (h >> 5) & 7 {
            0b010 => other.unpred_if(h & 0x17 != 0x10), // SETEND
            0b011 => other.unpred_if(h & 0x8 != 0),     // CPS
            _ => undef,
        },
        0xA => {
            if (h >> 6) & 3 == 0b10 {
                undef
            } else {
                other // REV, REV16, REVSH
            }
        }
        0xC => other.unpred_if(h & 0xFF == 0), // POP without PC
        0xD => Insn::new(2, Kind::IndirectBranch, AL).with_ret(Some(ReturnHint::Pop)),
        0xE => Insn::new(2, Kind::Bkpt, AL),
        0xF => {
            let firstcond = ((h >> 4) & 0xF) as u8;
            let mask = (h & 0xF) as u8;
            if mask != 0 {
                let unpred = firstcond == 0xF || (firstcond == 0xE && mask.count_ones() != 1);
                let mut i = Insn::new(2, Kind::It, AL).unpred_if(unpred);
                i.it = Some(ItBlock { firstcond, mask });
                i
            } else {
                match firstcond {
                    0b0010 => Insn::new(2, Kind::Wfe, AL),
                    0b0011 => Insn::new(2, Kind::Wfi, AL),
                    _ => other, // NOP, YIELD, SEV, unallocated hints
                }
            }
        }
        _ => undef, // 0x7, 0x8
    }
}

// ---------------------------------------------------------------------------
// 32-bit encodings
// ---------------------------------------------------------------------------

fn decode32(h1: u32, h2: u32, addr: u32) -> Insn {
    match (h1 >> 11) & 3 {
        0b01 => {
            if h1 & 0x400 != 0 {
                coproc32(h1, h2, addr)
            } else if h1 & 0x200 != 0 {
                dp_shifted(h1, h2)
            } else if h1 & 0x40 == 0 {
                ldm_stm(h1, h2)
            } else {
                dual_excl_tb(h1, h2)
            }
        }
        0b10 => {
            if h2 & 0x8000 != 0 {
                fill_next_target(branch_misc(h1, h2, addr), addr, Isa::T32)
            } else if h1 & 0x200 == 0 {
                dp_modified_imm(h1, h2)
            } else {
                dp_plain_imm(h1, h2)
            }
        }
        _ => {
            let op2 = (h1 >> 4) & 0x7F;
            if op2 & 0x40 != 0 {
                coproc32(h1, h2, addr)
            } else if op2 & 0x71 == 0x00 {
                store_single(h1, h2)
            } else if op2 & 0x67 == 0x05 {
                ldr32(h1, h2)
            } else if op2 & 0x67 == 0x07 {
                Insn::new(4, Kind::Undefined, AL)
            } else if op2 & 0x61 == 0x01 {
                load_byte_half(h1, h2)
            } else if op2 & 0x71 == 0x10 {
                // Advanced SIMD element or structure load/store.
                let n = h1 & 0xF;
                let m = h2 & 0xF;
                if n == 15 && m != 15 {
                    pc_dest()
                } else {
                    Insn::new(4, Kind::Other, AL).unpred_if(n == 15)
                }
            } else if op2 & 0x70 == 0x20 {
                // Data processing (register), A6.3.12.
                if h2 & 0xF000 != 0xF000 || !dp_reg_allocated((h1 >> 4) & 0xF, (h2 >> 4) & 0xF) {
                    Insn::new(4, Kind::Undefined, AL)
                } else {
                    dest((h2 >> 8) & 0xF == 15)
                }
            } else if op2 & 0x78 == 0x30 {
                // Multiply, multiply accumulate, absolute difference.
                if h2 & 0xC0 != 0 {
                    Insn::new(4, Kind::Undefined, AL)
                } else {
                    dest((h2 >> 8) & 0xF == 15)
                }
            } else {
                long_multiply(h1, h2)
            }
        }
    }
}

#[inline(always)]
const fn pc_dest() -> Insn {
    Insn::new(4, Kind::IndirectBranch, AL).unpred_if(true)
}

#[inline(always)]
const fn dest(pc: bool) -> Insn {
    if pc {
        pc_dest()
    } else {
        Insn::new(4, Kind::Other, AL)
    }
}

/// Allocated encodings of data processing (register), A6.3.12: `op1` =
/// hw1 bits 7..4, `op2` = hw2 bits 7..4.
const fn dp_reg_allocated(op1: u32, op2: u32) -> bool {
    if op1 < 8 {
        // Shifts by register (op2 == 0); extend and add (op2 = 1xxx).
        return op2 == 0 || (op2 & 8 != 0 && op1 < 6);
    }
    match op2 >> 2 {
        // Parallel addition and subtraction, signed and unsigned (A6.3.13).
        0b00 | 0b01 => op1 & 0b011 != 0b011 && op2 & 3 != 3,
        // Miscellaneous operations (A6.3.15).
        0b10 => op1 & 0b1100 == 0b1000 && (op1 & 2 == 0 || op2 & 3 == 0),
        _ => false,
    }
}

/// Coprocessor, floating-point and Advanced SIMD (A6.3.18).
fn coproc32(h1: u32, h2: u32, addr: u32) -> Insn {
    if (h1 >> 8) & 3 == 3 {
        return Insn::new(4, Kind::Other, AL); // Advanced SIMD data processing
    }
    let word = (h1 << 16) | h2;
    let two = h1 & 0x1000 != 0;
    fill_next_target(coproc::decode(word, AL, two), addr, Isa::T32)
}

/// Load/store multiple, RFE, SRS (A6.3.5).
fn ldm_stm(h1: u32, h2: u32) -> Insn {
    let op = (h1 >> 7) & 3;
    let w = h1 & 0x20 != 0;
    let load = h1 & 0x10 != 0;
    let n = h1 & 0xF;
    if op == 0b00 || op == 0b11 {
        if load {
            return Insn::new(4, Kind::ExceptionReturn, AL)
                .with_ret(Some(ReturnHint::Rfe))
                .unpred_if(n == 15 || h2 != 0xC000);
        }
        return Insn::new(4, Kind::Other, AL); // SRS
    }
    let list = h2;
    let pc = list & 0x8000 != 0;
    let lr = list & 0x4000 != 0;
    let mut unpred =
        n == 15 || list.count_ones() < 2 || list & 0x2000 != 0 || (w && list & (1 << n) != 0);
    if load {
        unpred |= pc && lr;
        if pc {
            let ret = if n == 13 && op == 0b01 {
                Some(ReturnHint::Pop)
            } else {
                None
            };
            return Insn::new(4, Kind::IndirectBranch, AL)
                .with_ret(ret)
                .unpred_if(unpred);
        }
    } else {
        unpred |= pc;
    }
    if w && n == 15 {
        return pc_dest();
    }
    Insn::new(4, Kind::Other, AL).unpred_if(unpred)
}

/// Load/store dual, load/store exclusive, table branch (A6.3.6).
fn dual_excl_tb(h1: u32, h2: u32) -> Insn {
    let op1 = (h1 >> 7) & 3;
    let op2 = (h1 >> 4) & 3;
    let n = h1 & 0xF;
    let t = (h2 >> 12) & 0xF;
    let t2 = (h2 >> 8) & 0xF;
    let undef = Insn::new(4, Kind::Undefined, AL);
    match (op1, op2) {
        (0b00, 0b00) => dest(t2 == 15), // STREX: status register in 11..8
        (0b00, 0b01) => dest(t == 15),  // LDREX
        (0b01, 0b00) => match (h2 >> 4) & 0xF {
            0b0100 | 0b0101 | 0b0111 => dest(h2 & 0xF == 15), // STREXB/H/D
            _ => undef,
        },
        (0b01, 0b01) => match (h2 >> 4) & 0xF {
            0b0000 | 0b0001 => {
                // TBB, TBH
                let m = h2 & 0xF;
                Insn::new(4, Kind::IndirectBranch, AL)
                    .unpred_if(n == 13 || m == 13 || m == 15 || h2 & 0xFF00 != 0xF000)
            }
            0b0100 | 0b0101 => dest(t == 15), // LDREXB/H
            0b0111 => dest(t == 15 || t2 == 15),
            _ => undef,
        },
        _ => {
            // STRD / LDRD (immediate, literal). W = bit 5.
            let w = h1 & 0x20 != 0;
            if w && n == 15 {
                return pc_dest();
            }
            if h1 & 0x10 != 0 {
                dest(t == 15 || t2 == 15)
            } else {
                Insn::new(4, Kind::Other, AL)
            }
        }
    }
}

/// Data processing (shifted register), A6.3.11.
fn dp_shifted(h1: u32, h2: u32) -> Insn {
    let op = (h1 >> 5) & 0xF;
    let s = h1 & 0x10 != 0;
    match op {
        0b0101 | 0b0111 | 0b1001 | 0b1100 | 0b1111 => Insn::new(4, Kind::Undefined, AL),
        0b0110 if s => Insn::new(4, Kind::Undefined, AL),
        _ => dp_dest(op, s, h2).unpred_if(h2 & 0x8000 != 0),
    }
}

/// Destination check of a T32 data-processing instruction: with Rd == PC
/// it is a compare (TST, TEQ, CMN, CMP) when S is set, else UNPREDICTABLE.
#[inline]
fn dp_dest(op: u32, s: bool, h2: u32) -> Insn {
    if (h2 >> 8) & 0xF != 15 {
        return Insn::new(4, Kind::Other, AL);
    }
    let compare = s && matches!(op, 0b0000 | 0b0100 | 0b1000 | 0b1101);
    if compare {
        Insn::new(4, Kind::Other, AL)
    } else {
        pc_dest()
    }
}

/// Data processing (modified immediate), A6.3.1.
fn dp_modified_imm(h1: u32, h2: u32) -> Insn {
    let op = (h1 >> 5) & 0xF;
    let s = h1 & 0x10 != 0;
    match op {
        0b0101..=0b0111 | 0b1001 | 0b1100 | 0b1111 => Insn::new(4, Kind::Undefined, AL),
        _ => dp_dest(op, s, h2),
    }
}

/// Data processing (plain binary immediate), A6.3.3.
fn dp_plain_imm(h1: u32, h2: u32) -> Insn {
    match (h1 >> 4) & 0x1F {
        0b00000 | 0b00100 | 0b01010 | 0b01100 | 0b10000 | 0b10010 | 0b10100 | 0b10110 | 0b11000
        | 0b11010 | 0b11100 => dest((h2 >> 8) & 0xF == 15),
        _ => Insn::new(4, Kind::Undefined, AL),
    }
}

/// Store single data item (A6.3.10).
fn store_single(h1: u32, h2: u32) -> Insn {
    let op1 = (h1 >> 5) & 7;
    let op2 = (h2 >> 6) & 0x3F;
    let ok = match op1 {
        0b100..=0b110 => true,
        0b000..=0b010 => op2 & 0x20 != 0 || op2 == 0,
        _ => false,
    };
    if !ok || h1 & 0xF == 15 {
        Insn::new(4, Kind::Undefined, AL)
    } else {
        // Storing the PC is UNPREDICTABLE in every 32-bit T32 store.
        Insn::new(4, Kind::Other, AL).unpred_if((h2 >> 12) & 0xF == 15)
    }
}

/// Load byte, load halfword, memory hints (A6.3.8, A6.3.9). With Rt == PC
/// most forms are the hints PLD and PLI; only the write-back and
/// unprivileged forms name the PC as a destination (UNPREDICTABLE).
fn load_byte_half(h1: u32, h2: u32) -> Insn {
    let n = h1 & 0xF;
    let t = (h2 >> 12) & 0xF;
    if t != 15 || n == 15 || h1 & 0x80 != 0 {
        return Insn::new(4, Kind::Other, AL);
    }
    let op2 = (h2 >> 6) & 0x3F;
    if op2 & 0b10_0100 == 0b10_0100 || op2 & 0b11_1100 == 0b11_1000 {
        pc_dest()
    } else {
        Insn::new(4, Kind::Other, AL)
    }
}

/// Long multiply, long multiply accumulate and divide (A6.3.17).
fn long_multiply(h1: u32, h2: u32) -> Insn {
    let lo = (h2 >> 12) & 0xF;
    let hi = (h2 >> 8) & 0xF;
    match ((h1 >> 4) & 7, (h2 >> 4) & 0xF) {
        // SDIV, UDIV: Rd in 11..8; 15..12 is (1)(1)(1)(1).
        (0b001 | 0b011, 0b1111) => dest(hi == 15).unpred_if(lo != 15),
        (0b000 | 0b010 | 0b100 | 0b110, 0b0000)
        | (0b100, 0b1000..=0b1101)
        | (0b101, 0b1100 | 0b1101)
        | (0b110, 0b0110) => dest(lo == 15 || hi == 15),
        _ => Insn::new(4, Kind::Undefined, AL),
    }
}

/// Load word (A6.3.7).
fn ldr32(h1: u32, h2: u32) -> Insn {
    let op1 = (h1 >> 7) & 3;
    let n = h1 & 0xF;
    let t = (h2 >> 12) & 0xF;
    let other = Insn::new(4, Kind::Other, AL);
    let load_pc = |ret: Option<ReturnHint>, unpred: bool| {
        Insn::new(4, Kind::IndirectBranch, AL)
            .with_ret(ret)
            .unpred_if(unpred)
    };
    if n == 15 && op1 & 2 == 0 {
        // LDR (literal)
        return if t == 15 { load_pc(None, false) } else { other };
    }
    match op1 {
        0b01 => {
            // LDR (immediate), T3
            if t == 15 {
                load_pc(None, false)
            } else {
                other
            }
        }
        0b00 => {
            let op2 = (h2 >> 6) & 0x3F;
            if op2 & 0b10_0100 == 0b10_0100 || op2 & 0b11_1100 == 0b11_0000 {
                // LDR (immediate), T4: hw2 = Rt 1 P U W imm8.
                let p = h2 & 0x400 != 0;
                let u = h2 & 0x200 != 0;
                let w = h2 & 0x100 != 0;
                let unpred = w && n == t;
                if t == 15 {
                    let pop = n == 13 && !p && u && w;
                    load_pc(if pop { Some(ReturnHint::Pop) } else { None }, unpred)
                } else {
                    other.unpred_if(unpred)
                }
            } else if op2 & 0b11_1100 == 0b11_1000 {
                // LDRT: PC is UNPREDICTABLE.
                if t == 15 {
                    pc_dest()
                } else {
                    other
                }
            } else if op2 == 0 {
                // LDR (register), T2
                let m = h2 & 0xF;
                let unpred = m == 13 || m == 15;
                if t == 15 {
                    load_pc(None, unpred)
                } else {
                    other.unpred_if(unpred)
                }
            } else {
                Insn::new(4, Kind::Undefined, AL)
            }
        }
        _ => Insn::new(4, Kind::Undefined, AL),
    }
}

/// Branches and miscellaneous control (A6.3.4).
fn branch_misc(h1: u32, h2: u32, addr: u32) -> Insn {
    let op1 = (h2 >> 12) & 7;
    let s = (h1 >> 10) & 1;
    let j1 = (h2 >> 13) & 1;
    let j2 = (h2 >> 11) & 1;
    match op1 & 0b101 {
        0b000 => {
            let op = (h1 >> 4) & 0x7F;
            if op & 0x38 != 0x38 {
                // B<c>.W (T3): S:J2:J1:imm6:imm11:'0'.
                let off =
                    (s << 20) | (j2 << 19) | (j1 << 18) | ((h1 & 0x3F) << 12) | ((h2 & 0x7FF) << 1);
                let cond = Cond::from_bits(h1 >> 6);
                return branch(4, cond, addr, sext(off, 21), Isa::T32);
            }
            misc_control(op, op1, h1, h2)
        }
        0b001 | 0b101 => {
            // B.W (T4), BL (T1): S:I1:I2:imm10:imm11:'0'.
            let i1 = !(j1 ^ s) & 1;
            let i2 = !(j2 ^ s) & 1;
            let off =
                (s << 24) | (i1 << 23) | (i2 << 22) | ((h1 & 0x3FF) << 12) | ((h2 & 0x7FF) << 1);
            let mut i = branch(4, AL, addr, sext(off, 25), Isa::T32);
            i.link = op1 & 0b100 != 0;
            i
        }
        _ => {
            // BLX (immediate), T2: to A32 at Align(PC, 4) + S:I1:I2:imm10H:imm10L:'00'.
            if h2 & 1 != 0 {
                return Insn::new(4, Kind::Undefined, AL);
            }
            let i1 = !(j1 ^ s) & 1;
            let i2 = !(j2 ^ s) & 1;
            let off =
                (s << 24) | (i1 << 23) | (i2 << 22) | ((h1 & 0x3FF) << 12) | ((h2 & 0x7FE) << 1);
            let base = addr.wrapping_add(4) & !3;
            let mut i = Insn::new(4, Kind::Branch, AL)
                .with_target(base.wrapping_add(sext(off, 25)), Isa::A32);
            i.link = true;
            i
        }
    }
}

/// The non-branch rows of A6.3.4 (`op1 == 0x0`, `op == x111xxx`).
fn misc_control(op: u32, op1: u32, h1: u32, h2: u32) -> Insn {
    let other = Insn::new(4, Kind::Other, AL);
    let undef = Insn::new(4, Kind::Undefined, AL);
    // hw2 bit 13 is (0) in every row below.
    let sbz13 = h2 & 0x2000 != 0;
    match op {
        0x38 | 0x39 => other.unpred_if(sbz13), // MSR (register), MSR (banked)
        0x3A => {
            let sb = sbz13 || h1 & 0xF != 0xF;
            if (h2 >> 8) & 7 != 0 {
                return other.unpred_if(sb); // CPS
            }
            let kind = match h2 & 0xFF {
                0b0000_0010 => Kind::Wfe,
                0b0000_0011 => Kind::Wfi,
                _ => Kind::Other, // NOP, YIELD, SEV, DBG, unallocated hints
            };
            Insn::new(4, kind, AL).unpred_if(sb || h2 & 0x800 != 0)
        }
        0x3B => {
            let sb = sbz13 || h1 & 0xF != 0xF || (h2 >> 8) & 0xF != 0xF;
            let kind = match (h2 >> 4) & 0xF {
                0b0000 => Kind::LeaveX,
                0b0001 => Kind::EnterX,
                0b0010 => Kind::Other, // CLREX
                0b0100 => Kind::Dsb,
                0b0101 => Kind::Dmb,
                0b0110 => Kind::Isb,
                _ => return undef,
            };
            let fixed_low = matches!(kind, Kind::LeaveX | Kind::EnterX | Kind::Other);
            Insn::new(4, kind, AL).unpred_if(sb || (fixed_low && h2 & 0xF != 0xF))
        }
        0x3C => {
            // BXJ
            let m = h1 & 0xF;
            Insn::new(4, Kind::IndirectBranch, AL)
                .unpred_if(sbz13 || h2 & 0xFFF != 0xF00 || m == 13 || m == 15)
        }
        0x3D => {
            // SUBS PC, LR, #imm8; ERET is SUBS PC, LR, #0.
            let ret = if h2 & 0xFF == 0 {
                ReturnHint::Eret
            } else {
                ReturnHint::SubsPc
            };
            Insn::new(4, Kind::ExceptionReturn, AL)
                .with_ret(Some(ret))
                .unpred_if(sbz13 || h1 & 0xF != 0xE || (h2 >> 8) & 0xF != 0xF)
        }
        0x3E | 0x3F => {
            // MRS, MRS (banked): destination in hw2 bits 11..8.
            if (h2 >> 8) & 0xF == 15 {
                pc_dest()
            } else {
                other.unpred_if(sbz13)
            }
        }
        0x7E if op1 == 0 => Insn::new(4, Kind::Hvc, AL),
        0x7F if op1 == 0 => Insn::new(4, Kind::Smc, AL).unpred_if(h2 & 0xFFF != 0),
        0x7F if op1 == 0b010 => Insn::new(4, Kind::Udf, AL),
        _ => undef,
    }
}
