//! Parser and encoder for PTM trace: the Program Flow Trace (PFT) protocol,
//! versions 1.0 and 1.1 (ARM IHI 0035B), as emitted by the Cortex-A9,
//! Cortex-A15 and similar Program Trace Macrocells.
//!
//! * [`Config`] says how the PTM was programmed (cycle-accurate, context ID
//!   size, timestamp width, …), from ETMCR/ETMCCER/ETMIDR values or a
//!   builder.
//! * [`Parser`] is a pull parser: [`Parser::feed`] a chunk, iterate the
//!   `(offset, Packet)` items. Packets split across chunks are completed
//!   from a fixed buffer; the items do not depend on the chunk boundaries.
//! * [`Packet`] is a small `Copy` enum of valid packets, with the compressed
//!   fields already expanded (full branch addresses and timestamps).
//!   Problems are [`Error`]s carrying the byte offset.
//! * [`Encoder`] turns packets back into bytes, keeping the compression
//!   state like a PTM, and builds minimal packets for a target.
//!
//! The crate is `no_std` (the default `std` feature only adds
//! `std::error::Error` impls), has no dependencies and does not allocate.
//!
//! ```
//! use ptm_packets::{Config, Packet, Parser};
//!
//! // Cortex-A15 PTM, return stack enabled (ETMCR, ETMCCER, ETMIDR).
//! let cfg = Config::from_regs(0x2000_0400, 0x34C0_1AC2, 0x411C_F312).unwrap();
//! let trace = [
//!     0x00, 0x00, 0x00, 0x00, 0x00, 0x80, // A-sync
//!     0x08, 0x54, 0x05, 0x00, 0x80, 0x61, // I-sync: 0x80000554, ARM, debug exit
//!     0x84, // atom: E
//!     0xad, 0x05, // branch to 0x80000558
//! ];
//! let mut parser = Parser::new(cfg);
//! for item in parser.feed(&trace) {
//!     let (offset, packet) = item.expect("valid trace");
//!     println!("{offset:5} {packet}");
//! }
//! assert_eq!(parser.finish(), None);
//! assert_eq!(parser.stats().packets, 4);
//! ```
//!
//! # Behaviour worth knowing
//!
//! * Offsets are absolute byte offsets of a packet's first byte; for
//!   CoreSight-formatted input give each source's bytes with
//!   [`Parser::feed_at`] and the offsets OpenCSD prints as `Idx` come out.
//! * After an A-sync every packet is returned; the parser does not wait for
//!   an I-sync (OpenCSD's packet processor does not either). Compressed
//!   branch addresses before the first I-sync are relative to address 0,
//!   ARM state.
//! * Conformance: on the two real PTM captures shipped with OpenCSD
//!   (tc2-ptm-rstk-t32, 20,072 packets; TC2 trace ID 0x13, cycle-accurate
//!   with timestamps, 1,789 packets) every packet agrees with OpenCSD
//!   v1.8.0's listing by value (`tests/opencsd.rs`).
//!
//! # Where this crate and OpenCSD differ
//!
//! None of these cases occurs in the captures above.
//!
//! * **Waypoint updates do not move the compression base.** PFT B.3.2
//!   (`analyze_waypoint_update`) only reads `LastState.address` to expand
//!   the waypoint address, while `branch_no_excp` and `branch_with_excp`
//!   explicitly update it; OpenCSD also updates it on waypoint updates.
//! * **Atom headers `0x80` and `0x82` are reserved** when not cycle-accurate.
//!   Non cycle-accurate atom headers carry a stop bit above the atoms (the
//!   PTM emits `0x84` for one E atom, `0x88`–`0x8e` for two atoms, …), so
//!   these two headers hold no atom count; OpenCSD reads them as one atom.
//! * **AltISA is state.** The AltISA bit of an I-sync or of exception
//!   information persists until the next one, so a later Thumb-format
//!   branch without exception information stays in ThumbEE. OpenCSD keeps
//!   the bit of the last exception information only and ignores the
//!   I-sync's.
//! * An I-sync with the T bit clear and AltISA set (never generated: PFT
//!   does not trace Jazelle code) is reported as Jazelle; OpenCSD reports ARM.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod config;
mod context;
mod decode;
mod display;
mod encoder;
mod error;
mod packet;
mod parser;

pub use config::{Config, ConfigError, ContextIdSize, PftVersion};
pub use encoder::Encoder;
pub use error::{EncodeError, Error, ErrorKind, Field};
pub use packet::{
    exception_name, Atom, Atoms, BranchAddress, ExceptionInfo, ISync, ISyncReason, Isa, Packet,
    Timestamp, WaypointUpdate, MAX_PACKET_LEN,
};
pub use parser::{Packets, Parser, Stats};
