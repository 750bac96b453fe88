//! The progress bar on standard error for long conversions: shown only
//! when standard error is a terminal and the capture is larger than
//! [`MIN_BYTES`]; for a stream, a line of the bytes received and the
//! instructions decoded, with their rates.

use indicatif::{HumanBytes, HumanCount, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};
use trace_convert::input::stream::Received;
use trace_convert::progress::Progress;

/// How often a stream's line is redrawn.
const STREAM_REDRAW: Duration = Duration::from_millis(250);

/// The line of a stream being decoded.
#[derive(Debug)]
struct StreamLine {
    received: Received,
    started: Instant,
    drawn: Instant,
    instructions: u64,
}

impl StreamLine {
    /// The line's text: bytes received and instructions decoded, with
    /// their rates since the start.
    fn text(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let bytes = self.received.get();
        format!(
            "{} received ({}/s), {} instructions ({}/s)",
            HumanBytes(bytes),
            HumanBytes((bytes as f64 / secs) as u64),
            HumanCount(self.instructions),
            HumanCount((self.instructions as f64 / secs) as u64),
        )
    }
}

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
    /// A stream's line instead of a bar.
    stream: Option<StreamLine>,
}

impl Bar {
    /// Bars when `wanted` (and standard error is a terminal).
    pub fn new(wanted: bool) -> Bar {
        Bar {
            wanted: wanted && std::io::stderr().is_terminal(),
            bar: None,
            next: 0,
            step: 1,
            stream: None,
        }
    }

    /// For a stream (`received` counts its bytes): a line of what arrived
    /// and was decoded, with the rates, however small the stream.
    pub fn streaming(mut self, received: Option<Received>) -> Bar {
        self.stream = received.map(|received| StreamLine {
            received,
            started: Instant::now(),
            drawn: Instant::now(),
            instructions: 0,
        });
        self
    }
}

impl Progress for Bar {
    fn start(&mut self, path: &Path, size: u64) {
        self.done();
        if !self.wanted {
            return;
        }
        if let Some(line) = &self.stream {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix} {msg}") {
                bar.set_style(style);
            }
            bar.set_prefix(path.display().to_string());
            bar.set_message(line.text());
            self.bar = Some(bar);
            return;
        }
        if size < MIN_BYTES {
            return;
        }
        self.start_on(path, size, ProgressDrawTarget::stderr());
    }

    #[inline]
    fn at(&mut self, offset: u64) {
        if let Some(line) = &mut self.stream {
            if line.drawn.elapsed() >= STREAM_REDRAW {
                line.drawn = Instant::now();
                if let Some(bar) = &self.bar {
                    bar.set_message(line.text());
                    bar.tick();
                }
            }
            return;
        }
        if offset >= self.next {
            self.advance(offset);
        }
    }

    fn wants_instructions(&self) -> bool {
        self.stream.is_some() && self.bar.is_some()
    }

    fn instructions(&mut self, total: u64) {
        if let Some(line) = &mut self.stream {
            line.instructions = total;
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
            stream: None,
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

    #[test]
    fn a_streams_line_gives_what_arrived_and_the_instructions() {
        let line = StreamLine {
            received: Received::default(),
            started: Instant::now(),
            drawn: Instant::now(),
            instructions: 36_444,
        };
        let text = line.text();
        assert!(text.starts_with("0 B received ("), "{text}");
        assert!(text.contains("36,444 instructions"), "{text}");
    }
}
