//! Decode throughput (instructions per second) over real code images from
//! the shared OpenCSD test data, when present, and over synthetic mixes.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use isa_decode::{decode_a32, decode_t32, t32_size};

fn testdata(rel: &str) -> Option<Vec<u8>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/testdata/opencsd")
        .join(rel);
    std::fs::read(p).ok()
}

/// A deterministic A32 mix: mostly data processing and loads/stores, with
/// branches, calls, returns and the odd system instruction, plus random
/// words.
fn a32_mix(n: usize) -> Vec<u32> {
    const COMMON: [u32; 16] = [
        0xE1A0_0001,
        0xE280_0001,
        0xE590_1004,
        0xE580_1004,
        0xE350_0000,
        0x0A00_0004,
        0x1AFF_FFF0,
        0xEB00_0100,
        0xE12F_FF1E,
        0xE92D_4010,
        0xE8BD_8010,
        0xE081_0002,
        0xE3A0_0000,
        0xE1A0_F00E,
        0xF57F_F06F,
        0xE320_F003,
    ];
    let mut x = 0x1234_5678u32;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if i % 8 == 7 {
                x
            } else {
                COMMON[(x % 16) as usize]
            }
        })
        .collect()
}

/// A deterministic T32 stream of halfwords: 16-bit instructions with a
/// share of 32-bit ones.
fn t32_mix(n: usize) -> Vec<u16> {
    const COMMON16: [u16; 12] = [
        0x4770, 0xB510, 0xBD10, 0x2000, 0x6801, 0x6001, 0x4288, 0xD1FA, 0xE7FE, 0xB100, 0xBF08,
        0x1C40,
    ];
    const COMMON32: [(u16, u16); 6] = [
        (0xF000, 0xF800),
        (0xE92D, 0x4FF0),
        (0xE8BD, 0x8FF0),
        (0xF8D0, 0x1004),
        (0xEB00, 0x0001),
        (0xF3BF, 0x8F6F),
    ];
    let mut x = 0x9E37_79B9u32;
    let mut v = Vec::with_capacity(n + 2);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        if x % 4 == 0 {
            let (a, b) = COMMON32[((x >> 8) % 6) as usize];
            v.push(a);
            v.push(b);
        } else {
            v.push(COMMON16[((x >> 8) % 12) as usize]);
        }
    }
    v
}

fn halfwords(bytes: &[u8]) -> Vec<u16> {
    bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

fn bench_a32(c: &mut Criterion, name: &str, code: &[u32]) {
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(code.len() as u64));
    g.bench_function(name, |b| {
        b.iter(|| {
            let mut waypoints = 0u32;
            let mut addr = 0x8000u32;
            for &w in code {
                let i = decode_a32(black_box(w), addr);
                waypoints += u32::from(i.is_waypoint());
                addr = addr.wrapping_add(4);
            }
            waypoints
        })
    });
    g.finish();
}

fn bench_t32(c: &mut Criterion, name: &str, code: &[u16]) {
    // Count instructions once: throughput is per instruction, not halfword.
    let mut n = 0u64;
    let mut k = 0;
    while k + 1 < code.len() {
        k += usize::from(t32_size(code[k]) / 2);
        n += 1;
    }
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(n));
    g.bench_function(name, |b| {
        b.iter(|| {
            let mut waypoints = 0u32;
            let mut addr = 0x1000u32;
            let mut k = 0;
            while k + 1 < code.len() {
                let i = decode_t32(black_box(code[k]), code[k + 1], addr);
                waypoints += u32::from(i.is_waypoint());
                addr = addr.wrapping_add(u32::from(i.size));
                k += usize::from(i.size / 2);
            }
            waypoints
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_a32(c, "a32_mix", &a32_mix(1 << 16));
    bench_t32(c, "t32_mix", &t32_mix(1 << 16));
    if let Some(kernel) = testdata("TC2/kernel_dump.bin") {
        // A Thumb-2 Linux kernel: real T32 code (with its data).
        bench_t32(c, "t32_tc2_kernel_image", &halfwords(&kernel));
    }
    if let Some(code) = testdata("tc2-ptm-rstk-t32/mem_Cortex-A15_0_1_RO_CODE.bin") {
        bench_t32(c, "t32_tc2_rstk_image", &halfwords(&code));
    }
}

criterion_group!(decode, benches);
criterion_main!(decode);
