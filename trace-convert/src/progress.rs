//! A progress bar on standard error for long conversions: shown only when
//! standard error is a terminal and the capture is larger than
//! [`MIN_BYTES`].

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;

/// Captures smaller than this get no bar.
pub const MIN_BYTES: u64 = 4 << 20;

/// Progress through one capture, by byte offset.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    calls: u32,
}

impl Progress {
    /// A bar for a capture of `size` bytes, when `wanted`, standard error
    /// is a terminal and `size` is at least [`MIN_BYTES`].
    #[must_use]
    pub fn new(size: u64, wanted: bool, path: &Path) -> Progress {
        let show = wanted && size >= MIN_BYTES && std::io::stderr().is_terminal();
        let bar = show.then(|| {
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
            bar
        });
        Progress { bar, calls: 0 }
    }

    /// Decoding has reached byte `offset`.
    pub fn at(&mut self, offset: u64) {
        if let Some(bar) = &self.bar {
            self.calls = self.calls.wrapping_add(1);
            if self.calls % 4096 == 0 && offset > bar.position() {
                bar.set_position(offset);
            }
        }
    }

    /// Remove the bar.
    pub fn done(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
