//! Loading ELF executables: loadable segments and ARM mapping symbols.

use super::{CodeKind, Contents, MemoryError, MemoryMap, Region, Space};
use object::{Object, ObjectSegment, ObjectSymbol};
use std::path::Path;

/// The ARM ELF mapping symbol kind of a symbol name: `$a`, `$t`, `$d`, with
/// an optional `.suffix`.
fn mapping_kind(name: &str) -> Option<CodeKind> {
    let base = name.split('.').next().unwrap_or(name);
    match base {
        "$a" => Some(CodeKind::Arm),
        "$t" => Some(CodeKind::Thumb),
        "$d" => Some(CodeKind::Data),
        _ => None,
    }
}

impl MemoryMap {
    /// Add the loadable segments of a 32-bit ARM ELF file, and its mapping
    /// symbols (`$a`/`$t`/`$d`) so the decoder knows ARM from Thumb code.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Io`] when the file cannot be opened or is not a
    /// regular file, [`MemoryError::BadElf`] when it is not a 32-bit ARM
    /// ELF file or its segments are malformed.
    pub fn add_elf(&mut self, path: &Path, space: Space) -> Result<(), MemoryError> {
        let contents = Contents::map_path(path).map_err(|source| MemoryError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        self.add_elf_contents(path, &contents, space)
    }

    /// Add the loadable segments and mapping symbols of the ELF file
    /// whose bytes are `contents` (`path` names it in messages).
    ///
    /// # Errors
    ///
    /// [`MemoryError::BadElf`] as for [`MemoryMap::add_elf`].
    pub fn add_elf_contents(
        &mut self,
        path: &Path,
        contents: &Contents,
        space: Space,
    ) -> Result<(), MemoryError> {
        let bytes = contents.bytes();
        let bad = |reason: String| MemoryError::BadElf {
            path: path.to_path_buf(),
            reason,
        };
        let file = object::File::parse(bytes).map_err(|e| bad(format!("not an ELF file: {e}")))?;
        if file.format() != object::BinaryFormat::Elf
            || file.architecture() != object::Architecture::Arm
        {
            return Err(bad(format!(
                "not a 32-bit ARM ELF file ({:?} {:?})",
                file.format(),
                file.architecture()
            )));
        }
        let name = path.display().to_string();
        let mut loaded = 0;
        for seg in file.segments() {
            let (offset, size) = seg.file_range();
            if size == 0 {
                continue;
            }
            let base = u32::try_from(seg.address()).map_err(|_| {
                bad(format!(
                    "segment address {:#x} is beyond 32 bits",
                    seg.address()
                ))
            })?;
            let start =
                usize::try_from(offset).map_err(|_| bad("segment offset too large".into()))?;
            let len = usize::try_from(size).map_err(|_| bad("segment size too large".into()))?;
            self.add(Region::of_contents(
                format!("{name}@{base:#x}"),
                base,
                space,
                contents.clone(),
                start,
                len,
            )?);
            loaded += 1;
        }
        if loaded == 0 {
            return Err(bad("no loadable segment with contents".into()));
        }
        let kinds = file.symbols().filter_map(|sym| {
            let kind = mapping_kind(sym.name().ok()?)?;
            Some((u32::try_from(sym.address()).ok()?, kind))
        });
        self.add_code_kinds(kinds.collect::<Vec<_>>());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_symbol_names() {
        assert_eq!(mapping_kind("$a"), Some(CodeKind::Arm));
        assert_eq!(mapping_kind("$t.12"), Some(CodeKind::Thumb));
        assert_eq!(mapping_kind("$d"), Some(CodeKind::Data));
        assert_eq!(mapping_kind("$x"), None);
        assert_eq!(mapping_kind("main"), None);
    }

    #[test]
    fn non_elf_and_missing_files_are_errors() {
        let dir = std::env::temp_dir().join(format!("tc-elf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let junk = dir.join("junk.bin");
        std::fs::write(&junk, b"not an elf at all").expect("write");
        let mut m = MemoryMap::new();
        assert!(matches!(
            m.add_elf(&junk, Space::Any),
            Err(MemoryError::BadElf { .. })
        ));
        assert!(matches!(
            m.add_elf(&dir.join("absent.elf"), Space::Any),
            Err(MemoryError::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).ok();
    }
}
