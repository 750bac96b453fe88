//! Ground truth from real execution: the ARM DS-5 instruction trace dumps of
//! the OpenCSD TC2 snapshot (a Thumb-2 Linux kernel on Cortex-A7/A15).
//!
//! Each record gives an executed instruction's address, opcode, DS-5's
//! disassembly, whether DS-5 classes it as a branch, and whether it failed
//! its condition. For every record we check the size and the branch
//! classification, and for consecutive records that the next address is
//! the fall-through address or, for a taken direct branch, our target.
//! The test is skipped when `../shared` is not beside the checkout.

use std::path::PathBuf;

use isa_decode::{decode_t32, Insn, Isa, Kind};

struct Record {
    addr: u32,
    hw1: u16,
    hw2: u16,
    size: u8,
    branch: bool,
    failed: bool,
    text: String,
}

fn parse(text: &str) -> Vec<Option<Record>> {
    // `None` marks any non-instruction record (trace gaps, exceptions).
    text.lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            if f.first() != Some(&"Instruction") || f.len() < 7 {
                return None;
            }
            let addr = u32::from_str_radix(f[2].trim_start_matches("S:0x"), 16).ok()?;
            let op = f[3].trim_start_matches("0x");
            let v = u32::from_str_radix(op, 16).ok()?;
            let (hw1, hw2, size) = match op.len() {
                4 => (v as u16, 0, 2),
                8 => ((v >> 16) as u16, v as u16, 4),
                _ => return None,
            };
            Some(Record {
                addr,
                hw1,
                hw2,
                size,
                branch: f[6] == "true",
                failed: f.get(7).is_some_and(|s| s.contains("fail")),
                text: f[5].trim().to_string(),
            })
        })
        .collect()
}

fn check_dump(name: &str, records: &[Option<Record>]) -> (usize, usize) {
    let mut checked = 0;
    let mut flows = 0;
    for (k, rec) in records.iter().enumerate() {
        let Some(r) = rec else { continue };
        let i: Insn = decode_t32(r.hw1, r.hw2, r.addr);
        let ctx = format!(
            "{name}: {:#x} {:04x} {:04x} {}",
            r.addr, r.hw1, r.hw2, r.text
        );
        assert_eq!(i.size, r.size, "{ctx}");
        assert!(
            !i.unpredictable && i.kind != Kind::Undefined,
            "{ctx}: {i:?}"
        );
        assert_eq!(i.is_branch(), r.branch, "{ctx}: {i:?}");
        checked += 1;
        let Some(Some(next)) = records.get(k + 1) else {
            continue;
        };
        let fall = i.next_addr(r.addr);
        if !i.is_branch() || r.failed {
            // Sequential, or a branch that failed its condition: unless an
            // exception intervened (a separate record), execution falls
            // through.
            assert_eq!(next.addr, fall, "{ctx}: expected fall-through");
            flows += 1;
        } else if i.is_direct() {
            let t = i.target.expect("direct target");
            if i.kind == Kind::CompareBranch && next.addr == fall {
                // CBZ/CBNZ not taken: DS-5 marks no condition failure.
                continue;
            }
            assert_eq!(
                (next.addr, t.isa),
                (t.addr, Isa::T32),
                "{ctx}: direct target"
            );
            flows += 1;
        }
    }
    (checked, flows)
}

#[test]
fn tc2_ds5_dumps() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/testdata/opencsd/TC2/ds5-dumps");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("{} not found: skipped", dir.display());
        return;
    };
    let mut total = (0, 0);
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(e.path()).expect("dump");
        let (c, f) = check_dump(&name, &parse(&text));
        assert!(c > 1000, "{name}: only {c} instructions");
        total.0 += c;
        total.1 += f;
    }
    println!(
        "{} instructions checked, {} successor addresses verified",
        total.0, total.1
    );
    assert!(total.0 > 25_000);
}
