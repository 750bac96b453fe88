//! Linux perf reads our perf.data recordings of ETMv3 trace (through
//! OpenCSD) and lists the same taken branches as our decode:
//! `perf script --itrace=b -F ip,addr,flags`; in a per-thread recording
//! of two processes mapping two programs at one address, it names the
//! same processes and threads and gives each the branches we decode for
//! it. Runs where `perf` is
//! installed (Debian's `linux-perf`, which CI installs): skips without
//! it, fails when CI is set. Needs the shared test data too.
//!
//! PTM is not compared: perf 6.1 hands OpenCSD ETMIDR and ETMCCER as 0
//! for PTM, so with the return stack or 64-bit timestamps its decode is
//! wrong (see docs/perf.md).

use crate::perf_common::{decode, spec_of, write};
use crate::perf_threads::{program, recording, THREADS};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use trace_convert::input::source::{CaptureSpec, Protocol};
use trace_convert::input::{flags::SourceFlags, resolve, Input};
use trace_core::event::{Event, EventKind, InsnClass};
use trace_encode::perf::PerfSpec;

fn perf() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("perf"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "perf (Debian linux-perf) is missing and CI is set"
        );
        eprintln!("skipping: perf not found (install linux-perf)");
    }
    found
}

/// A range that ends in a taken branch (an ISB or barrier ends a range
/// too, but is no branch for perf).
fn is_branch(r: &trace_core::event::Range) -> bool {
    r.executed && matches!(r.last, InsnClass::Branch | InsnClass::IndirectBranch)
}

/// Taken branches as (branch address, target), from consecutive ranges
/// of one trace ID with no break in the flow between them, as perf lists
/// them. A range ending in a taken branch right before an exception:
/// when the handler's code is traced next, perf lists the branch as the
/// exception's own sample (from the branch to the vector, an `int`
/// sample, not compared); when the trace stops there, OpenCSD counts the
/// instruction at the return address and perf lists the branch going
/// there.
fn our_branches(events: &[Event]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut prev: Option<trace_core::event::Range> = None;
    // A branch taken right before an exception, until what follows says
    // how perf lists it.
    let mut held: Option<(u64, u64)> = None;
    for e in events {
        match e.kind {
            EventKind::Range(r) => {
                held = None;
                if let Some(p) = prev {
                    if is_branch(&p) {
                        out.push((
                            u64::from(p.end - u32::from(p.last_size)),
                            u64::from(r.start),
                        ));
                    }
                }
                prev = Some(r);
            }
            EventKind::Exception { ret: Some(ret), .. } => {
                if let Some(p) = prev.take() {
                    if is_branch(&p) {
                        held = Some((u64::from(p.end - u32::from(p.last_size)), u64::from(ret)));
                    }
                }
            }
            // Time and cycle counts, context, and our notes of trace that
            // contradicts the image (OpenCSD makes no such checks) do not
            // break the flow.
            EventKind::Timestamp { .. }
            | EventKind::Inconsistent { .. }
            | EventKind::CycleCount(_)
            | EventKind::Context(_)
            | EventKind::ExceptionReturn => {}
            _ => {
                out.extend(held.take());
                prev = None;
            }
        }
    }
    out.extend(held);
    out
}

fn perf_branches(perf: &Path, file: &Path) -> Vec<(u64, u64)> {
    let out = Command::new(perf)
        .args(["script", "--itrace=b", "-F", "hw:cpu,ip,addr,flags", "-i"])
        .arg(file)
        .output()
        .expect("run perf");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "perf script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v = Vec::new();
    for l in text.lines() {
        // Trace on and off, and the exceptions' own samples, are not
        // branches of the program.
        if l.contains("tr strt") || l.contains("tr end") || l.contains(" int ") {
            continue;
        }
        let hex: Vec<u64> = l
            .split_whitespace()
            .filter_map(|w| u64::from_str_radix(w, 16).ok())
            .collect();
        if let [ip, addr] = hex[hex.len().saturating_sub(2)..] {
            v.push((ip, addr));
        }
    }
    v
}

fn etm_captures() -> Option<Vec<(String, Input)>> {
    let real = test_support::real_dir()?.join("am243x-r5f");
    let mut dirs = vec![test_support::opencsd_dir()?.join("TC2")];
    let mut r5: Vec<PathBuf> = std::fs::read_dir(&real)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("snapshot.ini").is_file())
        .collect();
    r5.sort();
    dirs.extend(r5);
    Some(
        dirs.into_iter()
            .map(|d| {
                let input = resolve(&d, &SourceFlags::default()).expect("snapshot");
                let name = d.file_name().and_then(|n| n.to_str()).unwrap_or("x");
                (name.to_string(), input)
            })
            .collect(),
    )
}

/// One recording per ETMv3 source of each capture (perf then decodes that
/// source alone, as we do), written as perf 6.1 decodes them: per thread,
/// with the attribute's timestamp bit (28) clear. perf 6.1 decodes a
/// per-thread recording in timestamp order when that bit is set, and then
/// synthesizes no samples at all (TC2's sources trace timestamps); the
/// AUXTRACE_INFO words keep ETMCR, from which both decoders parse.
fn recordings(caps: &[(String, Input)]) -> Vec<(String, &Input, CaptureSpec, PerfSpec)> {
    let mut out = Vec::new();
    for (name, input) in caps {
        for cap in &input.captures {
            for src in cap.sources.iter().filter(|s| s.protocol == Protocol::Etmv3) {
                let mut one = cap.clone();
                one.sources.retain(|s| s.id == src.id);
                let (mut spec, _) = spec_of(input, &one);
                spec.attr_config = Some(u64::from(src.regs.etmcr & !(1 << 28)));
                out.push((format!("{name}-{:#04x}", src.id), input, one, spec));
            }
        }
    }
    out
}

#[test]
fn perf_lists_the_taken_branches_we_decode_for_etmv3() {
    let Some(perf) = perf() else { return };
    let Some(caps) = etm_captures() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let keep = std::env::var_os("PERF_KEEP").map(PathBuf::from);
    let recs = recordings(&caps);
    if let Some(keep) = &keep {
        // Kept for a look with perf: every recording is written first.
        for (name, _, _, spec) in &recs {
            write(keep, &format!("{name}.data"), spec);
        }
    }
    let mut compared = Vec::new();
    for (name, input, cap, spec) in &recs {
        let out = keep.as_deref().unwrap_or(tmp.path());
        let path = write(out, &format!("{name}.data"), spec);
        let events = decode(input, cap);
        // Where the trace contradicts the memory image, our decoder
        // and OpenCSD recover differently: not compared.
        if events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Inconsistent { .. }))
        {
            eprintln!("{name}: the trace contradicts its image: not compared");
            continue;
        }
        let ours = our_branches(&events);
        let theirs = perf_branches(&perf, &path);
        assert!(!ours.is_empty(), "{name}: branches");
        if let Some(i) = (0..ours.len().max(theirs.len())).find(|&i| ours.get(i) != theirs.get(i)) {
            let show = |v: &[(u64, u64)]| {
                v.iter()
                    .skip(i.saturating_sub(2))
                    .take(5)
                    .map(|(a, b)| format!("{a:#x}->{b:#x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            panic!(
                "{name}: branch {i} of {} (ours) / {} (perf) differs:\n ours {}\n perf {}",
                ours.len(),
                theirs.len(),
                show(&ours),
                show(&theirs)
            );
        }
        eprintln!("{name}: {} taken branches agree", ours.len());
        compared.push(name.clone());
    }
    // TC2's three ETMv3.5 sources and at least one Cortex-R5 capture.
    assert!(
        compared.iter().filter(|n| n.starts_with("TC2")).count() == 3 && compared.len() >= 4,
        "compared: {compared:?}"
    );
}

/// A thread as perf lists it: its command, its process, its taken
/// branches.
type PerfThread = (String, u32, Vec<(u64, u64)>);

/// perf's taken branches per thread, with the thread's command and
/// process: `perf script --itrace=b -F comm,pid,tid,ip,addr,flags`.
fn perf_branches_by_thread(perf: &Path, file: &Path) -> BTreeMap<u32, PerfThread> {
    let out = Command::new(perf)
        .args([
            "script",
            "--itrace=b",
            "-F",
            "comm,pid,tid,ip,addr,flags",
            "-i",
        ])
        .arg(file)
        .output()
        .expect("run perf");
    assert!(
        out.status.success(),
        "perf script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut by_tid: BTreeMap<u32, PerfThread> = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        if l.contains("tr strt") || l.contains("tr end") || l.contains(" int ") {
            continue;
        }
        let words: Vec<&str> = l.split_whitespace().collect();
        let Some((comm, ids)) = words.first().zip(words.get(1)) else {
            continue;
        };
        let Some((pid, tid)) = ids.split_once('/') else {
            continue;
        };
        let (pid, tid): (u32, u32) = (pid.parse().expect("pid"), tid.parse().expect("tid"));
        let hex: Vec<u64> = words[2..]
            .iter()
            .filter_map(|w| u64::from_str_radix(w, 16).ok())
            .collect();
        let entry = by_tid
            .entry(tid)
            .or_insert_with(|| ((*comm).to_owned(), pid, Vec::new()));
        if let [ip, addr] = hex[hex.len().saturating_sub(2)..] {
            entry.2.push((ip, addr));
        }
    }
    by_tid
}

#[test]
fn perf_gives_each_thread_the_branches_we_decode_for_it() {
    let Some(perf) = perf() else { return };
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    // Two programs mapped at one address, in two processes.
    let a = program(&dir, "example-a", Protocol::Etmv3);
    let b = program(&dir, "controlflow-a", Protocol::Etmv3);
    let mut spec = recording(&a, &b);
    spec.attr_config = Some(u64::from(spec.sources[0].etmcr & !(1 << 28)));
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = write(tmp.path(), "threads.data", &spec);
    let input = resolve(&path, &SourceFlags::default()).expect("perf.data resolves");
    let mut ours: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for cap in &input.captures {
        let tid = cap.task.as_ref().expect("a thread").tid;
        ours.entry(tid)
            .or_default()
            .extend(our_branches(&decode(&input, cap)));
    }
    let theirs = perf_branches_by_thread(&perf, &path);
    let want: BTreeMap<u32, (String, u32)> = THREADS
        .iter()
        .map(|&(pid, tid, comm)| (tid, (comm.to_owned(), pid)))
        .collect();
    let named: BTreeMap<u32, (String, u32)> = theirs
        .iter()
        .map(|(tid, (comm, pid, _))| (*tid, (comm.clone(), *pid)))
        .collect();
    assert_eq!(named, want, "perf's threads");
    for (tid, (comm, _, branches)) in &theirs {
        let mine = &ours[tid];
        assert!(branches.len() > 100, "{comm}: {} branches", branches.len());
        if let Some(i) =
            (0..mine.len().max(branches.len())).find(|&i| mine.get(i) != branches.get(i))
        {
            let show = |v: &[(u64, u64)]| {
                v.iter()
                    .skip(i.saturating_sub(2))
                    .take(5)
                    .map(|(a, b)| format!("{a:#x}->{b:#x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            panic!(
                "{comm} ({tid}): branch {i} of {} (ours) / {} (perf) differs:\n ours {}\n perf {}",
                mine.len(),
                branches.len(),
                show(mine),
                show(branches)
            );
        }
        eprintln!("{comm} ({tid}): {} taken branches agree", mine.len());
    }
}
