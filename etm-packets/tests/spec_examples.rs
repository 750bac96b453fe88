//! The examples of the ETMv3 specification excerpts (ARM IHI 0014Q
//! sections 6.7.1, 7.3.1 and 7.10.5) and other hand-checked encodings.
#![allow(clippy::unwrap_used)]

use etm_packets::{
    Atom, Branch, Config, ContextIdSize, Encoder, ErrorKind, EtmVersion, ExceptionInfo, ISync, Isa,
    LsipAddress, Packet, Parser, Reason,
};

const ASYNC: [u8; 6] = [0, 0, 0, 0, 0, 0x80];

/// Parses A-sync + `bytes`, returning the packets after the A-sync;
/// panics on any error.
fn parse(cfg: Config, bytes: &[u8]) -> Vec<(u64, Packet)> {
    let mut all = ASYNC.to_vec();
    all.extend_from_slice(bytes);
    let mut p = Parser::new(cfg);
    let mut v: Vec<(u64, Packet)> = p.feed(&all).map(|i| i.unwrap()).collect();
    assert_eq!(p.finish(), None);
    assert_eq!(v.remove(0), (0, Packet::ASync));
    v
}

/// Parses A-sync + `bytes` and returns the first error after the A-sync.
fn parse_err(cfg: Config, bytes: &[u8]) -> etm_packets::Error {
    let mut all = ASYNC.to_vec();
    all.extend_from_slice(bytes);
    let mut p = Parser::new(cfg);
    let items: Vec<_> = p.feed(&all).collect();
    items
        .into_iter()
        .find_map(Result::err)
        .or_else(|| p.finish())
        .expect("an error")
}

fn atoms(cfg: Config, header: u8) -> String {
    match parse(cfg, &[header]).as_slice() {
        [(_, Packet::Atoms(a))] => a.iter().map(|x| x.to_string()).collect(),
        other => panic!("not a P-header: {other:?}"),
    }
}

fn non_ca() -> Config {
    Config::new()
}

fn ca(v: EtmVersion) -> Config {
    Config::new().with_version(v).with_cycle_accurate(true)
}

// ---- Example 7.1: P-header encodings in non cycle-accurate mode ----

#[test]
fn example_7_1_format1_een() {
    // b11001000: format 1, atoms E E N.
    assert_eq!(atoms(non_ca(), 0b1100_1000), "EEN");
}

#[test]
fn example_7_1_format2_ne() {
    // b10001010: format 2, atoms N E.
    assert_eq!(atoms(non_ca(), 0b1000_1010), "NE");
}

#[test]
fn non_ca_format1_limits() {
    // b10111100: 15 E; b11111100: 15 E then N.
    assert_eq!(atoms(non_ca(), 0b1011_1100), "E".repeat(15));
    assert_eq!(atoms(non_ca(), 0b1111_1100), "E".repeat(15) + "N");
    // b10000000: no atom at all.
    assert_eq!(atoms(non_ca(), 0x80), "");
}

#[test]
fn non_ca_reserved_pheaders() {
    for h in [0b1001_0010u8, 0b1010_0010, 0b1100_0010, 0b1111_1110] {
        let e = parse_err(non_ca(), &[h]);
        assert_eq!(e.offset, 6);
        assert_eq!(e.kind, ErrorKind::ReservedHeader { header: h });
    }
}

// ---- Example 7.2: P-header encodings in cycle-accurate mode ----

#[test]
fn example_7_2_format1_wewewn() {
    assert_eq!(atoms(ca(EtmVersion::V3_5), 0b1100_1000), "WEWEWN");
}

#[test]
fn example_7_2_format2_wne() {
    assert_eq!(atoms(ca(EtmVersion::V3_5), 0b1000_1010), "WNE");
}

#[test]
fn example_7_2_format3_wwwe() {
    assert_eq!(atoms(ca(EtmVersion::V3_5), 0b1110_1000), "WWWE");
}

#[test]
fn table_7_4_format1_and_format4() {
    // Format 1 b10000100: W E; format 4 b10010010: E without a cycle.
    let cfg = ca(EtmVersion::V3_3);
    assert_eq!(atoms(cfg, 0b1000_0100), "WE");
    assert_eq!(atoms(cfg, 0b1001_0010), "E");
    assert_eq!(atoms(cfg, 0b1001_0110), "N");
    let [(_, Packet::Atoms(a))] = parse(cfg, &[0x92])[..] else {
        panic!()
    };
    assert_eq!((a.count, a.cycles), (1, 0));
}

#[test]
fn format4_reserved_before_etmv3_3() {
    let e = parse_err(ca(EtmVersion::V3_2), &[0x92]);
    assert_eq!(e.kind, ErrorKind::ReservedHeader { header: 0x92 });
}

#[test]
fn format0_only_in_etmv3_0() {
    assert_eq!(atoms(ca(EtmVersion::V3_0), 0x80), "W");
    let e = parse_err(ca(EtmVersion::V3_1), &[0x80]);
    assert_eq!(e.kind, ErrorKind::ReservedHeader { header: 0x80 });
}

#[test]
fn ca_format3_counts() {
    let cfg = ca(EtmVersion::V3_5);
    assert_eq!(atoms(cfg, 0b1010_0000), "W");
    assert_eq!(atoms(cfg, 0b1011_1100), "WWWWWWWW");
    assert_eq!(atoms(cfg, 0b1111_1100), "WWWWWWWWE");
}

#[test]
fn ca_reserved_pheaders() {
    for h in [0b1001_1010u8, 0b1001_1110, 0b1010_0010, 0b1100_0110] {
        let e = parse_err(ca(EtmVersion::V3_5), &[h]);
        assert_eq!(e.kind, ErrorKind::ReservedHeader { header: h });
    }
}

#[test]
fn atom_accessors() {
    let [(_, Packet::Atoms(a))] = parse(ca(EtmVersion::V3_5), &[0b1100_1000])[..] else {
        panic!()
    };
    assert_eq!(a.instructions(), 3);
    assert!(a.is_executed(0) && a.is_executed(1) && !a.is_executed(2));
    assert_eq!(a.iter().filter(|x| *x == Atom::W).count(), 3);
}

// ---- Section 6.7.1 / table 6.9: branch addresses ----

fn branch(cfg: Config, setup: &[u8], bytes: &[u8]) -> Branch {
    let mut all = setup.to_vec();
    all.extend_from_slice(bytes);
    match parse(cfg, &all).last() {
        Some((_, Packet::Branch(b))) => *b,
        other => panic!("not a branch: {other:?}"),
    }
}

#[test]
fn table_6_9_full_arm_and_thumb_addresses() {
    let cfg = Config::new();
    // ARM 0x12345678: A[7:2]=0x1E, A[14:8]=0x56, A[21:15]=0x68, A[28:22]=0x48,
    // fifth byte b0000_1AAA with A[31:29] = 0.
    let arm = branch(cfg, &[], &[0xBD, 0xD6, 0xE8, 0xC8, 0x08]);
    assert_eq!(
        (arm.address, arm.bits, arm.isa),
        (0x1234_5678, 32, Isa::Arm)
    );
    // Thumb 0x12345678 (halfword aligned): fifth byte b0001_AAAA, A[31:28]=1.
    let thumb = branch(cfg, &[], &[0xF9, 0xAC, 0xD1, 0x91, 0x11]);
    assert_eq!(
        (thumb.address, thumb.bits, thumb.isa),
        (0x1234_5678, 32, Isa::Thumb)
    );
    // Jazelle 0x12345679: fifth byte b001A_AAAA, A[31:27] = 0b00010.
    let jaz = branch(cfg, &[], &[0xF3, 0xD9, 0xA2, 0xA3, 0x22]);
    assert_eq!(
        (jaz.address, jaz.bits, jaz.isa),
        (0x1234_5679, 32, Isa::Jazelle)
    );
}

#[test]
fn fifth_byte_reserved_state() {
    // Fifth byte b0000_0xxx names no instruction set.
    let e = parse_err(Config::new(), &[0x81, 0x80, 0x80, 0x80, 0x00]);
    assert_eq!(e.offset, 6);
    assert!(matches!(
        e.kind,
        ErrorKind::InvalidField { header: 0x81, .. }
    ));
}

#[test]
fn compressed_addresses_replace_low_bits() {
    // I-sync at Thumb 0xc002115c, then branch b7 fd d6 01 (TC2, ID 0x10):
    // 4 bytes carry A[27:1].
    let cfg = Config::new();
    let isync = [0x08, 0x01, 0x5d, 0x11, 0x02, 0xc0];
    let b = branch(cfg, &isync, &[0xb7, 0xfd, 0xd6, 0x01]);
    assert_eq!((b.address, b.bits, b.isa), (0xc035_beb6, 28, Isa::Thumb));
    // One byte carries A[6:1].
    let b = branch(cfg, &isync, &[0x0B]);
    assert_eq!((b.address, b.bits), (0xc002_110a, 7));
    // ARM state: one byte carries A[7:2].
    let arm_isync = [0x08, 0x01, 0x00, 0x80, 0x00, 0x00];
    let b = branch(cfg, &arm_isync, &[0x7F]);
    assert_eq!((b.address, b.bits, b.isa), (0x8000 | 0xFC, 8, Isa::Arm));
}

#[test]
fn upper_bits_unchanged_needs_three_bytes() {
    // "If the upper 12 bits are unchanged and A[19] is the most significant
    // bit to have changed, three address bytes are enough" (Thumb state).
    let cfg = Config::new();
    let mut enc = Encoder::new(cfg);
    let mut buf = [0u8; 32];
    enc.encode(
        &Packet::ISync(ISync::new(0xc000_0000, Isa::Thumb, Reason::TraceOn)),
        &mut buf,
    )
    .unwrap();
    let target = Branch {
        address: 0xc008_0000,
        bits: 0,
        known_bits: 0,
        isa: Isa::Thumb,
        ns: false,
        hyp: false,
        exception: None,
    };
    assert_eq!(enc.encode(&Packet::Branch(target), &mut buf).unwrap(), 3);
}

#[test]
fn exception_information_original_encoding() {
    // Five-byte ARM address with bit 6 set, then exception byte 0:
    // C=0, AltISA=0, Cancel=1, exception 14 (IRQ), NS=1.
    let cfg = Config::new();
    let b = branch(cfg, &[], &[0x81, 0x80, 0x80, 0x80, 0x48, 0b0011_1101]);
    assert_eq!((b.address, b.isa, b.ns), (0, Isa::Arm, true));
    assert_eq!(
        b.exception,
        Some(ExceptionInfo {
            number: 14,
            cancel: true,
            resume: 0
        })
    );
    // Bytes 0 and 1: exception number 0x123, Hyp=1; then byte 2: resume 5.
    let b = branch(
        cfg,
        &[],
        &[0x81, 0x80, 0x80, 0x80, 0x48, 0x86, 0b1011_0010, 0x45],
    );
    assert!(b.hyp);
    assert_eq!(
        b.exception,
        Some(ExceptionInfo {
            number: 0x123,
            cancel: false,
            resume: 5
        })
    );
    // Byte 0 then byte 2 directly (bit 6 marks byte 2).
    let b = branch(cfg, &[], &[0x81, 0x80, 0x80, 0x80, 0x48, 0x80, 0x43]);
    assert_eq!(b.exception.map(|e| e.resume), Some(3));
}

#[test]
fn exception_information_alternative_encoding() {
    // ETMv3.4 alternative encoding: the last byte of a 2-4 byte address
    // has bit 6 = exception information follows and six address bits.
    let cfg = Config::new().with_alt_branch(true);
    let isync = [0x08, 0x01, 0x01, 0x10, 0x00, 0x00]; // Thumb 0x1000
    let b = branch(cfg, &isync, &[0x83, 0x61, 0x1C]);
    assert_eq!((b.address, b.bits), (0x1082, 13));
    assert_eq!(b.exception.map(|e| e.number), Some(14));
    // AltISA in exception byte 0 switches Thumb to ThumbEE (ETMv3.3+).
    let b = branch(cfg, &isync, &[0x83, 0x61, 0x40]);
    assert_eq!((b.isa, b.exception), (Isa::ThumbEE, None));
    // Without the E bit the last byte is all address.
    let b = branch(cfg, &isync, &[0x83, 0x21]);
    assert_eq!((b.address, b.bits, b.exception), (0x1082, 13, None));
}

#[test]
fn original_encoding_second_byte_has_seven_bits() {
    let cfg = Config::new();
    let isync = [0x08, 0x01, 0x01, 0x10, 0x00, 0x00]; // Thumb 0x1000
    let b = branch(cfg, &isync, &[0x83, 0x41]);
    assert_eq!((b.address, b.bits), (0x2082, 14));
}

// ---- Section 7.10.5: I-sync forms and table 7.20 ----

fn isync(cfg: Config, bytes: &[u8]) -> ISync {
    match parse(cfg, bytes).as_slice() {
        [(_, Packet::ISync(s))] => *s,
        other => panic!("not an I-sync: {other:?}"),
    }
}

#[test]
fn table_7_20_instruction_set_states() {
    let cfg = Config::new().with_version(EtmVersion::V3_3);
    // info byte: J = bit 4, AltISA = bit 2; address bit 0 = T.
    let s = isync(cfg, &[0x08, 0x01, 0x00, 0x10, 0x00, 0x00]);
    assert_eq!((s.isa(), s.address()), (Isa::Arm, 0x1000));
    let s = isync(cfg, &[0x08, 0x01, 0x01, 0x10, 0x00, 0x00]);
    assert_eq!((s.isa(), s.address()), (Isa::Thumb, 0x1000));
    let s = isync(cfg, &[0x08, 0x05, 0x01, 0x10, 0x00, 0x00]);
    assert_eq!((s.isa(), s.address()), (Isa::ThumbEE, 0x1000));
    // Jazelle: the T bit is address bit 0.
    let s = isync(cfg, &[0x08, 0x11, 0x01, 0x10, 0x00, 0x00]);
    assert_eq!((s.isa(), s.address()), (Isa::Jazelle, 0x1001));
    let s = isync(cfg, &[0x08, 0x11, 0x00, 0x10, 0x00, 0x00]);
    assert_eq!((s.isa(), s.address()), (Isa::Jazelle, 0x1000));
    // Reserved: J=0 T=0 AltISA=1, and J=1 AltISA=1.
    for info in [0x05u8, 0x15] {
        let e = parse_err(cfg, &[0x08, info, 0x00, 0x10, 0x00, 0x00]);
        assert!(matches!(
            e.kind,
            ErrorKind::InvalidField { header: 0x08, .. }
        ));
        assert_eq!(e.offset, 6);
    }
}

#[test]
fn altisa_bit_ignored_before_etmv3_3() {
    let cfg = Config::new().with_version(EtmVersion::V3_2);
    let s = isync(cfg, &[0x08, 0x05, 0x01, 0x10, 0x00, 0x00]);
    assert_eq!(s.isa(), Isa::Thumb);
}

#[test]
fn reason_codes_and_security() {
    let cfg = Config::new();
    for (bits, reason) in [
        (0u8, Reason::Periodic),
        (1, Reason::TraceOn),
        (2, Reason::Overflow),
        (3, Reason::DebugExit),
    ] {
        let s = isync(cfg, &[0x08, (bits << 5) | 0x0B, 0x01, 0, 0, 0]);
        assert_eq!(s.reason(), reason);
        assert!(s.ns() && s.hyp());
    }
    // Hyp is ETMv3.5 only.
    let s = isync(
        cfg.with_version(EtmVersion::V3_4),
        &[0x08, 0x0B, 0x01, 0, 0, 0],
    );
    assert!(s.ns() && !s.hyp());
}

#[test]
fn normal_isync_with_cycle_count_tc2() {
    // TC2 ID 0x10 at Idx 919: 70 8f 3c 21 99 f6 04 c0.
    let cfg = Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250).unwrap();
    let s = isync(cfg, &[0x70, 0x8f, 0x3c, 0x21, 0x99, 0xf6, 0x04, 0xc0]);
    assert_eq!(s.cycle_count(), Some(7695));
    assert_eq!(s.reason(), Reason::TraceOn);
    assert_eq!(
        (s.address(), s.isa(), s.ns()),
        (0xc004_f698, Isa::Thumb, false)
    );
}

#[test]
fn context_id_sizes() {
    for (size, bytes, want) in [
        (ContextIdSize::One, &[0xAB][..], 0xAB),
        (ContextIdSize::Two, &[0xCD, 0xAB][..], 0xABCD),
        (
            ContextIdSize::Four,
            &[0x78, 0x56, 0x34, 0x12][..],
            0x1234_5678,
        ),
    ] {
        let cfg = Config::new().with_context_id_size(size);
        let mut pkt = vec![0x08];
        pkt.extend_from_slice(bytes);
        pkt.extend_from_slice(&[0x21, 0x00, 0x20, 0x00, 0x00]);
        let s = isync(cfg, &pkt);
        assert_eq!((s.context_id(), s.address()), (Some(want), 0x2000));
        let mut cpkt = vec![0x6E];
        cpkt.extend_from_slice(bytes);
        assert_eq!(parse(cfg, &cpkt), [(6, Packet::ContextId(want))]);
    }
}

#[test]
fn lsip_isync_forms() {
    let cfg = Config::new().with_context_id_size(ContextIdSize::One);
    // LSiP: data instruction at ARM 0x2000, current instruction compressed
    // against it: one byte 0b0_000011_1 -> A[7:2] = 3 -> 0x200C.
    let s = isync(cfg, &[0x08, 0x42, 0xA1, 0x00, 0x20, 0x00, 0x00, 0x07]);
    assert_eq!(s.address(), 0x2000);
    assert_eq!(
        s.lsip(),
        Some(LsipAddress {
            address: 0x200C,
            bits: 8
        })
    );
    assert_eq!((s.context_id(), s.reason()), (Some(0x42), Reason::TraceOn));
    // LSiP with cycle count.
    let s = isync(cfg, &[0x70, 0x05, 0x42, 0xA1, 0x00, 0x20, 0x00, 0x00, 0x07]);
    assert_eq!(s.cycle_count(), Some(5));
    assert_eq!(s.resume_address(), 0x200C);
    // The next branch is compressed against the current address.
    let p = parse(cfg, &[0x08, 0x42, 0xA1, 0x00, 0x20, 0x00, 0x00, 0x07, 0x09]);
    let (_, Packet::Branch(b)) = p[1] else {
        panic!()
    };
    assert_eq!(b.address, 0x2010);
}

#[test]
fn data_only_isync() {
    let cfg = Config::new()
        .with_data_only(true)
        .with_context_id_size(ContextIdSize::Two);
    let s = isync(cfg, &[0x08, 0x34, 0x12, 0x2B]);
    assert!(s.is_data_only());
    assert_eq!(s.context_id(), Some(0x1234));
    assert_eq!(s.reason(), Reason::TraceOn);
    assert!(s.ns() && s.hyp());
}

// ---- Other packets ----

#[test]
fn timestamp_tc2() {
    // TC2 ID 0x10 at Idx 865: a full 64-bit timestamp (nine bytes).
    let cfg = Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250).unwrap();
    let p = parse(
        cfg,
        &[0x42, 0xbd, 0x9a, 0xc3, 0xce, 0xaf, 0x90, 0x80, 0x80, 0x00],
    );
    let [(6, Packet::Timestamp(t))] = p[..] else {
        panic!("{p:?}")
    };
    assert_eq!(
        (t.value, t.bits, t.clock_changed),
        (0x82_f9d0_cd3d, 64, false)
    );
}

#[test]
fn timestamp_compression_and_r_bit() {
    let cfg = Config::new();
    let p = parse(cfg, &[0x42, 0x81, 0x01, 0x46, 0x05]);
    let [(_, Packet::Timestamp(a)), (_, Packet::Timestamp(b))] = p[..] else {
        panic!()
    };
    assert_eq!((a.value, a.bits), (0x81, 14));
    assert_eq!((b.value, b.bits, b.clock_changed), (0x85, 7, true));
}

#[test]
fn timestamp_48_bit_and_gray() {
    let cfg = Config::new().with_timestamp_64bit(false);
    // Seven bytes: the last holds bits [47:42].
    let p = parse(cfg, &[0x42, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F]);
    let [(_, Packet::Timestamp(t))] = p[..] else {
        panic!()
    };
    assert_eq!((t.value, t.bits), ((1u64 << 48) - 1, 48));
    // Gray code 0b110 is binary 0b100.
    let cfg = Config::new().with_timestamp_gray(true);
    let p = parse(cfg, &[0x42, 0x06]);
    assert!(matches!(p[..], [(_, Packet::Timestamp(t))] if t.value == 4));
}

#[test]
fn cycle_count_vmid_and_single_byte_packets() {
    // Store failed and data suppressed need data (value) trace enabled.
    let cfg = Config::new().with_data_address(true).with_data_value(true);
    let p = parse(
        cfg,
        &[
            0x04, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, // cycle count 2^32-1
            0x3C, 0x07, // VMID 7
            0x0C, 0x66, 0x50, 0x62, 0x76, 0x7E,
        ],
    );
    let kinds: Vec<_> = p.iter().map(|(_, p)| p.kind()).collect();
    assert_eq!(
        kinds,
        [
            "cycle_count",
            "vmid",
            "trigger",
            "ignore",
            "store_failed",
            "data_suppressed",
            "exception_exit",
            "exception_entry"
        ]
    );
    assert_eq!(p[0], (6, Packet::CycleCount(u32::MAX)));
    assert_eq!(p[1], (12, Packet::Vmid(7)));
}

#[test]
fn data_headers_without_data_trace_are_errors() {
    // ETMCR without data trace: every data header is an error naming it.
    let cfg = Config::new();
    for h in [0x50u8, 0x62, 0x6A, 0x02, 0x20, 0x54] {
        let e = parse_err(cfg, &[h]);
        assert_eq!(e.kind, ErrorKind::DataTraceOff { header: h }, "{h:#04x}");
    }
    // Data addresses only: value-carrying headers are still errors, the
    // others are packets.
    let cfg = Config::new().with_data_address(true);
    assert_eq!(
        parse_err(cfg, &[0x20]).kind,
        ErrorKind::DataTraceOff { header: 0x20 }
    );
    assert_eq!(parse(cfg, &[0x62]), vec![(6, Packet::DataSuppressed)]);
}

#[test]
fn data_packets() {
    let cfg = Config::new().with_data_address(true).with_data_value(true);
    let p = parse(
        cfg,
        &[
            // Normal data, A=1, SS=b11 (4 bytes): address 0x12345678 (5 bytes),
            // value 0xdeadbeef.
            0x2E, 0xF8, 0xAC, 0xD1, 0x91, 0x01, 0xEF, 0xBE, 0xAD, 0xDE,
            // Normal data, A=1, SS=b01: address low byte only, value 0x7F.
            0x26, 0x10, 0x7F,
            // Normal data, A=0, SS=b00: no address, value 0 (no bytes).
            0x02, // Value not traced with address (one byte).
            0x7A, 0x20, // Out-of-order placeholder, tag 2, A=1, then its data (2 bytes).
            0x78, 0x30, 0x48, 0x34, 0x12,
        ],
    );
    let want = [
        "Data first addr=0x12345678 (32 bits) value=0xdeadbeef (4 bytes)",
        "Data first addr=0x12345610 (7 bits) value=0x7f (1 bytes)",
        "Data value=0x0 (0 bytes)",
        "Value not traced first addr=0x12345620 (7 bits)",
        "Out-of-order placeholder tag=2 first addr=0x12345630 (7 bits)",
        "Out-of-order data tag=2 value=0x1234 (2 bytes)",
    ];
    let got: Vec<String> = p.iter().map(|(_, p)| p.to_string()).collect();
    assert_eq!(got, want);
}

#[test]
fn reserved_headers_report_their_offset() {
    for h in [0x10u8, 0x14, 0x30, 0x38, 0x12, 0x52, 0x4A, 0x72] {
        let e = parse_err(Config::new(), &[0x84, h]);
        assert_eq!(e.offset, 7, "header {h:#x}");
        assert_eq!(e.kind, ErrorKind::ReservedHeader { header: h });
    }
    // Timestamp and VMID headers are reserved before ETMv3.5.
    let old = Config::new().with_version(EtmVersion::V3_4);
    for h in [0x42u8, 0x46, 0x3C] {
        assert_eq!(
            parse_err(old, &[h]).kind,
            ErrorKind::ReservedHeader { header: h }
        );
    }
}

// ---- Review against IHI 0014Q and OpenCSD's ETMv3 packet processor ----

/// Thumb I-sync at 0x1000, reason "trace on".
const THUMB_ISYNC: [u8; 6] = [0x08, 0x21, 0x01, 0x10, 0x00, 0x00];

#[test]
fn deprecated_exception_in_fifth_address_byte() {
    // Original encoding, fifth byte b1 C EEE AAA (OpenCSD decodes it as
    // ARM state, Cancel = bit 6, Exception[2:0] = bits [5:3],
    // A[31:29] = bits [2:0]; nothing follows). ARM 0xE0000100:
    // A[7:2] = 0, A[14:8] = 1, then zeros; C=1, code 5 (FIQ), AAA = 0b111.
    let cfg = Config::new();
    let p = parse(
        cfg,
        &[&THUMB_ISYNC[..], &[0x81, 0x81, 0x80, 0x80, 0xEF, 0x84]].concat(),
    );
    let [(_, Packet::ISync(_)), (12, Packet::Branch(b)), (17, Packet::Atoms(_))] = p[..] else {
        panic!("{p:?}")
    };
    assert_eq!((b.address, b.bits, b.isa), (0xE000_0100, 32, Isa::Arm));
    assert_eq!((b.ns, b.hyp), (false, false));
    assert_eq!(
        b.exception,
        Some(ExceptionInfo {
            number: 15, // FIQ in the exception-information-byte numbering
            cancel: true,
            resume: 0
        })
    );
    // Code 0 is reset (number 8), Cancel clear, address 0.
    let b = branch(cfg, &[], &[0x81, 0x80, 0x80, 0x80, 0x80]);
    assert_eq!((b.address, b.isa), (0, Isa::Arm));
    assert_eq!(
        b.exception,
        Some(ExceptionInfo {
            number: 8,
            cancel: false,
            resume: 0
        })
    );
    // Every code: 0 reset, 1 IRQ, 4 Jazelle, 5 FIQ, 6 async abort, 7 debug.
    for (code, number) in [(0u8, 8u16), (1, 14), (4, 5), (5, 15), (6, 4), (7, 1)] {
        let b = branch(cfg, &[], &[0x81, 0x80, 0x80, 0x80, 0x80 | (code << 3)]);
        assert_eq!(b.exception.map(|e| e.number), Some(number), "code {code}");
    }
    // Codes 2 and 3 are reserved.
    for code in [2u8, 3] {
        let e = parse_err(cfg, &[0x81, 0x80, 0x80, 0x80, 0x80 | (code << 3)]);
        assert!(matches!(
            e.kind,
            ErrorKind::InvalidField { header: 0x81, .. }
        ));
    }
    // The deprecated form belongs to the original encoding only.
    let alt = Config::new().with_alt_branch(true);
    let e = parse_err(alt, &[0x81, 0x80, 0x80, 0x80, 0xEF]);
    assert!(matches!(
        e.kind,
        ErrorKind::InvalidField { header: 0x81, .. }
    ));
}

#[test]
fn deprecated_exception_reencodes_with_information_bytes() {
    // The encoder writes the same branch as a five-byte ARM address with
    // X set (b0100_1111) and exception byte 0 = C0 Alt0 Cancel1 Exc=15 NS0.
    let cfg = Config::new();
    let p = parse(
        cfg,
        &[&THUMB_ISYNC[..], &[0x81, 0x81, 0x80, 0x80, 0xEF]].concat(),
    );
    let mut enc = Encoder::new(cfg);
    let mut buf = [0u8; 32];
    enc.encode(&Packet::ASync, &mut buf).unwrap();
    enc.encode(&p[0].1, &mut buf).unwrap();
    let n = enc.encode(&p[1].1, &mut buf).unwrap();
    assert_eq!(&buf[..n], [0x81, 0x81, 0x80, 0x80, 0x4F, 0x3E]);
    let again = parse(cfg, &[&THUMB_ISYNC[..], &buf[..n]].concat());
    assert_eq!(again[1].1, p[1].1);
}

#[test]
fn alternative_encoding_five_byte_address_with_exception_bytes() {
    // ETMv3.4 alternative encoding: bytes 1-3 of a five-byte address keep
    // seven address bits; the fifth byte is as in the original encoding.
    // ARM 0x456789A8, X=1; byte 0 = C1 Alt0 Cancel0 Exc=14 (IRQ) NS1;
    // byte 1 = C0 0 Hyp1 Exc[8:4]=0.
    let cfg = Config::new().with_alt_branch(true);
    let b = branch(
        cfg,
        &THUMB_ISYNC,
        &[0xD5, 0x89, 0xCF, 0x95, 0x4A, 0x9D, 0x20],
    );
    assert_eq!((b.address, b.bits, b.isa), (0x4567_89A8, 32, Isa::Arm));
    assert_eq!((b.ns, b.hyp), (true, true));
    assert_eq!(
        b.exception,
        Some(ExceptionInfo {
            number: 14,
            cancel: false,
            resume: 0
        })
    );
}

#[test]
fn alternative_encoding_one_byte_address_has_no_exception_flag() {
    // Bit 6 of a lone first byte is address bit A[6] (Thumb): 0x41 carries
    // A[6:1] = 0b100000 and the next byte is a new header.
    let cfg = Config::new().with_alt_branch(true);
    let p = parse(cfg, &[&THUMB_ISYNC[..], &[0x41, 0x84]].concat());
    let [_, (12, Packet::Branch(b)), (13, Packet::Atoms(_))] = p[..] else {
        panic!("{p:?}")
    };
    assert_eq!((b.address, b.bits, b.exception), (0x1040, 7, None));
}

#[test]
fn hyp_bit_changes_only_with_exception_byte_1() {
    // I-sync with Hyp=1 (information byte bit 1), Thumb 0x1000.
    let cfg = Config::new().with_alt_branch(true);
    let isync = [0x08, 0x23, 0x01, 0x10, 0x00, 0x00];
    // Exception byte 0 alone (NS=0, no exception): Hyp stays set.
    let b = branch(cfg, &isync, &[0x83, 0x61, 0x00]);
    assert_eq!(
        (b.address, b.hyp, b.ns, b.exception),
        (0x1082, true, false, None)
    );
    // Byte 0 with C=1, then byte 1 with Hyp=0: Hyp clears.
    let b = branch(cfg, &isync, &[0x83, 0x61, 0x80, 0x00]);
    assert_eq!((b.hyp, b.exception), (false, None));
}

#[test]
fn lsip_address_has_no_exception_bytes() {
    // LSiP I-sync (information byte bit 7), ARM 0x1000; alternative
    // encoding LSiP address 0x83 0x10 = A[7:2]=1, A[13:8]=0x10: 0x1004.
    let cfg = Config::new().with_alt_branch(true);
    let s = isync(cfg, &[0x08, 0xA1, 0x00, 0x10, 0x00, 0x00, 0x83, 0x10]);
    assert_eq!(
        s.lsip(),
        Some(LsipAddress {
            address: 0x1004,
            bits: 14
        })
    );
    // The same with the E flag and an exception byte: 15 payload bytes
    // would exceed table 7.1's I-sync maximum of 14.
    let e = parse_err(cfg, &[0x08, 0xA1, 0x00, 0x10, 0x00, 0x00, 0x83, 0x50, 0x01]);
    assert_eq!(e.offset, 6);
    assert!(matches!(
        e.kind,
        ErrorKind::InvalidField { header: 0x08, .. }
    ));
}

#[test]
fn timestamp_64_bit_ninth_byte_has_eight_bits() {
    // 64-bit timestamps: eight bytes of seven bits then one of eight
    // (OpenCSD's extractTimestamp; ETMCCER[29] = 1, ten-byte packet).
    let cfg = Config::new();
    let mut bytes = vec![0x42];
    bytes.extend_from_slice(&[0xFF; 9]);
    let p = parse(cfg, &bytes);
    let [(_, Packet::Timestamp(t))] = p[..] else {
        panic!("{p:?}")
    };
    assert_eq!((t.value, t.bits), (u64::MAX, 64));
}

#[test]
fn data_value_sizes_and_presence() {
    // SS = b00: value 0 with no value byte (OpenCSD sets value 0 and ends
    // the packet at the header); out-of-order data tag 1, then a P-header.
    let cfg = Config::new().with_data_address(true).with_data_value(true);
    let p = parse(cfg, &[0x20, 0x84]);
    let [(_, Packet::OutOfOrderData(d)), (7, Packet::Atoms(_))] = p[..] else {
        panic!("{p:?}")
    };
    assert_eq!((d.tag, d.value, d.size), (1, 0, 0));
    // SS = b10: two value bytes after the address.
    let p = parse(cfg, &[0x2A, 0x10, 0x34, 0x12]);
    let [(_, Packet::NormalData(d))] = p[..] else {
        panic!("{p:?}")
    };
    assert_eq!((d.address, d.value, d.size), (Some(0x10), Some(0x1234), 2));
    // Data value tracing off: no value bytes, whatever SS says.
    let cfg = Config::new().with_data_address(true);
    let p = parse(cfg, &[0x2E, 0x10, 0x84]);
    let [(_, Packet::NormalData(d)), (8, Packet::Atoms(_))] = p[..] else {
        panic!("{p:?}")
    };
    assert_eq!((d.address, d.value, d.size), (Some(0x10), None, 4));
}

#[test]
fn context_id_packet_without_context_id_tracing() {
    // "If Context ID tracing is disabled ... Context ID packets are never
    // generated" (IHI 0014Q 7.3.6): 0x6E is invalid then.
    let e = parse_err(Config::new(), &[0x6E, 0x00]);
    assert_eq!(e.offset, 6);
    assert!(matches!(
        e.kind,
        ErrorKind::InvalidField { header: 0x6E, .. }
    ));
}
