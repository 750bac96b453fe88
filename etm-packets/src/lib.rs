//! ETMv3.0–ETMv3.5 trace packets: a resumable pull parser and an encoder
//! (ARM IHI 0014Q, *Embedded Trace Macrocell Architecture Specification*,
//! chapter 7 "ETMv3 Signal Protocol").
//!
//! - [`Config`] says how the ETM was programmed (from the ETMCR, ETMCCER
//!   and ETMIDR values, or built by hand).
//! - [`Parser`] turns bytes into [`Packet`]s. Feed it chunks of any size
//!   with [`Parser::feed`] (or [`Parser::feed_at`] for input whose chunks
//!   lie at known offsets) and iterate; each item is the absolute offset of
//!   the packet's first byte and the packet, or an [`Error`]. The item
//!   sequence is the same whatever the chunk boundaries.
//! - [`Encoder`] turns packets back into bytes, compressing branch
//!   addresses, data addresses and timestamps as an ETM does.
//!
//! The crate is `no_std` (the default `std` feature only adds
//! `std::error::Error` impls), allocates nothing and has no dependencies.
//!
//! # Example
//!
//! ```
//! use etm_packets::{Config, Isa, Packet, Parser};
//!
//! // Registers of the Cortex-A7 ETMs in ARM's TC2 snapshot: cycle-accurate,
//! // timestamps on, ETMv3.5.
//! let cfg = Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250)?;
//! let mut parser = Parser::new(cfg);
//!
//! let trace = [
//!     0x00, 0x00, 0x00, 0x00, 0x00, 0x80, // A-sync
//!     0x08, 0x01, 0x5d, 0x11, 0x02, 0xc0, // I-sync, periodic, Thumb 0xc002115c
//!     0x84, // P-header: W E
//!     0xb7, 0xfd, 0xd6, 0x01, // branch to 0xc035beb6
//! ];
//! // Feed in two pieces: the split inside the branch packet is invisible.
//! let mut packets = Vec::new();
//! for chunk in [&trace[..15], &trace[15..]] {
//!     for item in parser.feed(chunk) {
//!         packets.push(item?);
//!     }
//! }
//! assert_eq!(parser.finish(), None);
//!
//! assert_eq!(packets[0], (0, Packet::ASync));
//! let Packet::ISync(sync) = packets[1].1 else { panic!() };
//! assert_eq!((sync.address(), sync.isa()), (0xc002_115c, Isa::Thumb));
//! assert_eq!(packets[2].1.to_string(), "P-header WE (1 instruction, 1 cycle)");
//! let (offset, Packet::Branch(branch)) = packets[3] else { panic!() };
//! assert_eq!((offset, branch.address, branch.bits), (13, 0xc035_beb6, 28));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Notes on the protocol
//!
//! - Synchronization: the parser starts unsynchronized and looks for an
//!   A-sync (five or more `0x00` bytes then `0x80`; every zero of the run
//!   belongs to the A-sync packet). Skipped bytes are reported as one
//!   [`ErrorKind::Unsynchronized`] item. After an invalid packet (reserved
//!   header or field) the parser reports it and looks for the next A-sync,
//!   rescanning the bytes after the invalid header.
//! - Like OpenCSD's packet listing, packets between an A-sync and the first
//!   I-sync are returned; compressed branch addresses there are merged
//!   with whatever address the parser last knew (0 at the start).
//! - Data value sizes: the SS field of data headers is decoded as 0, 1, 2
//!   or 4 value bytes (`b00` = value 0, no bytes); the value bytes follow
//!   the data address and are present only when data value tracing is on.
//!   The encoder writes the size it is given (it does not drop leading
//!   zero bytes).
//! - The deprecated "exception in address bytes" form of the original
//!   branch encoding (bit 7 set in the fifth address byte, `b1 C EEE AAA`)
//!   is decoded as OpenCSD does: ARM state, address bits \[31:29\] in
//!   `AAA`, the Cancel bit in bit 6 and a three-bit exception code (0
//!   reset, 1 IRQ, 4 Jazelle, 5 FIQ, 6 asynchronous data abort, 7 halting
//!   debug), reported as [`ExceptionInfo::number`] in the numbering of the
//!   exception information bytes (8, 14, 5, 15, 4, 1). Nothing follows
//!   that byte; NS, Hyp and AltISA are unchanged. Codes 2 and 3
//!   (reserved), and bit 7 set under the alternative encoding, are
//!   [`ErrorKind::InvalidField`]. The encoder always uses exception
//!   information bytes.
//! - Data-only I-sync packets (ETMCR\[20\]) carry a context ID and an
//!   information byte but no address. A `0x70` header in data-only mode
//!   is read as the same form preceded by a cycle count.
//! - Exception information bytes: byte 0 is `C AltISA Cancel Exc[3:0] NS`;
//!   byte 1 (bit 6 clear) is `C 0 Hyp Exc[8:4]`; byte 2 (bit 6 set, may
//!   follow byte 0 directly) is `0 1 x x Resume[3:0]`. In the original
//!   encoding they follow only a five-byte address (bit 6 of its last
//!   byte); in the alternative encoding (ETMIDR\[20\], ETMv3.4+) bit 6 of
//!   the last byte of a 2-4 byte address announces them too. When absent,
//!   the security state, Hyp mode and AltISA state are unchanged (Hyp
//!   also when byte 1 is absent). A one-byte address never carries them.
//! - The LSiP address of an I-sync carries no exception information bytes
//!   (table 7.1 bounds the I-sync payload at 14 bytes, 19 with a cycle
//!   count); they are reported as [`ErrorKind::InvalidField`].
//! - Timestamps have no cycle-count variant in ETMv3 (unlike PFT); they are
//!   1-7 bytes (48-bit) or 1-9 bytes (64-bit) of seven value bits and a
//!   continuation bit, the last possible byte holding the remaining six
//!   (48-bit) or eight (64-bit) value bits, compressed against the
//!   previous timestamp and Gray-decoded when ETMCCER\[28\] is 0.
//! - The I-sync information byte's bit 0 is ignored when parsing and
//!   written as 1 when encoding (real ETMs, e.g. the TC2 Cortex-A7s, set it).
//!
//! # Performance
//!
//! The iterator's fast path returns a P-header from a 128-entry table with
//! a few instructions; common compressed branch addresses are decoded from
//! one 8-byte load; other packets are decoded straight from the chunk. The
//! carry-over buffer is used only for a packet split across chunks. See
//! `benches/parse.rs`.
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![forbid(unsafe_code)]

mod config;
mod decode;
mod display;
mod encoder;
mod error;
mod header;
mod packet;
mod parser;
mod state;

pub use config::{Config, ConfigError, ContextIdSize, EtmVersion};
pub use encoder::Encoder;
pub use error::{EncodeError, Error, ErrorKind};
pub use packet::{
    Atom, AtomIter, Atoms, Branch, ExceptionInfo, ISync, Isa, LsipAddress, NormalData,
    OutOfOrderData, OutOfOrderPlaceholder, PHeaderFormat, Packet, Reason, Timestamp,
    ValueNotTraced,
};
pub use parser::{Item, Packets, Parser, Stats};
