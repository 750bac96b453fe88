//! `CallStacks::quiet_range` is a shortcut of `CallStacks::apply` for
//! ranges that change no frame, inlined frames included, and
//! `CallStacks::inline_range` one for ranges that change only inlined
//! frames: on the decoded events of every corpus program (PTM with the
//! return stack and ETMv3, with and without symbols, with and without
//! inlined frames, ranges as decoded and split where the inlined
//! functions change as the converter does), stacks that take the
//! shortcuts wherever they apply must equal, after every event, stacks
//! that always take `apply`.

use crate::convert_common;

use std::sync::Arc;
use trace_convert::callstack::{split, CallStacks, FrameKind};
use trace_convert::symbols::Symbolizer;
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::{AnyPacket, SourceConfig};
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;
use trace_encode::{encode_etm, encode_ptm, EtmOptions, PtmOptions};

fn decode(bytes: &[u8], source: &SourceConfig, mem: &Arc<dyn MemoryImage>) -> Vec<Event> {
    let mut d = Decoder::new(DecoderConfig::new(0x10, source), Arc::clone(mem));
    let mut events = Vec::new();
    match source {
        SourceConfig::Ptm(c) => {
            let mut p = ptm_packets::Parser::new(*c);
            for (off, pkt) in p.feed_at(0, bytes).flatten() {
                d.push(off, &AnyPacket::Ptm(pkt), &mut |e| events.push(e));
            }
        }
        SourceConfig::Etm(c) => {
            let mut p = etm_packets::Parser::new(*c);
            for (off, pkt) in p.feed_at(0, bytes).flatten() {
                d.push(off, &AnyPacket::Etm(pkt), &mut |e| events.push(e));
            }
        }
        other => panic!("not instruction trace: {other:?}"),
    }
    d.finish(&mut |e| events.push(e));
    events
}

/// How many events took each shortcut.
#[derive(Default)]
struct Taken {
    quiet: usize,
    inline: usize,
}

/// Feed `events` both ways; returns how many took the shortcuts and how
/// many inlined frames were opened.
fn compare(name: &str, events: &[Event], symbols: &Symbolizer) -> (Taken, usize) {
    let mut always = CallStacks::default();
    let mut quick = CallStacks::default();
    let mut taken = Taken::default();
    let mut inlined = 0;
    for (i, e) in events.iter().enumerate() {
        let time = i as u64;
        let a = always.apply(e, time, symbols);
        let b = match &e.kind {
            EventKind::Range(r) => match quick.quiet_range(e.id, r) {
                Some(k) => {
                    taken.quiet += 1;
                    k
                }
                None => match quick.inline_range(e.id, r, time, symbols) {
                    Some(k) => {
                        taken.inline += 1;
                        k
                    }
                    None => quick.apply(e, time, symbols),
                },
            },
            _ => quick.apply(e, time, symbols),
        };
        assert_eq!(a, b, "{name}: thread of event {i}");
        assert_eq!(always.closed(), quick.closed(), "{name}: closed at {i}");
        assert_eq!(always.opened(), quick.opened(), "{name}: opened at {i}");
        assert_eq!(always.stack(a), quick.stack(b), "{name}: stack at {i}");
        assert_eq!(always.stats(), quick.stats(), "{name}: counters at {i}");
        inlined += always
            .opened()
            .iter()
            .filter(|f| f.kind == FrameKind::Inline)
            .count();
    }
    (taken, inlined)
}

#[test]
fn the_shortcut_equals_apply_on_every_corpus_program() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let names = test_support::corpus_programs(&dir, ".flow");
    let (mut total, mut quiet, mut inlined) = (0, 0, 0);
    let (mut inline, mut inline_unsplit) = (0, 0);
    for name in &names {
        let (elf, flow, map) = convert_common::corpus_program(&dir, name);
        let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
        let mut no_inline = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
        no_inline.set_inline_scopes(false);
        let etm = EtmOptions::default();
        let mut traces = vec![(
            "ETMv3",
            encode_etm(&flow.items, &map, &etm)
                .expect("etm encode")
                .bytes,
            SourceConfig::Etm(etm.config().expect("etm config")),
        )];
        if !name.ends_with("-m") {
            let ptm = PtmOptions {
                return_stack: true,
                ..PtmOptions::default()
            };
            traces.push((
                "PTM",
                encode_ptm(&flow.items, &map, &ptm)
                    .expect("ptm encode")
                    .bytes,
                SourceConfig::Ptm(ptm.config().expect("ptm config")),
            ));
        }
        let mem: Arc<dyn MemoryImage> = Arc::new(map);
        for (protocol, bytes, source) in traces {
            let events = decode(&bytes, &source, &mem);
            let label = format!("{name} {protocol}");
            let pieces: Vec<Event> = events
                .iter()
                .flat_map(|e| split::pieces(e, Some(&*mem), &symbols))
                .collect();
            let split_ranges = events
                .iter()
                .filter(|e| split::pieces(e, Some(&*mem), &symbols).count() > 1)
                .count();
            eprintln!(
                "{label}: {} events, {split_ranges} ranges split into {} more pieces",
                events.len(),
                pieces.len() - events.len()
            );
            total += pieces.len();
            let (t, i) = compare(&format!("{label} split"), &pieces, &symbols);
            quiet += t.quiet;
            inline += t.inline;
            inlined += i;
            let (t, _) = compare(&label, &events, &symbols);
            inline_unsplit += t.inline;
            compare(
                &format!("{label} without inlined frames"),
                &events,
                &no_inline,
            );
            compare(
                &format!("{label} without symbols"),
                &events,
                &Symbolizer::empty(),
            );
        }
    }
    eprintln!(
        "{quiet} of {total} events took the short path, {inline} the one \
         for inlined frames ({inline_unsplit} uncut); {inlined} inlined frames opened"
    );
    assert!(
        quiet > total / 4,
        "the shortcut is taken: {quiet} of {total}"
    );
    assert!(inlined > 100, "inlined frames are opened: {inlined}");
    assert!(
        inline > 100 && inline_unsplit > 100,
        "the path for inlined frames is taken: {inline}, {inline_unsplit} uncut"
    );
}
