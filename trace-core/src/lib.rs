#![doc = include_str!("../README.md")]
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

pub mod decode;
pub mod demux;
pub mod event;
pub mod frames;
pub mod memory;
