//! ITM/DWT trace of the corpus's ARMv7-M programs and SWO-like streams:
//! the exceptions (ARMv7-M numbers, `X` records) and exception returns
//! (`R` records) the emulator recorded, and a PC sample every N
//! instructions of its flow, come back from the encoded packets; the
//! ETMv3 and ITM sources of a SWO-like stream (no syncs, cut start, stray
//! and lost bytes) come back through the deformatter.

mod common;

use common::{decode_among, expected, Rec, Source};
use itm_packets::{ExceptionAction, Packet};
use std::sync::Arc;
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};
use trace_core::memory::{MemoryMap, Space};
use trace_encode::swo::{swo_stream, Source as Input, SwoOptions};
use trace_encode::{
    encode_etm, encode_itm, EtmOptions, ExceptionKind, Flow, FlowItem, ItmOptions, Protocol,
    SyncPeriod, TraceOptions,
};

const PC_SAMPLE_EVERY: u64 = 37;

/// The corpus's ARMv7-M programs: name, flow, code.
fn corpus() -> Vec<(String, Flow, Arc<MemoryMap>)> {
    let Some(dir) = test_support::corpus_fixtures() else {
        return Vec::new();
    };
    test_support::corpus_programs(&dir, "-m.flow")
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(format!("{name}-m.flow"))).expect("flow");
            let flow = Flow::parse(&text).expect("flow parses");
            let mut mem = MemoryMap::new();
            mem.add_elf(&dir.join(format!("{name}-m.elf")), Space::Any)
                .expect("elf");
            (name, flow, Arc::new(mem))
        })
        .collect()
}

/// What the ITM must show, from the flow alone: an entry for every `X`
/// record; for every `R` record, an exit from the exception entered last
/// and still active and a return to the one before it (or thread mode,
/// 0); and the address of every `PC_SAMPLE_EVERY`-th instruction.
fn truth(flow: &Flow) -> Vec<Packet> {
    let mut out = Vec::new();
    let mut nested = Vec::new();
    let mut n = 0u64;
    for item in &flow.items {
        match *item {
            FlowItem::Insn { addr, .. } => {
                n += 1;
                if n % PC_SAMPLE_EVERY == 0 {
                    out.push(Packet::PcSample(itm_packets::PcSample { pc: Some(addr) }));
                }
            }
            FlowItem::Exception {
                kind: ExceptionKind::M(number),
                ..
            } => {
                nested.push(number);
                out.push(exception(number, ExceptionAction::Enter));
            }
            FlowItem::ExceptionReturn { .. } => {
                let left = nested.pop().expect("a return from an exception");
                out.push(exception(left, ExceptionAction::Exit));
                out.push(exception(
                    nested.last().copied().unwrap_or(0),
                    ExceptionAction::Return,
                ));
            }
            _ => {}
        }
    }
    out
}

fn exception(number: u16, action: ExceptionAction) -> Packet {
    Packet::ExceptionTrace(itm_packets::ExceptionTrace { number, action })
}

fn itm_options() -> ItmOptions {
    ItmOptions {
        pc_sample_every: PC_SAMPLE_EVERY,
        exception_trace: true,
        sync: true,
    }
}

/// The ITM packets (trace ID 1) of deformatter events: (packets without
/// the sync, errors). The ITM's first byte starts a packet (its stream
/// starts at trace start, as SWO captures do); after a realignment the ITM
/// goes on at the start of a burst, which the formatter began with a
/// frame: at a packet boundary.
fn parse_itm(events: &[FrameEvent]) -> (Vec<Packet>, usize) {
    let mut p = itm_packets::Parser::new(itm_packets::Config::new().with_aligned_start(true));
    let (mut packets, mut errors) = (Vec::new(), 0);
    let mut found = false;
    for ev in events {
        match *ev {
            FrameEvent::Data(run) if run.id == 1 => {
                found = true;
                for item in p.feed_at(run.offset, run.data()) {
                    match item {
                        Ok((_, Packet::Sync)) => {}
                        Ok((_, packet)) => packets.push(packet),
                        Err(_) => errors += 1,
                    }
                }
            }
            FrameEvent::Unsynchronized { .. } if found => {
                errors += usize::from(p.assume_aligned().is_some());
            }
            _ => {}
        }
    }
    errors += usize::from(p.finish().is_some());
    let s = p.stats();
    assert_eq!(s.bytes_fed, s.bytes_in_packets + s.bytes_skipped);
    (packets, errors)
}

#[test]
fn exception_trace_and_pc_samples_of_the_corpus_come_back() {
    let mut compared = (0, 0);
    for (name, flow, _) in corpus() {
        let itm = encode_itm(&flow.items, &itm_options()).expect("encodes");
        let mut p = itm_packets::Parser::new(itm_packets::Config::new());
        let mut packets = Vec::new();
        let mut errors = 0;
        for item in p.feed(&itm.bytes) {
            match item {
                Ok((_, Packet::Sync)) => {}
                Ok((offset, packet)) => {
                    assert!(itm.packets.contains(&(offset as usize)));
                    packets.push(packet);
                }
                Err(_) => errors += 1,
            }
        }
        errors += usize::from(p.finish().is_some());
        assert_eq!(p.stats().bytes_in_packets, itm.bytes.len() as u64);
        assert_eq!(errors, 0, "{name}");
        let want = truth(&flow);
        assert_eq!(packets, want, "{name}");
        compared.0 += want
            .iter()
            .filter(|p| matches!(p, Packet::ExceptionTrace(_)))
            .count();
        compared.1 += want.len();
    }
    eprintln!(
        "{} exception trace packets, {} packets in all",
        compared.0, compared.1
    );
    assert!(compared.0 > 100, "{compared:?}");
}

/// The longest common subsequence of `got` and `want`, by length.
fn common(got: &[Packet], want: &[Packet]) -> usize {
    let mut row = vec![0usize; want.len() + 1];
    for g in got {
        let mut prev = 0;
        for (j, w) in want.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = if g == w {
                prev + 1
            } else {
                row[j + 1].max(row[j])
            };
            prev = here;
        }
    }
    row[want.len()]
}

/// Each corpus program's ETMv3 trace (trace ID 0x0A, with a periodic
/// I-sync) and ITM trace (ID 1) in a SWO-like stream that starts 5 bytes
/// into its first frame: the ETMv3 source decodes to the flow from its
/// first I-sync on, exactly, and the ITM to every packet of the truth;
/// with stray and lost bytes, most ITM packets still come back and few
/// come back that the core did not send.
#[test]
fn swo_streams_of_the_corpus_decode_back() {
    let (mut found, mut wrong, mut total) = (0, 0, 0);
    for (name, flow, mem) in corpus() {
        let eopts = EtmOptions {
            trace: TraceOptions {
                sync: Some(SyncPeriod::Instructions(500)),
                ..TraceOptions::default()
            },
            ..EtmOptions::default()
        };
        let etm = encode_etm(&flow.items, &*mem, &eopts).expect("etm");
        let itm = encode_itm(&flow.items, &itm_options()).expect("itm");
        let want_itm = truth(&flow);
        for (k, (stray, lost)) in [(0, 0), (2, 0), (0, 2), (3, 3)].into_iter().enumerate() {
            let opts = SwoOptions {
                burst: 24,
                flush: true,
                start: 5,
                stray,
                lost,
                seed: 11 + k as u64,
            };
            let s = swo_stream(
                &[
                    Input {
                        id: 0x0A,
                        bytes: &etm.bytes,
                        breaks: &[],
                    },
                    Input {
                        id: 0x01,
                        bytes: &itm.bytes,
                        breaks: &itm.packets,
                    },
                ],
                &opts,
            )
            .expect("stream");
            // The ITM's bytes through the deformatter.
            let mut d = Deformatter::new(FrameMode::Continuous);
            let mut events: Vec<FrameEvent> = d.feed(&s.bytes).collect();
            events.extend(d.finish());
            let (packets, _) = parse_itm(&events);
            let same = common(&packets, &want_itm);
            if s.damage.is_empty() {
                assert_eq!(packets, want_itm, "{name}");
                // The ETMv3 source, decoded through the same path real
                // captures take, from its first I-sync on.
                let source = Source {
                    id: 0x0A,
                    protocol: Protocol::Etmv3,
                    config: etm.source_config().expect("config"),
                    decoder: etm.decoder_config(0x0A).expect("config"),
                    memory: mem.clone(),
                };
                let got = decode_among(&s.bytes, FrameMode::Continuous, &[source], 64, &[1]);
                let got = &got[&0x0A];
                // Decoding starts at the first I-sync whose bytes all
                // came through: the trace-on one, or a periodic one (every
                // 500 instructions).
                let first = got
                    .recs
                    .iter()
                    .position(|r| matches!(r, Rec::Insn { .. }))
                    .expect("instructions");
                let start = (0..4u64)
                    .map(|k| k * 500)
                    .find(|&start| {
                        expected(&flow.items, start, Protocol::Etmv3, &*mem, false).first()
                            == Some(&got.recs[first])
                    })
                    .unwrap_or_else(|| panic!("{name}: decoding starts at no early I-sync"));
                let want = expected(&flow.items, start, Protocol::Etmv3, &*mem, false);
                common::compare(&name, &got.recs[first..], &want);
            } else {
                eprintln!(
                    "{name}, damage {k}: {same} of {} back, {} not sent",
                    want_itm.len(),
                    packets.len() - same
                );
                found += same;
                wrong += packets.len() - same;
                total += want_itm.len();
            }
        }
    }
    eprintln!("damaged streams: {found} of {total} ITM packets back, {wrong} not sent");
    if total > 0 {
        // Measured: 7,672 of 10,614 back, 1,770 not sent; without the
        // RTOS program 4,831 of 5,847 and 536. A loss of an even number
        // of bytes is told from the frames late (see the deformatter's
        // documentation): the frames read meanwhile give packets the core
        // did not send. The RTOS program's ITM is the densest (an
        // exception every few hundred instructions), and its stream that
        // lost two bytes is the worst case: 377 of 1,589 back, 838 not
        // sent.
        assert!(found * 100 >= total * 70, "{found} of {total}");
        assert!(wrong * 100 <= total * 18, "{wrong} of {total}");
    }
}
