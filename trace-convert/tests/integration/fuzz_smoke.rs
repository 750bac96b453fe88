//! Fuzz smoke test: replays the committed seed corpus of every fuzz target
//! (`fuzz/corpus/<target>/`) through the same invariant checks the
//! libFuzzer targets run (`fuzz/src/checks.rs`, included here), so that
//! `cargo test` on stable exercises them without libFuzzer or nightly.

#[path = "../../../fuzz/src/checks.rs"]
#[allow(dead_code)]
mod checks;

use std::path::PathBuf;

/// Replays every file of `fuzz/corpus/<target>/` through `check`, plus a
/// few fixed edge-case inputs; returns how many corpus files there were.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    for fixed in [&[][..], &[0u8; 64][..], &[0xFFu8; 64][..]] {
        check(fixed);
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    files.sort();
    for f in &files {
        let data = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        eprintln!("{target}: {}", f.display());
        check(&data);
    }
    assert!(!files.is_empty(), "no seed corpus in {}", dir.display());
    files.len()
}

#[test]
fn etm_parser_corpus() {
    replay("etm_parser", checks::etm_parser);
}

#[test]
fn ptm_parser_corpus() {
    replay("ptm_parser", checks::ptm_parser);
}

#[test]
fn itm_parser_corpus() {
    replay("itm_parser", checks::itm_parser);
}

#[test]
fn deformatter_corpus() {
    replay("deformatter", checks::deformatter);
}

#[test]
fn snapshot_ini_corpus() {
    replay("snapshot_ini", checks::snapshot_ini);
}

#[test]
fn decoder_corpus() {
    replay("decoder", checks::decoder);
}

#[test]
fn perf_data_corpus() {
    replay("perf_data", checks::perf_data);
}
