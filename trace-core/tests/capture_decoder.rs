//! The capture builder's ways in agree: TC2's formatted capture (three
//! ETMv3.5 sources and a PTM, configured from the snapshot's device files)
//! decoded into a consumer on one thread and on two, and pulled as an
//! iterator, from a byte slice and from the file, gives the same events in
//! the same order and the same counters; every byte of the file is read.
//! So does the capture read as a stream (pieces, and reads that have
//! nothing new for now), its events handed on as its bytes arrive.

#![cfg(feature = "parallel")]

use std::sync::Arc;
use trace_core::capture::{each_event, CaptureDecoder, DecodeOptions, DecodeSummary};
use trace_core::event::{Event, EventKind};
use trace_core::frames::FrameMode;
use trace_core::memory::{MemoryImage, MemoryMap, Space};
use trace_core::source::{Protocol, Regs};

/// TC2's sources, as its `device_*.ini` files list them.
const SOURCES: [(u8, Protocol, Regs); 4] = [
    (0x10, Protocol::Etmv3, ETM),
    (0x11, Protocol::Etmv3, ETM),
    (0x12, Protocol::Etmv3, ETM),
    (0x13, Protocol::Ptm, PTM),
];
const ETM: Regs = Regs {
    etmcr: 0x1000_1860,
    etmccer: 0x3440_08F2,
    etmidr: 0x410C_F250,
};
const PTM: Regs = Regs {
    etmcr: 0x1000_1000,
    etmccer: 0x34C0_1AC2,
    etmidr: 0x411C_F312,
};

fn decoder(memory: &Arc<dyn MemoryImage>, options: DecodeOptions) -> CaptureDecoder {
    let mut b = CaptureDecoder::builder(FrameMode::Memory).options(options);
    for (id, protocol, regs) in SOURCES {
        let cfg = regs.decoder_config(protocol, id).expect("TC2 registers");
        b = b.source(cfg).memory(id, Arc::clone(memory));
    }
    b.build()
}

fn run(d: &mut CaptureDecoder, input: impl std::io::Read) -> (Vec<Event>, DecodeSummary) {
    let mut events = Vec::new();
    let summary = d
        .run(
            input,
            &mut each_event(|e| {
                events.push(*e);
                Ok(())
            }),
        )
        .expect("decodes");
    (events, summary)
}

#[test]
fn every_way_in_gives_the_same_events() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let dir = dir.join("TC2");
    let capture = std::fs::read(dir.join("cstrace.bin")).expect("capture");
    // The cores' code, where cpu_*.ini puts it.
    let mut map = MemoryMap::new();
    map.add_file(
        &dir.join("kernel_dump.bin"),
        0xC000_8000,
        Space::Any,
        0,
        Some(0x5_0000),
    )
    .expect("kernel dump");
    let memory: Arc<dyn MemoryImage> = Arc::new(map);

    let (want, want_summary) = run(
        &mut decoder(&memory, DecodeOptions::with_jobs(1)),
        &capture[..],
    );
    assert_eq!(want_summary.bytes, capture.len() as u64);
    let ids: Vec<u8> = want_summary.sources.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [0x10, 0x11, 0x12, 0x13]);
    assert!(want_summary.sources.iter().all(|(_, c)| c.instructions > 0));
    let ranges = want
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Range(_)))
        .count() as u64;
    assert_eq!(
        want_summary
            .sources
            .iter()
            .map(|(_, c)| c.ranges)
            .sum::<u64>(),
        ranges
    );

    // Two threads, chunks of 1 KiB, whatever the size; from the file.
    let mut two = decoder(
        &memory,
        DecodeOptions {
            part_bytes: 1024,
            ..DecodeOptions::chosen_jobs(2)
        },
    );
    let file = std::fs::File::open(dir.join("cstrace.bin")).expect("open");
    let (got, summary) = run(&mut two, file);
    assert!(
        two.parallel_stats().chunks > 1,
        "{:?}",
        two.parallel_stats()
    );
    assert!(got == want, "the parallel decode's events differ");
    assert_eq!(summary, want_summary);

    // A pool of the caller's.
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool"),
    );
    let mut pooled = CaptureDecoder::builder(FrameMode::Memory);
    for (id, protocol, regs) in SOURCES {
        let cfg = regs.decoder_config(protocol, id).expect("TC2 registers");
        pooled = pooled.source(cfg).memory(id, Arc::clone(&memory));
    }
    let mut pooled = pooled
        .options(DecodeOptions {
            part_bytes: 4096,
            ..DecodeOptions::chosen_jobs(8)
        })
        .thread_pool(pool)
        .build();
    let (got, summary) = run(&mut pooled, &capture[..]);
    assert!(pooled.parallel_stats().chunks > 1);
    assert!(got == want, "the caller's pool's events differ");
    assert_eq!(summary, want_summary);

    // As a stream: pieces of odd sizes, with reads that have nothing new
    // for now (`WouldBlock`) between them, on two threads and on one.
    for jobs in [2, 1] {
        let given = std::cell::Cell::new(0usize);
        let mut first_at = None;
        let mut d = decoder(&memory, DecodeOptions::chosen_jobs(jobs));
        let mut got = Vec::new();
        let summary = d
            .run(
                Trickle {
                    bytes: &capture,
                    given: &given,
                    reads: 0,
                },
                &mut each_event(|e| {
                    first_at.get_or_insert(given.get());
                    got.push(*e);
                    Ok(())
                }),
            )
            .expect("decodes");
        assert!(got == want, "the streamed events differ ({jobs} threads)");
        assert_eq!(summary, want_summary);
        // Events are handed on as the bytes arrive, not at the end.
        let first_at = first_at.expect("events");
        assert!(
            first_at < capture.len() / 2,
            "first event after {first_at} of {} bytes ({jobs} threads)",
            capture.len()
        );
        if jobs == 2 {
            assert!(d.parallel_stats().chunks > 4, "{:?}", d.parallel_stats());
        }
    }

    // Pulled.
    let mut pulled = decoder(&memory, DecodeOptions::default()).events(&capture[..]);
    let got: Vec<Event> = pulled.by_ref().map(|e| e.expect("decodes")).collect();
    assert!(got == want, "the pulled events differ");
    assert_eq!(pulled.summary(), want_summary);
}

/// A stream: `bytes` handed out in pieces of 1 to 4099 bytes, a read
/// in three saying that nothing new has come (`WouldBlock`); `given`
/// counts the bytes handed out.
struct Trickle<'a> {
    bytes: &'a [u8],
    given: &'a std::cell::Cell<usize>,
    reads: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reads += 1;
        if self.reads % 3 == 0 && !self.bytes.is_empty() {
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        let n = (self.reads * 1237 % 4099 + 1)
            .min(buf.len())
            .min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.given.set(self.given.get() + n);
        Ok(n)
    }
}

#[test]
fn a_read_error_is_reported() {
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("unplugged"))
        }
    }
    let memory: Arc<dyn MemoryImage> = Arc::new(MemoryMap::new());
    for options in [DecodeOptions::with_jobs(1), DecodeOptions::chosen_jobs(2)] {
        let mut d = decoder(&memory, options);
        let err = d
            .run(Broken, &mut each_event(|_| Ok(())))
            .expect_err("a read error");
        assert!(err.to_string().contains("unplugged"), "{err}");
    }
    let mut pulled = decoder(&memory, DecodeOptions::default()).events(Broken);
    assert!(matches!(pulled.next(), Some(Err(_))));
    assert!(pulled.next().is_none());
}

#[test]
fn random_frames_hold_room_for_one_chunk_of_events_not_one_per_trace_id() {
    // Bytes from a fixed generator (xorshift) read as formatted frames of
    // every trace ID: a hundred IDs in each chunk, each with few events
    // (here none: no A-sync comes up).
    let mut rng = test_support::Rng(0x2545_F491_4F6C_DD1D);
    let bytes: Vec<u8> = (0..1 << 20).map(|_| (rng.next_u64() >> 24) as u8).collect();
    let memory: Arc<dyn MemoryImage> = Arc::new(MemoryMap::new());
    let template = ETM.decoder_config(Protocol::Etmv3, 0x10).expect("ETM");
    let mut d = CaptureDecoder::builder(FrameMode::Memory)
        .options(DecodeOptions::chosen_jobs(2))
        .any_id(template)
        .memory(0x10, Arc::clone(&memory))
        .build();
    let (events, summary) = run(&mut d, &bytes[..]);
    assert!(summary.parsed.len() > 50, "{} IDs", summary.parsed.len());
    let stats = d.parallel_stats();
    assert!(stats.chunks > 4, "{stats:?}");
    // One chunk's room (64 Ki events), what its other sources grew to
    // hold and the spare buffers they took (6 at most on two threads):
    // not 64 Ki events for each of a hundred IDs.
    let chunk_events = 64 << 10;
    assert!(
        stats.largest_chunk_room <= 7 * chunk_events,
        "{stats:?} ({} events in all)",
        events.len()
    );
    // Random frames give a run for nearly every two bytes, and no source
    // finds an I-sync: the workers give sources up rather than keep every
    // run for the join, which then reads them from the frames.
    assert!(stats.given_up > 0, "{stats:?}");
    // The same events as one thread.
    let mut one = CaptureDecoder::builder(FrameMode::Memory)
        .options(DecodeOptions::with_jobs(1))
        .any_id(template)
        .memory(0x10, memory)
        .build();
    assert_eq!(run(&mut one, &bytes[..]).0, events);
}
