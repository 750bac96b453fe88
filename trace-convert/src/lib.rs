#![doc = include_str!("../README.md")]

pub mod callstack;
pub mod clock;
pub mod convert;
pub mod escape;
pub mod fast_map;
pub mod hint;
pub mod input;
pub mod output;
pub mod plural;
pub mod profile;
pub mod progress;
pub mod sinks;
pub mod symbols;
pub mod tasks;
#[cfg(test)]
mod test_events;
pub mod window;
