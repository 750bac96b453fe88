//! The pull parser: feed chunks, iterate packets.

use crate::config::Config;
use crate::decode::{decode, quick_branch, Decoded, MAX_PACKET_LEN};
use crate::error::{Error, ErrorKind};
use crate::header::{classify, decode_pheader, Class};
use crate::packet::{Atoms, Packet};
use crate::state::State;

/// Size of the carry-over buffer for packets split across chunks.
const CARRY: usize = 32;
const _: () = assert!(CARRY > MAX_PACKET_LEN);

/// Bytes from an I-sync candidate's header that must parse as valid
/// packets before the parser synchronizes at it (see
/// [`Config::with_isync_sync`]).
const PROBE: usize = 24;
const _: () = assert!(PROBE < CARRY && PROBE > MAX_PACKET_LEN);

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
    /// Bytes skipped: unsynchronized bytes, header bytes of invalid
    /// packets, malformed A-sync runs, truncated trailing packets.
    pub bytes_skipped: u64,
    /// Valid packets returned.
    pub packets: u64,
    /// Errors returned.
    pub errors: u64,
    /// Synchronizations at an I-sync rather than an A-sync
    /// ([`Config::with_isync_sync`]).
    pub isync_syncs: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Looking for an A-sync sequence.
    Unsync,
    /// Synchronized, at a packet boundary.
    Synced,
    /// Synchronized, inside a run of `0x00` bytes (an A-sync packet).
    ASyncRun,
}

/// Header classification tables for one configuration.
#[derive(Clone, Debug)]
struct Tables {
    class: [Class; 256],
    /// Decoded P-headers, indexed by `header & 0x7F` (`None`: reserved or
    /// not a P-header).
    atoms: [Option<Atoms>; 128],
}

impl Tables {
    fn new(cfg: &Config) -> Self {
        let mut t = Self {
            class: [Class::Reserved; 256],
            atoms: [None; 128],
        };
        for b in 0..=255u8 {
            t.class[usize::from(b)] = classify(b, cfg);
            if b & 0x81 == 0x80 {
                t.atoms[usize::from(b & 0x7F)] = decode_pheader(b, cfg);
            }
        }
        t
    }
}

/// A stateful, resumable ETMv3 packet parser.
///
/// Feed it chunks with [`feed`](Self::feed) (contiguous input) or
/// [`feed_at`](Self::feed_at) (input whose chunks lie at known offsets,
/// e.g. one trace ID's bytes of a CoreSight-formatted buffer) and iterate
/// the returned [`Packets`]. The sequence of items does not depend on
/// where the chunk boundaries fall: a packet split across chunks is held
/// in a fixed internal buffer and returned (with the offset of its first
/// byte) once complete, and unsynchronized bytes are reported as one
/// [`ErrorKind::Unsynchronized`] item per stretch.
///
/// Before the first A-sync the parser is unsynchronized. After an invalid
/// packet (a reserved header, a header only valid with data trace when
/// data trace is off, an invalid field, a malformed A-sync) it reports
/// the error, skips the header byte and goes on with the next byte, as
/// OpenCSD does; the address bits known so far are forgotten
/// ([`Branch::known_bits`](crate::Branch::known_bits)), since the lost
/// packets may have moved the compression base. Like OpenCSD's packet lister, every packet after an
/// A-sync is returned, including those before the first I-sync (their
/// compressed addresses are relative to whatever state the parser had).
#[derive(Clone, Debug)]
pub struct Parser {
    cfg: Config,
    tables: Tables,
    st: State,
    mode: Mode,
    /// Unsynchronized bytes not yet reported, and the first one's offset.
    skip_len: u64,
    skip_off: u64,
    /// Current run of zero bytes and its first offset.
    zeros: u64,
    zeros_off: u64,
    carry: [u8; CARRY],
    carry_off: [u64; CARRY],
    carry_len: usize,
    /// The parser has been synchronized (at an A-sync or an I-sync): once
    /// lost, synchronization comes back at an A-sync only.
    was_synced: bool,
    /// Packets were lost since the last A-sync.
    damaged: bool,
    /// Packets were lost since the last A-sync: timestamps are not
    /// trusted.
    ts_suspect: bool,
    /// An I-sync candidate and the bytes after it, while unsynchronized.
    probe: [u8; PROBE],
    probe_off: [u64; PROBE],
    probe_len: usize,
    pending: Option<(u64, Packet)>,
    next_offset: u64,
    stats: Stats,
    /// P-headers returned by the fast path (not yet in `stats`).
    fast_pheaders: u64,
    /// Synchronized at a packet boundary with nothing carried over or
    /// pending: the iterator may take its P-header fast path.
    hot: bool,
}

impl Parser {
    /// A parser for a trace source programmed as `cfg`, unsynchronized,
    /// with offsets starting at 0.
    #[must_use]
    pub fn new(cfg: Config) -> Self {
        Self {
            tables: Tables::new(&cfg),
            cfg,
            st: State::default(),
            mode: Mode::Unsync,
            skip_len: 0,
            skip_off: 0,
            zeros: 0,
            zeros_off: 0,
            carry: [0; CARRY],
            carry_off: [0; CARRY],
            carry_len: 0,
            was_synced: false,
            damaged: false,
            ts_suspect: false,
            probe: [0; PROBE],
            probe_off: [0; PROBE],
            probe_len: 0,
            pending: None,
            next_offset: 0,
            stats: Stats::default(),
            fast_pheaders: 0,
            hot: false,
        }
    }

    /// The configuration this parser decodes with.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Continues the stream with `chunk`, whose first byte lies just after
    /// the previous chunk (offset 0 for the first chunk).
    ///
    /// The returned iterator yields the packets completed by this chunk.
    /// Dropping it before it is exhausted still parses (and discards) the
    /// rest of the chunk, so the parser state stays consistent.
    pub fn feed<'a>(&'a mut self, chunk: &'a [u8]) -> Packets<'a> {
        let at = self.next_offset;
        self.feed_at(at, chunk)
    }

    /// Continues the stream with `chunk`, whose first byte lies at
    /// absolute `offset` (for input whose bytes are not contiguous in the
    /// file, such as one trace ID of CoreSight-formatted trace). Later
    /// calls to [`feed`](Self::feed) continue from `offset + chunk.len()`.
    ///
    /// See [`feed`](Self::feed) for the iterator.
    pub fn feed_at<'a>(&'a mut self, offset: u64, chunk: &'a [u8]) -> Packets<'a> {
        self.next_offset = offset.wrapping_add(chunk.len() as u64);
        self.stats.bytes_fed += chunk.len() as u64;
        let hot = self.hot;
        Packets {
            parser: self,
            chunk,
            fast: if hot { chunk } else { &[] },
            pos: 0,
            base: offset,
            slow_bytes: 0,
            hot,
        }
    }

    /// Ends the input. Reports a packet left incomplete at the end
    /// ([`ErrorKind::Truncated`]) or unsynchronized bytes not yet reported
    /// ([`ErrorKind::Unsynchronized`]); `None` if the input ended cleanly.
    /// The parser can be fed again afterwards (the incomplete bytes are
    /// dropped).
    pub fn finish(&mut self) -> Option<Error> {
        let e = self.finish_inner();
        self.update_hot();
        e
    }

    fn update_hot(&mut self) {
        self.hot = self.mode == Mode::Synced && self.carry_len == 0 && self.pending.is_none();
    }

    fn finish_inner(&mut self) -> Option<Error> {
        self.pending = None;
        if self.probe_len > 0 {
            // An I-sync candidate the input ends too soon to confirm.
            let n = self.probe_len as u64;
            if self.skip_len == 0 {
                self.skip_off = self.probe_off[0];
            }
            self.skip_len += n;
            self.stats.bytes_skipped += n;
            self.probe_len = 0;
        }
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
            Mode::ASyncRun => {
                let e = Error {
                    offset: self.zeros_off,
                    kind: ErrorKind::Truncated {
                        header: 0,
                        len: usize::try_from(self.zeros).unwrap_or(usize::MAX),
                    },
                };
                self.stats.bytes_skipped += self.zeros;
                self.zeros = 0;
                self.mode = Mode::Unsync;
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

    /// Tells the parser that bytes of its stream were lost before the next
    /// byte it is fed (e.g. the frames of a TPIU stream were realigned):
    /// the address bits known so far are forgotten, and at the next
    /// A-sync the last timestamp and data address, which the lost or
    /// damaged packets may have changed, start afresh.
    pub fn note_loss(&mut self) {
        self.lost_packet();
    }

    /// Counters since creation (or the last [`reset`](Self::reset)).
    #[must_use]
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.packets += self.fast_pheaders;
        s.bytes_in_packets += self.fast_pheaders;
        s
    }

    /// Back to the state of [`Parser::new`] with the same configuration:
    /// unsynchronized, decompression state, buffered bytes and counters
    /// cleared, offsets starting at 0 again.
    pub fn reset(&mut self) {
        *self = Self::new(self.cfg);
    }

    /// The last timestamp value (natural binary): the base whose high-order
    /// bits complete the low-order bits the next timestamp packet carries.
    #[must_use]
    pub fn timestamp(&self) -> u64 {
        if self.cfg.timestamp_gray() {
            crate::state::from_gray(self.st.ts_raw)
        } else {
            self.st.ts_raw
        }
    }

    /// Sets the base of [`Parser::timestamp`], for a parser that joins a
    /// stream part-way and knows (or guesses) the timestamp before it.
    pub fn set_timestamp(&mut self, value: u64) {
        self.st.ts_raw = if self.cfg.timestamp_gray() {
            crate::state::to_gray(value)
        } else {
            value
        };
    }

    /// Whether `self` and `other` parse any continuation of the stream
    /// alike: same configuration, synchronization, partly received packet
    /// and decompression state (addresses, instruction set, security
    /// state, timestamp), and the same next offset. Their counters may
    /// differ. Two parsers that started at different points of one stream
    /// and agree here return the same items from then on, which lets a
    /// stream be parsed in pieces started independently and checked where
    /// they meet.
    #[must_use]
    pub fn same_state(&self, other: &Self) -> bool {
        let carry = self.carry_len;
        self.cfg == other.cfg
            && self.st == other.st
            && self.mode == other.mode
            && self.skip_len == other.skip_len
            && (self.skip_len == 0 || self.skip_off == other.skip_off)
            && self.zeros == other.zeros
            && (self.zeros == 0 || self.zeros_off == other.zeros_off)
            && carry == other.carry_len
            && self.carry[..carry] == other.carry[..carry]
            && self.carry_off[..carry] == other.carry_off[..carry]
            && self.was_synced == other.was_synced
            && self.damaged == other.damaged
            && self.ts_suspect == other.ts_suspect
            && self.probe_len == other.probe_len
            && self.probe[..self.probe_len] == other.probe[..self.probe_len]
            && self.probe_off[..self.probe_len] == other.probe_off[..self.probe_len]
            && self.pending == other.pending
            && self.next_offset == other.next_offset
    }

    #[inline]
    fn packet(&mut self, off: u64, len: usize, p: Packet) -> Item {
        self.st.apply(&p, &self.cfg);
        let p = self.checked_timestamp(p);
        self.stats.packets += 1;
        self.stats.bytes_in_packets += len as u64;
        Ok((off, p))
    }

    /// After an invalid packet: parsing goes on at the next byte (its
    /// header byte is skipped), as OpenCSD's packet processor does, but
    /// the packets that were lost may have changed the address the next
    /// compressed addresses build on, so none of its bits is known until
    /// an I-sync or a full address.
    #[cold]
    fn lost_packet(&mut self) {
        self.st.known_bits = 0;
        self.damaged = true;
        self.ts_suspect = true;
    }

    /// At an A-sync: when packets were lost since the last one, the last
    /// timestamp and data address the state holds may come from damaged
    /// bytes; the values compressed against them start afresh, as at the
    /// start of a stream.
    fn resync(&mut self) {
        self.was_synced = true;
        self.ts_suspect = false;
        if self.damaged {
            self.damaged = false;
            self.st.ts_raw = 0;
            self.st.data_addr = 0;
        }
    }

    /// A timestamp after packets were lost and before the next A-sync: a
    /// compressed one completes a base the lost packets may have changed,
    /// and even a full one may have been read from damaged bytes. Its
    /// value is reported as 0, unknown.
    #[inline(always)]
    fn checked_timestamp(&self, p: Packet) -> Packet {
        match p {
            Packet::Timestamp(t) if self.ts_suspect => {
                Packet::Timestamp(crate::Timestamp { value: 0, ..t })
            }
            _ => p,
        }
    }

    #[cold]
    fn error(&mut self, offset: u64, kind: ErrorKind, skipped: u64) -> Item {
        self.stats.errors += 1;
        self.stats.bytes_skipped += skipped;
        Err(Error { offset, kind })
    }

    /// One byte while unsynchronized or inside an A-sync run. Returns
    /// whether the byte was consumed, and the item produced, if any.
    #[cold]
    fn sync_byte(&mut self, b: u8, off: u64) -> (bool, Option<Item>) {
        match self.mode {
            Mode::Unsync if self.probe_len > 0 => {
                self.probe[self.probe_len] = b;
                self.probe_off[self.probe_len] = off;
                self.probe_len += 1;
                if self.probe_len < PROBE {
                    return (true, None);
                }
                (true, self.end_probe())
            }
            Mode::Unsync
                if self.cfg.isync_sync()
                    && !self.was_synced
                    && !self.cfg.data_only()
                    && (b == 0x08 || (b == 0x70 && self.cfg.cycle_accurate())) =>
            {
                // A possible I-sync: zeros before it were no A-sync.
                if self.zeros > 0 {
                    if self.skip_len == 0 {
                        self.skip_off = self.zeros_off;
                    }
                    self.skip_len += self.zeros;
                    self.stats.bytes_skipped += self.zeros;
                    self.zeros = 0;
                }
                self.probe[0] = b;
                self.probe_off[0] = off;
                self.probe_len = 1;
                (true, None)
            }
            Mode::Unsync => {
                if b == 0 {
                    if self.zeros == 0 {
                        self.zeros_off = off;
                    }
                    self.zeros += 1;
                    (true, None)
                } else if b == 0x80 && self.zeros >= 5 {
                    let a_off = self.zeros_off;
                    let len = self.zeros + 1;
                    self.zeros = 0;
                    self.mode = Mode::Synced;
                    self.resync();
                    self.stats.packets += 1;
                    self.stats.bytes_in_packets += len;
                    if self.skip_len > 0 {
                        let e = Error {
                            offset: self.skip_off,
                            kind: ErrorKind::Unsynchronized { len: self.skip_len },
                        };
                        self.skip_len = 0;
                        self.stats.errors += 1;
                        self.pending = Some((a_off, Packet::ASync));
                        (true, Some(Err(e)))
                    } else {
                        (true, Some(Ok((a_off, Packet::ASync))))
                    }
                } else {
                    if self.skip_len == 0 {
                        self.skip_off = if self.zeros > 0 { self.zeros_off } else { off };
                    }
                    let n = self.zeros + 1;
                    self.skip_len += n;
                    self.stats.bytes_skipped += n;
                    self.zeros = 0;
                    (true, None)
                }
            }
            Mode::ASyncRun => {
                let zeros = self.zeros;
                let at = self.zeros_off;
                if b == 0 {
                    self.zeros += 1;
                    (true, None)
                } else if b == 0x80 && zeros >= 5 {
                    self.zeros = 0;
                    self.mode = Mode::Synced;
                    self.resync();
                    self.stats.packets += 1;
                    self.stats.bytes_in_packets += zeros + 1;
                    (true, Some(Ok((at, Packet::ASync))))
                } else {
                    // Not an A-sync: the zeros are reported, and the byte
                    // that ended them is parsed as the next header.
                    self.zeros = 0;
                    self.mode = Mode::Synced;
                    self.lost_packet();
                    let e = self.error(at, ErrorKind::BadASync { zeros }, zeros);
                    (false, Some(e))
                }
            }
            Mode::Synced => (false, None),
        }
    }

    /// Decides on the I-sync candidate in the probe: synchronizes at it
    /// (returning it, or the report of the bytes skipped before it with the
    /// I-sync pending) and parses the bytes after it next; or skips its
    /// header byte and scans the bytes after it again.
    #[cold]
    fn end_probe(&mut self) -> Option<Item> {
        let n = self.probe_len;
        self.probe_len = 0;
        let probe = self.probe;
        let offs = self.probe_off;
        match self.confirm_isync(&probe[..n]) {
            Some((len, p)) => {
                self.mode = Mode::Synced;
                self.was_synced = true;
                self.stats.isync_syncs += 1;
                self.unshift_carry(&probe[len..n], &offs[len..n]);
                let off = offs[0];
                self.st.apply(&p, &self.cfg);
                self.stats.packets += 1;
                self.stats.bytes_in_packets += len as u64;
                if self.skip_len > 0 {
                    let e = Error {
                        offset: self.skip_off,
                        kind: ErrorKind::Unsynchronized { len: self.skip_len },
                    };
                    self.skip_len = 0;
                    self.stats.errors += 1;
                    self.pending = Some((off, p));
                    Some(Err(e))
                } else {
                    Some(Ok((off, p)))
                }
            }
            None => {
                if self.skip_len == 0 {
                    self.skip_off = offs[0];
                }
                self.skip_len += 1;
                self.stats.bytes_skipped += 1;
                self.unshift_carry(&probe[1..n], &offs[1..n]);
                None
            }
        }
    }

    /// The I-sync at the start of `bytes` and its length, if its fields
    /// are valid for this configuration and the bytes after it parse as
    /// valid packets (up to the end of `bytes`, or an A-sync).
    fn confirm_isync(&self, bytes: &[u8]) -> Option<(usize, Packet)> {
        let fresh = State::default();
        let class = self.tables.class[usize::from(*bytes.first()?)];
        let Decoded::Packet(len, p) = decode(bytes, class, &self.cfg, &fresh) else {
            return None;
        };
        let Packet::ISync(sync) = p else {
            return None;
        };
        if bytes[0] == 0x08 {
            let info = *bytes.get(1 + self.cfg.context_id_size().bytes())?;
            let cfg = &self.cfg;
            let alt_ok = cfg.version() >= crate::EtmVersion::V3_3;
            let hyp_ok = cfg.version() >= crate::EtmVersion::V3_5 && cfg.virtualization();
            // Bit 0 is not defined; the ETMs seen (Cortex-A7, Cortex-M4)
            // write 1 there.
            if info & 0x01 == 0
                || info & 0x10 != 0
                || (info & 0x08 != 0 && !cfg.security_extensions())
                || (info & 0x04 != 0 && !alt_ok)
                || (info & 0x02 != 0 && !hyp_ok)
            {
                return None;
            }
        }
        if (sync.isa() == crate::Isa::Arm && sync.address() & 3 != 0)
            || (sync.lsip().is_some() && sync.reason() == crate::Reason::Periodic)
        {
            // LSiP I-syncs are never periodic (they come at trace start).
            return None;
        }
        let mut st = fresh;
        st.apply(&p, &self.cfg);
        let mut pos = len;
        while let Some(&b) = bytes.get(pos) {
            if b == 0 {
                break;
            }
            let class = self.tables.class[usize::from(b)];
            match decode(&bytes[pos..], class, &self.cfg, &st) {
                Decoded::Packet(l, q) => {
                    st.apply(&q, &self.cfg);
                    pos += l;
                }
                Decoded::Incomplete => break,
                Decoded::Invalid(_) => return None,
            }
        }
        Some((len, p))
    }

    /// Puts `bytes` (at `offs`) before the carried-over bytes.
    fn unshift_carry(&mut self, bytes: &[u8], offs: &[u64]) {
        let n = bytes.len().min(CARRY - self.carry_len);
        self.carry.copy_within(..self.carry_len, n);
        self.carry_off.copy_within(..self.carry_len, n);
        self.carry[..n].copy_from_slice(&bytes[..n]);
        self.carry_off[..n].copy_from_slice(&offs[..n]);
        self.carry_len += n;
    }

    /// Removes the first `n` bytes of the carry buffer.
    fn shift_carry(&mut self, n: usize) {
        let n = n.min(self.carry_len);
        self.carry.copy_within(n..self.carry_len, 0);
        self.carry_off.copy_within(n..self.carry_len, 0);
        self.carry_len -= n;
    }

    /// Works on the carried-over bytes, pulling more from the chunk as
    /// needed. Returns an item, or `None` when the carry is empty (go on
    /// with the chunk) or the chunk is used up (the carry holds the start
    /// of an incomplete packet).
    #[cold]
    fn carry_step(&mut self, chunk: &[u8], pos: &mut usize, base: u64) -> Option<Item> {
        while self.carry_len > 0 {
            if self.mode != Mode::Synced {
                let (b, off) = (self.carry[0], self.carry_off[0]);
                self.shift_carry(1);
                let (consumed, item) = self.sync_byte(b, off);
                if !consumed {
                    self.unshift_carry(&[b], &[off]);
                }
                if item.is_some() {
                    return item;
                }
                continue;
            }
            let n = self.carry_len;
            let header = self.carry[0];
            let off = self.carry_off[0];
            if header == 0 {
                self.mode = Mode::ASyncRun;
                self.zeros = 1;
                self.zeros_off = off;
                self.shift_carry(1);
                continue;
            }
            let rest = chunk.get(*pos..).unwrap_or(&[]);
            let k = rest.len().min(CARRY - n);
            let mut tmp = [0u8; CARRY];
            tmp[..n].copy_from_slice(&self.carry[..n]);
            tmp[n..n + k].copy_from_slice(&rest[..k]);
            let class = self.tables.class[usize::from(header)];
            match decode(&tmp[..n + k], class, &self.cfg, &self.st) {
                Decoded::Packet(len, p) => {
                    if len <= n {
                        self.shift_carry(len);
                    } else {
                        *pos += len - n;
                        self.carry_len = 0;
                    }
                    return Some(self.packet(off, len, p));
                }
                Decoded::Incomplete if n + k < CARRY => {
                    for (i, &b) in rest[..k].iter().enumerate() {
                        self.carry[n + i] = b;
                        self.carry_off[n + i] = base.wrapping_add((*pos + i) as u64);
                    }
                    self.carry_len = n + k;
                    *pos += k;
                    return None;
                }
                Decoded::Incomplete => {
                    // Cannot happen: no packet is longer than the buffer.
                    self.shift_carry(1);
                    self.lost_packet();
                    let kind = ErrorKind::InvalidField {
                        header,
                        field: "packet length",
                    };
                    return Some(self.error(off, kind, 1));
                }
                Decoded::Invalid(kind) => {
                    self.shift_carry(1);
                    self.lost_packet();
                    return Some(self.error(off, kind, 1));
                }
            }
        }
        None
    }

    /// The general path of [`Packets::next`]: takes and returns the
    /// position by value so the iterator's fields stay in registers on the
    /// fast path. Leaves `self.hot` up to date.
    #[inline(always)]
    fn next_slow(&mut self, chunk: &[u8], pos: usize, base: u64) -> Slow {
        let mut pos = pos;
        let item = self.next_item(chunk, &mut pos, base);
        Slow { pos, item }
    }

    /// Returns the next item from `chunk[*pos..]` (after any carried-over
    /// bytes), or `None` when the chunk is used up. Leaves `self.hot` up to
    /// date.
    #[inline(always)]
    fn next_item(&mut self, chunk: &[u8], pos: &mut usize, base: u64) -> Option<Item> {
        if self.pending.is_some() || self.carry_len > 0 || self.mode != Mode::Synced {
            let item = self.next_item_cold(chunk, pos, base);
            self.update_hot();
            return item;
        }
        // Synchronized, nothing carried over: `hot` stays true unless an
        // error, an A-sync run or an incomplete packet changes that.
        let p = *pos;
        let &b = chunk.get(p)?;
        let off = base.wrapping_add(p as u64);
        let rest = chunk.get(p..).unwrap_or(&[]);
        match self.tables.class[usize::from(b)] {
            Class::PHeader if self.tables.atoms[usize::from(b & 0x7F)].is_some() => {
                *pos = p + 1;
                self.fast_pheaders += 1;
                let a = self.tables.atoms[usize::from(b & 0x7F)];
                a.map(|a| Ok((off, Packet::Atoms(a))))
            }
            Class::Branch if rest.len() >= 8 => match quick_branch(rest, &self.cfg, &self.st) {
                Some((len, address, known, pkt)) => {
                    *pos = p + len;
                    self.st.last_addr = address;
                    self.st.known_bits = known;
                    self.stats.packets += 1;
                    self.stats.bytes_in_packets += len as u64;
                    Some(Ok((off, pkt)))
                }
                None => self.decode_at(chunk, pos, off, Class::Branch),
            },
            Class::ASync => {
                *pos = p + 1;
                self.mode = Mode::ASyncRun;
                self.zeros = 1;
                self.zeros_off = off;
                let item = self.next_item_cold(chunk, pos, base);
                self.update_hot();
                item
            }
            class => self.decode_at(chunk, pos, off, class),
        }
    }

    /// The packet at the start of `rest` (synchronized, at a packet
    /// boundary, nothing carried over), for the iterator's fast path: the
    /// general decoder without the general path's bookkeeping, kept out of
    /// line. `None` (A-sync, incomplete or invalid packet): use the general
    /// path.
    #[cold]
    #[inline(never)]
    fn fast_decode(&mut self, rest: &[u8]) -> Option<(usize, Packet)> {
        let &b = rest.first()?;
        let class = self.tables.class[usize::from(b)];
        if class == Class::ASync {
            return None;
        }
        match decode(rest, class, &self.cfg, &self.st) {
            Decoded::Packet(len, p) => {
                self.st.apply(&p, &self.cfg);
                let p = self.checked_timestamp(p);
                self.stats.packets += 1;
                self.stats.bytes_in_packets += len as u64;
                Some((len, p))
            }
            Decoded::Incomplete | Decoded::Invalid(_) => None,
        }
    }

    /// Decodes the packet at `*pos` with the general decoder.
    #[inline(always)]
    fn decode_at(&mut self, chunk: &[u8], pos: &mut usize, off: u64, class: Class) -> Option<Item> {
        let p = *pos;
        let rest = chunk.get(p..).unwrap_or(&[]);
        match decode(rest, class, &self.cfg, &self.st) {
            Decoded::Packet(len, pkt) => {
                *pos = p + len;
                Some(self.packet(off, len, pkt))
            }
            other => {
                let item = self.not_decoded(chunk, pos, off, other);
                self.update_hot();
                item
            }
        }
    }

    /// Handles an incomplete or invalid packet at `*pos`.
    #[cold]
    #[inline(never)]
    fn not_decoded(&mut self, chunk: &[u8], pos: &mut usize, off: u64, d: Decoded) -> Option<Item> {
        let p = *pos;
        let rest = chunk.get(p..).unwrap_or(&[]);
        let header = rest.first().copied().unwrap_or(0);
        match d {
            Decoded::Packet(..) => None,
            Decoded::Incomplete if rest.len() < CARRY => {
                self.carry[..rest.len()].copy_from_slice(rest);
                for (i, o) in self.carry_off[..rest.len()].iter_mut().enumerate() {
                    *o = off.wrapping_add(i as u64);
                }
                self.carry_len = rest.len();
                *pos = chunk.len();
                None
            }
            Decoded::Incomplete => {
                *pos = p + 1;
                self.lost_packet();
                let kind = ErrorKind::InvalidField {
                    header,
                    field: "packet length",
                };
                Some(self.error(off, kind, 1))
            }
            Decoded::Invalid(kind) => {
                *pos = p + 1;
                self.lost_packet();
                Some(self.error(off, kind, 1))
            }
        }
    }

    /// The general version of [`next_item`](Self::next_item): pending
    /// items, carried-over bytes, unsynchronized input, A-sync runs.
    #[cold]
    #[inline(never)]
    fn next_item_cold(&mut self, chunk: &[u8], pos: &mut usize, base: u64) -> Option<Item> {
        if let Some(p) = self.pending.take() {
            return Some(Ok(p));
        }
        if self.carry_len > 0 {
            if let Some(item) = self.carry_step(chunk, pos, base) {
                return Some(item);
            }
            if self.carry_len > 0 {
                return None;
            }
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
                if self.carry_len > 0 {
                    // An I-sync candidate gave bytes back: they come first.
                    if let Some(item) = self.carry_step(chunk, pos, base) {
                        return Some(item);
                    }
                    if self.carry_len > 0 {
                        return None;
                    }
                }
                continue;
            }
            match self.tables.class[usize::from(b)] {
                Class::ASync => {
                    self.mode = Mode::ASyncRun;
                    self.zeros = 1;
                    self.zeros_off = off;
                    *pos = p + 1;
                }
                class => {
                    let rest = chunk.get(p..).unwrap_or(&[]);
                    return match decode(rest, class, &self.cfg, &self.st) {
                        Decoded::Packet(len, pkt) => {
                            *pos = p + len;
                            Some(self.packet(off, len, pkt))
                        }
                        other => self.not_decoded(chunk, pos, off, other),
                    };
                }
            }
        }
    }
}

/// Result of [`Parser::next_slow`].
struct Slow {
    pos: usize,
    item: Option<Item>,
}

/// Iterator over the items completed by one chunk, see [`Parser::feed`].
///
/// Dropping it before the end still runs the parser over the rest of the
/// chunk (discarding the items), so the next chunk continues correctly.
#[derive(Debug)]
pub struct Packets<'a> {
    parser: &'a mut Parser,
    chunk: &'a [u8],
    /// While the parser is synchronized with nothing carried over: the
    /// unparsed rest of the chunk, for the fast paths. Else empty.
    fast: &'a [u8],
    /// Position of the next byte when `fast` is not in use.
    pos: usize,
    base: u64,
    /// Bytes consumed by anything but the P-header fast path (whose bytes
    /// are counted on drop).
    slow_bytes: usize,
    /// Whether `fast` is in use.
    hot: bool,
}

impl Packets<'_> {
    /// The general path (kept out of line so that `next` stays small
    /// enough to inline into the caller's loop).
    #[inline(never)]
    fn slow(&mut self) -> Option<Item> {
        let pos = if self.hot {
            self.chunk.len() - self.fast.len()
        } else {
            self.pos
        };
        let Slow { pos: next, item } = self.parser.next_slow(self.chunk, pos, self.base);
        self.slow_bytes += next - pos;
        self.hot = self.parser.hot;
        if self.hot {
            self.fast = self.chunk.get(next..).unwrap_or(&[]);
        } else {
            self.fast = &[];
            self.pos = next;
        }
        item
    }
}

impl Iterator for Packets<'_> {
    type Item = Item;

    #[inline(always)]
    fn next(&mut self) -> Option<Item> {
        // Fast path: a P-header (most of a typical stream).
        if let Some((&b, tail)) = self.fast.split_first() {
            if let Some(Some(a)) = self.parser.tables.atoms.get(usize::from(b ^ 0x80)) {
                let off = self
                    .base
                    .wrapping_add((self.chunk.len() - tail.len() - 1) as u64);
                self.fast = tail;
                return Some(Ok((off, Packet::Atoms(*a))));
            }
            // Branch address headers are the odd bytes in every
            // configuration: the common forms are decoded inline too.
            if b & 1 == 1 {
                let p = &mut *self.parser;
                if let Some((len, address, known, pkt)) = quick_branch(self.fast, &p.cfg, &p.st) {
                    let off = self
                        .base
                        .wrapping_add((self.chunk.len() - self.fast.len()) as u64);
                    self.fast = self.fast.get(len..).unwrap_or(&[]);
                    self.slow_bytes += len;
                    p.st.last_addr = address;
                    p.st.known_bits = known;
                    p.stats.packets += 1;
                    p.stats.bytes_in_packets += len as u64;
                    return Some(Ok((off, pkt)));
                }
            }
            // Any other packet but an A-sync: decoded out of line, without
            // the general path's bookkeeping.
            if b != 0 {
                let off = self
                    .base
                    .wrapping_add((self.chunk.len() - self.fast.len()) as u64);
                if let Some((len, pkt)) = self.parser.fast_decode(self.fast) {
                    self.fast = self.fast.get(len..).unwrap_or(&[]);
                    self.slow_bytes += len;
                    return Some(Ok((off, pkt)));
                }
            }
        }
        self.slow()
    }
}

impl Drop for Packets<'_> {
    fn drop(&mut self) {
        while self.next().is_some() {}
        // Every byte is consumed now; those not counted in `slow_bytes`
        // were fast-path P-headers.
        self.parser.fast_pheaders += (self.chunk.len() - self.slow_bytes) as u64;
    }
}
