//! Frame formatter: per-source bytes in, formatter frames out.

use super::{FrameMode, FRAME_SIZE, FSYNC, NULL_ID};
use alloc::vec::Vec;

/// What one of a frame's 15 payload slots holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Data(u8),
    /// An ID change; `delayed` means the next slot still belongs to the
    /// previous ID.
    Id {
        id: u8,
        delayed: bool,
    },
}

/// Multiplexes several sources' bytes into CoreSight formatter frames, as a
/// trace funnel and formatter would.
///
/// Used to build multi-source captures for tests and the synthetic corpus;
/// [`super::Deformatter`] gives back exactly the bytes pushed, per source.
#[derive(Debug, Clone)]
pub struct Formatter {
    mode: FrameMode,
    cur: Option<u8>,
    slots: [Slot; FRAME_SIZE - 1],
    pos: usize,
    frames: u64,
    sync_every: u64,
    out: Vec<u8>,
}

impl Formatter {
    /// A formatter writing frames laid out as `mode` says. For
    /// [`FrameMode::Continuous`] a full-frame sync precedes the first frame
    /// and every 16th frame after it; [`FrameMode::Raw`] is treated as
    /// [`FrameMode::Memory`].
    #[must_use]
    pub fn new(mode: FrameMode) -> Self {
        Formatter {
            mode,
            cur: None,
            slots: [Slot::Data(0); FRAME_SIZE - 1],
            pos: 0,
            frames: 0,
            sync_every: 16,
            out: Vec::new(),
        }
    }

    /// Append `data` from source `id`.
    pub fn push(&mut self, id: u8, data: &[u8]) {
        for &b in data {
            self.put(id, b);
        }
    }

    /// The frames written so far (whole frames only).
    #[must_use]
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// Pad the frame under way with null-ID data, as a TPIU's formatter does
    /// when its sources fall idle (every burst of trace then begins a
    /// frame). Nothing happens at a frame boundary.
    pub fn flush(&mut self) {
        if self.pos > 0 {
            if self.cur != Some(NULL_ID) {
                self.switch(NULL_ID);
            }
            while self.pos > 0 {
                self.place(Slot::Data(0));
            }
        }
    }

    /// Pad the last frame with null-ID data and return all frames.
    #[must_use]
    pub fn finish(mut self) -> Vec<u8> {
        self.flush();
        self.out
    }

    fn put(&mut self, id: u8, b: u8) {
        if self.cur != Some(id) {
            self.switch(id);
        }
        self.place(Slot::Data(b));
    }

    /// Make `id` the current ID at the next slot.
    fn switch(&mut self, id: u8) {
        if self.pos % 2 == 1 {
            // An ID change must sit at an even slot: turn the previous data
            // byte into a delayed ID change followed by that byte.
            let Slot::Data(prev) = self.slots[self.pos - 1] else {
                unreachable!("an odd slot always follows a data slot");
            };
            self.slots[self.pos - 1] = Slot::Id { id, delayed: true };
            self.cur = Some(id);
            self.place(Slot::Data(prev));
        } else {
            self.cur = Some(id);
            self.place(Slot::Id { id, delayed: false });
        }
    }

    fn place(&mut self, slot: Slot) {
        self.slots[self.pos] = slot;
        self.pos += 1;
        if self.pos == FRAME_SIZE - 1 {
            self.emit();
        }
    }

    fn emit(&mut self) {
        if matches!(self.mode, FrameMode::Continuous) && self.frames % self.sync_every == 0 {
            self.out.extend_from_slice(&FSYNC);
        }
        let mut frame = [0u8; FRAME_SIZE];
        let mut aux = 0u8;
        for (i, slot) in self.slots.iter().enumerate() {
            frame[i] = match *slot {
                Slot::Data(b) if i % 2 == 0 => {
                    aux |= (b & 1) << (i / 2);
                    b & !1
                }
                Slot::Data(b) => b,
                Slot::Id { id, delayed } => {
                    aux |= u8::from(delayed) << (i / 2);
                    (id << 1) | 1
                }
            };
        }
        frame[FRAME_SIZE - 1] = aux;
        self.out.extend_from_slice(&frame);
        self.frames += 1;
        self.pos = 0;
    }
}
