//! The encoder: packets to bytes.

use crate::decode::PAGE_MASK;
use crate::error::EncodeError;
use crate::packet::{DataTraceKind, GlobalTimestamp, LocalTimestamp, Packet, TimestampRelation};

/// Longest encoding of any packet (a GTS2 with six payload bytes).
const MAX: usize = 7;

/// Turns packets into ITM/DWT bytes, exactly as the packets describe them
/// (payload lengths and sizes included), so a [`Parser`](crate::Parser)
/// fed the output returns equal packets.
///
/// The encoder keeps the parser's one piece of state, the ITM stimulus
/// port page: a [`Stimulus`](crate::Stimulus) must be on the page of the
/// last ITM [`Extension`](crate::Extension) encoded (page 0 at the start);
/// write an extension packet first to change it.
///
/// ```
/// use itm_packets::{Config, Encoder, ExceptionAction, ExceptionTrace, Packet, Parser, PcSample};
/// let mut enc = Encoder::new();
/// let mut bytes = Vec::new();
/// let mut buf = [0u8; 8];
/// for p in [
///     Packet::Sync,
///     Packet::PcSample(PcSample { pc: Some(0x0800_0206) }),
///     Packet::ExceptionTrace(ExceptionTrace { number: 15, action: ExceptionAction::Enter }),
/// ] {
///     let n = enc.encode(&p, &mut buf).unwrap();
///     bytes.extend_from_slice(&buf[..n]);
/// }
/// assert_eq!(bytes, [0, 0, 0, 0, 0, 0x80, 0x17, 0x06, 0x02, 0x00, 0x08, 0x0E, 0x0F, 0x10]);
/// let mut parser = Parser::new(Config::new());
/// let last = parser.feed(&bytes).last().unwrap().unwrap();
/// assert_eq!(last, (11, Packet::ExceptionTrace(ExceptionTrace { number: 15, action: ExceptionAction::Enter })));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Encoder {
    page: u32,
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
    /// `n` payload bytes of seven bits of `v` each, continuation bit set on
    /// all but the last.
    fn continued(&mut self, v: u64, n: usize) {
        for k in 0..n {
            let b = ((v >> (7 * k)) & 0x7F) as u8;
            self.put(if k + 1 < n { b | 0x80 } else { b });
        }
    }
}

const fn bad(what: &'static str) -> EncodeError {
    EncodeError::Unrepresentable { what }
}

/// The SS field of a source packet of `size` bytes.
fn ss_of(size: u8) -> Result<u8, EncodeError> {
    match size {
        1 => Ok(1),
        2 => Ok(2),
        4 => Ok(3),
        _ => Err(bad("source packet payload size must be 1, 2 or 4 bytes")),
    }
}

/// Whether `v` fits in `bits` bits.
const fn fits(v: u64, bits: u32) -> bool {
    bits >= 64 || v >> bits == 0
}

impl Encoder {
    /// An encoder at the start of a stream (stimulus port page 0).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The stimulus port page in force.
    #[must_use]
    pub fn page(&self) -> u32 {
        self.page
    }

    /// Back to the state of [`Encoder::new`].
    pub fn reset(&mut self) {
        self.page = 0;
    }

    /// Encodes `p` into `out`, returning the number of bytes written.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] when `out` cannot hold the packet;
    /// [`EncodeError::Unrepresentable`] when the packet has no encoding (a
    /// value too wide for its payload length, a length or size its kind
    /// does not have, a stimulus port off the page in force, a comparator
    /// above 3, an exception number above 511).
    pub fn encode(&mut self, p: &Packet, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut w = W {
            buf: [0; MAX],
            n: 0,
        };
        let mut page = self.page;
        match *p {
            Packet::Sync => {
                for _ in 0..5 {
                    w.put(0);
                }
                w.put(0x80);
            }
            Packet::Overflow => w.put(0x70),
            Packet::LocalTimestamp(t) => local(&mut w, t)?,
            Packet::GlobalTimestamp(g) => global(&mut w, g)?,
            Packet::Extension(e) => {
                let sh = u8::from(e.hardware) << 2;
                let low = (e.value & 7) as u8;
                let rest = u64::from(e.value >> 3);
                if e.len == 0 {
                    if rest != 0 {
                        return Err(bad("extension value needs payload bytes"));
                    }
                    w.put((low << 4) | 0x08 | sh);
                } else {
                    let n = usize::from(e.len);
                    if n > 4 || !fits(rest, 7 * u32::from(e.len)) {
                        return Err(bad("extension value too wide for its payload length"));
                    }
                    w.put(0x80 | (low << 4) | 0x08 | sh);
                    w.continued(rest, n);
                }
                if !e.hardware {
                    page = e.value;
                }
            }
            Packet::Stimulus(s) => {
                if s.port >> 5 != self.page & PAGE_MASK {
                    return Err(bad("stimulus port off the page in force"));
                }
                let ss = ss_of(s.size)?;
                if !fits(u64::from(s.value), 8 * u32::from(s.size)) {
                    return Err(bad("stimulus value too wide for its size"));
                }
                w.put((((s.port % 32) as u8) << 3) | ss);
                w.le(s.value, usize::from(s.size));
            }
            Packet::EventCounter(c) => {
                w.put(0x05);
                w.put(c.flags);
            }
            Packet::ExceptionTrace(x) => {
                if x.number > 0x1FF {
                    return Err(bad("exception number above 511"));
                }
                w.put(0x0E);
                w.put(x.number as u8);
                w.put(((x.number >> 8) as u8) | (x.action.field() << 4));
            }
            Packet::PcSample(s) => match s.pc {
                Some(pc) => {
                    w.put(0x17);
                    w.le(pc, 4);
                }
                None => {
                    w.put(0x15);
                    w.put(0);
                }
            },
            Packet::DataTrace(d) => {
                if d.comparator > 3 {
                    return Err(bad("data trace comparator above 3"));
                }
                let c = d.comparator << 1;
                match d.kind {
                    DataTraceKind::Pc(pc) => {
                        w.put(((8 | c) << 3) | 0x07);
                        w.le(pc, 4);
                    }
                    DataTraceKind::Address(a) => {
                        w.put(((9 | c) << 3) | 0x06);
                        w.le(u32::from(a), 2);
                    }
                    DataTraceKind::Value { value, size, write } => {
                        let ss = ss_of(size)?;
                        if !fits(u64::from(value), 8 * u32::from(size)) {
                            return Err(bad("data value too wide for its size"));
                        }
                        w.put(((16 | c | u8::from(write)) << 3) | 0x04 | ss);
                        w.le(value, usize::from(size));
                    }
                }
            }
        }
        let n = w.n;
        let Some(dst) = out.get_mut(..n) else {
            return Err(EncodeError::BufferTooSmall { needed: n });
        };
        dst.copy_from_slice(&w.buf[..n]);
        self.page = page;
        Ok(n)
    }
}

fn local(w: &mut W, t: LocalTimestamp) -> Result<(), EncodeError> {
    if t.len == 0 {
        if t.relation != TimestampRelation::Synchronous || !(1..=6).contains(&t.value) {
            return Err(bad(
                "a format 2 local timestamp is a synchronous value from 1 to 6",
            ));
        }
        w.put((t.value as u8) << 4);
        return Ok(());
    }
    if t.len > 4 || !fits(u64::from(t.value), 7 * u32::from(t.len)) {
        return Err(bad("local timestamp too wide for its payload length"));
    }
    w.put(0xC0 | (t.relation.tc() << 4));
    w.continued(u64::from(t.value), usize::from(t.len));
    Ok(())
}

fn global(w: &mut W, g: GlobalTimestamp) -> Result<(), EncodeError> {
    let n = usize::from(g.len);
    if g.high {
        if (n != 4 && n != 6) || g.wrap || g.clock_change {
            return Err(bad("GTS2 has 4 or 6 payload bytes and no flags"));
        }
        if !fits(g.bits, 7 * u32::from(g.len)) {
            return Err(bad("GTS2 bits too wide for its payload length"));
        }
        w.put(0xB4);
        w.continued(g.bits, n);
        return Ok(());
    }
    w.put(0x94);
    match n {
        1..=3 => {
            if g.wrap || g.clock_change {
                return Err(bad("GTS1 flags need four payload bytes"));
            }
            if !fits(g.bits, 7 * u32::from(g.len)) {
                return Err(bad("GTS1 bits too wide for its payload length"));
            }
            w.continued(g.bits, n);
        }
        4 => {
            if !fits(g.bits, 26) {
                return Err(bad("GTS1 bits above bit 25"));
            }
            for k in 0..3 {
                w.put(((g.bits >> (7 * k)) & 0x7F) as u8 | 0x80);
            }
            // The fourth byte: C = 0, Wrap, ClkCh, TS[25:21].
            let top = ((g.bits >> 21) & 0x1F) as u8;
            w.put(top | (u8::from(g.wrap) << 6) | (u8::from(g.clock_change) << 5));
        }
        _ => return Err(bad("GTS1 has 1 to 4 payload bytes")),
    }
    Ok(())
}
