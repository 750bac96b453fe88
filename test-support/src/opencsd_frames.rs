//! A minimal CoreSight frame deformatter numbering bytes the way OpenCSD's
//! `Idx` does, so the packet crates' tests can compare offsets with
//! OpenCSD's listings without depending on `trace-core`.
//!
//! Each frame's per-ID data block counts from the frame start (first block)
//! or from the position of the ID-change byte (later blocks), and the data
//! bytes of a block take consecutive numbers.

use std::collections::BTreeMap;

/// Per trace ID, the data bytes of a CoreSight-formatted buffer with the
/// index OpenCSD numbers them by (see the module docs).
#[must_use]
pub fn deformat(data: &[u8]) -> BTreeMap<u8, Vec<(u64, u8)>> {
    let mut out: BTreeMap<u8, Vec<(u64, u8)>> = BTreeMap::new();
    let mut cur: u8 = 0;
    let push = |out: &mut BTreeMap<u8, Vec<(u64, u8)>>, id: u8, idx: &mut u64, b: u8| {
        if id != 0 && id != 0x7F {
            out.entry(id).or_default().push((*idx, b));
        }
        *idx += 1;
    };
    for (f, frame) in data.chunks_exact(16).enumerate() {
        let start = (f * 16) as u64;
        let aux = frame[15];
        let mut idx = start;
        for i in (0..15).step_by(2) {
            let b = frame[i];
            let aux_bit = (aux >> (i / 2)) & 1;
            if b & 1 == 1 {
                let new_id = b >> 1;
                if i == 14 {
                    // An ID in the last position only selects the ID for
                    // the next frame.
                    cur = new_id;
                    break;
                }
                if aux_bit == 1 {
                    // The next byte still belongs to the old ID.
                    push(&mut out, cur, &mut idx, frame[i + 1]);
                    if new_id != cur {
                        cur = new_id;
                        idx = start + i as u64;
                    }
                } else {
                    if new_id != cur {
                        cur = new_id;
                        idx = start + i as u64;
                    }
                    push(&mut out, cur, &mut idx, frame[i + 1]);
                }
            } else {
                push(&mut out, cur, &mut idx, b | aux_bit);
                if i < 14 {
                    push(&mut out, cur, &mut idx, frame[i + 1]);
                }
            }
        }
    }
    out
}

/// The data of trace ID `id` as runs of consecutively numbered bytes, each
/// with the OpenCSD index of its first byte: ready for a parser's
/// `feed_at`.
#[must_use]
pub fn runs(data: &[u8], id: u8) -> Vec<(u64, Vec<u8>)> {
    let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
    for (idx, b) in deformat(data).remove(&id).unwrap_or_default() {
        match out.last_mut() {
            Some((at, bytes)) if *at + bytes.len() as u64 == idx => bytes.push(b),
            _ => out.push((idx, vec![b])),
        }
    }
    out
}
