//! CoreSight trace formatter frames: the 16-byte frames an ETB, ETF, ETR or
//! TPIU writes when several trace sources share one sink (ARM DDI 0314).
//!
//! The [`Deformatter`] turns a captured byte stream into per-source runs of
//! payload bytes ([`Run`]), each with the offset in the input file of every
//! byte it carries, so a packet parser fed with [`Run::offset`] reports
//! packet offsets that point into the capture itself. The [`Formatter`] does
//! the reverse and is used to build multi-source test captures.
//!
//! Frame layout: bytes 0, 2, .., 14 are either an ID change (bit 0 set, new
//! ID in bits 7:1) or a data byte whose bit 0 is kept in the auxiliary byte
//! 15; bytes 1, 3, .., 13 are always data. Bit `n` of the auxiliary byte
//! belongs to byte `2n`: for a data byte it is that byte's bit 0; for an ID
//! change it says whether the data byte that follows still belongs to the
//! previous ID (1, "delayed") or already to the new one (0, "immediate").
//! In TPIU continuous mode the stream also carries full-frame syncs
//! (`FF FF FF 7F`) between frames and half-word syncs (`FF 7F`) anywhere.

mod align;
mod deformat;
mod format;

pub use deformat::{DeformatStats, Deformatter, DiscardReason, FrameEvent, FrameEvents};
pub use format::Formatter;

/// Size of one formatter frame in bytes.
pub const FRAME_SIZE: usize = 16;

/// Full-frame synchronisation pattern of TPIU continuous mode, in stream order.
pub const FSYNC: [u8; 4] = [0xFF, 0xFF, 0xFF, 0x7F];

/// Half-word synchronisation pattern of TPIU continuous mode, in stream order.
pub const HSYNC: [u8; 2] = [0xFF, 0x7F];

/// The trace ID that marks padding: data under it belongs to no source.
pub const NULL_ID: u8 = 0x00;

/// How a capture's bytes are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameMode {
    /// One source's bytes, unformatted; every byte belongs to `id`.
    Raw {
        /// Trace ID reported for the single source.
        id: u8,
    },
    /// Formatter frames aligned on the first byte of the input, without
    /// synchronisation patterns (ETB, ETF and ETR buffers).
    Memory,
    /// Formatter frames as a TPIU emits them in continuous mode, as a probe
    /// or a logic analyser delivers them: starting anywhere, with or without
    /// full-frame syncs, with stray or lost bytes. The frame alignment is
    /// found from the syncs or from the frames themselves, checked on every
    /// frame and found again after stray or lost bytes; syncs are removed.
    Continuous,
}

/// Whether a trace ID may carry trace data (`0x01..=0x6F`).
///
/// ID 0 is the null ID used for padding, `0x70..=0x7C` are reserved and
/// `0x7D..=0x7F` are reserved for the formatter's own use.
#[must_use]
pub fn is_source_id(id: u8) -> bool {
    (0x01..=0x6F).contains(&id)
}

/// The trace ID a formatter frame leaves in force when it changes it: the
/// last ID change among its bytes 0, 2, .., 14 (bit 0 set), or `None` when
/// it has none (the ID in force before it stays).
///
/// ```
/// use trace_core::frames::id_after;
/// let mut frame = [0u8; 16];
/// assert_eq!(id_after(&frame), None);
/// frame[2] = (0x10 << 1) | 1;
/// frame[8] = (0x22 << 1) | 1;
/// assert_eq!(id_after(&frame), Some(0x22));
/// ```
#[must_use]
pub fn id_after(frame: &[u8; FRAME_SIZE]) -> Option<u8> {
    (0..FRAME_SIZE - 1)
        .step_by(2)
        .rev()
        .map(|i| frame[i])
        .find(|b| b & 1 == 1)
        .map(|b| b >> 1)
}

/// Payload bytes of one trace source, contiguous in the input file.
///
/// A run never spans two frames, so it holds at most 15 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Trace ID of the source the bytes belong to.
    pub id: u8,
    /// Offset in the input of the first byte of [`Run::data`]; the following
    /// bytes lie at consecutive offsets.
    pub offset: u64,
    /// The index OpenCSD's deformatter assigns to the first byte.
    ///
    /// OpenCSD numbers a frame's first block of data from the frame start and
    /// each later block from the position of the ID change that opened it, so
    /// after an ID change its index is lower than the true offset. It is
    /// provided only to compare listings with OpenCSD's (`Idx`).
    pub opencsd_index: u64,
    len: u8,
    bytes: [u8; FRAME_SIZE - 1],
}

impl Run {
    pub(crate) fn new(id: u8, offset: u64, opencsd_index: u64) -> Self {
        Run {
            id,
            offset,
            opencsd_index,
            len: 0,
            bytes: [0; FRAME_SIZE - 1],
        }
    }

    /// A run of a whole frame's 15 data bytes, all under `id` (a frame
    /// with no ID change), the frame starting at `offset`.
    pub(crate) fn whole_frame(id: u8, offset: u64, frame: &[u8; FRAME_SIZE]) -> Self {
        let aux = frame[15];
        let mut bytes = [0u8; FRAME_SIZE - 1];
        for i in 0..7 {
            bytes[2 * i] = frame[2 * i] | ((aux >> i) & 1);
            bytes[2 * i + 1] = frame[2 * i + 1];
        }
        bytes[14] = frame[14] | (aux >> 7);
        Run {
            id,
            offset,
            opencsd_index: offset,
            len: 15,
            bytes,
        }
    }

    /// A run of the first `len` of `bytes`.
    pub(crate) fn from_bytes(
        id: u8,
        offset: u64,
        opencsd_index: u64,
        bytes: &[u8; FRAME_SIZE - 1],
        len: u8,
    ) -> Self {
        Run {
            id,
            offset,
            opencsd_index,
            len: len.min(FRAME_SIZE as u8 - 1),
            bytes: *bytes,
        }
    }

    pub(crate) fn push(&mut self, byte: u8) {
        // A frame holds at most 15 data bytes, so a run never overflows.
        if let Some(slot) = self.bytes.get_mut(usize::from(self.len)) {
            *slot = byte;
            self.len += 1;
        }
    }

    /// The payload bytes.
    #[must_use]
    pub fn data(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Offset just past the last byte.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.offset + u64::from(self.len)
    }

    /// Whether the run has no bytes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests;
