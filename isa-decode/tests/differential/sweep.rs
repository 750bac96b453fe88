//! The sweeps and the comparison of one instruction.

use std::collections::BTreeMap;

use isa_decode::{decode_a32, decode_t32, t32_size, Insn, Isa};

use crate::categories::{categorize, Category};
use crate::oracle::{CsView, Oracle};

/// A property on which the two decoders disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Field {
    /// Instruction size.
    Size,
    /// We say branch, Capstone rejects the encoding.
    BranchButInvalid,
    /// Branch or not.
    Branch,
    /// Direct or indirect (both say branch).
    Direct,
    /// Link or not (both say branch).
    Link,
    /// Direct target (both say direct).
    Target,
}

/// One disagreement.
#[derive(Clone, Debug)]
pub struct Diff {
    /// Instruction set.
    pub isa: Isa,
    /// Encoding: A32 word, or T32 `hw1 << 16 | hw2` (hw2 = 0 for 16-bit).
    pub enc: u32,
    /// 16-bit T32 encoding.
    pub t16: bool,
    /// What differs.
    pub field: Field,
    /// Our decode.
    pub ours: Insn,
    /// Capstone's.
    pub cs: Option<CsView>,
}

/// Outcome of a sweep.
#[derive(Default)]
pub struct Report {
    /// Encodings compared.
    pub compared: u64,
    /// Disagreements per category (None = uncategorized), with examples.
    pub by_cat: BTreeMap<Option<Category>, (u64, Vec<Diff>)>,
    /// Uncategorized disagreements grouped by (field, our kind, Capstone
    /// mnemonic), with a count and the first encoding.
    pub groups: BTreeMap<String, (u64, u32)>,
    /// Encodings we call UNDEFINED that Capstone decodes (not a compared
    /// property; reported for information).
    pub undef_vs_valid: u64,
    /// Encodings Capstone rejects that we decode (information only).
    pub valid_vs_invalid: u64,
    /// All uncategorized disagreements, one line each, when the
    /// environment variable `ISA_DIFF_DUMP` names a file to write.
    pub dump: Vec<String>,
}

impl Report {
    fn add(&mut self, d: Diff) {
        let cat = categorize(&d);
        if cat.is_none() {
            let m = d.cs.as_ref().map_or("invalid".to_string(), |c| {
                let mut m = c.text.split(' ').next().unwrap_or("").to_string();
                if d.isa == Isa::A32 && d.enc >> 28 < 0xE && m.len() > 2 {
                    m.truncate(m.len() - 2); // condition suffix
                }
                m
            });
            let key = format!("{:?} {:?} ours={:?} cs={}", d.isa, d.field, d.ours.kind, m);
            self.groups.entry(key).or_insert((0, d.enc)).0 += 1;
        }
        if std::env::var_os("ISA_DIFF_DUMP").is_some() {
            self.dump.push(format!(
                "{:?} {:?} {:08x} {} {:?} {:?} unpred={} | {}",
                cat,
                d.isa,
                d.enc,
                d.t16,
                d.field,
                d.ours.kind,
                d.ours.unpredictable,
                d.cs.as_ref().map_or("invalid".to_string(), |c| format!(
                    "{} br={} dir={} link={} tgt={:?}",
                    c.text, c.branch, c.direct, c.link, c.target
                ))
            ));
        }
        let e = self.by_cat.entry(cat).or_default();
        e.0 += 1;
        if e.1.len() < 4 {
            e.1.push(d);
        }
    }

    pub fn uncategorized(&self) -> u64 {
        self.by_cat.get(&None).map_or(0, |e| e.0)
    }

    pub fn print(&self, name: &str) {
        if let Some(path) = std::env::var_os("ISA_DIFF_DUMP") {
            let mut p = std::path::PathBuf::from(path);
            // One file per sweep: first word of the name and its length.
            p.set_extension(format!(
                "{}{}",
                name.split(' ').next().unwrap_or("x"),
                name.len()
            ));
            std::fs::write(&p, self.dump.join("\n")).expect("dump");
        }
        println!("== {name}: {} encodings compared", self.compared);
        println!(
            "   (info: {} UNDEFINED here but decoded by Capstone, {} decoded here but rejected by Capstone)",
            self.undef_vs_valid, self.valid_vs_invalid
        );
        for (k, (n, e)) in &self.groups {
            println!("   group {k}: {n} (e.g. {e:08x})");
        }
        for (cat, (n, ex)) in &self.by_cat {
            match cat {
                Some(c) => println!("   {:?}: {n}", c),
                None => println!("   UNCATEGORIZED: {n}"),
            }
            for d in ex {
                println!(
                    "      {:?} {} {:?}: ours={:?}{} cs={}",
                    d.isa,
                    if d.isa == Isa::A32 || !d.t16 {
                        format!("{:08x}", d.enc)
                    } else {
                        format!("{:04x}", d.enc >> 16)
                    },
                    d.field,
                    d.ours.kind,
                    d.ours
                        .target
                        .map(|t| format!("->{:#x}", t.addr))
                        .unwrap_or_default(),
                    d.cs.as_ref()
                        .map(|c| format!(
                            "{:?} br={} dir={} link={} tgt={:?}",
                            c.text,
                            c.branch,
                            c.direct,
                            c.link,
                            c.target.map(|t| format!("{t:#x}"))
                        ))
                        .unwrap_or_else(|| "invalid".into())
                );
            }
        }
    }
}

/// Compare one instruction.
fn compare(r: &mut Report, isa: Isa, enc: u32, t16: bool, ours: Insn, cs: Option<CsView>) {
    r.compared += 1;
    let field = match &cs {
        None => {
            if ours.kind != isa_decode::Kind::Undefined {
                r.valid_vs_invalid += 1;
            }
            if ours.is_branch() {
                Some(Field::BranchButInvalid)
            } else {
                None
            }
        }
        Some(c) => {
            if ours.kind == isa_decode::Kind::Undefined {
                r.undef_vs_valid += 1;
                if std::env::var_os("ISA_DIFF_DUMP").is_some() && r.undef_vs_valid < 3000 {
                    r.dump
                        .push(format!("UNDEF {isa:?} {enc:08x} {t16} | {}", c.text));
                }
            }
            if c.len != ours.size {
                Some(Field::Size)
            } else if c.branch != ours.is_branch() {
                Some(Field::Branch)
            } else if !c.branch {
                None
            } else if c.direct != ours.is_direct() {
                Some(Field::Direct)
            } else if c.link != ours.link {
                Some(Field::Link)
            } else if c.direct && c.target != ours.target.map(|t| t.addr) {
                Some(Field::Target)
            } else {
                None
            }
        }
    };
    if let Some(field) = field {
        r.add(Diff {
            isa,
            enc,
            t16,
            field,
            ours,
            cs,
        });
    }
}

/// A small deterministic mixer (SplitMix64 finaliser) for filler bits.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Register-field values that matter for control flow.
const REGS: [u32; 4] = [0, 13, 14, 15];

/// All 65,536 first halfwords. A 16-bit encoding is compared in full; a
/// 32-bit prefix is given to Capstone alone and must be rejected (it is
/// not a complete instruction).
pub fn run_t16() -> Report {
    let cs = Oracle::new();
    let mut r = Report::default();
    for hw1 in 0..=u16::MAX {
        let addr = 0x0010_0000 + (u32::from(hw1) & 0x7E) * 2;
        let ours = decode_t32(hw1, 0, addr);
        let c = cs.t32(hw1, None, addr);
        if t32_size(hw1) == 4 {
            r.compared += 1;
            if c.is_some() {
                r.add(Diff {
                    isa: Isa::T32,
                    enc: u32::from(hw1) << 16,
                    t16: true,
                    field: Field::Size,
                    ours,
                    cs: c,
                });
            }
            continue;
        }
        compare(&mut r, Isa::T32, u32::from(hw1) << 16, true, ours, c);
    }
    r
}

/// Every value of bits 31..20 and 7..4, with Rn and Rd from {0, 13, 14,
/// 15}, and the remaining bits (11..8, 3..0) from `scale` patterns: fixed
/// 0 and all-ones, the register-like values 13/14/15, and mixed bits.
pub fn run_a32(scale: u32) -> Report {
    let cs = Oracle::new();
    let mut r = Report::default();
    for top in 0u32..4096 {
        for op2 in 0u32..16 {
            for (k, (&rn, &rd)) in REGS
                .iter()
                .flat_map(|a| REGS.iter().map(move |b| (a, b)))
                .enumerate()
            {
                for s in 0..scale {
                    let h = mix(u64::from((top << 12) | (op2 << 8) | ((k as u32) << 4) | s));
                    let (mid, low) = match (s + k as u32) % 4 {
                        0 => ((h & 0xF) as u32, ((h >> 4) & 0xF) as u32),
                        1 => (0xF, 0xE),
                        2 => (0, (h & 0xF) as u32),
                        _ => (((h >> 8) & 0xF) as u32, 0xF),
                    };
                    let word =
                        (top << 20) | (rn << 16) | (rd << 12) | (mid << 8) | (op2 << 4) | low;
                    let addr = 0x0080_0000 + ((h >> 12) as u32 & 0xFFFC);
                    let ours = decode_a32(word, addr);
                    let c = cs.a32(word, addr);
                    compare(&mut r, Isa::A32, word, false, ours, c);
                }
            }
        }
    }
    r
}

/// Every 32-bit first halfword (0xE800..=0xFFFF) with second halfwords
/// covering all values of hw2 bits 15..12 (op1 of the branch space, Rt of
/// loads), register fields from {0, 13, 14, 15}, and `scale` fillers for
/// the other bits, including the hint and barrier values of bits 7..0.
pub fn run_t32(scale: u32) -> Report {
    let cs = Oracle::new();
    let mut r = Report::default();
    const LOW8: [u32; 8] = [0x00, 0x02, 0x03, 0x04, 0x4F, 0x5F, 0x6F, 0x1F];
    for hw1 in 0xE800u32..=0xFFFF {
        for top in 0u32..16 {
            for (k, &mid) in REGS.iter().enumerate() {
                for j in 0..4u32 {
                    for s in 0..scale {
                        let h = mix(u64::from(
                            (hw1 << 16) | (top << 12) | ((k as u32) << 8) | (j << 4) | s,
                        ));
                        let low = match (j + s) % 4 {
                            0 => (h & 0xFF) as u32,
                            1 => LOW8[(h & 7) as usize],
                            2 => ((h & 0xF0) as u32) | REGS[((h >> 8) & 3) as usize],
                            _ => 0xF0 | REGS[((h >> 8) & 3) as usize],
                        };
                        let hw2 = (top << 12) | (mid << 8) | low;
                        let addr = 0x0040_0000 + ((h >> 16) as u32 & 0xFFFE);
                        let ours = decode_t32(hw1 as u16, hw2 as u16, addr);
                        let c = cs.t32(hw1 as u16, Some(hw2 as u16), addr);
                        compare(&mut r, Isa::T32, (hw1 << 16) | hw2, false, ours, c);
                    }
                }
            }
        }
    }
    r
}

fn testdata(rel: &str) -> Option<Vec<u8>> {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/testdata/opencsd")
        .join(rel);
    std::fs::read(p).ok()
}

/// Walk `bytes` as T32 from `base`, instruction by instruction.
fn walk_t32(r: &mut Report, cs: &Oracle, bytes: &[u8], base: u32) {
    let hw: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let mut k = 0;
    while k + 1 < hw.len() {
        let addr = base.wrapping_add(2 * k as u32);
        let (hw1, hw2) = (hw[k], hw[k + 1]);
        let ours = decode_t32(hw1, hw2, addr);
        if ours.size == 2 {
            compare(
                r,
                Isa::T32,
                u32::from(hw1) << 16,
                true,
                ours,
                cs.t32(hw1, None, addr),
            );
        } else {
            let enc = (u32::from(hw1) << 16) | u32::from(hw2);
            compare(r, Isa::T32, enc, false, ours, cs.t32(hw1, Some(hw2), addr));
        }
        k += usize::from(ours.size / 2);
    }
}

/// Real code from the shared OpenCSD snapshots: the TC2 kernel image (a
/// Thumb-2 kernel) and the program image of the tc2-ptm-rstk-t32 snapshot
/// (mostly T32), both walked as T32 from their load addresses.
pub fn run_images() -> Option<Report> {
    let kernel = testdata("TC2/kernel_dump.bin")?;
    let code = testdata("tc2-ptm-rstk-t32/mem_Cortex-A15_0_1_RO_CODE.bin")?;
    let cs = Oracle::new();
    let mut r = Report::default();
    walk_t32(&mut r, &cs, &kernel, 0xC000_8000);
    walk_t32(&mut r, &cs, &code, 0x8000_0278);
    Some(r)
}
