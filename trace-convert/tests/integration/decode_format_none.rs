//! `decode --format none`: no listing, the same per-ID summary as a
//! listing run, counted here from the JSON Lines listing of the same input
//! (but for ETMv3's ranges, which it counts by runs: fewer than the
//! listing's one per instruction).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str], input: &Path) -> Output {
    run_on(args, input, None)
}

/// `args` on `input`, with `jobs` decoding threads if given (then on
/// several threads whatever the capture's size).
fn run_on(args: &[&str], input: &Path, jobs: Option<usize>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trace-convert"));
    if let Some(n) = jobs {
        c.env("TRACE_CONVERT_JOBS", n.to_string());
    }
    c.args(args).arg(input).output().unwrap()
}

/// Per trace ID: ranges, instructions, addresses not accessible, gaps.
type Counts = BTreeMap<u64, [u64; 4]>;

/// The counts of a JSON Lines decode listing.
fn count_jsonl(text: &str) -> Counts {
    let mut counts = Counts::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let c = counts.entry(v["id"].as_u64().unwrap()).or_default();
        match v["kind"].as_str().unwrap() {
            "range" => {
                c[0] += 1;
                c[1] += v["count"].as_u64().unwrap();
            }
            "addr_nacc" => c[2] += 1,
            "gap" => c[3] += 1,
            _ => {}
        }
    }
    counts
}

/// The counts of the summary lines on standard error
/// (`...: ID 0x10: R ranges, I instructions, N not accessible, G gaps`,
/// singular for a count of 1).
fn summary(stderr: &str) -> Counts {
    let mut counts = Counts::new();
    for line in stderr.lines() {
        let Some((_, rest)) = line
            .split_once(": ID 0x")
            .filter(|_| line.ends_with(" gaps") || line.ends_with(" gap"))
        else {
            continue;
        };
        let (id, rest) = rest.split_once(": ").unwrap();
        let numbers: Vec<u64> = rest
            .split(", ")
            .map(|part| part.split(' ').next().unwrap().parse().unwrap())
            .collect();
        let id = u64::from_str_radix(id, 16).unwrap();
        counts.insert(id, numbers.try_into().unwrap());
    }
    counts
}

fn same_counts_as_jsonl(input: &Path, etm: bool) {
    same_counts_as_jsonl_on(input, etm, None);
}

fn same_counts_as_jsonl_on(input: &Path, etm: bool, jobs: Option<usize>) {
    let none = run_on(&["decode", "--format", "none"], input, jobs);
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(none.status.success(), "{stderr}");
    assert!(none.stdout.is_empty(), "no listing is written");
    let jsonl = run(&["decode", "--format", "jsonl"], input);
    assert!(jsonl.status.success());
    let listed = count_jsonl(&String::from_utf8(jsonl.stdout).unwrap());
    // IDs without any counted event have a summary line of zeros only.
    let listed: Counts = listed.into_iter().filter(|(_, c)| *c != [0; 4]).collect();
    let summed: Counts = summary(&stderr)
        .into_iter()
        .filter(|(_, c)| *c != [0; 4])
        .collect();
    assert!(summed.values().any(|c| c[1] > 0), "{stderr}");
    assert_eq!(
        summed.keys().collect::<Vec<_>>(),
        listed.keys().collect::<Vec<_>>()
    );
    for (id, c) in &summed {
        let l = listed[id];
        assert_eq!(c[1..], l[1..], "ID {id:#x}: {stderr}");
        // ETMv3 (TC2's IDs 0x10 to 0x12) by runs; PTM the same ranges.
        if etm && (0x10..=0x12).contains(id) {
            assert!(c[0] * 2 < l[0], "ID {id:#x}: {stderr}");
        } else {
            assert_eq!(c[0], l[0], "ID {id:#x}: {stderr}");
        }
    }
}

#[test]
fn bundled_example_summary_equals_the_listing_counts() {
    same_counts_as_jsonl(&test_support::repo_root().join("examples/snapshot"), false);
}

#[test]
fn real_captures_summary_equals_the_listing_counts() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    same_counts_as_jsonl(&dir.join("tc2-ptm-rstk-t32"), false);
    same_counts_as_jsonl(&dir.join("TC2"), true);
}

/// On two threads the workers count the events and keep none: the
/// summary must still equal the listing's counts, and be the same, line
/// for line (the trace's contradictions and their first offsets
/// included), as on one thread, here on TC2's buffer repeated, whose
/// joins contradict the decoded flow.
#[test]
fn two_threads_count_as_one() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    same_counts_as_jsonl_on(&dir.join("tc2-ptm-rstk-t32"), false, Some(2));
    same_counts_as_jsonl_on(&dir.join("TC2"), true, Some(2));
    let tmp = tempfile::tempdir().unwrap();
    let snap = crate::convert_common::repeated(&dir.join("TC2"), "cstrace.bin", 8, tmp.path());
    let args = ["decode", "--format", "none"];
    let one = run_on(&args, &snap, Some(1));
    let two = run_on(&args, &snap, Some(2));
    let one_err = String::from_utf8_lossy(&one.stderr);
    assert!(one_err.contains("contradicted"), "{one_err}");
    assert_eq!(one.status.code(), two.status.code());
    assert_eq!(one_err, String::from_utf8_lossy(&two.stderr));
}

#[test]
fn output_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let listing = dir.path().join("out.txt");
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(["decode", "--format", "none", "-o"])
        .arg(&listing)
        .arg(test_support::repo_root().join("examples/snapshot"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--format none"));
    assert!(!listing.exists());
}

#[test]
fn nothing_decoded_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    // Zero bytes hold no synchronisation: nothing can be decoded.
    let capture = dir.path().join("zeros.bin");
    std::fs::write(&capture, [0u8; 256]).unwrap();
    let out = run(
        &["decode", "--format", "none", "--protocol", "ptm"],
        &capture,
    );
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("decoded no instruction"));
}
