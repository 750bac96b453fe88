//! The pull parser: feed chunks, iterate packets.

use crate::config::Config;
use crate::decode::{decode, skip_len, Decoded, MAX_PACKET_LEN};
use crate::error::{Error, ErrorKind};
use crate::packet::Packet;

/// Size of the carry-over buffer for packets split across chunks.
const CARRY: usize = 8;
const _: () = assert!(CARRY > MAX_PACKET_LEN);

/// Zero bytes a synchronization packet needs before its `0x80` (with the
/// seven zero bits of `0x80`, 47 zero bits).
const SYNC_ZEROS: u64 = 5;

/// One item of the packet stream: a packet with the absolute offset of its
/// first byte, or an error.
pub type Item = Result<(u64, Packet), Error>;

/// Byte and packet counters, see [`Parser::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stats {
    /// Bytes passed to [`Parser::feed`] / [`Parser::feed_at`].
    pub bytes_fed: u64,
    /// Bytes that formed valid packets.
    pub bytes_in_packets: u64,
    /// Bytes skipped: unsynchronized bytes, reserved headers, invalid
    /// packets, malformed synchronization runs, truncated trailing packets.
    pub bytes_skipped: u64,
    /// Valid packets returned.
    pub packets: u64,
    /// Errors returned.
    pub errors: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Looking for a synchronization packet.
    Unsync,
    /// At a packet boundary.
    Synced,
    /// Inside a run of `0x00` bytes (a synchronization packet, or not).
    SyncRun,
}

/// A stateful, resumable ITM/DWT packet parser.
///
/// Feed it chunks with [`feed`](Self::feed) (contiguous input) or
/// [`feed_at`](Self::feed_at) (chunks at known offsets, e.g. the ITM's
/// bytes of a TPIU-formatted capture) and iterate the returned
/// [`Packets`]. The items do not depend on where the chunk boundaries
/// fall: a packet split across chunks is held in a small internal buffer
/// and returned, with the offset of its first byte, once complete.
///
/// Unless the [`Config`] says the input starts at a packet header, the
/// parser starts unsynchronized and looks for a synchronization packet;
/// the bytes before it are reported as one
/// [`ErrorKind::Unsynchronized`] item. Once synchronized it stays so: a
/// reserved header is reported and skipped (one byte), an invalid packet
/// of known length is reported and skipped whole, and a synchronization
/// packet anywhere restores the packet alignment.
///
/// The parser keeps one piece of state across packets: the ITM stimulus
/// port page of the last ITM extension packet (0 at the start), which
/// [`Stimulus::port`](crate::Stimulus::port) includes.
#[derive(Clone, Debug)]
pub struct Parser {
    cfg: Config,
    mode: Mode,
    page: u32,
    /// Unsynchronized bytes not yet reported, and the first one's offset.
    skip_len: u64,
    skip_off: u64,
    /// Current run of zero bytes and its first offset.
    zeros: u64,
    zeros_off: u64,
    carry: [u8; CARRY],
    carry_off: [u64; CARRY],
    carry_len: usize,
    pending: Option<(u64, Packet)>,
    next_offset: u64,
    stats: Stats,
}

impl Parser {
    /// A parser for a stream as `cfg` describes it, with offsets starting
    /// at 0.
    #[must_use]
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            mode: if cfg.aligned_start() {
                Mode::Synced
            } else {
                Mode::Unsync
            },
            page: 0,
            skip_len: 0,
            skip_off: 0,
            zeros: 0,
            zeros_off: 0,
            carry: [0; CARRY],
            carry_off: [0; CARRY],
            carry_len: 0,
            pending: None,
            next_offset: 0,
            stats: Stats::default(),
        }
    }

    /// The configuration this parser was made with.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Whether the parser knows where packets begin (it has seen a
    /// synchronization packet, or was told the input starts at one).
    #[must_use]
    pub fn is_synchronized(&self) -> bool {
        self.mode != Mode::Unsync
    }

    /// The ITM stimulus port page in force (see [`Parser`]).
    #[must_use]
    pub fn page(&self) -> u32 {
        self.page
    }

    /// Continues the stream with `chunk`, whose first byte lies just after
    /// the previous chunk (offset 0 for the first chunk).
    ///
    /// The returned iterator yields the items completed by this chunk.
    /// Dropping it before it is exhausted still parses (and discards) the
    /// rest of the chunk, so the parser state stays consistent.
    pub fn feed<'a>(&'a mut self, chunk: &'a [u8]) -> Packets<'a> {
        let at = self.next_offset;
        self.feed_at(at, chunk)
    }

    /// Continues the stream with `chunk`, whose first byte lies at absolute
    /// `offset` (for input whose bytes are not contiguous in the file, such
    /// as one trace ID of a formatted capture). Later calls to
    /// [`feed`](Self::feed) continue from `offset + chunk.len()`.
    pub fn feed_at<'a>(&'a mut self, offset: u64, chunk: &'a [u8]) -> Packets<'a> {
        self.next_offset = offset.wrapping_add(chunk.len() as u64);
        self.stats.bytes_fed += chunk.len() as u64;
        Packets {
            parser: self,
            chunk,
            pos: 0,
            base: offset,
        }
    }

    /// Ends the input. Reports a packet left incomplete at the end
    /// ([`ErrorKind::Truncated`]) or unsynchronized bytes not yet reported
    /// ([`ErrorKind::Unsynchronized`]); `None` if the input ended cleanly.
    /// The parser can be fed again afterwards (the incomplete bytes are
    /// dropped).
    pub fn finish(&mut self) -> Option<Error> {
        self.pending = None;
        if self.carry_len > 0 {
            let e = Error {
                offset: self.carry_off[0],
                kind: ErrorKind::Truncated {
                    header: self.carry[0],
                    len: self.carry_len,
                },
            };
            self.stats.bytes_skipped += self.carry_len as u64;
            self.carry_len = 0;
            self.stats.errors += 1;
            return Some(e);
        }
        match self.mode {
            Mode::Synced => None,
            Mode::SyncRun => {
                let e = Error {
                    offset: self.zeros_off,
                    kind: ErrorKind::Truncated {
                        header: 0,
                        len: usize::try_from(self.zeros).unwrap_or(usize::MAX),
                    },
                };
                self.stats.bytes_skipped += self.zeros;
                self.zeros = 0;
                self.mode = Mode::Synced;
                self.stats.errors += 1;
                Some(e)
            }
            Mode::Unsync => {
                let len = self.skip_len + self.zeros;
                if len == 0 {
                    return None;
                }
                let offset = if self.skip_len > 0 {
                    self.skip_off
                } else {
                    self.zeros_off
                };
                self.stats.bytes_skipped += self.zeros;
                self.skip_len = 0;
                self.zeros = 0;
                self.stats.errors += 1;
                Some(Error {
                    offset,
                    kind: ErrorKind::Unsynchronized { len },
                })
            }
        }
    }

    /// Tells the parser that the next byte starts a packet: for a stream
    /// that lost bytes and goes on at a known packet boundary (the first
    /// byte of a burst a TPIU flushed to a frame end, after the frames were
    /// realigned). A packet under way or a run of zeros is reported as
    /// [`ErrorKind::Truncated`], unsynchronized bytes as
    /// [`ErrorKind::Unsynchronized`] (as [`finish`](Self::finish) does);
    /// the stimulus port page is kept.
    pub fn assume_aligned(&mut self) -> Option<Error> {
        let e = self.finish();
        self.mode = Mode::Synced;
        e
    }

    /// Counters since creation (or the last [`reset`](Self::reset)).
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Back to the state of [`Parser::new`] with the same configuration.
    pub fn reset(&mut self) {
        *self = Self::new(self.cfg);
    }

    /// Whether `self` and `other` parse any continuation of the stream
    /// alike: same configuration, synchronization, partly received packet,
    /// stimulus port page and next offset (their counters may differ). Two
    /// parsers that started at different points of one stream and agree
    /// here return the same items from then on.
    #[must_use]
    pub fn same_state(&self, other: &Self) -> bool {
        let n = self.carry_len;
        self.cfg == other.cfg
            && self.mode == other.mode
            && self.page == other.page
            && self.skip_len == other.skip_len
            && (self.skip_len == 0 || self.skip_off == other.skip_off)
            && self.zeros == other.zeros
            && (self.zeros == 0 || self.zeros_off == other.zeros_off)
            && n == other.carry_len
            && self.carry[..n] == other.carry[..n]
            && self.carry_off[..n] == other.carry_off[..n]
            && self.pending == other.pending
            && self.next_offset == other.next_offset
    }

    fn packet(&mut self, off: u64, len: usize, p: Packet) -> Item {
        if let Packet::Extension(e) = p {
            if !e.hardware {
                self.page = e.value;
            }
        }
        self.stats.packets += 1;
        self.stats.bytes_in_packets += len as u64;
        Ok((off, p))
    }

    #[cold]
    fn error(&mut self, offset: u64, kind: ErrorKind, skipped: u64) -> Item {
        self.stats.errors += 1;
        self.stats.bytes_skipped += skipped;
        Err(Error { offset, kind })
    }

    /// One byte while unsynchronized or inside a run of zeros. Returns
    /// whether the byte was consumed, and the item produced, if any.
    fn sync_byte(&mut self, b: u8, off: u64) -> (bool, Option<Item>) {
        match self.mode {
            Mode::Unsync => {
                if b == 0 {
                    if self.zeros == 0 {
                        self.zeros_off = off;
                    }
                    self.zeros += 1;
                } else if b == 0x80 && self.zeros >= SYNC_ZEROS {
                    let at = self.zeros_off;
                    let len = self.zeros + 1;
                    self.zeros = 0;
                    self.mode = Mode::Synced;
                    self.stats.packets += 1;
                    self.stats.bytes_in_packets += len;
                    if self.skip_len > 0 {
                        let e = Error {
                            offset: self.skip_off,
                            kind: ErrorKind::Unsynchronized { len: self.skip_len },
                        };
                        self.skip_len = 0;
                        self.stats.errors += 1;
                        self.pending = Some((at, Packet::Sync));
                        return (true, Some(Err(e)));
                    }
                    return (true, Some(Ok((at, Packet::Sync))));
                } else {
                    if self.skip_len == 0 {
                        self.skip_off = if self.zeros > 0 { self.zeros_off } else { off };
                    }
                    let n = self.zeros + 1;
                    self.skip_len += n;
                    self.stats.bytes_skipped += n;
                    self.zeros = 0;
                }
                (true, None)
            }
            Mode::SyncRun => {
                let zeros = self.zeros;
                let at = self.zeros_off;
                if b == 0 {
                    self.zeros += 1;
                    (true, None)
                } else if b == 0x80 && zeros >= SYNC_ZEROS {
                    self.zeros = 0;
                    self.mode = Mode::Synced;
                    self.stats.packets += 1;
                    self.stats.bytes_in_packets += zeros + 1;
                    (true, Some(Ok((at, Packet::Sync))))
                } else {
                    // Not a synchronization packet: the zeros are
                    // reported, and the byte that ended them is read as
                    // the next header.
                    self.zeros = 0;
                    self.mode = Mode::Synced;
                    let e = self.error(at, ErrorKind::BadSync { zeros }, zeros);
                    (false, Some(e))
                }
            }
            Mode::Synced => (false, None),
        }
    }

    /// Removes the first `n` bytes of the carry buffer.
    fn shift_carry(&mut self, n: usize) {
        let n = n.min(self.carry_len);
        self.carry.copy_within(n..self.carry_len, 0);
        self.carry_off.copy_within(n..self.carry_len, 0);
        self.carry_len -= n;
    }

    /// Works on the carried-over bytes (an incomplete packet), pulling more
    /// from the chunk. `None`: the chunk is used up and the packet is still
    /// incomplete.
    fn carry_step(&mut self, chunk: &[u8], pos: &mut usize, base: u64) -> Option<Item> {
        let n = self.carry_len;
        let rest = chunk.get(*pos..).unwrap_or(&[]);
        let k = rest.len().min(CARRY - n);
        let mut tmp = [0u8; CARRY];
        tmp[..n].copy_from_slice(&self.carry[..n]);
        tmp[n..n + k].copy_from_slice(&rest[..k]);
        let (header, off) = (self.carry[0], self.carry_off[0]);
        let take = |me: &mut Self, pos: &mut usize, len: usize| {
            if len <= n {
                me.shift_carry(len);
            } else {
                *pos += len - n;
                me.carry_len = 0;
            }
        };
        match decode(&tmp[..n + k], self.page) {
            Decoded::Packet(len, p) => {
                take(self, pos, len);
                Some(self.packet(off, len, p))
            }
            Decoded::Incomplete => {
                for (i, &b) in rest[..k].iter().enumerate() {
                    self.carry[n + i] = b;
                    self.carry_off[n + i] = base.wrapping_add((*pos + i) as u64);
                }
                self.carry_len = n + k;
                *pos += k;
                if self.carry_len >= CARRY {
                    // Cannot happen: no packet is longer than the buffer.
                    self.carry_len = 0;
                    let kind = ErrorKind::InvalidField {
                        header,
                        field: "packet length",
                        len: CARRY as u8,
                    };
                    return Some(self.error(off, kind, CARRY as u64));
                }
                None
            }
            Decoded::Invalid(kind) => {
                let len = skip_len(&kind);
                take(self, pos, len);
                Some(self.error(off, kind, len as u64))
            }
        }
    }

    /// Returns the next item from `chunk[*pos..]` (after any carried-over
    /// bytes), or `None` when the chunk is used up.
    fn next_item(&mut self, chunk: &[u8], pos: &mut usize, base: u64) -> Option<Item> {
        if let Some(p) = self.pending.take() {
            return Some(Ok(p));
        }
        if self.carry_len > 0 {
            return self.carry_step(chunk, pos, base);
        }
        loop {
            let p = *pos;
            let &b = chunk.get(p)?;
            let off = base.wrapping_add(p as u64);
            if self.mode != Mode::Synced {
                let (consumed, item) = self.sync_byte(b, off);
                if consumed {
                    *pos = p + 1;
                }
                if item.is_some() {
                    return item;
                }
                continue;
            }
            if b == 0 {
                self.mode = Mode::SyncRun;
                self.zeros = 1;
                self.zeros_off = off;
                *pos = p + 1;
                continue;
            }
            let rest = &chunk[p..];
            return match decode(rest, self.page) {
                Decoded::Packet(len, pkt) => {
                    *pos = p + len;
                    Some(self.packet(off, len, pkt))
                }
                Decoded::Incomplete => {
                    self.carry[..rest.len()].copy_from_slice(rest);
                    for (i, o) in self.carry_off[..rest.len()].iter_mut().enumerate() {
                        *o = off.wrapping_add(i as u64);
                    }
                    self.carry_len = rest.len();
                    *pos = chunk.len();
                    None
                }
                Decoded::Invalid(kind) => {
                    let len = skip_len(&kind);
                    *pos = p + len;
                    Some(self.error(off, kind, len as u64))
                }
            };
        }
    }
}

/// Iterator over the items completed by one chunk, see [`Parser::feed`].
///
/// Dropping it before the end still runs the parser over the rest of the
/// chunk (discarding the items), so the next chunk continues correctly.
#[derive(Debug)]
pub struct Packets<'a> {
    parser: &'a mut Parser,
    chunk: &'a [u8],
    pos: usize,
    base: u64,
}

impl Iterator for Packets<'_> {
    type Item = Item;

    #[inline]
    fn next(&mut self) -> Option<Item> {
        self.parser.next_item(self.chunk, &mut self.pos, self.base)
    }
}

impl Drop for Packets<'_> {
    fn drop(&mut self) {
        while self.next().is_some() {}
    }
}
