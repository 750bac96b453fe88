//! `cargo xtask conformance`: our packets against OpenCSD v1.8.0's
//! listings of the real captures, packet by packet and field by field.
//!
//! Offsets: our offsets are true file offsets; OpenCSD's `Idx` for
//! CoreSight-formatted captures numbers bytes per frame block (see
//! `trace_core::frames::Run::opencsd_index`), so ours are translated with
//! the deformatter's own record of that index before comparing.

use crate::listing::{parse_listing, ListedPacket};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use trace_convert::input::capture::read_capture;
use trace_convert::input::{flags::SourceFlags, resolve};
use trace_convert::sinks::listing::packets::PacketRecord;
use trace_core::demux::Item;
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};

/// One capture and the listing OpenCSD produced for it.
struct Case {
    snapshot: &'static str,
    listing: &'static str,
}

const CASES: &[Case] = &[
    Case {
        snapshot: "TC2",
        listing: "expected/TC2.ppl",
    },
    Case {
        snapshot: "tc2-ptm-rstk-t32",
        listing: "expected/tc2-ptm-rstk-t32.ppl",
    },
];

/// Matched and mismatched packet counts of one trace ID.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    matched: usize,
    mismatched: usize,
    listed: usize,
    ours: usize,
}

/// Run the comparison on every real capture.
pub fn run(dir: &Path, args: &[String]) -> Result<(), String> {
    let verbose = args.iter().any(|a| a == "--verbose");
    if !dir.is_dir() {
        if std::env::var_os("CI").is_some() {
            return Err(format!("{} is missing (CI is set)", dir.display()));
        }
        eprintln!("conformance: {} not found, skipped", dir.display());
        return Ok(());
    }
    let mut failures = Vec::new();
    for case in CASES {
        match run_case(dir, case, verbose) {
            Ok(()) => {}
            Err(e) => failures.push(format!("{}: {e}", case.snapshot)),
        }
    }
    if failures.is_empty() {
        println!("conformance: all packets match OpenCSD");
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// Translate true file offsets to OpenCSD's `Idx` numbering.
pub(crate) fn opencsd_indices(capture: &[u8], layout: FrameMode) -> Option<HashMap<u64, u64>> {
    if matches!(layout, FrameMode::Raw { .. }) {
        return None;
    }
    let mut d = Deformatter::new(layout);
    let mut map = HashMap::new();
    for ev in d.feed(capture) {
        if let FrameEvent::Data(run) = ev {
            for k in 0..run.data().len() as u64 {
                map.insert(run.offset + k, run.opencsd_index + k);
            }
        }
    }
    Some(map)
}

pub(crate) fn listed_kind(kind: &str) -> &str {
    match kind {
        "A_SYNC" | "ASYNC" => "a_sync",
        "I_SYNC" | "I_SYNC_CYCLE" | "ISYNC" => "i_sync",
        "P_HDR" => "p_header",
        "ATOM" => "atom",
        "BRANCH_ADDRESS" => "branch_address",
        "TIMESTAMP" => "timestamp",
        "EXCEPTION_EXIT" => "exception_exit",
        "EXCEPTION_ENTRY" => "exception_entry",
        "ERET" => "exception_return",
        "WP_UPDATE" => "waypoint_update",
        "CYCLE_COUNT" => "cycle_count",
        "CONTEXT_ID" | "CTXTID" => "context_id",
        "VMID" => "vmid",
        "TRIGGER" => "trigger",
        "IGNORE" => "ignore",
        "STORE_FAIL" => "store_failed",
        other => other,
    }
}

/// Compare one packet; `isa` is the instruction set in force before it
/// (a listed branch without `ISA=` keeps it).
pub(crate) fn compare(
    l: &ListedPacket,
    ours: &PacketRecord,
    idx: u64,
    isa: Option<&str>,
) -> Result<(), String> {
    let mut diffs = Vec::new();
    let mut check = |what: &str, ok: bool, theirs: String, mine: String| {
        if !ok {
            diffs.push(format!("{what}: OpenCSD {theirs}, ours {mine}"));
        }
    };
    check("Idx", l.idx == idx, l.idx.to_string(), idx.to_string());
    let kind = listed_kind(&l.kind);
    check("type", kind == ours.kind, kind.into(), ours.kind.clone());
    if let Some(a) = l.addr {
        // A partial address: only its known low bits are compared.
        let mask = l.addr_bits.map_or(u64::MAX, |n| (1u64 << n) - 1);
        check(
            "address",
            ours.address.map(|o| u64::from(o) & mask) == Some(a & mask),
            format!("{a:#x}"),
            format!("{:x?}", ours.address),
        );
    }
    match (&l.isa, ours.kind.as_str()) {
        (Some(i), _) => check(
            "ISA",
            ours.isa.as_deref() == Some(i.as_str()),
            i.clone(),
            format!("{:?}", ours.isa),
        ),
        (None, "branch_address") => check(
            "ISA (unchanged)",
            ours.isa.as_deref() == isa,
            format!("{isa:?}"),
            format!("{:?}", ours.isa),
        ),
        _ => {}
    }
    if let Some(ns) = l.ns {
        check(
            "NS",
            ours.ns == Some(ns),
            ns.to_string(),
            format!("{:?}", ours.ns),
        );
    }
    if let Some(r) = &l.reason {
        check(
            "reason",
            ours.reason.as_deref() == Some(r.as_str()),
            r.clone(),
            format!("{:?}", ours.reason),
        );
    }
    check(
        "cycles",
        l.cycles == ours.cycles,
        format!("{:?}", l.cycles),
        format!("{:?}", ours.cycles),
    );
    if l.atoms.is_some() || ours.atoms.is_some() {
        check(
            "atoms",
            l.atoms == ours.atoms,
            format!("{:?}", l.atoms),
            format!("{:?}", ours.atoms),
        );
    }
    if l.timestamp.is_some() || ours.timestamp.is_some() {
        check(
            "timestamp",
            l.timestamp == ours.timestamp,
            format!("{:x?}", l.timestamp),
            format!("{:x?}", ours.timestamp),
        );
    }
    match (&l.exception_name, l.exception) {
        // ETMv3 `Reserved` names several numbers: those with no name.
        (Some(name), None) => check(
            "exception",
            name == "Reserved" && ours.exception.is_some_and(|n| matches!(n, 6 | 7) || n > 15),
            name.clone(),
            format!("{:?}", ours.exception),
        ),
        _ if l.exception.is_some() || ours.exception.is_some_and(|n| n != 0) => check(
            "exception",
            l.exception == ours.exception,
            format!("{:?}", l.exception),
            format!("{:?}", ours.exception),
        ),
        _ => {}
    }
    if l.cancel || ours.cancel == Some(true) {
        check(
            "cancel",
            ours.cancel == Some(l.cancel),
            l.cancel.to_string(),
            format!("{:?}", ours.cancel),
        );
    }
    if l.context_id.is_some() {
        check(
            "context ID",
            l.context_id == ours.context_id,
            format!("{:?}", l.context_id),
            format!("{:?}", ours.context_id),
        );
    }
    if l.vmid.is_some() {
        check(
            "VMID",
            l.vmid == ours.vmid,
            format!("{:?}", l.vmid),
            format!("{:?}", ours.vmid),
        );
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

fn run_case(dir: &Path, case: &Case, verbose: bool) -> Result<(), String> {
    let snap_dir = dir.join(case.snapshot);
    let input = resolve(&snap_dir, &SourceFlags::default()).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(dir.join(case.listing))
        .map_err(|e| format!("{}: {e}", case.listing))?;
    let listed = parse_listing(&text);
    let mut by_id: BTreeMap<u8, Vec<ListedPacket>> = BTreeMap::new();
    for p in listed {
        by_id.entry(p.id).or_default().push(p);
    }
    let mut ours: BTreeMap<u8, Vec<PacketRecord>> = BTreeMap::new();
    let mut raw_id = None;
    let mut index_maps = Vec::new();
    for capture in &input.captures {
        if let FrameMode::Raw { id } = capture.layout {
            raw_id = Some(id);
        }
        let bytes =
            std::fs::read(&capture.path).map_err(|e| format!("{}: {e}", capture.path.display()))?;
        index_maps.push(opencsd_indices(&bytes, capture.layout));
        read_capture(capture, |item| {
            if let Item::Packet { .. } = item {
                let r = PacketRecord::from_item(item);
                ours.entry(r.id).or_default().push(r);
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    }
    // OpenCSD lists a raw capture's packets under ID 0.
    if let (Some(id), Some(listed)) = (raw_id, by_id.remove(&0)) {
        by_id.insert(id, listed);
    }
    let index_of = |off: u64| -> u64 {
        index_maps
            .iter()
            .flatten()
            .find_map(|m| m.get(&off).copied())
            .unwrap_or(off)
    };
    let mut failed = false;
    let ids: Vec<u8> = by_id
        .keys()
        .chain(ours.keys())
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for id in ids {
        let theirs = by_id.get(&id).map_or(&[][..], Vec::as_slice);
        let mine = ours.get(&id).map_or(&[][..], Vec::as_slice);
        let mut tally = Tally {
            listed: theirs.len(),
            ours: mine.len(),
            ..Tally::default()
        };
        let mut first: Option<(usize, String)> = None;
        let mut isa: Option<String> = None;
        for (i, (l, o)) in theirs.iter().zip(mine).enumerate() {
            match compare(l, o, index_of(o.offset), isa.as_deref()) {
                Ok(()) => tally.matched += 1,
                Err(why) => {
                    tally.mismatched += 1;
                    if verbose {
                        eprintln!(
                            "  ID {id:#04x} #{i}: {why}\n    OpenCSD: {}\n    ours:    {}",
                            l.text,
                            serde_json::to_string(o).unwrap_or_default()
                        );
                    }
                    first.get_or_insert((i, why));
                }
            }
            if o.isa.is_some() {
                isa.clone_from(&o.isa);
            }
        }
        let complete = tally.mismatched == 0 && tally.listed == tally.ours;
        println!(
            "{:<18} ID {id:#04x}: {} of {} OpenCSD packets matched, {} mismatched, ours {}{}",
            case.snapshot,
            tally.matched,
            tally.listed,
            tally.mismatched,
            tally.ours,
            if complete { "  OK" } else { "  FAIL" }
        );
        if let Some((i, why)) = first {
            failed = true;
            println!("  first mismatch, packet #{i}: {why}");
            for k in i.saturating_sub(2)..(i + 2).min(theirs.len().min(mine.len())) {
                println!("    OpenCSD: {}", theirs[k].text.trim_end());
                println!(
                    "    ours:    {}",
                    serde_json::to_string(&mine[k]).unwrap_or_default()
                );
            }
        } else if tally.listed != tally.ours {
            failed = true;
            let n = tally.listed.min(tally.ours);
            println!("  counts differ; first unpaired packet:");
            if let Some(l) = theirs.get(n) {
                println!("    OpenCSD: {}", l.text.trim_end());
            }
            if let Some(o) = mine.get(n) {
                println!(
                    "    ours:    {}",
                    serde_json::to_string(o).unwrap_or_default()
                );
            }
        }
    }
    if failed {
        Err("packets differ from OpenCSD's listing".into())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> ListedPacket {
        ListedPacket {
            idx: 100,
            id: 0x13,
            kind: "BRANCH_ADDRESS".into(),
            addr: Some(0xC000_1000),
            cycles: Some(5),
            ..ListedPacket::default()
        }
    }

    fn ours() -> PacketRecord {
        PacketRecord {
            offset: 100,
            id: 0x13,
            kind: "branch_address".into(),
            address: Some(0xC000_1000),
            isa: Some("thumb".into()),
            cycles: Some(5),
            ..PacketRecord::default()
        }
    }

    #[test]
    fn equal_packets_match() {
        assert_eq!(compare(&listed(), &ours(), 100, Some("thumb")), Ok(()));
    }

    #[test]
    fn every_field_difference_is_caught() {
        let l = listed();
        let mut o = ours();
        o.address = Some(0xC000_1002);
        assert!(compare(&l, &o, 100, Some("thumb")).is_err());
        assert!(compare(&l, &ours(), 101, Some("thumb")).is_err(), "index");
        assert!(
            compare(&l, &ours(), 100, Some("arm")).is_err(),
            "ISA change not listed"
        );
        let mut o = ours();
        o.cycles = None;
        assert!(compare(&l, &o, 100, Some("thumb")).is_err());
        let mut o = ours();
        o.kind = "atom".into();
        assert!(compare(&l, &o, 100, Some("thumb")).is_err());
        let mut l2 = listed();
        l2.exception = Some(1);
        assert!(compare(&l2, &ours(), 100, Some("thumb")).is_err());
    }

    #[test]
    fn partial_addresses_compare_their_known_bits() {
        let mut l = listed();
        l.addr = Some(0x0009_F49C);
        l.addr_bits = Some(22);
        let mut o = ours();
        o.address = Some(0x7009_F49C);
        assert_eq!(compare(&l, &o, 100, Some("thumb")), Ok(()));
        o.address = Some(0x7019_F49C);
        assert!(compare(&l, &o, 100, Some("thumb")).is_err(), "bit 20 known");
    }

    #[test]
    fn etmv3_exception_names_and_cancel() {
        let mut l = listed();
        l.exception = Some(1);
        l.exception_name = Some("Debug Halt".into());
        l.cancel = true;
        let mut o = ours();
        o.exception = Some(1);
        o.cancel = Some(true);
        assert_eq!(compare(&l, &o, 100, Some("thumb")), Ok(()));
        o.cancel = Some(false);
        assert!(compare(&l, &o, 100, Some("thumb")).is_err(), "cancel");
        let mut l = listed();
        l.exception_name = Some("Reserved".into());
        let mut o = ours();
        o.exception = Some(7);
        assert_eq!(compare(&l, &o, 100, Some("thumb")), Ok(()));
        o.exception = Some(1);
        assert!(compare(&l, &o, 100, Some("thumb")).is_err(), "named number");
    }
}
