//! Memory images: the code bytes the decompressor walks.
//!
//! [`MemoryImage`] is what the decoder needs: read instruction bytes at an
//! address in a memory space, and, where the image knows it (ELF mapping
//! symbols), which instruction set the code at an address is in.
//! [`MemoryMap`] implements it over any number of [`Region`]s built from
//! buffers ([`Region::new`]), raw binaries (`MemoryMap::add_file`),
//! snapshot memory dumps, or ELF files (`MemoryMap::add_elf`); loading
//! files needs the `std` feature.

mod contents;
#[cfg(feature = "std")]
mod elf;
mod map;

pub use contents::Contents;
#[cfg(feature = "std")]
pub use contents::{check_regular, open_regular};
pub use map::{MemoryMap, Region};

use alloc::string::String;
#[cfg(feature = "std")]
use std::path::PathBuf;

/// The memory space an access is made in.
///
/// ARMv7 cores with the Security Extensions see two physical address spaces;
/// trace says which one the core was in (the NS bit of I-sync and exception
/// packets). A region tagged [`Space::Any`] answers both.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Space {
    /// Either space: regions without a space tag.
    Any,
    /// Secure state.
    Secure,
    /// Non-secure state.
    NonSecure,
}

impl Space {
    /// Whether a region tagged `self` answers an access made in `access`.
    #[must_use]
    pub fn serves(self, access: Space) -> bool {
        self == Space::Any || access == Space::Any || self == access
    }

    /// Parse a snapshot's `space=` value: `S`, `N`, `NS`, or empty/`ANY`.
    #[must_use]
    pub fn from_snapshot(text: &str) -> Option<Space> {
        match text.trim().to_ascii_uppercase().as_str() {
            "" | "ANY" => Some(Space::Any),
            "S" | "SECURE" => Some(Space::Secure),
            "N" | "NS" | "NON-SECURE" | "NONSECURE" => Some(Space::NonSecure),
            _ => None,
        }
    }
}

/// Instruction set of code at an address, as an ELF file's mapping symbols
/// (`$a`, `$t`, `$d`) tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeKind {
    /// ARM (A32) code.
    Arm,
    /// Thumb (T32) code.
    Thumb,
    /// Literal data inside a code section.
    Data,
}

/// Read access to program memory for the decoder.
pub trait MemoryImage: Send + Sync {
    /// Copy the bytes at `addr` in `space` into `buf` and return how many
    /// were available contiguously (0 when nothing is mapped at `addr`).
    fn read(&self, space: Space, addr: u32, buf: &mut [u8]) -> usize;

    /// What the image knows of the code at `addr`, if anything.
    fn code_kind(&self, _addr: u32) -> Option<CodeKind> {
        None
    }
}

/// Why an image could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The file could not be read.
    #[cfg(feature = "std")]
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not an ELF file this toolkit can use.
    #[cfg(feature = "std")]
    #[error("{path}: {reason}")]
    BadElf {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A region would not fit the 32-bit address space or the file.
    #[error("{name}: {reason}")]
    BadRegion {
        /// The region's file or name.
        name: String,
        /// What is wrong.
        reason: String,
    },
}
