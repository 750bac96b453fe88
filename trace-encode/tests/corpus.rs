//! Round trips over the corpus of real programs (`corpus/fixtures`:
//! gcc-built A32, T32 and ARMv7-M programs run in an emulator that
//! recorded every executed instruction): every fixture × a set of
//! configurations covering every option value. A-profile fixtures are
//! encoded as PTM and ETMv3 trace, ARMv7-M fixtures as ETMv3 only (no
//! ARMv7-M core has a PTM).

mod common;

use common::{compare, decode, expected, insn_count, Source};
use std::path::Path;
use std::sync::Arc;
use trace_core::frames::FrameMode;
use trace_core::memory::{MemoryMap, Space};
use trace_encode::{
    encode_etm, encode_ptm, CycleModel, EtmOptions, EtmVersion, Flow, Protocol, PtmOptions,
    SyncPeriod, Trace, TraceOptions,
};

fn variant(i: usize, n: u64) -> TraceOptions {
    let syncs = [
        None,
        Some(SyncPeriod::Bytes(512)),
        Some(SyncPeriod::Instructions(300)),
    ];
    TraceOptions {
        start_at: if i % 4 == 3 { n / 3 } else { 0 },
        sync: syncs[i % 3],
        timestamps: i % 2 == 1,
        timestamp_interval: 97,
        context_id_bytes: [0u8, 1, 2, 4][i % 4],
        context_id: 0x0bad_cafe,
        context_changes: vec![(n / 5, 7), (n / 2, 0x1234_5678)],
        cycles: if i % 7 == 5 {
            CycleModel {
                per_instruction: 0,
                taken_branch: 2,
            }
        } else if i % 5 == 4 {
            CycleModel {
                per_instruction: 1,
                taken_branch: 11,
            }
        } else {
            CycleModel::default()
        },
        ..TraceOptions::default()
    }
}

fn ptm_configs(n: u64) -> Vec<PtmOptions> {
    (0..16u32)
        .map(|bits| PtmOptions {
            trace: variant(bits as usize, n),
            return_stack: bits & 1 != 0,
            cycle_accurate: bits & 2 != 0,
            branch_broadcast: bits & 4 != 0,
            barrier_waypoints: bits & 8 != 0,
        })
        .collect()
}

fn etm_configs(n: u64) -> Vec<EtmOptions> {
    let mut out = Vec::new();
    let mut i = 0;
    for bits in 0..8u32 {
        for version in [EtmVersion::V3_3, EtmVersion::V3_4, EtmVersion::V3_5] {
            let alt = bits & 2 != 0;
            if alt && version < EtmVersion::V3_4 {
                continue;
            }
            let mut trace = variant(i, n);
            i += 1;
            trace.timestamps &= version == EtmVersion::V3_5;
            out.push(EtmOptions {
                trace,
                version,
                cycle_accurate: bits & 1 != 0,
                alt_branch: alt,
                branch_broadcast: bits & 4 != 0,
            });
        }
    }
    out
}

fn check(
    what: &str,
    trace: &Trace,
    id: u8,
    flow: &Flow,
    start: u64,
    mem: &Arc<MemoryMap>,
) -> usize {
    let src = Source {
        id,
        protocol: trace.protocol,
        config: trace.source_config().expect("config"),
        decoder: trace.decoder_config(id).expect("config"),
        memory: mem.clone(),
    };
    let got = decode(&trace.bytes, FrameMode::Raw { id }, &[src], 4093);
    let got = &got[&id];
    assert!(
        got.errors.is_empty(),
        "{what}: {:?}",
        &got.errors[..got.errors.len().min(5)]
    );
    assert_eq!(got.skipped, 0, "{what}");
    assert_eq!(got.packets, trace.stats.packets, "{what}");
    let barriers = trace.protocol == Protocol::Ptm && trace.regs.etmccer & (1 << 24) != 0;
    let want = expected(&flow.items, start, trace.protocol, &**mem, barriers);
    compare(what, &got.recs, &want);
    insn_count(&want)
}

#[test]
fn corpus_round_trips() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/fixtures");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing and CI is set",
            dir.display()
        );
        eprintln!("skipping: {} not found", dir.display());
        return;
    };
    let mut flows: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "flow"))
        .collect();
    flows.sort();
    let only = std::env::var("TRACE_ENCODE_FIXTURE").ok();
    let (mut fixtures, mut configs, mut insns) = (0, 0, 0);
    for path in flows {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let flow = Flow::parse(&std::fs::read_to_string(&path).expect("flow"))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let elf = dir.join(flow.header("elf").expect("elf header"));
        let mut mem = MemoryMap::new();
        mem.add_elf(&elf, Space::Any).expect("elf");
        let mem = Arc::new(mem);
        let n = flow.instruction_count() as u64;
        let m_profile = flow.header("flavour") == Some("m");
        if !m_profile {
            for (i, o) in ptm_configs(n).iter().enumerate() {
                let what = format!("{name} PTM config {i} {o:?}");
                let t = encode_ptm(&flow.items, &*mem, o).unwrap_or_else(|e| panic!("{what}: {e}"));
                insns += check(&what, &t, 0x10, &flow, o.trace.start_at, &mem);
                configs += 1;
            }
        }
        for (i, o) in etm_configs(n).iter().enumerate() {
            let what = format!("{name} ETMv3 config {i} {o:?}");
            let t = encode_etm(&flow.items, &*mem, o).unwrap_or_else(|e| panic!("{what}: {e}"));
            insns += check(&what, &t, 0x11, &flow, o.trace.start_at, &mem);
            configs += 1;
        }
        fixtures += 1;
    }
    println!("corpus: {fixtures} fixtures, {configs} encodings, {insns} instructions compared");
}

/// Trace starting at every one of the first instructions of the
/// exception and Thumb fixtures (inside IT blocks, handlers, right after
/// exception returns).
#[test]
fn corpus_every_start_point() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/fixtures");
    if !dir.is_dir() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing and CI is set",
            dir.display()
        );
        eprintln!("skipping: {} not found", dir.display());
        return;
    }
    let mut runs = 0;
    for name in [
        "exceptions-a",
        "exceptions-t",
        "exceptions-m",
        "controlflow-t",
        "interwork-a",
    ] {
        let path = dir.join(format!("{name}.flow"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let flow = Flow::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut mem = MemoryMap::new();
        mem.add_elf(&dir.join(flow.header("elf").expect("elf")), Space::Any)
            .expect("elf");
        let mem = Arc::new(mem);
        let n = (flow.instruction_count() as u64).min(200);
        for start in 0..n {
            let trace = TraceOptions {
                start_at: start,
                ..TraceOptions::default()
            };
            if flow.header("flavour") != Some("m") {
                let o = PtmOptions {
                    trace: trace.clone(),
                    return_stack: true,
                    ..PtmOptions::default()
                };
                let t = encode_ptm(&flow.items, &*mem, &o).expect("ptm");
                check(
                    &format!("{name} PTM from {start}"),
                    &t,
                    0x10,
                    &flow,
                    start,
                    &mem,
                );
            }
            let o = EtmOptions {
                trace,
                ..EtmOptions::default()
            };
            let t = encode_etm(&flow.items, &*mem, &o).expect("etm");
            check(
                &format!("{name} ETMv3 from {start}"),
                &t,
                0x11,
                &flow,
                start,
                &mem,
            );
            runs += 1;
        }
    }
    println!("start points: {runs}");
}
