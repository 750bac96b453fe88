//! A set of memory regions with fast address lookup.

use super::{CodeKind, Contents, MemoryError, MemoryImage, Space};
use alloc::boxed::Box;
use alloc::collections::BinaryHeap;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use once_cell::race::OnceBox;
#[cfg(feature = "std")]
use std::path::Path;

/// A contiguous block of memory contents at an address.
#[derive(Debug, Clone)]
pub struct Region {
    /// Address of the first byte.
    pub base: u32,
    /// Memory space the region belongs to.
    pub space: Space,
    /// Where the contents came from (file name, section), for messages.
    pub name: String,
    data: Contents,
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
        Region::of_contents(name, base, space, data.into(), start, len)
    }

    /// A region holding bytes `start..start + len` of `data` (a mapped
    /// file, or a buffer) at `base`.
    ///
    /// # Errors
    ///
    /// As [`Region::new`].
    pub fn of_contents(
        name: impl Into<String>,
        base: u32,
        space: Space,
        data: Contents,
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
        &self.data.bytes()[self.start..self.start + self.len]
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
/// ranges per access space, built (in O(n log n)) at the first lookup
/// after regions were added.
#[derive(Debug, Clone, Default)]
pub struct MemoryMap {
    /// Regions in the order they were added.
    regions: Vec<Region>,
    /// Per access space (`Any`, `Secure`, `NonSecure`): disjoint ranges
    /// `(start, end, region index)` sorted by start. Threads that race to
    /// the first lookup may each build them; one copy is kept.
    lookup: OnceBox<[Table; 3]>,
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

/// Disjoint ranges `(start, end, region index)`, sorted by start.
type Table = Vec<(u64, u64, usize)>;

/// Disjoint ranges covered by the regions serving `access`, each owned by
/// the latest-added region that covers it: a sweep over the region
/// boundaries keeping the regions open at each in a heap by index.
fn flatten(regions: &[Region], access: Space) -> Table {
    let mut serving: Vec<usize> = (0..regions.len())
        .filter(|&i| regions[i].space.serves(access) && !regions[i].is_empty())
        .collect();
    let mut cuts: Vec<u64> = serving
        .iter()
        .flat_map(|&i| [u64::from(regions[i].base), regions[i].end()])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    serving.sort_by_key(|&i| regions[i].base);
    let mut next = serving.iter().peekable();
    let mut open: BinaryHeap<usize> = BinaryHeap::new();
    let mut out: Table = Vec::new();
    for w in cuts.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        while let Some(&&i) = next.peek().filter(|&&&i| u64::from(regions[i].base) <= lo) {
            open.push(i);
            next.next();
        }
        // Regions that ended at or before `lo` never open again.
        while open.peek().is_some_and(|&i| regions[i].end() <= lo) {
            open.pop();
        }
        // The latest region open at `lo` reaches `hi` at least: every end
        // is a cut.
        if let Some(&i) = open.peek() {
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
        self.lookup = OnceBox::new();
    }

    fn tables(&self) -> &[Table; 3] {
        self.lookup.get_or_init(|| {
            Box::new(
                [Space::Any, Space::Secure, Space::NonSecure]
                    .map(|space| flatten(&self.regions, space)),
            )
        })
    }

    /// Add the contents of a raw binary file at `base` (`--mem f.bin@ADDR`).
    ///
    /// `offset` and `length` select part of the file (snapshot dumps); a
    /// `length` past the end of the file is cut to the file.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Io`] when the file cannot be opened or is not a
    /// regular file, [`MemoryError::BadRegion`] when the selection lies
    /// outside the file or the address space.
    #[cfg(feature = "std")]
    pub fn add_file(
        &mut self,
        path: &Path,
        base: u32,
        space: Space,
        offset: u64,
        length: Option<u64>,
    ) -> Result<(), MemoryError> {
        let contents = Contents::map_path(path).map_err(|source| MemoryError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let name = path.display().to_string();
        self.add_contents(name, &contents, base, space, offset, length)
    }

    /// Add part of `contents` (a mapped file) at `base`: from `offset`,
    /// `length` bytes or up to the end. `name` names it in messages.
    ///
    /// # Errors
    ///
    /// [`MemoryError::BadRegion`] when the selection lies outside the
    /// contents or the 32-bit address space.
    pub fn add_contents(
        &mut self,
        name: String,
        contents: &Contents,
        base: u32,
        space: Space,
        offset: u64,
        length: Option<u64>,
    ) -> Result<(), MemoryError> {
        let size = contents.len() as u64;
        if offset > size {
            return Err(MemoryError::BadRegion {
                name,
                reason: format!("offset {offset} is past the end of the {size}-byte file"),
            });
        }
        // Never more than the 32-bit address space above `base` can hold,
        // whatever the file's or the description's size.
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
        let too_large = || MemoryError::BadRegion {
            name: name.clone(),
            reason: "too large for this machine's address space".into(),
        };
        let start = usize::try_from(offset).map_err(|_| too_large())?;
        let len = usize::try_from(wanted).map_err(|_| too_large())?;
        let region = Region::of_contents(name.clone(), base, space, contents.clone(), start, len)?;
        self.add(region);
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
        self.owner_at(space, addr).map(|(r, _)| r)
    }

    /// The region that answers `addr` in `space`, and where its answer
    /// ends (a region added later may take over before the region ends).
    fn owner_at(&self, space: Space, addr: u32) -> Option<(&Region, u64)> {
        let table = &self.tables()[space_slot(space)];
        let a = u64::from(addr);
        let at = table.partition_point(|&(start, _, _)| start <= a);
        let &(_, end, index) = table.get(at.checked_sub(1)?)?;
        (a < end).then(|| (&self.regions[index], end))
    }
}

impl MemoryImage for MemoryMap {
    fn read(&self, space: Space, addr: u32, buf: &mut [u8]) -> usize {
        // Up to the end of the region that answers for `addr` (as a read
        // of one region), each byte from the region that answers for it:
        // one added later may overlap it.
        let Some((first, _)) = self.owner_at(space, addr) else {
            return 0;
        };
        let len = first.bytes().len() - (addr - first.base) as usize;
        let want = buf.len().min(len);
        let mut n = 0;
        while n < want {
            let Some(at) = u32::try_from(u64::from(addr) + n as u64).ok() else {
                break;
            };
            let Some((region, end)) = self.owner_at(space, at) else {
                break;
            };
            let from = (at - region.base) as usize;
            let owned = usize::try_from(end - u64::from(at)).unwrap_or(usize::MAX);
            let src = &region.bytes()[from..];
            let k = src.len().min(owned).min(want - n);
            if k == 0 {
                break;
            }
            buf[n..n + k].copy_from_slice(&src[..k]);
            n += k;
        }
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
        // A read across the later region takes each byte from its owner.
        let mut w = [0u8; 8];
        assert_eq!(m.read(Space::NonSecure, 2, &mut w), 8);
        assert_eq!(w, [2, 2, 3, 3, 3, 3, 2, 2]);
    }

    /// The byte at `addr` by brute force: the last-added region of a
    /// serving space that holds it.
    fn naive(regions: &[(u32, Vec<u8>, Space)], access: Space, addr: u32) -> Option<u8> {
        regions.iter().rev().find_map(|(base, bytes, space)| {
            let off = addr.checked_sub(*base)? as usize;
            (space.serves(access) && off < bytes.len()).then(|| bytes[off])
        })
    }

    #[test]
    fn overlapping_regions_agree_with_a_brute_force_owner() {
        // A fixed pseudo-random layout (xorshift): 300 regions in 4 KiB.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let spaces = [Space::Any, Space::Secure, Space::NonSecure];
        let mut m = MemoryMap::new();
        let mut all = Vec::new();
        for k in 0..300u32 {
            let base = next(4096) as u32;
            let len = next(200) as usize;
            let space = spaces[next(3) as usize];
            let bytes = vec![(k % 251) as u8; len];
            m.add(region(base, &bytes, space));
            all.push((base, bytes, space));
        }
        for access in spaces {
            for addr in 0..4400u32 {
                let mut b = [0u8; 1];
                let got = (m.read(access, addr, &mut b) == 1).then_some(b[0]);
                assert_eq!(got, naive(&all, access, addr), "{access:?} {addr:#x}");
                // Four bytes at once: each its owner's.
                let mut w = [0u8; 4];
                let n = m.read(access, addr, &mut w);
                let want: Vec<u8> = (0..n as u32)
                    .filter_map(|k| naive(&all, access, addr + k))
                    .collect();
                assert_eq!(&w[..n], &want[..], "{access:?} {addr:#x} ×4");
            }
        }
    }

    #[test]
    fn many_regions_are_added_in_near_linear_time() {
        // Each region rebuilt the table once took cubic time: 4,000 dump
        // sections took 113 s. Built once, 20,000 take milliseconds; the
        // bound leaves room for a slow debug build on a busy machine.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut m = MemoryMap::new();
            for k in 0..20_000u32 {
                m.add(region(k * 16, &[k as u8; 24], Space::Any));
                if k % 1000 == 0 {
                    let mut b = [0u8; 1];
                    assert_eq!(m.read(Space::Any, k * 16, &mut b), 1);
                }
            }
            tx.send(m).ok();
        });
        let m = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("20,000 regions added within 30 s");
        let mut b = [0u8; 1];
        assert_eq!(m.read(Space::Any, 19_999 * 16 + 20, &mut b), 1);
        assert_eq!(b[0], (19_999u32 % 256) as u8);
        assert_eq!(m.read(Space::Any, 19_998 * 16 + 20, &mut b), 1);
        assert_eq!(b[0], (19_999u32 % 256) as u8, "the later region wins");
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
