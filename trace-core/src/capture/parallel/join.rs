//! Joining decoded chunks, in order, onto the real state of the capture.
//!
//! For each source with bytes in a chunk, the real parser (the state of
//! everything before the chunk) parses the source's bytes from the chunk's
//! start up to the end of the piece holding the worker's first I-sync, and
//! the real decoder decodes those packets, I-sync included. The worker's
//! result is then taken over only if the real parser produced the same
//! items from the I-sync on in that piece and ended it in the same state
//! ([`PacketParser::same_state`]), and [`Decoder::join`] accepts the
//! worker's decoder against the real one. Otherwise the real parser and
//! decoder go on through the rest of the source's bytes in the chunk:
//! either way, the items and events are those of one parser and one
//! decoder over the whole capture.

use super::chunk::{key_of, run_op, ChunkDone, LaneDone, Shared};
use super::cuts::{Layout, Window};
use super::stitch::{feed, low_bits, rebase, same_but_timestamp, timestamp_of, Op, PacketParser};
use super::EventBuf;
use crate::capture::consumer::{Consumer, Sink};
use crate::capture::{Delivery, ParallelStats, SourceCounts};
use crate::decode::Decoder;
use crate::demux::SourceStats;
use crate::event::{Event, EventKind};
use crate::frames::Deformatter;
use crate::memory::MemoryImage;
use crate::per_id::PerId;
use std::sync::Arc;

/// The real state of the capture so far: one parser and one decoder per
/// trace ID, as a single pass would have them.
pub(super) struct Truth {
    pub(super) parsers: PerId<PacketParser>,
    /// Added to a parser's counters: parsers taken over from workers
    /// counted their bytes from a fresh start.
    pub(super) adjust: PerId<SourceStats>,
    pub(super) decoders: PerId<Decoder>,
}

impl Truth {
    pub(super) fn new() -> Truth {
        Truth {
            parsers: PerId::new(),
            adjust: PerId::new(),
            decoders: PerId::new(),
        }
    }

    /// The counters of trace ID `id`'s parser.
    pub(super) fn stats(&self, id: u8) -> Option<SourceStats> {
        let p = self.parsers.get(id)?;
        let zero = SourceStats::default();
        let adjust = self.adjust.get(id).copied().unwrap_or_default();
        Some(rebase(&p.stats(), &adjust, &zero))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Before the worker's I-sync.
    Before,
    /// Past the I-sync, in the piece that holds it.
    Tail,
    /// The real parser and decoder do the rest.
    Full,
    /// The worker's parser and decoder took over.
    Accepted,
}

struct Lane {
    mode: Mode,
    done: LaneDone,
    /// Events of the real decoder in this chunk, and their counts.
    serial: EventBuf,
    counts: SourceCounts,
    /// Items of the real parser after the I-sync in its piece.
    tail: Vec<(u64, Op)>,
    /// Formatted input: the number of the first formatter run the real
    /// parser reads from the chunk's frames (`u64::MAX`: none).
    walk_from: u64,
}

/// Everything the join works with.
pub(super) struct Joiner<'a, 'b, F: Consumer + ?Sized> {
    pub(super) shared: &'a Shared,
    pub(super) truth: &'a mut Truth,
    /// The memory image of a trace ID.
    pub(super) memory: &'a mut dyn FnMut(u8) -> Option<Arc<dyn MemoryImage>>,
    pub(super) sink: &'a mut Sink<'b, F>,
    pub(super) stats: &'a mut ParallelStats,
    pub(super) spare: &'a mut dyn FnMut() -> EventBuf,
}

impl<F: Consumer + ?Sized> Joiner<'_, '_, F> {
    /// Join chunk `chunk` of `window`, worked as `done`, and hand on its
    /// events; returns the event buffers for reuse and the number of
    /// events.
    pub(super) fn join(
        &mut self,
        window: &Window,
        chunk: usize,
        done: ChunkDone,
    ) -> (Vec<EventBuf>, u64) {
        let range = window.chunks.get(chunk).cloned().unwrap_or(0..0);
        let start = window.base + range.start as u64;
        let bytes = window.bytes.get(range).unwrap_or(&[]);
        let mut lanes: PerId<Lane> = PerId::new();
        for d in done.lanes {
            let mode = if d.stitch.is_some() {
                self.stats.parts += 1;
                Mode::Before
            } else {
                self.stats.serial += 1;
                self.stats.given_up += u64::from(d.given_up);
                Mode::Full
            };
            // Most sources need few events of their own here.
            let serial = if mode == Mode::Full {
                let mut v = (self.spare)();
                v.clear();
                v
            } else {
                Vec::new()
            };
            lanes.insert(
                d.id,
                Lane {
                    mode,
                    done: d,
                    serial,
                    counts: SourceCounts::default(),
                    tail: Vec::new(),
                    walk_from: u64::MAX,
                },
            );
        }
        match self.shared.layout {
            Layout::Raw => {
                if let Some((_, l)) = lanes.in_insertion_order_mut().next() {
                    let mut at = 0usize;
                    if let Some(s) = l.done.stitch.as_ref() {
                        let end = usize::try_from(s.at.saturating_sub(start))
                            .map_or(bytes.len(), |e| e.min(bytes.len()));
                        self.piece(l, start, &bytes[..end], None);
                        self.check(l);
                        at = end;
                    }
                    if l.mode == Mode::Full {
                        self.piece(l, start + at as u64, &bytes[at..], None);
                    }
                }
            }
            Layout::Frames => {
                // Each source's runs up to its stitch, as the worker kept
                // them; a source whose stitch does not match needs the
                // rest of its runs, from the frames.
                for (_, l) in lanes.in_insertion_order_mut() {
                    let stitch_at = l.done.stitch.as_ref().map(|s| s.at);
                    for (r, run) in std::mem::take(&mut l.done.runs) {
                        if l.mode == Mode::Accepted {
                            break;
                        }
                        self.piece(l, run.offset, run.data(), Some(r));
                        if stitch_at == Some(r) && matches!(l.mode, Mode::Before | Mode::Tail) {
                            self.check(l);
                        }
                    }
                    if let (Mode::Full, Some(at)) = (l.mode, stitch_at) {
                        l.walk_from = at + 1;
                    }
                    if l.done.given_up {
                        l.walk_from = 0;
                    }
                }
                if lanes.iter().any(|(_, l)| l.walk_from != u64::MAX) {
                    let mut d = Deformatter::resume_memory(start, done.id_at_start);
                    let mut run_no = 0u64;
                    for ev in d.feed(bytes) {
                        let crate::frames::FrameEvent::Data(run) = ev else {
                            continue;
                        };
                        if let Some(l) = lanes.get_mut(run.id) {
                            if run_no >= l.walk_from {
                                self.piece(l, run.offset, run.data(), Some(run_no));
                            }
                        }
                        run_no += 1;
                    }
                }
            }
        }
        self.emit(lanes, start + bytes.len() as u64)
    }

    /// Parse a piece of a source's bytes with the real parser.
    fn piece(&mut self, l: &mut Lane, offset: u64, data: &[u8], run: Option<u64>) {
        let id = l.done.id;
        let Some((pcfg, cfg)) = self.shared.source(id) else {
            return;
        };
        let Some(parser) = self
            .truth
            .parsers
            .get_or_insert_with(id, || Some(PacketParser::new(pcfg)))
        else {
            return;
        };
        let decoders = &mut self.truth.decoders;
        let memory = &mut *self.memory;
        let isync = l
            .done
            .stitch
            .as_ref()
            .and_then(|s| s.items.first().copied());
        let Lane {
            mode,
            serial,
            counts,
            tail,
            ..
        } = l;
        let mut redone = false;
        feed(parser, offset, data, |op| {
            let key = key_of(run, &op);
            match *mode {
                Mode::Tail => {
                    tail.push((key, op));
                    return;
                }
                Mode::Before => match isync {
                    Some((k, o)) if key == k && op == o => *mode = Mode::Tail,
                    Some((k, _)) if key > k => {
                        *mode = Mode::Full;
                        redone = true;
                    }
                    _ => {}
                },
                Mode::Full | Mode::Accepted => {}
            }
            let d = match op {
                Op::Packet(..) => {
                    decoders.get_or_insert_with(id, || Some(Decoder::new(cfg, memory(id)?)))
                }
                Op::Error(_) => decoders.get_mut(id),
            };
            if let Some(d) = d {
                run_op(d, key, &op, serial, counts);
            }
        });
        if redone {
            self.redone(id);
        }
    }

    /// At the end of the piece that held the worker's I-sync: take the
    /// worker's parser and decoder over if they match the real ones.
    ///
    /// The worker's parser started from a guessed timestamp base, so its
    /// timestamp values may differ from the real ones in the high-order
    /// bits that no packet has carried since: the rest of the state is
    /// compared, and the timestamps corrected by the difference of the two
    /// bases, which each packet clears in the bits it carries.
    fn check(&mut self, l: &mut Lane) {
        let id = l.done.id;
        let Some(mut stitch) = l.done.stitch.take() else {
            return;
        };
        let real = self.truth.parsers.get(id);
        let same_items = l.mode == Mode::Tail
            && stitch.items.len() == l.tail.len() + 1
            && stitch.items[1..]
                .iter()
                .zip(&l.tail)
                .all(|((ka, a), (kb, b))| ka == kb && same_but_timestamp(a, b));
        let (same_parser, diff) = match real {
            Some(p) => {
                let (worker, truth) = (stitch.parser.timestamp(), p.timestamp());
                stitch.parser.set_timestamp(truth);
                (
                    p.same_state(&stitch.parser),
                    p.value_wire(worker) ^ p.value_wire(truth),
                )
            }
            None => (false, 0),
        };
        // A part has seen the worker's timestamps as they are: if it read
        // them, a share whose timestamps need correcting is decoded again.
        let exact = !l.done.part.as_ref().is_some_and(|p| p.1)
            || (diff == 0
                && stitch.items[1..]
                    .iter()
                    .zip(&l.tail)
                    .all(|((_, a), (_, b))| {
                        timestamp_of(a).map(|t| t.0) == timestamp_of(b).map(|t| t.0)
                    }));
        let joined = same_items
            && same_parser
            && exact
            && match (l.done.decoder.as_mut(), self.truth.decoders.get(id)) {
                (Some(part), Some(real)) => part.join(real),
                _ => false,
            };
        if joined {
            if let Some(p) = real {
                let before = self.truth.adjust.get(id).copied().unwrap_or_default();
                let adjust = rebase(&before, &p.stats(), &stitch.parser.stats());
                self.truth.adjust.insert(id, adjust);
            }
            fix_timestamps(l, &stitch.items[1..], diff);
            let worker = std::mem::replace(&mut l.done.parser, stitch.parser);
            self.truth.parsers.insert(id, worker);
            // The worker's decoder goes on with the real one's code cache
            // (its own went back to the workers).
            let mut part = l.done.decoder.take();
            if let (Some(p), Some(real)) = (part.as_mut(), self.truth.decoders.get_mut(id)) {
                p.set_cache(real.take_cache());
            }
            match part {
                Some(p) => {
                    self.truth.decoders.insert(id, p);
                }
                None => {
                    self.truth.decoders.remove(id);
                }
            }
            l.mode = Mode::Accepted;
            return;
        }
        if l.mode != Mode::Full {
            self.redone(l.done.id);
        }
        l.mode = Mode::Full;
        if let Some(d) = self.truth.decoders.get_mut(id) {
            for (key, op) in l.tail.drain(..) {
                run_op(d, key, &op, &mut l.serial, &mut l.counts);
            }
        }
    }

    /// Count a share of source `id` decoded again, and have its later
    /// chunks warmed up ([`Shared::redone`]).
    fn redone(&mut self, id: u8) {
        self.stats.redone += 1;
        if let Some(r) = self.shared.redone.get(usize::from(id)) {
            r.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Count and hand on the chunk's events in the order of the items that
    /// produced them, then the results of the parts that saw some of them
    /// (the chunk ends at offset `chunk_end`).
    fn emit(&mut self, lanes: PerId<Lane>, chunk_end: u64) -> (Vec<EventBuf>, u64) {
        let mut lists: Vec<Vec<(EventBuf, bool)>> = Vec::with_capacity(lanes.len());
        let mut parts = Vec::new();
        let mut spent = Vec::new();
        let mut total = 0u64;
        for (_, l) in lanes.into_insertion_order() {
            let counts = self.sink.counts_of(l.done.id);
            counts.add(&l.counts);
            total += l.counts.events;
            let mut list = vec![(l.serial, false)];
            if l.mode == Mode::Accepted {
                counts.add(&l.done.counts);
                total += l.done.counts.events;
                let folded = l.done.part.is_some();
                list.push((l.done.events, folded));
                if let Some((p, _)) = l.done.part {
                    parts.push((l.done.id, p));
                }
            } else {
                spent.push(l.done.events);
            }
            lists.push(list);
        }
        deliver_in_order(&lists, self.sink);
        for (id, p) in parts {
            self.sink.hand(Delivery::Part {
                id,
                result: p.into_any(),
                chunk_end,
            });
        }
        spent.extend(lists.into_iter().flatten().map(|(b, _)| b));
        (spent, total)
    }
}

/// A correction of a worker's timestamp event.
#[derive(Clone, Copy)]
enum Fix {
    /// The real value.
    Set(u64),
    /// Flip these bits of the value as the packets carry it.
    Flip(u64),
}

/// Correct the timestamps of an accepted worker's events and parser:
/// those of the packets in the stitch piece (`worker`, against the real
/// parser's `l.tail`), and those after it, whose bases differ by `diff`
/// (as the packets carry them) until packets have carried those bits.
fn fix_timestamps(l: &mut Lane, worker: &[(u64, Op)], diff: u64) {
    let mut fixes: Vec<(u64, Fix)> = Vec::new();
    for ((_, w), (_, r)) in worker.iter().zip(&l.tail) {
        if let (Some((wv, _)), Some((rv, _)), Op::Packet(o, _)) =
            (timestamp_of(w), timestamp_of(r), r)
        {
            if wv != rv {
                fixes.push((*o, Fix::Set(rv)));
            }
        }
    }
    let mut d = diff;
    for &(o, bits) in &l.done.stamps {
        if d == 0 {
            break;
        }
        d &= !low_bits(bits);
        if d != 0 {
            fixes.push((o, Fix::Flip(d)));
        }
    }
    let parser = &mut l.done.parser;
    if d != 0 {
        let ts = parser.wire_value(parser.value_wire(parser.timestamp()) ^ d);
        parser.set_timestamp(ts);
    }
    if fixes.is_empty() {
        return;
    }
    fixes.sort_by_key(|f| f.0);
    for (_, e) in &mut l.done.events {
        if let EventKind::Timestamp { value, .. } = &mut e.kind {
            if let Ok(i) = fixes.binary_search_by_key(&e.offset, |f| f.0) {
                *value = match fixes[i].1 {
                    Fix::Set(v) => v,
                    Fix::Flip(bits) => parser.wire_value(parser.value_wire(*value) ^ bits),
                };
            }
        }
    }
}

/// A run of a source's events, and whether a part saw them.
type Batch<'a> = (&'a [(u64, Event)], bool);

/// Hand on the (counted) events of several sources in key order (each
/// source's lists are in order already; those marked were seen by a part),
/// a run of one source's at a time.
fn deliver_in_order<F: Consumer + ?Sized>(lists: &[Vec<(EventBuf, bool)>], sink: &mut Sink<'_, F>) {
    let lists: Vec<Vec<Batch<'_>>> = lists
        .iter()
        .map(|b| {
            b.iter()
                .filter(|(v, _)| !v.is_empty())
                .map(|(v, f)| (v.as_slice(), *f))
                .collect::<Vec<_>>()
        })
        .filter(|b| !b.is_empty())
        .collect();
    if lists.len() <= 1 {
        for &(batch, folded) in lists.iter().flatten() {
            sink.hand_run(batch, folded);
        }
        return;
    }
    // Cursor per source: (list, position). An item belongs to one
    // source, so keys never tie across sources: the source with the
    // smallest next key runs on until it passes the others' next keys.
    let mut heads = vec![(0usize, 0usize); lists.len()];
    let key = |heads: &[(usize, usize)], i: usize| -> Option<u64> {
        let (b, p) = heads[i];
        lists[i].get(b).and_then(|(v, _)| v.get(p)).map(|(k, _)| *k)
    };
    loop {
        let mut best: Option<(u64, usize)> = None;
        let mut others = u64::MAX;
        for i in 0..lists.len() {
            if let Some(k) = key(&heads, i) {
                match best {
                    Some((b, _)) if k >= b => others = others.min(k),
                    _ => {
                        if let Some((b, _)) = best {
                            others = others.min(b);
                        }
                        best = Some((k, i));
                    }
                }
            }
        }
        let Some((_, i)) = best else {
            return;
        };
        let (b, p) = &mut heads[i];
        while let Some(&(run, folded)) = lists[i].get(*b) {
            let rest = run.get(*p..).unwrap_or(&[]);
            let n = rest.iter().take_while(|(k, _)| *k < others).count();
            sink.hand_run(rest.get(..n).unwrap_or(&[]), folded);
            *p += n;
            if *p < run.len() {
                break;
            }
            *b += 1;
            *p = 0;
        }
    }
}
