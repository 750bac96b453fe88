//! Conformance against OpenCSD v1.8.0 packet listings of real PTM captures
//! (`../shared/testdata/opencsd`): every packet compared by value — type,
//! addresses, bits given, ISA, security state, exception numbers, atoms,
//! cycle counts, timestamps.
//!
//! The tests skip (with a message) when the test data is absent, and fail
//! then when the `CI` environment variable is set.

#![allow(clippy::unwrap_used)]

use ptm_packets::{Atom, Config, ErrorKind, ISyncReason, Isa, Packet, Parser};

/// One packet line of an OpenCSD listing.
#[derive(Debug)]
struct Line {
    idx: u64,
    kind: String,
    fields: Vec<String>,
    text: String,
}

/// Packet lines of trace ID `id` (hex as printed), NOTSYNC excluded.
fn listing(text: &str, id: &str) -> Vec<Line> {
    let tag = format!("ID:{id};");
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Idx:")?;
            let (idx, rest) = rest.split_once(';')?;
            let rest = rest.trim_start().strip_prefix(tag.as_str())?;
            let (kind, rest) = rest.trim().split_once(" : ")?;
            if kind == "NOTSYNC" {
                return None;
            }
            // "description; field; field; ..."
            let fields = rest
                .split(';')
                .skip(1)
                .map(|f| f.trim().to_string())
                .filter(|f| !f.is_empty())
                .collect();
            Some(Line {
                idx: idx.parse().ok()?,
                kind: kind.to_string(),
                fields,
                text: l.to_string(),
            })
        })
        .collect()
}

fn hex(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u64::from_str_radix(s, 16).map_err(|e| format!("bad hex {s:?}: {e}"))
}

/// `0xFULL ~[0xGIVEN]...` → (full, given).
fn full_and_given(v: &str) -> Result<(u64, u64), String> {
    let (full, rest) = v.split_once(" ~[").ok_or(format!("no ~[ in {v:?}"))?;
    let (given, _) = rest.split_once(']').ok_or(format!("no ] in {v:?}"))?;
    Ok((hex(full)?, hex(given)?))
}

fn isa_of(name: &str) -> Result<Isa, String> {
    match name {
        "ARM(32)" => Ok(Isa::Arm),
        "Thumb2" => Ok(Isa::Thumb),
        "ThumbEE" => Ok(Isa::ThumbEE),
        "Jazelle" => Ok(Isa::Jazelle),
        _ => Err(format!("unknown ISA {name}")),
    }
}

fn mask(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// Compares one listing line with one packet; `isa` is the instruction set
/// before the packet (OpenCSD prints `ISA=` on branches only when it changes).
fn compare(line: &Line, packet: &Packet, isa: Option<Isa>) -> Result<(), String> {
    let mut cycles = None;
    let mut ns = None;
    let mut listed_isa = None;
    let mut exception = None;
    let mut rest = Vec::new();
    for f in &line.fields {
        if let Some(v) = f.strip_prefix("Cycles=") {
            cycles = Some(v.parse::<u32>().map_err(|e| e.to_string())?);
        } else if f == "S" || f == "NS" {
            ns = Some(f == "NS");
        } else if let Some(v) = f.strip_prefix("ISA=") {
            listed_isa = Some(isa_of(v)?);
        } else if let Some(v) = f.strip_prefix("Excep=") {
            let (_, num) = v.rsplit_once('[').ok_or("no exception number")?;
            exception = Some(hex(num.trim_end_matches(']'))? as u16);
        } else {
            rest.push(f.as_str());
        }
    }
    if cycles != packet.cycles() {
        return Err(format!("cycles {:?} vs {:?}", packet.cycles(), cycles));
    }
    match (line.kind.as_str(), packet) {
        ("ASYNC", Packet::ASync) | ("ERET", Packet::ExceptionReturn) => {}
        ("TRIGGER", Packet::Trigger) | ("IGNORE", Packet::Ignore) => {}
        ("ISYNC", Packet::ISync(s)) => {
            let mut addr = None;
            let mut reason = None;
            for f in rest.drain(..) {
                if let Some(v) = f.strip_prefix("Addr=") {
                    addr = Some(hex(v)?);
                } else if let Some(r) = f.strip_prefix('(') {
                    reason = Some(match r.trim_end_matches(')') {
                        "Periodic" => ISyncReason::Periodic,
                        "Trace Enable" => ISyncReason::TraceOn,
                        "Debug Exit" => ISyncReason::DebugExit,
                        o if o.contains("Overflow") => ISyncReason::Overflow,
                        o => return Err(format!("unknown reason {o}")),
                    });
                } else {
                    return Err(format!("unexpected field {f:?}"));
                }
            }
            if addr != Some(u64::from(s.address)) {
                return Err(format!("address {:#x} vs {addr:x?}", s.address));
            }
            if reason != Some(s.reason) {
                return Err(format!("reason {:?} vs {reason:?}", s.reason));
            }
            if ns != Some(s.ns) {
                return Err(format!("ns {} vs {ns:?}", s.ns));
            }
            if listed_isa != Some(s.isa) {
                return Err(format!("isa {:?} vs {listed_isa:?}", s.isa));
            }
        }
        ("ATOM", Packet::Atom { atoms, .. }) => {
            let ours: String = atoms
                .iter()
                .map(|a| if a == Atom::E { 'E' } else { 'N' })
                .collect();
            if std::mem::take(&mut rest) != [ours.as_str()] {
                return Err(format!("atoms {ours}"));
            }
        }
        ("BRANCH_ADDRESS", Packet::BranchAddress(b)) => {
            let addr = rest
                .iter()
                .position(|f| f.starts_with("Addr="))
                .ok_or("no address")?;
            let (full, given) = full_and_given(&rest.remove(addr)["Addr=".len()..])?;
            if full != u64::from(b.address) || given != u64::from(b.address) & mask(b.bits) {
                return Err(format!("address {:#x}/{} bits", b.address, b.bits));
            }
            match listed_isa {
                Some(l) if l != b.isa || isa == Some(l) => {
                    return Err(format!("isa {:?} (before {isa:?}) vs {l:?}", b.isa))
                }
                None if isa != Some(b.isa) => {
                    return Err(format!("isa changed to {:?} but not listed", b.isa))
                }
                _ => {}
            }
            match (b.exception, ns, exception) {
                (None, None, None) => {}
                (Some(e), Some(n), x) if e.ns == n && x.unwrap_or(0) == e.number => {}
                _ => return Err(format!("exception {:?}", b.exception)),
            }
        }
        ("TIMESTAMP", Packet::Timestamp(t)) => {
            let ts = rest.remove(
                rest.iter()
                    .position(|f| f.starts_with("TS="))
                    .ok_or("no TS")?,
            );
            let (full, given) = full_and_given(&ts["TS=".len()..])?;
            if full != t.value || given != t.value & mask(t.bits) {
                return Err(format!("timestamp {:#x}/{} bits", t.value, t.bits));
            }
        }
        (k, p) => return Err(format!("type {k} vs {}", p.kind())),
    }
    if !rest.is_empty() {
        return Err(format!("fields not compared: {rest:?}"));
    }
    if ns.is_some() && !matches!(packet, Packet::ISync(_) | Packet::BranchAddress(_)) {
        return Err("unexpected S/NS".into());
    }
    Ok(())
}

/// Compares our packets with the listing; returns the number that agree.
fn conform(ours: &[(u64, Packet)], expected: &[Line]) -> usize {
    let mut isa = None;
    let mut agree = 0;
    let mut failures = Vec::new();
    for (i, line) in expected.iter().enumerate() {
        let Some((offset, packet)) = ours.get(i) else {
            failures.push(format!("missing packet for {}", line.text));
            break;
        };
        let result = if *offset != line.idx {
            Err(format!("offset {offset}"))
        } else {
            compare(line, packet, isa)
        };
        match result {
            Ok(()) => agree += 1,
            Err(e) => failures.push(format!("{e}: ours {offset} {packet} | {}", line.text)),
        }
        match packet {
            Packet::ISync(s) => isa = Some(s.isa),
            Packet::BranchAddress(b) => isa = Some(b.isa),
            _ => {}
        }
    }
    if ours.len() != expected.len() {
        failures.push(format!(
            "{} packets vs {} listed",
            ours.len(),
            expected.len()
        ));
    }
    for f in failures.iter().take(20) {
        eprintln!("DISAGREE {f}");
    }
    assert!(failures.is_empty(), "{} disagreements", failures.len());
    agree
}

/// Parses `bytes` fed in chunks of `chunk` bytes; returns the packets and
/// the number of unsynchronized stretches, failing on any other error.
fn parse_raw(cfg: Config, bytes: &[u8], chunk: usize) -> (Vec<(u64, Packet)>, usize) {
    let mut parser = Parser::new(cfg);
    let mut packets = Vec::new();
    let mut unsync = 0;
    for c in bytes.chunks(chunk) {
        for item in parser.feed(c) {
            match item {
                Ok(p) => packets.push(p),
                Err(e) if matches!(e.kind, ErrorKind::Unsynchronized { .. }) => unsync += 1,
                Err(e) => panic!("unexpected error {e}"),
            }
        }
    }
    assert_eq!(parser.finish(), None);
    (packets, unsync)
}

#[test]
fn tc2_ptm_rstk_t32_matches_opencsd() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let bytes = std::fs::read(dir.join("tc2-ptm-rstk-t32/PTM_0_2.bin")).expect("capture");
    let text = std::fs::read_to_string(dir.join("expected/tc2-ptm-rstk-t32.ppl")).expect("listing");
    let expected = listing(&text, "0");
    assert_eq!(expected.len(), 20072);
    let cfg = Config::from_regs(0x2000_0400, 0x34C0_1AC2, 0x411C_F312).expect("config");
    let (ours, unsync) = parse_raw(cfg, &bytes, bytes.len());
    assert_eq!(unsync, 0);
    let agree = conform(&ours, &expected);
    eprintln!("tc2-ptm-rstk-t32: {agree}/{} packets agree", expected.len());
    // Chunk boundaries do not change anything.
    for chunk in [1, 2, 7, 64, 4093] {
        assert_eq!(parse_raw(cfg, &bytes, chunk).0, ours, "chunk size {chunk}");
    }
}

#[test]
fn tc2_trace_id_0x13_matches_opencsd() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let buf = std::fs::read(dir.join("TC2/cstrace.bin")).expect("capture");
    let text = std::fs::read_to_string(dir.join("expected/TC2.ppl")).expect("listing");
    let expected = listing(&text, "13");
    assert_eq!(expected.len(), 1789);
    // device_8.ini: ETMCR, ETMCCER, ETMIDR of the PTM with trace ID 0x13.
    let cfg = Config::from_regs(0x1000_1000, 0x34C0_1AC2, 0x411C_F312).expect("config");
    let blocks = test_support::opencsd_frames::runs(&buf, 0x13);
    for split in [usize::MAX, 1, 3] {
        let mut parser = Parser::new(cfg);
        let mut ours = Vec::new();
        for (at, data) in &blocks {
            for (k, piece) in data.chunks(split.min(data.len())).enumerate() {
                let offset = at + (k * split.min(data.len())) as u64;
                for item in parser.feed_at(offset, piece) {
                    match item {
                        Ok(p) => ours.push(p),
                        Err(e) => assert!(
                            matches!(e.kind, ErrorKind::Unsynchronized { .. }),
                            "unexpected error {e}"
                        ),
                    }
                }
            }
        }
        assert_eq!(parser.finish(), None);
        let agree = conform(&ours, &expected);
        if split == usize::MAX {
            eprintln!(
                "TC2 trace ID 0x13: {agree}/{} packets agree",
                expected.len()
            );
        }
    }
}
