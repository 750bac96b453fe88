//! The Chrome and Perfetto outputs name each core's track after the core
//! the snapshot binds its trace source to (`[core_trace_sources]` in
//! `trace.ini`, `name` and `type` of the core's device file). Needs
//! ../shared/testdata (skipped when absent, failing under CI).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `key=value` lines of an `.ini` file, by section.
fn ini(path: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).expect("ini");
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_owned();
        } else if let Some((k, v)) = line.split_once('=') {
            out.entry(section.clone())
                .or_default()
                .insert(k.trim().to_owned(), v.trim().to_owned());
        }
    }
    out
}

/// Per trace ID, the name and type of the core it traces, read from the
/// snapshot's files.
fn cores_by_id(snap: &Path) -> BTreeMap<u64, String> {
    let devices: Vec<_> = std::fs::read_dir(snap)
        .expect("snapshot")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ini"))
        .map(|p| ini(&p))
        .filter(|i| i.contains_key("device"))
        .collect();
    let device = |name: &str| {
        devices
            .iter()
            .find(|d| d["device"].get("name").map(String::as_str) == Some(name))
            .expect("device")
    };
    let mut out = BTreeMap::new();
    for (core, source) in &ini(&snap.join("trace.ini"))["core_trace_sources"] {
        let regs = &device(source)["regs"];
        let Some(id) = regs
            .iter()
            .find(|(k, _)| k.starts_with("ETMTRACEIDR"))
            .map(|(_, v)| u64::from_str_radix(v.trim_start_matches("0x"), 16).expect("hex"))
        else {
            continue;
        };
        let kind = &device(core)["device"]["type"];
        out.insert(id, format!("{core} {kind}"));
    }
    out
}

#[test]
fn tracks_are_named_after_the_cores() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let snap = dir.join("TC2");
    let want = cores_by_id(&snap);
    assert_eq!(want.get(&0x10).map(String::as_str), Some("cpu_0 Cortex-A7"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let chrome = tmp.path().join("t.json");
    let perfetto = tmp.path().join("t.pftrace");
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .arg("--no-progress")
        .arg(&snap)
        .arg("--chrome")
        .arg(&chrome)
        .arg("--perfetto")
        .arg(&perfetto)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&chrome).expect("chrome")).expect("JSON");
    let threads: BTreeMap<u64, String> = v["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().expect("tid"),
                e["args"]["name"].as_str().expect("name").to_owned(),
            )
        })
        .collect();
    assert!(!threads.is_empty());
    let proto = std::fs::read(&perfetto).expect("perfetto");
    for (id, name) in &threads {
        let core = want.get(id).expect("a core for every traced ID");
        assert!(name.starts_with(core.as_str()), "{id:#x}: {name}");
        assert!(name.contains(&format!("trace ID {id:#04x}")), "{name}");
        // Perfetto's track descriptors hold the same names.
        assert!(
            proto.windows(name.len()).any(|w| w == name.as_bytes()),
            "{name} not in the Perfetto trace"
        );
    }
}
