//! Decode listings with symbols and opcodes, checked against GNU binutils
//! for ARM: objdump's opcodes (A32 words, T32 halfwords), nm's function
//! symbols (each line's function+offset) and addr2line's source lines.

use super::common_addr2line;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn tool(name: &str, args: &[&str], file: &Path) -> String {
    let out = Command::new(name)
        .args(args)
        .arg(file)
        .output()
        .expect("run binutils");
    assert!(out.status.success(), "{name} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// objdump's opcode column by address.
fn objdump_opcodes(text: &str) -> BTreeMap<u32, String> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let mut cols = line.split('\t');
        let (Some(addr), Some(op)) = (cols.next(), cols.next()) else {
            continue;
        };
        let Some(addr) = addr.trim().strip_suffix(':') else {
            continue;
        };
        if let Ok(a) = u32::from_str_radix(addr, 16) {
            m.insert(a, op.trim().to_owned());
        }
    }
    m
}

/// The listing's records of `args`.
fn records(args: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(["decode", "--format", "jsonl"])
        .args(args)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}

fn addr(r: &Value, key: &str) -> u32 {
    r[key]
        .as_u64()
        .and_then(|a| u32::try_from(a).ok())
        .expect("address")
}

#[test]
fn the_example_listing_names_functions_lines_and_opcodes_as_binutils() {
    if !common_addr2line::available("listing_symbols") {
        return;
    }
    let root = test_support::repo_root();
    let snap = root.join("examples/snapshot");
    let elf = snap.join("example.elf");
    let (snap_s, elf_s) = (snap.to_string_lossy(), elf.to_string_lossy());
    let insns = records(&["--instructions", "--elf", &elf_s, &snap_s]);
    let ranges = records(&["--elf", &elf_s, &snap_s]);

    let objdump = objdump_opcodes(&tool("arm-none-eabi-objdump", &["-d"], &elf));
    // nm's function symbols, sorted by address.
    let nm: Vec<(u32, String)> = tool("arm-none-eabi-nm", &["-n", "--defined-only"], &elf)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (a, t, n) = (w.next()?, w.next()?, w.next()?);
            (matches!(t, "t" | "T" | "w" | "W") && !n.starts_with('$'))
                .then(|| Some((u32::from_str_radix(a, 16).ok()? & !1, n.to_owned())))?
        })
        .collect();
    let symbol_of = |a: u32| {
        nm.iter()
            .rev()
            .find(|(s, _)| *s <= a)
            .map(|(s, n)| format!("{n}+{:#x}", a - s))
    };

    let mut checked = (0, 0, 0);
    let mut addrs = Vec::new();
    for r in insns.iter().filter(|r| r["kind"] == "instruction") {
        let a = addr(r, "address");
        let op = r["opcode"].as_str().expect("opcode");
        assert_eq!(
            Some(op),
            objdump.get(&a).map(String::as_str),
            "opcode at {a:#x}"
        );
        checked.0 += 1;
        if let Some(sym) = r["sym"].as_str() {
            assert_eq!(Some(sym.to_owned()), symbol_of(a), "function at {a:#x}");
            checked.1 += 1;
        }
        addrs.push(a);
    }
    for r in ranges.iter().filter(|r| r["kind"] == "range") {
        let a = addr(r, "start");
        let sym = r["sym"]
            .as_str()
            .expect("a range in the program has a function");
        assert_eq!(Some(sym.to_owned()), symbol_of(a), "range at {a:#x}");
    }
    // Source lines: addr2line's innermost location of each address.
    addrs.sort_unstable();
    addrs.dedup();
    let lines = common_addr2line::locations(&elf, &addrs);
    for r in insns.iter().filter(|r| r["kind"] == "instruction") {
        let a = addr(r, "address");
        let (Some(ours), Some(theirs)) = (r["srcline"].as_str(), lines.get(&a)) else {
            continue;
        };
        let tail = |s: &str| {
            let (file, line) = s.rsplit_once(':').unwrap_or((s, ""));
            let name = Path::new(file)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned());
            (name, line.to_owned())
        };
        assert_eq!(tail(ours), tail(theirs), "source line at {a:#x}");
        checked.2 += 1;
    }
    assert!(
        checked.0 > 100 && checked.1 > 100 && checked.2 > 100,
        "{checked:?}"
    );
}

#[test]
fn t32_opcodes_are_halfwords_as_objdump_shows_them() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    if !common_addr2line::available("listing_symbols") {
        return;
    }
    let snap = dir.join("tc2-ptm-rstk-t32");
    // The code image and its load address (device1.ini's dump).
    let code = snap.join("mem_Cortex-A15_0_1_RO_CODE.bin");
    let objdump = objdump_opcodes(&tool(
        "arm-none-eabi-objdump",
        &[
            "-D",
            "-b",
            "binary",
            "-marm",
            "-Mforce-thumb",
            "--adjust-vma=0x80000278",
        ],
        &code,
    ));
    let recs = records(&["--instructions", &snap.to_string_lossy()]);
    let (mut narrow, mut wide) = (0, 0);
    for r in recs
        .iter()
        .filter(|r| r["kind"] == "instruction" && r["isa"] == "t32")
    {
        let a = addr(r, "address");
        let Some(theirs) = objdump.get(&a) else {
            continue;
        };
        let ours = r["opcode"].as_str().expect("opcode");
        assert_eq!(ours, theirs, "at {a:#x}");
        if ours.len() == 4 {
            narrow += 1;
        } else {
            wide += 1;
        }
    }
    assert!(
        narrow > 100 && wide > 10,
        "{narrow} 16-bit, {wide} 32-bit compared"
    );
}
