//! Errors of the parser and of the encoder.

use core::fmt;

/// A parse error: what went wrong and at which byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Error {
    /// Absolute offset of the first byte concerned: the packet's header
    /// byte, or the first skipped byte for
    /// [`ErrorKind::Unsynchronized`] and the first zero for
    /// [`ErrorKind::BadSync`].
    pub offset: u64,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    /// Number of input bytes the error accounts for (skipped, not part of
    /// any packet), from [`offset`](Self::offset) on.
    #[must_use]
    pub const fn skipped(&self) -> u64 {
        match self.kind {
            ErrorKind::Unsynchronized { len } | ErrorKind::BadSync { zeros: len } => len,
            ErrorKind::ReservedHeader { .. } => 1,
            ErrorKind::InvalidField { len, .. } => len as u64,
            ErrorKind::Truncated { len, .. } => len as u64,
        }
    }
}

/// What went wrong while parsing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `len` bytes were skipped while looking for a synchronization packet
    /// (before the first one when the parser waits for it). Reported once
    /// per stretch, when synchronization is found or at
    /// [`Parser::finish`](crate::Parser::finish).
    Unsynchronized {
        /// Number of bytes skipped.
        len: u64,
    },
    /// The header byte is reserved; it is skipped and the next byte is read
    /// as a header.
    ReservedHeader {
        /// The header byte.
        header: u8,
    },
    /// A packet whose header is valid holds a reserved value (a reserved
    /// hardware source ID, a payload size its kind does not have, a
    /// reserved exception trace function, a payload longer than its kind
    /// allows). The packet's `len` bytes are skipped.
    InvalidField {
        /// The packet's header byte.
        header: u8,
        /// Which field, in a few words.
        field: &'static str,
        /// Bytes skipped: the header and the payload bytes read.
        len: u8,
    },
    /// A run of `0x00` bytes was not a synchronization packet (fewer than
    /// five zeros before `0x80`, or ended by another byte); the zeros are
    /// skipped and the byte that ended them is read as a header.
    BadSync {
        /// Number of `0x00` bytes.
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
            Self::Unsynchronized { len } => write!(
                f,
                "{len} byte(s) skipped while not synchronized (no synchronization packet)"
            ),
            Self::ReservedHeader { header } => write!(f, "reserved header byte 0x{header:02x}"),
            Self::InvalidField { header, field, len } => write!(
                f,
                "invalid {field} in packet with header 0x{header:02x} ({len} byte(s) skipped)"
            ),
            Self::BadSync { zeros } => write!(
                f,
                "malformed synchronization packet after {zeros} zero byte(s)"
            ),
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
    /// The packet cannot be expressed (a value too wide for its length, a
    /// size or length its kind does not have, a stimulus port on another
    /// page than the one in force).
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
