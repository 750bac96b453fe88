//! `deformatter` fuzz target: see `trace_fuzz::checks::deformatter`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| trace_fuzz::checks::deformatter(data));
