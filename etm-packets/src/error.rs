//! Errors of the parser and of the encoder.

use core::fmt;

/// A parse error: what went wrong and at which byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Error {
    /// Absolute offset of the first byte concerned (for packet errors, the
    /// packet's header byte; for [`ErrorKind::Unsynchronized`], the first
    /// skipped byte).
    pub offset: u64,
    /// What went wrong.
    pub kind: ErrorKind,
}

/// What went wrong while parsing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `len` bytes were skipped while looking for an A-sync sequence
    /// (before the first A-sync, or after an invalid packet). Reported once
    /// per unsynchronized stretch, when synchronization is found or at
    /// [`Parser::finish`](crate::Parser::finish).
    Unsynchronized {
        /// Number of bytes skipped.
        len: u64,
    },
    /// The header byte is reserved (in this configuration and version, e.g.
    /// a format 4 P-header before ETMv3.3).
    ReservedHeader {
        /// The header byte.
        header: u8,
    },
    /// A data trace header (normal data, out-of-order data or
    /// placeholder, store failed, data suppressed, value not traced) in a
    /// stream whose configuration (ETMCR) traces no data, or no data
    /// values for the headers that carry one: the stream is damaged or the
    /// configuration is wrong.
    DataTraceOff {
        /// The header byte.
        header: u8,
    },
    /// A field inside the packet holds a reserved or invalid value.
    InvalidField {
        /// The packet's header byte.
        header: u8,
        /// Which field, in a few words.
        field: &'static str,
    },
    /// A run of `0x00` bytes was not a valid A-sync sequence (fewer than
    /// five zeros before `0x80`, or ended by another byte).
    BadASync {
        /// Number of `0x00` bytes seen.
        zeros: u64,
    },
    /// The input ended inside a packet.
    Truncated {
        /// The packet's header byte.
        header: u8,
        /// Number of bytes of the packet that were present.
        len: usize,
    },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Unsynchronized { len } => {
                write!(
                    f,
                    "{len} byte(s) skipped while not synchronized (no A-sync)"
                )
            }
            Self::ReservedHeader { header } => write!(f, "reserved header byte 0x{header:02x}"),
            Self::DataTraceOff { header } => write!(
                f,
                "data trace header 0x{header:02x}, but the configuration traces no data"
            ),
            Self::InvalidField { header, field } => {
                write!(f, "invalid {field} in packet with header 0x{header:02x}")
            }
            Self::BadASync { zeros } => {
                write!(f, "malformed A-sync sequence after {zeros} zero byte(s)")
            }
            Self::Truncated { header, len } => write!(
                f,
                "input ends inside a packet (header 0x{header:02x}, {len} byte(s) present)"
            ),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.kind)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}

/// An encoding error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EncodeError {
    /// The output buffer is too small; `needed` bytes are required.
    BufferTooSmall {
        /// Bytes the packet needs.
        needed: usize,
    },
    /// The packet cannot be expressed in this configuration or version
    /// (e.g. a value too wide for its field, a ThumbEE state before
    /// ETMv3.3, a misaligned ARM address).
    Unrepresentable {
        /// What cannot be expressed, in a few words.
        what: &'static str,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            Self::Unrepresentable { what } => write!(f, "cannot encode packet: {what}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for EncodeError {}
