//! Decode CoreSight ETMv3 and PTM program trace and convert it into
//! listings, timelines, flame graphs and coverage.
//!
//! The `trace-convert` binary is a thin front end over this library:
//! [`input`] resolves snapshot directories and capture files,
//! [`packets`] reads captures into packets and lists them.

pub mod decode;
pub mod input;
pub mod output;
pub mod packets;
