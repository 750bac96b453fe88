//! Conformance on third-party captures (`../shared/testdata/real`): TI
//! AM243x Cortex-R5F ETMv3.3 snapshots with OpenCSD v1.8.0 listings
//! (`expected/<name>.ppl.xz`, `expected/<name>-decode.ppl.xz`).
//!
//! Unlike the lab captures these are not all decodable the same way by
//! both decoders, so the comparison pairs what can be paired and sorts
//! every difference into a named category; a capture fails when its
//! figure falls below the floor recorded for it in [`CASES`].

use crate::listing::read_text;
use crate::real_categories;
use crate::real_decode;
use crate::real_packets;
use std::path::Path;

/// The folder of the captures below `testdata/real`.
const FOLDER: &str = "am243x-r5f";

/// The trace ID of the ETM in every capture.
const TRACE_ID: u8 = 0x10;

/// What the decoder should reach on every capture: the share of
/// OpenCSD's instructions that we decode the same.
const GOAL_PERCENT: f64 = 99.9;

/// One capture and the floors it must not fall below (today's figures;
/// raise them as the decoder improves).
struct Case {
    name: &'static str,
    /// Packets of OpenCSD's listing that must match.
    min_packets: usize,
    /// Share of OpenCSD's instructions that must be matched, in percent.
    min_insns_percent: f64,
    /// Most instructions of ours that may have no match in OpenCSD's.
    max_ours_only: usize,
}

const CASES: &[Case] = &[
    Case {
        name: "002b37c-freertos",
        min_packets: 41_306,
        min_insns_percent: 99.999,
        max_ours_only: 0,
    },
    Case {
        name: "002b37c-zephyr",
        min_packets: 24_306,
        min_insns_percent: 99.328,
        max_ours_only: 1,
    },
    Case {
        name: "b8b29a1-threadx",
        min_packets: 51_114,
        min_insns_percent: 99.999,
        max_ours_only: 3_448,
    },
    Case {
        name: "ce42d22-freertos",
        min_packets: 44_460,
        min_insns_percent: 98.391,
        max_ours_only: 5,
    },
];

/// The captures' folder, or `None` when it is absent outside CI.
fn captures(dir: &Path) -> Result<Option<std::path::PathBuf>, String> {
    let dir = dir.join(FOLDER);
    if dir.is_dir() {
        return Ok(Some(dir));
    }
    if std::env::var_os("CI").is_some() {
        return Err(format!("{} is missing (CI is set)", dir.display()));
    }
    eprintln!("conformance: {} not found, skipped", dir.display());
    Ok(None)
}

/// Packets of every capture against OpenCSD's packet listing.
///
/// # Errors
///
/// When a capture or listing cannot be read, or a capture matches fewer
/// packets than its floor.
pub fn run_packets(dir: &Path, verbose: bool) -> Result<(), String> {
    let Some(dir) = captures(dir)? else {
        return Ok(());
    };
    let mut failures = Vec::new();
    for case in CASES {
        let text = read_text(&dir.join(format!("expected/{}.ppl.xz", case.name)))?;
        let f = real_packets::compare_capture(&dir.join(case.name), &text)?;
        let ok = f.matched >= case.min_packets;
        println!(
            "{:<18} {} of {} OpenCSD packets matched ({:.3}%, floor {}, goal all), ours {}{}",
            case.name,
            f.matched,
            f.listed,
            percent(f.matched, f.listed),
            case.min_packets,
            f.ours,
            if ok { "  OK" } else { "  FAIL" }
        );
        for (category, (count, example)) in &f.categories {
            println!("    {count:>6}  {category}");
            if verbose {
                println!("      e.g. {example}");
            }
        }
        if !ok {
            failures.push(format!(
                "{}: {} packets matched, floor {}",
                case.name, f.matched, case.min_packets
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

#[allow(clippy::cast_precision_loss)]
fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        100.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Decoded instructions of every capture against OpenCSD's decode listing.
///
/// # Errors
///
/// When a capture or listing cannot be read, or a capture's matched share
/// falls below its floor or it has more unmatched instructions of ours
/// than allowed.
pub fn run_decode(dir: &Path, verbose: bool) -> Result<(), String> {
    let Some(dir) = captures(dir)? else {
        return Ok(());
    };
    let mut failures = Vec::new();
    for case in CASES {
        let text = read_text(&dir.join(format!("expected/{}-decode.ppl.xz", case.name)))?;
        let (ours, mem) = real_decode::decode_ours(&dir.join(case.name), TRACE_ID)?;
        let listed = real_decode::parse_listing(&text, TRACE_ID, &*mem);
        let al = real_decode::compare(&listed, &ours);
        let matched = al.matched.len();
        let theirs_n = listed.side.insns.len();
        let ours_only = ours.insns.len() - matched;
        let share = percent(matched, theirs_n);
        let ok = share >= case.min_insns_percent && ours_only <= case.max_ours_only;
        println!(
            "{:<18} {matched} of {theirs_n} OpenCSD instructions matched ({share:.4}%, floor {:.3}%, \
             goal {GOAL_PERCENT}%), ours {} ({ours_only} unmatched, at most {}){}",
            case.name,
            case.min_insns_percent,
            ours.insns.len(),
            case.max_ours_only,
            if ok { "  OK" } else { "  FAIL" }
        );
        println!("    OpenCSD   ours  unmatched instructions by category");
        for (category, (t, o, h)) in real_categories::tally(&listed, &ours, &al.hunks, &*mem) {
            println!("    {t:>7} {o:>6}  {category}");
            if verbose {
                print_hunk(&listed.side, &ours, &h);
            }
        }
        for m in real_decode::compare_marks(&listed, &ours) {
            println!(
                "    {}: {} of {} OpenCSD's matched, ours {} ({} before the first I-sync)",
                m.kind, m.matched, m.listed, m.ours, m.ours_before_isync
            );
        }
        if !ok {
            failures.push(format!(
                "{}: {share:.3}% of OpenCSD's instructions matched (floor {:.3}%), \
                 {ours_only} of ours unmatched (at most {})",
                case.name, case.min_insns_percent, case.max_ours_only
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// The instructions of a hunk and two on each side of it.
fn print_hunk(theirs: &real_decode::Side, ours: &real_decode::Side, h: &crate::align::Hunk) {
    for (name, side, r) in [("OpenCSD", theirs, &h.theirs), ("ours", ours, &h.ours)] {
        let from = r.start.saturating_sub(2);
        let to = (r.end + 2).min(side.insns.len());
        for k in from..to {
            for m in side.marks_between(k, k).iter().filter(|m| m.at == k) {
                println!("        {name:<7}           Idx {:>6}  {:?}", m.idx, m.kind);
            }
            let i = side.insns[k];
            println!(
                "        {name:<7} {} {:08x} {} {} Idx {:>6}",
                if r.contains(&k) { '*' } else { ' ' },
                i.addr,
                if i.thumb { "T32" } else { "A32" },
                if i.executed { 'E' } else { 'N' },
                side.idx[k]
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both comparisons on the third-party captures hold their floors:
    /// skipped with a message when the test data is absent, failing when
    /// `CI` is set.
    #[test]
    fn third_party_captures_hold_their_floors() {
        let dir = test_support::real_path();
        assert_eq!(run_packets(&dir, false), Ok(()));
        assert_eq!(run_decode(&dir, false), Ok(()));
    }
}
