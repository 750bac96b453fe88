//! Coverage counted apart, a run of events at a time, and merged in order
//! equals coverage counted in one pass: cut anywhere in the corpus
//! programs' decoded events (T32 IT blocks included, whose state runs on
//! from range to range), and cut into a parallel decode's chunks, where
//! the decoding threads count it and the converter merges it
//! ([`Converter::parts`]), with and without other sinks beside LCOV.

#![allow(clippy::unwrap_used)]

use crate::convert_common::{corpus_program, corpus_traces, trace_input};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trace_convert::clock::ClockInfo;
use trace_convert::convert::{ConvertReport, Converter};
use trace_convert::input::capture::{decoder, run};
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::Input;
use trace_convert::sinks::lcov::coverage::{Coverage, CoveragePart, LcovOptions};
use trace_convert::sinks::lcov::LcovSink;
use trace_convert::sinks::perfetto::PerfettoSink;
use trace_convert::sinks::SharedBuffer;
use trace_convert::symbols::Symbolizer;
use trace_core::capture::{deliveries, DecodeOptions, Delivery, WarmUp};
use trace_core::event::Event;
use trace_core::memory::MemoryImage;

/// Each corpus program's traces, written under `tmp`: the program's ELF,
/// the capture's input and a name.
fn corpus_inputs(tmp: &Path) -> Vec<(PathBuf, Input, String)> {
    let Some(dir) = test_support::corpus_fixtures() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for name in test_support::corpus_programs(&dir, ".cov.json") {
        let (elf, flow, mem) = corpus_program(&dir, &name);
        for (protocol, trace) in corpus_traces(&name, &flow, &mem) {
            let what = format!("{name} {}", protocol.name());
            let bin = tmp.join(format!("{name}-{}.bin", protocol.name()));
            out.push((elf.clone(), trace_input(&trace, protocol, &bin), what));
        }
    }
    out
}

fn temp(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tc-parts-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn memory(elf: &Path) -> Arc<dyn MemoryImage> {
    let extra = ExtraMemory {
        elves: vec![elf.to_path_buf()],
        raw: Vec::new(),
    };
    Arc::new(memory_for(None, "", &extra).unwrap())
}

fn events(input: &Input, mem: &Arc<dyn MemoryImage>) -> Vec<Event> {
    crate::convert_common::one_thread_events(&input.captures[0], |_| Arc::clone(mem))
}

#[test]
fn coverage_cut_anywhere_merges_as_one_pass() {
    let tmp = temp("cut");
    let inputs = corpus_inputs(&tmp);
    for (elf, input, what) in &inputs {
        let mem = memory(elf);
        let all = events(input, &mem);
        let mut whole = Coverage::new(Arc::clone(&mem));
        for e in &all {
            whole.add(e);
        }
        let want = whole.instructions();
        assert!(
            want.iter().any(|i| i.reached > 0),
            "{what}: nothing covered"
        );
        for cut in [1, 2, 3, 5, 17, 256] {
            let mut merged = Coverage::new(Arc::clone(&mem));
            for run in all.chunks(cut) {
                let mut part = CoveragePart::new(run[0].id, Arc::clone(&mem));
                for e in run {
                    part.add(e);
                }
                merged.merge(part);
            }
            assert_eq!(
                merged.distinct_ranges(),
                whole.distinct_ranges(),
                "{what}: cut every {cut}"
            );
            assert!(
                merged.instructions() == want,
                "{what}: cut every {cut}: the instruction counts differ"
            );
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
    assert!(
        inputs.is_empty() || inputs.len() >= 8,
        "{} traces",
        inputs.len()
    );
}

/// What a conversion wrote: LCOV, Perfetto (when asked for) and the
/// report.
type Written = (Vec<u8>, Vec<u8>, ConvertReport);

/// Convert `input`'s events to LCOV (and Perfetto with `perfetto`), on
/// one thread (`opts` `None`) or through a parallel decode with the
/// converter's parts.
fn convert(
    input: &Input,
    elf: &Path,
    perfetto: bool,
    opts: Option<&DecodeOptions>,
) -> (Written, bool) {
    let symbols = Symbolizer::from_elves(&[elf.to_path_buf()]).unwrap();
    let mem = memory(elf);
    let lcov = SharedBuffer::new();
    let pft = SharedBuffer::new();
    let mut conv = Converter::new(&symbols, ClockInfo::default(), 256);
    if perfetto {
        conv.add_sink(Box::new(PerfettoSink::new(pft.clone())));
    }
    conv.add_sink(Box::new(LcovSink::new(
        lcov.clone(),
        Arc::clone(&mem),
        &symbols,
        LcovOptions::default(),
    )));
    let spec = &input.captures[0];
    let mut used_parts = false;
    match opts {
        None => {
            trace_convert::input::capture::decoder(spec, |_| Arc::clone(&mem))
                .and_then(|d| {
                    trace_convert::input::capture::run(
                        spec,
                        &mut d
                            .options(trace_core::capture::DecodeOptions::with_jobs(1))
                            .build(),
                        &mut trace_core::capture::each_event(|e| conv.event(e, Some(&*mem))),
                    )
                })
                .unwrap();
        }
        Some(opts) => {
            let parts = conv.parts().expect("LCOV offers parts");
            let each = |d: Delivery<'_>| {
                used_parts |= matches!(d, Delivery::Part { .. });
                conv.deliver(d, Some(&*mem))
            };
            let mut d = decoder(spec, |_| Arc::clone(&mem))
                .unwrap()
                .options(*opts)
                .parts(parts)
                .build();
            run(spec, &mut d, &mut deliveries(each)).unwrap();
        }
    }
    let report = conv.finish().unwrap();
    ((lcov.bytes(), pft.bytes(), report), used_parts)
}

#[test]
fn coverage_counted_by_the_decoding_threads_equals_one_pass() {
    let tmp = temp("threads");
    let inputs = corpus_inputs(&tmp);
    let mut merged = 0;
    for (elf, input, what) in &inputs {
        for perfetto in [false, true] {
            let (want, _) = convert(input, elf, perfetto, None);
            assert!(!want.0.is_empty(), "{what}: no LCOV");
            for (part_bytes, jobs) in [
                (16, 2),
                (100, 3),
                (1000, 2),
                (1 << 20, 2),
                (16, 1),
                (1000, 1),
            ] {
                let opts = DecodeOptions {
                    jobs,
                    min_parallel_bytes: 0,
                    part_bytes,
                    parts_per_job: 2,
                    warm_up: WarmUp::Auto,
                };
                let (got, used) = convert(input, elf, perfetto, Some(&opts));
                let how =
                    format!("{what}, Perfetto {perfetto}, chunks of {part_bytes}, {jobs} jobs");
                if jobs == 1 {
                    // One thread feeds parts that keep no events (LCOV
                    // alone), and makes none when the events are kept.
                    assert_eq!(used, !perfetto, "{how}: parts used");
                }
                assert!(got.0 == want.0, "{how}: LCOV differs");
                assert!(got.1 == want.1, "{how}: Perfetto differs");
                assert_eq!(got.2.ids, want.2.ids, "{how}: counters");
                merged += usize::from(used);
            }
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
    assert!(inputs.is_empty() || merged > 0, "no part was merged");
}

/// The LCOV sink's parts see no event other than its own: with a second
/// sink taking plain events, no parts are offered.
#[test]
fn parts_only_for_a_single_sink_of_plain_events() {
    let symbols = Symbolizer::default();
    let mem: Arc<dyn MemoryImage> = Arc::new(trace_core::memory::MemoryMap::new());
    let mut conv = Converter::new(&symbols, ClockInfo::default(), 16);
    assert!(conv.parts().is_none());
    conv.add_sink(Box::new(LcovSink::new(
        SharedBuffer::new(),
        Arc::clone(&mem),
        &symbols,
        LcovOptions::default(),
    )));
    assert!(conv.parts().is_some());
    conv.add_sink(Box::new(LcovSink::new(
        SharedBuffer::new(),
        mem,
        &symbols,
        LcovOptions::default(),
    )));
    assert!(conv.parts().is_none());
}
