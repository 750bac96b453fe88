//! LCOV output against the emulator's coverage truth, for every corpus
//! program: each flow is encoded as ETMv3 trace (and, for the A-profile
//! programs, as PTM trace with the return stack), converted by the CLI
//! with the program's ELF, and the function, line and branch counts
//! compared with `*.cov.json` (computed from the emulator's record and the
//! ELF alone, see corpus/README.md).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use trace_core::memory::{MemoryMap, Space};
use trace_encode::{encode_etm, encode_ptm, EtmOptions, Flow, PtmOptions, Trace};

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

/// What an LCOV tracefile says, keyed by source file (as written).
#[derive(Default)]
struct Lcov {
    /// Function name → count.
    functions: HashMap<String, u64>,
    /// (file, line) → count.
    lines: HashMap<(String, u32), u64>,
    /// (file, line) → the (taken, not taken) pairs of its branch blocks
    /// whose code ran, sorted.
    branches: HashMap<(String, u32), Vec<(u64, u64)>>,
}

fn parse_lcov(text: &str) -> Lcov {
    let mut out = Lcov::default();
    let mut file = String::new();
    let mut blocks: BTreeMap<(String, u32, u32), [Option<u64>; 2]> = BTreeMap::new();
    for line in text.lines() {
        if let Some(f) = line.strip_prefix("SF:") {
            file = f.to_owned();
        } else if let Some(x) = line.strip_prefix("FNDA:") {
            let (c, n) = x.split_once(',').expect("FNDA");
            out.functions
                .insert(n.to_owned(), c.parse().expect("count"));
        } else if let Some(x) = line.strip_prefix("DA:") {
            let mut p = x.split(',');
            let l = p.next().expect("line").parse().expect("line");
            let c = p.next().expect("count").parse().expect("count");
            out.lines.insert((file.clone(), l), c);
        } else if let Some(x) = line.strip_prefix("BRDA:") {
            let p: Vec<&str> = x.split(',').collect();
            assert_eq!(p.len(), 4, "{line}");
            let l: u32 = p[0].parse().expect("line");
            let block: u32 = p[1].parse().expect("block");
            let branch: usize = p[2].parse().expect("branch");
            let taken = (p[3] != "-").then(|| p[3].parse::<u64>().expect("taken"));
            blocks.entry((file.clone(), l, block)).or_default()[branch.min(1)] = taken;
        }
    }
    for ((f, l, _), [taken, not]) in blocks {
        if let (Some(t), Some(n)) = (taken, not) {
            out.branches.entry((f, l)).or_default().push((t, n));
        }
    }
    for v in out.branches.values_mut() {
        v.sort_unstable();
    }
    out
}

/// The LCOV key of a truth file name: the tracefile names sources as the
/// DWARF data does (relative to the repository root), the truth relative
/// to `corpus/`.
fn find<'a, V>(map: &'a HashMap<(String, u32), V>, file: &str, line: u32) -> Option<&'a V> {
    map.iter()
        .find(|((f, l), _)| *l == line && f.ends_with(file))
        .map(|(_, v)| v)
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

/// Compare with the truth; `all` compares every conditional instruction's
/// pass/fail counts, otherwise only the conditional branches'.
fn compare(
    name: &str,
    protocol: &str,
    lcov: &Lcov,
    truth: &serde_json::Value,
    all: bool,
) -> [usize; 3] {
    let mut n = [0; 3];
    for f in truth["functions"].as_array().expect("functions") {
        let fname = f["name"].as_str().expect("name");
        // Functions the trace never reached may be absent or 0.
        let got = lcov.functions.get(fname).copied().unwrap_or(0);
        assert_eq!(
            Some(got),
            f["count"].as_u64(),
            "{name} {protocol}: calls of {fname}"
        );
        n[0] += 1;
    }
    for l in truth["lines"].as_array().expect("lines") {
        let file = l["file"].as_str().expect("file");
        let line = l["line"].as_u64().expect("line") as u32;
        let want = l["count"].as_u64().expect("count");
        let got = find(&lcov.lines, file, line).copied().unwrap_or(0);
        assert_eq!(got, want, "{name} {protocol}: {file}:{line}");
        n[1] += 1;
    }
    let mut want: HashMap<(String, u32), Vec<(u64, u64)>> = HashMap::new();
    for c in truth["conditionals"].as_array().expect("conditionals") {
        if c["branch"] != true && !all {
            continue;
        }
        let key = (
            c["file"].as_str().expect("file").to_owned(),
            c["line"].as_u64().expect("line") as u32,
        );
        let pair = (
            c["passed"].as_u64().expect("passed"),
            c["failed"].as_u64().expect("failed"),
        );
        want.entry(key).or_default().push(pair);
    }
    for ((file, line), mut pairs) in want {
        pairs.sort_unstable();
        let got = find(&lcov.branches, &file, line)
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            got, pairs,
            "{name} {protocol}: branches of {file}:{line} (taken, not taken)"
        );
        n[2] += pairs.len();
    }
    n
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
        let mut mem = MemoryMap::new();
        mem.add_elf(&elf, Space::Any).expect("ELF");
        let etm = encode_etm(&flow.items, &mem, &EtmOptions::default()).expect("ETMv3");
        // ETMv3 traces every instruction's outcome: with
        // --lcov-conditionals every conditional instruction is a branch.
        let lcov = parse_lcov(&lcov_of(&etm, "etm", &elf, &tmp, true));
        let n = compare(name, "etm, all conditionals", &lcov, &truth, true);
        all_conditionals += n[2];
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
            let n = compare(name, protocol, &lcov, &truth, false);
            for (t, k) in totals.iter_mut().zip(n) {
                *t += k;
            }
            runs += 1;
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
    eprintln!(
        "{runs} conversions: {} function counts, {} line counts, {} conditional branches equal the emulator's; \
         ETMv3 with --lcov-conditionals: {all_conditionals} conditional instructions",
        totals[0], totals[1], totals[2]
    );
    assert!(runs >= 24 && totals.iter().all(|&t| t > 0));
    assert!(all_conditionals > totals[2] / 2);
}
