//! `cargo xtask bench`: throughput of packet parsing and full decode on
//! large inputs built from the real captures, printed as one table.
//!
//! Inputs: the raw PTM capture of tc2-ptm-rstk-t32 repeated (it starts
//! with A-sync + I-sync and ends in a debug halt, so copies chain), and the
//! TC2 ETMv3 stream of trace ID 0x10 from its first to its last A-sync,
//! repeated. Each figure is the best of several runs; a plain byte-sum over
//! the same input, measured in the same run, is the baseline the ratios
//! refer to. This is a measurement, not a test: nothing is asserted.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use trace_convert::decode::{memory_for, ExtraMemory};
use trace_convert::input::{flags::SourceFlags, resolve, Input};
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::{AnyPacket, SourceConfig};
use trace_core::event::EventKind;
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};
use trace_core::memory::MemoryImage;

const RUNS: usize = 5;
const CHUNK: usize = 1 << 20;

/// Best wall time of `RUNS` runs of `f`, and its last result.
fn best<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..RUNS {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        out = Some(r);
    }
    (best, out.expect("RUNS > 0"))
}

fn repeat(unit: &[u8], size: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(size + unit.len());
    while v.len() < size {
        v.extend_from_slice(unit);
    }
    v
}

struct Row {
    what: String,
    bytes: usize,
    time: Duration,
    instructions: Option<u64>,
}

fn mb_s(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e6
}

/// Parse `bytes` with the source's parser; returns packets.
fn parse(cfg: SourceConfig, bytes: &[u8]) -> u64 {
    let mut n = 0u64;
    match cfg {
        SourceConfig::Etm(c) => {
            let mut p = etm_packets::Parser::new(c);
            for chunk in bytes.chunks(CHUNK) {
                for item in p.feed(chunk) {
                    n += u64::from(item.is_ok());
                }
            }
        }
        SourceConfig::Ptm(c) => {
            let mut p = ptm_packets::Parser::new(c);
            for chunk in bytes.chunks(CHUNK) {
                for item in p.feed(chunk) {
                    n += u64::from(item.is_ok());
                }
            }
        }
    }
    n
}

/// Parse and decode `bytes`; returns instructions.
fn decode(id: u8, cfg: SourceConfig, mem: &Arc<dyn MemoryImage>, bytes: &[u8]) -> u64 {
    let mut d = Decoder::new(DecoderConfig::new(id, &cfg), Arc::clone(mem));
    let mut n = 0u64;
    let mut sink = |e: trace_core::event::Event| {
        if let EventKind::Range(r) = e.kind {
            n += u64::from(r.count);
        }
    };
    match cfg {
        SourceConfig::Etm(c) => {
            let mut p = etm_packets::Parser::new(c);
            for chunk in bytes.chunks(CHUNK) {
                for (off, pkt) in p.feed(chunk).flatten() {
                    d.push(off, &AnyPacket::Etm(pkt), &mut sink);
                }
            }
        }
        SourceConfig::Ptm(c) => {
            let mut p = ptm_packets::Parser::new(c);
            for chunk in bytes.chunks(CHUNK) {
                for (off, pkt) in p.feed(chunk).flatten() {
                    d.push(off, &AnyPacket::Ptm(pkt), &mut sink);
                }
            }
        }
    }
    d.finish(&mut sink);
    n
}

/// The source `id` of a resolved snapshot: its parser configuration and
/// memory image.
fn source(input: &Input, id: u8) -> Result<(SourceConfig, Arc<dyn MemoryImage>), String> {
    let spec = input
        .captures
        .iter()
        .flat_map(|c| c.sources.iter())
        .find(|s| s.id == id)
        .ok_or_else(|| format!("no source with trace ID {id:#x}"))?;
    let cfg = spec.config().map_err(|e| e.to_string())?;
    let mem = memory_for(input.snapshot.as_ref(), &spec.name, &ExtraMemory::default())
        .map_err(|e| e.to_string())?;
    Ok((cfg, Arc::new(mem)))
}

/// Trace ID `id`'s payload of a formatted capture, from its first to its
/// last A-sync (so that copies chain).
fn etm_unit(capture: &[u8], id: u8) -> Vec<u8> {
    let mut d = Deformatter::new(FrameMode::Memory);
    let mut payload = Vec::new();
    for ev in d.feed(capture) {
        if let FrameEvent::Data(run) = ev {
            if run.id == id {
                payload.extend_from_slice(run.data());
            }
        }
    }
    let sync = [0u8, 0, 0, 0, 0, 0x80];
    let first = payload.windows(6).position(|w| w == sync).unwrap_or(0);
    let last = payload
        .windows(6)
        .rposition(|w| w == sync)
        .unwrap_or(payload.len());
    payload[first..last.max(first)].to_vec()
}

/// Run the benchmark suite.
pub fn run(dir: &Path, args: &[String]) -> Result<(), String> {
    let size_mb: usize = args
        .iter()
        .position(|a| a == "--size-mb")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(64), |v| v.parse())
        .map_err(|e| format!("--size-mb: {e}"))?;
    let size = size_mb << 20;
    if !dir.is_dir() {
        return Err(format!(
            "{} not found: the benchmark inputs come from it",
            dir.display()
        ));
    }
    let mut rows = Vec::new();

    // PTM, raw capture repeated.
    let rstk = resolve(&dir.join("tc2-ptm-rstk-t32"), &SourceFlags::default())
        .map_err(|e| e.to_string())?;
    let (ptm_cfg, ptm_mem) = source(&rstk, 2)?;
    let unit = std::fs::read(&rstk.captures[0].path).map_err(|e| e.to_string())?;
    let ptm = repeat(&unit, size);

    // ETMv3, TC2 trace ID 0x10 repeated.
    let tc2 = resolve(&dir.join("TC2"), &SourceFlags::default()).map_err(|e| e.to_string())?;
    let (etm_cfg, etm_mem) = source(&tc2, 0x10)?;
    let capture = std::fs::read(&tc2.captures[0].path).map_err(|e| e.to_string())?;
    let etm = repeat(&etm_unit(&capture, 0x10), size);

    for (name, bytes) in [("PTM", &ptm), ("ETMv3", &etm)] {
        let (t, _) = best(|| {
            black_box(
                bytes
                    .iter()
                    .fold(0u64, |a, &b| a.wrapping_add(u64::from(b))),
            )
        });
        rows.push(Row {
            what: format!("baseline: byte sum, {name} input"),
            bytes: bytes.len(),
            time: t,
            instructions: None,
        });
    }
    let (t, n) = best(|| parse(ptm_cfg, &ptm));
    rows.push(Row {
        what: format!("PTM packet parsing ({n} packets)"),
        bytes: ptm.len(),
        time: t,
        instructions: None,
    });
    let (t, n) = best(|| parse(etm_cfg, &etm));
    rows.push(Row {
        what: format!("ETMv3 packet parsing ({n} packets)"),
        bytes: etm.len(),
        time: t,
        instructions: None,
    });
    let (t, n) = best(|| decode(2, ptm_cfg, &ptm_mem, &ptm));
    rows.push(Row {
        what: "PTM full decode (parse + decode)".into(),
        bytes: ptm.len(),
        time: t,
        instructions: Some(n),
    });
    let (t, n) = best(|| decode(0x10, etm_cfg, &etm_mem, &etm));
    rows.push(Row {
        what: "ETMv3 full decode (parse + decode)".into(),
        bytes: etm.len(),
        time: t,
        instructions: Some(n),
    });

    println!("inputs: {size_mb} MiB each, best of {RUNS} runs, one thread");
    println!(
        "{:<44} {:>10} {:>12} {:>14}",
        "what", "MB/s", "M insn/s", "vs byte sum"
    );
    let base_ptm = mb_s(rows[0].bytes, rows[0].time);
    let base_etm = mb_s(rows[1].bytes, rows[1].time);
    for r in &rows {
        let mbs = mb_s(r.bytes, r.time);
        let base = if r.what.contains("ETMv3") {
            base_etm
        } else {
            base_ptm
        };
        let insn = r.instructions.map_or_else(
            || "-".to_owned(),
            |n| format!("{:.1}", n as f64 / r.time.as_secs_f64() / 1e6),
        );
        println!(
            "{:<44} {:>10.1} {:>12} {:>13.2}x",
            r.what,
            mbs,
            insn,
            mbs / base
        );
    }
    Ok(())
}
