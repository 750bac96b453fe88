//! Packet encoding: the exact bytes of one packet ([`Packet::encode`]) and a
//! stateful [`Encoder`] that tracks the compression state like a PTM and
//! builds minimal packets.

use crate::config::Config;
use crate::context::{mask32, mask64, resolve_isa, to_gray, Context, Format};
use crate::error::EncodeError;
use crate::packet::{
    Atom, BranchAddress, ExceptionInfo, ISyncReason, Isa, Packet, Timestamp, WaypointUpdate,
    MAX_PACKET_LEN,
};

/// A small fixed output buffer.
struct Out {
    buf: [u8; MAX_PACKET_LEN + 1],
    len: usize,
}

impl Out {
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }
}

const fn invalid(reason: &'static str) -> EncodeError {
    EncodeError::Invalid { reason }
}

/// Number of bytes of a cycle count.
fn cycle_len(v: u32) -> usize {
    match v {
        0..=0xf => 1,
        0x10..=0x7ff => 2,
        0x800..=0x3_ffff => 3,
        0x4_0000..=0x1ff_ffff => 4,
        _ => 5,
    }
}

/// Writes a cycle count; `first_flags` are bits 7 and \[1:0\] of the first
/// byte (the atom bits for a cycle-accurate atom header).
fn put_cycles(out: &mut Out, v: u32, first_flags: u8) {
    let n = cycle_len(v);
    let more = if n > 1 { 0x40 } else { 0 };
    out.push(first_flags | more | (((v & 0xf) as u8) << 2));
    for i in 1..n {
        let bits = ((v >> (4 + 7 * (i - 1))) & 0x7f) as u8;
        let cont = if i + 1 < n { 0x80 } else { 0 };
        out.push(bits | cont);
    }
}

/// Writes the address bytes of a branch or waypoint packet: `n` bytes in
/// `format`, `flag` setting bit 6 of the last byte (exception or
/// information byte follows) when `n >= 2`.
fn put_address(out: &mut Out, format: Format, addr: u32, n: usize, flag: bool) {
    let raw = format.addr_to_raw(addr);
    let flag_bit = if flag { 0x40 } else { 0 };
    let first_cont = if n > 1 { 0x80 } else { 0 };
    out.push(((raw & 0x7e) as u8) | 1 | first_cont);
    for i in 1..n {
        let part = (raw >> (7 * i)) as u8;
        if i == 4 {
            out.push((part & format.fifth_mask()) | format.fifth_marker() | flag_bit);
        } else if i + 1 < n {
            out.push((part & 0x7f) | 0x80);
        } else {
            out.push((part & 0x3f) | flag_bit);
        }
    }
}

fn check_cycles(cfg: &Config, cycles: Option<u32>) -> Result<(), EncodeError> {
    if cycles.is_some() != cfg.cycle_accurate() {
        return Err(invalid(
            "a cycle count must be present exactly in cycle-accurate mode",
        ));
    }
    Ok(())
}

impl Packet {
    /// Encodes the packet exactly as described, under `cfg`, into `out`;
    /// returns the number of bytes written (at most
    /// [`MAX_PACKET_LEN`] except nothing longer
    /// than 6 for an A-sync). The `bits` fields choose how many address or
    /// timestamp bytes are written; cycle counts use the fewest bytes.
    ///
    /// This does not check the packet against earlier packets (whether the
    /// address bits left out match the previous address, for example); use
    /// an [`Encoder`] for that.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] when `out` is too short;
    /// [`EncodeError::Invalid`] when the packet cannot be expressed: a
    /// `bits` value no byte count gives, a misaligned address, an empty
    /// atom list or more than one atom in cycle-accurate mode, a cycle
    /// count or context ID whose presence does not match `cfg`, a value
    /// wider than its field.
    pub fn encode(&self, cfg: &Config, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut o = Out {
            buf: [0; MAX_PACKET_LEN + 1],
            len: 0,
        };
        match self {
            Packet::ASync => {
                for _ in 0..5 {
                    o.push(0);
                }
                o.push(0x80);
            }
            Packet::ISync(s) => {
                if s.address & 1 != 0 {
                    return Err(invalid("I-sync address bit 0 must be clear"));
                }
                let size = cfg.context_id_size();
                match s.context_id {
                    Some(v) if size.bytes() > 0 && v <= size.max_value() => {}
                    None if size.bytes() == 0 => {}
                    _ => {
                        return Err(invalid(
                            "I-sync context ID must match the configured context ID size",
                        ))
                    }
                }
                let want_cycles = cfg.cycle_accurate() && s.reason != ISyncReason::Periodic;
                if s.cycles.is_some() != want_cycles {
                    return Err(invalid(
                        "I-sync carries a cycle count exactly in cycle-accurate mode when not periodic",
                    ));
                }
                let (t, alt) = match s.isa {
                    Isa::Arm => (0, false),
                    Isa::Thumb => (1, false),
                    Isa::ThumbEE => (1, true),
                    Isa::Jazelle => (0, true),
                };
                o.push(0x08);
                for b in (s.address | t).to_le_bytes() {
                    o.push(b);
                }
                // Bit 0 of the information byte reads as 1 in PTM output.
                o.push(
                    (s.reason.bits() << 5)
                        | (u8::from(s.ns) << 3)
                        | (u8::from(alt) << 2)
                        | (u8::from(s.hyp) << 1)
                        | 1,
                );
                if let Some(c) = s.cycles {
                    // The first cycle count byte of an I-sync has bit 7 set.
                    put_cycles(&mut o, c, 0x80);
                }
                if let Some(v) = s.context_id {
                    for b in v.to_le_bytes().iter().take(usize::from(size.bytes())) {
                        o.push(*b);
                    }
                }
            }
            Packet::Atom { atoms, cycles } => {
                check_cycles(cfg, *cycles)?;
                if let Some(c) = cycles {
                    if atoms.len() != 1 {
                        return Err(invalid("a cycle-accurate atom packet holds one atom"));
                    }
                    let n_bit = if atoms.get(0) == Some(Atom::N) { 2 } else { 0 };
                    put_cycles(&mut o, *c, 0x80 | n_bit);
                } else {
                    let count = atoms.len();
                    if count == 0 || count > 5 {
                        return Err(invalid("an atom packet holds 1 to 5 atoms"));
                    }
                    let mut h = 0x80u8 | (1 << (count + 1));
                    for j in 0..count {
                        if atoms.get(j) == Some(Atom::N) {
                            h |= 1 << (count - j);
                        }
                    }
                    o.push(h);
                }
            }
            Packet::BranchAddress(b) => {
                check_cycles(cfg, b.cycles)?;
                let format = Format::of(b.isa);
                let n = format
                    .bytes_for_bits(b.bits)
                    .ok_or(invalid("branch address bits do not match a byte count"))?;
                if !format.aligned(b.address) {
                    return Err(invalid("branch address misaligned for its instruction set"));
                }
                if let Some(e) = b.exception {
                    if n < 2 {
                        return Err(invalid(
                            "exception information needs at least two address bytes",
                        ));
                    }
                    if e.number > 0x1ff {
                        return Err(invalid("exception number wider than 9 bits"));
                    }
                    if e.number > 0xf && e.hyp.is_none() {
                        return Err(invalid(
                            "exception numbers above 15 need the second information byte, which carries Hyp",
                        ));
                    }
                }
                put_address(&mut o, format, b.address, n, b.exception.is_some());
                if let Some(e) = b.exception {
                    let second = e.needs_second_byte();
                    o.push(
                        (if second { 0x80 } else { 0 })
                            | (u8::from(e.alt_isa) << 6)
                            | (((e.number & 0xf) as u8) << 1)
                            | u8::from(e.ns),
                    );
                    if second {
                        o.push(
                            ((e.number >> 4) as u8 & 0x1f)
                                | (u8::from(e.hyp.unwrap_or(false)) << 5),
                        );
                    }
                }
                if let Some(c) = b.cycles {
                    put_cycles(&mut o, c, 0);
                }
            }
            Packet::WaypointUpdate(w) => {
                let format = Format::of(w.isa);
                let n = format
                    .bytes_for_bits(w.bits)
                    .ok_or(invalid("waypoint address bits do not match a byte count"))?;
                if !format.aligned(w.address) {
                    return Err(invalid(
                        "waypoint address misaligned for its instruction set",
                    ));
                }
                if w.alt_isa.is_some() && n != 5 {
                    return Err(invalid(
                        "the waypoint information byte follows a 5-byte address only",
                    ));
                }
                o.push(0x72);
                put_address(&mut o, format, w.address, n, w.alt_isa.is_some());
                if let Some(alt) = w.alt_isa {
                    o.push(u8::from(alt) << 6);
                }
            }
            Packet::Trigger => o.push(0x0c),
            Packet::ContextId(v) => {
                let size = cfg.context_id_size();
                if *v > size.max_value() {
                    return Err(invalid("context ID wider than the configured size"));
                }
                o.push(0x6e);
                for b in v.to_le_bytes().iter().take(usize::from(size.bytes())) {
                    o.push(*b);
                }
            }
            Packet::Vmid(v) => {
                o.push(0x3c);
                o.push(*v);
            }
            Packet::Timestamp(t) => {
                check_cycles(cfg, t.cycles)?;
                let full = cfg.timestamp_bits();
                let max = if cfg.timestamp_64bit() { 9 } else { 7 };
                if t.value & !mask64(full) != 0 {
                    return Err(invalid("timestamp wider than the configured size"));
                }
                let n = if t.bits == full {
                    max
                } else if t.bits % 7 == 0 && t.bits > 0 && usize::from(t.bits / 7) < max {
                    usize::from(t.bits / 7)
                } else {
                    return Err(invalid("timestamp bits do not match a byte count"));
                };
                let raw = if cfg.timestamp_binary() {
                    t.value
                } else {
                    to_gray(t.value)
                };
                o.push(0x42 | (u8::from(t.clock_changed) << 2));
                for i in 0..n {
                    if i + 1 == max {
                        o.push(if max == 9 {
                            (raw >> 56) as u8
                        } else {
                            ((raw >> 42) & 0x3f) as u8
                        });
                    } else {
                        let cont = if i + 1 < n { 0x80 } else { 0 };
                        o.push(((raw >> (7 * i)) & 0x7f) as u8 | cont);
                    }
                }
                if let Some(c) = t.cycles {
                    put_cycles(&mut o, c, 0);
                }
            }
            Packet::ExceptionReturn => o.push(0x76),
            Packet::Ignore => o.push(0x66),
        }
        let len = o.len;
        let dst = out
            .get_mut(..len)
            .ok_or(EncodeError::BufferTooSmall { needed: len })?;
        dst.copy_from_slice(&o.buf[..len]);
        Ok(len)
    }
}

/// Encodes packets while tracking the compression state (last address,
/// instruction set, AltISA / security / Hyp state, last timestamp), as a PTM
/// does. Its builder methods ([`Encoder::branch`],
/// [`Encoder::waypoint_update`], [`Encoder::timestamp`]) produce the minimal
/// packet for a target; [`Encoder::encode`] checks that a packet is
/// consistent with the state, writes it and updates the state, so that a
/// [`Parser`](crate::Parser) reading the output reconstructs the same
/// packets.
///
/// ```
/// use ptm_packets::{Config, Encoder, ISync, ISyncReason, Isa, Packet, Parser};
/// let cfg = Config::default();
/// let mut enc = Encoder::new(cfg);
/// let mut bytes = Vec::new();
/// enc.encode_extend(&Packet::ASync, &mut bytes).unwrap();
/// let isync = ISync { address: 0x8000_0000, isa: Isa::Arm, reason: ISyncReason::TraceOn, ..ISync::default() };
/// enc.encode_extend(&Packet::ISync(isync), &mut bytes).unwrap();
/// let branch = enc.branch(0x8000_0100, Isa::Arm, None, None);
/// enc.encode_extend(&branch, &mut bytes).unwrap();
/// assert_eq!(bytes.len(), 6 + 6 + 2); // A-sync, I-sync, 2-byte branch
/// let mut parser = Parser::new(cfg);
/// let last = parser.feed(&bytes).last().unwrap().unwrap();
/// assert_eq!(last, (12, branch));
/// ```
#[derive(Clone, Debug)]
pub struct Encoder {
    cfg: Config,
    ctx: Context,
}

impl Encoder {
    /// An encoder with the parser's initial state (address 0, ARM).
    pub fn new(cfg: Config) -> Self {
        Encoder {
            cfg,
            ctx: Context::default(),
        }
    }

    /// The configuration packets are encoded for.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Forgets the compression state.
    pub fn reset(&mut self) {
        self.ctx = Context::default();
    }

    /// The address compressed branch and waypoint addresses are relative to.
    pub fn last_address(&self) -> u32 {
        self.ctx.addr
    }

    /// The current instruction set.
    pub fn isa(&self) -> Isa {
        self.ctx.isa
    }

    /// The last timestamp value.
    pub fn last_timestamp(&self) -> u64 {
        self.ctx.ts
    }

    /// Encodes `packet` into `out` and updates the compression state;
    /// returns the number of bytes written.
    ///
    /// # Errors
    ///
    /// Everything [`Packet::encode`] reports, and
    /// [`EncodeError::Invalid`] when the packet contradicts the state: a
    /// compressed address whose omitted high bits differ from the last
    /// address or whose address format differs from the current one, an
    /// instruction set that disagrees with the AltISA state, a compressed
    /// timestamp whose omitted bits differ from the last timestamp.
    pub fn encode(&mut self, packet: &Packet, out: &mut [u8]) -> Result<usize, EncodeError> {
        self.check(packet)?;
        let n = packet.encode(&self.cfg, out)?;
        self.ctx.apply(packet);
        Ok(n)
    }

    /// Like [`Encoder::encode`], appending the bytes to `out` (a `Vec<u8>`,
    /// for example).
    ///
    /// # Errors
    ///
    /// As [`Encoder::encode`].
    pub fn encode_extend<E: Extend<u8>>(
        &mut self,
        packet: &Packet,
        out: &mut E,
    ) -> Result<usize, EncodeError> {
        let mut buf = [0u8; MAX_PACKET_LEN + 1];
        let n = self.encode(packet, &mut buf)?;
        out.extend(buf.iter().take(n).copied());
        Ok(n)
    }

    fn check_address(&self, address: u32, bits: u8, isa: Isa) -> Result<(), EncodeError> {
        if bits < 32 {
            if Format::of(isa) != Format::of(self.ctx.isa) {
                return Err(invalid(
                    "only a 5-byte address can change the address format",
                ));
            }
            if (address ^ self.ctx.addr) & !mask32(bits) != 0 {
                return Err(invalid(
                    "address bits left out differ from the last address",
                ));
            }
        }
        Ok(())
    }

    fn check(&self, packet: &Packet) -> Result<(), EncodeError> {
        match packet {
            Packet::BranchAddress(b) => {
                self.check_address(b.address, b.bits, b.isa)?;
                let alt = b.exception.map_or(self.ctx.alt, |e| e.alt_isa);
                if resolve_isa(Format::of(b.isa), alt) != b.isa {
                    return Err(invalid("instruction set disagrees with the AltISA state"));
                }
            }
            Packet::WaypointUpdate(w) => {
                self.check_address(w.address, w.bits, w.isa)?;
                let alt = w.alt_isa.unwrap_or(self.ctx.alt);
                if resolve_isa(Format::of(w.isa), alt) != w.isa {
                    return Err(invalid("instruction set disagrees with the AltISA state"));
                }
            }
            Packet::Timestamp(t) if t.bits < self.cfg.timestamp_bits() => {
                let (old, new) = if self.cfg.timestamp_binary() {
                    (self.ctx.ts, t.value)
                } else {
                    (to_gray(self.ctx.ts), to_gray(t.value))
                };
                if (old ^ new) & !mask64(t.bits) != 0 {
                    return Err(invalid(
                        "timestamp bits left out differ from the last timestamp",
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn cycles(&self, cycles: Option<u32>) -> Option<u32> {
        if self.cfg.cycle_accurate() {
            Some(cycles.unwrap_or(0))
        } else {
            None
        }
    }

    /// The minimal branch address packet to `address` in `isa`, as a PTM
    /// would emit it: the fewest address bytes that give every changed bit
    /// (all five when the address format changes, at least two when
    /// exception information follows). Exception information is added when
    /// needed to switch between Thumb and ThumbEE, and its AltISA bit is
    /// set to match a Thumb/ThumbEE target; an exception number above 15
    /// without `hyp` gets the current Hyp state (its second information
    /// byte always carries Hyp). `cycles` is used in
    /// cycle-accurate mode (0 when `None`) and dropped otherwise.
    pub fn branch(
        &self,
        address: u32,
        isa: Isa,
        exception: Option<ExceptionInfo>,
        cycles: Option<u32>,
    ) -> Packet {
        let format = Format::of(isa);
        let mut exception = exception;
        if format == Format::Thumb {
            let want_alt = isa == Isa::ThumbEE;
            match &mut exception {
                Some(e) => e.alt_isa = want_alt,
                None if want_alt != self.ctx.alt => {
                    exception = Some(ExceptionInfo {
                        number: 0,
                        ns: self.ctx.ns,
                        alt_isa: want_alt,
                        hyp: None,
                    })
                }
                None => {}
            }
        }
        if let Some(e) = &mut exception {
            if e.number > 0xf && e.hyp.is_none() {
                e.hyp = Some(self.ctx.hyp);
            }
        }
        let min_bytes = if exception.is_some() { 2 } else { 1 };
        let n = self.address_bytes(address, format, min_bytes);
        Packet::BranchAddress(BranchAddress {
            address,
            bits: format.bits(n),
            isa,
            exception,
            cycles: self.cycles(cycles),
        })
    }

    fn address_bytes(&self, address: u32, format: Format, min_bytes: usize) -> usize {
        if format != Format::of(self.ctx.isa) {
            return 5;
        }
        (min_bytes..5)
            .find(|&n| (address ^ self.ctx.addr) & !mask32(format.bits(n)) == 0)
            .unwrap_or(5)
    }

    /// The minimal waypoint update packet for a waypoint at `address` in
    /// `isa`.
    pub fn waypoint_update(&self, address: u32, isa: Isa) -> Packet {
        let format = Format::of(isa);
        let (n, alt_isa) = if isa == self.ctx.isa {
            (self.address_bytes(address, format, 1), None)
        } else {
            let alt = isa == Isa::ThumbEE;
            let info = (format == Format::Thumb && alt != self.ctx.alt).then_some(alt);
            (5, info)
        };
        Packet::WaypointUpdate(WaypointUpdate {
            address,
            bits: format.bits(n),
            isa,
            alt_isa,
        })
    }

    /// The minimal timestamp packet for `value` (truncated to the configured
    /// width): the fewest bytes that give every changed bit, in the
    /// configured encoding. `cycles` as for [`Encoder::branch`].
    pub fn timestamp(&self, value: u64, clock_changed: bool, cycles: Option<u32>) -> Packet {
        let full = self.cfg.timestamp_bits();
        let value = value & mask64(full);
        let (old, new) = if self.cfg.timestamp_binary() {
            (self.ctx.ts, value)
        } else {
            (to_gray(self.ctx.ts), to_gray(value))
        };
        let max = if self.cfg.timestamp_64bit() { 9u8 } else { 7 };
        let bits = (1..max)
            .map(|n| 7 * n)
            .find(|&b| (old ^ new) & !mask64(b) == 0)
            .unwrap_or(full);
        Packet::Timestamp(Timestamp {
            value,
            bits,
            clock_changed,
            cycles: self.cycles(cycles),
        })
    }
}
