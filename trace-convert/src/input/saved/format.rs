//! The saved-events file (`--save-events`): decoded events stored so a
//! later run can convert them again without decoding.
//!
//! Layout (integers little-endian):
//!
//! | part | bytes |
//! |---|---|
//! | magic | `TCEVENTS` (8 bytes) |
//! | format version | `u16`, currently [`VERSION`] |
//! | header length, checksum | `u32`, `u64` |
//! | header | [postcard](https://docs.rs/postcard) encoding of the header: input path, memory images (path, size, hash), trace IDs, protocols and cores |
//! | batches | each: event count `u32`, byte length `u32`, checksum `u64`, then the postcard-encoded events |
//! | end | a batch of zero events and zero bytes |
//!
//! Checksums are 64-bit FNV-1a over the bytes they follow. Batches let a
//! reader stream the file with one batch in memory; the end marker tells a
//! complete file from a truncated one, and must be the file's last bytes. Reading never panics: a wrong magic,
//! an unknown version, a truncated or corrupted file are errors.

use crate::input::source::Protocol;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::path::Path;
use trace_core::event::Event;

/// The first bytes of every saved-events file.
pub const MAGIC: [u8; 8] = *b"TCEVENTS";

/// The format version this module writes and reads.
pub const VERSION: u16 = 2;

/// Events per batch.
const BATCH_EVENTS: u32 = 4096;

/// Largest header or batch a reader accepts (a bound against corrupted
/// lengths).
const MAX_BLOCK: u32 = 64 << 20;

/// A memory image the events were decoded with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// Path as given.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// 64-bit FNV-1a hash of the contents.
    pub hash: u64,
}

impl ImageInfo {
    /// Describe the file at `path` (reads it to hash it).
    ///
    /// # Errors
    ///
    /// The error of reading the file.
    pub fn of_file(path: &Path) -> io::Result<ImageInfo> {
        let f = trace_core::memory::open_regular(path)?;
        ImageInfo::of_open(path, f)
    }

    /// Describe the open file `f` (named `path`), reading it to hash it.
    ///
    /// # Errors
    ///
    /// The error of reading the file.
    pub fn of_open(path: &Path, mut f: std::fs::File) -> io::Result<ImageInfo> {
        let mut hash = Fnv::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hash.update(&buf[..n]);
            size += n as u64;
        }
        Ok(ImageInfo {
            path: path.display().to_string(),
            size,
            hash: hash.finish(),
        })
    }
}

/// A trace source whose events the file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInfo {
    /// Trace ID.
    pub trace_id: u8,
    /// Its protocol.
    pub protocol: Protocol,
    /// The core it traces, when known (`cpu_0 Cortex-A7`).
    pub core: Option<String>,
}

/// What a saved-events file says about its events' origin.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Header {
    /// The capture file or snapshot directory decoded.
    pub input: String,
    /// The memory images used.
    pub images: Vec<ImageInfo>,
    /// The trace sources.
    pub sources: Vec<SourceInfo>,
}

/// The header as stored (protocols as numbers).
#[derive(Serialize, Deserialize)]
struct WireHeader {
    input: String,
    images: Vec<(String, u64, u64)>,
    sources: Vec<(u8, u8, Option<String>)>,
}

impl WireHeader {
    fn of(h: &Header) -> WireHeader {
        WireHeader {
            input: h.input.clone(),
            images: h
                .images
                .iter()
                .map(|i| (i.path.clone(), i.size, i.hash))
                .collect(),
            sources: h
                .sources
                .iter()
                .map(|s| (s.trace_id, s.protocol.code(), s.core.clone()))
                .collect(),
        }
    }

    fn into_header(self) -> Result<Header, EventsFileError> {
        let mut sources = Vec::with_capacity(self.sources.len());
        for (trace_id, p, core) in self.sources {
            let protocol = Protocol::from_code(p).ok_or_else(|| EventsFileError::Corrupt {
                offset: 0,
                what: format!("unknown protocol {p} in the header"),
            })?;
            sources.push(SourceInfo {
                trace_id,
                protocol,
                core,
            });
        }
        Ok(Header {
            input: self.input,
            images: self
                .images
                .into_iter()
                .map(|(path, size, hash)| ImageInfo { path, size, hash })
                .collect(),
            sources,
        })
    }
}

/// Why a saved-events file cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventsFileError {
    /// Not a saved-events file.
    #[error("not a saved-events file (wrong magic bytes)")]
    BadMagic,
    /// Written by a format version this build does not read.
    #[error(
        "saved-events format version {0} is not supported (this build reads version {VERSION})"
    )]
    UnsupportedVersion(u16),
    /// The file ends early.
    #[error("saved-events file truncated at byte {offset}")]
    Truncated {
        /// Where the missing data should start.
        offset: u64,
    },
    /// The bytes are damaged.
    #[error("saved-events file corrupted at byte {offset}: {what}")]
    Corrupt {
        /// Start of the damaged block.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// Reading failed.
    #[error("reading saved events: {0}")]
    Io(#[from] io::Error),
}

/// 64-bit FNV-1a.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(self) -> u64 {
        self.0
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut h = Fnv::new();
    h.update(bytes);
    h.finish()
}

/// Writes a saved-events file.
#[derive(Debug)]
pub struct EventWriter<W: Write> {
    out: W,
    batch: Vec<u8>,
    count: u32,
}

impl<W: Write> EventWriter<W> {
    /// Start a file with `header`.
    ///
    /// # Errors
    ///
    /// The error of the writer.
    pub fn new(mut out: W, header: &Header) -> io::Result<EventWriter<W>> {
        let h = postcard::to_stdvec(&WireHeader::of(header)).map_err(io::Error::other)?;
        let len = u32::try_from(h.len())
            .ok()
            .filter(|&l| l <= MAX_BLOCK)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "header too large"))?;
        out.write_all(&MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&checksum(&h).to_le_bytes())?;
        out.write_all(&h)?;
        Ok(EventWriter {
            out,
            batch: Vec::with_capacity(1 << 16),
            count: 0,
        })
    }

    /// Add one event.
    ///
    /// # Errors
    ///
    /// The error of the writer.
    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        let buf = std::mem::take(&mut self.batch);
        self.batch = postcard::to_extend(event, buf).map_err(io::Error::other)?;
        self.count += 1;
        if self.count >= BATCH_EVENTS {
            self.flush_batch()?;
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> io::Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        write_batch_header(&mut self.out, self.count, &self.batch)?;
        self.out.write_all(&self.batch)?;
        self.batch.clear();
        self.count = 0;
        Ok(())
    }

    /// Write the last batch and the end marker, flush, and return the
    /// writer.
    ///
    /// # Errors
    ///
    /// The error of the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_batch()?;
        write_batch_header(&mut self.out, 0, &[])?;
        self.out.flush()?;
        Ok(self.out)
    }
}

fn write_batch_header<W: Write>(out: &mut W, count: u32, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "batch too large"))?;
    out.write_all(&count.to_le_bytes())?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&checksum(bytes).to_le_bytes())
}

/// Reads a saved-events file.
#[derive(Debug)]
pub struct EventReader;

impl EventReader {
    /// Read the header of the file in `r`, and return it with an iterator
    /// over its events.
    ///
    /// # Errors
    ///
    /// [`EventsFileError::BadMagic`], [`EventsFileError::UnsupportedVersion`],
    /// [`EventsFileError::Truncated`] or [`EventsFileError::Corrupt`] for a
    /// header that is not right, [`EventsFileError::Io`] when reading fails.
    pub fn open<R: Read>(mut r: R) -> Result<(Header, Events<R>), EventsFileError> {
        let mut pos = 0u64;
        let mut magic = [0u8; 8];
        let n = read_full(&mut r, &mut magic)?;
        if n < magic.len() || magic != MAGIC {
            return Err(if n < magic.len() && magic[..n] == MAGIC[..n] {
                EventsFileError::Truncated { offset: n as u64 }
            } else {
                EventsFileError::BadMagic
            });
        }
        pos += 8;
        let mut fixed = [0u8; 14];
        read_exact_at(&mut r, &mut fixed, &mut pos)?;
        let version = u16::from_le_bytes([fixed[0], fixed[1]]);
        if version != VERSION {
            return Err(EventsFileError::UnsupportedVersion(version));
        }
        let len = u32::from_le_bytes([fixed[2], fixed[3], fixed[4], fixed[5]]);
        let sum = u64::from_le_bytes(fixed[6..14].try_into().unwrap_or_default());
        let start = pos;
        if len > MAX_BLOCK {
            return Err(corrupt(start, "header length out of range"));
        }
        let mut h = vec![0u8; len as usize];
        read_exact_at(&mut r, &mut h, &mut pos)?;
        if checksum(&h) != sum {
            return Err(corrupt(start, "header checksum mismatch"));
        }
        let wire: WireHeader =
            postcard::from_bytes(&h).map_err(|e| corrupt(start, &format!("header: {e}")))?;
        let header = wire.into_header()?;
        Ok((
            header,
            Events {
                r,
                pos,
                batch: Vec::new(),
                at: 0,
                left: 0,
                batch_start: 0,
                done: false,
            },
        ))
    }
}

fn corrupt(offset: u64, what: &str) -> EventsFileError {
    EventsFileError::Corrupt {
        offset,
        what: what.to_owned(),
    }
}

/// Read as many bytes as fit in `buf` (fewer only at the end of the input).
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Fill `buf` or report where the input ended.
fn read_exact_at<R: Read>(r: &mut R, buf: &mut [u8], pos: &mut u64) -> Result<(), EventsFileError> {
    let n = read_full(r, buf)?;
    *pos += n as u64;
    if n < buf.len() {
        return Err(EventsFileError::Truncated { offset: *pos });
    }
    Ok(())
}

/// The events of a saved-events file, read a batch at a time; see
/// [`EventReader::open`]. After the first error the iterator ends.
#[derive(Debug)]
pub struct Events<R: Read> {
    r: R,
    /// Offset of the next unread byte.
    pos: u64,
    batch: Vec<u8>,
    /// Next undecoded byte of `batch`.
    at: usize,
    /// Events of the batch not decoded yet.
    left: u32,
    batch_start: u64,
    done: bool,
}

impl<R: Read> Events<R> {
    fn next_batch(&mut self) -> Result<bool, EventsFileError> {
        let mut head = [0u8; 16];
        let start = self.pos;
        read_exact_at(&mut self.r, &mut head, &mut self.pos)?;
        let count = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let sum = u64::from_le_bytes(head[8..16].try_into().unwrap_or_default());
        if count == 0 && len == 0 {
            if sum != checksum(&[]) {
                return Err(corrupt(start, "end marker damaged"));
            }
            // The end marker ends the file: bytes after it (garbage, or a
            // second file appended) are an error, not ignored.
            let mut probe = [0u8; 1];
            if read_full(&mut self.r, &mut probe)? > 0 {
                return Err(corrupt(
                    self.pos,
                    "bytes after the end marker (a damaged or concatenated file)",
                ));
            }
            return Ok(false);
        }
        if len > MAX_BLOCK || count == 0 || count > len {
            return Err(corrupt(start, "batch header out of range"));
        }
        self.batch.resize(len as usize, 0);
        read_exact_at(&mut self.r, &mut self.batch, &mut self.pos)?;
        if checksum(&self.batch) != sum {
            return Err(corrupt(start, "batch checksum mismatch"));
        }
        self.at = 0;
        self.left = count;
        self.batch_start = start;
        Ok(true)
    }

    fn next_event(&mut self) -> Result<Option<Event>, EventsFileError> {
        if self.left == 0 {
            if self.at != self.batch.len() {
                return Err(corrupt(
                    self.batch_start,
                    "bytes left over after the batch's events",
                ));
            }
            if !self.next_batch()? {
                return Ok(None);
            }
        }
        let rest = self.batch.get(self.at..).unwrap_or_default();
        let (event, tail) = postcard::take_from_bytes::<Event>(rest)
            .map_err(|e| corrupt(self.batch_start, &format!("event: {e}")))?;
        self.at = self.batch.len() - tail.len();
        self.left -= 1;
        Ok(Some(event))
    }
}

impl<R: Read> Iterator for Events<R> {
    type Item = Result<Event, EventsFileError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_event() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_reference_values() {
        // Test vectors of the FNV reference code (64-bit FNV-1a).
        assert_eq!(checksum(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(checksum(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(checksum(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
