//! Frame deformatter: captured bytes in, per-source runs out.

use super::align::{self, frame_at, IdState, Search, Step, Window};
use super::{is_source_id, FrameMode, Run, FRAME_SIZE, HSYNC, NULL_ID};
use alloc::vec::Vec;

/// The most whole frames the iterator of [`Deformatter::feed`] unpacks
/// into its queue at a time: 4 KiB of input.
const QUEUED_FRAMES: usize = 256;

/// Why bytes were not handed on as a source's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscardReason {
    /// Data before the first ID change of the capture: its source is unknown.
    Unassigned,
    /// Data under the null ID 0 (padding).
    Null,
    /// Data under a reserved ID (`0x70..=0x7F`).
    Reserved,
}

/// What the deformatter reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameEvent {
    /// Payload bytes of one source.
    Data(Run),
    /// Frame payload bytes that belong to no source; `run.id` is the ID they
    /// were under (0 for [`DiscardReason::Unassigned`]).
    Discarded {
        /// Why the bytes were discarded.
        reason: DiscardReason,
        /// The discarded bytes and where they lie.
        run: Run,
    },
    /// Bytes skipped while looking for frame alignment (continuous mode):
    /// before the first frame, and each time stray or lost bytes moved the
    /// frames (a realignment: the bytes between the last frame read at the
    /// old alignment and the first at the new one). See
    /// [`DeformatStats::realignments`].
    Unsynchronized {
        /// Offset of the first skipped byte.
        offset: u64,
        /// Number of bytes skipped.
        len: u64,
    },
    /// The input ended inside a frame; these bytes could not be unpacked.
    Truncated {
        /// Offset of the first byte of the incomplete frame.
        offset: u64,
        /// Number of bytes in it.
        len: u64,
    },
}

/// Counters kept by a [`Deformatter`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeformatStats {
    /// Input bytes consumed.
    pub bytes: u64,
    /// Complete frames unpacked.
    pub frames: u64,
    /// Full-frame syncs removed (continuous mode).
    pub fsyncs: u64,
    /// Half-word syncs removed (continuous mode).
    pub hsyncs: u64,
    /// Bytes reported as [`FrameEvent::Unsynchronized`].
    pub skipped: u64,
    /// Times the frame alignment was lost and found again at another
    /// position (continuous mode), each reported as one
    /// [`FrameEvent::Unsynchronized`] stretch.
    pub realignments: u64,
    /// Offset of the first frame found (continuous mode; 0 for the other
    /// layouts once a frame is read), `None` before.
    pub aligned_at: Option<u64>,
}

/// Splits a capture into per-source payload runs.
///
/// Feed the capture in chunks of any size with [`Deformatter::feed`]; the
/// events are the same whatever the chunk boundaries (in raw mode the bytes
/// and their offsets are, though a run also ends at each chunk's end). Call
/// [`Deformatter::finish`] at the end of the input.
///
/// ```
/// use trace_core::frames::{Deformatter, FrameEvent, FrameMode};
/// // One frame: ID change to 0x10 (immediate), then the data bytes
/// // 0x11, 0x22, .., with bit 0 of the even-position bytes in byte 15.
/// let frame = [
///     0x21, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
///     0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0x00,
/// ];
/// let mut d = Deformatter::new(FrameMode::Memory);
/// let events: Vec<_> = d.feed(&frame).collect();
/// let FrameEvent::Data(run) = events[0] else { panic!() };
/// assert_eq!((run.id, run.offset), (0x10, 1));
/// assert_eq!(run.data(), &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
///                          0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE]);
/// ```
#[derive(Debug, Clone)]
pub struct Deformatter {
    mode: FrameMode,
    cur_id: Option<u8>,
    frame: [u8; FRAME_SIZE],
    frame_off: [u64; FRAME_SIZE],
    fill: usize,
    offset: u64,
    synced: bool,
    pair: [u8; 2],
    pair_off: u64,
    pair_fill: usize,
    window: u32,
    in_fsync: bool,
    /// Continuous mode: the IDs named by the frames read so far (bit `n`:
    /// ID `n`), which the frames read next are checked against.
    known: u128,
    /// Continuous mode, looking for the alignment: the bytes not yet
    /// explained, from offset `buf_off`, and the window the search waits
    /// for.
    buf: Vec<u8>,
    buf_off: u64,
    win: usize,
    /// Continuous mode: bytes a search gave back (after the frames it
    /// decided), read again before the rest of the input, from offset
    /// `replay_off`.
    replay: Vec<u8>,
    replay_pos: usize,
    replay_off: u64,
    /// A skipped stretch not yet reported (offset, length).
    skip: Option<(u64, u64)>,
    search: Search,
    queue: Vec<FrameEvent>,
    head: usize,
    stats: DeformatStats,
}

impl Deformatter {
    /// A deformatter for input laid out as `mode` says.
    #[must_use]
    pub fn new(mode: FrameMode) -> Self {
        Deformatter {
            mode,
            cur_id: None,
            frame: [0; FRAME_SIZE],
            frame_off: [0; FRAME_SIZE],
            fill: 0,
            offset: 0,
            // Raw input needs no frame alignment: it is never unsynchronized.
            synced: matches!(mode, FrameMode::Memory | FrameMode::Raw { .. }),
            pair: [0; 2],
            pair_off: 0,
            pair_fill: 0,
            window: 0,
            in_fsync: false,
            known: 0,
            buf: Vec::new(),
            buf_off: 0,
            win: align::WINDOW,
            replay: Vec::new(),
            replay_pos: 0,
            replay_off: 0,
            skip: None,
            search: Search::default(),
            queue: Vec::with_capacity(32),
            head: 0,
            stats: DeformatStats::default(),
        }
    }

    /// A deformatter for [`FrameMode::Memory`] input that joins a capture
    /// at `offset`, a frame boundary (a multiple of 16 from the start),
    /// with `id` the trace ID in force there: the last ID change of the
    /// frames before ([`super::id_after`] of the last frame that has one),
    /// `None` if none has. Fed the rest of the capture, it reports what a
    /// deformatter fed the whole capture reports from `offset` on; this
    /// lets a buffer be deformatted in pieces, in parallel.
    #[must_use]
    pub fn resume_memory(offset: u64, id: Option<u8>) -> Self {
        let mut d = Deformatter::new(FrameMode::Memory);
        d.offset = offset;
        d.cur_id = id;
        d
    }

    /// The layout this deformatter expects.
    #[must_use]
    pub fn mode(&self) -> FrameMode {
        self.mode
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> DeformatStats {
        self.stats
    }

    /// Input bytes held for the alignment search (continuous mode): never
    /// more than a search window and a frame.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.buf.len() + self.replay.len() - self.replay_pos + self.fill + self.pair_fill
    }

    /// Room of the queue the iterator of [`Deformatter::feed`] hands
    /// events from.
    #[cfg(test)]
    pub(crate) fn queue_room(&self) -> usize {
        self.queue.capacity()
    }

    /// Byte positions the alignment search has looked at (continuous
    /// mode).
    #[cfg(test)]
    pub(crate) fn searched(&self) -> usize {
        self.search.visited
    }

    /// Offset of the next input byte.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Continue the input with `chunk` and iterate what it completes.
    ///
    /// Dropping the iterator before it is exhausted still consumes the whole
    /// chunk (its events are then lost), so the deformatter stays consistent.
    pub fn feed<'a>(&'a mut self, chunk: &'a [u8]) -> FrameEvents<'a> {
        FrameEvents {
            d: self,
            chunk,
            pos: 0,
        }
    }

    /// Continue the input with `chunk`, handing each event it completes to
    /// `f`, in the order [`feed`](Self::feed) gives them; faster than the
    /// iterator (whole frames go to `f` without a queue).
    pub fn feed_each(&mut self, chunk: &[u8], mut f: impl FnMut(FrameEvent)) {
        let mut out = Each(&mut f);
        // Events of an earlier `feed` not yet taken are dropped, as
        // dropping its iterator would.
        self.queue.clear();
        self.head = 0;
        let mut pos = 0;
        while pos < chunk.len() {
            if self.mode == FrameMode::Memory && self.fill == 0 && chunk.len() - pos >= FRAME_SIZE {
                pos = self.whole_frames(chunk, pos, &mut out);
            } else if self.clean_frame_ahead(chunk, pos) && self.suspicion_free(chunk, pos) {
                pos = self.continuous_frames(chunk, pos, &mut out);
            } else {
                pos = self.advance(chunk, pos);
                for ev in self.queue.drain(..) {
                    out.emit(ev);
                }
            }
        }
    }

    /// End of input: the events of the bytes still held (in continuous
    /// mode, the frames and skipped bytes of the stretch the alignment
    /// search had not decided yet), then an incomplete frame, if any.
    pub fn finish(&mut self) -> alloc::vec::IntoIter<FrameEvent> {
        let mut out = Vec::new();
        self.finish_each(|e| out.push(e));
        out.into_iter()
    }

    /// [`finish`](Self::finish), handing each event to `f`.
    pub fn finish_each(&mut self, mut f: impl FnMut(FrameEvent)) {
        self.queue.clear();
        self.head = 0;
        if self.mode == FrameMode::Continuous {
            while let Some((b, off)) = self.next_replay() {
                self.continuous_input(b, off);
            }
            if !self.synced {
                self.decide(true);
            }
            while let Some((b, off)) = self.next_replay() {
                self.continuous_input(b, off);
            }
            if !self.synced {
                self.decide(true);
            }
            self.flush_skip(false);
        }
        for ev in self.queue.drain(..) {
            f(ev);
        }
        let pending = self.fill + self.pair_fill;
        if pending == 0 {
            return;
        }
        let offset = if self.fill > 0 {
            self.frame_off[0]
        } else {
            self.pair_off
        };
        self.fill = 0;
        self.pair_fill = 0;
        f(FrameEvent::Truncated {
            offset,
            len: self.offset - offset,
        });
    }

    /// Consume bytes of `chunk` from `pos` until at least one event is
    /// queued or the chunk ends; returns the new position.
    fn advance(&mut self, chunk: &[u8], mut pos: usize) -> usize {
        while pos < chunk.len() && self.head >= self.queue.len() {
            match self.mode {
                FrameMode::Raw { id } => {
                    let mut run = Run::new(id, self.offset, self.offset);
                    for &b in &chunk[pos..chunk.len().min(pos + FRAME_SIZE - 1)] {
                        run.push(b);
                    }
                    let n = run.data().len();
                    self.offset += n as u64;
                    self.stats.bytes += n as u64;
                    pos += n;
                    self.queue.push(FrameEvent::Data(run));
                }
                FrameMode::Memory => {
                    // Fast path: whole frames straight from the chunk, up
                    // to QUEUED_FRAMES of them, so that the queue stays
                    // small whatever the chunk's size (frames of garbage
                    // give a run for nearly every byte).
                    if self.fill == 0 && chunk.len() - pos >= FRAME_SIZE {
                        let mut queue = core::mem::take(&mut self.queue);
                        let end = chunk.len().min(pos + QUEUED_FRAMES * FRAME_SIZE);
                        pos = self.whole_frames(&chunk[..end], pos, &mut queue);
                        self.queue = queue;
                    } else {
                        let b = chunk[pos];
                        pos += 1;
                        let off = self.offset;
                        self.offset += 1;
                        self.stats.bytes += 1;
                        self.push_frame_byte(b, off);
                    }
                }
                FrameMode::Continuous => {
                    if self.clean_frame_ahead(chunk, pos) && self.suspicion_free(chunk, pos) {
                        let mut queue = core::mem::take(&mut self.queue);
                        let end = chunk.len().min(pos + QUEUED_FRAMES * FRAME_SIZE);
                        pos = self.continuous_frames(&chunk[..end], pos, &mut queue);
                        self.queue = queue;
                        continue;
                    }
                    if let Some((b, off)) = self.next_replay() {
                        self.continuous_input(b, off);
                        continue;
                    }
                    let b = chunk[pos];
                    pos += 1;
                    let off = self.offset;
                    self.offset += 1;
                    self.stats.bytes += 1;
                    self.continuous_input(b, off);
                }
            }
        }
        pos
    }

    /// Unpack every whole frame of `chunk` from `pos` (memory mode, on a
    /// frame boundary) into `out`; returns the position after them.
    #[inline]
    fn whole_frames<E: Emit>(&mut self, chunk: &[u8], pos: usize, out: &mut E) -> usize {
        let frames = &chunk[pos..];
        let whole = frames.len() / FRAME_SIZE * FRAME_SIZE;
        for frame in frames[..whole].chunks_exact(FRAME_SIZE) {
            let mut f = [0u8; FRAME_SIZE];
            f.copy_from_slice(frame);
            let base = self.offset;
            self.offset += FRAME_SIZE as u64;
            self.unpack_at(&f, base, out);
        }
        self.stats.bytes += whole as u64;
        pos + whole
    }

    /// Whether `chunk[pos..]` starts with a whole frame the continuous
    /// fast path can take: aligned, at a frame boundary with nothing held,
    /// and no `0xFF` (so no sync) in the frame.
    #[inline]
    fn clean_frame_ahead(&self, chunk: &[u8], pos: usize) -> bool {
        self.mode == FrameMode::Continuous
            && self.synced
            && self.fill == 0
            && self.pair_fill == 0
            && !self.in_fsync
            && self.replay.is_empty()
            && chunk
                .get(pos..pos + FRAME_SIZE)
                .is_some_and(|f| !f.contains(&0xFF))
    }

    /// Whether the frame at `chunk[pos..]` (there is one) reads at the
    /// alignment in force without suspicion.
    fn suspicion_free(&self, chunk: &[u8], pos: usize) -> bool {
        let st = IdState {
            cur: self.cur_id,
            known: self.known,
        };
        chunk
            .get(pos..pos + FRAME_SIZE)
            .and_then(|f| <&[u8; FRAME_SIZE]>::try_from(f).ok())
            .is_some_and(|f| !align::suspicious(f, &st))
    }

    /// Continuous mode, aligned: unpacks the whole frames of `chunk` from
    /// `pos` that hold no `0xFF` and read at the alignment in force, into
    /// `out`; returns the position after them (at a frame that needs the
    /// byte path).
    fn continuous_frames<E: Emit>(&mut self, chunk: &[u8], mut pos: usize, out: &mut E) -> usize {
        while let Some(frame) = chunk.get(pos..pos + FRAME_SIZE) {
            let mut f = [0u8; FRAME_SIZE];
            f.copy_from_slice(frame);
            let st = IdState {
                cur: self.cur_id,
                known: self.known,
            };
            if f.contains(&0xFF) || align::suspicious(&f, &st) {
                break;
            }
            let base = self.offset;
            self.accept(&f, base);
            self.offset += FRAME_SIZE as u64;
            self.stats.bytes += FRAME_SIZE as u64;
            self.window = u32::from_be_bytes([f[12], f[13], f[14], f[15]]);
            self.unpack_at(&f, base, out);
            pos += FRAME_SIZE;
        }
        pos
    }

    /// The next byte a search gave back, with its offset.
    fn next_replay(&mut self) -> Option<(u8, u64)> {
        let b = *self.replay.get(self.replay_pos)?;
        let off = self.replay_off;
        self.replay_pos += 1;
        self.replay_off += 1;
        if self.replay_pos == self.replay.len() {
            self.replay.clear();
            self.replay_pos = 0;
        }
        Some((b, off))
    }

    /// One byte of continuous-mode input at `off`: into the frame under way
    /// when the alignment is known, else into the search window.
    fn continuous_input(&mut self, b: u8, off: u64) {
        if self.synced {
            self.continuous_byte(b, off);
            return;
        }
        if self.buf.is_empty() {
            self.buf_off = off;
        }
        self.buf.push(b);
        if self.buf.len() >= self.win {
            self.decide(false);
        }
    }

    /// Runs the alignment search on the window and carries out what it
    /// decides: frames unpacked, syncs removed, skipped bytes reported; once
    /// a frame or sync ends the decided part, the frames are aligned again
    /// and the bytes after it are read again as frames. With `last`, the
    /// input has ended: everything is decided.
    fn decide(&mut self, last: bool) {
        loop {
            let w = Window {
                buf: &self.buf,
                offset: self.buf_off,
                st: IdState {
                    cur: self.cur_id,
                    known: self.known,
                },
                leading: self.stats.aligned_at.is_none(),
                last,
            };
            let d = self.search.run(&w);
            if d.steps.is_empty() {
                if last {
                    let len = self.buf.len() as u64;
                    if len > 0 {
                        self.note_skip(self.buf_off, len);
                    }
                    self.buf.clear();
                    self.flush_skip(false);
                } else {
                    self.win = (self.win + align::WINDOW).min(align::MAX_WINDOW);
                }
                return;
            }
            let buf = core::mem::take(&mut self.buf);
            let mut locked = false;
            let mut end = 0;
            for step in &d.steps {
                match *step {
                    Step::Skip { at } => {
                        self.note_skip(self.buf_off + at as u64, 1);
                        locked = false;
                    }
                    Step::FSync { .. } => {
                        self.flush_skip(true);
                        self.stats.fsyncs += 1;
                        locked = true;
                    }
                    Step::Frame { at, .. } => {
                        self.flush_skip(true);
                        if let Some((f, pos, e)) = frame_at(&buf, at) {
                            let mut offs = [0u64; FRAME_SIZE];
                            for (o, &p) in offs.iter_mut().zip(&pos) {
                                *o = self.buf_off + u64::from(p);
                            }
                            self.stats.hsyncs += ((e - at - FRAME_SIZE) / 2) as u64;
                            self.accept(&f, offs[0]);
                            let mut queue = core::mem::take(&mut self.queue);
                            self.unpack_with(&f, &offs, &mut queue);
                            self.queue = queue;
                        }
                        locked = true;
                    }
                }
                end = step.end();
            }
            let rest_off = self.buf_off + end as u64;
            self.win = align::WINDOW;
            if locked {
                self.synced = true;
                self.fill = 0;
                self.pair_fill = 0;
                self.in_fsync = false;
                self.window = 0;
                // The bytes after the decided part, before any bytes still
                // to be read again.
                let mut replay = buf[end..].to_vec();
                replay.extend_from_slice(&self.replay[self.replay_pos..]);
                self.replay = replay;
                self.replay_pos = 0;
                self.replay_off = rest_off;
                if self.replay.is_empty() {
                    self.replay_off = 0;
                }
                self.buf = buf;
                self.buf.clear();
                return;
            }
            let mut buf = buf;
            buf.drain(..end);
            self.buf = buf;
            self.buf_off = rest_off;
            if self.buf.is_empty() || !(last || self.buf.len() >= self.win) {
                return;
            }
        }
    }

    /// Records that the frame `f`, starting at `offset`, is read at the
    /// alignment in force.
    fn accept(&mut self, f: &[u8; FRAME_SIZE], offset: u64) {
        self.known = IdState {
            cur: self.cur_id,
            known: self.known,
        }
        .after(f)
        .known;
        if self.stats.aligned_at.is_none() {
            self.stats.aligned_at = Some(offset);
        }
    }

    /// Adds `len` skipped bytes at `offset` to the stretch being reported.
    fn note_skip(&mut self, offset: u64, len: u64) {
        match &mut self.skip {
            Some((o, l)) if *o + *l == offset => *l += len,
            _ => {
                self.flush_skip(false);
                self.skip = Some((offset, len));
            }
        }
    }

    /// Reports the skipped stretch, if any; `found` when frames are aligned
    /// again right after it (a realignment, unless no frame came before).
    fn flush_skip(&mut self, found: bool) {
        if let Some((offset, len)) = self.skip.take() {
            self.stats.skipped += len;
            if found && self.stats.aligned_at.is_some() {
                self.stats.realignments += 1;
            }
            self.queue.push(FrameEvent::Unsynchronized { offset, len });
        }
    }

    /// A byte of continuous-mode input while the frames are aligned.
    fn continuous_byte(&mut self, b: u8, off: u64) {
        self.window = (self.window << 8) | u32::from(b);
        // A full-frame sync can only stand between frames, on a half-word
        // boundary: anywhere else, bytes were lost (or added) since the
        // frames were last aligned. Realign on it: the frame and half-word
        // under way are lost, and reported.
        let aligned = self.pair_fill == 1 && self.in_fsync && self.fill == 0;
        if self.window == 0xFFFF_FF7F && !aligned {
            self.realign(off);
            return;
        }
        if self.pair_fill == 0 {
            self.pair_off = off;
        }
        self.pair[self.pair_fill] = b;
        self.pair_fill += 1;
        if self.pair_fill < 2 {
            return;
        }
        self.pair_fill = 0;
        match self.pair {
            // A half-word sync, or the second half of a full-frame sync:
            // 0xFF at an even position would be the forbidden ID 0x7F.
            [0xFF, 0x7F] => {
                if self.in_fsync {
                    self.stats.fsyncs += 1;
                } else {
                    self.stats.hsyncs += 1;
                }
                self.in_fsync = false;
            }
            // First half of a full-frame sync, between frames.
            [0xFF, 0xFF] if self.fill == 0 && !self.in_fsync => self.in_fsync = true,
            [lo, hi] => {
                let at = self.pair_off;
                if self.in_fsync {
                    // Not a full-frame sync after all: the two bytes held
                    // are the frame's first (and make it suspicious).
                    self.in_fsync = false;
                    self.push_frame_byte(0xFF, at - 2);
                    self.push_frame_byte(0xFF, at - 1);
                    if !self.synced {
                        // The frame sent the stream back to the search:
                        // the pair goes there too.
                        self.continuous_input(lo, at);
                        self.continuous_input(hi, at + 1);
                        return;
                    }
                }
                self.push_frame_byte(lo, at);
                self.push_frame_byte(hi, at + 1);
            }
        }
    }

    /// A full-frame sync ending at `off` found out of frame alignment:
    /// report the bytes of the frame and half-word under way before it as
    /// unsynchronized and start a frame after it.
    #[cold]
    fn realign(&mut self, off: u64) {
        let sync_start = off.saturating_sub(3);
        let start = if self.fill > 0 {
            self.frame_off[0]
        } else if self.pair_fill > 0 {
            self.pair_off
        } else {
            sync_start
        };
        if start < sync_start {
            self.note_skip(start, sync_start - start);
            self.flush_skip(true);
        }
        self.fill = 0;
        self.pair_fill = 0;
        self.in_fsync = false;
        self.stats.fsyncs += 1;
    }

    fn push_frame_byte(&mut self, b: u8, off: u64) {
        self.frame[self.fill] = b;
        self.frame_off[self.fill] = off;
        self.fill += 1;
        if self.fill == FRAME_SIZE {
            self.fill = 0;
            if self.mode == FrameMode::Continuous {
                self.continuous_frame();
            } else {
                self.unpack();
            }
        }
    }

    /// A frame completed at the alignment in force (continuous mode): read
    /// it, or, when it calls the alignment into question, search again from
    /// its first byte.
    fn continuous_frame(&mut self) {
        let st = IdState {
            cur: self.cur_id,
            known: self.known,
        };
        if !align::suspicious(&self.frame, &st) {
            let (f, at) = (self.frame, self.frame_off[0]);
            self.accept(&f, at);
            self.unpack();
            return;
        }
        // The frame's bytes as they came, half-word syncs included.
        let mut raw = Vec::with_capacity(align::WINDOW);
        for i in 0..FRAME_SIZE {
            if i > 0 {
                let gap = self.frame_off[i] - self.frame_off[i - 1] - 1;
                for _ in 0..gap / 2 {
                    raw.extend_from_slice(&HSYNC);
                }
                self.stats.hsyncs -= gap / 2;
            }
            raw.push(self.frame[i]);
        }
        self.synced = false;
        self.buf_off = self.frame_off[0];
        self.buf = raw;
        self.win = align::WINDOW;
        self.window = 0;
        self.pair_fill = 0;
        self.in_fsync = false;
    }

    /// Unpack the frame in `self.frame`, its bytes at `self.frame_off`,
    /// into queued events.
    fn unpack(&mut self) {
        let (f, offs) = (self.frame, self.frame_off);
        let mut queue = core::mem::take(&mut self.queue);
        self.unpack_with(&f, &offs, &mut queue);
        self.queue = queue;
    }

    /// Unpack `f`, whose bytes lie at `base`, `base + 1`, .., into `out`:
    /// a frame with no ID change whose ID is a source's is one run of 15
    /// bytes (half the frames of a capture of four sources, nearly all of
    /// one).
    #[inline]
    fn unpack_at<E: Emit>(&mut self, f: &[u8; FRAME_SIZE], base: u64, out: &mut E) {
        let id_bits = f[0] | f[2] | f[4] | f[6] | f[8] | f[10] | f[12] | f[14];
        match self.cur_id {
            Some(id) if id_bits & 1 == 0 && is_source_id(id) => {
                self.stats.frames += 1;
                out.emit(FrameEvent::Data(Run::whole_frame(id, base, f)));
            }
            _ => self.unpack_with(f, &base, out),
        }
    }

    /// Unpack `f`, its bytes at `offs`, into `out`.
    fn unpack_with<O: Offsets, E: Emit>(&mut self, f: &[u8; FRAME_SIZE], offs: &O, out: &mut E) {
        self.stats.frames += 1;
        let aux = f[15];
        let mut u = Unpacker {
            id: self.cur_id,
            block_index: offs.at(0),
            block_count: 0,
            run_id: None,
            run_offset: 0,
            run_index: 0,
            len: 0,
            bytes: [0; FRAME_SIZE - 1],
            offs,
            out,
        };
        for i in (0..14).step_by(2) {
            let flag = (aux >> (i / 2)) & 1;
            if f[i] & 1 == 1 {
                let new = f[i] >> 1;
                if u.id == Some(new) {
                    u.data(f[i + 1], i + 1);
                } else {
                    if flag == 1 {
                        u.data(f[i + 1], i + 1);
                    }
                    u.change_id(new, i);
                    if flag == 0 {
                        u.data(f[i + 1], i + 1);
                    }
                }
            } else {
                u.data(f[i] | flag, i);
                u.data(f[i + 1], i + 1);
            }
        }
        if f[14] & 1 == 1 {
            u.flush();
            u.id = Some(f[14] >> 1);
        } else {
            u.data(f[14] | (aux >> 7), 14);
        }
        u.flush();
        self.cur_id = u.id;
    }
}

/// Where unpacked events go: the deformatter's queue, or a caller's
/// function ([`Deformatter::feed_each`]).
trait Emit {
    fn emit(&mut self, event: FrameEvent);
}

impl Emit for Vec<FrameEvent> {
    #[inline]
    fn emit(&mut self, event: FrameEvent) {
        self.push(event);
    }
}

/// A caller's function as an [`Emit`].
struct Each<F>(F);

impl<F: FnMut(FrameEvent)> Emit for Each<F> {
    #[inline]
    fn emit(&mut self, event: FrameEvent) {
        (self.0)(event);
    }
}

/// Where the bytes of a frame lie in the input.
trait Offsets {
    /// The offset of the frame's byte `pos`.
    fn at(&self, pos: usize) -> u64;
}

/// Each byte's own offset (continuous mode: syncs removed between them).
impl Offsets for [u64; FRAME_SIZE] {
    #[inline]
    fn at(&self, pos: usize) -> u64 {
        self[pos % FRAME_SIZE]
    }
}

/// The offset of the first byte; the others follow it.
impl Offsets for u64 {
    #[inline]
    fn at(&self, pos: usize) -> u64 {
        self + pos as u64
    }
}

/// Per-frame unpacking state: the ID in force, the block of data since
/// the last ID change (for OpenCSD's index), and the run being built.
struct Unpacker<'a, O, E> {
    id: Option<u8>,
    block_index: u64,
    block_count: u64,
    /// The ID of the run being built (`len > 0`), `None` before any ID.
    run_id: Option<u8>,
    run_offset: u64,
    run_index: u64,
    len: u8,
    bytes: [u8; FRAME_SIZE - 1],
    offs: &'a O,
    out: &'a mut E,
}

impl<O: Offsets, E: Emit> Unpacker<'_, O, E> {
    fn change_id(&mut self, new: u8, pos: usize) {
        self.flush();
        self.id = Some(new);
        self.block_index = self.offs.at(pos);
        self.block_count = 0;
    }

    #[inline]
    fn data(&mut self, byte: u8, pos: usize) {
        let off = self.offs.at(pos);
        let index = self.block_index + self.block_count;
        self.block_count += 1;
        if self.len > 0 && (self.run_id != self.id || self.run_offset + u64::from(self.len) != off)
        {
            self.flush();
        }
        if self.len == 0 {
            self.run_id = self.id;
            self.run_offset = off;
            self.run_index = index;
        }
        // A frame holds at most 15 data bytes.
        if let Some(slot) = self.bytes.get_mut(usize::from(self.len)) {
            *slot = byte;
            self.len += 1;
        }
    }

    fn flush(&mut self) {
        if self.len == 0 {
            return;
        }
        let id = self.run_id.unwrap_or(NULL_ID);
        let run = Run::from_bytes(id, self.run_offset, self.run_index, &self.bytes, self.len);
        self.len = 0;
        let event = match self.id_kind(id) {
            None => FrameEvent::Data(run),
            Some(reason) => FrameEvent::Discarded { reason, run },
        };
        self.out.emit(event);
    }

    fn id_kind(&self, id: u8) -> Option<DiscardReason> {
        if self.id.is_none() {
            Some(DiscardReason::Unassigned)
        } else if id == NULL_ID {
            Some(DiscardReason::Null)
        } else if is_source_id(id) {
            None
        } else {
            Some(DiscardReason::Reserved)
        }
    }
}

/// Iterator over the events a chunk completes; see [`Deformatter::feed`].
#[derive(Debug)]
pub struct FrameEvents<'a> {
    d: &'a mut Deformatter,
    chunk: &'a [u8],
    pos: usize,
}

impl Iterator for FrameEvents<'_> {
    type Item = FrameEvent;

    fn next(&mut self) -> Option<FrameEvent> {
        if self.d.head >= self.d.queue.len() {
            self.d.queue.clear();
            self.d.head = 0;
            self.pos = self.d.advance(self.chunk, self.pos);
        }
        let ev = self.d.queue.get(self.d.head).copied()?;
        self.d.head += 1;
        Some(ev)
    }
}

impl Drop for FrameEvents<'_> {
    fn drop(&mut self) {
        while self.pos < self.chunk.len() {
            self.d.queue.clear();
            self.d.head = 0;
            self.pos = self.d.advance(self.chunk, self.pos);
        }
        self.d.queue.clear();
        self.d.head = 0;
    }
}
