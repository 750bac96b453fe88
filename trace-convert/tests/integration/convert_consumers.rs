//! Official consumers read our outputs: inferno's flame-graph tool reads
//! the folded stacks, and the Perfetto trace parses with Perfetto's own
//! protobuf schema (`tests/perfetto_check.py`), with as many slices that
//! last as the Chrome trace has `B` events.
//!
//! Needs `inferno-flamegraph` (`cargo install inferno`) and `python3` with
//! the `perfetto` and `protobuf` packages (`pip install perfetto
//! protobuf`); each check is skipped with a message when its tool is
//! missing, and fails when the `CI` environment variable is set.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
}

fn missing(what: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is required when CI is set"
    );
    eprintln!("skipping: {what} not available");
}

fn convert_rstk(dir: &Path) -> Option<PathBuf> {
    let data = test_support::opencsd_dir()?;
    let out = bin()
        .arg(data.join("tc2-ptm-rstk-t32"))
        .arg("--out-dir")
        .arg(dir)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(dir.to_path_buf())
}

#[test]
fn inferno_draws_the_folded_stacks() {
    let has = Command::new("inferno-flamegraph")
        .arg("--help")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        missing("inferno-flamegraph (cargo install inferno)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("tc-inferno-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let Some(dir) = convert_rstk(&dir) else {
        return;
    };
    let out = Command::new("inferno-flamegraph")
        .arg(dir.join("stacks.folded"))
        .output()
        .expect("run inferno");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = String::from_utf8_lossy(&out.stdout);
    assert!(svg.contains("<svg"));
    // inferno's title text for the whole graph counts every sample.
    assert!(svg.contains("192,073 samples"), "total samples in the SVG");
    assert!(svg.contains("0x800008e4"), "a frame name");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn perfetto_schema_reads_the_trace() {
    let has = Command::new("python3")
        .args(["-c", "import perfetto, google.protobuf"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        missing("python3 with perfetto and protobuf (pip install perfetto protobuf)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("tc-pftrace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let Some(dir) = convert_rstk(&dir) else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_check.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(dir.join("trace.pftrace"))
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    let tracks = summary["tracks"].as_object().expect("tracks");
    // The Chrome trace leaves out the slices that end when they begin
    // (nothing to draw); the Perfetto trace keeps them.
    let (slices, lasting) = tracks
        .values()
        .flat_map(|t| t["slices"].as_array().into_iter().flatten())
        .fold((0, 0), |(n, l), s| {
            (n + 1, l + usize::from(s[2].as_u64() > s[1].as_u64()))
        });
    let chrome = std::fs::read_to_string(dir.join("trace.json")).expect("chrome");
    let begins = chrome.matches(r#""ph":"B""#).count();
    assert!(begins > 11_000);
    assert_eq!(lasting, begins);
    assert!(slices >= begins);
    // Each call-depth counter value is the number of slices open on its
    // thread's track once that instant's changes are done, and no value
    // repeats the one before it.
    let mut checked = 0;
    for (name, t) in tracks {
        if t["kind"] != "counter" || !name.ends_with("call depth") {
            continue;
        }
        let parent = t["parent"].as_str().expect("parent track");
        let open_at = |ts: u64| {
            tracks[parent]["slices"]
                .as_array()
                .expect("slices")
                .iter()
                .filter(|s| s[1].as_u64() <= Some(ts) && s[2].as_u64() > Some(ts))
                .count()
        };
        let values: Vec<(u64, i64)> = t["counters"]
            .as_array()
            .expect("counters")
            .iter()
            .map(|c| (c[0].as_u64().expect("ts"), c[1].as_i64().expect("value")))
            .collect();
        for (i, &(ts, v)) in values.iter().enumerate() {
            if let Some(&(next_ts, next_v)) = values.get(i + 1) {
                assert_ne!(v, next_v, "{name}: depth {v} written twice in a row");
                if next_ts == ts {
                    continue;
                }
            }
            assert_eq!(usize::try_from(v).ok(), Some(open_at(ts)), "{name} at {ts}");
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked} depth values checked");
    std::fs::remove_dir_all(&dir).ok();
}
