//! Packet-for-packet comparison with OpenCSD's listing of the real TC2
//! capture (Cortex-A7 ETMv3.5, trace IDs 0x10, 0x11, 0x12).
//!
//! The capture is a CoreSight-formatted ETB buffer; a small test-local
//! deformatter splits it per trace ID. Offsets are numbered the way
//! OpenCSD's `Idx` numbers them: each frame's per-ID data block counts from
//! the frame start (first block) or from the position of the ID-change
//! byte (later blocks), and the data bytes of a block take consecutive
//! numbers. The product's own deformatter reports true file offsets.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use test_support::opencsd_dir;
use test_support::opencsd_frames::deformat;

use etm_packets::{Config, ErrorKind, Isa, Packet, Parser, Reason};

/// A packet as the listing describes it.
#[derive(Debug, Clone, PartialEq)]
enum Exp {
    ASync,
    Timestamp(u64),
    Atoms(String, u32),
    ISync {
        cycles: Option<u32>,
        reason: Reason,
        addr: u32,
        ns: bool,
        isa: Isa,
    },
    Branch {
        addr: u32,
        low: u32,
        isa: Option<Isa>,
    },
    ExceptionExit,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(
        s.trim().trim_start_matches("0x").trim_start_matches("0X"),
        16,
    )
    .unwrap()
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let i = line.find(key)? + key.len();
    let rest = &line[i..];
    let end = rest.find([';', ' ']).unwrap_or(rest.len());
    Some(&rest[..end])
}

fn isa_name(s: &str) -> Isa {
    match s {
        "ARM" => Isa::Arm,
        "Thumb2" => Isa::Thumb,
        "ThumbEE" | "TEE" => Isa::ThumbEE,
        "Jazelle" => Isa::Jazelle,
        other => panic!("unknown ISA {other}"),
    }
}

fn parse_listing(text: &str, id: u8) -> Vec<(u64, Exp)> {
    let tag = format!("ID:{id:x};");
    let mut v = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("Idx:") else {
            continue;
        };
        if !line.contains(&tag) || line.contains("NOTSYNC") {
            continue;
        }
        let idx: u64 = rest[..rest.find(';').unwrap()].parse().unwrap();
        let body = &line[line.find('\t').unwrap() + 1..];
        let kind = body.split(" : ").next().unwrap();
        let e = match kind {
            "A_SYNC" => Exp::ASync,
            "TIMESTAMP" => Exp::Timestamp(hex(field(body, "TS=").unwrap())),
            "P_HDR" => {
                let atoms = body.split("; ").nth(1).unwrap().to_string();
                let cycles = field(body, "Cycles=").map_or(0, |c| c.parse().unwrap());
                Exp::Atoms(atoms, cycles)
            }
            "I_SYNC" | "I_SYNC_CYCLE" => {
                let reason = if body.contains("(Periodic)") {
                    Reason::Periodic
                } else if body.contains("(Trace Enable)") {
                    Reason::TraceOn
                } else if body.contains("(Trace Restart") || body.contains("Overflow") {
                    Reason::Overflow
                } else if body.contains("Debug") {
                    Reason::DebugExit
                } else {
                    panic!("unknown reason in {body}")
                };
                Exp::ISync {
                    cycles: field(body, "Cycles=").map(|c| c.parse().unwrap()),
                    reason,
                    addr: hex(field(body, "Addr=").unwrap()) as u32,
                    ns: body.contains("; N;"),
                    isa: isa_name(field(body, "ISA=").unwrap()),
                }
            }
            "BRANCH_ADDRESS" => Exp::Branch {
                addr: hex(field(body, "Addr=").unwrap()) as u32,
                low: hex(field(body, "~[").unwrap().trim_end_matches(']')) as u32,
                isa: field(body, "ISA=").map(|s| isa_name(&s[..s.find('(').unwrap_or(s.len())])),
            },
            "EXCEPTION_EXIT" => Exp::ExceptionExit,
            other => panic!("listing packet type {other} not handled by this test: {line}"),
        };
        v.push((idx, e));
    }
    v
}

/// Compares one of our packets with a listing entry, value by value.
fn agrees(p: &Packet, e: &Exp) -> bool {
    match (p, e) {
        (Packet::ASync, Exp::ASync) | (Packet::ExceptionExit, Exp::ExceptionExit) => true,
        (Packet::Timestamp(t), Exp::Timestamp(v)) => t.value == *v,
        (Packet::Atoms(a), Exp::Atoms(s, c)) => {
            let ours: String = a.iter().map(|x| x.to_string()).collect();
            ours == *s && u32::from(a.cycles) == *c
        }
        (
            Packet::ISync(s),
            Exp::ISync {
                cycles,
                reason,
                addr,
                ns,
                isa,
            },
        ) => {
            s.cycle_count() == *cycles
                && s.reason() == *reason
                && s.address() == *addr
                && s.ns() == *ns
                && s.isa() == *isa
        }
        (Packet::Branch(b), Exp::Branch { addr, low, isa }) => {
            let m = if b.bits >= 32 {
                u32::MAX
            } else {
                (1u32 << b.bits) - 1
            };
            b.address == *addr && b.address & m == *low && isa.is_none_or(|i| i == b.isa)
        }
        _ => false,
    }
}

fn check_id(dir: &std::path::Path, streams: &BTreeMap<u8, Vec<(u64, u8)>>, id: u8, count: usize) {
    let listing = std::fs::read_to_string(dir.join("expected/TC2.ppl")).unwrap();
    let expected = parse_listing(&listing, id);
    assert_eq!(expected.len(), count, "listing packet count for ID {id:#x}");

    let cfg = Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250).unwrap();
    let mut parser = Parser::new(cfg);
    let bytes = &streams[&id];
    let mut got = Vec::new();
    let mut errors = Vec::new();
    // Feed each run of consecutive indices as one chunk.
    let mut i = 0;
    while i < bytes.len() {
        let start = bytes[i].0;
        let mut j = i;
        let mut run = Vec::new();
        while j < bytes.len() && bytes[j].0 == start + (j - i) as u64 {
            run.push(bytes[j].1);
            j += 1;
        }
        for item in parser.feed_at(start, &run) {
            match item {
                Ok(p) => got.push(p),
                Err(e) => errors.push(e),
            }
        }
        i = j;
    }
    errors.extend(parser.finish());
    for e in &errors {
        eprintln!("ID {id:#x}: {e}");
    }

    // The only errors: bytes before the first A-sync (and possibly an
    // incomplete packet where the buffer wrapped at its end).
    for e in &errors {
        assert!(
            matches!(
                e.kind,
                ErrorKind::Unsynchronized { .. } | ErrorKind::Truncated { .. }
            ),
            "ID {id:#x}: unexpected error {e}"
        );
    }

    let mut mismatches = 0;
    for (k, (want, have)) in expected.iter().zip(&got).enumerate() {
        if want.0 != have.0 || !agrees(&have.1, &want.1) {
            mismatches += 1;
            if mismatches <= 10 {
                eprintln!(
                    "ID {id:#x} #{k}: listing {want:?}, parser ({}, {})",
                    have.0, have.1
                );
            }
        }
    }
    let agreeing = expected.len().min(got.len()) - mismatches;
    eprintln!(
        "ID {id:#x}: {agreeing}/{} listing packets agree (parser returned {})",
        expected.len(),
        got.len()
    );
    assert_eq!(mismatches, 0, "ID {id:#x}: packets differ from the listing");
    assert_eq!(
        got.len(),
        expected.len(),
        "ID {id:#x}: packet counts differ"
    );
}

fn run(id: u8, count: usize) {
    let Some(dir) = opencsd_dir() else { return };
    let data = std::fs::read(dir.join("TC2/cstrace.bin")).unwrap();
    let streams = deformat(&data);
    check_id(&dir, &streams, id, count);
}

#[test]
fn tc2_id_0x10_matches_opencsd() {
    run(0x10, 8707);
}

#[test]
fn tc2_id_0x11_matches_opencsd() {
    run(0x11, 8517);
}

#[test]
fn tc2_id_0x12_matches_opencsd() {
    run(0x12, 2266);
}
