//! The one-pass conversion driver: decode each capture once and feed every
//! event, with its shared [`EventCtx`], to all sinks.
//!
//! ```no_run
//! use std::path::Path;
//! use trace_convert::convert::{self, Converter, ConvertOptions};
//! use trace_convert::input::memory::ExtraMemory;
//! use trace_convert::progress::NoProgress;
//! use trace_convert::sinks::folded::{FoldedSink, Weight};
//! use trace_convert::input::{self, flags::SourceFlags};
//! use trace_convert::sinks::SharedBuffer;
//! use trace_convert::symbols::Symbolizer;
//!
//! let input = input::resolve(Path::new("snapshot"), &SourceFlags::default())?;
//! let symbols = Symbolizer::empty();
//! let folded = SharedBuffer::new();
//! let options = ConvertOptions::default();
//! let mut conv = Converter::new(&symbols, options.clock_for(&input), options.max_depth);
//! conv.add_sink(Box::new(FoldedSink::new(folded.clone(), Weight::Instructions)));
//! let report = convert::convert_input(&input, &ExtraMemory::default(), conv, &mut NoProgress)?;
//! println!("{}", String::from_utf8_lossy(&folded.bytes()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod parts;
mod tasks;
mod windowed;

use crate::callstack::{CallStacks, StackStats};
use crate::clock::{ClockInfo, ClockKind, Clocks};
use crate::input::capture::{self as dec, ReadError};
use crate::input::memory::{ExtraMemory, Images};
use crate::input::saved::SavedEvents;
use crate::input::source::{SourceSpec, Task};
use crate::input::{Input, InputError};
use crate::progress::Progress;
use crate::sinks::{is_instant, DynSink, EventCtx, Flow, Interest, RunInfo, SourceName, ThreadKey};
use crate::symbols::{SymbolError, Symbolizer};
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use trace_core::capture::{Consumer, DecodeOptions, Delivery, Mismatches, SLICE};
use trace_core::event::{Event, EventKind, Range};
use trace_core::memory::{MemoryError, MemoryImage};

/// Events handed to batch-taking sinks at a time (12 KiB of events: the
/// batch is still in the first-level cache when the sinks read it).
const BATCH: usize = 256;

/// Which clock to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockChoice {
    /// Timestamps when there are several sources and every one has them
    /// (every core on one axis, resolved by cycle counts when the sources
    /// are cycle-accurate); else cycles when every source is
    /// cycle-accurate, else timestamps when every source has them, else
    /// instructions.
    #[default]
    Auto,
    /// This one.
    Fixed(ClockKind),
}

/// Settings of a conversion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConvertOptions {
    /// The clock.
    pub clock: ClockChoice,
    /// Processor clock (cycles per second) for the cycle clock.
    pub cpu_hz: Option<f64>,
    /// Timestamp ticks per second.
    pub timestamp_hz: Option<f64>,
    /// Bound of the call-stack depth.
    pub max_depth: usize,
}

impl Default for ConvertOptions {
    fn default() -> ConvertOptions {
        ConvertOptions {
            clock: ClockChoice::Auto,
            cpu_hz: None,
            timestamp_hz: None,
            max_depth: crate::callstack::DEFAULT_MAX_DEPTH,
        }
    }
}

/// What a source's trace tells of time: a conversion's clock is chosen
/// from those of its sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SourceTime {
    /// The trace carries cycle counts (cycle-accurate).
    pub cycles: bool,
    /// The trace carries timestamps.
    pub timestamps: bool,
}

impl SourceTime {
    /// A source configured as `cfg`, as its protocol says.
    #[must_use]
    pub fn of(cfg: &trace_core::demux::SourceConfig) -> SourceTime {
        SourceTime {
            cycles: cfg.cycle_accurate(),
            timestamps: cfg.timestamps(),
        }
    }
}

/// ETMCR bit 12: cycle-accurate.
const ETMCR_CYCLE_ACCURATE: u32 = 1 << 12;
/// ETMCR bit 28: timestamps.
const ETMCR_TIMESTAMPS: u32 = 1 << 28;

impl ConvertOptions {
    /// The clock for sources whose traces tell of time as `sources` say.
    #[must_use]
    pub fn clock_for_sources(&self, sources: &[SourceTime]) -> ClockInfo {
        let kind = match self.clock {
            ClockChoice::Fixed(k) => k,
            ClockChoice::Auto if sources.is_empty() => ClockKind::Instructions,
            ClockChoice::Auto => {
                // Several cores line up on timestamps, not on cycles.
                if sources.len() > 1 && sources.iter().all(|s| s.timestamps) {
                    ClockKind::Timestamps
                } else if sources.iter().all(|s| s.cycles) {
                    ClockKind::Cycles
                } else if sources.iter().all(|s| s.timestamps) {
                    ClockKind::Timestamps
                } else {
                    ClockKind::Instructions
                }
            }
        };
        let hz = match kind {
            ClockKind::Cycles => self.cpu_hz,
            ClockKind::Timestamps => self.timestamp_hz,
            ClockKind::Instructions => None,
        };
        // Timestamps of cycle-accurate sources are resolved by the cycles.
        let cycle_accurate = !sources.is_empty() && sources.iter().all(|s| s.cycles);
        if kind == ClockKind::Timestamps && cycle_accurate {
            return ClockInfo::timestamps_by_cycles(hz);
        }
        ClockInfo::new(kind, hz)
    }

    /// The clock for ETMv3 or PTM sources configured by these ETMCR
    /// values (bit 12 cycle-accurate, bit 28 timestamps).
    #[must_use]
    pub fn clock_for_etmcr(&self, etmcrs: &[u32]) -> ClockInfo {
        let sources: Vec<SourceTime> = etmcrs
            .iter()
            .map(|r| SourceTime {
                cycles: r & ETMCR_CYCLE_ACCURATE != 0,
                timestamps: r & ETMCR_TIMESTAMPS != 0,
            })
            .collect();
        self.clock_for_sources(&sources)
    }

    /// The clock for the sources of `input`: as the protocols of those
    /// that trace instructions say for captures, as the events say for saved events (whose sources are
    /// those with code; a fixed clock is taken as it is).
    #[must_use]
    pub fn clock_for(&self, input: &Input) -> ClockInfo {
        let sources: Vec<SourceTime> = match &input.saved {
            Some(_) if matches!(self.clock, ClockChoice::Fixed(_)) => Vec::new(),
            Some(saved) => saved
                .timing
                .values()
                .map(|&(cycles, timestamps)| SourceTime { cycles, timestamps })
                .collect(),
            None => input
                .captures
                .iter()
                .flat_map(|c| {
                    let any = c
                        .any_id
                        .map(|(protocol, regs)| regs.source_config(protocol).map_err(|_| ()));
                    c.sources
                        .iter()
                        .map(|s| s.config().map_err(|_| ()))
                        .chain(any)
                })
                .filter_map(Result::ok)
                // The sources that trace no instructions (ITM/DWT) keep
                // their own time (see `crate::clock`).
                .filter(|c| c.protocol().traces_instructions())
                .map(|c| SourceTime::of(&c))
                .collect(),
        };
        self.clock_for_sources(&sources)
    }
}

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The input is unusable.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A memory image could not be loaded.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// An ELF file could not be read for symbols.
    #[error(transparent)]
    Symbols(#[from] SymbolError),
    /// A capture could not be read or decoded.
    #[error("{path}: {source}")]
    Read {
        /// The capture file.
        path: PathBuf,
        /// What went wrong.
        source: ReadError,
    },
    /// An output could not be written.
    #[error("{0}")]
    Output(io::Error),
}

/// Counters of one trace ID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdReport {
    /// Events.
    pub events: u64,
    /// Instruction ranges.
    pub ranges: u64,
    /// Instructions (including the last of a range that failed its
    /// condition).
    pub instructions: u64,
    /// Cycles the trace carried (only from a cycle-accurate source, see
    /// [`Converter::ignore_cycles`]).
    pub cycles: u64,
    /// Events whose cycle counts were ignored: the source's configuration
    /// is not cycle-accurate, so what its packets say of cycles is not a
    /// count (see [`Converter::ignore_cycles`]).
    pub cycles_ignored: u64,
    /// The offsets of the first of them (at most [`FIRST_OFFSETS`]).
    pub cycles_ignored_at: Vec<u64>,
    /// Exceptions.
    pub exceptions: u64,
    /// Gaps (decode errors).
    pub gaps: u64,
    /// Trace-on events.
    pub trace_on: u64,
    /// Memory-not-accessible events per address.
    pub nacc: BTreeMap<u32, u64>,
    /// Where the trace contradicted its memory image or itself.
    pub mismatches: Mismatches,
}

impl IdReport {
    /// Count one event.
    #[inline]
    pub fn count(&mut self, e: &Event) {
        if let EventKind::Range(x) = &e.kind {
            count_range(self, x);
            return;
        }
        self.events += 1;
        match e.kind {
            EventKind::Exception { .. } => self.exceptions += 1,
            EventKind::Gap(_) => {
                self.gaps += 1;
                self.mismatches.count(e);
            }
            EventKind::Inconsistent { .. } => self.mismatches.count(e),
            EventKind::TraceOn { cycles, .. } => {
                self.trace_on += 1;
                self.cycles += cycles.map_or(0, u64::from);
            }
            EventKind::AddrNacc { addr } => *self.nacc.entry(addr).or_insert(0) += 1,
            _ => self.cycles += crate::clock::cycles_of(&e.kind),
        }
    }

    /// Count one event of a source that is not cycle-accurate: as
    /// [`count`](Self::count), its cycles ignored (and counted as such).
    pub fn count_ignoring_cycles(&mut self, e: &Event) {
        if carries_cycles(&e.kind) {
            self.cycles_ignored += 1;
            if self.cycles_ignored_at.len() < FIRST_OFFSETS {
                self.cycles_ignored_at.push(e.offset);
            }
            let mut plain = *e;
            strip_cycles(&mut plain.kind);
            self.count(&plain);
        } else {
            self.count(e);
        }
    }

    /// Add another's counters.
    pub fn add(&mut self, other: &IdReport) {
        self.events += other.events;
        self.ranges += other.ranges;
        self.instructions += other.instructions;
        self.cycles += other.cycles;
        self.cycles_ignored += other.cycles_ignored;
        for &at in &other.cycles_ignored_at {
            if self.cycles_ignored_at.len() < FIRST_OFFSETS {
                self.cycles_ignored_at.push(at);
            }
        }
        self.exceptions += other.exceptions;
        self.gaps += other.gaps;
        self.trace_on += other.trace_on;
        self.mismatches.add(&other.mismatches);
        for (a, n) in &other.nacc {
            *self.nacc.entry(*a).or_insert(0) += n;
        }
    }

    /// The `n` addresses reported not accessible most often, most first.
    #[must_use]
    pub fn top_nacc(&self, n: usize) -> Vec<(u32, u64)> {
        let mut v: Vec<(u32, u64)> = self.nacc.iter().map(|(a, c)| (*a, *c)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

/// What a conversion did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConvertReport {
    /// The clock used.
    pub clock: ClockInfo,
    /// Per capture: its path and size in bytes.
    pub captures: Vec<(PathBuf, u64)>,
    /// Per trace ID.
    pub ids: BTreeMap<u8, IdReport>,
    /// Call-stack reconstruction counters.
    pub stacks: StackStats,
    /// What the window handed on and left out, when there was one
    /// ([`Converter::set_window`]).
    pub window: Option<crate::window::WindowCounts>,
    /// Whether call stacks were built: not when every sink takes plain
    /// events only (LCOV, saved events), which need neither stacks nor a
    /// clock.
    pub stacks_built: bool,
    /// Per configured trace ID: the packet parser's counters (bytes,
    /// packets, bytes skipped, errors), over every capture.
    pub parsed: BTreeMap<u8, trace_core::demux::SourceStats>,
    /// What the sinks said about their outputs
    /// ([`Sink::notes`](crate::sinks::Sink::notes)), each
    /// line after the sink's name.
    pub notes: Vec<String>,
    /// The RTOS tasks found, and the instructions of every context (see
    /// [`crate::tasks`]).
    pub tasks: crate::tasks::TaskReport,
}

/// Feeds events to sinks with their shared context.
pub struct Converter<'a> {
    symbols: &'a Symbolizer,
    stacks: CallStacks,
    clocks: Clocks,
    sinks: Vec<Box<dyn DynSink + 'a>>,
    /// What each sink (same index) is given: its interest, until it
    /// stops ([`Interest::Nothing`]).
    interests: Vec<Interest>,
    /// Some sink is given every event.
    every: bool,
    /// Quiet ranges are summed ([`Interest::Weights`]): some sink takes
    /// them so and none takes every event.
    summing: bool,
    /// The quiet ranges summed and not handed on yet.
    quiet: Option<Quiet>,
    /// Some sink is given batches of events ([`Interest::EventsOnly`]).
    batching: bool,
    /// Every sink stopped ([`Flow::Stop`]) and some sink was added.
    stopped: bool,
    /// Sinks that just said [`Flow::Stop`].
    stops: Vec<usize>,
    /// Events for those sinks, the first `batched` not yet handed over
    /// (a fixed array: filled in place, with no capacity to check).
    batch: Box<[Event; BATCH]>,
    batched: usize,
    /// How ranges across inlined code are cut.
    splits: crate::callstack::split::SplitCache,
    /// The pieces of the latest cut range (kept for its capacity).
    pieces: Vec<Event>,
    info: RunInfo,
    report: ConvertReport,
    began: bool,
    /// Per trace ID: its counters and the offset of its last event.
    ids: Box<[Lane; 256]>,
    /// The events handed on, when only some are
    /// ([`set_window`](Self::set_window)).
    window: Option<crate::window::Window>,
    /// How [`convert_input`] spreads the decode over threads.
    decode: DecodeOptions,
    /// Per trace ID: its cycle counts are ignored
    /// ([`ignore_cycles`](Self::ignore_cycles)); and whether any is.
    no_cycles: Box<[bool; 256]>,
    any_no_cycles: bool,
    /// The task stage (see [`crate::tasks`]).
    tracker: crate::tasks::Tracker,
    /// The latest task switch, until an event of the task it made run is
    /// handed on.
    switch_note: Option<crate::tasks::Switch>,
    /// The task stage watches some source's events (see
    /// [`crate::tasks::Tracker::watching`]).
    watching: bool,
}

/// Quiet ranges of one thread summed ([`Interest::Weights`]): the first
/// with the count of all, and their times and cycles.
#[derive(Debug, Clone, Copy)]
struct Quiet {
    event: Event,
    thread: ThreadKey,
    span: crate::clock::Span,
}

/// What a [`Converter`] keeps of one trace ID: its counters (those without
/// events are left out of the report) and the offset of its last event,
/// side by side (both are written for every event).
#[derive(Default)]
struct Lane {
    report: IdReport,
    last_offset: u64,
}

impl Lane {
    /// Count any event.
    #[inline]
    fn event(&mut self, e: &Event) {
        self.report.count(e);
        self.last_offset = e.offset;
    }

    /// Count a range event at `offset`.
    #[inline(always)]
    fn range(&mut self, offset: u64, r: &Range) {
        count_range(&mut self.report, r);
        self.last_offset = offset;
    }
}

impl std::fmt::Debug for Converter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Converter")
            .field(
                "sinks",
                &self.sinks.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .field("clock", &self.info.clock)
            .finish_non_exhaustive()
    }
}

impl<'a> Converter<'a> {
    /// Decode the captures of [`convert_input`] as `options` say (by
    /// default, [`DecodeOptions::default`]).
    #[must_use]
    pub fn with_decode_options(mut self, options: DecodeOptions) -> Converter<'a> {
        self.decode = options;
        self
    }

    /// A converter on `clock`, stacks bounded at `max_depth`, no sinks yet.
    #[must_use]
    pub fn new(symbols: &'a Symbolizer, clock: ClockInfo, max_depth: usize) -> Converter<'a> {
        let mut conv = Converter {
            symbols,
            stacks: CallStacks::new(max_depth),
            clocks: Clocks::new(clock),
            sinks: Vec::new(),
            interests: Vec::new(),
            every: false,
            summing: false,
            quiet: None,
            batching: false,
            stopped: false,
            stops: Vec::new(),
            batch: Box::new(
                [Event {
                    offset: 0,
                    id: 0,
                    kind: EventKind::NoSync,
                }; BATCH],
            ),
            batched: 0,
            splits: crate::callstack::split::SplitCache::default(),
            pieces: Vec::new(),
            info: RunInfo {
                clock,
                ..RunInfo::default()
            },
            report: ConvertReport {
                clock,
                stacks_built: true,
                ..ConvertReport::default()
            },
            began: false,
            ids: Box::new(std::array::from_fn(|_| Lane::default())),
            window: None,
            decode: DecodeOptions::default(),
            no_cycles: Box::new([false; 256]),
            any_no_cycles: false,
            tracker: crate::tasks::Tracker::new(&crate::tasks::TaskOptions::default(), symbols),
            switch_note: None,
            watching: false,
        };
        // On a timestamp axis resolved by cycles, a core's events before
        // its first timestamp have no place: a window of everything
        // leaves them out.
        if clock.by_cycles() {
            if let Ok(w) = crate::window::WindowSpec::default().on(&clock) {
                conv.set_window(w);
            }
        }
        conv
    }

    /// Ignore what trace ID `id`'s events say of cycles (before the first
    /// event): its source is not configured cycle-accurate (ETMCR bit 12
    /// clear), so cycle-count packets in its trace (as damaged trace or a
    /// wrong configuration gives) are no count of cycles. Its ranges,
    /// trace-ons, context changes and timestamps are handed on without
    /// cycles and its cycle counts as counts of 0; the report counts them
    /// in [`IdReport::cycles_ignored`], with the first offsets.
    pub fn ignore_cycles(&mut self, id: u8) {
        self.no_cycles[usize::from(id)] = true;
        self.any_no_cycles = true;
    }

    /// Ignore the cycles of every source of `input` that is not
    /// configured cycle-accurate ([`ignore_cycles`](Self::ignore_cycles)).
    pub fn ignore_cycles_of(&mut self, input: &Input) {
        for c in &input.captures {
            for s in &c.sources {
                if s.regs.etmcr & ETMCR_CYCLE_ACCURATE == 0 {
                    self.ignore_cycles(s.id);
                }
            }
            if let Some((_, regs)) = c.any_id {
                if regs.etmcr & ETMCR_CYCLE_ACCURATE == 0 {
                    for id in 0..=255u8 {
                        if !c.sources.iter().any(|s| s.id == id) {
                            self.ignore_cycles(id);
                        }
                    }
                }
            }
        }
    }

    /// Whether `e` says something of cycles that is to be ignored.
    #[inline(always)]
    fn strips(&self, e: &Event) -> bool {
        self.no_cycles[usize::from(e.id)] && carries_cycles(&e.kind)
    }

    /// [`take`](Self::take) for an event whose cycles are ignored.
    #[cold]
    #[inline(never)]
    fn take_stripped<'m>(
        &mut self,
        e: &Event,
        memory: impl MemoryOf<'m>,
        batch: bool,
    ) -> io::Result<()> {
        let r = &mut self.ids[usize::from(e.id)].report;
        r.cycles_ignored += 1;
        if r.cycles_ignored_at.len() < FIRST_OFFSETS {
            r.cycles_ignored_at.push(e.offset);
        }
        let mut plain = *e;
        strip_cycles(&mut plain.kind);
        self.take_as_is(&plain, memory, batch)
    }

    /// Hand the sinks only the events in `window` (see
    /// [`crate::window`]); before the first event. Every event then goes
    /// through the call stacks and the clock, and no sink's work is done
    /// on the decoding threads.
    pub fn set_window(&mut self, window: crate::window::Window) {
        self.window = Some(window);
        self.given();
        self.report.stacks_built = true;
    }

    /// Add a sink: any [`Sink`](crate::sinks::Sink), boxed.
    pub fn add_sink(&mut self, sink: Box<dyn DynSink + 'a>) {
        let interest = sink.interest();
        self.interests.push(interest);
        self.sinks.push(sink);
        self.given();
        // Stacks are built for a sink that is given them, or for the
        // report when there is no sink at all, or for a window.
        self.report.stacks_built =
            self.interests.iter().any(|i| i.needs_stacks()) || self.window.is_some();
    }

    /// Set what the sinks as a whole are given, from their interests.
    fn given(&mut self) {
        // A window looks at every event.
        let all = self.interests.contains(&Interest::Every);
        let weights = self.interests.contains(&Interest::Weights);
        self.every = all || weights || self.window.is_some();
        self.summing = weights && !all && self.window.is_none();
        self.batching = self.interests.contains(&Interest::EventsOnly);
    }

    /// Sink `i` needs no more events: none are handed to it from now on;
    /// once every sink has stopped, so does the conversion.
    #[cold]
    fn stop(&mut self, i: usize) {
        if let Some(interest) = self.interests.get_mut(i) {
            *interest = Interest::Nothing;
        }
        self.given();
        self.stopped = self.interests.iter().all(|i| *i == Interest::Nothing);
    }

    /// Whether every sink has stopped ([`Flow::Stop`]): the events after
    /// those handed so far are not needed.
    #[must_use]
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Number of sinks.
    #[must_use]
    pub fn sink_count(&self) -> usize {
        self.sinks.len()
    }

    /// Set what sinks are told about the run (before the first event).
    pub fn set_info(&mut self, input: String, sources: Vec<SourceName>) {
        self.info.input = input;
        self.info.sources = sources;
    }

    /// Name the Linux threads of the run for the sinks (before the first
    /// event): see [`RunInfo::tasks`].
    pub fn set_tasks(&mut self, tasks: Vec<Task>) {
        self.info.tasks = tasks;
    }

    /// Say which Linux thread the events fed from now on belong to
    /// (`None`: unknown, or not a per-thread recording): each thread gets
    /// stacks and tracks of its own.
    pub fn set_task(&mut self, tid: Option<u32>) {
        self.stacks.set_task(tid);
    }

    /// Record the packet parser's counters of a decoded capture.
    pub fn add_parsed(&mut self, parsed: &[(u8, trace_core::demux::SourceStats)]) {
        for (id, st) in parsed {
            let t = self.report.parsed.entry(*id).or_default();
            t.bytes += st.bytes;
            t.in_packets += st.in_packets;
            t.packets += st.packets;
            t.skipped += st.skipped;
            t.errors += st.errors;
        }
    }

    /// Record a capture file and its size for the report.
    pub fn add_capture(&mut self, path: PathBuf, bytes: u64) {
        self.report.captures.push((path, bytes));
    }

    /// The instructions counted so far in the run, every source's.
    #[must_use]
    pub fn instructions_so_far(&self) -> u64 {
        self.ids.iter().map(|l| l.report.instructions).sum()
    }

    /// Call every sink's `begin` (done by the first event otherwise).
    ///
    /// # Errors
    ///
    /// A sink's output error.
    pub fn begin(&mut self) -> io::Result<()> {
        if self.began {
            return Ok(());
        }
        self.began = true;
        for s in &mut self.sinks {
            s.begin(&self.info).map_err(|e| annotate(s.name(), e))?;
        }
        Ok(())
    }

    /// Feed one event (from a source whose memory image is `memory`).
    ///
    /// # Errors
    ///
    /// A sink's output error, naming the sink, trace ID and offset.
    #[inline]
    pub fn event(&mut self, e: &Event, memory: Option<&dyn MemoryImage>) -> io::Result<()> {
        self.take(e, memory, true)
    }

    /// Feed events in order, all from sources whose memory image is
    /// `memory`: as [`event`](Self::event) for each, faster. The sinks
    /// that take batches are handed the slice itself, and a decoder that
    /// writes its events into a buffer first has its stores done before
    /// they are read (a copy of an event just written field by field
    /// waits for the stores).
    ///
    /// # Errors
    ///
    /// A sink's output error, naming the sink, trace ID and offset.
    pub fn events(&mut self, events: &[Event], memory: Option<&dyn MemoryImage>) -> io::Result<()> {
        self.take_slice(events, memory)
    }

    /// [`event`](Self::event), the event handed to the sinks that take
    /// batches only if `batch` (not when a part has seen it). The memory
    /// image is looked up only for the events that need it.
    #[inline(always)]
    fn take<'m>(&mut self, e: &Event, memory: impl MemoryOf<'m>, batch: bool) -> io::Result<()> {
        if self.any_no_cycles && self.strips(e) {
            return self.take_stripped(e, memory, batch);
        }
        self.take_as_is(e, memory, batch)
    }

    /// [`take`](Self::take) once the event's cycles are as they count.
    #[inline(always)]
    fn take_as_is<'m>(
        &mut self,
        e: &Event,
        memory: impl MemoryOf<'m>,
        batch: bool,
    ) -> io::Result<()> {
        if !self.report.stacks_built {
            // Only sinks of plain events: no stacks, no clock.
            if !self.began {
                self.begin()?;
            }
            self.ids[usize::from(e.id)].event(e);
            return self.batch_if(batch, e);
        }
        if self.watching && self.tracker.watching(e.id) {
            // The task stage holds this source's events back, or waits to
            // see where an exception return goes.
            self.flush_quiet()?;
            self.ids[usize::from(e.id)].event(e);
            self.watched(e, memory.of(e.id))?;
            return self.batch_if(batch, e);
        }
        if let EventKind::Range(r) = &e.kind {
            // The common case, a range that changes no frame; its thread
            // exists, so the run has begun.
            if self.stacks.ran_quietly(e.id, r) {
                self.ids[usize::from(e.id)].range(e.offset, r);
                if self.every {
                    let span = self.clocks.advance_range(e.id, r);
                    let thread = self.stacks.current(e.id);
                    if self.summing && self.switch_note.is_none() {
                        self.sum_quiet(e, r, thread, span)?;
                    } else {
                        self.dispatch(e, thread, span, memory.of(e.id), false)?;
                    }
                } else {
                    self.clocks.step_range(e.id, r);
                }
                return self.batch_if(batch, e);
            }
            // The frames change: the quiet ranges before go first.
            self.flush_quiet()?;
            // Without inlined scopes the short path turned it down for a
            // change of frames.
            if self.symbols.has_inline_scopes() && self.inline_range(e, r, memory.of(e.id))? {
                return self.batch_if(batch, e);
            }
        }
        // Any other event may change frames too (a range that does has
        // flushed above; flushing again is a test of `None`).
        self.flush_quiet()?;
        self.any_event(e, memory.of(e.id))?;
        self.batch_if(batch, e)
    }

    /// A range whose flow changes no real frame (see
    /// [`CallStacks::goes_on`]) but that runs where other inlined frames
    /// hold: each of its pieces (see `callstack::split`) changes only the
    /// inlined frames on top, without [`any_event`](Self::any_event)'s
    /// full update ([`CallStacks::inline_range`]). False for any other
    /// event, left unseen.
    #[inline(never)]
    fn inline_range(
        &mut self,
        e: &Event,
        r: &Range,
        memory: Option<&dyn MemoryImage>,
    ) -> io::Result<bool> {
        if !self.stacks.goes_on(e.id, r.start) {
            return Ok(false);
        }
        self.ids[usize::from(e.id)].range(e.offset, r);
        self.each_piece(e, memory, Self::inline_piece)?;
        Ok(true)
    }

    /// One piece of [`inline_range`](Self::inline_range).
    #[inline]
    fn inline_piece(&mut self, p: &Event, memory: Option<&dyn MemoryImage>) -> io::Result<()> {
        let EventKind::Range(piece) = &p.kind else {
            return Ok(());
        };
        let span = self.clocks.advance_range(p.id, piece);
        let thread = match self
            .stacks
            .inline_range(p.id, piece, span.start, self.symbols)
        {
            Some(k) => k,
            None => self.stacks.apply(p, span.start, self.symbols),
        };
        let changed = self.stacks.changed();
        if self.every || changed {
            self.dispatch(p, thread, span, memory, changed)?;
        }
        Ok(())
    }

    /// `each` on every piece of `e` in turn (see `callstack::split`),
    /// made in a buffer kept from event to event.
    #[inline]
    fn each_piece(
        &mut self,
        e: &Event,
        memory: Option<&dyn MemoryImage>,
        mut each: impl FnMut(&mut Self, &Event, Option<&dyn MemoryImage>) -> io::Result<()>,
    ) -> io::Result<()> {
        if !self.symbols.has_inline_scopes() {
            // Nothing is cut.
            return each(self, e, memory);
        }
        let mut pieces = std::mem::take(&mut self.pieces);
        let done = if self
            .splits
            .pieces_into(e, memory, self.symbols, &mut pieces)
        {
            pieces.iter().try_for_each(|p| each(self, p, memory))
        } else {
            each(self, e, memory)
        };
        self.pieces = pieces;
        done
    }

    /// [`take`](Self::take) for each of `events` in turn, then hand them
    /// to the sinks that take batches as they are.
    #[inline(always)]
    pub(crate) fn take_slice<'m>(
        &mut self,
        events: &[Event],
        memory: impl MemoryOf<'m>,
    ) -> io::Result<()> {
        if self.window.is_some() {
            // The window hands on the events it keeps one by one.
            return self.take_each(events.iter(), memory, true);
        }
        if self.batching && self.any_no_cycles && events.iter().any(|e| self.strips(e)) {
            // The sinks that take batches are handed the events without
            // the cycles, one by one (without such sinks, `take` strips
            // each event as it comes).
            return self.take_each(events.iter(), memory, true);
        }
        self.take_each(events.iter(), memory, false)?;
        if self.batching {
            self.flush()?;
            hand_batch(
                &mut self.sinks,
                &self.interests,
                events,
                &mut self.stops,
                false,
            )?;
            if !self.stops.is_empty() {
                self.apply_stops()?;
            }
        }
        Ok(())
    }

    /// [`take`](Self::take) for each of `events` in turn, each batched if
    /// `batch`: one loop, with the converter's state at hand from event
    /// to event.
    #[inline(always)]
    pub(crate) fn take_each<'e, 'm>(
        &mut self,
        events: impl Iterator<Item = &'e Event>,
        memory: impl MemoryOf<'m>,
        batch: bool,
    ) -> io::Result<()> {
        for e in events {
            self.take(e, memory, batch)?;
        }
        Ok(())
    }

    /// [`batch`](Self::batch) `e` if `batch`.
    #[inline(always)]
    fn batch_if(&mut self, batch: bool, e: &Event) -> io::Result<()> {
        // With a window, the events it keeps are batched as handed on;
        // the sinks it does not apply to are handed every event.
        if self.window.is_some() {
            return self.unwindowed(e);
        }
        if batch {
            self.batch(e)
        } else {
            Ok(())
        }
    }

    /// Keep `e` for the sinks that take batches. Done after the event's
    /// other work: the decoder has only just written `e` field by field,
    /// and copying it whole at once would stall on those stores.
    #[inline(always)]
    fn batch(&mut self, e: &Event) -> io::Result<()> {
        if self.batching {
            if let Some(slot) = self.batch.get_mut(self.batched) {
                *slot = *e;
            }
            self.batched += 1;
            if self.batched >= BATCH {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Hand the batched events to the sinks that take batches.
    fn flush(&mut self) -> io::Result<()> {
        let batch = self.batch.get(..self.batched).unwrap_or_default();
        let windowed = self.window.is_some();
        hand_batch(
            &mut self.sinks,
            &self.interests,
            batch,
            &mut self.stops,
            windowed,
        )?;
        self.batched = 0;
        if !self.stops.is_empty() {
            self.apply_stops()?;
        }
        Ok(())
    }

    /// [`event`](Self::event) for any event.
    #[inline(never)]
    fn any_event(&mut self, e: &Event, memory: Option<&dyn MemoryImage>) -> io::Result<()> {
        if !self.began {
            self.begin()?;
        }
        self.ids[usize::from(e.id)].event(e);
        if self.tracker.looks_at(e, &self.stacks) {
            return self.task_step(e, memory);
        }
        self.apply(e, memory)
    }

    /// Apply `e` to the call stacks and hand it on.
    #[inline]
    pub(super) fn apply(&mut self, e: &Event, memory: Option<&dyn MemoryImage>) -> io::Result<()> {
        if matches!(e.kind, EventKind::EndOfTrace) {
            return self.end_of(e, memory);
        }
        // A range across inlined code goes on as one piece per chain of
        // inlined functions (see `callstack::split`).
        self.each_piece(e, memory, Self::any_piece)
    }

    /// One piece of [`any_event`](Self::any_event).
    #[inline]
    fn any_piece(&mut self, p: &Event, memory: Option<&dyn MemoryImage>) -> io::Result<()> {
        let span = self.clocks.advance(p);
        let thread = self.stacks.apply(p, span.start, self.symbols);
        let changed = self.stacks.changed();
        if self.every || changed || is_instant(p) {
            self.dispatch(p, thread, span, memory, changed)?;
        }
        Ok(())
    }

    fn end_of(&mut self, e: &Event, memory: Option<&dyn MemoryImage>) -> io::Result<()> {
        let mut threads = self.stacks.open_threads(e.id);
        let current = self.stacks.current(e.id);
        if !threads.contains(&current) {
            threads.push(current);
        }
        let now = self.clocks.now(e.id);
        let span = crate::clock::Span {
            start: now,
            end: now,
            cycles: 0,
        };
        for t in threads {
            self.stacks.close_all(t);
            let changed = self.stacks.changed();
            self.dispatch(e, t, span, memory, changed)?;
        }
        Ok(())
    }

    /// Add the quiet range `r` of `e` (of `thread`, at `span`) to the sum
    /// of those before it ([`Interest::Weights`]); a range of another
    /// thread, or one whose count no longer fits, hands the sum on and
    /// starts another.
    #[inline(always)]
    fn sum_quiet(
        &mut self,
        e: &Event,
        r: &Range,
        thread: ThreadKey,
        span: crate::clock::Span,
    ) -> io::Result<()> {
        if let Some(q) = &mut self.quiet {
            // The thread names the trace ID too.
            if q.thread == thread {
                if let EventKind::Range(sum) = &mut q.event.kind {
                    if let Some(count) = sum.count.checked_add(r.count) {
                        sum.count = count;
                        q.span.end = span.end;
                        q.span.cycles = q.span.cycles.saturating_add(span.cycles);
                        return Ok(());
                    }
                }
            }
        }
        self.flush_quiet()?;
        self.quiet = Some(Quiet {
            event: *e,
            thread,
            span,
        });
        Ok(())
    }

    /// Hand on the quiet ranges summed so far, if any.
    #[inline]
    fn flush_quiet(&mut self) -> io::Result<()> {
        match self.quiet.take() {
            None => Ok(()),
            Some(q) => self.dispatch_plain(&q.event, q.thread, q.span, None, false),
        }
    }

    #[inline]
    fn dispatch(
        &mut self,
        e: &Event,
        thread: ThreadKey,
        span: crate::clock::Span,
        memory: Option<&dyn MemoryImage>,
        changed: bool,
    ) -> io::Result<()> {
        self.flush_quiet()?;
        if self.window.is_some() {
            return self.dispatch_windowed(e, thread, span, memory, changed);
        }
        self.dispatch_plain(e, thread, span, memory, changed)
    }

    /// Hand `e` of `thread` to the sinks that want it, with the stack
    /// changes the call stacks just made.
    fn dispatch_plain(
        &mut self,
        e: &Event,
        thread: ThreadKey,
        span: crate::clock::Span,
        memory: Option<&dyn MemoryImage>,
        changed: bool,
    ) -> io::Result<()> {
        let switch = self.switch_note.take_if(|s| s.to == thread);
        // A task switch is handed to every sink of stack changes.
        let changed = changed || switch.is_some();
        let ctx = EventCtx {
            thread,
            time: span.start,
            end: span.end,
            cycles: span.cycles,
            closed: self.stacks.closed(),
            opened: self.stacks.opened(),
            stack: self.stacks.stack(thread),
            names: self.stacks.names(),
            symbols: self.symbols,
            memory,
            clock: self.clocks.info(),
            tasks: self.tracker.tasks(),
            switch: switch.as_ref(),
        };
        if let ([s], [interest]) = (self.sinks.as_mut_slice(), self.interests.as_slice()) {
            // One sink, the common case: no loop.
            if !interest.wants(e, changed) {
                return Ok(());
            }
            return match s.event(e, &ctx) {
                Ok(Flow::Continue) => Ok(()),
                Ok(Flow::Stop) => {
                    self.stops.push(0);
                    self.apply_stops()
                }
                Err(err) => Err(event_error(s.name(), e, &err)),
            };
        }
        let mut stop = false;
        for (i, (s, interest)) in self.sinks.iter_mut().zip(&self.interests).enumerate() {
            if interest.wants(e, changed) {
                match s.event(e, &ctx) {
                    Ok(Flow::Continue) => {}
                    Ok(Flow::Stop) => {
                        self.stops.push(i);
                        stop = true;
                    }
                    Err(err) => return Err(event_error(s.name(), e, &err)),
                }
            }
        }
        if stop {
            return self.apply_stops();
        }
        Ok(())
    }

    /// [`stop`](Self::stop) the sinks that said so; then, once every sink
    /// has stopped, the error that ends the decode ([`Stopped`]).
    #[cold]
    #[inline(never)]
    fn apply_stops(&mut self) -> io::Result<()> {
        for i in std::mem::take(&mut self.stops) {
            self.stop(i);
        }
        if self.stopped {
            return Err(io::Error::other(Stopped));
        }
        Ok(())
    }

    /// Close what is still open, finish every sink (committing their
    /// files) and return the report.
    ///
    /// # Errors
    ///
    /// A sink's output error.
    pub fn finish(mut self) -> io::Result<ConvertReport> {
        self.begin()?;
        go_on(self.flush_quiet())?;
        go_on(self.release_held(None))?;
        go_on(self.flush())?;
        for t in self.stacks.all_open_threads() {
            let e = Event {
                offset: self.ids[usize::from(t.id)].last_offset,
                id: t.id,
                kind: EventKind::EndOfTrace,
            };
            let now = self.clocks.now(t.id);
            self.stacks.close_all(t);
            let span = crate::clock::Span {
                start: now,
                end: now,
                cycles: 0,
            };
            let changed = self.stacks.changed();
            go_on(self.dispatch(&e, t, span, None, changed))?;
        }
        self.info.rtos = self.tracker.tasks().to_vec();
        for s in &mut self.sinks {
            s.finish(&self.info).map_err(|e| annotate(s.name(), e))?;
            let name = s.name();
            self.report
                .notes
                .extend(s.notes().into_iter().map(|n| format!("{name}: {n}")));
        }
        self.report.stacks = self.stacks.stats();
        self.report.tasks = self.tracker.report(self.stacks.instructions());
        self.report.window = self.window.as_ref().map(crate::window::Window::counts);
        self.report.ids = (0u8..=255)
            .zip(self.ids.iter_mut().map(|l| std::mem::take(&mut l.report)))
            .filter(|(_, r)| r.events > 0)
            .collect();
        Ok(self.report)
    }
}

/// The memory image of an event's source, for the events that need it.
pub(crate) trait MemoryOf<'m>: Copy {
    /// The image of trace ID `id`.
    fn of(self, id: u8) -> Option<&'m dyn MemoryImage>;
}

/// One image for every source (or none).
impl<'m> MemoryOf<'m> for Option<&'m dyn MemoryImage> {
    #[inline(always)]
    fn of(self, _id: u8) -> Option<&'m dyn MemoryImage> {
        self
    }
}

/// An image per trace ID, as plain references: a reference made from an
/// `Arc<dyn _>` reads the type's alignment first.
#[derive(Clone, Copy)]
pub(crate) struct ById<'m>(pub(crate) &'m [&'m dyn MemoryImage; 256]);

impl<'m> MemoryOf<'m> for ById<'m> {
    #[inline(always)]
    fn of(self, id: u8) -> Option<&'m dyn MemoryImage> {
        Some(self.0[usize::from(id)])
    }
}

/// How many offsets of ignored cycle counts a report keeps.
pub const FIRST_OFFSETS: usize = 3;

/// Whether an event says anything of cycles (a cycle count, or a count
/// carried by a range, context change, trace-on or timestamp).
#[must_use]
pub fn carries_cycles(kind: &EventKind) -> bool {
    match kind {
        EventKind::Range(r) => r.cycles.is_some(),
        EventKind::CycleCount(_) => true,
        EventKind::Context(c) => c.cycles.is_some(),
        EventKind::TraceOn { cycles, .. } | EventKind::Timestamp { cycles, .. } => cycles.is_some(),
        _ => false,
    }
}

/// Remove what `kind` says of cycles (a cycle count becomes a count of 0).
fn strip_cycles(kind: &mut EventKind) {
    match kind {
        EventKind::Range(r) => r.cycles = None,
        EventKind::CycleCount(n) => *n = 0,
        EventKind::Context(c) => c.cycles = None,
        EventKind::TraceOn { cycles, .. } | EventKind::Timestamp { cycles, .. } => *cycles = None,
        _ => {}
    }
}

/// Count a range event in its source's counters.
#[inline]
fn count_range(c: &mut IdReport, r: &Range) {
    c.events += 1;
    c.ranges += 1;
    c.instructions += u64::from(r.count);
    c.cycles += r.cycles.map_or(0, u64::from);
}

/// Hand `batch` to the sinks (`interests`: of each) that take batches
/// (with `windowed`, the events a window kept: only to the sinks it
/// applies to); those that stop are noted in `stops`.
fn hand_batch(
    sinks: &mut [Box<dyn DynSink + '_>],
    interests: &[Interest],
    batch: &[Event],
    stops: &mut Vec<usize>,
    windowed: bool,
) -> io::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    for (i, (s, interest)) in sinks.iter_mut().zip(interests).enumerate() {
        if *interest != Interest::EventsOnly || (windowed && !s.windowed()) {
            continue;
        }
        match s.events(batch) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Stop) => stops.push(i),
            Err(err) => {
                let first = batch.first().map_or(0, |e| e.offset);
                return Err(annotate(
                    s.name(),
                    io::Error::new(err.kind(), format!("{err} (events from offset {first})")),
                ));
            }
        }
    }
    Ok(())
}

/// The error that ends a decode whose sinks have all stopped
/// ([`Flow::Stop`]); the conversion then finishes as usual.
#[derive(Debug, thiserror::Error)]
#[error("every output stopped")]
struct Stopped;

/// Whether `e` is the error of a conversion that stopped.
fn is_stop(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Stopped>())
}

/// `r`, a conversion that stopped being no error.
fn go_on(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if is_stop(&e) => Ok(()),
        r => r,
    }
}

/// A sink's error on event `e`, naming the sink, trace ID and offset.
#[cold]
fn event_error(sink: &str, e: &Event, err: &io::Error) -> io::Error {
    annotate(
        sink,
        io::Error::new(
            err.kind(),
            format!("{err} (trace ID {:#04x}, offset {})", e.id, e.offset),
        ),
    )
}

fn annotate(sink: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{sink} output: {e}"))
}

/// The sources of `input` as the outputs name them, each with its core
/// ([`core_label`]).
#[must_use]
pub fn source_names(input: &Input) -> Vec<SourceName> {
    input
        .captures
        .iter()
        .flat_map(|c| &c.sources)
        .map(|s| {
            let core = core_label(input, s);
            SourceName {
                id: s.id,
                protocol: s.protocol.name().to_owned(),
                profile: crate::profile::Profile::of_source(s.protocol, core.as_deref()),
                core,
            }
        })
        .collect()
}

/// The Linux threads whose trace the captures of `input` are, each once.
#[must_use]
pub fn input_tasks(input: &Input) -> Vec<Task> {
    let mut tasks: Vec<Task> = input
        .captures
        .iter()
        .filter_map(|c| c.task.clone())
        .collect();
    tasks.sort();
    tasks.dedup();
    tasks
}

/// The core `source` traces, named and typed as the snapshot's device
/// file says (`cpu_0 Cortex-A7`; the name alone when it holds the type,
/// as `Cortex-A15_0`), else as the input names it (`cpu3` of
/// a `perf.data` recording), else `None`.
#[must_use]
pub fn core_label(input: &Input, source: &SourceSpec) -> Option<String> {
    match input
        .snapshot
        .as_ref()
        .and_then(|s| s.core_of(&source.name))
    {
        // A core of unknown type (a perf.data recording's, one per CPU
        // and process) is named as the source names it.
        Some(core) if core.kind.is_empty() => source.core.clone(),
        // `Cortex-A15_0` says its type already.
        Some(core) if core.name.contains(&core.kind) => Some(core.name.clone()),
        Some(core) => Some(format!("{} {}", core.name, core.kind)),
        None => source.core.clone(),
    }
}

/// Decode every capture of `input` once (or read its saved events),
/// feeding `conv`; then finish it. The memory images are loaded first,
/// with `extra` added to each ([`convert_loaded`] takes them loaded).
/// `progress` is told how far decoding has got in each capture.
///
/// # Errors
///
/// [`ConvertError`] when memory cannot be loaded, a capture cannot be
/// read, or an output fails (the message names the capture, trace ID and
/// offset).
pub fn convert_input(
    input: &Input,
    extra: &ExtraMemory,
    conv: Converter<'_>,
    progress: &mut impl Progress,
) -> Result<ConvertReport, ConvertError> {
    let images = input.images(extra)?;
    convert_loaded(input, &images, conv, progress)
}

/// [`convert_input`] with the memory images of `input` loaded
/// ([`Input::images`]): the same images the outputs that read code are
/// given.
///
/// # Errors
///
/// As [`convert_input`].
pub fn convert_loaded(
    input: &Input,
    images: &Images,
    mut conv: Converter<'_>,
    progress: &mut impl Progress,
) -> Result<ConvertReport, ConvertError> {
    if let Some(saved) = &input.saved {
        return convert_saved(saved, conv, images.other());
    }
    conv.ignore_cycles_of(input);
    let sources = source_names(input);
    let name = input
        .captures
        .first()
        .map(|c| c.path.display().to_string())
        .unwrap_or_default();
    conv.set_info(name, sources);
    conv.set_tasks(input_tasks(input));
    conv.begin().map_err(ConvertError::Output)?;
    for capture in &input.captures {
        conv.set_task(capture.task.as_ref().map(|t| t.tid));
        let size = capture.size();
        conv.add_capture(capture.path.clone(), size);
        // Per trace ID, looked up only for the events that need it.
        let by_id: Box<[&dyn MemoryImage; 256]> = Box::new(std::array::from_fn(|id| {
            capture
                .sources
                .iter()
                .rev()
                .find(|s| usize::from(s.id) == id)
                .and_then(|s| images.get(&s.name))
                .map_or(&**images.other(), |m| &**m)
        }));
        let by_id = ById(&by_id);
        progress.start(&capture.path, size);
        let memory = |name: &str| images.of(name);
        let mut decoder = dec::decoder(capture, memory)
            .map_err(|source| ConvertError::Read {
                path: capture.path.clone(),
                source,
            })?
            .options(conv.decode)
            // No output needs one event per ETMv3 instruction.
            .block_ranges(true);
        if let Some(parts) = conv.parts() {
            decoder = decoder.parts(parts);
        }
        // The converter counts the events for its report itself.
        let summary = dec::run(
            capture,
            &mut decoder.build(),
            &mut Feed {
                conv: &mut conv,
                memory: by_id,
                progress: &mut *progress,
            },
        );
        // The task stage decides what it still holds of this capture.
        let summary = summary.and_then(|s| {
            go_on(conv.release_held(by_id))
                .map(|()| s)
                .map_err(ReadError::Output)
        });
        match summary {
            Ok(summary) => {
                progress.done();
                if capture.stream.is_some() {
                    // A stream's size is what arrived.
                    if let Some(c) = conv.report.captures.last_mut() {
                        c.1 = summary.bytes;
                    }
                }
                conv.add_parsed(&summary.parsed);
            }
            // Every sink stopped: the rest of the input is not needed.
            Err(ReadError::Output(e)) if is_stop(&e) => {
                progress.done();
                break;
            }
            Err(source) => {
                return Err(ConvertError::Read {
                    path: capture.path.clone(),
                    source,
                })
            }
        }
    }
    conv.finish().map_err(ConvertError::Output)
}

/// Feed the events of `saved` to `conv` (the code they ran read from
/// `memory`), in slices as a decode hands them on; then finish it.
fn convert_saved(
    saved: &SavedEvents,
    mut conv: Converter<'_>,
    memory: &Arc<dyn MemoryImage>,
) -> Result<ConvertReport, ConvertError> {
    let header = &saved.header;
    conv.set_info(
        header.input.clone(),
        header
            .sources
            .iter()
            .map(|s| SourceName {
                id: s.trace_id,
                protocol: s.protocol.name().to_owned(),
                core: s.core.clone(),
                profile: crate::profile::Profile::of_source(s.protocol, s.core.as_deref()),
            })
            .collect(),
    );
    conv.add_capture(saved.path.clone(), saved.size);
    conv.begin().map_err(ConvertError::Output)?;
    let memory = Some(&**memory);
    let mut held = Vec::with_capacity(SLICE);
    for e in saved.events()? {
        held.push(e.map_err(|e| InputError::Saved {
            path: saved.path.clone(),
            reason: e.to_string(),
        })?);
        if held.len() >= SLICE {
            go_on(conv.events(&held, memory)).map_err(ConvertError::Output)?;
            held.clear();
            if conv.stopped() {
                break;
            }
        }
    }
    if !conv.stopped() {
        go_on(conv.events(&held, memory)).map_err(ConvertError::Output)?;
    }
    go_on(conv.release_held(memory)).map_err(ConvertError::Output)?;
    conv.finish().map_err(ConvertError::Output)
}

struct Feed<'c, 'a, 'm, P> {
    conv: &'c mut Converter<'a>,
    /// The memory image of each trace ID.
    memory: ById<'m>,
    progress: &'c mut P,
}

impl<P: Progress> Consumer for Feed<'_, '_, '_, P> {
    // The converter counts the events for its report itself.
    const COUNTS: bool = false;
    const SLICES: bool = true;

    #[inline(always)]
    fn take(&mut self, d: Delivery<'_>) -> io::Result<()> {
        let part = match d {
            Delivery::Event(e) | Delivery::Folded(e) => {
                self.progress.at(e.offset);
                false
            }
            Delivery::Part { chunk_end, .. } => {
                self.progress.at(chunk_end);
                true
            }
        };
        self.conv.deliver_from(d, self.memory)?;
        if part {
            self.tell_instructions();
        }
        Ok(())
    }

    #[inline(always)]
    fn take_slice(&mut self, events: &[Event]) -> io::Result<()> {
        if let Some(last) = events.last() {
            self.progress.at(last.offset);
        }
        self.conv.take_slice(events, self.memory)?;
        self.tell_instructions();
        Ok(())
    }

    #[inline(always)]
    fn take_run(&mut self, run: &[(u64, Event)], folded: bool) -> io::Result<()> {
        if let Some((_, last)) = run.last() {
            self.progress.at(last.offset);
        }
        self.conv
            .take_each(run.iter().map(|(_, e)| e), self.memory, !folded)?;
        self.tell_instructions();
        Ok(())
    }
}

impl<P: Progress> Feed<'_, '_, '_, P> {
    /// Tell the progress the instructions so far, when it wants them.
    #[inline(always)]
    fn tell_instructions(&mut self) {
        if self.progress.wants_instructions() {
            self.progress.instructions(self.conv.instructions_so_far());
        }
    }
}
