//! Synchronizing at an I-sync when no A-sync has been seen
//! (`Config::with_isync_sync`): for captures whose A-sync was cut off.
#![allow(clippy::unwrap_used)]

use etm_packets::{
    Atoms, Branch, Config, Encoder, ErrorKind, ISync, Isa, Item, PHeaderFormat, Packet, Parser,
    Reason,
};

/// Every item of `bytes`, fed in pieces of `chunk` bytes, the end included.
fn items(cfg: Config, bytes: &[u8], chunk: usize) -> (Vec<Item>, etm_packets::Stats) {
    let mut p = Parser::new(cfg);
    let mut v = Vec::new();
    for c in bytes.chunks(chunk.max(1)) {
        v.extend(p.feed(c));
    }
    v.extend(p.finish().map(Err));
    let s = p.stats();
    assert_eq!(s.bytes_fed, s.bytes_in_packets + s.bytes_skipped, "{s:?}");
    (v, s)
}

fn atoms(n: u8) -> Packet {
    Packet::Atoms(Atoms {
        format: PHeaderFormat::Format1,
        count: n,
        executed: (1 << n) - 1,
        cycles: 0,
    })
}

/// A Cortex-M-like stream (ETMv3.5, Thumb, no cycle accuracy): A-sync,
/// trace-on I-sync, then atoms and branches with a periodic I-sync every
/// `every` packets; the encoded bytes and each packet with its offset.
fn stream(cfg: Config, n: usize, every: usize, seed: u64) -> (Vec<u8>, Vec<(u64, Packet)>) {
    let mut rng = test_support::Rng(seed);
    let mut enc = Encoder::new(cfg);
    let (mut bytes, mut packets) = (Vec::new(), Vec::new());
    let mut buf = [0u8; 32];
    let mut pc = 0x0800_0240u32;
    let mut push = |p: Packet, bytes: &mut Vec<u8>, enc: &mut Encoder| {
        let n = enc.encode(&p, &mut buf).unwrap();
        packets.push((bytes.len() as u64, p));
        bytes.extend_from_slice(&buf[..n]);
    };
    push(Packet::ASync, &mut bytes, &mut enc);
    push(
        Packet::ISync(ISync::new(pc, Isa::Thumb, Reason::TraceOn)),
        &mut bytes,
        &mut enc,
    );
    for i in 0..n {
        if i % every == every - 1 {
            push(
                Packet::ISync(ISync::new(pc, Isa::Thumb, Reason::Periodic)),
                &mut bytes,
                &mut enc,
            );
        } else if rng.below(3) == 0 {
            pc = 0x0800_0000 | (rng.next_u64() as u32 & 0x3FFE);
            let b = Branch {
                address: pc,
                bits: 0,
                known_bits: 0,
                isa: Isa::Thumb,
                ns: false,
                hyp: false,
                exception: None,
            };
            push(Packet::Branch(b), &mut bytes, &mut enc);
        } else {
            push(atoms(1 + rng.below(5) as u8), &mut bytes, &mut enc);
        }
    }
    // The packets as the parser reports them (compressed fields filled in).
    let mut p = Parser::new(cfg);
    let parsed: Vec<(u64, Packet)> = p.feed(&bytes).map(|i| i.unwrap()).collect();
    assert_eq!(parsed.len(), packets.len());
    (bytes, parsed)
}

fn cortex_m() -> Config {
    // ETMCR 0x980 and ETMIDR 0x4114F250 of an STM32F4.
    Config::from_regs(0x980, 0, 0x4114_F250).unwrap()
}

#[test]
fn decoding_starts_at_the_first_isync_when_the_async_was_cut_off() {
    let cfg = cortex_m();
    let (bytes, packets) = stream(cfg, 40, 20, 7);
    // Cut off the A-sync's first two zeros: four zeros and 0x80 remain.
    let cut = &bytes[2..];
    let (off, (items_without, _)) = (2, items(cfg, cut, 64));
    assert!(
        matches!(items_without[..], [Err(e)] if matches!(e.kind, ErrorKind::Unsynchronized { .. }))
    );
    for chunk in [1, 5, 64] {
        let (got, stats) = items(cfg.with_isync_sync(true), cut, chunk);
        assert_eq!(
            got[0],
            Err(etm_packets::Error {
                offset: 0,
                kind: ErrorKind::Unsynchronized { len: 4 }
            })
        );
        let want: Vec<Item> = packets[1..]
            .iter()
            .map(|&(o, p)| Ok((o - off, p)))
            .collect();
        assert_eq!(&got[1..], &want[..]);
        assert_eq!(stats.isync_syncs, 1);
    }
}

#[test]
fn isync_candidates_with_impossible_fields_are_skipped() {
    let cfg = cortex_m().with_isync_sync(true);
    // 0x08 with the Jazelle bit set in its information byte; 0x08 with an
    // ARM-state address not word-aligned; then a real I-sync.
    let jazelle = [0x08, 0x71, 0x40, 0x02, 0x00, 0x08];
    let arm_odd = [0x08, 0x61, 0x42, 0x02, 0x00, 0x08];
    let real = [
        0x08, 0x61, 0x41, 0x02, 0x00, 0x08, 0x84, 0x84, 0x84, 0x84, 0x84, 0x84, 0x84, 0x84, 0x84,
        0x84, 0x84, 0x84, 0x84, 0x84, 0x84, 0x84, 0x84, 0x84,
    ];
    let mut bytes = jazelle.to_vec();
    bytes.extend_from_slice(&arm_odd);
    bytes.extend_from_slice(&real);
    let (got, stats) = items(cfg, &bytes, 3);
    assert_eq!(
        got[0],
        Err(etm_packets::Error {
            offset: 0,
            kind: ErrorKind::Unsynchronized { len: 12 }
        })
    );
    let Ok((12, Packet::ISync(s))) = got[1] else {
        panic!("{got:?}")
    };
    assert_eq!((s.address(), s.isa()), (0x0800_0240, Isa::Thumb));
    assert_eq!(got.len(), 2 + 18);
    assert_eq!(stats.isync_syncs, 1);
}

/// Streams cut anywhere before their first periodic I-sync: the parser
/// synchronizes at the first I-sync after the cut (nearly always) and
/// gives every packet from there on; it never reports a packet before it.
#[test]
fn any_cut_synchronizes_at_the_next_isync() {
    let cfg = cortex_m();
    let (mut exact, mut trials) = (0, 0);
    for seed in 1..60u64 {
        let (bytes, packets) = stream(cfg, 60, 15, seed);
        let first_periodic = packets
            .iter()
            .skip(2)
            .find(|(_, p)| matches!(p, Packet::ISync(_)))
            .unwrap()
            .0 as usize;
        for cut in 7..first_periodic.min(7 + 40) {
            trials += 1;
            let (got, _) = items(cfg.with_isync_sync(true), &bytes[cut..], 16);
            let next = packets
                .iter()
                .position(|&(o, p)| o as usize >= cut && matches!(p, Packet::ISync(_)))
                .unwrap();
            let want: Vec<(u64, Packet)> = packets[next..]
                .iter()
                .map(|&(o, p)| (o - cut as u64, p))
                .collect();
            let got: Vec<(u64, Packet)> = got.into_iter().filter_map(Result::ok).collect();
            if got == want {
                exact += 1;
            } else if std::env::var("DBG").is_ok() {
                let early = got
                    .iter()
                    .filter(|(o, _)| (*o as usize) < (want[0].0 as usize))
                    .count();
                eprintln!(
                    "seed {seed} cut {cut}: {early} early, first {:?} want {:?}",
                    got.first(),
                    want.first()
                );
            }
        }
    }
    eprintln!("{exact} of {trials} cuts synchronized at the next I-sync");
    assert!(exact * 100 >= trials * 95, "{exact} of {trials}");
}
