//! Loading a real ARM ELF file (assembled and linked with GNU binutils from
//! `fixtures/mapping.s`): segment contents at their addresses, and the
//! `$a`/`$t`/`$d` mapping symbols the assembler emitted.

use std::path::Path;
use trace_core::memory::{CodeKind, MemoryImage, MemoryMap, Space};

fn image() -> MemoryMap {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mapping.elf");
    let mut map = MemoryMap::new();
    map.add_elf(&path, Space::Any).expect("a 32-bit ARM ELF");
    map
}

fn word(map: &MemoryMap, addr: u32) -> u32 {
    let mut b = [0u8; 4];
    assert_eq!(map.read(Space::Any, addr, &mut b), 4, "{addr:#x} mapped");
    u32::from_le_bytes(b)
}

#[test]
fn segment_bytes_are_at_their_addresses() {
    let map = image();
    // Encodings from the ARM ARM: MOV r0,#1 (A1), BX LR (A1), and the
    // Thumb pair ADDS r0,#1 (T2) / BX LR (T1); then the literal word.
    assert_eq!(word(&map, 0x8000), 0xE3A0_0001);
    assert_eq!(word(&map, 0x8008), 0xE12F_FF1E);
    assert_eq!(word(&map, 0x800C), 0x4770_3001);
    assert_eq!(word(&map, 0x8010), 0xDEAD_BEEF);
    let mut b = [0u8; 8];
    assert_eq!(map.read(Space::Any, 0x8010, &mut b), 4, "the segment ends");
    assert_eq!(map.read(Space::Any, 0x7FFC, &mut b), 0, "nothing below");
}

#[test]
fn mapping_symbols_tell_arm_thumb_and_data_apart() {
    let map = image();
    assert_eq!(map.code_kind(0x8000), Some(CodeKind::Arm));
    assert_eq!(map.code_kind(0x8008), Some(CodeKind::Arm));
    assert_eq!(map.code_kind(0x800C), Some(CodeKind::Thumb));
    assert_eq!(map.code_kind(0x800E), Some(CodeKind::Thumb));
    assert_eq!(map.code_kind(0x8010), Some(CodeKind::Data));
}

#[test]
fn the_blx_in_the_image_targets_the_thumb_function() {
    let map = image();
    let insn = isa_decode::decode_a32(word(&map, 0x8004), 0x8004);
    let target = insn.target.expect("BLX immediate is direct");
    assert_eq!(target.addr, 0x800C);
    assert_eq!(target.isa, isa_decode::Isa::T32);
    assert_eq!(map.code_kind(target.addr), Some(CodeKind::Thumb));
}
