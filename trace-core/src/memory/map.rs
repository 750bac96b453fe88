//! A set of memory regions with fast address lookup.

use super::{CodeKind, MemoryError, MemoryImage, Space};
use std::path::Path;
use std::sync::Arc;

/// A contiguous block of memory contents at an address.
#[derive(Debug, Clone)]
pub struct Region {
    /// Address of the first byte.
    pub base: u32,
    /// Memory space the region belongs to.
    pub space: Space,
    /// Where the contents came from (file name, section), for messages.
    pub name: String,
    data: Arc<[u8]>,
    start: usize,
    len: usize,
}

impl Region {
    /// A region holding `data[start..start + len]` at `base`.
    ///
    /// # Errors
    ///
    /// [`MemoryError::BadRegion`] when the range lies outside `data` or the
    /// region would extend past the end of the 32-bit address space.
    pub fn new(
        name: impl Into<String>,
        base: u32,
        space: Space,
        data: Arc<[u8]>,
        start: usize,
        len: usize,
    ) -> Result<Region, MemoryError> {
        let name = name.into();
        let bad = |reason: String| MemoryError::BadRegion {
            name: name.clone(),
            reason,
        };
        if start.checked_add(len).is_none_or(|e| e > data.len()) {
            return Err(bad(format!(
                "bytes {start}..{start}+{len} lie outside the {}-byte file",
                data.len()
            )));
        }
        if len > 0 && u64::from(base) + len as u64 - 1 > u64::from(u32::MAX) {
            return Err(bad(format!(
                "{len} bytes at {base:#x} pass the end of the 32-bit address space"
            )));
        }
        Ok(Region {
            base,
            space,
            name,
            data,
            start,
            len,
        })
    }

    /// The region's bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.data[self.start..self.start + self.len]
    }

    /// Number of bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Address one past the last byte (as u64: may be 2^32).
    #[must_use]
    pub fn end(&self) -> u64 {
        u64::from(self.base) + self.len as u64
    }
}

/// Memory regions, searched by address; the region added last wins where
/// regions overlap.
///
/// Lookups are a binary search in a table of non-overlapping address
/// ranges per access space, rebuilt when a region is added.
#[derive(Debug, Clone, Default)]
pub struct MemoryMap {
    /// Regions in the order they were added.
    regions: Vec<Region>,
    /// Per access space (`Any`, `Secure`, `NonSecure`): disjoint ranges
    /// `(start, end, region index)` sorted by start.
    lookup: [Vec<(u64, u64, usize)>; 3],
    /// Mapping symbols: (address, kind), sorted by address.
    code_kinds: Vec<(u32, CodeKind)>,
}

fn space_slot(space: Space) -> usize {
    match space {
        Space::Any => 0,
        Space::Secure => 1,
        Space::NonSecure => 2,
    }
}

/// Disjoint ranges covered by the regions serving `access`, each owned by
/// the latest-added region that covers it.
fn flatten(regions: &[Region], access: Space) -> Vec<(u64, u64, usize)> {
    let serving: Vec<usize> = (0..regions.len())
        .filter(|&i| regions[i].space.serves(access) && !regions[i].is_empty())
        .collect();
    let mut cuts: Vec<u64> = serving
        .iter()
        .flat_map(|&i| [u64::from(regions[i].base), regions[i].end()])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out: Vec<(u64, u64, usize)> = Vec::new();
    for w in cuts.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        let owner = serving
            .iter()
            .rev()
            .find(|&&i| u64::from(regions[i].base) <= lo && regions[i].end() >= hi);
        if let Some(&i) = owner {
            match out.last_mut() {
                Some(last) if last.2 == i && last.1 == lo => last.1 = hi,
                _ => out.push((lo, hi, i)),
            }
        }
    }
    out
}

impl MemoryMap {
    /// An empty map.
    #[must_use]
    pub fn new() -> Self {
        MemoryMap::default()
    }

    /// Add a region; where it overlaps earlier ones, it wins.
    pub fn add(&mut self, region: Region) {
        self.regions.push(region);
        for space in [Space::Any, Space::Secure, Space::NonSecure] {
            self.lookup[space_slot(space)] = flatten(&self.regions, space);
        }
    }

    /// Add the contents of a raw binary file at `base` (`--mem f.bin@ADDR`).
    ///
    /// `offset` and `length` select part of the file (snapshot dumps).
    ///
    /// # Errors
    ///
    /// [`MemoryError::Io`] when the file cannot be read,
    /// [`MemoryError::BadRegion`] when the selection lies outside the file
    /// or the address space.
    pub fn add_file(
        &mut self,
        path: &Path,
        base: u32,
        space: Space,
        offset: u64,
        length: Option<u64>,
    ) -> Result<(), MemoryError> {
        use std::io::{Read, Seek, SeekFrom};
        let io = |source| MemoryError::Io {
            path: path.to_path_buf(),
            source,
        };
        let name = path.display().to_string();
        let mut file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        if offset > size {
            return Err(MemoryError::BadRegion {
                name,
                reason: format!("offset {offset} is past the end of the {size}-byte file"),
            });
        }
        // Only the bytes the region uses are read, and never more than the
        // 32-bit address space above `base` can hold, whatever the file's
        // or the description's size.
        let room = (1u64 << 32) - u64::from(base);
        let wanted = length.unwrap_or(u64::MAX).min(size - offset);
        if wanted > room {
            return Err(MemoryError::BadRegion {
                name,
                reason: format!(
                    "{wanted} bytes at {base:#010x} go past the end of the 32-bit address space"
                ),
            });
        }
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let mut bytes = Vec::new();
        file.take(wanted).read_to_end(&mut bytes).map_err(io)?;
        let len = bytes.len();
        self.add(Region::new(name, base, space, bytes.into(), 0, len)?);
        Ok(())
    }

    /// Record mapping symbols (address, kind); used by ELF loading.
    pub fn add_code_kinds(&mut self, kinds: impl IntoIterator<Item = (u32, CodeKind)>) {
        self.code_kinds.extend(kinds);
        self.code_kinds.sort_by_key(|&(a, _)| a);
    }

    /// The regions, in the order they were added.
    pub fn regions(&self) -> impl Iterator<Item = &Region> {
        self.regions.iter()
    }

    /// Whether there are no regions.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// The region that answers `addr` in `space`.
    #[must_use]
    pub fn region_at(&self, space: Space, addr: u32) -> Option<&Region> {
        let table = &self.lookup[space_slot(space)];
        let a = u64::from(addr);
        let at = table.partition_point(|&(start, _, _)| start <= a);
        let &(_, end, index) = table.get(at.checked_sub(1)?)?;
        (a < end).then(|| &self.regions[index])
    }
}

impl MemoryImage for MemoryMap {
    fn read(&self, space: Space, addr: u32, buf: &mut [u8]) -> usize {
        let Some(region) = self.region_at(space, addr) else {
            return 0;
        };
        let from = (addr - region.base) as usize;
        let src = &region.bytes()[from..];
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        n
    }

    fn code_kind(&self, addr: u32) -> Option<CodeKind> {
        let at = self.code_kinds.partition_point(|&(a, _)| a <= addr);
        at.checked_sub(1).map(|i| self.code_kinds[i].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(base: u32, bytes: &[u8], space: Space) -> Region {
        let data: Arc<[u8]> = bytes.into();
        Region::new("t", base, space, data, 0, bytes.len()).expect("valid")
    }

    #[test]
    fn lookup_reads_within_and_across_nothing() {
        let mut m = MemoryMap::new();
        m.add(region(0x1000, &[1, 2, 3, 4], Space::Any));
        m.add(region(0x2000, &[9; 8], Space::Any));
        let mut buf = [0u8; 4];
        assert_eq!(m.read(Space::Any, 0x1002, &mut buf), 2);
        assert_eq!(&buf[..2], &[3, 4]);
        assert_eq!(m.read(Space::Any, 0x1004, &mut buf), 0);
        assert_eq!(m.read(Space::Any, 0xFFF, &mut buf), 0);
        assert_eq!(m.read(Space::Secure, 0x2004, &mut buf), 4);
    }

    #[test]
    fn spaces_and_overlaps() {
        let mut m = MemoryMap::new();
        m.add(region(0x0, &[1; 16], Space::Secure));
        m.add(region(0x0, &[2; 16], Space::NonSecure));
        m.add(region(0x4, &[3; 4], Space::Any));
        let mut b = [0u8; 1];
        m.read(Space::Secure, 0, &mut b);
        assert_eq!(b[0], 1);
        m.read(Space::NonSecure, 0, &mut b);
        assert_eq!(b[0], 2);
        m.read(Space::NonSecure, 5, &mut b);
        assert_eq!(b[0], 3, "the region added last wins");
        m.read(Space::Secure, 9, &mut b);
        assert_eq!(b[0], 1);
    }

    #[test]
    fn region_limits() {
        let data: Arc<[u8]> = vec![0u8; 8].into();
        assert!(Region::new("x", 0, Space::Any, data.clone(), 4, 8).is_err());
        assert!(Region::new("x", 0xFFFF_FFFC, Space::Any, data.clone(), 0, 8).is_err());
        assert!(Region::new("x", 0xFFFF_FFF8, Space::Any, data, 0, 8).is_ok());
    }

    #[test]
    fn code_kinds_follow_the_last_symbol() {
        let mut m = MemoryMap::new();
        m.add_code_kinds([
            (0x100, CodeKind::Thumb),
            (0x10, CodeKind::Arm),
            (0x200, CodeKind::Data),
        ]);
        assert_eq!(m.code_kind(0x8), None);
        assert_eq!(m.code_kind(0x10), Some(CodeKind::Arm));
        assert_eq!(m.code_kind(0x1FF), Some(CodeKind::Thumb));
        assert_eq!(m.code_kind(0x200), Some(CodeKind::Data));
    }
}
