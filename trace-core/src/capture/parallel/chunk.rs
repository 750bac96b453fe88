//! What a worker thread does with one chunk of capture bytes: deformat,
//! parse and decode it from fresh state, and note for each trace source
//! where its parser and decoder can take over from the real ones.
//!
//! A source's fresh parser skips bytes until an A-sync and then parses
//! with an unknown compression state (the last address, until an I-sync;
//! the timestamp base, which starts from the last one the join knew), so
//! its first packets may differ from the real ones. Its decoder starts at
//! the source's first I-sync ([`Decoder::at_sync`]). The point where the
//! worker's parser and decoder may take over is the end of the payload
//! piece holding that I-sync (a formatter run of at most 15 bytes, or a
//! small slice of a raw stream): the parser's state there is kept, with
//! the items of that piece from the I-sync on, for the join to compare
//! with the real parser's. The source's runs up to there are kept too, so
//! that the join parses them without deformatting the chunk again.
//!
//! A PTM source with a return stack may be warmed up first
//! ([`WarmUp`]): its parser and decoder then start in the bytes just
//! before the chunk (the decoder at an I-sync there) and run, their events
//! dropped, up to and including the chunk's first I-sync, which starts the
//! share ([`Decoder::mark_share`]). The calls made in those bytes are then
//! on the decoder's return stack, so returns to them do not stop the join
//! from taking the share over.

use super::caches::Caches;
use super::cuts::{Layout, Window};
use super::stitch::{feed, timestamp_of, Op, PacketParser};
use super::EventBuf;
use crate::capture::{Part, Parts, Plan, SourceCounts, WarmUp};
use crate::decode::{Decoder, DecoderConfig, SyncPoints};
use crate::demux::SourceConfig;
use crate::event::Event;
use crate::frames::{Deformatter, FrameEvent, Run};
use crate::memory::MemoryImage;
use crate::per_id::PerId;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Raw input: bytes fed at a time while looking for the first I-sync (the
/// real parser re-reads them at the join), and afterwards.
const SEEK_PIECE: usize = 16;
const PIECE: usize = 64 << 10;
/// Formatted input: the most runs a chunk's sources keep together for
/// the join. A source that would keep more is given up by the worker and
/// parsed whole by the join from the chunk's frames, so that bytes where
/// no I-sync comes (garbage, or a source whose trace was lost) cost no
/// more memory than a valid chunk (a run is 40 bytes for up to 15 bytes
/// of payload: random frames give runs of a byte or two).
const KEPT_RUNS: usize = 1 << 16;

/// What every chunk shares.
pub(super) struct Shared {
    pub(super) layout: Layout,
    /// Raw input: the trace ID of its one source.
    pub(super) raw_id: u8,
    /// The sources (configured, or any ID's template).
    pub(super) plan: Plan,
    /// Per trace ID: a share was decoded again because the worker's
    /// decoder could not take over. From then on, a source with a return
    /// stack is warmed up in every chunk (a return to a call made before
    /// the share is what usually stops the take-over); before, the
    /// warm-up's cost would buy nothing.
    pub(super) redone: Vec<AtomicBool>,
    /// When sources with a return stack are warmed up.
    pub(super) warm_up: WarmUp,
}

impl Shared {
    /// The packet and decoder configurations of trace ID `id`'s source.
    pub(super) fn source(&self, id: u8) -> Option<(SourceConfig, DecoderConfig)> {
        self.plan.source(id).map(|c| (c.source, c))
    }

    /// Whether source `id` is warmed up: it keeps a return stack (a PTM's)
    /// and, by default, one of its shares was redone.
    fn warms(&self, id: u8) -> bool {
        self.source(id).is_some_and(|(c, _)| c.return_stack())
            && match self.warm_up {
                WarmUp::Always => true,
                WarmUp::Never => false,
                WarmUp::Auto => self
                    .redone
                    .get(usize::from(id))
                    .is_some_and(|r| r.load(Ordering::Relaxed)),
            }
    }
}

/// What a worker is given along with its chunk.
pub(super) struct Work<'a> {
    pub(super) shared: &'a Shared,
    /// Memory images per trace ID, as known when the chunk was handed out.
    pub(super) memories: &'a Memories,
    /// Per trace ID, the timestamp base its parser starts from.
    pub(super) seeds: &'a PerId<u64>,
    /// Code caches from earlier chunks.
    pub(super) caches: &'a Caches,
    /// Makes the parts the events go to, if any.
    pub(super) parts: Option<&'a dyn Parts>,
}

/// Memory images per trace ID, as known when the chunk was handed out.
pub(super) type Memories = Arc<PerId<Arc<dyn MemoryImage>>>;

/// Where a chunk's decoder of one source takes over.
pub(super) struct Stitch {
    /// End of the piece holding the I-sync: the offset just past it (raw
    /// input) or the number of the formatter run (formatted input).
    pub(super) at: u64,
    /// The parser right after that piece.
    pub(super) parser: PacketParser,
    /// The items of that piece from the I-sync on, with their keys.
    pub(super) items: Vec<(u64, Op)>,
}

/// A source's share of a chunk.
pub(super) struct LaneDone {
    pub(super) id: u8,
    /// `None`: no I-sync found (or no memory image yet); the join parses
    /// and decodes this source's share itself.
    pub(super) stitch: Option<Stitch>,
    /// The parser at the end of the chunk.
    pub(super) parser: PacketParser,
    /// The decoder started at the I-sync, having run the rest.
    pub(super) decoder: Option<Decoder>,
    /// The timestamp packets after the stitch: offset and bits carried.
    pub(super) stamps: Vec<(u64, u8)>,
    /// Its events with the keys of the items that produced them (none
    /// kept when a part took them and [`Parts::keep_events`] is false).
    pub(super) events: EventBuf,
    /// The part that was given the events, and whether it read their
    /// timestamps.
    pub(super) part: Option<(Box<dyn Part>, bool)>,
    /// Their counts.
    pub(super) counts: SourceCounts,
    /// Formatted input: the source's runs (with their numbers) up to and
    /// including the stitch's, or all of them when there is no stitch:
    /// the join parses them again with the real parser.
    pub(super) runs: Vec<(u64, Run)>,
    /// Formatted input: the worker gave the source up, its runs not kept
    /// (see [`KEPT_RUNS`]), and there is no stitch: the join reads all of
    /// the source's runs from the chunk's frames.
    pub(super) given_up: bool,
}

/// A decoded chunk.
pub(super) struct ChunkDone {
    /// Formatted input: the trace ID in force at the chunk's start.
    pub(super) id_at_start: Option<u8>,
    /// The sources that had bytes in the chunk.
    pub(super) lanes: Vec<LaneDone>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Looking for the first I-sync.
    Seek,
    /// The I-sync was in the current piece.
    Found,
    /// Decoding.
    Decode,
}

/// A source while its chunk is worked on.
struct Lane {
    id: u8,
    parser: PacketParser,
    phase: Phase,
    points: SyncPoints,
    cfg: DecoderConfig,
    memory: Option<Arc<dyn MemoryImage>>,
    decoder: Option<Decoder>,
    found: Vec<(u64, Op)>,
    stitch: Option<Stitch>,
    stamps: Vec<(u64, u8)>,
    events: EventBuf,
    /// The part the events go to, and how they do.
    part: Option<PartFeed>,
    counts: SourceCounts,
    runs: Vec<(u64, Run)>,
    /// The source has bytes in the chunk itself (not only in the warm-up).
    in_chunk: bool,
    /// Given up before its stitch: see [`LaneDone::given_up`].
    given_up: bool,
}

/// A part, and whether the events it is given are kept too.
struct PartFeed {
    part: Box<dyn Part>,
    keep: bool,
    /// [`Parts::reads_timestamps`].
    stamps: bool,
}

/// [`run_op`] for a worker's lane: its events go to its part, if any, as
/// they come (kept only if the part's maker asks for them: storing an
/// event costs more than most parts' work).
#[inline]
fn lane_op(
    decoder: &mut Decoder,
    key: u64,
    op: &Op,
    events: &mut EventBuf,
    counts: &mut SourceCounts,
    part: &mut Option<PartFeed>,
) {
    match part {
        // A closure of its own, not `run_op`'s: the decoder's code for it
        // then has this one caller, and is inlined here (sharing it with
        // the joining thread's calls left it out of line, costing
        // instructions on every event).
        None => feed_op(decoder, op, &mut |e: Event| {
            counts.count(&e);
            events.push((key, e));
        }),
        Some(PartFeed {
            part, keep: false, ..
        }) => feed_op(decoder, op, &mut |e: Event| {
            counts.count(&e);
            part.event(&e);
        }),
        Some(PartFeed {
            part, keep: true, ..
        }) => feed_op(decoder, op, &mut |e: Event| {
            counts.count(&e);
            part.event(&e);
            events.push((key, e));
        }),
    }
}

/// Run `op` on `decoder`, handing its events to `out`. By reference: the
/// parser has only just written the item field by field, and a copy of
/// it as a whole would wait for those stores.
#[inline]
pub(super) fn feed_op<F: FnMut(Event)>(decoder: &mut Decoder, op: &Op, out: &mut F) {
    match op {
        Op::Packet(offset, packet) => decoder.push(*offset, packet, out),
        Op::Error(offset) => decoder.packet_error(*offset, out),
    }
}

/// Run `op` on `decoder`, keeping its events with `key` and counting them.
#[inline]
pub(super) fn run_op(
    decoder: &mut Decoder,
    key: u64,
    op: &Op,
    events: &mut EventBuf,
    counts: &mut SourceCounts,
) {
    feed_op(decoder, op, &mut |e: Event| {
        counts.count(&e);
        events.push((key, e));
    });
}

/// The key of an item, for the order of events across sources: the
/// number of its formatter run (a run holds one source's bytes), or in a
/// raw stream (one source: only the order within it matters) its offset.
#[inline]
pub(super) fn key_of(run: Option<u64>, op: &Op) -> u64 {
    match (run, op) {
        (Some(r), _) => r,
        (None, Op::Packet(o, _) | Op::Error(o)) => *o,
    }
}

impl Lane {
    /// Feed one piece of the source's payload; `run` as for [`key_of`],
    /// `at` the piece's end as [`Stitch::at`] counts it.
    fn piece(&mut self, offset: u64, data: &[u8], run: Option<u64>, at: u64, caches: &Caches) {
        self.in_chunk = true;
        let Lane {
            id,
            parser,
            phase,
            points,
            cfg,
            memory,
            decoder,
            found,
            stamps,
            events,
            part,
            counts,
            ..
        } = self;
        if let (Phase::Decode, Some(d)) = (*phase, decoder.as_mut()) {
            feed(parser, offset, data, |op| {
                if let (Some((_, bits)), Op::Packet(o, _)) = (timestamp_of(&op), op) {
                    stamps.push((o, bits));
                }
                lane_op(d, key_of(run, &op), &op, events, counts, part);
            });
            return;
        }
        feed(parser, offset, data, |op| {
            let key = key_of(run, &op);
            match (*phase, decoder.as_mut()) {
                (Phase::Seek, Some(d)) => {
                    // Warmed up: the decoder goes on up to and including
                    // the chunk's first I-sync, where the share starts.
                    let sync = matches!(&op, Op::Packet(_, p) if points.observe(p).is_some());
                    feed_op(d, &op, &mut |_| {});
                    if sync {
                        d.mark_share();
                        found.push((key, op));
                        *phase = Phase::Found;
                    }
                }
                (Phase::Seek, None) => {
                    let Op::Packet(o, packet) = op else { return };
                    let Some(before) = points.observe(&packet) else {
                        return;
                    };
                    let Some(mem) = memory.as_ref() else { return };
                    if let Some(mut d) = Decoder::at_sync(*cfg, Arc::clone(mem), before, o, &packet)
                    {
                        caches.lend(*id, &mut d);
                        *decoder = Some(d);
                        found.push((key, op));
                        *phase = Phase::Found;
                    }
                }
                (_, Some(d)) => {
                    lane_op(d, key, &op, events, counts, part);
                    if *phase == Phase::Found {
                        found.push((key, op));
                    }
                }
                (_, None) => {}
            }
        });
        if self.phase == Phase::Found {
            self.stitch = Some(Stitch {
                at,
                parser: self.parser.clone(),
                items: std::mem::take(&mut self.found),
            });
            self.phase = Phase::Decode;
        }
    }

    /// Feed one piece of the source's payload before the chunk: the
    /// decoder starts at the first I-sync and runs the rest, its events
    /// dropped, so that at the chunk's first I-sync its return stack holds
    /// the calls made since (see [`Decoder::mark_share`]).
    fn warm_piece(&mut self, offset: u64, data: &[u8], caches: &Caches) {
        let Lane {
            id,
            parser,
            points,
            cfg,
            memory,
            decoder,
            ..
        } = self;
        feed(parser, offset, data, |op| {
            let sync = match &op {
                Op::Packet(_, p) => points.observe(p),
                Op::Error(_) => None,
            };
            match (decoder.as_mut(), sync, &op, memory.as_ref()) {
                (Some(d), ..) => {
                    feed_op(d, &op, &mut |_| {});
                }
                (None, Some(before), Op::Packet(o, packet), Some(mem)) => {
                    if let Some(mut d) = Decoder::at_sync(*cfg, Arc::clone(mem), before, *o, packet)
                    {
                        caches.lend(*id, &mut d);
                        *decoder = Some(d);
                    }
                }
                _ => {}
            }
        });
    }

    /// Stop working the source before its stitch: its runs are let go
    /// (the join reads them from the frames) and nothing more is decoded.
    #[cold]
    fn give_up(&mut self) {
        self.in_chunk = true;
        self.given_up = true;
        self.runs = Vec::new();
    }

    /// The lane's results; its decoder's code cache is kept for later
    /// chunks (the decoder, should the join take it over, goes on without).
    fn done(mut self, caches: &Caches) -> LaneDone {
        if let Some(d) = self.decoder.as_mut() {
            caches.keep(self.id, d);
        }
        LaneDone {
            id: self.id,
            stitch: self.stitch,
            parser: self.parser,
            decoder: self.decoder,
            stamps: self.stamps,
            events: self.events,
            part: self.part.map(|p| (p.part, p.stamps)),
            counts: self.counts,
            runs: self.runs,
            given_up: self.given_up,
        }
    }
}

/// The lane of source `id`, made by `make` when it has none yet.
fn lane<'l>(
    lanes: &'l mut PerId<Lane>,
    id: u8,
    make: &mut impl FnMut(u8) -> Option<Lane>,
) -> Option<&'l mut Lane> {
    lanes.get_or_insert_with(id, || make(id))
}

/// Work one chunk of `window` from fresh state.
pub(super) fn run_chunk(
    work: &Work<'_>,
    window: &Window,
    chunk: usize,
    mut spare: impl FnMut(bool) -> EventBuf,
) -> ChunkDone {
    let Work {
        shared,
        memories,
        seeds,
        caches,
        parts,
    } = *work;
    let range = window.chunks.get(chunk).cloned().unwrap_or(0..0);
    let start = window.base + range.start as u64;
    let bytes = window.bytes.get(range.clone()).unwrap_or(&[]);
    let mut lanes: PerId<Lane> = PerId::new();
    let mut made = 0usize;
    let mut make = |id: u8| -> Option<Lane> {
        let (pcfg, cfg) = shared.source(id)?;
        // Room for the chunk's events for its first source only.
        let mut events = spare(made == 0);
        made += 1;
        events.clear();
        let mut parser = PacketParser::new(pcfg);
        if let Some(&ts) = seeds.get(id) {
            parser.set_timestamp(ts);
        }
        Some(Lane {
            id,
            parser,
            phase: Phase::Seek,
            points: SyncPoints::new(&cfg),
            cfg,
            memory: memories.get(id).cloned(),
            decoder: None,
            found: Vec::new(),
            stitch: None,
            stamps: Vec::new(),
            events,
            part: parts.and_then(|p| {
                Some(PartFeed {
                    part: p.part(id)?,
                    keep: p.keep_events(),
                    stamps: p.reads_timestamps(),
                })
            }),
            counts: SourceCounts::default(),
            runs: Vec::new(),
            in_chunk: false,
            given_up: false,
        })
    };
    // Sources with a return stack first decode the bytes before the chunk.
    if (0..=u8::MAX).any(|id| shared.warms(id)) {
        let warm = window.warm_up(range.start, shared.layout);
        match shared.layout {
            Layout::Raw => {
                if shared.warms(shared.raw_id) {
                    if let Some(l) = lane(&mut lanes, shared.raw_id, &mut make) {
                        l.warm_piece(warm.offset, &warm.bytes, caches);
                    }
                }
            }
            Layout::Frames => {
                let mut d = Deformatter::resume_memory(warm.offset, warm.id);
                for ev in d.feed(&warm.bytes) {
                    if let FrameEvent::Data(run) = ev {
                        if shared.warms(run.id) {
                            if let Some(l) = lane(&mut lanes, run.id, &mut make) {
                                l.warm_piece(run.offset, run.data(), caches);
                            }
                        }
                    }
                }
            }
        }
    }
    let mut id_at_start = None;
    match shared.layout {
        Layout::Raw => {
            if let Some(l) = lane(&mut lanes, shared.raw_id, &mut make) {
                let mut at = 0usize;
                while at < bytes.len() {
                    let n = if l.phase == Phase::Decode {
                        PIECE
                    } else {
                        SEEK_PIECE
                    };
                    let end = (at + n).min(bytes.len());
                    let offset = start + at as u64;
                    l.piece(offset, &bytes[at..end], None, start + end as u64, caches);
                    at = end;
                }
            }
        }
        Layout::Frames => {
            id_at_start = window.id_at(range.start);
            let mut d = Deformatter::resume_memory(start, id_at_start);
            let mut run_no = 0u64;
            let mut kept = 0usize;
            for ev in d.feed(bytes) {
                if let FrameEvent::Data(run) = ev {
                    if let Some(l) = lane(&mut lanes, run.id, &mut make) {
                        if !l.given_up && l.phase != Phase::Decode {
                            if kept == KEPT_RUNS {
                                l.give_up();
                            } else {
                                l.runs.push((run_no, run));
                                kept += 1;
                            }
                        }
                        if !l.given_up {
                            l.piece(run.offset, run.data(), Some(run_no), run_no, caches);
                        }
                    }
                    run_no += 1;
                }
            }
        }
    }
    ChunkDone {
        id_at_start,
        lanes: lanes
            .into_insertion_order()
            .filter_map(|(_, l)| {
                let in_chunk = l.in_chunk;
                let done = l.done(caches);
                in_chunk.then_some(done)
            })
            .collect(),
    }
}
