//! Folded stacks with inlined frames against ground truth made without
//! our call-stack code: the corpus programs' executed flows (recorded by
//! an emulator) walked by the rules of the corpus' own truth tool
//! (`corpus/tools/coverage.py`, which gives the `stacks` of `*.cov.json`),
//! each frame then followed by the inlined functions GNU addr2line
//! (`-f -i`) reports at that frame's position: the instruction running in
//! the innermost frame, the call instruction in a caller, the return
//! address in code an exception interrupted.
//!
//! The walk is checked first: without the inlined functions it gives the
//! `stacks` of `*.cov.json` exactly. Then every program, encoded as ETMv3
//! and PTM trace, is converted (inlined frames on, the default) and its
//! folded stacks compared with the truth, stack by stack.

use crate::common_addr2line;

use crate::convert_common::{
    convert_trace, corpus_program, corpus_traces, folded_map, truth_stacks, TaskRecord,
};
use object::{Object, ObjectSymbol};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use trace_core::memory::{MemoryImage, MemoryMap, Space};
use trace_encode::{Cond, Flow, FlowItem, Isa};

/// Function symbols as the truth tool takes them: `STT_FUNC` symbols not
/// named `$...`, Thumb bit cleared, one per address (global before weak
/// before local, then by name); sorted by address.
fn functions(elf: &Path) -> Vec<(u32, String)> {
    let bytes = std::fs::read(elf).expect("elf");
    let file = object::File::parse(&*bytes).expect("ELF");
    let mut best: BTreeMap<u32, ((u8, String), String)> = BTreeMap::new();
    for s in file.symbols() {
        if s.kind() != object::SymbolKind::Text {
            continue;
        }
        let name = s.name().expect("name").to_owned();
        if name.starts_with('$') || name.is_empty() {
            continue;
        }
        let addr = u32::try_from(s.address()).expect("32-bit") & !1;
        let rank = if s.is_weak() {
            1
        } else if s.is_global() {
            0
        } else {
            2
        };
        let key = (rank, name.clone());
        match best.get(&addr) {
            Some((k, _)) if *k <= key => {}
            _ => {
                best.insert(addr, (key, name));
            }
        }
    }
    best.into_iter().map(|(a, (_, n))| (a, n)).collect()
}

/// The function at or nearest before `addr`.
fn function_at(fns: &[(u32, String)], addr: u32) -> Option<&(u32, String)> {
    let i = fns.partition_point(|(a, _)| *a <= addr);
    i.checked_sub(1).map(|i| &fns[i])
}

fn name_at(fns: &[(u32, String)], addr: u32) -> String {
    function_at(fns, addr).map_or_else(|| format!("{addr:#x}"), |(_, n)| n.clone())
}

/// A branch with link (`BL`, `BLX`), from its encoding.
fn is_link(mem: &MemoryMap, addr: u32, isa: Isa, size: u8) -> bool {
    let mut b = [0u8; 4];
    assert_eq!(
        mem.read(Space::Any, addr, &mut b[..usize::from(size)]),
        usize::from(size)
    );
    match (isa, size) {
        (Isa::A32, _) => {
            let w = u32::from_le_bytes(b);
            if w >> 28 == 0xf {
                w & 0xfe00_0000 == 0xfa00_0000
            } else {
                w & 0x0f00_0000 == 0x0b00_0000 || w & 0x0fff_fff0 == 0x012f_ff30
            }
        }
        (Isa::T32, 2) => u16::from_le_bytes([b[0], b[1]]) & 0xff87 == 0x4780,
        (Isa::T32, _) => {
            let hw1 = u16::from_le_bytes([b[0], b[1]]);
            let hw2 = u16::from_le_bytes([b[2], b[3]]);
            hw1 & 0xf800 == 0xf000 && (hw2 & 0xd000 == 0xd000 || hw2 & 0xd001 == 0xc000)
        }
    }
}

struct TruthFrame {
    name: String,
    ret: Option<u32>,
    exception: bool,
    /// Where the inlined functions of this frame are looked up.
    at: u32,
}

/// Per stack, the instructions executed with it: real functions only, and
/// with the inlined functions of `chains` (per address) after each frame.
/// With the emulator's task record (`tasks`), each task has a stack of its
/// own, parked from the exception return that resumes another task, and
/// its stacks start with its name.
fn truth(
    flow: &Flow,
    fns: &[(u32, String)],
    mem: &MemoryMap,
    chains: &BTreeMap<u32, Vec<String>>,
    tasks: Option<&TaskRecord>,
) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let mut plain = BTreeMap::new();
    let mut inlined = BTreeMap::new();
    let mut stack: Vec<TruthFrame> = Vec::new();
    let mut parked: BTreeMap<u32, Vec<TruthFrame>> = BTreeMap::new();
    let mut running = 0;
    let mut label: Vec<String> = Vec::new();
    let mut switches = tasks.map_or(&[][..], |t| &t.switches).iter().peekable();
    let mut index = 0u64;
    let mut pending_link: Option<u32> = None;
    let mut prev: Option<(u32, u32)> = None;
    let frame = |name: String, ret, exception, at| TruthFrame {
        name,
        ret,
        exception,
        at,
    };
    for item in &flow.items {
        match *item {
            FlowItem::Insn {
                addr,
                isa,
                size,
                cond,
            } => {
                index += 1;
                if stack.is_empty() {
                    stack.push(frame(name_at(fns, addr), None, false, addr));
                } else if let Some(ret) = pending_link.take() {
                    stack.push(frame(name_at(fns, addr), Some(ret), false, addr));
                } else {
                    arrive(&mut stack, fns, addr, prev);
                }
                stack.last_mut().expect("a frame").at = addr;
                let real: Vec<&str> = label
                    .iter()
                    .map(String::as_str)
                    .chain(stack.iter().map(|f| f.name.as_str()))
                    .collect();
                *plain.entry(real.join(";")).or_insert(0) += 1;
                let mut with = label.clone();
                for f in &stack {
                    with.push(f.name.clone());
                    with.extend(chains.get(&f.at).expect("chain looked up").iter().cloned());
                }
                *inlined.entry(with.join(";")).or_insert(0) += 1;
                if cond != Cond::Failed && is_link(mem, addr, isa, size) {
                    pending_link = Some(addr + u32::from(size));
                }
                prev = Some((addr, u32::from(size)));
            }
            FlowItem::Exception { vector, ret, .. } => {
                match pending_link.take() {
                    Some(link) => stack.push(frame(name_at(fns, ret), Some(link), false, ret)),
                    // A task taking an exception before its first
                    // instruction.
                    None if stack.is_empty() => {
                        stack.push(frame(name_at(fns, ret), None, false, ret))
                    }
                    None => {
                        // A return or jump taken before the exception
                        // arrived there.
                        if prev.is_some() {
                            arrive(&mut stack, fns, ret, prev);
                        }
                        stack.last_mut().expect("a frame").at = ret;
                    }
                }
                // A vector inside a function (the A-profile vector table)
                // is named by its address, as corpus/tools/coverage.py
                // names it.
                let name = match function_at(fns, vector) {
                    Some((start, name)) if *start == vector => name.clone(),
                    _ => format!("{vector:#010x}"),
                };
                stack.push(frame(name, None, true, vector));
                prev = None;
            }
            FlowItem::ExceptionReturn { .. } => {
                if let Some(&(_, task)) = switches.next_if(|s| s.0 == index) {
                    // Another task runs from here: the one left stays in
                    // its handler.
                    parked.insert(running, std::mem::take(&mut stack));
                    running = task;
                    stack = parked.remove(&task).unwrap_or_default();
                    label = tasks
                        .and_then(|t| t.names.get(&task))
                        .cloned()
                        .into_iter()
                        .collect();
                    prev = None;
                    if stack.is_empty() {
                        continue;
                    }
                }
                let i = stack
                    .iter()
                    .rposition(|f| f.exception)
                    .expect("an exception to return from");
                stack.truncate(i);
                prev = None;
            }
            FlowItem::Halt => break,
        }
    }
    (plain, inlined)
}

/// The flow reaches `addr` after `prev` with no call pending: a return to a
/// frame's return address closes it and those above it; a jump (the flow
/// is not sequential) to a function's start renames the innermost frame.
fn arrive(stack: &mut Vec<TruthFrame>, fns: &[(u32, String)], addr: u32, prev: Option<(u32, u32)>) {
    if let Some(i) = (1..stack.len())
        .rev()
        .find(|&i| stack[i].ret == Some(addr) && !stack[i].exception)
    {
        stack.truncate(i);
    } else if let Some((pa, ps)) = prev {
        if pa + ps != addr {
            if let Some((fa, fname)) = function_at(fns, addr) {
                if let Some(top) = stack.last_mut() {
                    if *fa == addr && top.name != *fname {
                        top.name = fname.clone();
                    }
                }
            }
        }
    }
}

/// Every address the truth looks inlined functions up at.
fn positions(flow: &Flow) -> BTreeSet<u32> {
    let mut v = BTreeSet::new();
    for item in &flow.items {
        match *item {
            FlowItem::Insn { addr, .. } => {
                v.insert(addr);
            }
            FlowItem::Exception { vector, ret, .. } => {
                v.insert(vector);
                v.insert(ret);
            }
            _ => {}
        }
    }
    v
}

/// addr2line's chains at `addrs`, asked once per function (see
/// `inline_scopes.rs` for why).
fn chains_at(
    elf: &Path,
    fns: &[(u32, String)],
    addrs: &BTreeSet<u32>,
) -> BTreeMap<u32, Vec<String>> {
    let mut by_function: BTreeMap<Option<u32>, Vec<u32>> = BTreeMap::new();
    for a in addrs {
        by_function
            .entry(function_at(fns, *a).map(|f| f.0))
            .or_default()
            .push(*a);
    }
    by_function
        .values()
        .flat_map(|v| common_addr2line::inline_chains(elf, v))
        .collect()
}

fn differences(truth: &BTreeMap<String, u64>, got: &BTreeMap<String, u64>) -> String {
    truth
        .keys()
        .chain(got.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| truth.get(*k) != got.get(*k))
        .take(6)
        .map(|k| format!("{k}: truth {:?}, ours {:?}", truth.get(k), got.get(k)))
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn folded_stacks_with_inlined_frames_match_the_flow_and_addr2line() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    if !common_addr2line::available(
        "folded_stacks_with_inlined_frames_match_the_flow_and_addr2line",
    ) {
        return;
    }
    let tmp = std::env::temp_dir().join(format!("tc-inline-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let names = test_support::corpus_programs(&dir, ".cov.json");
    let mut failures = Vec::new();
    let (mut compared, mut inlined_stacks) = (0, 0);
    for name in &names {
        let (elf, flow, mem) = corpus_program(&dir, name);
        let fns = functions(&elf);
        let chains = chains_at(&elf, &fns, &positions(&flow));
        let tasks = TaskRecord::read(&dir.join(format!("{name}.tasks")));
        let (plain, with_inline) = truth(&flow, &fns, &mem, &chains, tasks.as_ref());
        assert_eq!(
            plain,
            truth_stacks(&dir.join(format!("{name}.cov.json"))),
            "{name}: the walk gives the corpus' own stacks"
        );
        inlined_stacks += with_inline.len() - plain.len();
        for (protocol, trace) in corpus_traces(name, &flow, &mem) {
            let got = folded_map(&convert_trace(&trace, protocol, &elf, &tmp, true));
            let without = folded_map(&convert_trace(&trace, protocol, &elf, &tmp, false));
            compared += 1;
            assert_eq!(
                got.values().sum::<u64>(),
                without.values().sum::<u64>(),
                "{name}: the same instructions with and without inlined frames"
            );
            if got != with_inline {
                failures.push(format!(
                    "{name} {}: {}",
                    protocol.name(),
                    differences(&with_inline, &got)
                ));
            }
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
    eprintln!("{compared} conversions compared; {inlined_stacks} stacks with inlined frames");
    assert!(inlined_stacks > 5, "the corpus runs inlined code");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
