//! Names from inputs with control characters (and `;`, line breaks) are
//! written escaped in every text output (docs/cli.md, "Names in text
//! outputs"): the bundled example's ELF file with four function names
//! rewritten in place (the same lengths) converts to outputs with no
//! control character, whose records are those of the untouched ELF file
//! with the names escaped.

use super::convert_common::folded_map;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Each function name and what it becomes (the same length), and how
/// the text outputs write that.
///
/// A backslash is escaped too: a name holding the text `\u{7}` does not
/// read as one holding a bell.
const RENAMED: [(&str, &str, &str); 5] = [
    ("crc_task", "crc\u{1b}[2Jk", "crc\\u{1b}[2Jk"),
    ("sort_task", "sort\ntask", "sort\\ntask"),
    ("format_task", "format;task", "format;task"),
    ("main", "ma\u{7}n", "ma\\u{7}n"),
    ("timer_handler", "t\\u{7}handler", "t\\\\u{7}handler"),
];

fn example() -> PathBuf {
    test_support::repo_root().join("examples/snapshot")
}

/// The example's ELF with the names of [`RENAMED`] replaced wherever the
/// file holds them as whole strings (symbol and DWARF string tables).
fn evil_elf(dir: &Path) -> PathBuf {
    let renames = RENAMED.map(|(from, to, _)| (from, to));
    renamed_elf(
        &example().join("example.elf"),
        &renames,
        &dir.join("evil.elf"),
    )
}

/// The ELF file `elf` written to `to` with each name of `renames`
/// replaced (by one of the same length) wherever it holds it as a whole
/// string.
fn renamed_elf(elf: &Path, renames: &[(&str, &str)], path: &Path) -> PathBuf {
    let mut bytes = std::fs::read(elf).expect("ELF");
    for &(from, to) in renames {
        assert_eq!(from.len(), to.len());
        let needle = [b"\0", from.as_bytes(), b"\0"].concat();
        let mut found = 0;
        let mut i = 0;
        while let Some(at) = bytes[i..].windows(needle.len()).position(|w| w == needle) {
            let at = i + at + 1;
            bytes[at..at + from.len()].copy_from_slice(to.as_bytes());
            i = at + from.len();
            found += 1;
        }
        assert!(found > 0, "{from}");
    }
    std::fs::write(path, bytes).expect("write");
    path.to_path_buf()
}

fn run(args: &[&std::ffi::OsStr]) -> (Vec<u8>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(args)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    (out.stdout, err)
}

/// No control character but line feeds ending lines (and tabs).
fn clean(what: &str, text: &[u8]) {
    let bad: Vec<char> = String::from_utf8_lossy(text)
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect();
    assert!(bad.is_empty(), "{what}: {bad:?}");
}

/// `text` with each escaped name of [`RENAMED`] put back as it was.
fn unescaped(text: &str, folded: bool) -> String {
    let mut t = text.to_owned();
    for (from, to, shown) in RENAMED {
        let shown = if folded {
            shown.replace(';', ":")
        } else {
            shown.to_owned()
        };
        let _ = to;
        t = t.replace(&shown, from);
    }
    t
}

/// Convert the example with `elf` into every text output in `dir`: the
/// folded stacks, the LCOV, the text and CSV reports, the instruction
/// listing and standard error.
fn outputs(dir: &Path, elf: &Path) -> BTreeMap<&'static str, Vec<u8>> {
    let f = |n: &str| dir.join(n);
    let (_, err) = run(&[
        example().as_os_str(),
        "--elf".as_ref(),
        elf.as_os_str(),
        "--folded".as_ref(),
        f("s.folded").as_os_str(),
        "--lcov".as_ref(),
        f("c.info").as_os_str(),
        "--report".as_ref(),
        f("r.txt").as_os_str(),
    ]);
    let (csv, _) = run(&[
        "report".as_ref(),
        example().as_os_str(),
        "--elf".as_ref(),
        elf.as_os_str(),
        "--format".as_ref(),
        "csv".as_ref(),
    ]);
    let (listing, _) = run(&[
        "decode".as_ref(),
        example().as_os_str(),
        "--elf".as_ref(),
        elf.as_os_str(),
        "--instructions".as_ref(),
    ]);
    let read = |n: &str| std::fs::read(f(n)).expect("output");
    BTreeMap::from([
        ("folded", read("s.folded")),
        ("lcov", read("c.info")),
        ("report", read("r.txt")),
        ("csv", csv),
        ("listing", listing),
        ("stderr", err.into_bytes()),
    ])
}

#[test]
fn names_with_control_characters_are_escaped_in_every_text_output() {
    let dir = std::env::temp_dir().join(format!("tc-escaping-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("plain")).expect("mkdir");
    std::fs::create_dir_all(dir.join("evil")).expect("mkdir");
    let evil = evil_elf(&dir);
    let plain = outputs(&dir.join("plain"), &example().join("example.elf"));
    let got = outputs(&dir.join("evil"), &evil);
    for (what, bytes) in &got {
        clean(what, bytes);
    }
    let text =
        |m: &BTreeMap<&str, Vec<u8>>, k: &str| String::from_utf8(m[k].clone()).expect("UTF-8");
    // The escaped names are there.
    let report = text(&got, "report");
    for (_, _, shown) in RENAMED {
        assert!(report.contains(shown), "{shown}: {report}");
    }
    assert!(text(&got, "folded").contains("format:task"));
    let lcov = text(&got, "lcov");
    assert!(
        lcov.contains("FN:") && lcov.contains("sort\\ntask"),
        "{lcov}"
    );
    // Every record is the plain run's, the names put back.
    let stacks = |s: &str| folded_map(s);
    assert_eq!(
        stacks(&unescaped(&text(&got, "folded"), true)),
        stacks(&text(&plain, "folded"))
    );
    // (Rows of equal counts are sorted by name: compare the lines.)
    let lines = |t: &str| {
        let mut v: Vec<String> = t.lines().map(str::to_owned).collect();
        v.sort();
        v
    };
    for k in ["lcov", "report", "csv", "listing"] {
        let back = unescaped(&text(&got, k), false);
        assert_eq!(lines(&back), lines(&text(&plain, k)), "{k}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// RTOS task names are function names: the task summary on standard
/// error and `report --by-task` (text and CSV) escape them, and so does
/// the warning about a `--task-switch` name no function has. On the
/// ThreadX capture (whose receiver thread is a task) with that thread's
/// entry function renamed.
#[test]
fn task_names_with_control_characters_are_escaped() {
    let Some(real) = test_support::real_dir() else {
        return;
    };
    let capture = real.join("am243x-r5f/b8b29a1-threadx");
    let tmp = tempfile::tempdir().expect("tmp");
    let from = "tm_receiver_thread_entry";
    let to = "tm_\u{1b}[2J\u{7}ver_thread_entry";
    let shown = "tm_\\u{1b}[2J\\u{7}ver_thread_entry";
    let elf = renamed_elf(
        &capture.join("threadx.out"),
        &[(from, to)],
        &tmp.path().join("evil.out"),
    );
    let report = tmp.path().join("tasks.txt");
    let (_, err) = run(&[
        capture.as_os_str(),
        "--elf".as_ref(),
        elf.as_os_str(),
        "--report".as_ref(),
        report.as_os_str(),
        "--task-switch".as_ref(),
        "no\u{1b}]0;such\u{7}".as_ref(),
    ]);
    clean("stderr", err.as_bytes());
    assert!(err.contains(&format!("{shown} (trace ID 0x10)")), "{err}");
    assert!(
        err.contains("--task-switch no\\u{1b}]0;such\\u{7}:"),
        "{err}"
    );
    clean("report", &std::fs::read(&report).expect("report"));
    for format in ["text", "csv"] {
        let (out, _) = run(&[
            "report".as_ref(),
            capture.as_os_str(),
            "--elf".as_ref(),
            elf.as_os_str(),
            "--by-task".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
        ]);
        clean(format, &out);
        let text = String::from_utf8(out).expect("UTF-8");
        let want = if format == "text" {
            format!("# task {shown}\n")
        } else {
            format!("\n{shown},")
        };
        assert!(text.contains(&want), "{format}: {text}");
    }
}

/// A DWARF error names its file: an ELF file whose name holds an escape
/// sequence and a line break, with its `.debug_info` damaged, is warned
/// about on one line with the name escaped.
#[test]
fn dwarf_errors_are_escaped() {
    use object::{Object, ObjectSection};
    let dir = std::env::temp_dir().join(format!("tc-escaping-dwarf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut bytes = std::fs::read(example().join("example.elf")).expect("ELF");
    let (at, len) = {
        let file = object::File::parse(&*bytes).expect("ELF");
        let s = file.section_by_name(".debug_info").expect("the section");
        s.file_range().expect("bytes in the file")
    };
    bytes[at as usize..(at + len) as usize].fill(0xFF);
    let elf = dir.join("evil\u{1b}[2J\nname.elf");
    std::fs::write(&elf, bytes).expect("write");
    let report = dir.join("r.txt");
    let (_, err) = run(&[
        example().as_os_str(),
        "--elf".as_ref(),
        elf.as_os_str(),
        "--report".as_ref(),
        report.as_os_str(),
    ]);
    std::fs::remove_dir_all(&dir).ok();
    let line = err
        .lines()
        .find(|l| l.contains("DWARF section not readable"))
        .unwrap_or_else(|| panic!("a DWARF warning in {err}"));
    assert!(line.contains("evil\\u{1b}[2J\\nname.elf"), "{line}");
    clean("stderr", err.as_bytes());
}

/// A `--function` name that matched nothing is quoted back escaped, as
/// `--task-switch` names are.
#[test]
fn an_unmatched_function_name_is_quoted_escaped() {
    let dir = std::env::temp_dir().join(format!("tc-escaping-fn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let report = dir.join("r.txt");
    let (_, err) = run(&[
        example().as_os_str(),
        "--elf".as_ref(),
        example().join("example.elf").as_os_str(),
        "--function".as_ref(),
        "no\u{1b}]0;such\u{7}".as_ref(),
        "--report".as_ref(),
        report.as_os_str(),
    ]);
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        err.contains("--function no\\u{1b}]0;such\\u{7}: no function of that name"),
        "{err}"
    );
    clean("stderr", err.as_bytes());
}
