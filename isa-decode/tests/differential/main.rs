//! Differential test against Capstone 5 (through the `capstone` crate).
//!
//! Every disagreement on size, branch/non-branch, direct/indirect, link or
//! direct target must fall into one of the categories of
//! `differential/categories.rs`, each documented with its ARM ARM reasoning
//! in `DIFFERENTIAL.md`. The test fails on any uncategorized disagreement.

mod categories;
mod oracle;
mod sweep;

use sweep::{run_a32, run_t16, run_t32, Report};

fn finish(name: &str, r: &Report, column: Option<usize>) {
    r.print(name);
    assert_eq!(r.uncategorized(), 0, "{name}: uncategorized disagreements");
    categories::check_documented(r, column);
}

#[test]
fn thumb16_exhaustive() {
    let r = run_t16();
    assert_eq!(r.compared, 65_536);
    finish("T32 16-bit, all 65,536 encodings", &r, Some(0));
}

#[test]
fn a32_sweep() {
    let r = run_a32(1);
    assert!(r.compared >= 1 << 20, "{}", r.compared);
    finish("A32 structured sweep", &r, Some(1));
}

#[test]
fn t32_32bit_sweep() {
    let r = run_t32(1);
    assert!(r.compared >= 1 << 20, "{}", r.compared);
    finish("T32 32-bit structured sweep", &r, Some(2));
}

#[test]
#[ignore = "large: run with --release -- --ignored"]
fn a32_sweep_large() {
    let r = run_a32(8);
    finish("A32 structured sweep (large)", &r, None);
}

#[test]
#[ignore = "large: run with --release -- --ignored"]
fn t32_32bit_sweep_large() {
    let r = run_t32(8);
    finish("T32 32-bit structured sweep (large)", &r, None);
}

/// Real code: the Thumb-2 kernel image and the program image of the shared
/// OpenCSD snapshots (skipped when `../shared` is not beside the checkout).
#[test]
fn real_code_images() {
    let Some(r) = sweep::run_images() else {
        eprintln!("shared/testdata/opencsd not found: skipped");
        return;
    };
    assert!(r.compared > 80_000, "{}", r.compared);
    finish(
        "real code images (TC2 kernel and rstk program, T32)",
        &r,
        Some(3),
    );
}
