//! Output formats written from decoded events: Perfetto traces, LCOV
//! tracefiles, the coverage accumulator behind them, and the saved-events
//! file that lets a later run convert without decoding again.
//!
//! - [`perfetto`]: a streaming writer of Perfetto's protobuf trace format
//!   (tracks, nested slices, instants, counters).
//! - [`lcov`]: the LCOV tracefile model and its writer.
//! - [`coverage`]: per-instruction reach and condition counts from
//!   [`Range`](trace_core::event::Range) events, turned into an LCOV model.
//! - [`events_file`]: a compact binary file of decoded events with a header
//!   describing where they came from.

pub mod coverage;
pub mod events_file;
pub mod lcov;
pub mod perfetto;
