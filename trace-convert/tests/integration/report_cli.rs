//! `trace-convert report` on the command line: where the report goes,
//! and what is refused.

use std::process::{Command, Output};

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .current_dir(test_support::repo_root())
        .args(args)
        .arg("--no-progress")
        .output()
        .expect("run trace-convert")
}

#[test]
fn output_file_holds_the_report_and_standard_output_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("r.csv");
    let out = run(&[
        "report".as_ref(),
        "--format".as_ref(),
        "csv".as_ref(),
        "-o".as_ref(),
        file.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let text = std::fs::read_to_string(&file).expect("report written");
    assert!(text.starts_with("function,calls,"), "{text}");
    assert!(text.lines().count() > 5);
}

#[test]
fn report_flag_and_misspelling_are_refused() {
    let out = run(&["report".as_ref(), "--report".as_ref(), "x.txt".as_ref()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o FILE"));
    let out = run(&["reprt".as_ref()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `report`?"));
    let out = run(&["report".as_ref(), "--sort".as_ref(), "size".as_ref()]);
    assert_eq!(out.status.code(), Some(2));
    // Standard output holds the report: another output may not go there.
    let out = run(&["report".as_ref(), "--folded".as_ref(), "-".as_ref()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o FILE"));
}

#[test]
fn a_missing_input_writes_no_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("r.txt");
    let missing = dir.path().join("no-such-capture");
    let out = run(&[
        "report".as_ref(),
        missing.as_os_str(),
        "-o".as_ref(),
        file.as_os_str(),
    ]);
    assert!(!out.status.success());
    assert!(!file.exists(), "nothing written");
}
