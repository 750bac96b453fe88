#![doc = include_str!("../README.md")]
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
