//! Capstone as an oracle: what it says an instruction does to the PC.

use capstone::arch::arm::{ArchMode, ArmInsnGroup, ArmOperandType, ArmReg};
use capstone::arch::{BuildsCapstone, DetailsArchInsn};
use capstone::Capstone;

/// Capstone's view of one instruction.
#[derive(Clone, Debug)]
pub struct CsView {
    /// Instruction length in bytes.
    pub len: u8,
    /// In CS_GRP_JUMP or CS_GRP_CALL, or writes the PC (explicit operand,
    /// implicit register, or base write-back).
    pub branch: bool,
    /// In CS_GRP_BRANCH_RELATIVE.
    pub direct: bool,
    /// In CS_GRP_CALL.
    pub link: bool,
    /// First immediate operand of a direct branch.
    pub target: Option<u32>,
    /// Mnemonic and operands, for reports.
    pub text: String,
}

/// One Capstone engine per instruction set.
pub struct Oracle {
    arm: Capstone,
    thumb: Capstone,
}

impl Oracle {
    pub fn new() -> Oracle {
        let build = |mode| {
            Capstone::new()
                .arm()
                .mode(mode)
                .detail(true)
                .build()
                .expect("capstone engine")
        };
        Oracle {
            arm: build(ArchMode::Arm),
            thumb: build(ArchMode::Thumb),
        }
    }

    /// Decode an A32 word.
    pub fn a32(&self, word: u32, addr: u32) -> Option<CsView> {
        view(&self.arm, &word.to_le_bytes(), addr)
    }

    /// Decode T32 halfwords (only `hw1` when `hw2` is `None`).
    pub fn t32(&self, hw1: u16, hw2: Option<u16>, addr: u32) -> Option<CsView> {
        let mut b = [0u8; 4];
        b[..2].copy_from_slice(&hw1.to_le_bytes());
        let n = match hw2 {
            Some(h) => {
                b[2..].copy_from_slice(&h.to_le_bytes());
                4
            }
            None => 2,
        };
        view(&self.thumb, &b[..n], addr)
    }
}

fn view(cs: &Capstone, bytes: &[u8], addr: u32) -> Option<CsView> {
    let insns = cs.disasm_count(bytes, u64::from(addr), 1).ok()?;
    let insn = insns.iter().next()?;
    let detail = cs.insn_detail(insn).ok()?;
    let pc = ArmReg::ARM_REG_PC as u16;
    let groups: Vec<u8> = detail.groups().iter().map(|g| g.0).collect();
    let has = |g: u32| groups.contains(&(g as u8));
    let jump = has(ArmInsnGroup::ARM_GRP_JUMP);
    let call = has(ArmInsnGroup::ARM_GRP_CALL);
    let rel = has(ArmInsnGroup::ARM_GRP_BRANCH_RELATIVE);
    let writes_pc = detail.regs_write().iter().any(|r| r.0 == pc);
    let arch = detail.arch_detail();
    let arm = arch.arm().expect("arm detail");
    let mut target = None;
    for op in arm.operands() {
        if let ArmOperandType::Imm(v) = op.op_type {
            if target.is_none() {
                target = Some(v as u32);
            }
        }
    }
    let _ = arm.writeback();
    Some(CsView {
        len: insn.len() as u8,
        branch: jump || call || writes_pc,
        direct: rel,
        link: call,
        target: if rel { target } else { None },
        text: format!(
            "{} {}",
            insn.mnemonic().unwrap_or("?"),
            insn.op_str().unwrap_or("")
        )
        .trim_end()
        .to_string(),
    })
}
