//! Inputs found by the fuzz targets in `fuzz/` (see docs/testing.md, "Fuzzing"
//! section), kept as regression tests.

use trace_core::frames::{Deformatter, FrameEvent, FrameMode};

/// `deformatter` target: in raw mode the deformatter handed every byte on
/// as data and then, at `finish`, also reported all of them as
/// unsynchronized (raw input was treated as never having found frame
/// alignment). Fuzz input `02 13 00 aa`: raw mode, ID 0x13, one byte.
#[test]
fn raw_mode_finish_reports_nothing() {
    for data in [&[0xAAu8][..], &[0, 0, 0, 0, 0, 0x80, 0x08, 0x54]] {
        let mut d = Deformatter::new(FrameMode::Raw { id: 0x13 });
        let events: Vec<FrameEvent> = d.feed(data).collect();
        assert!(events
            .iter()
            .all(|e| matches!(e, FrameEvent::Data(r) if r.id == 0x13)));
        assert_eq!(d.finish().next(), None);
        assert_eq!(d.stats().bytes, data.len() as u64);
    }
    let mut d = Deformatter::new(FrameMode::Raw { id: 0x13 });
    assert_eq!(d.finish().next(), None);
}
