//! Damaged perf.data files give clear errors, never a panic: every prefix
//! of a recording (a file cut in its features still reads, the features
//! cut off listed as unreadable), records with wrong sizes, AUX data
//! missing, an AUXTRACE_INFO shorter than it announces.

use trace_convert::input::perf::records::Body;
use trace_convert::input::perf::{PerfData, PerfError};
use trace_convert::input::{flags::SourceFlags, resolve, InputError};
use trace_encode::perf::{write_perf_data, AuxBuffer, AuxPiece, PerfSource, PerfSpec};

fn recording(piped: bool) -> Vec<u8> {
    write_perf_data(&PerfSpec {
        sources: vec![PerfSource {
            cpu: 0,
            trace_id: 0x10,
            etmcr: 0x1000,
            etmccer: 0,
            etmidr: 0x410C_F250,
        }],
        version: 1,
        hw_id_records: false,
        raw: true,
        piped,
        index: !piped,
        pid: 5,
        comm: "app".into(),
        mmaps: Vec::new(),
        tasks: Vec::new(),
        attr_config: None,
        buffers: vec![AuxBuffer {
            tid: None,
            cpu: None,
            pieces: vec![AuxPiece {
                data: vec![0, 0, 0, 0, 0, 0x80, 0x08, 0, 0x10, 0, 0],
                truncated: false,
            }],
        }],
    })
}

fn offset_of(perf: &PerfData, f: impl Fn(&Body) -> bool) -> usize {
    let r = perf.records.iter().find(|r| f(&r.body)).expect("record");
    usize::try_from(r.offset).expect("offset")
}

#[test]
fn every_prefix_is_an_error_or_reads() {
    for piped in [false, true] {
        let file = recording(piped);
        let whole = PerfData::parse(&file).expect("reads");
        for n in 0..file.len() {
            if let Ok(p) = PerfData::parse(&file[..n]) {
                if piped {
                    // Cut at a record boundary: fewer records.
                    assert!(p.records.len() < whole.records.len(), "prefix {n}");
                } else {
                    // Cut in the features: every record, the features cut
                    // off listed as unreadable.
                    let data_end = p.header.data.offset + p.header.data.size;
                    assert!(n as u64 >= data_end, "prefix {n}");
                    assert_eq!(p.records, whole.records);
                    assert!(!p.features.unreadable.is_empty(), "prefix {n}");
                }
            }
        }
    }
}

#[test]
fn wrong_sizes_and_missing_aux_data_are_named() {
    let file = recording(false);
    let perf = PerfData::parse(&file).expect("reads");
    // A record size smaller than its header.
    let at = offset_of(&perf, |b| matches!(b, Body::ItraceStart { .. }));
    let mut bad = file.clone();
    bad[at + 6..at + 8].copy_from_slice(&4u16.to_le_bytes());
    let e = PerfData::parse(&bad).expect_err("size 4");
    assert!(
        matches!(e, PerfError::Bad { offset, .. } if offset == at as u64),
        "{e}"
    );
    assert!(e.to_string().contains("smaller than its header"), "{e}");
    // A record size past the data section.
    let mut bad = file.clone();
    bad[at + 6..at + 8].copy_from_slice(&0xFFF0u16.to_le_bytes());
    let e = PerfData::parse(&bad).expect_err("size past the end");
    assert!(
        matches!(e, PerfError::Truncated { offset, .. } if offset == at as u64),
        "{e}"
    );
    // An AUXTRACE record announcing more trace than follows.
    let at = offset_of(&perf, |b| matches!(b, Body::Auxtrace(_)));
    let mut bad = file.clone();
    bad[at + 8..at + 16].copy_from_slice(&4096u64.to_le_bytes());
    let e = PerfData::parse(&bad).expect_err("missing AUX data");
    assert!(
        matches!(e, PerfError::MissingAuxData { size: 4096, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("AUX data is missing"), "{e}");
    // AUXTRACE_INFO announcing more CPUs than it describes.
    let at = offset_of(&perf, |b| matches!(b, Body::AuxtraceInfo { .. }));
    let mut bad = file.clone();
    bad[at + 24..at + 28].copy_from_slice(&3u32.to_le_bytes());
    let perf = PerfData::parse(&bad).expect("the records read");
    let e = perf.cs_etm.expect("info").1.expect_err("short");
    assert!(e.to_string().contains("end in CPU block 1"), "{e}");
    // Through the input: the file is named.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.data");
    std::fs::write(&path, &bad).expect("write");
    let e = resolve(&path, &SourceFlags::default()).expect_err("refused");
    assert!(matches!(e, InputError::Perf { .. }), "{e}");
    assert!(
        e.to_string().starts_with(&path.display().to_string()),
        "{e}"
    );
}

#[test]
fn a_file_cut_inside_its_data_says_where() {
    let file = recording(false);
    let h = PerfData::parse(&file).expect("reads").header;
    let cut = &file[..usize::try_from(h.data.offset + h.data.size - 8).expect("size")];
    let e = PerfData::parse(cut).expect_err("cut");
    assert!(matches!(e, PerfError::OutOfFile { .. }), "{e}");
    assert!(e.to_string().contains("lies outside the file"), "{e}");
}
