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

/// A large chunk fed at once: `feed`'s iterator unpacks a few frames at a
/// time, so its queue stays small on frames of garbage, where nearly every
/// other byte starts a run (the events are those of `feed_each`).
#[test]
fn feed_queues_a_few_frames_at_a_time() {
    let mut rng = test_support::Rng(0x9E37_79B9_7F4A_7C15);
    let data: Vec<u8> = (0..64 << 10)
        .map(|_| (rng.next_u64() >> 32) as u8)
        .collect();
    for mode in [FrameMode::Memory, FrameMode::Continuous] {
        let mut d = Deformatter::new(mode);
        let got = collect(&mut d, &data, data.len());
        assert!(got.len() > 8 << 10, "{mode:?}: {} events", got.len());
        // 256 frames of at most 8 runs each, in a vector that doubles.
        assert!(d.queue_room() <= 4096, "{mode:?}: {}", d.queue_room());
        let want = collect_each(&mut Deformatter::new(mode), &data, data.len());
        assert_eq!(got, want, "{mode:?}");
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

/// A stream of ETMv3-like bytes: mostly P-headers (`1xxxxxx0`), some
/// branch addresses (an odd header, continuation bytes with bit 7 set),
/// now and then an A-sync.
fn etm_like(rng: &mut test_support::Rng, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        match rng.below(16) {
            0 => out.extend_from_slice(&[0, 0, 0, 0, 0, 0x80]),
            1..=4 => {
                out.push((rng.below(64) as u8) << 1 | 1);
                let n = rng.below(4);
                for _ in 0..n {
                    out.push(0x80 | rng.below(128) as u8);
                }
                out.push(rng.below(128) as u8);
            }
            _ => out.push(0x80 | (rng.below(64) as u8) << 1),
        }
    }
    out
}

/// A TPIU stream made from formatter frames: its bytes and, for each, the
/// offset in the frames it came from (`None` for syncs and stray bytes).
struct Tpiu {
    bytes: Vec<u8>,
    origin: Vec<Option<u64>>,
}

impl Tpiu {
    /// `frames` with a full-frame sync before every `sync_every`th frame
    /// (never with 0), from byte `start` on.
    fn new(frames: &[u8], sync_every: usize, start: usize) -> Self {
        let mut t = Tpiu {
            bytes: Vec::new(),
            origin: Vec::new(),
        };
        for (i, f) in frames.chunks(FRAME_SIZE).enumerate() {
            if sync_every > 0 && i % sync_every == 0 {
                t.bytes.extend_from_slice(&FSYNC);
                t.origin.extend([None; 4]);
            }
            t.bytes.extend_from_slice(f);
            t.origin
                .extend((0..f.len()).map(|k| Some((i * FRAME_SIZE + k) as u64)));
        }
        t.bytes.drain(..start.min(t.bytes.len()));
        t.origin.drain(..start.min(t.origin.len()));
        t
    }

    /// Inserts `n` stray bytes at `at`.
    fn insert(&mut self, at: usize, stray: &[u8]) {
        let at = at.min(self.bytes.len());
        self.bytes.splice(at..at, stray.iter().copied());
        self.origin.splice(at..at, stray.iter().map(|_| None));
    }

    /// Loses `n` bytes at `at`.
    fn lose(&mut self, at: usize, n: usize) {
        let at = at.min(self.bytes.len());
        let end = (at + n).min(self.bytes.len());
        self.bytes.drain(at..end);
        self.origin.drain(at..end);
    }
}

/// Every source byte of `frames` (memory layout): offset -> (ID, byte).
fn truth(frames: &[u8]) -> std::collections::HashMap<u64, (u8, u8)> {
    let mut d = Deformatter::new(FrameMode::Memory);
    let ev = collect(&mut d, frames, 4096);
    let mut map = std::collections::HashMap::new();
    for e in ev {
        if let FrameEvent::Data(run) = e {
            for (k, &b) in run.data().iter().enumerate() {
                map.insert(run.offset + k as u64, (run.id, b));
            }
        }
    }
    map
}

/// Deformats `t` in continuous mode: (source bytes found where the frames
/// put them, bytes handed on that the frames do not hold there, events).
fn score(
    t: &Tpiu,
    truth: &std::collections::HashMap<u64, (u8, u8)>,
    chunk: usize,
) -> (usize, usize, Vec<FrameEvent>, DeformatStats) {
    let mut d = Deformatter::new(FrameMode::Continuous);
    let ev = collect(&mut d, &t.bytes, chunk);
    let (mut good, mut junk) = (0, 0);
    for e in &ev {
        if let FrameEvent::Data(run) = e {
            for (k, &b) in run.data().iter().enumerate() {
                let at = run.offset as usize + k;
                match t.origin[at].and_then(|o| truth.get(&o)) {
                    Some(&(id, byte)) if id == run.id && byte == b => good += 1,
                    _ => junk += 1,
                }
            }
        }
    }
    (good, junk, ev, d.stats())
}

/// Formatter frames of 1 to 4 sources of ETMv3-like bytes; with `bursts`,
/// each burst of one source flushed to a frame end with null-ID padding.
fn etm_frames(rng: &mut test_support::Rng, len: usize, bursts: bool) -> Vec<u8> {
    let ids = [0x10u8, 0x11, 0x12, 0x13, 0x01, 0x22];
    let n = 1 + rng.below(4);
    let mut f = Formatter::new(FrameMode::Memory);
    let mut total = 0;
    while total < len {
        let id = ids[rng.below(n)];
        let n_bytes = 1 + rng.below(60);
        let data = etm_like(rng, n_bytes);
        total += data.len();
        f.push(id, &data);
        if bursts {
            f.flush();
        }
    }
    f.finish()
}

/// Damages `t` `n` times at random points: 1 to 3 stray bytes (half of
/// them `0xFF`, as a UART receiver adds) or 1 to 15 lost bytes.
fn damage(t: &mut Tpiu, rng: &mut test_support::Rng, n: usize) {
    for _ in 0..n {
        let at = rng.below(t.bytes.len().max(1));
        if rng.below(2) == 0 {
            let k = 1 + rng.below(3);
            let stray: Vec<u8> = (0..k)
                .map(|_| {
                    let (any, ff) = (rng.below(256) as u8, rng.below(2) == 0);
                    if ff {
                        0xFF
                    } else {
                        any
                    }
                })
                .collect();
            t.insert(at, &stray);
        } else {
            t.lose(at, 1 + rng.below(15));
        }
    }
}

/// Streams as a SWO probe or a logic analyser delivers them from a TPIU
/// whose formatter flushes each burst with null-ID padding (the STM32
/// captures look so), of 1 to 4 ETMv3-like sources, starting anywhere,
/// without syncs or with a full-frame sync every 16 frames, with 0 to 3
/// stray or lost stretches: nearly every source byte comes back where the
/// frames put it, and hardly any byte is handed on that the frames do not
/// hold there.
#[test]
fn swo_streams_with_stray_and_lost_bytes_are_realigned() {
    let mut rng = test_support::Rng(0x0005_EED0_F5A0);
    let (mut clean, mut damaged) = ([0usize; 3], [0usize; 3]);
    for _ in 0..200 {
        let frames = etm_frames(&mut rng, 3000, true);
        let truth = truth(&frames);
        let sync = [0, 0, 16][rng.below(3)];
        let mut t = Tpiu::new(&frames, sync, rng.below(40));
        let n = rng.below(4);
        damage(&mut t, &mut rng, n);
        let (good, junk, _, _) = score(&t, &truth, 1 + rng.below(5000));
        let sums = if n == 0 { &mut clean } else { &mut damaged };
        sums[0] += good;
        sums[1] += junk;
        sums[2] += truth.len();
    }
    let share = |s: [usize; 3], i: usize| s[i] as f64 / s[2] as f64;
    eprintln!(
        "clean: {:.4} found, {:.4} wrong; damaged: {:.4} found, {:.4} wrong",
        share(clean, 0),
        share(clean, 1),
        share(damaged, 0),
        share(damaged, 1)
    );
    assert!(share(clean, 0) > 0.97 && share(clean, 1) < 0.003);
    assert!(share(damaged, 0) > 0.93 && share(damaged, 1) < 0.03);
}

proptest! {
    /// Every input byte is accounted for in continuous mode: in a frame,
    /// a sync, a skipped stretch or the truncated end.
    #[test]
    fn continuous_mode_accounts_for_every_byte(
        segs in segments(),
        garbage in prop::collection::vec(any::<u8>(), 0..64),
        at in any::<usize>(),
        start in 0usize..20,
        chunk in 1usize..600,
        sync in any::<bool>(),
    ) {
        let mut f = Formatter::new(if sync { FrameMode::Continuous } else { FrameMode::Memory });
        for (id, data) in &segs {
            f.push(*id, data);
        }
        let mut bytes = f.finish();
        let at = at % (bytes.len() + 1);
        bytes.splice(at..at, garbage);
        let bytes = &bytes[start.min(bytes.len())..];
        let mut d = Deformatter::new(FrameMode::Continuous);
        let ev = collect(&mut d, bytes, chunk);
        let s = d.stats();
        let truncated: u64 = ev.iter().map(|e| match e { FrameEvent::Truncated { len, .. } => *len, _ => 0 }).sum();
        let skipped: u64 = ev.iter().map(|e| match e { FrameEvent::Unsynchronized { len, .. } => *len, _ => 0 }).sum();
        prop_assert_eq!(skipped, s.skipped);
        prop_assert_eq!(
            s.bytes,
            16 * s.frames + 4 * s.fsyncs + 2 * s.hsyncs + s.skipped + truncated,
            "{:?}", s
        );
        prop_assert_eq!(s.bytes, bytes.len() as u64);
    }
}

/// Whatever comes in, the deformatter holds at most a search window and a
/// frame of it.
#[test]
fn continuous_mode_holds_a_bounded_amount() {
    let mut rng = test_support::Rng(0xB0B0_CAFE);
    for kind in 0..3 {
        let mut d = Deformatter::new(FrameMode::Continuous);
        let mut most = 0;
        for _ in 0..400 {
            let chunk: Vec<u8> = (0..rng.below(700))
                .map(|_| match kind {
                    0 => rng.below(256) as u8,
                    1 => [0xFF, 0x7F, 0x01, 0x00][rng.below(4)],
                    _ => (rng.below(128) as u8) << 1,
                })
                .collect();
            d.feed_each(&chunk, |_| {});
            most = most.max(d.held());
        }
        assert!(
            most <= super::align::MAX_WINDOW + FRAME_SIZE,
            "kind {kind}: {most}"
        );
        let _: Vec<FrameEvent> = d.finish().collect();
        assert_eq!(d.held(), 0);
    }
}

/// A search of a window that extends the last one goes on from the last
/// one's tables: it decides what a search of the whole window from the
/// start decides, at every size the deformatter asks for (the window
/// grows by [`align::WINDOW`] up to [`align::MAX_WINDOW`]), on frames
/// with and without damage, random bytes and runs of sync bytes.
#[test]
fn a_grown_search_decides_as_a_search_from_the_start() {
    use super::align::{IdState, Search, Window, MAX_WINDOW, WINDOW};
    let mut rng = test_support::Rng(0x6E0_0001);
    for case in 0..24 {
        let bytes: Vec<u8> = match case % 4 {
            0 => (0..MAX_WINDOW).map(|_| rng.below(256) as u8).collect(),
            1 => (0..MAX_WINDOW)
                .map(|_| [0xFF, 0x7F, 0x01, 0x00, 0x03][rng.below(5)])
                .collect(),
            _ => {
                let frames = etm_frames(&mut rng, MAX_WINDOW, case % 4 == 2);
                let mut t = Tpiu::new(&frames, 0, rng.below(40));
                let n = rng.below(4);
                damage(&mut t, &mut rng, n);
                t.bytes
            }
        };
        let st = IdState {
            cur: [None, Some(0x10)][case % 2],
            known: [0, 1 << 0x10][case % 2],
        };
        let window = |len: usize, last: bool| Window {
            buf: &bytes[..len.min(bytes.len())],
            offset: 1000 + case as u64,
            st,
            leading: case % 3 == 0,
            last,
        };
        let mut grown = Search::default();
        let mut len = WINDOW;
        loop {
            let last = len >= bytes.len();
            let w = window(len, last);
            let (a, b) = (grown.run(&w), Search::default().run(&w));
            assert_eq!(
                (&a.steps, a.st),
                (&b.steps, b.st),
                "case {case}, {len} bytes"
            );
            if !a.steps.is_empty() || last {
                break;
            }
            len += WINDOW;
        }
    }
}

/// Bytes that are no trace at all go through the alignment search: each
/// byte is looked at a bounded number of times (1.3 for random bytes; a
/// window that grows is searched on from the last search's tables, not
/// again from its start).
#[test]
fn random_bytes_are_searched_a_bounded_number_of_times() {
    let mut rng = test_support::Rng(0x5EA7_C4ED);
    let bytes: Vec<u8> = (0..256 << 10).map(|_| rng.below(256) as u8).collect();
    let mut d = Deformatter::new(FrameMode::Continuous);
    d.feed_each(&bytes, |_| {});
    let searched = d.searched();
    let _: Vec<FrameEvent> = d.finish().collect();
    assert_eq!(d.stats().bytes, bytes.len() as u64);
    eprintln!("{searched} positions searched for {} bytes", bytes.len());
    assert!(
        searched < 2 * bytes.len(),
        "{searched} positions searched for {} bytes",
        bytes.len()
    );
}
