//! Instruction coverage accumulated from decoded events, and its LCOV
//! form.
//!
//! [`Coverage::add`] takes every [`Event`]; each [`Range`] counts one
//! *reach* for each of its instructions (the trace says the processor got
//! to the instruction: it executed, or failed its condition). For
//! conditional instructions it also counts *passed* and *failed*, where
//! the trace says which:
//!
//! - **ETMv3** gives an atom per instruction, and the decoder reports each
//!   instruction as a range of one, whose [`Range::executed`] is that atom.
//!   Every conditional instruction's outcome is therefore known.
//! - **PTM** gives an atom per waypoint only. The decoder ends a range at a
//!   waypoint, so every instruction of a range but the last is a
//!   non-waypoint whose condition PTM does not trace: those are counted as
//!   reached only. The last instruction's outcome is its atom.
//!
//! So the rule, exact for both protocols, is: the last instruction of a
//! range has the outcome [`Range::executed`]; the others have none. One
//! approximation remains: a PTM waypoint update packet ends a range at an
//! instruction whose condition PFT leaves unknown, and the decoder reports
//! it as executed, so such an instruction, if conditional, counts as
//! passed.
//!
//! "Conditional" is the effective condition: an A32 condition field other
//! than AL, a T32 `B<c>`, an instruction inside a T32 IT block (the IT
//! state is followed from range to range while execution runs on
//! sequentially, so ETMv3's one-instruction ranges keep it), and
//! `CBZ`/`CBNZ` (passed: branched). After any other discontinuity the IT
//! state starts empty (an exception return into the middle of an IT block
//! is not followed).
//!
//! An instruction is its address, ISA and encoding: runs of the same code
//! in the secure and the non-secure state add up (see
//! [`Coverage::instructions`]).
//!
//! Accumulation is cheap: counts are kept per distinct range (start,
//! length, ISA, space, IT state), and the code is decoded once per distinct
//! range; per-instruction counts are made when asked for.

mod part;

pub use part::CoveragePart;

use super::tracefile::{FileCoverage, FunctionCoverage, LcovReport};
use isa_decode::{Cond, ItState, Kind};
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use trace_core::event::{Event, EventKind, Isa, Range};
use trace_core::memory::{CodeKind, MemoryImage, Space};

/// Where an address lies in the source, as the debug information says
/// (implemented by the caller, typically from DWARF line tables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineInfo {
    /// Source file path.
    pub file: String,
    /// Line number (1-based).
    pub line: u32,
    /// The function holding the address: its name, entry address (bit 0,
    /// the Thumb bit, is ignored) and first line.
    pub function: Option<(String, u32, u32)>,
}

/// Options of [`Coverage::to_lcov`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LcovOptions {
    /// Test name written as `TN:`.
    pub test_name: Option<String>,
    /// Also report conditional instructions that are not branches (ETMv3
    /// traces their outcome) as two-way branches: passed, failed. Those
    /// whose outcome the trace never gave (PTM) are left out.
    pub conditional_instructions: bool,
}

/// Counts of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsnCoverage {
    /// Memory space the instruction was reached in: [`Space::Any`] when
    /// reached in both (the same bytes), the space given to
    /// [`Coverage::add_code`] when never reached.
    pub space: Space,
    /// Address.
    pub addr: u32,
    /// Instruction set.
    pub isa: Isa,
    /// Times the trace reached the instruction.
    pub reached: u64,
    /// Times it passed its condition (conditional instructions, outcome
    /// known).
    pub passed: u64,
    /// Times it failed its condition (conditional instructions, outcome
    /// known).
    pub failed: u64,
    /// Its effective condition ([`Cond::Al`] for `CBZ`/`CBNZ`, see
    /// [`InsnCoverage::conditional`]).
    pub cond: Cond,
    /// A branch: direct, indirect, compare-and-branch or exception return.
    pub branch: bool,
    /// `CBZ`/`CBNZ`: conditional on a register.
    pub compare_branch: bool,
}

impl InsnCoverage {
    /// Whether the instruction is conditional.
    #[must_use]
    pub fn conditional(&self) -> bool {
        self.cond != Cond::Al || self.compare_branch
    }
}

/// Key of a distinct range: space, start, end, ISA, instruction count, IT
/// state at the first instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RangeKey {
    start: u32,
    end: u32,
    count: u32,
    isa: Isa,
    space: Space,
    it: u8,
}

/// A [`RangeKey`] packed in two words, compared and hashed as such (this
/// is done for every range event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Packed {
    /// Start and end address.
    span: u64,
    /// Count, ISA, space and IT state.
    rest: u64,
}

/// Counts of a distinct range (it ran `passed + failed` times).
#[derive(Debug, Clone, Copy)]
struct RangeCount {
    /// The range.
    key: Packed,
    /// Times its last instruction passed / failed.
    passed: u64,
    failed: u64,
    /// IT state after the range.
    it_out: u8,
}

impl RangeCount {
    /// Count one run whose last instruction passed (`executed`) or failed
    /// its condition; returns the IT state after the range.
    #[inline(always)]
    fn count(&mut self, executed: bool) -> u8 {
        if executed {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        self.it_out
    }
}

/// Where a trace source's flow goes on sequentially, packed: the address
/// (bits 0-31), ISA and space ([`isa_space`], bits 32-47), IT state (bits
/// 48-55) and [`NEXT_VALID`]; 0 when the flow is broken.
type Next = u64;

/// The bit of a [`Next`] that says it holds a place.
const NEXT_VALID: u64 = 1 << 56;

/// The IT state's bits of a [`Next`].
const NEXT_IT: u64 = 0xFF << 48;

/// ISA and space of a range in 16 bits, placed at bit 32 of the packed
/// forms.
#[inline]
fn isa_space(isa: Isa, space: Space) -> u64 {
    let isa = match isa {
        Isa::A32 => 0u64,
        Isa::T32 => 1,
    };
    let space = match space {
        Space::Any => 0u64,
        Space::Secure => 1,
        Space::NonSecure => 2,
    };
    (isa | space << 8) << 32
}

#[cfg(test)]
impl RangeKey {
    /// The packed form.
    fn packed(&self) -> Packed {
        Packed {
            span: u64::from(self.start) | u64::from(self.end) << 32,
            rest: u64::from(self.count)
                | isa_space(self.isa, self.space)
                | u64::from(self.it) << 48,
        }
    }
}

/// A small multiplicative hasher for the range table (keys are a few
/// integers; no untrusted keys to defend against collisions from).
#[derive(Default)]
struct MulHasher(u64);

impl Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_isize(&mut self, v: isize) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MulHasher>>;

/// The cache slot of a range from `start` to `end`.
#[inline]
fn cache_slot(start: u32, end: u32) -> usize {
    let h = (start ^ end.rotate_left(13)).wrapping_mul(0x9E37_79B1);
    (h >> 20) as usize & (CACHE_SLOTS - 1)
}

/// Slots of the direct-mapped cache in front of the range table (a power
/// of two).
const CACHE_SLOTS: usize = 4096;

/// Accumulates coverage from decoded events; see the [module](self) docs.
pub struct Coverage {
    memory: Arc<dyn MemoryImage>,
    /// Every distinct range with its counts, in order of first sight.
    ranges: Vec<RangeCount>,
    /// The same ranges unpacked (same index).
    keys: Vec<RangeKey>,
    /// Index of each range in `ranges`.
    index: FastMap<Packed, u32>,
    /// A direct-mapped cache of `index` by start and end address: the
    /// index plus one, 0 when empty. Loops run the same few ranges over
    /// and over, so most lookups end here.
    cache: Box<[u32; CACHE_SLOTS]>,
    /// Per trace ID: where its flow goes on sequentially. Kept only once
    /// some range ends inside an IT block (`it_any`): before that, every
    /// range starts with an empty IT state whatever came before it.
    next: Box<[Next; 256]>,
    /// Some range seen ends inside an IT block.
    it_any: bool,
    /// Code known from the program but maybe never reached.
    code: Vec<(Space, u32, u32, Isa)>,
}

impl std::fmt::Debug for Coverage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coverage")
            .field("ranges", &self.ranges.len())
            .finish_non_exhaustive()
    }
}

impl Coverage {
    /// An empty accumulator reading code from `memory` (the image the
    /// events were decoded with).
    pub fn new(memory: Arc<dyn MemoryImage>) -> Coverage {
        Coverage {
            memory,
            ranges: Vec::new(),
            keys: Vec::new(),
            index: FastMap::default(),
            cache: Box::new([0; CACHE_SLOTS]),
            next: Box::new([0; 256]),
            it_any: false,
            code: Vec::new(),
        }
    }

    /// Account for one event. Ranges are counted; gaps, trace-on and
    /// loss of synchronization end the sequential flow of their source.
    #[inline(always)]
    pub fn add(&mut self, event: &Event) {
        // Ranges first, the rest out of line: ranges are nearly every
        // event, and one test tells them.
        if let EventKind::Range(ref r) = event.kind {
            self.add_range(event.id, r);
        } else {
            self.add_other(event);
        }
    }

    /// [`add`](Self::add) for an event that is not a range.
    #[inline(never)]
    fn add_other(&mut self, event: &Event) {
        if let EventKind::Gap(_)
        | EventKind::AddrNacc { .. }
        | EventKind::TraceOn { .. }
        | EventKind::NoSync = event.kind
        {
            self.next[usize::from(event.id)] = 0;
        }
    }

    #[inline(always)]
    fn add_range(&mut self, id: u8, r: &Range) {
        let id = usize::from(id);
        let isa_space = isa_space(r.isa, r.space);
        // The IT state goes on when the flow does.
        let it = if self.it_any {
            let next = self.next[id];
            if next & !NEXT_IT == u64::from(r.start) | isa_space | NEXT_VALID {
                next & NEXT_IT
            } else {
                0
            }
        } else {
            0
        };
        let key = Packed {
            span: u64::from(r.start) | u64::from(r.end) << 32,
            rest: u64::from(r.count) | isa_space | it,
        };
        let slot = cache_slot(r.start, r.end);
        let cached = self.cache[slot] as usize;
        // A hit is counted where it was found (no second bounds check).
        let it_out = if let Some(c) = self
            .ranges
            .get_mut(cached.wrapping_sub(1))
            .filter(|c| c.key == key)
        {
            c.count(r.executed)
        } else {
            self.add_missed(key, slot, r.executed)
        };
        if self.it_any {
            self.next[id] = u64::from(r.end) | isa_space | u64::from(it_out) << 48 | NEXT_VALID;
        }
    }

    /// [`add_range`](Self::add_range) for a range not in the cache: count
    /// it and return the IT state after it.
    #[inline(never)]
    fn add_missed(&mut self, key: Packed, slot: usize, executed: bool) -> u8 {
        let i = self.lookup(key, slot);
        self.ranges.get_mut(i).map_or(0, |c| c.count(executed))
    }

    /// The index of `key` in `ranges` (added when new), remembered in the
    /// cache at `slot`.
    #[inline(never)]
    fn lookup(&mut self, key: Packed, slot: usize) -> usize {
        let i = match self.index.get(&key) {
            Some(&i) => i as usize,
            None => {
                let full = unpack(key);
                let it_out = walk(&*self.memory, &full, |_| {}).raw();
                self.insert(key, full, it_out)
            }
        };
        self.cache[slot] = u32::try_from(i + 1).unwrap_or(0);
        i
    }

    /// Add the range `key` (unpacked: `full`), not yet known, with no
    /// counts and the IT state `it_out` after it; returns its index.
    fn insert(&mut self, key: Packed, full: RangeKey, it_out: u8) -> usize {
        self.it_any |= it_out != 0;
        let i = self.ranges.len();
        self.ranges.push(RangeCount {
            key,
            passed: 0,
            failed: 0,
            it_out,
        });
        self.keys.push(full);
        self.index.insert(key, u32::try_from(i).unwrap_or(u32::MAX));
        i
    }

    /// Make the instructions of `[start, end)` known as code, so that lines
    /// and branch sites never reached still appear (with zero counts).
    /// Literal data the memory image marks ([`CodeKind::Data`], from ELF
    /// mapping symbols) is stepped over.
    pub fn add_code(&mut self, space: Space, start: u32, end: u32, isa: Isa) {
        self.code.push((space, start, end, isa));
    }

    /// Number of distinct ranges seen.
    #[must_use]
    pub fn distinct_ranges(&self) -> usize {
        self.ranges.len()
    }

    /// Per-instruction counts, in address order.
    ///
    /// An instruction is its address, ISA and encoding: the same bytes
    /// reached in either memory space (ranges carry the space the trace
    /// says the core was in; the image may answer both from one region,
    /// such as an ELF file) are one instruction with the counts of both,
    /// while different code at the same address in the secure and the
    /// non-secure image stays apart. Code known through
    /// [`add_code`](Self::add_code) adds the instructions no reached
    /// instruction overlaps, in any space, so known code never doubles
    /// code that ran. Instructions the memory image cannot give are left
    /// out.
    #[must_use]
    pub fn instructions(&self) -> Vec<InsnCoverage> {
        let mut map: BTreeMap<(u32, bool, u32), InsnCoverage> = BTreeMap::new();
        // Where reached instructions start, and where they end.
        let mut reached: BTreeMap<u32, u64> = BTreeMap::new();
        for (key, c) in self.keys.iter().zip(&self.ranges) {
            let times = c.passed + c.failed;
            let mut i = 0u32;
            walk(&*self.memory, key, |(addr, insn, cond, bits)| {
                i += 1;
                let end = u64::from(addr) + u64::from(insn.size);
                let e = reached.entry(addr).or_insert(end);
                *e = (*e).max(end);
                let e = map
                    .entry((addr, key.isa == Isa::T32, bits))
                    .or_insert_with(|| new_insn(key.space, addr, key.isa, insn, cond));
                if e.space != key.space {
                    e.space = Space::Any;
                }
                // The same address may be reached under another IT state;
                // keep a condition once one is known.
                if e.cond == Cond::Al {
                    e.cond = cond;
                }
                e.reached += times;
                let conditional = cond != Cond::Al || insn.kind == Kind::CompareBranch;
                if i == key.count && conditional {
                    e.passed += c.passed;
                    e.failed += c.failed;
                }
            });
        }
        let overlaps_reached = |addr: u32, size: u8| {
            let end = u64::from(addr) + u64::from(size);
            reached
                .range(addr.saturating_sub(3)..)
                .take_while(|(&a, _)| u64::from(a) < end)
                .any(|(_, &e)| e > u64::from(addr))
        };
        for &(space, start, end, isa) in &self.code {
            let mut addr = start;
            let mut it = ItState::new();
            while addr < end {
                // Literal data inside the code (ELF mapping symbols) is
                // stepped over, not read as instructions.
                if self.memory.code_kind(addr) == Some(CodeKind::Data) {
                    let step = if isa == Isa::T32 { 2 } else { 4 };
                    addr = match addr.checked_add(step) {
                        Some(a) => a,
                        None => break,
                    };
                    it = ItState::new();
                    continue;
                }
                let Some((insn, bits)) = read_insn(&*self.memory, space, isa, addr) else {
                    break;
                };
                let cond = match isa {
                    Isa::T32 => it.step(&insn),
                    Isa::A32 => insn.cond,
                };
                if !overlaps_reached(addr, insn.size) {
                    map.entry((addr, isa == Isa::T32, bits))
                        .or_insert_with(|| new_insn(space, addr, isa, &insn, cond));
                }
                addr = match addr.checked_add(u32::from(insn.size)) {
                    Some(a) => a,
                    None => break,
                };
            }
        }
        map.into_values().collect()
    }

    /// The LCOV model of this coverage.
    ///
    /// `lookup` maps an address to its source line. `rows` may list the
    /// addresses of every line-table row, so that lines never reached
    /// appear with count 0 (and their functions with 0 calls).
    ///
    /// - `DA`: the largest reach count of any instruction of the line;
    /// - `FNDA`: the reach count of the function's entry instruction;
    /// - `BRDA`: for every conditional branch (`B<c>`, `CBZ`/`CBNZ`,
    ///   conditional indirect branches and exception returns) a block of
    ///   two: branch 0 taken (passed), branch 1 not taken (failed); `-`
    ///   when the instruction was never reached (known only through
    ///   [`Coverage::add_code`]). With
    ///   [`LcovOptions::conditional_instructions`], other conditional
    ///   instructions with a traced outcome too. Blocks are numbered per
    ///   line in address order.
    pub fn to_lcov<F>(
        &self,
        lookup: F,
        rows: impl IntoIterator<Item = u32>,
        opts: &LcovOptions,
    ) -> LcovReport
    where
        F: Fn(u32) -> Option<LineInfo>,
    {
        self.to_lcov_inlined(lookup, rows, &[], opts)
    }

    /// [`to_lcov`](Self::to_lcov), with the inlined copies of functions
    /// (name and where the copy is entered, see
    /// [`Symbolizer::inlined_copies`](crate::symbols::Symbolizer::inlined_copies))
    /// as functions too: each copy is listed in the file its entry's line
    /// lies in, and a function's `FNDA` adds the reach count of every
    /// copy's entry to that of its own entry (a function that was only
    /// inlined is listed at its first copy's line).
    pub fn to_lcov_inlined<F>(
        &self,
        lookup: F,
        rows: impl IntoIterator<Item = u32>,
        inlined: &[(String, u32)],
        opts: &LcovOptions,
    ) -> LcovReport
    where
        F: Fn(u32) -> Option<LineInfo>,
    {
        let insns = self.instructions();
        let mut report = LcovReport {
            test_name: opts.test_name.clone(),
            files: BTreeMap::new(),
        };
        // Reach of each address (the largest over ISAs and spaces), for
        // function entries.
        let mut reach: HashMap<u32, u64> = HashMap::new();
        for i in &insns {
            let r = reach.entry(i.addr).or_insert(0);
            *r = (*r).max(i.reached);
        }
        let mut blocks: HashMap<(String, u32), u32> = HashMap::new();
        let add_function = |file: &mut FileCoverage, f: &(String, u32, u32)| {
            let count = reach.get(&(f.1 & !1)).copied().unwrap_or(0);
            file.functions
                .entry(f.0.clone())
                .or_insert(FunctionCoverage { line: f.2, count });
        };
        for i in &insns {
            let Some(li) = lookup(i.addr) else {
                continue;
            };
            let file = report.files.entry(li.file.clone()).or_default();
            file.line_max(li.line, i.reached);
            if let Some(f) = &li.function {
                add_function(file, f);
            }
            let site = i.conditional()
                && (i.branch
                    || (opts.conditional_instructions
                        && (i.reached == 0 || i.passed + i.failed > 0)));
            if site {
                let b = blocks.entry((li.file.clone(), li.line)).or_insert(0);
                let (taken, not) = if i.reached == 0 {
                    (None, None)
                } else {
                    (Some(i.passed), Some(i.failed))
                };
                file.branches.insert((li.line, *b, 0), taken);
                file.branches.insert((li.line, *b, 1), not);
                *b += 1;
            }
        }
        for addr in rows {
            if let Some(li) = lookup(addr) {
                let file = report.files.entry(li.file.clone()).or_default();
                file.line_max(li.line, 0);
                if let Some(f) = &li.function {
                    add_function(file, f);
                }
            }
        }
        for (name, entry) in inlined {
            let Some(li) = lookup(*entry) else {
                continue;
            };
            let count = reach.get(&(entry & !1)).copied().unwrap_or(0);
            let file = report.files.entry(li.file.clone()).or_default();
            file.functions
                .entry(name.clone())
                .and_modify(|f| f.count += count)
                .or_insert(FunctionCoverage {
                    line: li.line,
                    count,
                });
        }
        report
    }
}

fn new_insn(
    space: Space,
    addr: u32,
    isa: Isa,
    insn: &isa_decode::Insn,
    cond: Cond,
) -> InsnCoverage {
    let compare_branch = insn.kind == Kind::CompareBranch;
    InsnCoverage {
        space,
        addr,
        isa,
        reached: 0,
        passed: 0,
        failed: 0,
        cond,
        branch: compare_branch
            || matches!(
                insn.kind,
                Kind::Branch | Kind::IndirectBranch | Kind::ExceptionReturn
            ),
        compare_branch,
    }
}

/// The instruction at `addr` in `space`, with its encoding (its bytes,
/// little-endian).
fn read_insn(
    memory: &dyn MemoryImage,
    space: Space,
    isa: Isa,
    addr: u32,
) -> Option<(isa_decode::Insn, u32)> {
    let mut bytes = [0u8; 4];
    let n = memory.read(space, addr, &mut bytes);
    let insn = isa_decode::decode(isa, &bytes[..n], addr)?;
    bytes[usize::from(insn.size).min(4)..].fill(0);
    Some((insn, u32::from_le_bytes(bytes)))
}

/// The [`RangeKey`] of a packed one.
fn unpack(p: Packed) -> RangeKey {
    let isa = if p.rest >> 32 & 0xFF == 0 {
        Isa::A32
    } else {
        Isa::T32
    };
    let space = match p.rest >> 40 & 0xFF {
        0 => Space::Any,
        1 => Space::Secure,
        _ => Space::NonSecure,
    };
    RangeKey {
        start: p.span as u32,
        end: (p.span >> 32) as u32,
        count: p.rest as u32,
        isa,
        space,
        it: (p.rest >> 48) as u8,
    }
}

/// Decode the instructions of a distinct range, calling `f` with each
/// (address, instruction, effective condition, encoding); returns the IT
/// state after the range. Stops early where the memory gives no
/// instruction, and at the range's end whatever its count says.
fn walk<F>(memory: &dyn MemoryImage, key: &RangeKey, mut f: F) -> ItState
where
    F: FnMut((u32, &isa_decode::Insn, Cond, u32)),
{
    let mut it = ItState::from_raw(key.it);
    let mut addr = key.start;
    for k in 0..key.count {
        // A range never goes past its end (a bound on damaged counts).
        if k > 0 && addr == key.end {
            break;
        }
        let Some((insn, bits)) = read_insn(memory, key.space, key.isa, addr) else {
            return ItState::new();
        };
        let cond = match key.isa {
            Isa::T32 => it.step(&insn),
            Isa::A32 => insn.cond,
        };
        f((addr, &insn, cond, bits));
        addr = addr.wrapping_add(u32::from(insn.size));
    }
    it
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_core::event::InsnClass;
    use trace_core::memory::{MemoryMap, Region};

    /// A32 at 0x1000: `cmp r0, #0; moveq r1, #1; bne 0x1000; bx lr`.
    /// T32 at 0x2000: `it eq; moveq r0, #1; cbz r0, 0x200c; bx lr`.
    fn memory() -> Arc<dyn MemoryImage> {
        let a32: Vec<u8> = [0xE350_0000u32, 0x03A0_1001, 0x1AFF_FFFC, 0xE12F_FF1E]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let t32: Vec<u8> = [0xBF08u16, 0x2001, 0xB110, 0x4770]
            .iter()
            .flat_map(|h| h.to_le_bytes())
            .collect();
        let mut m = MemoryMap::new();
        let a: Arc<[u8]> = a32.into();
        let t: Arc<[u8]> = t32.into();
        m.add(Region::new("a32", 0x1000, Space::Any, a.clone(), 0, a.len()).expect("region"));
        m.add(Region::new("t32", 0x2000, Space::Any, t.clone(), 0, t.len()).expect("region"));
        Arc::new(m)
    }

    fn range(start: u32, count: u32, isa: Isa, last_size: u8, executed: bool) -> Event {
        let end = if count == 1 {
            start + u32::from(last_size)
        } else {
            start + count * u32::from(last_size)
        };
        Event {
            offset: 0,
            id: 1,
            kind: EventKind::Range(Range {
                start,
                end,
                count,
                isa,
                last_size,
                last: InsnClass::Other,
                link: false,
                ret: false,
                cond: false,
                executed,
                cycles: None,
                space: Space::NonSecure,
            }),
        }
    }

    fn counts(c: &Coverage, addr: u32) -> (u64, u64, u64) {
        c.instructions()
            .iter()
            .find(|i| i.addr == addr)
            .map_or((0, 0, 0), |i| (i.reached, i.passed, i.failed))
    }

    /// PTM: ranges end at waypoints; only their last instruction has an
    /// outcome.
    fn ptm_loop() -> Coverage {
        let mut c = Coverage::new(memory());
        // bne taken twice, then not taken; then bx lr.
        c.add(&range(0x1000, 3, Isa::A32, 4, true));
        c.add(&range(0x1000, 3, Isa::A32, 4, true));
        c.add(&range(0x1000, 3, Isa::A32, 4, false));
        c.add(&range(0x100C, 1, Isa::A32, 4, true));
        c
    }

    /// ETMv3: one range per instruction, each with its atom.
    fn etm_loop() -> Coverage {
        let mut c = Coverage::new(memory());
        for (addr, e) in [
            (0x1000, true),
            (0x1004, false),
            (0x1008, true),
            (0x1000, true),
            (0x1004, true),
            (0x1008, false),
            (0x100C, true),
        ] {
            c.add(&range(addr, 1, Isa::A32, 4, e));
        }
        c
    }

    #[test]
    fn packed_keys_unpack_to_themselves() {
        for isa in [Isa::A32, Isa::T32] {
            for space in [Space::Any, Space::Secure, Space::NonSecure] {
                for (start, end, count, it) in [
                    (0, 4, 1, 0),
                    (0xFFFF_FFF0, 0xFFFF_FFFE, 7, 0xFF),
                    (0x8000, 0x9000, 1024, 0x18),
                ] {
                    let k = RangeKey {
                        start,
                        end,
                        count,
                        isa,
                        space,
                        it,
                    };
                    assert_eq!(unpack(k.packed()), k);
                }
            }
        }
    }

    #[test]
    fn ptm_ranges_give_outcomes_of_their_last_instruction_only() {
        let c = ptm_loop();
        assert_eq!(counts(&c, 0x1000), (3, 0, 0));
        assert_eq!(counts(&c, 0x1004), (3, 0, 0), "moveq: not traced by PTM");
        assert_eq!(counts(&c, 0x1008), (3, 2, 1));
        assert_eq!(counts(&c, 0x100C), (1, 0, 0), "unconditional");
        assert_eq!(c.distinct_ranges(), 2);
    }

    #[test]
    fn etm_atoms_give_every_outcome() {
        let c = etm_loop();
        assert_eq!(counts(&c, 0x1000), (2, 0, 0));
        assert_eq!(counts(&c, 0x1004), (2, 1, 1));
        assert_eq!(counts(&c, 0x1008), (2, 1, 1));
        assert_eq!(counts(&c, 0x100C), (1, 0, 0));
    }

    #[test]
    fn a_damaged_count_stops_at_the_range_end() {
        let mut c = Coverage::new(memory());
        let mut e = range(0x1000, 2, Isa::A32, 4, true);
        if let EventKind::Range(r) = &mut e.kind {
            r.count = u32::MAX;
        }
        c.add(&e);
        let reached: Vec<u32> = c.instructions().iter().map(|i| i.addr).collect();
        assert_eq!(reached, [0x1000, 0x1004]);
    }

    #[test]
    fn it_blocks_are_followed_across_ranges() {
        let mut c = Coverage::new(memory());
        for (addr, e) in [
            (0x2000, true),
            (0x2002, false), // moveq failed
            (0x2004, true),  // cbz branched
            (0x2000, true),
            (0x2002, true),
            (0x2004, false),
            (0x2006, true),
        ] {
            c.add(&range(addr, 1, Isa::T32, 2, e));
        }
        // After a gap the IT state is unknown: the instruction is reached,
        // its outcome not counted.
        c.add(&Event {
            offset: 0,
            id: 1,
            kind: EventKind::Gap(trace_core::event::GapReason::PacketError),
        });
        c.add(&range(0x2002, 1, Isa::T32, 2, true));
        assert_eq!(counts(&c, 0x2000), (2, 0, 0));
        assert_eq!(counts(&c, 0x2002), (3, 1, 1));
        assert_eq!(counts(&c, 0x2004), (2, 1, 1));
        assert_eq!(counts(&c, 0x2006), (1, 0, 0));
        let i = c.instructions();
        let moveq = i.iter().find(|i| i.addr == 0x2002).expect("insn");
        assert_eq!(moveq.cond, Cond::Eq);
        assert!(!moveq.branch);
        let cbz = i.iter().find(|i| i.addr == 0x2004).expect("insn");
        assert!(cbz.branch && cbz.compare_branch && cbz.conditional());
    }

    /// main.c: line 10 holds `cmp` and `moveq`, line 11 `bne`, line 12
    /// `bx lr`, all in `loop` (first line 9); line 13 at 0x1010 starts
    /// `other`, never run.
    fn lookup(addr: u32) -> Option<LineInfo> {
        let (line, function) = match addr {
            0x1000 | 0x1004 => (10, ("loop", 0x1000, 9)),
            0x1008 => (11, ("loop", 0x1000, 9)),
            0x100C => (12, ("loop", 0x1000, 9)),
            0x1010 => (13, ("other", 0x1010, 13)),
            _ => return None,
        };
        Some(LineInfo {
            file: "/src/main.c".into(),
            line,
            function: Some((function.0.into(), function.1, function.2)),
        })
    }

    fn file(r: &LcovReport) -> &FileCoverage {
        r.files.get("/src/main.c").expect("file")
    }

    #[test]
    fn lcov_lines_functions_and_branches() {
        let opts = LcovOptions {
            test_name: None,
            conditional_instructions: true,
        };
        // PTM: DA is the largest reach on the line; the bne gives its
        // taken / not-taken counts; moveq has no traced outcome.
        let r = ptm_loop().to_lcov(lookup, [0x1000, 0x1008, 0x100C, 0x1010], &opts);
        let f = file(&r);
        let lines: Vec<(u32, u64)> = f.lines.iter().map(|(&l, &c)| (l, c)).collect();
        assert_eq!(lines, [(10, 3), (11, 3), (12, 1), (13, 0)]);
        assert_eq!(f.functions["loop"], FunctionCoverage { line: 9, count: 3 });
        assert_eq!(
            f.functions["other"],
            FunctionCoverage { line: 13, count: 0 }
        );
        let br: Vec<_> = f.branches.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(br, [((11, 0, 0), Some(2)), ((11, 0, 1), Some(1))]);

        // ETMv3 with conditional instructions: moveq is a two-way site.
        let r = etm_loop().to_lcov(lookup, [], &opts);
        let br: Vec<_> = file(&r).branches.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(
            br,
            [
                ((10, 0, 0), Some(1)),
                ((10, 0, 1), Some(1)),
                ((11, 0, 0), Some(1)),
                ((11, 0, 1), Some(1)),
            ]
        );
        // Without the option, branches only.
        let r = etm_loop().to_lcov(lookup, [], &LcovOptions::default());
        assert_eq!(file(&r).branches.len(), 2);
    }

    #[test]
    fn code_never_reached_gives_zero_lines_and_dash_branches() {
        let mut c = Coverage::new(memory());
        c.add_code(Space::NonSecure, 0x1000, 0x1010, Isa::A32);
        let r = c.to_lcov(lookup, [], &LcovOptions::default());
        let f = file(&r);
        assert!(f.lines.values().all(|&c| c == 0));
        assert_eq!(f.lines.len(), 3);
        let br: Vec<_> = f.branches.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(br, [((11, 0, 0), None), ((11, 0, 1), None)]);
        assert_eq!(f.functions["loop"].count, 0);
    }
}
