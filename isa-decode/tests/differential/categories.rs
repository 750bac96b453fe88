//! The documented categories of disagreement with Capstone.
//!
//! Each category is recognised by a predicate on the encoding, on
//! Capstone's output (mnemonic, operands) and on the shape of the
//! disagreement; DIFFERENTIAL.md gives the ARM ARM reasoning for each and
//! the number of cases in every default sweep, which the tests check.

use isa_decode::{Isa, Kind};

use crate::sweep::{Diff, Field, Report};

/// A documented reason for a disagreement (see DIFFERENTIAL.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Capstone rejects an UNPREDICTABLE encoding that names the PC as a
    /// destination (or breaks a should-be field of a branch); we decode it
    /// as written and flag it.
    UnpredictableRejected,
    /// Base write-back to the PC (UNPREDICTABLE): Capstone decodes the
    /// load/store but does not report the PC as written.
    WritebackPcNotReported,
    /// MRRC/MRRC2 with Rt or Rt2 = PC (UNPREDICTABLE): Capstone marks the
    /// destination registers as read.
    MrrcPcDestination,
    /// RFE: Capstone does not report the PC write of the exception return.
    RfeNoPcWrite,
    /// Capstone decodes an ARMv8 (or ARMv8-M) encoding that ARMv7 leaves
    /// unallocated or UNPREDICTABLE.
    Armv8Encoding,
    /// T32 STRBT/STRHT with Rt = PC (UNPREDICTABLE): Capstone marks the
    /// stored register as written.
    StoreUnprivilegedPcSource,
}

impl Category {
    /// All categories, in documentation order.
    pub const ALL: [Category; 6] = [
        Category::UnpredictableRejected,
        Category::WritebackPcNotReported,
        Category::MrrcPcDestination,
        Category::RfeNoPcWrite,
        Category::Armv8Encoding,
        Category::StoreUnprivilegedPcSource,
    ];
}

/// ARMv8-A/R AArch32 and ARMv8-M mnemonics Capstone accepts without its
/// V8 mode (acquire/release, TT, non-secure branches, dot product,
/// floating-point additions).
const ARMV8: &[&str] = &[
    "lda", "ldab", "ldah", "ldaex", "ldaexb", "ldaexh", "ldaexd", "stl", "stlb", "stlh", "stlex",
    "stlexb", "stlexh", "stlexd", "tt", "ttt", "tta", "ttat", "bxns", "blxns", "vsdot.s8",
    "vudot.u8", "vmaxnm", "vminnm", "vmovx", "vins",
];

/// Capstone's mnemonic without an A32 condition suffix.
fn mnemonic(d: &Diff) -> String {
    let Some(c) = &d.cs else {
        return String::new();
    };
    let mut m = c.text.split(' ').next().unwrap_or("").to_string();
    if d.isa == Isa::A32 && d.enc >> 28 < 0xE && m.len() > 2 {
        m.truncate(m.len() - 2);
    }
    m
}

fn is_armv8(d: &Diff) -> bool {
    let m = mnemonic(d);
    if ARMV8.contains(&m.as_str()) || m.starts_with("vsel") || m.starts_with("vcvt") {
        return true;
    }
    // LDC2/STC2 on coprocessors 10 and 11: ARMv7 reserves those for the
    // floating-point extension, which has no "2" forms (UNDEFINED).
    let text = d.cs.as_ref().map_or("", |c| c.text.as_str());
    (m.starts_with("ldc2") || m.starts_with("stc2"))
        && (text.contains(" p10,") || text.contains(" p11,"))
        && d.ours.kind == Kind::Undefined
}

/// Capstone's text shows write-back to a PC base: `pc!` (LDM/STM),
/// `[pc]!`, `[pc, #imm]!`, or post-indexed `[pc], ...` (also with an
/// alignment, `[pc:0x40], r3`).
fn pc_writeback_text(d: &Diff) -> bool {
    let Some(c) = &d.cs else { return false };
    let t = c.text.as_str();
    if t.contains("pc!") {
        return true;
    }
    let Some(start) = t.find("[pc") else {
        return false;
    };
    let rest = &t[start..];
    let Some(end) = rest.find(']') else {
        return false;
    };
    matches!(rest[end + 1..].chars().next(), Some('!' | ','))
}

/// The category of a disagreement, or `None` if none applies.
pub fn categorize(d: &Diff) -> Option<Category> {
    let cs = d.cs.as_ref();
    if let Some(c) = cs {
        if is_armv8(d) && (d.ours.unpredictable || d.ours.kind == Kind::Undefined) {
            return Some(Category::Armv8Encoding);
        }
        let m = mnemonic(d);
        if d.field == Field::Branch && !c.branch {
            if d.ours.kind == Kind::ExceptionReturn && m.starts_with("rfe") {
                return Some(Category::RfeNoPcWrite);
            }
            if d.ours.kind == Kind::IndirectBranch && d.ours.unpredictable {
                if pc_writeback_text(d) {
                    return Some(Category::WritebackPcNotReported);
                }
                let rt = (d.enc >> 12) & 0xF;
                let rt2 = (d.enc >> 16) & 0xF;
                if m.starts_with("mrrc") && (rt == 15 || rt2 == 15) {
                    return Some(Category::MrrcPcDestination);
                }
            }
        }
        if d.field == Field::Branch
            && c.branch
            && !d.ours.is_branch()
            && d.isa == Isa::T32
            && !d.t16
            && (m == "strbt" || m == "strht")
            && (d.enc >> 12) & 0xF == 15
        {
            return Some(Category::StoreUnprivilegedPcSource);
        }
        return None;
    }
    if d.field == Field::BranchButInvalid && d.ours.unpredictable {
        return Some(Category::UnpredictableRejected);
    }
    None
}

/// The documented count of `cat` in the sweep `column` of the table in
/// DIFFERENTIAL.md.
fn documented(cat: Category, column: usize) -> Option<u64> {
    let md = include_str!("../../DIFFERENTIAL.md");
    let key = format!("| `{cat:?}` |");
    let line = md.lines().find(|l| l.starts_with(&key))?;
    let cell = line.split('|').nth(2 + column)?.trim().replace(',', "");
    cell.parse().ok()
}

/// Every category seen must be documented in DIFFERENTIAL.md; for a
/// default sweep (`column` = 0: T32 16-bit, 1: A32, 2: T32 32-bit) the
/// documented counts must match exactly.
pub fn check_documented(r: &Report, column: Option<usize>) {
    for (cat, (n, _)) in &r.by_cat {
        let Some(cat) = cat else { continue };
        let doc = documented(*cat, column.unwrap_or(0));
        assert!(
            doc.is_some(),
            "{cat:?} is not documented in DIFFERENTIAL.md"
        );
        if let Some(col) = column {
            assert_eq!(
                documented(*cat, col),
                Some(*n),
                "{cat:?}: count differs from DIFFERENTIAL.md"
            );
        }
    }
    if let Some(col) = column {
        for cat in Category::ALL {
            let seen = r.by_cat.get(&Some(cat)).map_or(0, |e| e.0);
            assert_eq!(
                documented(cat, col),
                Some(seen),
                "{cat:?}: DIFFERENTIAL.md documents a different count"
            );
        }
    }
}
