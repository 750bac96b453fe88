//! Decoder throughput on the real PTM capture tc2-ptm-rstk-t32/PTM_0_2.bin
//! (return stack on), repeated many times: it starts with an A-sync and an
//! I-sync and ends in a debug halt, so copies chain. Decoded against the
//! snapshot's memory dumps; throughput is reported in instructions.
//!
//! And the cycle-accurate ETMv3.5 stream of trace ID 0x10 in the TC2
//! capture, from its first to its last A-sync, repeated: about one P-header
//! per instruction, so this measures the engine's per-packet work.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::{AnyPacket, SourceConfig};
use trace_core::event::EventKind;
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};
use trace_core::memory::{MemoryMap, Space};

const COPIES: usize = 64;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/testdata/opencsd/tc2-ptm-rstk-t32")
}

fn reg(ini: &str, name: &str) -> u32 {
    ini.lines()
        .find(|l| l.starts_with(&format!("{name}(")))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
        .unwrap_or(0)
}

fn memory(dir: &Path) -> MemoryMap {
    let ini = std::fs::read_to_string(dir.join("device1.ini")).unwrap_or_default();
    let mut map = MemoryMap::new();
    let (mut addr, mut file) = (None, None);
    for line in ini.lines().chain(std::iter::once("[end]")) {
        if line.starts_with('[') {
            if let (Some(a), Some(f)) = (addr.take(), file.take()) {
                let f: &str = f;
                map.add_file(&dir.join(f), a, Space::Secure, 0, None)
                    .expect("memory dump");
            }
        } else if let Some(v) = line.strip_prefix("address=") {
            addr = u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok();
        } else if let Some(v) = line.strip_prefix("file=") {
            file = Some(v.trim());
        }
    }
    map
}

fn bench(c: &mut Criterion) {
    let dir = dir();
    let Ok(one) = std::fs::read(dir.join("PTM_0_2.bin")) else {
        eprintln!("decode bench: {} not found, skipped", dir.display());
        return;
    };
    let ini = std::fs::read_to_string(dir.join("device5.ini")).unwrap_or_default();
    let cfg = ptm_packets::Config::from_regs(
        reg(&ini, "ETMCR"),
        reg(&ini, "ETMCCER"),
        reg(&ini, "ETMIDR"),
    )
    .expect("PTM configuration");
    let mut bytes = Vec::with_capacity(one.len() * COPIES);
    for _ in 0..COPIES {
        bytes.extend_from_slice(&one);
    }
    let mut parser = ptm_packets::Parser::new(cfg);
    let packets: Vec<(u64, AnyPacket)> = parser
        .feed_at(0, &bytes)
        .filter_map(Result::ok)
        .map(|(o, p)| (o, AnyPacket::Ptm(p)))
        .collect();
    let mem: Arc<MemoryMap> = Arc::new(memory(&dir));
    let source = SourceConfig::Ptm(cfg);
    let run = || instructions(2, &source, &mem, &packets);
    let insns = run();
    assert_eq!(insns, 192_073 * COPIES as u64, "decoded instruction count");
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(insns));
    g.bench_function("ptm_rstk_instructions", |b| {
        b.iter(|| black_box(run()));
    });
    g.bench_function("ptm_rstk_parse_and_decode", |b| {
        b.iter(|| {
            let mut n = 0u64;
            let mut d = Decoder::new(DecoderConfig::new(2, &source), mem.clone());
            let mut p = ptm_packets::Parser::new(cfg);
            for (o, pk) in p.feed_at(0, &bytes).flatten() {
                d.push(o, &AnyPacket::Ptm(pk), &mut |e| {
                    if let EventKind::Range(r) = e.kind {
                        n += u64::from(r.count);
                    }
                });
            }
            black_box(n)
        });
    });
    g.finish();
}

/// Trace ID `id`'s bytes of a formatted capture, from its first to its
/// last A-sync (so that copies chain).
fn payload(capture: &[u8], id: u8) -> Vec<u8> {
    let mut d = Deformatter::new(FrameMode::Memory);
    let mut bytes = Vec::new();
    for ev in d.feed(capture) {
        if let FrameEvent::Data(run) = ev {
            if run.id == id {
                bytes.extend_from_slice(run.data());
            }
        }
    }
    let sync = [0u8, 0, 0, 0, 0, 0x80];
    let first = bytes.windows(6).position(|w| w == sync).unwrap_or(0);
    let last = bytes
        .windows(6)
        .rposition(|w| w == sync)
        .unwrap_or(bytes.len());
    bytes[first..last.max(first)].to_vec()
}

fn bench_etm(c: &mut Criterion) {
    let dir = dir().join("../TC2");
    let Ok(capture) = std::fs::read(dir.join("cstrace.bin")) else {
        eprintln!("decode bench: {} not found, skipped", dir.display());
        return;
    };
    // ETM_0 of the snapshot (device_5.ini): ETMCR, ETMCCER, ETMIDR.
    let cfg = etm_packets::Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250)
        .expect("ETMv3 configuration");
    let mut map = MemoryMap::new();
    map.add_file(
        &dir.join("kernel_dump.bin"),
        0xC000_8000,
        Space::Any,
        0,
        None,
    )
    .expect("memory dump");
    let mem = Arc::new(map);
    let unit = payload(&capture, 0x10);
    let mut bytes = Vec::with_capacity(unit.len() * COPIES * 4);
    for _ in 0..COPIES * 4 {
        bytes.extend_from_slice(&unit);
    }
    let packets: Vec<(u64, AnyPacket)> = etm_packets::Parser::new(cfg)
        .feed_at(0, &bytes)
        .filter_map(Result::ok)
        .map(|(o, p)| (o, AnyPacket::Etm(p)))
        .collect();
    let source = SourceConfig::Etm(cfg);
    let run = || instructions(0x10, &source, &mem, &packets);
    let insns = run();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(insns));
    g.bench_function("etm_tc2_instructions", |b| {
        b.iter(|| black_box(run()));
    });
    g.finish();
}

/// Decode `packets` as source `id` and count the instructions.
fn instructions(
    id: u8,
    source: &SourceConfig,
    mem: &Arc<MemoryMap>,
    packets: &[(u64, AnyPacket)],
) -> u64 {
    let mut count = 0u64;
    let mut d = Decoder::new(DecoderConfig::new(id, source), mem.clone());
    for (o, p) in packets {
        d.push(*o, p, &mut |e| {
            if let EventKind::Range(r) = e.kind {
                count += u64::from(r.count);
            }
        });
    }
    d.finish(&mut |_| {});
    count
}

criterion_group!(benches, bench, bench_etm);
criterion_main!(benches);
