//! The decoding threads the user chose: the environment variable
//! `TRACE_CONVERT_JOBS=N` sets their number (1: the calling thread only),
//! for captures of any size; without it, all available threads decode
//! captures of 4 MiB and more.

use trace_core::capture::DecodeOptions;

/// The environment variable that sets the number of decoding threads.
const JOBS: &str = "TRACE_CONVERT_JOBS";

/// The decode options the environment asks for.
pub(crate) fn decode_options() -> DecodeOptions {
    let chosen = std::env::var(JOBS)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0);
    match chosen {
        Some(n) => DecodeOptions::chosen_jobs(n),
        None => DecodeOptions::default(),
    }
}
