//! Decoding one packet from the bytes at its header.
//!
//! Header classes (ARM DDI 0403, D4.2): `0x00` starts a synchronization
//! packet (handled by the parser); bits \[1:0\] non-zero: a source packet
//! (bit 2 clear: instrumentation, set: hardware) with 1, 2 or 4 payload
//! bytes; `0x70` overflow; `0b0TTT0000` local timestamp format 2;
//! `0b11TC0000` local timestamp format 1; `0x94` GTS1; `0xB4` GTS2;
//! `0bCEEE1S00` extension; everything else is reserved.

use crate::error::ErrorKind;
use crate::packet::{
    DataTrace, DataTraceKind, EventCounter, ExceptionAction, ExceptionTrace, Extension,
    GlobalTimestamp, LocalTimestamp, Packet, PcSample, Stimulus, TimestampRelation,
};

/// The bits of a stimulus port page that [`Stimulus::port`] keeps (the
/// port is `page << 5 | n` in 32 bits).
pub(crate) const PAGE_MASK: u32 = 0x07FF_FFFF;

/// Longest packet: a GTS2 with six payload bytes.
pub(crate) const MAX_PACKET_LEN: usize = 7;

/// What the bytes at a header hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// A packet of this many bytes.
    Packet(usize, Packet),
    /// More bytes are needed.
    Incomplete,
    /// An invalid packet; [`skip_len`] says how many bytes it spans.
    Invalid(ErrorKind),
}

/// Bytes an invalid packet spans.
pub(crate) const fn skip_len(kind: &ErrorKind) -> usize {
    match *kind {
        ErrorKind::InvalidField { len, .. } => len as usize,
        _ => 1,
    }
}

/// Payload size of a source packet header's SS field (non-zero).
const fn source_size(header: u8) -> usize {
    match header & 3 {
        1 => 1,
        2 => 2,
        _ => 4,
    }
}

fn le(payload: &[u8]) -> u32 {
    payload
        .iter()
        .rev()
        .fold(0u32, |v, &b| (v << 8) | u32::from(b))
}

/// The continued payload at `bytes[1..]`: up to `max` bytes, each with a
/// continuation bit 7 but the last. `Ok(n)`: `n` payload bytes;
/// `Err(None)`: more input needed; `Err(Some(kind))`: too long.
fn continued(bytes: &[u8], max: usize, field: &'static str) -> Result<usize, Option<ErrorKind>> {
    for n in 1..=max {
        let Some(&b) = bytes.get(n) else {
            return Err(None);
        };
        if b & 0x80 == 0 {
            return Ok(n);
        }
    }
    Err(Some(ErrorKind::InvalidField {
        header: bytes[0],
        field,
        len: (max + 1) as u8,
    }))
}

/// Seven value bits of each payload byte, lowest first.
fn seven_bits(payload: &[u8]) -> u64 {
    payload
        .iter()
        .enumerate()
        .fold(0u64, |v, (k, &b)| v | (u64::from(b & 0x7F) << (7 * k)))
}

fn invalid(header: u8, field: &'static str, len: usize) -> Decoded {
    Decoded::Invalid(ErrorKind::InvalidField {
        header,
        field,
        len: len as u8,
    })
}

/// Decodes the packet whose header is `bytes[0]` (not `0x00`), with `page`
/// the ITM stimulus port page in force.
pub(crate) fn decode(bytes: &[u8], page: u32) -> Decoded {
    let Some(&h) = bytes.first() else {
        return Decoded::Incomplete;
    };
    if h & 3 != 0 {
        let size = source_size(h);
        let Some(payload) = bytes.get(1..=size) else {
            return Decoded::Incomplete;
        };
        let len = size + 1;
        let value = le(payload);
        if h & 4 == 0 {
            let port = ((page & PAGE_MASK) << 5) | u32::from(h >> 3);
            return Decoded::Packet(
                len,
                Packet::Stimulus(Stimulus {
                    port,
                    value,
                    size: size as u8,
                }),
            );
        }
        return hardware(h, size, value, payload);
    }
    match h & 0x0F {
        0x00 => timestamp(bytes, h),
        0x04 => match h {
            0x94 | 0xB4 => global(bytes, h),
            _ => Decoded::Invalid(ErrorKind::ReservedHeader { header: h }),
        },
        // 0x08 and 0x0C: extension.
        _ => {
            let hardware = h & 4 != 0;
            let low = u32::from((h >> 4) & 7);
            if h & 0x80 == 0 {
                return Decoded::Packet(
                    1,
                    Packet::Extension(Extension {
                        hardware,
                        value: low,
                        len: 0,
                    }),
                );
            }
            match continued(bytes, 4, "extension payload length") {
                Ok(n) => {
                    let value = low | ((seven_bits(&bytes[1..=n]) as u32) << 3);
                    Decoded::Packet(
                        n + 1,
                        Packet::Extension(Extension {
                            hardware,
                            value,
                            len: n as u8,
                        }),
                    )
                }
                Err(None) => Decoded::Incomplete,
                Err(Some(k)) => Decoded::Invalid(k),
            }
        }
    }
}

/// A hardware source packet (header `h`, `size` payload bytes).
fn hardware(h: u8, size: usize, value: u32, payload: &[u8]) -> Decoded {
    let len = size + 1;
    let id = h >> 3;
    let p = match (id, size) {
        (0, 1) => Packet::EventCounter(EventCounter { flags: payload[0] }),
        (0, _) => return invalid(h, "event counter payload size", len),
        (1, 2) => {
            if payload[1] & 0xCE != 0 {
                return invalid(h, "exception trace reserved bits", len);
            }
            let number = u16::from(payload[0]) | (u16::from(payload[1] & 1) << 8);
            let Some(action) = ExceptionAction::from_field(payload[1] >> 4) else {
                return invalid(h, "exception trace function", len);
            };
            Packet::ExceptionTrace(ExceptionTrace { number, action })
        }
        (1, _) => return invalid(h, "exception trace payload size", len),
        (2, 4) => Packet::PcSample(PcSample { pc: Some(value) }),
        (2, 1) if payload[0] == 0 => Packet::PcSample(PcSample { pc: None }),
        (2, _) => return invalid(h, "PC sample payload", len),
        (8..=23, _) => {
            let comparator = (id >> 1) & 3;
            let kind = match (id >> 3, id & 1, size) {
                (1, 0, 4) => DataTraceKind::Pc(value),
                (1, 1, 2) => DataTraceKind::Address(value as u16),
                (1, _, _) => return invalid(h, "data trace payload size", len),
                (_, w, _) => DataTraceKind::Value {
                    value,
                    size: size as u8,
                    write: w == 1,
                },
            };
            Packet::DataTrace(DataTrace { comparator, kind })
        }
        _ => return invalid(h, "hardware source ID", len),
    };
    Decoded::Packet(len, p)
}

/// Overflow or a local timestamp (header `h`, low nibble zero, not 0).
fn timestamp(bytes: &[u8], h: u8) -> Decoded {
    if h == 0x70 {
        return Decoded::Packet(1, Packet::Overflow);
    }
    if h & 0x80 == 0 {
        return Decoded::Packet(
            1,
            Packet::LocalTimestamp(LocalTimestamp {
                value: u32::from(h >> 4),
                relation: TimestampRelation::Synchronous,
                len: 0,
            }),
        );
    }
    if h & 0x40 == 0 {
        return Decoded::Invalid(ErrorKind::ReservedHeader { header: h });
    }
    match continued(bytes, 4, "local timestamp payload length") {
        Ok(n) => Decoded::Packet(
            n + 1,
            Packet::LocalTimestamp(LocalTimestamp {
                value: seven_bits(&bytes[1..=n]) as u32,
                relation: TimestampRelation::from_tc(h >> 4),
                len: n as u8,
            }),
        ),
        Err(None) => Decoded::Incomplete,
        Err(Some(k)) => Decoded::Invalid(k),
    }
}

/// GTS1 (`0x94`) or GTS2 (`0xB4`).
fn global(bytes: &[u8], h: u8) -> Decoded {
    let high = h == 0xB4;
    let (max, field) = if high {
        (6, "GTS2 payload length")
    } else {
        (4, "GTS1 payload length")
    };
    let n = match continued(bytes, max, field) {
        Ok(n) => n,
        Err(None) => return Decoded::Incomplete,
        Err(Some(k)) => return Decoded::Invalid(k),
    };
    let payload = &bytes[1..=n];
    if high {
        if n != 4 && n != 6 {
            return invalid(h, field, n + 1);
        }
        return Decoded::Packet(
            n + 1,
            Packet::GlobalTimestamp(GlobalTimestamp {
                high,
                bits: seven_bits(payload),
                len: n as u8,
                wrap: false,
                clock_change: false,
            }),
        );
    }
    let (bits, wrap, clock_change) = if n == 4 {
        let last = payload[3];
        let bits = seven_bits(&payload[..3]) | (u64::from(last & 0x1F) << 21);
        (bits, last & 0x40 != 0, last & 0x20 != 0)
    } else {
        (seven_bits(payload), false, false)
    };
    Decoded::Packet(
        n + 1,
        Packet::GlobalTimestamp(GlobalTimestamp {
            high,
            bits,
            len: n as u8,
            wrap,
            clock_change,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every header byte but `0x00` is classified: it decodes (given enough
    /// bytes), or is reserved, and never asks for more than the longest
    /// packet.
    #[test]
    fn every_header_is_classified() {
        for h in 1..=255u8 {
            let mut bytes = [0u8; MAX_PACKET_LEN + 1];
            bytes[0] = h;
            match decode(&bytes, 0) {
                Decoded::Packet(len, _) => assert!(len <= MAX_PACKET_LEN),
                Decoded::Invalid(k) => assert!(skip_len(&k) <= MAX_PACKET_LEN),
                Decoded::Incomplete => panic!("header {h:#04x} wants more than {MAX_PACKET_LEN}"),
            }
        }
    }
}
