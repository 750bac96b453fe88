//! Coverage of code reached in either memory space: the decoder tags every
//! range with the space the core was in (secure or non-secure), while the
//! image may answer both from one region (an ELF file is loaded for
//! either) and the code known from the symbols is registered for either.
//! One instruction must be counted once, with the runs of both spaces,
//! whatever the tags; different code at the same address in the two
//! images stays apart, and neither way may known code add a block that
//! never ran next to code that did.

use std::sync::Arc;
use trace_convert::sinks::lcov::coverage::{Coverage, LcovOptions, LineInfo};
use trace_convert::sinks::lcov::tracefile::{FileCoverage, FunctionCoverage};
use trace_core::event::{Event, EventKind, InsnClass, Isa, Range};
use trace_core::memory::{CodeKind, MemoryImage, MemoryMap, Region, Space};

const CMP_R0_0: u32 = 0xE350_0000;
/// `bne 0x1000` at 0x1004.
const BNE_BACK: u32 = 0x1AFF_FFFD;
/// `beq 0x1000` at 0x1004.
const BEQ_BACK: u32 = 0x0AFF_FFFD;
const BX_LR: u32 = 0xE12F_FF1E;

fn region(base: u32, words: &[u32], space: Space) -> Region {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let data: Arc<[u8]> = bytes.into();
    Region::new("code", base, space, data.clone(), 0, data.len()).expect("region")
}

/// `count` A32 instructions from `start`, the last one passed or failed.
fn run(start: u32, count: u32, executed: bool, space: Space) -> Event {
    Event {
        offset: 0,
        id: 0x10,
        kind: EventKind::Range(Range {
            start,
            end: start + 4 * count,
            count,
            isa: Isa::A32,
            last_size: 4,
            last: InsnClass::Other,
            link: false,
            ret: false,
            cond: false,
            executed,
            cycles: None,
            space,
        }),
    }
}

/// One source line per word from 0x1000 (line 1) on, all in `loop`; from
/// 0x2000 (line 11) on, all in `spare`.
fn lookup(addr: u32) -> Option<LineInfo> {
    let (line, function) = match addr {
        0x1000..=0x100F => (1 + (addr - 0x1000) / 4, ("loop", 0x1000, 1)),
        0x2000..=0x2007 => (11 + (addr - 0x2000) / 4, ("spare", 0x2000, 11)),
        _ => return None,
    };
    Some(LineInfo {
        file: "/src/loop.c".into(),
        line,
        function: Some((function.0.into(), function.1, function.2)),
    })
}

fn lcov(c: &Coverage) -> FileCoverage {
    let mut report = c.to_lcov(lookup, [], &LcovOptions::default());
    report.files.remove("/src/loop.c").expect("file")
}

type Branches = Vec<((u32, u32, u32), Option<u64>)>;

fn branches(f: &FileCoverage) -> Branches {
    f.branches.iter().map(|(&k, &v)| (k, v)).collect()
}

#[test]
fn the_same_code_counts_once_whatever_the_space_tag() {
    // The ELF: `cmp r0, #0; bne 0x1000; bx lr` and a literal word that
    // reads as a `bne`, for either space.
    let mut m = MemoryMap::new();
    m.add(region(
        0x1000,
        &[CMP_R0_0, BNE_BACK, BX_LR, 0x1AFF_FFFF],
        Space::Any,
    ));
    m.add_code_kinds([(0x1000, CodeKind::Arm), (0x100C, CodeKind::Data)]);
    let memory: Arc<dyn MemoryImage> = Arc::new(m);
    let mut c = Coverage::new(memory);
    c.add_code(Space::Any, 0x1000, 0x1010, Isa::A32);
    // The loop runs twice in the secure state (bne taken both times), then
    // twice in the non-secure state (taken, then not), then returns.
    c.add(&run(0x1000, 2, true, Space::Secure));
    c.add(&run(0x1000, 2, true, Space::Secure));
    c.add(&run(0x1000, 2, true, Space::NonSecure));
    c.add(&run(0x1000, 2, false, Space::NonSecure));
    c.add(&run(0x1008, 1, true, Space::NonSecure));

    let insns: Vec<(u32, u64, u64, u64)> = c
        .instructions()
        .iter()
        .map(|i| (i.addr, i.reached, i.passed, i.failed))
        .collect();
    assert_eq!(
        insns,
        [(0x1000, 4, 0, 0), (0x1004, 4, 3, 1), (0x1008, 1, 0, 0)],
        "one instruction per address, the literal word none"
    );
    let f = lcov(&c);
    assert_eq!(
        branches(&f),
        [((2, 0, 0), Some(3)), ((2, 0, 1), Some(1))],
        "one block for the bne, no block that never ran"
    );
    let lines: Vec<(u32, u64)> = f.lines.iter().map(|(&l, &n)| (l, n)).collect();
    assert_eq!(lines, [(1, 4), (2, 4), (3, 1)]);
    assert_eq!(f.functions["loop"], FunctionCoverage { line: 1, count: 4 });
}

#[test]
fn different_code_in_the_two_spaces_stays_apart_without_blocks_that_never_ran() {
    // Secure and non-secure images differ at 0x1004 (bne / beq); a
    // function at 0x2000 of either never runs.
    let mut m = MemoryMap::new();
    m.add(region(0x1000, &[CMP_R0_0, BNE_BACK, BX_LR], Space::Secure));
    m.add(region(
        0x1000,
        &[CMP_R0_0, BEQ_BACK, BX_LR],
        Space::NonSecure,
    ));
    m.add(region(0x2000, &[CMP_R0_0, 0x1AFF_FFFD], Space::Any));
    let memory: Arc<dyn MemoryImage> = Arc::new(m);
    let mut c = Coverage::new(memory);
    c.add_code(Space::Any, 0x1000, 0x100C, Isa::A32);
    c.add_code(Space::Any, 0x2000, 0x2008, Isa::A32);
    c.add(&run(0x1000, 2, true, Space::Secure));
    c.add(&run(0x1000, 2, false, Space::NonSecure));

    let insns: Vec<(u32, Space, u64, u64, u64)> = c
        .instructions()
        .iter()
        .map(|i| (i.addr, i.space, i.reached, i.passed, i.failed))
        .collect();
    assert_eq!(
        insns,
        [
            // The same bytes in both images: one instruction.
            (0x1000, Space::Any, 2, 0, 0),
            // bne (secure) and beq (non-secure), in encoding order.
            (0x1004, Space::NonSecure, 1, 0, 1),
            (0x1004, Space::Secure, 1, 1, 0),
            // Known code never reached.
            (0x1008, Space::Any, 0, 0, 0),
            (0x2000, Space::Any, 0, 0, 0),
            (0x2004, Space::Any, 0, 0, 0),
        ]
    );
    let f = lcov(&c);
    assert_eq!(
        branches(&f),
        [
            ((2, 0, 0), Some(0)),
            ((2, 0, 1), Some(1)),
            ((2, 1, 0), Some(1)),
            ((2, 1, 1), Some(0)),
            ((12, 0, 0), None),
            ((12, 0, 1), None),
        ],
        "the two branches that ran, and the one in code that never ran"
    );
}
