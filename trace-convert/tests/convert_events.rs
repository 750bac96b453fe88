//! `--save-events` then `--from-events` gives the same outputs, byte for
//! byte, as converting the capture directly.

use std::path::Path;
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_trace-convert")
}

#[test]
fn saved_events_convert_to_identical_outputs() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("tc-events-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let t = |n: &str| tmp.join(n);
    let outputs = |prefix: &str| {
        vec![
            "--chrome".to_owned(),
            t(&format!("{prefix}.json")).display().to_string(),
            "--folded".to_owned(),
            t(&format!("{prefix}.folded")).display().to_string(),
            "--perfetto".to_owned(),
            t(&format!("{prefix}.pftrace")).display().to_string(),
        ]
    };
    for capture in ["tc2-ptm-rstk-t32", "TC2"] {
        let direct = Command::new(bin())
            .arg(dir.join(capture))
            .args(outputs("direct"))
            .arg("--save-events")
            .arg(t("saved.events"))
            .output()
            .expect("run");
        assert!(
            direct.status.success(),
            "{}",
            String::from_utf8_lossy(&direct.stderr)
        );
        let later = Command::new(bin())
            .arg("--from-events")
            .arg(t("saved.events"))
            .args(outputs("later"))
            .output()
            .expect("run");
        assert!(
            later.status.success(),
            "{}",
            String::from_utf8_lossy(&later.stderr)
        );
        for ext in ["json", "folded", "pftrace"] {
            let a = std::fs::read(t(&format!("direct.{ext}"))).expect("direct output");
            let b = std::fs::read(t(&format!("later.{ext}"))).expect("later output");
            assert!(!a.is_empty());
            assert!(a == b, "{capture}: {ext} differs");
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn a_damaged_events_file_is_an_input_error() {
    let tmp = std::env::temp_dir().join(format!("tc-events-bad-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let bad = tmp.join("bad.events");
    std::fs::write(&bad, b"not an events file at all").expect("write");
    let out = Command::new(bin())
        .arg("--from-events")
        .arg(&bad)
        .arg("--folded")
        .arg(tmp.join("x.folded"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.events"), "{err}");
    assert!(
        !Path::new(&tmp.join("x.folded")).exists(),
        "no partial output"
    );
    std::fs::remove_dir_all(&tmp).ok();
}
