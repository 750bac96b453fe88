//! The buffered listing writers the CLI uses (`EventListing`,
//! `PacketListing`) write byte for byte what the reference forms write:
//! `serde_json` of the records and the `Display`/`format!` lines of
//! `write_event` and `write_item`. Checked on random events of every kind,
//! on the items of random bytes parsed under random configurations, and
//! on every item of the shared real captures.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use trace_convert::input::{flags::SourceFlags, resolve};
use trace_convert::sinks::listing::event_lines::EventListing;
use trace_convert::sinks::listing::events::{write_event, EventFormat};
use trace_convert::sinks::listing::packet_lines::PacketListing;
use trace_convert::sinks::listing::packets::{write_item, ListFormat};
use trace_core::demux::{Demux, Item, SourceConfig};
use trace_core::event::{
    Check, Context, Event, EventKind, GapReason, InsnClass, Isa, Range, TraceOnReason,
};
use trace_core::frames::FrameMode;
use trace_core::memory::Space;

/// Both writers' bytes for `events`, the buffered one first.
fn event_bytes(format: EventFormat, events: &[Event]) -> (Vec<u8>, Vec<u8>) {
    let mut fast = Vec::new();
    let mut listing = EventListing::new(format);
    for e in events {
        listing.write(&mut fast, e, None).unwrap();
    }
    listing.finish(&mut fast).unwrap();
    let mut reference = Vec::new();
    for e in events {
        write_event(&mut reference, format, e, None).unwrap();
    }
    (fast, reference)
}

/// Both writers' bytes for `items`, the buffered one first.
fn item_bytes(format: ListFormat, items: &[Item]) -> (Vec<u8>, Vec<u8>) {
    let mut fast = Vec::new();
    let mut listing = PacketListing::new(format);
    for i in items {
        listing.write(&mut fast, i).unwrap();
    }
    listing.finish(&mut fast).unwrap();
    let mut reference = Vec::new();
    for i in items {
        write_item(&mut reference, format, i).unwrap();
    }
    (fast, reference)
}

/// The first differing line, for a readable failure.
fn first_difference(fast: &[u8], reference: &[u8]) -> Option<(String, String)> {
    let (f, r) = (
        String::from_utf8_lossy(fast),
        String::from_utf8_lossy(reference),
    );
    f.lines()
        .map(Some)
        .chain(std::iter::repeat(None))
        .zip(r.lines().map(Some).chain(std::iter::repeat(None)))
        .take_while(|(a, b)| a.is_some() || b.is_some())
        .find(|(a, b)| a != b)
        .map(|(a, b)| {
            (
                a.unwrap_or("<end>").to_owned(),
                b.unwrap_or("<end>").to_owned(),
            )
        })
}

fn check_events(events: &[Event]) {
    for format in [EventFormat::Jsonl, EventFormat::Text] {
        let (fast, reference) = event_bytes(format, events);
        assert_eq!(
            first_difference(&fast, &reference),
            None,
            "{format:?} (fast, reference)"
        );
        assert_eq!(fast, reference);
    }
}

fn check_items(items: &[Item]) {
    for format in [ListFormat::Jsonl, ListFormat::Text] {
        let (fast, reference) = item_bytes(format, items);
        assert_eq!(
            first_difference(&fast, &reference),
            None,
            "{format:?} (fast, reference)"
        );
        assert_eq!(fast, reference);
    }
}

/// Numbers across every width, edges included.
fn number() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (0u32..64).prop_map(|s| u64::MAX >> s),
        (0u32..20).prop_map(|k| 10u64.pow(k)),
        (1u32..20).prop_map(|k| 10u64.pow(k) - 1),
        0u64..1000,
    ]
}

fn range() -> impl Strategy<Value = Range> {
    (
        (number(), number(), number()),
        (any::<bool>(), 0usize..5, any::<u8>()),
        proptest::option::of(number()),
    )
        .prop_map(|((start, end, count), (t32, last, bits), cycles)| Range {
            start: start as u32,
            end: end as u32,
            count: count as u32,
            isa: if t32 { Isa::T32 } else { Isa::A32 },
            last_size: 4,
            last: [
                InsnClass::Other,
                InsnClass::Branch,
                InsnClass::IndirectBranch,
                InsnClass::Isb,
                InsnClass::Barrier,
            ][last],
            link: bits & 1 != 0,
            ret: bits & 2 != 0,
            cond: bits & 4 != 0,
            executed: bits & 8 != 0,
            cycles: cycles.map(|c| c as u32),
            space: Space::Any,
        })
}

fn kind() -> impl Strategy<Value = EventKind> {
    let addr = || number().prop_map(|a| a as u32);
    prop_oneof![
        4 => range().prop_map(EventKind::Range),
        2 => number().prop_map(|c| EventKind::CycleCount(c as u32)),
        1 => (number(), proptest::option::of(addr()))
            .prop_map(|(n, ret)| EventKind::Exception { number: n as u16, ret }),
        1 => Just(EventKind::ExceptionReturn),
        1 => (any::<[bool; 3]>(), proptest::option::of(addr()), any::<Option<u8>>(), proptest::option::of(addr()))
            .prop_map(|(b, context_id, vmid, cycles)| EventKind::Context(Context {
                ns: b[0],
                hyp: b[1],
                context_id,
                vmid,
                isa: if b[2] { Isa::T32 } else { Isa::A32 },
                cycles,
            })),
        1 => (0usize..3, proptest::option::of(addr())).prop_map(|(r, cycles)| EventKind::TraceOn {
            reason: [TraceOnReason::Filter, TraceOnReason::Overflow, TraceOnReason::DebugExit][r],
            cycles,
        }),
        1 => Just(EventKind::NoSync),
        1 => (number(), proptest::option::of(addr()))
            .prop_map(|(value, cycles)| EventKind::Timestamp { value, cycles }),
        1 => addr().prop_map(|addr| EventKind::AddrNacc { addr }),
        1 => (0usize..6, addr()).prop_map(|(k, addr)| EventKind::Gap(match k {
            0 => GapReason::Undefined { addr },
            1 => GapReason::NoWaypoint { addr },
            2 => GapReason::UnknownTarget { addr },
            3 => GapReason::InsideInstruction { addr },
            4 => GapReason::UnsupportedIsa,
            _ => GapReason::PacketError,
        })),
        1 => (0usize..4, addr(), proptest::option::of(addr())).prop_map(|(k, expected, traced)| {
            EventKind::Inconsistent {
                check: [Check::Sync, Check::Branch, Check::Atoms, Check::Waypoint][k],
                expected,
                traced,
            }
        }),
        1 => Just(EventKind::EndOfTrace),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    (number(), any::<u8>(), kind()).prop_map(|(offset, id, kind)| Event { offset, id, kind })
}

/// A configuration for random bytes: ETMv3 or PTM, with the options that
/// change what packets look like.
fn config() -> impl Strategy<Value = SourceConfig> {
    (any::<bool>(), any::<[bool; 6]>(), 0u32..4).prop_map(|(etm, b, ctx)| {
        if etm {
            SourceConfig::Etm(
                etm_packets::Config::new()
                    .with_cycle_accurate(b[0])
                    .with_data_address(b[1])
                    .with_data_value(b[2])
                    .with_timestamps(b[3])
                    .with_branch_broadcast(b[4])
                    .with_data_only(b[5] && b[1])
                    .with_context_id_size(etm_packets::ContextIdSize::from_field(ctx)),
            )
        } else {
            SourceConfig::Ptm(
                ptm_packets::Config::default()
                    .with_cycle_accurate(b[0])
                    .with_timestamps(b[1])
                    .with_vmid(b[2])
                    .with_return_stack(b[3])
                    .with_virtualization(b[4])
                    .with_context_id_size(ptm_packets::ContextIdSize::from_field(ctx)),
            )
        }
    })
}

fn items_of(layout: FrameMode, cfg: SourceConfig, bytes: &[u8]) -> Vec<Item> {
    let mut demux = Demux::new(layout, [(0x10, cfg)], None);
    let mut items = Vec::new();
    demux.feed(bytes, &mut items);
    demux.finish(&mut items);
    items
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn event_lines_are_the_reference_lines(events in proptest::collection::vec(event(), 1..64)) {
        check_events(&events);
    }

    #[test]
    fn packet_lines_of_random_bytes_are_the_reference_lines(
        cfg in config(),
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        framed in any::<bool>(),
        offset in number(),
    ) {
        // An A-sync first, so that the parser finds packets at once.
        let mut data = vec![0u8; 5];
        data.push(0x80);
        data.extend_from_slice(&bytes);
        let items = if framed {
            items_of(FrameMode::Memory, cfg, &data)
        } else {
            items_of(FrameMode::Raw { id: 0x10 }, cfg, &data)
        };
        check_items(&items);
        // The same items further into a file (wider offsets).
        let moved: Vec<Item> = items
            .into_iter()
            .map(|i| match i {
                Item::Packet { id, offset: o, packet } => Item::Packet {
                    id,
                    offset: o.wrapping_add(offset),
                    packet,
                },
                other => other,
            })
            .collect();
        check_items(&moved);
    }
}

#[test]
fn many_lines_cross_the_buffer_boundary() {
    // Several times the buffer, lines of every length at every position.
    let mut events = Vec::new();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for k in 0..40_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = Range {
            start: x as u32,
            end: (x >> 32) as u32 >> (k % 32),
            count: (x >> 7) as u32 >> (k % 31),
            isa: if x & 1 == 0 { Isa::A32 } else { Isa::T32 },
            last_size: 2,
            last: InsnClass::Branch,
            link: x & 2 != 0,
            ret: x & 4 != 0,
            cond: x & 8 != 0,
            executed: x & 16 != 0,
            cycles: (x & 32 != 0).then_some((x >> 40) as u32),
            space: Space::Any,
        };
        let kind = if k % 7 == 0 {
            EventKind::Exception {
                number: (x >> 50) as u16,
                ret: Some(x as u32),
            }
        } else {
            EventKind::Range(r)
        };
        events.push(Event {
            offset: x >> (k % 64),
            id: (x >> 24) as u8,
            kind,
        });
    }
    check_events(&events);
}

#[test]
fn packet_lines_of_the_real_captures_are_the_reference_lines() {
    let mut snapshots = Vec::new();
    if let Some(dir) = test_support::opencsd_dir() {
        snapshots.push(dir.join("TC2"));
        snapshots.push(dir.join("tc2-ptm-rstk-t32"));
    }
    if let Some(dir) = test_support::real_dir() {
        let real = dir.join("am243x-r5f");
        for entry in std::fs::read_dir(&real).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && path.file_name().is_some_and(|n| n != "expected") {
                snapshots.push(path);
            }
        }
    }
    let mut n = 0;
    for snap in snapshots {
        let input = resolve(&snap, &SourceFlags::default()).unwrap();
        for capture in &input.captures {
            let mut items = Vec::new();
            trace_convert::input::capture::read_capture(capture, |item| {
                items.push(item.clone());
                Ok(())
            })
            .unwrap();
            n += items.len();
            check_items(&items);
            // And the decode of the capture.
            let mut events = Vec::new();
            let memory = |name: &str| {
                let m = trace_convert::input::memory::memory_for(
                    input.snapshot.as_ref(),
                    name,
                    &trace_convert::input::memory::ExtraMemory::default(),
                )
                .unwrap();
                std::sync::Arc::new(m) as std::sync::Arc<dyn trace_core::memory::MemoryImage>
            };
            let mut decoder = trace_convert::input::capture::decoder(capture, memory)
                .unwrap()
                .build();
            trace_convert::input::capture::run(
                capture,
                &mut decoder,
                &mut trace_core::capture::each_event(|e| {
                    events.push(*e);
                    Ok(())
                }),
            )
            .unwrap();
            n += events.len();
            check_events(&events);
        }
    }
    if n > 0 {
        assert!(n > 10_000, "only {n} items");
    }
}
