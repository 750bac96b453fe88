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
        let file = object::File::parse(bytes).map_err(|e| {
            bad(match pn_xnum(bytes) {
                Some(why) => why,
                None => format!("not an ELF file: {e}"),
            })
        })?;
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
            return Err(bad(
                pn_xnum(bytes).unwrap_or_else(|| "no loadable segment with contents".into())
            ));
        }
        let kinds = file.symbols().filter_map(|sym| {
            let kind = mapping_kind(sym.name().ok()?)?;
            Some((u32::try_from(sym.address()).ok()?, kind))
        });
        self.add_code_kinds(kinds.collect::<Vec<_>>());
        Ok(())
    }
}

/// What is wrong with a 32-bit ELF header whose `e_phnum` is `0xffff`
/// (`PN_XNUM`: the program header count is too large for the field and
/// is in section 0's `sh_info`) when no program header could be read
/// from it; `None` for any other file.
fn pn_xnum(bytes: &[u8]) -> Option<String> {
    use object::read::elf::{FileHeader, SectionHeader};
    let header = object::elf::FileHeader32::<object::Endianness>::parse(bytes).ok()?;
    let endian = header.endian().ok()?;
    if header.e_phnum(endian) != object::elf::PN_XNUM {
        return None;
    }
    let detail = match header.section_0(endian, bytes) {
        Ok(None) => "but the file has no section headers".to_owned(),
        Err(e) => format!(
            "but section 0 (at {:#x}) cannot be read ({e})",
            header.e_shoff(endian)
        ),
        Ok(Some(s)) => match s.sh_info(endian) {
            0 => "but section 0's sh_info is 0".to_owned(),
            n => format!(
                "section 0's sh_info gives {n}, and no loadable segment of them has contents"
            ),
        },
    };
    Some(format!(
        "e_phnum is 0xffff (PN_XNUM: the program header count is in section 0's sh_info), {detail}: no program header can be read"
    ))
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

    /// `e_phnum` = 0xffff (`PN_XNUM`) with the count in section 0's
    /// `sh_info` is read as any other file; with no count there, the
    /// error says so, not that the file has no loadable segment.
    #[test]
    fn a_program_header_count_in_section_0_is_read_or_named() {
        let example =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot/example.elf");
        let bytes = std::fs::read(example).expect("the example's ELF");
        let phnum = u16::from_le_bytes([bytes[44], bytes[45]]);
        let shoff = u32::from_le_bytes(bytes[32..36].try_into().expect("4 bytes")) as usize;
        let dir = std::env::temp_dir().join(format!("tc-elf-xnum-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let load = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut b = bytes.clone();
            edit(&mut b);
            let path = dir.join("x.elf");
            std::fs::write(&path, &b).expect("write");
            let mut m = MemoryMap::new();
            m.add_elf(&path, Space::Any).map(|()| m.regions().count())
        };
        let xnum = |b: &mut Vec<u8>| b[44..46].copy_from_slice(&0xFFFFu16.to_le_bytes());
        let count = |b: &mut Vec<u8>| {
            xnum(b);
            b[shoff + 28..shoff + 32].copy_from_slice(&u32::from(phnum).to_le_bytes());
        };
        assert_eq!(load(&|_| {}).expect("the example"), usize::from(phnum));
        assert_eq!(load(&count).expect("PN_XNUM"), usize::from(phnum));
        let why = |edit: &dyn Fn(&mut Vec<u8>)| match load(edit) {
            Err(MemoryError::BadElf { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        let r = why(&xnum);
        assert!(
            r.contains("e_phnum is 0xffff (PN_XNUM") && r.contains("sh_info is 0"),
            "{r}"
        );
        let r = why(&|b: &mut Vec<u8>| {
            xnum(b);
            b[32..36].fill(0);
        });
        assert!(
            r.contains("PN_XNUM") && r.contains("no section headers"),
            "{r}"
        );
        std::fs::remove_dir_all(&dir).ok();
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
