//! Protocol-neutral core of the CoreSight program-trace toolkit.
//!
//! - [`frames`]: the CoreSight formatter-frame deformatter (and formatter)
//!   that splits a capture into per-trace-ID byte runs, keeping each byte's
//!   offset in the input file.
//! - [`demux`]: routes those runs to one packet parser per trace source.
//! - [`memory`]: memory images (raw binaries, snapshot dumps, ELF files)
//!   the decoder reads instructions from.

pub mod decode;
pub mod demux;
pub mod event;
pub mod frames;
pub mod memory;
