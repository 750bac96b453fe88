//! Deformatter throughput on TC2's CoreSight-formatted buffer (four
//! sources interleaved in 16-byte frames), repeated to 16 MiB: every
//! frame's payload handed on as runs, as the demultiplexer takes them
//! (`feed_each`), and through the iterator (`feed`).
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
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
