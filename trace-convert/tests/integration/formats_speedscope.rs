//! speedscope, a viewer users reach for, reads the Chrome trace: its own
//! page (the `speedscope` npm package's web build) loaded in headless
//! Chromium imports the file as a user does, warns about nothing (it warns
//! about every begin or end it cannot pair) and, exported again, holds
//! exactly the slices of the file: on each thread the same functions,
//! nested the same way, beginning and ending at the same times.
//!
//! Needs `node`, Chromium (`/usr/bin/chromium`, or `CHROMIUM`) and
//! `npm ci` in `tests/speedscope` (speedscope and playwright-core at the
//! pinned versions); skipped with a message when one is missing, failing
//! when the `CI` environment variable is set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tool_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/speedscope")
}

/// Whether node, Chromium and the npm packages are here (after saying
/// which is not).
fn available() -> bool {
    let dir = tool_dir();
    let chromium =
        std::env::var_os("CHROMIUM").map_or_else(|| "/usr/bin/chromium".into(), PathBuf::from);
    let node = test_support::runs("node", &["--version"]);
    let missing = if !node {
        "node"
    } else if !chromium.is_file() {
        "chromium (apt-get install chromium)"
    } else if !dir
        .join("node_modules/speedscope/dist/release/index.html")
        .is_file()
        || !dir.join("node_modules/playwright-core").is_dir()
    {
        "speedscope and playwright-core (npm ci in trace-convert/tests/speedscope)"
    } else {
        return true;
    };
    test_support::missing(missing)
}

/// One slice: its depth on the thread, name (speedscope's: the name and
/// the `args` as JSON), begin and end in nanoseconds from the thread's
/// first begin.
type Slice = (usize, String, i64, i64);

/// A thread of a Chrome trace: its `pid` and `tid`.
type Thread = (Option<u64>, Option<u64>);

fn nanos(us: f64) -> i64 {
    // Microseconds with three decimals: whole nanoseconds.
    #[allow(clippy::cast_possible_truncation)]
    let n = (us * 1000.0).round() as i64;
    n
}

/// The slices of each thread of a Chrome trace, by the name speedscope
/// gives the thread (`process (pid P), thread (tid T)`), read by pairing
/// each `E` with the latest open `B` of its thread.
fn chrome_slices(json: &str) -> BTreeMap<String, Vec<Slice>> {
    let v: serde_json::Value = serde_json::from_str(json).expect("Chrome JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let (mut pnames, mut tnames) = (BTreeMap::new(), BTreeMap::new());
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let (pid, tid) = (e["pid"].as_u64(), e["tid"].as_u64());
        let name = e["args"]["name"].as_str().expect("name").to_owned();
        match e["name"].as_str() {
            Some("process_name") => pnames.insert(pid, name),
            Some("thread_name") => tnames.insert((pid, tid), name),
            _ => None,
        };
    }
    let mut open: BTreeMap<Thread, Vec<(String, f64)>> = BTreeMap::new();
    let mut done: BTreeMap<Thread, Vec<(usize, String, f64, f64)>> = BTreeMap::new();
    for e in events {
        let key = (e["pid"].as_u64(), e["tid"].as_u64());
        let ts = e["ts"].as_f64();
        match e["ph"].as_str() {
            Some("B") => {
                let name = format!(
                    "{} {}",
                    e["name"].as_str().expect("a B has a name"),
                    serde_json::to_string(&e["args"]).expect("args")
                );
                open.entry(key).or_default().push((name, ts.expect("ts")));
            }
            Some("E") => {
                let stack = open.entry(key).or_default();
                let (name, begin) = stack.pop().expect("an E ends an open B");
                assert_eq!(
                    e["name"]
                        .as_str()
                        .map(|n| name.starts_with(&format!("{n} {{"))),
                    Some(true),
                    "the E at {ts:?} names the slice it ends, {name}"
                );
                let depth = stack.len();
                done.entry(key)
                    .or_default()
                    .push((depth, name, begin, ts.expect("ts")));
            }
            _ => {}
        }
    }
    assert!(open.values().all(Vec::is_empty), "every B has its E");
    done.into_iter()
        .map(|((pid, tid), slices)| {
            let first = slices.iter().map(|s| s.2).fold(f64::INFINITY, f64::min);
            let name = format!(
                "{} (pid {}), {} (tid {})",
                pnames[&pid],
                pid.expect("pid"),
                tnames[&(pid, tid)],
                tid.expect("tid")
            );
            let mut v: Vec<Slice> = slices
                .into_iter()
                .map(|(d, n, b, e)| (d, n, nanos(b - first), nanos(e - first)))
                .collect();
            v.sort();
            (name, v)
        })
        .collect()
}

/// The slices of each profile speedscope exported (its own JSON file
/// format: evented profiles of open and close events on shared frames).
fn speedscope_slices(json: &str) -> BTreeMap<String, Vec<Slice>> {
    let v: serde_json::Value = serde_json::from_str(json).expect("speedscope JSON");
    let frames: Vec<String> = v["shared"]["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| f["name"].as_str().expect("frame name").to_owned())
        .collect();
    let mut out = BTreeMap::new();
    for p in v["profiles"].as_array().expect("profiles") {
        assert_eq!(p["type"], "evented");
        assert_eq!(p["unit"], "microseconds");
        let mut open: Vec<(usize, f64)> = Vec::new();
        let mut slices: Vec<Slice> = Vec::new();
        for e in p["events"].as_array().expect("events") {
            let frame = usize::try_from(e["frame"].as_u64().expect("frame")).expect("index");
            let at = e["at"].as_f64().expect("at");
            match e["type"].as_str() {
                Some("O") => open.push((frame, at)),
                Some("C") => {
                    let (f, begin) = open.pop().expect("a close ends an open frame");
                    assert_eq!(f, frame, "closes nest");
                    slices.push((open.len(), frames[f].clone(), nanos(begin), nanos(at)));
                }
                other => panic!("event type {other:?}"),
            }
        }
        assert!(open.is_empty());
        slices.sort();
        let name = p["name"].as_str().expect("profile name").to_owned();
        out.insert(name, slices);
    }
    out
}

/// Convert `input` (with `elf`) to Chrome JSON, load it in speedscope and
/// compare what speedscope read with the file; the number of slices.
fn check(input: &Path, elf: &Path) -> usize {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("trace.json");
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .arg(input)
        .arg("--elf")
        .arg(elf)
        .arg("--chrome")
        .arg(&json)
        .output()
        .expect("run trace-convert");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exported = dir.path().join("export.speedscope.json");
    let run = Command::new("node")
        .arg(tool_dir().join("check.js"))
        .arg(&json)
        .arg(&exported)
        .output()
        .expect("run node");
    let report = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "speedscope did not import {}: {report} {}",
        input.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(report.trim()).expect("report line");
    let warnings = report["warnings"].as_array().expect("warnings");
    assert!(
        warnings.is_empty(),
        "speedscope warned {} times on {}, first: {:?}",
        warnings.len(),
        input.display(),
        warnings.first()
    );
    let ours = chrome_slices(&std::fs::read_to_string(&json).expect("chrome"));
    let theirs = speedscope_slices(&std::fs::read_to_string(&exported).expect("export"));
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "threads"
    );
    for (thread, slices) in &ours {
        let read = &theirs[thread];
        assert_eq!(slices.len(), read.len(), "{thread}: slices");
        if let Some((a, b)) = slices.iter().zip(read).find(|(a, b)| a != b) {
            panic!("{thread}: the file has {a:?} where speedscope read {b:?}");
        }
    }
    ours.values().map(Vec::len).sum()
}

#[test]
fn speedscope_reads_the_example_as_written() {
    if !available() {
        return;
    }
    let example = test_support::repo_root().join("examples/snapshot");
    let slices = check(&example, &example.join("example.elf"));
    // The example's calls, returns, interrupts and inlined calls.
    assert!(slices > 250, "{slices} slices");
}

#[test]
fn speedscope_reads_a_freertos_capture_as_written() {
    if !available() {
        return;
    }
    let Some(real) = test_support::real_dir() else {
        return;
    };
    let dir = real.join("am243x-r5f/002b37c-freertos");
    let slices = check(&dir, &dir.join("freertos.out"));
    assert!(slices > 20_000, "{slices} slices");
}
