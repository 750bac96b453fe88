//! Repeated instants become one with a count on the timelines: TC2
//! decoded without its kernel image reports "memory not accessible" each
//! time the trace reaches an address again, and with no code there is no
//! call stack, so each core's whole trace is one run: one instant per
//! core and address, counting what the decode listing reports there.
//! Needs ../shared/testdata (skipped when absent, failing under CI).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
}

/// A copy of TC2 whose cores have no memory dump.
fn tc2_without_image(data: &Path, dir: &Path) -> PathBuf {
    let snap = dir.join("TC2-no-image");
    std::fs::create_dir_all(&snap).expect("dir");
    for entry in std::fs::read_dir(data.join("TC2")).expect("TC2") {
        let path = entry.expect("entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name == "cstrace.bin" {
            std::fs::copy(&path, snap.join(name)).expect("copy");
        } else if name.ends_with(".ini") {
            let text = std::fs::read_to_string(&path).expect("ini");
            // Everything from the `[dump]` section on is left out.
            let kept = text.split("[dump]").next().unwrap_or_default();
            std::fs::write(snap.join(name), kept).expect("write");
        }
    }
    snap
}

#[test]
fn memory_not_accessible_is_one_instant_per_core_and_address() {
    let Some(data) = test_support::opencsd_dir() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("tc-coalesce-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let snap = tc2_without_image(&data, &dir);
    // What the decoder reports, per (trace ID, address).
    let listing = bin()
        .args(["decode", "--format", "jsonl"])
        .arg(&snap)
        .output()
        .expect("decode");
    assert!(listing.status.success());
    let mut expected: BTreeMap<(u64, String), u64> = BTreeMap::new();
    for line in String::from_utf8_lossy(&listing.stdout).lines() {
        let e: Value = serde_json::from_str(line).expect("json");
        if e["kind"] == "addr_nacc" {
            let addr = e["address"].as_u64().expect("address");
            *expected
                .entry((e["id"].as_u64().expect("id"), format!("{addr:#010x}")))
                .or_default() += 1;
        }
    }
    let reported: u64 = expected.values().sum();
    assert!(
        reported > expected.len() as u64,
        "some address is reported more than once"
    );
    let json = dir.join("t.json");
    // On cycle counts every event has a place on the timeline.
    let out = bin()
        .arg(&snap)
        .args(["--clock", "cycles"])
        .arg("--chrome")
        .arg(&json)
        .arg("--perfetto")
        .arg(dir.join("t.pftrace"))
        .output()
        .expect("convert");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("read")).expect("parses");
    let mut got: BTreeMap<(u64, String), u64> = BTreeMap::new();
    let mut last = BTreeMap::new();
    for e in v["traceEvents"].as_array().expect("events") {
        let Some(ts) = e["ts"].as_f64() else { continue };
        let tid = e["tid"].as_u64().expect("tid");
        // The timestamps of each thread never go back.
        let before = last.insert(tid, ts).unwrap_or(0.0);
        assert!(ts >= before, "{e}");
        let Some(addr) = e["name"]
            .as_str()
            .and_then(|n| n.strip_prefix("memory not accessible: "))
        else {
            continue;
        };
        let count = e["args"]["count"].as_u64().unwrap_or(1);
        if count > 1 {
            assert!(e["args"]["last_ts"].as_f64().expect("last_ts") >= ts, "{e}");
        }
        let old = got.insert((tid, addr.to_owned()), count);
        assert!(old.is_none(), "{tid:#x} {addr} twice");
    }
    assert_eq!(got, expected);

    // Perfetto: as many instants, their counts in a debug annotation.
    let has = Command::new("python3")
        .args(["-c", "import perfetto, google.protobuf"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        assert!(std::env::var_os("CI").is_none(), "python3 perfetto needed");
        eprintln!("skipping the Perfetto half: python3 with perfetto not available");
        return;
    }
    let script = r#"
import sys
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
t = Trace.FromString(open(sys.argv[1], "rb").read())
names = {}
n = total = 0
for p in t.packet:
    for e in p.interned_data.event_names:
        names[e.iid] = e.name
    ev = p.track_event
    if p.HasField("track_event") and ev.type == ev.TYPE_INSTANT:
        if names.get(ev.name_iid, "").startswith("memory not accessible"):
            n += 1
            c = [a.uint_value for a in ev.debug_annotations if a.name == "count"]
            total += c[0] if c else 1
print(n, total)
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(dir.join("t.pftrace"))
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{} {reported}", expected.len())
    );
    std::fs::remove_dir_all(&dir).ok();
}
