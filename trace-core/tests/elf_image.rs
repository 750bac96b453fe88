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

/// A 32-bit ARM executable with `n` loadable segments of one word each.
fn elf_with_segments(n: u16) -> Vec<u8> {
    let (ehsize, phentsize) = (52u32, 32u32);
    let data = ehsize + u32::from(n) * phentsize;
    let mut e = Vec::new();
    e.extend_from_slice(b"\x7fELF\x01\x01\x01\0\0\0\0\0\0\0\0\0");
    for v in [2u16, 40] {
        e.extend_from_slice(&v.to_le_bytes()); // ET_EXEC, EM_ARM
    }
    for v in [1u32, 0x8000, ehsize, 0, 0x0500_0000] {
        e.extend_from_slice(&v.to_le_bytes()); // version, entry, phoff, shoff, flags
    }
    for v in [ehsize as u16, phentsize as u16, n, 40, 0, 0] {
        e.extend_from_slice(&v.to_le_bytes());
    }
    for k in 0..u32::from(n) {
        // PT_LOAD, offset, vaddr, paddr, filesz, memsz, flags R+X, align
        for v in [
            1,
            data + 4 * k,
            0x10000 + 4 * k,
            0x10000 + 4 * k,
            4,
            4,
            5,
            4,
        ] {
            e.extend_from_slice(&v.to_le_bytes());
        }
    }
    for k in 0..u32::from(n) {
        e.extend_from_slice(&(0xE1A0_0000u32 | k).to_le_bytes());
    }
    e
}

#[test]
fn an_elf_file_with_tens_of_thousands_of_segments_loads_quickly() {
    // 65,534 program headers once took more than 120 s (the lookup table
    // was rebuilt per segment).
    let path = std::env::temp_dir().join(format!("elf-image-{}-many.elf", std::process::id()));
    std::fs::write(&path, elf_with_segments(65_534)).expect("write");
    let p = path.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut map = MemoryMap::new();
        tx.send(map.add_elf(&p, Space::Any).map(|()| map)).ok();
    });
    let map = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("loaded within 30 s")
        .expect("a valid ELF file");
    assert_eq!(map.regions().count(), 65_534);
    assert_eq!(word(&map, 0x10000 + 4 * 65_533), 0xE1A0_0000 | 65_533);
    let _ = std::fs::remove_file(path);
}
