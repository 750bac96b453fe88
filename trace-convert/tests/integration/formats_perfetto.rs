//! The Perfetto writer's output, read back with the official trace schema
//! (the `perfetto` Python package) by `tests/perfetto_check.py`.
//!
//! Needs `python3` with the `perfetto` and `protobuf` packages; without
//! them the test says so and passes, unless the `CI` environment variable
//! is set. Setting `PERFETTO_TP_SHELL` to a `trace_processor_shell` binary
//! also loads the trace in Perfetto's trace processor.

use std::path::{Path, PathBuf};
use std::process::Command;
use trace_convert::sinks::perfetto::writer::PerfettoWriter;

/// Skip (print why) or, under CI, fail.
fn missing(what: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is missing and CI is set"
    );
    eprintln!("skipping: {what} not available");
}

fn python_has_perfetto() -> bool {
    Command::new("python3")
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tc-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

/// A slice as the checker reports it: name, begin, end, depth.
type Slice = (String, u64, u64, u64);

fn slices(v: &serde_json::Value) -> Vec<Slice> {
    let mut out: Vec<Slice> = v
        .as_array()
        .expect("slices")
        .iter()
        .map(|s| {
            (
                s[0].as_str().expect("name").to_owned(),
                s[1].as_u64().expect("begin"),
                s[2].as_u64().expect("end"),
                s[3].as_u64().expect("depth"),
            )
        })
        .collect();
    out.sort();
    out
}

fn s(name: &str, begin: u64, end: u64, depth: u64) -> Slice {
    (name.to_owned(), begin, end, depth)
}

fn run_checker(trace: &Path) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_check.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script).arg(trace);
    match std::env::var_os("PERFETTO_TP_SHELL") {
        Some(tp) => {
            cmd.arg(tp);
        }
        None => eprintln!(
            "trace processor part skipped: set PERFETTO_TP_SHELL to a trace_processor_shell \
             (the perfetto package would download one)"
        ),
    }
    let out = cmd.output().expect("run python3");
    assert!(
        out.status.success(),
        "checker failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("checker JSON")
}

#[test]
fn official_schema_reads_slices_instants_and_counters() {
    if !python_has_perfetto() {
        missing("python3 with the perfetto package");
        return;
    }
    let dir = temp_dir("perfetto");
    let path = dir.join("trace.pftrace");
    let file = std::fs::File::create(&path).expect("create");
    let mut w = PerfettoWriter::new(file);

    let proc_ = w.process_track(10, "core cluster").expect("process");
    let cpu0 = w.thread_track(10, 11, "cpu0").expect("thread");
    let cpu1 = w.thread_track(10, 12, "cpu1").expect("thread");
    let irq = w.track("exceptions", Some(cpu0)).expect("track");
    let cycles = w
        .counter_track("cycles", Some("cycles"), Some(proc_))
        .expect("counter");
    let ipc = w.counter_track("ipc", None, None).expect("counter");
    let busy = w.track("loop", None).expect("track");

    // cpu0: main [0, 1000] holding f [100, 400] (holding g [150, 300]) and
    // h [500, 900]; cpu1 interleaved with it: a [50, 950] holding b [60, 70].
    w.begin(cpu0, 0, "main").expect("ev");
    w.counter(cycles, 0, 0).expect("ev");
    w.begin(cpu1, 50, "a").expect("ev");
    w.begin(cpu1, 60, "b").expect("ev");
    w.end(cpu1, 70).expect("ev");
    w.begin(cpu0, 100, "f").expect("ev");
    w.begin(cpu0, 150, "g").expect("ev");
    w.instant(irq, 200, "irq").expect("ev");
    w.end(cpu0, 300).expect("ev");
    w.end(cpu0, 400).expect("ev");
    w.counter(cycles, 500, 1234).expect("ev");
    w.counter_f64(ipc, 500, 0.75).expect("ev");
    w.begin(cpu0, 500, "h").expect("ev");
    w.instant(irq, 600, "fiq").expect("ev");
    w.instant(irq, 700, "irq").expect("ev");
    w.end(cpu0, 900).expect("ev");
    w.end(cpu1, 950).expect("ev");
    w.end(cpu0, 1000).expect("ev");
    w.counter(cycles, 1000, -5).expect("ev");
    // A counter sampled by slice packets: a value carried by a begin and
    // by an end (extra counter values), between values of its own.
    let depth = w.counter_track("depth", None, Some(cpu1)).expect("counter");
    let deep = w.name("deep").expect("name");
    w.counter(depth, 1_000, 1).expect("ev");
    w.begin_named_counted(cpu1, 1_010, deep, depth, 2)
        .expect("ev");
    w.end_counted(cpu1, 1_020, depth, 1).expect("ev");
    w.counter(depth, 1_030, 0).expect("ev");
    // Enough packets to go through the buffer several times, with names
    // reused through interning.
    for i in 0..20_000u64 {
        let name = if i % 3 == 0 { "loop_a" } else { "loop_b" };
        w.begin(busy, 2_000 + 10 * i, name).expect("ev");
        w.end(busy, 2_005 + 10 * i).expect("ev");
    }
    // Left open: finish closes it at the track's latest timestamp.
    w.begin(cpu1, 1_100, "unfinished").expect("ev");
    w.instant(cpu1, 1_200, "mark").expect("ev");
    w.finish().expect("finish");

    let v = run_checker(&path);
    let t = &v["tracks"];
    assert_eq!(t["cpu0"]["kind"], "thread");
    assert_eq!(t["core cluster"]["kind"], "process");
    assert_eq!(t["exceptions"]["parent"], "cpu0");
    assert_eq!(t["cycles"]["parent"], "core cluster");
    assert_eq!(t["cycles"]["unit"], "cycles");
    assert_eq!(
        slices(&t["cpu0"]["slices"]),
        vec![
            s("f", 100, 400, 1),
            s("g", 150, 300, 2),
            s("h", 500, 900, 1),
            s("main", 0, 1000, 0),
        ]
    );
    assert_eq!(
        slices(&t["cpu1"]["slices"]),
        vec![
            s("a", 50, 950, 0),
            s("b", 60, 70, 1),
            s("deep", 1_010, 1_020, 0),
            s("unfinished", 1_100, 1_200, 0),
        ]
    );
    assert_eq!(
        t["exceptions"]["instants"],
        serde_json::json!([["irq", 200], ["fiq", 600], ["irq", 700]])
    );
    assert_eq!(t["cpu1"]["instants"], serde_json::json!([["mark", 1200]]));
    assert_eq!(
        t["cycles"]["counters"],
        serde_json::json!([[0, 0], [500, 1234], [1000, -5]])
    );
    assert_eq!(t["ipc"]["counters"], serde_json::json!([[500, 0.75]]));
    assert_eq!(
        t["depth"]["counters"],
        serde_json::json!([[1000, 1], [1010, 2], [1020, 1], [1030, 0]])
    );
    let busy_slices = slices(&t["loop"]["slices"]);
    assert_eq!(busy_slices.len(), 20_000);
    assert_eq!(
        busy_slices.iter().filter(|s| s.0 == "loop_a").count(),
        6_667
    );
    assert!(busy_slices.iter().all(|s| s.2 == s.1 + 5 && s.3 == 0));
    if let Some(n) = v.get("tp_slices") {
        // 8 + 20,000 slices and 4 instants (zero-length slices there).
        assert_eq!(n.as_u64(), Some(20_012));
    }
    std::fs::remove_dir_all(&dir).ok();
}
