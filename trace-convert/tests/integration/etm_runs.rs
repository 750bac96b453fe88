//! ETMv3 decoded by runs (what the conversions use) against one range per
//! instruction (OpenCSD's elements, which the listings show), on the real
//! captures and on the corpus programs: the instructions, expanded from
//! the memory image, are the same in the same order, each that failed its
//! condition is the last of its run, the cycles add up to the same total,
//! and every other event is the same in the same order (cycle counts
//! aside, which a run takes in); on two threads the runs are those of one.

use std::collections::BTreeMap;
use std::sync::Arc;
use trace_convert::input::flags::SourceFlags;
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::source::{CaptureSpec, Protocol};
use trace_convert::input::{self, Input};
use trace_core::capture::DecodeOptions;
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

/// The events of `spec`, by runs or not, on `jobs` threads (chunks of
/// 64 KiB so that a small capture is cut into several).
fn events(
    spec: &CaptureSpec,
    input: &Input,
    extra: &ExtraMemory,
    runs: bool,
    jobs: usize,
) -> Vec<Event> {
    let mut options = DecodeOptions::chosen_jobs(jobs);
    options.part_bytes = 64 << 10;
    let memory = |name: &str| -> Arc<dyn MemoryImage> {
        Arc::new(memory_for(input.snapshot.as_ref(), name, extra).expect("memory"))
    };
    let mut out = Vec::new();
    let mut d = input::capture::decoder(spec, memory)
        .expect("configuration")
        .options(options)
        .block_ranges(runs)
        .build();
    input::capture::run(
        spec,
        &mut d,
        &mut trace_core::capture::each_event(|e| {
            out.push(*e);
            Ok(())
        }),
    )
    .expect("decodes");
    out
}

/// Per trace ID: each instruction (address, and whether it is the last
/// of its range and executed), the cycles in all, the other events.
type Expanded = BTreeMap<u8, (Vec<(u32, bool)>, u64, Vec<Event>)>;

fn expand(
    events: &[Event],
    memory: &dyn Fn(u8) -> Arc<dyn MemoryImage>,
    etm: &dyn Fn(u8) -> bool,
) -> Expanded {
    let mut by_id = Expanded::new();
    for e in events {
        let (insns, cycles, other) = by_id.entry(e.id).or_default();
        match e.kind {
            EventKind::Range(r) => {
                let mut n = 0;
                for i in r.instructions(&*memory(e.id)) {
                    n += 1;
                    // Only a range's last instruction has an outcome of its
                    // own: a conditional one ends its run.
                    assert!(
                        n == r.count || i.cond == isa_decode::Cond::Al || !etm(e.id),
                        "{e:?}: conditional instruction at {:#x} inside",
                        i.addr
                    );
                    insns.push((i.addr, n < r.count || r.executed));
                }
                assert_eq!(n, r.count, "{e:?}: the image covers the range");
                *cycles += u64::from(r.cycles.unwrap_or(0));
            }
            EventKind::CycleCount(c) => *cycles += u64::from(c),
            _ => other.push(*e),
        }
    }
    by_id
}

/// Check the two decodes of every capture of `input`; returns the ranges
/// of one per instruction and of runs.
fn check(input: &Input, extra: &ExtraMemory) -> (usize, usize) {
    let (mut per_n, mut runs_n) = (0, 0);
    for spec in &input.captures {
        let of = |name: &str| -> Arc<dyn MemoryImage> {
            Arc::new(memory_for(input.snapshot.as_ref(), name, extra).expect("memory"))
        };
        let named: BTreeMap<u8, Arc<dyn MemoryImage>> =
            spec.sources.iter().map(|s| (s.id, of(&s.name))).collect();
        let other = of("");
        let image = |id: u8| Arc::clone(named.get(&id).unwrap_or(&other));
        let per = events(spec, input, extra, false, 1);
        let runs = events(spec, input, extra, true, 1);
        let count = |v: &[Event]| {
            v.iter()
                .filter(|e| matches!(e.kind, EventKind::Range(_)))
                .count()
        };
        per_n += count(&per);
        runs_n += count(&runs);
        let etm = |id: u8| {
            spec.sources
                .iter()
                .find(|s| s.id == id)
                .map(|s| s.protocol)
                .or(spec.any_id.map(|(p, _)| p))
                == Some(Protocol::Etmv3)
        };
        let (a, b) = (expand(&per, &image, &etm), expand(&runs, &image, &etm));
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
        for (id, (insns, cycles, other)) in &a {
            let (insns2, cycles2, other2) = &b[id];
            assert_eq!(insns.len(), insns2.len(), "ID {id:#x}: instructions");
            // One per instruction: every instruction carries its atom.
            // By runs: only a run's last one may have failed.
            let failed = insns.iter().filter(|(_, e)| !e).count();
            let failed_last = insns2.iter().filter(|(_, e)| !e).count();
            assert_eq!(failed, failed_last, "ID {id:#x}: failed conditions");
            assert_eq!(insns, insns2, "ID {id:#x}: instructions and atoms");
            assert_eq!(cycles, cycles2, "ID {id:#x}: cycles");
            assert_eq!(other, other2, "ID {id:#x}: other events");
        }
        // Threads change nothing of the runs (per trace ID).
        let two = events(spec, input, extra, true, 2);
        let by_id = |v: &[Event]| {
            let mut m: BTreeMap<u8, Vec<Event>> = BTreeMap::new();
            for e in v {
                m.entry(e.id).or_default().push(*e);
            }
            m
        };
        assert_eq!(by_id(&runs), by_id(&two), "two threads");
    }
    (per_n, runs_n)
}

#[test]
fn tc2_by_runs_is_the_same_flow() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let input = input::resolve(&dir.join("TC2"), &SourceFlags::default()).expect("TC2");
    let (per, runs) = check(&input, &ExtraMemory::default());
    // 7,205 + 7,471 + 1,947 ETMv3 instructions, one range each in
    // OpenCSD's listing; PTM's ranges are the same either way.
    assert!(
        per > 16_623 && runs * 2 < per,
        "{per} ranges, {runs} by runs"
    );
}

#[test]
fn cortex_r5_captures_by_runs_are_the_same_flow() {
    let Some(dir) = test_support::real_dir() else {
        return;
    };
    for name in [
        "002b37c-freertos",
        "b8b29a1-threadx",
        "ce42d22-freertos",
        "002b37c-zephyr",
    ] {
        let path = dir.join("am243x-r5f").join(name);
        let input = input::resolve(&path, &SourceFlags::default()).expect("snapshot");
        let (per, runs) = check(&input, &ExtraMemory::default());
        assert!(runs * 2 < per, "{name}: {per} ranges, {runs} by runs");
    }
}

#[test]
fn corpus_programs_by_runs_are_the_same_flow() {
    let Some(fixtures) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    for name in [
        "example-a",
        "example-t",
        "exceptions-a",
        "exceptions-t",
        "rtos-m",
    ] {
        let (elf, flow, mem) = crate::convert_common::corpus_program(&fixtures, name);
        for cycle_accurate in [false, true] {
            let opts = trace_encode::EtmOptions {
                cycle_accurate,
                ..trace_encode::EtmOptions::default()
            };
            let trace = trace_encode::encode_etm(&flow.items, &mem, &opts).expect("encode");
            let bin = tmp.path().join(format!("{name}-{cycle_accurate}.bin"));
            let input = crate::convert_common::trace_input(&trace, Protocol::Etmv3, &bin);
            let extra = ExtraMemory {
                elves: vec![elf.clone()],
                raw: Vec::new(),
            };
            let (per, runs) = check(&input, &extra);
            assert!(runs * 2 < per, "{name}: {per} ranges, {runs} by runs");
        }
    }
}
