//! Deformatter throughput on TC2's CoreSight-formatted buffer (four
//! sources interleaved in 16-byte frames), repeated to 16 MiB: every
//! frame's payload handed on as runs, as the demultiplexer takes them
//! (`feed_each`), and through the iterator (`feed`); and the same frames
//! in TPIU continuous mode, with full-frame syncs (`_tpiu`) and without,
//! starting mid-frame (`_swo`).
//! Throughput is reported in input bytes.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};

const SIZE: usize = 16 << 20;

fn bench(c: &mut Criterion) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/testdata/opencsd/TC2/cstrace.bin");
    let Ok(one) = std::fs::read(&path) else {
        eprintln!("frames bench: {} not found, skipped", path.display());
        return;
    };
    // Whole frames only, so that copies stay aligned.
    let one = &one[..one.len() / 16 * 16];
    let mut input = Vec::with_capacity(SIZE);
    while input.len() + one.len() <= SIZE {
        input.extend_from_slice(one);
    }
    let mut g = c.benchmark_group("frames");
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("deformat_tc2_each", |b| {
        b.iter(|| {
            let mut d = Deformatter::new(FrameMode::Memory);
            let mut n = 0usize;
            for chunk in input.chunks(4096) {
                d.feed_each(chunk, |ev| {
                    if let FrameEvent::Data(run) = ev {
                        n += run.data().len();
                    }
                });
            }
            black_box(n)
        });
    });
    g.bench_function("deformat_tc2", |b| {
        b.iter(|| {
            let mut d = Deformatter::new(FrameMode::Memory);
            let mut n = 0usize;
            for chunk in input.chunks(4096) {
                for ev in d.feed(chunk) {
                    if let FrameEvent::Data(run) = ev {
                        n += run.data().len();
                    }
                }
            }
            black_box(n)
        });
    });
    // The same frames as a TPIU in continuous mode sends them: a
    // full-frame sync before every 16th frame.
    let mut tpiu = Vec::with_capacity(input.len() + input.len() / 64);
    for (i, frame) in input.chunks_exact(16).enumerate() {
        if i % 16 == 0 {
            tpiu.extend_from_slice(&trace_core::frames::FSYNC);
        }
        tpiu.extend_from_slice(frame);
    }
    g.throughput(Throughput::Bytes(tpiu.len() as u64));
    g.bench_function("deformat_tc2_tpiu_each", |b| {
        b.iter(|| {
            let mut d = Deformatter::new(FrameMode::Continuous);
            let mut n = 0usize;
            for chunk in tpiu.chunks(4096) {
                d.feed_each(chunk, |ev| {
                    if let FrameEvent::Data(run) = ev {
                        n += run.data().len();
                    }
                });
            }
            black_box(n)
        });
    });
    // As a SWO probe delivers them: no syncs, starting mid-frame.
    let swo = &input[5..];
    g.throughput(Throughput::Bytes(swo.len() as u64));
    g.bench_function("deformat_tc2_swo_each", |b| {
        b.iter(|| {
            let mut d = Deformatter::new(FrameMode::Continuous);
            let mut n = 0usize;
            for chunk in swo.chunks(4096) {
                d.feed_each(chunk, |ev| {
                    if let FrameEvent::Data(run) = ev {
                        n += run.data().len();
                    }
                });
            }
            black_box(n)
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
