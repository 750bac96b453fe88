//! How far a conversion has got, for whoever shows it: the command line
//! draws a progress bar, a library user may report it elsewhere or not at
//! all ([`NoProgress`]).

use std::path::Path;

/// Told how far decoding has got through each capture.
///
/// [`Progress::at`] is called for every event or batch of events: keep it
/// cheap (count calls, look at the offset now and then).
pub trait Progress {
    /// Decoding of the capture `path`, `size` bytes, starts.
    fn start(&mut self, path: &Path, size: u64);
    /// Decoding has reached byte `offset` of the capture.
    fn at(&mut self, offset: u64);
    /// Decoding of the capture has ended.
    fn done(&mut self);
    /// Whether [`Progress::instructions`] is wanted (it costs a sum over
    /// the sources each time).
    fn wants_instructions(&self) -> bool {
        false
    }
    /// The instructions decoded so far in the run (told now and then,
    /// when [`Progress::wants_instructions`]).
    fn instructions(&mut self, total: u64) {
        let _ = total;
    }
}

/// No progress shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    #[inline(always)]
    fn start(&mut self, _path: &Path, _size: u64) {}
    #[inline(always)]
    fn at(&mut self, _offset: u64) {}
    #[inline(always)]
    fn done(&mut self) {}
}
