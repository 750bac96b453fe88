//! DWARF line tables and inlined subroutines of one ELF file, read
//! permissively (missing or damaged sections give no answers, never an
//! error) and cached per address (lines, frames) or per compilation unit
//! (inline scopes).

use super::inline::{self, InlineNames, UnitCache, UnitScope};
use object::{Object, ObjectSection};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// How the DWARF sections are read.
pub(crate) type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// A source position.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceLine {
    /// Source file path as DWARF gives it (directory joined).
    pub file: Arc<str>,
    /// Line number (1-based).
    pub line: u32,
}

/// One frame at an address: a function, possibly inlined into the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineFrame {
    /// Function name (demangled when the language is known).
    pub function: Option<String>,
    /// Where in that function the address lies.
    pub location: Option<SourceLine>,
}

/// Addresses cached before the cache is cleared (bounds memory).
const CACHE_LIMIT: usize = 1 << 20;

/// The DWARF of one file.
pub(crate) struct DwarfInfo {
    ctx: addr2line::Context<Reader>,
    lines: RefCell<HashMap<u32, Option<SourceLine>>>,
    files: RefCell<HashMap<String, Arc<str>>>,
    /// Some abbreviation declares an inlined subroutine.
    has_inlined: bool,
    units: UnitCache,
}

impl DwarfInfo {
    /// Load the DWARF sections of `file`; `None` when it has no usable
    /// line information.
    pub(crate) fn load(file: &object::File<'_>) -> Option<DwarfInfo> {
        file.section_by_name(".debug_info")?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            let data: Arc<[u8]> = file
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .map_or_else(|| Arc::from(&[][..]), |d| Arc::from(&*d));
            Ok(gimli::EndianArcSlice::new(data, endian))
        };
        let dwarf = gimli::Dwarf::load(load).ok()?;
        let has_inlined = file
            .section_by_name(".debug_abbrev")
            .and_then(|s| s.uncompressed_data().ok())
            .is_some_and(|d| inline::declares_inlined(&d));
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        Some(DwarfInfo {
            ctx,
            lines: RefCell::new(HashMap::new()),
            files: RefCell::new(HashMap::new()),
            has_inlined,
            units: RefCell::new(HashMap::new()),
        })
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
        let a: Arc<str> = Arc::from(file);
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

    /// The inlined frames at `addr`, innermost first.
    pub(crate) fn frames(&self, addr: u32) -> Vec<InlineFrame> {
        let mut out = Vec::new();
        let Ok(mut iter) = self.ctx.find_frames(u64::from(addr)).skip_all_loads() else {
            return out;
        };
        while let Ok(Some(frame)) = iter.next() {
            let function = frame
                .function
                .as_ref()
                .and_then(|f| f.demangle().ok())
                .map(|n| n.into_owned());
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
