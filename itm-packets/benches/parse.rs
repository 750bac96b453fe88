//! Parse throughput on a synthetic ITM/DWT stream made with the encoder,
//! in the mix of a busy SWO stream: PC samples, exception trace, stimulus
//! port writes, data trace and local timestamps.
#![allow(clippy::unwrap_used, missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use itm_packets::{
    Config, DataTrace, DataTraceKind, Encoder, ExceptionAction, ExceptionTrace, LocalTimestamp,
    Packet, Parser, PcSample, Stimulus, TimestampRelation,
};

const TARGET: usize = 8 << 20;
const CHUNK: usize = 64 << 10;

fn synthetic_stream() -> Vec<u8> {
    let mut enc = Encoder::new();
    let mut out = Vec::with_capacity(TARGET + 16);
    let mut buf = [0u8; 8];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let n = enc.encode(&Packet::Sync, &mut buf).unwrap();
    out.extend_from_slice(&buf[..n]);
    while out.len() < TARGET {
        let r = rnd();
        let p = match r % 16 {
            0..=5 => Packet::PcSample(PcSample {
                pc: Some(0x0800_0000 | (r >> 8) as u32 & 0xFFFE),
            }),
            6 => Packet::PcSample(PcSample { pc: None }),
            7 | 8 => Packet::ExceptionTrace(ExceptionTrace {
                number: 15 + (r >> 8) as u16 % 40,
                action: [
                    ExceptionAction::Enter,
                    ExceptionAction::Exit,
                    ExceptionAction::Return,
                ][(r >> 20) as usize % 3],
            }),
            9..=11 => Packet::Stimulus(Stimulus {
                port: (r >> 8) as u32 % 32,
                value: u32::from(b'a' + (r >> 16) as u8 % 26),
                size: 1,
            }),
            12 | 13 => Packet::DataTrace(DataTrace {
                comparator: (r >> 8) as u8 & 3,
                kind: DataTraceKind::Value {
                    value: (r >> 16) as u32,
                    size: 4,
                    write: r & 0x100 != 0,
                },
            }),
            _ => Packet::LocalTimestamp(LocalTimestamp::new(
                (r >> 8) as u32 & 0x3FFF,
                TimestampRelation::Synchronous,
            )),
        };
        let n = enc.encode(&p, &mut buf).unwrap();
        out.extend_from_slice(&buf[..n]);
    }
    out
}

fn bench(c: &mut Criterion) {
    let stream = synthetic_stream();
    let mut g = c.benchmark_group("itm_parse");
    g.throughput(Throughput::Bytes(stream.len() as u64));
    g.bench_function("synthetic_swo", |b| {
        b.iter(|| {
            let mut p = Parser::new(Config::new());
            let mut n = 0u64;
            for chunk in stream.chunks(CHUNK) {
                for (off, _) in p.feed(chunk).flatten() {
                    n = n.wrapping_add(off);
                }
            }
            black_box(n)
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
