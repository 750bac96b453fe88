//! Converter throughput: the corpus program `example` (T32, with its ELF
//! and DWARF) encoded as cycle-accurate PTM with the return stack, decoded
//! once into events; then the events are fed to a [`Converter`] with no
//! sink (call stacks and clock only), with each sink, and with Perfetto and
//! LCOV together. The decode itself (parse and decode, counting) is the
//! first row, so each converter row reads as a cost against it; the
//! second decodes with its events written out and handed on in slices, as
//! the converter is given them (in the first, each event is handed to a
//! count inlined into the decoder).
//! Throughput is in instructions.

use std::hint::black_box;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use trace_convert::convert::{ConvertOptions, Converter};
use trace_convert::sinks::chrome::ChromeSink;
// Events handed to the converter at once, as the CLI's decode hands them.
use trace_convert::sinks::folded::{FoldedSink, Weight};
use trace_convert::sinks::lcov::coverage::LcovOptions;
use trace_convert::sinks::lcov::LcovSink;
use trace_convert::sinks::perfetto::PerfettoSink;
use trace_convert::sinks::{DynSink, Output};
use trace_convert::symbols::Symbolizer;
use trace_core::capture::SLICE;
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::{AnyPacket, SourceConfig};
use trace_core::event::{Event, EventKind};
use trace_core::memory::{MemoryImage, MemoryMap, Space};
use trace_encode::{write_repeated, Encoding, PtmOptions};

/// Encoded trace size.
const BYTES: u64 = 4 << 20;

/// An output that drops its bytes.
struct Discard;

impl Write for Discard {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        black_box(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Output for Discard {
    fn complete(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Parse and decode the PTM `bytes` as trace ID 0x10, handing each event
/// to `each` (generic: a closure is inlined into the decoder).
fn decode<F: FnMut(Event)>(
    bytes: &[u8],
    cfg: ptm_packets::Config,
    mem: &Arc<dyn MemoryImage>,
    each: &mut F,
) {
    let source = SourceConfig::Ptm(cfg);
    let mut d = Decoder::new(DecoderConfig::new(0x10, &source), Arc::clone(mem));
    let mut p = ptm_packets::Parser::new(cfg);
    for (off, pkt) in p.feed_at(0, bytes).flatten() {
        d.push(off, &AnyPacket::Ptm(pkt), each);
    }
    d.finish(each);
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/fixtures")
}

fn bench(c: &mut Criterion) {
    let dir = fixtures();
    let elf = dir.join("example-t.elf");
    let flow = std::fs::read_to_string(dir.join("example-t.flow")).expect("example-t.flow");
    let flow = trace_encode::flow::Flow::parse(&flow).expect("flow");
    let mut map = MemoryMap::new();
    map.add_elf(&elf, Space::Any).expect("example-t.elf");
    let ptm = PtmOptions {
        return_stack: true,
        cycle_accurate: true,
        ..PtmOptions::default()
    };
    let mut bytes = Vec::new();
    write_repeated(
        &flow.items,
        &map,
        &Encoding::Ptm(ptm.clone()),
        BYTES,
        &mut bytes,
    )
    .expect("encode");
    let regs = ptm.regs().expect("registers");
    let cfg = ptm.config().expect("configuration");
    let mem: Arc<dyn MemoryImage> = Arc::new(map);
    let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
    let clock = ConvertOptions::default().clock_for_etmcr(&[regs.etmcr]);

    let mut events = Vec::new();
    decode(&bytes, cfg, &mem, &mut |e| events.push(e));
    let insns: u64 = events
        .iter()
        .map(|e| match e.kind {
            EventKind::Range(r) => u64::from(r.count),
            _ => 0,
        })
        .sum();

    let mut g = c.benchmark_group("convert example-t PTM");
    g.throughput(Throughput::Elements(insns));
    g.sample_size(10);
    type MakeSinks<'s> = &'s dyn Fn() -> Vec<Box<dyn DynSink + 's>>;
    let lcov = || -> Box<dyn DynSink + '_> {
        Box::new(LcovSink::new(
            Discard,
            Arc::clone(&mem),
            &symbols,
            LcovOptions::default(),
        ))
    };
    let sets: [(&str, MakeSinks<'_>); 6] = [
        ("call stacks and clock", &|| Vec::new()),
        ("folded", &|| {
            vec![Box::new(FoldedSink::new(Discard, Weight::Instructions))]
        }),
        ("chrome", &|| vec![Box::new(ChromeSink::new(Discard))]),
        ("perfetto", &|| vec![Box::new(PerfettoSink::new(Discard))]),
        ("lcov", &|| vec![lcov()]),
        ("perfetto + lcov", &|| {
            vec![Box::new(PerfettoSink::new(Discard)), lcov()]
        }),
    ];
    g.bench_function("decode alone", |b| {
        b.iter(|| {
            let mut n = 0u64;
            decode(&bytes, cfg, &mem, &mut |e| {
                if let EventKind::Range(r) = black_box(e).kind {
                    n += u64::from(r.count);
                }
            });
            n
        });
    });
    g.bench_function("decode, events handed on in slices", |b| {
        b.iter(|| {
            let mut held = Vec::with_capacity(2 * SLICE);
            let mut n = 0u64;
            let mut count = |held: &mut Vec<Event>| {
                for e in black_box(&*held) {
                    if let EventKind::Range(r) = &e.kind {
                        n += u64::from(r.count);
                    }
                }
                held.clear();
            };
            decode(&bytes, cfg, &mem, &mut |e| {
                held.push(e);
                if held.len() >= SLICE {
                    count(&mut held);
                }
            });
            count(&mut held);
            n
        });
    });
    for (name, make) in sets {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut conv = Converter::new(&symbols, clock, 1024);
                for s in make() {
                    conv.add_sink(s);
                }
                for s in events.chunks(SLICE) {
                    conv.events(s, Some(&*mem)).expect("sink output");
                }
                conv.finish().expect("finish")
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
