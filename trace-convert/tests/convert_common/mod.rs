//! Shared by the `convert_*` tests: run a conversion into memory, and
//! check what Chrome trace consumers require of the JSON.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use trace_convert::chrome::ChromeSink;
use trace_convert::convert::{self, ConvertOptions, ConvertReport, Converter};
use trace_convert::decode::ExtraMemory;
use trace_convert::folded::{FoldedSink, Weight};
use trace_convert::input::{self, flags::SourceFlags, Input};
use trace_convert::sink::SharedBuffer;
use trace_convert::symbols::Symbolizer;

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
    let report = convert::convert_input(input, &extra, conv, false).expect("conversion");
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
