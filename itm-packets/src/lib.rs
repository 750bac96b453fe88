#![doc = include_str!("../README.md")]
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![forbid(unsafe_code)]

mod config;
mod decode;
mod display;
mod encoder;
mod error;
mod packet;
mod parser;

pub use config::Config;
pub use encoder::Encoder;
pub use error::{EncodeError, Error, ErrorKind};
pub use packet::{
    DataTrace, DataTraceKind, EventCounter, ExceptionAction, ExceptionName, ExceptionTrace,
    Extension, GlobalTimestamp, LocalTimestamp, Packet, PcSample, Stimulus, TimestampRelation,
};
pub use parser::{Item, Packets, Parser, Stats};
