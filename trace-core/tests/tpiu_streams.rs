//! The deformatter on real TPIU streams captured without full-frame syncs
//! (`../shared/testdata/real`, see its PROVENANCE.md), and on TC2's
//! formatted buffer read as a TPIU stream from every starting byte.

use trace_core::frames::{DeformatStats, Deformatter, FrameEvent, FrameMode};

fn read(rel: &str) -> Option<Vec<u8>> {
    let dir = test_support::real_dir()?;
    let path = dir.join(rel);
    Some(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Every event of `bytes` deformatted as a TPIU stream, fed in `chunk`s.
fn deformat(bytes: &[u8], chunk: usize) -> (Vec<FrameEvent>, DeformatStats) {
    let mut d = Deformatter::new(FrameMode::Continuous);
    let mut ev = Vec::new();
    for c in bytes.chunks(chunk) {
        d.feed_each(c, |e| ev.push(e));
    }
    ev.extend(d.finish());
    (ev, d.stats())
}

/// The skipped stretches, as (offset, length).
fn skipped(ev: &[FrameEvent]) -> Vec<(u64, u64)> {
    ev.iter()
        .filter_map(|e| match e {
            FrameEvent::Unsynchronized { offset, len } => Some((*offset, *len)),
            _ => None,
        })
        .collect()
}

/// One source's bytes, each with its offset.
fn source(ev: &[FrameEvent], id: u8) -> Vec<(u64, u8)> {
    ev.iter()
        .filter_map(|e| match e {
            FrameEvent::Data(run) if run.id == id => Some(run),
            _ => None,
        })
        .flat_map(|run| (run.offset..).zip(run.data().iter().copied()))
        .collect()
}

/// The ITM packets of one source's bytes: (packets, errors).
fn itm(bytes: &[(u64, u8)]) -> (usize, Vec<itm_packets::Error>) {
    let mut p = itm_packets::Parser::new(itm_packets::Config::new().with_aligned_start(true));
    let (mut n, mut errors) = (0, Vec::new());
    for &(off, b) in bytes {
        for item in p.feed_at(off, &[b]) {
            match item {
                Ok(_) => n += 1,
                Err(e) => errors.push(e),
            }
        }
    }
    errors.extend(p.finish());
    (n, errors)
}

/// The STM32F407 bubble-sort capture: the frames start 4 bytes in (its
/// PROVENANCE; the author told sigrok `sync_offset=5`), the ETM is trace
/// ID 0x0A, and nothing realigns. The last 9 bytes are a frame cut short.
#[test]
fn bubble_sort_frames_start_four_bytes_in() {
    let Some(bytes) = read("stm32f407-swo/bubble-sort/swo.bin") else {
        return;
    };
    for chunk in [1, 7, 4096] {
        let (ev, stats) = deformat(&bytes, chunk);
        assert_eq!(skipped(&ev), [(0, 4)]);
        assert_eq!(stats.aligned_at, Some(4));
        assert_eq!(stats.realignments, 0);
        assert_eq!(stats.frames, (bytes.len() as u64 - 4) / 16);
        assert_eq!(
            ev.last(),
            Some(&FrameEvent::Truncated {
                offset: 4 + 16 * stats.frames,
                len: 9
            })
        );
        assert!(ev
            .iter()
            .all(|e| !matches!(e, FrameEvent::Data(run) if run.id != 0x0A)));
        assert_eq!(source(&ev, 0x0A).len(), 6299);
    }
}

/// The STM32 ITM + DWT SWO stream: its frames start 1 byte in and a
/// stray `0xFF` at offset 33 moves them by one (its PROVENANCE: stray
/// `0xFF` bytes move the alignment). The two frames before the stray byte
/// fit a frame one byte later as well (ID 0x0B, which no source uses,
/// the `0xFF` as their last auxiliary byte): they are read so, and from
/// offset 34 on the frames are the ITM's and null padding. The ITM's bytes
/// (trace ID 1) then parse as ITM packets without a single error but the
/// packet the capture's end cuts short.
#[test]
fn stm32_itm_stream_is_aligned_from_its_second_byte() {
    let Some(bytes) = read("stm32-itm-etm-swo/etm_itm_tpiu.bin") else {
        return;
    };
    for chunk in [3, 4096] {
        let (ev, stats) = deformat(&bytes, chunk);
        assert_eq!(skipped(&ev), [(0, 2)]);
        assert_eq!(bytes[33], 0xFF);
        assert_eq!((stats.realignments, stats.aligned_at), (0, Some(2)));
        assert!(ev.iter().all(|e| !matches!(e, FrameEvent::Data(run)
            if run.id != 1 && !(run.id == 0x0B && run.end() <= 34))));
        let itm_bytes = source(&ev, 1);
        let (packets, errors) = itm(&itm_bytes);
        // Only the packet the capture's end cuts short (in the frame it
        // cuts short) is incomplete.
        let last_frame_end = bytes.len() as u64 - 14;
        assert!(
            matches!(errors[..], [e] if matches!(e.kind, itm_packets::ErrorKind::Truncated { .. })
                && e.offset >= last_frame_end - 16),
            "{errors:?}"
        );
        assert!(packets > 10_000, "{packets}");
        // Every other byte after the first frames is null-ID padding.
        for e in &ev {
            if let FrameEvent::Discarded { run, .. } = e {
                assert!(
                    run.offset < 34 || run.data().iter().all(|&b| b == 0),
                    "{run:?}"
                );
            }
        }
    }
}

/// TC2's ETB buffer (four sources, no syncs) read as a TPIU stream from
/// each of its first 16 bytes: the frames are found, and every source byte
/// handed on is the one the memory-layout deformatter finds there.
#[test]
fn tc2_buffer_read_as_a_tpiu_stream_from_any_byte() {
    let Some(bytes) = test_support::read_opencsd("TC2/cstrace.bin") else {
        return;
    };
    let mut d = Deformatter::new(FrameMode::Memory);
    let memory: Vec<FrameEvent> = d.feed(&bytes).collect();
    let truth: std::collections::HashMap<u64, (u8, u8)> = memory
        .iter()
        .filter_map(|e| match e {
            FrameEvent::Data(run) => Some(run),
            _ => None,
        })
        .flat_map(|run| (run.offset..).zip(run.data().iter().map(move |&b| (run.id, b))))
        .collect();
    for start in 0..16 {
        let (ev, stats) = deformat(&bytes[start..], 4096);
        assert_eq!(stats.realignments, 0, "from byte {start}");
        // The partial first frame is skipped, and at most one whole frame
        // more when its bytes fit a frame at another position as well.
        let skip = (16 - start as u64) % 16;
        match skipped(&ev)[..] {
            [] => assert_eq!(skip, 0),
            [(0, len)] => assert!(
                len % 16 == skip && len <= skip + 16,
                "from byte {start}: {len}"
            ),
            ref other => panic!("from byte {start}: {other:?}"),
        }
        let mut found = 0;
        for e in &ev {
            if let FrameEvent::Data(run) = e {
                for (k, &b) in run.data().iter().enumerate() {
                    let at = run.offset + k as u64 + start as u64;
                    assert_eq!(truth.get(&at), Some(&(run.id, b)), "from byte {start}");
                    found += 1;
                }
            }
        }
        // Lost: the frames skipped, and data before the first ID change
        // after them (whose source is unknown).
        assert!(
            found * 100 >= truth.len() * 99,
            "from byte {start}: {found} of {}",
            truth.len()
        );
    }
}
