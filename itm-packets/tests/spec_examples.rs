//! Hand-checked encodings of every packet kind, field by field from the
//! packet descriptions of ARM DDI 0403 appendix D4, some taken from the
//! real SWO stream of `stm32-itm-etm-swo` (a Cortex-M3's ITM, trace ID 1);
//! and the error cases: reserved headers, invalid fields, malformed
//! synchronization, unsynchronized starts and truncation, each with its
//! offset and every byte accounted for.
#![allow(clippy::unwrap_used)]

use itm_packets::{
    Config, DataTrace, DataTraceKind, Encoder, Error, ErrorKind, EventCounter, ExceptionAction,
    ExceptionTrace, Extension, GlobalTimestamp, Item, LocalTimestamp, Packet, Parser, PcSample,
    Stimulus, TimestampRelation,
};

/// Every item of `bytes` (aligned start), the end included, checking that
/// every byte is accounted for.
fn items(cfg: Config, bytes: &[u8]) -> Vec<Item> {
    let mut p = Parser::new(cfg);
    let mut v: Vec<Item> = p.feed(bytes).collect();
    v.extend(p.finish().map(Err));
    let s = p.stats();
    assert_eq!(s.bytes_fed, bytes.len() as u64);
    assert_eq!(s.bytes_fed, s.bytes_in_packets + s.bytes_skipped, "{s:?}");
    let skipped: u64 = v
        .iter()
        .filter_map(|i| i.as_ref().err().map(Error::skipped))
        .sum();
    assert_eq!(skipped, s.bytes_skipped);
    v
}

/// The packets of `bytes` (aligned start); panics on any error.
fn packets(bytes: &[u8]) -> Vec<(u64, Packet)> {
    items(Config::new().with_aligned_start(true), bytes)
        .into_iter()
        .map(|i| i.unwrap())
        .collect()
}

/// The only packet of `bytes`, checked to encode back to `bytes`.
fn one(bytes: &[u8]) -> Packet {
    let got = packets(bytes);
    assert_eq!(got.len(), 1, "{got:?}");
    let mut buf = [0u8; 8];
    let n = Encoder::new().encode(&got[0].1, &mut buf).unwrap();
    assert_eq!(&buf[..n], bytes, "re-encoding {:?}", got[0].1);
    got[0].1
}

fn errors(cfg: Config, bytes: &[u8]) -> Vec<Error> {
    items(cfg, bytes)
        .into_iter()
        .filter_map(Result::err)
        .collect()
}

#[test]
fn synchronization_is_47_zero_bits_then_a_one() {
    assert_eq!(one(&[0, 0, 0, 0, 0, 0x80]), Packet::Sync);
    // Longer runs of zeros are one packet.
    assert_eq!(
        packets(&[0; 9].iter().chain(&[0x80]).copied().collect::<Vec<_>>()),
        [(0, Packet::Sync)]
    );
    // Four zeros are 39 zero bits: not a synchronization packet.
    let e = errors(
        Config::new().with_aligned_start(true),
        &[0, 0, 0, 0, 0x80, 0x70],
    );
    assert_eq!(
        e,
        [
            Error {
                offset: 0,
                kind: ErrorKind::BadSync { zeros: 4 }
            },
            Error {
                offset: 4,
                kind: ErrorKind::ReservedHeader { header: 0x80 }
            },
        ]
    );
}

#[test]
fn overflow() {
    assert_eq!(one(&[0x70]), Packet::Overflow);
}

#[test]
fn local_timestamps() {
    // Format 2: 0b0TTT0000, TTT = 3.
    assert_eq!(
        one(&[0x30]),
        Packet::LocalTimestamp(LocalTimestamp {
            value: 3,
            relation: TimestampRelation::Synchronous,
            len: 0
        })
    );
    // Format 1: 0b11TC0000, TC = 0b10; payload 0x85 0x01 = 5 + (1 << 7).
    assert_eq!(
        one(&[0xE0, 0x85, 0x01]),
        Packet::LocalTimestamp(LocalTimestamp {
            value: 133,
            relation: TimestampRelation::PacketDelayed,
            len: 2
        })
    );
    // Four payload bytes: 28 bits.
    assert_eq!(
        one(&[0xD0, 0xFF, 0xFF, 0xFF, 0x7F]),
        Packet::LocalTimestamp(LocalTimestamp {
            value: 0x0FFF_FFFF,
            relation: TimestampRelation::TimestampDelayed,
            len: 4
        })
    );
    // A fifth continued byte is too long: the five bytes read are skipped.
    let e = errors(
        Config::new().with_aligned_start(true),
        &[0xC0, 0x80, 0x80, 0x80, 0x80, 0x70],
    );
    assert_eq!(
        e,
        [Error {
            offset: 0,
            kind: ErrorKind::InvalidField {
                header: 0xC0,
                field: "local timestamp payload length",
                len: 5
            }
        }]
    );
}

#[test]
fn global_timestamps() {
    // GTS1 in full: bits [25:0] = 0x2345678, Wrap set.
    assert_eq!(
        one(&[0x94, 0xF8, 0xAC, 0xD1, 0x51]),
        Packet::GlobalTimestamp(GlobalTimestamp {
            high: false,
            bits: 0x234_5678,
            len: 4,
            wrap: true,
            clock_change: false
        })
    );
    // GTS1 with the low seven bits only.
    assert_eq!(
        one(&[0x94, 0x05]),
        Packet::GlobalTimestamp(GlobalTimestamp {
            high: false,
            bits: 5,
            len: 1,
            wrap: false,
            clock_change: false
        })
    );
    // GTS2 of a 48-bit timestamp: bits [47:26] in four bytes.
    assert_eq!(
        one(&[0xB4, 0x81, 0x80, 0x80, 0x01]),
        Packet::GlobalTimestamp(GlobalTimestamp {
            high: true,
            bits: 1 | (1 << 21),
            len: 4,
            wrap: false,
            clock_change: false
        })
    );
    // ... and of a 64-bit one in six.
    let g = one(&[0xB4, 0x81, 0x80, 0x80, 0x80, 0x80, 0x04]);
    assert_eq!(
        g,
        Packet::GlobalTimestamp(GlobalTimestamp::high((1 << 26) | (1 << 63), true))
    );
    // A GTS2 of three payload bytes is no timestamp width.
    let e = errors(
        Config::new().with_aligned_start(true),
        &[0xB4, 0x81, 0x80, 0x01],
    );
    assert_eq!(
        e[0].kind,
        ErrorKind::InvalidField {
            header: 0xB4,
            field: "GTS2 payload length",
            len: 4
        }
    );
}

#[test]
fn extension_sets_the_stimulus_port_page() {
    // 0b0EEE1S00 with EX = 1, SH = 0: page 1; then port 1 on it.
    let got = packets(&[0x18, 0x09, 0x41, 0x08, 0x09, 0x42]);
    assert_eq!(
        got,
        [
            (
                0,
                Packet::Extension(Extension {
                    hardware: false,
                    value: 1,
                    len: 0
                })
            ),
            (
                1,
                Packet::Stimulus(Stimulus {
                    port: 33,
                    value: 0x41,
                    size: 1
                })
            ),
            (
                3,
                Packet::Extension(Extension {
                    hardware: false,
                    value: 0,
                    len: 0
                })
            ),
            (
                4,
                Packet::Stimulus(Stimulus {
                    port: 1,
                    value: 0x42,
                    size: 1
                })
            ),
        ]
    );
    // A hardware extension (SH = 1) with a payload byte: EX = 0b101 | 3 << 3.
    assert_eq!(
        one(&[0xDC, 0x03]),
        Packet::Extension(Extension {
            hardware: true,
            value: 0x1D,
            len: 1
        })
    );
}

#[test]
fn stimulus_port_writes() {
    assert_eq!(
        one(&[0x09, 0x53]),
        Packet::Stimulus(Stimulus {
            port: 1,
            value: u32::from(b'S'),
            size: 1
        })
    );
    assert_eq!(
        one(&[0x0A, 0x34, 0x12]),
        Packet::Stimulus(Stimulus {
            port: 1,
            value: 0x1234,
            size: 2
        })
    );
    // From the real capture: port 1, four bytes, 0x00000002.
    assert_eq!(
        one(&[0x0B, 0x02, 0, 0, 0]),
        Packet::Stimulus(Stimulus {
            port: 1,
            value: 2,
            size: 4
        })
    );
    assert_eq!(
        one(&[0xFB, 1, 2, 3, 4]),
        Packet::Stimulus(Stimulus {
            port: 31,
            value: 0x0403_0201,
            size: 4
        })
    );
}

#[test]
fn event_counter() {
    let p = one(&[0x05, 0x21]);
    assert_eq!(p, Packet::EventCounter(EventCounter { flags: 0x21 }));
    let Packet::EventCounter(c) = p else {
        unreachable!()
    };
    assert!(c.cyc() && c.cpi() && !c.exc() && !c.sleep() && !c.lsu() && !c.fold());
    assert_eq!(p.to_string(), "Event counter wrap: CYC CPI");
}

#[test]
fn exception_trace() {
    // From the real capture: enter exception 44 (IRQ 28), return to thread mode.
    let x = |number, action| Packet::ExceptionTrace(ExceptionTrace { number, action });
    assert_eq!(one(&[0x0E, 0x2C, 0x10]), x(44, ExceptionAction::Enter));
    assert_eq!(one(&[0x0E, 0x00, 0x30]), x(0, ExceptionAction::Return));
    assert_eq!(one(&[0x0E, 0x0F, 0x20]), x(15, ExceptionAction::Exit));
    // Bit 0 of the second byte is bit 8 of the number.
    assert_eq!(one(&[0x0E, 0x10, 0x11]), x(0x110, ExceptionAction::Enter));
    assert_eq!(
        x(15, ExceptionAction::Exit).to_string(),
        "Exception exit SysTick (15)"
    );
    assert_eq!(
        x(14, ExceptionAction::Enter).to_string(),
        "Exception enter PendSV (14)"
    );
    assert_eq!(
        x(44, ExceptionAction::Enter).to_string(),
        "Exception enter IRQ 28 (44)"
    );
    // Function 0b00 is reserved.
    let e = errors(
        Config::new().with_aligned_start(true),
        &[0x0E, 0x0F, 0x00, 0x70],
    );
    assert_eq!(
        e,
        [Error {
            offset: 0,
            kind: ErrorKind::InvalidField {
                header: 0x0E,
                field: "exception trace function",
                len: 3
            }
        }]
    );
}

#[test]
fn pc_samples() {
    assert_eq!(
        one(&[0x17, 0x06, 0x02, 0x00, 0x08]),
        Packet::PcSample(PcSample {
            pc: Some(0x0800_0206)
        })
    );
    assert_eq!(one(&[0x15, 0x00]), Packet::PcSample(PcSample { pc: None }));
    // A one-byte sample other than 0 and a two-byte sample are reserved.
    let e = errors(
        Config::new().with_aligned_start(true),
        &[0x15, 0x01, 0x16, 0x01, 0x02],
    );
    assert_eq!(
        e.iter()
            .map(|e| (e.offset, e.skipped()))
            .collect::<Vec<_>>(),
        [(0, 2), (2, 3)]
    );
}

#[test]
fn data_trace() {
    let d = |comparator, kind| Packet::DataTrace(DataTrace { comparator, kind });
    // From the real capture: comparator 0's address offset and written
    // value, comparator 1's PC value.
    assert_eq!(
        one(&[0x4E, 0x14, 0x10]),
        d(0, DataTraceKind::Address(0x1014))
    );
    assert_eq!(
        one(&[0x8F, 0x00, 0x02, 0x00, 0x00]),
        d(
            0,
            DataTraceKind::Value {
                value: 0x200,
                size: 4,
                write: true
            }
        )
    );
    assert_eq!(
        one(&[0x57, 0x7C, 0x02, 0x00, 0x08]),
        d(1, DataTraceKind::Pc(0x0800_027C))
    );
    // ID 22 (0b10110): comparator 3, read, one byte.
    assert_eq!(
        one(&[0xB5, 0x7F]),
        d(
            3,
            DataTraceKind::Value {
                value: 0x7F,
                size: 1,
                write: false
            }
        )
    );
    // ID 8 with two bytes is no data trace packet.
    let e = errors(Config::new().with_aligned_start(true), &[0x46, 0x01, 0x02]);
    assert_eq!(
        e[0].kind,
        ErrorKind::InvalidField {
            header: 0x46,
            field: "data trace payload size",
            len: 3
        }
    );
}

#[test]
fn reserved_headers_and_sources_are_skipped_with_their_offsets() {
    // 0x84 and 0xC4: 0bxxxx0100 but GTS; 0x90: 0b10xx0000; 0x1D: hardware
    // ID 3 (reserved) with one payload byte.
    let bytes = [0x70, 0x84, 0xC4, 0x90, 0x1D, 0x55, 0x70];
    let all = items(Config::new().with_aligned_start(true), &bytes);
    let want: Vec<Item> = vec![
        Ok((0, Packet::Overflow)),
        Err(Error {
            offset: 1,
            kind: ErrorKind::ReservedHeader { header: 0x84 },
        }),
        Err(Error {
            offset: 2,
            kind: ErrorKind::ReservedHeader { header: 0xC4 },
        }),
        Err(Error {
            offset: 3,
            kind: ErrorKind::ReservedHeader { header: 0x90 },
        }),
        Err(Error {
            offset: 4,
            kind: ErrorKind::InvalidField {
                header: 0x1D,
                field: "hardware source ID",
                len: 2,
            },
        }),
        Ok((6, Packet::Overflow)),
    ];
    assert_eq!(all, want);
}

#[test]
fn unsynchronized_start_waits_for_a_synchronization_packet() {
    // A PC sample cut at its start, then a synchronization packet.
    let bytes = [0x02, 0x00, 0x08, 0x17, 0x06, 0, 0, 0, 0, 0, 0x80, 0x70];
    let all = items(Config::new(), &bytes);
    assert_eq!(
        all,
        vec![
            Err(Error {
                offset: 0,
                kind: ErrorKind::Unsynchronized { len: 5 }
            }),
            Ok((5, Packet::Sync)),
            Ok((11, Packet::Overflow)),
        ]
    );
    // Never synchronized: every byte is reported at the end.
    let all = items(Config::new(), &[0x17, 0, 0, 0x70]);
    assert_eq!(
        all,
        vec![Err(Error {
            offset: 0,
            kind: ErrorKind::Unsynchronized { len: 4 }
        })]
    );
}

#[test]
fn truncation_is_reported_with_the_bytes_present() {
    let all = items(
        Config::new().with_aligned_start(true),
        &[0x70, 0x17, 0x06, 0x02],
    );
    assert_eq!(
        all,
        vec![
            Ok((0, Packet::Overflow)),
            Err(Error {
                offset: 1,
                kind: ErrorKind::Truncated {
                    header: 0x17,
                    len: 3
                }
            }),
        ]
    );
    let all = items(Config::new().with_aligned_start(true), &[0x70, 0, 0]);
    assert_eq!(
        all[1],
        Err(Error {
            offset: 1,
            kind: ErrorKind::Truncated { header: 0, len: 2 }
        })
    );
}

#[test]
fn feed_at_keeps_each_bytes_offset() {
    // A PC sample whose bytes lie in two runs of a formatted capture.
    let mut p = Parser::new(Config::new().with_aligned_start(true));
    assert!(p.feed_at(100, &[0x17, 0x06]).next().is_none());
    let got: Vec<Item> = p.feed_at(116, &[0x02, 0x00, 0x08, 0x70]).collect();
    assert_eq!(
        got,
        vec![
            Ok((
                100,
                Packet::PcSample(PcSample {
                    pc: Some(0x0800_0206)
                })
            )),
            Ok((119, Packet::Overflow))
        ]
    );
}

#[test]
fn assume_aligned_drops_a_packet_under_way_and_reads_on_from_a_header() {
    // Waiting for a sync: the bytes before are reported, then parsing
    // starts at once.
    let mut p = Parser::new(Config::new());
    assert!(p.feed(&[0x02, 0x00]).next().is_none());
    assert_eq!(
        p.assume_aligned(),
        Some(Error {
            offset: 0,
            kind: ErrorKind::Unsynchronized { len: 2 }
        })
    );
    // A PC sample cut short by a loss, then a new burst.
    assert!(p.feed_at(10, &[0x17, 0x06]).next().is_none());
    assert_eq!(
        p.assume_aligned(),
        Some(Error {
            offset: 10,
            kind: ErrorKind::Truncated {
                header: 0x17,
                len: 2
            }
        })
    );
    let got: Vec<Item> = p.feed_at(40, &[0x70, 0x09, 0x41]).collect();
    assert_eq!(
        got,
        vec![
            Ok((40, Packet::Overflow)),
            Ok((
                41,
                Packet::Stimulus(Stimulus {
                    port: 1,
                    value: 0x41,
                    size: 1
                })
            ))
        ]
    );
    let s = p.stats();
    assert_eq!(s.bytes_fed, s.bytes_in_packets + s.bytes_skipped);
}
