//! Decode CoreSight ETMv3 and PTM program trace and convert it into
//! listings, timelines, flame graphs and coverage.
//!
//! The `trace-convert` binary is a thin front end over this library:
//! [`input`] resolves snapshot directories and capture files,
//! [`packets`] reads captures into packets and lists them,
//! [`convert`] decodes once and feeds every event to [`sinks`] (Chrome
//! JSON, Perfetto, LCOV, folded stacks, saved events) with the call stacks
//! of [`callstack`], the time of [`clock`] and the names of [`symbols`].
//! Every output format, the listings included, lives under [`sinks`],
//! listed once in [`sinks::registry`].

pub mod callstack;
pub mod clock;
pub mod convert;
pub mod decode;
pub mod fast_map;
pub mod input;
pub mod output;
pub mod packets;
pub mod progress;
pub mod sinks;
pub mod symbols;
