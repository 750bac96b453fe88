//! Property tests: random valid packets under random configurations are
//! encoded, split at random points, parsed back equal with correct
//! offsets; random garbage never panics and parses the same whatever the
//! chunking.
#![allow(clippy::unwrap_used)]

use etm_packets::{
    Atoms, Branch, Config, ContextIdSize, Encoder, ErrorKind, EtmVersion, ExceptionInfo, ISync,
    Isa, Item, LsipAddress, NormalData, OutOfOrderData, OutOfOrderPlaceholder, PHeaderFormat,
    Packet, Parser, Reason, Timestamp, ValueNotTraced,
};
use proptest::prelude::*;

fn version() -> impl Strategy<Value = EtmVersion> {
    (0u8..=5).prop_map(|m| EtmVersion::from_minor(m).unwrap())
}

fn config() -> impl Strategy<Value = Config> {
    (
        version(),
        any::<bool>(),
        0u32..4,
        any::<[bool; 2]>(),
        prop_oneof![9 => Just(false), 1 => Just(true)],
        any::<[bool; 3]>(),
    )
        .prop_map(|(v, ca, ctx, [da, dv], data_only, [alt, ts64, gray])| {
            Config::new()
                .with_version(v)
                .with_cycle_accurate(ca)
                .with_context_id_size(ContextIdSize::from_field(ctx))
                .with_data_address(da)
                .with_data_value(dv)
                .with_data_only(data_only)
                .with_alt_branch(alt && v >= EtmVersion::V3_4)
                .with_timestamp_64bit(ts64)
                .with_timestamp_gray(gray)
        })
}

fn low(n: u8) -> u16 {
    ((1u32 << n) - 1) as u16
}

fn atoms(cfg: Config) -> BoxedStrategy<Atoms> {
    let f2 = move |cycles: u8| {
        (0u16..4).prop_map(move |executed| Atoms {
            format: PHeaderFormat::Format2,
            count: 2,
            executed,
            cycles,
        })
    };
    if !cfg.cycle_accurate() {
        return prop_oneof![
            (0u8..=15, any::<bool>()).prop_map(|(e, n)| Atoms {
                format: PHeaderFormat::Format1,
                count: e + u8::from(n),
                executed: low(e),
                cycles: 0,
            }),
            f2(0),
        ]
        .boxed();
    }
    let v = cfg.version();
    let mut s = prop_oneof![
        (0u8..=7, any::<bool>())
            .prop_filter("format 1 needs an atom", |(e, n)| *e > 0 || *n)
            .prop_map(|(e, n)| Atoms {
                format: PHeaderFormat::Format1,
                count: e + u8::from(n),
                executed: low(e),
                cycles: e + u8::from(n),
            }),
        f2(1),
        (1u8..=8, any::<bool>()).prop_map(|(w, e)| Atoms {
            format: PHeaderFormat::Format3,
            count: u8::from(e),
            executed: u16::from(e),
            cycles: w,
        }),
    ]
    .boxed();
    if v >= EtmVersion::V3_3 {
        s = prop_oneof![
            s,
            any::<bool>().prop_map(|e| Atoms {
                format: PHeaderFormat::Format4,
                count: 1,
                executed: u16::from(e),
                cycles: 0,
            })
        ]
        .boxed();
    }
    if v == EtmVersion::V3_0 {
        s = prop_oneof![
            s,
            Just(Atoms {
                format: PHeaderFormat::Format0,
                count: 0,
                executed: 0,
                cycles: 1,
            })
        ]
        .boxed();
    }
    s
}

fn isa(cfg: Config) -> BoxedStrategy<Isa> {
    if cfg.version() >= EtmVersion::V3_3 {
        prop_oneof![
            Just(Isa::Arm),
            Just(Isa::Thumb),
            Just(Isa::ThumbEE),
            Just(Isa::Jazelle)
        ]
        .boxed()
    } else {
        prop_oneof![Just(Isa::Arm), Just(Isa::Thumb), Just(Isa::Jazelle)].boxed()
    }
}

/// Addresses near each other (so compression is exercised) or anywhere.
fn address(isa: Isa) -> impl Strategy<Value = u32> {
    let align = match isa {
        Isa::Arm => !3u32,
        Isa::Thumb | Isa::ThumbEE => !1,
        Isa::Jazelle => !0,
    };
    prop_oneof![any::<u32>(), 0u32..0x400, (0xc000_0000u32..0xc000_4000),]
        .prop_map(move |a| a & align)
}

fn reason() -> impl Strategy<Value = Reason> {
    (0u8..4).prop_map(Reason::from_bits)
}

fn isync(cfg: Config) -> BoxedStrategy<ISync> {
    let hyp_ok = cfg.version() >= EtmVersion::V3_5;
    let ctx_bytes = cfg.context_id_size().bytes();
    let ctx = any::<u32>().prop_map(move |c| match ctx_bytes {
        0 => None,
        4 => Some(c),
        n => Some(c & ((1u32 << (8 * n)) - 1)),
    });
    let cycles = prop::option::of(any::<u32>());
    let flags = (any::<bool>(), any::<bool>()).prop_map(move |(ns, hyp)| (ns, hyp && hyp_ok));
    if cfg.data_only() {
        return (reason(), ctx, cycles, flags)
            .prop_map(|(r, ctx, cyc, (ns, hyp))| {
                ISync::data_only(r)
                    .with_context_id(ctx)
                    .with_cycle_count(cyc)
                    .with_ns(ns)
                    .with_hyp(hyp)
            })
            .boxed();
    }
    (isa(cfg), reason(), ctx, cycles, flags, any::<bool>())
        .prop_flat_map(|(isa, r, ctx, cyc, (ns, hyp), lsip)| {
            (address(isa), address(isa)).prop_map(move |(a, cur)| {
                let lsip = lsip.then_some(LsipAddress {
                    address: cur,
                    bits: 0,
                });
                ISync::new(a, isa, r)
                    .with_context_id(ctx)
                    .with_cycle_count(cyc)
                    .with_ns(ns)
                    .with_hyp(hyp)
                    .with_lsip(lsip)
            })
        })
        .boxed()
}

fn branch(cfg: Config) -> BoxedStrategy<Branch> {
    let hyp_ok = cfg.version() >= EtmVersion::V3_5;
    let exception = prop::option::weighted(
        0.3,
        (0u16..512, any::<bool>(), 0u8..16)
            .prop_filter("canonical", |(n, c, r)| *n != 0 || *c || *r != 0)
            .prop_map(|(number, cancel, resume)| ExceptionInfo {
                number,
                cancel,
                resume,
            }),
    );
    (isa(cfg), any::<bool>(), any::<bool>(), exception)
        .prop_flat_map(move |(isa, ns, hyp, exception)| {
            address(isa).prop_map(move |address| Branch {
                address,
                bits: 0,
                known_bits: 0,
                isa,
                ns,
                hyp: hyp && hyp_ok,
                exception,
            })
        })
        .boxed()
}

fn value(size: u8) -> impl Strategy<Value = u32> {
    any::<u32>().prop_map(move |v| match size {
        0 => 0,
        4 => v,
        n => v & ((1u32 << (8 * n)) - 1),
    })
}

fn size() -> impl Strategy<Value = u8> {
    prop_oneof![Just(0u8), Just(1), Just(2), Just(4)]
}

fn data_address() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        0x2000_0000u32..0x2000_0100,
        0xffe0_0000u32..0xfff0_0000
    ]
}

fn packet(cfg: Config) -> BoxedStrategy<Packet> {
    let v35 = cfg.version() >= EtmVersion::V3_5;
    let da = cfg.data_address();
    let dv = cfg.data_value();
    let ctx_bytes = cfg.context_id_size().bytes();
    let ts_mask = if cfg.timestamp_64bit() {
        u64::MAX
    } else {
        (1u64 << 48) - 1
    };
    let addr_if = move |first: bool| data_address().prop_map(move |a| (first && da).then_some(a));
    let mut s = prop_oneof![
        1 => Just(Packet::ASync),
        3 => isync(cfg).prop_map(Packet::ISync),
        12 => atoms(cfg).prop_map(Packet::Atoms),
        6 => branch(cfg).prop_map(Packet::Branch),
        1 => any::<u32>().prop_map(Packet::CycleCount),
        1 => prop_oneof![
            Just(Packet::ExceptionEntry),
            Just(Packet::ExceptionExit),
            Just(Packet::Trigger),
            Just(Packet::Ignore),
        ],
    ]
    .boxed();
    // Data packets only where ETMCR enables data trace (values for the
    // packets that carry one): elsewhere their headers are errors.
    if da || dv {
        s = prop_oneof![
            22 => s,
            1 => Just(Packet::DataSuppressed),
            2 => (any::<bool>(), size()).prop_flat_map(move |(first, size)| {
                (addr_if(first), value(size)).prop_map(move |(address, v)| {
                    Packet::NormalData(NormalData {
                        first,
                        address,
                        address_bits: 0,
                        value: dv.then_some(v),
                        size,
                    })
                })
            }),
            1 => (1u8..4, any::<bool>()).prop_flat_map(move |(tag, first)| {
                addr_if(first).prop_map(move |address| {
                    Packet::OutOfOrderPlaceholder(OutOfOrderPlaceholder {
                        tag,
                        first,
                        address,
                        address_bits: 0,
                    })
                })
            }),
            1 => any::<bool>().prop_flat_map(move |first| {
                addr_if(first).prop_map(move |address| {
                    Packet::ValueNotTraced(ValueNotTraced {
                        first,
                        address,
                        address_bits: 0,
                    })
                })
            }),
        ]
        .boxed();
    }
    if dv {
        s = prop_oneof![
            24 => s,
            1 => Just(Packet::StoreFailed),
            1 => (1u8..4, size()).prop_flat_map(|(tag, size)| {
                value(size).prop_map(move |value| {
                    Packet::OutOfOrderData(OutOfOrderData { tag, value, size })
                })
            }),
        ]
        .boxed();
    }
    if ctx_bytes > 0 {
        s = prop_oneof![
            10 => s,
            1 => value(ctx_bytes as u8).prop_map(Packet::ContextId),
        ]
        .boxed();
    }
    if v35 {
        s = prop_oneof![
            10 => s,
            1 => any::<u8>().prop_map(Packet::Vmid),
            2 => (prop_oneof![any::<u64>(), 0x82_f9d0_0000u64..0x82_f9d1_0000], any::<bool>())
                .prop_map(move |(v, r)| Packet::Timestamp(Timestamp {
                    value: v & ts_mask,
                    bits: 0,
                    clock_changed: r,
                })),
        ]
        .boxed();
    }
    s
}

/// Clears the "bits carried" fields, which the encoder chooses.
fn normalize(p: Packet) -> Packet {
    match p {
        Packet::Branch(b) => Packet::Branch(Branch {
            bits: 0,
            known_bits: 0,
            ..b
        }),
        Packet::Timestamp(t) => Packet::Timestamp(Timestamp { bits: 0, ..t }),
        Packet::NormalData(d) => Packet::NormalData(NormalData {
            address_bits: 0,
            ..d
        }),
        Packet::ValueNotTraced(d) => Packet::ValueNotTraced(ValueNotTraced {
            address_bits: 0,
            ..d
        }),
        Packet::OutOfOrderPlaceholder(d) => Packet::OutOfOrderPlaceholder(OutOfOrderPlaceholder {
            address_bits: 0,
            ..d
        }),
        Packet::ISync(s) => {
            Packet::ISync(s.with_lsip(s.lsip().map(|l| LsipAddress { bits: 0, ..l })))
        }
        other => other,
    }
}

fn scenario() -> impl Strategy<Value = (Config, Vec<Packet>, Vec<usize>)> {
    config().prop_flat_map(|cfg| {
        (
            Just(cfg),
            prop::collection::vec(packet(cfg), 1..60),
            prop::collection::vec(0usize..2000, 0..12),
        )
    })
}

/// Parses `bytes` split at `cuts`, then finishes.
fn parse_chunks(cfg: Config, bytes: &[u8], cuts: &[usize]) -> Vec<Item> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut p = Parser::new(cfg);
    let mut out = Vec::new();
    let mut start = 0;
    for c in cuts.into_iter().chain([bytes.len()]) {
        out.extend(p.feed(&bytes[start..c]));
        start = c;
    }
    out.extend(p.finish().map(Err));
    let s = p.stats();
    assert_eq!(s.bytes_fed, bytes.len() as u64);
    assert_eq!(s.bytes_in_packets + s.bytes_skipped, s.bytes_fed, "{s:?}");
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn encode_split_parse_roundtrip((cfg, packets, cuts) in scenario()) {
        let mut enc = Encoder::new(cfg);
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        let mut buf = [0u8; 32];
        for p in [Packet::ASync].iter().chain(&packets) {
            let n = enc.encode(p, &mut buf).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            expected.push((bytes.len() as u64, normalize(*p)));
            bytes.extend_from_slice(&buf[..n]);
        }
        let items = parse_chunks(cfg, &bytes, &cuts);
        let got: Vec<(u64, Packet)> = items
            .into_iter()
            .map(|i| i.map(|(o, p)| (o, normalize(p))))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{e} in {bytes:02x?}"));
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn one_byte_chunks_match_whole((cfg, packets, _cuts) in scenario()) {
        let mut enc = Encoder::new(cfg);
        let mut bytes = Vec::new();
        let mut buf = [0u8; 32];
        for p in [Packet::ASync].iter().chain(&packets) {
            let n = enc.encode(p, &mut buf).unwrap();
            bytes.extend_from_slice(&buf[..n]);
        }
        let whole = parse_chunks(cfg, &bytes, &[]);
        let all_cuts: Vec<usize> = (0..bytes.len()).collect();
        prop_assert_eq!(parse_chunks(cfg, &bytes, &all_cuts), whole);
    }

    #[test]
    fn garbage_never_panics_and_is_chunking_invariant(
        cfg in config(),
        bytes in prop::collection::vec(
            prop_oneof![4 => any::<u8>(), 2 => Just(0u8), 1 => Just(0x80u8)], 0..600),
        cuts in prop::collection::vec(0usize..600, 0..20),
    ) {
        let whole = parse_chunks(cfg, &bytes, &[]);
        prop_assert_eq!(parse_chunks(cfg, &bytes, &cuts), whole.clone());
        // Every reported offset lies inside the input, in order.
        let mut last = 0;
        for item in &whole {
            let off = match item { Ok((o, _)) => *o, Err(e) => e.offset };
            prop_assert!(off < bytes.len() as u64);
            prop_assert!(off >= last);
            last = off;
        }
    }

    #[test]
    fn feed_at_offsets_follow_chunks(
        (cfg, packets, cuts) in scenario(),
        gap in 1u64..1000,
    ) {
        // Chunks placed at discontinuous offsets: each packet's offset is
        // where its first byte was placed.
        let mut enc = Encoder::new(cfg);
        let mut bytes = Vec::new();
        let mut starts = Vec::new();
        let mut buf = [0u8; 32];
        for p in [Packet::ASync].iter().chain(&packets) {
            let n = enc.encode(p, &mut buf).unwrap();
            starts.push(bytes.len());
            bytes.extend_from_slice(&buf[..n]);
        }
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut place = vec![0u64; bytes.len()];
        let mut p = Parser::new(cfg);
        let mut got = Vec::new();
        let mut start = 0;
        for (k, c) in cuts.into_iter().chain([bytes.len()]).enumerate() {
            let at = start as u64 + gap * k as u64;
            for (i, slot) in place[start..c].iter_mut().enumerate() {
                *slot = at + i as u64;
            }
            got.extend(p.feed_at(at, &bytes[start..c]).map(|i| i.unwrap().0));
            start = c;
        }
        prop_assert_eq!(p.finish(), None);
        let want: Vec<u64> = starts.iter().map(|&s| place[s]).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn dropping_the_iterator_still_parses_the_chunk() {
    let cfg = Config::new();
    let bytes = [
        0, 0, 0, 0, 0, 0x80, 0x84, 0x84, 0x08, 0x01, 0x01, 0x10, 0, 0, 0x03,
    ];
    let mut p = Parser::new(cfg);
    {
        let mut it = p.feed(&bytes[..10]);
        assert_eq!(it.next().unwrap().unwrap(), (0, Packet::ASync));
        // Dropped with two P-headers and half an I-sync unread.
    }
    let rest: Vec<_> = p.feed(&bytes[10..]).map(|i| i.unwrap()).collect();
    assert_eq!(rest.len(), 2);
    assert!(matches!(rest[0], (8, Packet::ISync(s)) if s.address() == 0x1000));
    assert!(matches!(rest[1], (14, Packet::Branch(b)) if b.address == 0x1002));
    assert_eq!(p.stats().packets, 5);
}

#[test]
fn unsynchronized_bytes_reported_once() {
    let cfg = Config::new();
    let bytes = [0x12, 0x00, 0x34, 0x00, 0x00, 0, 0, 0, 0, 0, 0x80, 0x84];
    for chunk in [1, 2, 3, bytes.len()] {
        let mut p = Parser::new(cfg);
        let mut items = Vec::new();
        for c in bytes.chunks(chunk) {
            items.extend(p.feed(c));
        }
        assert_eq!(p.finish(), None);
        assert_eq!(items.len(), 3, "chunk {chunk}: {items:?}");
        let e = items[0].unwrap_err();
        assert_eq!(
            (e.offset, e.kind),
            (0, ErrorKind::Unsynchronized { len: 3 })
        );
        assert_eq!(items[1], Ok((3, Packet::ASync)));
        assert!(matches!(items[2], Ok((11, Packet::Atoms(_)))));
    }
}

#[test]
fn goes_on_after_a_reserved_header() {
    // Like OpenCSD's packet processor: the reserved header byte is
    // reported and skipped, and the next byte is a header again (in
    // OpenCSD's listing of a Cortex-R5 capture, a TRIGGER follows an
    // I_RESERVED at the next index).
    let cfg = Config::new();
    let bytes = [
        0, 0, 0, 0, 0, 0x80, // A-sync
        0x84, // P-header
        0x10, // reserved
        0x84, 0x88, // P-headers
        0, 0, 0, 0, 0, 0x80, // A-sync
        0x88,
    ];
    let mut p = Parser::new(cfg);
    let items: Vec<_> = p.feed(&bytes).collect();
    assert_eq!(p.finish(), None);
    let kinds: Vec<String> = items
        .iter()
        .map(|i| match i {
            Ok((o, p)) => format!("{o}:{}", p.kind()),
            Err(e) => format!("{}:{:?}", e.offset, e.kind),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "0:a_sync",
            "6:p_header",
            "7:ReservedHeader { header: 16 }",
            "8:p_header",
            "9:p_header",
            "10:a_sync",
            "16:p_header"
        ]
    );
    let s = p.stats();
    assert_eq!((s.packets, s.errors, s.bytes_skipped), (6, 1, 1));
}

#[test]
fn an_invalid_packet_forgets_the_known_address_bits() {
    let cfg = Config::new();
    // A-sync, I-sync at 0x8000 (all bits known), a reserved header, then
    // a one-byte branch: it carries 8 bits, and only those are known.
    let bytes = [
        0, 0, 0, 0, 0, 0x80, 0x08, 0x00, 0x00, 0x80, 0x00, 0x00, 0x10, 0x05,
    ];
    let mut p = Parser::new(cfg);
    let last = p.feed(&bytes).last().unwrap().unwrap();
    match last.1 {
        Packet::Branch(b) => assert_eq!((b.address, b.bits, b.known_bits), (0x8008, 8, 8)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn truncated_packet_reported_at_finish() {
    let cfg = Config::new();
    let mut p = Parser::new(cfg);
    let bytes = [0, 0, 0, 0, 0, 0x80, 0x08, 0x01, 0x01];
    assert_eq!(p.feed(&bytes).count(), 1);
    let e = p.finish().unwrap();
    assert_eq!(e.offset, 6);
    assert_eq!(e.kind, ErrorKind::Truncated { header: 8, len: 3 });
    assert_eq!(p.finish(), None);
    assert_eq!(
        e.to_string(),
        "at offset 6: input ends inside a packet (header 0x08, 3 byte(s) present)"
    );
}

#[test]
fn bad_async_runs() {
    let cfg = Config::new();
    let mut p = Parser::new(cfg);
    // Synchronized, then three zeros and 0x80: not an A-sync. The zeros
    // are reported and the 0x80 is parsed as the next header (OpenCSD
    // does the same: "A-Sync ? : Unexpected byte in sequence").
    let bytes = [0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0x80, 0x84];
    let items: Vec<_> = p.feed(&bytes).collect();
    assert_eq!(items[0], Ok((0, Packet::ASync)));
    let e = items[1].unwrap_err();
    assert_eq!((e.offset, e.kind), (6, ErrorKind::BadASync { zeros: 3 }));
    let offsets: Vec<u64> = items[2..]
        .iter()
        .map(|i| match i {
            Ok((o, _)) => *o,
            Err(e) => e.offset,
        })
        .collect();
    assert_eq!(offsets, [9, 10]);
    assert_eq!(p.finish(), None);
}

#[test]
fn reset_starts_over() {
    let cfg = Config::new();
    let mut p = Parser::new(cfg);
    let bytes = [0, 0, 0, 0, 0, 0x80, 0x08];
    assert_eq!(p.feed(&bytes).count(), 1);
    p.reset();
    assert_eq!(p.stats(), Default::default());
    let items: Vec<_> = p.feed(&bytes[..6]).collect();
    assert_eq!(items, [Ok((0, Packet::ASync))]);
}

#[test]
fn encoder_honours_requested_bits_and_resync() {
    let cfg = Config::new().with_data_address(true);
    let mut enc = Encoder::new(cfg);
    let mut buf = [0u8; 32];
    enc.encode(
        &Packet::ISync(ISync::new(0x8000, Isa::Arm, Reason::TraceOn)),
        &mut buf,
    )
    .unwrap();
    let b = |bits| {
        Packet::Branch(Branch {
            address: 0x8004,
            bits,
            known_bits: 0,
            isa: Isa::Arm,
            ns: false,
            hyp: false,
            exception: None,
        })
    };
    assert_eq!(enc.encode(&b(0), &mut buf).unwrap(), 1);
    assert_eq!(enc.encode(&b(9), &mut buf).unwrap(), 2);
    assert_eq!(enc.encode(&b(32), &mut buf).unwrap(), 5);
    // The first data address after an A-sync is sent in full.
    let d = Packet::NormalData(NormalData {
        first: true,
        address: Some(0x10),
        address_bits: 0,
        value: None,
        size: 0,
    });
    assert_eq!(enc.encode(&d, &mut buf).unwrap(), 6);
    assert_eq!(enc.encode(&d, &mut buf).unwrap(), 2);
    enc.encode(&Packet::ASync, &mut buf).unwrap();
    assert_eq!(enc.encode(&d, &mut buf).unwrap(), 6);
    // Too small a buffer: error, state unchanged.
    assert!(matches!(
        enc.encode(&b(32), &mut [0u8; 3]),
        Err(etm_packets::EncodeError::BufferTooSmall { needed: 5 })
    ));
}

#[test]
fn encoder_rejects_unrepresentable_packets() {
    let mut enc = Encoder::new(Config::new().with_version(EtmVersion::V3_2));
    let mut buf = [0u8; 32];
    let cases = [
        Packet::ISync(ISync::new(0x1000, Isa::ThumbEE, Reason::Periodic)),
        Packet::ISync(ISync::new(0x1001, Isa::Thumb, Reason::Periodic)),
        Packet::ISync(ISync::new(0x1000, Isa::Arm, Reason::Periodic).with_hyp(true)),
        Packet::Vmid(1),
        Packet::ContextId(1),
        Packet::Atoms(Atoms {
            format: PHeaderFormat::Format3,
            count: 0,
            executed: 0,
            cycles: 1,
        }),
        Packet::Branch(Branch {
            address: 0x1002,
            bits: 0,
            known_bits: 0,
            isa: Isa::Arm,
            ns: false,
            hyp: false,
            exception: None,
        }),
    ];
    for c in cases {
        assert!(
            matches!(
                enc.encode(&c, &mut buf),
                Err(etm_packets::EncodeError::Unrepresentable { .. })
            ),
            "{c:?}"
        );
    }
}
