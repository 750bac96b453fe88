//! The per-function report against the folded stacks and the emulator's
//! truth: on every corpus program (ETMv3 and PTM encodings of the
//! recorded flow) a function's self instructions equal the truth's
//! folded weights of the stacks ending in it (from `*.cov.json`, computed
//! from the flow and the ELF alone) and its total instructions the
//! weights of the stacks holding it, counted once per stack, and its
//! calls the times the truth saw its first instruction run; with inlined
//! rows, the same against our own folded stacks with inlined frames. On
//! the bundled example, through the command line, self and total
//! instructions and cycles against the folded stacks written by the same
//! run. One decoding thread or two give the same report (and AutoFDO
//! profile) on a four-core capture and on a capture of several chunks.

use super::convert_common::{
    cli, corpus_program, corpus_traces_with, folded_map, trace_input, truth_stacks,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use trace_convert::convert::{self, ConvertOptions, Converter};
use trace_convert::input::memory::ExtraMemory;
use trace_convert::input::Input;
use trace_convert::progress::NoProgress;
use trace_convert::sinks::folded::{FoldedSink, Weight};
use trace_convert::sinks::report::{ReportFormat, ReportOptions, ReportSink};
use trace_convert::sinks::SharedBuffer;
use trace_convert::symbols::Symbolizer;
use trace_core::memory::{MemoryMap, Space};
use trace_encode::{Flow, FlowItem, PtmOptions};

/// Per function: (self, total) from folded lines `a;b;c weight`.
type Counts = BTreeMap<String, (u64, u64)>;

fn from_folded(lines: &BTreeMap<String, u64>) -> Counts {
    let mut out = Counts::new();
    for (stack, w) in lines {
        let frames: Vec<&str> = stack.split(';').collect();
        if let Some(leaf) = frames.last() {
            out.entry((*leaf).to_owned()).or_default().0 += w;
        }
        for f in frames.iter().collect::<BTreeSet<_>>() {
            out.entry((*f).to_owned()).or_default().1 += w;
        }
    }
    out
}

/// One row of the JSON report.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    calls: u64,
    self_instructions: u64,
    total_instructions: u64,
    self_cycles: Option<u64>,
    total_cycles: Option<u64>,
}

fn report_rows(json: &str) -> BTreeMap<String, Row> {
    let v: serde_json::Value = serde_json::from_str(json).expect("report JSON");
    let mut out = BTreeMap::new();
    for r in v.as_array().expect("an array") {
        let n = |k: &str| r[k].as_u64();
        let name = r["function"].as_str().expect("function").to_owned();
        let row = Row {
            calls: n("calls").expect("calls"),
            self_instructions: n("self_instructions").expect("self"),
            total_instructions: n("total_instructions").expect("total"),
            self_cycles: n("self_cycles"),
            total_cycles: n("total_cycles"),
        };
        assert!(out.insert(name.clone(), row).is_none(), "{name} twice");
    }
    out
}

/// Instructions (self, total) of each function of the report, leaving out
/// rows with neither.
fn instruction_counts(rows: &BTreeMap<String, Row>) -> Counts {
    rows.iter()
        .filter(|(_, r)| r.self_instructions > 0 || r.total_instructions > 0)
        .map(|(n, r)| (n.clone(), (r.self_instructions, r.total_instructions)))
        .collect()
}

fn differences(got: &Counts, want: &Counts) -> Vec<String> {
    got.keys()
        .chain(want.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| got.get(*k) != want.get(*k))
        .take(6)
        .map(|k| format!("{k}: report {:?}, expected {:?}", got.get(k), want.get(k)))
        .collect()
}

/// The JSON report and the folded stacks of one decode.
fn report_and_folded(input: &Input, elf: &Path, inline: bool) -> (String, String) {
    let elves = [elf.to_path_buf()];
    let mut symbols = Symbolizer::from_elves(&elves).expect("symbols");
    symbols.set_inline_scopes(inline);
    let report = SharedBuffer::new();
    let folded = SharedBuffer::new();
    let options = ConvertOptions::default();
    let mut conv = Converter::new(&symbols, options.clock_for(input), options.max_depth);
    let report_options = ReportOptions {
        inline,
        ..ReportOptions::default()
    };
    conv.add_sink(Box::new(ReportSink::new(
        report.clone(),
        ReportFormat::Json,
        &report_options,
    )));
    conv.add_sink(Box::new(FoldedSink::new(
        folded.clone(),
        Weight::Instructions,
    )));
    let extra = ExtraMemory {
        elves: elves.to_vec(),
        raw: Vec::new(),
    };
    convert::convert_input(input, &extra, conv, &mut NoProgress).expect("conversion");
    let text = |b: SharedBuffer| String::from_utf8(b.bytes()).expect("UTF-8");
    (text(report), text(folded))
}

#[test]
fn corpus_reports_equal_the_emulator_truth() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let names = test_support::corpus_programs(&dir, ".cov.json");
    let mut failures = Vec::new();
    let (mut runs, mut functions, mut inline_rows, mut calls_compared) = (0, 0, 0, 0);
    for name in &names {
        let (elf, flow, mem) = corpus_program(&dir, name);
        let truth = from_folded(&truth_stacks(&dir.join(format!("{name}.cov.json"))));
        let cov: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.cov.json"))).expect("cov.json"),
        )
        .expect("JSON");
        let functions_of = cov["functions"].as_array().expect("functions");
        // Name, address, times its first instruction ran.
        let entries: BTreeMap<String, u64> = functions_of
            .iter()
            .map(|f| {
                let n = f["name"].as_str().expect("name").to_owned();
                (n, f["count"].as_u64().expect("count"))
            })
            .collect();
        let first = flow.items.iter().find_map(|i| match i {
            FlowItem::Insn { addr, .. } => Some(u64::from(*addr)),
            _ => None,
        });
        let root = functions_of
            .iter()
            .rfind(|f| f["addr"].as_u64() <= first)
            .and_then(|f| f["name"].as_str())
            .expect("a function holds the first instruction")
            .to_owned();
        let ptm = PtmOptions {
            return_stack: true,
            ..PtmOptions::default()
        };
        let traces = corpus_traces_with(name, &flow, &mem, &ptm);
        for (protocol, trace) in &traces {
            let bin = tmp.path().join(format!("{name}-{}.bin", protocol.name()));
            let input = trace_input(trace, *protocol, &bin);
            let what = format!("{name} {}", protocol.name());
            // Without inlined rows: the truth's frames.
            let (json, _) = report_and_folded(&input, &elf, false);
            let rows = report_rows(&json);
            // Calls: each function's entries, except the root's (entered
            // when the trace starts; on A-profile also the vector table,
            // entered by exceptions at vectors other than its first
            // instruction).
            for (n, c) in entries.iter().filter(|(n, _)| **n != root) {
                let calls = rows.get(n).map_or(0, |r| r.calls);
                if calls != *c {
                    failures.push(format!("{what}: {n} called {calls} times, truth {c}"));
                }
                calls_compared += 1;
            }
            let got = instruction_counts(&rows);
            let d = differences(&got, &truth);
            if !d.is_empty() {
                failures.push(format!("{what}: {}", d.join("; ")));
            }
            functions += got.len();
            // With inlined rows: our folded stacks with inlined frames.
            let (json, folded) = report_and_folded(&input, &elf, true);
            let got = instruction_counts(&report_rows(&json));
            let want = from_folded(&folded_map(&folded));
            let d = differences(&got, &want);
            if !d.is_empty() {
                failures.push(format!("{what} inlined: {}", d.join("; ")));
            }
            inline_rows += got.len().saturating_sub(truth.len());
            runs += 1;
        }
    }
    eprintln!(
        "{runs} reports: {functions} functions' self and total instructions and {calls_compared} call counts \
         equal the emulator's; with inlined rows {inline_rows} more rows, equal to the folded stacks"
    );
    assert!(calls_compared > 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(runs >= names.len() && functions > 0);
    assert!(inline_rows > 0, "some corpus program has inlined code");
}

fn trace_convert(args: &[&str]) -> String {
    String::from_utf8(cli(args).stdout).expect("UTF-8")
}

/// The example through the command line: `report` and `--folded` from
/// one decode.
fn example_run(extra: &[&str], weight: &str) -> (BTreeMap<String, Row>, Counts) {
    let dir = tempfile::tempdir().expect("temp dir");
    let folded: PathBuf = dir.path().join("stacks.folded");
    let folded_arg = folded.to_str().expect("UTF-8 path");
    let mut args = vec!["report", "--format", "json", "--folded", folded_arg];
    args.extend(["--folded-weight", weight]);
    args.extend(extra);
    let rows = report_rows(&trace_convert(&args));
    let lines = folded_map(&std::fs::read_to_string(&folded).expect("folded"));
    (rows, from_folded(&lines))
}

#[test]
fn example_report_equals_its_folded_stacks() {
    // By default the report has the inlined frames the folded stacks have.
    for (extra, what) in [
        (&[][..], "inlined rows by default"),
        (&["--no-inline"][..], "no inlined frames"),
    ] {
        let (rows, folded) = example_run(extra, "instructions");
        let got = instruction_counts(&rows);
        assert_eq!(differences(&got, &folded), Vec::<String>::new(), "{what}");
        assert!(got.len() >= 5, "{what}: {got:?}");
        // The example runs its tasks from main: some function holds more
        // than it runs itself.
        assert!(got.values().any(|(s, t)| t > s), "{what}");
        let (rows, folded) = example_run(extra, "cycles");
        let cycles: Counts = rows
            .iter()
            .map(|(n, r)| {
                let c = (
                    r.self_cycles.expect("cycles"),
                    r.total_cycles.expect("cycles"),
                );
                (n.clone(), c)
            })
            .filter(|(_, c)| *c != (0, 0))
            .collect();
        assert_eq!(
            differences(&cycles, &folded),
            Vec::<String>::new(),
            "{what} cycles"
        );
    }
}

#[test]
fn example_report_is_sorted_and_aligned() {
    let text = trace_convert(&["report", "--sort", "total"]);
    let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(rows.len() >= 5, "{text}");
    let totals: Vec<u64> = rows
        .iter()
        .map(|l| {
            l.split_whitespace()
                .nth(3)
                .and_then(|t| t.parse().ok())
                .expect("total column")
        })
        .collect();
    assert!(totals.windows(2).all(|w| w[0] >= w[1]), "{totals:?}");
    let header = text
        .lines()
        .find(|l| l.ends_with("Function"))
        .expect("header");
    let col = header.len() - "Function".len();
    for l in &rows {
        assert!(
            l.get(col - 2..col).is_some_and(|s| s == "  ")
                && l.get(col..).is_some_and(|n| !n.starts_with(' ')),
            "names start in the header's column: {l}"
        );
    }
    let csv = trace_convert(&["report", "--format", "csv", "--sort", "name"]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("function,calls,self_instructions,self_percent,total_instructions,total_percent,self_cycles,total_cycles")
    );
    let names: Vec<&str> = lines.filter_map(|l| l.split(',').next()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
}

/// A four-core capture: one decoding thread or two give the same report,
/// and its self counts add up to the instructions of every core.
#[test]
fn tc2_report_is_the_same_on_one_thread_or_two() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let tc2 = dir.join("TC2");
    let run = |jobs: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
            .env("TRACE_CONVERT_JOBS", jobs)
            // On the cycle axis: the timestamp axis leaves out what runs
            // before a core's first timestamp.
            .args([
                "report",
                "--format",
                "json",
                "--no-progress",
                "--clock",
                "cycles",
            ])
            .arg(&tc2)
            .output()
            .expect("run trace-convert");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        (String::from_utf8(out.stdout).expect("UTF-8"), err)
    };
    let (one, err) = run("1");
    let (two, _) = run("2");
    assert_eq!(one, two);
    let rows = report_rows(&one);
    // The summary's instructions per trace ID, added up.
    let decoded: u64 = err
        .lines()
        .filter(|l| l.contains(": ID 0x"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let i = words.iter().position(|w| *w == "instructions")?;
            words.get(i.checked_sub(1)?)?.parse::<u64>().ok()
        })
        .sum();
    let own: u64 = rows.values().map(|r| r.self_instructions).sum();
    assert!(decoded > 0, "{err}");
    assert_eq!(own, decoded);
}

/// A capture of several decoding chunks: one decoding thread or two give
/// the same report and AutoFDO profile (the converter hands both their
/// events in capture order whatever decodes them).
#[test]
fn report_and_profile_are_the_same_on_one_thread_or_two() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let elf = dir.join("example-t.elf");
    let flow = Flow::parse(&std::fs::read_to_string(dir.join("example-t.flow")).expect("flow"))
        .expect("flow parses");
    let mut mem = MemoryMap::new();
    mem.add_elf(&elf, Space::Any).expect("ELF");
    let opts = PtmOptions {
        return_stack: true,
        cycle_accurate: true,
        ..PtmOptions::default()
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let bin = tmp.path().join("ptm.bin");
    let mut bytes = Vec::new();
    trace_encode::write_repeated(
        &flow.items,
        &mem,
        &trace_encode::Encoding::Ptm(opts),
        3 << 20,
        &mut bytes,
    )
    .expect("encode");
    std::fs::write(&bin, &bytes).expect("write capture");
    let run = |jobs: &str| {
        let report = tmp.path().join(format!("report-{jobs}.json"));
        let profile = tmp.path().join(format!("profile-{jobs}.afdo"));
        let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
            .env("TRACE_CONVERT_JOBS", jobs)
            .arg(&bin)
            .args([
                "--protocol",
                "ptm",
                "--return-stack",
                "--cycle-accurate",
                "--no-progress",
            ])
            .arg("--elf")
            .arg(&elf)
            .arg("--report")
            .arg(&report)
            .arg("--autofdo")
            .arg(&profile)
            .output()
            .expect("run trace-convert");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read = |p: &Path| std::fs::read_to_string(p).expect("output");
        (read(&report), read(&profile))
    };
    let one = run("1");
    let two = run("2");
    assert!(report_rows(&one.0).len() >= 5);
    assert!(one.1.lines().count() > 20);
    assert_eq!(one.0, two.0, "report");
    assert_eq!(one.1, two.1, "profile");
}

#[test]
fn inlined_code_carries_its_share_of_the_cycles() {
    // The example is cycle-accurate PTM: each range's cycles come with its
    // last waypoint. A range that runs through inlined code is cut where
    // the inlined functions change, and every piece carries its
    // instructions' share of the range's cycles: the inlined functions
    // of the example do not come out with none.
    let (rows, _) = example_run(&[], "cycles");
    for name in ["next_random", "timer_handler", "crc32"] {
        let row = rows.get(name).unwrap_or_else(|| panic!("no row {name}"));
        assert!(row.self_instructions > 50, "{name}: {row:?}");
        let cycles = row.self_cycles.expect("cycles");
        // At least one cycle per instruction in four (the example's
        // cycle counts give 1.33 per instruction on average).
        assert!(cycles * 4 >= row.self_instructions, "{name}: {row:?}");
    }
    // Shared, not made up: without inlined frames the same cycles.
    let (plain, _) = example_run(&["--no-inline"], "cycles");
    let sum = |rows: &BTreeMap<String, Row>| {
        rows.values()
            .map(|r| r.self_cycles.expect("cycles"))
            .sum::<u64>()
    };
    assert_eq!(sum(&rows), sum(&plain));
}
