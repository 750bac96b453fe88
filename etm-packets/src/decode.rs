//! Byte-level decoding of single packets against the decompression
//! state.
//!
//! Everything here works on a slice that starts at a header byte and
//! reports [`Decoded::Incomplete`] when the slice ends early; no function
//! indexes out of bounds or panics on any input.

use crate::config::Config;
use crate::error::ErrorKind;
use crate::header::{decode_pheader, Class};
use crate::packet::{
    Branch, ExceptionInfo, ISync, Isa, LsipAddress, NormalData, OutOfOrderData,
    OutOfOrderPlaceholder, Packet, Reason, Timestamp, ValueNotTraced,
};
use crate::state::{from_gray, mask32, mask64, State};

/// Longest run of bytes the decoder reads for one packet: I-sync with
/// cycle count (1 + 5), 4 context ID bytes, information byte, 4 address
/// bytes, then an LSiP address of up to 5 bytes; up to 3 exception
/// information bytes after it are read before the packet is rejected.
pub(crate) const MAX_PACKET_LEN: usize = 1 + 5 + 4 + 1 + 4 + 5 + 3;

/// Outcome of decoding one packet.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// A whole packet of this many bytes.
    Packet(usize, Packet),
    /// The slice ends inside the packet.
    Incomplete,
    /// The packet is invalid.
    Invalid(ErrorKind),
}

/// Why a sub-decoder stopped.
enum Fail {
    Incomplete,
    Invalid(&'static str),
}

/// A bounds-checked reader over the bytes of one packet.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cur<'_> {
    #[inline(always)]
    fn byte(&mut self) -> Result<u8, Fail> {
        let v = *self.b.get(self.i).ok_or(Fail::Incomplete)?;
        self.i += 1;
        Ok(v)
    }

    /// `n` bytes, little-endian.
    #[inline(always)]
    fn le(&mut self, n: usize) -> Result<u32, Fail> {
        let mut v = 0u32;
        for k in 0..n {
            v |= u32::from(self.byte()?) << (8 * k);
        }
        Ok(v)
    }

    /// A cycle count: 1-5 bytes, 7 bits each with a continuation bit, the
    /// fifth holding bits \[31:28\].
    #[inline(always)]
    fn cycle_count(&mut self) -> Result<u32, Fail> {
        let (v, _) = self.continued32()?;
        Ok(v)
    }

    /// 1-5 bytes of 7 bits with continuation; fifth byte bits \[3:0\] are
    /// bits \[31:28\]. Returns the value and the number of bits carried.
    #[inline(always)]
    fn continued32(&mut self) -> Result<(u32, u32), Fail> {
        let mut v = 0u32;
        for k in 0..4u32 {
            let b = self.byte()?;
            v |= u32::from(b & 0x7F) << (7 * k);
            if b & 0x80 == 0 {
                return Ok((v, 7 * (k + 1)));
            }
        }
        let b = self.byte()?;
        if b & 0x80 != 0 {
            return Err(Fail::Invalid("continuation bit in fifth byte"));
        }
        v |= u32::from(b & 0x0F) << 28;
        Ok((v, 32))
    }
}

/// Number of value bytes announced by an SS field.
const fn value_size(ss: u8) -> u8 {
    match ss & 3 {
        0 => 0,
        1 => 1,
        2 => 2,
        _ => 4,
    }
}

/// The exception number (in the numbering of exception information byte
/// 0) of a three-bit exception code of the deprecated "exception in
/// address bytes" branch form; `None` for the reserved codes 2 and 3.
///
/// Codes (OpenCSD's reading of IHI 0014Q): 0 reset, 1 IRQ, 4 Jazelle,
/// 5 FIQ, 6 asynchronous data abort, 7 halting debug.
const fn deprecated_exception(code: u8) -> Option<u16> {
    match code & 7 {
        0 => Some(8),
        1 => Some(14),
        4 => Some(5),
        5 => Some(15),
        6 => Some(4),
        7 => Some(1),
        _ => None,
    }
}

/// Result of decoding a branch address (plus exception bytes).
struct BranchOut {
    address: u32,
    bits: u8,
    isa: Isa,
    ns: bool,
    hyp: bool,
    alt: bool,
    exception: Option<ExceptionInfo>,
    /// Exception information bytes followed the address.
    info_bytes: bool,
}

/// Decodes the address bytes (and exception information bytes) of a
/// branch address, compressed against `last` in state `isa`.
#[inline(always)]
fn branch_address(c: &mut Cur<'_>, cfg: &Config, st: &State) -> Result<BranchOut, Fail> {
    let alt_enc = cfg.alt_branch();
    let mut value = 0u32;
    let mut nbits = 0u32;
    let mut exc_follows = false;
    let mut full = true;
    for k in 0..4u32 {
        let b = c.byte()?;
        let more = b & 0x80 != 0;
        if k == 0 {
            value = u32::from((b >> 1) & 0x3F);
            nbits = 6;
        } else if alt_enc && !more {
            value |= u32::from(b & 0x3F) << nbits;
            nbits += 6;
            exc_follows = b & 0x40 != 0;
        } else {
            value |= u32::from(b & 0x7F) << nbits;
            nbits += 7;
        }
        if !more {
            full = false;
            break;
        }
    }
    let mut out = BranchOut {
        address: 0,
        bits: 0,
        isa: st.isa,
        ns: st.ns,
        hyp: st.hyp,
        alt: st.alt,
        exception: None,
        info_bytes: false,
    };
    let mut base_isa = st.isa;
    if full {
        // Fifth byte: b0 X 001 AAA (ARM), b0 X 01 AAAA (Thumb),
        // b0 X 1 AAAAA (Jazelle); X = exception information follows.
        let b = c.byte()?;
        if b & 0x80 != 0 {
            // The deprecated "exception in address bytes" form of the
            // original encoding: b1 C EEE AAA, ARM state, Cancel bit,
            // a three-bit exception code and A[31:29]; nothing follows.
            if alt_enc {
                return Err(Fail::Invalid("fifth branch address byte (bit 7 set)"));
            }
            let number = deprecated_exception((b >> 3) & 7).ok_or(Fail::Invalid(
                "reserved exception code in fifth branch address byte",
            ))?;
            out.address = (value << 2) | (u32::from(b & 0x07) << 29);
            out.bits = 32;
            out.isa = Isa::Arm;
            out.exception = Some(ExceptionInfo {
                number,
                cancel: b & 0x40 != 0,
                resume: 0,
            });
            return Ok(out);
        }
        exc_follows = b & 0x40 != 0;
        let (isa, high) = if b & 0x20 != 0 {
            (Isa::Jazelle, u32::from(b & 0x1F) << 27)
        } else if b & 0x10 != 0 {
            (Isa::Thumb, u32::from(b & 0x0F) << 28)
        } else if b & 0x08 != 0 {
            (Isa::Arm, u32::from(b & 0x07) << 29)
        } else {
            return Err(Fail::Invalid(
                "instruction set in fifth branch address byte",
            ));
        };
        base_isa = isa;
        out.address = (value << isa.address_shift()) | high;
        out.bits = 32;
    } else {
        let shift = st.isa.address_shift();
        let bits = nbits + shift;
        let m = mask32(bits);
        out.address = (st.last_addr & !m) | ((value << shift) & m);
        out.bits = bits as u8;
    }
    if exc_follows {
        out.info_bytes = true;
        let b0 = c.byte()?;
        out.ns = b0 & 1 != 0;
        let mut number = u16::from((b0 >> 1) & 0xF);
        let cancel = b0 & 0x20 != 0;
        if cfg.has_alt_isa() {
            out.alt = b0 & 0x40 != 0;
        }
        let mut resume = 0u8;
        if b0 & 0x80 != 0 {
            let mut b = c.byte()?;
            if b & 0x40 == 0 {
                // Byte 1: exception number bits [8:4] and the Hyp bit.
                number |= u16::from(b & 0x1F) << 4;
                if cfg.has_hyp() {
                    out.hyp = b & 0x20 != 0;
                }
                if b & 0x80 == 0 {
                    b = 0;
                } else {
                    b = c.byte()?;
                    if b & 0x40 == 0 {
                        return Err(Fail::Invalid("exception information byte 2"));
                    }
                }
            }
            if b & 0x40 != 0 {
                // Byte 2: resume field; always the last byte.
                if b & 0x80 != 0 {
                    return Err(Fail::Invalid("exception information byte 2"));
                }
                resume = b & 0x0F;
            }
        }
        if number != 0 || cancel || resume != 0 {
            out.exception = Some(ExceptionInfo {
                number,
                cancel,
                resume,
            });
        }
    }
    out.isa = match base_isa {
        Isa::Thumb | Isa::ThumbEE if out.alt => Isa::ThumbEE,
        Isa::Thumb | Isa::ThumbEE => Isa::Thumb,
        other => other,
    };
    Ok(out)
}

/// Fast path for the most common branch packet: a compressed address of
/// 1-4 bytes without exception information, decoded from eight bytes read
/// at once. Returns the length, the full address, the number of its low
/// bits known and the packet; `None`
/// means "use the general decoder" (fewer than eight bytes available, a
/// five-byte address, or exception information).
#[inline(always)]
pub(crate) fn quick_branch(
    rest: &[u8],
    cfg: &Config,
    st: &State,
) -> Option<(usize, u32, u8, Packet)> {
    let word: [u8; 8] = rest.get(..8)?.try_into().ok()?;
    let w = u64::from_le_bytes(word);
    // First byte (of the first four) whose continuation bit is clear.
    let stop = !w & 0x8080_8080;
    if stop == 0 {
        return None;
    }
    let n = (stop.trailing_zeros() / 8 + 1) as usize;
    let alt_last = cfg.alt_branch() && n >= 2;
    if alt_last && (w >> (8 * (n - 1) + 6)) & 1 != 0 {
        return None; // exception information follows
    }
    let pbits = if alt_last {
        6 + 7 * (n - 2) + 6
    } else {
        6 + 7 * (n - 1)
    } as u32;
    let v = ((w >> 1) & 0x3F)
        | (((w >> 8) & 0x7F) << 6)
        | (((w >> 16) & 0x7F) << 13)
        | (((w >> 24) & 0x7F) << 20);
    let v = (v as u32) & mask32(pbits);
    let shift = st.isa.address_shift();
    let bits = pbits + shift;
    let m = mask32(bits);
    let address = (st.last_addr & !m) | (v << shift);
    let known_bits = st.known_bits.max(bits as u8);
    Some((
        n,
        address,
        known_bits,
        Packet::Branch(Branch {
            address,
            bits: bits as u8,
            known_bits,
            isa: st.isa,
            ns: st.ns,
            hyp: st.hyp,
            exception: None,
        }),
    ))
}

/// Decodes the data address that follows a data header, compressed
/// against the last data address.
#[inline(always)]
fn data_address(c: &mut Cur<'_>, last: u32) -> Result<(u32, u8), Fail> {
    let (v, bits) = c.continued32()?;
    let m = mask32(bits);
    Ok(((last & !m) | v, bits as u8))
}

#[inline(always)]
fn isync(c: &mut Cur<'_>, header: u8, cfg: &Config, st: &State) -> Result<Packet, Fail> {
    let cycles = if header == 0x70 {
        Some(c.cycle_count()?)
    } else {
        None
    };
    let nctx = cfg.context_id_size().bytes();
    let ctx = if nctx > 0 { Some(c.le(nctx)?) } else { None };
    let info = c.byte()?;
    let reason = Reason::from_bits(info >> 5);
    let ns = info & 0x08 != 0;
    let hyp = cfg.has_hyp() && info & 0x02 != 0;
    if cfg.data_only() {
        return Ok(Packet::ISync(
            ISync::data_only(reason)
                .with_context_id(ctx)
                .with_cycle_count(cycles)
                .with_ns(ns)
                .with_hyp(hyp),
        ));
    }
    let raw = c.le(4)?;
    let j = info & 0x10 != 0;
    let alt = cfg.has_alt_isa() && info & 0x04 != 0;
    let t = raw & 1 != 0;
    let isa = match (j, t, alt) {
        (false, false, false) => Isa::Arm,
        (false, true, false) => Isa::Thumb,
        (false, true, true) => Isa::ThumbEE,
        (true, _, false) => Isa::Jazelle,
        _ => return Err(Fail::Invalid("J/T/AltISA combination")),
    };
    let address = if isa == Isa::Jazelle { raw } else { raw & !1 };
    let mut s = ISync::new(address, isa, reason)
        .with_context_id(ctx)
        .with_cycle_count(cycles)
        .with_ns(ns)
        .with_hyp(hyp);
    if info & 0x80 != 0 {
        // LSiP: current instruction address compressed against the data
        // instruction address, in the same state.
        let rel = State {
            last_addr: address,
            isa,
            alt,
            ns,
            hyp,
            ..*st
        };
        let b = branch_address(c, cfg, &rel)?;
        // Table 7.1 bounds the I-sync payload at 14 bytes (19 with a cycle
        // count): 4 context ID + 1 information + 4 address + at most 5 LSiP
        // address bytes, so no exception information bytes follow.
        if b.info_bytes {
            return Err(Fail::Invalid("exception information in LSiP address"));
        }
        if b.exception.is_some() {
            return Err(Fail::Invalid("exception in LSiP address"));
        }
        if b.isa != isa {
            return Err(Fail::Invalid("state change in LSiP address"));
        }
        s = s.with_lsip(Some(LsipAddress {
            address: b.address,
            bits: b.bits,
        }));
    }
    Ok(Packet::ISync(s))
}

#[inline(always)]
fn timestamp(c: &mut Cur<'_>, header: u8, cfg: &Config, st: &State) -> Result<Packet, Fail> {
    let width = cfg.timestamp_bits();
    let max = if cfg.timestamp_64bit() { 9 } else { 7 };
    let mut v = 0u64;
    let mut nbits = 0u32;
    for k in 0..max {
        let b = c.byte()?;
        if k == max - 1 {
            // Last possible byte: all eight bits are value.
            v |= u64::from(b) << (7 * k);
            nbits = width;
            break;
        }
        v |= u64::from(b & 0x7F) << (7 * k);
        nbits += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    let nbits = nbits.min(width);
    let m = mask64(nbits);
    let raw = ((st.ts_raw & !m) | (v & m)) & mask64(width);
    let value = if cfg.timestamp_gray() {
        from_gray(raw)
    } else {
        raw
    };
    Ok(Packet::Timestamp(Timestamp {
        value,
        bits: nbits as u8,
        clock_changed: header & 0x04 != 0,
    }))
}

#[inline(always)]
fn decode_inner(
    buf: &[u8],
    class: Class,
    cfg: &Config,
    st: &State,
) -> Result<(usize, Packet), Fail> {
    let mut c = Cur { b: buf, i: 0 };
    let h = c.byte()?;
    let p = match class {
        Class::PHeader => match decode_pheader(h, cfg) {
            Some(a) => Packet::Atoms(a),
            None => return Err(Fail::Invalid("P-header")),
        },
        Class::Branch => {
            c.i = 0;
            let b = branch_address(&mut c, cfg, st)?;
            Packet::Branch(Branch {
                address: b.address,
                bits: b.bits,
                known_bits: st.known_bits.max(b.bits),
                isa: b.isa,
                ns: b.ns,
                hyp: b.hyp,
                exception: b.exception,
            })
        }
        Class::CycleCount => Packet::CycleCount(c.cycle_count()?),
        Class::ISync => isync(&mut c, h, cfg, st)?,
        Class::Trigger => Packet::Trigger,
        Class::StoreFailed => Packet::StoreFailed,
        Class::DataSuppressed => Packet::DataSuppressed,
        Class::Ignore => Packet::Ignore,
        Class::ExceptionExit => Packet::ExceptionExit,
        Class::ExceptionEntry => Packet::ExceptionEntry,
        Class::Vmid => Packet::Vmid(c.byte()?),
        Class::ContextId => {
            let n = cfg.context_id_size().bytes();
            if n == 0 {
                return Err(Fail::Invalid(
                    "context ID packet with context ID tracing off",
                ));
            }
            Packet::ContextId(c.le(n)?)
        }
        Class::Timestamp => timestamp(&mut c, h, cfg, st)?,
        Class::OutOfOrderData => {
            let size = value_size(h >> 2);
            Packet::OutOfOrderData(OutOfOrderData {
                tag: (h >> 5) & 3,
                value: c.le(usize::from(size))?,
                size,
            })
        }
        Class::Placeholder => {
            let first = h & 0x20 != 0;
            let (address, address_bits) = if first && cfg.data_address() {
                let (a, n) = data_address(&mut c, st.data_addr)?;
                (Some(a), n)
            } else {
                (None, 0)
            };
            Packet::OutOfOrderPlaceholder(OutOfOrderPlaceholder {
                tag: (h >> 2) & 3,
                first,
                address,
                address_bits,
            })
        }
        Class::ValueNotTraced => {
            let first = h & 0x10 != 0;
            let (address, address_bits) = if first && cfg.data_address() {
                let (a, n) = data_address(&mut c, st.data_addr)?;
                (Some(a), n)
            } else {
                (None, 0)
            };
            Packet::ValueNotTraced(ValueNotTraced {
                first,
                address,
                address_bits,
            })
        }
        Class::NormalData => {
            let first = h & 0x20 != 0;
            let size = value_size(h >> 2);
            let (address, address_bits) = if first && cfg.data_address() {
                let (a, n) = data_address(&mut c, st.data_addr)?;
                (Some(a), n)
            } else {
                (None, 0)
            };
            let value = if cfg.data_value() {
                Some(c.le(usize::from(size))?)
            } else {
                None
            };
            Packet::NormalData(NormalData {
                first,
                address,
                address_bits,
                value,
                size,
            })
        }
        Class::ASync => return Err(Fail::Invalid("A-sync")),
        Class::Reserved | Class::NoDataTrace => return Err(Fail::Invalid("header")),
    };
    Ok((c.i, p))
}

/// Decodes the packet at the start of `buf` (whose first byte is the
/// header, of class `class`), against state `st`. Does not change `st`.
#[inline(always)]
pub(crate) fn decode(buf: &[u8], class: Class, cfg: &Config, st: &State) -> Decoded {
    let header = buf.first().copied().unwrap_or(0);
    if class == Class::Reserved {
        return Decoded::Invalid(ErrorKind::ReservedHeader { header });
    }
    if class == Class::NoDataTrace {
        return Decoded::Invalid(ErrorKind::DataTraceOff { header });
    }
    match decode_inner(buf, class, cfg, st) {
        Ok((n, p)) => Decoded::Packet(n, p),
        Err(Fail::Incomplete) => Decoded::Incomplete,
        Err(Fail::Invalid(field)) => Decoded::Invalid(ErrorKind::InvalidField { header, field }),
    }
}
