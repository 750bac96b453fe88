use super::deformat::DiscardReason;
use super::*;
use proptest::prelude::*;

fn collect(d: &mut Deformatter, input: &[u8], chunk: usize) -> Vec<FrameEvent> {
    let mut out = Vec::new();
    for c in input.chunks(chunk.max(1)) {
        out.extend(d.feed(c));
    }
    out.extend(d.finish());
    out
}

/// Per-ID payload bytes with the offset of every byte.
fn per_id(events: &[FrameEvent]) -> Vec<(u8, Vec<u8>, Vec<u64>)> {
    let mut out: Vec<(u8, Vec<u8>, Vec<u64>)> = Vec::new();
    for e in events {
        if let FrameEvent::Data(run) = e {
            let entry = match out.iter_mut().position(|(id, _, _)| *id == run.id) {
                Some(i) => &mut out[i],
                None => {
                    out.push((run.id, Vec::new(), Vec::new()));
                    out.last_mut().expect("just pushed")
                }
            };
            entry.1.extend_from_slice(run.data());
            entry
                .2
                .extend((0..run.data().len() as u64).map(|k| run.offset + k));
        }
    }
    out.sort_by_key(|e| e.0);
    out
}

#[test]
fn immediate_and_delayed_id_changes() {
    // Frame: ID 0x10 (immediate), data 0xA1 at 1; even data 0xB2 at 2
    // (bit 0 in aux), 0xC3 at 3; at 4 an ID change to 0x11 that is
    // delayed, so 0xD4 at 5 still belongs to 0x10; then 0x11 has
    // 0xE6..: bytes 6..14.
    let mut f = [0u8; 16];
    f[0] = 0x21;
    f[1] = 0xA1;
    f[2] = 0xB2;
    f[3] = 0xC3;
    f[4] = 0x23;
    f[5] = 0xD4;
    for (i, b) in f.iter_mut().enumerate().take(15).skip(6) {
        *b = 0xE0 | i as u8;
    }
    // aux: bit 2 (byte 4) = delayed; bit 1 (byte 2) = bit 0 of 0xB2 = 0;
    // even data bytes 6, 8, .. 14 get bit 0 = 1 (bits 3..=7).
    f[15] = 0b1111_1100;
    let mut d = Deformatter::new(FrameMode::Memory);
    let ev = collect(&mut d, &f, 16);
    let ids = per_id(&ev);
    assert_eq!(ids[0].0, 0x10);
    assert_eq!(ids[0].1, vec![0xA1, 0xB2, 0xC3, 0xD4]);
    assert_eq!(ids[0].2, vec![1, 2, 3, 5]);
    assert_eq!(ids[1].0, 0x11);
    assert_eq!(
        ids[1].1,
        vec![0xE7, 0xE7, 0xE9, 0xE9, 0xEB, 0xEB, 0xED, 0xED, 0xEF]
    );
    assert_eq!(ids[1].2, (6..15).collect::<Vec<u64>>());
}

#[test]
fn opencsd_index_counts_from_the_id_change() {
    // 0x10 then, immediately at byte 6, 0x11: OpenCSD indexes 0x11's block
    // from byte 6 (the ID byte), one below the true offset of its data.
    let mut f = [0u8; 16];
    f[0] = 0x21;
    f[6] = 0x23;
    let mut d = Deformatter::new(FrameMode::Memory);
    let ev = collect(&mut d, &f, 16);
    let runs: Vec<Run> = ev
        .iter()
        .filter_map(|e| match e {
            FrameEvent::Data(r) => Some(*r),
            _ => None,
        })
        .collect();
    assert_eq!(runs.len(), 2);
    assert_eq!((runs[0].offset, runs[0].opencsd_index), (1, 0));
    assert_eq!((runs[1].offset, runs[1].opencsd_index), (7, 6));
}

#[test]
fn data_before_any_id_is_discarded_and_reported() {
    let mut f = [0u8; 16];
    f[0] = 0x40; // data, no ID seen yet
    f[10] = 0x21; // ID 0x10 from byte 10
    let mut d = Deformatter::new(FrameMode::Memory);
    let ev = collect(&mut d, &f, 16);
    let discarded: u64 = ev
        .iter()
        .filter_map(|e| match e {
            FrameEvent::Discarded {
                reason: DiscardReason::Unassigned,
                run,
            } => Some(run.data().len() as u64),
            _ => None,
        })
        .sum();
    assert_eq!(discarded, 10);
    assert_eq!(per_id(&ev)[0].1.len(), 4);
}

#[test]
fn null_and_reserved_ids_are_discarded() {
    let mut f = [0u8; 16];
    f[0] = 0x01; // null ID
    f[4] = (0x70 << 1) | 1; // reserved
    f[8] = 0x21;
    let mut d = Deformatter::new(FrameMode::Memory);
    let ev = collect(&mut d, &f, 16);
    let reasons: Vec<DiscardReason> = ev
        .iter()
        .filter_map(|e| match e {
            FrameEvent::Discarded { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, vec![DiscardReason::Null, DiscardReason::Reserved]);
}

#[test]
fn id_in_byte_14_takes_effect_in_the_next_frame() {
    let mut f = [0u8; 32];
    f[0] = 0x21;
    f[14] = 0x23;
    let mut d = Deformatter::new(FrameMode::Memory);
    let ev = collect(&mut d, &f, 32);
    let ids = per_id(&ev);
    assert_eq!(ids[0].1.len(), 13);
    assert_eq!(ids[1].0, 0x11);
    assert_eq!(ids[1].2.first(), Some(&16));
    assert_eq!(ids[1].1.len(), 15);
}

#[test]
fn truncated_frame_is_reported() {
    let mut d = Deformatter::new(FrameMode::Memory);
    let ev = collect(&mut d, &[0x21; 20], 7);
    assert_eq!(
        ev.last(),
        Some(&FrameEvent::Truncated { offset: 16, len: 4 })
    );
}

#[test]
fn continuous_mode_finds_alignment_and_removes_syncs() {
    let mut fmt = Formatter::new(FrameMode::Continuous);
    fmt.push(
        0x22,
        &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
    );
    let frames = fmt.finish();
    let mut input = vec![0x55, 0x13, 0x99];
    input.extend_from_slice(&frames[..8]);
    input.extend_from_slice(&HSYNC);
    input.extend_from_slice(&frames[8..]);
    let mut d = Deformatter::new(FrameMode::Continuous);
    let ev = collect(&mut d, &input, 5);
    assert_eq!(ev[0], FrameEvent::Unsynchronized { offset: 0, len: 3 });
    let ids = per_id(&ev);
    assert_eq!(ids[0].1, (1..=17).collect::<Vec<u8>>());
    assert_eq!(d.stats().hsyncs, 1);
    assert_eq!(d.stats().fsyncs, 1);
    // The byte after the half-word sync keeps its true offset.
    assert!(ids[0].2.windows(2).any(|w| w[1] == w[0] + 3));
}

#[test]
fn raw_mode_passes_bytes_through() {
    let mut d = Deformatter::new(FrameMode::Raw { id: 2 });
    let data: Vec<u8> = (0..100).collect();
    let ev = collect(&mut d, &data, 33);
    let ids = per_id(&ev);
    assert_eq!(ids, vec![(2, data.clone(), (0..100).collect())]);
}

fn segments() -> impl Strategy<Value = Vec<(u8, Vec<u8>)>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![0x01u8, 0x10, 0x11, 0x13, 0x6F]),
            prop::collection::vec(any::<u8>(), 1..40),
        ),
        1..30,
    )
}

proptest! {
    #[test]
    fn formatter_round_trip(segs in segments(), chunk in 1usize..64, continuous in any::<bool>()) {
        let mode = if continuous { FrameMode::Continuous } else { FrameMode::Memory };
        let mut fmt = Formatter::new(mode);
        let mut expected: Vec<(u8, Vec<u8>)> = Vec::new();
        for (id, data) in &segs {
            fmt.push(*id, data);
            match expected.iter_mut().find(|e| e.0 == *id) {
                Some(e) => e.1.extend_from_slice(data),
                None => expected.push((*id, data.clone())),
            }
        }
        expected.sort_by_key(|e| e.0);
        let frames = fmt.finish();
        let mut d = Deformatter::new(mode);
        let ev = collect(&mut d, &frames, chunk);
        let got: Vec<(u8, Vec<u8>)> = per_id(&ev).into_iter().map(|(id, b, _)| (id, b)).collect();
        prop_assert_eq!(got, expected);
        // Every offset handed on points at a byte of the input, none twice.
        let mut offs: Vec<u64> = per_id(&ev).into_iter().flat_map(|e| e.2).collect();
        offs.sort_unstable();
        let n = offs.len();
        offs.dedup();
        prop_assert_eq!(offs.len(), n);
        prop_assert!(offs.iter().all(|&o| (o as usize) < frames.len()));
    }

    #[test]
    fn chunking_does_not_change_events(data in prop::collection::vec(any::<u8>(), 0..300), chunk in 1usize..40) {
        for mode in [FrameMode::Memory, FrameMode::Continuous] {
            let whole = collect(&mut Deformatter::new(mode), &data, data.len().max(1));
            let parts = collect(&mut Deformatter::new(mode), &data, chunk);
            prop_assert_eq!(per_id(&whole), per_id(&parts));
        }
    }
}

/// Every event of `input` fed in chunks of `chunk` bytes through
/// [`Deformatter::feed_each`], then the end.
fn collect_each(d: &mut Deformatter, input: &[u8], chunk: usize) -> Vec<FrameEvent> {
    let mut out = Vec::new();
    for c in input.chunks(chunk.max(1)) {
        d.feed_each(c, |e| out.push(e));
    }
    out.extend(d.finish());
    out
}

proptest! {
    #[test]
    fn feed_each_gives_the_events_of_feed(
        data in prop::collection::vec(any::<u8>(), 0..600),
        chunk in 1usize..70,
        mode in 0usize..3,
    ) {
        let mode = [FrameMode::Memory, FrameMode::Continuous, FrameMode::Raw { id: 0x10 }][mode];
        let want = collect(&mut Deformatter::new(mode), &data, chunk);
        let got = collect_each(&mut Deformatter::new(mode), &data, chunk);
        prop_assert_eq!(got, want);
    }

    #[test]
    fn feed_each_gives_the_events_of_feed_on_formatted_trace(
        segs in segments(),
        chunk in 1usize..70,
    ) {
        let mut f = Formatter::new(FrameMode::Memory);
        for (id, bytes) in &segs {
            f.push(*id, bytes);
        }
        let frames = f.finish();
        let want = collect(&mut Deformatter::new(FrameMode::Memory), &frames, chunk);
        let got = collect_each(&mut Deformatter::new(FrameMode::Memory), &frames, chunk);
        prop_assert_eq!(got, want);
    }
}

/// Where an event's bytes start.
fn event_offset(e: &FrameEvent) -> u64 {
    match e {
        FrameEvent::Data(run) | FrameEvent::Discarded { run, .. } => run.offset,
        FrameEvent::Unsynchronized { offset, .. } | FrameEvent::Truncated { offset, .. } => *offset,
    }
}

proptest! {
    /// A deformatter resumed at any frame boundary, with the ID that
    /// `id_after` finds in the frames before, reports exactly the events
    /// that one deformatter of the whole input reports from there on.
    #[test]
    fn resuming_at_a_frame_boundary_gives_the_rest(
        data in prop::collection::vec(any::<u8>(), 0..400),
        frame in 0usize..26,
        chunk in 1usize..40,
    ) {
        let cut = (frame * FRAME_SIZE).min(data.len() / FRAME_SIZE * FRAME_SIZE);
        let whole = collect(&mut Deformatter::new(FrameMode::Memory), &data, chunk);
        let id = data[..cut]
            .chunks_exact(FRAME_SIZE)
            .rev()
            .find_map(|f| id_after(f.try_into().expect("a frame")));
        let mut resumed = Deformatter::resume_memory(cut as u64, id);
        let rest = collect(&mut resumed, &data[cut..], chunk);
        let want: Vec<FrameEvent> = whole
            .into_iter()
            .filter(|e| event_offset(e) >= cut as u64)
            .collect();
        prop_assert_eq!(rest, want);
    }
}

#[test]
fn continuous_mode_realigns_at_the_next_full_frame_sync_after_lost_bytes() {
    // Two memory-layout frames, each opening with its own ID change.
    let frame = |id: u8, first: u8| {
        let mut f = Formatter::new(FrameMode::Memory);
        let data: Vec<u8> = (first..first + 14).collect();
        f.push(id, &data);
        f.finish()
    };
    let (a, b) = (frame(0x10, 1), frame(0x11, 100));
    assert_eq!((a.len(), b.len()), (FRAME_SIZE, FRAME_SIZE));
    let fsync = [0xFF, 0xFF, 0xFF, 0x7F];
    // A TPIU stream: sync, frame a with its byte 5 lost, sync, frame b.
    let mut input = fsync.to_vec();
    input.extend_from_slice(&a[..5]);
    input.extend_from_slice(&a[6..]);
    input.extend_from_slice(&fsync);
    input.extend_from_slice(&b);
    for chunk in [1, 3, 7, 64] {
        let mut d = Deformatter::new(FrameMode::Continuous);
        let ev = collect(&mut d, &input, chunk);
        // The 15 bytes left of frame a and the first byte of the sync made
        // a frame, unpacked before the sync showed it misaligned (nothing
        // can tell them from a frame sooner); the frames after the sync
        // are aligned again. Frame b is unpacked whole at its true offsets.
        let ids = per_id(&ev);
        let got = ids.iter().find(|e| e.0 == 0x11).expect("frame b");
        assert_eq!(got.1, (100..114).collect::<Vec<u8>>());
        assert_eq!(got.2[0], 4 + 15 + 4 + 1);
        assert_eq!(d.stats().fsyncs, 2);
    }
}

#[test]
fn continuous_mode_reports_a_frame_cut_short_by_a_sync() {
    // Five bytes of a frame lost: the 11 left and the sync are fewer than
    // a frame, so the sync is found inside the frame under way, whose
    // bytes are reported, and the next frame is unpacked.
    let mut fa = Formatter::new(FrameMode::Memory);
    fa.push(0x10, &(1..15).collect::<Vec<u8>>());
    let a = fa.finish();
    let mut fb = Formatter::new(FrameMode::Memory);
    fb.push(0x11, &(100..114).collect::<Vec<u8>>());
    let b = fb.finish();
    let fsync = [0xFF, 0xFF, 0xFF, 0x7F];
    let mut input = fsync.to_vec();
    input.extend_from_slice(&a[5..]);
    input.extend_from_slice(&fsync);
    input.extend_from_slice(&b);
    let mut d = Deformatter::new(FrameMode::Continuous);
    let ev = collect(&mut d, &input, 5);
    assert_eq!(ev[0], FrameEvent::Unsynchronized { offset: 4, len: 11 });
    let ids = per_id(&ev);
    assert_eq!(ids.len(), 1);
    assert_eq!(ids[0].0, 0x11);
    assert_eq!(ids[0].1, (100..114).collect::<Vec<u8>>());
}
