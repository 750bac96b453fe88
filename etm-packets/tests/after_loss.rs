//! What the parser trusts after packets were lost: timestamps are unknown
//! until the next A-sync, where the compression bases start afresh.
#![allow(clippy::unwrap_used)]

use etm_packets::{Config, Encoder, ISync, Isa, Packet, Parser, Reason, Timestamp};

/// ETMv3.5 with 64-bit natural binary timestamps (TC2's Cortex-A7 ETMs).
fn cfg() -> Config {
    Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250).unwrap()
}

fn bytes(packets: &[Packet]) -> Vec<u8> {
    let mut enc = Encoder::new(cfg());
    let mut out = Vec::new();
    let mut buf = [0u8; 32];
    for p in packets {
        let n = enc.encode(p, &mut buf).unwrap();
        out.extend_from_slice(&buf[..n]);
    }
    out
}

fn ts(value: u64) -> Packet {
    Packet::Timestamp(Timestamp {
        value,
        bits: 0,
        clock_changed: false,
    })
}

fn timestamps(p: &mut Parser, bytes: &[u8]) -> Vec<u64> {
    p.feed(bytes)
        .filter_map(|i| match i {
            Ok((_, Packet::Timestamp(t))) => Some(t.value),
            _ => None,
        })
        .collect()
}

#[test]
fn timestamps_after_a_loss_are_unknown_until_the_next_async() {
    let isync = Packet::ISync(ISync::new(0x8000, Isa::Arm, Reason::Periodic));
    // A-sync, I-sync, two timestamps (the second compressed against the
    // first).
    let first = bytes(&[Packet::ASync, isync, ts(0x1234_5678), ts(0x1234_5699)]);
    let mut p = Parser::new(cfg());
    assert_eq!(timestamps(&mut p, &first), [0x1234_5678, 0x1234_5699]);
    // A loss: the next timestamp may come from damaged bytes or complete
    // a base they changed.
    p.note_loss();
    let later = bytes(&[ts(0x1234_56AA)]);
    let got = timestamps(&mut p, &later[..]);
    assert_eq!(got, [0]);
    // At the next A-sync the base starts afresh: the encoder (which knows
    // nothing of the loss) sends the timestamp after it in full.
    let resync = bytes(&[Packet::ASync, isync, ts(0x1234_56BB)]);
    assert_eq!(timestamps(&mut p, &resync), [0x1234_56BB]);
    // Without a loss nothing changes.
    let mut q = Parser::new(cfg());
    let mut all = first.clone();
    all.extend_from_slice(&resync);
    assert_eq!(
        timestamps(&mut q, &all),
        [0x1234_5678, 0x1234_5699, 0x1234_56BB]
    );
}
