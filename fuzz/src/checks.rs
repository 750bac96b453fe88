//! Invariant checks shared by the libFuzzer targets (`fuzz_targets/*.rs`)
//! and the stable smoke test
//! (`trace-convert/tests/integration/fuzz_smoke.rs`, which includes this
//! file with `#[path]`). Every function panics when an
//! invariant fails; libFuzzer reports the panic as a crash.

use std::sync::Arc;

/// Reads `N` bytes from the front of `data` (zero-padded when short) and
/// advances `data` past them.
fn take<const N: usize>(data: &mut &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    let n = N.min(data.len());
    out[..n].copy_from_slice(&data[..n]);
    *data = &data[n..];
    out
}

fn take_u32(data: &mut &[u8]) -> u32 {
    u32::from_le_bytes(take::<4>(data))
}

/// Splits the front of `data` into chunk sizes: one count byte (0..=15)
/// then that many size bytes. Returns the sizes; `data` is advanced past
/// them.
fn take_splits(data: &mut &[u8]) -> Vec<usize> {
    let [count] = take::<1>(data);
    let count = usize::from(count % 16).min(data.len());
    let sizes = data[..count].iter().map(|&b| usize::from(b)).collect();
    *data = &data[count..];
    sizes
}

/// Cuts `data` into chunks of the given sizes (cycling through them, the
/// rest as one last chunk once the sizes are used up twice). Sizes may be
/// zero: empty chunks are fed too.
fn chunk<'a>(data: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    for &s in sizes.iter().chain(sizes.iter()) {
        let s = s.min(rest.len());
        out.push(&rest[..s]);
        rest = &rest[s..];
    }
    out.push(rest);
    out
}

/// Checks the offsets of a parser's items: strictly increasing, inside the
/// input.
fn check_offsets(offsets: &[u64], len: usize) {
    for w in offsets.windows(2) {
        assert!(w[0] < w[1], "offsets not strictly increasing: {offsets:?}");
    }
    if let Some(&last) = offsets.last() {
        assert!(
            last < len as u64,
            "offset {last} outside the {len}-byte input"
        );
    }
}

/// ETMv3 configuration from 12 bytes: ETMCR, ETMCCER and ETMIDR with its
/// version fields forced to ETMv3.0..=3.5.
fn etm_config(data: &mut &[u8]) -> etm_packets::Config {
    let cr = take_u32(data);
    let ccer = take_u32(data);
    let idr = take_u32(data);
    let minor = (idr >> 4) % 6;
    let idr = (idr & !0xFF0) | 0x200 | (minor << 4);
    etm_packets::Config::from_regs(cr, ccer, idr).expect("ETMIDR forced to ETMv3")
}

/// PTM configuration from 12 bytes: ETMCR, ETMCCER and ETMIDR with its
/// version fields forced to PFT 1.0 or 1.1.
fn ptm_config(data: &mut &[u8]) -> ptm_packets::Config {
    let cr = take_u32(data);
    let ccer = take_u32(data);
    let idr = take_u32(data);
    let minor = (idr >> 4) & 1;
    let idr = (idr & !0xFF0) | 0x300 | (minor << 4);
    ptm_packets::Config::from_regs(cr, ccer, idr).expect("ETMIDR forced to PTM")
}

/// Generates the parser check for one packet crate (both crates have the
/// same parser interface but no common trait).
macro_rules! parser_check {
    ($name:ident, $krate:ident, $config:ident) => {
        /// Fuzz input layout: the configuration bytes (12 register
        /// bytes; one for ITM), split sizes (a count byte and that many sizes), then the trace.
        /// Checks: no panic; item offsets strictly increase and lie in
        /// the input; the items and statistics do not depend on the
        /// chunking; after `finish`, `bytes_fed == bytes_in_packets +
        /// bytes_skipped`.
        pub fn $name(mut data: &[u8]) {
            let cfg = $config(&mut data);
            let sizes = take_splits(&mut data);
            let run = |chunks: &[&[u8]]| {
                let mut p = $krate::Parser::new(cfg);
                let mut items = Vec::new();
                for c in chunks {
                    items.extend(p.feed(c));
                }
                items.extend(p.finish().map(Err));
                let s = p.stats();
                assert_eq!(s.bytes_fed, data.len() as u64);
                assert_eq!(
                    s.bytes_fed,
                    s.bytes_in_packets + s.bytes_skipped,
                    "byte accounting: {s:?}"
                );
                assert_eq!(s.packets + s.errors, items.len() as u64, "{s:?}");
                (items, s)
            };
            let (whole, whole_stats) = run(&[data]);
            let offsets: Vec<u64> = whole
                .iter()
                .map(|i| match i {
                    Ok((o, _)) => *o,
                    Err(e) => e.offset,
                })
                .collect();
            check_offsets(&offsets, data.len());
            let (split, split_stats) = run(&chunk(data, &sizes));
            assert_eq!(whole, split, "items depend on the chunking {sizes:?}");
            assert_eq!(whole_stats, split_stats, "stats depend on the chunking");
            // Byte-by-byte: the hardest chunking.
            if data.len() <= 4096 {
                let bytes: Vec<&[u8]> = data.chunks(1).collect();
                let (single, _) = run(&bytes);
                assert_eq!(whole, single, "items differ when fed byte by byte");
            }
        }
    };
}

/// ITM configuration from one byte: bit 0 says whether the input starts
/// at a packet header.
fn itm_config(data: &mut &[u8]) -> itm_packets::Config {
    let [b] = take::<1>(data);
    itm_packets::Config::new().with_aligned_start(b & 1 == 1)
}

parser_check!(etm_parser, etm_packets, etm_config);
parser_check!(ptm_parser, ptm_packets, ptm_config);
parser_check!(itm_parser, itm_packets, itm_config);

/// Fuzz input layout: mode byte (0 Memory, 1 Continuous, 2 Raw), raw-mode
/// ID byte, split sizes, then the capture. Checks: no panic; the events
/// do not depend on the chunking; every event's bytes lie inside the
/// input; runs are non-empty, at most 15 bytes, and carry source IDs only.
pub fn deformatter(mut data: &[u8]) {
    use trace_core::frames::{Deformatter, FrameEvent, FrameMode};
    let [mode, id] = take::<2>(&mut data);
    let mode = match mode % 3 {
        0 => FrameMode::Memory,
        1 => FrameMode::Continuous,
        _ => FrameMode::Raw { id },
    };
    let sizes = take_splits(&mut data);
    let run = |chunks: &[&[u8]]| {
        let mut d = Deformatter::new(mode);
        let mut events = Vec::new();
        for c in chunks {
            events.extend(d.feed(c));
        }
        events.extend(d.finish());
        assert_eq!(d.offset(), data.len() as u64);
        (events, d.stats())
    };
    let (whole, whole_stats) = run(&[data]);
    let len = data.len() as u64;
    for ev in &whole {
        let (start, end) = match ev {
            FrameEvent::Data(r) => {
                assert!(!r.is_empty() && r.data().len() <= 15, "bad run {r:?}");
                if !matches!(mode, FrameMode::Raw { .. }) {
                    assert!(trace_core::frames::is_source_id(r.id), "{r:?}");
                }
                assert!(r.opencsd_index <= r.offset, "{r:?}");
                (r.offset, r.end())
            }
            FrameEvent::Discarded { run, .. } => (run.offset, run.end()),
            FrameEvent::Unsynchronized { offset, len } | FrameEvent::Truncated { offset, len } => {
                (*offset, offset + len)
            }
        };
        assert!(
            start <= end && end <= len,
            "{ev:?} outside the {len}-byte input"
        );
    }
    let (split, split_stats) = run(&chunk(data, &sizes));
    if let FrameMode::Raw { .. } = mode {
        // Raw mode hands each chunk's bytes on at once (runs end at chunk
        // boundaries), so only the byte stream is chunking-independent.
        let stream = |evs: &[FrameEvent]| -> Vec<(u8, u64, u8)> {
            evs.iter()
                .flat_map(|e| match e {
                    FrameEvent::Data(r) => r
                        .data()
                        .iter()
                        .zip(r.offset..)
                        .map(|(&b, o)| (r.id, o, b))
                        .collect(),
                    _ => Vec::new(),
                })
                .collect()
        };
        assert!(whole.iter().all(|e| matches!(e, FrameEvent::Data(_))));
        assert!(split.iter().all(|e| matches!(e, FrameEvent::Data(_))));
        assert_eq!(
            stream(&whole),
            stream(&split),
            "raw bytes depend on the chunking"
        );
    } else {
        assert_eq!(whole, split, "events depend on the chunking {sizes:?}");
    }
    assert_eq!(whole_stats, split_stats, "stats depend on the chunking");
}

/// Fuzz input: arbitrary bytes as (lossy) UTF-8 text for the snapshot INI
/// parser, then every value through the number parser, the file-name
/// resolver and the escaping of printed text. Checks: no panic; parsing
/// is deterministic; keys are unique per section (ignoring case) and each
/// gives its entry's value; a resolved file name has only plain parts;
/// escaped text has no control character.
pub fn snapshot_ini(data: &[u8]) {
    use std::path::Component;
    use trace_convert::input::folder::relative;
    use trace_convert::input::ini::{parse_u64, Ini};
    use trace_convert::input::shown::shown;
    let text = String::from_utf8_lossy(data);
    let first = Ini::parse(&text);
    assert_eq!(first, Ini::parse(&text));
    if let Ok(ini) = first {
        for s in &ini.sections {
            let mut keys = std::collections::HashSet::new();
            for (k, v) in &s.entries {
                let _ = parse_u64(v);
                assert!(keys.insert(k.to_ascii_lowercase()), "key {k:?} twice");
                assert_eq!(s.get(k), Some(v.as_str()));
                if let Some(rel) = relative(v) {
                    assert!(rel.components().all(|c| matches!(c, Component::Normal(_))));
                }
                assert!(!shown(v).chars().any(char::is_control));
            }
            assert!(ini.section(&s.name).is_some());
        }
    }
}

/// Fuzz input layout: protocol byte (even ETM, odd PTM; bit 1 sets the
/// DMB/DSB waypoint option), 12 configuration register bytes, region
/// base address (4 bytes), space byte, memory length (2 bytes, at most
/// 4 KiB), the memory bytes, then the trace. The trace is parsed and
/// every packet (and every parse error) handed to a `Decoder` over a
/// `MemoryMap` holding the memory bytes. Checks: no panic, no hang (the
/// engine bounds its walks; libFuzzer's `-timeout` catches hangs), and
/// every event's offset lies inside the trace.
pub fn decoder(mut data: &[u8]) {
    use trace_core::decode::{Decoder, DecoderConfig};
    use trace_core::demux::{AnyPacket, SourceConfig};
    use trace_core::memory::{MemoryMap, Region, Space};
    let [sel] = take::<1>(&mut data);
    let (source, ccer) = if sel & 1 == 0 {
        let mut peek = data;
        let _ = take::<4>(&mut peek);
        let ccer = take_u32(&mut peek);
        (SourceConfig::Etm(etm_config(&mut data)), ccer)
    } else {
        let mut peek = data;
        let _ = take::<4>(&mut peek);
        let ccer = take_u32(&mut peek);
        (SourceConfig::Ptm(ptm_config(&mut data)), ccer)
    };
    let base = take_u32(&mut data);
    let [space] = take::<1>(&mut data);
    let space = match space % 3 {
        0 => Space::Any,
        1 => Space::Secure,
        _ => Space::NonSecure,
    };
    let mem_len = usize::from(u16::from_le_bytes(take::<2>(&mut data)) % 4097).min(data.len());
    let (mem, trace) = data.split_at(mem_len);
    let mut map = MemoryMap::new();
    let len = mem
        .len()
        .min((u64::from(u32::MAX) - u64::from(base) + 1) as usize);
    if let Ok(region) = Region::new("fuzz", base, space, Arc::from(mem), 0, len) {
        map.add(region);
    }
    let mut cfg = DecoderConfig::new(0x10, &source);
    if sel & 2 != 0 {
        cfg = cfg.with_etmccer(ccer);
    }
    let mut dec = Decoder::new(cfg, Arc::new(map));
    let trace_len = trace.len() as u64;
    let mut out = |e: trace_core::event::Event| {
        assert!(
            e.offset <= trace_len,
            "event {e:?} outside the {trace_len}-byte trace"
        );
    };
    match source {
        SourceConfig::Etm(c) => {
            let mut p = etm_packets::Parser::new(c);
            for item in p.feed(trace) {
                match item {
                    Ok((off, pkt)) => dec.push(off, &AnyPacket::Etm(pkt), &mut out),
                    Err(e) => dec.packet_error(e.offset, &mut out),
                }
            }
            if let Some(e) = p.finish() {
                dec.packet_error(e.offset, &mut out);
            }
        }
        SourceConfig::Ptm(c) => {
            let mut p = ptm_packets::Parser::new(c);
            for item in p.feed(trace) {
                match item {
                    Ok((off, pkt)) => dec.push(off, &AnyPacket::Ptm(pkt), &mut out),
                    Err(e) => dec.packet_error(e.offset, &mut out),
                }
            }
            if let Some(e) = p.finish() {
                dec.packet_error(e.offset, &mut out);
            }
        }
        // The sources made above are instruction trace.
        _ => return,
    }
    dec.finish(&mut out);
    let _ = dec.ignored();
}

/// Fuzz input: a perf.data file. It is read, then its CoreSight pieces of
/// AUX data are cut. Checks: no panic; reading is deterministic; records
/// lie inside the data section in increasing order, each AUXTRACE
/// record's trace inside the file; the AUXTRACE_INFO blocks are as many as
/// it announces; every piece of AUX data lies inside the file.
pub fn perf_data(data: &[u8]) {
    use trace_convert::input::perf::records::Body;
    use trace_convert::input::perf::resolve::pieces;
    use trace_convert::input::perf::PerfData;
    let first = PerfData::parse(data);
    assert_eq!(first, PerfData::parse(data));
    let Ok(perf) = first else { return };
    let len = data.len() as u64;
    let mut last = None;
    for r in &perf.records {
        assert!(r.offset >= perf.header.data.offset && r.offset < len);
        assert!(last.is_none_or(|l| l < r.offset));
        last = Some(r.offset);
        if let Body::Auxtrace(a) = &r.body {
            assert!(a.data.checked_add(a.size).is_some_and(|e| e <= len));
        }
    }
    if let Some((_, Ok(info))) = &perf.cs_etm {
        assert_eq!(info.cpus.len() as u64, u64::from(info.nr_cpu));
    }
    let mut notes = Vec::new();
    let got = pieces(&perf, &mut notes);
    for p in &got {
        assert!(p.len > 0 && p.start.checked_add(p.len).is_some_and(|e| e <= len));
    }
    // The indexed cut equals the plain one: every AUX record against
    // every buffer.
    let mut plain_notes = 0;
    assert_eq!(got, plain_pieces(&perf, &mut plain_notes));
    assert_eq!(notes.len(), plain_notes);
}

/// `pieces` written plainly (quadratic): each AUXTRACE buffer cut where
/// an AUX record of its area ends inside it; `notes` counts the pieces
/// that start where a truncated AUX record of the area starts.
fn plain_pieces(
    perf: &trace_convert::input::perf::PerfData,
    notes: &mut usize,
) -> Vec<trace_convert::input::perf::resolve::Piece> {
    use trace_convert::input::perf::records::{Aux, Body};
    use trace_convert::input::perf::resolve::Piece;
    let auxes: Vec<(Aux, Option<u32>, Option<u32>)> = perf
        .records
        .iter()
        .filter_map(|r| match r.body {
            Body::Aux(a) => Some((a, r.sample.cpu, r.sample.tid.map(|(_, t)| t))),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (_, a) in perf.auxtraces() {
        if a.size == 0 {
            continue;
        }
        let end0 = a.offset.saturating_add(a.size);
        let mine: Vec<&Aux> = auxes
            .iter()
            .filter(|(x, cpu, tid)| {
                let cpu_ok = cpu.is_none_or(|c| a.cpu == u32::MAX || c == a.cpu);
                let tid_ok =
                    tid.is_none_or(|t| a.cpu != u32::MAX || a.tid == u32::MAX || t == a.tid);
                let x_end = x.offset.saturating_add(x.size);
                cpu_ok && tid_ok && x.offset < end0 && x_end > a.offset
            })
            .map(|(x, _, _)| x)
            .collect();
        let raw = mine.iter().any(|x| x.flags & Aux::RAW != 0);
        let ends = |below: u64| -> Vec<u64> {
            mine.iter()
                .map(|x| x.offset.saturating_add(x.size))
                .filter(|&e| e > a.offset && e < below)
                .collect()
        };
        let mut end = end0;
        if let Some(&covered) = ends(end0).iter().max() {
            if end - covered < 8 {
                end = covered;
            }
        }
        let mut cuts = ends(end);
        cuts.push(end);
        cuts.sort_unstable();
        cuts.dedup();
        let mut from = a.offset;
        for cut in cuts {
            if cut <= from {
                continue;
            }
            if mine
                .iter()
                .any(|x| x.offset == from && x.flags & Aux::TRUNCATED != 0)
            {
                *notes += 1;
            }
            out.push(Piece {
                start: a.data + (from - a.offset),
                len: cut - from,
                cpu: a.cpu,
                tid: a.tid,
                raw,
            });
            from = cut;
        }
    }
    out
}
