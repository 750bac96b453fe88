//! A parser started at an A-sync part-way through a real stream (the raw
//! PTM capture of tc2-ptm-rstk-t32) reaches the state of the parser of the
//! whole stream once it has parsed an I-sync, and from then on returns the
//! same items; the timestamp base can be read and set.
#![allow(clippy::unwrap_used)]

use ptm_packets::{Config, Packet, Parser};

#[test]
fn a_parser_started_at_an_a_sync_joins_the_whole_streams_state() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let bytes = std::fs::read(dir.join("tc2-ptm-rstk-t32/PTM_0_2.bin")).unwrap();
    let cfg = Config::from_regs(0x2000_0400, 0x34C0_1AC2, 0x411C_F312).unwrap();
    let syncs: Vec<usize> = bytes
        .windows(6)
        .enumerate()
        .filter(|(_, w)| *w == [0, 0, 0, 0, 0, 0x80])
        .map(|(i, _)| i)
        .collect();
    assert!(syncs.len() > 3);
    for &p in &syncs[1..] {
        let mut whole = Parser::new(cfg);
        whole.feed(&bytes[..p]).for_each(drop);
        assert!(!Parser::new(cfg).same_state(&whole));
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
        part.set_timestamp(whole.timestamp());
        assert!(part.same_state(&whole), "A-sync at {p}");
        // Another timestamp base is another state.
        part.set_timestamp(whole.timestamp() ^ (1 << 40));
        assert!(!part.same_state(&whole));
        part.set_timestamp(whole.timestamp());
        let a: Vec<_> = whole.feed(&bytes[q..]).collect();
        let b: Vec<_> = part.feed(&bytes[q..]).collect();
        assert_eq!(a, b);
        assert_eq!(whole.finish(), part.finish());
    }
}
