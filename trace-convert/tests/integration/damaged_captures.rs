//! Damaged real captures: flipped bits, inserted garbage, truncation. The
//! parsers report the damage, resynchronize at the next A-sync, and from
//! the next I-sync on every packet equals the clean decode.

use test_support::Rng;
use trace_convert::input::capture::demux_for;
use trace_convert::input::{flags::SourceFlags, resolve, source::CaptureSpec};
use trace_convert::sinks::listing::packets::PacketRecord;
use trace_core::demux::{AnyPacket, Item};
use trace_core::frames::FrameMode;

/// A decoded packet: trace ID, offset, value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pkt {
    id: u8,
    offset: u64,
    packet: AnyPacket,
}

/// Decoded packets, plus the error items.
struct Decoded {
    packets: Vec<Pkt>,
    errors: Vec<PacketRecord>,
}

fn decode(spec: &CaptureSpec, bytes: &[u8], chunk: usize) -> Decoded {
    let mut demux = demux_for(spec).expect("configuration");
    let mut items = Vec::new();
    for c in bytes.chunks(chunk) {
        demux.feed(c, &mut items);
    }
    demux.finish(&mut items);
    // No byte goes unaccounted: each is in a packet or reported skipped.
    for id in demux.ids() {
        let s = demux.stats(id).expect("configured ID");
        assert_eq!(s.bytes, s.in_packets + s.skipped, "ID {id:#04x}: {s:?}");
    }
    let mut d = Decoded {
        packets: Vec::new(),
        errors: Vec::new(),
    };
    for item in &items {
        match item {
            Item::Packet { id, offset, packet } => d.packets.push(Pkt {
                id: *id,
                offset: *offset,
                packet: *packet,
            }),
            Item::Error { .. } => d.errors.push(PacketRecord::from_item(item)),
            _ => {}
        }
    }
    d
}

/// Packets of `id` from the first I-sync after the first A-sync at or
/// after `from`, as (offset shifted by `shift`, record).
fn after_resync(packets: &[Pkt], id: u8, from: u64) -> Option<&[Pkt]> {
    let a = packets
        .iter()
        .position(|p| p.id == id && p.packet.kind() == "a_sync" && p.offset >= from)?;
    let s = a + packets[a..]
        .iter()
        .position(|p| p.id == id && p.packet.kind() == "i_sync")?;
    Some(&packets[s..])
}

fn same_from(clean: &[Pkt], damaged: &[Pkt], id: u8, shift: i64) -> bool {
    let mut c = clean.iter().filter(|p| p.id == id);
    let mut d = damaged.iter().filter(|p| p.id == id).map(|p| Pkt {
        offset: p.offset.wrapping_add_signed(-shift),
        ..*p
    });
    let Some(first) = d.next() else {
        return true;
    };
    if c.by_ref().find(|p| p.offset == first.offset) != Some(&first) {
        return false;
    }
    c.copied().eq(d)
}

fn check_capture(snapshot: &str, trials: usize) {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let input = resolve(&dir.join(snapshot), &SourceFlags::default()).expect("snapshot");
    let spec = &input.captures[0];
    let clean_bytes = std::fs::read(&spec.path).expect("capture");
    let clean = decode(spec, &clean_bytes, 4096);
    let ids: Vec<u8> = {
        let mut v: Vec<u8> = clean.packets.iter().map(|p| p.id).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ snapshot.len() as u64);
    let mut recovered = 0usize;
    let mut total = 0usize;
    for trial in 0..trials {
        let mut bytes = clean_bytes.clone();
        let pos = rng.below(bytes.len() - 64);
        // Damage: flip one to four bits near `pos`, or insert garbage.
        let insert = trial % 4 == 3;
        // A formatted buffer has no frame syncs, so damage that shifts the
        // frame alignment can only be whole frames; raw streams take any.
        let unit = if matches!(spec.layout, FrameMode::Raw { .. }) {
            1
        } else {
            16
        };
        let shift = if insert {
            let n = unit * (1 + rng.below(7));
            let garbage: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            bytes.splice(pos..pos, garbage);
            n as i64
        } else {
            for _ in 0..=rng.below(4) {
                let at = pos + rng.below(16);
                bytes[at] ^= 1 << rng.below(8);
            }
            0
        };
        let chunk = 1 + rng.below(512);
        let damaged = decode(spec, &bytes, chunk);
        for &id in &ids {
            let from = pos as u64 + 32 + shift.unsigned_abs();
            let Some(tail) = after_resync(&damaged.packets, id, from) else {
                continue;
            };
            total += 1;
            // Frame-level damage can move a few bytes between sources;
            // the resynchronized tail must equal the clean decode.
            if same_from(&clean.packets, tail, id, shift) {
                recovered += 1;
            } else {
                panic!(
                    "{snapshot} trial {trial}: ID {id:#04x} differs after resync (damage at {pos}, shift {shift})"
                );
            }
        }
    }
    assert!(total > 0, "no source resynchronized in any trial");
    eprintln!(
        "{snapshot}: {recovered}/{total} damaged sources matched the clean decode after resync"
    );
}

#[test]
fn flipped_bits_and_garbage_in_the_raw_ptm_capture() {
    check_capture("tc2-ptm-rstk-t32", 200);
}

#[test]
fn flipped_bits_and_garbage_in_the_formatted_tc2_capture() {
    check_capture("TC2", 200);
}

#[test]
fn truncation_anywhere_is_reported_not_a_panic() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    for snapshot in ["tc2-ptm-rstk-t32", "TC2"] {
        let input = resolve(&dir.join(snapshot), &SourceFlags::default()).expect("snapshot");
        let spec = &input.captures[0];
        let bytes = std::fs::read(&spec.path).expect("capture");
        let clean = decode(spec, &bytes, 4096);
        let mut rng = Rng(7);
        for _ in 0..50 {
            let cut = 1 + rng.below(bytes.len() - 1);
            let d = decode(spec, &bytes[..cut], 1 + rng.below(100));
            // The prefix decodes to the clean decode's first packets; only
            // packets in the last frame or spanning the cut are missing.
            let n = d.packets.len();
            assert_eq!(d.packets[..], clean.packets[..n], "{snapshot} cut at {cut}");
            let missing_early = clean.packets[n..]
                .iter()
                .filter(|p| p.offset + 32 < cut as u64)
                .count();
            assert_eq!(missing_early, 0, "{snapshot} cut at {cut}");
            assert!(
                cut == bytes.len()
                    || n < clean.packets.len()
                    || d.errors.iter().any(|e| e.kind == "error"),
                "{snapshot} cut at {cut}: nothing reported"
            );
        }
    }
}

#[test]
fn errors_carry_offsets_inside_the_capture() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let input = resolve(&dir.join("tc2-ptm-rstk-t32"), &SourceFlags::default()).expect("snapshot");
    let spec = &input.captures[0];
    let mut bytes = std::fs::read(&spec.path).expect("capture");
    let len = bytes.len() as u64;
    // Reserved PTM headers in the middle of the stream.
    for at in [1000usize, 5000, 20000] {
        bytes[at] = 0x1C;
    }
    let d = decode(spec, &bytes, 777);
    assert!(!d.errors.is_empty());
    for e in &d.errors {
        assert!(e.offset < len, "{e:?}");
        assert!(e.message.as_deref().is_some_and(|m| !m.is_empty()));
    }
}
