//! Parse throughput on the real TC2 ETMv3.5 streams and on a synthetic
//! stream made with the encoder.
//!
//! The TC2 capture is deformatted once up front; each trace ID's payload
//! from its first A-sync to its last A-sync is concatenated (so every seam
//! is an A-sync) and repeated to several MB.
#![allow(clippy::unwrap_used, missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use etm_packets::{
    Atoms, Branch, Config, Encoder, ISync, Isa, PHeaderFormat, Packet, Parser, Reason, Timestamp,
};

const TARGET: usize = 8 << 20;
const CHUNK: usize = 64 << 10;

fn tc2_stream() -> Option<Vec<u8>> {
    let path = test_support::opencsd_path().join("TC2/cstrace.bin");
    let Ok(data) = std::fs::read(&path) else {
        eprintln!("skipping the TC2 bench: {} not found", path.display());
        return None;
    };
    let streams = test_support::opencsd_frames::deformat(&data);
    let async_seq = [0u8, 0, 0, 0, 0, 0x80];
    let mut unit = Vec::new();
    for id in [0x10u8, 0x11, 0x12] {
        let bytes: Vec<u8> = streams[&id].iter().map(|&(_, b)| b).collect();
        let starts: Vec<usize> = bytes
            .windows(6)
            .enumerate()
            .filter(|(_, w)| *w == async_seq)
            .map(|(i, _)| i)
            .collect();
        let (first, last) = (starts[0], *starts.last().unwrap());
        unit.extend_from_slice(&bytes[first..last]);
    }
    let mut out = Vec::with_capacity(TARGET + unit.len());
    while out.len() < TARGET {
        out.extend_from_slice(&unit);
    }
    Some(out)
}

/// A deterministic synthetic stream in the mix of a busy cycle-accurate
/// trace: mostly P-headers, some branches, periodic I-syncs and
/// timestamps.
fn synthetic_stream(cfg: Config) -> Vec<u8> {
    let mut enc = Encoder::new(cfg);
    let mut out = Vec::with_capacity(TARGET + 64);
    let mut buf = [0u8; 32];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut pc: u32 = 0xc000_8000;
    let mut ts: u64 = 0x82_f9d0_cd3d;
    let mut n = 0u64;
    while out.len() < TARGET {
        let r = rnd();
        let p = if n % 4096 == 0 {
            Packet::ASync
        } else if n % 4096 == 1 {
            Packet::ISync(ISync::new(pc, Isa::Thumb, Reason::Periodic))
        } else {
            match r % 100 {
                0..=69 => {
                    let e = ((r >> 8) % 8) as u8;
                    let w = ((r >> 16) % 8) as u8;
                    Packet::Atoms(if r & 0x100_0000 != 0 {
                        Atoms {
                            format: PHeaderFormat::Format3,
                            count: 0,
                            executed: 0,
                            cycles: w + 1,
                        }
                    } else {
                        Atoms {
                            format: PHeaderFormat::Format1,
                            count: e.max(1),
                            executed: (1u16 << e.max(1)) - 1,
                            cycles: e.max(1),
                        }
                    })
                }
                70..=94 => {
                    pc = pc.wrapping_add(((r >> 20) as u32 % 0x4000).wrapping_sub(0x2000)) & !1;
                    Packet::Branch(Branch {
                        address: pc,
                        bits: 0,
                        known_bits: 0,
                        isa: Isa::Thumb,
                        ns: false,
                        hyp: false,
                        exception: None,
                    })
                }
                95..=97 => {
                    ts += (r >> 40) % 2000;
                    Packet::Timestamp(Timestamp {
                        value: ts,
                        bits: 0,
                        clock_changed: false,
                    })
                }
                _ => Packet::CycleCount((r >> 32) as u32 % 100_000),
            }
        };
        let k = enc.encode(&p, &mut buf).unwrap();
        out.extend_from_slice(&buf[..k]);
        n += 1;
    }
    out
}

/// A consumer that only materializes every item.
fn parse_all(cfg: Config, bytes: &[u8]) -> u64 {
    let mut p = Parser::new(cfg);
    let mut count = 0u64;
    for chunk in bytes.chunks(CHUNK) {
        for item in p.feed(chunk) {
            count += u64::from(item.is_ok());
            black_box(&item);
        }
    }
    black_box(p.finish());
    count
}

/// A consumer that uses the packets (sums instructions and cycles) instead
/// of only materializing them.
fn parse_sum(cfg: Config, bytes: &[u8]) -> u64 {
    let mut p = Parser::new(cfg);
    let mut sum = 0u64;
    for chunk in bytes.chunks(CHUNK) {
        for item in p.feed(chunk) {
            sum += match item {
                Ok((_, Packet::Atoms(a))) => u64::from(a.count) + u64::from(a.cycles),
                Ok((o, Packet::Branch(b))) => o ^ u64::from(b.address),
                Ok((_, Packet::Timestamp(t))) => t.value,
                Ok(_) => 1,
                Err(_) => 0,
            };
        }
    }
    black_box(p.finish());
    sum
}

fn bench(c: &mut Criterion) {
    let cfg = Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250).unwrap();
    let mut g = c.benchmark_group("parse");
    g.sample_size(20);
    if let Some(tc2) = tc2_stream() {
        g.throughput(Throughput::Bytes(tc2.len() as u64));
        g.bench_function("tc2_etmv3_5", |b| {
            b.iter(|| parse_all(cfg, black_box(&tc2)))
        });
        g.bench_function("tc2_etmv3_5_sum", |b| {
            b.iter(|| parse_sum(cfg, black_box(&tc2)))
        });
    }
    let synth = synthetic_stream(cfg);
    g.throughput(Throughput::Bytes(synth.len() as u64));
    g.bench_function("synthetic_ca", |b| {
        b.iter(|| parse_all(cfg, black_box(&synth)))
    });
    g.bench_function("synthetic_ca_sum", |b| {
        b.iter(|| parse_sum(cfg, black_box(&synth)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
