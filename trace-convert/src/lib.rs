//! Decode CoreSight ETMv3 and PTM program trace and convert it into
//! listings, timelines, flame graphs and coverage.
//!
//! The `trace-convert` binary is a thin front end over this library.

pub mod input;
