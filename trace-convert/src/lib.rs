#![doc = include_str!("../README.md")]

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
