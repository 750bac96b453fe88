//! Decoding in parallel parts gives exactly the events, in exactly the
//! order, of one decoder: on the real captures, and on large inputs built
//! from them, for many part sizes (tiny parts put part boundaries at every
//! I-sync), and through the CLI's JSONL output.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use trace_convert::decode::parallel::{decode_parallel, DecodeOptions, ParallelStats};
use trace_convert::decode::{decode_sequential, memory_for, write_event, EventFormat, ExtraMemory};
use trace_convert::input::source::CaptureSpec;
use trace_convert::input::{flags::SourceFlags, resolve, Input};
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

fn images(input: &Input) -> impl FnMut(&str) -> Arc<dyn MemoryImage> + '_ {
    |name| {
        Arc::new(memory_for(input.snapshot.as_ref(), name, &ExtraMemory::default()).unwrap())
            as Arc<dyn MemoryImage>
    }
}

fn sequential(input: &Input, spec: &CaptureSpec) -> Vec<Event> {
    let mut events = Vec::new();
    decode_sequential(spec, images(input), |e| {
        events.push(*e);
        Ok(())
    })
    .unwrap();
    events
}

fn parallel(
    input: &Input,
    spec: &CaptureSpec,
    opts: &DecodeOptions,
) -> (Vec<Event>, ParallelStats) {
    let mut events = Vec::new();
    let (_, stats) = decode_parallel(spec, images(input), opts, |e| {
        events.push(*e);
        Ok(())
    })
    .unwrap();
    (events, stats)
}

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
    }
}

/// Compare the parallel decode of `spec` with the one-thread decode for
/// several (part size, threads); returns the stats of the first.
fn check(input: &Input, spec: &CaptureSpec, runs: &[(u64, usize)]) -> ParallelStats {
    let want = sequential(input, spec);
    assert!(
        want.iter().any(|e| matches!(e.kind, EventKind::Range(_))),
        "{}: no ranges decoded",
        spec.path.display()
    );
    let want_bytes = jsonl(&want);
    let mut first = None;
    for &(part_bytes, jobs) in runs {
        {
            let (got, stats) = parallel(input, spec, &options(jobs, part_bytes));
            eprintln!(
                "{}: part size {part_bytes}, {jobs} jobs: {} events, {stats:?}",
                spec.path.display(),
                got.len()
            );
            assert_eq!(got.len(), want.len(), "{part_bytes} bytes, {jobs} jobs");
            if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                panic!(
                    "{}: part size {part_bytes}, {jobs} jobs: event {i} differs:\n  got  {:?}\n  want {:?}",
                    spec.path.display(),
                    got[i],
                    want[i]
                );
            }
            assert_eq!(jsonl(&got), want_bytes);
            first.get_or_insert(stats);
        }
    }
    first.unwrap()
}

fn snapshot(name: &str) -> Option<Input> {
    let dir = test_support::opencsd_dir()?;
    Some(resolve(&dir.join(name), &SourceFlags::default()).unwrap())
}

#[test]
fn parallel_parts_equal_one_decoder_on_the_real_captures() {
    for name in ["tc2-ptm-rstk-t32", "TC2"] {
        let Some(input) = snapshot(name) else {
            return;
        };
        for spec in &input.captures {
            let stats = check(
                &input,
                spec,
                &[(0, 2), (1, 3), (64, 2), (512, 3), (4096, 2), (1 << 20, 2)],
            );
            assert!(stats.parts > 1, "{name}: {stats:?}");
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

/// A copy of snapshot `name` in `dir` whose trace buffer file is `copies`
/// copies of the original (the other files are linked).
fn repeated_snapshot(name: &str, dir: &Path, copies: usize) -> Option<PathBuf> {
    let src = test_support::opencsd_dir()?.join(name);
    let input = resolve(&src, &SourceFlags::default()).unwrap();
    let buffer = input.captures[0].path.clone();
    let out = dir.join(name);
    std::fs::create_dir_all(&out).unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let target = out.join(entry.file_name());
        if path.file_name() == buffer.file_name() {
            let one = std::fs::read(&path).unwrap();
            let mut all = Vec::with_capacity(one.len() * copies);
            for _ in 0..copies {
                all.extend_from_slice(&one);
            }
            std::fs::write(&target, all).unwrap();
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
    Some(out)
}

#[test]
fn parallel_parts_equal_one_decoder_on_repeated_captures() {
    let tmp = TempDir::new("repeat");
    // The raw PTM capture starts with an A-sync and an I-sync and ends in
    // a debug halt, so copies chain; the TC2 buffer repeated is several
    // sessions of formatted trace, each copy's streams cut at its end.
    for (name, copies) in [("tc2-ptm-rstk-t32", 6), ("TC2", 6)] {
        let Some(dir) = repeated_snapshot(name, &tmp.0, copies) else {
            return;
        };
        let input = resolve(&dir, &SourceFlags::default()).unwrap();
        for spec in &input.captures {
            let stats = check(&input, spec, &[(0, 3), (3000, 2), (40_000, 2)]);
            assert!(stats.parts >= copies as u64, "{name}: {stats:?}");
        }
    }
}

#[test]
fn cli_jsonl_of_a_large_capture_equals_one_decoder() {
    let tmp = TempDir::new("cli");
    // TRACE_CONVERT_JOBS makes the CLI decode in parallel whatever the
    // capture's size and the machine; the default part size puts a dozen
    // boundaries in these copies.
    let Some(dir) = repeated_snapshot("tc2-ptm-rstk-t32", &tmp.0, 12) else {
        return;
    };
    let input = resolve(&dir, &SourceFlags::default()).unwrap();
    let want = jsonl(&sequential(&input, &input.captures[0]));
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .env("TRACE_CONVERT_JOBS", "2")
        .args(["decode", "--format", "jsonl"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout == want, "CLI output differs from one decoder's");
}
