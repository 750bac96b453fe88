//! Per-thread perf.data recordings of several processes: each process
//! decodes with its own mappings (two programs mapped at one address
//! decode as each does alone), and the outputs name tracks after the
//! recording's processes and threads (COMM, FORK) and fold stacks per
//! process. The programs are corpus programs encoded by trace-encode; the
//! expected stacks are the emulator's (`*.cov.json`).

use crate::convert_common::{cli, corpus_program, folded_map, one_thread_events, truth_stacks};
use crate::perf_common::write;
use object::{Object, ObjectSegment};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trace_convert::input::flags::SourceFlags;
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::source::{CaptureSpec, Protocol};
use trace_convert::input::{resolve, Input};
use trace_core::event::Event;
use trace_core::memory::MemoryImage;
use trace_encode::perf::{AuxBuffer, AuxPiece, PerfMmap, PerfSource, PerfSpec, PerfTask};
use trace_encode::{encode_etm, encode_ptm, EtmOptions, PtmOptions, Trace};

const ID: u8 = 0x10;

/// The mapping of `elf`'s executable segment, as the loader makes it.
fn mapping(elf: &Path) -> PerfMmap {
    let bytes = std::fs::read(elf).expect("ELF");
    let file = object::File::parse(&*bytes).expect("ELF parses");
    let seg = file
        .segments()
        .find(|s| s.size() > 0 && s.file_range().1 > 0)
        .expect("a loaded segment");
    let (offset, size) = seg.file_range();
    PerfMmap {
        start: seg.address(),
        len: size,
        pgoff: offset,
        filename: std::fs::canonicalize(elf)
            .expect("ELF path")
            .display()
            .to_string(),
    }
}

/// A corpus program's ELF and its flow encoded as `protocol`.
pub fn program(dir: &Path, name: &str, protocol: Protocol) -> (PathBuf, Trace) {
    let (elf, flow, mem) = corpus_program(dir, name);
    let trace = if protocol == Protocol::Ptm {
        encode_ptm(&flow.items, &mem, &PtmOptions::default())
    } else {
        encode_etm(&flow.items, &mem, &EtmOptions::default())
    }
    .expect("encode");
    (elf, trace)
}

/// A per-thread recording: process 100 `alpha` running `a`, process 200
/// `beta` (forked, then exec'd) running `b` on threads 200 `beta` and 201
/// `beta-worker`; each thread's trace is its program's.
pub const THREADS: [(u32, u32, &str); 3] = [
    (100, 100, "alpha"),
    (200, 200, "beta"),
    (200, 201, "beta-worker"),
];

/// [`THREADS`] recorded: see there.
pub fn recording(a: &(PathBuf, Trace), b: &(PathBuf, Trace)) -> PerfSpec {
    let regs = a.1.regs;
    assert_eq!(regs, b.1.regs, "one configuration for both");
    let buffer = |tid: Option<u32>, trace: &Trace| AuxBuffer {
        cpu: None,
        tid,
        pieces: vec![AuxPiece {
            data: trace.bytes.clone(),
            truncated: false,
        }],
    };
    PerfSpec {
        sources: vec![PerfSource {
            cpu: 0,
            trace_id: ID,
            etmcr: regs.etmcr,
            etmccer: regs.etmccer,
            etmidr: regs.etmidr,
        }],
        version: 1,
        hw_id_records: false,
        raw: true,
        piped: false,
        index: true,
        pid: 100,
        comm: "alpha".into(),
        mmaps: vec![mapping(&a.0)],
        tasks: vec![
            PerfTask {
                pid: 200,
                tid: 200,
                comm: "beta".into(),
                mmaps: vec![mapping(&b.0)],
            },
            PerfTask {
                pid: 200,
                tid: 201,
                comm: "beta-worker".into(),
                mmaps: Vec::new(),
            },
        ],
        buffers: vec![
            buffer(None, &a.1),
            buffer(Some(200), &b.1),
            buffer(Some(201), &b.1),
        ],
        attr_config: None,
    }
}

/// Decode `spec` of `input` with the memory of `input` and `extra`.
fn decode_with(input: &Input, spec: &CaptureSpec, extra: &ExtraMemory) -> Vec<Event> {
    one_thread_events(spec, |name: &str| -> Arc<dyn MemoryImage> {
        Arc::new(memory_for(input.snapshot.as_ref(), name, extra).expect("memory"))
    })
}

/// `trace` decoded alone, with `elf` as its memory.
fn alone(trace: &Trace, elf: &Path, tmp: &Path, name: &str) -> Vec<Event> {
    let bin = tmp.join(name);
    std::fs::write(&bin, &trace.bytes).expect("write capture");
    let flags = SourceFlags {
        protocol: Some(Protocol::Ptm),
        etmcr: Some(trace.regs.etmcr),
        etmccer: Some(trace.regs.etmccer),
        etmidr: Some(trace.regs.etmidr),
        trace_id: Some(ID),
        ..SourceFlags::default()
    };
    let input = resolve(&bin, &flags).expect("flags input");
    let extra = ExtraMemory {
        elves: vec![elf.to_path_buf()],
        raw: Vec::new(),
    };
    decode_with(&input, &input.captures[0], &extra)
}

#[test]
fn each_process_decodes_with_its_own_mappings() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let a = program(&dir, "example-a", Protocol::Ptm);
    let b = program(&dir, "controlflow-a", Protocol::Ptm);
    let (ma, mb) = (mapping(&a.0), mapping(&b.0));
    assert_eq!(ma.start, mb.start, "both programs at one address");
    let want_a = alone(&a.1, &a.0, tmp.path(), "a.bin");
    let want_b = alone(&b.1, &b.0, tmp.path(), "b.bin");
    // The test can fail: beta's trace decoded with alpha's code differs.
    assert!(alone(&b.1, &a.0, tmp.path(), "wrong.bin") != want_b);
    let path = write(tmp.path(), "threads.data", &recording(&a, &b));
    let input = resolve(&path, &SourceFlags::default()).expect("perf.data resolves");
    let tids: Vec<Option<u32>> = input
        .captures
        .iter()
        .map(|c| c.task.as_ref().map(|t| t.tid))
        .collect();
    assert_eq!(tids, [Some(100), Some(200), Some(201)]);
    let wants = [&want_a, &want_b, &want_b];
    for (cap, want) in input.captures.iter().zip(wants) {
        let start = cap.range.expect("a piece of the file").0;
        let got: Vec<Event> = decode_with(&input, cap, &ExtraMemory::default())
            .into_iter()
            .map(|mut e| {
                e.offset -= start;
                e
            })
            .collect();
        let task = cap.task.as_ref().expect("a task");
        assert!(got.len() > 100, "{}: {} events", task.thread, got.len());
        let first = got.iter().zip(want.iter()).position(|(g, w)| g != w);
        assert!(
            got.len() == want.len() && first.is_none(),
            "thread {} of process {}: {} events, {} alone; first difference at {first:?}",
            task.tid,
            task.pid,
            got.len(),
            want.len()
        );
    }
}

#[test]
fn tracks_and_stacks_are_named_after_processes_and_threads() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let a = program(&dir, "example-a", Protocol::Ptm);
    let spec = recording(&a, &a);
    let path = write(tmp.path(), "threads.data", &spec);
    let (folded, chrome, perfetto) = (
        tmp.path().join("t.folded"),
        tmp.path().join("t.json"),
        tmp.path().join("t.pftrace"),
    );
    let elf = a.0.display().to_string();
    cli(&[
        path.to_str().expect("path"),
        "--elf",
        &elf,
        "--no-inline",
        "--folded",
        folded.to_str().expect("path"),
        "--chrome",
        chrome.to_str().expect("path"),
        "--perfetto",
        perfetto.to_str().expect("path"),
    ]);

    // Folded: one set of stacks per process, its threads added up.
    let truth = truth_stacks(&dir.join("example-a.cov.json"));
    let mut want = BTreeMap::new();
    for (stack, w) in &truth {
        want.insert(format!("alpha (pid 100);{stack}"), *w);
        want.insert(format!("beta (pid 200);{stack}"), 2 * w);
    }
    let got = folded_map(&std::fs::read_to_string(&folded).expect("folded"));
    assert_eq!(got, want);

    // Chrome: Linux's process and thread IDs, named by their commands;
    // every thread's slices balanced.
    let want_processes: BTreeMap<u64, &str> = [(100, "alpha"), (200, "beta")].into();
    let want_threads: BTreeMap<(u64, u64), &str> = [
        ((100, 100), "alpha"),
        ((200, 200), "beta"),
        ((200, 201), "beta-worker"),
    ]
    .into();
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&chrome).expect("chrome")).expect("JSON");
    let events = v["traceEvents"].as_array().expect("events");
    let meta = |kind: &str| -> BTreeMap<(u64, u64), String> {
        events
            .iter()
            .filter(|e| e["name"] == kind)
            .map(|e| {
                (
                    (
                        e["pid"].as_u64().expect("pid"),
                        e["tid"].as_u64().expect("tid"),
                    ),
                    e["args"]["name"].as_str().expect("name").to_owned(),
                )
            })
            .collect()
    };
    let processes: BTreeMap<u64, String> = meta("process_name")
        .into_iter()
        .map(|((p, _), n)| (p, n))
        .collect();
    assert_eq!(
        processes,
        want_processes
            .iter()
            .map(|(p, n)| (*p, (*n).to_owned()))
            .collect()
    );
    let threads = meta("thread_name");
    assert_eq!(
        threads,
        want_threads
            .iter()
            .map(|(k, n)| (*k, (*n).to_owned()))
            .collect()
    );
    let mut begins: BTreeMap<(u64, u64), i64> = BTreeMap::new();
    let mut slices: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for e in events {
        let key = (
            e["pid"].as_u64().unwrap_or(0),
            e["tid"].as_u64().unwrap_or(0),
        );
        match e["ph"].as_str() {
            Some("B") => {
                *begins.entry(key).or_default() += 1;
                *slices.entry(key).or_default() += 1;
            }
            Some("E") => {
                let open = begins.entry(key).or_default();
                *open -= 1;
                assert!(*open >= 0, "{key:?}: an end without a begin");
            }
            _ => {}
        }
    }
    assert!(begins.values().all(|&n| n == 0), "every slice ends");
    assert_eq!(
        slices.keys().copied().collect::<Vec<_>>(),
        want_threads.keys().copied().collect::<Vec<_>>()
    );
    // The same program on each thread: as many slices on each.
    assert!(slices.values().all(|&n| n == slices[&(100, 100)] && n > 0));

    // Perfetto, read with its own schema: the same processes and threads,
    // with the same slices.
    let has = std::process::Command::new("python3")
        .args(["-c", "import perfetto, google.protobuf"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        assert!(std::env::var_os("CI").is_none(), "python3 perfetto needed");
        eprintln!("skipping the Perfetto half: python3 with perfetto not available");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_check.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(&perfetto)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    let descriptors = summary["descriptors"].as_array().expect("descriptors");
    let of_kind = |kind: &str| -> Vec<&serde_json::Value> {
        descriptors.iter().filter(|d| d["kind"] == kind).collect()
    };
    let processes: BTreeMap<u64, String> = of_kind("process")
        .iter()
        .map(|d| {
            (
                d["pid"].as_u64().expect("pid"),
                d["name"].as_str().expect("name").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        processes,
        want_processes
            .iter()
            .map(|(p, n)| (*p, (*n).to_owned()))
            .collect()
    );
    let threads: BTreeMap<(u64, u64), (String, usize)> = of_kind("thread")
        .iter()
        .map(|d| {
            (
                (
                    d["pid"].as_u64().expect("pid"),
                    d["tid"].as_u64().expect("tid"),
                ),
                (
                    d["name"].as_str().expect("name").to_owned(),
                    usize::try_from(d["slices"].as_u64().expect("slices")).expect("count"),
                ),
            )
        })
        .collect();
    let want: BTreeMap<(u64, u64), (String, usize)> = want_threads
        .iter()
        .map(|(k, n)| (*k, ((*n).to_owned(), slices[k])))
        .collect();
    assert_eq!(threads, want);
}

#[test]
fn a_thread_traced_on_several_cores_has_a_track_per_core() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let input = resolve(&dir.join("TC2"), &SourceFlags::default()).expect("TC2 resolves");
    let cap = &input.captures[0];
    let traced: std::collections::BTreeSet<u8> = crate::perf_common::decode(&input, cap)
        .iter()
        .filter(|e| matches!(e.kind, trace_core::event::EventKind::Range(_)))
        .map(|e| e.id)
        .collect();
    assert!(traced.len() > 1, "TC2 traces several cores");
    let (spec, _) = crate::perf_common::spec_of(&input, cap);
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = write(tmp.path(), "tc2.data", &spec);
    let (chrome, perfetto) = (tmp.path().join("t.json"), tmp.path().join("t.pftrace"));
    cli(&[
        path.to_str().expect("path"),
        "--chrome",
        chrome.to_str().expect("path"),
        "--perfetto",
        perfetto.to_str().expect("path"),
    ]);
    let pid = u64::from(spec.pid);
    // Each core's source, named as the recording's CPU.
    let label = |id: u8| {
        let s = spec
            .sources
            .iter()
            .find(|s| s.trace_id == id)
            .expect("a source per traced ID");
        let protocol = if (s.etmidr >> 8) & 0xF == 3 {
            "ptm"
        } else {
            "etmv3"
        };
        format!("cpu{} (trace ID {id:#04x}, {protocol})", s.cpu)
    };
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&chrome).expect("chrome")).expect("JSON");
    let threads: BTreeMap<u64, String> = v["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            assert_eq!(e["pid"].as_u64(), Some(pid));
            (
                e["tid"].as_u64().expect("tid"),
                e["args"]["name"].as_str().expect("name").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        threads.get(&pid).map(String::as_str),
        Some(spec.comm.as_str())
    );
    let mut ids = std::collections::BTreeSet::new();
    for (tid, name) in &threads {
        if *tid == pid {
            continue;
        }
        let id = u8::try_from((tid >> 32) - 1).expect("a trace ID above the thread ID");
        assert_eq!(tid & 0xFFFF_FFFF, pid);
        assert_eq!(name, &format!("{} on {}", spec.comm, label(id)));
        ids.insert(id);
    }
    assert_eq!(ids.len() + 1, traced.len(), "a track per core: {threads:?}");
    assert!(ids.is_subset(&traced));

    // Perfetto: one thread, and a track inside it per further core.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_check.py");
    let Ok(out) = std::process::Command::new("python3")
        .arg(script)
        .arg(&perfetto)
        .output()
    else {
        assert!(std::env::var_os("CI").is_none(), "python3 needed");
        return;
    };
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("No module") {
        assert!(std::env::var_os("CI").is_none(), "python3 perfetto needed");
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    let descriptors = summary["descriptors"].as_array().expect("descriptors");
    let thread_tracks: Vec<&serde_json::Value> = descriptors
        .iter()
        .filter(|d| d["kind"] == "thread")
        .collect();
    assert_eq!(thread_tracks.len(), 1);
    assert_eq!(thread_tracks[0]["tid"].as_u64(), Some(pid));
    let inside: std::collections::BTreeSet<String> = descriptors
        .iter()
        .filter(|d| d["kind"] == "track" && d["parent"] == spec.comm.as_str())
        .map(|d| d["name"].as_str().expect("name").to_owned())
        .collect();
    let want: std::collections::BTreeSet<String> = ids
        .iter()
        .map(|&id| format!("{} on {}", spec.comm, label(id)))
        .collect();
    assert_eq!(inside, want);
}
