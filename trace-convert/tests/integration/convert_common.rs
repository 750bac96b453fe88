//! Shared by the `convert_*` tests: run a conversion into memory, and
//! check what Chrome trace consumers require of the JSON.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use trace_convert::convert::{self, ConvertOptions, ConvertReport, Converter};
use trace_convert::input::memory::ExtraMemory;
use trace_convert::input::source::Protocol;
use trace_convert::input::{self, flags::SourceFlags, Input};
use trace_convert::progress::NoProgress;
use trace_convert::sinks::chrome::ChromeSink;
use trace_convert::sinks::folded::{FoldedSink, Weight};
use trace_convert::sinks::SharedBuffer;
use trace_convert::symbols::Symbolizer;
use trace_core::memory::{MemoryMap, Space};
use trace_encode::{encode_etm, encode_ptm, EtmOptions, Flow, PtmOptions, Trace};

/// Every event of `spec`, decoded on one thread with the memory image
/// `memory` gives each source.
pub fn one_thread_events(
    spec: &trace_convert::input::source::CaptureSpec,
    memory: impl FnMut(&str) -> std::sync::Arc<dyn trace_core::memory::MemoryImage>,
) -> Vec<trace_core::event::Event> {
    let mut events = Vec::new();
    trace_convert::input::capture::decoder(spec, memory)
        .and_then(|d| {
            trace_convert::input::capture::run(
                spec,
                &mut d
                    .options(trace_core::capture::DecodeOptions::with_jobs(1))
                    .build(),
                &mut trace_core::capture::each_event(|e| {
                    events.push(*e);
                    Ok(())
                }),
            )
        })
        .expect("decodes");
    events
}

/// The outputs of one conversion.
pub struct Outputs {
    pub chrome: String,
    pub folded: String,
    pub report: ConvertReport,
}

pub fn resolve(path: &Path, flags: &SourceFlags) -> Input {
    input::resolve(path, flags).expect("input resolves")
}

/// Convert `input` into Chrome JSON and folded stacks.
pub fn run(input: &Input, elves: &[PathBuf], weight: Weight, options: &ConvertOptions) -> Outputs {
    let symbols = Symbolizer::from_elves(elves).expect("symbols");
    run_with(input, &symbols, elves, weight, options)
}

/// [`run`] with these symbols (of `elves`, which also give the memory).
pub fn run_with(
    input: &Input,
    symbols: &Symbolizer,
    elves: &[PathBuf],
    weight: Weight,
    options: &ConvertOptions,
) -> Outputs {
    let chrome = SharedBuffer::new();
    let folded = SharedBuffer::new();
    let mut conv = Converter::new(symbols, options.clock_for(input), options.max_depth);
    conv.add_sink(Box::new(ChromeSink::new(chrome.clone())));
    conv.add_sink(Box::new(FoldedSink::new(folded.clone(), weight)));
    let extra = ExtraMemory {
        elves: elves.to_vec(),
        raw: Vec::new(),
    };
    let report = convert::convert_input(input, &extra, conv, &mut NoProgress).expect("conversion");
    Outputs {
        chrome: String::from_utf8(chrome.bytes()).expect("UTF-8"),
        folded: String::from_utf8(folded.bytes()).expect("UTF-8"),
        report,
    }
}

/// What [`check_chrome`] found.
#[derive(Debug, Default)]
pub struct ChromeStats {
    pub begins: usize,
    pub instants: usize,
    pub max_depth: usize,
    pub threads: usize,
}

/// Parse Chrome trace JSON and check it: an object with a `traceEvents`
/// array; every `B` closed by an `E` of the same thread, in order
/// (nesting); timestamps never decreasing within a thread; every thread
/// named by metadata before its first event.
pub fn check_chrome(text: &str) -> ChromeStats {
    let v: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents array");
    let mut stacks: HashMap<(u64, u64), Vec<String>> = HashMap::new();
    let mut last_ts: HashMap<(u64, u64), f64> = HashMap::new();
    let mut named: HashMap<(u64, u64), bool> = HashMap::new();
    let mut stats = ChromeStats::default();
    for (i, e) in events.iter().enumerate() {
        let ph = e["ph"].as_str().expect("ph");
        let pid = e["pid"].as_u64().expect("pid");
        let tid = e["tid"].as_u64().expect("tid");
        let key = (pid, tid);
        if ph == "M" {
            if e["name"] == "thread_name" {
                assert!(e["args"]["name"].as_str().is_some_and(|n| !n.is_empty()));
                named.insert(key, true);
            }
            continue;
        }
        assert!(
            named.contains_key(&key),
            "event {i}: thread {key:?} has no thread_name first"
        );
        let ts = e["ts"].as_f64().expect("ts");
        let last = last_ts.entry(key).or_insert(f64::MIN);
        assert!(ts >= *last, "event {i}: ts {ts} before {last} on {key:?}");
        *last = ts;
        let stack = stacks.entry(key).or_default();
        match ph {
            "B" => {
                let name = e["name"].as_str().expect("B has a name");
                assert!(!name.is_empty());
                stack.push(name.to_owned());
                stats.begins += 1;
                stats.max_depth = stats.max_depth.max(stack.len());
            }
            "E" => {
                assert!(stack.pop().is_some(), "event {i}: E without B on {key:?}");
            }
            "i" => stats.instants += 1,
            other => panic!("event {i}: unexpected phase {other}"),
        }
    }
    for (k, s) in &stacks {
        assert!(s.is_empty(), "thread {k:?} ends with open slices {s:?}");
    }
    stats.threads = stacks.len();
    stats
}

/// Folded lines as a map from stack to weight.
pub fn folded_map(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let (stack, w) = line.rsplit_once(' ').expect("`stack weight`");
        let w: u64 = w.parse().expect("weight is a number");
        assert!(
            m.insert(stack.to_owned(), w).is_none(),
            "stack {stack} twice"
        );
    }
    m
}

/// The stacks of a corpus program's `*.cov.json` (the emulator's truth),
/// with their instruction counts.
pub fn truth_stacks(cov: &Path) -> BTreeMap<String, u64> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cov).expect("cov.json")).expect("json");
    v["stacks"]
        .as_object()
        .expect("stacks")
        .iter()
        .map(|(k, w)| (k.clone(), w.as_u64().expect("count")))
        .collect()
}

/// The emulator's record of which task of the corpus RTOS runs each
/// instruction (`<program>-<flavour>.tasks`, see corpus/README.md).
#[derive(Debug, Clone, Default)]
pub struct TaskRecord {
    /// Task names by number (task 0, the initial context, has none).
    pub names: BTreeMap<u32, String>,
    /// From instruction index `.0` on (counting every instruction of the
    /// flow), task `.1` runs; the first, `(0, 0)`, left out.
    pub switches: Vec<(u64, u32)>,
}

impl TaskRecord {
    /// The record at `path`, when the program has one.
    pub fn read(path: &Path) -> Option<TaskRecord> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("# trace-tasks 1"), "{}", path.display());
        let mut out = TaskRecord::default();
        for l in lines.filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = l.split(' ').collect();
            match f.first() {
                Some(&"T") => {
                    out.names
                        .insert(f[1].parse().expect("number"), f[3].to_owned());
                }
                Some(&"S") => out
                    .switches
                    .push((f[1].parse().expect("index"), f[2].parse().expect("task"))),
                _ => panic!("{}: record {l}", path.display()),
            }
        }
        assert_eq!(out.switches.first(), Some(&(0, 0)), "{}", path.display());
        out.switches.remove(0);
        Some(out)
    }
}

/// A corpus program of `dir`: its ELF's path, its flow (the emulator's
/// truth) and its code as a memory image.
pub fn corpus_program(dir: &Path, name: &str) -> (PathBuf, Flow, MemoryMap) {
    let elf = dir.join(format!("{name}.elf"));
    let flow =
        Flow::parse(&std::fs::read_to_string(dir.join(format!("{name}.flow"))).expect("flow"))
            .expect("flow parses");
    let mut mem = MemoryMap::new();
    mem.add_elf(&elf, Space::Any).expect("elf");
    (elf, flow, mem)
}

/// A corpus program's flow encoded as ETMv3, and as PTM unless it is an
/// M-profile build (`-m`, whose trace is ETMv3 only).
pub fn corpus_traces(name: &str, flow: &Flow, mem: &MemoryMap) -> Vec<(Protocol, Trace)> {
    corpus_traces_with(name, flow, mem, &PtmOptions::default())
}

/// [`corpus_traces`], the PTM trace encoded with `ptm`.
pub fn corpus_traces_with(
    name: &str,
    flow: &Flow,
    mem: &MemoryMap,
    ptm: &PtmOptions,
) -> Vec<(Protocol, Trace)> {
    let mut traces = vec![(
        Protocol::Etmv3,
        encode_etm(&flow.items, mem, &EtmOptions::default()).expect("etm encode"),
    )];
    if !name.ends_with("-m") {
        traces.push((
            Protocol::Ptm,
            encode_ptm(&flow.items, mem, ptm).expect("ptm encode"),
        ));
    }
    traces
}

/// Run `trace-convert` from the repository root with `args` (and
/// `--no-progress`), which must succeed.
pub fn cli<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> std::process::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .current_dir(test_support::repo_root())
        .args(args)
        .arg("--no-progress")
        .output()
        .expect("run trace-convert");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `trace` written to `bin`, as an input with the flags that describe it.
pub fn trace_input(trace: &Trace, protocol: Protocol, bin: &Path) -> Input {
    std::fs::write(bin, &trace.bytes).expect("write capture");
    let flags = SourceFlags {
        protocol: Some(protocol),
        etmcr: Some(trace.regs.etmcr),
        etmccer: Some(trace.regs.etmccer),
        etmidr: Some(trace.regs.etmidr),
        ..SourceFlags::default()
    };
    resolve(bin, &flags)
}

/// Convert `trace` (written under `tmp`) with the symbols of `elf`,
/// inlined frames on or off; check the Chrome JSON and return the folded
/// stacks.
pub fn convert_trace(
    trace: &Trace,
    protocol: Protocol,
    elf: &Path,
    tmp: &Path,
    inline: bool,
) -> String {
    let input = trace_input(
        trace,
        protocol,
        &tmp.join(format!("{}.bin", protocol.name())),
    );
    let elves = [elf.to_path_buf()];
    let mut symbols = Symbolizer::from_elves(&elves).expect("symbols");
    symbols.set_inline_scopes(inline);
    let out = run_with(
        &input,
        &symbols,
        &elves,
        Weight::Instructions,
        &ConvertOptions::default(),
    );
    check_chrome(&out.chrome);
    out.folded
}

/// A copy of the snapshot `src` in `dir`, its trace buffer `buffer`
/// repeated `copies` times.
pub fn repeated(src: &Path, buffer: &str, copies: usize, dir: &Path) -> PathBuf {
    let out = dir.join("snapshot");
    std::fs::create_dir_all(&out).expect("folder");
    for entry in std::fs::read_dir(src).expect("snapshot") {
        let path = entry.expect("entry").path();
        if !path.is_file() {
            continue;
        }
        let mut bytes = std::fs::read(&path).expect("read");
        if path.file_name().is_some_and(|n| n == buffer) {
            bytes = bytes.repeat(copies);
        }
        std::fs::write(out.join(path.file_name().expect("name")), bytes).expect("write");
    }
    out
}
