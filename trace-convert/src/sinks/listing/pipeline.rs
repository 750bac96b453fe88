//! Listing lines formatted on a second thread while the calling thread
//! reads the capture: items go to the formatter in blocks, in order, and
//! the formatted bytes come back in the same order, to be written by the
//! calling thread. The bytes are those of formatting everything on one
//! thread (the formatter is given the blocks one after another).
//!
//! ```
//! use trace_convert::sinks::listing::pipeline::pipelined;
//! let mut out = Vec::new();
//! let sum = pipelined(
//!     &mut out,
//!     |block: &[u32], bytes: &mut Vec<u8>| {
//!         for n in block {
//!             bytes.extend_from_slice(format!("{n}\n").as_bytes());
//!         }
//!         Ok(())
//!     },
//!     |feed| -> std::io::Result<u32> {
//!         let mut sum = 0;
//!         for n in 0..10_000 {
//!             feed.push(n)?;
//!             sum += n;
//!         }
//!         Ok(sum)
//!     },
//! )??;
//! assert_eq!(sum, 49_995_000);
//! assert!(out.starts_with(b"0\n1\n2\n"));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, Write};
use std::sync::mpsc::{channel, Receiver, Sender};

/// Items per block handed to the formatter.
pub const BLOCK: usize = 8192;

/// Blocks handed to the formatter and not yet written: the calling thread
/// waits for the oldest before handing on more (bounding the memory).
const IN_FLIGHT: usize = 4;

/// A block of items, and a byte buffer to format it into.
type Work<T> = (Vec<T>, Vec<u8>);

/// Hands items to the formatter thread of [`pipelined`].
pub struct Feeder<'o, T> {
    block: Vec<T>,
    to_formatter: Option<Sender<Work<T>>>,
    back: Receiver<io::Result<Work<T>>>,
    out: &'o mut dyn Write,
    spare: Vec<Work<T>>,
    in_flight: usize,
}

impl<T> std::fmt::Debug for Feeder<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feeder")
            .field("block", &self.block.len())
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl<T> Feeder<'_, T> {
    /// The next item.
    ///
    /// # Errors
    ///
    /// The output's error, or the formatter's, for an earlier block.
    #[inline]
    pub fn push(&mut self, item: T) -> io::Result<()> {
        self.block.push(item);
        if self.block.len() >= BLOCK {
            self.send()?;
        }
        Ok(())
    }

    /// Hand the block under way to the formatter, writing what it has
    /// finished (waiting for the oldest block when enough are under way).
    fn send(&mut self) -> io::Result<()> {
        while let Ok(done) = self.back.try_recv() {
            self.write(done)?;
        }
        if self.in_flight >= IN_FLIGHT {
            let done = self.back.recv().map_err(|_| gone())?;
            self.write(done)?;
        }
        let (next, bytes) = self
            .spare
            .pop()
            .unwrap_or_else(|| (Vec::with_capacity(BLOCK), Vec::new()));
        let block = std::mem::replace(&mut self.block, next);
        let to = self.to_formatter.as_ref().ok_or_else(gone)?;
        to.send((block, bytes)).map_err(|_| gone())?;
        self.in_flight += 1;
        Ok(())
    }

    /// Write a formatted block and keep its buffers.
    fn write(&mut self, done: io::Result<Work<T>>) -> io::Result<()> {
        self.in_flight -= 1;
        let (block, mut bytes) = done?;
        self.out.write_all(&bytes)?;
        bytes.clear();
        self.spare.push((block, bytes));
        Ok(())
    }

    /// Hand on the last block and write everything still under way.
    fn finish(&mut self) -> io::Result<()> {
        if !self.block.is_empty() {
            self.send()?;
        }
        self.to_formatter = None;
        while self.in_flight > 0 {
            let done = self.back.recv().map_err(|_| gone())?;
            self.write(done)?;
        }
        Ok(())
    }
}

fn gone() -> io::Error {
    io::Error::other("the listing's formatting thread stopped")
}

/// Run `produce` on the calling thread, which hands items to the
/// [`Feeder`]; `format` formats each block of them into bytes on a
/// second thread, and the calling thread writes them to `out` in order.
/// Returns what `produce` returned, once everything is written.
///
/// # Errors
///
/// The output's error, or `format`'s.
pub fn pipelined<T: Send, R>(
    out: &mut dyn Write,
    mut format: impl FnMut(&[T], &mut Vec<u8>) -> io::Result<()> + Send,
    produce: impl FnOnce(&mut Feeder<'_, T>) -> R,
) -> io::Result<R> {
    let (to_formatter, work) = channel::<Work<T>>();
    let (done, back) = channel::<io::Result<Work<T>>>();
    std::thread::scope(|s| {
        s.spawn(move || {
            for (mut block, mut bytes) in work {
                let r = format(&block, &mut bytes);
                block.clear();
                if done.send(r.map(|()| (block, bytes))).is_err() {
                    break;
                }
            }
        });
        let mut feeder = Feeder {
            block: Vec::with_capacity(BLOCK),
            to_formatter: Some(to_formatter),
            back,
            out,
            spare: Vec::new(),
            in_flight: 0,
        };
        let r = produce(&mut feeder);
        let finished = feeder.finish();
        // The formatter ends when its channel closes (dropped with the
        // feeder on an error).
        drop(feeder);
        finished.map(|()| r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(block: &[u64], bytes: &mut Vec<u8>) -> io::Result<()> {
        for n in block {
            bytes.extend_from_slice(format!("{n}\n").as_bytes());
        }
        Ok(())
    }

    #[test]
    fn the_bytes_are_those_of_one_thread() {
        for n in [0u64, 1, 5, BLOCK as u64, BLOCK as u64 * 9 + 7] {
            let mut want = Vec::new();
            lines(&(0..n).collect::<Vec<_>>(), &mut want).expect("format");
            let mut got = Vec::new();
            let count = pipelined(&mut got, lines, |f| {
                (0..n).try_for_each(|i| f.push(i)).map(|()| n)
            })
            .expect("written")
            .expect("produced");
            assert_eq!(count, n);
            assert_eq!(got, want, "{n} items");
        }
    }

    /// A writer that fails after `left` bytes.
    struct Full {
        left: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.left {
                return Err(io::Error::other("disk full"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_output_error_stops_the_producer_and_is_returned() {
        let mut out = Full { left: 1000 };
        let mut pushed = 0u64;
        let r = pipelined(&mut out, lines, |f| {
            for i in 0..(BLOCK as u64 * 100) {
                f.push(i)?;
                pushed += 1;
            }
            Ok::<(), io::Error>(())
        });
        assert!(matches!(r, Err(_) | Ok(Err(_))), "the error is returned");
        assert!(pushed < BLOCK as u64 * 100, "the producer stopped early");
    }

    #[test]
    fn a_formatting_error_is_returned() {
        let mut out = Vec::new();
        let r = pipelined(
            &mut out,
            |_: &[u8], _: &mut Vec<u8>| Err(io::Error::other("bad")),
            |f| f.push(1),
        );
        assert!(r.is_err());
    }
}
