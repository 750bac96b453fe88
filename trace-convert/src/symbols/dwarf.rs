//! DWARF line tables and inlined subroutines of one ELF file, cached per
//! address (lines, frames) or per compilation unit (inline scopes). A
//! section that cannot be read is named (`DwarfInfo::load`,
//! `DwarfInfo::check`); lookups in damaged DWARF give no answer.

use super::inline::{self, InlineNames, UnitCache, UnitScope};
use super::path_map::PathMap;
use super::reader::Reader;
use object::{Object, ObjectSection};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// A source position.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceLine {
    /// Source file path as DWARF gives it (directory joined), with `/`
    /// separators and the `--path-map` rewrites applied (see
    /// [`PathMap`]).
    pub file: Arc<str>,
    /// Line number (1-based).
    pub line: u32,
}

/// One frame at an address: a function, possibly inlined into the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineFrame {
    /// Function name (demangled unless the symbolizer was told not to).
    pub function: Option<String>,
    /// Where in that function the address lies.
    pub location: Option<SourceLine>,
}

/// Addresses cached before the cache is cleared (bounds memory).
const CACHE_LIMIT: usize = 1 << 20;

/// The DWARF of one file.
pub(crate) struct DwarfInfo {
    ctx: addr2line::Context<Reader>,
    /// The same sections, for [`DwarfInfo::check`].
    dwarf: gimli::Dwarf<Reader>,
    lines: RefCell<HashMap<u32, Option<SourceLine>>>,
    files: RefCell<HashMap<String, Arc<str>>>,
    /// How source paths are written (see [`PathMap`]).
    paths: PathMap,
    /// Some abbreviation declares an inlined subroutine.
    has_inlined: bool,
    units: UnitCache,
}

impl DwarfInfo {
    /// Load the DWARF sections of `file`; `Ok(None)` when it has none,
    /// `Err` naming the section when one cannot be read.
    /// Source paths are written as `paths` says.
    pub(crate) fn load(
        file: &object::File<'_>,
        paths: &PathMap,
    ) -> Result<Option<DwarfInfo>, String> {
        if file.section_by_name(".debug_info").is_none() {
            return Ok(None);
        }
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let mut sections: HashMap<&'static str, Arc<[u8]>> = HashMap::new();
        let mut failed = None;
        let mut load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            let data: Arc<[u8]> = match sections.get(id.name()) {
                Some(d) => Arc::clone(d),
                None => {
                    let d = match file
                        .section_by_name(id.name())
                        .map(|s| s.uncompressed_data())
                    {
                        Some(Ok(d)) => Arc::from(&*d),
                        Some(Err(e)) => {
                            failed.get_or_insert_with(|| format!("{}: {e}", id.name()));
                            Arc::from(&[][..])
                        }
                        None => Arc::from(&[][..]),
                    };
                    sections.insert(id.name(), Arc::clone(&d));
                    d
                }
            };
            Ok(gimli::EndianArcSlice::new(data, endian))
        };
        let dwarf = gimli::Dwarf::load(&mut load).map_err(|e| format!("DWARF: {e}"))?;
        let again = gimli::Dwarf::load(&mut load).map_err(|e| format!("DWARF: {e}"))?;
        if let Some(f) = failed {
            return Err(f);
        }
        let has_inlined = file
            .section_by_name(".debug_abbrev")
            .and_then(|s| s.uncompressed_data().ok())
            .is_some_and(|d| inline::declares_inlined(&d));
        let ctx = addr2line::Context::from_dwarf(again)
            .map_err(|e| format!(".debug_info (the unit ranges): {e}"))?;
        Ok(Some(DwarfInfo {
            ctx,
            dwarf,
            lines: RefCell::new(HashMap::new()),
            files: RefCell::new(HashMap::new()),
            paths: paths.clone(),
            has_inlined,
            units: RefCell::new(HashMap::new()),
        }))
    }

    /// The sections, as loaded.
    pub(crate) fn sections(&self) -> &gimli::Dwarf<Reader> {
        &self.dwarf
    }

    /// Read every unit, its entries and its line program once, and say
    /// which section first fails to read, if any.
    pub(crate) fn check(&self) -> Result<(), String> {
        let d = &self.dwarf;
        let mut headers = d.units();
        loop {
            let header = match headers.next() {
                Ok(Some(h)) => h,
                Ok(None) => return Ok(()),
                Err(e) => return Err(format!(".debug_info: {e}")),
            };
            let at = header.offset().as_debug_info_offset().map_or(0, |o| o.0);
            let abbrevs = d
                .abbreviations(&header)
                .map_err(|e| format!(".debug_abbrev (unit at .debug_info {at:#x}): {e}"))?;
            let mut entries = header.entries(&abbrevs);
            while entries
                .next_dfs()
                .map_err(|e| format!(".debug_info (unit at {at:#x}): {e}"))?
                .is_some()
            {}
            let unit = d
                .unit(header)
                .map_err(|e| format!(".debug_line (unit at .debug_info {at:#x}): {e}"))?;
            if let Some(program) = unit.line_program {
                let mut rows = program.rows();
                while rows
                    .next_row()
                    .map_err(|e| format!(".debug_line (unit at .debug_info {at:#x}): {e}"))?
                    .is_some()
                {}
            }
        }
    }

    /// Some abbreviation declares an inlined subroutine (without one there
    /// is no inlined code).
    pub(crate) fn has_inlined(&self) -> bool {
        self.has_inlined
    }

    /// The inlined subroutines of the compilation unit holding `addr`
    /// (read once per unit), or `None` when no unit holds it.
    pub(crate) fn unit_scopes(
        &self,
        addr: u32,
        names: &RefCell<InlineNames>,
    ) -> Option<Rc<[UnitScope]>> {
        let unit = self
            .ctx
            .find_dwarf_and_unit(u64::from(addr))
            .skip_all_loads()?;
        let key = unit.header.offset().as_debug_info_offset()?.0;
        if let Some(hit) = self.units.borrow().get(&key) {
            return Some(Rc::clone(hit));
        }
        let scopes: Rc<[UnitScope]> = Rc::from(inline::unit_scopes(unit, &mut names.borrow_mut()));
        self.units.borrow_mut().insert(key, Rc::clone(&scopes));
        Some(scopes)
    }

    fn intern(&self, file: &str) -> Arc<str> {
        let mut files = self.files.borrow_mut();
        if let Some(f) = files.get(file) {
            return Arc::clone(f);
        }
        let a: Arc<str> = Arc::from(&*self.paths.apply(file));
        files.insert(file.to_owned(), Arc::clone(&a));
        a
    }

    /// The innermost source line at `addr` (cached).
    pub(crate) fn line(&self, addr: u32) -> Option<SourceLine> {
        if let Some(hit) = self.lines.borrow().get(&addr) {
            return hit.clone();
        }
        let found = match self.ctx.find_location(u64::from(addr)) {
            Ok(Some(loc)) => match (loc.file, loc.line) {
                (Some(f), Some(l)) if l > 0 => Some(SourceLine {
                    file: self.intern(f),
                    line: l,
                }),
                _ => None,
            },
            _ => None,
        };
        let mut cache = self.lines.borrow_mut();
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(addr, found.clone());
        found
    }

    /// Addresses of the line-table rows (bounded to 32-bit addresses).
    pub(crate) fn rows(&self) -> Vec<u32> {
        let mut out = Vec::new();
        if let Ok(iter) = self.ctx.find_location_range(0, u64::from(u32::MAX)) {
            for (addr, _len, loc) in iter {
                if loc.line.is_some_and(|l| l > 0) {
                    if let Ok(a) = u32::try_from(addr) {
                        out.push(a);
                    }
                }
            }
        }
        out
    }

    /// The inlined frames at `addr`, innermost first, names demangled
    /// when `demangle`.
    pub(crate) fn frames(&self, addr: u32, demangle: bool) -> Vec<InlineFrame> {
        let mut out = Vec::new();
        let Ok(mut iter) = self.ctx.find_frames(u64::from(addr)).skip_all_loads() else {
            return out;
        };
        while let Ok(Some(frame)) = iter.next() {
            let function = frame
                .function
                .as_ref()
                .and_then(|f| f.raw_name().ok())
                .map(|n| {
                    if demangle {
                        super::demangle(&n).into_owned()
                    } else {
                        n.into_owned()
                    }
                });
            let location = frame.location.and_then(|l| match (l.file, l.line) {
                (Some(f), Some(line)) if line > 0 => Some(SourceLine {
                    file: self.intern(f),
                    line,
                }),
                _ => None,
            });
            out.push(InlineFrame { function, location });
            if out.len() > 64 {
                break;
            }
        }
        out
    }
}
