//! The deformatter on TC2's real ETB capture, checked against the offsets
//! OpenCSD v1.8.0 printed for it.

use std::collections::{HashMap, HashSet};
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};

#[test]
fn every_opencsd_packet_index_is_a_byte_of_its_source() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let capture = std::fs::read(dir.join("TC2/cstrace.bin")).expect("read capture");
    let listing = std::fs::read_to_string(dir.join("expected/TC2.ppl")).expect("read listing");

    let mut d = Deformatter::new(FrameMode::Memory);
    let mut indices: HashMap<u8, HashSet<u64>> = HashMap::new();
    let mut payload = 0usize;
    for ev in d.feed(&capture) {
        if let FrameEvent::Data(run) = ev {
            payload += run.data().len();
            let set = indices.entry(run.id).or_default();
            set.extend((0..run.data().len() as u64).map(|k| run.opencsd_index + k));
        }
    }
    assert_eq!(d.finish().next(), None, "the buffer holds whole frames");
    assert_eq!(d.stats().frames, 2048);
    assert!(payload > 28_000);

    let mut checked = 0;
    for line in listing.lines() {
        let Some(rest) = line.strip_prefix("Idx:") else {
            continue;
        };
        if line.contains("NOTSYNC") {
            continue;
        }
        let (idx, rest) = rest.split_once("; ID:").expect("Idx line");
        let id = rest.split(';').next().expect("ID field");
        let idx: u64 = idx.parse().expect("decimal Idx");
        let id = u8::from_str_radix(id, 16).expect("hex ID");
        assert!(
            indices.get(&id).is_some_and(|s| s.contains(&idx)),
            "Idx {idx} of ID {id:#x} is not a byte of that source: {line}"
        );
        checked += 1;
    }
    // 8707 + 8517 + 2266 ETMv3 packets and 1789 PTM packets.
    assert_eq!(checked, 8707 + 8517 + 2266 + 1789);
}
