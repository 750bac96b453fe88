//! The encoder: packets to bytes, with the same compression state the
//! parser decompresses with.

use crate::config::Config;
use crate::error::EncodeError;
use crate::packet::{
    Atoms, Branch, ISync, Isa, NormalData, OutOfOrderData, OutOfOrderPlaceholder, PHeaderFormat,
    Packet, Timestamp, ValueNotTraced,
};
use crate::state::{mask32, mask64, to_gray, State};

/// Largest encoding of any packet.
const MAX: usize = 32;

/// Turns packets into ETMv3 bytes, compressing addresses and timestamps
/// the way an ETM does.
///
/// The encoder keeps the state an ETM keeps (last branch address,
/// instruction set, security state, last data address, last timestamp) and
/// emits the shortest encoding that a decoder holding the same state
/// reconstructs exactly; a parser fed the output from the same starting
/// point returns equal packets. After [`new`](Self::new), [`reset`](Self::reset)
/// and every A-sync, the next data address and timestamp are sent in full,
/// as hardware does after synchronization.
///
/// Fields that say how many bits a packet carried (`bits`,
/// `address_bits`) are requests when encoding: 0 asks for the minimal
/// form, a larger value for at least that many bits.
///
/// Exceptions, security state, Hyp mode and AltISA changes are always
/// written as exception information bytes, never in the deprecated
/// "exception in address bytes" form the parser also accepts; data values
/// are written with the size (`SS` field) the packet gives.
///
/// ```
/// use etm_packets::{Branch, Config, Encoder, ISync, Isa, Packet, Parser, Reason};
/// let cfg = Config::new();
/// let mut enc = Encoder::new(cfg);
/// let mut bytes = Vec::new();
/// let mut buf = [0u8; 32];
/// for p in [
///     Packet::ASync,
///     Packet::ISync(ISync::new(0x8000, Isa::Arm, Reason::TraceOn)),
///     Packet::Branch(Branch { address: 0x8040, bits: 0, known_bits: 0, isa: Isa::Arm, ns: false, hyp: false, exception: None }),
/// ] {
///     let n = enc.encode(&p, &mut buf).unwrap();
///     bytes.extend_from_slice(&buf[..n]);
/// }
/// // The branch needs one byte: only address bits [7:2] changed.
/// assert_eq!(bytes.len(), 6 + 6 + 1);
/// let mut parser = Parser::new(cfg);
/// let last = parser.feed(&bytes).last().unwrap().unwrap();
/// assert!(matches!(last.1, Packet::Branch(b) if b.address == 0x8040 && b.bits == 8));
/// ```
#[derive(Clone, Debug)]
pub struct Encoder {
    cfg: Config,
    st: State,
    data_full: bool,
    ts_full: bool,
}

/// A small output buffer.
struct W {
    buf: [u8; MAX],
    n: usize,
}

impl W {
    fn put(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.n) {
            *slot = b;
        }
        self.n += 1;
    }
    fn le(&mut self, v: u32, n: usize) {
        for k in 0..n {
            self.put((v >> (8 * k)) as u8);
        }
    }
}

const fn bad(what: &'static str) -> EncodeError {
    EncodeError::Unrepresentable { what }
}

/// Bytes needed for a value in the 7-bits-per-byte continued encoding
/// (1-5 bytes, the fifth holding bits \[31:28\]).
fn continued_len(v: u32) -> usize {
    let mut m = 1;
    while m < 5 && u64::from(v) >> (7 * m) != 0 {
        m += 1;
    }
    m
}

/// Writes `v` in `m` continued bytes.
fn put_continued(w: &mut W, v: u32, m: usize) {
    for k in 0..m {
        let chunk = if k == 4 {
            ((v >> 28) & 0xF) as u8
        } else {
            ((v >> (7 * k)) & 0x7F) as u8
        };
        w.put(if k + 1 < m { chunk | 0x80 } else { chunk });
    }
}

/// SS field for a value size in bytes.
fn ss_of(size: u8) -> Result<u8, EncodeError> {
    match size {
        0 => Ok(0),
        1 => Ok(1),
        2 => Ok(2),
        4 => Ok(3),
        _ => Err(bad("data value size must be 0, 1, 2 or 4 bytes")),
    }
}

fn fits(v: u32, bytes: usize) -> bool {
    bytes >= 4 || u64::from(v) >> (8 * bytes) == 0
}

/// Base state ignoring the AltISA distinction.
fn base(isa: Isa) -> Isa {
    if isa == Isa::ThumbEE {
        Isa::Thumb
    } else {
        isa
    }
}

impl Encoder {
    /// An encoder for a trace source programmed as `cfg`, in the state of
    /// a freshly created [`Parser`](crate::Parser).
    #[must_use]
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            st: State::default(),
            data_full: true,
            ts_full: true,
        }
    }

    /// The configuration this encoder encodes for.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Back to the state of [`Encoder::new`].
    pub fn reset(&mut self) {
        *self = Self::new(self.cfg);
    }

    /// Encodes `p` into `out`, returning the number of bytes written, and
    /// updates the compression state. On error nothing is written and the
    /// state is unchanged.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] if `out` is shorter than the
    /// encoding (at most 32 bytes); [`EncodeError::Unrepresentable`] if the
    /// packet cannot be expressed in this configuration (a P-header format
    /// the mode does not have, a ThumbEE or Hyp state the version lacks, a
    /// misaligned address, a value too wide for its field, a context ID or
    /// data field the configuration does not trace, …).
    pub fn encode(&mut self, p: &Packet, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut w = W {
            buf: [0; MAX],
            n: 0,
        };
        match p {
            Packet::ASync => {
                for _ in 0..5 {
                    w.put(0);
                }
                w.put(0x80);
            }
            Packet::ISync(s) => self.isync(&mut w, s)?,
            Packet::Atoms(a) => w.put(self.pheader(a)?),
            Packet::Branch(b) => self.branch(&mut w, b)?,
            Packet::CycleCount(c) => {
                w.put(0x04);
                put_continued(&mut w, *c, continued_len(*c));
            }
            Packet::ContextId(c) => {
                let n = self.cfg.context_id_size().bytes();
                if n == 0 {
                    return Err(bad("context ID packet while context ID tracing is off"));
                }
                if !fits(*c, n) {
                    return Err(bad("context ID wider than the configured size"));
                }
                w.put(0x6E);
                w.le(*c, n);
            }
            Packet::Vmid(v) => {
                if !self.cfg.has_hyp() {
                    return Err(bad("VMID packets need ETMv3.5"));
                }
                w.put(0x3C);
                w.put(*v);
            }
            Packet::Timestamp(t) => self.timestamp(&mut w, t)?,
            Packet::ExceptionEntry => w.put(0x7E),
            Packet::ExceptionExit => w.put(0x76),
            Packet::Trigger => w.put(0x0C),
            Packet::Ignore => w.put(0x66),
            Packet::StoreFailed => w.put(0x50),
            Packet::DataSuppressed => w.put(0x62),
            Packet::ValueNotTraced(v) => {
                w.put(0x6A | (u8::from(v.first) << 4));
                self.data_addr(&mut w, v.first, v.address, v.address_bits)?;
            }
            Packet::NormalData(d) => self.normal_data(&mut w, d)?,
            Packet::OutOfOrderData(d) => self.ooo_data(&mut w, d)?,
            Packet::OutOfOrderPlaceholder(d) => self.placeholder(&mut w, d)?,
        }
        let n = w.n;
        let dst = out
            .get_mut(..n)
            .ok_or(EncodeError::BufferTooSmall { needed: n })?;
        dst.copy_from_slice(w.buf.get(..n).ok_or(bad("packet too long"))?);
        self.st.apply(p, &self.cfg);
        match p {
            Packet::ASync => {
                self.data_full = true;
                self.ts_full = true;
            }
            Packet::Timestamp(_) => self.ts_full = false,
            Packet::NormalData(NormalData {
                address: Some(_), ..
            })
            | Packet::ValueNotTraced(ValueNotTraced {
                address: Some(_), ..
            })
            | Packet::OutOfOrderPlaceholder(OutOfOrderPlaceholder {
                address: Some(_), ..
            }) => self.data_full = false,
            _ => {}
        }
        Ok(n)
    }

    fn pheader(&self, a: &Atoms) -> Result<u8, EncodeError> {
        let count = u32::from(a.count);
        if count > 16 || (count < 16 && a.executed >> count != 0) {
            return Err(bad("P-header atom bits beyond the atom count"));
        }
        // Split E^e N^n for format 1.
        let e_n = || -> Result<(u8, u8), EncodeError> {
            if count == 0 {
                return Ok((0, 0));
            }
            let all = mask32(count) as u16;
            if a.executed == all {
                Ok((a.count, 0))
            } else if a.executed == all >> 1 {
                Ok((a.count - 1, 1))
            } else {
                Err(bad("format 1 P-header must be E atoms then at most one N"))
            }
        };
        let not_e = |i: u32| u8::from(!a.is_executed(i));
        let ca = self.cfg.cycle_accurate();
        match (a.format, ca) {
            (PHeaderFormat::Format1, false) => {
                let (e, n) = e_n()?;
                if a.cycles != 0 || e > 15 {
                    return Err(bad("format 1 P-header fields"));
                }
                Ok(0x80 | (n << 6) | (e << 2))
            }
            (PHeaderFormat::Format2, false) if a.count == 2 && a.cycles == 0 => {
                Ok(0x82 | (not_e(0) << 3) | (not_e(1) << 2))
            }
            (PHeaderFormat::Format0, true)
                if self.cfg.version() == crate::EtmVersion::V3_0
                    && a.count == 0
                    && a.cycles == 1 =>
            {
                Ok(0x80)
            }
            (PHeaderFormat::Format1, true) => {
                let (e, n) = e_n()?;
                if a.count == 0 || e > 7 || a.cycles != a.count {
                    return Err(bad("format 1 P-header fields"));
                }
                Ok(0x80 | (n << 6) | (e << 2))
            }
            (PHeaderFormat::Format2, true) if a.count == 2 && a.cycles == 1 => {
                Ok(0x82 | (not_e(0) << 3) | (not_e(1) << 2))
            }
            (PHeaderFormat::Format3, true)
                if (1..=8).contains(&a.cycles)
                    && a.count <= 1
                    && a.executed == u16::from(a.count) =>
            {
                Ok(0xA0 | (a.count << 6) | ((a.cycles - 1) << 2))
            }
            (PHeaderFormat::Format4, true)
                if self.cfg.has_alt_isa() && a.count == 1 && a.cycles == 0 =>
            {
                Ok(0x92 | (not_e(0) << 2))
            }
            _ => Err(bad(
                "P-header format not available in this mode and version",
            )),
        }
    }

    fn check_state(&self, isa: Isa, hyp: bool) -> Result<(), EncodeError> {
        if isa == Isa::ThumbEE && !self.cfg.has_alt_isa() {
            return Err(bad("ThumbEE state needs ETMv3.3 or later"));
        }
        if hyp && !self.cfg.has_hyp() {
            return Err(bad("Hyp bit needs ETMv3.5"));
        }
        Ok(())
    }

    /// Payload address bits carried by an `n`-byte (n < 5) address.
    fn payload_bits(&self, n: u32) -> u32 {
        match (n, self.cfg.alt_branch()) {
            (1, _) => 6,
            (n, false) => 6 + 7 * (n - 1),
            (n, true) => 6 + 7 * (n - 2) + 6,
        }
    }

    /// Writes a branch address (and exception bytes) for `target` against
    /// the compression state `st`.
    #[allow(clippy::too_many_arguments)]
    fn branch_bytes(
        &self,
        w: &mut W,
        st: &State,
        address: u32,
        isa: Isa,
        ns: bool,
        hyp: bool,
        exception: Option<crate::ExceptionInfo>,
        min_bits: u8,
    ) -> Result<(), EncodeError> {
        self.check_state(isa, hyp)?;
        let align = match isa {
            Isa::Arm => 3,
            Isa::Thumb | Isa::ThumbEE => 1,
            Isa::Jazelle => 0,
        };
        if address & align != 0 {
            return Err(bad("branch address not aligned for its instruction set"));
        }
        let alt_enc = self.cfg.alt_branch();
        let want_alt = if matches!(isa, Isa::Thumb | Isa::ThumbEE) {
            isa == Isa::ThumbEE
        } else {
            st.alt
        };
        if let Some(e) = exception {
            if e.number > 0x1FF || e.resume > 0xF {
                return Err(bad("exception number or resume field too wide"));
            }
        }
        let need_info = exception.is_some() || ns != st.ns || hyp != st.hyp || want_alt != st.alt;
        let shift = st.isa.address_shift();
        let mut n: u32 = if base(isa) != base(st.isa) {
            5
        } else {
            (1..5)
                .find(|&k| {
                    let bits = self.payload_bits(k) + shift;
                    (st.last_addr ^ address) & !mask32(bits) == 0
                })
                .unwrap_or(5)
        };
        if need_info {
            n = if alt_enc { n.max(2) } else { 5 };
        }
        while n < 5 && self.payload_bits(n) + shift < u32::from(min_bits) {
            n += 1;
        }
        if n == 5 {
            let v = address >> isa.address_shift();
            let b4 = match isa {
                Isa::Arm => 0x08 | ((address >> 29) & 0x7) as u8,
                Isa::Thumb | Isa::ThumbEE => 0x10 | ((address >> 28) & 0xF) as u8,
                Isa::Jazelle => 0x20 | ((address >> 27) & 0x1F) as u8,
            };
            w.put(0x80 | (((v & 0x3F) as u8) << 1) | 1);
            w.put(0x80 | ((v >> 6) & 0x7F) as u8);
            w.put(0x80 | ((v >> 13) & 0x7F) as u8);
            w.put(0x80 | ((v >> 20) & 0x7F) as u8);
            w.put(b4 | (u8::from(need_info) << 6));
        } else {
            let v = address >> shift;
            let mut used = 0u32;
            for k in 0..n {
                let last = k + 1 == n;
                let cont = if last { 0 } else { 0x80 };
                let byte = if k == 0 {
                    used = 6;
                    (((v & 0x3F) as u8) << 1) | 1
                } else if alt_enc && last {
                    let b = ((v >> used) & 0x3F) as u8 | (u8::from(need_info) << 6);
                    used += 6;
                    b
                } else {
                    let b = ((v >> used) & 0x7F) as u8;
                    used += 7;
                    b
                };
                w.put(byte | cont);
            }
        }
        if need_info {
            let (number, cancel, resume) =
                exception.map_or((0, false, 0), |e| (e.number, e.cancel, e.resume));
            let need_b1 = number > 0xF || hyp != st.hyp;
            let need_b2 = resume != 0;
            let b0 = u8::from(ns)
                | (((number & 0xF) as u8) << 1)
                | (u8::from(cancel) << 5)
                | (u8::from(want_alt && self.cfg.has_alt_isa()) << 6)
                | (u8::from(need_b1 || need_b2) << 7);
            w.put(b0);
            if need_b1 {
                w.put(
                    ((number >> 4) & 0x1F) as u8 | (u8::from(hyp) << 5) | (u8::from(need_b2) << 7),
                );
            }
            if need_b2 {
                w.put(0x40 | resume);
            }
        }
        Ok(())
    }

    fn branch(&self, w: &mut W, b: &Branch) -> Result<(), EncodeError> {
        self.branch_bytes(
            w,
            &self.st,
            b.address,
            b.isa,
            b.ns,
            b.hyp,
            b.exception,
            b.bits,
        )
    }

    fn isync(&self, w: &mut W, s: &ISync) -> Result<(), EncodeError> {
        if s.is_data_only() != self.cfg.data_only() {
            return Err(bad("data-only I-sync form must match data-only mode"));
        }
        self.check_state(s.isa(), s.hyp())?;
        match s.cycle_count() {
            Some(c) => {
                w.put(0x70);
                put_continued(w, c, continued_len(c));
            }
            None => w.put(0x08),
        }
        let n = self.cfg.context_id_size().bytes();
        match (n, s.context_id()) {
            (0, None) => {}
            (n, Some(c)) if n > 0 && fits(c, n) => w.le(c, n),
            _ => return Err(bad("I-sync context ID does not match the configured size")),
        }
        let reason = s.reason().bits() << 5;
        let ns = u8::from(s.ns()) << 3;
        let hyp = u8::from(s.hyp()) << 1;
        if s.is_data_only() {
            w.put(reason | ns | hyp | 1);
            return Ok(());
        }
        let lsip = s.lsip();
        let (j, alt, raw) = match s.isa() {
            Isa::Arm if s.address() & 1 == 0 => (0, 0, s.address()),
            Isa::Thumb if s.address() & 1 == 0 => (0, 0, s.address() | 1),
            Isa::ThumbEE if s.address() & 1 == 0 => (0, 1, s.address() | 1),
            Isa::Jazelle => (1, 0, s.address()),
            _ => return Err(bad("I-sync address bit 0 set outside Jazelle state")),
        };
        w.put(u8::from(lsip.is_some()) << 7 | reason | (j << 4) | ns | (alt << 2) | hyp | 1);
        w.le(raw, 4);
        if let Some(l) = lsip {
            let rel = State {
                last_addr: s.address(),
                isa: s.isa(),
                alt: alt != 0,
                ns: s.ns(),
                hyp: s.hyp(),
                ..self.st
            };
            self.branch_bytes(w, &rel, l.address, s.isa(), s.ns(), s.hyp(), None, l.bits)?;
        }
        Ok(())
    }

    fn timestamp(&self, w: &mut W, t: &Timestamp) -> Result<(), EncodeError> {
        if !self.cfg.has_hyp() {
            return Err(bad("timestamp packets need ETMv3.5"));
        }
        let width = self.cfg.timestamp_bits();
        if t.value & !mask64(width) != 0 {
            return Err(bad("timestamp wider than the configured size"));
        }
        let raw = if self.cfg.timestamp_gray() {
            to_gray(t.value)
        } else {
            t.value
        };
        let max: u32 = if self.cfg.timestamp_64bit() { 9 } else { 7 };
        let bits_of = |k: u32| if k >= max { width } else { (7 * k).min(width) };
        let mut k = if self.ts_full {
            max
        } else {
            (1..=max)
                .find(|&k| (self.st.ts_raw ^ raw) & !mask64(bits_of(k)) == 0)
                .unwrap_or(max)
        };
        while k < max && bits_of(k) < u32::from(t.bits) {
            k += 1;
        }
        w.put(0x42 | (u8::from(t.clock_changed) << 2));
        for j in 0..k {
            if j + 1 == max {
                w.put((raw >> (7 * j)) as u8);
            } else {
                let b = ((raw >> (7 * j)) & 0x7F) as u8;
                w.put(if j + 1 < k { b | 0x80 } else { b });
            }
        }
        Ok(())
    }

    fn data_addr(
        &self,
        w: &mut W,
        first: bool,
        address: Option<u32>,
        min_bits: u8,
    ) -> Result<(), EncodeError> {
        let expected = first && self.cfg.data_address();
        match (expected, address) {
            (false, None) => Ok(()),
            (true, Some(a)) => {
                let mut m = if self.data_full {
                    5
                } else {
                    (1..5)
                        .find(|&m| (self.st.data_addr ^ a) & !mask32(7 * m) == 0)
                        .unwrap_or(5)
                };
                while m < 5 && 7 * m < u32::from(min_bits) {
                    m += 1;
                }
                put_continued(w, a, m as usize);
                Ok(())
            }
            (true, None) => Err(bad("data address expected (A bit set, address tracing on)")),
            (false, Some(_)) => Err(bad("data address present without A bit or address tracing")),
        }
    }

    fn normal_data(&self, w: &mut W, d: &NormalData) -> Result<(), EncodeError> {
        let ss = ss_of(d.size)?;
        w.put(0x02 | (u8::from(d.first) << 5) | (ss << 2));
        self.data_addr(w, d.first, d.address, d.address_bits)?;
        match (self.cfg.data_value(), d.value) {
            (false, None) => Ok(()),
            (true, Some(v)) if fits(v, usize::from(d.size)) => {
                w.le(v, usize::from(d.size));
                Ok(())
            }
            _ => Err(bad("data value does not match value tracing or its size")),
        }
    }

    fn ooo_data(&self, w: &mut W, d: &OutOfOrderData) -> Result<(), EncodeError> {
        let ss = ss_of(d.size)?;
        if !(1..=3).contains(&d.tag) || !fits(d.value, usize::from(d.size)) {
            return Err(bad("out-of-order data tag or value"));
        }
        w.put((d.tag << 5) | (ss << 2));
        w.le(d.value, usize::from(d.size));
        Ok(())
    }

    fn placeholder(&self, w: &mut W, d: &OutOfOrderPlaceholder) -> Result<(), EncodeError> {
        if !(1..=3).contains(&d.tag) {
            return Err(bad("out-of-order placeholder tag"));
        }
        w.put(0x50 | (u8::from(d.first) << 5) | (d.tag << 2));
        self.data_addr(w, d.first, d.address, d.address_bits)
    }
}

impl Packet {
    /// Encodes this packet with `enc` (see [`Encoder::encode`]).
    ///
    /// # Errors
    ///
    /// As [`Encoder::encode`].
    pub fn encode(&self, enc: &mut Encoder, out: &mut [u8]) -> Result<usize, EncodeError> {
        enc.encode(self, out)
    }
}
