//! `itm_parser` fuzz target: see `trace_fuzz::checks::itm_parser`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| trace_fuzz::checks::itm_parser(data));
