//! A snapshot directory written by `trace_encode::snapshot` reads and
//! decodes with trace-convert's snapshot reader and decoder, giving the
//! flow back for both sources of a formatted capture.

mod common;

use common::{compare, events_to_recs, expected, Decoded};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::snapshot::Snapshot;
use trace_convert::input::source::CaptureSpec;
use trace_core::memory::{MemoryImage, MemoryMap, Space};
use trace_encode::capture::{format_capture, Layout, Source};
use trace_encode::snapshot::{dumps_of, write_snapshot, BufferFormat, Core, SnapshotSpec};
use trace_encode::{encode_etm, encode_ptm, EtmOptions, Flow, PtmOptions, TraceOptions};

#[test]
fn snapshot_round_trip() {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let flow =
        Flow::parse(&std::fs::read_to_string(fx.join("mixed.flow")).expect("flow")).expect("flow");
    let mut mem = MemoryMap::new();
    mem.add_elf(&fx.join("mixed.elf"), Space::Any).expect("elf");
    let popts = PtmOptions {
        return_stack: true,
        trace: TraceOptions {
            timestamps: true,
            context_id_bytes: 2,
            context_id: 0x77,
            ..TraceOptions::default()
        },
        ..PtmOptions::default()
    };
    let eopts = EtmOptions {
        cycle_accurate: true,
        ..EtmOptions::default()
    };
    let ptm = encode_ptm(&flow.items, &mem, &popts).expect("ptm");
    let etm = encode_etm(&flow.items, &mem, &eopts).expect("etm");
    let capture = format_capture(
        &[
            Source {
                id: 0x10,
                bytes: &ptm.bytes,
            },
            Source {
                id: 0x11,
                bytes: &etm.bytes,
            },
        ],
        Layout::Memory,
        4,
    )
    .expect("capture");
    let core = |name: &str, kind: &str| Core {
        name: name.into(),
        kind: kind.into(),
        pc: 0,
        dumps: dumps_of(&mem),
    };
    let spec = SnapshotSpec {
        cores: vec![core("cpu_0", "Cortex-A15"), core("cpu_1", "Cortex-A7")],
        sources: vec![
            trace_encode::snapshot::Source {
                name: "PTM_0".into(),
                protocol: ptm.protocol,
                regs: ptm.regs,
                id: 0x10,
                core: "cpu_0".into(),
            },
            trace_encode::snapshot::Source {
                name: "ETM_1".into(),
                protocol: etm.protocol,
                regs: etm.regs,
                id: 0x11,
                core: "cpu_1".into(),
            },
        ],
        trace: capture,
        format: BufferFormat::CoreSight,
        timestamp_hz: Some(100_000_000),
    };
    let dir = std::env::temp_dir().join(format!("trace-encode-snapshot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_snapshot(&dir, &spec).expect("write");

    let snap = Snapshot::read(&dir).expect("snapshot reads");
    let captures = CaptureSpec::from_snapshot(&snap);
    assert_eq!(captures.len(), 1);
    let cap = &captures[0];
    assert!(cap.skipped.is_empty(), "{:?}", cap.skipped);
    let mut images: HashMap<String, Arc<MemoryMap>> = HashMap::new();
    for s in &cap.sources {
        let m = memory_for(Some(&snap), &s.name, &ExtraMemory::default()).expect("dumps load");
        images.insert(s.name.clone(), Arc::new(m));
    }
    let mut events: HashMap<u8, Vec<trace_core::event::Event>> = HashMap::new();
    trace_convert::input::capture::decoder(cap, |name| -> Arc<dyn MemoryImage> {
        images[name].clone()
    })
    .and_then(|d| {
        trace_convert::input::capture::run(
            cap,
            &mut d
                .options(trace_core::capture::DecodeOptions::with_jobs(1))
                .build(),
            &mut trace_core::capture::each_event(|e| {
                events.entry(e.id).or_default().push(*e);
                Ok(())
            }),
        )
    })
    .expect("decodes");
    for (id, trace) in [(0x10u8, &ptm), (0x11, &etm)] {
        let mut got = Decoded::default();
        events_to_recs(&events[&id], trace.protocol, &mem, false, &mut got);
        assert!(got.errors.is_empty(), "{:?}", got.errors);
        let want = expected(&flow.items, 0, trace.protocol, &mem, false);
        compare(&format!("snapshot ID {id:#x}"), &got.recs, &want);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
