//! `perf_data` fuzz target: see `trace_fuzz::checks::perf_data`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| trace_fuzz::checks::perf_data(data));
