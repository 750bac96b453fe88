//! Protocol-neutral core of the CoreSight program-trace toolkit.
//!
//! - [`frames`]: the CoreSight formatter-frame deformatter (and formatter)
//!   that splits a capture into per-trace-ID byte runs, keeping each byte's
//!   offset in the input file.
//! - [`demux`]: routes those runs to one packet parser per trace source.
//! - [`memory`]: memory images (raw binaries, snapshot dumps, ELF files)
//!   the decoder reads instructions from.
//!
//! # Without `std`
//!
//! The default `std` feature adds what needs an operating system: loading
//! memory images from files (`MemoryMap::add_file`, `MemoryMap::add_elf`,
//! mapped files) and the errors that name a file's path. Without it the
//! crate is `no_std` and needs only `alloc` (a global allocator), as on a
//! Cortex-M probe (`thumbv7em-none-eabihf`). All the rest works the same:
//! the frame deformatter and formatter, the demultiplexer, the decoder
//! (engine, block cache, return stack, lowering of both protocols), the
//! event vocabulary, the [`memory::MemoryImage`] trait and the in-memory
//! [`memory::MemoryMap`] of [`memory::Region`]s cut from buffers. The
//! `serde` feature works with or without `std`.

#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

pub mod decode;
pub mod demux;
pub mod event;
pub mod frames;
pub mod memory;
