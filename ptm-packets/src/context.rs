//! Compression state shared by the parser and the encoder, and the address
//! and timestamp bit layouts.

use crate::packet::{Isa, Packet};

/// What earlier packets established: the base for compressed addresses and
/// timestamps, and the instruction set / security state that fills in what a
/// packet leaves out. The parser and the encoder update it with the same
/// function ([`Context::apply`]), so they cannot drift apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Context {
    /// Last branch or I-sync address.
    pub addr: u32,
    /// Current instruction set. Change it with [`Context::set_isa`].
    pub isa: Isa,
    /// Address format of `isa` (interprets compressed addresses).
    pub format: Format,
    /// AltISA state: a Thumb-format address means ThumbEE.
    pub alt: bool,
    /// Non-secure state.
    pub ns: bool,
    /// Hyp mode.
    pub hyp: bool,
    /// Last timestamp, natural binary.
    pub ts: u64,
}

impl Context {
    /// Sets the instruction set and its address format.
    #[inline(always)]
    pub fn set_isa(&mut self, isa: Isa) {
        self.isa = isa;
        self.format = Format::of(isa);
    }

    /// Updates the state with a packet that was parsed or encoded.
    #[inline]
    pub fn apply(&mut self, packet: &Packet) {
        match packet {
            Packet::ISync(s) => {
                self.addr = s.address;
                self.set_isa(s.isa);
                self.alt = s.isa == Isa::ThumbEE;
                self.ns = s.ns;
                self.hyp = s.hyp;
            }
            Packet::BranchAddress(b) => {
                self.addr = b.address;
                self.set_isa(b.isa);
                if let Some(e) = b.exception {
                    self.alt = e.alt_isa;
                    self.ns = e.ns;
                    if let Some(h) = e.hyp {
                        self.hyp = h;
                    }
                }
            }
            Packet::Timestamp(t) => self.ts = t.value,
            _ => {}
        }
    }
}

/// Layout of branch address bits, chosen by the target instruction set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub(crate) enum Format {
    /// Word aligned: the first byte holds address bits \[7:2\].
    #[default]
    Arm,
    /// Halfword aligned (Thumb, ThumbEE): first byte bits \[6:1\].
    Thumb,
    /// Byte aligned: first byte bits \[5:0\].
    Jazelle,
}

/// Masks of the address bits given by 1..=5 address bytes, per [`Format`].
static MASKS: [[u32; 5]; 3] = {
    let mut m = [[0u32; 5]; 3];
    let mut f = 0;
    while f < 3 {
        let mut n = 0;
        while n < 5 {
            m[f][n] = u32::MAX >> (32 - BITS[f][n] as u32);
            n += 1;
        }
        f += 1;
    }
    m
};

/// Address bits given by 1..=5 address bytes, per [`Format`].
static BITS: [[u8; 5]; 3] = [
    [8, 14, 21, 28, 32], // ARM
    [7, 13, 20, 27, 32], // Thumb
    [6, 12, 19, 26, 32], // Jazelle
];

impl Format {
    #[inline]
    pub fn of(isa: Isa) -> Format {
        match isa {
            Isa::Arm => Format::Arm,
            Isa::Thumb | Isa::ThumbEE => Format::Thumb,
            Isa::Jazelle => Format::Jazelle,
        }
    }

    #[inline(always)]
    fn table(self) -> &'static [u8; 5] {
        &BITS[self as usize]
    }

    /// Mask of the address bits given by `n` (1..=5) address bytes.
    #[inline(always)]
    pub fn mask(self, n: usize) -> u32 {
        MASKS[self as usize]
            .get(n.wrapping_sub(1))
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// Address bits given by `n` (1..=5) address bytes.
    #[inline(always)]
    pub fn bits(self, n: usize) -> u8 {
        self.table().get(n.wrapping_sub(1)).copied().unwrap_or(32)
    }

    /// Number of address bytes giving exactly `bits` bits.
    pub fn bytes_for_bits(self, bits: u8) -> Option<usize> {
        self.table().iter().position(|&b| b == bits).map(|i| i + 1)
    }

    /// Value bits of the fifth address byte.
    #[inline]
    pub fn fifth_mask(self) -> u8 {
        match self {
            Format::Arm => 0x07,
            Format::Thumb => 0x0f,
            Format::Jazelle => 0x1f,
        }
    }

    /// Marker bits of the fifth address byte.
    pub fn fifth_marker(self) -> u8 {
        match self {
            Format::Arm => 0x08,
            Format::Thumb => 0x10,
            Format::Jazelle => 0x20,
        }
    }

    /// Format named by the marker bits of a fifth address byte.
    #[inline]
    pub fn from_fifth(byte: u8) -> Format {
        if byte & 0x20 != 0 {
            Format::Jazelle
        } else if byte & 0x10 != 0 {
            Format::Thumb
        } else {
            Format::Arm
        }
    }

    /// Converts the packet's raw bit string (first byte's bits \[6:1\] at
    /// bits \[6:1\], then 7 bits per byte) into address bits: shifted
    /// left by one for ARM, as is for Thumb, right by one for Jazelle
    /// (`raw` is below 2^63, so the shift pair loses nothing else).
    #[inline(always)]
    pub fn raw_to_addr(self, raw: u64) -> u32 {
        ((raw << 1) >> (self as u32)) as u32
    }

    /// Inverse of [`Format::raw_to_addr`].
    #[inline]
    pub fn addr_to_raw(self, addr: u32) -> u64 {
        let a = u64::from(addr);
        match self {
            Format::Arm => a >> 1,
            Format::Thumb => a,
            Format::Jazelle => a << 1,
        }
    }

    /// Whether `addr` has the alignment the format can express.
    pub fn aligned(self, addr: u32) -> bool {
        match self {
            Format::Arm => addr & 3 == 0,
            Format::Thumb => addr & 1 == 0,
            Format::Jazelle => true,
        }
    }
}

/// The instruction set a branch lands in, given the address format and the
/// AltISA state.
#[inline]
pub(crate) fn resolve_isa(format: Format, alt: bool) -> Isa {
    match format {
        Format::Arm => Isa::Arm,
        Format::Thumb if alt => Isa::ThumbEE,
        Format::Thumb => Isa::Thumb,
        Format::Jazelle => Isa::Jazelle,
    }
}

/// Mask of the low `bits` bits of a 32-bit value.
#[inline]
pub(crate) fn mask32(bits: u8) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// Mask of the low `bits` bits of a 64-bit value.
#[inline]
pub(crate) fn mask64(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Natural binary to Gray code.
#[inline]
pub(crate) fn to_gray(v: u64) -> u64 {
    v ^ (v >> 1)
}

/// Gray code to natural binary.
#[inline]
pub(crate) fn from_gray(g: u64) -> u64 {
    let mut v = g;
    v ^= v >> 1;
    v ^= v >> 2;
    v ^= v >> 4;
    v ^= v >> 8;
    v ^= v >> 16;
    v ^= v >> 32;
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gray_round_trip() {
        for v in [
            0u64,
            1,
            2,
            3,
            0x0082_F9D1_8BCC,
            u64::MAX,
            1 << 47,
            0xdead_beef_1234,
        ] {
            assert_eq!(from_gray(to_gray(v)), v);
        }
        assert_eq!(to_gray(2), 3);
    }

    #[test]
    fn bit_tables() {
        assert_eq!(Format::Arm.bits(2), 14);
        assert_eq!(Format::Thumb.bytes_for_bits(20), Some(3));
        assert_eq!(Format::Jazelle.bytes_for_bits(7), None);
        assert_eq!(Format::from_fifth(0x48), Format::Arm);
        assert_eq!(Format::from_fifth(0x18), Format::Thumb);
        assert_eq!(Format::from_fifth(0x20), Format::Jazelle);
        assert_eq!(mask32(32), u32::MAX);
        assert_eq!(mask64(7), 0x7f);
    }
}
