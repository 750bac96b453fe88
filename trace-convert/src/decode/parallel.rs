//! Decoding one capture on several threads, with the same events in the
//! same order as one decoder.
//!
//! The capture is read and its packets parsed in order on the calling
//! thread (the deformatter and the packet parsers are several times faster
//! than the decoder). Each trace source's packet stream is cut into parts
//! at I-syncs; a part starts with a [`Decoder::at_sync`] and is decoded on
//! a worker thread. Parts are then joined in order: [`Decoder::join`]
//! checks that the part's decoder started from the state the decoder of
//! everything before it had after that I-sync (and that no return-stack
//! pop depended on entries pushed before it), and otherwise the part is
//! decoded again, in order, by that decoder. Either way the events are the
//! ones a single decoder emits.
//!
//! Work goes in windows of a few parts per thread: while the workers decode
//! one window, the calling thread reads the next and hands on the events
//! of the previous one, so memory stays bounded whatever the input size.

use super::{DecodeSummary, Sink, SourceCounts};
use crate::input::source::CaptureSpec;
use crate::packets::{demux_for, ReadError};
use std::io::{self, Read};
use std::sync::mpsc;
use std::sync::Arc;
use trace_core::decode::{Decoder, DecoderConfig, SyncContext, SyncPoints};
use trace_core::demux::{AnyPacket, Item};
use trace_core::event::Event;
use trace_core::memory::MemoryImage;

/// How [`decode_capture_with`] spreads the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Decoding threads; 1 decodes on the calling thread only.
    pub jobs: usize,
    /// Captures smaller than this many bytes are decoded on the calling
    /// thread.
    pub min_parallel_bytes: u64,
    /// A source's packets are cut into parts of about this many capture
    /// bytes (at the first I-sync after that many).
    pub part_bytes: u64,
    /// Parts per thread in one window of work.
    pub parts_per_job: usize,
}

impl Default for DecodeOptions {
    /// All available threads, for captures of 4 MiB and more, in parts of
    /// 32 KiB; on machines with fewer than three hardware threads, one
    /// thread (the calling thread reads, parses and hands on the events
    /// while the workers decode, so two threads gain little). The
    /// environment variable `TRACE_CONVERT_JOBS=N` sets the number of
    /// threads instead (1: one thread), for captures of any size.
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        let chosen = std::env::var("TRACE_CONVERT_JOBS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0);
        let (jobs, min_parallel_bytes) = match chosen {
            Some(n) => (n, 0),
            None if threads >= 3 => (threads, 4 << 20),
            None => (threads, u64::MAX),
        };
        DecodeOptions {
            jobs,
            min_parallel_bytes,
            part_bytes: 32 << 10,
            parts_per_job: 2,
        }
    }
}

impl DecodeOptions {
    /// The defaults with `jobs` threads (0: all available), for captures
    /// of 4 MiB and more whatever the machine.
    #[must_use]
    pub fn with_jobs(jobs: usize) -> Self {
        let mut o = DecodeOptions::default();
        if jobs > 0 {
            o.jobs = jobs;
        }
        o.min_parallel_bytes = 4 << 20;
        o
    }
}

/// Bytes read from the capture at a time.
const READ: usize = 64 << 10;

/// What a source's decoder runs.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// A packet at an offset.
    Packet(u64, AnyPacket),
    /// A packet error at an offset.
    Error(u64),
}

/// An operation and the number of the item it came from (for the order of
/// events across trace IDs).
type SeqOp = (u64, Op);

/// A part of one source's packets that starts at an I-sync.
struct Part {
    /// Index of the source in [`Window::sources`].
    source: usize,
    /// Context before the I-sync.
    before: SyncContext,
    /// The I-sync first.
    ops: Vec<SeqOp>,
}

/// What a worker made of a part.
struct Done {
    part: Part,
    decoder: Option<Decoder>,
    events: Vec<(u64, Event)>,
    counts: SourceCounts,
}

/// Events of one source in a window, in order, with their item numbers.
type Batches = Vec<Vec<(u64, Event)>>;

/// Event buffers shared with the workers.
type EventPool = Arc<std::sync::Mutex<Vec<Vec<(u64, Event)>>>>;

/// Buffers kept for reuse: a part's operations and events take megabytes,
/// and fresh ones would cost page faults on every part.
#[derive(Default)]
struct Spare {
    ops: Vec<Vec<SeqOp>>,
    events: EventPool,
    /// Most buffers of each kind kept.
    keep: usize,
}

impl Spare {
    fn ops(&mut self) -> Vec<SeqOp> {
        self.ops.pop().unwrap_or_default()
    }

    fn give_ops(&mut self, mut v: Vec<SeqOp>) {
        if self.ops.len() < self.keep {
            v.clear();
            self.ops.push(v);
        }
    }

    fn give_events(&self, v: impl IntoIterator<Item = Vec<(u64, Event)>>) {
        if let Ok(mut pool) = self.events.lock() {
            for mut e in v {
                if pool.len() < self.keep {
                    e.clear();
                    pool.push(e);
                }
            }
        }
    }
}

/// A spare event buffer from `pool`, or a new one.
fn spare_events(pool: &std::sync::Mutex<Vec<Vec<(u64, Event)>>>) -> Vec<(u64, Event)> {
    pool.lock()
        .ok()
        .and_then(|mut p| p.pop())
        .unwrap_or_default()
}

/// One source's share of a window.
#[derive(Default)]
struct SourceWork {
    /// Operations before the first part: run in order on the source's
    /// decoder when the window is joined.
    head: Vec<SeqOp>,
    /// Indexes in [`Window::parts`].
    parts: Vec<usize>,
}

/// A window of work.
#[derive(Default)]
struct Window {
    sources: Vec<SourceWork>,
    parts: Vec<Part>,
    /// Parts handed to the workers.
    handed: usize,
}

/// A trace source met in the capture.
struct Source {
    id: u8,
    cfg: DecoderConfig,
    memory: Arc<dyn MemoryImage>,
    points: SyncPoints,
    /// The decoder of everything joined so far.
    decoder: Decoder,
    /// Offset where the open part started (`None`: none in this window,
    /// so the next I-sync starts one).
    part_start: Option<u64>,
}

/// Counters of a parallel decode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParallelStats {
    /// Parts decoded on worker threads.
    pub parts: u64,
    /// Parts whose start did not match and were decoded again in order.
    pub redone: u64,
}

/// [`super::decode_capture`] on `opts.jobs` threads: the same events, in
/// the same order, handed to `each` on the calling thread.
///
/// # Errors
///
/// [`ReadError`] when the configuration is unusable, the capture cannot be
/// read, or `each` fails.
pub fn decode_capture_with(
    spec: &CaptureSpec,
    memory: impl FnMut(&str) -> Arc<dyn MemoryImage>,
    opts: &DecodeOptions,
    each: impl FnMut(&Event) -> io::Result<()>,
) -> Result<DecodeSummary, ReadError> {
    let size = std::fs::metadata(&spec.path).map_or(0, |m| m.len());
    if opts.jobs <= 1 || size < opts.min_parallel_bytes {
        return super::decode_sequential(spec, memory, each);
    }
    decode_parallel(spec, memory, opts, each).map(|(s, _)| s)
}

/// [`decode_capture_with`] on worker threads whatever the capture size,
/// also returning how the parts went.
///
/// # Errors
///
/// As [`decode_capture_with`].
pub fn decode_parallel(
    spec: &CaptureSpec,
    mut memory: impl FnMut(&str) -> Arc<dyn MemoryImage>,
    opts: &DecodeOptions,
    mut each: impl FnMut(&Event) -> io::Result<()>,
) -> Result<(DecodeSummary, ParallelStats), ReadError> {
    let jobs = opts.jobs.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .thread_name(|i| format!("decode-{i}"))
        .build()
        .map_err(|e| ReadError::Output(io::Error::other(e)))?;
    let mut spare = Spare {
        keep: 4 * jobs * opts.parts_per_job.max(1) + 4,
        ..Spare::default()
    };
    let window_bytes = (opts.part_bytes.max(1) * (jobs * opts.parts_per_job.max(1)) as u64).max(1);
    let part_bytes = opts.part_bytes;

    let mut demux = demux_for(spec)?;
    let io_err = |source| ReadError::Io {
        path: spec.path.clone(),
        source,
    };
    let mut file = std::fs::File::open(&spec.path).map_err(io_err)?;
    let mut buf = vec![0u8; READ];
    let mut items = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let mut slot = [usize::MAX; 256];
    let mut window = Window::default();
    let mut window_start = 0u64;
    let mut read = 0u64;
    let mut seq = 0u64;
    let mut stats = ParallelStats::default();
    let mut sink = Sink {
        counts: vec![super::SourceCounts::default(); 256],
        failure: None,
        each: &mut each,
    };
    let mut in_flight: Option<(Window, mpsc::Receiver<Vec<Done>>)> = None;
    let mut eof = false;
    while !eof {
        let n = match file.read(&mut buf) {
            Ok(0) => 0,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(e)),
        };
        items.clear();
        if n == 0 {
            eof = true;
            demux.finish(&mut items);
        } else {
            read += n as u64;
            demux.feed(&buf[..n], &mut items);
        }
        for item in &items {
            seq += 1;
            route(
                item,
                seq,
                spec,
                &mut memory,
                &mut sources,
                &mut slot,
                &mut window,
                part_bytes,
                &mut spare,
            )?;
        }
        if eof || read - window_start >= window_bytes {
            window_start = read;
            // Hand the new window's parts to the workers, then join the
            // previous window while they run.
            let mut next = std::mem::take(&mut window);
            for s in &mut sources {
                s.part_start = None;
            }
            let parts = std::mem::take(&mut next.parts);
            next.handed = parts.len();
            stats.parts += parts.len() as u64;
            let cfgs: Vec<(DecoderConfig, Arc<dyn MemoryImage>)> = sources
                .iter()
                .map(|s| (s.cfg, Arc::clone(&s.memory)))
                .collect();
            let (tx, rx) = mpsc::channel::<Vec<Done>>();
            let events = Arc::clone(&spare.events);
            pool.spawn(move || {
                use rayon::prelude::*;
                let done: Vec<Done> = parts
                    .into_par_iter()
                    .map(|part| decode_part(part, &cfgs, spare_events(&events)))
                    .collect();
                // Without a receiver the decode has already failed.
                let _ = tx.send(done);
            });
            if let Some((prev, prev_rx)) = in_flight.take() {
                join_window(
                    prev,
                    &prev_rx,
                    &mut sources,
                    &mut stats,
                    &mut sink,
                    &mut spare,
                )?;
            }
            in_flight = Some((next, rx));
        }
    }
    if let Some((prev, prev_rx)) = in_flight.take() {
        join_window(
            prev,
            &prev_rx,
            &mut sources,
            &mut stats,
            &mut sink,
            &mut spare,
        )?;
    }
    let mut order: Vec<usize> = (0..sources.len()).collect();
    order.sort_unstable_by_key(|&i| sources[i].id);
    for &i in &order {
        sources[i].decoder.finish(&mut |e| sink.on(e));
    }
    if let Some(e) = sink.failure.take() {
        return Err(ReadError::Output(e));
    }
    let counts = sink.counts;
    let summary = DecodeSummary {
        sources: order
            .iter()
            .map(|&i| {
                let id = sources[i].id;
                (id, counts[usize::from(id)])
            })
            .collect(),
        parsed: super::parsed(&demux),
        bytes: read,
    };
    Ok((summary, stats))
}

/// Put one demultiplexer item into the window.
#[allow(clippy::too_many_arguments)]
fn route(
    item: &Item,
    seq: u64,
    spec: &CaptureSpec,
    memory: &mut impl FnMut(&str) -> Arc<dyn MemoryImage>,
    sources: &mut Vec<Source>,
    slot: &mut [usize; 256],
    window: &mut Window,
    part_bytes: u64,
    spare: &mut Spare,
) -> Result<(), ReadError> {
    let (id, op) = match item {
        Item::Packet { id, offset, packet } => (*id, Op::Packet(*offset, *packet)),
        Item::Error { id, error } => (*id, Op::Error(error.offset())),
        _ => return Ok(()),
    };
    let index = match slot[usize::from(id)] {
        i if i != usize::MAX => i,
        _ => {
            // A decoder exists from a source's first packet on, as in the
            // one-thread decode.
            let Op::Packet(..) = op else {
                return Ok(());
            };
            let Some(src) = spec.source(id) else {
                return Ok(());
            };
            let cfg = DecoderConfig::new(id, &src.config()?).with_etmccer(src.regs.etmccer);
            let mem = memory(&src.name);
            sources.push(Source {
                id,
                cfg,
                memory: Arc::clone(&mem),
                points: SyncPoints::new(&cfg),
                decoder: Decoder::new(cfg, mem),
                part_start: None,
            });
            slot[usize::from(id)] = sources.len() - 1;
            sources.len() - 1
        }
    };
    if window.sources.len() < sources.len() {
        window
            .sources
            .resize_with(sources.len(), SourceWork::default);
    }
    let src = &mut sources[index];
    let work = &mut window.sources[index];
    let current = match work.parts.last() {
        Some(&p) => &mut window.parts[p].ops,
        None => &mut work.head,
    };
    current.push((seq, op));
    if let Op::Packet(offset, packet) = op {
        if let Some(before) = src.points.observe(&packet) {
            if src
                .part_start
                .is_none_or(|start| offset.saturating_sub(start) >= part_bytes)
            {
                src.part_start = Some(offset);
                work.parts.push(window.parts.len());
                let mut ops = spare.ops();
                ops.push((seq, op));
                window.parts.push(Part {
                    source: index,
                    before,
                    ops,
                });
            }
        }
    }
    Ok(())
}

/// Run `ops` on `decoder`, collecting the events with their item numbers.
fn run_ops(decoder: &mut Decoder, ops: &[SeqOp], events: &mut Vec<(u64, Event)>) {
    for &(seq, op) in ops {
        match op {
            Op::Packet(offset, packet) => {
                decoder.push(offset, &packet, &mut |e| events.push((seq, e)));
            }
            Op::Error(offset) => decoder.packet_error(offset, &mut |e| events.push((seq, e))),
        }
    }
}

/// Decode a part on a worker.
fn decode_part(
    part: Part,
    cfgs: &[(DecoderConfig, Arc<dyn MemoryImage>)],
    mut events: Vec<(u64, Event)>,
) -> Done {
    events.clear();
    let decoder = cfgs.get(part.source).and_then(|(cfg, mem)| {
        let (_, Op::Packet(offset, packet)) = *part.ops.first()? else {
            return None;
        };
        let mut d = Decoder::at_sync(*cfg, Arc::clone(mem), part.before, offset, &packet)?;
        run_ops(&mut d, &part.ops[1..], &mut events);
        Some(d)
    });
    let mut counts = SourceCounts::default();
    for (_, e) in &events {
        counts.count(e);
    }
    Done {
        part,
        decoder,
        events,
        counts,
    }
}

/// Join a decoded window in order and hand its events on.
fn join_window<F: FnMut(&Event) -> io::Result<()>>(
    mut window: Window,
    rx: &mpsc::Receiver<Vec<Done>>,
    sources: &mut [Source],
    stats: &mut ParallelStats,
    sink: &mut Sink<'_, F>,
    spare: &mut Spare,
) -> Result<(), ReadError> {
    let failed = || ReadError::Output(io::Error::other("a decoding thread failed"));
    let done = rx.recv().map_err(|_| failed())?;
    if done.len() != window.handed {
        return Err(failed());
    }
    let mut done: Vec<Option<Done>> = done.into_iter().map(Some).collect();
    let mut per_source: Vec<Batches> = Vec::with_capacity(window.sources.len());
    for (index, work) in window.sources.iter_mut().enumerate() {
        let Some(src) = sources.get_mut(index) else {
            continue;
        };
        let mut batches: Batches = Vec::with_capacity(work.parts.len() + 1);
        let mut serial = spare_events(&spare.events);
        run_ops(&mut src.decoder, &work.head, &mut serial);
        for &p in &work.parts {
            let Some(d) = done.get_mut(p).and_then(Option::take) else {
                return Err(failed());
            };
            let joined = d
                .decoder
                .and_then(|mut dec| dec.join(&src.decoder).then_some(dec));
            match joined {
                Some(dec) => {
                    src.decoder = dec;
                    count_all(&serial, sink);
                    batches.push(std::mem::replace(&mut serial, spare_events(&spare.events)));
                    if let Some(c) = sink.counts.get_mut(usize::from(src.id)) {
                        c.add(&d.counts);
                    }
                    batches.push(d.events);
                }
                None => {
                    stats.redone += 1;
                    run_ops(&mut src.decoder, &d.part.ops[1..], &mut serial);
                }
            }
            spare.give_ops(d.part.ops);
        }
        count_all(&serial, sink);
        batches.push(serial);
        per_source.push(batches);
    }
    emit_in_order(&per_source, sink);
    spare.give_events(per_source.into_iter().flatten());
    for work in &mut window.sources {
        spare.give_ops(std::mem::take(&mut work.head));
    }
    match sink.failure.take() {
        Some(e) => Err(ReadError::Output(e)),
        None => Ok(()),
    }
}

/// Count events made on the calling thread.
fn count_all<F: FnMut(&Event) -> io::Result<()>>(events: &[(u64, Event)], sink: &mut Sink<'_, F>) {
    for (_, e) in events {
        if let Some(c) = sink.counts.get_mut(usize::from(e.id)) {
            c.count(e);
        }
    }
}

/// Hand on the (counted) events of several sources in the order of the
/// items that produced them (each source's own order is kept).
fn emit_in_order<F: FnMut(&Event) -> io::Result<()>>(
    per_source: &[Batches],
    sink: &mut Sink<'_, F>,
) {
    let lists: Vec<Vec<&[(u64, Event)]>> = per_source
        .iter()
        .map(|b| {
            b.iter()
                .filter(|v| !v.is_empty())
                .map(Vec::as_slice)
                .collect::<Vec<_>>()
        })
        .filter(|b: &Vec<&[(u64, Event)]>| !b.is_empty())
        .collect();
    if lists.len() <= 1 {
        for batch in lists.iter().flatten() {
            for &(_, e) in *batch {
                sink.deliver(e);
            }
        }
        return;
    }
    // Cursor per source: (batch, position).
    let mut heads = vec![(0usize, 0usize); lists.len()];
    let next = |lists: &[Vec<&[(u64, Event)]>],
                heads: &[(usize, usize)],
                i: usize|
     -> Option<(u64, Event)> {
        let (b, p) = heads[i];
        lists[i].get(b).and_then(|v| v.get(p)).copied()
    };
    loop {
        let mut best: Option<(u64, usize)> = None;
        for i in 0..lists.len() {
            if let Some((seq, _)) = next(&lists, &heads, i) {
                if best.is_none_or(|(s, _)| seq < s) {
                    best = Some((seq, i));
                }
            }
        }
        let Some((seq, i)) = best else {
            return;
        };
        while let Some((s, e)) = next(&lists, &heads, i) {
            if s != seq {
                break;
            }
            sink.deliver(e);
            let (b, p) = &mut heads[i];
            *p += 1;
            if *p == lists[i][*b].len() {
                *b += 1;
                *p = 0;
            }
        }
    }
}
