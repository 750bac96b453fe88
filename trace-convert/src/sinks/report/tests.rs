//! The report's counting on hand-made flows through the converter, the
//! expected counts worked out from the definitions (self: as the
//! innermost frame; total: while on the stack, once per recursion;
//! calls: frames opened by calls).

use super::{ReportFormat, ReportOptions, ReportSink};
use crate::clock::ClockInfo;
use crate::convert::Converter;
use crate::sinks::folded::{FoldedSink, Weight};
use crate::sinks::SharedBuffer;
use crate::symbols::{Function, Symbolizer};
use crate::test_events::range;
use std::collections::BTreeMap;
use trace_core::event::{Event, InsnClass};

fn symbols() -> Symbolizer {
    let f = |start: u32, end: u32, name: &str| Function {
        start,
        end,
        name: name.to_owned(),
        thumb: false,
    };
    Symbolizer::with_functions(vec![
        f(0x100, 0x200, "main"),
        f(0x200, 0x300, "fib"),
        f(0x300, 0x400, "leaf"),
    ])
}

/// Per function (calls, self, total) from the JSON report, and the folded
/// lines, of `events`.
fn run(events: &[Event]) -> (BTreeMap<String, (u64, u64, u64)>, String) {
    let symbols = symbols();
    let report = SharedBuffer::new();
    let folded = SharedBuffer::new();
    let mut conv = Converter::new(&symbols, ClockInfo::default(), 64);
    conv.add_sink(Box::new(ReportSink::new(
        report.clone(),
        ReportFormat::Json,
        &ReportOptions::default(),
    )));
    conv.add_sink(Box::new(FoldedSink::new(
        folded.clone(),
        Weight::Instructions,
    )));
    conv.events(events, None).expect("events");
    conv.finish().expect("finish");
    let v: serde_json::Value = serde_json::from_slice(&report.bytes()).expect("JSON");
    let rows = v
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().expect("number");
            let name = r["function"].as_str().expect("name").to_owned();
            (
                name,
                (n("calls"), n("self_instructions"), n("total_instructions")),
            )
        })
        .collect();
    (rows, String::from_utf8(folded.bytes()).expect("UTF-8"))
}

#[test]
fn recursion_counts_once_in_the_total() {
    use InsnClass::{Branch, IndirectBranch, Other};
    let (rows, folded) = run(&[
        // main: 2 instructions, calls fib (returns to 0x108).
        range(0x100, 2, Branch, true, false),
        // fib: 3, calls fib again (returns to 0x20c).
        range(0x200, 3, Branch, true, false),
        // fib: 4, calls leaf (returns to 0x210).
        range(0x200, 4, Branch, true, false),
        // leaf: 5, returns.
        range(0x300, 5, IndirectBranch, false, true),
        // fib (inner): 1, returns.
        range(0x210, 1, IndirectBranch, false, true),
        // fib (outer): 2, returns.
        range(0x20c, 2, IndirectBranch, false, true),
        // main: 6.
        range(0x108, 6, Other, false, false),
    ]);
    let want: BTreeMap<String, (u64, u64, u64)> = [
        ("main", (0, 8, 23)),
        // 3 + 4 + 1 + 2 own; everything from its first entry to its
        // last return, once: 3 + 4 + 5 + 1 + 2.
        ("fib", (2, 10, 15)),
        ("leaf", (1, 5, 5)),
    ]
    .into_iter()
    .map(|(n, c)| (n.to_owned(), c))
    .collect();
    assert_eq!(rows, want, "{folded}");
}

#[test]
fn an_inferred_caller_holds_what_ran_before_it() {
    use InsnClass::{IndirectBranch, Other};
    let (rows, folded) = run(&[
        // The trace starts in leaf: 3 instructions, then a return with no
        // matching call, to main (an inferred caller).
        range(0x300, 3, IndirectBranch, false, true),
        range(0x110, 4, Other, false, false),
    ]);
    // main stands for the code that ran since the trace began: its total
    // holds leaf's 3 instructions, as the folded line `main;leaf 3` does.
    assert!(folded.contains("main;leaf 3"), "{folded}");
    assert_eq!(rows.get("main"), Some(&(0, 4, 7)), "{rows:?}");
    assert_eq!(rows.get("leaf"), Some(&(0, 3, 3)), "{rows:?}");
}
