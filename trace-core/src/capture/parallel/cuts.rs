//! Reading a capture in windows of bytes, each cut into chunks at points
//! where a fresh deformatter and fresh packet parsers can start.
//!
//! CoreSight-formatted (memory-mode) buffers are cut at 16-byte frame
//! boundaries; the trace ID in force at a cut is the last ID change of the
//! frames before it. A raw single-source stream is cut at the first A-sync
//! (five `0x00` then `0x80`, the same pattern in PTM and ETMv3) found a
//! little after the nominal cut, or at the nominal cut when none is near:
//! any cut is correct, since a chunk's decoder only takes over where its
//! parser's state is seen to equal the real one, but a cut at an A-sync
//! lets the fresh parser take over right away.

use crate::frames::{id_after, FRAME_SIZE};
use std::io::{self, Read};
use std::ops::Range;

/// How the capture's bytes are laid out, as far as cutting goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// One source's bytes.
    Raw,
    /// Formatter frames aligned on the first byte.
    Frames,
}

/// Bytes of the capture and the chunks they are cut into.
#[derive(Debug)]
pub(super) struct Window {
    /// Offset in the capture of `bytes[0]`.
    pub(super) base: u64,
    pub(super) bytes: Vec<u8>,
    /// Chunks, in order, covering `bytes` from the start (up to the end,
    /// except the tail kept for the next window).
    pub(super) chunks: Vec<Range<usize>>,
    /// Formatted input: the trace ID in force at `base`.
    pub(super) id_at_start: Option<u8>,
    /// Up to [`WARM_UP`] bytes of the capture just before `base` (whole
    /// frames in formatted input).
    pub(super) before: Vec<u8>,
    /// Formatted input: the trace ID in force at the start of `before`.
    pub(super) id_before: Option<u8>,
}

/// Bytes before a chunk that a worker decodes to warm up the return stack
/// of a source that has one (see `chunk`): a multiple of the frame size.
pub(super) const WARM_UP: usize = 8 << 10;

/// Bytes just before a chunk, for a warm-up.
pub(super) struct WarmBytes {
    /// Offset in the capture of `bytes[0]`.
    pub(super) offset: u64,
    pub(super) bytes: Vec<u8>,
    /// Formatted input: the trace ID in force at `offset`.
    pub(super) id: Option<u8>,
}

impl Window {
    /// Formatted input: the trace ID in force at `bytes[at]` (a frame
    /// boundary), from the frames of this window before it.
    pub(super) fn id_at(&self, at: usize) -> Option<u8> {
        last_id(&self.bytes[..at.min(self.bytes.len())]).or(self.id_at_start)
    }

    /// Up to [`WARM_UP`] bytes just before `bytes[at]`: from this window
    /// and, reaching back further, the one before (in `layout`: the trace
    /// ID is looked up in frames only).
    pub(super) fn warm_up(&self, at: usize, layout: Layout) -> WarmBytes {
        let at = at.min(self.bytes.len());
        let here = at.min(WARM_UP);
        let back = (WARM_UP - here).min(self.before.len());
        let earlier = self.before.len() - back;
        let mut bytes = Vec::with_capacity(back + here);
        bytes.extend_from_slice(&self.before[earlier..]);
        bytes.extend_from_slice(&self.bytes[at - here..at]);
        let id = if layout == Layout::Raw {
            None
        } else if back > 0 {
            last_id(&self.before[..earlier]).or(self.id_before)
        } else {
            self.id_at(at - here)
        };
        WarmBytes {
            offset: self.base + at as u64 - bytes.len() as u64,
            bytes,
            id,
        }
    }
}

/// The last trace ID change in whole frames `bytes`, if any.
fn last_id(bytes: &[u8]) -> Option<u8> {
    bytes
        .chunks_exact(FRAME_SIZE)
        .rev()
        .find_map(|f| <&[u8; FRAME_SIZE]>::try_from(f).ok().and_then(id_after))
}

/// Reads a capture in windows.
pub(super) struct Reader<R> {
    file: R,
    layout: Layout,
    /// Bytes read but not yet in a window, from `offset`.
    carry: Vec<u8>,
    offset: u64,
    eof: bool,
    /// Formatted input: the trace ID in force at `offset`.
    id: Option<u8>,
    /// The last bytes before `offset` (see [`Window::before`]), and the
    /// trace ID in force at their start.
    before: Vec<u8>,
    id_before: Option<u8>,
    /// Bytes read so far.
    pub(super) read: u64,
    /// The last [`Reader::next_window`] found no window because the input
    /// had nothing new for now (a stream's `WouldBlock`), not because it
    /// ended.
    pub(super) idle: bool,
}

/// The A-sync pattern, PTM and ETMv3 alike (a longer zero run ends in it).
const ASYNC: [u8; 6] = [0, 0, 0, 0, 0, 0x80];

impl<R: Read> Reader<R> {
    pub(super) fn new(file: R, layout: Layout) -> Self {
        Reader {
            file,
            layout,
            carry: Vec::new(),
            offset: 0,
            eof: false,
            id: None,
            before: Vec::new(),
            id_before: None,
            read: 0,
            idle: false,
        }
    }

    /// The next window of up to `chunks` chunks of about `chunk` bytes
    /// (raw input: looking up to `scan` bytes past each nominal cut for an
    /// A-sync); `None` at the end of the capture, or (with
    /// [`Reader::idle`] set) when a stream has too few new bytes for now.
    /// A stream that has had nothing new for a while (its read returns
    /// `WouldBlock`) gets a window of what has arrived, however short.
    ///
    /// # Errors
    ///
    /// When the capture cannot be read.
    pub(super) fn next_window(
        &mut self,
        chunk: usize,
        chunks: usize,
        scan: usize,
    ) -> io::Result<Option<Window>> {
        let chunk = match self.layout {
            Layout::Raw => chunk.max(1),
            Layout::Frames => chunk.max(1).div_ceil(FRAME_SIZE) * FRAME_SIZE,
        };
        let chunks = chunks.max(1);
        let raw = self.layout == Layout::Raw;
        let want = chunk * chunks + if raw { scan + ASYNC.len() } else { 0 };
        let mut bytes = std::mem::take(&mut self.carry);
        let least = if raw { 1 } else { FRAME_SIZE };
        self.idle = !self.fill(&mut bytes, want, least)?;
        if self.idle || bytes.is_empty() {
            self.carry = bytes;
            return Ok(None);
        }
        let len = bytes.len();
        let mut cuts = Vec::new();
        let mut at = 0usize;
        let end = loop {
            if cuts.len() == chunks || at == len {
                break at;
            }
            let nominal = at + chunk;
            if nominal > len || (raw && nominal == len) {
                if self.eof {
                    cuts.push(at..len);
                    break len;
                }
                break at;
            }
            let cut = match self.layout {
                Layout::Frames => nominal,
                Layout::Raw => {
                    let limit = (nominal + scan + ASYNC.len()).min(len);
                    match bytes[nominal..limit]
                        .windows(ASYNC.len())
                        .position(|w| w == ASYNC)
                    {
                        Some(p) => nominal + p,
                        None if limit < nominal + scan + ASYNC.len() && !self.eof => {
                            // The search would run past what was read.
                            break at;
                        }
                        None => nominal,
                    }
                }
            };
            cuts.push(at..cut);
            at = cut;
        };
        let (cuts, end) = if cuts.is_empty() {
            // Always make progress: one chunk of what there is.
            let end = if self.layout == Layout::Frames && !self.eof {
                len / FRAME_SIZE * FRAME_SIZE
            } else {
                len
            };
            (std::iter::once(0..end).collect(), end)
        } else {
            (cuts, end)
        };
        self.carry = bytes.split_off(end);
        let window = Window {
            base: self.offset,
            bytes,
            chunks: cuts,
            id_at_start: self.id,
            before: std::mem::take(&mut self.before),
            id_before: self.id_before,
        };
        // The next window's warm-up bytes (whole frames: `end` is a frame
        // boundary, and so is the start of every `before`).
        let tail = window.warm_up(end, self.layout);
        self.before = tail.bytes;
        self.id_before = tail.id;
        if self.layout == Layout::Frames {
            self.id = window.id_at(end);
        }
        self.offset += end as u64;
        Ok(Some(window))
    }

    /// Read until `bytes` holds `want` bytes or the capture ends, or,
    /// when a read says the input has nothing new for now (`WouldBlock`),
    /// until it holds `least` bytes. False when it stopped on such a read
    /// with fewer.
    fn fill(&mut self, bytes: &mut Vec<u8>, want: usize, least: usize) -> io::Result<bool> {
        if bytes.len() >= want || self.eof {
            return Ok(true);
        }
        let have = bytes.len();
        bytes.resize(want, 0);
        let mut filled = have;
        while filled < want {
            match self.file.read(&mut bytes[filled..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    filled += n;
                    self.read += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    bytes.truncate(filled);
                    return Ok(filled >= least);
                }
                Err(e) => return Err(e),
            }
        }
        bytes.truncate(filled);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(data: &[u8], layout: Layout, chunk: usize, scan: usize) -> Vec<Window> {
        let mut r = Reader::new(data, layout);
        let mut out = Vec::new();
        while let Some(w) = r.next_window(chunk, 3, scan).expect("in memory") {
            out.push(w);
        }
        assert_eq!(r.read, data.len() as u64);
        out
    }

    #[test]
    fn chunks_cover_the_input_in_order() {
        let mut data = vec![0x11u8; 1000];
        for at in [100, 230, 231, 600] {
            data[at..at + 6].copy_from_slice(&ASYNC);
        }
        for layout in [Layout::Raw, Layout::Frames] {
            for chunk in [1, 7, 16, 50, 333, 2000] {
                for scan in [0, 10, 200] {
                    let mut next = 0u64;
                    for w in windows(&data, layout, chunk, scan) {
                        assert_eq!(w.base, next);
                        let mut at = 0;
                        for c in &w.chunks {
                            assert_eq!(c.start, at);
                            assert!(c.end > c.start);
                            if layout == Layout::Frames && c.end < w.bytes.len() {
                                assert_eq!((w.base + c.end as u64) % 16, 0);
                            }
                            at = c.end;
                        }
                        next += at as u64;
                    }
                    assert_eq!(next, data.len() as u64, "{layout:?} {chunk} {scan}");
                }
            }
        }
    }

    #[test]
    fn warm_ups_are_the_bytes_just_before_a_chunk() {
        let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for layout in [Layout::Raw, Layout::Frames] {
            for chunk in [16, 1000, 5000, 20_000] {
                let mut r = Reader::new(&data[..], layout);
                let mut seen = 0;
                while let Some(w) = r.next_window(chunk, 3, 0).expect("in memory") {
                    for c in &w.chunks {
                        let warm = w.warm_up(c.start, layout);
                        let at = w.base as usize + c.start;
                        let from = at.saturating_sub(WARM_UP);
                        assert_eq!(warm.offset, from as u64, "{layout:?} {chunk} {at}");
                        assert!(warm.bytes == data[from..at], "{layout:?} {chunk} {at}");
                        let id = (layout == Layout::Frames)
                            .then(|| last_id(&data[..from]))
                            .flatten();
                        assert_eq!(warm.id, id, "{layout:?} {chunk} {at}");
                        seen += 1;
                    }
                }
                assert!(seen >= 2, "{layout:?} {chunk}");
            }
        }
    }

    #[test]
    fn raw_cuts_fall_on_a_sync_when_one_is_near() {
        let mut data = vec![0x11u8; 1000];
        data[130..136].copy_from_slice(&ASYNC);
        let w = &windows(&data, Layout::Raw, 100, 64)[0];
        assert_eq!(w.chunks[0], 0..130);
        let w = &windows(&data, Layout::Raw, 100, 10)[0];
        assert_eq!(w.chunks[0], 0..100);
    }

    #[test]
    fn the_trace_id_in_force_comes_from_the_frames_before() {
        let mut data = vec![0u8; 16 * 40];
        // Frame 3 changes to 0x10 at byte 4; frame 20 to 0x22 at byte 14.
        data[3 * 16 + 4] = (0x10 << 1) | 1;
        data[20 * 16 + 14] = (0x22 << 1) | 1;
        let ws = windows(&data, Layout::Frames, 32, 0);
        for w in &ws {
            for c in &w.chunks {
                let frame = (w.base as usize + c.start) / 16;
                let want = match frame {
                    0..=3 => None,
                    4..=20 => Some(0x10),
                    _ => Some(0x22),
                };
                assert_eq!(w.id_at(c.start), want, "frame {frame}");
            }
        }
    }
}
