//! Packets of a third-party capture against OpenCSD's listing, paired by
//! OpenCSD's `Idx` (our file offsets translated), so that one difference
//! does not shift the pairing of every packet after it.
//!
//! OpenCSD's error pseudo-packets (`BAD_TRACEMODE`, `I_RESERVED`,
//! `BAD_SEQUENCE`) are paired with our parser errors at the same offset.
//! Every packet that is not matched is counted in a category that says
//! what differs.

use crate::conformance::{compare, listed_kind, opencsd_indices};
use crate::listing::{parse_listing, ListedPacket};
use std::collections::BTreeMap;
use std::path::Path;
use trace_convert::input::capture::read_capture;
use trace_convert::input::{flags::SourceFlags, resolve};
use trace_convert::sinks::listing::packets::PacketRecord;
use trace_core::demux::Item;

/// Packet figures of one capture.
#[derive(Debug, Default)]
pub struct PacketFigures {
    /// Packets (and error pseudo-packets) in OpenCSD's listing.
    pub listed: usize,
    /// Our packets and parser errors.
    pub ours: usize,
    /// Listed packets we produce at the same offset with the same values.
    pub matched: usize,
    /// Every difference by category: count and the first example.
    pub categories: BTreeMap<String, (usize, String)>,
}

impl PacketFigures {
    fn note(&mut self, category: String, example: impl FnOnce() -> String) {
        self.categories
            .entry(category)
            .or_insert_with(|| (0, example()))
            .0 += 1;
    }
}

/// OpenCSD's names of the pseudo-packets it lists for bytes it could not
/// parse.
fn is_listed_error(kind: &str) -> bool {
    matches!(kind, "BAD_TRACEMODE" | "I_RESERVED" | "BAD_SEQUENCE")
}

/// One of our items at its OpenCSD index.
struct Ours {
    idx: u64,
    record: PacketRecord,
}

fn ours_text(o: &Ours) -> String {
    serde_json::to_string(&o.record).unwrap_or_default()
}

/// Compare the packets of the snapshot in `snapshot` with the listing text.
///
/// # Errors
///
/// When the snapshot cannot be read.
pub fn compare_capture(snapshot: &Path, listing: &str) -> Result<PacketFigures, String> {
    let input = resolve(snapshot, &SourceFlags::default()).map_err(|e| e.to_string())?;
    let mut ours: Vec<Ours> = Vec::new();
    for capture in &input.captures {
        let bytes =
            std::fs::read(&capture.path).map_err(|e| format!("{}: {e}", capture.path.display()))?;
        let index = opencsd_indices(&bytes, capture.layout).unwrap_or_default();
        read_capture(capture, |item| {
            if matches!(item, Item::Packet { .. } | Item::Error { .. }) {
                let record = PacketRecord::from_item(item);
                let idx = index.get(&record.offset).copied().unwrap_or(record.offset);
                ours.push(Ours { idx, record });
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    }
    ours.sort_by_key(|o| (o.record.id, o.idx));
    let mut listed = parse_listing(listing);
    listed.sort_by_key(|l| (l.id, l.idx));
    Ok(pair(&listed, &ours))
}

/// Categories of differences (explained in docs/conformance.md, "Conformance with
/// OpenCSD").
const DATA_HEADER: &str =
    "data-trace header with data trace off: OpenCSD BAD_TRACEMODE, ours a data packet";
const RESERVED: &str = "reserved header: OpenCSD reads it as a packet, we report an error";
const CUT_OFF: &str =
    "packet cut off by the end of the buffer: OpenCSD lists it, we report it incomplete";
const SKIPPED: &str =
    "next to an error: the bytes around an invalid packet are split into packets differently";
const BEFORE_SYNC: &str =
    "ours only: bytes before the first A-sync reported skipped (OpenCSD: NOTSYNC)";
const AFTER_END: &str = "ours only: after OpenCSD stopped at a fatal error";

/// Pair both sides by (trace ID, index) and sort every difference into a
/// category.
fn pair(listed: &[ListedPacket], ours: &[Ours]) -> PacketFigures {
    let mut f = PacketFigures {
        listed: listed.len(),
        ours: ours.len(),
        ..PacketFigures::default()
    };
    let last_listed = listed.iter().map(|l| (l.id, l.idx)).max();
    let (mut i, mut j) = (0, 0);
    // OpenCSD's ETMv3 packet reader starts in the ARM state: before the
    // first I-sync it prints partial branch addresses with the ARM bit
    // positions (`(21:0)` for three bytes) and no `ISA=`.
    let mut isa: Option<String> = Some("arm".into());
    // Our last item was an error: our parser waits for a sync.
    let mut skipping = false;
    let mut synced = false;
    while i < listed.len() || j < ours.len() {
        let l = listed.get(i);
        let o = ours.get(j);
        let lk = l.map(|l| (l.id, l.idx));
        let ok = o.map(|o| (o.record.id, o.idx));
        match (l, o) {
            (Some(l), Some(o)) if lk == ok => {
                let ours_error = o.record.kind == "error";
                let example = || format!("{}\n      ours: {}", l.text.trim_end(), ours_text(o));
                let message = o.record.message.as_deref().unwrap_or("");
                if is_listed_error(&l.kind) && ours_error {
                    f.matched += 1;
                } else if l.kind == "BAD_TRACEMODE" && o.record.value.is_some() {
                    f.note(DATA_HEADER.into(), example);
                } else if ours_error && message.contains("reserved header") {
                    f.note(RESERVED.into(), example);
                } else if ours_error && message.contains("input ends inside a packet") {
                    f.note(CUT_OFF.into(), example);
                } else if ours_error && message.contains("not synchronized") {
                    f.note(SKIPPED.into(), example);
                } else if is_listed_error(&l.kind) || ours_error {
                    f.note(
                        format!("OpenCSD {} where we report {}", l.kind, o.record.kind),
                        example,
                    );
                } else {
                    match compare(l, &o.record, o.idx, isa.as_deref()) {
                        Ok(()) => f.matched += 1,
                        Err(why) => f.note(category_of(&why), example),
                    }
                }
                skipping = ours_error;
                synced |= !ours_error;
                if o.record.isa.is_some() {
                    isa.clone_from(&o.record.isa);
                }
                i += 1;
                j += 1;
            }
            (Some(l), _) if ok.is_none_or(|b| lk.is_some_and(|a| a < b)) => {
                let cat = if skipping {
                    SKIPPED.to_owned()
                } else {
                    format!("OpenCSD only: {}", listed_kind(&l.kind))
                };
                f.note(cat, || l.text.trim_end().to_owned());
                i += 1;
            }
            (_, Some(o)) => {
                let error = o.record.kind == "error";
                let cat = if ok > last_listed {
                    AFTER_END.to_owned()
                } else if error && !synced {
                    BEFORE_SYNC.to_owned()
                } else if error || skipping {
                    SKIPPED.to_owned()
                } else {
                    format!("ours only: {}", o.record.kind)
                };
                f.note(cat, || ours_text(o));
                skipping = error;
                j += 1;
            }
            _ => break,
        }
    }
    f
}

/// The category of a field mismatch: the names of the differing fields.
fn category_of(why: &str) -> String {
    let fields: Vec<&str> = why
        .split("; ")
        .filter_map(|d| d.split(':').next())
        .collect();
    format!("{} differs", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(idx: u64, kind: &str) -> ListedPacket {
        ListedPacket {
            idx,
            id: 0x10,
            kind: kind.into(),
            ..ListedPacket::default()
        }
    }

    fn ours(idx: u64, kind: &str, message: Option<&str>) -> Ours {
        Ours {
            idx,
            record: PacketRecord {
                offset: idx,
                id: 0x10,
                kind: kind.into(),
                message: message.map(str::to_owned),
                ..PacketRecord::default()
            },
        }
    }

    #[test]
    fn differences_are_sorted_into_categories() {
        let mut ooo = ours(3, "out_of_order_data", None);
        ooo.record.value = Some(0);
        let theirs = [
            listed(2, "A_SYNC"),
            listed(3, "BAD_TRACEMODE"),
            listed(4, "P_HDR"),
            listed(5, "BRANCH_ADDRESS"),
            listed(6, "TRIGGER"),
        ];
        let mine = [
            ours(0, "error", Some("skipped while not synchronized")),
            ours(2, "a_sync", None),
            ooo,
            ours(4, "error", Some("reserved header byte 0xbe")),
            ours(9, "a_sync", None),
        ];
        let f = pair(&theirs, &mine);
        assert_eq!((f.listed, f.ours, f.matched), (5, 5, 1));
        let count = |c: &str| f.categories.get(c).map(|e| e.0);
        assert_eq!(count(BEFORE_SYNC), Some(1));
        assert_eq!(count(DATA_HEADER), Some(1));
        assert_eq!(count(RESERVED), Some(1));
        assert_eq!(count(SKIPPED), Some(2), "the packets at 5 and 6");
        assert_eq!(count(AFTER_END), Some(1));
        let total: usize = f.categories.values().map(|e| e.0).sum();
        assert_eq!(total, 6, "every unmatched packet of either side once");
    }
}
