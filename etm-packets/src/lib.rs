#![doc = include_str!("../README.md")]
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
