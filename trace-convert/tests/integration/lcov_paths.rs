//! Source paths of firmware built on Windows (TI's compiler for the
//! AM243x Cortex-R5F names `C:/ti/mcu_plus_sdk.../source\drivers/...`):
//! LCOV writes them with `/` separators and without `..` steps, and
//! `--path-map FROM=TO` moves them to where the sources are here, so that
//! `genhtml` (LCOV's own report tool) finds every file.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

#[test]
fn genhtml_finds_the_sources_of_windows_built_firmware_through_path_map() {
    let Some(real) = test_support::real_dir() else {
        return;
    };
    if !test_support::tool("genhtml", &["--version"], "genhtml (package lcov)") {
        return;
    }
    let snap = real.join("am243x-r5f/002b37c-freertos");
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("src");
    let info = dir.path().join("cov.info");
    // The drives the build used, each moved under `root` (given with
    // Windows separators, as a user would copy them).
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .arg(&snap)
        .arg("--elf")
        .arg(snap.join("freertos.out"))
        .arg("--lcov")
        .arg(&info)
        .args(["--path-map", &format!("C:\\={}/c", root.display())])
        .args(["--path-map", &format!("E:={}/e", root.display())])
        .args(["--path-map", &format!("e:={}/e", root.display())])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The hint names no example for this capture.
    let hint = stderr
        .lines()
        .find(|l| l.contains("LCOV coverage"))
        .expect("hint");
    assert!(!hint.contains("example"), "{hint}");
    // Every source under `root`, with `/` separators and no `..`.
    let text = std::fs::read_to_string(&info).expect("lcov");
    let mut files: BTreeMap<String, u32> = BTreeMap::new();
    let mut file = String::new();
    for l in text.lines() {
        if let Some(f) = l.strip_prefix("SF:") {
            file = f.to_owned();
            files.insert(file.clone(), 0);
        } else if let Some(x) = l.strip_prefix("DA:").or_else(|| l.strip_prefix("FN:")) {
            let line: u32 = x
                .split(',')
                .next()
                .and_then(|n| n.parse().ok())
                .expect("line");
            let max = files.get_mut(&file).expect("SF first");
            *max = (*max).max(line);
        }
    }
    assert!(files.len() > 50, "{} files", files.len());
    for f in files.keys() {
        assert!(f.starts_with(&root.display().to_string()), "{f}");
        assert!(
            !f.contains('\\') && !f.contains("/../") && !f.contains("/./"),
            "{f}"
        );
    }
    // The sources, as many lines as LCOV names, where the map says.
    for (f, lines) in &files {
        let p = Path::new(f);
        std::fs::create_dir_all(p.parent().expect("folder")).expect("mkdir");
        let body: String = (1..=*lines).map(|i| format!("/* {i} */\n")).collect();
        std::fs::write(p, body).expect("write source");
    }
    let html = Command::new("genhtml")
        .arg("--branch-coverage")
        .arg("-o")
        .arg(dir.path().join("html"))
        .arg(&info)
        .output()
        .expect("run genhtml");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&html.stdout),
        String::from_utf8_lossy(&html.stderr)
    );
    assert!(html.status.success(), "genhtml failed:\n{said}");
    assert!(
        !said.contains("ERROR") && !said.contains("WARNING"),
        "{said}"
    );
    assert!(dir.path().join("html/index.html").is_file());
}

#[test]
fn a_path_map_without_equals_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(["report", "--path-map", "C:/ti"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not FROM=TO"));
}
