//! decode(encode(flow)) == flow: every instruction (address, instruction
//! set, size), every atom the trace carries, every exception (number and
//! preferred return address) and exception return, for every option
//! combination; and the encoded bytes parse with no error and no skipped
//! byte.

mod common;

use common::{compare, decode, expected, insn_count, Decoded, Source};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trace_core::frames::FrameMode;
use trace_core::memory::{MemoryMap, Space};
use trace_encode::capture::{format_capture, Layout};
use trace_encode::{
    encode_etm, encode_ptm, CycleModel, EtmOptions, EtmVersion, Flow, FlowItem, Protocol,
    PtmOptions, SyncPeriod, Trace, TraceOptions,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn load(elf: &Path, flow: &Path) -> (Flow, Arc<MemoryMap>) {
    let text = std::fs::read_to_string(flow).expect("flow file");
    let flow = Flow::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", flow.display()));
    let mut mem = MemoryMap::new();
    mem.add_elf(elf, Space::Any).expect("elf");
    (flow, Arc::new(mem))
}

fn trace_variants(flow: &Flow, full: bool) -> Vec<TraceOptions> {
    let n = flow.instruction_count() as u64;
    let starts: Vec<u64> = if full {
        vec![0, 5, n / 2]
    } else {
        vec![0, n / 3]
    };
    let syncs = [
        None,
        Some(SyncPeriod::Bytes(48)),
        Some(SyncPeriod::Instructions(7)),
    ];
    let mut out = Vec::new();
    for (k, &start_at) in starts.iter().enumerate() {
        for (s, &sync) in syncs.iter().enumerate() {
            for &ctx in &[0u8, 1, 2, 4] {
                for ts in [false, true] {
                    if !full && (ctx + u8::from(ts) + s as u8 + k as u8) % 3 != 0 {
                        continue;
                    }
                    out.push(TraceOptions {
                        start_at,
                        sync,
                        timestamps: ts,
                        timestamp_interval: 11,
                        context_id_bytes: ctx,
                        context_id: 0x1234_5678,
                        context_changes: vec![(n / 4, 0x42), (n / 2, 0x9abc_def0)],
                        cycles: if s == 1 && ctx == 2 {
                            CycleModel {
                                per_instruction: 0,
                                taken_branch: 1,
                            }
                        } else if s == 2 {
                            CycleModel {
                                per_instruction: 2,
                                taken_branch: 13,
                            }
                        } else {
                            CycleModel::default()
                        },
                        ..TraceOptions::default()
                    });
                }
            }
        }
    }
    out
}

/// Every PTM option combination over the trace variants.
pub fn ptm_matrix(flow: &Flow, full: bool) -> Vec<PtmOptions> {
    let mut out = Vec::new();
    for trace in trace_variants(flow, full) {
        for bits in 0..16u32 {
            out.push(PtmOptions {
                trace: trace.clone(),
                return_stack: bits & 1 != 0,
                cycle_accurate: bits & 2 != 0,
                branch_broadcast: bits & 4 != 0,
                barrier_waypoints: bits & 8 != 0,
            });
        }
    }
    out
}

/// Every ETMv3 option combination over the trace variants.
pub fn etm_matrix(flow: &Flow, full: bool) -> Vec<EtmOptions> {
    let mut out = Vec::new();
    for trace in trace_variants(flow, full) {
        for bits in 0..8u32 {
            for version in [EtmVersion::V3_3, EtmVersion::V3_4, EtmVersion::V3_5] {
                let alt = bits & 2 != 0;
                if (alt && version < EtmVersion::V3_4)
                    || (trace.timestamps && version < EtmVersion::V3_5)
                {
                    continue;
                }
                out.push(EtmOptions {
                    trace: trace.clone(),
                    version,
                    cycle_accurate: bits & 1 != 0,
                    alt_branch: alt,
                    branch_broadcast: bits & 4 != 0,
                });
            }
        }
    }
    out
}

fn source(trace: &Trace, id: u8, mem: &Arc<MemoryMap>) -> Source {
    Source {
        id,
        protocol: trace.protocol,
        config: trace.source_config().expect("config"),
        decoder: trace.decoder_config(id).expect("config"),
        memory: mem.clone(),
    }
}

fn check(
    what: &str,
    got: &Decoded,
    trace: &Trace,
    items: &[FlowItem],
    start: u64,
    mem: &MemoryMap,
) -> usize {
    assert!(got.errors.is_empty(), "{what}: {:?}", got.errors);
    assert_eq!(got.skipped, 0, "{what}: bytes skipped");
    assert_eq!(got.packets, trace.stats.packets, "{what}: packets");
    let barriers = trace.regs.etmccer & (1 << 24) != 0 && trace.protocol == Protocol::Ptm;
    let want = expected(items, start, trace.protocol, mem, barriers);
    compare(what, &got.recs, &want);
    if trace.regs.etmcr & (1 << 12) != 0 {
        assert!(
            got.cycles > 0 && got.cycles <= trace.stats.cycles,
            "{what}: cycles {} of {}",
            got.cycles,
            trace.stats.cycles
        );
    }
    insn_count(&want)
}

/// Encodes with every option, decodes raw, compares; returns (configs,
/// instructions compared).
pub fn round_trip_all(
    name: &str,
    flow: &Flow,
    mem: &Arc<MemoryMap>,
    ptm: bool,
    full: bool,
) -> (usize, usize) {
    let (mut configs, mut insns) = (0, 0);
    if ptm {
        for (i, o) in ptm_matrix(flow, full).iter().enumerate() {
            let what = format!("{name} PTM config {i} {o:?}");
            let trace =
                encode_ptm(&flow.items, &**mem, o).unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = decode(
                &trace.bytes,
                FrameMode::Raw { id: 0x10 },
                &[source(&trace, 0x10, mem)],
                1 + i % 13,
            );
            insns += check(
                &what,
                &got[&0x10],
                &trace,
                &flow.items,
                o.trace.start_at,
                mem,
            );
            configs += 1;
        }
    }
    for (i, o) in etm_matrix(flow, full).iter().enumerate() {
        let what = format!("{name} ETMv3 config {i} {o:?}");
        let trace = encode_etm(&flow.items, &**mem, o).unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = decode(
            &trace.bytes,
            FrameMode::Raw { id: 0x11 },
            &[source(&trace, 0x11, mem)],
            1 + i % 13,
        );
        insns += check(
            &what,
            &got[&0x11],
            &trace,
            &flow.items,
            o.trace.start_at,
            mem,
        );
        configs += 1;
    }
    (configs, insns)
}

#[test]
fn mixed_fixture_every_option() {
    let dir = fixtures();
    let (flow, mem) = load(&dir.join("mixed.elf"), &dir.join("mixed.flow"));
    let (configs, insns) = round_trip_all("mixed", &flow, &mem, true, true);
    println!("mixed: {configs} configurations, {insns} instructions compared");
    assert!(configs > 1000);
}

#[test]
fn two_sources_in_formatter_frames() {
    let dir = fixtures();
    let (flow, mem) = load(&dir.join("mixed.elf"), &dir.join("mixed.flow"));
    let popts = PtmOptions {
        return_stack: true,
        cycle_accurate: true,
        trace: TraceOptions {
            timestamps: true,
            context_id_bytes: 4,
            ..TraceOptions::default()
        },
        ..PtmOptions::default()
    };
    let ptm = encode_ptm(&flow.items, &*mem, &popts).expect("ptm");
    let eopts = EtmOptions {
        trace: TraceOptions {
            start_at: 9,
            sync: Some(SyncPeriod::Bytes(20)),
            ..TraceOptions::default()
        },
        alt_branch: true,
        ..EtmOptions::default()
    };
    let etm = encode_etm(&flow.items, &*mem, &eopts).expect("etm");
    for (layout, mode) in [
        (Layout::Memory, FrameMode::Memory),
        (Layout::Continuous, FrameMode::Continuous),
    ] {
        for chunk in [1, 3, 16] {
            let capture = format_capture(
                &[
                    trace_encode::capture::Source {
                        id: 0x10,
                        bytes: &ptm.bytes,
                    },
                    trace_encode::capture::Source {
                        id: 0x11,
                        bytes: &etm.bytes,
                    },
                ],
                layout,
                chunk,
            )
            .expect("capture");
            // Frames of 16 bytes; in continuous mode a 4-byte full-frame
            // sync before every 16th frame, starting with the first.
            let frames = match layout {
                Layout::Memory => capture.len() / 16,
                Layout::Continuous => capture.len() * 16 / (16 * 16 + 4),
            };
            let syncs = match layout {
                Layout::Memory => 0,
                Layout::Continuous => frames.div_ceil(16),
            };
            assert_eq!(capture.len(), frames * 16 + syncs * 4, "{layout:?}");
            if layout == Layout::Continuous {
                assert_eq!(&capture[..4], &trace_core::frames::FSYNC);
            }
            let got = decode(
                &capture,
                mode,
                &[source(&ptm, 0x10, &mem), source(&etm, 0x11, &mem)],
                5,
            );
            check("formatted PTM", &got[&0x10], &ptm, &flow.items, 0, &mem);
            check("formatted ETMv3", &got[&0x11], &etm, &flow.items, 9, &mem);
        }
    }
}

#[test]
fn repeated_trace_decodes_as_repetitions() {
    let dir = fixtures();
    let (flow, mem) = load(&dir.join("mixed.elf"), &dir.join("mixed.flow"));
    for enc in [
        trace_encode::Encoding::Ptm(PtmOptions {
            return_stack: true,
            ..PtmOptions::default()
        }),
        trace_encode::Encoding::Etm(EtmOptions {
            cycle_accurate: true,
            ..EtmOptions::default()
        }),
        trace_encode::Encoding::Ptm(PtmOptions {
            cycle_accurate: true,
            trace: TraceOptions {
                timestamps: true,
                context_id_bytes: 1,
                context_changes: vec![(20, 9)],
                ..TraceOptions::default()
            },
            ..PtmOptions::default()
        }),
    ] {
        let mut out = Vec::new();
        let st =
            trace_encode::write_repeated(&flow.items, &*mem, &enc, 2000, &mut out).expect("repeat");
        assert!(st.bytes >= 2000 && st.bytes == out.len() as u64 && st.repetitions > 1);
        let (trace, id) = match &enc {
            trace_encode::Encoding::Ptm(o) => {
                (encode_ptm(&flow.items, &*mem, o).expect("ptm"), 0x10)
            }
            trace_encode::Encoding::Etm(o) => {
                (encode_etm(&flow.items, &*mem, o).expect("etm"), 0x11)
            }
        };
        let got = decode(
            &out,
            FrameMode::Raw { id },
            &[source(&trace, id, &mem)],
            4096,
        );
        assert!(got[&id].errors.is_empty(), "{:?}", got[&id].errors);
        let once = expected(&flow.items, 0, trace.protocol, &*mem, false);
        let want: Vec<_> = (0..st.repetitions)
            .flat_map(|_| once.iter().copied())
            .collect();
        compare("repeated", &got[&id].recs, &want);
    }
}

#[test]
fn flows_that_contradict_the_code_are_errors() {
    let dir = fixtures();
    let (flow, mem) = load(&dir.join("mixed.elf"), &dir.join("mixed.flow"));
    // The loop branch at 0x2c goes back to 0x24, not on to 0x30.
    let bad = Flow::parse("# trace-flow 1\nB 24 a 4 -\nB 60 a 444 ---\nB 28 a 44 -E\nB 30 a 4 -\n")
        .expect("parses");
    let e = encode_ptm(&bad.items, &*mem, &PtmOptions::default()).expect_err("discontinuity");
    assert!(
        matches!(
            e,
            trace_encode::EncodeError::Discontinuity {
                expected: 0x24,
                found: 0x30,
                ..
            }
        ),
        "{e}"
    );
    // A Thumb instruction where the code is ARM: 2-byte size at 0x20 is wrong.
    let bad = Flow::parse("# trace-flow 1\nB 8c t 4 -\n").expect("parses");
    assert!(encode_etm(&bad.items, &*mem, &EtmOptions::default()).is_err());
    // Outside the image.
    let bad = Flow::parse("# trace-flow 1\nB 10000 a 4 -\n").expect("parses");
    assert!(matches!(
        encode_etm(&bad.items, &*mem, &EtmOptions::default()),
        Err(trace_encode::EncodeError::Memory { .. })
    ));
    // Start beyond the end.
    let o = PtmOptions {
        trace: TraceOptions {
            start_at: 10_000,
            ..TraceOptions::default()
        },
        ..PtmOptions::default()
    };
    assert!(matches!(
        encode_ptm(&flow.items, &*mem, &o),
        Err(trace_encode::EncodeError::StartBeyondEnd { .. })
    ));
    // Bad option.
    let o = EtmOptions {
        trace: TraceOptions {
            context_id_bytes: 3,
            ..TraceOptions::default()
        },
        ..EtmOptions::default()
    };
    assert!(matches!(
        encode_etm(&flow.items, &*mem, &o),
        Err(trace_encode::EncodeError::Options(_))
    ));
}

#[test]
fn comparison_sees_a_wrong_flow() {
    let dir = fixtures();
    let (flow, mem) = load(&dir.join("mixed.elf"), &dir.join("mixed.flow"));
    let trace = encode_etm(&flow.items, &*mem, &EtmOptions::default()).expect("etm");
    let got = decode(
        &trace.bytes,
        FrameMode::Raw { id: 0x11 },
        &[source(&trace, 0x11, &mem)],
        64,
    );
    let mut want = expected(&flow.items, 0, Protocol::Etmv3, &*mem, false);
    compare("intact", &got[&0x11].recs, &want);
    // One atom flipped, one exception return address changed, one
    // instruction dropped: each must be seen.
    let flip = want
        .iter()
        .position(|r| {
            matches!(
                r,
                common::Rec::Insn {
                    atom: Some(false),
                    ..
                }
            )
        })
        .expect("an N atom");
    let mut w = want.clone();
    if let common::Rec::Insn { atom, .. } = &mut w[flip] {
        *atom = Some(true);
    }
    assert!(std::panic::catch_unwind(|| compare("flipped", &got[&0x11].recs, &w)).is_err());
    let exc = want
        .iter()
        .position(|r| matches!(r, common::Rec::Exception { .. }))
        .expect("exception");
    let mut w = want.clone();
    w[exc] = common::Rec::Exception {
        number: 14,
        ret: Some(0x6c),
    };
    assert!(std::panic::catch_unwind(|| compare("exception", &got[&0x11].recs, &w)).is_err());
    want.remove(3);
    assert!(std::panic::catch_unwind(|| compare("dropped", &got[&0x11].recs, &want)).is_err());
}

#[test]
fn cycle_accurate_p_header_formats() {
    use etm_packets::{Packet, Parser};
    let dir = fixtures();
    let (flow, mem) = load(&dir.join("mixed.elf"), &dir.join("mixed.flow"));
    let mut seen = std::collections::BTreeSet::new();
    for (per_instruction, taken_branch) in [(0, 1), (0, 10), (1, 10)] {
        let o = EtmOptions {
            cycle_accurate: true,
            trace: TraceOptions {
                cycles: CycleModel {
                    per_instruction,
                    taken_branch,
                },
                ..TraceOptions::default()
            },
            ..EtmOptions::default()
        };
        let t = encode_etm(&flow.items, &*mem, &o).expect("etm");
        let mut p = Parser::new(o.config().expect("config"));
        for item in p.feed(&t.bytes) {
            if let Ok((_, Packet::Atoms(a))) = item {
                seen.insert(a.format.number());
            }
        }
        let got = decode(
            &t.bytes,
            FrameMode::Raw { id: 1 },
            &[source(&t, 1, &mem)],
            3,
        );
        check("formats", &got[&1], &t, &flow.items, 0, &mem);
        // Every W atom comes back, except those of the cancelled LDR at
        // 0x54 (its range is dropped with them).
        assert_eq!(got[&1].cycles, t.stats.cycles - u64::from(per_instruction));
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [1, 2, 3, 4]);
}
