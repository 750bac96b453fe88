//! Saved-events files: round trips, and errors (never panics) for files
//! that are not right.

use proptest::prelude::*;
use trace_convert::input::source::Protocol;
use trace_convert::sinks::events_file::format::{
    EventReader, EventWriter, EventsFileError, Header, ImageInfo, SourceInfo, MAGIC, VERSION,
};
use trace_core::event::{
    Context, Event, EventKind, GapReason, InsnClass, Isa, Range, TraceOnReason,
};
use trace_core::memory::Space;

fn header() -> Header {
    Header {
        input: "/captures/tc2/trace.bin".into(),
        images: vec![
            ImageInfo {
                path: "vmlinux".into(),
                size: 123_456,
                hash: 0x0123_4567_89AB_CDEF,
            },
            ImageInfo {
                path: "rom.bin".into(),
                size: 0,
                hash: u64::MAX,
            },
        ],
        sources: vec![
            SourceInfo {
                trace_id: 0x10,
                protocol: Protocol::Etmv3,
                core: Some("cpu_0 Cortex-A7".into()),
            },
            SourceInfo {
                trace_id: 0x13,
                protocol: Protocol::Ptm,
                core: None,
            },
        ],
    }
}

fn range(i: u32) -> Range {
    Range {
        start: 0x8000_0000 + 4 * i,
        end: 0x8000_0010 + 4 * i,
        count: 4,
        isa: if i % 2 == 0 { Isa::A32 } else { Isa::T32 },
        last_size: 4,
        last: InsnClass::Branch,
        link: i % 3 == 0,
        ret: i % 5 == 0,
        cond: true,
        executed: i % 7 != 0,
        cycles: (i % 4 == 0).then_some(i),
        space: [Space::Any, Space::Secure, Space::NonSecure][i as usize % 3],
    }
}

/// One of every event kind and variant.
fn all_kinds() -> Vec<Event> {
    let kinds = vec![
        EventKind::NoSync,
        EventKind::TraceOn {
            reason: TraceOnReason::Filter,
            cycles: None,
        },
        EventKind::TraceOn {
            reason: TraceOnReason::Overflow,
            cycles: Some(7),
        },
        EventKind::TraceOn {
            reason: TraceOnReason::DebugExit,
            cycles: Some(u32::MAX),
        },
        EventKind::Context(Context {
            ns: true,
            hyp: false,
            context_id: Some(0xDEAD_BEEF),
            vmid: Some(3),
            isa: Isa::T32,
            cycles: Some(9),
        }),
        EventKind::Context(Context {
            ns: false,
            hyp: true,
            context_id: None,
            vmid: None,
            isa: Isa::A32,
            cycles: None,
        }),
        EventKind::Range(range(0)),
        EventKind::Range(range(1)),
        EventKind::Range(range(2)),
        EventKind::Exception {
            number: 14,
            ret: Some(0x8000_1000),
        },
        EventKind::Exception {
            number: 1,
            ret: None,
        },
        EventKind::ExceptionReturn,
        EventKind::Timestamp {
            value: u64::MAX,
            cycles: Some(1),
        },
        EventKind::Timestamp {
            value: 0,
            cycles: None,
        },
        EventKind::CycleCount(12_345),
        EventKind::AddrNacc { addr: 0xFFFF_FFFC },
        EventKind::Gap(GapReason::Undefined { addr: 0x10 }),
        EventKind::Gap(GapReason::NoWaypoint { addr: 0x20 }),
        EventKind::Gap(GapReason::UnknownTarget { addr: 0x30 }),
        EventKind::Gap(GapReason::UnsupportedIsa),
        EventKind::Gap(GapReason::PacketError),
        EventKind::EndOfTrace,
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Event {
            offset: (i as u64) << 33 | i as u64,
            id: i as u8 * 11,
            kind,
        })
        .collect()
}

fn save(header: &Header, events: &[Event]) -> Vec<u8> {
    let mut w = EventWriter::new(Vec::new(), header).expect("new");
    for e in events {
        w.write(e).expect("write");
    }
    w.finish().expect("finish")
}

/// Read everything; the first error if any.
fn load(bytes: &[u8]) -> Result<(Header, Vec<Event>), EventsFileError> {
    let (h, events) = EventReader::open(bytes)?;
    let events = events.collect::<Result<Vec<_>, _>>()?;
    Ok((h, events))
}

#[test]
fn every_event_kind_round_trips() {
    let events = all_kinds();
    let bytes = save(&header(), &events);
    assert_eq!(bytes[..8], MAGIC);
    let (h, back) = load(&bytes).expect("load");
    assert_eq!(h, header());
    assert_eq!(back, events);
}

#[test]
fn many_batches_round_trip_and_stay_compact() {
    let events: Vec<Event> = (0..10_000u32)
        .map(|i| Event {
            offset: u64::from(i) * 3,
            id: 0x13,
            kind: EventKind::Range(range(i)),
        })
        .collect();
    let bytes = save(&Header::default(), &events);
    let (_, back) = load(&bytes).expect("load");
    assert_eq!(back, events);
    // An event is 48 bytes in memory; varints keep a range near half that.
    assert!(bytes.len() < events.len() * 32, "{} bytes", bytes.len());
}

#[test]
fn empty_file_round_trips() {
    let bytes = save(&header(), &[]);
    let (h, back) = load(&bytes).expect("load");
    assert_eq!(h, header());
    assert!(back.is_empty());
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = save(&header(), &all_kinds());
    for len in 0..bytes.len() {
        match load(&bytes[..len]) {
            Err(EventsFileError::Truncated { offset }) => {
                assert!(offset <= len as u64, "{len}: offset {offset}");
            }
            Err(EventsFileError::BadMagic) if len == 0 => {}
            other => panic!("cut at {len}: {other:?}"),
        }
    }
}

#[test]
fn bytes_after_the_end_marker_are_an_error() {
    let bytes = save(&header(), &all_kinds());
    let mut garbage = bytes.clone();
    garbage.push(0);
    let mut twice = bytes.clone();
    twice.extend_from_slice(&bytes);
    for (what, b) in [("one byte", garbage), ("two files", twice)] {
        match load(&b) {
            Err(EventsFileError::Corrupt { offset, what: w }) => {
                assert_eq!(offset, bytes.len() as u64, "{what}");
                assert!(w.contains("after the end marker"), "{what}: {w}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn every_damaged_byte_is_an_error() {
    let bytes = save(&header(), &all_kinds());
    for at in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut bad = bytes.clone();
            bad[at] ^= mask;
            let r = load(&bad);
            assert!(r.is_err(), "byte {at} ^ {mask:#x} went unnoticed");
            if at < 8 {
                assert!(matches!(r, Err(EventsFileError::BadMagic)));
            }
        }
    }
}

#[test]
fn wrong_magic_and_version_are_reported() {
    let mut bytes = save(&header(), &all_kinds());
    bytes[8..10].copy_from_slice(&(VERSION + 1).to_le_bytes());
    assert!(matches!(
        load(&bytes),
        Err(EventsFileError::UnsupportedVersion(v)) if v == VERSION + 1
    ));
    assert!(matches!(
        load(b"{\"offset\":0}\n"),
        Err(EventsFileError::BadMagic)
    ));
    let err = load(b"TCEVEN").expect_err("short");
    assert!(matches!(err, EventsFileError::Truncated { offset: 6 }));
    assert!(err.to_string().contains("truncated"));
}

fn arb_event() -> impl Strategy<Value = Event> {
    (
        any::<u64>(),
        any::<u8>(),
        0u8..11,
        any::<[u32; 4]>(),
        any::<u64>(),
    )
        .prop_map(|(offset, id, k, w, v)| {
            let b = |n: u32| w[3] >> n & 1 != 0;
            let opt = |n: u32, x: u32| b(n).then_some(x);
            let kind = match k {
                0 => EventKind::Range(Range {
                    start: w[0],
                    end: w[1],
                    count: w[2],
                    isa: if b(0) { Isa::T32 } else { Isa::A32 },
                    last_size: (w[3] >> 8) as u8,
                    last: [
                        InsnClass::Other,
                        InsnClass::Branch,
                        InsnClass::IndirectBranch,
                        InsnClass::Isb,
                        InsnClass::Barrier,
                    ][(w[3] >> 16) as usize % 5],
                    link: b(1),
                    ret: b(2),
                    cond: b(3),
                    executed: b(4),
                    cycles: opt(5, w[2]),
                    space: [Space::Any, Space::Secure, Space::NonSecure][(w[3] >> 20) as usize % 3],
                }),
                1 => EventKind::Exception {
                    number: w[0] as u16,
                    ret: opt(1, w[1]),
                },
                2 => EventKind::ExceptionReturn,
                3 => EventKind::Context(Context {
                    ns: b(0),
                    hyp: b(1),
                    context_id: opt(2, w[0]),
                    vmid: b(3).then_some(w[1] as u8),
                    isa: if b(4) { Isa::T32 } else { Isa::A32 },
                    cycles: opt(5, w[2]),
                }),
                4 => EventKind::TraceOn {
                    reason: [
                        TraceOnReason::Filter,
                        TraceOnReason::Overflow,
                        TraceOnReason::DebugExit,
                    ][w[0] as usize % 3],
                    cycles: opt(1, w[1]),
                },
                5 => EventKind::NoSync,
                6 => EventKind::Timestamp {
                    value: v,
                    cycles: opt(0, w[0]),
                },
                7 => EventKind::CycleCount(w[0]),
                8 => EventKind::AddrNacc { addr: w[0] },
                9 => EventKind::Gap(match w[1] % 5 {
                    0 => GapReason::Undefined { addr: w[0] },
                    1 => GapReason::NoWaypoint { addr: w[0] },
                    2 => GapReason::UnknownTarget { addr: w[0] },
                    3 => GapReason::UnsupportedIsa,
                    _ => GapReason::PacketError,
                }),
                _ => EventKind::EndOfTrace,
            };
            Event { offset, id, kind }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_events_round_trip(events in proptest::collection::vec(arb_event(), 0..2000)) {
        let bytes = save(&header(), &events);
        let (_, back) = load(&bytes).expect("load");
        prop_assert_eq!(back, events);
    }
}
