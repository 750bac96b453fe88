//! The packet grammar: bytes to one [`Packet`], given the configuration and
//! the compression state. Pure: it never changes the state, and it asks for
//! more bytes ([`Stop::Incomplete`]) only when the decision needs them, so
//! the result never depends on where the input was split.

use crate::config::Config;
use crate::context::{from_gray, mask32, mask64, resolve_isa, to_gray, Context, Format};
use crate::error::{ErrorKind, Field};
use crate::packet::{
    Atoms, BranchAddress, ExceptionInfo, ISync, ISyncReason, Isa, Packet, Timestamp, WaypointUpdate,
};

/// Why decoding stopped without a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The bytes end inside the packet.
    Incomplete,
    /// The packet is invalid; the first `usize` bytes are consumed.
    Invalid(usize, ErrorKind),
}

/// Reads bytes of one packet.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    #[inline(always)]
    fn next(&mut self) -> Result<u8, Stop> {
        match self.bytes.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(Stop::Incomplete),
        }
    }
}

/// Packs (count, E bits) of a non cycle-accurate atom header:
/// `count << 5 | e_bits`, 0 for the reserved headers.
const fn atom_entry(header: u8) -> u8 {
    if header & 0x81 != 0x80 {
        return 0;
    }
    // The highest set bit among bits [6:2] is a stop bit; the atoms sit
    // below it, oldest next to the stop bit, a 0 bit meaning E.
    let x = header & 0x7c;
    if x == 0 {
        return 0;
    }
    let stop = 7 - x.leading_zeros() as u8; // 2..=6
    let count = stop - 1;
    let mut e_bits = 0u8;
    let mut j = 0;
    while j < count {
        if (header >> (count - j)) & 1 == 0 {
            e_bits |= 1 << j;
        }
        j += 1;
    }
    (count << 5) | e_bits
}

const fn build_atom_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = atom_entry(i as u8);
        i += 1;
    }
    t
}

/// Non cycle-accurate atom headers, see [`atom_entry`].
pub(crate) static ATOM_TABLE: [u8; 256] = build_atom_table();

/// Reads a cycle count whose first byte is `first` (bits \[5:2\] the low
/// four bits, bit 6 "more"), then up to four bytes of seven bits with bit 7
/// "more"; the fifth byte always ends it.
#[inline]
fn cycle_count(c: &mut Cursor<'_>, first: u8) -> Result<u32, Stop> {
    let mut v = u32::from((first >> 2) & 0xf);
    if first & 0x40 != 0 {
        let mut shift = 4;
        for k in 0..4 {
            let b = c.next()?;
            v |= u32::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 || k == 3 {
                break;
            }
        }
    }
    Ok(v)
}

/// Address bytes of a branch address or waypoint update packet.
struct AddrBytes {
    /// Number of address bytes, 1..=5.
    n: usize,
    /// Raw bit string, see [`Format::raw_to_addr`].
    raw: u64,
    /// Bit 6 of the last address byte (when `n >= 2`): more bytes follow.
    more: bool,
    /// The format named by a fifth byte.
    format: Option<Format>,
}

#[inline(always)]
fn address_bytes(c: &mut Cursor<'_>, header: u8, first: u8) -> Result<AddrBytes, Stop> {
    let mut a = AddrBytes {
        n: 1,
        raw: u64::from(first & 0x7e),
        more: false,
        format: None,
    };
    if first & 0x80 == 0 {
        return Ok(a);
    }
    for i in 1..5usize {
        let b = c.next()?;
        a.n += 1;
        let shift = 7 * i as u32;
        if i == 4 {
            if b & 0x80 != 0 {
                return Err(Stop::Invalid(
                    c.pos,
                    ErrorKind::InvalidField {
                        header,
                        field: Field::FifthAddressByte,
                    },
                ));
            }
            let f = Format::from_fifth(b);
            a.raw |= u64::from(b & f.fifth_mask()) << shift;
            a.more = b & 0x40 != 0;
            a.format = Some(f);
            break;
        }
        if b & 0x80 != 0 {
            a.raw |= u64::from(b & 0x7f) << shift;
        } else {
            a.raw |= u64::from(b & 0x3f) << shift;
            a.more = b & 0x40 != 0;
            break;
        }
    }
    Ok(a)
}

/// Decodes the packet at the start of `bytes`. `bytes[0]` must not be
/// `0x00` (A-sync runs are handled by the parser). On success `ctx` is
/// updated as [`Context::apply`] would; otherwise it is left untouched.
#[inline(always)]
pub(crate) fn decode(
    cfg: &Config,
    ctx: &mut Context,
    bytes: &[u8],
) -> Result<(usize, Packet), Stop> {
    let mut c = Cursor { bytes, pos: 0 };
    let header = c.next()?;
    let packet = if header & 1 == 1 {
        branch(cfg, ctx, &mut c, header)?
    } else if header & 0x80 != 0 {
        if cfg.cycle_accurate() {
            let cycles = cycle_count(&mut c, header)?;
            let atom = if header & 2 == 0 {
                crate::packet::Atom::E
            } else {
                crate::packet::Atom::N
            };
            Packet::Atom {
                atoms: Atoms::single(atom),
                cycles: Some(cycles),
            }
        } else {
            let entry = ATOM_TABLE[usize::from(header)];
            if entry == 0 {
                return Err(Stop::Invalid(1, ErrorKind::ReservedHeader { header }));
            }
            Packet::Atom {
                atoms: Atoms::from_table(entry),
                cycles: None,
            }
        }
    } else {
        match header {
            0x08 => isync(cfg, ctx, &mut c)?,
            0x72 => waypoint(ctx, &mut c, header)?,
            0x0c => Packet::Trigger,
            0x6e => {
                let mut v = 0u32;
                for k in 0..cfg.context_id_size().bytes() {
                    v |= u32::from(c.next()?) << (8 * u32::from(k));
                }
                Packet::ContextId(v)
            }
            0x3c => Packet::Vmid(c.next()?),
            0x42 | 0x46 => timestamp(cfg, ctx, &mut c, header)?,
            0x76 => Packet::ExceptionReturn,
            0x66 => Packet::Ignore,
            _ => return Err(Stop::Invalid(1, ErrorKind::ReservedHeader { header })),
        }
    };
    Ok((c.pos, packet))
}

/// Reads a cycle count starting at byte `start` of `w` (see
/// [`cycle_count`]) without branching on the data; returns it with the
/// number of bytes it takes. `start <= 8` must hold.
#[inline(always)]
fn word_cycles(w: u128, start: usize) -> (u32, usize) {
    let x = (w >> (8 * start)) as u64;
    let first = x as u8;
    let more = u32::from((first >> 6) & 1);
    // Up to four more bytes, each with bit 7 "more"; the fourth always ends.
    let y = x >> 8;
    let stop = (!y & 0x0080_8080) | 0x8000_0000;
    let extra = stop.trailing_zeros() / 8 + 1; // 1..=4
    let groups = (y & 0x7f)
        | ((y >> 1) & (0x7f << 7))
        | ((y >> 2) & (0x7f << 14))
        | ((y >> 3) & (0x7f << 21));
    let groups = (groups & ((1u64 << (7 * extra)) - 1)) as u32;
    let v = u32::from((first >> 2) & 0xf) | ((groups << 4) & 0u32.wrapping_sub(more));
    (v, 1 + (more * extra) as usize)
}

/// A cycle-accurate atom packet from the 16 bytes starting at its header.
#[inline(always)]
pub(crate) fn fast_cycle_atom(w: u128) -> (usize, Packet) {
    let header = w as u8;
    let (cycles, len) = word_cycles(w, 0);
    let atom = if header & 2 == 0 {
        crate::packet::Atom::E
    } else {
        crate::packet::Atom::N
    };
    (
        len,
        Packet::Atom {
            atoms: Atoms::single(atom),
            cycles: Some(cycles),
        },
    )
}

/// A branch address packet without exception information from the 16
/// bytes starting at its header (the upper 8 are only read for a cycle
/// count when `cycle_accurate`): the address bytes are located and
/// unpacked with word operations. Returns `None` when the general decoder
/// must handle the packet (exception information, reserved bit).
#[inline(always)]
pub(crate) fn fast_branch(
    ctx: &mut Context,
    w: u128,
    cycle_accurate: bool,
) -> Option<(usize, Packet)> {
    /// Bits of the last address byte that must be clear (exception
    /// information follows, reserved), by address length.
    const REFUSE: [u8; 5] = [0, 0x40, 0x40, 0x40, 0xc0];
    let w64 = w as u64;
    // The first of bytes 0..=3 with bit 7 clear ends the address; byte 4
    // always does.
    let stop = (!w64 & 0x8080_8080) | 0x80_0000_0000;
    let n = (stop.trailing_zeros() / 8 + 1) as usize;
    let last = (w64 >> (8 * (n - 1))) as u8;
    if last & REFUSE.get(n - 1).copied().unwrap_or(0xff) != 0 {
        return None;
    }
    // Seven bits per byte (six of the first, bits [6:1]); bits above the
    // packet's width are masked off below. Four bytes fill 27 bits, so the
    // fifth is only added when present.
    let lo = w64 as u32;
    let mut raw = u64::from(
        (lo & 0x7e)
            | ((lo >> 1) & (0x7f << 7))
            | ((lo >> 2) & (0x7f << 14))
            | ((lo >> 3) & (0x7f << 21)),
    );
    let (len, cycles) = if cycle_accurate {
        let (c, l) = word_cycles(w, n);
        (n + l, Some(c))
    } else {
        (n, None)
    };
    let (format, isa) = if n == 5 {
        raw |= (w64 >> 4) & (0xff << 28);
        let format = Format::from_fifth(last);
        let isa = resolve_isa(format, ctx.alt);
        ctx.set_isa(isa);
        (format, isa)
    } else {
        (ctx.format, ctx.isa)
    };
    let mask = format.mask(n);
    let address = (ctx.addr & !mask) | (format.raw_to_addr(raw) & mask);
    ctx.addr = address;
    Some((
        len,
        Packet::BranchAddress(BranchAddress {
            address,
            bits: format.bits(n),
            isa,
            exception: None,
            cycles,
        }),
    ))
}

#[inline(always)]
fn branch(cfg: &Config, ctx: &mut Context, c: &mut Cursor<'_>, header: u8) -> Result<Packet, Stop> {
    let a = address_bytes(c, header, header)?;
    let mut exception = None;
    if a.n >= 2 && a.more {
        let e0 = c.next()?;
        let mut info = ExceptionInfo {
            number: u16::from((e0 >> 1) & 0xf),
            ns: e0 & 1 != 0,
            alt_isa: e0 & 0x40 != 0,
            hyp: None,
        };
        if e0 & 0x80 != 0 {
            let e1 = c.next()?;
            info.number |= u16::from(e1 & 0x1f) << 4;
            info.hyp = Some(e1 & 0x20 != 0);
        }
        exception = Some(info);
    }
    let cycles = if cfg.cycle_accurate() {
        let first = c.next()?;
        Some(cycle_count(c, first)?)
    } else {
        None
    };
    let format = a.format.unwrap_or(ctx.format);
    let bits = format.bits(a.n);
    let mask = mask32(bits);
    let address = (ctx.addr & !mask) | (format.raw_to_addr(a.raw) & mask);
    let alt = exception.map_or(ctx.alt, |e| e.alt_isa);
    let isa = resolve_isa(format, alt);
    ctx.addr = address;
    ctx.set_isa(isa);
    if let Some(e) = exception {
        ctx.alt = e.alt_isa;
        ctx.ns = e.ns;
        if let Some(h) = e.hyp {
            ctx.hyp = h;
        }
    }
    Ok(Packet::BranchAddress(BranchAddress {
        address,
        bits,
        isa,
        exception,
        cycles,
    }))
}

fn waypoint(ctx: &Context, c: &mut Cursor<'_>, header: u8) -> Result<Packet, Stop> {
    let first = c.next()?;
    let a = address_bytes(c, header, first)?;
    let alt_isa = if a.n == 5 && a.more {
        Some(c.next()? & 0x40 != 0)
    } else {
        None
    };
    let format = a.format.unwrap_or(ctx.format);
    let bits = format.bits(a.n);
    let mask = mask32(bits);
    let address = (ctx.addr & !mask) | (format.raw_to_addr(a.raw) & mask);
    Ok(Packet::WaypointUpdate(WaypointUpdate {
        address,
        bits,
        isa: resolve_isa(format, alt_isa.unwrap_or(ctx.alt)),
        alt_isa,
    }))
}

fn isync(cfg: &Config, ctx: &mut Context, c: &mut Cursor<'_>) -> Result<Packet, Stop> {
    let mut raw = 0u32;
    for k in 0..4 {
        raw |= u32::from(c.next()?) << (8 * k);
    }
    let info = c.next()?;
    let reason = ISyncReason::from_bits(info >> 5);
    let alt = info & 0x04 != 0;
    let cycles = if cfg.cycle_accurate() && reason != ISyncReason::Periodic {
        let first = c.next()?;
        Some(cycle_count(c, first)?)
    } else {
        None
    };
    let size = cfg.context_id_size().bytes();
    let context_id = if size > 0 {
        let mut v = 0u32;
        for k in 0..size {
            v |= u32::from(c.next()?) << (8 * u32::from(k));
        }
        Some(v)
    } else {
        None
    };
    let isa = match (raw & 1 != 0, alt) {
        (false, false) => Isa::Arm,
        (true, false) => Isa::Thumb,
        (true, true) => Isa::ThumbEE,
        (false, true) => Isa::Jazelle,
    };
    let (address, ns, hyp) = (raw & !1, info & 0x08 != 0, info & 0x02 != 0);
    ctx.addr = address;
    ctx.set_isa(isa);
    ctx.alt = isa == Isa::ThumbEE;
    ctx.ns = ns;
    ctx.hyp = hyp;
    Ok(Packet::ISync(ISync {
        address,
        isa,
        ns,
        hyp,
        reason,
        context_id,
        cycles,
    }))
}

fn timestamp(
    cfg: &Config,
    ctx: &mut Context,
    c: &mut Cursor<'_>,
    header: u8,
) -> Result<Packet, Stop> {
    let wide = cfg.timestamp_64bit();
    let max = if wide { 9 } else { 7 };
    let mut raw = 0u64;
    let mut n = 0;
    loop {
        let b = c.next()?;
        n += 1;
        if n == max {
            raw |= if wide {
                u64::from(b) << 56
            } else {
                u64::from(b & 0x3f) << 42
            };
            break;
        }
        raw |= u64::from(b & 0x7f) << (7 * (n - 1));
        if b & 0x80 == 0 {
            break;
        }
    }
    let bits = if n == max {
        cfg.timestamp_bits()
    } else {
        7 * n as u8
    };
    let cycles = if cfg.cycle_accurate() {
        let first = c.next()?;
        Some(cycle_count(c, first)?)
    } else {
        None
    };
    let mask = mask64(bits);
    let value = if cfg.timestamp_binary() {
        (ctx.ts & !mask) | (raw & mask)
    } else {
        from_gray((to_gray(ctx.ts) & !mask) | (raw & mask))
    };
    ctx.ts = value;
    Ok(Packet::Timestamp(Timestamp {
        value,
        bits,
        clock_changed: header & 0x04 != 0,
        cycles,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atom_table_entries() {
        // 0x84: one atom, E.
        assert_eq!(ATOM_TABLE[0x84], (1 << 5) | 1);
        // 0x86: one atom, N.
        assert_eq!(ATOM_TABLE[0x86], 1 << 5);
        // 0xf0 = b1111_0000: five atoms, stored oldest first: N N E E E.
        assert_eq!(ATOM_TABLE[0xf0], (5 << 5) | 0b11100);
        assert_eq!(ATOM_TABLE[0x80], 0);
        assert_eq!(ATOM_TABLE[0x82], 0);
        assert_eq!(ATOM_TABLE[0x81], 0);
    }
}
