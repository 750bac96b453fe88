//! Property tests: random valid packet sequences under random
//! configurations survive encode → split anywhere → parse; arbitrary bytes
//! never panic and give the same items whatever the chunking.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use ptm_packets::{
    Atoms, Config, ContextIdSize, Encoder, Error, ExceptionInfo, ISync, ISyncReason, Isa, Packet,
    Parser, PftVersion,
};

/// One parser item.
type Item = Result<(u64, Packet), Error>;

fn config() -> impl Strategy<Value = Config> {
    (
        any::<bool>(),
        0u32..4,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(ca, cid, ts64, bin, v10, virt)| {
            Config::default()
                .with_cycle_accurate(ca)
                .with_context_id_size(ContextIdSize::from_field(cid))
                .with_timestamps(true)
                .with_timestamp_64bit(ts64)
                .with_timestamp_binary(bin)
                .with_version(if v10 {
                    PftVersion::V1_0
                } else {
                    PftVersion::V1_1
                })
                .with_virtualization(virt)
        })
}

fn isa() -> impl Strategy<Value = Isa> {
    prop_oneof![
        4 => Just(Isa::Arm),
        4 => Just(Isa::Thumb),
        1 => Just(Isa::ThumbEE),
        1 => Just(Isa::Jazelle),
    ]
}

fn reason() -> impl Strategy<Value = ISyncReason> {
    (0u8..4).prop_map(ISyncReason::from_bits)
}

/// What happens next in the traced program, before compression.
#[derive(Clone, Debug)]
enum Op {
    Atoms(u8, u8, u32),
    /// Target: the last address with the low `width` bits replaced.
    Branch {
        width: u8,
        bits: u32,
        isa: Isa,
        exception: Option<(u16, bool, Option<bool>, bool)>,
        cycles: u32,
    },
    Waypoint(u8, u32, Isa),
    ISync(u32, Isa, bool, bool, ISyncReason, u32, u32),
    Timestamp(u8, u64, bool, u32),
    ContextId(u32),
    Vmid(u8),
    Trigger,
    ExceptionReturn,
    Ignore,
    ASync,
}

fn op() -> impl Strategy<Value = Op> {
    let cycles = prop_oneof![0u32..16, 0u32..3000, any::<u32>()];
    prop_oneof![
        8 => (1u8..=5, any::<u8>(), cycles.clone()).prop_map(|(n, b, c)| Op::Atoms(n, b, c)),
        8 => (
            0u8..=32,
            any::<u32>(),
            isa(),
            proptest::option::weighted(0.3, (0u16..0x200, any::<bool>(), any::<Option<bool>>(), any::<bool>())),
            cycles.clone(),
        )
            .prop_map(|(width, bits, isa, exception, cycles)| Op::Branch { width, bits, isa, exception, cycles }),
        2 => (0u8..=32, any::<u32>(), isa()).prop_map(|(w, b, i)| Op::Waypoint(w, b, i)),
        2 => (any::<u32>(), isa(), any::<bool>(), any::<bool>(), reason(), any::<u32>(), cycles.clone())
            .prop_map(|(a, i, ns, hyp, r, ctx, c)| Op::ISync(a, i, ns, hyp, r, ctx, c)),
        2 => (0u8..=64, any::<u64>(), any::<bool>(), cycles)
            .prop_map(|(w, d, r, c)| Op::Timestamp(w, d, r, c)),
        1 => any::<u32>().prop_map(Op::ContextId),
        1 => any::<u8>().prop_map(Op::Vmid),
        1 => Just(Op::Trigger),
        1 => Just(Op::ExceptionReturn),
        1 => Just(Op::Ignore),
        1 => Just(Op::ASync),
    ]
}

fn low_mask(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

fn align(addr: u32, isa: Isa) -> u32 {
    match isa {
        Isa::Arm => addr & !3,
        Isa::Thumb | Isa::ThumbEE => addr & !1,
        Isa::Jazelle => addr,
    }
}

/// Turns an op into the packet the encoder would emit now.
fn packet(enc: &Encoder, op: &Op) -> Packet {
    let cfg = *enc.config();
    let ca = cfg.cycle_accurate();
    let cyc = |c: u32| ca.then_some(c);
    let near = |width: u8, bits: u32| {
        let m = low_mask(width) as u32;
        (enc.last_address() & !m) | (bits & m)
    };
    match *op {
        Op::Atoms(n, bits, c) => {
            let n = if ca { 1 } else { n };
            Packet::Atom {
                atoms: Atoms::new(n, bits & ((1 << n) - 1)).expect("valid atoms"),
                cycles: cyc(c),
            }
        }
        Op::Branch {
            width,
            bits,
            isa,
            exception,
            cycles,
        } => {
            let exception = exception.map(|(number, ns, hyp, alt_isa)| ExceptionInfo {
                number,
                ns,
                hyp,
                alt_isa,
            });
            enc.branch(align(near(width, bits), isa), isa, exception, Some(cycles))
        }
        Op::Waypoint(width, bits, isa) => enc.waypoint_update(align(near(width, bits), isa), isa),
        Op::ISync(address, isa, ns, hyp, reason, ctx, c) => {
            let size = cfg.context_id_size();
            Packet::ISync(ISync {
                address: address & !1,
                isa,
                ns,
                hyp,
                reason,
                context_id: (size.bytes() > 0).then_some(ctx & size.max_value()),
                cycles: (ca && reason != ISyncReason::Periodic).then_some(c),
            })
        }
        Op::Timestamp(width, bits, r, c) => {
            let m = low_mask(width);
            enc.timestamp((enc.last_timestamp() & !m) | (bits & m), r, Some(c))
        }
        Op::ContextId(v) => Packet::ContextId(v & cfg.context_id_size().max_value()),
        Op::Vmid(v) => Packet::Vmid(v),
        Op::Trigger => Packet::Trigger,
        Op::ExceptionReturn => Packet::ExceptionReturn,
        Op::Ignore => Packet::Ignore,
        Op::ASync => Packet::ASync,
    }
}

/// Parses `bytes` cut into pieces of the given sizes (cycled).
fn parse_split(cfg: Config, bytes: &[u8], sizes: &[usize]) -> (Vec<Item>, Option<Error>, Parser) {
    let mut parser = Parser::new(cfg);
    let mut items = Vec::new();
    let mut pos = 0;
    let mut k = 0;
    while pos < bytes.len() {
        let n = sizes
            .get(k % sizes.len().max(1))
            .copied()
            .unwrap_or(bytes.len())
            .max(1);
        let end = (pos + n).min(bytes.len());
        items.extend(parser.feed(&bytes[pos..end]));
        pos = end;
        k += 1;
    }
    let fin = parser.finish();
    (items, fin, parser)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn encode_split_parse(cfg in config(), start in any::<u32>(), ops in prop::collection::vec(op(), 0..120),
                          sizes in prop::collection::vec(1usize..24, 1..8)) {
        let mut enc = Encoder::new(cfg);
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        let first = [
            Packet::ASync,
            packet(&enc, &Op::ISync(start, Isa::Thumb, false, false, ISyncReason::TraceOn, start, 7)),
        ];
        for p in first {
            expected.push(Ok((bytes.len() as u64, p)));
            enc.encode_extend(&p, &mut bytes).expect("encodable");
        }
        for op in &ops {
            let p = packet(&enc, op);
            let at = bytes.len() as u64;
            let n = enc.encode_extend(&p, &mut bytes).map_err(|e| TestCaseError::fail(format!("{p:?}: {e}")))?;
            // The stateless encoding gives the same bytes.
            let mut alone = [0u8; 16];
            prop_assert_eq!(p.encode(&cfg, &mut alone), Ok(n));
            prop_assert_eq!(&alone[..n], &bytes[at as usize..]);
            expected.push(Ok((at, p)));
        }
        // In one piece (the inlined fast paths see whole words) and split.
        let (whole, fin, _) = parse_split(cfg, &bytes, &[bytes.len().max(1)]);
        prop_assert_eq!(fin, None);
        prop_assert_eq!(&whole, &expected);
        let (items, fin, parser) = parse_split(cfg, &bytes, &sizes);
        prop_assert_eq!(fin, None);
        prop_assert_eq!(items, expected);
        let stats = parser.stats();
        prop_assert_eq!(stats.bytes_fed, bytes.len() as u64);
        prop_assert_eq!(stats.bytes_in_packets, bytes.len() as u64);
        prop_assert_eq!(stats.bytes_skipped, 0);
    }

    #[test]
    fn garbage_never_panics_and_ignores_chunking(cfg in config(),
            bytes in prop::collection::vec(prop_oneof![
                4 => any::<u8>(),
                2 => Just(0u8),
                1 => Just(0x80u8),
                1 => prop::sample::select(vec![0x08u8, 0x42, 0x46, 0x72, 0x6e, 0x3c, 0x84, 0xff, 0x81]),
            ], 0..600),
            sizes in prop::collection::vec(1usize..20, 1..6)) {
        let (whole, fin_whole, p1) = parse_split(cfg, &bytes, &[bytes.len().max(1)]);
        let (split, fin_split, p2) = parse_split(cfg, &bytes, &sizes);
        prop_assert_eq!(&whole, &split);
        prop_assert_eq!(fin_whole, fin_split);
        prop_assert_eq!(p1.stats(), p2.stats());
        let s = p1.stats();
        prop_assert_eq!(s.bytes_fed, s.bytes_in_packets + s.bytes_skipped);
        // Offsets never go backwards and stay inside the input.
        let mut last = 0;
        for item in &whole {
            let off = match item { Ok((o, _)) => *o, Err(e) => e.offset };
            prop_assert!(off >= last && off < bytes.len() as u64);
            last = off;
        }
    }

    #[test]
    fn resync_after_garbage(cfg in config(), ops in prop::collection::vec(op(), 0..30),
                            garbage in prop::collection::vec(1u8..=255, 0..100),
                            sizes in prop::collection::vec(1usize..24, 1..8)) {
        // A valid stream, a reserved header, garbage without zero bytes,
        // then a valid stream again from an A-sync.
        let mut enc = Encoder::new(cfg);
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        let emit = |enc: &mut Encoder, bytes: &mut Vec<u8>, p: Packet, expected: &mut Vec<_>| {
            expected.push(Ok((bytes.len() as u64, p)));
            enc.encode_extend(&p, bytes).expect("encodable");
        };
        emit(&mut enc, &mut bytes, Packet::ASync, &mut expected);
        for op in &ops {
            let p = packet(&enc, op);
            emit(&mut enc, &mut bytes, p, &mut expected);
        }
        let bad = bytes.len() as u64;
        bytes.push(0x0a);
        bytes.extend(&garbage);
        expected.push(Err(Error { offset: bad, kind: ptm_packets::ErrorKind::ReservedHeader { header: 0x0a } }));
        if !garbage.is_empty() {
            expected.push(Err(Error { offset: bad + 1, kind: ptm_packets::ErrorKind::Unsynchronized { len: garbage.len() as u64 } }));
        }
        emit(&mut enc, &mut bytes, Packet::ASync, &mut expected);
        for op in &ops {
            let p = packet(&enc, op);
            emit(&mut enc, &mut bytes, p, &mut expected);
        }
        let (items, fin, _) = parse_split(cfg, &bytes, &sizes);
        prop_assert_eq!(fin, None);
        prop_assert_eq!(items, expected);
    }
}
