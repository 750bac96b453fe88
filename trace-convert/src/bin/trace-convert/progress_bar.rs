//! The progress bar on standard error for long conversions: shown only
//! when standard error is a terminal and the capture is larger than
//! [`MIN_BYTES`].

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use trace_convert::progress::Progress;

/// Captures smaller than this get no bar.
pub const MIN_BYTES: u64 = 4 << 20;

/// A bar per capture, by byte offset.
#[derive(Debug)]
pub struct Bar {
    wanted: bool,
    bar: Option<ProgressBar>,
    calls: u32,
}

impl Bar {
    /// Bars when `wanted` (and standard error is a terminal).
    pub fn new(wanted: bool) -> Bar {
        Bar {
            wanted: wanted && std::io::stderr().is_terminal(),
            bar: None,
            calls: 0,
        }
    }
}

impl Progress for Bar {
    fn start(&mut self, path: &Path, size: u64) {
        self.done();
        if !self.wanted || size < MIN_BYTES {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
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
    }

    #[inline]
    fn at(&mut self, offset: u64) {
        if let Some(bar) = &self.bar {
            self.calls = self.calls.wrapping_add(1);
            if self.calls % 4096 == 0 && offset > bar.position() {
                bar.set_position(offset);
            }
        }
    }

    fn done(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
