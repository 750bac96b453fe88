//! The progress bar on standard error for long conversions: shown only
//! when standard error is a terminal and the capture is larger than
//! [`MIN_BYTES`].

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use trace_convert::progress::Progress;

/// Captures smaller than this get no bar.
pub const MIN_BYTES: u64 = 4 << 20;

/// Steps of the bar over a capture: it is redrawn when decoding has got a
/// step further (however few or many events tell it so: one per event on
/// one thread, one per decoded chunk on several).
const STEPS: u64 = 1000;

/// A bar per capture, by byte offset.
#[derive(Debug)]
pub struct Bar {
    wanted: bool,
    bar: Option<ProgressBar>,
    /// The offset from which the bar moves again.
    next: u64,
    /// Bytes per step.
    step: u64,
}

impl Bar {
    /// Bars when `wanted` (and standard error is a terminal).
    pub fn new(wanted: bool) -> Bar {
        Bar {
            wanted: wanted && std::io::stderr().is_terminal(),
            bar: None,
            next: 0,
            step: 1,
        }
    }
}

impl Progress for Bar {
    fn start(&mut self, path: &Path, size: u64) {
        self.done();
        if !self.wanted || size < MIN_BYTES {
            return;
        }
        self.start_on(path, size, ProgressDrawTarget::stderr());
    }

    #[inline]
    fn at(&mut self, offset: u64) {
        if offset >= self.next {
            self.advance(offset);
        }
    }

    fn done(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        self.next = u64::MAX;
    }
}

impl Bar {
    /// A bar for `path`, drawn on `target`.
    fn start_on(&mut self, path: &Path, size: u64, target: ProgressDrawTarget) {
        let bar = ProgressBar::with_draw_target(Some(size), target);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        );
        self.bar = Some(bar);
        self.step = (size / STEPS).max(1);
        self.next = 0;
    }

    #[inline(never)]
    fn advance(&mut self, offset: u64) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(offset);
                self.next = offset.saturating_add(self.step);
            }
            None => self.next = u64::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_chunk_ends_move_the_bar() {
        let mut b = Bar {
            wanted: true,
            bar: None,
            next: 0,
            step: 1,
        };
        let size = 16 << 20;
        b.start_on(Path::new("cap.bin"), size, ProgressDrawTarget::hidden());
        let pos = |b: &Bar| b.bar.as_ref().map_or(0, ProgressBar::position);
        // A parallel decode tells it once per chunk.
        b.at(size / 4);
        assert_eq!(pos(&b), size / 4);
        b.at(size / 2);
        assert_eq!(pos(&b), size / 2);
        // Within a step of the last position: not redrawn.
        b.at(size / 2 + 1);
        assert_eq!(pos(&b), size / 2);
        b.at(size);
        assert_eq!(pos(&b), size);
        b.done();
        assert!(b.bar.is_none());
        // No bar: nothing to move, and no redraw attempted again.
        b.at(size);
        assert_eq!(b.next, u64::MAX);
    }
}
