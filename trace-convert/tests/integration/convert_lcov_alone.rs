//! LCOV as the only output builds no call stacks and no clock; its file
//! must be the same as when a timeline beside it makes the converter build
//! them.

use crate::convert_common::resolve;
use std::path::PathBuf;
use std::sync::Arc;
use trace_convert::convert::{self, ConvertOptions, ConvertReport, Converter};
use trace_convert::input::flags::SourceFlags;
use trace_convert::input::memory::ExtraMemory;
use trace_convert::progress::NoProgress;
use trace_convert::sinks::lcov::coverage::LcovOptions;
use trace_convert::sinks::lcov::LcovSink;
use trace_convert::sinks::perfetto::PerfettoSink;
use trace_convert::sinks::SharedBuffer;
use trace_convert::symbols::Symbolizer;
use trace_core::memory::{MemoryMap, Space};

fn lcov(with_timeline: bool) -> (Vec<u8>, ConvertReport) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot");
    let elf = dir.join("example.elf");
    let input = resolve(&dir, &SourceFlags::default());
    let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
    let mut memory = MemoryMap::new();
    memory.add_elf(&elf, Space::Any).expect("ELF segments");
    let options = ConvertOptions::default();
    let mut conv = Converter::new(&symbols, options.clock_for(&input), options.max_depth);
    let out = SharedBuffer::new();
    conv.add_sink(Box::new(LcovSink::new(
        out.clone(),
        Arc::new(memory),
        &symbols,
        LcovOptions::default(),
    )));
    if with_timeline {
        conv.add_sink(Box::new(PerfettoSink::new(SharedBuffer::new())));
    }
    let extra = ExtraMemory {
        elves: vec![elf],
        raw: Vec::new(),
    };
    let report = convert::convert_input(&input, &extra, conv, &mut NoProgress).expect("conversion");
    (out.bytes(), report)
}

#[test]
fn lcov_alone_builds_no_stacks_and_writes_the_same_file() {
    let (alone, report) = lcov(false);
    let (beside, with_stacks) = lcov(true);
    assert!(!report.stacks_built);
    assert!(with_stacks.stacks_built);
    assert!(
        with_stacks.stacks.calls > 0,
        "the timeline's stacks saw calls"
    );
    assert_eq!(report.stacks.calls, 0);
    assert!(alone.starts_with(b"SF:") || alone.starts_with(b"TN:"));
    assert_eq!(alone, beside);
    // The per-ID counters do not depend on the stacks.
    assert_eq!(report.ids, with_stacks.ids);
}
