//! The ITM packets of a real SWO stream, read through our deformatter and
//! `itm-packets`, against sigrok's `arm_tpiu` and `arm_itm` decoders
//! (Debian's `sigrok-cli`, an independent implementation) reading the same
//! frames.
//!
//! sigrok's `arm_tpiu` finds no frame alignment of its own (it is told an
//! offset, and realigns only at full-frame syncs, which this stream has
//! none of), so it is handed the stretches between our realignments, each
//! starting at its first frame, as one UART signal with an idle gap
//! between them (the gap resets both of its decoders). Where both read the
//! same frames, every PC sample, exception, data trace packet, overflow
//! and stimulus port byte must agree, in order.
//!
//! Differences by design, not compared: sigrok joins printable one-byte
//! stimulus writes of a port into strings that it shows only once another
//! write or a pause ends them (the last ones may never show), it names
//! exceptions rather than numbering them (the names are mapped back here),
//! and it shows headers it does not decode as "Unhandled" (reserved ones,
//! which we report as errors, and sync bytes). The capture's unformatted
//! ITM-only stream is compared the same way, without `arm_tpiu`.

use std::collections::BTreeMap;

use itm_packets::{DataTraceKind, ExceptionAction, Packet};
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};

/// sigrok's name of an ARMv7-M exception number (its `arm_itm` table).
fn sigrok_exception(n: u16) -> String {
    match n {
        0 => "Thread".into(),
        1 => "Reset".into(),
        2 => "NMI".into(),
        3 => "HardFault".into(),
        4 => "MemManage".into(),
        5 => "BusFault".into(),
        6 => "UsageFault".into(),
        11 => "SVCall".into(),
        12 => "Debug Monitor".into(),
        14 => "PendSV".into(),
        15 => "SysTick".into(),
        n => format!("IRQ {}", i32::from(n) - 16),
    }
}

/// What both decoders report, by kind: non-software annotations as sigrok
/// words them, and per stimulus port the text of its printable one-byte
/// writes and its other writes (size, value), each in order.
#[derive(Debug, Default, PartialEq)]
struct Listing {
    lines: Vec<String>,
    text: BTreeMap<u32, Vec<u8>>,
    writes: BTreeMap<u32, Vec<(usize, u32)>>,
    /// sigrok's "Unhandled" annotations.
    unhandled: usize,
}

/// Python's `string.printable`, which sigrok joins into text.
fn printable(b: u8) -> bool {
    b.is_ascii_graphic() || matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

fn ours(packets: &[Packet]) -> Listing {
    let mut l = Listing::default();
    for p in packets {
        let line = match *p {
            Packet::PcSample(s) => match s.pc {
                Some(pc) => format!("PC: {pc:#010x}"),
                None => continue,
            },
            Packet::ExceptionTrace(x) => {
                let verb = match x.action {
                    ExceptionAction::Enter => "Enter",
                    ExceptionAction::Exit => "Exit",
                    ExceptionAction::Return => "Resume",
                };
                format!("{verb}: {}", sigrok_exception(x.number))
            }
            Packet::DataTrace(d) => {
                let c = d.comparator;
                match d.kind {
                    DataTraceKind::Pc(pc) => format!("Watchpoint {c}: PC {pc:#010x}"),
                    DataTraceKind::Address(a) => format!("Watchpoint {c}: address 0x????{a:04x}"),
                    DataTraceKind::Value { value, size, write } => format!(
                        "Watchpoint {c}: {} data {value:#0w$x}",
                        if write { "Write" } else { "Read" },
                        w = 2 + 2 * usize::from(size)
                    ),
                }
            }
            Packet::Overflow => "Overflow".into(),
            Packet::Stimulus(s) => {
                if s.size == 1 && printable(s.value as u8) {
                    l.text.entry(s.port).or_default().push(s.value as u8);
                } else {
                    l.writes
                        .entry(s.port)
                        .or_default()
                        .push((usize::from(s.size), s.value));
                }
                continue;
            }
            _ => continue,
        };
        l.lines.push(line);
    }
    l
}

fn sigroks(text: &str) -> Listing {
    let mut l = Listing::default();
    for line in text.lines() {
        let line = line
            .strip_prefix("arm_itm-1: ")
            .expect("an arm_itm annotation");
        // Headers it does not decode (reserved ones, which we report as
        // errors, and timestamps' and extensions' headers).
        if line.starts_with("Unhandled ") {
            l.unhandled += 1;
            continue;
        }
        // Software: `N: "text"` or `N: 0x..`.
        if let Some((port, rest)) = line.split_once(": ") {
            if let Ok(port) = port.parse::<u32>() {
                if let Some(text) = rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                    l.text
                        .entry(port)
                        .or_default()
                        .extend_from_slice(text.as_bytes());
                } else {
                    let hex = rest.trim_start_matches("0x");
                    let v = u32::from_str_radix(hex, 16).expect("hex value");
                    l.writes.entry(port).or_default().push((hex.len() / 2, v));
                }
                continue;
            }
        }
        l.lines.push(line.to_string());
    }
    l
}

#[test]
fn itm_packets_agree_with_sigrok() {
    let Some(dir) = test_support::real_dir() else {
        return;
    };
    if !test_support::sigrok::present() {
        return;
    }
    let bytes = std::fs::read(dir.join("stm32-itm-etm-swo/etm_itm_tpiu.bin")).expect("capture");

    // Our side: frames, the ITM's bytes (trace ID 1), its packets.
    let mut d = Deformatter::new(FrameMode::Continuous);
    let mut events: Vec<FrameEvent> = d.feed(&bytes).collect();
    events.extend(d.finish());
    let mut parser = itm_packets::Parser::new(itm_packets::Config::new().with_aligned_start(true));
    let mut packets = Vec::new();
    let mut holes = vec![(bytes.len() as u64, 0)];
    for e in &events {
        match *e {
            FrameEvent::Data(run) if run.id == 1 => {
                packets.extend(
                    parser
                        .feed_at(run.offset, run.data())
                        .filter_map(Result::ok)
                        .map(|(_, p)| p),
                );
            }
            FrameEvent::Unsynchronized { offset, len } | FrameEvent::Truncated { offset, len } => {
                holes.push((offset, len));
            }
            _ => {}
        }
    }
    // The stretches of frames between the bytes we skipped.
    holes.sort_unstable();
    let mut stretches = Vec::new();
    let mut at = 0u64;
    for (offset, len) in holes {
        if offset > at {
            stretches.push(&bytes[at as usize..offset as usize]);
        }
        at = offset + len;
    }
    assert!(!stretches.is_empty());

    // sigrok's side.
    let theirs = run_sigrok(&stretches, true);
    let ours = ours(&packets);
    agree(&ours, &theirs);
    assert!(ours.lines.iter().filter(|l| l.starts_with("PC: ")).count() > 8000);
    assert!(ours.lines.iter().any(|l| l.starts_with("Enter: IRQ")));
}

/// sigrok's `arm_itm` annotations of `stretches` sent as a UART signal,
/// through `arm_tpiu` (stream 1) when `tpiu`.
fn run_sigrok(stretches: &[&[u8]], tpiu: bool) -> Listing {
    sigroks(&test_support::sigrok::itm_annotations(stretches, tpiu))
}

/// Every non-software annotation equal, in order; per port the other writes
/// equal and the text sigrok shows a prefix of ours.
fn agree(ours: &Listing, theirs: &Listing) {
    eprintln!(
        "{} annotations, text {:?}, other writes {:?}",
        theirs.lines.len(),
        theirs
            .text
            .iter()
            .map(|(p, t)| (p, t.len()))
            .collect::<Vec<_>>(),
        theirs
            .writes
            .iter()
            .map(|(p, w)| (p, w.len()))
            .collect::<Vec<_>>()
    );
    // The capture's end cuts one packet short: sigrok does not show it,
    // nor do we (it is a truncation error).
    if let Some(at) = (0..ours.lines.len().max(theirs.lines.len()))
        .find(|&i| ours.lines.get(i) != theirs.lines.get(i))
    {
        let window = |l: &[String]| l[at.saturating_sub(3)..(at + 4).min(l.len())].to_vec();
        panic!(
            "annotation {at} differs: ours {:?}, sigrok's {:?}",
            window(&ours.lines),
            window(&theirs.lines)
        );
    }
    assert_eq!(ours.writes, theirs.writes);
    assert_eq!(
        ours.text.keys().collect::<Vec<_>>(),
        theirs.text.keys().collect::<Vec<_>>()
    );
    for (port, text) in &ours.text {
        let seen = &theirs.text[port];
        // sigrok may hold back the last text of a port.
        assert!(text.starts_with(seen), "port {port}");
        assert!(
            text.len() - seen.len() <= 16,
            "port {port}: {} of {}",
            seen.len(),
            text.len()
        );
    }
}

/// The capture's ITM-only stream, unformatted (the TPIU formatter
/// bypassed): its first byte starts a packet, as in a SWO capture from
/// trace start. Our packets and sigrok's `arm_itm` (fed the bytes
/// straight from the UART) agree.
#[test]
fn raw_itm_stream_agrees_with_sigrok() {
    let Some(dir) = test_support::real_dir() else {
        return;
    };
    if !test_support::sigrok::present() {
        return;
    }
    let bytes = std::fs::read(dir.join("stm32-itm-etm-swo/itm_only.bin")).expect("capture");
    let mut parser = itm_packets::Parser::new(itm_packets::Config::new().with_aligned_start(true));
    let packets: Vec<Packet> = parser
        .feed(&bytes)
        .filter_map(Result::ok)
        .map(|(_, p)| p)
        .collect();
    let theirs = run_sigrok(&[&bytes], false);
    let ours = ours(&packets);
    agree(&ours, &theirs);
    assert!(ours.lines.iter().filter(|l| l.starts_with("PC: ")).count() > 4000);
    assert!(ours.lines.iter().any(|l| l.starts_with("Enter: IRQ")));
}
