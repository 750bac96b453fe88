//! LCOV tracefiles read by `genhtml` (from the `lcov` package): it must
//! render them without a warning, and its totals must be the ones counted
//! here from the input numbers.
//!
//! Without `genhtml` the tests say so and pass, unless the `CI`
//! environment variable is set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use trace_convert::sinks::lcov::coverage::{Coverage, LcovOptions, LineInfo};
use trace_convert::sinks::lcov::tracefile::{FileCoverage, FunctionCoverage, LcovReport};
use trace_core::event::{Event, EventKind, InsnClass, Isa, Range};
use trace_core::memory::{MemoryImage, MemoryMap, Region, Space};

fn genhtml_available() -> bool {
    test_support::tool("genhtml", &["--version"], "genhtml (package lcov)")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tc-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(dir.join("src/lib")).expect("mkdir");
    dir
}

/// A source file of `n` numbered lines.
fn source(path: &Path, n: u32) {
    let text: String = (1..=n).map(|i| format!("/* line {i} */\n")).collect();
    std::fs::write(path, text).expect("write source");
}

/// Found / hit pairs genhtml reports: lines, functions, branches.
type Totals = [(u64, u64); 3];

/// Run genhtml on `info` (from the repository root, where relative source
/// paths lead); check it is silent about problems and return its overall
/// totals, checking each percentage against its counts.
fn genhtml(dir: &Path, info: &Path) -> Totals {
    let out = Command::new("genhtml")
        .current_dir(test_support::repo_root())
        .arg("--branch-coverage")
        .arg("-o")
        .arg(dir.join("html"))
        .arg(info)
        .output()
        .expect("run genhtml");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "genhtml failed:\n{text}");
    assert!(
        !text.contains("WARNING") && !text.contains("ERROR"),
        "genhtml complained:\n{text}"
    );
    assert!(dir.join("html/index.html").is_file());
    let mut totals = [(0, 0); 3];
    for (k, what) in ["lines......:", "functions..:", "branches...:"]
        .iter()
        .enumerate()
    {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(what))
            .unwrap_or_else(|| panic!("no {what} in:\n{text}"));
        // "  lines......: 66.7% (4 of 6 lines)"
        let rest = line.trim_start()[what.len()..].trim();
        let (pct, counts) = rest.split_once("% (").expect("percentage");
        let mut words = counts.split_whitespace();
        let hit: u64 = words.next().expect("hit").parse().expect("number");
        assert_eq!(words.next(), Some("of"));
        let found: u64 = words.next().expect("found").parse().expect("number");
        let pct: f64 = pct.parse().expect("percentage");
        let exact = 100.0 * hit as f64 / found as f64;
        assert!((pct - exact).abs() <= 0.1, "{line}: {exact}");
        totals[k] = (found, hit);
    }
    totals
}

#[test]
fn genhtml_renders_a_hand_made_report() {
    if !genhtml_available() {
        return;
    }
    let dir = temp_dir("lcov");
    let main_c = dir.join("src/main.c");
    let util_c = dir.join("src/lib/util.c");
    source(&main_c, 30);
    source(&util_c, 20);

    // The input numbers: (line, count), (name, first line, calls),
    // (line, block, branch, taken).
    let main_lines = [
        (3, 1),
        (4, 1),
        (5, 7),
        (6, 0),
        (7, 6),
        (12, 0),
        (13, 0),
        (20, 2),
    ];
    let main_fns = [("main", 2, 1), ("spare", 11, 0), ("tail", 19, 2)];
    let main_br = [
        (5, 0, 0, Some(6)),
        (5, 0, 1, Some(1)),
        (12, 0, 0, None),
        (12, 0, 1, None),
        (20, 0, 0, Some(0)),
        (20, 0, 1, Some(2)),
        (20, 1, 0, Some(2)),
        (20, 1, 1, Some(0)),
    ];
    let util_lines = [(2, 4), (3, 4), (4, 0), (10, 9)];
    let util_fns = [
        ("util_a", 1, 4),
        ("util_b", 9, 9),
        ("util, with comma", 15, 0),
    ];
    let util_br = [(3, 0, 0, Some(4)), (3, 0, 1, Some(0))];

    let build =
        |lines: &[(u32, u64)], fns: &[(&str, u32, u64)], br: &[(u32, u32, u32, Option<u64>)]| {
            let mut f = FileCoverage::default();
            for &(l, c) in lines {
                f.line_max(l, c);
            }
            for &(name, line, count) in fns {
                f.functions
                    .insert(name.to_owned(), FunctionCoverage { line, count });
            }
            for &(l, b, n, c) in br {
                f.branches.insert((l, b, n), c);
            }
            f
        };
    let mut report = LcovReport {
        test_name: Some("unit".into()),
        files: BTreeMap::new(),
    };
    report.files.insert(
        main_c.display().to_string(),
        build(&main_lines, &main_fns, &main_br),
    );
    report.files.insert(
        util_c.display().to_string(),
        build(&util_lines, &util_fns, &util_br),
    );
    let info = dir.join("cov.info");
    let mut file = std::fs::File::create(&info).expect("create");
    report.write(&mut file).expect("write");
    drop(file);

    // Expected totals, counted from the input numbers.
    let hit = |v: &[u64]| v.iter().filter(|&&c| c > 0).count() as u64;
    let lines: Vec<u64> = main_lines.iter().chain(&util_lines).map(|l| l.1).collect();
    let fns: Vec<u64> = main_fns.iter().chain(&util_fns).map(|f| f.2).collect();
    let brs: Vec<u64> = main_br
        .iter()
        .chain(&util_br)
        .map(|b| b.3.unwrap_or(0))
        .collect();
    let expected = [
        (lines.len() as u64, hit(&lines)),
        (fns.len() as u64, hit(&fns)),
        (brs.len() as u64, hit(&brs)),
    ];
    assert_eq!(expected, [(12, 8), (6, 4), (10, 5)]);
    assert_eq!(genhtml(&dir, &info), expected);
    std::fs::remove_dir_all(&dir).ok();
}

/// A32 at 0x1000: `cmp r0, #0; moveq r1, #1; bne 0x1000; bx lr`, then
/// `bx lr` at 0x1010 (never run).
fn memory() -> Arc<dyn MemoryImage> {
    let code: Vec<u8> = [
        0xE350_0000u32,
        0x03A0_1001,
        0x1AFF_FFFC,
        0xE12F_FF1E,
        0xE12F_FF1E,
    ]
    .iter()
    .flat_map(|w| w.to_le_bytes())
    .collect();
    let data: Arc<[u8]> = code.into();
    let mut m = MemoryMap::new();
    m.add(Region::new("code", 0x1000, Space::Any, data.clone(), 0, data.len()).expect("region"));
    Arc::new(m)
}

fn etm_insn(addr: u32, executed: bool) -> Event {
    Event {
        offset: 0,
        id: 0x10,
        kind: EventKind::Range(Range {
            start: addr,
            end: addr + 4,
            count: 1,
            isa: Isa::A32,
            last_size: 4,
            last: InsnClass::Other,
            link: false,
            ret: false,
            cond: false,
            executed,
            cycles: None,
            space: Space::Secure,
        }),
    }
}

#[test]
fn genhtml_renders_coverage_from_events() {
    if !genhtml_available() {
        return;
    }
    let dir = temp_dir("lcov-events");
    let loop_c = dir.join("src/loop.c");
    source(&loop_c, 15);
    let file = loop_c.display().to_string();
    let lookup = |addr: u32| -> Option<LineInfo> {
        let (line, f) = match addr {
            0x1000 | 0x1004 => (10, ("loop", 0x1000, 9)),
            0x1008 => (11, ("loop", 0x1000, 9)),
            0x100C => (12, ("loop", 0x1000, 9)),
            0x1010 => (14, ("other", 0x1010, 14)),
            _ => return None,
        };
        Some(LineInfo {
            file: file.clone(),
            line,
            function: Some((f.0.to_owned(), f.1, f.2)),
        })
    };
    let mut c = Coverage::new(memory());
    c.add_code(Space::Secure, 0x1000, 0x1014, Isa::A32);
    // Two loop iterations, ETMv3 style: moveq fails then passes, bne is
    // taken then not.
    for (addr, e) in [
        (0x1000, true),
        (0x1004, false),
        (0x1008, true),
        (0x1000, true),
        (0x1004, true),
        (0x1008, false),
        (0x100C, true),
    ] {
        c.add(&etm_insn(addr, e));
    }
    let opts = LcovOptions {
        test_name: None,
        conditional_instructions: true,
    };
    let report = c.to_lcov(lookup, [0x1000, 0x1008, 0x100C, 0x1010], &opts);
    let info = dir.join("cov.info");
    let mut out = std::fs::File::create(&info).expect("create");
    report.write(&mut out).expect("write");
    drop(out);
    // Lines 10, 11, 12 ran, 14 did not; loop entered, other not; moveq and
    // bne each passed and failed once (4 of 4 directions).
    assert_eq!(genhtml(&dir, &info), [(4, 3), (2, 1), (4, 4)]);
    std::fs::remove_dir_all(&dir).ok();
}

/// Found / hit totals of the emulator's truth for a corpus program
/// (`corpus/README.md`): every line owning code, every function, and two
/// directions per conditional branch, reached or not.
fn truth_totals(cov: &Path) -> Totals {
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cov).expect("read")).expect("JSON");
    let counts = |key: &str| -> Vec<u64> {
        truth[key]
            .as_array()
            .expect(key)
            .iter()
            .map(|v| v["count"].as_u64().expect("count"))
            .collect()
    };
    let found_hit = |v: &[u64]| (v.len() as u64, v.iter().filter(|&&c| c > 0).count() as u64);
    let mut directions = Vec::new();
    for c in truth["conditionals"].as_array().expect("conditionals") {
        if c["branch"] == true {
            directions.push(c["passed"].as_u64().expect("passed"));
            directions.push(c["failed"].as_u64().expect("failed"));
        }
    }
    for c in truth["unreached_conditionals"]
        .as_array()
        .expect("unreached_conditionals")
    {
        if c["branch"] == true {
            directions.extend([0, 0]);
        }
    }
    [
        found_hit(&counts("lines")),
        found_hit(&counts("functions")),
        found_hit(&directions),
    ]
}

/// The bundled example converted as `cargo run` does (no arguments: every
/// format into ./out/): genhtml's totals of its `coverage.info` are the
/// truth's of the corpus program it was made from.
#[test]
fn genhtml_reports_the_truth_on_the_bundled_example() {
    let Some(fixtures) = test_support::corpus_fixtures() else {
        return;
    };
    if !genhtml_available() {
        return;
    }
    let root = test_support::repo_root();
    let program = "example-t";
    let elf = std::fs::read(fixtures.join(format!("{program}.elf"))).expect("fixture ELF");
    let example_elf = std::fs::read(root.join("examples/snapshot/example.elf")).expect("example");
    assert!(elf == example_elf, "the example is made from {program}");
    let dir = temp_dir("lcov-example");
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .current_dir(&dir)
        .output()
        .expect("run trace-convert");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = genhtml(&dir, &dir.join("out/coverage.info"));
    let mut want = truth_totals(&fixtures.join(format!("{program}.cov.json")));
    // Functions only inlined are functions too (those also called have
    // a truth row already), hit when a copy ran.
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join(format!("{program}.cov.json"))).expect("read"),
    )
    .expect("JSON");
    let called: Vec<&str> = truth["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    let flow = trace_encode::Flow::parse(
        &std::fs::read_to_string(fixtures.join(format!("{program}.flow"))).expect("flow"),
    )
    .expect("flow parses");
    let inlined = crate::convert_coverage_truth::inlined_truth(
        &fixtures.join(format!("{program}.elf")),
        &flow,
    );
    let mut hit_before: std::collections::BTreeSet<&str> = truth["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .filter(|f| f["count"].as_u64() > Some(0))
        .filter_map(|f| f["name"].as_str())
        .collect();
    for (name, (_, n)) in &inlined {
        if !called.contains(&name.as_str()) {
            want[1].0 += 1;
        }
        if *n > 0 && hit_before.insert(name) {
            want[1].1 += 1;
        }
    }
    assert!(inlined.len() >= 5, "{inlined:?}");
    assert_eq!(
        got, want,
        "genhtml (found, hit): lines, functions, branches"
    );
    eprintln!("genhtml on the example: (found, hit) of lines, functions, branches {got:?}");
    std::fs::remove_dir_all(&dir).ok();
}
