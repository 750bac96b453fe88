//! Decode CoreSight ETMv3 and PTM program trace and convert it into
//! listings, timelines, flame graphs and coverage.
//!
//! The `trace-convert` binary is a thin front end over this library:
//! [`input`] resolves snapshot directories and capture files,
//! [`packets`] reads captures into packets and lists them,
//! [`convert`] decodes once and feeds every event to [`sink`]s (Chrome
//! JSON, Perfetto, LCOV, folded stacks, saved events) with the call stacks
//! of [`callstack`], the time of [`clock`] and the names of [`symbols`].

pub mod callstack;
pub mod chrome;
pub mod clock;
pub mod convert;
pub mod decode;
pub mod folded;
pub mod formats;
pub mod input;
pub mod output;
pub mod packets;
pub mod progress;
pub mod sink;
pub mod symbols;
