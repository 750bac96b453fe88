//! A parser started at an A-sync part-way through a real stream (the TC2
//! capture's trace ID 0x10, ETMv3.5 with timestamps) reaches the state of
//! the parser of the whole stream once it has parsed an I-sync and been
//! given the timestamp base, and from then on returns the same items.
#![allow(clippy::unwrap_used)]

use etm_packets::{Config, Packet, Parser};
use test_support::opencsd_dir;
use test_support::opencsd_frames::deformat;

#[test]
fn a_parser_started_at_an_a_sync_joins_the_whole_streams_state() {
    let Some(dir) = opencsd_dir() else { return };
    let data = std::fs::read(dir.join("TC2/cstrace.bin")).unwrap();
    let bytes: Vec<u8> = deformat(&data)[&0x10].iter().map(|&(_, b)| b).collect();
    let cfg = Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250).unwrap();
    let syncs: Vec<usize> = bytes
        .windows(6)
        .enumerate()
        .filter(|(_, w)| *w == [0, 0, 0, 0, 0, 0x80])
        .map(|(i, _)| i)
        .collect();
    assert!(syncs.len() > 3);
    let mut timestamps_differed = false;
    for &p in &syncs[1..] {
        let mut whole = Parser::new(cfg);
        whole.feed(&bytes[..p]).for_each(drop);
        assert!(!Parser::new(cfg).same_state(&whole));
        // Byte by byte until the fresh parser has returned an I-sync.
        let mut part = Parser::new(cfg);
        let mut q = p;
        loop {
            whole.feed(&bytes[q..=q]).for_each(drop);
            let isync = part
                .feed_at(q as u64, &bytes[q..=q])
                .any(|i| matches!(i, Ok((_, Packet::ISync(_)))));
            q += 1;
            if isync {
                break;
            }
        }
        if !part.same_state(&whole) {
            timestamps_differed = true;
            part.set_timestamp(whole.timestamp());
        }
        assert!(part.same_state(&whole), "A-sync at {p}");
        assert_eq!(part.timestamp(), whole.timestamp());
        let a: Vec<_> = whole.feed(&bytes[q..]).collect();
        let b: Vec<_> = part.feed(&bytes[q..]).collect();
        assert_eq!(a, b);
        assert_eq!(whole.finish(), part.finish());
    }
    assert!(
        timestamps_differed,
        "the fresh parsers' timestamp bases were right"
    );
}
