//! `cargo xtask conformance --decode`: our decoded events against OpenCSD
//! v1.8.0's decode listings (element by element, for every trace ID) and
//! against ARM DS-5's instruction dumps (instruction by instruction).
//!
//! Both sides are reduced to the same values before comparing: for an
//! instruction range its start, end, count, ISA, last-instruction class
//! (`---`/`BR`/`iBR`/`ISB`), E/N, link, return, condition and cycle count;
//! for exceptions the number and preferred return address; for memory not
//! accessible the address; the cycle counts, timestamps, trace-on reasons
//! and the PE context (ISA, security state, cycle count). Every element's
//! `Idx` is compared too (OpenCSD numbers formatted captures per frame
//! block; our file offsets are translated first), except `NO_SYNC`, which
//! OpenCSD places on the first unsynchronized byte that we do not see as a
//! packet.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::{flags::SourceFlags, resolve};
use trace_core::event::{Event, EventKind, InsnClass, Isa, TraceOnReason};
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};
use trace_core::memory::{MemoryImage, MemoryMap};

struct Case {
    snapshot: &'static str,
    listing: &'static str,
    /// DS-5 dumps: (file, trace ID).
    ds5: &'static [(&'static str, u8)],
}

const CASES: &[Case] = &[
    Case {
        snapshot: "TC2",
        listing: "expected/TC2-decode.ppl",
        ds5: &[
            ("TC2/ds5-dumps/etmv3_0x10.txt", 0x10),
            ("TC2/ds5-dumps/etmv3_0x11.txt", 0x11),
            ("TC2/ds5-dumps/etmv3_0x12.txt", 0x12),
            ("TC2/ds5-dumps/ptmv1_0x13.txt", 0x13),
        ],
    },
    Case {
        snapshot: "tc2-ptm-rstk-t32",
        listing: "expected/tc2-ptm-rstk-t32-decode.ppl",
        ds5: &[("tc2-ptm-rstk-t32/ds-5_trace_dump/a15_rs.txt", 2)],
    },
];

/// One element reduced to comparable values.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Elem {
    idx: Option<u64>,
    what: String,
    text: String,
}

fn field<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let at = s.find(key)? + key.len();
    let rest = &s[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric()))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

fn num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn cc(s: &str) -> String {
    field(s, "[CC=").map_or_else(|| "-".into(), str::to_owned)
}

/// Parse the element lines of a decode listing, per trace ID.
fn parse_elements(text: &str) -> BTreeMap<u8, Vec<Elem>> {
    let mut out: BTreeMap<u8, Vec<Elem>> = BTreeMap::new();
    for line in text.lines() {
        let Some(p) = line.find("OCSD_GEN_TRC_ELEM_") else {
            continue;
        };
        let (Some(idx), Some(id)) = (
            field(line, "Idx:").and_then(num),
            field(line, "ID:").and_then(|h| u8::from_str_radix(h, 16).ok()),
        ) else {
            continue;
        };
        let body = &line[p + "OCSD_GEN_TRC_ELEM_".len()..];
        let kind = &body[..body.find('(').unwrap_or(body.len())];
        let what = match kind {
            "INSTR_RANGE" => {
                let start = field(body, "range=").and_then(num).unwrap_or(0);
                let end = field(body, ":[").and_then(num).unwrap_or(0);
                let n = field(body, "num_i(").and_then(num).unwrap_or(0);
                let isa = field(body, "(ISA=").unwrap_or("?");
                let after = &body[body.find("(ISA=").unwrap_or(0)..];
                let after = &after[after.find(')').map_or(0, |i| i + 1)..];
                let mut toks = after.split_whitespace();
                let en = toks.next().unwrap_or("?");
                let class = toks.next().unwrap_or("?");
                format!(
                    "range {start:#x}-{end:#x} n={n} {isa} {en} {class} link={} ret={} cond={} cc={}",
                    body.contains("b+link"),
                    body.contains("V7:impl ret"),
                    body.contains("<cond>"),
                    cc(body)
                )
            }
            "EXCEPTION" => format!(
                "exception {} ret={:#x}",
                field(body, "excep num (").and_then(num).unwrap_or(0),
                field(body, "pref ret addr:").and_then(num).unwrap_or(0)
            ),
            "ADDR_NACC" => format!(
                "nacc {:#x}",
                field(body, "ADDR_NACC( ").and_then(num).unwrap_or(0)
            ),
            "TRACE_ON" => {
                let reason = if body.contains("debug restart") {
                    "debug_exit"
                } else if body.contains("overflow") {
                    "overflow"
                } else {
                    "filter"
                };
                format!("trace_on {reason} cc={}", cc(body))
            }
            "PE_CONTEXT" => format!(
                "context {} {} cc={}",
                field(body, "(ISA=").unwrap_or("?"),
                if body.contains(") N;") { "N" } else { "S" },
                cc(body)
            ),
            "CYCLE_COUNT" => format!("cycles {}", cc(body)),
            "TIMESTAMP" => format!(
                "timestamp {} cc={}",
                field(body, "TS=").and_then(num).unwrap_or(0),
                cc(body)
            ),
            "EXCEPTION_RET" => "exception_return".into(),
            "NO_SYNC" => "no_sync".into(),
            "EO_TRACE" => "end_of_trace".into(),
            other => format!("unknown {other}"),
        };
        out.entry(id).or_default().push(Elem {
            idx: (kind != "NO_SYNC").then_some(idx),
            what,
            text: line.to_owned(),
        });
    }
    out
}

fn opt_cc(c: Option<u32>) -> String {
    c.map_or_else(|| "-".into(), |c| c.to_string())
}

fn isa_name(isa: Isa) -> &'static str {
    match isa {
        Isa::A32 => "A32",
        Isa::T32 => "T32",
    }
}

/// Our event reduced the same way; `None` for events OpenCSD has no
/// element for (gaps are reported as mismatches by their own kind).
fn reduce(e: &Event, idx: u64) -> Option<Elem> {
    let what = match e.kind {
        EventKind::Range(r) => format!(
            "range {:#x}-{:#x} n={} {} {} {} link={} ret={} cond={} cc={}",
            r.start,
            r.end,
            r.count,
            isa_name(r.isa),
            if r.executed { "E" } else { "N" },
            match r.last {
                InsnClass::Other | InsnClass::Barrier => "---",
                InsnClass::Branch => "BR",
                InsnClass::IndirectBranch => "iBR",
                InsnClass::Isb => "ISB",
            },
            r.link,
            r.ret,
            r.cond,
            opt_cc(r.cycles)
        ),
        EventKind::Exception { number, ret } => {
            format!("exception {number} ret={:#x}", ret.unwrap_or(0))
        }
        EventKind::AddrNacc { addr } => format!("nacc {addr:#x}"),
        EventKind::TraceOn { reason, cycles } => format!(
            "trace_on {} cc={}",
            match reason {
                TraceOnReason::Filter => "filter",
                TraceOnReason::Overflow => "overflow",
                TraceOnReason::DebugExit => "debug_exit",
            },
            opt_cc(cycles)
        ),
        EventKind::Context(c) => format!(
            "context {} {} cc={}",
            isa_name(c.isa),
            if c.ns { "N" } else { "S" },
            opt_cc(c.cycles)
        ),
        EventKind::CycleCount(c) => format!("cycles {c}"),
        EventKind::Timestamp { value, cycles } => {
            format!("timestamp {value} cc={}", opt_cc(cycles))
        }
        EventKind::ExceptionReturn => "exception_return".into(),
        EventKind::NoSync => "no_sync".into(),
        EventKind::EndOfTrace => "end_of_trace".into(),
        EventKind::Gap(g) => format!("gap {}", g.name()),
        // OpenCSD has no such element: one in these captures, where
        // OpenCSD and DS-5 agree with the decode, is a false alarm and
        // fails the comparison.
        EventKind::Inconsistent { check, .. } => format!("inconsistent {}", check.name()),
        // A later kind: by its name, a mismatch until it is reduced here.
        other => other.name().into(),
    };
    let no_idx = matches!(e.kind, EventKind::NoSync);
    Some(Elem {
        idx: (!no_idx).then_some(idx),
        what,
        text: format!("{e:?}"),
    })
}

fn opencsd_indices(capture: &[u8], layout: FrameMode) -> HashMap<u64, u64> {
    let mut map = HashMap::new();
    if matches!(layout, FrameMode::Raw { .. }) {
        return map;
    }
    let mut d = Deformatter::new(layout);
    for ev in d.feed(capture) {
        if let FrameEvent::Data(run) = ev {
            for k in 0..run.data().len() as u64 {
                map.insert(run.offset + k, run.opencsd_index + k);
            }
        }
    }
    map
}

/// One instruction of a DS-5 dump or of our decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Insn {
    addr: u32,
    failed: Option<bool>,
    cycles: Option<u32>,
}

fn parse_ds5(text: &str) -> Vec<Insn> {
    let mut out = Vec::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.first() == Some(&"Instruction") {
            // Record Type, Index, Address, Opcode, Cycles, Detail, Branch, Condition Failure
            let addr = cols
                .get(2)
                .map_or("", |a| a.trim_start_matches(['S', 'N', ':']));
            if cols.get(3).is_some_and(|o| o.contains('?')) {
                continue;
            }
            if let Some(a) = num(addr).and_then(|a| u32::try_from(a).ok()) {
                out.push(Insn {
                    addr: a,
                    failed: Some(cols.get(7).is_some_and(|c| c.contains("fail"))),
                    cycles: cols
                        .get(4)
                        .and_then(|c| num(c))
                        .and_then(|c| u32::try_from(c).ok()),
                });
            }
        } else if cols.len() >= 3
            && (cols[0].starts_with("S:") || cols[0].starts_with("N:"))
            && !cols[1].is_empty()
            && !cols[1].contains('?')
        {
            if let Some(a) = num(&cols[0][2..]).and_then(|a| u32::try_from(a).ok()) {
                out.push(Insn {
                    addr: a,
                    failed: None,
                    cycles: None,
                });
            }
        }
    }
    out
}

/// Our events of one ID expanded to instructions, with DS-5's cycle
/// attribution: the cycles of W-only P-headers and cycle count packets go
/// to the next instruction.
fn expand(events: &[Event], mem: &dyn MemoryImage, etm: bool) -> Vec<Insn> {
    let mut out = Vec::new();
    let mut acc = 0u32;
    for e in events {
        match e.kind {
            EventKind::CycleCount(c) if etm => acc += c,
            // Cycles before trace (re)starts belong to no instruction; a
            // periodic I-sync does not interrupt the count.
            EventKind::TraceOn { .. } => acc = 0,
            EventKind::Range(r) => {
                let n = r.count;
                for (k, i) in r.instructions(mem).enumerate() {
                    let last = k as u32 + 1 == n;
                    let cycles = if etm {
                        let c = acc + r.cycles.unwrap_or(0);
                        acc = 0;
                        c
                    } else if last {
                        r.cycles.unwrap_or(0)
                    } else {
                        0
                    };
                    out.push(Insn {
                        addr: i.addr,
                        failed: Some(last && !r.executed),
                        cycles: Some(cycles),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// Run the comparison on every real capture.
pub fn run(dir: &Path, verbose: bool) -> Result<(), String> {
    if !dir.is_dir() {
        if std::env::var_os("CI").is_some() {
            return Err(format!("{} is missing (CI is set)", dir.display()));
        }
        eprintln!("conformance --decode: {} not found, skipped", dir.display());
        return Ok(());
    }
    let mut failures = Vec::new();
    for case in CASES {
        if let Err(e) = run_case(dir, case, verbose) {
            failures.push(format!("{}: {e}", case.snapshot));
        }
    }
    if failures.is_empty() {
        println!("conformance --decode: all elements match OpenCSD and DS-5");
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

fn run_case(dir: &Path, case: &Case, verbose: bool) -> Result<(), String> {
    let snap_dir = dir.join(case.snapshot);
    let input = resolve(&snap_dir, &SourceFlags::default()).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(dir.join(case.listing))
        .map_err(|e| format!("{}: {e}", case.listing))?;
    let listed = parse_elements(&text);
    let mut ours: BTreeMap<u8, Vec<Event>> = BTreeMap::new();
    let mut index = HashMap::new();
    let mut mems: HashMap<u8, Arc<MemoryMap>> = HashMap::new();
    let mut etm_ids = Vec::new();
    for capture in &input.captures {
        let bytes =
            std::fs::read(&capture.path).map_err(|e| format!("{}: {e}", capture.path.display()))?;
        index.extend(opencsd_indices(&bytes, capture.layout));
        let mut by_name = HashMap::new();
        for s in &capture.sources {
            let m = memory_for(input.snapshot.as_ref(), &s.name, &ExtraMemory::default())
                .map_err(|e| e.to_string())?;
            let m = Arc::new(m);
            mems.insert(s.id, Arc::clone(&m));
            by_name.insert(s.name.clone(), m);
            if s.protocol == trace_convert::input::source::Protocol::Etmv3 {
                etm_ids.push(s.id);
            }
        }
        trace_convert::input::capture::decoder(capture, |name| {
            by_name.get(name).map_or_else(
                || Arc::new(MemoryMap::new()) as Arc<dyn MemoryImage>,
                |m| Arc::clone(m) as Arc<dyn MemoryImage>,
            )
        })
        .and_then(|d| {
            trace_convert::input::capture::run(
                capture,
                &mut d.build(),
                &mut trace_core::capture::each_event(|e| {
                    ours.entry(e.id).or_default().push(*e);
                    Ok(())
                }),
            )
        })
        .map_err(|e| e.to_string())?;
    }
    let mut failed = false;
    let ids: std::collections::BTreeSet<u8> = listed.keys().chain(ours.keys()).copied().collect();
    for id in ids {
        let theirs = listed.get(&id).map_or(&[][..], Vec::as_slice);
        let mine: Vec<Elem> = ours
            .get(&id)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|e| reduce(e, index.get(&e.offset).copied().unwrap_or(e.offset)))
            .collect();
        let mut matched = 0usize;
        let mut first = None;
        let mut counts = [0usize; 2];
        for (i, (l, o)) in theirs.iter().zip(&mine).enumerate() {
            if l == o || (l.what == o.what && l.idx == o.idx) {
                matched += 1;
                if l.what.starts_with("range") {
                    counts[0] += 1;
                } else {
                    counts[1] += 1;
                }
            } else {
                if verbose {
                    eprintln!(
                        "  ID {id:#04x} #{i}:\n    OpenCSD: {}\n    ours:    {:?} {}",
                        l.text, o.idx, o.what
                    );
                }
                first.get_or_insert(i);
            }
        }
        // OpenCSD ends every configured decoder with EO_TRACE, also those
        // that saw no data (TC2's PTM 0x14 and ITM 0x20).
        let no_data = mine.is_empty() && theirs.iter().all(|l| l.what == "end_of_trace");
        if no_data {
            println!(
                "{:<18} ID {id:#04x}: no trace data (OpenCSD: end of trace only)  OK",
                case.snapshot
            );
            continue;
        }
        let ok = first.is_none() && theirs.len() == mine.len();
        println!(
            "{:<18} ID {id:#04x}: {matched} of {} OpenCSD elements matched ({} ranges, {} other), ours {}{}",
            case.snapshot,
            theirs.len(),
            counts[0],
            counts[1],
            mine.len(),
            if ok { "  OK" } else { "  FAIL" }
        );
        if !ok {
            failed = true;
            let i = first.unwrap_or(theirs.len().min(mine.len()));
            println!("  first difference at element #{i}:");
            for k in i.saturating_sub(3)..(i + 3) {
                if let Some(l) = theirs.get(k) {
                    println!("    OpenCSD #{k}: idx {:?} {}", l.idx, l.what);
                }
                if let Some(o) = mine.get(k) {
                    println!("    ours    #{k}: idx {:?} {}", o.idx, o.what);
                }
            }
        }
    }
    for &(file, id) in case.ds5 {
        let text = std::fs::read_to_string(dir.join(file)).map_err(|e| format!("{file}: {e}"))?;
        let ds5 = parse_ds5(&text);
        let Some(mem) = mems.get(&id) else {
            return Err(format!("{file}: no source with ID {id:#04x}"));
        };
        let mine = expand(
            ours.get(&id).map_or(&[][..], Vec::as_slice),
            &**mem,
            etm_ids.contains(&id),
        );
        let mut matched = 0;
        let mut first = None;
        for (k, (d, o)) in ds5.iter().zip(&mine).enumerate() {
            let same = d.addr == o.addr
                && d.failed.is_none_or(|f| Some(f) == o.failed)
                && d.cycles.is_none_or(|c| Some(c) == o.cycles);
            if same {
                matched += 1;
            } else {
                first.get_or_insert(k);
            }
        }
        let ok = first.is_none() && ds5.len() <= mine.len();
        println!(
            "{:<18} ID {id:#04x}: {matched} of {} DS-5 instructions matched (ours {}){}",
            file.rsplit('/').next().unwrap_or(file),
            ds5.len(),
            mine.len(),
            if ok { "  OK" } else { "  FAIL" }
        );
        if let Some(k) = first {
            failed = true;
            for j in k.saturating_sub(2)..k + 3 {
                println!("    DS-5 #{j}: {:x?}", ds5.get(j));
                println!("    ours #{j}: {:x?}", mine.get(j));
            }
        }
    }
    if failed {
        Err("decoded events differ from OpenCSD / DS-5".into())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole comparison on the real captures: skipped with a message
    /// when the test data is absent, failing when `CI` is set.
    #[test]
    fn real_captures_match_opencsd_and_ds5() {
        let dir = crate::testdata_dir();
        assert_eq!(run(&dir, false), Ok(()));
    }

    #[test]
    fn listing_elements_are_reduced_to_values() {
        let text = "Idx:890; ID:10; OCSD_GEN_TRC_ELEM_INSTR_RANGE(exec range=0xc002115c:[0xc002115e] num_i(1) last_sz(2) (ISA=T32) E ---  [CC=1]; )\n\
                    Idx:13; ID:2; OCSD_GEN_TRC_ELEM_EXCEPTION(pref ret addr:0x80001ba0; excep num (0x01) )\n\
                    Idx:22; ID:10; OCSD_GEN_TRC_ELEM_NO_SYNC( [init-decoder])\n";
        let e = parse_elements(text);
        assert_eq!(
            e[&0x10][0].what,
            "range 0xc002115c-0xc002115e n=1 T32 E --- link=false ret=false cond=false cc=1"
        );
        assert_eq!(e[&0x10][1].idx, None);
        assert_eq!(e[&2][0].what, "exception 1 ret=0x80001ba0");
    }
}
