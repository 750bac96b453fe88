//! The `packets` listing on the command line (docs/cli.md, "Listing").
//! Needs ../shared/testdata (skipped when absent, failing under CI).

use std::collections::BTreeSet;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(args)
        .output()
        .expect("run trace-convert")
}

/// The trace IDs of the listed records (JSON lines).
fn listed_ids(out: &Output) -> BTreeSet<u64> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            v["id"].as_u64().expect("id")
        })
        .collect()
}

#[test]
fn trace_id_lists_only_that_id() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let tc2 = dir.join("TC2").display().to_string();
    let frames = std::fs::read(dir.join("TC2/cstrace.bin")).expect("cstrace.bin");
    // The IDs the frames carry, by the formatter's rules alone.
    let in_frames: BTreeSet<u64> = test_support::opencsd_frames::deformat(&frames)
        .keys()
        .map(|&id| u64::from(id))
        .collect();
    assert!(
        in_frames.contains(&0x13) && in_frames.len() > 1,
        "{in_frames:?}"
    );
    let all = listed_ids(&run(&["packets", &tc2, "--format", "jsonl"]));
    assert!(
        in_frames.is_subset(&all),
        "{all:?} misses some of {in_frames:?}"
    );
    // ID 0 marks bytes outside every ID (before the first ID).
    let one = listed_ids(&run(&[
        "packets",
        &tc2,
        "--trace-id",
        "0x13",
        "--format",
        "jsonl",
    ]));
    assert!(one.contains(&0x13), "{one:?}");
    assert!(one.iter().all(|&id| id == 0x13 || id == 0), "{one:?}");
}

#[test]
fn counts_of_one_are_singular() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let tc2 = dir.join("TC2").display().to_string();
    let out = run(&["packets", &tc2, "--trace-id", "0x13"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    // The records: how many errors ID 0x13 has, and one-byte runs.
    let jsonl = run(&["packets", &tc2, "--trace-id", "0x13", "--format", "jsonl"]);
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&jsonl.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let errors = records
        .iter()
        .filter(|r| r["id"] == 0x13 && r["kind"] == "error")
        .count();
    let one_byte_runs = records
        .iter()
        .filter(|r| r["kind"] != "error" && r["len"] == 1)
        .count();
    assert_eq!(errors, 1, "this capture has one error under ID 0x13");
    assert!(one_byte_runs > 0);
    let summary = err
        .lines()
        .find(|l| l.contains("ID 0x13:"))
        .expect("summary");
    assert!(summary.ends_with(", 1 error"), "{summary}");
    assert_eq!(text.matches("(1 byte)").count(), one_byte_runs, "{text}");
    assert!(!text.contains("(1 bytes)"));
    // TC2's ITM (device type ITM, ITMTCR 0x00200006: trace ID 0x20) is
    // a source of its own; the capture holds no bytes of it.
    let all = run(&["packets", &tc2, "--format", "jsonl"]);
    let all_err = String::from_utf8_lossy(&all.stderr);
    let itm = all_err
        .lines()
        .find(|l| l.contains("ID 0x20:"))
        .expect("ITM summary");
    assert!(itm.contains("ID 0x20: 0 bytes"), "{itm}");
    assert!(!all_err.contains("not decoded"), "{all_err}");
    assert!(!err.contains("not decoded"), "{err}");
}
