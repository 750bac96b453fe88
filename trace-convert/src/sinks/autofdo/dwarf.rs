//! What a sample profile needs from DWARF, read from the DWARF the
//! symbolizer loaded from each `--elf` file (nothing is parsed twice):
//! per function (`DW_TAG_subprogram` with code and a declaration
//! line; assembly functions have none) its name as the compiler knows it
//! (linkage name, else name) and the line it is declared on
//! (`DW_AT_decl_line`, from which LLVM counts line offsets);
//! its inlined copies (`DW_TAG_inlined_subroutine`) nested as DWARF nests
//! them, each with the callee's name and declaration line and the call's
//! line and discriminator; and the line table's line and discriminator
//! of every address.

use crate::symbols::Symbolizer;
use gimli::Reader;

/// A function or an inlined copy of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The function's name (linkage name when DWARF gives one).
    pub name: String,
    /// The line its declaration starts on (0 when unknown).
    pub decl_line: u32,
    /// For an inlined copy: the line of the call it replaces, in the scope
    /// it was inlined into.
    pub call_line: u32,
    /// For an inlined copy: the call's discriminator.
    pub call_discriminator: u32,
    /// Its code, `[lo, hi)` intervals.
    ranges: Vec<(u32, u32)>,
    /// Inlined copies directly inside it.
    children: Vec<usize>,
}

impl Scope {
    fn holds(&self, addr: u32) -> bool {
        self.ranges.iter().any(|&(lo, hi)| (lo..hi).contains(&addr))
    }

    /// Its lowest address.
    #[must_use]
    pub fn entry(&self) -> Option<u32> {
        self.ranges.iter().map(|r| r.0).min()
    }
}

/// One row of a line table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    addr: u32,
    line: u32,
    discriminator: u32,
    /// The row ends a sequence (no code at `addr` from this table).
    end: bool,
}

/// The DWARF of the profiled program.
#[derive(Debug, Default)]
pub struct ProfileDwarf {
    scopes: Vec<Scope>,
    /// The functions: `(lowest address, scope)`, sorted.
    functions: Vec<(u32, usize)>,
    rows: Vec<Row>,
}

impl ProfileDwarf {
    /// Read the DWARF `symbols` loaded from each ELF file (files without
    /// DWARF add nothing).
    ///
    /// # Errors
    ///
    /// A message naming the file when its DWARF is damaged.
    pub fn of(symbols: &Symbolizer) -> Result<ProfileDwarf, String> {
        let mut out = ProfileDwarf::default();
        for (path, dwarf) in symbols.dwarf_sections() {
            out.add_dwarf(dwarf)
                .map_err(|e| format!("{}: DWARF: {e}", path.display()))?;
        }
        out.functions.sort_unstable();
        out.rows.sort_by_key(|r| (r.addr, !r.end));
        Ok(out)
    }

    /// Whether no function was found (no file had DWARF).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    fn add_dwarf<R: Reader<Offset = usize>>(
        &mut self,
        dwarf: &gimli::Dwarf<R>,
    ) -> gimli::Result<()> {
        let mut units = dwarf.units();
        while let Some(header) = units.next()? {
            let unit = dwarf.unit(header)?;
            let unit = unit.unit_ref(dwarf);
            self.add_lines(unit)?;
            self.add_scopes(unit)?;
        }
        Ok(())
    }

    fn add_lines<R: Reader<Offset = usize>>(
        &mut self,
        unit: gimli::UnitRef<'_, R>,
    ) -> gimli::Result<()> {
        let Some(program) = unit.line_program.clone() else {
            return Ok(());
        };
        let mut rows = program.rows();
        while let Some((_, row)) = rows.next_row()? {
            let Ok(addr) = u32::try_from(row.address()) else {
                continue;
            };
            self.rows.push(Row {
                addr,
                line: row
                    .line()
                    .map_or(0, |l| u32::try_from(l.get()).unwrap_or(0)),
                discriminator: u32::try_from(row.discriminator()).unwrap_or(0),
                end: row.end_sequence(),
            });
        }
        Ok(())
    }

    fn add_scopes<R: Reader<Offset = usize>>(
        &mut self,
        unit: gimli::UnitRef<'_, R>,
    ) -> gimli::Result<()> {
        // The open entries: depth and the scope they belong to.
        let mut open: Vec<(isize, Option<usize>)> = Vec::new();
        let mut cursor = unit.entries();
        let mut depth: isize = 0;
        while let Some((delta, entry)) = cursor.next_dfs()? {
            depth += delta;
            while open.last().is_some_and(|(d, _)| *d >= depth) {
                open.pop();
            }
            let parent = open.iter().rev().find_map(|(_, s)| *s);
            let tag = entry.tag();
            let inlined = tag == gimli::DW_TAG_inlined_subroutine;
            if tag != gimli::DW_TAG_subprogram && !inlined {
                open.push((depth, parent));
                continue;
            }
            let mut ranges = Vec::new();
            let mut iter = unit.die_ranges(entry)?;
            while let Some(r) = iter.next()? {
                if let (Ok(lo), Ok(hi)) = (u32::try_from(r.begin), u32::try_from(r.end)) {
                    if lo < hi {
                        ranges.push((lo, hi));
                    }
                }
            }
            if ranges.is_empty() {
                // A declaration or an abstract instance: no code here.
                open.push((depth, None));
                continue;
            }
            let number = |at| match entry.attr_value(at) {
                Ok(Some(v)) => v.udata_value().and_then(|n| u32::try_from(n).ok()),
                _ => None,
            };
            let (name, decl_line) = describe(unit, entry, 0);
            if decl_line.is_none() && !inlined {
                // No line to count offsets from (assembly functions): the
                // profile leaves the function out.
                open.push((depth, None));
                continue;
            }
            let id = self.scopes.len();
            self.scopes.push(Scope {
                name: name.unwrap_or_else(|| "??".to_owned()),
                decl_line: decl_line.unwrap_or(0),
                call_line: if inlined {
                    number(gimli::DW_AT_call_line).unwrap_or(0)
                } else {
                    0
                },
                call_discriminator: if inlined {
                    number(gimli::DW_AT_GNU_discriminator).unwrap_or(0)
                } else {
                    0
                },
                ranges,
                children: Vec::new(),
            });
            match (inlined, parent) {
                (true, Some(p)) => {
                    if let Some(s) = self.scopes.get_mut(p) {
                        s.children.push(id);
                    }
                }
                _ => {
                    if let Some(lo) = self.scopes.get(id).and_then(Scope::entry) {
                        self.functions.push((lo, id));
                    }
                }
            }
            open.push((depth, Some(id)));
        }
        Ok(())
    }

    /// The scopes running at `addr`, outermost (the function) first, each
    /// inlined copy inside the one before (indices for [`scope`](Self::scope)).
    #[must_use]
    pub fn scopes(&self, addr: u32) -> Vec<usize> {
        let mut out = Vec::new();
        let i = self.functions.partition_point(|(lo, _)| *lo <= addr);
        // Functions may have several ranges: look back over those that
        // start below `addr` for the one holding it.
        let Some(top) = self.functions[..i]
            .iter()
            .rev()
            .map(|(_, s)| *s)
            .find(|s| self.scopes.get(*s).is_some_and(|s| s.holds(addr)))
        else {
            return out;
        };
        let mut cur = Some(top);
        while let Some(i) = cur {
            out.push(i);
            cur = self.scopes.get(i).and_then(|s| {
                s.children
                    .iter()
                    .copied()
                    .find(|c| self.scopes.get(*c).is_some_and(|c| c.holds(addr)))
            });
        }
        out
    }

    /// The scope of index `i` (from [`scopes`](Self::scopes)).
    #[must_use]
    pub fn scope(&self, i: usize) -> Option<&Scope> {
        self.scopes.get(i)
    }

    /// The line and discriminator of the instruction at `addr`, when a
    /// line table covers it.
    #[must_use]
    pub fn line(&self, addr: u32) -> Option<(u32, u32)> {
        let i = self.rows.partition_point(|r| r.addr <= addr);
        let row = self.rows.get(i.checked_sub(1)?)?;
        (!row.end && row.line > 0).then_some((row.line, row.discriminator))
    }

    /// The function whose code starts at `addr`.
    #[must_use]
    pub fn function_at(&self, addr: u32) -> Option<&Scope> {
        let i = self.functions.partition_point(|(lo, _)| *lo < addr);
        match self.functions.get(i) {
            Some(&(lo, s)) if lo == addr => self.scopes.get(s),
            _ => None,
        }
    }
}

/// References followed at most to find a name.
const MAX_HOPS: u32 = 8;

/// The name (linkage name, else name) and declaration line of an entry,
/// from it or its abstract origin or specification in the same unit.
fn describe<R: Reader<Offset = usize>>(
    unit: gimli::UnitRef<'_, R>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, R>,
    hops: u32,
) -> (Option<String>, Option<u32>) {
    let mut name = None;
    for at in [
        gimli::DW_AT_linkage_name,
        gimli::DW_AT_MIPS_linkage_name,
        gimli::DW_AT_name,
    ] {
        if let Ok(Some(v)) = entry.attr_value(at) {
            if let Ok(s) = unit.attr_string(v) {
                if let Ok(text) = s.to_string_lossy() {
                    name = Some(text.into_owned());
                    break;
                }
            }
        }
    }
    let mut line = match entry.attr_value(gimli::DW_AT_decl_line) {
        Ok(Some(v)) => v.udata_value().and_then(|n| u32::try_from(n).ok()),
        _ => None,
    };
    if (name.is_none() || line.is_none()) && hops < MAX_HOPS {
        for at in [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification] {
            let target = match entry.attr_value(at) {
                Ok(Some(gimli::AttributeValue::UnitRef(o))) => Some(o),
                Ok(Some(gimli::AttributeValue::DebugInfoRef(o))) => o.to_unit_offset(&unit.header),
                _ => None,
            };
            if let Some(e) = target.and_then(|o| unit.entry(o).ok()) {
                let (n, l) = describe(unit, &e, hops + 1);
                name = name.or(n);
                line = line.or(l);
                break;
            }
        }
    }
    (name, line)
}
