//! RTOS tasks against the emulator's truth: the corpus RTOS program
//! (`corpus/src/rtos.c`, every flavour) is encoded in every PTM and ETMv3
//! configuration the corpus tests use, converted with its ELF, and each
//! task's instruction count, every task switch (the instruction where the
//! new task runs, and which task) and each task's folded stacks are
//! compared with the emulator's record of which task ran each instruction
//! (`<program>-<flavour>.tasks`, see corpus/README.md) and the stacks
//! derived from it (`stacks` in `*.cov.json`).

use crate::convert_common::{corpus_program, folded_map, trace_input, truth_stacks, TaskRecord};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use trace_convert::convert::{self, ConvertOptions, Converter};
use trace_convert::input::memory::ExtraMemory;
use trace_convert::input::source::Protocol;
use trace_convert::progress::NoProgress;
use trace_convert::sinks::folded::{FoldedSink, Weight};
use trace_convert::sinks::{EventCtx, Flow, NoParts, RunInfo, SharedBuffer, Sink};
use trace_convert::symbols::Symbolizer;
use trace_core::event::{Event, EventKind};
use trace_core::memory::{MemoryMap, Space};
use trace_encode::{encode_etm, encode_ptm, EtmOptions, PtmOptions, Trace};

/// The emulator's record with the flow's length: instructions per task
/// and the switches, by task name.
struct Truth {
    record: TaskRecord,
    instructions: u64,
}

impl Truth {
    fn name(&self, task: u32) -> String {
        if task == 0 {
            "(initial)".to_owned()
        } else {
            self.record.names[&task].clone()
        }
    }

    /// Instructions per task name.
    fn counts(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        let mut at = 0;
        let mut task = 0;
        for &(index, next) in &self.record.switches {
            *out.entry(self.name(task)).or_insert(0) += index - at;
            at = index;
            task = next;
        }
        *out.entry(self.name(task)).or_insert(0) += self.instructions - at;
        out.retain(|_, n| *n > 0);
        out
    }

    /// Switches as (instruction index, task name).
    fn switch_points(&self) -> Vec<(u64, String)> {
        self.record
            .switches
            .iter()
            .map(|&(i, t)| (i, self.name(t)))
            .collect()
    }
}

/// What a conversion says about tasks: instructions per task name and
/// the switches (instruction index where the new task runs, its name).
#[derive(Default)]
struct Seen {
    counts: BTreeMap<String, u64>,
    switches: Vec<(u64, String)>,
    instructions: u64,
}

struct TaskSink(std::rc::Rc<std::cell::RefCell<Seen>>);

impl Sink for TaskSink {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "tasks-test"
    }

    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow> {
        let mut seen = self.0.borrow_mut();
        let name = ctx
            .task(ctx.thread)
            .map_or_else(|| "(initial)".to_owned(), |t| t.name.clone());
        if let Some(s) = ctx.switch {
            assert_eq!(s.to, ctx.thread);
            let at = seen.instructions;
            seen.switches.push((at, name.clone()));
        }
        if let EventKind::Range(r) = event.kind {
            seen.instructions += u64::from(r.count);
            *seen.counts.entry(name).or_insert(0) += u64::from(r.count);
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self, _info: &RunInfo) -> io::Result<()> {
        Ok(())
    }
}

/// Convert `trace` with `elf`'s symbols: what the task stage says, and the
/// folded stacks. With `no_exit`, the decoded exception-return events are
/// dropped first, as the ETMv3 of a Cortex-A/R core has no such packet:
/// then the exception returns are told by their instructions.
fn convert(
    trace: &Trace,
    protocol: Protocol,
    elf: &Path,
    bin: &Path,
    no_exit: bool,
) -> (Seen, String) {
    let input = trace_input(trace, protocol, bin);
    let elves = [elf.to_path_buf()];
    let mut symbols = Symbolizer::from_elves(&elves).expect("symbols");
    symbols.set_inline_scopes(false);
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Seen::default()));
    let folded = SharedBuffer::new();
    let options = ConvertOptions::default();
    let mut conv = Converter::new(&symbols, options.clock_for(&input), options.max_depth);
    conv.add_sink(Box::new(TaskSink(seen.clone())));
    conv.add_sink(Box::new(FoldedSink::new(
        folded.clone(),
        Weight::Instructions,
    )));
    let extra = ExtraMemory {
        elves: elves.to_vec(),
        raw: Vec::new(),
    };
    if no_exit {
        let mut mem = MemoryMap::new();
        mem.add_elf(elf, Space::Any).expect("elf");
        let image: std::sync::Arc<dyn trace_core::memory::MemoryImage> = std::sync::Arc::new(mem);
        let events =
            crate::convert_common::one_thread_events(&input.captures[0], |_| image.clone());
        let kept: Vec<_> = events
            .into_iter()
            .filter(|e| !matches!(e.kind, EventKind::ExceptionReturn))
            .collect();
        conv.events(&kept, Some(&*image)).expect("events");
        conv.finish().expect("finish");
    } else {
        convert::convert_input(&input, &extra, conv, &mut NoProgress).expect("conversion");
    }
    let seen = std::rc::Rc::try_unwrap(seen)
        .ok()
        .expect("one owner")
        .into_inner();
    (seen, String::from_utf8(folded.bytes()).expect("UTF-8"))
}

/// The configurations the RTOS flows are encoded in: PTM with and without
/// the return stack, cycle-accurate, branch broadcast; ETMv3 plain,
/// cycle-accurate, alternative branch encoding, branch broadcast.
fn traces(
    name: &str,
    flow: &trace_encode::Flow,
    mem: &trace_core::memory::MemoryMap,
) -> Vec<(String, Protocol, Trace)> {
    let mut out = Vec::new();
    let etm = [
        ("etm", EtmOptions::default()),
        (
            "etm-ca",
            EtmOptions {
                cycle_accurate: true,
                ..EtmOptions::default()
            },
        ),
        (
            "etm-alt-bb",
            EtmOptions {
                alt_branch: true,
                branch_broadcast: true,
                ..EtmOptions::default()
            },
        ),
    ];
    for (label, o) in etm {
        out.push((
            label.to_owned(),
            Protocol::Etmv3,
            encode_etm(&flow.items, mem, &o).expect("etm encode"),
        ));
    }
    if !name.ends_with("-m") {
        let ptm = [
            ("ptm", PtmOptions::default()),
            (
                "ptm-rstk",
                PtmOptions {
                    return_stack: true,
                    ..PtmOptions::default()
                },
            ),
            (
                "ptm-ca-bb",
                PtmOptions {
                    cycle_accurate: true,
                    branch_broadcast: true,
                    ..PtmOptions::default()
                },
            ),
        ];
        for (label, o) in ptm {
            out.push((
                label.to_owned(),
                Protocol::Ptm,
                encode_ptm(&flow.items, mem, &o).expect("ptm encode"),
            ));
        }
    }
    out
}

#[test]
fn tasks_and_switches_match_the_emulator() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let names = test_support::corpus_programs(&dir, ".tasks");
    assert!(names.len() >= 3, "the RTOS program in every flavour");
    let mut failures = Vec::new();
    let mut compared = 0;
    for name in &names {
        let (elf, flow, mem) = corpus_program(&dir, name);
        let truth = Truth {
            record: TaskRecord::read(&dir.join(format!("{name}.tasks"))).expect("task record"),
            instructions: flow.instruction_count() as u64,
        };
        let stacks = truth_stacks(&dir.join(format!("{name}.cov.json")));
        assert!(truth.record.switches.len() > 50, "{name}: switches");
        assert!(
            truth.counts().len() >= 6,
            "{name}: the initial context, idle and four tasks"
        );
        let mut runs: Vec<(String, Protocol, Trace, bool)> = traces(name, &flow, &mem)
            .into_iter()
            .map(|(l, p, t)| (l, p, t, false))
            .collect();
        if !name.ends_with("-m") {
            runs.push((
                "etm-no-exit".to_owned(),
                Protocol::Etmv3,
                encode_etm(&flow.items, &mem, &EtmOptions::default()).expect("etm encode"),
                true,
            ));
        }
        for (label, protocol, trace, no_exit) in runs {
            let (seen, folded) =
                convert(&trace, protocol, &elf, &tmp.path().join("t.bin"), no_exit);
            compared += 1;
            let what = format!("{name} {label}");
            if seen.counts != truth.counts() {
                failures.push(format!(
                    "{what}: instructions per task: ours {:?}, truth {:?}",
                    seen.counts,
                    truth.counts()
                ));
            }
            let want = truth.switch_points();
            if seen.switches != want {
                let at = seen
                    .switches
                    .iter()
                    .zip(&want)
                    .position(|(a, b)| a != b)
                    .unwrap_or(seen.switches.len().min(want.len()));
                failures.push(format!(
                    "{what}: {} switches, truth {}; first difference at #{at}: ours {:?}, truth {:?}",
                    seen.switches.len(),
                    want.len(),
                    seen.switches.get(at),
                    want.get(at)
                ));
            }
            let got = folded_map(&folded);
            if got != stacks {
                let diff: Vec<String> = stacks
                    .keys()
                    .chain(got.keys())
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .filter(|k| stacks.get(*k) != got.get(*k))
                    .take(6)
                    .map(|k| format!("{k}: truth {:?}, ours {:?}", stacks.get(k), got.get(k)))
                    .collect();
                failures.push(format!("{what}: folded stacks: {}", diff.join("; ")));
            }
        }
    }
    assert!(compared >= 17, "every flavour and configuration");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The timelines of the RTOS program: a thread track per task, named after
/// it, in a process named after the core, in the Chrome JSON and in the
/// Perfetto trace as the official schema reads it
/// (`tests/perfetto_check.py`), with as many slices as Chrome slices.
#[test]
fn each_task_has_a_track_in_the_timelines() {
    use trace_convert::sinks::chrome::ChromeSink;
    use trace_convert::sinks::perfetto::PerfettoSink;
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let name = "rtos-t";
    let (elf, flow, mem) = corpus_program(&dir, name);
    let record = TaskRecord::read(&dir.join(format!("{name}.tasks"))).expect("task record");
    let trace = encode_etm(&flow.items, &mem, &EtmOptions::default()).expect("etm encode");
    let input = trace_input(&trace, Protocol::Etmv3, &tmp.path().join("t.bin"));
    let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
    let (chrome, perfetto) = (SharedBuffer::new(), SharedBuffer::new());
    let options = ConvertOptions::default();
    let mut conv = Converter::new(&symbols, options.clock_for(&input), options.max_depth);
    conv.add_sink(Box::new(ChromeSink::new(chrome.clone())));
    conv.add_sink(Box::new(PerfettoSink::new(perfetto.clone())));
    let extra = ExtraMemory {
        elves: vec![elf.clone()],
        raw: Vec::new(),
    };
    convert::convert_input(&input, &extra, conv, &mut NoProgress).expect("conversion");
    let want: std::collections::BTreeSet<String> = record.names.values().cloned().collect();

    // Chrome: the tasks' threads share one process, named after the core.
    let chrome = String::from_utf8(chrome.bytes()).expect("UTF-8");
    crate::convert_common::check_chrome(&chrome);
    let v: serde_json::Value = serde_json::from_str(&chrome).expect("JSON");
    let meta = |what: &str| -> Vec<(u64, u64, String)> {
        v["traceEvents"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == what)
            .map(|e| {
                (
                    e["pid"].as_u64().expect("pid"),
                    e["tid"].as_u64().expect("tid"),
                    e["args"]["name"].as_str().expect("name").to_owned(),
                )
            })
            .collect()
    };
    let threads = meta("thread_name");
    let processes = meta("process_name");
    let task_threads: Vec<&(u64, u64, String)> =
        threads.iter().filter(|t| want.contains(&t.2)).collect();
    assert_eq!(task_threads.len(), want.len(), "{threads:?}");
    let pid = task_threads[0].0;
    assert!(task_threads.iter().all(|t| t.0 == pid));
    let core = processes
        .iter()
        .find(|p| p.0 == pid)
        .map(|p| p.2.clone())
        .expect("the tasks' process is named");
    assert!(core.starts_with("trace ID 0x"), "{core}");
    let begins = chrome.matches(r#""ph":"B""#).count();

    // Perfetto, read with the official schema.
    let has = std::process::Command::new("python3")
        .args(["-c", "import perfetto, google.protobuf"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 with perfetto is missing and CI is set"
        );
        eprintln!("skipping the Perfetto part: python3 with perfetto and protobuf not available");
        return;
    }
    let path = tmp.path().join("t.pftrace");
    std::fs::write(&path, perfetto.bytes()).expect("write");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_check.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(&path)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary");
    let descriptors = summary["descriptors"].as_array().expect("descriptors");
    let process = descriptors
        .iter()
        .find(|d| d["kind"] == "process" && d["name"] == core.as_str())
        .expect("the core's process");
    let tracks: Vec<&serde_json::Value> = descriptors
        .iter()
        .filter(|d| d["kind"] == "thread" && d["pid"] == process["pid"])
        .collect();
    let names: std::collections::BTreeSet<String> = tracks
        .iter()
        .map(|d| d["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(names, want);
    // Each task's outermost slices are its entry function's.
    for t in &tracks {
        let task = t["name"].as_str().expect("name");
        let slices = summary["tracks"][task]["slices"]
            .as_array()
            .expect("slices");
        assert!(!slices.is_empty(), "{task}");
        assert!(
            slices.iter().filter(|s| s[3] == 0).all(|s| s[0] == task),
            "{task}: outermost slices"
        );
    }
    let slices: u64 = descriptors
        .iter()
        .map(|d| d["slices"].as_u64().expect("slices"))
        .sum();
    assert_eq!(slices, begins as u64);
}

/// `report --by-task` on the RTOS program: each task's instructions are
/// the emulator's count for it, and its functions' self instructions add
/// up to them; `--tasks` lists the emulator's switches.
#[test]
fn the_report_by_task_and_the_switch_lines_follow_the_emulator() {
    use trace_convert::sinks::report::{ReportFormat, ReportOptions, ReportSink};
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let name = "rtos-a";
    let (elf, flow, mem) = corpus_program(&dir, name);
    let truth = Truth {
        record: TaskRecord::read(&dir.join(format!("{name}.tasks"))).expect("task record"),
        instructions: flow.instruction_count() as u64,
    };
    let trace = encode_ptm(&flow.items, &mem, &PtmOptions::default()).expect("ptm encode");
    let input = trace_input(&trace, Protocol::Ptm, &tmp.path().join("t.bin"));
    let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
    let (report, lines) = (SharedBuffer::new(), SharedBuffer::new());
    let options = ConvertOptions::default();
    let mut conv = Converter::new(&symbols, options.clock_for(&input), options.max_depth);
    conv.add_sink(Box::new(trace_convert::sinks::tasks::TasksSink::new(
        lines.clone(),
    )));
    conv.add_sink(Box::new(ReportSink::new(
        report.clone(),
        ReportFormat::Json,
        &ReportOptions {
            by_task: true,
            ..ReportOptions::default()
        },
    )));
    let extra = ExtraMemory {
        elves: vec![elf.clone()],
        raw: Vec::new(),
    };
    convert::convert_input(&input, &extra, conv, &mut NoProgress).expect("conversion");
    let v: serde_json::Value = serde_json::from_slice(&report.bytes()).expect("JSON");
    let mut got = BTreeMap::new();
    let mut share = 0.0;
    for t in v.as_array().expect("tasks") {
        let task = t["task"].as_str().expect("task");
        let n = t["instructions"].as_u64().expect("instructions");
        let own: u64 = t["functions"]
            .as_array()
            .expect("functions")
            .iter()
            .map(|f| f["self_instructions"].as_u64().expect("self"))
            .sum();
        assert_eq!(own, n, "{task}: its functions' self instructions");
        share += t["percent"].as_f64().expect("percent");
        let task = if truth.record.names.values().any(|x| x == task) {
            task.to_owned()
        } else {
            "(initial)".to_owned()
        };
        assert!(got.insert(task, n).is_none());
    }
    assert_eq!(got, truth.counts());
    assert!((share - 100.0).abs() < 1e-6);
    let lines: Vec<serde_json::Value> = String::from_utf8(lines.bytes())
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let switched: Vec<String> = lines
        .iter()
        .filter(|l| l["kind"] == "task_switch")
        .map(|l| l["to"].as_str().unwrap_or("(initial)").to_owned())
        .collect();
    let want: Vec<String> = truth.switch_points().into_iter().map(|(_, n)| n).collect();
    assert_eq!(switched, want);
    let tasks = lines.iter().filter(|l| l["kind"] == "task").count();
    assert_eq!(tasks, truth.record.names.len());
}

/// `top`'s per-task rows (trace_convert::sinks::top) are the emulator's
/// instructions per task; what ran before the first switch is the core's.
#[test]
fn top_shows_the_emulators_instructions_per_task() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use trace_convert::sinks::top::{SharedView, TopSink};
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let name = "rtos-t";
    let (elf, flow, mem) = corpus_program(&dir, name);
    let truth = Truth {
        record: TaskRecord::read(&dir.join(format!("{name}.tasks"))).expect("task record"),
        instructions: flow.instruction_count() as u64,
    };
    let trace = encode_ptm(&flow.items, &mem, &PtmOptions::default()).expect("ptm encode");
    let input = trace_input(&trace, Protocol::Ptm, &tmp.path().join("t.bin"));
    let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
    let counts = SharedView::default();
    let options = ConvertOptions::default();
    let mut conv = Converter::new(&symbols, options.clock_for(&input), options.max_depth);
    conv.add_sink(Box::new(TopSink::new(
        Arc::clone(&counts),
        Arc::new(AtomicBool::new(false)),
    )));
    let extra = ExtraMemory {
        elves: vec![elf.clone()],
        raw: Vec::new(),
    };
    convert::convert_input(&input, &extra, conv, &mut NoProgress).expect("conversion");
    let view = counts.lock().expect("counts").view();
    assert!(view.done);
    assert_eq!(view.instructions, truth.instructions);
    let mut got = BTreeMap::new();
    for (task, n, _) in &view.tasks {
        let task = if truth.record.names.values().any(|x| x == task) {
            task.clone()
        } else {
            "(initial)".to_owned()
        };
        assert!(got.insert(task, *n).is_none());
    }
    assert_eq!(got, truth.counts());
}
