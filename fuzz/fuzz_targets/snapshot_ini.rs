//! `snapshot_ini` fuzz target: see `trace_fuzz::checks::snapshot_ini`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| trace_fuzz::checks::snapshot_ini(data));
