//! The pull parser: feed chunks, iterate packets.

use crate::config::Config;
use crate::context::Context;
use crate::decode::{decode, fast_branch, fast_cycle_atom, Stop, ATOM_TABLE};
use crate::error::{Error, ErrorKind};
use crate::packet::{Atoms, Packet, MAX_PACKET_LEN};

/// Counters over everything fed to a [`Parser`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Stats {
    /// Bytes passed to `feed` / `feed_at`.
    pub bytes_fed: u64,
    /// Bytes that formed valid packets.
    pub bytes_in_packets: u64,
    /// Bytes skipped: unsynchronized bytes and the bytes of invalid packets.
    pub bytes_skipped: u64,
    /// Valid packets returned.
    pub packets: u64,
    /// Errors returned (including unsynchronized stretches).
    pub errors: u64,
}

/// Where the parser is in the byte grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Looking for an A-sync; skipped bytes accumulate.
    Unsynced,
    /// At a packet boundary, or inside a packet held in the carry buffer.
    Synced,
    /// Synchronized, inside the zero run of an A-sync.
    SyncedZeros,
}

/// A PFT packet parser that accepts its input in chunks of any size.
///
/// It starts unsynchronized: everything before the first A-sync (five or
/// more `0x00` then `0x80`) is skipped and reported as one
/// [`ErrorKind::Unsynchronized`] error when the A-sync is found. After an
/// invalid packet it reports the error and goes back to looking for an
/// A-sync. The items are the same whatever the chunk boundaries, down to
/// one-byte chunks: a packet split across chunks is completed from a small
/// fixed buffer, and all other parsing runs directly on the chunk.
///
/// Like OpenCSD's packet processor, it does not wait for an I-sync after an
/// A-sync: every packet after the A-sync is returned. Compressed branch
/// addresses before the first I-sync are relative to address 0 in ARM
/// state.
///
/// ```
/// use ptm_packets::{Config, Packet, Parser};
/// let mut parser = Parser::new(Config::default());
/// let bytes = [0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x0c, 0x66];
/// let items: Vec<_> = parser.feed(&bytes).collect();
/// assert_eq!(items, vec![Ok((0, Packet::ASync)), Ok((6, Packet::Trigger)), Ok((7, Packet::Ignore))]);
/// assert_eq!(parser.finish(), None);
/// ```
#[derive(Clone, Debug)]
pub struct Parser {
    cfg: Config,
    ctx: Context,
    mode: Mode,
    /// First skipped byte of the pending unsynchronized stretch.
    skip_start: u64,
    /// Length of the pending unsynchronized stretch (zero run excluded).
    skip_len: u64,
    /// Start of the current zero run.
    zero_start: u64,
    /// Length of the current zero run.
    zeros: u64,
    /// Bytes of a packet that straddles chunks.
    carry: [u8; MAX_PACKET_LEN + 1],
    carry_len: usize,
    carry_offset: u64,
    /// An A-sync to return right after the unsynchronized error before it.
    pending: Option<(u64, Packet)>,
    /// Offset of the byte after the last chunk.
    next_offset: u64,
    stats: Stats,
}

impl Parser {
    /// A parser for trace produced under `cfg`, unsynchronized, at offset 0.
    pub fn new(cfg: Config) -> Self {
        Parser {
            cfg,
            ctx: Context::default(),
            mode: Mode::Unsynced,
            skip_start: 0,
            skip_len: 0,
            zero_start: 0,
            zeros: 0,
            carry: [0; MAX_PACKET_LEN + 1],
            carry_len: 0,
            carry_offset: 0,
            pending: None,
            next_offset: 0,
            stats: Stats::default(),
        }
    }

    /// The configuration the parser was built with.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Parses `chunk`, which continues the stream: its first byte's offset is
    /// the end of the previous chunk (0 for the first).
    ///
    /// The returned iterator yields `(offset, packet)` for each packet
    /// completed in this chunk (offset of its first byte, possibly in an
    /// earlier chunk) and the errors found. A packet cut by the end of the
    /// chunk is kept and completed by the next one. Dropping the iterator
    /// early still parses the rest of the chunk, discarding its items, so
    /// that the next chunk continues at the right place.
    pub fn feed<'a>(&'a mut self, chunk: &'a [u8]) -> Packets<'a> {
        let offset = self.next_offset;
        self.feed_at(offset, chunk)
    }

    /// Like [`Parser::feed`], but the chunk's first byte lies at absolute
    /// `offset`. For CoreSight-formatted input, where one source's bytes are
    /// not contiguous in the file: a packet continued from an earlier chunk
    /// keeps the offset of its first byte.
    pub fn feed_at<'a>(&'a mut self, offset: u64, chunk: &'a [u8]) -> Packets<'a> {
        self.next_offset = offset.wrapping_add(chunk.len() as u64);
        Packets {
            lane: self.lane(),
            parser: self,
            chunk,
            pos: 0,
            base: offset,
            packets: 0,
        }
    }

    /// Ends the input. Returns [`ErrorKind::Truncated`] when a packet was
    /// left incomplete, or [`ErrorKind::Unsynchronized`] for skipped bytes
    /// not yet reported; `None` when the input ended on a packet boundary.
    /// The partial state is cleared; the parser keeps its synchronization
    /// and compression state.
    pub fn finish(&mut self) -> Option<Error> {
        let err = match self.mode {
            Mode::Unsynced => {
                let len = self.skip_len + self.zeros;
                let offset = if self.skip_len > 0 {
                    self.skip_start
                } else {
                    self.zero_start
                };
                self.skip_len = 0;
                self.zeros = 0;
                self.stats.bytes_skipped += len;
                (len > 0).then_some(Error {
                    offset,
                    kind: ErrorKind::Unsynchronized { len },
                })
            }
            Mode::SyncedZeros => {
                let len = self.zeros;
                self.zeros = 0;
                self.mode = Mode::Synced;
                self.stats.bytes_skipped += len;
                Some(Error {
                    offset: self.zero_start,
                    kind: ErrorKind::Truncated { header: 0, len },
                })
            }
            Mode::Synced => {
                let len = self.carry_len;
                self.carry_len = 0;
                self.stats.bytes_skipped += len as u64;
                (len > 0).then(|| Error {
                    offset: self.carry_offset,
                    kind: ErrorKind::Truncated {
                        header: self.carry[0],
                        len: len as u64,
                    },
                })
            }
        };
        if err.is_some() {
            self.stats.errors += 1;
        }
        err
    }

    /// Counters over everything fed so far (chunks count once their
    /// iterator is dropped).
    pub fn stats(&self) -> Stats {
        let held = match self.mode {
            Mode::Unsynced => self.skip_len + self.zeros,
            Mode::SyncedZeros => self.zeros,
            Mode::Synced => self.carry_len as u64,
        };
        let mut s = self.stats;
        s.bytes_in_packets = s.bytes_fed.saturating_sub(s.bytes_skipped + held);
        s
    }

    /// Returns to the state of [`Parser::new`]: unsynchronized, offset 0,
    /// compression state and counters cleared.
    pub fn reset(&mut self) {
        *self = Parser::new(self.cfg);
    }

    /// The last timestamp value (natural binary): the base whose high-order
    /// bits complete the low-order bits the next timestamp packet carries.
    pub fn timestamp(&self) -> u64 {
        self.ctx.ts
    }

    /// Sets the base of [`Parser::timestamp`], for a parser that joins a
    /// stream part-way and knows (or guesses) the timestamp before it.
    pub fn set_timestamp(&mut self, value: u64) {
        self.ctx.ts = value;
    }

    /// Whether `self` and `other` parse any continuation of the stream
    /// alike: same configuration, synchronization, partly received packet
    /// and compression state (address, instruction set, timestamp), and
    /// the same next offset. Their counters may differ. Two parsers that
    /// started at different points of one stream and agree here return the
    /// same items from then on, which lets a stream be parsed in pieces
    /// started independently and checked where they meet.
    pub fn same_state(&self, other: &Parser) -> bool {
        let carry = self.carry_len;
        self.cfg == other.cfg
            && self.ctx == other.ctx
            && self.mode == other.mode
            && self.skip_len == other.skip_len
            && (self.skip_len == 0 || self.skip_start == other.skip_start)
            && self.zeros == other.zeros
            && (self.zeros == 0 || self.zero_start == other.zero_start)
            && carry == other.carry_len
            && self.carry[..carry] == other.carry[..carry]
            && (carry == 0 || self.carry_offset == other.carry_offset)
            && self.pending == other.pending
            && self.next_offset == other.next_offset
    }

    #[cold]
    fn fail(&mut self, offset: u64, len: u64, kind: ErrorKind) -> Item {
        self.mode = Mode::Unsynced;
        self.stats.errors += 1;
        self.stats.bytes_skipped += len;
        Err(Error { offset, kind })
    }

    /// An A-sync was completed at `self.zero_start`; returns the first item
    /// to yield (the pending unsynchronized stretch, if any, comes first).
    fn found_async(&mut self) -> Item {
        let at = self.zero_start;
        self.zeros = 0;
        self.mode = Mode::Synced;
        self.stats.packets += 1;
        if self.skip_len > 0 {
            let skipped = self.skip_len;
            self.skip_len = 0;
            self.stats.errors += 1;
            self.stats.bytes_skipped += skipped;
            self.pending = Some((at, Packet::ASync));
            return Err(Error {
                offset: self.skip_start,
                kind: ErrorKind::Unsynchronized { len: skipped },
            });
        }
        Ok((at, Packet::ASync))
    }
}

/// Iterator over the packets and errors of one chunk; see [`Parser::feed`].
///
/// Dropping it before the end still consumes the rest of the chunk.
pub struct Packets<'a> {
    parser: &'a mut Parser,
    chunk: &'a [u8],
    pos: usize,
    base: u64,
    /// The header classes of the fast paths usable now.
    lane: Lane,
    /// Packets decoded on the fast paths, added to the stats on drop.
    packets: u64,
}

impl core::fmt::Debug for Packets<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Packets")
            .field("offset", &(self.base + self.pos as u64))
            .field(
                "remaining",
                &(self.chunk.len() - self.pos.min(self.chunk.len())),
            )
            .finish_non_exhaustive()
    }
}

/// The slow path's view of a [`Packets`]: a copy of its position, so that
/// the hot fields of `Packets` never escape into non-inlined code.
struct Slow<'a, 'p> {
    parser: &'p mut Parser,
    chunk: &'a [u8],
    pos: usize,
    base: u64,
}

impl Slow<'_, '_> {
    /// Scans for an A-sync. Returns an item when one is found.
    fn scan_unsynced(&mut self) -> Option<Item> {
        let p = &mut *self.parser;
        let rest = self.chunk.get(self.pos..).unwrap_or(&[]);
        for (i, &b) in rest.iter().enumerate() {
            let off = self.base.wrapping_add((self.pos + i) as u64);
            if b == 0 {
                if p.zeros == 0 {
                    p.zero_start = off;
                }
                p.zeros += 1;
            } else if b == 0x80 && p.zeros >= 5 {
                self.pos += i + 1;
                return Some(p.found_async());
            } else {
                if p.skip_len == 0 {
                    p.skip_start = if p.zeros > 0 { p.zero_start } else { off };
                }
                p.skip_len += p.zeros + 1;
                p.zeros = 0;
            }
        }
        self.pos = self.chunk.len();
        None
    }

    /// Continues the zero run of an A-sync while synchronized.
    fn scan_zeros(&mut self) -> Option<Item> {
        let p = &mut *self.parser;
        let rest = self.chunk.get(self.pos..).unwrap_or(&[]);
        for (i, &b) in rest.iter().enumerate() {
            if b == 0 {
                p.zeros += 1;
                continue;
            }
            if b == 0x80 && p.zeros >= 5 {
                self.pos += i + 1;
                return Some(p.found_async());
            }
            // The run is not an A-sync: report it; the byte that ended it
            // is scanned again while unsynchronized.
            self.pos += i;
            let zeros = p.zeros;
            p.zeros = 0;
            return Some(p.fail(p.zero_start, zeros, ErrorKind::BadASync { zeros }));
        }
        self.pos = self.chunk.len();
        None
    }

    /// Completes the packet held in the carry buffer.
    fn complete_carry(&mut self) -> Option<Item> {
        let p = &mut *self.parser;
        let k = p.carry_len;
        let rest = self.chunk.get(self.pos..).unwrap_or(&[]);
        let take = rest.len().min(p.carry.len() - k);
        let mut tmp = [0u8; MAX_PACKET_LEN + 1];
        tmp[..k].copy_from_slice(&p.carry[..k]);
        tmp[k..k + take].copy_from_slice(&rest[..take]);
        let offset = p.carry_offset;
        match decode(&p.cfg, &mut p.ctx, &tmp[..k + take]) {
            Ok((len, packet)) => {
                self.pos += len.saturating_sub(k);
                p.carry_len = 0;
                p.stats.packets += 1;
                Some(Ok((offset, packet)))
            }
            Err(Stop::Incomplete) if k + take < p.carry.len() => {
                p.carry[k..k + take].copy_from_slice(&rest[..take]);
                p.carry_len = k + take;
                self.pos += take;
                None
            }
            Err(Stop::Incomplete) => {
                // Unreachable: no packet is longer than the buffer. Drop
                // the bytes rather than loop.
                self.pos += take;
                p.carry_len = 0;
                let header = p.carry[0];
                let len = (k + take) as u64;
                Some(p.fail(offset, len, ErrorKind::Truncated { header, len }))
            }
            Err(Stop::Invalid(len, kind)) => {
                self.pos += len.saturating_sub(k);
                p.carry_len = 0;
                Some(p.fail(offset, len as u64, kind))
            }
        }
    }
}

/// What [`Packets`] yields.
type Item = Result<(u64, Packet), Error>;

/// A lane: the header classes of the fast paths usable in one parser
/// state, indexed by header byte. An entry is [`GENERAL`] (out-of-line
/// path), [`BRANCH`], [`CYCLE_BRANCH`], [`CYCLE_ATOM`], or else (at least
/// `1 << 5`) a non cycle-accurate atom header's [`ATOM_TABLE`] entry.
type Lane = &'static [u8; 256];

/// Lane entry: decode with the out-of-line general path.
const GENERAL: u8 = 0;
/// Lane entry: branch address, not cycle-accurate.
const BRANCH: u8 = 1;
/// Lane entry: branch address, cycle-accurate.
const CYCLE_BRANCH: u8 = 2;
/// Lane entry: cycle-accurate atom.
const CYCLE_ATOM: u8 = 3;
const _: () = assert!(CYCLE_ATOM < 1 << 5);

/// The lane of a synchronized parser at a packet boundary.
const fn build_lane(cycle_accurate: bool) -> [u8; 256] {
    let mut t = [GENERAL; 256];
    let mut i = 0;
    while i < 256 {
        let header = i as u8;
        t[i] = if header & 1 == 1 {
            if cycle_accurate {
                CYCLE_BRANCH
            } else {
                BRANCH
            }
        } else if header & 0x80 != 0 && cycle_accurate {
            CYCLE_ATOM
        } else {
            // Reserved atom headers are 0: the general path reports them.
            ATOM_TABLE[i]
        };
        i += 1;
    }
    t
}

/// Not synchronized, or a packet is carried over or pending: everything
/// goes through the general path.
static LANE_SLOW: [u8; 256] = [GENERAL; 256];
/// Synchronized, not cycle-accurate.
static LANE_PLAIN: [u8; 256] = build_lane(false);
/// Synchronized, cycle-accurate.
static LANE_CYCLES: [u8; 256] = build_lane(true);

impl Parser {
    /// Synchronized at a packet boundary, nothing carried over or pending:
    /// the next packet can be decoded straight from the chunk.
    fn at_boundary(&self) -> bool {
        self.mode == Mode::Synced && self.carry_len == 0 && self.pending.is_none()
    }

    /// The lane usable in the current state.
    fn lane(&self) -> Lane {
        if !self.at_boundary() {
            &LANE_SLOW
        } else if self.cfg.cycle_accurate() {
            &LANE_CYCLES
        } else {
            &LANE_PLAIN
        }
    }
}

impl Iterator for Packets<'_> {
    type Item = Result<(u64, Packet), Error>;

    /// Atoms and branch addresses (most of any trace) are decoded inline;
    /// everything else goes through an out-of-line call.
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(&header) = self.chunk.get(self.pos) {
            let offset = self.base.wrapping_add(self.pos as u64);
            let class = self.lane[usize::from(header)];
            if class >= 1 << 5 {
                self.pos += 1;
                self.packets += 1;
                let atoms = Atoms::from_table(class);
                return Some(Ok((
                    offset,
                    Packet::Atom {
                        atoms,
                        cycles: None,
                    },
                )));
            }
            let fast = match class {
                BRANCH => self
                    .word::<8>()
                    .and_then(|w| fast_branch(&mut self.parser.ctx, w, false)),
                CYCLE_BRANCH => self
                    .word::<16>()
                    .and_then(|w| fast_branch(&mut self.parser.ctx, w, true)),
                CYCLE_ATOM => self.word::<16>().map(fast_cycle_atom),
                _ => None,
            };
            if let Some((len, packet)) = fast {
                self.pos += len;
                self.packets += 1;
                return Some(Ok((offset, packet)));
            }
        }
        let (pos, lane, item) = next_general(self.parser, self.chunk, self.base, self.pos);
        self.pos = pos;
        self.lane = lane;
        item
    }
}

impl Packets<'_> {
    /// The next `N` bytes (8 or 16) as a little-endian word, if the chunk
    /// holds that many.
    #[inline(always)]
    fn word<const N: usize>(&self) -> Option<u128> {
        let bytes: [u8; N] = self.chunk.get(self.pos..)?.get(..N)?.try_into().ok()?;
        let mut full = [0u8; 16];
        full[..N].copy_from_slice(&bytes);
        Some(u128::from_le_bytes(full))
    }
}

/// Every packet the inlined fast paths leave, and all state changes.
/// Takes the iterator's fields by value and returns the new position and
/// lane, so that `Packets` itself never escapes into non-inlined code (its
/// fields can then live in registers in the caller's loop).
#[inline(never)]
fn next_general(
    parser: &mut Parser,
    chunk: &[u8],
    base: u64,
    pos: usize,
) -> (usize, Lane, Option<Item>) {
    if parser.at_boundary() {
        let rest = chunk.get(pos..).unwrap_or(&[]);
        let Some(&header) = rest.first() else {
            return (pos, parser.lane(), None);
        };
        if header != 0 {
            if let Ok((len, packet)) = decode(&parser.cfg, &mut parser.ctx, rest) {
                parser.stats.packets += 1;
                let offset = base.wrapping_add(pos as u64);
                return (pos + len, parser.lane(), Some(Ok((offset, packet))));
            }
        }
    }
    let mut slow = Slow {
        parser,
        chunk,
        pos,
        base,
    };
    let item = slow.next_slow();
    (slow.pos, slow.parser.lane(), item)
}

impl Slow<'_, '_> {
    #[inline(never)]
    fn next_slow(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.parser.pending.take() {
                return Some(Ok(item));
            }
            let rest = self.chunk.get(self.pos..).unwrap_or(&[]);
            let &header = rest.first()?;
            match self.parser.mode {
                Mode::Synced => {
                    if self.parser.carry_len > 0 {
                        if let Some(item) = self.complete_carry() {
                            return Some(item);
                        }
                        continue;
                    }
                    let offset = self.base.wrapping_add(self.pos as u64);
                    if header == 0 {
                        let p = &mut *self.parser;
                        p.mode = Mode::SyncedZeros;
                        p.zero_start = offset;
                        p.zeros = 0;
                        continue;
                    }
                    let p = &mut *self.parser;
                    match decode(&p.cfg, &mut p.ctx, rest) {
                        Ok((len, packet)) => {
                            self.pos += len;
                            p.stats.packets += 1;
                            return Some(Ok((offset, packet)));
                        }
                        Err(Stop::Incomplete) => {
                            // Shorter than a packet, so it fits.
                            let n = rest.len().min(p.carry.len());
                            p.carry[..n].copy_from_slice(&rest[..n]);
                            p.carry_len = n;
                            p.carry_offset = offset;
                            self.pos += n;
                        }
                        Err(Stop::Invalid(len, kind)) => {
                            self.pos += len;
                            return Some(p.fail(offset, len as u64, kind));
                        }
                    }
                }
                Mode::SyncedZeros => {
                    if let Some(item) = self.scan_zeros() {
                        return Some(item);
                    }
                }
                Mode::Unsynced => {
                    if let Some(item) = self.scan_unsynced() {
                        return Some(item);
                    }
                }
            }
        }
    }
}

impl Drop for Packets<'_> {
    /// Small enough to inline: the iterator's fields are passed by value,
    /// so the iterator itself never escapes and can live in registers.
    #[inline]
    fn drop(&mut self) {
        drain(self.parser, self.chunk, self.base, self.pos, self.packets);
    }
}

/// Parses what is left of a chunk whose iterator is dropped (nothing, when
/// it was iterated to the end), discarding the items, and settles the
/// counters.
#[inline(never)]
fn drain(parser: &mut Parser, chunk: &[u8], base: u64, mut pos: usize, packets: u64) {
    loop {
        let (next, _, item) = next_general(parser, chunk, base, pos);
        pos = next;
        if item.is_none() {
            break;
        }
    }
    parser.stats.packets += packets;
    parser.stats.bytes_fed += chunk.len() as u64;
}
