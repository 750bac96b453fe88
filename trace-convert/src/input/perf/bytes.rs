//! Checked little-endian reads from a byte slice: every read names the
//! field, and running past the end is an error, never a panic.

use super::PerfError;

/// A position in a byte slice, with the file offset of the slice's
/// first byte (for messages).
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor over `bytes`, which start at file offset `base`.
    pub(crate) fn new(bytes: &'a [u8], base: u64) -> Self {
        Cursor {
            bytes,
            pos: 0,
            base,
        }
    }

    /// File offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes left.
    pub(crate) fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes, for `what`.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], PerfError> {
        if n > self.left() {
            return Err(PerfError::Truncated {
                offset: self.offset(),
                what: what.to_owned(),
                need: n as u64,
                have: self.left() as u64,
            });
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// The rest of the bytes.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.bytes[self.pos..];
        self.pos = self.bytes.len();
        s
    }

    /// A little-endian `u64`.
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, PerfError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A little-endian `u32`.
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, PerfError> {
        let b = self.take(4, what)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_le_bytes(a))
    }

    /// A little-endian `u16`.
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, PerfError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// One byte.
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, PerfError> {
        Ok(self.take(1, what)?[0])
    }
}

/// The text of a NUL-terminated (and NUL-padded) string field, lossily
/// decoded.
pub(crate) fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// `n` as a `usize`, or an error naming `what` at `offset`.
pub(crate) fn size(n: u64, offset: u64, what: &str) -> Result<usize, PerfError> {
    usize::try_from(n).map_err(|_| PerfError::Bad {
        offset,
        what: format!("{what}: {n} bytes is beyond this machine's address space"),
    })
}
