//! Trace protocols as plug-ins: one seam ([`PacketProtocol`]) that each
//! protocol implements in a module of its own ([`etm`], [`ptm`], [`itm`]), and one
//! registry ([`registry`]) that makes the closed types of the rest of the
//! toolkit from the list of protocols: [`Protocol`], [`SourceConfig`],
//! [`AnyPacket`], [`PacketError`], [`RegsError`], the demultiplexer's
//! parsers and the decoder's per-source state.
//!
//! Through the seam, a protocol gives
//!
//! - its **configuration** from registers ([`Regs`]: a snapshot
//!   device's, a perf.data recording's, or the flags of a capture file)
//!   and its names (listing name, `--protocol` value, snapshot device
//!   types);
//! - its **packet parser** (resumable, fed payload runs at their offsets,
//!   with counters and end-of-capture errors), which the demultiplexer
//!   runs for every trace ID of the protocol;
//! - the **listing** of its packets: their JSON Lines fields and the fast
//!   form of their text lines, through [`FieldWriter`] and
//!   [`TextWriter`];
//! - how its packets become **events**: instruction trace lowers them into
//!   the engine's [`TraceOp`](crate::decode::TraceOp)s (ETMv3, PTM);
//!   another protocol makes its events itself.
//!
//! Adding one is described in the crate's README ("Adding a protocol").

pub mod etm;
mod fields;
pub mod itm;
pub mod ptm;
pub mod registry;
mod regs;
mod seam;
mod shape;

pub use crate::decode::op::Atoms;
pub use fields::{FieldWriter, TextWriter};
pub use registry::{AnyPacket, PacketError, Protocol, RegsError, SourceConfig};
pub use regs::{etm_device_regs, Regs};
pub use seam::{PacketProtocol, SourceStats};
