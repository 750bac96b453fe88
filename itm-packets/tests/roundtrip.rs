//! Property tests: random valid packets are encoded, split at random
//! points, parsed back equal with correct offsets; random bytes never
//! panic, parse the same whatever the chunking and account for every
//! byte.
#![allow(clippy::unwrap_used)]

use itm_packets::{
    Config, DataTrace, DataTraceKind, Encoder, EventCounter, ExceptionAction, ExceptionTrace,
    Extension, GlobalTimestamp, Item, LocalTimestamp, Packet, Parser, PcSample, Stimulus,
    TimestampRelation,
};
use proptest::prelude::*;

fn relation() -> impl Strategy<Value = TimestampRelation> {
    (0u8..4).prop_map(TimestampRelation::from_tc)
}

fn size() -> impl Strategy<Value = u8> {
    prop::sample::select(vec![1u8, 2, 4])
}

fn sized(v: u32, size: u8) -> u32 {
    if size == 4 {
        v
    } else {
        v & ((1 << (8 * u32::from(size))) - 1)
    }
}

/// A valid packet; stimulus ports are numbered on page 0 (fixed up to the
/// page in force when the sequence is built).
fn packet() -> impl Strategy<Value = Packet> {
    prop_oneof![
        Just(Packet::Sync),
        Just(Packet::Overflow),
        (1u32..=6).prop_map(|value| Packet::LocalTimestamp(LocalTimestamp {
            value,
            relation: TimestampRelation::Synchronous,
            len: 0
        })),
        (1u8..=4, any::<u32>(), relation()).prop_map(|(len, v, relation)| {
            Packet::LocalTimestamp(LocalTimestamp {
                value: v & ((1 << (7 * u32::from(len))) - 1),
                relation,
                len,
            })
        }),
        (1u8..=3, any::<u64>()).prop_map(|(len, v)| Packet::GlobalTimestamp(GlobalTimestamp {
            high: false,
            bits: v & ((1 << (7 * u32::from(len))) - 1),
            len,
            wrap: false,
            clock_change: false
        })),
        (any::<u64>(), any::<bool>(), any::<bool>())
            .prop_map(|(v, w, c)| Packet::GlobalTimestamp(GlobalTimestamp::low(v, w, c))),
        (prop::sample::select(vec![4u8, 6]), any::<u64>()).prop_map(|(len, v)| {
            Packet::GlobalTimestamp(GlobalTimestamp {
                high: true,
                bits: v & ((1 << (7 * u32::from(len))) - 1),
                len,
                wrap: false,
                clock_change: false,
            })
        }),
        (0u8..=4, any::<u32>(), any::<bool>()).prop_map(|(len, v, hardware)| {
            Packet::Extension(Extension {
                hardware,
                value: v & ((1 << (3 + 7 * u32::from(len))) - 1),
                len,
            })
        }),
        (0u32..32, any::<u32>(), size()).prop_map(|(port, v, size)| Packet::Stimulus(Stimulus {
            port,
            value: sized(v, size),
            size
        })),
        (0u8..64).prop_map(|flags| Packet::EventCounter(EventCounter { flags })),
        (0u16..512, 1u8..4).prop_map(|(number, f)| Packet::ExceptionTrace(ExceptionTrace {
            number,
            action: ExceptionAction::from_field(f).unwrap()
        })),
        any::<Option<u32>>().prop_map(|pc| Packet::PcSample(PcSample { pc })),
        (0u8..4, any::<u32>()).prop_map(|(comparator, pc)| Packet::DataTrace(DataTrace {
            comparator,
            kind: DataTraceKind::Pc(pc)
        })),
        (0u8..4, any::<u16>()).prop_map(|(comparator, a)| Packet::DataTrace(DataTrace {
            comparator,
            kind: DataTraceKind::Address(a)
        })),
        (0u8..4, any::<u32>(), size(), any::<bool>()).prop_map(|(comparator, v, size, write)| {
            Packet::DataTrace(DataTrace {
                comparator,
                kind: DataTraceKind::Value {
                    value: sized(v, size),
                    size,
                    write,
                },
            })
        }),
    ]
}

/// Encodes `packets` (stimulus ports moved to the page in force), returning
/// the bytes and the packets with their offsets as the parser must give
/// them.
fn encode(packets: &[Packet]) -> (Vec<u8>, Vec<(u64, Packet)>) {
    let mut enc = Encoder::new();
    let mut bytes = Vec::new();
    let mut want = Vec::new();
    let mut buf = [0u8; 8];
    for p in packets {
        let mut p = *p;
        if let Packet::Stimulus(s) = &mut p {
            s.port = (s.port % 32) | ((enc.page() & 0x07FF_FFFF) << 5);
        }
        let n = enc.encode(&p, &mut buf).unwrap();
        want.push((bytes.len() as u64, p));
        bytes.extend_from_slice(&buf[..n]);
    }
    (bytes, want)
}

/// Every item of `bytes` fed in pieces cut at `cuts`, the end included.
fn parse(cfg: Config, bytes: &[u8], cuts: &[usize]) -> (Vec<Item>, Parser) {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.push(0);
    cuts.push(bytes.len());
    cuts.sort_unstable();
    let mut p = Parser::new(cfg);
    let mut out = Vec::new();
    for w in cuts.windows(2) {
        out.extend(p.feed(&bytes[w[0]..w[1]]));
    }
    out.extend(p.finish().map(Err));
    (out, p)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn encoded_packets_parse_back(
        packets in prop::collection::vec(packet(), 1..60),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        wait in any::<bool>(),
    ) {
        let mut packets = packets;
        if wait {
            packets.insert(0, Packet::Sync);
        }
        let (bytes, want) = encode(&packets);
        let cfg = Config::new().with_aligned_start(!wait);
        let (got, p) = parse(cfg, &bytes, &cuts);
        let got: Vec<(u64, Packet)> = got.into_iter().map(|i| i.unwrap()).collect();
        prop_assert_eq!(got, want);
        let s = p.stats();
        prop_assert_eq!(s.bytes_in_packets, bytes.len() as u64);
        prop_assert_eq!(s.bytes_skipped, 0);
    }

    #[test]
    fn any_start_point_resynchronizes_at_the_next_sync(
        packets in prop::collection::vec(packet(), 1..40),
        more in prop::collection::vec(packet(), 1..20),
        start in any::<usize>(),
    ) {
        // Start anywhere in the first part: a parser that waits for
        // synchronization gives exactly the packets after the sync.
        let mut all = packets.clone();
        all.push(Packet::Sync);
        let tail_from = all.len() - 1;
        all.extend(more);
        let (bytes, want) = encode(&all);
        let sync_at = want[tail_from].0 as usize;
        let start = start % (sync_at + 1);
        let mut p = Parser::new(Config::new());
        let mut got: Vec<Item> = p.feed_at(start as u64, &bytes[start..]).collect();
        got.extend(p.finish().map(Err));
        let s = p.stats();
        prop_assert_eq!(s.bytes_fed, s.bytes_in_packets + s.bytes_skipped);
        // A sync packet inside the first part's payload could be taken
        // earlier; the packets from the real sync on must be there, in
        // order, at their offsets.
        // (A sync packet takes every zero before it, so one may start at a
        // zero byte of the packet before.)
        prop_assert!(got.iter().any(|i| matches!(i, Ok((o, Packet::Sync)) if *o as usize <= sync_at)));
        let tail: Vec<(u64, Packet)> = got.iter().filter_map(|i| i.ok()).filter(|(o, _)| *o as usize > sync_at).collect();
        // Stimulus ports after the sync depend on the page, which a parser
        // joining late may not know.
        let strip = |v: &[(u64, Packet)]| -> Vec<(u64, Packet)> {
            v.iter().map(|&(o, p)| match p {
                Packet::Stimulus(s) => (o, Packet::Stimulus(Stimulus { port: s.port % 32, ..s })),
                p => (o, p),
            }).collect()
        };
        prop_assert_eq!(strip(&tail), strip(&want[tail_from + 1..]));
    }

    #[test]
    fn random_bytes_parse_alike_in_any_pieces(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        cuts in prop::collection::vec(any::<usize>(), 0..10),
        aligned in any::<bool>(),
    ) {
        let cfg = Config::new().with_aligned_start(aligned);
        let (whole, p1) = parse(cfg, &bytes, &[]);
        let (split, p2) = parse(cfg, &bytes, &cuts);
        prop_assert_eq!(&whole, &split);
        prop_assert_eq!(p1.stats(), p2.stats());
        let s = p1.stats();
        prop_assert_eq!(s.bytes_fed, bytes.len() as u64);
        prop_assert_eq!(s.bytes_fed, s.bytes_in_packets + s.bytes_skipped);
        let skipped: u64 = whole.iter().filter_map(|i| i.as_ref().err()).map(|e| e.skipped()).sum();
        prop_assert_eq!(skipped, s.bytes_skipped);
        // Offsets lie inside the input and never go back.
        let offs: Vec<u64> = whole.iter().map(|i| match i { Ok((o, _)) => *o, Err(e) => e.offset }).collect();
        prop_assert!(offs.windows(2).all(|w| w[0] <= w[1]));
        prop_assert!(offs.iter().all(|&o| (o as usize) < bytes.len().max(1)));
        // Byte by byte, too.
        let mut p3 = Parser::new(cfg);
        let mut one_by_one: Vec<Item> = Vec::new();
        for b in &bytes {
            one_by_one.extend(p3.feed(std::slice::from_ref(b)));
        }
        one_by_one.extend(p3.finish().map(Err));
        prop_assert_eq!(&whole, &one_by_one);
        // Every valid packet re-encodes to the bytes it came from.
        let mut enc = Encoder::new();
        let mut buf = [0u8; 8];
        for (o, p) in whole.iter().flatten() {
            if let Packet::Extension(e) = p {
                if !e.hardware {
                    let _ = enc.encode(p, &mut buf);
                    continue;
                }
            }
            if *p == Packet::Sync {
                continue;
            }
            let mut q = *p;
            if let Packet::Stimulus(s) = &mut q {
                s.port = (s.port % 32) | ((enc.page() & 0x07FF_FFFF) << 5);
            }
            let n = enc.encode(&q, &mut buf).unwrap();
            let o = *o as usize;
            prop_assert_eq!(&buf[..n], &bytes[o..o + n]);
        }
    }

    #[test]
    fn same_state_after_a_sync(
        a in prop::collection::vec(any::<u8>(), 0..100),
        b in prop::collection::vec(any::<u8>(), 0..100),
        rest in prop::collection::vec(any::<u8>(), 0..100),
    ) {
        // Two parsers fed different garbage, then the same sync and rest,
        // at the same offsets, agree (the page aside, which garbage may
        // set) and give the same items.
        let sync = [0u8, 0, 0, 0, 0, 0x80];
        let mut p = Parser::new(Config::new());
        let mut q = Parser::new(Config::new());
        let base = 1000u64;
        drop(p.feed_at(base - a.len() as u64, &a));
        drop(q.feed_at(base - b.len() as u64, &b));
        drop(p.feed_at(base, &sync));
        drop(q.feed_at(base, &sync));
        if p.page() == q.page() && p.is_synchronized() && q.is_synchronized() {
            prop_assert!(p.same_state(&q));
            let x: Vec<Item> = p.feed(&rest).collect();
            let y: Vec<Item> = q.feed(&rest).collect();
            prop_assert_eq!(x, y);
        }
    }
}
