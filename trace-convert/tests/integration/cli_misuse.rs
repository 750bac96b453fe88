//! Command-line misuse: each mistake gives one clear line on stderr and
//! its own exit code (docs/cli.md, "Exit codes"), and never leaves a partial
//! output file under the final name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const USAGE: i32 = 2;
const INPUT: i32 = 3;
const CONFIG: i32 = 4;
const OUTPUT: i32 = 5;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(args)
        .output()
        .expect("run trace-convert")
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// The run failed with `code`, and its one error line mentions `needle`.
fn fails(out: &Output, code: i32, needle: &str) {
    let lines = stderr_lines(out);
    assert_eq!(out.status.code(), Some(code), "{lines:?}");
    let errors: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("trace-convert: ") || l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {lines:?}");
    assert!(
        errors[0].contains(needle),
        "`{}` should mention `{needle}`",
        errors[0]
    );
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cli-misuse-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn rstk() -> Option<String> {
    test_support::opencsd_dir().map(|d| d.join("tc2-ptm-rstk-t32").display().to_string())
}

#[test]
fn unknown_flag_and_bad_values_are_usage_errors() {
    fails(&run(&["decode", "--bogus", "x"]), USAGE, "--bogus");
    fails(
        &run(&["packets", "--trace-id", "banana", "x"]),
        USAGE,
        "banana",
    );
    fails(
        &run(&["decode", "--mem", "code.bin", "x"]),
        USAGE,
        "FILE@ADDRESS",
    );
    // Neither a subcommand nor an input: a missing input (exit 3), as
    // with a subcommand, that says it is not a subcommand either.
    fails(&run(&["no-such-command"]), INPUT, "nor a subcommand");
}

#[test]
fn missing_input_is_an_input_error() {
    fails(
        &run(&["decode", "/nonexistent/capture"]),
        INPUT,
        "/nonexistent/capture",
    );
    fails(
        &run(&["packets", "/nonexistent/capture"]),
        INPUT,
        "/nonexistent/capture",
    );
}

#[test]
fn missing_input_is_an_input_error_with_or_without_subcommand() {
    for args in [
        &["/nonexistent/capture"][..],
        &["convert", "/nonexistent/capture"],
        &["/nonexistent/capture", "--folded", "-"],
        &["report", "/nonexistent/capture"],
    ] {
        fails(&run(args), INPUT, "/nonexistent/capture");
    }
}

#[test]
fn a_folder_that_is_not_a_snapshot_says_so() {
    let dir = scratch("notsnap");
    std::fs::write(dir.join("capture.bin"), [0u8; 16]).expect("write");
    let d = dir.display().to_string();
    for args in [
        &["decode", d.as_str()][..],
        &["packets", d.as_str()],
        &[d.as_str(), "--folded", "-"],
    ] {
        fails(
            &run(args),
            INPUT,
            "not a trace snapshot folder (it holds no snapshot.ini)",
        );
    }
}

#[test]
fn two_outputs_on_standard_output_however_spelled_are_refused() {
    let example = test_support::repo_root().join("examples/snapshot");
    let example = example.display().to_string();
    for (a, b) in [
        ("-", "/dev/stdout"),
        ("/dev/stdout", "/proc/self/fd/1"),
        ("/dev/fd/1", "-"),
    ] {
        if !std::path::Path::new("/proc/self/fd/1").exists() {
            return;
        }
        let out = run(&[example.as_str(), "--folded", a, "--chrome", b]);
        fails(&out, USAGE, "both go to standard output");
        assert!(out.stdout.is_empty(), "nothing written");
    }
}

#[test]
fn since_alone_past_the_end_is_an_empty_window_not_an_error() {
    let example = test_support::repo_root().join("examples/snapshot");
    let dir = scratch("since");
    let folded = dir.join("x.folded");
    let out = run(&[
        &example.display().to_string(),
        "--since",
        "99999999999s",
        "--folded",
        &folded.display().to_string(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("is not after --since"), "{err}");
    assert!(err.contains("window: 0 events"), "{err}");
    assert_eq!(std::fs::read(&folded).expect("written"), b"");
}

#[test]
fn missing_or_unreadable_elf_is_an_input_error() {
    let Some(input) = rstk() else {
        return;
    };
    fails(
        &run(&["decode", &input, "--elf", "/nonexistent/app.elf"]),
        INPUT,
        "/nonexistent/app.elf",
    );
    let dir = scratch("elf");
    let not_elf = dir.join("notes.txt");
    std::fs::write(&not_elf, "not an ELF file\n").expect("write");
    let arg = not_elf.display().to_string();
    fails(&run(&["decode", &input, "--elf", &arg]), INPUT, &arg);
}

#[test]
fn trace_id_not_in_the_snapshot_is_a_configuration_error() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let tc2 = dir.join("TC2").display().to_string();
    fails(
        &run(&["decode", &tc2, "--trace-id", "0x55"]),
        CONFIG,
        "0x55",
    );
    fails(
        &run(&["packets", &tc2, "--trace-id", "0x55"]),
        CONFIG,
        "0x55",
    );
}

#[test]
fn capture_file_without_protocol_is_a_configuration_error() {
    let dir = scratch("proto");
    let f = dir.join("trace.bin");
    std::fs::write(&f, [0u8; 64]).expect("write");
    fails(
        &run(&["decode", &f.display().to_string()]),
        CONFIG,
        "--protocol",
    );
}

fn no_file_named(dir: &Path, name: &str) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !left.iter().any(|n| n == name),
        "{name} must not exist: {left:?}"
    );
}

#[test]
fn unwritable_output_is_an_output_error_and_leaves_no_file() {
    let Some(input) = rstk() else {
        return;
    };
    // A folder that does not exist.
    fails(
        &run(&["decode", &input, "-o", "/nonexistent/dir/out.txt"]),
        OUTPUT,
        "/nonexistent/dir/out.txt",
    );
    // A path whose parent is a file.
    let dir = scratch("out");
    let file = dir.join("plain");
    std::fs::write(&file, "x").expect("write");
    let under_file = file.join("out.txt").display().to_string();
    fails(
        &run(&["packets", &input, "-o", &under_file]),
        OUTPUT,
        &under_file,
    );
    // A directory as the output file.
    let d = dir.display().to_string();
    fails(&run(&["decode", &input, "-o", &d]), OUTPUT, &d);
    no_file_named(&dir, "out.txt");
}

#[test]
fn failed_decode_leaves_no_partial_output() {
    let Some(input) = rstk() else {
        return;
    };
    let dir = scratch("partial");
    let out = dir.join("events.jsonl");
    // The ELF error comes after the output was opened: still nothing under
    // the final name, and no temporary file left behind.
    let res = run(&[
        "decode",
        &input,
        "--format",
        "jsonl",
        "-o",
        &out.display().to_string(),
        "--elf",
        "/nonexistent/app.elf",
    ]);
    assert_eq!(res.status.code(), Some(INPUT));
    let left: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_mistyped_subcommand_is_named() {
    let dir = test_support::opencsd_dir()
        .map_or_else(|| "TC2".to_owned(), |d| d.join("TC2").display().to_string());
    for (args, want) in [
        (vec!["packet", dir.as_str()], "did you mean `packets`?"),
        (vec!["packet"], "did you mean `packets`?"),
        (
            vec!["decod", dir.as_str(), "--trace-id", "0x13"],
            "did you mean `decode`?",
        ),
    ] {
        fails(&run(&args), USAGE, want);
    }
}

#[test]
fn absurd_depths_and_frequencies_are_usage_errors() {
    for (flag, value) in [
        ("--max-depth", "0"),
        ("--max-depth", "2000000"),
        ("--cpu-hz", "1e30"),
        ("--cpu-hz", "10"),
        ("--timestamp-hz", "1e12"),
    ] {
        fails(&run(&["x", flag, value]), USAGE, flag);
    }
}

#[test]
fn a_capture_read_as_the_wrong_protocol_fails_naming_the_right_one() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    // Raw PTM read as ETMv3: no instruction, only addresses outside the
    // (missing) image, which is what wrong flags give.
    let ptm = dir
        .join("tc2-ptm-rstk-t32/PTM_0_2.bin")
        .display()
        .to_string();
    for sub in ["decode", "convert"] {
        let mut args = vec![sub, ptm.as_str(), "--protocol", "etm"];
        if sub == "decode" {
            args.extend(["--format", "none"]);
        } else {
            args.extend(["--folded", "-"]);
        }
        let out = run(&args);
        // The summary, then the error.
        let lines = stderr_lines(&out);
        assert_eq!(out.status.code(), Some(CONFIG), "{lines:?}");
        let last = lines.last().map_or("", String::as_str);
        assert!(
            last.contains("decoded no instruction")
                && last.contains("fit `--protocol ptm --layout raw`"),
            "{lines:?}"
        );
        assert!(out.stdout.is_empty());
    }
    // Read as PTM, the same run stands (addresses outside a missing image
    // are not a failure).
    let out = run(&["decode", &ptm, "--protocol", "ptm", "--format", "none"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
}

/// A TPIU stream read without `--layout tpiu` decodes a few instructions
/// by chance (with the ELF file, the bubble-sort SWO capture gives 14 of
/// its 12,205): the run stands, with a warning naming the layout its
/// bytes fit; read as the stream it is, no warning.
#[test]
fn a_capture_decoded_with_flags_it_does_not_fit_warns_naming_the_right_ones() {
    let Some(real) = test_support::real_dir() else {
        return;
    };
    let dir = real.join("stm32f407-swo/bubble-sort");
    let swo = dir.join("swo.bin").display().to_string();
    let elf = dir.join("target.elf").display().to_string();
    let regs = [
        "--protocol",
        "etm",
        "--etmcr",
        "0x980",
        "--etmidr",
        "0x4114F250",
        "--etmccer",
        "0x18541800",
        "--elf",
        elf.as_str(),
    ];
    let warning = "warning: the capture's first bytes fit `--protocol etm --layout tpiu`";
    for layout in ["raw", "tpiu"] {
        for sub in ["decode", "convert"] {
            let mut args = vec![sub, swo.as_str(), "--layout", layout];
            args.extend(regs);
            if sub == "decode" {
                args.extend(["--format", "none"]);
            } else {
                args.extend(["--folded", "-"]);
            }
            let out = run(&args);
            let lines = stderr_lines(&out);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {lines:?}");
            let warned = lines.iter().filter(|l| l.contains(warning)).count();
            assert_eq!(warned, usize::from(layout == "raw"), "{args:?}: {lines:?}");
        }
    }
}
