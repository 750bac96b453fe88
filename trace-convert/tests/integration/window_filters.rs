//! Windows on a conversion (`--since`, `--until`, `--trace-id`,
//! `--function`): what each output keeps, checked against what a simple
//! reader of the unfiltered run finds (the `decode --format jsonl`
//! listing and the unfiltered folded stacks).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tc-window-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("tmp");
    d
}

fn example() -> PathBuf {
    test_support::repo_root().join("examples/snapshot")
}

fn run(input: &Path, args: &[&str]) -> String {
    let out = bin().arg(input).args(args).output().expect("run");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Folded lines: stack → weight.
fn folded(path: &Path) -> BTreeMap<String, u64> {
    std::fs::read_to_string(path)
        .expect("folded")
        .lines()
        .map(|l| {
            let (stack, w) = l.rsplit_once(' ').expect("weight");
            (stack.to_owned(), w.parse().expect("number"))
        })
        .collect()
}

/// The decode listing of `input`, one JSON value per line.
fn listing(input: &Path) -> Vec<Value> {
    let out = bin()
        .args(["decode", "--format", "jsonl"])
        .arg(input)
        .output()
        .expect("decode");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

/// On the instruction clock each trace ID's time is the instructions
/// before: per ID, the ranges' (start time, count) and the exceptions'
/// times, as a reader of the listing sees them.
struct Timed {
    ranges: Vec<(u64, u64, u64)>,
    exceptions: Vec<(u64, u64)>,
}

fn timed(events: &[Value]) -> Timed {
    let mut now: BTreeMap<u64, u64> = BTreeMap::new();
    let mut t = Timed {
        ranges: Vec::new(),
        exceptions: Vec::new(),
    };
    for e in events {
        let id = e["id"].as_u64().expect("id");
        let at = now.entry(id).or_insert(0);
        match e["kind"].as_str() {
            Some("range") => {
                let n = e["count"].as_u64().expect("count");
                t.ranges.push((id, *at, n));
                *at += n;
            }
            Some("exception") => t.exceptions.push((id, *at)),
            _ => {}
        }
    }
    t
}

/// The Chrome trace's events.
fn chrome(path: &Path) -> Vec<Value> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("json")).expect("parses");
    v["traceEvents"].as_array().expect("events").clone()
}

#[test]
fn a_time_window_keeps_the_instructions_and_exceptions_that_start_in_it() {
    let dir = tmp("time");
    let (since, until) = (9_000u64, 21_000u64);
    let elf = example().join("example.elf");
    let err = run(
        &example(),
        &[
            "--clock",
            "instructions",
            "--no-inline",
            "--elf",
            elf.to_str().expect("utf-8"),
            "--since",
            "9000instr",
            "--until",
            "21us",
            "--folded",
            dir.join("w.folded").to_str().expect("utf-8"),
            "--chrome",
            dir.join("w.json").to_str().expect("utf-8"),
        ],
    );
    let truth = timed(&listing(&example()));
    let in_window = |t: u64| (since..until).contains(&t);
    let instructions: u64 = truth
        .ranges
        .iter()
        .filter(|(_, t, _)| in_window(*t))
        .map(|(_, _, n)| n)
        .sum();
    let exceptions = truth
        .exceptions
        .iter()
        .filter(|(_, t)| in_window(*t))
        .count();
    assert!(instructions > 0 && instructions < truth.ranges.iter().map(|r| r.2).sum());
    assert!(exceptions > 0 && exceptions < truth.exceptions.len());
    // Folded stacks weigh exactly the instructions of the window.
    assert_eq!(
        folded(&dir.join("w.folded")).values().sum::<u64>(),
        instructions
    );
    assert!(
        err.contains(&format!("({instructions} instructions in ranges)")),
        "{err}"
    );
    // The timeline marks its exceptions, and every slice lies in it and
    // is closed.
    let events = chrome(&dir.join("w.json"));
    let marked = events
        .iter()
        .filter(|e| {
            e["ph"] == "i"
                && e["name"].as_str().is_some_and(|n| {
                    // Exceptions, named by the core's profile (IRQ, SVC).
                    !n.starts_with("trace ") && !n.starts_with("memory not accessible")
                })
        })
        .count();
    assert_eq!(marked, exceptions);
    // A range starting in the window counts wholly: the last one may end
    // after it.
    let end = truth
        .ranges
        .iter()
        .filter(|(_, t, _)| in_window(*t))
        .map(|(_, t, n)| t + n)
        .max()
        .unwrap_or(until);
    let mut depth = 0i64;
    for e in &events {
        let Some(ts) = e["ts"].as_f64() else { continue };
        // Microseconds of the 1 ns instruction ticks.
        assert!(
            ts * 1000.0 >= since as f64 - 0.5 && ts * 1000.0 <= end as f64 + 0.5,
            "{e}"
        );
        match e["ph"].as_str() {
            Some("B") => depth += 1,
            Some("E") => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0, "an end without a begin: {e}");
    }
    assert_eq!(depth, 0, "every slice is closed");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_window_of_everything_changes_no_output() {
    let dir = tmp("all");
    let elf = example().join("example.elf");
    let outs = |d: &str| {
        let d = dir.join(d);
        std::fs::create_dir_all(&d).expect("dir");
        d
    };
    let (a, b) = (outs("a"), outs("b"));
    let args = |d: &Path| {
        vec![
            "--elf".to_owned(),
            elf.display().to_string(),
            "--chrome".to_owned(),
            d.join("t.json").display().to_string(),
            "--perfetto".to_owned(),
            d.join("t.pftrace").display().to_string(),
            "--folded".to_owned(),
            d.join("s.folded").display().to_string(),
            "--lcov".to_owned(),
            d.join("c.info").display().to_string(),
        ]
    };
    let a_args = args(&a);
    run(
        &example(),
        &a_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let mut b_args = args(&b);
    b_args.extend([
        "--since".to_owned(),
        "0".to_owned(),
        "--trace-id".to_owned(),
        "0x10".to_owned(),
    ]);
    run(
        &example(),
        &b_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    for f in ["t.json", "t.pftrace", "s.folded", "c.info"] {
        assert!(
            std::fs::read(a.join(f)).expect("a") == std::fs::read(b.join(f)).expect("b"),
            "{f} differs"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_function_window_keeps_the_stacks_through_that_function() {
    let dir = tmp("function");
    let elf = example().join("example.elf");
    let elf = elf.to_str().expect("utf-8");
    let all = dir.join("all.folded");
    let only = dir.join("crc.folded");
    let lcov = dir.join("crc.info");
    run(
        &example(),
        &["--elf", elf, "--folded", all.to_str().expect("utf-8")],
    );
    run(
        &example(),
        &[
            "--elf",
            elf,
            "--function",
            "crc_task",
            "--folded",
            only.to_str().expect("utf-8"),
            "--lcov",
            lcov.to_str().expect("utf-8"),
        ],
    );
    let expected: BTreeMap<String, u64> = folded(&all)
        .into_iter()
        .filter(|(stack, _)| stack.split(';').any(|f| f == "crc_task"))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(folded(&only), expected);
    // Coverage in the window: crc_task ran, the other tasks did not.
    let info = std::fs::read_to_string(&lcov).expect("lcov");
    let fnda: BTreeMap<&str, u64> = info
        .lines()
        .filter_map(|l| l.strip_prefix("FNDA:"))
        .filter_map(|l| {
            let (n, name) = l.split_once(',')?;
            Some((name, n.parse().ok()?))
        })
        .collect();
    assert!(fnda.get("crc_task").is_some_and(|n| *n > 0), "{fnda:?}");
    assert_eq!(fnda.get("sort_task"), Some(&0), "{fnda:?}");
    assert_eq!(fnda.get("main"), Some(&0), "{fnda:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn trace_ids_keep_their_cores_stacks() {
    let Some(data) = test_support::opencsd_dir() else {
        return;
    };
    let tc2 = data.join("TC2");
    let dir = tmp("ids");
    let all = dir.join("all.folded");
    let two = dir.join("two.folded");
    let json = dir.join("two.json");
    run(&tc2, &["--folded", all.to_str().expect("utf-8")]);
    run(
        &tc2,
        &[
            "--trace-id",
            "0x10",
            "--trace-id",
            "0x12",
            "--folded",
            two.to_str().expect("utf-8"),
            "--chrome",
            json.to_str().expect("utf-8"),
        ],
    );
    let expected: BTreeMap<String, u64> = folded(&all)
        .into_iter()
        .filter(|(stack, _)| stack.contains("(trace ID 0x10,") || stack.contains("(trace ID 0x12,"))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(folded(&two), expected);
    let tids: BTreeSet<u64> = chrome(&json)
        .iter()
        .filter_map(|e| e["tid"].as_u64())
        .filter(|t| *t != 0)
        .collect();
    assert_eq!(tids, BTreeSet::from([0x10, 0x12]));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_windows_are_refused_before_anything_is_written() {
    let dir = tmp("bad");
    let out = dir.join("x.folded");
    for (args, code, says) in [
        (vec!["--since", "10parsecs"], 2, "not a time"),
        (
            vec!["--since", "5us", "--until", "5us"],
            2,
            "window is empty",
        ),
        // The example is cycle-accurate: its clock counts cycles.
        (vec!["--since", "100instr"], 2, "--clock instructions"),
        (
            vec!["--trace-id", "0x10", "--trace-id", "0x33"],
            4,
            "no source has trace ID 0x33",
        ),
    ] {
        let o = bin()
            .arg(example())
            .args(&args)
            .arg("--folded")
            .arg(&out)
            .output()
            .expect("run");
        assert_eq!(o.status.code(), Some(code), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!out.exists());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn listings_take_several_trace_ids() {
    let Some(data) = test_support::opencsd_dir() else {
        return;
    };
    let tc2 = data.join("TC2");
    let lines = |args: &[&str]| -> Vec<String> {
        let out = bin()
            .arg("decode")
            .args(["--format", "jsonl"])
            .args(args)
            .arg(&tc2)
            .output()
            .expect("decode");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let all = lines(&[]);
    let two = lines(&["--trace-id", "0x10", "--trace-id", "0x13"]);
    let expected: Vec<&String> = all
        .iter()
        .filter(|l| l.contains(r#""id":16,"#) || l.contains(r#""id":19,"#))
        .collect();
    assert!(!expected.is_empty() && expected.len() < all.len());
    assert_eq!(two.iter().collect::<Vec<_>>(), expected);
    // A raw capture holds one source.
    let out = bin()
        .args([
            "decode",
            "--protocol",
            "ptm",
            "--trace-id",
            "1",
            "--trace-id",
            "2",
        ])
        .arg(data.join("tc2-ptm-rstk-t32/PTM_0_2.bin"))
        .output()
        .expect("decode");
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one --trace-id"));
}

/// A `--function` no frame ever had names itself in the warning; one that
/// ran does not draw it.
#[test]
fn a_function_that_never_ran_is_named() {
    let dir = tmp("nofn");
    let elf = example().join("example.elf");
    let elf = elf.to_string_lossy();
    let out = dir.join("f.folded");
    let out = out.to_string_lossy();
    let err = run(
        &example(),
        &["--elf", &elf, "--function", "crc_tsak", "--folded", &out],
    );
    assert!(
        err.contains("--function crc_tsak: no function of that name was ever on a call stack"),
        "{err}"
    );
    let err = run(
        &example(),
        &["--elf", &elf, "--function", "crc_task", "--folded", &out],
    );
    assert!(!err.contains("no function of that name"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
