//! Parse and encode errors.

use core::fmt;

/// A problem found in the byte stream, with the absolute offset of the first
/// byte concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Error {
    /// Absolute offset of the first byte the error is about.
    pub offset: u64,
    /// What went wrong.
    pub kind: ErrorKind,
}

/// The packet field that held a reserved value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// Bit 7 of the fifth address byte of a branch address or waypoint
    /// update packet (it has no continuation bit and must be 0).
    FifthAddressByte,
}

impl Field {
    /// Stable lower-case name of the field.
    pub const fn name(self) -> &'static str {
        match self {
            Field::FifthAddressByte => "fifth address byte",
        }
    }
}

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `len` bytes were skipped while looking for an A-sync (before the
    /// first one, or after an error). Reported once per stretch, when the
    /// A-sync is found or at [`crate::Parser::finish`].
    Unsynchronized {
        /// Number of bytes skipped.
        len: u64,
    },
    /// A header byte that no PFT packet uses (including the non
    /// cycle-accurate atom headers `0x80` and `0x82`, which have no atom
    /// count bit). The parser drops to unsynchronized.
    ReservedHeader {
        /// The header byte.
        header: u8,
    },
    /// A run of `zeros` zero bytes (the start of an A-sync) was not ended
    /// by `0x80` after at least five zeros. The parser drops to
    /// unsynchronized.
    BadASync {
        /// Number of zero bytes in the run.
        zeros: u64,
    },
    /// A packet field held a reserved value. The parser drops to
    /// unsynchronized.
    InvalidField {
        /// Header byte of the packet.
        header: u8,
        /// The offending field.
        field: Field,
    },
    /// The input ended inside a packet ([`crate::Parser::finish`]).
    Truncated {
        /// Header byte of the incomplete packet (`0x00` for an A-sync).
        header: u8,
        /// Bytes of the packet that were available.
        len: u64,
    },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Unsynchronized { len } => {
                write!(f, "{len} bytes skipped while unsynchronized")
            }
            ErrorKind::ReservedHeader { header } => write!(f, "reserved header {header:#04x}"),
            ErrorKind::BadASync { zeros } => {
                write!(f, "bad A-sync: {zeros} zero bytes not followed by 0x80")
            }
            ErrorKind::InvalidField { header, field } => {
                write!(
                    f,
                    "packet {header:#04x}: reserved value in {}",
                    field.name()
                )
            }
            ErrorKind::Truncated { header, len } => {
                write!(
                    f,
                    "input ends inside packet {header:#04x} after {len} bytes"
                )
            }
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

/// Why a packet could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EncodeError {
    /// The output buffer is shorter than the packet.
    BufferTooSmall {
        /// Bytes the packet needs.
        needed: usize,
    },
    /// The packet cannot be represented under the configuration or the
    /// encoder's compression state; `reason` says why.
    Invalid {
        /// Human-readable reason.
        reason: &'static str,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            EncodeError::Invalid { reason } => write!(f, "cannot encode packet: {reason}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for EncodeError {}
