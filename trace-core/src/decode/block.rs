//! The block cache: each basic block (instructions up to and including the
//! next waypoint) is decoded and classified once, keyed by address,
//! instruction set and memory space, so the hot loop runs atoms against
//! cached blocks. Blocks also remember their successors (taken and
//! fall-through), which skips the hash lookup on most atoms.

use crate::event::{InsnClass, Isa, Range};
use crate::memory::{MemoryImage, Space};
use alloc::vec;
use alloc::vec::Vec;
use core::hash::{BuildHasherDefault, Hasher};
use hashbrown::HashMap;
use isa_decode::{ItState, Kind};

/// Most instructions walked looking for a waypoint before giving up.
pub const WALK_LIMIT: u32 = 4096;

/// Blocks are forgotten when the cache holds more instructions than this
/// (about 100 MB of [`CInsn`]s and their ranges).
const MAX_CACHED_INSNS: usize = 1 << 21;

/// "No block" in successor links.
pub const NONE: u32 = u32::MAX;

/// One cached instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CInsn {
    /// Address.
    pub addr: u32,
    /// Size in bytes.
    pub size: u8,
    /// Class for range reporting.
    pub class: InsnClass,
    /// Waypoint (ends a PFT block).
    pub waypoint: bool,
    /// Indirect branch or exception return.
    pub indirect: bool,
    /// Branch with link.
    pub link: bool,
    /// Conventional subroutine return.
    pub ret: bool,
    /// Conditional by its encoding (condition field, `B<c>`, CBZ/CBNZ).
    pub cond: bool,
    /// Conditional by its encoding or by its place in a T32 IT block
    /// that starts in this block: ETMv3 by runs ends a run there, so that
    /// its outcome is the range's own.
    pub conditional: bool,
    /// Taken target of a direct waypoint.
    pub target: Option<(u32, Isa)>,
}

/// Why a block ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockEnd {
    /// Its last instruction is a waypoint.
    Waypoint,
    /// Memory is not accessible at this address.
    Nacc(u32),
    /// An UNDEFINED encoding at this address.
    Undefined(u32),
    /// [`WALK_LIMIT`] instructions without a waypoint.
    Limit,
}

/// A cached block.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    /// First instruction's index in the arena.
    pub first: u32,
    /// Number of instructions.
    pub len: u32,
    /// Address after the last instruction.
    pub end_addr: u32,
    /// Why it ends.
    pub end: BlockEnd,
    /// Block at the taken target of a direct last instruction.
    pub taken: u32,
    /// Block after the last instruction (fall-through).
    pub fall: u32,
}

/// A multiplicative hasher for the `u64` keys.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Slots of [`BlockCache`]'s direct-mapped front table.
const FRONT_BITS: u32 = 12;

/// A key no block has (keys use 35 bits).
const NO_KEY: u64 = u64::MAX;

/// The front table's slot of `key`.
#[inline]
fn front_slot(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FRONT_BITS)) as usize
}

/// Cache key of a block.
#[inline]
pub fn key(addr: u32, isa: Isa, space: Space) -> u64 {
    u64::from(addr) | (isa as u64) << 32 | (space as u64) << 34
}

/// The cache.
#[derive(Default)]
pub struct BlockCache {
    /// Instructions of all blocks.
    pub arena: Vec<CInsn>,
    /// For each instruction of `arena`, the range of that instruction
    /// alone, in its block's instruction set and memory space, not
    /// executed and without cycles: ETMv3 reports every instruction so,
    /// with the atom and cycles filled in. (Kept apart from `arena`, whose
    /// entries the PTM path copies once per waypoint.)
    pub alone: Vec<Range>,
    /// For each instruction of `arena`, the instructions from it up to and
    /// including the next conditional one or its block's last: the most
    /// an ETMv3 run starting there may take.
    pub stop: Vec<u16>,
    /// The blocks.
    pub blocks: Vec<Block>,
    map: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    /// Blocks found lately, one per slot of their key's hash, looked at
    /// before `map`: a branch to an address from a packet or the return
    /// stack has no successor link, and the map's lookup was a tenth of
    /// decoding a PTM capture with the return stack. Empty until the
    /// first block is built.
    front: Vec<(u64, u32)>,
    /// DMB/DSB are waypoints (PTM ETMCCER bit 24).
    pub barriers: bool,
    /// Times the cache was cleared: block numbers from before a clear are
    /// void.
    pub generation: u32,
}

impl core::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BlockCache")
            .field("blocks", &self.blocks.len())
            .field("insns", &self.arena.len())
            .finish_non_exhaustive()
    }
}

impl BlockCache {
    /// Number of cached blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Forget every block (the memory image changed).
    pub fn clear(&mut self) {
        self.arena.clear();
        self.alone.clear();
        self.stop.clear();
        self.blocks.clear();
        self.map.clear();
        self.front.fill((NO_KEY, NONE));
        self.generation = self.generation.wrapping_add(1);
    }

    /// The block starting at `addr`, decoding it on first use.
    pub fn get(&mut self, mem: &dyn MemoryImage, addr: u32, isa: Isa, space: Space) -> u32 {
        let k = key(addr, isa, space);
        let slot = front_slot(k);
        if let Some(&(fk, b)) = self.front.get(slot) {
            if fk == k {
                return b;
            }
        }
        let b = match self.map.get(&k) {
            Some(&b) => b,
            None => {
                if self.arena.len() > MAX_CACHED_INSNS {
                    self.clear();
                }
                let b = self.build(mem, addr, isa, space);
                self.map.insert(k, b);
                b
            }
        };
        if self.front.is_empty() {
            self.front = vec![(NO_KEY, NONE); 1 << FRONT_BITS];
        }
        if let Some(f) = self.front.get_mut(slot) {
            *f = (k, b);
        }
        b
    }

    fn build(&mut self, mem: &dyn MemoryImage, start: u32, isa: Isa, space: Space) -> u32 {
        let first = self.arena.len() as u32;
        let mut addr = start;
        let mut it = ItState::new();
        let mut end = BlockEnd::Limit;
        let dec_isa = isa;
        for _ in 0..WALK_LIMIT {
            let mut buf = [0u8; 4];
            let n = mem.read(space, addr, &mut buf);
            let Some(insn) = isa_decode::decode(dec_isa, &buf[..n], addr) else {
                end = BlockEnd::Nacc(addr);
                break;
            };
            if insn.kind == Kind::Undefined {
                end = BlockEnd::Undefined(addr);
                break;
            }
            // Keeps IT blocks in step; the effective condition is also in
            // the per-instruction view (`Range::instructions`).
            let in_it = isa == Isa::T32 && it.step(&insn) != isa_decode::Cond::Al;
            let waypoint = insn.is_waypoint_with(self.barriers);
            let class = if waypoint {
                InsnClass::of(&insn)
            } else {
                InsnClass::Other
            };
            let link = insn.link;
            let ret = insn.ret.is_some_and(|r| !r.is_exception_return());
            let cond = insn.is_conditional();
            self.arena.push(CInsn {
                addr,
                size: insn.size,
                class,
                waypoint,
                indirect: insn.is_indirect(),
                link,
                ret,
                cond,
                conditional: cond || in_it,
                target: insn.target.map(|t| (t.addr, t.isa)),
            });
            self.alone.push(Range {
                start: addr,
                end: addr.wrapping_add(u32::from(insn.size)),
                count: 1,
                isa,
                last_size: insn.size,
                last: class,
                link,
                ret,
                cond,
                executed: false,
                cycles: None,
                space,
            });
            addr = addr.wrapping_add(u32::from(insn.size));
            if waypoint {
                end = BlockEnd::Waypoint;
                break;
            }
        }
        // (`stop` is as long as `arena` before the block, like `alone`.)
        let mut left = 0u16;
        self.stop.resize(self.arena.len(), 1);
        for k in (first as usize..self.arena.len()).rev() {
            left = if self.arena[k].conditional {
                1
            } else {
                left + 1
            };
            self.stop[k] = left;
        }
        let b = self.blocks.len() as u32;
        self.blocks.push(Block {
            first,
            len: self.arena.len() as u32 - first,
            end_addr: addr,
            end,
            taken: NONE,
            fall: NONE,
        });
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemoryMap, Region};

    /// 64 KiB of `B .` (A32 0xEAFFFFFE, ARM ARM A8.8.18): every
    /// instruction is a block of its own.
    fn branches() -> MemoryMap {
        let code: Vec<u8> = std::iter::repeat_n(0xEAFF_FFFEu32.to_le_bytes(), 1 << 14)
            .flatten()
            .collect();
        let n = code.len();
        let mut map = MemoryMap::new();
        if let Ok(r) = Region::new("code", 0, Space::Any, code.into(), 0, n) {
            map.add(r);
        }
        map
    }

    fn start(c: &BlockCache, b: u32) -> Option<u32> {
        let blk = c.blocks.get(b as usize)?;
        c.arena.get(blk.first as usize).map(|i| i.addr)
    }

    #[test]
    fn blocks_sharing_a_front_slot_are_told_apart() {
        let mem = branches();
        let key_at = |a: u32| key(a, Isa::A32, Space::Secure);
        let a = 0x100;
        let b = (0x104..0x1_0000)
            .step_by(4)
            .find(|&x| front_slot(key_at(x)) == front_slot(key_at(a)))
            .expect("16 Ki addresses over 4 Ki slots collide");
        let mut c = BlockCache::default();
        let ba = c.get(&mem, a, Isa::A32, Space::Secure);
        let bb = c.get(&mem, b, Isa::A32, Space::Secure);
        assert_ne!(ba, bb);
        assert_eq!(start(&c, ba), Some(a));
        assert_eq!(start(&c, bb), Some(b));
        // `b` took the slot; `a` is found again, not rebuilt.
        assert_eq!(c.get(&mem, a, Isa::A32, Space::Secure), ba);
        assert_eq!(c.get(&mem, b, Isa::A32, Space::Secure), bb);
        assert_eq!(c.len(), 2);
        // Another instruction set or space is another block.
        let t = c.get(&mem, a, Isa::T32, Space::Secure);
        let ns = c.get(&mem, a, Isa::A32, Space::NonSecure);
        assert!(t != ba && ns != ba && t != ns);
        // After a clear nothing old is returned.
        c.clear();
        let fresh = c.get(&mem, b, Isa::A32, Space::Secure);
        assert_eq!((c.len(), start(&c, fresh)), (1, Some(b)));
    }
}
