#![doc = include_str!("../README.md")]
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

#[cfg(feature = "std")]
pub mod capture;
pub mod decode;
pub mod demux;
pub mod event;
pub mod frames;
pub mod memory;
pub mod per_id;
pub mod protocol;
pub mod source;
