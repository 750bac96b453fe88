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
