//! Worked examples: the trace sequences of PFT §5.2.3 (back-to-back
//! exceptions) and short packet sequences modelled on real Cortex-A15 PTM
//! captures, decoded by hand from the packet formats.

#![allow(clippy::unwrap_used)]

use ptm_packets::{
    Atom, Atoms, BranchAddress, Config, Encoder, ErrorKind, ExceptionInfo, ISync, ISyncReason, Isa,
    Packet, Parser, Timestamp, WaypointUpdate,
};

const IRQ: u16 = 14;
const FIQ: u16 = 15;

fn parse(cfg: Config, bytes: &[u8]) -> Vec<(u64, Packet)> {
    let mut parser = Parser::new(cfg);
    let out = parser
        .feed(bytes)
        .collect::<Result<Vec<_>, _>>()
        .expect("valid trace");
    assert_eq!(parser.finish(), None);
    out
}

/// Encodes `packets` (after an A-sync) and checks the parser returns them.
fn round_trip(cfg: Config, packets: &[Packet]) -> Vec<u8> {
    let mut enc = Encoder::new(cfg);
    let mut bytes = Vec::new();
    let mut expected = Vec::new();
    for p in std::iter::once(&Packet::ASync).chain(packets) {
        expected.push((bytes.len() as u64, *p));
        enc.encode_extend(p, &mut bytes).expect("encodable");
    }
    assert_eq!(parse(cfg, &bytes), expected);
    bytes
}

fn isync(address: u32, isa: Isa, reason: ISyncReason) -> Packet {
    Packet::ISync(ISync {
        address,
        isa,
        reason,
        ..ISync::default()
    })
}

fn exception(number: u16) -> Option<ExceptionInfo> {
    Some(ExceptionInfo {
        number,
        ..ExceptionInfo::default()
    })
}

/// Table 5.3: an FIQ interrupts an IRQ before the IRQ vector executes. The
/// MOV at 0x1000 becomes a waypoint (waypoint update 0x1000), then two
/// exception branch address packets follow each other: IRQ to 0x18, FIQ to
/// 0x1C. The FIQ handler is reached by a normal branch (0x2000), returns to
/// the IRQ vector (0x18), the IRQ handler (0x3000) returns to 0x1004.
#[test]
fn back_to_back_exceptions_table_5_3() {
    let cfg = Config::default();
    let enc = Encoder::new(cfg);
    let mut seq = vec![isync(0x0f00, Isa::Arm, ISyncReason::TraceOn)];
    let mut enc2 = enc.clone();
    let mut sink = Vec::new();
    enc2.encode_extend(&seq[0], &mut sink).unwrap();
    let steps: [(u32, Option<u16>); 6] = [
        (0x18, Some(IRQ)),
        (0x1c, Some(FIQ)),
        (0x2000, None),
        (0x18, None),
        (0x3000, None),
        (0x1004, None),
    ];
    let wp = enc2.waypoint_update(0x1000, Isa::Arm);
    seq.push(wp);
    enc2.encode_extend(&wp, &mut sink).unwrap();
    for (addr, exc) in steps {
        let p = enc2.branch(addr, Isa::Arm, exc.and_then(exception), None);
        enc2.encode_extend(&p, &mut sink).unwrap();
        seq.push(p);
    }
    let bytes = round_trip(cfg, &seq);
    // The waypoint update does not move the compression base (PFT B.3.2):
    // the IRQ branch is compressed against the I-sync address 0x0f00.
    assert_eq!(
        seq[1],
        Packet::WaypointUpdate(WaypointUpdate {
            address: 0x1000,
            bits: 14,
            isa: Isa::Arm,
            alt_isa: None,
        })
    );
    let Packet::BranchAddress(irq) = seq[2] else {
        panic!()
    };
    assert_eq!((irq.address, irq.bits), (0x18, 14));
    assert_eq!(irq.exception.map(|e| e.number), Some(IRQ));
    let Packet::BranchAddress(fiq) = seq[3] else {
        panic!()
    };
    // Back to back: exception branch directly after exception branch.
    assert_eq!(
        (fiq.address, fiq.exception.map(|e| e.number)),
        (0x1c, Some(FIQ))
    );
    // A-sync 6, I-sync 6, waypoint 1+2, IRQ 2+1, FIQ 2+1, 0x2000 2,
    // 0x18 2, 0x3000 2, 0x1004 2.
    assert_eq!(bytes.len(), 6 + 6 + 3 + 3 + 3 + 2 + 2 + 2 + 2);
}

/// Table 5.4: the FIQ arrives after the branch at the IRQ vector executed;
/// a normal branch (0x3000) separates the two exception packets.
#[test]
fn fiq_after_branch_at_irq_vector_table_5_4() {
    let cfg = Config::default().with_cycle_accurate(true);
    let mut enc = Encoder::new(cfg);
    let mut sink = Vec::new();
    let mut seq = Vec::new();
    let mut push = |enc: &mut Encoder, p: Packet| {
        enc.encode_extend(&p, &mut sink).unwrap();
        seq.push(p);
    };
    push(&mut enc, {
        let mut s = ISync {
            address: 0x0f00,
            reason: ISyncReason::TraceOn,
            cycles: Some(3),
            ..ISync::default()
        };
        s.isa = Isa::Arm;
        Packet::ISync(s)
    });
    let p = enc.waypoint_update(0x1000, Isa::Arm);
    push(&mut enc, p);
    for (addr, exc, cyc) in [
        (0x18, Some(IRQ), 5),
        (0x3000, None, 1),
        (0x1c, Some(FIQ), 2),
        (0x2000, None, 1),
        (0x3000, None, 100),
        (0x1004, None, 7),
    ] {
        let p = enc.branch(addr, Isa::Arm, exc.and_then(exception), Some(cyc));
        push(&mut enc, p);
    }
    round_trip(cfg, &seq);
    assert!(matches!(
        seq[3],
        Packet::BranchAddress(BranchAddress {
            address: 0x3000,
            exception: None,
            cycles: Some(1),
            ..
        })
    ));
}

/// Table 5.5: a 16-bit Thumb NOP at the IRQ vector executes before the FIQ:
/// it is upgraded to a waypoint (waypoint update 0x18), and the FIQ handler
/// returns to 0x1A. Here the vectors are Thumb, so the first exception
/// branch needs a full address (the address format changes).
#[test]
fn fiq_after_nop_at_irq_vector_table_5_5() {
    let cfg = Config::default();
    let mut enc = Encoder::new(cfg);
    let mut sink = Vec::new();
    let mut seq = Vec::new();
    let mut push = |enc: &mut Encoder, p: Packet| {
        enc.encode_extend(&p, &mut sink).unwrap();
        seq.push(p);
    };
    push(&mut enc, isync(0x0f00, Isa::Arm, ISyncReason::TraceOn));
    let p = enc.waypoint_update(0x1000, Isa::Arm);
    push(&mut enc, p);
    let p = enc.branch(0x18, Isa::Thumb, exception(IRQ), None);
    push(&mut enc, p);
    let p = enc.waypoint_update(0x18, Isa::Thumb);
    push(&mut enc, p);
    for (addr, exc) in [
        (0x1c, Some(FIQ)),
        (0x2000, None),
        (0x1a, None),
        (0x1004, None),
    ] {
        let p = enc.branch(addr, Isa::Thumb, exc.and_then(exception), None);
        push(&mut enc, p);
    }
    round_trip(cfg, &seq);
    let Packet::BranchAddress(irq) = seq[2] else {
        panic!()
    };
    assert_eq!((irq.bits, irq.isa), (32, Isa::Thumb));
    let Packet::WaypointUpdate(wp) = seq[3] else {
        panic!()
    };
    assert_eq!((wp.address, wp.bits, wp.isa), (0x18, 7, Isa::Thumb));
}

/// "Turning trace on between two back-to-back exceptions": an I-sync with
/// the IRQ vector address, then directly the FIQ exception branch packet,
/// no waypoint update.
#[test]
fn trace_on_between_back_to_back_exceptions() {
    let cfg = Config::default();
    let enc = {
        let mut e = Encoder::new(cfg);
        e.encode(&isync(0x18, Isa::Arm, ISyncReason::TraceOn), &mut [0; 16])
            .unwrap();
        e
    };
    let fiq = enc.branch(0x1c, Isa::Arm, exception(FIQ), None);
    let bytes = round_trip(cfg, &[isync(0x18, Isa::Arm, ISyncReason::TraceOn), fiq]);
    // 0x1c differs from 0x18 in bit 2 only, but exception information
    // needs a second address byte: header (C=1), byte 2 (E flag), exception.
    assert_eq!(&bytes[12..], &[0x80 | (0x1c >> 1) | 1, 0x40, FIQ as u8 * 2]);
}

const RSTK: fn() -> Config = || Config::from_regs(0x2000_0400, 0x34C0_1AC2, 0x411C_F312).unwrap();
const TC2: fn() -> Config = || Config::from_regs(0x1000_1000, 0x34C0_1AC2, 0x411C_F312).unwrap();
const ASYNC: [u8; 6] = [0, 0, 0, 0, 0, 0x80];

fn with_async(bytes: &[u8]) -> Vec<u8> {
    ASYNC.iter().chain(bytes).copied().collect()
}

/// The first packets of tc2-ptm-rstk-t32/PTM_0_2.bin.
#[test]
fn real_bytes_non_cycle_accurate() {
    let bytes = with_async(&[
        0x08, 0x54, 0x05, 0x00, 0x80, 0x61, // I-sync
        0x84, // atom E
        0x81, 0x80, 0x80, 0x80, 0x48, 0x02, // branch to 0, ARM, debug halt
        0x08, 0xa0, 0x1b, 0x00, 0x80, 0x61, // I-sync
        0xad, 0x05, // branch 0x80000558
        0xc8, 0xf0, 0xbc, // atoms
        0xfd, 0x9e, 0x80, 0x80, 0x18, // branch 0x80000f7c Thumb
        0x94, // atoms E N E
    ]);
    let got = parse(RSTK(), &bytes);
    let atoms = |s: &str| {
        let mut bits = 0;
        for (i, c) in s.chars().enumerate() {
            if c == 'E' {
                bits |= 1 << i;
            }
        }
        Packet::Atom {
            atoms: Atoms::new(s.len() as u8, bits).unwrap(),
            cycles: None,
        }
    };
    let debug_exit = |address| {
        Packet::ISync(ISync {
            address,
            isa: Isa::Arm,
            reason: ISyncReason::DebugExit,
            ..ISync::default()
        })
    };
    let expected = vec![
        (0, Packet::ASync),
        (6, debug_exit(0x8000_0554)),
        (12, atoms("E")),
        (
            13,
            Packet::BranchAddress(BranchAddress {
                address: 0,
                bits: 32,
                isa: Isa::Arm,
                exception: exception(1),
                cycles: None,
            }),
        ),
        (19, debug_exit(0x8000_1ba0)),
        (
            25,
            Packet::BranchAddress(BranchAddress {
                address: 0x8000_0558,
                bits: 14,
                isa: Isa::Arm,
                exception: None,
                cycles: None,
            }),
        ),
        (27, atoms("EENEE")),
        (28, atoms("NNEEE")),
        (29, atoms("NNNE")),
        (
            30,
            Packet::BranchAddress(BranchAddress {
                address: 0x8000_0f7c,
                bits: 32,
                isa: Isa::Thumb,
                exception: None,
                cycles: None,
            }),
        ),
        (35, atoms("ENE")),
    ];
    assert_eq!(got, expected);
    assert_eq!(
        expected[3].1.to_string(),
        "branch addr=0x00000000 bits=32 isa=arm exception=debug-halt(1) ns=0"
    );
    assert_eq!(expected[7].1.to_string(), "atom N N E E E");
    // The encoder reproduces the hardware's bytes exactly.
    let mut enc = Encoder::new(RSTK());
    let mut again = Vec::new();
    for (_, p) in &expected {
        enc.encode_extend(p, &mut again).unwrap();
    }
    assert_eq!(again, bytes);
}

/// Bytes of TC2 trace ID 0x13 (cycle-accurate, 64-bit timestamps).
#[test]
fn real_bytes_cycle_accurate() {
    let bytes = with_async(&[
        0x08, 0x83, 0x8d, 0x01, 0xc0, 0x01, // periodic I-sync: no cycle count
        0x42, 0xcc, 0x97, 0xc6, 0xce, 0xaf, 0x90, 0x80, 0x80, 0x00, 0x00, // timestamp
        0xe8, 0x20, // atom E, 522 cycles
        0xde, 0x01, // atom N, 23 cycles
        0xbc, // atom E, 15 cycles
        0x08, 0xdf, 0x8d, 0x01, 0xc0, 0x21, 0xcc, 0x03, // I-sync, trace on, 51 cycles
        0xa3, 0x0b, 0x68, 0x17, // branch ~[0x5a2], 378 cycles
    ]);
    let got = parse(TC2(), &bytes);
    let atom = |a, c| Packet::Atom {
        atoms: Atoms::single(a),
        cycles: Some(c),
    };
    assert_eq!(
        got,
        vec![
            (0, Packet::ASync),
            (
                6,
                Packet::ISync(ISync {
                    address: 0xc001_8d82,
                    isa: Isa::Thumb,
                    reason: ISyncReason::Periodic,
                    ..ISync::default()
                })
            ),
            (
                12,
                Packet::Timestamp(Timestamp {
                    value: 0x82_F9D1_8BCC,
                    bits: 64,
                    clock_changed: false,
                    cycles: Some(0),
                })
            ),
            (23, atom(Atom::E, 522)),
            (25, atom(Atom::N, 23)),
            (27, atom(Atom::E, 15)),
            (
                28,
                Packet::ISync(ISync {
                    address: 0xc001_8dde,
                    isa: Isa::Thumb,
                    reason: ISyncReason::TraceOn,
                    cycles: Some(51),
                    ..ISync::default()
                })
            ),
            (
                36,
                Packet::BranchAddress(BranchAddress {
                    address: 0xc001_85a2,
                    bits: 13,
                    isa: Isa::Thumb,
                    exception: None,
                    cycles: Some(378),
                })
            ),
        ]
    );
    let mut enc = Encoder::new(TC2());
    let mut again = Vec::new();
    for (_, p) in &got {
        enc.encode_extend(p, &mut again).unwrap();
    }
    assert_eq!(again, bytes);
}

/// Gray-coded timestamps (PFT v1.0, or ETMCCER bit 28 clear): the packet
/// carries the low bits of the Gray code; the value is natural binary.
#[test]
fn gray_coded_timestamps() {
    let cfg = Config::default().with_timestamp_binary(false);
    // 5 is Gray 0b111; then 6 is Gray 0b101.
    let got = parse(cfg, &with_async(&[0x42, 0x07, 0x46, 0x05]));
    let ts = |value, clock_changed| {
        Packet::Timestamp(Timestamp {
            value,
            bits: 7,
            clock_changed,
            cycles: None,
        })
    };
    assert_eq!(
        got,
        vec![(0, Packet::ASync), (6, ts(5, false)), (8, ts(6, true))]
    );
    let enc = Encoder::new(cfg);
    assert_eq!(enc.timestamp(5, false, None), ts(5, false));
}

/// Context ID, VMID, trigger, ignore, exception return, waypoint update with
/// its information byte, and ThumbEE via the AltISA bits.
#[test]
fn remaining_packet_types() {
    let cfg = Config::default()
        .with_context_id_size(ptm_packets::ContextIdSize::Two)
        .with_vmid(true);
    let got = parse(
        cfg,
        &with_async(&[
            0x6e, 0x34, 0x12, // context ID 0x1234
            0x3c, 0x07, // VMID 7
            0x0c, 0x66, 0x76, // trigger, ignore, exception return
            0x08, 0x01, 0x10, 0x00, 0x00, 0x05, 0xcd, 0xab, // I-sync ThumbEE, ctx 0xabcd
            0x72, 0x81, 0x80, 0x80, 0x80, 0x52,
            0x00, // waypoint 0x20000000, Thumb via info byte
        ]),
    );
    assert_eq!(got[1], (6, Packet::ContextId(0x1234)));
    assert_eq!(got[2], (9, Packet::Vmid(7)));
    assert_eq!(got[3].1, Packet::Trigger);
    assert_eq!(got[4].1, Packet::Ignore);
    assert_eq!(got[5].1, Packet::ExceptionReturn);
    assert_eq!(
        got[6].1,
        Packet::ISync(ISync {
            address: 0x1000,
            isa: Isa::ThumbEE,
            reason: ISyncReason::Periodic,
            ns: false,
            hyp: false,
            context_id: Some(0xabcd),
            cycles: None,
        })
    );
    assert_eq!(
        got[7],
        (
            22,
            Packet::WaypointUpdate(WaypointUpdate {
                address: 0x2000_0000,
                bits: 32,
                isa: Isa::Thumb,
                alt_isa: Some(false),
            })
        )
    );
    assert_eq!(got.len(), 8);
}

#[test]
fn reserved_atom_headers() {
    let mut parser = Parser::new(Config::default());
    let items: Vec<_> = parser.feed(&with_async(&[0x80, 0x82])).collect();
    assert_eq!(items.len(), 2);
    let err = items[1].unwrap_err();
    assert_eq!(
        (err.offset, err.kind),
        (6, ErrorKind::ReservedHeader { header: 0x80 })
    );
    // In cycle-accurate mode 0x80 is an E atom with cycle count 0.
    let got = parse(
        Config::default().with_cycle_accurate(true),
        &with_async(&[0x80]),
    );
    assert_eq!(
        got[1].1,
        Packet::Atom {
            atoms: Atoms::single(Atom::E),
            cycles: Some(0)
        }
    );
}
