//! `etm_parser` fuzz target: see `trace_fuzz::checks::etm_parser`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| trace_fuzz::checks::etm_parser(data));
