//! Streams as a probe or a logic analyser receives them from a TPIU's
//! serial wire output: formatter frames with no full-frame sync, each
//! burst of a source flushed to a frame end with null-ID padding (as an
//! STM32's TPIU does), starting at an arbitrary byte, with stray bytes
//! added and bytes lost on the way. The damage is seeded, so a stream is
//! made again identically from the same options.

use crate::capture::CaptureError;
use trace_core::frames::{is_source_id, Formatter, FrameMode};

/// One source of a SWO-like stream.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// Trace ID, 0x01 to 0x6F.
    pub id: u8,
    /// The source's trace bytes.
    pub bytes: &'a [u8],
    /// Offsets at which a burst may end (the starts of its packets, as an
    /// ITM sends whole packets before it falls idle), ascending; empty: a
    /// burst may end anywhere.
    pub breaks: &'a [usize],
}

/// How the stream is cut and damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwoOptions {
    /// Bytes of each source per burst, at least (the sources take turns;
    /// a burst goes on to the source's next break).
    pub burst: usize,
    /// Flush each burst to a frame end with null-ID padding.
    pub flush: bool,
    /// Bytes dropped from the front: the receiver started mid-frame.
    pub start: usize,
    /// Stretches of 1 to 3 stray bytes added at random points (half of the
    /// bytes `0xFF`, as a UART receiver's framing errors give).
    pub stray: usize,
    /// Stretches of 1 to 15 bytes lost at random points.
    pub lost: usize,
    /// Seed of the damage's positions and contents.
    pub seed: u64,
}

impl Default for SwoOptions {
    fn default() -> Self {
        SwoOptions {
            burst: 24,
            flush: true,
            start: 5,
            stray: 0,
            lost: 0,
            seed: 1,
        }
    }
}

/// One change made to the clean stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// `len` stray bytes at offset `at` of the damaged stream.
    Stray {
        /// Where the first stray byte lies in the damaged stream.
        at: usize,
        /// How many.
        len: usize,
    },
    /// `len` bytes lost before offset `at` of the damaged stream.
    Lost {
        /// Where the bytes after the loss begin in the damaged stream.
        at: usize,
        /// How many.
        len: usize,
    },
}

/// A SWO-like stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwoStream {
    /// The bytes as received.
    pub bytes: Vec<u8>,
    /// For each byte, its offset in the clean frames (before the start was
    /// cut), or `None` for a stray byte.
    pub origin: Vec<Option<usize>>,
    /// The changes, in the order they were made.
    pub damage: Vec<Damage>,
}

/// A xorshift64 generator for the damage.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// The formatter frames of the sources, taking turns `opts.burst` bytes at
/// a time, made into a SWO-like stream as `opts` says.
///
/// # Errors
///
/// [`CaptureError`] for a trace ID that cannot carry data or is used
/// twice.
pub fn swo_stream(sources: &[Source<'_>], opts: &SwoOptions) -> Result<SwoStream, CaptureError> {
    for (i, s) in sources.iter().enumerate() {
        if !is_source_id(s.id) {
            return Err(CaptureError::BadId(s.id));
        }
        if sources[..i].iter().any(|o| o.id == s.id) {
            return Err(CaptureError::DuplicateId(s.id));
        }
    }
    let mut f = Formatter::new(FrameMode::Memory);
    let burst = opts.burst.max(1);
    let mut pos = vec![0usize; sources.len()];
    loop {
        let mut any = false;
        for (s, p) in sources.iter().zip(pos.iter_mut()) {
            let rest = s.bytes.get(*p..).unwrap_or_default();
            if rest.is_empty() {
                continue;
            }
            let mut n = rest.len().min(burst);
            if !s.breaks.is_empty() {
                let end = s
                    .breaks
                    .iter()
                    .copied()
                    .find(|&b| b >= *p + n)
                    .unwrap_or(s.bytes.len());
                n = end - *p;
            }
            f.push(s.id, &rest[..n]);
            if opts.flush {
                f.flush();
            }
            *p += n;
            any = true;
        }
        if !any {
            break;
        }
    }
    let frames = f.finish();
    let start = opts.start.min(frames.len());
    let mut s = SwoStream {
        bytes: frames[start..].to_vec(),
        origin: (start..frames.len()).map(Some).collect(),
        damage: Vec::new(),
    };
    let mut rng = Rng(opts.seed | 1);
    let mut kinds: Vec<bool> = core::iter::repeat_n(true, opts.stray)
        .chain(core::iter::repeat_n(false, opts.lost))
        .collect();
    for i in (1..kinds.len()).rev() {
        kinds.swap(i, rng.below(i + 1));
    }
    for stray in kinds {
        let at = rng.below(s.bytes.len());
        if stray {
            let len = 1 + rng.below(3);
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    let b = rng.below(256) as u8;
                    if rng.below(2) == 0 {
                        0xFF
                    } else {
                        b
                    }
                })
                .collect();
            s.bytes.splice(at..at, bytes);
            s.origin.splice(at..at, core::iter::repeat_n(None, len));
            s.damage.push(Damage::Stray { at, len });
        } else {
            let len = (1 + rng.below(15)).min(s.bytes.len() - at);
            s.bytes.drain(at..at + len);
            s.origin.drain(at..at + len);
            s.damage.push(Damage::Lost { at, len });
        }
    }
    Ok(s)
}
