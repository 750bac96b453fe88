//! Events fed to a converter in slices (`Converter::events`, as the
//! decode on one thread hands them) give the same outputs and counters as
//! the same events fed one by one (`Converter::event`), whatever the
//! slices' lengths; and so does a whole conversion of the capture, on one
//! thread and on several (where the join hands on runs of events).

use crate::convert_common::{repeated, resolve};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use trace_convert::convert::{self, ConvertOptions, ConvertReport, Converter};
use trace_convert::input::flags::SourceFlags;
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::Input;
use trace_convert::progress::NoProgress;
use trace_convert::sinks::chrome::ChromeSink;
use trace_convert::sinks::folded::{FoldedSink, Weight};
use trace_convert::sinks::lcov::coverage::LcovOptions;
use trace_convert::sinks::lcov::LcovSink;
use trace_convert::sinks::perfetto::PerfettoSink;
use trace_convert::sinks::SharedBuffer;
use trace_convert::symbols::Symbolizer;
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

/// The bundled example: its input, ELF and memory image.
fn example() -> (Input, PathBuf, ExtraMemory, Arc<dyn MemoryImage>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot");
    let elf = dir.join("example.elf");
    let input = resolve(&dir, &SourceFlags::default());
    let extra = ExtraMemory {
        elves: vec![elf.clone()],
        raw: Vec::new(),
    };
    let spec = input.captures.first().expect("a capture");
    let source = spec.sources.first().expect("a source");
    let memory: Arc<dyn MemoryImage> =
        Arc::new(memory_for(input.snapshot.as_ref(), &source.name, &extra).expect("memory"));
    (input, elf, extra, memory)
}

/// Every output of one conversion, and its report.
#[derive(Debug, PartialEq)]
struct Outputs {
    chrome: Vec<u8>,
    folded: Vec<u8>,
    perfetto: Vec<u8>,
    lcov: Vec<u8>,
    report: ConvertReport,
}

/// Run a converter with all four sinks; `feed` hands it the events.
fn convert(
    input: &Input,
    symbols: &Symbolizer,
    memory: &Arc<dyn MemoryImage>,
    feed: impl FnOnce(Converter<'_>) -> ConvertReport,
) -> Outputs {
    let [chrome, folded, perfetto, lcov] = std::array::from_fn(|_| SharedBuffer::new());
    let options = ConvertOptions::default();
    let mut conv = Converter::new(symbols, options.clock_for(input), options.max_depth);
    conv.add_sink(Box::new(ChromeSink::new(chrome.clone())));
    conv.add_sink(Box::new(FoldedSink::new(
        folded.clone(),
        Weight::Instructions,
    )));
    conv.add_sink(Box::new(PerfettoSink::new(perfetto.clone())));
    conv.add_sink(Box::new(LcovSink::new(
        lcov.clone(),
        Arc::clone(memory),
        symbols,
        LcovOptions::default(),
    )));
    let report = feed(conv);
    Outputs {
        chrome: chrome.bytes(),
        folded: folded.bytes(),
        perfetto: perfetto.bytes(),
        lcov: lcov.bytes(),
        report,
    }
}

#[test]
fn slices_of_any_length_convert_as_events_one_by_one() {
    let (input, elf, _, memory) = example();
    let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
    let spec = input.captures.first().expect("a capture");
    let events: Vec<Event> =
        crate::convert_common::one_thread_events(spec, |_| Arc::clone(&memory));
    let calls = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Range(r) if r.link && r.executed))
        .count();
    assert!(calls > 10, "the example makes calls ({calls})");

    let one_by_one = convert(&input, &symbols, &memory, |mut conv| {
        for e in &events {
            conv.event(e, Some(&*memory)).expect("event");
        }
        conv.finish().expect("finish")
    });
    assert!(one_by_one.report.stacks.calls > 0);
    assert!(!one_by_one.perfetto.is_empty() && !one_by_one.lcov.is_empty());
    for len in [1, 2, 7, 255, 256, 257, 1024, events.len()] {
        let sliced = convert(&input, &symbols, &memory, |mut conv| {
            for s in events.chunks(len) {
                conv.events(s, Some(&*memory)).expect("events");
            }
            conv.finish().expect("finish")
        });
        assert!(sliced == one_by_one, "slices of {len} differ");
    }
    // Slices and single events mixed, an empty slice among them.
    let (head, tail) = events.split_at(events.len() / 3);
    let mixed = convert(&input, &symbols, &memory, |mut conv| {
        for e in head {
            conv.event(e, Some(&*memory)).expect("event");
        }
        conv.events(&[], Some(&*memory)).expect("no events");
        for s in tail.chunks(100) {
            conv.events(s, Some(&*memory)).expect("events");
        }
        conv.finish().expect("finish")
    });
    assert!(mixed == one_by_one, "mixed feeding differs");
}

#[test]
fn a_whole_conversion_equals_its_events_fed_one_by_one() {
    let (input, elf, extra, memory) = example();
    let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
    let spec = input.captures.first().expect("a capture");
    let name = spec.path.display().to_string();
    let sources = convert::source_names(&input);
    let whole = convert(&input, &symbols, &memory, |conv| {
        convert::convert_input(&input, &extra, conv, &mut NoProgress).expect("conversion")
    });
    let one_by_one = convert(&input, &symbols, &memory, |mut conv| {
        conv.set_info(name.clone(), sources.clone());
        trace_convert::input::capture::decoder(spec, |_| Arc::clone(&memory))
            .and_then(|d| {
                trace_convert::input::capture::run(
                    spec,
                    &mut d
                        .options(trace_core::capture::DecodeOptions::with_jobs(1))
                        .build(),
                    &mut trace_core::capture::each_event(|e| conv.event(e, Some(&*memory))),
                )
            })
            .expect("decodes");
        conv.finish().expect("finish")
    });
    assert_eq!(whole.chrome, one_by_one.chrome);
    assert_eq!(whole.folded, one_by_one.folded);
    assert_eq!(whole.perfetto, one_by_one.perfetto);
    assert_eq!(whole.lcov, one_by_one.lcov);
    assert_eq!(whole.report.ids, one_by_one.report.ids);
    assert_eq!(whole.report.stacks, one_by_one.report.stacks);
}

/// The outputs of the CLI converting `dir` on `jobs` threads (LCOV too
/// when `elf` is given).
fn cli(dir: &Path, elf: Option<&Path>, jobs: usize, out: &Path) -> Vec<Vec<u8>> {
    let names = ["t.pftrace", "t.json", "t.folded", "t.info"];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trace-convert"));
    cmd.env("TRACE_CONVERT_JOBS", jobs.to_string()).arg(dir);
    for (flag, name) in ["--perfetto", "--chrome", "--folded"].iter().zip(names) {
        cmd.arg(flag).arg(out.join(name));
    }
    if let Some(elf) = elf {
        cmd.arg("--elf")
            .arg(elf)
            .arg("--lcov")
            .arg(out.join(names[3]));
    }
    let run = cmd.output().expect("runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let n = if elf.is_some() { 4 } else { 3 };
    names[..n]
        .iter()
        .map(|name| std::fs::read(out.join(name)).expect("output"))
        .collect()
}

#[test]
fn a_conversion_on_several_threads_equals_one_thread() {
    let tmp = std::env::temp_dir().join(format!("convert-slices-{}", std::process::id()));
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot");
    let elf = example.join("example.elf");
    let mut cases = vec![(
        repeated(&example, "trace.bin", 64, &tmp.join("example")),
        Some(elf),
    )];
    // The real capture, when the test data is here (opencsd_dir says
    // when it is not).
    if let Some(d) = test_support::opencsd_dir() {
        cases.push((
            repeated(
                &d.join("tc2-ptm-rstk-t32"),
                "PTM_0_2.bin",
                16,
                &tmp.join("rstk"),
            ),
            None,
        ));
    }
    for (dir, elf) in &cases {
        let one = tmp.join("one");
        std::fs::create_dir_all(&one).expect("folder");
        let want = cli(dir, elf.as_deref(), 1, &one);
        assert!(want.iter().all(|o| !o.is_empty()));
        for jobs in [2, 3] {
            let many = tmp.join(format!("j{jobs}"));
            std::fs::create_dir_all(&many).expect("folder");
            let got = cli(dir, elf.as_deref(), jobs, &many);
            assert!(got == want, "{} on {jobs} threads differs", dir.display());
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
}
