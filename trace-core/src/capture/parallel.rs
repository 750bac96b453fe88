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
///
/// The steps: the layout decides whether chunks can be cut at all
/// ([`chunk_layout`]); the threads are set up ([`Threads`]); then, until
/// the input ends, windows of chunks are handed out ([`Chunks::hand_out`]),
/// the oldest one is waited for while the calling thread works chunks no
/// worker has taken ([`Chunks::wait_for`]), joined onto the real state
/// and its events handed on ([`Chunks::join`]), and the next chunks sized
/// from the events per byte seen ([`Sizing`]); last, the end of the
/// capture as one pass ends it ([`Chunks::end`]).
pub(crate) fn decode_chunks<R: Read, T: Consumer + ?Sized>(
    plan: &Plan,
    input: R,
    opts: &DecodeOptions,
    parts: Option<Arc<dyn Parts>>,
    pool: Option<&rayon::ThreadPool>,
    each: &mut T,
) -> Result<(DecodeSummary, ParallelStats), CaptureError> {
    let Some((layout, raw_id)) = chunk_layout(plan) else {
        return decode_sequential_parts(plan, input, parts.as_deref(), opts.part_bytes, each)
            .map(|s| (s, ParallelStats::default()));
    };
    let threads = Threads::new(pool, opts)?;
    let mut chunks = Chunks::new(plan, input, layout, raw_id, opts, parts, threads.jobs);
    let mut sink = Sink::new(each);
    loop {
        chunks.hand_out(threads.pool())?;
        let Some(q) = chunks.queue.pop_front() else {
            if chunks.eof {
                break;
            }
            // A stream with nothing new for now: read again.
            continue;
        };
        let done = chunks.wait_for(&q)?;
        chunks.join(plan, &q, done, &mut sink)?;
    }
    chunks.end(&mut sink)
}

/// How a capture laid out as `plan` says is cut into chunks, with the
/// trace ID of a raw stream; `None` when it is decoded on the calling
/// thread: a range of a file (perf.data AUX data) and a TPIU stream.
fn chunk_layout(plan: &Plan) -> Option<(Layout, u8)> {
    match plan.layout {
        _ if plan.start.is_some() => None,
        FrameMode::Continuous => None,
        FrameMode::Raw { id } => Some((Layout::Raw, id & 0x7F)),
        FrameMode::Memory => Some((Layout::Frames, 0)),
    }
}

/// The worker threads: the caller's pool, or one made for this capture.
/// The calling thread decodes chunks too while it waits for the next one
/// to join: one thread fewer in the pool.
struct Threads<'p> {
    pool: Pool<'p>,
    /// Threads decoding, the calling thread included.
    jobs: usize,
}

/// The caller's pool or one of this decode's own.
enum Pool<'p> {
    Given(&'p rayon::ThreadPool),
    Own(rayon::ThreadPool),
}

impl<'p> Threads<'p> {
    fn new(
        pool: Option<&'p rayon::ThreadPool>,
        opts: &DecodeOptions,
    ) -> Result<Self, CaptureError> {
        Ok(match pool {
            Some(p) => Threads {
                pool: Pool::Given(p),
                jobs: p.current_num_threads() + 1,
            },
            None => {
                let jobs = opts.jobs.max(1);
                let own = rayon::ThreadPoolBuilder::new()
                    .num_threads(jobs.saturating_sub(1).max(1))
                    .thread_name(|i| format!("decode-{i}"))
                    .build()
                    .map_err(|e| CaptureError::Threads(e.to_string()))?;
                Threads {
                    pool: Pool::Own(own),
                    jobs,
                }
            }
        })
    }

    fn pool(&self) -> &rayon::ThreadPool {
        match &self.pool {
            Pool::Given(p) => p,
            Pool::Own(p) => p,
        }
    }
}

/// How large the next chunks are cut: from the events per byte of the
/// densest chunk so far, so that a capture whose parts differ (one
/// protocol here, another there) keeps every chunk's events near
/// `events` (their events wait for the join).
struct Sizing {
    /// Events a chunk should give at most.
    events: u64,
    /// Largest chunk ([`DecodeOptions::part_bytes`]).
    max: u64,
    /// The size of the next chunks.
    bytes: u64,
    /// Bytes joined so far.
    seen: u64,
    /// The densest chunk so far: its events and bytes.
    densest: (u64, u64),
}

impl Sizing {
    fn new(opts: &DecodeOptions, parts: Option<&dyn Parts>) -> Sizing {
        let max = opts.part_bytes.max(1);
        // Chunks whose events all go to parts hold none, except where the
        // join decodes a share again: they are cut for four times the
        // events (fewer joins, and the warm-up of a source with a return
        // stack, 8 KiB before each chunk, costs less: on the two-source
        // capture the threads' CPU time was 1.17x one thread's with chunks
        // cut for CHUNK_EVENTS). Not larger: a share decoded again holds
        // its events.
        let events = match parts {
            Some(p) if !p.keep_events() => 4 * CHUNK_EVENTS,
            _ => CHUNK_EVENTS,
        };
        Sizing {
            events,
            max,
            bytes: max.min(FIRST_CHUNK),
            seen: 0,
            densest: (0, 1),
        }
    }

    /// A chunk of `len` bytes gave `events` events.
    fn joined(&mut self, events: u64, len: u64) {
        self.seen += len;
        if len > 0
            && u128::from(events) * u128::from(self.densest.1)
                > u128::from(self.densest.0) * u128::from(len)
        {
            self.densest = (events, len);
        }
        match self
            .events
            .saturating_mul(self.densest.1)
            .checked_div(self.densest.0)
        {
            Some(fit) => self.bytes = fit.max(MIN_CHUNK).min(self.max),
            None if self.seen >= FIRST_CHUNK => self.bytes = self.max,
            None => {}
        }
    }
}

/// A decode in chunks under way: what is handed out, what came back, and
/// the real state the chunks are joined onto.
struct Chunks<R> {
    shared: Arc<Shared>,
    /// The sources parsed and decoded from the start, as one pass has
    /// them.
    truth: Truth,
    /// Memory images: the configured sources' from the start, other
    /// trace IDs' when first met; `memories` is what the chunks handed
    /// out are given.
    images: PerId<Arc<dyn MemoryImage>>,
    memories: Memories,
    parts: Option<Arc<dyn Parts>>,
    spare: Arc<Spare>,
    caches: Arc<Caches>,
    sizing: Sizing,
    /// Chunks handed out per window.
    per_window: usize,
    reader: Reader<R>,
    todo: Arc<Todo>,
    tx: mpsc::Sender<(u64, Option<ChunkDone>)>,
    rx: mpsc::Receiver<(u64, Option<ChunkDone>)>,
    /// Chunks handed out and not yet joined, oldest first.
    queue: VecDeque<Queued>,
    /// Chunks worked and not yet joined.
    arrived: BTreeMap<u64, Option<ChunkDone>>,
    next_seq: u64,
    eof: bool,
    stats: ParallelStats,
}

impl<R: Read> Chunks<R> {
    fn new(
        plan: &Plan,
        input: R,
        layout: Layout,
        raw_id: u8,
        opts: &DecodeOptions,
        parts: Option<Arc<dyn Parts>>,
        jobs: usize,
    ) -> Chunks<R> {
        let shared = Arc::new(Shared {
            layout,
            raw_id,
            plan: plan.clone(),
            redone: (0..TRACE_IDS).map(|_| AtomicBool::new(false)).collect(),
            warm_up: opts.warm_up,
        });
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
        let mut images: PerId<Arc<dyn MemoryImage>> = PerId::new();
        for id in plan.configured() {
            images.insert(id, plan.image(id));
        }
        let memories: Memories = Arc::new(images.clone());
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
        let sizing = Sizing::new(opts, parts.as_deref());
        let (tx, rx) = mpsc::channel();
        Chunks {
            shared,
            truth,
            images,
            memories,
            parts,
            spare,
            caches,
            sizing,
            per_window,
            reader: Reader::new(input, layout),
            todo: Arc::new(Todo::default()),
            tx,
            rx,
            queue: VecDeque::new(),
            arrived: BTreeMap::new(),
            next_seq: 0,
            eof: false,
            stats: ParallelStats::default(),
        }
    }

    /// Keep up to two windows of chunks with the workers: read the next
    /// windows and queue their chunks, each as a task of `pool` that works
    /// the oldest chunk not yet taken.
    fn hand_out(&mut self, pool: &rayon::ThreadPool) -> Result<(), CaptureError> {
        let per_window = self.per_window;
        while !self.eof && self.queue.len() + per_window <= 2 * per_window {
            let chunk = usize::try_from(self.sizing.bytes).unwrap_or(usize::MAX);
            let scan = usize::try_from((self.sizing.bytes / 2).min(MAX_SCAN)).unwrap_or(0);
            let window = self
                .reader
                .next_window(chunk, per_window, scan)
                .map_err(CaptureError::Read)?;
            let Some(window) = window else {
                // A stream with too few new bytes for now: join what is
                // out before reading again.
                self.eof = !self.reader.idle;
                break;
            };
            if self.images.len() != self.memories.len() {
                self.memories = Arc::new(self.images.clone());
            }
            let window = Arc::new(window);
            // The timestamp bases known now: chunks' parsers start from
            // them (their stitch checks whether that was right).
            let mut seeds = PerId::new();
            for (id, p) in self.truth.parsers.iter() {
                seeds.insert(id, p.timestamp());
            }
            let seeds = Arc::new(seeds);
            for chunk in 0..window.chunks.len() {
                self.todo.push(Job {
                    seq: self.next_seq,
                    window: Arc::clone(&window),
                    chunk,
                    memories: Arc::clone(&self.memories),
                    seeds: Arc::clone(&seeds),
                    parts: self.parts.clone(),
                });
                // The task runs the oldest chunk not yet taken, if any (the
                // calling thread may have taken them all).
                let (tx, todo, shared, spare, caches) = (
                    self.tx.clone(),
                    Arc::clone(&self.todo),
                    Arc::clone(&self.shared),
                    Arc::clone(&self.spare),
                    Arc::clone(&self.caches),
                );
                pool.spawn(move || {
                    if let Some(job) = todo.pop() {
                        // Without a receiver the decode has already failed.
                        let _ = tx.send(job.run(&shared, &spare, &caches));
                    }
                });
                self.queue.push_back(Queued {
                    seq: self.next_seq,
                    window: Arc::clone(&window),
                    chunk,
                });
                self.next_seq += 1;
            }
            self.stats.chunks += window.chunks.len() as u64;
        }
        Ok(())
    }

    /// The worked chunk `q`: while it is still being worked, the calling
    /// thread works the oldest chunk no worker has taken yet.
    fn wait_for(&mut self, q: &Queued) -> Result<ChunkDone, CaptureError> {
        let failed = || CaptureError::ThreadFailed;
        let done = loop {
            if let Some(d) = self.arrived.remove(&q.seq) {
                break d;
            }
            let (seq, d) = match self.rx.try_recv() {
                Ok(r) => r,
                Err(mpsc::TryRecvError::Disconnected) => return Err(failed()),
                Err(mpsc::TryRecvError::Empty) => match self.todo.pop() {
                    Some(job) => job.run(&self.shared, &self.spare, &self.caches),
                    None => self.rx.recv().map_err(|_| failed())?,
                },
            };
            self.arrived.insert(seq, d);
        };
        done.ok_or_else(failed)
    }

    /// Join the worked chunk `q` onto the real state, hand its events to
    /// `sink`, and size the next chunks.
    fn join<T: Consumer + ?Sized>(
        &mut self,
        plan: &Plan,
        q: &Queued,
        done: ChunkDone,
        sink: &mut Sink<'_, T>,
    ) -> Result<(), CaptureError> {
        self.stats.largest_chunk_room = self
            .stats
            .largest_chunk_room
            .max(done.lanes.iter().map(|l| l.events.capacity() as u64).sum());
        let spare = &self.spare;
        // A source decoded again here mostly adds few events of its own.
        let mut take = || spare.take(false);
        let images = &mut self.images;
        let mut image_of = |id: u8| -> Option<Arc<dyn MemoryImage>> {
            plan.source(id)?;
            images
                .get_or_insert_with(id, || Some(plan.image(id)))
                .cloned()
        };
        let (spent, events) = Joiner {
            shared: &self.shared,
            truth: &mut self.truth,
            memory: &mut image_of,
            sink,
            stats: &mut self.stats,
            spare: &mut take,
        }
        .join(&q.window, q.chunk, done);
        self.spare.give(spent);
        if let Some(e) = sink.failure.take() {
            return Err(CaptureError::Consumer(e));
        }
        let len = q.window.chunks.get(q.chunk).map_or(0, |c| c.len() as u64);
        self.sizing.joined(events, len);
        Ok(())
    }

    /// The end of the capture, as one pass ends it: parser errors, then
    /// the decoders' last events, in trace ID order; the summary.
    fn end<T: Consumer + ?Sized>(
        mut self,
        sink: &mut Sink<'_, T>,
    ) -> Result<(DecodeSummary, ParallelStats), CaptureError> {
        let Truth {
            parsers, decoders, ..
        } = &mut self.truth;
        for (id, p) in parsers.iter_mut() {
            let op = stitch::finish(p);
            if let (Some(op), Some(d)) = (op, decoders.get_mut(id)) {
                chunk::feed_op(d, &op, &mut |e| sink.on(&e));
            }
        }
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
            parsed: self
                .truth
                .parsers
                .ids()
                .into_iter()
                .filter_map(|id| self.truth.stats(id).map(|s| (id, s)))
                .collect(),
            bytes: self.reader.read,
        };
        Ok((summary, self.stats))
    }
}
