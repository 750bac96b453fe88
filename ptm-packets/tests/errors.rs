//! Error reporting: reserved headers, bad A-sync runs, truncation,
//! unsynchronized stretches, and early drop of the packet iterator.

#![allow(clippy::unwrap_used)]

use ptm_packets::{Config, Error, ErrorKind, Packet, Parser};

/// One parser item.
type Item = Result<(u64, Packet), Error>;

const ASYNC: [u8; 6] = [0, 0, 0, 0, 0, 0x80];

fn items(cfg: Config, bytes: &[u8]) -> (Vec<Item>, Option<Error>) {
    let mut p = Parser::new(cfg);
    let v = p.feed(bytes).collect();
    (v, p.finish())
}

/// Every header byte is either a packet or reported as reserved at its
/// offset, never anything else.
#[test]
fn every_header_classified() {
    let valid_even = [0x00u8, 0x08, 0x0c, 0x3c, 0x42, 0x46, 0x66, 0x6e, 0x72, 0x76];
    for ca in [false, true] {
        let cfg = Config::default().with_cycle_accurate(ca);
        for h in 0..=255u8 {
            let mut bytes = ASYNC.to_vec();
            bytes.push(h);
            // Enough payload for any packet, without zeros.
            bytes.extend([0x01; 16]);
            let (v, _) = items(cfg, &bytes);
            let reserved =
                h & 1 == 0 && !valid_even.contains(&h) && !(h & 0x80 != 0 && (ca || h & 0x7c != 0));
            let second = &v[1];
            if reserved {
                assert_eq!(
                    *second,
                    Err(Error {
                        offset: 6,
                        kind: ErrorKind::ReservedHeader { header: h }
                    }),
                    "header {h:#04x}"
                );
            } else if h == 0 {
                // 0x00 followed by 0x01: not an A-sync.
                assert_eq!(
                    *second,
                    Err(Error {
                        offset: 6,
                        kind: ErrorKind::BadASync { zeros: 1 }
                    })
                );
            } else {
                assert!(matches!(second, Ok((6, _))), "header {h:#04x}: {second:?}");
            }
        }
    }
}

#[test]
fn unsynchronized_prefix_reported_once() {
    let mut bytes = vec![0x42, 0x11, 0x00, 0x00, 0x80, 0x00, 0x07];
    bytes.extend(ASYNC);
    bytes.push(0x0c);
    for chunk in [1, 2, 3, bytes.len()] {
        let mut p = Parser::new(Config::default());
        let mut v = Vec::new();
        for c in bytes.chunks(chunk) {
            v.extend(p.feed(c));
        }
        assert_eq!(p.finish(), None);
        assert_eq!(
            v,
            vec![
                Err(Error {
                    offset: 0,
                    kind: ErrorKind::Unsynchronized { len: 7 }
                }),
                Ok((7, Packet::ASync)),
                Ok((13, Packet::Trigger)),
            ]
        );
    }
}

#[test]
fn extra_zeros_belong_to_the_async() {
    let bytes = [0xff, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x66];
    let (v, fin) = items(Config::default(), &bytes);
    assert_eq!(
        v,
        vec![
            Err(Error {
                offset: 0,
                kind: ErrorKind::Unsynchronized { len: 1 }
            }),
            Ok((1, Packet::ASync)),
            Ok((9, Packet::Ignore)),
        ]
    );
    assert_eq!(fin, None);
}

#[test]
fn only_garbage_reported_at_finish() {
    let (v, fin) = items(Config::default(), &[1, 2, 3, 0, 0]);
    assert!(v.is_empty());
    assert_eq!(
        fin,
        Some(Error {
            offset: 0,
            kind: ErrorKind::Unsynchronized { len: 5 }
        })
    );
}

#[test]
fn bad_async_while_synced() {
    let mut bytes = ASYNC.to_vec();
    bytes.extend([0, 0, 0, 0x80, 0x66]);
    bytes.extend(ASYNC);
    let (v, fin) = items(Config::default(), &bytes);
    assert_eq!(
        v,
        vec![
            Ok((0, Packet::ASync)),
            Err(Error {
                offset: 6,
                kind: ErrorKind::BadASync { zeros: 3 }
            }),
            Err(Error {
                offset: 9,
                kind: ErrorKind::Unsynchronized { len: 2 }
            }),
            Ok((11, Packet::ASync)),
        ]
    );
    assert_eq!(fin, None);
}

#[test]
fn truncated_packets() {
    // I-sync cut after 3 bytes, in one chunk or byte by byte.
    let mut bytes = ASYNC.to_vec();
    bytes.extend([0x08, 0x00, 0x10]);
    for chunk in [1, bytes.len()] {
        let mut p = Parser::new(Config::default());
        for c in bytes.chunks(chunk) {
            for item in p.feed(c) {
                assert_eq!(item, Ok((0, Packet::ASync)));
            }
        }
        assert_eq!(
            p.finish(),
            Some(Error {
                offset: 6,
                kind: ErrorKind::Truncated {
                    header: 0x08,
                    len: 3
                }
            })
        );
        assert_eq!(p.finish(), None);
        let s = p.stats();
        assert_eq!(s.bytes_fed, s.bytes_in_packets + s.bytes_skipped);
    }
    // An A-sync cut inside its zeros.
    let mut p = Parser::new(Config::default());
    assert_eq!(p.feed(&[0, 0, 0, 0, 0, 0x80, 0, 0]).count(), 1);
    assert_eq!(
        p.finish(),
        Some(Error {
            offset: 6,
            kind: ErrorKind::Truncated { header: 0, len: 2 }
        })
    );
}

#[test]
fn fifth_address_byte_bit7_is_invalid() {
    let mut bytes = ASYNC.to_vec();
    bytes.extend([0x81, 0x80, 0x80, 0x80, 0x88, 0x66]);
    let (v, fin) = items(Config::default(), &bytes);
    assert_eq!(
        v[1],
        Err(Error {
            offset: 6,
            kind: ErrorKind::InvalidField {
                header: 0x81,
                field: ptm_packets::Field::FifthAddressByte
            }
        })
    );
    assert_eq!(
        fin,
        Some(Error {
            offset: 11,
            kind: ErrorKind::Unsynchronized { len: 1 }
        })
    );
    assert!(v[1].unwrap_err().to_string().contains("offset 6"));
}

#[test]
fn dropping_the_iterator_consumes_the_chunk() {
    let mut bytes = ASYNC.to_vec();
    bytes.extend([0x0c, 0x66, 0x08, 0x00]);
    let mut p = Parser::new(Config::default());
    {
        let mut it = p.feed(&bytes);
        assert_eq!(it.next(), Some(Ok((0, Packet::ASync))));
    }
    // The trigger and ignore were discarded; the I-sync continues.
    let v: Vec<_> = p.feed(&[0x00, 0x80, 0x00, 0x01, 0x76]).collect();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].map(|(o, p)| (o, p.kind())), Ok((8, "i_sync")));
    assert_eq!(v[1], Ok((14, Packet::ExceptionReturn)));
}

#[test]
fn feed_at_keeps_first_byte_offset() {
    let mut p = Parser::new(Config::default());
    assert_eq!(p.feed_at(100, &ASYNC).count(), 1);
    assert_eq!(p.feed_at(500, &[0x3c]).count(), 0);
    let v: Vec<_> = p.feed_at(900, &[0x05, 0x66]).collect();
    assert_eq!(
        v,
        vec![Ok((500, Packet::Vmid(5))), Ok((901, Packet::Ignore))]
    );
    // feed continues after the last chunk.
    assert_eq!(p.feed(&[0x0c]).next(), Some(Ok((902, Packet::Trigger))));
    p.reset();
    assert_eq!(p.stats(), ptm_packets::Stats::default());
    assert_eq!(p.feed(&[0x0c]).count(), 0);
    assert_eq!(p.config(), &Config::default());
}
