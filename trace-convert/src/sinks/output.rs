//! Where sinks write: [`Output`], a writer that can be completed, for the
//! files of an output set, plain files and an in-memory buffer.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// Where a sink writes: a [`Write`] that can be completed (a file flushed
/// and synced, ready for its set's commit; a buffer handed over).
pub trait Output: Write {
    /// Flush and complete the output, in place (a sink completes its
    /// writer in [`Sink::finish`](super::Sink::finish)); nothing is written
    /// to it afterwards.
    ///
    /// # Errors
    ///
    /// The error of flushing or completing.
    fn complete(&mut self) -> io::Result<()>;
}

impl Output for crate::output::OutputFile {
    fn complete(&mut self) -> io::Result<()> {
        self.complete_in_place()
    }
}

impl Output for std::fs::File {
    fn complete(&mut self) -> io::Result<()> {
        self.flush()
    }
}

/// An in-memory output whose bytes stay readable through a clone (for
/// tests and embedding).
#[derive(Debug, Clone, Default)]
pub struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// An empty buffer.
    #[must_use]
    pub fn new() -> SharedBuffer {
        SharedBuffer::default()
    }

    /// A copy of the bytes written so far.
    #[must_use]
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("buffer poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Output for SharedBuffer {
    fn complete(&mut self) -> io::Result<()> {
        Ok(())
    }
}
