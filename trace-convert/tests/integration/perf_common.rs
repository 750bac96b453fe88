//! Shared by the perf.data tests: decoding an input, and the perf.data
//! recording of a snapshot capture.

#![allow(dead_code)]

use crate::convert_common::one_thread_events;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::source::CaptureSpec;
use trace_convert::input::{flags::SourceFlags, resolve, Input};
use trace_core::event::Event;
use trace_core::frames::FrameMode;
use trace_core::memory::MemoryImage;
use trace_encode::perf::{write_perf_data, AuxBuffer, AuxPiece, PerfMmap, PerfSource, PerfSpec};

pub fn decode(input: &Input, spec: &CaptureSpec) -> Vec<Event> {
    one_thread_events(spec, |name: &str| -> Arc<dyn MemoryImage> {
        Arc::new(
            memory_for(input.snapshot.as_ref(), name, &ExtraMemory::default()).expect("memory"),
        )
    })
}

/// The recording of one snapshot capture: its sources as CPUs 0, 1, ..,
/// its cores' memory dumps as mappings of the dump files.
pub fn spec_of(input: &Input, cap: &CaptureSpec) -> (PerfSpec, Vec<u8>) {
    let snap = input.snapshot.as_ref().expect("a snapshot");
    let bytes = std::fs::read(&cap.path).expect("capture");
    let mut sources = Vec::new();
    let mut mmaps = Vec::new();
    // perf records the CPUs' ETM and PTM sources (not a snapshot's ITM).
    let cpus = cap
        .sources
        .iter()
        .filter(|s| s.protocol.traces_instructions());
    for (cpu, s) in (0u32..).zip(cpus) {
        sources.push(PerfSource {
            cpu,
            trace_id: s.id,
            etmcr: s.regs.etmcr,
            etmccer: s.regs.etmccer,
            etmidr: s.regs.etmidr,
        });
        for d in snap.core_of(&s.name).map(|c| &c.dumps[..]).unwrap_or(&[]) {
            let size = std::fs::metadata(&d.path).expect("dump").len();
            let file = std::fs::canonicalize(&d.path).expect("dump path");
            let m = PerfMmap {
                start: d.address,
                len: d.length.unwrap_or(size - d.offset),
                pgoff: d.offset,
                filename: file.display().to_string(),
            };
            if !mmaps.contains(&m) {
                mmaps.push(m);
            }
        }
    }
    let spec = PerfSpec {
        sources,
        version: 1,
        hw_id_records: false,
        raw: matches!(cap.layout, FrameMode::Raw { .. }),
        piped: false,
        index: true,
        pid: 1234,
        comm: "app".into(),
        mmaps,
        tasks: Vec::new(),
        attr_config: None,
        buffers: vec![AuxBuffer {
            tid: None,
            cpu: None,
            pieces: vec![AuxPiece {
                data: bytes.clone(),
                truncated: false,
            }],
        }],
    };
    (spec, bytes)
}

pub fn write(dir: &Path, name: &str, spec: &PerfSpec) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, write_perf_data(spec)).expect("write perf.data");
    path
}

/// The events of the recording's captures, with their offsets made
/// relative to the start of each piece of AUX data.
pub fn perf_events(path: &Path) -> (Input, Vec<Vec<Event>>) {
    let input = resolve(path, &SourceFlags::default()).expect("perf.data resolves");
    let per_piece = input
        .captures
        .iter()
        .map(|c| {
            let start = c.range.expect("a range of the file").0;
            decode(&input, c)
                .into_iter()
                .map(|mut e| {
                    e.offset -= start;
                    e
                })
                .collect()
        })
        .collect();
    (input, per_piece)
}
