//! Several cores on one time axis: TC2's four cores are cycle-accurate
//! with timestamps; by default every core is placed on the timestamps
//! (resolved by its cycle counts between them), so each core's track
//! begins at its own first timestamp, not at its own zero. The
//! timestamps are read from the decode listing.
//! Needs ../shared/testdata (skipped when absent, failing under CI).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
}

/// Per thread ID of a Chrome trace: the time of its first event (µs).
fn first_times(path: &Path) -> BTreeMap<u64, f64> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
    let mut first = BTreeMap::new();
    for e in v["traceEvents"].as_array().expect("events") {
        if let (Some(tid), Some(ts)) = (e["tid"].as_u64(), e["ts"].as_f64()) {
            first.entry(tid).or_insert(ts);
        }
    }
    first
}

#[test]
fn tc2_cores_line_up_on_the_timestamps() {
    let Some(data) = test_support::opencsd_dir() else {
        return;
    };
    let tc2 = data.join("TC2");
    let listing = bin()
        .args(["decode", "--format", "jsonl"])
        .arg(&tc2)
        .output()
        .expect("decode");
    assert!(listing.status.success());
    // Per trace ID: its first timestamp, and the events before it.
    let mut first_ts: BTreeMap<u64, u64> = BTreeMap::new();
    let mut before: BTreeMap<u64, u64> = BTreeMap::new();
    let mut run_first = None;
    let mut run_last = 0;
    for line in String::from_utf8_lossy(&listing.stdout).lines() {
        let e: Value = serde_json::from_str(line).expect("json");
        let id = e["id"].as_u64().expect("id");
        if e["kind"] == "timestamp" {
            let t = e["timestamp"].as_u64().expect("value");
            run_first.get_or_insert(t);
            run_last = run_last.max(t);
            first_ts.entry(id).or_insert(t);
        } else if !first_ts.contains_key(&id) && e["kind"] != "end_of_trace" {
            *before.entry(id).or_default() += 1;
        }
    }
    let run_first = run_first.expect("timestamps");
    assert_eq!(first_ts.len(), 4);

    let dir = std::env::temp_dir().join(format!("tc-multicore-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let out = bin()
        .arg(&tc2)
        .arg("--chrome")
        .arg(dir.join("ts.json"))
        .output()
        .expect("convert");
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("every core on one axis"), "{err}");
    let unplaced: u64 = before.values().sum();
    assert!(
        err.contains(&format!("warning: {unplaced} events (")),
        "{unplaced}: {err}"
    );
    // One timestamp tick is shown as 1 ns: each core's track begins at
    // its first timestamp, inside the capture's timestamp range.
    let first = first_times(&dir.join("ts.json"));
    assert_eq!(first.len(), 4);
    for (id, ts) in &first_ts {
        let want = (ts - run_first) as f64 / 1000.0;
        let got = first[id];
        assert!(
            (got - want).abs() < 0.0005,
            "{id:#x}: {got} µs, want {want}"
        );
        assert!(got * 1000.0 <= (run_last - run_first) as f64, "{id:#x}");
    }
    // The cores start apart (0x13 some 48 µs after 0x10).
    assert!(first[&0x13] - first[&0x10] > 40.0);

    // On cycle counts each core starts at its own zero (its first event
    // within its first cycles), all together.
    let out = bin()
        .arg(&tc2)
        .args(["--clock", "cycles", "--chrome"])
        .arg(dir.join("cyc.json"))
        .output()
        .expect("convert");
    assert!(out.status.success());
    assert!(first_times(&dir.join("cyc.json"))
        .values()
        .all(|t| *t < 0.1));
    std::fs::remove_dir_all(&dir).ok();
}
