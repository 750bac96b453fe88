//! Inlined code: for each function, the address intervals where the code
//! of inlined functions runs, read from the DWARF
//! `DW_TAG_inlined_subroutine` entries (their `DW_AT_low_pc`/`DW_AT_high_pc`
//! or `DW_AT_ranges`, and the name of their `DW_AT_abstract_origin`).
//!
//! A compilation unit is read once, when a function of it is first asked
//! about; a function's table is made from it then. Each interval of a
//! table has one chain of inlined functions, outermost first: an inlined
//! subroutine nested in another one (directly or inside lexical blocks)
//! continues its chain, and where scopes overlap the innermost one holds.

use super::reader::Reader;
use super::Function;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// One inlined function in a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InlineSite {
    /// Its name, see [`Symbolizer::inline_name`](super::Symbolizer::inline_name).
    pub name: u32,
    /// The lowest address of this inlined copy (it tells two copies of
    /// one function apart).
    pub entry: u32,
    /// Where the copy is entered: DWARF's `DW_AT_entry_pc` when given,
    /// else [`entry`](Self::entry).
    pub first: u32,
}

/// The inlined functions running at an address, and the addresses around
/// it where the same ones run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InlineScope<'a> {
    /// First address of the interval.
    pub lo: u32,
    /// End of the interval (exclusive; `u32::MAX` also stands for the end
    /// of the address space).
    pub hi: u32,
    /// The inlined functions, outermost first; empty where only the real
    /// function runs.
    pub chain: &'a [InlineSite],
}

impl InlineScope<'_> {
    /// No inlined code anywhere.
    pub(crate) const EVERYWHERE: InlineScope<'static> = InlineScope {
        lo: 0,
        hi: u32::MAX,
        chain: &[],
    };
}

/// One inlined subroutine's address range, with its chain.
#[derive(Debug, Clone)]
pub(crate) struct UnitScope {
    lo: u32,
    hi: u32,
    chain: Rc<[InlineSite]>,
}

impl UnitScope {
    /// A scope of `[lo, hi)` with this chain.
    #[cfg(test)]
    pub(crate) fn new(lo: u32, hi: u32, chain: &[InlineSite]) -> UnitScope {
        UnitScope {
            lo,
            hi,
            chain: Rc::from(chain),
        }
    }
}

/// Names of inlined functions, each once.
#[derive(Debug, Default)]
pub(crate) struct InlineNames {
    names: Vec<String>,
    ids: HashMap<String, u32>,
    /// The name of a DIE (by `.debug_info` offset) already resolved.
    by_die: HashMap<usize, u32>,
    /// Names are kept as DWARF spells them (else demangled).
    pub(crate) raw: bool,
}

impl InlineNames {
    pub(crate) fn intern(&mut self, name: String) -> u32 {
        let name = if self.raw {
            name
        } else {
            super::demangle(&name).into_owned()
        };
        if let Some(id) = self.ids.get(&name) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.clone());
        self.ids.insert(name, id);
        id
    }

    /// The name of `id` (`??` when unknown).
    pub(crate) fn get(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("??", String::as_str)
    }
}

/// The inline intervals of one function.
#[derive(Debug, Default)]
pub(crate) struct FnScopes {
    /// Sorted, disjoint, neighbours with equal chains merged.
    rows: Box<[Row]>,
    /// The chains, `rows[i].at..rows[i].at + rows[i].len`.
    sites: Box<[InlineSite]>,
}

#[derive(Debug, Clone, Copy)]
struct Row {
    lo: u32,
    hi: u32,
    at: u32,
    len: u32,
}

impl FnScopes {
    /// The table of `f` (its code ends at `end`, which is at most the next
    /// function's start) from the scopes of its compilation unit.
    pub(crate) fn build(f: &Function, end: u32, scopes: &[UnitScope]) -> FnScopes {
        let mut mine: Vec<&UnitScope> = scopes
            .iter()
            .filter(|s| s.lo < end && s.hi > f.start)
            .collect();
        if mine.is_empty() {
            return FnScopes::default();
        }
        // Shallow first: deeper scopes are painted over them.
        mine.sort_by_key(|s| (s.chain.len(), s.lo));
        let mut paint: BTreeMap<u32, (u32, usize)> = BTreeMap::new();
        for (k, s) in mine.iter().enumerate() {
            let (a, b) = (s.lo.max(f.start), s.hi.min(end));
            let overlapping: Vec<(u32, (u32, usize))> = paint
                .range(..b)
                .rev()
                .take_while(|(_, (e, _))| *e > a)
                .map(|(s, v)| (*s, *v))
                .collect();
            for (s0, (e0, c0)) in overlapping {
                paint.remove(&s0);
                if s0 < a {
                    paint.insert(s0, (a, c0));
                }
                if e0 > b {
                    paint.insert(b, (e0, c0));
                }
            }
            paint.insert(a, (b, k));
        }
        let mut rows: Vec<Row> = Vec::new();
        let mut sites: Vec<InlineSite> = Vec::new();
        let mut last: Option<usize> = None;
        for (lo, (hi, k)) in paint {
            let chain = &mine[k].chain;
            if let (Some(prev), Some(r)) = (last, rows.last_mut()) {
                if r.hi == lo && *mine[prev].chain == **chain {
                    r.hi = hi;
                    continue;
                }
            }
            let at = u32::try_from(sites.len()).unwrap_or(u32::MAX);
            sites.extend_from_slice(chain);
            rows.push(Row {
                lo,
                hi,
                at,
                len: u32::try_from(chain.len()).unwrap_or(0),
            });
            last = Some(k);
        }
        FnScopes {
            rows: rows.into_boxed_slice(),
            sites: sites.into_boxed_slice(),
        }
    }

    /// The scope at `addr`, which lies in `[start, end)`, the function's
    /// code: its interval and where its chain lies in the table.
    pub(crate) fn at(&self, addr: u32, start: u32, end: u32) -> Hit {
        let k = self.rows.partition_point(|r| r.lo <= addr);
        if let Some(r) = k.checked_sub(1).and_then(|i| self.rows.get(i)) {
            if addr < r.hi {
                return Hit {
                    lo: r.lo,
                    hi: r.hi,
                    at: r.at,
                    len: r.len,
                };
            }
        }
        let lo = k
            .checked_sub(1)
            .and_then(|i| self.rows.get(i))
            .map_or(start, |r| r.hi);
        let hi = self.rows.get(k).map_or(end, |r| r.lo);
        Hit {
            lo,
            hi,
            at: 0,
            len: 0,
        }
    }

    /// The chain of a [`Hit`].
    pub(crate) fn chain(&self, hit: Hit) -> &[InlineSite] {
        self.sites
            .get(hit.at as usize..(hit.at as usize).saturating_add(hit.len as usize))
            .unwrap_or(&[])
    }

    /// Every inlined function of every chain (repeated where chains
    /// share them).
    pub(crate) fn sites(&self) -> &[InlineSite] {
        &self.sites
    }

    /// No inlined code in the function.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// A scope found in a function's table: its interval `lo..hi` and its
/// chain, `len` sites from `at`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) lo: u32,
    pub(crate) hi: u32,
    pub(crate) at: u32,
    pub(crate) len: u32,
}

/// The scopes of each compilation unit read so far, by `.debug_info`
/// offset.
pub(crate) type UnitCache = RefCell<HashMap<usize, Rc<[UnitScope]>>>;

/// Whether any abbreviation of `.debug_abbrev` declares an inlined
/// subroutine (true when the section cannot be read to its end).
pub(crate) fn declares_inlined(abbrev: &[u8]) -> bool {
    use gimli::Reader as _;
    let mut r = gimli::EndianSlice::new(abbrev, gimli::LittleEndian);
    let scan = |r: &mut gimli::EndianSlice<'_, gimli::LittleEndian>| -> gimli::Result<bool> {
        while !r.is_empty() {
            if r.read_uleb128()? == 0 {
                // The end of one unit's table.
                continue;
            }
            let tag = r.read_uleb128()?;
            if tag == u64::from(gimli::DW_TAG_inlined_subroutine.0) {
                return Ok(true);
            }
            r.read_u8()?;
            loop {
                let name = r.read_uleb128()?;
                let form = r.read_uleb128()?;
                if name == 0 && form == 0 {
                    break;
                }
                if form == u64::from(gimli::DW_FORM_implicit_const.0) {
                    r.read_sleb128()?;
                }
            }
        }
        Ok(false)
    };
    scan(&mut r).unwrap_or(true)
}

/// Every inlined subroutine of `unit`, with its chain. Damaged entries
/// end the walk (what was read is kept).
pub(crate) fn unit_scopes(
    unit: gimli::UnitRef<'_, Reader>,
    names: &mut InlineNames,
) -> Vec<UnitScope> {
    let mut out = Vec::new();
    // Per open entry that matters: its depth, and its site (None for a
    // subprogram, which starts a chain afresh).
    let mut open: Vec<(isize, Option<InlineSite>)> = Vec::new();
    let mut cursor = unit.entries();
    let mut depth: isize = 0;
    while let Ok(Some((delta, entry))) = cursor.next_dfs() {
        depth += delta;
        while open.last().is_some_and(|(d, _)| *d >= depth) {
            open.pop();
        }
        let tag = entry.tag();
        if tag == gimli::DW_TAG_subprogram {
            open.push((depth, None));
            continue;
        }
        if tag != gimli::DW_TAG_inlined_subroutine {
            continue;
        }
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        if let Ok(mut iter) = unit.die_ranges(entry) {
            while let Ok(Some(r)) = iter.next() {
                if let (Ok(lo), Ok(hi)) = (u32::try_from(r.begin), u32::try_from(r.end)) {
                    if lo < hi {
                        ranges.push((lo, hi));
                    }
                }
            }
        }
        let name = origin_name(unit, entry, names);
        let lowest = ranges.iter().map(|r| r.0).min().unwrap_or(0);
        let site = InlineSite {
            name,
            entry: lowest,
            first: entry_pc(unit, entry, lowest),
        };
        open.push((depth, Some(site)));
        if ranges.is_empty() {
            continue;
        }
        let from = open
            .iter()
            .rposition(|(_, s)| s.is_none())
            .map_or(0, |i| i + 1);
        let chain: Rc<[InlineSite]> = open[from..].iter().filter_map(|(_, s)| *s).collect();
        for (lo, hi) in ranges {
            out.push(UnitScope {
                lo,
                hi,
                chain: Rc::clone(&chain),
            });
        }
    }
    out
}

/// Where an inlined subroutine is entered: its `DW_AT_entry_pc`, an
/// address or (DWARF 5) an offset from its lowest address `lowest`; else
/// `lowest`.
fn entry_pc(
    unit: gimli::UnitRef<'_, Reader>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, Reader>,
    lowest: u32,
) -> u32 {
    let Ok(Some(value)) = entry.attr_value(gimli::DW_AT_entry_pc) else {
        return lowest;
    };
    if let Some(off) = value.udata_value() {
        return u32::try_from(off)
            .ok()
            .and_then(|off| lowest.checked_add(off))
            .unwrap_or(lowest);
    }
    match unit.attr_address(value) {
        Ok(Some(a)) => u32::try_from(a).unwrap_or(lowest),
        _ => lowest,
    }
}

/// The name of the function an inlined subroutine is a copy of (`??` when
/// it cannot be found).
fn origin_name(
    unit: gimli::UnitRef<'_, Reader>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, Reader>,
    names: &mut InlineNames,
) -> u32 {
    let key = entry
        .offset()
        .to_unit_section_offset(&unit)
        .as_debug_info_offset()
        .map(|o| o.0);
    if let Some(id) = key.and_then(|k| names.by_die.get(&k)) {
        return *id;
    }
    let name = die_name(unit, entry, 0).unwrap_or_else(|| "??".to_owned());
    let id = names.intern(name);
    if let Some(k) = key {
        names.by_die.insert(k, id);
    }
    id
}

/// References followed at most to find a name.
const MAX_HOPS: u32 = 8;

/// The name of an entry: its linkage name or name, else that of its
/// abstract origin or specification, in this unit or another.
fn die_name(
    unit: gimli::UnitRef<'_, Reader>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, Reader>,
    hops: u32,
) -> Option<String> {
    for at in [
        gimli::DW_AT_linkage_name,
        gimli::DW_AT_MIPS_linkage_name,
        gimli::DW_AT_name,
    ] {
        if let Ok(Some(v)) = entry.attr_value(at) {
            if let Ok(s) = unit.attr_string(v) {
                if let Ok(s) = gimli::Reader::to_string_lossy(&s) {
                    return Some(s.into_owned());
                }
            }
        }
    }
    if hops >= MAX_HOPS {
        return None;
    }
    for at in [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification] {
        match entry.attr_value(at) {
            Ok(Some(gimli::AttributeValue::UnitRef(o))) => {
                let e = unit.entry(o).ok()?;
                return die_name(unit, &e, hops + 1);
            }
            Ok(Some(gimli::AttributeValue::DebugInfoRef(o))) => {
                let mut headers = unit.dwarf.units();
                while let Ok(Some(h)) = headers.next() {
                    let Some(uo) = o.to_unit_offset(&h) else {
                        continue;
                    };
                    let other = unit.dwarf.unit(h).ok()?;
                    let e = other.entry(uo).ok()?;
                    return die_name(other.unit_ref(unit.dwarf), &e, hops + 1);
                }
                return None;
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(name: u32, entry: u32) -> InlineSite {
        InlineSite {
            name,
            entry,
            first: entry,
        }
    }

    #[test]
    fn nested_scopes_paint_over_their_parents() {
        let f = Function {
            start: 0x100,
            end: 0x200,
            name: "f".into(),
            thumb: false,
        };
        let outer: Rc<[InlineSite]> = Rc::from(vec![site(1, 0x110)]);
        let inner: Rc<[InlineSite]> = Rc::from(vec![site(1, 0x110), site(2, 0x120)]);
        let scopes = [
            UnitScope {
                lo: 0x110,
                hi: 0x140,
                chain: Rc::clone(&outer),
            },
            UnitScope {
                lo: 0x150,
                hi: 0x160,
                chain: Rc::clone(&outer),
            },
            UnitScope {
                lo: 0x120,
                hi: 0x130,
                chain: Rc::clone(&inner),
            },
            // Outside the function: not taken.
            UnitScope {
                lo: 0x300,
                hi: 0x310,
                chain: Rc::clone(&outer),
            },
        ];
        let t = FnScopes::build(&f, f.end, &scopes);
        let at = |a| {
            let s = t.at(a, f.start, f.end);
            (s.lo, s.hi, t.chain(s).len())
        };
        assert_eq!(at(0x100), (0x100, 0x110, 0));
        assert_eq!(at(0x114), (0x110, 0x120, 1));
        assert_eq!(at(0x12e), (0x120, 0x130, 2));
        assert_eq!(at(0x130), (0x130, 0x140, 1));
        assert_eq!(at(0x140), (0x140, 0x150, 0));
        assert_eq!(at(0x15c), (0x150, 0x160, 1));
        assert_eq!(at(0x1fc), (0x160, 0x200, 0));
    }

    #[test]
    fn neighbours_with_one_chain_merge() {
        let f = Function {
            start: 0,
            end: 0x100,
            name: "f".into(),
            thumb: true,
        };
        let a: Rc<[InlineSite]> = Rc::from(vec![site(7, 0x10)]);
        let b: Rc<[InlineSite]> = Rc::from(vec![site(7, 0x20)]);
        let scopes = [
            UnitScope {
                lo: 0x10,
                hi: 0x18,
                chain: Rc::clone(&a),
            },
            UnitScope {
                lo: 0x18,
                hi: 0x20,
                chain: Rc::clone(&a),
            },
            // Another copy of the same function right after: kept apart.
            UnitScope {
                lo: 0x20,
                hi: 0x28,
                chain: Rc::clone(&b),
            },
        ];
        let t = FnScopes::build(&f, f.end, &scopes);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.at(0x1e, 0, 0x100).lo, 0x10);
        assert_eq!(t.chain(t.at(0x20, 0, 0x100)), &[site(7, 0x20)]);
    }

    #[test]
    fn abbreviation_scan() {
        // code 1, DW_TAG_subprogram (0x2e), no children, DW_AT_name/strp,
        // end; end of table.
        let plain = [1, 0x2e, 0, 0x03, 0x0e, 0, 0, 0];
        assert!(!declares_inlined(&plain));
        // code 2, DW_TAG_inlined_subroutine (0x1d), implicit const attr.
        let inl = [
            1, 0x2e, 0, 0x03, 0x21, 0x05, 0, 0, 2, 0x1d, 1, 0x31, 0x13, 0, 0, 0,
        ];
        assert!(declares_inlined(&inl));
        // Cut short: assume there may be some.
        assert!(declares_inlined(&[1, 0x2e]));
    }
}
