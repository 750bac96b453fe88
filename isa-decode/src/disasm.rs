//! Disassembly text through Capstone (feature `disasm`).

extern crate std;

use std::cell::RefCell;
use std::string::String;
use std::thread_local;

use capstone::arch::arm::ArchMode;
use capstone::arch::BuildsCapstone;
use capstone::Capstone;

use crate::insn::Isa;

thread_local! {
    static ENGINES: RefCell<Option<(Capstone, Capstone)>> = const { RefCell::new(None) };
}

fn engine(mode: ArchMode) -> Option<Capstone> {
    Capstone::new().arm().mode(mode).detail(false).build().ok()
}

/// Disassemble the instruction at the start of `bytes` (little-endian
/// instruction order) at address `addr`, as `"mnemonic operands"` in
/// Capstone's syntax, or `None` if Capstone does not recognise it (or
/// `bytes` is too short).
///
/// Capstone engines are created once per thread.
///
/// ```
/// use isa_decode::{disassemble, Isa};
///
/// assert_eq!(disassemble(&[0x1e, 0xff, 0x2f, 0xe1], 0, Isa::A32).as_deref(), Some("bx lr"));
/// assert_eq!(disassemble(&[0x70, 0x47], 0, Isa::T32).as_deref(), Some("bx lr"));
/// ```
pub fn disassemble(bytes: &[u8], addr: u32, isa: Isa) -> Option<String> {
    ENGINES.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some((engine(ArchMode::Arm)?, engine(ArchMode::Thumb)?));
        }
        let (arm, thumb) = slot.as_ref()?;
        let cs = match isa {
            Isa::A32 => arm,
            Isa::T32 => thumb,
        };
        let insns = cs.disasm_count(bytes, u64::from(addr), 1).ok()?;
        let insn = insns.iter().next()?;
        let mnemonic = insn.mnemonic().unwrap_or("");
        let ops = insn.op_str().unwrap_or("");
        let mut s = String::from(mnemonic);
        if !ops.is_empty() {
            s.push(' ');
            s.push_str(ops);
        }
        Some(s)
    })
}
