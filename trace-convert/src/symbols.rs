//! Symbolization: function names from ELF symbol tables, source lines and
//! inlined frames from DWARF.
//!
//! A [`Symbolizer`] is built once from the `--elf` files and then answers
//! per-address questions quickly: functions are kept sorted by start
//! address and found by binary search; DWARF answers are cached per
//! address.
//!
//! Function symbols are the ELF `STT_FUNC` symbols; a Thumb function's
//! value has bit 0 set, which is cleared here (its code starts at the even
//! address). ARM mapping symbols (`$a`, `$t`, `$d` and their `.suffix`
//! forms) mark code and data inside sections and are never taken as
//! function names. A symbol of size 0 extends to the next function symbol.
//!
//! Inlined code comes from DWARF too ([`inline`]): per function, the
//! address intervals where inlined functions run, each with its chain of
//! inlined functions, which the call stacks show as frames above the real
//! function ([`Symbolizer::inline_scope`]).
//!
//! Addresses no symbol covers have no function; converters then name code
//! by the address where it was entered, written as `0x80001000` (eight
//! lower-case hex digits, see [`hex_name`]). With no ELF at all (captures
//! with only memory dumps), every name is of that form.
//!
//! Names are demangled ([`demangle`]): C++ (Itanium ABI) and Rust (legacy
//! and v0) symbols are shown as source spells them, unless
//! [`Symbolizer::set_demangle`] turned that off before the files were
//! added.

pub mod dwarf;
pub mod inline;
pub mod kallsyms;
pub mod path_map;
mod reader;

use inline::{FnScopes, Hit, InlineNames};
use object::{Object, ObjectSection, ObjectSymbol};
use std::cell::{Cell, OnceCell, RefCell};
use std::path::{Path, PathBuf};

pub use dwarf::{InlineFrame, SourceLine};
pub use inline::{InlineScope, InlineSite};

/// Why an ELF file could not be read for symbols.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SymbolError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not an ELF file.
    #[error("{path}: not an ELF file: {reason}")]
    NotElf {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// A kernel symbol list (`--kallsyms`) could not be used.
    #[error("{path}: {source}")]
    Kallsyms {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: kallsyms::KallsymsError,
    },
}

/// A function from an ELF symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// First byte of its code (Thumb bit cleared).
    pub start: u32,
    /// Just past its last byte (exclusive).
    pub end: u32,
    /// Its name: demangled ([`demangle`]) unless the [`Symbolizer`] was
    /// told not to, else as the symbol table spells it.
    pub name: String,
    /// Thumb code (the symbol value had bit 0 set).
    pub thumb: bool,
}

/// The name converters give code at `addr` that no symbol covers:
/// `0x` and eight lower-case hex digits.
#[must_use]
pub fn hex_name(addr: u32) -> String {
    format!("{addr:#010x}")
}

/// `name` demangled when it is a C++ (Itanium ABI) or Rust (legacy or
/// v0) mangled name, else `name` unchanged.
///
/// Only names with the prefix of a mangled name (`_Z`, `_R`) are
/// demangled: a C function named `a` or `v` is not the C++ type those
/// letters encode.
#[must_use]
pub fn demangle(name: &str) -> std::borrow::Cow<'_, str> {
    if name.starts_with("_Z") || name.starts_with("_R") {
        addr2line::demangle_auto(std::borrow::Cow::Borrowed(name), None)
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// An inlined scope for tests: `lo`, `hi` and its chain of (name, entry).
#[cfg(test)]
pub(crate) type TestScope<'a> = (u32, u32, &'a [(&'a str, u32)]);

/// Function names and source locations of one or more ELF files.
#[derive(Default)]
pub struct Symbolizer {
    functions: Vec<Function>,
    dwarf: Vec<dwarf::DwarfInfo>,
    /// The file of each of `dwarf`.
    dwarf_files: Vec<PathBuf>,
    /// Per file whose DWARF could not be loaded: the section, the error.
    dwarf_problems: Vec<String>,
    files: Vec<PathBuf>,
    /// Inline scopes were turned off ([`set_inline_scopes`](Self::set_inline_scopes)).
    no_inline: bool,
    /// Names are kept as the files spell them ([`set_demangle`](Self::set_demangle)).
    raw_names: bool,
    /// How source paths are written.
    paths: path_map::PathMap,
    /// Some DWARF declares inlined subroutines.
    has_inlined: bool,
    /// Per function (same index): its inline scopes, once asked for.
    scopes: Vec<OnceCell<FnScopes>>,
    inline_names: RefCell<InlineNames>,
    /// The scope found last (most lookups fall in it again).
    last_scope: Cell<Option<Found>>,
    /// Scopes found before, by address (the branch targets of loops and
    /// calls come back again and again).
    seen_scopes: ScopeCache,
}

/// A scope found: the index of the function whose table holds its
/// chain, and the scope.
type Found = (usize, Hit);

/// A direct-mapped cache of found inline scopes: each slot holds the
/// scope found for an address that hashes to it.
struct ScopeCache(Box<[Cell<Option<Found>>]>);

/// Slots of a [`ScopeCache`] (a power of two).
const SCOPE_SLOTS: usize = 512;

impl Default for ScopeCache {
    fn default() -> ScopeCache {
        ScopeCache((0..SCOPE_SLOTS).map(|_| Cell::new(None)).collect())
    }
}

impl ScopeCache {
    /// The slot of `addr`.
    #[inline]
    fn slot(&self, addr: u32) -> Option<&Cell<Option<Found>>> {
        let h = (addr >> 1).wrapping_mul(0x9E37_79B1) >> 23;
        self.0.get(h as usize & (SCOPE_SLOTS - 1))
    }

    fn clear(&self) {
        for c in &*self.0 {
            c.set(None);
        }
    }
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("functions", &self.functions.len())
            .field("dwarf", &self.dwarf.len())
            .field("files", &self.files)
            .finish()
    }
}

impl Symbolizer {
    /// A symbolizer that knows nothing: every address is unnamed.
    #[must_use]
    pub fn empty() -> Symbolizer {
        Symbolizer::default()
    }

    /// A symbolizer of these functions (sorted by start), as if read from
    /// one file without DWARF.
    #[cfg(test)]
    pub(crate) fn with_functions(functions: Vec<Function>) -> Symbolizer {
        let scopes = functions.iter().map(|_| OnceCell::new()).collect();
        Symbolizer {
            functions,
            files: vec![PathBuf::from("test.elf")],
            scopes,
            ..Symbolizer::default()
        }
    }

    /// Give function `i` these inlined scopes, as if read from DWARF:
    /// `(lo, hi, chain of (name, entry))`, names interned here.
    #[cfg(test)]
    pub(crate) fn with_test_scopes(&mut self, i: usize, scopes: &[TestScope<'_>]) {
        let unit: Vec<inline::UnitScope> = scopes
            .iter()
            .map(|(lo, hi, chain)| {
                let sites: Vec<InlineSite> = chain
                    .iter()
                    .map(|(name, entry)| InlineSite {
                        name: self.inline_names.borrow_mut().intern((*name).to_owned()),
                        entry: *entry,
                        first: *entry,
                    })
                    .collect();
                inline::UnitScope::new(*lo, *hi, &sites)
            })
            .collect();
        let f = &self.functions[i];
        let cell = OnceCell::new();
        cell.set(FnScopes::build(f, f.end, &unit)).ok();
        self.scopes[i] = cell;
        self.has_inlined = true;
        self.last_scope.set(None);
        self.seen_scopes.clear();
    }

    /// Read the symbols and DWARF of each file.
    ///
    /// # Errors
    ///
    /// [`SymbolError`] when a file cannot be read or is not ELF. Damaged
    /// or missing DWARF is not an error: that file then gives names but
    /// no lines.
    pub fn from_elves(paths: &[PathBuf]) -> Result<Symbolizer, SymbolError> {
        let mut s = Symbolizer::default();
        for p in paths {
            s.add_elf(p)?;
        }
        Ok(s)
    }

    /// Add one ELF file (mapped, not read: only a regular file is
    /// opened).
    ///
    /// # Errors
    ///
    /// [`SymbolError`] when the file cannot be opened, is not a regular
    /// file, or is not ELF.
    pub fn add_elf(&mut self, path: &Path) -> Result<(), SymbolError> {
        let contents =
            trace_core::memory::Contents::map_path(path).map_err(|source| SymbolError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        self.add_elf_bytes(path, contents.bytes())
    }

    /// DWARF sections that could not be read while loading, one message
    /// per file naming the section (that file then gives no lines).
    #[must_use]
    pub fn dwarf_problems(&self) -> &[String] {
        &self.dwarf_problems
    }

    /// Read all the DWARF once (every unit, its entries and its line
    /// program), and name the first section that fails in each file,
    /// beside the problems of loading: what a coverage report would miss.
    #[must_use]
    pub fn check_dwarf(&self) -> Vec<String> {
        let mut out = self.dwarf_problems.clone();
        for (d, path) in self.dwarf.iter().zip(&self.dwarf_files) {
            if let Err(e) = d.check() {
                out.push(format!("{}: {e}", path.display()));
            }
        }
        out
    }

    /// Add an ELF file from memory (`path` names it in messages).
    ///
    /// # Errors
    ///
    /// [`SymbolError::NotElf`] when the bytes are not an ELF file.
    pub fn add_elf_bytes(&mut self, path: &Path, bytes: &[u8]) -> Result<(), SymbolError> {
        let file = object::File::parse(bytes).map_err(|e| SymbolError::NotElf {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(SymbolError::NotElf {
                path: path.to_path_buf(),
                reason: format!("{:?} file", file.format()),
            });
        }
        // A symbol of size 0 runs up to the next function, but not past
        // the end of its section (a vector table's label at 0 would
        // otherwise reach the next section's code, gigabytes away).
        let mut section_ends: Vec<(u32, u32)> = Vec::new();
        for sym in file.symbols() {
            if sym.kind() != object::SymbolKind::Text || sym.is_undefined() {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() || is_mapping_symbol(name) {
                continue;
            }
            let Ok(value) = u32::try_from(sym.address()) else {
                continue;
            };
            let thumb = value & 1 == 1;
            let start = value & !1;
            let size = u32::try_from(sym.size()).unwrap_or(0);
            let name = if self.raw_names {
                name.to_owned()
            } else {
                demangle(name).into_owned()
            };
            if size == 0 {
                if let Some(end) = sym
                    .section_index()
                    .and_then(|i| file.section_by_index(i).ok())
                    .and_then(|sec| u32::try_from(sec.address().saturating_add(sec.size())).ok())
                {
                    section_ends.push((start, end));
                }
            }
            self.functions.push(Function {
                start,
                end: start.saturating_add(size),
                name,
                thumb,
            });
        }
        self.sort_functions();
        for (start, limit) in section_ends {
            if let Ok(i) = self.functions.binary_search_by_key(&start, |f| f.start) {
                let f = &mut self.functions[i];
                if f.end > limit && limit > f.start {
                    f.end = limit;
                }
            }
        }
        match dwarf::DwarfInfo::load(&file, &self.paths) {
            Ok(Some(d)) => {
                self.has_inlined |= d.has_inlined();
                self.dwarf.push(d);
                self.dwarf_files.push(path.to_path_buf());
            }
            Ok(None) => {}
            Err(e) => self.dwarf_problems.push(format!("{}: {e}", path.display())),
        }
        self.scopes = self.functions.iter().map(|_| OnceCell::new()).collect();
        self.last_scope.set(None);
        self.seen_scopes.clear();
        self.files.push(path.to_path_buf());
        Ok(())
    }

    /// Add the functions of a kernel symbol list: `/proc/kallsyms` or
    /// `System.map` (see [`kallsyms`]), for code without an ELF file.
    /// Returns how many functions it named. It gives names only (no lines,
    /// no inlined functions).
    ///
    /// # Errors
    ///
    /// [`SymbolError::Io`] when the file cannot be read (or is neither a
    /// regular file nor a pipe, or is not text); [`SymbolError::Kallsyms`]
    /// when it is not such a list.
    pub fn add_kallsyms(&mut self, path: &Path) -> Result<usize, SymbolError> {
        let io = |source| SymbolError::Io {
            path: path.to_path_buf(),
            source,
        };
        let contents = kallsyms::read(path).map_err(io)?;
        let text = std::str::from_utf8(contents.bytes()).map_err(|e| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not a text file ({e})"),
            ))
        })?;
        let found = kallsyms::parse(text).map_err(|source| SymbolError::Kallsyms {
            path: path.to_path_buf(),
            source,
        })?;
        let n = found.len();
        for mut f in found {
            if !self.raw_names {
                f.name = demangle(&f.name).into_owned();
            }
            self.functions.push(f);
        }
        self.sort_functions();
        self.scopes = self.functions.iter().map(|_| OnceCell::new()).collect();
        self.last_scope.set(None);
        self.seen_scopes.clear();
        self.files.push(path.to_path_buf());
        Ok(n)
    }

    /// Sort the functions by start, keep one per start address (aliases:
    /// the largest, then the first name in order) and extend those of
    /// size 0 to the next function.
    fn sort_functions(&mut self) {
        self.functions.sort_by(|a, b| {
            a.start
                .cmp(&b.start)
                .then(b.end.cmp(&a.end))
                .then(a.name.cmp(&b.name))
        });
        // One function per start address (aliases: keep the largest, then
        // the first name in order).
        self.functions
            .dedup_by(|later, first| later.start == first.start);
        // Size 0: up to the next function.
        for i in 0..self.functions.len() {
            if self.functions[i].end == self.functions[i].start {
                let next = self
                    .functions
                    .get(i + 1)
                    .map_or(self.functions[i].start.saturating_add(4), |f| f.start);
                self.functions[i].end = next;
            }
        }
    }

    /// Demangle names (the default) or keep them as the files spell them;
    /// applies to the files added after it.
    pub fn set_demangle(&mut self, on: bool) {
        self.raw_names = !on;
        self.inline_names.borrow_mut().raw = !on;
    }

    /// Write source paths as `paths` says (`/` separators, then its
    /// rewrites; see [`path_map::PathMap`]); applies to the files added
    /// after it.
    pub fn set_path_map(&mut self, paths: path_map::PathMap) {
        self.paths = paths;
    }

    /// Show inlined functions as frames (the default) or not: when off,
    /// [`inline_scope`](Self::inline_scope) finds no inlined code.
    pub fn set_inline_scopes(&mut self, on: bool) {
        self.no_inline = !on;
    }

    /// Inlined functions are shown and some DWARF has inlined code.
    #[must_use]
    #[inline]
    pub fn has_inline_scopes(&self) -> bool {
        !self.no_inline && self.has_inlined
    }

    /// The inlined functions running at `addr` (outermost first) and the
    /// interval around it where the same ones run. The interval lies in
    /// the function covering `addr` (or between two functions); without
    /// inlined code at all it is the whole address space.
    #[must_use]
    pub fn inline_scope(&self, addr: u32) -> InlineScope<'_> {
        if !self.has_inline_scopes() {
            return InlineScope::EVERYWHERE;
        }
        let (i, hit) = match self.last_scope.get() {
            Some((i, hit)) if (hit.lo..hit.hi).contains(&addr) => (i, hit),
            _ => {
                let slot = self.seen_scopes.slot(addr);
                let found = match slot.and_then(Cell::get) {
                    Some((i, hit)) if (hit.lo..hit.hi).contains(&addr) => (i, hit),
                    _ => {
                        let found = self.find_scope(addr);
                        if let Some(c) = slot {
                            c.set(Some(found));
                        }
                        found
                    }
                };
                self.last_scope.set(Some(found));
                found
            }
        };
        let chain = match (hit.len, self.scopes.get(i).and_then(OnceCell::get)) {
            (1.., Some(t)) => t.chain(hit),
            _ => &[],
        };
        InlineScope {
            lo: hit.lo,
            hi: hit.hi,
            chain,
        }
    }

    /// [`inline_scope`](Self::inline_scope) looked up: the index of the
    /// function whose table holds the chain, and the scope.
    fn find_scope(&self, addr: u32) -> (usize, Hit) {
        let plain = |lo, hi| Hit {
            lo,
            hi,
            at: 0,
            len: 0,
        };
        let i = self.functions.partition_point(|f| f.start <= addr);
        let next = self.functions.get(i).map_or(u32::MAX, |f| f.start);
        let Some(f) = i.checked_sub(1).and_then(|j| self.functions.get(j)) else {
            return (0, plain(0, next));
        };
        if addr >= f.end {
            return (0, plain(f.end, next));
        }
        let end = f.end.min(next);
        match self.scopes.get(i - 1) {
            Some(cell) => {
                let hit = cell
                    .get_or_init(|| self.read_scopes(f, end))
                    .at(addr, f.start, end);
                (i - 1, hit)
            }
            None => (0, plain(f.start, end)),
        }
    }

    /// The inline scopes of `f` (code up to `end`) from the first DWARF
    /// that has its compilation unit.
    fn read_scopes(&self, f: &Function, end: u32) -> FnScopes {
        for d in &self.dwarf {
            if !d.has_inlined() {
                continue;
            }
            if let Some(unit) = d.unit_scopes(f.start, &self.inline_names) {
                let t = FnScopes::build(f, end, &unit);
                if !t.is_empty() {
                    return t;
                }
            }
        }
        FnScopes::default()
    }

    /// Every inlined copy of a function in the code of the functions
    /// known (reading the DWARF of all of them): its name and where it is
    /// entered ([`InlineSite::first`]), each copy once, in address order. Empty when inlined functions are not shown
    /// ([`set_inline_scopes`](Self::set_inline_scopes)).
    #[must_use]
    pub fn inlined_copies(&self) -> Vec<(String, u32)> {
        if !self.has_inline_scopes() {
            return Vec::new();
        }
        let mut copies = std::collections::BTreeSet::new();
        for (i, f) in self.functions.iter().enumerate() {
            let next = self.functions.get(i + 1).map_or(u32::MAX, |n| n.start);
            let Some(cell) = self.scopes.get(i) else {
                continue;
            };
            let table = cell.get_or_init(|| self.read_scopes(f, f.end.min(next)));
            for site in table.sites() {
                copies.insert((site.first, site.name));
            }
        }
        copies
            .into_iter()
            .map(|(entry, name)| (self.inline_name(name), entry))
            .collect()
    }

    /// The name of an inlined function ([`InlineSite::name`]), as DWARF
    /// gives it (`??` when unknown).
    #[must_use]
    pub fn inline_name(&self, name: u32) -> String {
        self.inline_names.borrow().get(name).to_owned()
    }

    /// The ELF files added, in order.
    #[must_use]
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The DWARF loaded from each ELF file that has some, with the file.
    pub(crate) fn dwarf_sections(
        &self,
    ) -> impl Iterator<Item = (&Path, &gimli::Dwarf<reader::Reader>)> {
        self.dwarf_files
            .iter()
            .map(PathBuf::as_path)
            .zip(self.dwarf.iter().map(dwarf::DwarfInfo::sections))
    }

    /// No ELF file was given (names will all be addresses).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Some ELF file had DWARF line information.
    #[must_use]
    pub fn has_lines(&self) -> bool {
        !self.dwarf.is_empty()
    }

    /// All functions, sorted by start address.
    #[must_use]
    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    /// Index (into [`functions`](Self::functions)) of the function
    /// covering `addr`.
    #[must_use]
    pub fn function_index(&self, addr: u32) -> Option<usize> {
        let i = self.functions.partition_point(|f| f.start <= addr);
        let i = i.checked_sub(1)?;
        (addr < self.functions[i].end).then_some(i)
    }

    /// The function covering `addr`.
    #[must_use]
    pub fn function(&self, addr: u32) -> Option<&Function> {
        self.function_index(addr).map(|i| &self.functions[i])
    }

    /// The name a PC sample counts under: the function holding `pc`
    /// ([`hex_name`] when no symbol covers it), `[sleep]` for a sample of
    /// a processor asleep (`None`).
    #[must_use]
    pub fn sample_name(&self, pc: Option<u32>) -> String {
        match pc {
            None => "[sleep]".to_owned(),
            Some(pc) => self
                .function(pc)
                .map_or_else(|| hex_name(pc), |f| f.name.clone()),
        }
    }

    /// A function starts exactly at `addr`.
    #[must_use]
    pub fn is_entry(&self, addr: u32) -> bool {
        let addr = addr & !1;
        self.functions
            .binary_search_by(|f| f.start.cmp(&addr))
            .is_ok()
    }

    /// Source file and line of the instruction at `addr` (the innermost
    /// inlined location), when some DWARF covers it.
    #[must_use]
    pub fn line(&self, addr: u32) -> Option<SourceLine> {
        self.dwarf.iter().find_map(|d| d.line(addr))
    }

    /// The address of every row of the DWARF line tables (for lines that
    /// were never reached), sorted and without repeats.
    #[must_use]
    pub fn line_rows(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.dwarf.iter().flat_map(|d| d.rows()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The frames at `addr`, innermost (inlined) first, outermost (the
    /// real function) last; empty without DWARF for `addr`.
    #[must_use]
    pub fn inline_frames(&self, addr: u32) -> Vec<InlineFrame> {
        self.dwarf
            .iter()
            .map(|d| d.frames(addr, !self.raw_names))
            .find(|f| !f.is_empty())
            .unwrap_or_default()
    }
}

/// `$a`, `$t`, `$d`, `$x` and their `.suffix` forms.
fn is_mapping_symbol(name: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name);
    matches!(base, "$a" | "$t" | "$d" | "$x")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(start: u32, end: u32, name: &str) -> Function {
        Function {
            start,
            end,
            name: name.into(),
            thumb: false,
        }
    }

    #[test]
    fn lookup_by_binary_search() {
        let s = Symbolizer {
            functions: vec![sym(0x100, 0x120, "a"), sym(0x120, 0x200, "b")],
            ..Symbolizer::default()
        };
        assert_eq!(s.function(0x100).map(|f| f.name.as_str()), Some("a"));
        assert_eq!(s.function(0x11e).map(|f| f.name.as_str()), Some("a"));
        assert_eq!(s.function(0x120).map(|f| f.name.as_str()), Some("b"));
        assert!(s.function(0xfc).is_none());
        assert!(s.function(0x200).is_none());
        assert!(s.is_entry(0x121), "Thumb bit ignored");
        assert!(!s.is_entry(0x104));
    }

    #[test]
    fn mapping_symbols_are_not_functions() {
        assert!(is_mapping_symbol("$t"));
        assert!(is_mapping_symbol("$d.12"));
        assert!(!is_mapping_symbol("main"));
        assert_eq!(hex_name(0x8000_1000), "0x80001000");
    }
}

#[cfg(test)]
mod demangle_tests {
    use super::*;
    use object::write::{Object, StandardSection, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolKind, SymbolScope};

    /// A relocatable ARM ELF whose `.text` holds these functions, 16 bytes
    /// each, in order.
    fn elf_with(names: &[&str]) -> Vec<u8> {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::Arm, Endianness::Little);
        let text = obj.section_id(StandardSection::Text);
        obj.append_section_data(text, &vec![0; 16 * names.len()], 4);
        for (i, name) in names.iter().enumerate() {
            obj.add_symbol(Symbol {
                name: name.as_bytes().to_vec(),
                value: 16 * i as u64,
                size: 16,
                kind: SymbolKind::Text,
                scope: SymbolScope::Linkage,
                weak: false,
                section: SymbolSection::Section(text),
                flags: SymbolFlags::None,
            });
        }
        obj.write().expect("write ELF")
    }

    /// Mangled names as their ABIs define them: Itanium C++
    /// (`_Z` nested name, no parameters: `v`), Rust legacy (`_ZN` path with
    /// a `17h<hash>` last component) and Rust v0 (`_R`, crate root `C`
    /// with disambiguator `s..._`, value namespace `Nv`).
    const NAMES: [&str; 4] = [
        "_ZN4demo8crc_taskEv",
        "_ZN4demo4main17h0123456789abcdefE",
        "_RNvCs1234_4demo9idle_task",
        "plain_c",
    ];

    fn names(demangle: bool) -> Vec<String> {
        let mut s = Symbolizer::default();
        s.set_demangle(demangle);
        s.add_elf_bytes(Path::new("t.elf"), &elf_with(&NAMES))
            .expect("ELF");
        (0..4)
            .map(|i| {
                s.function(16 * i)
                    .map(|f| f.name.clone())
                    .unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn names_are_demangled() {
        assert_eq!(
            names(true),
            [
                "demo::crc_task()",
                "demo::main",
                "demo::idle_task",
                "plain_c"
            ]
        );
    }

    #[test]
    fn no_demangle_keeps_the_symbol_table_spelling() {
        assert_eq!(names(false), NAMES);
    }

    #[test]
    fn inline_names_are_demangled_unless_told_not_to() {
        let mut n = InlineNames::default();
        let id = n.intern("_ZN4demo8crc_taskEv".into());
        assert_eq!(n.get(id), "demo::crc_task()");
        n.raw = true;
        let id = n.intern("_ZN4demo8crc_taskEv".into());
        assert_eq!(n.get(id), "_ZN4demo8crc_taskEv");
    }

    #[test]
    fn not_quite_mangled_names_stay_as_they_are() {
        // Plain C names that are also Itanium type codes (`a` is
        // `signed char`, `v` is `void`).
        for n in ["_Z", "_ZN4demo", "_R", "main", "", "a", "v", "i", "Pc"] {
            assert_eq!(demangle(n), n);
        }
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;
    use object::write::{Object, Symbol, SymbolSection};
    use object::{
        Architecture, BinaryFormat, Endianness, SectionKind, SymbolFlags, SymbolKind, SymbolScope,
    };

    /// A size-0 label at the start of a 0x40-byte vector section, and a
    /// 16-byte function at 0x100 of a code section.
    fn elf() -> Vec<u8> {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::Arm, Endianness::Little);
        let vectors = obj.add_section(Vec::new(), b".vectors".to_vec(), SectionKind::Text);
        obj.append_section_data(vectors, &[0; 0x40], 4);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.append_section_data(text, &[0; 0x200], 4);
        for (name, value, size, section) in [("vectors", 0, 0, vectors), ("main", 0x100, 16, text)]
        {
            obj.add_symbol(Symbol {
                name: name.as_bytes().to_vec(),
                value,
                size,
                kind: SymbolKind::Text,
                scope: SymbolScope::Linkage,
                weak: false,
                section: SymbolSection::Section(section),
                flags: SymbolFlags::None,
            });
        }
        obj.write().expect("write ELF")
    }

    #[test]
    fn a_size_0_label_ends_with_its_section() {
        let mut s = Symbolizer::default();
        s.add_elf_bytes(Path::new("t.elf"), &elf()).expect("ELF");
        let name = |addr| s.function(addr).map(|f| f.name.clone());
        assert_eq!(name(0x3C).as_deref(), Some("vectors"));
        assert_eq!(name(0x40), None, "past its section");
        assert_eq!(name(0x100).as_deref(), Some("main"));
    }
}
