//! perf.data recordings made (with trace-encode's writer) from the real
//! captures of `../shared/testdata` decode exactly as their snapshots do:
//! the same events, at offsets moved by where the trace lies in the
//! perf.data file. Every layout perf writes is covered: per-thread and
//! per-CPU, header versions 0, 1 and 2 (trace IDs from AUX_OUTPUT_HW_ID),
//! with and without the AUXTRACE index, pipe mode, and AUX records with
//! the truncated flag after a wrap. Needs the shared test data: skips
//! without it, fails when CI is set.

use crate::perf_common::{decode, perf_events, spec_of, write};
use std::path::PathBuf;
use trace_convert::input::{flags::SourceFlags, resolve};
use trace_core::frames::FrameMode;
use trace_encode::perf::{insert_barrier, AuxBuffer, AuxPiece, PerfSpec};

/// The snapshots of every real capture.
pub fn snapshots() -> Option<Vec<PathBuf>> {
    let opencsd = test_support::opencsd_dir()?;
    let real = test_support::real_dir()?.join("am243x-r5f");
    let mut dirs = vec![opencsd.join("TC2"), opencsd.join("tc2-ptm-rstk-t32")];
    let mut r5: Vec<PathBuf> = std::fs::read_dir(&real)
        .expect("am243x-r5f")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("snapshot.ini").is_file())
        .collect();
    r5.sort();
    assert_eq!(r5.len(), 4, "the four Cortex-R5 captures");
    dirs.extend(r5);
    Some(dirs)
}

#[test]
fn recordings_of_real_captures_decode_as_their_snapshots() {
    let Some(dirs) = snapshots() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut total = 0usize;
    for dir in dirs {
        let input = resolve(&dir, &SourceFlags::default()).expect("snapshot");
        for (n, cap) in input.captures.iter().enumerate() {
            if cap.sources.is_empty() {
                continue;
            }
            let want = decode(&input, cap);
            let (spec, _) = spec_of(&input, cap);
            let path = write(tmp.path(), &format!("{n}.data"), &spec);
            let (perf, got) = perf_events(&path);
            assert_eq!(perf.captures.len(), 1, "{}: one piece", dir.display());
            assert_eq!(perf.captures[0].layout, cap.layout, "{}", dir.display());
            assert_eq!(
                got[0].len(),
                want.len(),
                "{} capture {n}: event count",
                dir.display()
            );
            assert!(
                got[0] == want,
                "{} capture {n}: events differ",
                dir.display()
            );
            total += want.len();
        }
    }
    assert!(total > 100_000, "{total} events compared");
}

/// Header versions 0, 1 and 2 (with AUX_OUTPUT_HW_ID), with and without
/// the index, piped, per-CPU: the same events.
#[test]
fn every_layout_decodes_the_same() {
    let Some(opencsd) = test_support::opencsd_dir() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    for dir in [opencsd.join("tc2-ptm-rstk-t32"), opencsd.join("TC2")] {
        let input = resolve(&dir, &SourceFlags::default()).expect("snapshot");
        let cap = input
            .captures
            .iter()
            .find(|c| !c.sources.is_empty())
            .expect("a capture");
        let want = decode(&input, cap);
        let (base, _) = spec_of(&input, cap);
        let mut variants = Vec::new();
        for version in [0, 1, 2] {
            let mut v = PerfSpec {
                version,
                hw_id_records: version == 2,
                ..base.clone()
            };
            // AUX_OUTPUT_HW_ID records name their CPU in their samples:
            // a per-CPU recording.
            if version == 2 {
                for b in &mut v.buffers {
                    b.cpu = Some(0);
                }
            }
            variants.push(v);
        }
        variants.push(PerfSpec {
            index: false,
            ..base.clone()
        });
        variants.push(PerfSpec {
            piped: true,
            index: false,
            ..base.clone()
        });
        let mut per_cpu = base.clone();
        for b in &mut per_cpu.buffers {
            b.cpu = Some(0);
        }
        variants.push(per_cpu);
        for (i, v) in variants.iter().enumerate() {
            let path = write(tmp.path(), &format!("v{i}.data"), v);
            let (_, got) = perf_events(&path);
            assert_eq!(got.len(), 1, "variant {i}");
            assert!(
                got[0] == want,
                "{}: variant {i} decodes differently",
                dir.display()
            );
        }
    }
}

/// A buffer that wrapped: its AUX record has the truncated flag and its
/// data starts with the drivers' barrier. The decoders start again there
/// (its events are those of the piece decoded alone) and a note reports
/// the loss.
#[test]
fn a_wrapped_buffer_restarts_the_decoders_and_is_reported() {
    let Some(opencsd) = test_support::opencsd_dir() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let input = resolve(&opencsd.join("TC2"), &SourceFlags::default()).expect("snap");
    let cap = input
        .captures
        .iter()
        .find(|c| !c.sources.is_empty())
        .expect("a capture");
    let (mut spec, bytes) = spec_of(&input, cap);
    assert!(
        matches!(cap.layout, FrameMode::Memory),
        "a formatted capture"
    );
    let half = (bytes.len() / 2) & !15;
    let first = bytes[..half].to_vec();
    let mut second = bytes[half..].to_vec();
    insert_barrier(&mut second);
    spec.buffers = vec![AuxBuffer {
        tid: None,
        cpu: None,
        pieces: vec![
            AuxPiece {
                data: first.clone(),
                truncated: false,
            },
            AuxPiece {
                data: second.clone(),
                truncated: true,
            },
        ],
    }];
    let path = write(tmp.path(), "wrapped.data", &spec);
    let (perf, got) = perf_events(&path);
    assert_eq!(got.len(), 2, "two pieces");
    let notes = &perf.snapshot.as_ref().expect("notes").notes;
    assert_eq!(
        notes.iter().filter(|n| n.contains("wrapped")).count(),
        1,
        "{notes:?}"
    );
    // Each piece alone, as a recording of its own.
    for (i, piece) in [first, second].into_iter().enumerate() {
        let mut alone = spec.clone();
        alone.buffers = vec![AuxBuffer {
            tid: None,
            cpu: None,
            pieces: vec![AuxPiece {
                data: piece,
                truncated: false,
            }],
        }];
        let p = write(tmp.path(), &format!("alone{i}.data"), &alone);
        let (_, want) = perf_events(&p);
        assert!(!want[0].is_empty(), "piece {i} has events");
        assert!(got[i] == want[0], "piece {i} decodes as alone");
    }
}
