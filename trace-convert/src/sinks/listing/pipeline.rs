//! Listing lines formatted on a second thread while the calling thread
//! reads the capture: items go to the formatter in blocks, in order, and
//! the formatted bytes come back in the same order, to be written by the
//! calling thread. When the formatter has enough blocks under way, the
//! calling thread formats the next block itself (with a formatter of its
//! own), so that both threads format when reading is the lighter work.
//! The bytes are those of formatting everything on one thread: each
//! block's bytes depend on the block alone.
//!
//! ```
//! use trace_convert::sinks::listing::pipeline::pipelined;
//! let mut out = Vec::new();
//! let lines = || {
//!     |block: &[u32], bytes: &mut Vec<u8>| {
//!         for n in block {
//!             bytes.extend_from_slice(format!("{n}\n").as_bytes());
//!         }
//!         Ok(())
//!     }
//! };
//! let sum = pipelined(&mut out, lines, |feed| -> std::io::Result<u32> {
//!     let mut sum = 0;
//!     for n in 0..10_000 {
//!         feed.push(n)?;
//!         sum += n;
//!     }
//!     Ok(sum)
//! })??;
//! assert_eq!(sum, 49_995_000);
//! assert!(out.starts_with(b"0\n1\n2\n"));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::{channel, Receiver, Sender};

/// Items per block: small enough that the blocks under way stay in the
/// processor's caches (8,192 made both threads wait on memory; 256 on
/// each other).
pub const BLOCK: usize = 1024;

/// Blocks handed to the formatter thread and not yet back: beyond them
/// the calling thread formats blocks itself.
const IN_FLIGHT: usize = 4;

/// Blocks formatted and not yet written, beyond which the calling thread
/// waits for the formatter thread (bounding the memory).
const PENDING: usize = 16;

/// A block of items, and a byte buffer to format it into.
type Work<T> = (Vec<T>, Vec<u8>);

/// A block on its way to the output, in order.
enum Slot {
    /// With the formatter thread.
    Away,
    /// Formatted.
    Done(Vec<u8>),
}

/// Hands items to the formatters of [`pipelined`].
pub struct Feeder<'o, T, F> {
    block: Vec<T>,
    to_formatter: Option<Sender<Work<T>>>,
    back: Receiver<io::Result<Work<T>>>,
    out: &'o mut dyn Write,
    /// The calling thread's own formatter.
    local: F,
    /// Blocks in order, from the oldest not yet written.
    pending: VecDeque<Slot>,
    away: usize,
    spare_blocks: Vec<Vec<T>>,
    spare_bytes: Vec<Vec<u8>>,
}

impl<T, F> std::fmt::Debug for Feeder<'_, T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feeder")
            .field("block", &self.block.len())
            .field("pending", &self.pending.len())
            .field("away", &self.away)
            .finish_non_exhaustive()
    }
}

impl<T, F: FnMut(&[T], &mut Vec<u8>) -> io::Result<()>> Feeder<'_, T, F> {
    /// The next item.
    ///
    /// # Errors
    ///
    /// The output's error, or a formatter's, for an earlier block.
    #[inline]
    pub fn push(&mut self, item: T) -> io::Result<()> {
        self.block.push(item);
        if self.block.len() >= BLOCK {
            self.send()?;
        }
        Ok(())
    }

    /// The next items, in order.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    pub fn extend(&mut self, mut items: &[T]) -> io::Result<()>
    where
        T: Copy,
    {
        while !items.is_empty() {
            let n = (BLOCK - self.block.len().min(BLOCK)).min(items.len());
            self.block.extend_from_slice(&items[..n]);
            items = &items[n..];
            if self.block.len() >= BLOCK {
                self.send()?;
            }
        }
        Ok(())
    }

    /// Hand the block under way to the formatter thread, or format it
    /// here when that has enough; write what is ready.
    fn send(&mut self) -> io::Result<()> {
        while let Ok(done) = self.back.try_recv() {
            self.arrived(done)?;
        }
        let next = self
            .spare_blocks
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BLOCK));
        let block = std::mem::replace(&mut self.block, next);
        if self.away < IN_FLIGHT {
            let bytes = self.spare_bytes.pop().unwrap_or_default();
            let to = self.to_formatter.as_ref().ok_or_else(gone)?;
            to.send((block, bytes)).map_err(|_| gone())?;
            self.away += 1;
            self.pending.push_back(Slot::Away);
        } else {
            let mut bytes = self.spare_bytes.pop().unwrap_or_default();
            let r = (self.local)(&block, &mut bytes);
            self.recycle_block(block);
            r?;
            self.pending.push_back(Slot::Done(bytes));
        }
        self.write_ready()?;
        while self.pending.len() > PENDING {
            self.wait()?;
        }
        Ok(())
    }

    /// A block back from the formatter thread: the oldest away.
    fn arrived(&mut self, done: io::Result<Work<T>>) -> io::Result<()> {
        self.away -= 1;
        let (block, bytes) = done?;
        self.recycle_block(block);
        let slot = self
            .pending
            .iter_mut()
            .find(|s| matches!(s, Slot::Away))
            .ok_or_else(gone)?;
        *slot = Slot::Done(bytes);
        self.write_ready()
    }

    /// Wait for the formatter thread's next block.
    fn wait(&mut self) -> io::Result<()> {
        let done = self.back.recv().map_err(|_| gone())?;
        self.arrived(done)
    }

    /// Write the formatted blocks at the front, in order.
    fn write_ready(&mut self) -> io::Result<()> {
        while let Some(Slot::Done(_)) = self.pending.front() {
            let Some(Slot::Done(mut bytes)) = self.pending.pop_front() else {
                break;
            };
            self.out.write_all(&bytes)?;
            bytes.clear();
            self.spare_bytes.push(bytes);
        }
        Ok(())
    }

    fn recycle_block(&mut self, mut block: Vec<T>) {
        block.clear();
        self.spare_blocks.push(block);
    }

    /// Hand on the last block and write everything still under way.
    fn finish(&mut self) -> io::Result<()> {
        if !self.block.is_empty() {
            self.send()?;
        }
        self.to_formatter = None;
        while self.away > 0 {
            self.wait()?;
        }
        self.write_ready()
    }
}

fn gone() -> io::Error {
    io::Error::other("the listing's formatting thread stopped")
}

/// Run `produce` on the calling thread, which hands items to the
/// [`Feeder`]; the formatters `formatter` makes (one on a second thread,
/// one on the calling thread) format them in blocks into bytes, which the
/// calling thread writes to `out` in order. Returns what `produce`
/// returned, once everything is written.
///
/// # Errors
///
/// The output's error, or a formatter's.
pub fn pipelined<T: Send, F, R>(
    out: &mut dyn Write,
    formatter: impl Fn() -> F,
    produce: impl FnOnce(&mut Feeder<'_, T, F>) -> R,
) -> io::Result<R>
where
    F: FnMut(&[T], &mut Vec<u8>) -> io::Result<()> + Send,
{
    let (to_formatter, work) = channel::<Work<T>>();
    let (done, back) = channel::<io::Result<Work<T>>>();
    let mut remote = formatter();
    std::thread::scope(|s| {
        s.spawn(move || {
            for (block, mut bytes) in work {
                let r = remote(&block, &mut bytes);
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
            local: formatter(),
            pending: VecDeque::new(),
            away: 0,
            spare_blocks: Vec::new(),
            spare_bytes: Vec::new(),
        };
        let r = produce(&mut feeder);
        let finished = feeder.finish();
        // The formatter thread ends when its channel closes (dropped with
        // the feeder on an error).
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
        for n in [
            0u64,
            1,
            5,
            BLOCK as u64,
            BLOCK as u64 * 9 + 7,
            BLOCK as u64 * 200 + 3,
        ] {
            let mut want = Vec::new();
            lines(&(0..n).collect::<Vec<_>>(), &mut want).expect("format");
            let mut got = Vec::new();
            let count = pipelined(
                &mut got,
                || lines,
                |f| (0..n).try_for_each(|i| f.push(i)).map(|()| n),
            )
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
    fn items_in_slices_are_the_items_one_by_one() {
        let items: Vec<u64> = (0..(BLOCK as u64 * 5 + 11)).collect();
        let mut want = Vec::new();
        lines(&items, &mut want).expect("format");
        for step in [1, 7, BLOCK - 1, BLOCK, BLOCK * 3 + 2] {
            let mut got = Vec::new();
            pipelined(
                &mut got,
                || lines,
                |f| items.chunks(step).try_for_each(|c| f.extend(c)),
            )
            .expect("written")
            .expect("produced");
            assert_eq!(got, want, "slices of {step}");
        }
    }

    #[test]
    fn an_output_error_stops_the_producer_and_is_returned() {
        let mut out = Full { left: 1000 };
        let mut pushed = 0u64;
        let r = pipelined(
            &mut out,
            || lines,
            |f| {
                for i in 0..(BLOCK as u64 * 100) {
                    f.push(i)?;
                    pushed += 1;
                }
                Ok::<(), io::Error>(())
            },
        );
        assert!(matches!(r, Err(_) | Ok(Err(_))), "the error is returned");
        assert!(pushed < BLOCK as u64 * 100, "the producer stopped early");
    }

    #[test]
    fn a_formatting_error_is_returned() {
        let mut out = Vec::new();
        let r = pipelined(
            &mut out,
            || |_: &[u8], _: &mut Vec<u8>| Err(io::Error::other("bad")),
            |f| f.push(1),
        );
        assert!(r.is_err());
    }
}
