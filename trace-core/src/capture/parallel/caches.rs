//! The code caches of the chunks' decoders, kept from one chunk to the
//! next: a fresh decoder starts with none and decodes every instruction it
//! meets again, while a cache from an earlier chunk of the same source
//! already holds the loops it will walk (figures in
//! `docs/performance.md`).

use crate::decode::{CodeCache, Decoder};
use std::sync::Mutex;

/// Caches larger than this many instructions are not kept (a decoder's
/// own cache may grow to 2 Mi instructions; those kept here stay small
/// whatever the code).
const KEPT_INSNS: usize = 1 << 16;

/// Code caches per trace ID, handed from decoders whose chunk is done to
/// the decoders of later chunks.
#[derive(Debug)]
pub(super) struct Caches {
    pool: Mutex<Vec<(u8, CodeCache)>>,
    /// Caches kept at most (about one per worker and source).
    count: usize,
}

impl Caches {
    /// A pool keeping at most `count` caches.
    pub(super) fn new(count: usize) -> Caches {
        Caches {
            pool: Mutex::new(Vec::new()),
            count,
        }
    }

    /// Give `decoder` a kept cache of source `id`, if there is one (the
    /// decoder refuses a cache of another memory image).
    pub(super) fn lend(&self, id: u8, decoder: &mut Decoder) {
        let cache = self.pool.lock().ok().and_then(|mut p| {
            let i = p.iter().position(|(k, _)| *k == id)?;
            Some(p.swap_remove(i).1)
        });
        if let Some(c) = cache {
            decoder.set_cache(c);
        }
    }

    /// Keep the cache of `decoder` (of source `id`) for a later chunk.
    pub(super) fn keep(&self, id: u8, decoder: &mut Decoder) {
        let cache = decoder.take_cache();
        if cache.instructions() > KEPT_INSNS || cache.blocks() == 0 {
            return;
        }
        if let Ok(mut p) = self.pool.lock() {
            p.push((id, cache));
            if p.len() > self.count {
                // The oldest goes.
                p.remove(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::op::{InsnAtoms, Sync, SyncReason, Target, TraceOp};
    use crate::decode::DecoderConfig;
    use crate::demux::SourceConfig;
    use crate::event::{Isa, TraceOnReason};
    use crate::memory::{MemoryImage, MemoryMap, Region, Space};
    use std::sync::Arc;

    /// MOV r0, #0 ; ADD r0, r0, #1 ; B . (A32, ARM ARM A8.8) at 0x1000.
    fn image() -> Arc<dyn MemoryImage> {
        let code: Vec<u8> = [0xE3A0_0000u32, 0xE280_0001, 0xEAFF_FFFE]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let n = code.len();
        let mut map = MemoryMap::new();
        if let Ok(r) = Region::new("code", 0x1000, Space::Any, code.into(), 0, n) {
            map.add(r);
        }
        Arc::new(map)
    }

    /// A decoder of source 0x10 that has walked the code.
    fn walked(mem: &Arc<dyn MemoryImage>) -> Decoder {
        let cfg = DecoderConfig::new(0x10, &SourceConfig::Etm(etm_packets::Config::new()));
        let mut d = Decoder::new(cfg, Arc::clone(mem));
        let sync = TraceOp::Sync(Sync {
            target: Target {
                addr: 0x1000,
                isa: Some(Isa::A32),
            },
            ns: false,
            hyp: false,
            context_id: None,
            reason: SyncReason::TraceOn(TraceOnReason::Filter),
            cycles: None,
            lsip: None,
        });
        let atoms = TraceOp::InsnAtoms(InsnAtoms {
            count: 3,
            executed: 0b111,
            cycles: None,
        });
        d.run_op(0, &sync, &mut |_| {});
        d.run_op(1, &atoms, &mut |_| {});
        d
    }

    #[test]
    fn caches_go_to_decoders_of_the_same_source_and_image() {
        let mem = image();
        let caches = Caches::new(1);
        let mut first = walked(&mem);
        caches.keep(0x10, &mut first);
        assert_eq!(first.take_cache().blocks(), 0, "the cache left the decoder");
        // Another source gets nothing; the same source gets the cache.
        let mut other = walked(&mem);
        other.take_cache();
        caches.lend(0x11, &mut other);
        assert_eq!(other.take_cache().blocks(), 0);
        let mut next = walked(&mem);
        next.take_cache();
        caches.lend(0x10, &mut next);
        assert!(next.take_cache().blocks() > 0);
        // A decoder of another image refuses it; the pool keeps at most one.
        let mut a = walked(&mem);
        let mut b = walked(&mem);
        caches.keep(0x10, &mut a);
        caches.keep(0x10, &mut b);
        assert_eq!(caches.pool.lock().map(|p| p.len()).unwrap_or(0), 1);
        let mut elsewhere = walked(&image());
        elsewhere.take_cache();
        caches.lend(0x10, &mut elsewhere);
        assert_eq!(elsewhere.take_cache().blocks(), 0);
    }
}
