//! The Perfetto sink: the call stacks of each thread as nested slices on
//! its own track, exceptions and trace gaps as instants, and the call
//! depth as a counter.
//!
//! Identical instants of a thread while its stack does not change are
//! one instant at the time of the first, with a debug annotation `count`
//! when there are several (see [`super::coalesce`]).
//!
//! The call depth is sampled where it changes, by the slice packet of the
//! change (`extra_counter_values`), not by packets of its own.
//!
//! Tracks: one thread track per core (process 1, thread = trace ID); with
//! context IDs, one process per context ID (2, 3, ... in order of
//! appearance) holding a thread track per core. A thread track is named
//! after the snapshot's core when known (`cpu_0 Cortex-A7 (trace ID 0x10,
//! ETMv3)`, see [`SourceName::thread_name`](super::SourceName::thread_name)). The threads of a
//! per-thread perf.data recording are Linux's: their own process and
//! thread IDs, named by their commands (a thread traced on a second core
//! gets a second track inside its thread's, `thread on core`). The RTOS
//! tasks of a core (see [`crate::tasks`]) are threads of a process named
//! after the core, one track each, named after the task. ITM/DWT sources
//! (see [`super::itm`]): exception trace as slices on the source's
//! thread track, stimulus-port text and overflows as instants, DWT data
//! values on a counter track per comparator inside it. Timestamps
//! are nanoseconds on the run's clock (see [`crate::clock`]).

pub mod writer;

use self::writer::{NameId, PerfettoWriter, TrackId};
use super::coalesce::{Held, Instants};
use super::itm::{is_itm_mark, ItmTimeline, Mark};
use crate::callstack::FuncId;
use crate::clock::ClockInfo;
use crate::fast_map::{FastMap, FastSet};
use crate::input::source::Task;
use crate::sinks::context::core_name;
use crate::sinks::{EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink, ThreadKey};
use std::io;
use trace_core::event::{Event, EventKind};

#[derive(Debug, Clone, Copy)]
struct Tracks {
    slices: TrackId,
    depth: TrackId,
    /// The call depth last written to `depth` (-1: none yet); a change
    /// that leaves the depth as it was (a tail call, another chain of
    /// inlined functions) writes no counter value.
    shown: i64,
}

/// Writes a Perfetto trace.
pub struct PerfettoSink<W: Output> {
    /// Borrowed in place for each event: the writer is large, and moving
    /// it out and back cost a copy per event.
    writer: Option<PerfettoWriter<W>>,
    layout: Layout,
    /// Per function name, its name interned in the writer.
    iids: Vec<Option<NameId>>,
    /// Instants held until their thread's stack changes.
    instants: Instants,
    /// The profile of each source's core, by trace ID.
    profiles: FastMap<u8, crate::profile::Profile>,
    /// What the ITM sources' events draw, each ITM thread's latest time,
    /// and the counter tracks of their DWT comparators.
    itm: ItmTimeline,
    itm_time: FastMap<ThreadKey, u64>,
    counters: FastMap<(ThreadKey, String), TrackId>,
}

/// The processes and tracks declared so far.
#[derive(Default)]
struct Layout {
    /// The thread of the latest event and its tracks (most events are on
    /// the same thread as the one before).
    last: Option<(ThreadKey, Tracks)>,
    pids: FastMap<Option<u32>, i32>,
    tracks: FastMap<ThreadKey, Tracks>,
    names: FastMap<u8, String>,
    /// The Linux threads of the run, by thread ID.
    tasks: FastMap<u32, Task>,
    /// The Linux processes declared.
    task_pids: FastSet<u32>,
    /// The thread track of each Linux thread declared.
    task_tracks: FastMap<u32, TrackId>,
    /// The RTOS tasks seen, by number.
    rtos: FastMap<u32, crate::tasks::Task>,
    /// The process of each core with RTOS tasks, by trace ID.
    core_pids: FastMap<u8, i32>,
}

impl<W: Output> std::fmt::Debug for PerfettoSink<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfettoSink")
            .field("tracks", &self.layout.tracks.len())
            .finish_non_exhaustive()
    }
}

impl<W: Output> PerfettoSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> PerfettoSink<W> {
        PerfettoSink {
            writer: Some(PerfettoWriter::new(out)),
            layout: Layout::default(),
            iids: Vec::new(),
            instants: Instants::default(),
            profiles: FastMap::default(),
            itm: ItmTimeline::default(),
            itm_time: FastMap::default(),
            counters: FastMap::default(),
        }
    }

    /// Write `marks` of `thread` at `time` (ITM events, see
    /// [`super::itm`]).
    fn write_marks(
        &mut self,
        thread: ThreadKey,
        time: u64,
        clock: &ClockInfo,
        marks: &[Mark],
    ) -> io::Result<()> {
        if marks.is_empty() {
            return Ok(());
        }
        if self.instants.holds(thread) {
            let held = self.instants.take(thread);
            self.write_run(thread, held, clock)?;
        }
        let Some(w) = self.writer.as_mut() else {
            return Err(io::Error::other("perfetto output already finished"));
        };
        let slices = self.layout.tracks(w, thread)?.slices;
        let ts = clock.nanos(time);
        for m in marks {
            match m {
                Mark::Begin(name) => w.begin(slices, ts, name)?,
                Mark::End(_) => w.end(slices, ts)?,
                Mark::Instant(name) => w.instant(slices, ts, name)?,
                Mark::Counter { track, value } => {
                    let key = (thread, track.clone());
                    let id = match self.counters.get(&key) {
                        Some(id) => *id,
                        None => {
                            let id = w.counter_track(track, None, Some(slices))?;
                            self.counters.insert(key, id);
                            id
                        }
                    };
                    w.counter(id, ts, *value)?;
                }
            }
        }
        Ok(())
    }

    /// Write `held`, instants of `thread`.
    fn write_run(
        &mut self,
        thread: ThreadKey,
        held: Vec<Held>,
        clock: &ClockInfo,
    ) -> io::Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Err(io::Error::other("perfetto output already finished"));
        };
        let slices = self.layout.tracks(w, thread)?.slices;
        for h in held {
            w.instant_counted(slices, clock.nanos(h.time), &h.name, h.count)?;
        }
        Ok(())
    }
}

impl Layout {
    fn tracks<W: Output>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        thread: ThreadKey,
    ) -> io::Result<&mut Tracks> {
        if !matches!(self.last, Some((k, _)) if k == thread) {
            // The latest thread's tracks live in `last`: put them back.
            if let Some((k, t)) = self.last.take() {
                self.tracks.insert(k, t);
            }
            let t = self.declare(w, thread)?;
            self.last = Some((thread, t));
        }
        self.last
            .as_mut()
            .map(|(_, t)| t)
            .ok_or_else(|| io::Error::other("perfetto tracks missing"))
    }

    /// The tracks of `thread`, declared when new.
    fn declare<W: Output>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        thread: ThreadKey,
    ) -> io::Result<Tracks> {
        if let Some(t) = self.tracks.get(&thread) {
            return Ok(*t);
        }
        if let Some(tid) = thread.task {
            return self.declare_task(w, thread, tid);
        }
        if let Some(number) = thread.rtos {
            return self.declare_rtos(w, thread, number);
        }
        let pid = match self.pids.get(&thread.context) {
            Some(p) => *p,
            None => {
                let pid = match thread.context {
                    None => 1,
                    Some(_) => self.next_pid(),
                };
                let name = match thread.context {
                    None => "trace".to_owned(),
                    Some(c) => format!("context {c:#x}"),
                };
                w.process_track(pid, &name)?;
                self.pids.insert(thread.context, pid);
                pid
            }
        };
        let tname = core_name(&self.names, thread.id);
        let slices = w.thread_track(pid, i32::from(thread.id), &tname)?;
        self.with_depth(w, thread, slices, &tname)
    }

    /// `thread`'s tracks: its slices on `slices`, named `label`, and its
    /// call-depth counter inside it.
    fn with_depth<W: Output>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        thread: ThreadKey,
        slices: TrackId,
        label: &str,
    ) -> io::Result<Tracks> {
        let depth =
            w.counter_track(&format!("{label} call depth"), Some("frames"), Some(slices))?;
        let t = Tracks {
            slices,
            depth,
            shown: -1,
        };
        self.tracks.insert(thread, t);
        Ok(t)
    }
}

impl Layout {
    /// The next process ID for a context ID or a core with tasks: 2, 3,
    /// ... in order of appearance.
    fn next_pid(&self) -> i32 {
        let used = self.pids.values().filter(|&&p| p >= 2).count() + self.core_pids.len();
        2 + i32::try_from(used).unwrap_or(i32::MAX - 2)
    }

    /// The tracks of RTOS task `number`: a thread track named after the
    /// task, in the process of its core (declared when new, named after
    /// the core); its thread ID is the task's number and the trace ID.
    fn declare_rtos<W: Output>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        thread: ThreadKey,
        number: u32,
    ) -> io::Result<Tracks> {
        let pid = match self.core_pids.get(&thread.id) {
            Some(p) => *p,
            None => {
                let pid = self.next_pid();
                w.process_track(pid, &core_name(&self.names, thread.id))?;
                self.core_pids.insert(thread.id, pid);
                pid
            }
        };
        let name = self
            .rtos
            .get(&number)
            .map_or_else(|| format!("task {number}"), |t| t.name.clone());
        let tid =
            i32::try_from((u64::from(number) << 8) | u64::from(thread.id)).unwrap_or(i32::MAX);
        let slices = w.thread_track(pid, tid, &name)?;
        self.with_depth(w, thread, slices, &name)
    }

    /// The tracks of a Linux thread: a thread track with its own `pid`
    /// and `tid`, named by its command, in its process's (declared when
    /// new); the same thread traced by another core (it migrated) gets a
    /// track of its own inside it, `thread on core`.
    fn declare_task<W: Output>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        thread: ThreadKey,
        tid: u32,
    ) -> io::Result<Tracks> {
        let task = self
            .tasks
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| Task::unnamed(tid));
        let (pid, pname, tname) = (task.pid, task.process, task.thread);
        // Perfetto's process and thread IDs are 32-bit signed.
        let (ppid, ptid) = (pid as i32, tid as i32);
        if self.task_pids.insert(pid) {
            w.process_track(ppid, &pname)?;
        }
        let (slices, label) = match self.task_tracks.get(&tid) {
            None => {
                let t = w.thread_track(ppid, ptid, &tname)?;
                self.task_tracks.insert(tid, t);
                (t, tname)
            }
            Some(&first) => {
                let core = core_name(&self.names, thread.id);
                let label = format!("{tname} on {core}");
                (w.track(&label, Some(first))?, label)
            }
        };
        self.with_depth(w, thread, slices, &label)
    }
}

impl<W: Output> Sink for PerfettoSink<W> {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "perfetto"
    }

    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        for s in &info.sources {
            self.layout.names.insert(s.id, s.thread_name());
            self.profiles.insert(s.id, s.profile);
        }
        for t in &info.tasks {
            self.layout.tasks.insert(t.tid, t.clone());
        }
        Ok(())
    }

    fn interest(&self) -> Interest {
        Interest::StackChanges
    }

    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow> {
        if let Some(task) = ctx.task(ctx.thread) {
            self.layout
                .rtos
                .entry(task.number)
                .or_insert_with(|| task.clone());
        }
        if is_itm_mark(&event.kind) {
            let mut marks = Vec::new();
            self.itm.marks(event, ctx.thread, &mut marks);
            self.itm_time.insert(ctx.thread, ctx.time);
            self.write_marks(ctx.thread, ctx.time, ctx.clock, &marks)?;
            return Ok(Flow::Continue);
        }
        let instant = match event.kind {
            EventKind::Exception { number, .. } => Some(
                self.profiles
                    .get(&event.id)
                    .copied()
                    .unwrap_or_default()
                    .exception_name(number),
            ),
            EventKind::Gap(r) => Some(format!("trace gap: {}", r.name())),
            EventKind::TraceOn { reason, .. } => Some(format!("trace on: {}", reason.name())),
            EventKind::AddrNacc { addr } => Some(format!("memory not accessible: {addr:#010x}")),
            _ => None,
        };
        if ctx.closed.is_empty() && ctx.opened.is_empty() {
            // Held while the stack stays as it is (its track declared
            // now, as it comes).
            if let Some(name) = instant {
                if let Some(w) = self.writer.as_mut() {
                    self.layout.tracks(w, ctx.thread)?;
                }
                if self.instants.push(ctx.thread, ctx.time, name) {
                    let held = self.instants.take(ctx.thread);
                    self.write_run(ctx.thread, held, ctx.clock)?;
                }
            }
            return Ok(Flow::Continue);
        }
        if self.instants.holds(ctx.thread) {
            let held = self.instants.take(ctx.thread);
            self.write_run(ctx.thread, held, ctx.clock)?;
        }
        let Some(w) = self.writer.as_mut() else {
            return Err(io::Error::other("perfetto output already finished"));
        };
        let t = self.layout.tracks(w, ctx.thread)?;
        let ts = ctx.clock.nanos(ctx.time);
        // The call depth once this instant's changes are done, carried by
        // its last slice packet when it differs from the value shown.
        let depth = i64::try_from(ctx.stack.len()).unwrap_or(i64::MAX);
        let show = depth != t.shown;
        let (slices, counter) = (t.slices, t.depth);
        if show && (!ctx.closed.is_empty() || !ctx.opened.is_empty()) {
            t.shown = depth;
        }
        // With no slice opened, the last end carries the depth.
        let end_carries = show && ctx.opened.is_empty();
        for i in 1..=ctx.closed.len() {
            if end_carries && i == ctx.closed.len() {
                w.end_counted(slices, ts, counter, depth)?;
            } else {
                w.end(slices, ts)?;
            }
        }
        if let Some(name) = &instant {
            w.instant(slices, ts, name)?;
        }
        for (i, f) in ctx.opened.iter().enumerate() {
            let name = name_id(&mut self.iids, w, f.func, ctx)?;
            if show && i + 1 == ctx.opened.len() {
                w.begin_named_counted(slices, ts, name, counter, depth)?;
            } else {
                w.begin_named(slices, ts, name)?;
            }
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self, info: &RunInfo) -> io::Result<()> {
        for (thread, marks) in self.itm.end() {
            let time = self.itm_time.get(&thread).copied().unwrap_or_default();
            self.write_marks(thread, time, &info.clock, &marks)?;
        }
        for (thread, held) in self.instants.take_all() {
            self.write_run(thread, held, &info.clock)?;
        }
        match self.writer.take() {
            Some(w) => w.finish()?.complete(),
            None => Ok(()),
        }
    }
}

/// The writer's interned name of function `func`, looked up by name once.
#[inline]
fn name_id<W: Output>(
    iids: &mut Vec<Option<NameId>>,
    w: &mut PerfettoWriter<W>,
    func: FuncId,
    ctx: &EventCtx<'_>,
) -> io::Result<NameId> {
    let i = func.0 as usize;
    if let Some(Some(id)) = iids.get(i) {
        return Ok(*id);
    }
    let id = w.name(ctx.names.get(func))?;
    if iids.len() <= i {
        iids.resize(i + 1, None);
    }
    iids[i] = Some(id);
    Ok(id)
}
