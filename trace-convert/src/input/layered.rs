//! A memory image read through to another where it maps nothing: how the
//! processes of a perf.data recording share the kernel's mappings (and a
//! forked process its parent's) instead of each holding a copy.

use std::sync::Arc;
use trace_core::memory::{CodeKind, MemoryImage, MemoryMap, Space};

/// `top`'s bytes over `under`'s: where both map an address, `top` answers
/// (as if `under`'s regions were added to one map first and `top`'s
/// after).
pub struct Layered {
    top: MemoryMap,
    /// Per access space (`Any`, `Secure`, `NonSecure`): the first address
    /// of each region of `top` that serves it, sorted; a read from `under`
    /// stops at the next one.
    starts: [Vec<u32>; 3],
    under: Arc<dyn MemoryImage>,
}

const SPACES: [Space; 3] = [Space::Any, Space::Secure, Space::NonSecure];

fn slot(space: Space) -> usize {
    match space {
        Space::Any => 0,
        Space::Secure => 1,
        Space::NonSecure => 2,
    }
}

impl Layered {
    /// `top` over `under`.
    #[must_use]
    pub fn new(top: MemoryMap, under: Arc<dyn MemoryImage>) -> Layered {
        let starts = SPACES.map(|access| {
            let mut v: Vec<u32> = top
                .regions()
                .filter(|r| !r.is_empty() && r.space.serves(access))
                .map(|r| r.base)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        });
        Layered { top, starts, under }
    }
}

impl MemoryImage for Layered {
    fn read(&self, space: Space, addr: u32, buf: &mut [u8]) -> usize {
        let n = self.top.read(space, addr, buf);
        if n > 0 {
            return n;
        }
        // Nothing of `top` covers `addr`: `under` answers up to where a
        // region of `top` starts.
        let starts = &self.starts[slot(space)];
        let next = starts.partition_point(|&s| s <= addr);
        let room = starts
            .get(next)
            .map_or(buf.len(), |&s| buf.len().min((s - addr) as usize));
        self.under.read(space, addr, &mut buf[..room])
    }

    fn code_kind(&self, addr: u32) -> Option<CodeKind> {
        self.top
            .code_kind(addr)
            .or_else(|| self.under.code_kind(addr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_core::memory::Region;

    fn region(base: u32, bytes: &[u8], space: Space) -> Region {
        let data: Arc<[u8]> = bytes.into();
        Region::new("t", base, space, data, 0, bytes.len()).expect("valid")
    }

    /// Each byte of `layered` is the one a single map holding the same
    /// regions, the lower ones added first, answers; a longer read
    /// returns the same bytes as reads of one byte each. (The regions of
    /// one layer do not overlap: a [`MemoryMap`] reads on to the end of
    /// the region that holds the first byte.)
    #[test]
    fn a_layered_image_reads_as_one_map_with_the_top_added_last() {
        let lower = [
            region(0x100, &[1; 0x40], Space::Any),
            region(0x200, &[2; 0x10], Space::Secure),
            region(0x140, &[3; 0x30], Space::NonSecure),
        ];
        let upper = [
            region(0x110, &[7; 0x8], Space::Any),
            region(0x138, &[8; 0x4], Space::Secure),
            region(0x1F8, &[9; 0x10], Space::NonSecure),
        ];
        let mut under = MemoryMap::new();
        let mut top = MemoryMap::new();
        let mut flat = MemoryMap::new();
        for r in &lower {
            under.add(r.clone());
            flat.add(r.clone());
        }
        for r in &upper {
            top.add(r.clone());
            flat.add(r.clone());
        }
        let layered = Layered::new(top, Arc::new(under));
        let byte = |image: &dyn MemoryImage, space, addr| {
            let mut b = [0u8];
            (image.read(space, addr, &mut b) == 1).then_some(b[0])
        };
        for space in SPACES {
            for addr in 0xF0..0x220 {
                let want = byte(&flat, space, addr);
                assert_eq!(byte(&layered, space, addr), want, "{space:?} {addr:#x}");
                let mut long = [0u8; 0x100];
                let n = layered.read(space, addr, &mut long);
                assert_eq!(n > 0, want.is_some(), "{space:?} {addr:#x}");
                for (i, &b) in (addr..).zip(&long[..n]) {
                    assert_eq!(Some(b), byte(&flat, space, i), "{space:?} {addr:#x}+{i:#x}");
                }
            }
        }
    }
}
