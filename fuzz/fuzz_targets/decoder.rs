//! `decoder` fuzz target: see `trace_fuzz::checks::decoder`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| trace_fuzz::checks::decoder(data));
