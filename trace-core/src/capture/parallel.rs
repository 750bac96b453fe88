//! Decoding one capture on several threads, with the same events in the
//! same order, and the same counters, as one decoder.
//!
//! The capture's bytes are cut into chunks at points where a fresh
//! deformatter and fresh packet parsers can start (`cuts`): 16-byte frame
//! boundaries of a CoreSight-formatted buffer (the trace ID in force there
//! is found from the frames before), A-syncs of a raw stream. Worker
//! threads deformat, parse and decode whole chunks (`chunk`): in each, a
//! source's decoder starts at its first I-sync
//! ([`Decoder::at_sync`](crate::decode::Decoder::at_sync)). The
//! calling thread joins the chunks in order (`join`): for each source, the
//! real parser and decoder (those of everything before) run the few
//! packets up to that I-sync; the worker's parser and decoder then take
//! over only if the real parser's state equals the worker's there (packet
//! grammar position, address base; a timestamp base guessed wrong is
//! corrected, with the timestamps that depend on it) and
//! [`Decoder::join`](crate::decode::Decoder::join) accepts the
//! worker's decoder against the real one. Otherwise the real parser and
//! decoder go on through the source's bytes of the chunk themselves.
//! Either way the events are the ones a single pass emits, and the
//! parsers' counters (bytes skipped, errors) add up to a single pass's.
//!
//! The calling thread reads the capture in windows of a chunk or two per
//! thread, at most two windows ahead of the join, and hands on the events;
//! chunks are sized from the events per byte seen so far (their events
//! wait for the join), so memory stays bounded whatever the input size.
//! While the chunk it is to join next is still being worked, the calling
//! thread works the oldest chunk no worker has taken yet, so `jobs`
//! threads decode with `jobs - 1` workers: on two cores, a third busy
//! thread would take turns with the workers, each turn costing them
//! their caches.
//! TPIU captures (continuous mode, whose frame alignment comes from
//! synchronisation patterns) are decoded on the calling thread.
//!
//! Handing every event to the calling thread costs about as much as
//! decoding it; a consumer whose work can be split by chunk and combined
//! in order does it on the workers instead ([`Parts`]), and
//! two threads then give about twice one thread's speed.
//!
//! A chunk's decoder cannot know the return stack of the trace before it:
//! [`Decoder::join`](crate::decode::Decoder::join) refuses it when
//! one of its returns popped an entry pushed before the chunk, and that
//! source's share of the chunk is then decoded again on the calling
//! thread. Once that has happened to a PTM source with a return stack,
//! the workers warm its decoder up in every later chunk ([`WarmUp`](super::WarmUp)):
//! they decode the 8 KiB before the chunk from an I-sync there, dropping
//! the events, so that the calls made in those bytes are on the stack when
//! the share starts ([`Decoder::mark_share`](crate::decode::Decoder::mark_share));
//! only a return to an older call still makes the share be redone. On the
//! benchmark's capture of two sources (PTM with the return stack and
//! ETMv3, 32 MiB), 682 of 1757 shares were redone without warm-ups and 2
//! with them (those before the first redo turned them on).

mod caches;
mod chunk;
mod cuts;
mod join;
mod stitch;

use super::consumer::{Consumer, Sink};
use super::in_parts::decode_sequential_parts;
use super::{CaptureError, DecodeOptions, DecodeSummary, ParallelStats, Parts, Plan};
use crate::event::Event;
use crate::frames::FrameMode;
use crate::memory::MemoryImage;
use crate::per_id::{PerId, TRACE_IDS};
use caches::Caches;
use chunk::{run_chunk, ChunkDone, Memories, Shared};
use cuts::{Layout, Reader, Window};
use join::{Joiner, Truth};
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Mutex};
use stitch::PacketParser;

/// Events with the keys (item order) of the items that produced them.
type EventBuf = Vec<(u64, Event)>;

/// Events a chunk should give at most: chunks are cut smaller for traces
/// with many events per byte (ETMv3 gives about one per instruction), so
/// that the events held between the workers and the join stay bounded.
const CHUNK_EVENTS: u64 = 64 << 10;
/// Size of the first chunks, before the events per byte are known.
const FIRST_CHUNK: u64 = 16 << 10;
/// Smallest chunk the event count makes.
const MIN_CHUNK: u64 = 16 << 10;
/// Raw input: how far past a nominal cut to look for an A-sync, at most.
const MAX_SCAN: u64 = 64 << 10;

/// Spare event buffers shared with the workers: a chunk's events take
/// megabytes, and fresh buffers would cost page faults on every chunk. The
/// buffers kept hold at most `keep` events in all (a buffer keeps the
/// capacity of its largest use), in at most `count` buffers, the largest
/// kept first. Enough are kept for every chunk in flight: buffers freed
/// and grown again chunk after chunk leave the allocator's heaps holding
/// far more than the live events, and are touched afresh (page faults on
/// every chunk when small buffers hold the places of large ones).
#[derive(Default)]
struct Spare {
    bufs: Mutex<(Vec<EventBuf>, usize)>,
    keep: usize,
    /// Buffers kept at most.
    count: usize,
}

impl Spare {
    /// With `room`, the largest spare buffer, with room for a chunk's
    /// events: one that grew by doubling would have touched fresh pages
    /// on every chunk (reserving touches none). Without, the smallest,
    /// as it is. Only a chunk's first source gets that room: a chunk's
    /// events are bounded, not each source's, and a formatted capture of
    /// random bytes has a hundred trace IDs in every chunk, each with a
    /// few events (room for a chunk's events for each of them took 0.6 GB
    /// on 64 MiB).
    fn take(&self, room: bool) -> EventBuf {
        let mut v = self
            .bufs
            .lock()
            .ok()
            .and_then(|mut p| {
                let sizes = p.0.iter().enumerate().map(|(i, b)| (b.capacity(), i));
                let (_, i) = if room { sizes.max() } else { sizes.min() }?;
                let v = p.0.swap_remove(i);
                p.1 -= v.capacity();
                Some(v)
            })
            .unwrap_or_default();
        if room {
            let want = usize::try_from(CHUNK_EVENTS).unwrap_or(0);
            v.reserve_exact(want.saturating_sub(v.len()));
        }
        v
    }

    /// Keep `v` for later chunks, the largest first: a small buffer in
    /// the pool's place would leave a large one to be freed and its pages
    /// touched again for the next chunk.
    fn give(&self, v: impl IntoIterator<Item = EventBuf>) {
        if let Ok(mut pool) = self.bufs.lock() {
            for mut e in v {
                if e.capacity() == 0 {
                    continue;
                }
                e.clear();
                pool.1 += e.capacity();
                pool.0.push(e);
                while pool.1 > self.keep || pool.0.len() > self.count {
                    let Some((i, _)) = pool.0.iter().enumerate().min_by_key(|(_, b)| b.capacity())
                    else {
                        break;
                    };
                    let small = pool.0.swap_remove(i);
                    pool.1 -= small.capacity();
                }
            }
        }
    }
}

/// A chunk to be worked.
struct Job {
    seq: u64,
    window: Arc<Window>,
    chunk: usize,
    memories: Memories,
    seeds: Arc<PerId<u64>>,
    parts: Option<Arc<dyn Parts>>,
}

impl Job {
    /// Work the chunk (`None`: the work panicked).
    fn run(self, shared: &Shared, spare: &Spare, caches: &Caches) -> (u64, Option<ChunkDone>) {
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let work = chunk::Work {
                shared,
                memories: &self.memories,
                seeds: &self.seeds,
                caches,
                parts: self.parts.as_deref(),
            };
            run_chunk(&work, &self.window, self.chunk, |room| spare.take(room))
        }));
        (self.seq, done.ok())
    }
}

/// Chunks not yet taken by a worker or the calling thread, oldest first.
#[derive(Default)]
struct Todo(Mutex<VecDeque<Job>>);

impl Todo {
    fn push(&self, job: Job) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back(job);
    }

    fn pop(&self) -> Option<Job> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
    }
}

/// A chunk handed to the workers and not yet joined.
struct Queued {
    seq: u64,
    window: Arc<Window>,
    chunk: usize,
}

/// Decode the capture read from `input` on `opts.jobs` threads (those of
/// `pool` and the calling thread, when given), handing the deliveries to
/// `each`; also returns how the chunks went.
pub(crate) fn decode_chunks<R: Read, T: Consumer + ?Sized>(
    plan: &Plan,
    input: R,
    opts: &DecodeOptions,
    parts: Option<Arc<dyn Parts>>,
    pool: Option<&rayon::ThreadPool>,
    each: &mut T,
) -> Result<(DecodeSummary, ParallelStats), CaptureError> {
    let (layout, raw_id) = match plan.layout {
        // A range of a file (perf.data AUX data) and a TPIU stream are
        // decoded on this thread.
        _ if plan.start.is_some() => (None, 0),
        FrameMode::Continuous => (None, 0),
        FrameMode::Raw { id } => (Some(Layout::Raw), id & 0x7F),
        FrameMode::Memory => (Some(Layout::Frames), 0),
    };
    let Some(layout) = layout else {
        return decode_sequential_parts(plan, input, parts.as_deref(), opts.part_bytes, each)
            .map(|s| (s, ParallelStats::default()));
    };
    let shared = Arc::new(Shared {
        layout,
        raw_id,
        plan: plan.clone(),
        redone: (0..TRACE_IDS).map(|_| AtomicBool::new(false)).collect(),
        warm_up: opts.warm_up,
    });
    // The sources parsed from the start, as one pass has them.
    let mut truth = Truth::new();
    for id in plan.configured() {
        if let Some(cfg) = plan.source(id) {
            truth.parsers.insert(id, PacketParser::new(cfg.source));
        }
    }
    if let FrameMode::Raw { .. } = plan.layout {
        if let Some(cfg) = plan.source(raw_id) {
            truth
                .parsers
                .get_or_insert_with(raw_id, || Some(PacketParser::new(cfg.source)));
        }
    }
    // Memory images: the configured sources' now, other trace IDs' when
    // first met.
    let mut images: PerId<Arc<dyn MemoryImage>> = PerId::new();
    for id in plan.configured() {
        images.insert(id, plan.image(id));
    }
    let mut memories: Memories = Arc::new(images.clone());

    // The calling thread decodes chunks too while it waits for the next
    // one to join: one thread fewer in the pool.
    let own_pool;
    let (pool, jobs) = match pool {
        Some(p) => (p, p.current_num_threads() + 1),
        None => {
            let jobs = opts.jobs.max(1);
            own_pool = rayon::ThreadPoolBuilder::new()
                .num_threads(jobs.saturating_sub(1).max(1))
                .thread_name(|i| format!("decode-{i}"))
                .build()
                .map_err(|e| CaptureError::Threads(e.to_string()))?;
            (&own_pool, jobs)
        }
    };
    let per_window = jobs * opts.parts_per_job.max(1);
    // A buffer for every chunk in flight (two windows) and two more.
    let buffers = 2 * per_window + 2;
    let spare = Arc::new(Spare {
        keep: usize::try_from(CHUNK_EVENTS)
            .unwrap_or(usize::MAX)
            .saturating_mul(buffers),
        count: buffers,
        ..Spare::default()
    });
    // About one code cache per worker and source (a chunk holds a few
    // sources at most).
    let caches = Arc::new(Caches::new(4 * jobs));
    let max_chunk = opts.part_bytes.max(1);
    // Chunks whose events all go to parts hold none, except where the
    // join decodes a share again: they are cut for four times the events
    // (fewer joins, and the warm-up of a source with a return stack, 8
    // KiB before each chunk, costs less: on the two-source capture the
    // threads' CPU time was 1.17x one thread's with chunks cut for
    // CHUNK_EVENTS). Not larger: a share decoded again holds its events.
    let chunk_events = match &parts {
        Some(p) if !p.keep_events() => 4 * CHUNK_EVENTS,
        _ => CHUNK_EVENTS,
    };
    let mut chunk_bytes = max_chunk.min(FIRST_CHUNK);
    // Bytes joined so far, and the densest chunk: its events and bytes.
    let mut seen_bytes = 0u64;
    let mut densest = (0u64, 1u64);

    let mut reader = Reader::new(input, layout);
    let todo = Arc::new(Todo::default());
    let (tx, rx) = mpsc::channel::<(u64, Option<ChunkDone>)>();
    let mut queue: VecDeque<Queued> = VecDeque::new();
    let mut arrived: BTreeMap<u64, Option<ChunkDone>> = BTreeMap::new();
    let mut next_seq = 0u64;
    let mut eof = false;
    let mut stats = ParallelStats::default();
    let mut sink = Sink::new(each);
    let failed = || CaptureError::ThreadFailed;
    loop {
        // Keep up to two windows of chunks with the workers.
        while !eof && queue.len() + per_window <= 2 * per_window {
            let chunk = usize::try_from(chunk_bytes).unwrap_or(usize::MAX);
            let scan = usize::try_from((chunk_bytes / 2).min(MAX_SCAN)).unwrap_or(0);
            let window = reader
                .next_window(chunk, per_window, scan)
                .map_err(CaptureError::Read)?;
            let Some(window) = window else {
                eof = true;
                break;
            };
            if images.len() != memories.len() {
                memories = Arc::new(images.clone());
            }
            let window = Arc::new(window);
            // The timestamp bases known now: chunks' parsers start from
            // them (their stitch checks whether that was right).
            let mut seeds = PerId::new();
            for (id, p) in truth.parsers.iter() {
                seeds.insert(id, p.timestamp());
            }
            let seeds = Arc::new(seeds);
            for chunk in 0..window.chunks.len() {
                let job = Job {
                    seq: next_seq,
                    window: Arc::clone(&window),
                    chunk,
                    memories: Arc::clone(&memories),
                    seeds: Arc::clone(&seeds),
                    parts: parts.clone(),
                };
                todo.push(job);
                // The task runs the oldest chunk not yet taken, if any (the
                // calling thread may have taken them all).
                let (tx, todo, shared, spare, caches) = (
                    tx.clone(),
                    Arc::clone(&todo),
                    Arc::clone(&shared),
                    Arc::clone(&spare),
                    Arc::clone(&caches),
                );
                pool.spawn(move || {
                    if let Some(job) = todo.pop() {
                        // Without a receiver the decode has already failed.
                        let _ = tx.send(job.run(&shared, &spare, &caches));
                    }
                });
                queue.push_back(Queued {
                    seq: next_seq,
                    window: Arc::clone(&window),
                    chunk,
                });
                next_seq += 1;
            }
            stats.chunks += window.chunks.len() as u64;
        }
        let Some(q) = queue.pop_front() else {
            break;
        };
        let done = loop {
            if let Some(d) = arrived.remove(&q.seq) {
                break d;
            }
            let (seq, d) = match rx.try_recv() {
                Ok(r) => r,
                Err(mpsc::TryRecvError::Disconnected) => return Err(failed()),
                Err(mpsc::TryRecvError::Empty) => match todo.pop() {
                    Some(job) => job.run(&shared, &spare, &caches),
                    None => rx.recv().map_err(|_| failed())?,
                },
            };
            arrived.insert(seq, d);
        };
        let done = done.ok_or_else(failed)?;
        stats.largest_chunk_room = stats
            .largest_chunk_room
            .max(done.lanes.iter().map(|l| l.events.capacity() as u64).sum());
        // A source decoded again here mostly adds few events of its own.
        let mut take = || spare.take(false);
        let mut image_of = |id: u8| -> Option<Arc<dyn MemoryImage>> {
            plan.source(id)?;
            images
                .get_or_insert_with(id, || Some(plan.image(id)))
                .cloned()
        };
        let (spent, events) = Joiner {
            shared: &shared,
            truth: &mut truth,
            memory: &mut image_of,
            sink: &mut sink,
            stats: &mut stats,
            spare: &mut take,
        }
        .join(&q.window, q.chunk, done);
        spare.give(spent);
        if let Some(e) = sink.failure.take() {
            return Err(CaptureError::Consumer(e));
        }
        // Chunks are sized by the densest chunk so far (events per byte),
        // so that a capture whose parts differ (one protocol here, another
        // there) keeps every chunk's events near CHUNK_EVENTS.
        let len = q.window.chunks.get(q.chunk).map_or(0, |c| c.len() as u64);
        seen_bytes += len;
        if len > 0
            && u128::from(events) * u128::from(densest.1) > u128::from(densest.0) * u128::from(len)
        {
            densest = (events, len);
        }
        match chunk_events
            .saturating_mul(densest.1)
            .checked_div(densest.0)
        {
            Some(fit) => chunk_bytes = fit.max(MIN_CHUNK).min(max_chunk),
            None if seen_bytes >= FIRST_CHUNK => chunk_bytes = max_chunk,
            None => {}
        }
    }

    // The end of the capture, as one pass ends it: parser errors, then
    // the decoders' last events, in trace ID order.
    let Truth {
        parsers, decoders, ..
    } = &mut truth;
    for (id, p) in parsers.iter_mut() {
        let op = stitch::finish(p);
        if let (Some(op), Some(d)) = (op, decoders.get_mut(id)) {
            chunk::feed_op(d, &op, &mut |e| sink.on(&e));
        }
    }
    // The decoders' last events, as one pass ends.
    for (_, d) in decoders.iter_mut() {
        d.finish(&mut |e| sink.on(&e));
    }
    sink.end();
    if let Some(e) = sink.failure.take() {
        return Err(CaptureError::Consumer(e));
    }
    let summary = DecodeSummary {
        sources: if T::COUNTS {
            decoders
                .ids()
                .into_iter()
                .map(|id| (id, *sink.counts_of(id)))
                .collect()
        } else {
            Vec::new()
        },
        parsed: truth
            .parsers
            .ids()
            .into_iter()
            .filter_map(|id| truth.stats(id).map(|s| (id, s)))
            .collect(),
        bytes: reader.read,
    };
    Ok((summary, stats))
}
