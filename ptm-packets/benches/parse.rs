//! Parser throughput on a real capture (tc2-ptm-rstk-t32, repeated) and on a
//! synthetic cycle-accurate stream made by the encoder.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ptm_packets::{Atoms, Config, Encoder, ExceptionInfo, ISync, ISyncReason, Isa, Packet, Parser};

const TARGET_LEN: usize = 8 << 20;

fn real_capture() -> Option<Vec<u8>> {
    let path = test_support::opencsd_path().join("tc2-ptm-rstk-t32/PTM_0_2.bin");
    let one = std::fs::read(path).ok()?;
    // The capture starts with an A-sync and an I-sync, so copies chain.
    let mut v = Vec::with_capacity(TARGET_LEN + one.len());
    while v.len() < TARGET_LEN {
        v.extend_from_slice(&one);
    }
    Some(v)
}

/// A cycle-accurate stream with timestamps: mostly atoms and short
/// branches, some exceptions, periodic synchronization.
fn synthetic(cfg: Config) -> Vec<u8> {
    let mut enc = Encoder::new(cfg);
    let mut out = Vec::with_capacity(TARGET_LEN + 64);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut ts = 1_000_000u64;
    while out.len() < TARGET_LEN {
        let r = rnd();
        let p = match r % 100 {
            0 => Packet::ASync,
            1 => Packet::ISync(ISync {
                address: 0x8000_0000 | (r as u32 & 0xffff_fffe),
                isa: Isa::Thumb,
                reason: ISyncReason::Periodic,
                ..ISync::default()
            }),
            2..=4 => {
                ts += r % 5000;
                enc.timestamp(ts, false, Some((r >> 20) as u32 % 64))
            }
            5..=34 => {
                let delta = (r >> 8) as u32 & [0xfe, 0x3ffe, 0xf_fffe][(r >> 40) as usize % 3];
                let exception = (r % 97 == 0).then_some(ExceptionInfo {
                    number: 14,
                    ..ExceptionInfo::default()
                });
                enc.branch(
                    enc.last_address() ^ delta,
                    Isa::Thumb,
                    exception,
                    Some((r >> 32) as u32 % 300),
                )
            }
            _ => Packet::Atom {
                atoms: Atoms::new(1, (r >> 9) as u8 & 1)
                    .unwrap_or(Atoms::single(ptm_packets::Atom::E)),
                cycles: Some((r >> 12) as u32 % 40),
            },
        };
        enc.encode_extend(&p, &mut out).expect("encodable");
    }
    out
}

fn run(parser: &mut Parser, bytes: &[u8], chunk: usize) -> u64 {
    let mut n = 0u64;
    for c in bytes.chunks(chunk) {
        for item in parser.feed(c) {
            match item {
                Ok((off, p)) => n = n.wrapping_add(off) ^ u64::from(p.cycles().unwrap_or(1)),
                Err(_) => n += 1,
            }
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    let mut inputs = Vec::new();
    if let Some(real) = real_capture() {
        let cfg = Config::from_regs(0x2000_0400, 0x34C0_1AC2, 0x411C_F312).expect("config");
        inputs.push(("tc2-ptm-rstk-t32", cfg, real));
    } else {
        eprintln!("tc2-ptm-rstk-t32 capture not found; synthetic input only");
    }
    let cfg = Config::from_regs(0x1000_1000, 0x34C0_1AC2, 0x411C_F312).expect("config");
    inputs.push(("synthetic-cycle-accurate", cfg, synthetic(cfg)));
    for (name, cfg, bytes) in &inputs {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        for chunk in [bytes.len(), 4096] {
            let label = if chunk == bytes.len() {
                format!("{name}/whole")
            } else {
                format!("{name}/chunks-{chunk}")
            };
            group.bench_function(label, |b| {
                b.iter(|| {
                    let mut parser = Parser::new(*cfg);
                    black_box(run(&mut parser, black_box(bytes), chunk))
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
