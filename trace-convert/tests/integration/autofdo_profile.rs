//! The AutoFDO profile (`--autofdo`) against the emulator's truth and
//! LLVM's reader.
//!
//! For every corpus program (its recorded flow encoded as ETMv3 trace,
//! and as PTM trace for the A-profile builds) and for the bundled
//! example, the profile is written through the command line and read
//! back here:
//!
//! - each profiled line, placed in its source file by the declaration
//!   line of its function as this test reads it from DWARF with gimli
//!   (`DW_AT_decl_file`, `DW_AT_decl_line`), must be a line that the
//!   truth (`*.cov.json`, from the flow and the ELF alone) says ran, and
//!   the largest count the profile gives a line equals the truth's count
//!   of that line (the times its most executed instruction ran);
//! - each function's head samples equal the times the truth saw its
//!   first instruction run (summed over copies of one function);
//! - calls to a function never exceed the times it was entered.
//!
//! `llvm-profdata merge --sample --text` must read the profile and write
//! it back with the same functions, lines, calls and totals (skipped with
//! a message when llvm-profdata is not installed, unless `CI` is set).

use super::convert_common::{cli, corpus_program, corpus_traces_with};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use trace_encode::{PtmOptions, Trace};

/// One function (or inlined copy) of a text sample profile.
#[derive(Debug, Default, PartialEq)]
struct Samples {
    total: u64,
    head: u64,
    /// `offset[.discriminator]` → samples.
    body: BTreeMap<String, u64>,
    /// (location, callee) → calls.
    calls: BTreeMap<(String, String), u64>,
    /// (location, callee) → the inlined copy.
    inlined: BTreeMap<(String, String), Samples>,
}

/// Parse the text form: `name:total:head` and, one space deeper per
/// level, `loc: samples [callee:calls ...]` or `loc: callee:total`
/// followed by the inlined copy's lines.
fn parse_profile(text: &str) -> BTreeMap<String, Samples> {
    let mut out = BTreeMap::new();
    // The path of (location, callee) from the current function.
    let mut name = String::new();
    let mut path: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let depth = line.len() - line.trim_start_matches(' ').len();
        let body = line.trim_start_matches(' ');
        if depth == 0 {
            let mut p = body.rsplitn(3, ':');
            let head = p.next().expect("head").parse().expect("head number");
            let total = p.next().expect("total").parse().expect("total number");
            name = p.next().expect("name").to_owned();
            let s = Samples {
                total,
                head,
                ..Samples::default()
            };
            assert!(out.insert(name.clone(), s).is_none(), "{name} twice");
            path.clear();
            continue;
        }
        path.truncate(depth - 1);
        let mut node = out.get_mut(&name).expect("a function first");
        for key in &path {
            node = node.inlined.get_mut(key).expect("inlined copy");
        }
        let (loc, rest) = body.split_once(": ").expect("`loc: ...`");
        let mut words = rest.split(' ');
        let first = words.next().expect("samples");
        if let Ok(n) = first.parse::<u64>() {
            assert!(node.body.insert(loc.to_owned(), n).is_none(), "{line}");
            for w in words {
                let (callee, n) = w.rsplit_once(':').expect("callee:calls");
                let n = n.parse().expect("calls");
                node.calls.insert((loc.to_owned(), callee.to_owned()), n);
            }
        } else {
            let (callee, total) = first.rsplit_once(':').expect("callee:total");
            let key = (loc.to_owned(), callee.to_owned());
            let s = Samples {
                total: total.parse().expect("total"),
                ..Samples::default()
            };
            node.inlined.insert(key.clone(), s);
            path.push(key);
        }
    }
    out
}

/// Every total is its lines' and its inlined copies' samples.
fn check_totals(what: &str, s: &Samples) {
    let sum = s.body.values().sum::<u64>() + s.inlined.values().map(|i| i.total).sum::<u64>();
    assert_eq!(s.total, sum, "{what}: total");
    for ((loc, callee), i) in &s.inlined {
        check_totals(&format!("{what} {loc}: {callee}"), i);
    }
}

/// The functions' declarations, read with gimli: name → (file name,
/// line), and the lowest address of each function with code → name.
#[derive(Debug, Default)]
struct Declarations {
    lines: BTreeMap<String, (String, u64)>,
    entries: BTreeMap<u64, String>,
}

fn declarations(elf: &Path) -> Declarations {
    use object::{Object, ObjectSection};
    let bytes = std::fs::read(elf).expect("ELF");
    let file = object::File::parse(&*bytes).expect("ELF parses");
    let sections = gimli::DwarfSections::load(|id| -> Result<Vec<u8>, gimli::Error> {
        Ok(file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .map(|d| d.into_owned())
            .unwrap_or_default())
    })
    .expect("sections");
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, gimli::RunTimeEndian::Little));
    let mut out = Declarations::default();
    let mut units = dwarf.units();
    while let Some(header) = units.next().expect("unit header") {
        let unit = dwarf.unit(header).expect("unit");
        let program = unit.line_program.clone().expect("line program");
        let mut entries = unit.entries();
        while let Some((_, e)) = entries.next_dfs().expect("entry") {
            if e.tag() != gimli::DW_TAG_subprogram {
                continue;
            }
            let text = |at| {
                let v = e.attr_value(at).ok().flatten()?;
                let s = dwarf.attr_string(&unit, v).ok()?;
                Some(s.to_string_lossy().into_owned())
            };
            let name = text(gimli::DW_AT_linkage_name).or_else(|| text(gimli::DW_AT_name));
            let number = |at| match e.attr_value(at).ok().flatten()? {
                gimli::AttributeValue::FileIndex(i) => Some(i),
                v => v.udata_value(),
            };
            if let (Some(name), Some(line), Some(f)) = (
                name.clone(),
                number(gimli::DW_AT_decl_line),
                number(gimli::DW_AT_decl_file),
            ) {
                let file = program
                    .header()
                    .file(f)
                    .and_then(|f| dwarf.attr_string(&unit, f.path_name()).ok())
                    .map(|s| s.to_string_lossy().into_owned())
                    .expect("declaration file");
                out.lines.insert(name, (file, line));
            }
            if let Ok(Some(gimli::AttributeValue::Addr(lo))) = e.attr_value(gimli::DW_AT_low_pc) {
                // A concrete copy names its function through its origin.
                let origin = match e.attr_value(gimli::DW_AT_abstract_origin) {
                    Ok(Some(gimli::AttributeValue::UnitRef(o))) => {
                        unit.entry(o).ok().and_then(|o| {
                            let v = o.attr_value(gimli::DW_AT_name).ok().flatten()?;
                            let s = dwarf.attr_string(&unit, v).ok()?;
                            Some(s.to_string_lossy().into_owned())
                        })
                    }
                    _ => None,
                };
                if let Some(n) = name.or(origin) {
                    out.entries.insert(lo, n);
                }
            }
        }
    }
    out
}

/// The last part of a path.
fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The largest count the profile gives each (file name, line).
fn line_counts(
    profile: &BTreeMap<String, Samples>,
    decl: &Declarations,
) -> BTreeMap<(String, u64), u64> {
    fn walk(name: &str, s: &Samples, decl: &Declarations, out: &mut BTreeMap<(String, u64), u64>) {
        let Some((file, line)) = decl.lines.get(name) else {
            panic!("{name}: not a function declared in DWARF")
        };
        for (loc, n) in &s.body {
            let offset: u64 = loc
                .split('.')
                .next()
                .and_then(|o| o.parse().ok())
                .expect("offset");
            let e = out
                .entry((base(file).to_owned(), line + offset))
                .or_insert(0);
            *e = (*e).max(*n);
        }
        for ((_, callee), i) in &s.inlined {
            walk(callee, i, decl, out);
        }
    }
    let mut out = BTreeMap::new();
    for (name, s) in profile {
        walk(name, s, decl, &mut out);
    }
    out
}

/// Compare a profile of `elf`'s program with its truth; returns the lines
/// compared and the calls profiled.
fn compare_with_truth(what: &str, text: &str, elf: &Path, cov: &Path) -> (usize, u64) {
    let profile = parse_profile(text);
    for (name, s) in &profile {
        check_totals(&format!("{what} {name}"), s);
    }
    let decl = declarations(elf);
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cov).expect("cov.json")).expect("JSON");
    // Only files that declare functions in DWARF are profiled (not the
    // assembly start-up code).
    let profiled: Vec<&str> = decl.lines.values().map(|(f, _)| base(f)).collect();
    let want: BTreeMap<(String, u64), u64> = truth["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| {
            let file = base(l["file"].as_str().expect("file")).to_owned();
            (
                (file, l["line"].as_u64().expect("line")),
                l["count"].as_u64().expect("count"),
            )
        })
        .filter(|((f, _), n)| *n > 0 && profiled.contains(&f.as_str()))
        .collect();
    let got = line_counts(&profile, &decl);
    let diff: Vec<String> = want
        .keys()
        .chain(got.keys())
        .filter(|k| want.get(*k) != got.get(*k))
        .take(8)
        .map(|k| format!("{k:?}: truth {:?}, profile {:?}", want.get(k), got.get(k)))
        .collect();
    assert!(diff.is_empty(), "{what}: lines differ: {}", diff.join("; "));
    // Head samples: the truth's entry counts, by DWARF function.
    let mut heads: BTreeMap<String, u64> = BTreeMap::new();
    for f in truth["functions"].as_array().expect("functions") {
        let addr = f["addr"].as_u64().expect("addr");
        if let Some(name) = decl.entries.get(&addr) {
            *heads.entry(name.clone()).or_insert(0) += f["count"].as_u64().expect("count");
        }
    }
    let mut called: BTreeMap<&str, u64> = BTreeMap::new();
    fn calls<'a>(s: &'a Samples, out: &mut BTreeMap<&'a str, u64>) {
        for ((_, callee), n) in &s.calls {
            *out.entry(callee).or_insert(0) += n;
        }
        for i in s.inlined.values() {
            calls(i, out);
        }
    }
    for (name, s) in &profile {
        assert_eq!(
            Some(&s.head),
            heads.get(name),
            "{what}: head samples of {name}"
        );
        calls(s, &mut called);
    }
    for (callee, n) in &called {
        let head = profile.get(*callee).map_or(0, |s| s.head);
        assert!(
            *n <= head,
            "{what}: {callee} called {n} times, entered {head}"
        );
    }
    (want.len(), called.values().sum())
}

fn profile_of(trace: &Trace, protocol: &str, elf: &Path, dir: &Path) -> String {
    let bin = dir.join(format!("{protocol}.bin"));
    std::fs::write(&bin, &trace.bytes).expect("write capture");
    let regs = [
        format!("--etmcr={:#x}", trace.regs.etmcr),
        format!("--etmccer={:#x}", trace.regs.etmccer),
        format!("--etmidr={:#x}", trace.regs.etmidr),
    ];
    let mut args: Vec<&std::ffi::OsStr> =
        vec![bin.as_os_str(), "--protocol".as_ref(), protocol.as_ref()];
    args.extend(regs.iter().map(std::ffi::OsStr::new));
    args.extend([
        "--elf".as_ref(),
        elf.as_os_str(),
        "--autofdo".as_ref(),
        "-".as_ref(),
    ]);
    String::from_utf8(cli(&args).stdout).expect("UTF-8")
}

#[test]
fn corpus_profiles_equal_the_emulator_truth() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let (mut runs, mut lines, mut calls) = (0, 0, 0);
    for name in test_support::corpus_programs(&dir, ".cov.json") {
        let (elf, flow, mem) = corpus_program(&dir, &name);
        let ptm = PtmOptions {
            return_stack: true,
            ..PtmOptions::default()
        };
        let cov = dir.join(format!("{name}.cov.json"));
        for (protocol, trace) in &corpus_traces_with(&name, &flow, &mem, &ptm) {
            let protocol = protocol.flag();
            let text = profile_of(trace, protocol, &elf, tmp.path());
            let (l, c) = compare_with_truth(&format!("{name} {protocol}"), &text, &elf, &cov);
            lines += l;
            calls += c;
            runs += 1;
        }
    }
    eprintln!(
        "{runs} profiles: {lines} line counts and every head sample equal the emulator's; {calls} calls"
    );
    assert!(runs >= 24 && lines > 0 && calls > 0);
}

/// The bundled example's profile, written to a file.
fn example_profile(dir: &Path) -> PathBuf {
    let out = dir.join("example.afdo");
    cli(&["--autofdo".as_ref(), out.as_os_str()]);
    out
}

#[test]
fn example_profile_equals_the_emulator_truth() {
    let Some(fixtures) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let text = std::fs::read_to_string(example_profile(tmp.path())).expect("profile");
    // The bundled example is the corpus program example-t.
    let elf = test_support::repo_root().join("examples/snapshot/example.elf");
    let truth_elf = fixtures.join("example-t.elf");
    assert_eq!(
        std::fs::read(&elf).ok(),
        std::fs::read(&truth_elf).ok(),
        "the example is example-t"
    );
    let (n, calls) =
        compare_with_truth("example", &text, &elf, &fixtures.join("example-t.cov.json"));
    assert!(n > 20 && calls > 0, "{n} lines, {calls} calls");
}

/// llvm-profdata, or `None` (after saying why) when it is not installed
/// and `CI` is not set.
fn llvm_profdata() -> Option<&'static str> {
    let tool = "llvm-profdata";
    // LLVM 14's llvm-profdata knows no `--version` of its own; its
    // subcommands do.
    test_support::tool(
        tool,
        &["merge", "--version"],
        "llvm-profdata (Debian package `llvm`)",
    )
    .then_some(tool)
}

#[test]
fn llvm_profdata_reads_the_profile_back_unchanged() {
    let Some(tool) = llvm_profdata() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let ours = example_profile(tmp.path());
    let back = tmp.path().join("back.afdo");
    let out = Command::new(tool)
        .args(["merge", "--sample", "--text"])
        .arg(&ours)
        .arg("-o")
        .arg(&back)
        .output()
        .expect("run llvm-profdata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = parse_profile(&std::fs::read_to_string(&ours).expect("ours"));
    let back = parse_profile(&std::fs::read_to_string(&back).expect("back"));
    assert!(ours.len() >= 5, "{ours:?}");
    assert_eq!(back, ours);
    // Its own summary gives the same totals.
    let show = Command::new(tool)
        .args(["show", "--sample"])
        .arg(tmp.path().join("example.afdo"))
        .output()
        .expect("run llvm-profdata show");
    let text = String::from_utf8_lossy(&show.stdout);
    for (name, s) in &ours {
        let line = format!("Function: {name}: {}, {},", s.total, s.head);
        assert!(text.contains(&line), "{line} in\n{text}");
    }
}

/// clang, or `None` (after saying why) when no clang is installed and
/// `CI` is not set.
fn clang() -> Option<String> {
    let names =
        std::iter::once("clang".to_owned()).chain((14..=21).rev().map(|v| format!("clang-{v}")));
    for name in names {
        if test_support::runs(&name, &["--version"]) {
            return Some(name);
        }
    }
    let _ = test_support::missing("clang (Debian package `clang`)");
    None
}

/// clang compiles the example's source with the profile of the traced
/// (GCC-built) example, as docs/report.md shows: every function the
/// profile names gets an entry count from it (head samples + 1, or less
/// where clang's sample loader promoted and inlined indirect calls the
/// profile's call targets name), the others none, and branches get
/// weights.
#[test]
fn clang_reads_the_profile_into_the_program() {
    let Some(clang) = clang() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let profile = example_profile(tmp.path());
    let profiled = parse_profile(&std::fs::read_to_string(&profile).expect("profile"));
    let ir = tmp.path().join("example.ll");
    let out = Command::new(&clang)
        .current_dir(test_support::repo_root().join("corpus"))
        .args([
            "--target=armv7a-none-eabi",
            "-mthumb",
            "-O2",
            "-g",
            "-ffreestanding",
        ])
        .arg(format!("-fprofile-sample-use={}", profile.display()))
        .args(["-S", "-emit-llvm", "-o"])
        .arg(&ir)
        .arg("src/example.c")
        .output()
        .expect("run clang");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&ir).expect("IR");
    // `!N = !{!"function_entry_count", i64 C}`
    let counts: BTreeMap<&str, i64> = text
        .lines()
        .filter_map(|l| {
            let (id, rest) = l.split_once(" = !{!\"function_entry_count\", i64 ")?;
            Some((id, rest.trim_end_matches('}').parse().ok()?))
        })
        .collect();
    let mut with_count = 0;
    for line in text.lines().filter(|l| l.starts_with("define ")) {
        let Some(name) = line.split('@').nth(1).and_then(|s| s.split('(').next()) else {
            continue;
        };
        let count = line
            .split("!prof ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|id| counts.get(id));
        match (profiled.get(name), count) {
            (Some(s), Some(&c)) => {
                assert!(
                    c >= 1 && c <= i64::try_from(s.head).unwrap_or(i64::MAX) + 1,
                    "{name}: entry count {c}, head samples {}",
                    s.head
                );
                with_count += 1;
            }
            (Some(_), None) => panic!("{name}: profiled, no entry count in\n{line}"),
            (None, c) => assert!(
                c.is_none_or(|&c| c == -1),
                "{name}: not profiled, entry count {c:?}"
            ),
        }
    }
    assert!(with_count >= 3, "{with_count} functions with counts");
    assert!(text.contains("!\"branch_weights\""), "branch weights");
}

/// The bundled example's ELF file with the bytes of its section `name`
/// overwritten with 0xFF, written into `dir`.
fn elf_with_damaged_section(dir: &Path, name: &str) -> PathBuf {
    use object::{Object, ObjectSection};
    let elf = test_support::repo_root().join("examples/snapshot/example.elf");
    let mut bytes = std::fs::read(&elf).expect("example.elf");
    let (at, len) = {
        let file = object::File::parse(&*bytes).expect("ELF");
        let s = file.section_by_name(name).expect("the section");
        s.file_range().expect("bytes in the file")
    };
    let (at, len) = (at as usize, len as usize);
    bytes[at..at + len].fill(0xFF);
    let out = dir.join(format!("damaged{}.elf", name.replace('.', "_")));
    std::fs::write(&out, bytes).expect("write");
    out
}

#[test]
fn damaged_dwarf_is_an_input_error_and_an_empty_profile_says_why() {
    let dir = std::env::temp_dir().join(format!("tc-afdo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let example = test_support::repo_root().join("examples/snapshot");
    let afdo = dir.join("x.afdo");
    let run = |elf: &Path, extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_trace-convert"));
        cmd.arg(&example)
            .arg("--elf")
            .arg(elf)
            .arg("--autofdo")
            .arg(&afdo)
            .args(extra)
            .arg("--no-progress");
        cmd.output().expect("run")
    };
    // DWARF problems are input errors (exit 3), not output errors (5).
    let bad = elf_with_damaged_section(&dir, ".debug_rnglists");
    let out = run(&bad, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("DWARF"), "{err}");
    assert!(!afdo.exists());

    // A window that holds nothing: an empty profile, and why.
    let elf = example.join("example.elf");
    let out = run(&elf, &["--since", "99999999999s"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(std::fs::read(&afdo).expect("written"), b"");
    assert!(
        err.contains("autofdo: the profile is empty: no instruction was handed to it"),
        "{err}"
    );
    // A profile with samples says nothing of the kind.
    let out = run(&elf, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("the profile is empty"), "{err}");
    assert!(!std::fs::read(&afdo).expect("written").is_empty());
    std::fs::remove_dir_all(&dir).ok();
}
