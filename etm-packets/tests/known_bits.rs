//! Which address bits a branch packet leaves known: before the first
//! I-sync only the bits the packets carried are (OpenCSD lists such an
//! address as `0x??09F49C (21:0)`); an I-sync or a five-byte address
//! makes all 32 known.
#![allow(clippy::unwrap_used)]

use etm_packets::{Config, Packet, Parser};

const ASYNC: [u8; 6] = [0, 0, 0, 0, 0, 0x80];

/// `(address, bits carried, bits known)` of every branch packet in
/// A-sync + `bytes`.
fn branches(bytes: &[u8]) -> Vec<(u32, u8, u8)> {
    let mut all = ASYNC.to_vec();
    all.extend_from_slice(bytes);
    let mut p = Parser::new(Config::new());
    p.feed(&all)
        .filter_map(|i| match i.unwrap() {
            (_, Packet::Branch(b)) => Some((b.address, b.bits, b.known_bits)),
            _ => None,
        })
        .collect()
}

#[test]
fn bits_before_the_first_isync_are_only_those_carried() {
    // ARM state (shift 2). Three bytes carry A[21:2] (6 + 7 + 7 bits): 22
    // bits. Then one byte carries A[7:2]: 8 bits, the 22 stay known.
    let got = branches(&[0x81 | (0x27 << 1), 0x80 | 0x3D, 0x13, 0x0B << 1 | 1]);
    // A[7:2] = 0x27, A[14:8] = 0x3D, A[21:15] = 0x13.
    let first = (0x13 << 15) | (0x3D << 8) | (0x27 << 2);
    assert_eq!(got[0], (first, 22, 22));
    let second = (first & !0xFF) | (0x0B << 2);
    assert_eq!(got[1], (second, 8, 22));
}

#[test]
fn a_five_byte_address_or_an_isync_makes_every_bit_known() {
    // A five-byte ARM address (table 6.9: fifth byte b0000_1AAA), then a
    // one-byte branch: all 32 bits known for both.
    let got = branches(&[0xBD, 0xD6, 0xE8, 0xC8, 0x08, 0x05]);
    assert_eq!(got[0].1, 32);
    assert_eq!(got[0].2, 32);
    assert_eq!((got[1].1, got[1].2), (8, 32));
    // A periodic I-sync at 0x8000 (ARM, secure), then a one-byte branch
    // carrying A[7:2] = 2.
    let got = branches(&[0x08, 0x00, 0x00, 0x80, 0x00, 0x00, 0x05]);
    assert_eq!(got, vec![(0x8008, 8, 32)]);
}
