//! Decoding a capture cut into chunks on several threads gives exactly
//! the events, in exactly the order, and the same counters (events per
//! source, parser bytes, packets, skipped bytes, errors) as one decoder:
//! on the real captures, on large inputs built from them, on a formatted
//! capture of two sources (PTM and ETMv3, with timestamps) made by the
//! trace encoder, on damaged captures, and through the CLI's JSONL output.
//! Chunk sizes go down to one byte, so that cuts fall everywhere: inside
//! packets and frames, before the first I-sync of a source, in chunks
//! without any, and at A-syncs. Work done on the workers ([`Parts`]) sees
//! exactly the events of the shares it stands for.

#![allow(clippy::unwrap_used)]

use std::any::Any;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use trace_convert::input::capture::{decoder, run};
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::source::CaptureSpec;
use trace_convert::input::{flags::SourceFlags, resolve, Input};
use trace_convert::sinks::listing::events::{write_event, EventFormat};
use trace_core::capture::{
    deliveries, each_event, DecodeOptions, DecodeSummary, Delivery, ParallelStats, Part, Parts,
    WarmUp,
};
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

fn images(input: &Input) -> impl FnMut(&str) -> Arc<dyn MemoryImage> + '_ {
    |name| {
        Arc::new(memory_for(input.snapshot.as_ref(), name, &ExtraMemory::default()).unwrap())
            as Arc<dyn MemoryImage>
    }
}

fn sequential(input: &Input, spec: &CaptureSpec) -> (Vec<Event>, DecodeSummary) {
    let mut events = Vec::new();
    let mut d = decoder(spec, images(input))
        .unwrap()
        .options(DecodeOptions::with_jobs(1))
        .build();
    let summary = run(
        spec,
        &mut d,
        &mut each_event(|e| {
            events.push(*e);
            Ok(())
        }),
    )
    .unwrap();
    (events, summary)
}

fn parallel(
    input: &Input,
    spec: &CaptureSpec,
    opts: &DecodeOptions,
) -> (Vec<Event>, DecodeSummary, ParallelStats) {
    let mut events = Vec::new();
    let mut d = decoder(spec, images(input)).unwrap().options(*opts).build();
    let summary = run(
        spec,
        &mut d,
        &mut each_event(|e| {
            events.push(*e);
            Ok(())
        }),
    )
    .unwrap();
    (events, summary, d.parallel_stats())
}

/// Parts that record the events they are given.
#[derive(Clone, Copy, Debug)]
struct Recording {
    keep: bool,
    stamps: bool,
    /// Sources with an odd trace ID get no part.
    even_only: bool,
}

struct Record(Vec<Event>);

impl Part for Record {
    fn event(&mut self, event: &Event) {
        self.0.push(*event);
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        Box::new(self.0)
    }
}

impl Parts for Recording {
    fn part(&self, id: u8) -> Option<Box<dyn Part>> {
        (!self.even_only || id % 2 == 0).then(|| Box::new(Record(Vec::new())) as Box<dyn Part>)
    }

    fn keep_events(&self) -> bool {
        self.keep
    }

    fn reads_timestamps(&self) -> bool {
        self.stamps
    }
}

/// `e` as a part reading no timestamps may see it: timestamp values 0.
fn no_stamp(e: &Event) -> Event {
    let mut e = *e;
    if let EventKind::Timestamp { value, .. } = &mut e.kind {
        *value = 0;
    }
    e
}

/// Decode with `parts` and check, against the one decoder's events
/// `want`: per trace ID, the events handed on one by one and those the
/// parts saw, in delivery order, are the one decoder's (timestamp values
/// aside for parts that do not read them); the events handed on (folded
/// or not) are the one decoder's in its order; folded events come only
/// when asked for, and each part after the folded events it saw.
fn check_parts(
    input: &Input,
    spec: &CaptureSpec,
    opts: &DecodeOptions,
    parts: Recording,
    want: &[Event],
) -> u64 {
    let mut per_id: BTreeMap<u8, Vec<Event>> = BTreeMap::new();
    let mut handed = Vec::new();
    let mut folded: BTreeMap<u8, Vec<Event>> = BTreeMap::new();
    let mut results = 0u64;
    let what = format!("{}: {opts:?}, {parts:?}", spec.path.display());
    let each = |d: Delivery<'_>| {
        match d {
            Delivery::Event(e) => {
                handed.push(*e);
                per_id.entry(e.id).or_default().push(*e);
            }
            Delivery::Folded(e) => {
                assert!(parts.keep, "{what}: folded events not asked for");
                handed.push(*e);
                folded.entry(e.id).or_default().push(*e);
            }
            Delivery::Part { id, result, .. } => {
                let seen = *result.downcast::<Vec<Event>>().unwrap();
                assert!(!parts.even_only || id % 2 == 0, "{what}: part for {id}");
                if parts.keep {
                    let f = folded.remove(&id).unwrap_or_default();
                    let f: Vec<Event> = f.iter().map(no_stamp).collect();
                    let s: Vec<Event> = seen.iter().map(no_stamp).collect();
                    assert_eq!(f, s, "{what}: part of {id} against its folded events");
                }
                per_id.entry(id).or_default().extend(seen);
                results += 1;
            }
        }
        Ok(())
    };
    // With one job, the calling thread feeds the parts itself.
    let mut d = decoder(spec, images(input))
        .unwrap()
        .options(*opts)
        .parts(Arc::new(parts))
        .build();
    run(spec, &mut d, &mut deliveries(each)).unwrap();
    assert!(
        folded.values().all(Vec::is_empty),
        "{what}: folded events without a part"
    );
    if parts.keep {
        assert!(handed == want, "{what}: the events handed on differ");
    }
    let mut want_per_id: BTreeMap<u8, Vec<Event>> = BTreeMap::new();
    for e in want {
        want_per_id.entry(e.id).or_default().push(*e);
    }
    for (id, w) in &want_per_id {
        let got = per_id.remove(id).unwrap_or_default();
        let (got, w): (Vec<Event>, Vec<Event>) = if parts.stamps {
            (got, w.clone())
        } else {
            (
                got.iter().map(no_stamp).collect(),
                w.iter().map(no_stamp).collect(),
            )
        };
        if let Some(i) = (0..got.len().max(w.len())).find(|&i| got.get(i) != w.get(i)) {
            panic!(
                "{what}: trace ID {id}: event {i} of {}/{} differs:\n  got  {:?}\n  want {:?}",
                got.len(),
                w.len(),
                got.get(i),
                w.get(i)
            );
        }
    }
    assert!(per_id.is_empty(), "{what}: events of unknown sources");
    results
}

/// The part settings a run of [`check_with`] also checks, in turn.
const PART_KINDS: [Recording; 3] = [
    Recording {
        keep: false,
        stamps: true,
        even_only: false,
    },
    Recording {
        keep: true,
        stamps: false,
        even_only: false,
    },
    Recording {
        keep: false,
        stamps: false,
        even_only: true,
    },
];

fn jsonl(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        write_event(&mut out, EventFormat::Jsonl, e, None).unwrap();
    }
    out
}

fn options(jobs: usize, part_bytes: u64) -> DecodeOptions {
    DecodeOptions {
        jobs,
        min_parallel_bytes: 0,
        part_bytes,
        parts_per_job: 2,
        warm_up: WarmUp::Auto,
    }
}

/// Compare the parallel decode of `spec` with the one-thread decode for
/// several (chunk size, threads); returns the one-thread summary and the
/// stats of every run.
fn check(
    input: &Input,
    spec: &CaptureSpec,
    runs: &[(u64, usize)],
) -> (Vec<Event>, DecodeSummary, Vec<ParallelStats>) {
    check_with(input, spec, runs, WarmUp::Auto)
}

/// [`check`] with the return-stack warm-up set to `warm_up`.
fn check_with(
    input: &Input,
    spec: &CaptureSpec,
    runs: &[(u64, usize)],
    warm_up: WarmUp,
) -> (Vec<Event>, DecodeSummary, Vec<ParallelStats>) {
    let (want, want_summary) = sequential(input, spec);
    assert!(
        want.iter().any(|e| matches!(e.kind, EventKind::Range(_))),
        "{}: no ranges decoded",
        spec.path.display()
    );
    let want_bytes = jsonl(&want);
    let mut all = Vec::new();
    // Shares taken over from the workers, and part results, in the runs
    // whose parts ignore timestamps (others may all be decoded again).
    let (mut taken, mut part_results) = (0, 0);
    for (run, &(part_bytes, jobs)) in runs.iter().enumerate() {
        let opts = DecodeOptions {
            warm_up,
            ..options(jobs, part_bytes)
        };
        let (got, summary, stats) = parallel(input, spec, &opts);
        eprintln!(
            "{}: chunks of {part_bytes}, {jobs} jobs, warm-up {warm_up:?}: {} events, {stats:?}",
            spec.path.display(),
            got.len()
        );
        if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
            panic!(
                "{}: chunks of {part_bytes}, {jobs} jobs: event {i} of {}/{} differs:\n  got  {:?}\n  want {:?}",
                spec.path.display(),
                got.len(),
                want.len(),
                got.get(i),
                want.get(i)
            );
        }
        assert!(jsonl(&got) == want_bytes, "JSONL differs");
        assert_eq!(summary, want_summary, "chunks of {part_bytes}, {jobs} jobs");
        let parts = PART_KINDS[run % PART_KINDS.len()];
        let results = check_parts(input, spec, &opts, parts, &want);
        if !parts.stamps && !parts.even_only {
            taken += stats.parts - stats.redone;
            part_results += results;
        }
        all.push(stats);
    }
    assert!(
        taken == 0 || part_results > 0,
        "{}: no part results",
        spec.path.display()
    );
    (want, want_summary, all)
}

/// Chunk sizes from one byte (every frame and packet cut) to more than a
/// whole capture.
const SIZES: [(u64, usize); 9] = [
    (1, 2),
    (5, 3),
    (16, 2),
    (48, 3),
    (100, 2),
    (333, 2),
    (1000, 3),
    (4096, 2),
    (1 << 20, 2),
];

fn snapshot(name: &str) -> Option<Input> {
    let dir = test_support::opencsd_dir()?;
    Some(resolve(&dir.join(name), &SourceFlags::default()).unwrap())
}

fn sum(stats: &[ParallelStats], f: impl Fn(&ParallelStats) -> u64) -> u64 {
    stats.iter().map(f).sum()
}

/// On one thread, parts that keep no events are fed by the calling
/// thread and handed on about every `part_bytes` of the capture; parts that
/// keep events are not made, and every event is handed on.
#[test]
fn one_thread_feeds_parts_that_keep_no_events() {
    for name in ["tc2-ptm-rstk-t32", "TC2"] {
        let Some(input) = snapshot(name) else {
            return;
        };
        for spec in &input.captures {
            let (want, _) = sequential(&input, spec);
            let size = std::fs::metadata(&spec.path).unwrap().len();
            for part_bytes in [1, 1000, 1 << 30] {
                let opts = options(1, part_bytes);
                for parts in PART_KINDS {
                    let results = check_parts(&input, spec, &opts, parts, &want);
                    let what =
                        format!("{}: chunks of {part_bytes}, {parts:?}", spec.path.display());
                    if parts.keep {
                        assert_eq!(results, 0, "{what}: parts made");
                    } else if part_bytes == 1 << 30 {
                        // One part per source with a part, at the end.
                        assert!((1..=4).contains(&results), "{what}: {results} parts");
                    } else {
                        assert!(results > size / part_bytes / 4, "{what}: {results} parts");
                    }
                }
            }
        }
    }
}

#[test]
fn chunks_equal_one_decoder_on_the_real_captures() {
    for name in ["tc2-ptm-rstk-t32", "TC2"] {
        let Some(input) = snapshot(name) else {
            return;
        };
        for spec in &input.captures {
            let (_, _, stats) = check(&input, spec, &SIZES);
            // Chunks decoded on the workers from their I-sync, and chunks
            // without one, decoded by the join.
            assert!(sum(&stats, |s| s.parts) > 0, "{name}: {stats:?}");
            assert!(sum(&stats, |s| s.serial) > 0, "{name}: {stats:?}");
            assert!(stats.iter().all(|s| s.chunks >= 1));
        }
    }
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "trace-convert-parallel-{tag}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A copy of the snapshot in `src` under `dir`, its trace buffer file
/// replaced by `edit` of the original (the other files are copied).
fn edited_snapshot(src: &Path, dir: &Path, edit: impl Fn(&[u8]) -> Vec<u8>) -> PathBuf {
    let input = resolve(src, &SourceFlags::default()).unwrap();
    let buffer = input.captures[0].path.clone();
    let out = dir.join(src.file_name().unwrap());
    std::fs::create_dir_all(&out).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_file() {
            continue;
        }
        let target = out.join(path.file_name().unwrap());
        if path.file_name() == buffer.file_name() {
            std::fs::write(&target, edit(&std::fs::read(&path).unwrap())).unwrap();
        } else {
            std::fs::copy(&path, &target).unwrap();
            let mut perms = std::fs::metadata(&target).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&target, perms).unwrap();
        }
    }
    out
}

fn repeat(bytes: &[u8], copies: usize) -> Vec<u8> {
    bytes.repeat(copies)
}

#[test]
fn chunks_equal_one_decoder_on_repeated_captures() {
    let tmp = TempDir::new("repeat");
    // The raw PTM capture starts with an A-sync and an I-sync and ends in
    // a debug halt, so copies chain; the TC2 buffer repeated is several
    // sessions of formatted trace (ETMv3 with timestamps and PTM), each
    // copy's streams cut at its end.
    for (name, copies) in [("tc2-ptm-rstk-t32", 6), ("TC2", 6)] {
        let Some(src) = test_support::opencsd_dir().map(|d| d.join(name)) else {
            return;
        };
        let dir = edited_snapshot(&src, &tmp.0, |b| repeat(b, copies));
        let input = resolve(&dir, &SourceFlags::default()).unwrap();
        for spec in &input.captures {
            let (_, _, stats) = check(&input, spec, &[(16, 3), (3000, 2), (40_000, 2)]);
            assert!(stats[2].parts >= 2, "{name}: {stats:?}");
            // Timestamp bases guessed by the chunks' parsers are corrected
            // at the join, not redone.
            assert_eq!(stats[2].redone, 0, "{name}: {stats:?}");
        }
    }
}

/// A deterministic byte stream.
fn noise(seed: u64) -> impl Iterator<Item = u8> {
    let mut x = seed | 1;
    std::iter::from_fn(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Some((x >> 24) as u8)
    })
}

/// `bytes` with some bytes overwritten, some removed, garbage inserted,
/// and the end cut off inside a packet.
fn damage(bytes: &[u8], seed: u64) -> Vec<u8> {
    let mut rng = noise(seed);
    let mut out = Vec::with_capacity(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        match i % 1531 {
            700 => out.push(rng.next().unwrap()),
            900 => {}
            1200 => {
                out.push(b);
                out.extend((0..9).map(|_| rng.next().unwrap()));
            }
            _ => out.push(b),
        }
    }
    out.truncate(out.len().saturating_sub(3));
    out
}

#[test]
fn chunks_equal_one_decoder_on_damaged_captures() {
    let tmp = TempDir::new("damage");
    for (name, copies) in [("tc2-ptm-rstk-t32", 3), ("TC2", 3)] {
        let Some(src) = test_support::opencsd_dir().map(|d| d.join(name)) else {
            return;
        };
        let dir = edited_snapshot(&src, &tmp.0, |b| damage(&repeat(b, copies), 7));
        let input = resolve(&dir, &SourceFlags::default()).unwrap();
        for spec in &input.captures {
            let (_, summary, stats) = check(&input, spec, &SIZES);
            let (skipped, errors) = summary
                .parsed
                .iter()
                .fold((0, 0), |(s, e), (_, p)| (s + p.skipped, e + p.errors));
            assert!(skipped > 0 && errors > 0, "{name}: {summary:?}");
            assert!(sum(&stats, |s| s.parts) > 0, "{name}: {stats:?}");
            // Warm-ups across damage (lost sync clears the stack).
            check_with(&input, spec, &SIZES[2..6], WarmUp::Always);
        }
    }
}

/// A CoreSight-formatted snapshot of two sources made by the trace
/// encoder from the corpus program `example`: cycle-accurate PTM with the
/// return stack (T32 build) on trace ID 0x10 and cycle-accurate ETMv3.5
/// (A32 build) on 0x21, both with timestamps and periodic A-sync/I-sync,
/// interleaved `interleave` bytes at a time.
fn encoded_two_sources(dir: &Path, interleave: usize) -> PathBuf {
    use trace_core::memory::{MemoryMap, Space};
    use trace_encode::capture::{format_capture, Layout, Source};
    use trace_encode::snapshot::{dumps_of, write_snapshot, BufferFormat, Core, SnapshotSpec};
    use trace_encode::{encode_etm, encode_ptm, EtmOptions, Flow, PtmOptions, SyncPeriod};
    use trace_encode::{CycleModel, TraceOptions};

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/fixtures");
    let load = |name: &str| {
        let flow =
            Flow::parse(&std::fs::read_to_string(fixtures.join(format!("{name}.flow"))).unwrap())
                .unwrap();
        let mut memory = MemoryMap::new();
        memory
            .add_elf(&fixtures.join(format!("{name}.elf")), Space::Any)
            .unwrap();
        (flow, memory)
    };
    let (t_flow, t_mem) = load("example-t");
    let (a_flow, a_mem) = load("example-a");
    let trace = TraceOptions {
        sync: Some(SyncPeriod::Bytes(700)),
        timestamps: true,
        timestamp_interval: 150,
        cycles: CycleModel {
            per_instruction: 1,
            taken_branch: 2,
        },
        ..TraceOptions::default()
    };
    let ptm = encode_ptm(
        &t_flow.items,
        &t_mem,
        &PtmOptions {
            return_stack: true,
            cycle_accurate: true,
            trace: trace.clone(),
            ..PtmOptions::default()
        },
    )
    .unwrap();
    let etm = encode_etm(
        &a_flow.items,
        &a_mem,
        &EtmOptions {
            cycle_accurate: true,
            trace,
            ..EtmOptions::default()
        },
    )
    .unwrap();
    let capture = format_capture(
        &[
            Source {
                id: 0x10,
                bytes: &ptm.bytes,
            },
            Source {
                id: 0x21,
                bytes: &etm.bytes,
            },
        ],
        Layout::Memory,
        interleave,
    )
    .unwrap();
    let out = dir.join(format!("two-sources-{interleave}"));
    let core = |name: &str, memory: &MemoryMap| Core {
        name: name.into(),
        kind: "Cortex-A9".into(),
        pc: 0,
        dumps: dumps_of(memory),
    };
    let source =
        |name: &str, t: &trace_encode::Trace, id: u8, core: &str| trace_encode::snapshot::Source {
            name: name.into(),
            protocol: t.protocol,
            regs: t.regs,
            id,
            core: core.into(),
        };
    write_snapshot(
        &out,
        &SnapshotSpec {
            cores: vec![core("cpu_0", &t_mem), core("cpu_1", &a_mem)],
            sources: vec![
                source("PTM_0", &ptm, 0x10, "cpu_0"),
                source("ETM_1", &etm, 0x21, "cpu_1"),
            ],
            trace: capture,
            format: BufferFormat::CoreSight,
            timestamp_hz: None,
        },
    )
    .unwrap();
    out
}

#[test]
fn chunks_equal_one_decoder_on_a_formatted_capture_of_two_sources() {
    let tmp = TempDir::new("two");
    for interleave in [5, 64] {
        let dir = encoded_two_sources(&tmp.0, interleave);
        let input = resolve(&dir, &SourceFlags::default()).unwrap();
        let spec = &input.captures[0];
        let (want, summary, stats) = check(
            &input,
            spec,
            &[(1, 2), (16, 3), (200, 2), (4096, 2), (65_536, 3)],
        );
        assert_eq!(summary.sources.len(), 2, "{summary:?}");
        assert!(want
            .iter()
            .any(|e| matches!(e.kind, EventKind::Timestamp { .. })));
        assert!(sum(&stats, |s| s.parts) > 0, "{stats:?}");
        // With the largest chunks most shares are taken over at the join
        // (a share whose returns pop entries pushed before its chunk, from
        // the PTM source's return stack, is decoded again).
        assert!(2 * stats[4].redone <= stats[4].parts, "{stats:?}");
        // Damaged: bytes flipped and removed across frames.
        let damaged = edited_snapshot(&dir, &tmp.0.join("damaged"), |b| damage(b, 11));
        let input = resolve(&damaged, &SourceFlags::default()).unwrap();
        check(&input, &input.captures[0], &[(1, 2), (333, 3), (8192, 2)]);
    }
}

/// A share of the PTM source (return stack on) whose returns pop calls
/// made before its chunk cannot be taken over and is decoded again; with
/// the decoder warmed up on the bytes before each chunk, the calls made
/// there are on its stack, and fewer shares are redone. The events are
/// the one decoder's either way, with chunks down to one byte (whose
/// warm-ups reach back into earlier windows).
#[test]
fn warmed_up_return_stacks_spare_redoing_shares() {
    let tmp = TempDir::new("warm");
    let dir = encoded_two_sources(&tmp.0, 64);
    let input = resolve(&dir, &SourceFlags::default()).unwrap();
    let spec = &input.captures[0];
    let runs = [(1024, 2), (2048, 2), (4096, 3)];
    let (_, _, cold) = check_with(&input, spec, &runs, WarmUp::Never);
    let (_, _, warm) = check_with(&input, spec, &runs, WarmUp::Always);
    // A warmed-up parser is in step from the chunk's start, so it may
    // find a share's I-sync where a fresh one is still looking for an
    // A-sync.
    for (c, w) in cold.iter().zip(&warm) {
        assert!(w.parts >= c.parts, "{c:?} {w:?}");
    }
    let (c, w) = (sum(&cold, |s| s.redone), sum(&warm, |s| s.redone));
    assert!(c >= 5, "{cold:?}");
    assert!(4 * w <= c, "{cold:?} {warm:?}");
    // Also on more threads than this machine has cores.
    check_with(&input, spec, &[(1, 2), (100, 3), (2048, 8)], WarmUp::Always);
}

#[test]
fn cli_jsonl_of_a_large_capture_equals_one_decoder() {
    let tmp = TempDir::new("cli");
    // TRACE_CONVERT_JOBS makes the CLI decode in parallel whatever the
    // capture's size and the machine; the copies hold several chunks.
    let Some(src) = test_support::opencsd_dir().map(|d| d.join("tc2-ptm-rstk-t32")) else {
        return;
    };
    let dir = edited_snapshot(&src, &tmp.0, |b| repeat(b, 40));
    let input = resolve(&dir, &SourceFlags::default()).unwrap();
    let want = jsonl(&sequential(&input, &input.captures[0]).0);
    // Two threads: one decodes, one formats the lines; three: two decode.
    for jobs in ["2", "3"] {
        let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
            .env("TRACE_CONVERT_JOBS", jobs)
            .args(["decode", "--format", "jsonl"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stdout == want,
            "CLI output on {jobs} threads differs from one decoder's"
        );
    }
}
