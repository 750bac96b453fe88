//! Hand-assembled encodings with the semantics the ARM Architecture
//! Reference Manual (DDI 0406C, DDI 0403E) gives them.

use isa_decode::{
    decode, decode_a32, decode_t32, t32_size, Cond, Insn, Isa, ItBlock, ItState, Kind, ReturnHint,
    Target,
};

const A: u32 = 0x8000;
const T: u32 = 0x1000;

fn a32(w: u32) -> Insn {
    decode_a32(w, A)
}

fn t16(h: u16) -> Insn {
    let i = decode_t32(h, 0xFFFF, T);
    assert_eq!(i.size, 2, "{h:04x}");
    i
}

fn t32(h1: u16, h2: u16) -> Insn {
    t32_at(h1, h2, T)
}

fn t32_at(h1: u16, h2: u16, addr: u32) -> Insn {
    let i = decode_t32(h1, h2, addr);
    assert_eq!(i.size, 4, "{h1:04x} {h2:04x}");
    i
}

fn target(i: &Insn) -> Option<(u32, Isa)> {
    i.target.map(|t| (t.addr, t.isa))
}

/// An indirect branch (not an exception return) with the given hint.
fn assert_indirect(i: &Insn, ret: Option<ReturnHint>) {
    assert_eq!(i.kind, Kind::IndirectBranch, "{i:?}");
    assert!(i.is_waypoint() && i.is_branch() && i.is_indirect() && !i.is_direct());
    assert_eq!(i.target, None);
    assert_eq!(i.ret, ret);
    assert!(!i.unpredictable, "{i:?}");
}

fn assert_exc_return(i: &Insn, ret: ReturnHint) {
    assert_eq!(i.kind, Kind::ExceptionReturn, "{i:?}");
    assert!(i.is_waypoint() && i.is_indirect() && i.is_return());
    assert_eq!(i.ret, Some(ret));
    assert!(ret.is_exception_return());
    assert!(!i.unpredictable, "{i:?}");
}

fn assert_sequential(i: &Insn) {
    assert_eq!(i.kind, Kind::Other, "{i:?}");
    assert!(!i.is_waypoint() && !i.is_branch());
    assert_eq!(i.target, None);
}

// ---------------------------------------------------------------- A32

#[test]
fn a32_bx_blx_bxj() {
    let bx_lr = a32(0xE12F_FF1E);
    assert_indirect(&bx_lr, Some(ReturnHint::BxLr));
    assert!(!bx_lr.link);
    assert_eq!(bx_lr.cond, Cond::Al);
    assert_eq!(bx_lr.size, 4);
    assert!(!bx_lr.ret.expect("present").is_exception_return());

    let bxeq = a32(0x012F_FF1E);
    assert_eq!(bxeq.cond, Cond::Eq);
    assert!(bxeq.is_conditional());

    let blx = a32(0xE12F_FF33); // BLX r3
    assert_indirect(&blx, None);
    assert!(blx.link);

    assert_indirect(&a32(0xE12F_FF23), None); // BXJ r3
    assert_indirect(&a32(0xE12F_FF1F), None); // BX PC is allowed

    // BLX PC and broken should-be-one bits are UNPREDICTABLE.
    assert!(a32(0xE12F_FF3F).unpredictable);
    let sbo = a32(0xE120_001E);
    assert_eq!(sbo.kind, Kind::IndirectBranch);
    assert!(sbo.unpredictable);
}

#[test]
fn a32_loads_of_pc() {
    assert_indirect(&a32(0xE8BD_8010), Some(ReturnHint::Pop)); // POP {r4, pc}
    assert_indirect(&a32(0xE49D_F004), Some(ReturnHint::Pop)); // POP {pc} (LDR PC, [SP], #4)
    assert_indirect(&a32(0xE89D_8800), Some(ReturnHint::Pop)); // LDM sp, {fp, pc}
    assert_indirect(&a32(0xE91B_A800), Some(ReturnHint::Pop)); // LDMDB fp, {fp, sp, pc}
    assert_indirect(&a32(0xE59F_F004), None); // LDR PC, [PC, #4]
    assert_indirect(&a32(0xE790_F101), None); // LDR PC, [r0, r1, LSL #2]
    assert_indirect(&a32(0xE8B0_8000), None); // LDM r0!, {pc}
    assert_sequential(&a32(0xE92D_4010)); // PUSH {r4, lr}
    assert_sequential(&a32(0xE8BD_4010)); // POP {r4, lr}
    assert_sequential(&a32(0xE590_0000)); // LDR r0, [r0]
    assert_sequential(&a32(0xE58F_F000)); // STR PC, [PC]

    // UNPREDICTABLE PC destinations: LDRB PC, LDRD with Rt2 = PC,
    // LDR with write-back to the PC.
    for w in [0xE5D0_F000, 0xE1C0_E0D0, 0xE4BF_0004] {
        let i = a32(w);
        assert_eq!(i.kind, Kind::IndirectBranch, "{w:08x}");
        assert!(i.unpredictable, "{w:08x}");
    }
}

#[test]
fn a32_data_processing_pc() {
    assert_indirect(&a32(0xE1A0_F00E), Some(ReturnHint::MovPcLr)); // MOV PC, LR
    assert_indirect(&a32(0xE08F_F100), None); // ADD PC, PC, r0, LSL #2
    assert_indirect(&a32(0xE28F_F004), None); // ADD PC, PC, #4
    assert_indirect(&a32(0xE1A0_F000), None); // MOV PC, r0
    assert_sequential(&a32(0xE1A0_0000)); // NOP (MOV r0, r0)
    assert_sequential(&a32(0xE35F_0000)); // CMP PC, #0
    assert_sequential(&a32(0xE150_000F)); // CMP r0, PC

    // Exception returns: SUBS PC, LR, #4 and MOVS PC, LR.
    assert_exc_return(&a32(0xE25E_F004), ReturnHint::SubsPc);
    assert_exc_return(&a32(0xE1B0_F00E), ReturnHint::SubsPc);

    // Register-shifted register with Rd = PC is UNPREDICTABLE.
    let rsr = a32(0xE1A0_F11E); // LSL PC, LR, r1
    assert_eq!(rsr.kind, Kind::IndirectBranch);
    assert!(rsr.unpredictable);
    // MOV with a non-zero Rn field is UNPREDICTABLE.
    assert!(a32(0xE1AD_F00E).unpredictable);
    // UXTB PC and CLZ PC are UNPREDICTABLE.
    assert!(a32(0xE6EF_F070).unpredictable);
    assert!(a32(0xE16F_FF1E).unpredictable);
}

#[test]
fn a32_exception_returns() {
    assert_exc_return(&a32(0xE160_006E), ReturnHint::Eret);
    assert_exc_return(&a32(0xF8BD_0A00), ReturnHint::Rfe); // RFEIA SP!
    assert_exc_return(&a32(0xE8FD_8000), ReturnHint::LdmException); // LDM SP!, {PC}^
    assert_eq!(a32(0xF8BD_0A00).cond, Cond::Al);
    // ERET with other low bits is not ERET.
    assert_eq!(a32(0xE160_006F).kind, Kind::Undefined);
    // LDM (User registers) without the PC is no branch.
    assert_sequential(&a32(0xE8DD_4000));
}

#[test]
fn a32_direct_branches() {
    let b = a32(0xEA00_0000);
    assert_eq!(b.kind, Kind::Branch);
    assert!(b.is_waypoint() && b.is_direct() && !b.is_indirect() && !b.link);
    assert_eq!(target(&b), Some((A + 8, Isa::A32)));
    assert_eq!(target(&a32(0xEAFF_FFFE)), Some((A, Isa::A32))); // B .

    let bl = a32(0xEB00_0010);
    assert!(bl.link);
    assert_eq!(target(&bl), Some((A + 8 + 0x40, Isa::A32)));

    let beq = a32(0x0A00_0005);
    assert_eq!(beq.cond, Cond::Eq);
    assert_eq!(target(&beq), Some((A + 8 + 20, Isa::A32)));
    assert_eq!(a32(0xCA00_0000).cond, Cond::Gt);

    // Wrap-around at the ends of the address space.
    assert_eq!(
        decode_a32(0xEAFF_FFFD, 0).target,
        Some(Target {
            addr: 0xFFFF_FFFC,
            isa: Isa::A32
        })
    );
}

#[test]
fn a32_blx_immediate() {
    // BLX <imm>: to Thumb, imm24:H:'0' from PC = addr + 8.
    let blx = a32(0xFA00_0000);
    assert_eq!(blx.kind, Kind::Branch);
    assert!(blx.link);
    assert_eq!(blx.cond, Cond::Al);
    assert_eq!(target(&blx), Some((A + 8, Isa::T32)));
    assert_eq!(target(&a32(0xFB00_0000)), Some((A + 10, Isa::T32))); // H = 1
    assert_eq!(target(&a32(0xFAFF_FFFF)), Some((A + 4, Isa::T32)));
    assert_eq!(target(&a32(0xFBFF_FFFE)), Some((A + 2, Isa::T32)));
}

#[test]
fn a32_exceptions_and_hints() {
    assert_eq!(a32(0xEF00_0000).kind, Kind::Svc);
    assert_eq!(a32(0x1F00_0001).cond, Cond::Ne);
    assert_eq!(a32(0xE120_0070).kind, Kind::Bkpt);
    assert!(a32(0x0120_0070).unpredictable); // BKPT must be unconditional
    assert_eq!(a32(0xE140_0070).kind, Kind::Hvc);
    assert_eq!(a32(0xE160_0070).kind, Kind::Smc);
    let udf = a32(0xE7F0_00F0);
    assert_eq!(udf.kind, Kind::Udf);
    assert!(udf.is_exception() && !udf.is_waypoint());
    for w in [0xEF00_0000, 0xE120_0070, 0xE140_0070, 0xE160_0070] {
        let i = a32(w);
        assert!(
            i.is_exception() && !i.is_waypoint() && !i.is_branch(),
            "{w:08x}"
        );
    }
    assert_eq!(a32(0xE320_F003).kind, Kind::Wfi);
    assert_eq!(a32(0xE320_F002).kind, Kind::Wfe);
    assert_sequential(&a32(0xE320_F000)); // NOP
    assert_sequential(&a32(0xE320_F004)); // SEV
    assert_sequential(&a32(0xE328_F00F)); // MSR CPSR_f, #0xF
                                          // Unallocated media encoding.
    assert_eq!(a32(0xE600_0010).kind, Kind::Undefined);
    assert_eq!(a32(0xF7F0_00F0).kind, Kind::Undefined);
}

#[test]
fn a32_barriers() {
    let isb = a32(0xF57F_F06F);
    assert_eq!(isb.kind, Kind::Isb);
    assert!(isb.is_waypoint() && isb.is_barrier() && !isb.is_branch());
    assert_eq!(target(&isb), Some((A + 4, Isa::A32)));
    for (w, k) in [
        (0xF57F_F04F, Kind::Dsb),
        (0xF57F_F05F, Kind::Dmb),
        (0xEE07_0F9A, Kind::Dsb), // MCR p15, 0, r0, c7, c10, 4
        (0xEE07_0FBA, Kind::Dmb), // MCR p15, 0, r0, c7, c10, 5
    ] {
        let i = a32(w);
        assert_eq!(i.kind, k, "{w:08x}");
        assert!(!i.is_waypoint() && i.is_waypoint_with(true) && !i.is_waypoint_with(false));
    }
    let cp15isb = a32(0xEE07_0F95); // MCR p15, 0, r0, c7, c5, 4
    assert_eq!(cp15isb.kind, Kind::Isb);
    assert!(cp15isb.is_waypoint());
    // Other MCR/MRC are not barriers; MRC to APSR_nzcv does not write PC.
    assert_sequential(&a32(0xEE07_0F15)); // MCR p15, 0, r0, c7, c5, 0 (ICIALLU)
    assert_sequential(&a32(0xEE11_FF10)); // MRC p15, 0, APSR_nzcv, c1, c0, 0
    assert_sequential(&a32(0xEEF1_FA10)); // VMRS APSR_nzcv, FPSCR
}

// ------------------------------------------------------- T32 16-bit

#[test]
fn t16_sizes() {
    for h in [0x0000u16, 0x4770, 0xBD10, 0xE7FE, 0xE7FF] {
        assert_eq!(t32_size(h), 2);
    }
    for h in [0xE800u16, 0xF000, 0xF3BF, 0xFFFF] {
        assert_eq!(t32_size(h), 4);
    }
}

#[test]
fn t16_branch_exchange() {
    let bx = t16(0x4770);
    assert_indirect(&bx, Some(ReturnHint::BxLr));
    assert!(!bx.link);
    assert_eq!(bx.cond, Cond::Al);
    let blx = t16(0x4798); // BLX r3
    assert_indirect(&blx, None);
    assert!(blx.link);
    assert_indirect(&t16(0x4700), None); // BX r0
    assert_indirect(&t16(0x4778), None); // BX PC
    assert!(t16(0x47F8).unpredictable); // BLX PC
    assert!(t16(0x4771).unpredictable); // (0)(0)(0) field
}

#[test]
fn t16_pc_writes() {
    assert_indirect(&t16(0xBD10), Some(ReturnHint::Pop)); // POP {r4, pc}
    assert_sequential(&t16(0xBC10)); // POP {r4}
    assert_sequential(&t16(0xB510)); // PUSH {r4, lr}
    assert_sequential(&t16(0xB5F0)); // PUSH {r4-r7, lr}
    assert_indirect(&t16(0x46F7), Some(ReturnHint::MovPcLr)); // MOV PC, LR
    assert_indirect(&t16(0x4687), None); // MOV PC, r0
    assert_indirect(&t16(0x4487), None); // ADD PC, r0
    assert_sequential(&t16(0x4680)); // MOV r8, r0
    assert_sequential(&t16(0x4B01)); // LDR r3, [PC, #4]
}

#[test]
fn t16_direct_branches() {
    let b = t16(0xE7FE); // B .
    assert_eq!(b.kind, Kind::Branch);
    assert_eq!(target(&b), Some((T, Isa::T32)));
    assert_eq!(target(&t16(0xE000)), Some((T + 4, Isa::T32)));
    assert_eq!(target(&t16(0xE400)), Some((T + 4 - 2048, Isa::T32)));
    let beq = t16(0xD0FE); // BEQ .
    assert_eq!(beq.cond, Cond::Eq);
    assert_eq!(target(&beq), Some((T, Isa::T32)));
    let bne = t16(0xD17F);
    assert_eq!(bne.cond, Cond::Ne);
    assert_eq!(target(&bne), Some((T + 4 + 254, Isa::T32)));
    assert_eq!(t16(0xDCFE).cond, Cond::Gt);
}

#[test]
fn t16_cbz_cbnz() {
    let cbz = t16(0xB100); // CBZ r0, .+4
    assert_eq!(cbz.kind, Kind::CompareBranch);
    assert!(cbz.is_direct() && cbz.is_waypoint() && cbz.is_conditional());
    assert_eq!(cbz.cond, Cond::Al);
    assert_eq!(target(&cbz), Some((T + 4, Isa::T32)));
    assert_eq!(target(&t16(0xB110)), Some((T + 8, Isa::T32))); // imm5 = 2
    assert_eq!(target(&t16(0xB900)), Some((T + 4, Isa::T32))); // CBNZ
    assert_eq!(target(&t16(0xB300)), Some((T + 4 + 64, Isa::T32))); // i = 1
    assert_eq!(target(&t16(0xBBFF)), Some((T + 4 + 126, Isa::T32))); // CBNZ r7, max
}

#[test]
fn t16_exceptions_hints() {
    assert_eq!(t16(0xDF00).kind, Kind::Svc);
    assert_eq!(t16(0xDE00).kind, Kind::Udf);
    assert_eq!(t16(0xBE00).kind, Kind::Bkpt);
    assert_eq!(t16(0xBF30).kind, Kind::Wfi);
    assert_eq!(t16(0xBF20).kind, Kind::Wfe);
    assert_sequential(&t16(0xBF00)); // NOP
    assert_sequential(&t16(0xBF10)); // YIELD
    assert_sequential(&t16(0xBF40)); // SEV
    assert_sequential(&t16(0xB650)); // SETEND LE
    assert_sequential(&t16(0xB672)); // CPSID i
    assert_eq!(t16(0xB700).kind, Kind::Undefined);
    assert_eq!(t16(0xBA80).kind, Kind::Undefined);
}

#[test]
fn t16_it() {
    let it = t16(0xBF08); // IT EQ
    assert_eq!(it.kind, Kind::It);
    assert!(!it.is_waypoint());
    let b = it.it.expect("present");
    assert_eq!(
        b,
        ItBlock {
            firstcond: 0,
            mask: 8
        }
    );
    assert_eq!(b.len(), 1);
    assert_eq!(b.cond(0), Some(Cond::Eq));
    assert_eq!(b.cond(1), None);

    let ite = t16(0xBF0C).it.expect("present"); // ITE EQ
    assert_eq!(ite.len(), 2);
    assert_eq!((ite.cond(0), ite.cond(1)), (Some(Cond::Eq), Some(Cond::Ne)));

    let itttt = t16(0xBF1F).it.expect("present"); // ITTTT NE
    assert_eq!(itttt.len(), 4);
    assert!((0..4).all(|i| itttt.cond(i) == Some(Cond::Ne)));

    let itete = t16(0xBFAB).it.expect("present"); // ITETE GE: GE LT GE LT
    assert_eq!(itete.len(), 4);
    let conds: Vec<_> = (0..4).map(|i| itete.cond(i).expect("present")).collect();
    assert_eq!(conds, [Cond::Ge, Cond::Lt, Cond::Ge, Cond::Lt]);

    // IT AL with an "else" and IT with firstcond 1111 are UNPREDICTABLE.
    assert!(!t16(0xBFE8).unpredictable);
    assert!(t16(0xBFEC).unpredictable);
    assert!(t16(0xBFF8).unpredictable);
}

// ------------------------------------------------------- T32 32-bit

#[test]
fn t32_bl_b() {
    let bl = t32(0xF000, 0xF800); // BL .+4
    assert_eq!(bl.kind, Kind::Branch);
    assert!(bl.link && bl.is_direct());
    assert_eq!(target(&bl), Some((T + 4, Isa::T32)));
    assert_eq!(target(&t32(0xF7FF, 0xFFFE)), Some((T, Isa::T32))); // BL .
    assert_eq!(target(&t32(0xF000, 0xF802)), Some((T + 8, Isa::T32)));
    // BL with S = 0, J1 = J2 = 0: I1 = I2 = 1, offset +0xC00000.
    assert_eq!(
        target(&t32(0xF000, 0xD000)),
        Some((T + 4 + 0xC0_0000, Isa::T32))
    );

    let bw = t32(0xF000, 0xB800); // B.W .+4
    assert!(!bw.link);
    assert_eq!(bw.cond, Cond::Al);
    assert_eq!(target(&bw), Some((T + 4, Isa::T32)));

    let beqw = t32(0xF000, 0x8000); // BEQ.W .+4
    assert_eq!(beqw.cond, Cond::Eq);
    assert_eq!(target(&beqw), Some((T + 4, Isa::T32)));
    let bnew = t32(0xF47F, 0xAFFE); // BNE.W .
    assert_eq!(bnew.cond, Cond::Ne);
    assert_eq!(target(&bnew), Some((T, Isa::T32)));
}

#[test]
fn t32_blx_immediate() {
    // Target is Align(PC, 4) + imm, in A32 state.
    let blx = t32_at(0xF000, 0xE800, 0x1002);
    assert_eq!(blx.kind, Kind::Branch);
    assert!(blx.link);
    assert_eq!(target(&blx), Some((0x1004, Isa::A32)));
    assert_eq!(
        target(&t32_at(0xF000, 0xE800, 0x1000)),
        Some((0x1004, Isa::A32))
    );
    assert_eq!(
        target(&t32_at(0xF000, 0xE802, 0x1000)),
        Some((0x1008, Isa::A32))
    );
    // H = 1 is UNDEFINED.
    assert_eq!(t32(0xF000, 0xE801).kind, Kind::Undefined);
}

#[test]
fn t32_loads_of_pc() {
    assert_indirect(&t32(0xE8BD, 0x8010), Some(ReturnHint::Pop)); // POP.W {r4, pc}
    assert_indirect(&t32(0xF85D, 0xFB04), Some(ReturnHint::Pop)); // LDR PC, [SP], #4
    assert_indirect(&t32(0xF8DF, 0xF004), None); // LDR PC, [PC, #4]
    assert_indirect(&t32(0xF8D0, 0xF000), None); // LDR PC, [r0]
    assert_indirect(&t32(0xF850, 0xF021), None); // LDR PC, [r0, r1, LSL #2]
    assert_indirect(&t32(0xE890, 0x8003), None); // LDM r0, {r0, r1, pc}
    assert_sequential(&t32(0xE92D, 0x4010)); // PUSH.W {r4, lr}
    assert_sequential(&t32(0xF890, 0xF000)); // PLD [r0]
    assert_sequential(&t32(0xF8D0, 0x0000)); // LDR r0, [r0]
                                             // POP.W {pc, lr} is UNPREDICTABLE.
    assert!(t32(0xE8BD, 0xC000).unpredictable);
}

#[test]
fn t32_table_branch() {
    assert_indirect(&t32(0xE8D0, 0xF001), None); // TBB [r0, r1]
    assert_indirect(&t32(0xE8DF, 0xF011), None); // TBH [PC, r1, LSL #1]
    assert!(t32(0xE8D0, 0xF00F).unpredictable); // Rm = PC
}

#[test]
fn t32_exception_returns() {
    assert_exc_return(&t32(0xF3DE, 0x8F00), ReturnHint::Eret);
    assert_exc_return(&t32(0xF3DE, 0x8F04), ReturnHint::SubsPc);
    assert_exc_return(&t32(0xE9BD, 0xC000), ReturnHint::Rfe); // RFEIA SP!
    assert_exc_return(&t32(0xE81D, 0xC000), ReturnHint::Rfe); // RFEDB SP
}

#[test]
fn t32_misc_control() {
    let isb = t32(0xF3BF, 0x8F6F);
    assert_eq!(isb.kind, Kind::Isb);
    assert!(isb.is_waypoint());
    assert_eq!(target(&isb), Some((T + 4, Isa::T32)));
    assert_eq!(t32(0xF3BF, 0x8F4F).kind, Kind::Dsb);
    assert_eq!(t32(0xF3BF, 0x8F5F).kind, Kind::Dmb);
    assert_eq!(t32(0xEE07, 0x0F95).kind, Kind::Isb); // MCR p15 CP15ISB
    assert_sequential(&t32(0xF3BF, 0x8F2F)); // CLREX
    let enterx = t32(0xF3BF, 0x8F1F);
    assert_eq!(enterx.kind, Kind::EnterX);
    assert!(enterx.is_waypoint());
    assert_eq!(target(&enterx), Some((T + 4, Isa::T32)));
    assert_eq!(t32(0xF3BF, 0x8F0F).kind, Kind::LeaveX);
    assert_indirect(&t32(0xF3C0, 0x8F00), None); // BXJ r0
    assert_eq!(t32(0xF3AF, 0x8003).kind, Kind::Wfi);
    assert_eq!(t32(0xF3AF, 0x8002).kind, Kind::Wfe);
    assert_sequential(&t32(0xF3AF, 0x8000)); // NOP.W
    assert_eq!(t32(0xF7F0, 0xA000).kind, Kind::Udf);
    assert_eq!(t32(0xF7E0, 0x8000).kind, Kind::Hvc);
    assert_eq!(t32(0xF7F0, 0x8000).kind, Kind::Smc);
    assert_sequential(&t32(0xF3EF, 0x8000)); // MRS r0, APSR
    assert_sequential(&t32(0xF380, 0x8800)); // MSR APSR_nzcvq, r0
}

#[test]
fn t32_data_processing_pc_is_unpredictable() {
    let add = t32(0xEB00, 0x0F01); // ADD.W PC, r0, r1
    assert_eq!(add.kind, Kind::IndirectBranch);
    assert!(add.unpredictable);
    assert_sequential(&t32(0xEBB0, 0x0F01)); // CMP.W r0, r1 (SUBS with Rd = PC)
    assert_sequential(&t32(0xF1B0, 0x0F00)); // CMP.W r0, #0
    assert_sequential(&t32(0xEB00, 0x0001)); // ADD.W r0, r0, r1
}

// ------------------------------------------------------ IT tracking

#[test]
fn it_state_follows_blocks() {
    let mut st = ItState::new();
    let nop = decode_t32(0xBF00, 0, T);
    assert_eq!(st.step(&nop), Cond::Al);
    // ITETE GE: GE, LT, GE, LT.
    let it = decode_t32(0xBFAB, 0, T);
    assert_eq!(st.step(&it), Cond::Al);
    assert!(st.in_block());
    assert_eq!(st.remaining(), 4);
    let mut seen = Vec::new();
    while st.in_block() {
        seen.push((st.is_last(), st.step(&nop)));
    }
    assert_eq!(
        seen,
        [
            (false, Cond::Ge),
            (false, Cond::Lt),
            (false, Cond::Ge),
            (true, Cond::Lt)
        ]
    );
    assert_eq!(st, ItState::new());
    // A B<c> outside a block keeps its own condition.
    assert_eq!(st.step(&decode_t32(0xD0FE, 0, T)), Cond::Eq);
}

#[test]
fn it_state_raw_and_advance() {
    let st = ItBlock {
        firstcond: 0b0001,
        mask: 0b1000,
    }
    .state();
    assert_eq!(st.raw(), 0x18);
    assert!(st.is_last());
    assert_eq!(st.cond(), Some(Cond::Ne));
    let mut s = ItState::from_raw(0x04);
    assert_eq!(s.cond(), Some(Cond::Eq));
    s.advance();
    assert_eq!(s.raw(), 0x08);
    s.advance();
    assert!(!s.in_block());
    assert_eq!(ItState::from_raw(0xA0), ItState::new());
    assert_eq!(
        ItBlock {
            firstcond: 0,
            mask: 0
        }
        .len(),
        0
    );
}

// ------------------------------------------------------------ misc

#[test]
fn cond_helpers() {
    assert_eq!(Cond::from_bits(0), Cond::Eq);
    assert_eq!(Cond::from_bits(14), Cond::Al);
    assert_eq!(Cond::from_bits(15), Cond::Al);
    assert_eq!(Cond::Eq.invert(), Cond::Ne);
    assert_eq!(Cond::Le.invert(), Cond::Gt);
    assert_eq!(Cond::Al.invert(), Cond::Al);
    // N Z C V
    assert!(Cond::Eq.passes(0b0100));
    assert!(!Cond::Eq.passes(0b0000));
    assert!(Cond::Hi.passes(0b0010));
    assert!(!Cond::Hi.passes(0b0110));
    assert!(Cond::Ge.passes(0b1001));
    assert!(Cond::Lt.passes(0b1000));
    assert!(Cond::Gt.passes(0b0000));
    assert!(Cond::Le.passes(0b0100));
    assert_eq!(Cond::Ne.suffix(), "ne");
    for b in 0..15 {
        let c = Cond::from_bits(b);
        assert_eq!(u32::from(c.bits()), b);
        for f in 0..16 {
            if c != Cond::Al {
                assert_ne!(c.passes(f), c.invert().passes(f));
            }
        }
    }
}

#[test]
fn decode_from_bytes() {
    let i = decode(Isa::A32, &[0x1E, 0xFF, 0x2F, 0xE1], A).expect("present");
    assert_eq!(i.ret, Some(ReturnHint::BxLr));
    assert!(decode(Isa::A32, &[0x1E, 0xFF, 0x2F], A).is_none());
    let bl = decode(Isa::T32, &[0x00, 0xF0, 0x00, 0xF8], T).expect("present");
    assert_eq!(target(&bl), Some((T + 4, Isa::T32)));
    assert!(decode(Isa::T32, &[0x00, 0xF0, 0x00], T).is_none());
    assert_eq!(decode(Isa::T32, &[0x70, 0x47], T).expect("present").size, 2);
    assert!(decode(Isa::T32, &[0x70], T).is_none());
}

#[test]
fn next_addr_wraps() {
    assert_eq!(
        decode_a32(0xE1A0_0000, 0xFFFF_FFFC).next_addr(0xFFFF_FFFC),
        0
    );
    assert_eq!(t16(0xBF00).next_addr(T), T + 2);
}
