//! Fuzz targets for the trace toolkit (a separate workspace, excluded from
//! the main one). The invariant checks live in [`checks`] so that the
//! stable smoke test in `trace-convert/tests/integration/fuzz_smoke.rs`
//! can replay the seed corpus through the very same code.

pub mod checks;
