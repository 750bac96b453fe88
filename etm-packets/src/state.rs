//! The decompression state (last branch address, instruction set,
//! security state, last data address, last timestamp) that compressed
//! packets are decoded against, shared by the parser and the encoder.

use crate::config::Config;
use crate::packet::{Isa, NormalData, OutOfOrderPlaceholder, Packet, ValueNotTraced};

/// Decompression state shared by the parser and the encoder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct State {
    /// Last branch / I-sync address.
    pub last_addr: u32,
    /// Number of low bits of `last_addr` that packets have given since
    /// synchronization (32 after an I-sync or a five-byte address).
    pub known_bits: u8,
    /// Current instruction set state.
    pub isa: Isa,
    /// AltISA bit (ThumbEE when in Thumb state).
    pub alt: bool,
    /// Non-secure state.
    pub ns: bool,
    /// Hyp mode.
    pub hyp: bool,
    /// Last data address.
    pub data_addr: u32,
    /// Last timestamp as it appears on the wire (Gray coded if so
    /// configured).
    pub ts_raw: u64,
}

impl State {
    /// Updates the state after `p`, from the packet's fields alone (so the
    /// parser and the encoder stay in step).
    #[inline(always)]
    pub(crate) fn apply(&mut self, p: &Packet, cfg: &Config) {
        match p {
            Packet::ISync(s) => {
                self.ns = s.ns();
                self.hyp = s.hyp();
                if !s.is_data_only() {
                    self.last_addr = s.resume_address();
                    self.known_bits = 32;
                    self.isa = s.isa();
                    self.alt = s.isa() == Isa::ThumbEE;
                }
            }
            Packet::Branch(b) => {
                self.last_addr = b.address;
                self.known_bits = b.known_bits;
                self.isa = b.isa;
                if matches!(b.isa, Isa::Thumb | Isa::ThumbEE) {
                    self.alt = b.isa == Isa::ThumbEE;
                }
                self.ns = b.ns;
                self.hyp = b.hyp;
            }
            Packet::NormalData(NormalData {
                address: Some(a), ..
            })
            | Packet::ValueNotTraced(ValueNotTraced {
                address: Some(a), ..
            })
            | Packet::OutOfOrderPlaceholder(OutOfOrderPlaceholder {
                address: Some(a), ..
            }) => self.data_addr = *a,
            Packet::Timestamp(t) => {
                self.ts_raw = if cfg.timestamp_gray() {
                    to_gray(t.value)
                } else {
                    t.value
                };
            }
            _ => {}
        }
    }
}

/// Natural binary to Gray code.
pub(crate) const fn to_gray(v: u64) -> u64 {
    v ^ (v >> 1)
}

/// Gray code to natural binary: `binary[n] = XOR(gray[N:n])`.
pub(crate) const fn from_gray(g: u64) -> u64 {
    let mut v = g;
    v ^= v >> 1;
    v ^= v >> 2;
    v ^= v >> 4;
    v ^= v >> 8;
    v ^= v >> 16;
    v ^= v >> 32;
    v
}

/// Mask of the low `bits` bits of a u32.
pub(crate) const fn mask32(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// Mask of the low `bits` bits of a u64.
pub(crate) const fn mask64(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}
