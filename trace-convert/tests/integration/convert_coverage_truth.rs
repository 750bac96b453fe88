//! LCOV output against the emulator's coverage truth, for every corpus
//! program: each flow is encoded as ETMv3 trace (and, for the A-profile
//! programs, as PTM trace with the return stack), converted by the CLI
//! with the program's ELF, and every function, line and branch record
//! compared with `*.cov.json` (computed from the emulator's record and the
//! ELF alone, see corpus/README.md; inlined copies of functions add the
//! times the emulator reached where DWARF says each copy is entered to
//! their functions' calls), both ways: each record the truth
//! gives must be in the tracefile with its counts, and the tracefile may
//! hold no other. Branch blocks are compared per line, `-` (code never
//! reached) included.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use trace_core::memory::{MemoryMap, Space};
use trace_encode::{encode_etm, encode_ptm, EtmOptions, Flow, FlowItem, PtmOptions, Trace};

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

/// A branch block's (taken, not taken) counts; `None` for `-`.
type Block = (Option<u64>, Option<u64>);

/// What an LCOV tracefile or the truth says, sources named relative to
/// `corpus/`.
#[derive(Debug, Default, PartialEq)]
struct Records {
    /// Function name → (file, count). (The first lines are not compared:
    /// the truth gives the line-table line of the entry, which is an
    /// inlined callee's line where the entry is inlined code, LCOV the
    /// function's own.)
    functions: BTreeMap<String, (String, u64)>,
    /// (file, line) → count.
    lines: BTreeMap<(String, u32), u64>,
    /// (file, line) → the (taken, not taken) counts of its branch blocks,
    /// sorted.
    branches: BTreeMap<(String, u32), Vec<Block>>,
}

/// The tracefile names sources as the DWARF data does (relative to the
/// repository root), the truth relative to `corpus/`.
fn source_name(sf: &str) -> String {
    sf.strip_prefix("corpus/").unwrap_or(sf).to_owned()
}

fn parse_lcov(text: &str) -> Records {
    let mut out = Records::default();
    let mut file = String::new();
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    // (file, line, block) → the counts of its two directions as read.
    type Directions = [Option<Option<u64>>; 2];
    let mut blocks: BTreeMap<(String, u32, u32), Directions> = BTreeMap::new();
    for line in text.lines() {
        if let Some(f) = line.strip_prefix("SF:") {
            file = source_name(f);
        } else if let Some(x) = line.strip_prefix("FN:") {
            let (l, n) = x.split_once(',').expect("FN");
            let _: u32 = l.parse().expect("line");
            let old = files.insert(n.to_owned(), file.clone());
            assert!(old.is_none(), "function {n} given twice");
        } else if let Some(x) = line.strip_prefix("FNDA:") {
            let (c, n) = x.split_once(',').expect("FNDA");
            let old = counts.insert(n.to_owned(), c.parse().expect("count"));
            assert!(old.is_none(), "calls of {n} given twice");
        } else if let Some(x) = line.strip_prefix("DA:") {
            let mut p = x.split(',');
            let l = p.next().expect("line").parse().expect("line");
            let c = p.next().expect("count").parse().expect("count");
            let old = out.lines.insert((file.clone(), l), c);
            assert!(old.is_none(), "{file}:{l} given twice");
        } else if let Some(x) = line.strip_prefix("BRDA:") {
            let p: Vec<&str> = x.split(',').collect();
            assert_eq!(p.len(), 4, "{line}");
            let l: u32 = p[0].parse().expect("line");
            let block: u32 = p[1].parse().expect("block");
            let branch: usize = p[2].parse().expect("branch");
            assert!(branch < 2, "two-way blocks only: {line}");
            let taken = (p[3] != "-").then(|| p[3].parse::<u64>().expect("taken"));
            let slot = &mut blocks.entry((file.clone(), l, block)).or_default()[branch];
            assert!(slot.is_none(), "{file}: {line} given twice");
            *slot = Some(taken);
        }
    }
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        counts.keys().collect::<Vec<_>>(),
        "FN and FNDA name the same functions"
    );
    for (name, file) in files {
        let count = counts[&name];
        out.functions.insert(name, (file, count));
    }
    for ((f, l, b), [taken, not]) in blocks {
        let (Some(taken), Some(not)) = (taken, not) else {
            panic!("{f}:{l}: block {b} lacks a direction");
        };
        out.branches.entry((f, l)).or_default().push((taken, not));
    }
    for v in out.branches.values_mut() {
        v.sort_unstable();
    }
    out
}

/// The records the truth gives: every function with its file and calls, every line that owns code with its count, and a block per
/// conditional branch (`all`: per conditional instruction) that ran, with
/// its pass/fail counts, and per one that never ran, with `-`.
fn truth_records(truth: &serde_json::Value, all: bool) -> Records {
    let mut out = Records::default();
    let text = |v: &serde_json::Value| v.as_str().expect("text").to_owned();
    let number = |v: &serde_json::Value| v.as_u64().expect("number");
    for f in truth["functions"].as_array().expect("functions") {
        out.functions
            .insert(text(&f["name"]), (text(&f["file"]), number(&f["count"])));
    }
    for l in truth["lines"].as_array().expect("lines") {
        let line = u32::try_from(number(&l["line"])).expect("line");
        out.lines
            .insert((text(&l["file"]), line), number(&l["count"]));
    }
    for c in truth["conditionals"].as_array().expect("conditionals") {
        if c["branch"] != true && !all {
            continue;
        }
        let line = u32::try_from(number(&c["line"])).expect("line");
        let block = (Some(number(&c["passed"])), Some(number(&c["failed"])));
        out.branches
            .entry((text(&c["file"]), line))
            .or_default()
            .push(block);
    }
    for c in truth["unreached_conditionals"]
        .as_array()
        .expect("unreached_conditionals")
    {
        if c["branch"] != true && !all {
            continue;
        }
        let line = u32::try_from(number(&c["line"])).expect("line");
        out.branches
            .entry((text(&c["file"]), line))
            .or_default()
            .push((None, None));
    }
    for v in out.branches.values_mut() {
        v.sort_unstable();
    }
    out
}

/// The calls of the inlined copies of functions, from the emulator's
/// flow: each copy (name and where DWARF says it is entered, see
/// `Symbolizer::inlined_copies`) counts the times that instruction was
/// reached. Returns function name → (file of the first copy's line, the
/// sum over its copies).
pub(crate) fn inlined_truth(elf: &Path, flow: &Flow) -> BTreeMap<String, (String, u64)> {
    let symbols =
        trace_convert::symbols::Symbolizer::from_elves(&[elf.to_path_buf()]).expect("symbols");
    let mut reach: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for item in &flow.items {
        if let FlowItem::Insn { addr, .. } = item {
            *reach.entry(*addr).or_default() += 1;
        }
    }
    let mut out: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for (name, first) in symbols.inlined_copies() {
        let n = reach.get(&first).copied().unwrap_or(0);
        let Some(line) = symbols.line(first) else {
            continue;
        };
        out.entry(name)
            .or_insert_with(|| (source_name(&line.file), 0))
            .1 += n;
    }
    out
}

/// `truth`'s functions with the calls of their inlined copies added
/// ([`inlined_truth`]); a function only inlined is a function too.
fn add_inlined(truth: &mut Records, inlined: &BTreeMap<String, (String, u64)>) {
    for (name, (file, n)) in inlined {
        truth
            .functions
            .entry(name.clone())
            .and_modify(|f| f.1 += n)
            .or_insert_with(|| (file.clone(), *n));
    }
}

fn lcov_of(trace: &Trace, protocol: &str, elf: &Path, dir: &Path, conditionals: bool) -> String {
    let bin = dir.join(format!("{protocol}.bin"));
    let info = dir.join(format!("{protocol}.info"));
    std::fs::write(&bin, &trace.bytes).expect("write capture");
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .arg(&bin)
        .args(["--protocol", protocol, "--no-progress"])
        .arg(format!("--etmcr={:#x}", trace.regs.etmcr))
        .arg(format!("--etmccer={:#x}", trace.regs.etmccer))
        .arg(format!("--etmidr={:#x}", trace.regs.etmidr))
        .arg("--elf")
        .arg(elf)
        .arg("--lcov")
        .arg(&info)
        .args(conditionals.then_some("--lcov-conditionals"))
        .output()
        .expect("run trace-convert");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&info).expect("tracefile")
}

/// Every key of `got` and `want` must give the same value in both.
fn same<K: Ord + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
    what: &str,
    got: &BTreeMap<K, V>,
    want: &BTreeMap<K, V>,
) {
    for key in got.keys().chain(want.keys()) {
        let (g, w) = (got.get(key), want.get(key));
        assert!(
            g == w,
            "{what} {key:?} differ from the truth\n got: {g:?}\nwant: {w:?}"
        );
    }
}

/// Compare every record with the truth, both ways; returns the numbers of
/// functions, lines and branch blocks compared.
fn compare(name: &str, protocol: &str, lcov: &Records, truth: &Records) -> [usize; 3] {
    let what = |kind: &str| format!("{name} {protocol}: {kind}");
    same(
        &what("function (file, calls)"),
        &lcov.functions,
        &truth.functions,
    );
    same(&what("line"), &lcov.lines, &truth.lines);
    same(
        &what("branch blocks (taken, not taken) of"),
        &lcov.branches,
        &truth.branches,
    );
    [
        truth.functions.len(),
        truth.lines.len(),
        truth.branches.values().map(Vec::len).sum(),
    ]
}

#[test]
fn lcov_counts_equal_the_emulator_truth_for_every_program() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("cov-truth-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let mut totals = [0usize; 3];
    let mut runs = 0;
    let mut all_conditionals = 0;
    let mut never = 0;
    let mut inlined_functions = 0;
    for fx in json(&dir.join("manifest.json"))
        .as_array()
        .expect("manifest")
    {
        let name = fx["name"].as_str().expect("name");
        let elf = dir.join(fx["elf"].as_str().expect("elf"));
        let flow = Flow::parse(
            &std::fs::read_to_string(dir.join(fx["flow"].as_str().expect("flow"))).expect("flow"),
        )
        .expect("flow parses");
        let truth = json(&dir.join(fx["cov"].as_str().expect("cov")));
        let mut truth_all = truth_records(&truth, true);
        let mut truth = truth_records(&truth, false);
        let inlined = inlined_truth(&elf, &flow);
        inlined_functions += inlined.len();
        add_inlined(&mut truth_all, &inlined);
        add_inlined(&mut truth, &inlined);
        let mut mem = MemoryMap::new();
        mem.add_elf(&elf, Space::Any).expect("ELF");
        let etm = encode_etm(&flow.items, &mem, &EtmOptions::default()).expect("ETMv3");
        // ETMv3 traces every instruction's outcome: with
        // --lcov-conditionals every conditional instruction is a branch.
        let lcov = parse_lcov(&lcov_of(&etm, "etm", &elf, &tmp, true));
        let n = compare(name, "etm, all conditionals", &lcov, &truth_all);
        all_conditionals += n[2];
        never += truth_all
            .branches
            .values()
            .flatten()
            .filter(|b| b.0.is_none())
            .count();
        let mut traces = vec![("etm", etm)];
        if fx["profile"] == "a" {
            let opts = PtmOptions {
                return_stack: true,
                ..PtmOptions::default()
            };
            traces.push(("ptm", encode_ptm(&flow.items, &mem, &opts).expect("PTM")));
        }
        for (protocol, trace) in &traces {
            let lcov = parse_lcov(&lcov_of(trace, protocol, &elf, &tmp, false));
            let n = compare(name, protocol, &lcov, &truth);
            eprintln!(
                "{name} {protocol}: {} functions, {} lines, {} branch blocks equal the truth",
                n[0], n[1], n[2]
            );
            for (t, k) in totals.iter_mut().zip(n) {
                *t += k;
            }
            runs += 1;
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
    eprintln!(
        "{runs} conversions: {} function counts, {} line counts, {} conditional branches equal the emulator's; \
         ETMv3 with --lcov-conditionals: {all_conditionals} conditional instructions ({never} never reached)",
        totals[0], totals[1], totals[2]
    );
    assert!(runs >= 24 && totals.iter().all(|&t| t > 0));
    // Inlined functions are listed with their copies' calls.
    assert!(inlined_functions > 0);
    assert!(all_conditionals > totals[2] / 2);
    // Blocks never reached are compared too.
    assert!(never > 0);
}
