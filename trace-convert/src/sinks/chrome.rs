//! Chrome trace event JSON (the format of `chrome://tracing`, also read by
//! the Perfetto UI), streamed as events arrive.
//!
//! - One thread per core: `pid` 1, `tid` the trace ID. With context IDs,
//!   each context ID is a process of its own (`pid` 2, 3, ... in order of
//!   appearance, named `context 0x…`), its threads again the cores.
//!   `process_name` and `thread_name` metadata name them, a core after
//!   the snapshot's core when known (`cpu_0 Cortex-A7 (trace ID 0x10,
//!   ETMv3)`, see [`SourceName::thread_name`](super::SourceName::thread_name)).
//!   The threads of a per-thread perf.data recording are Linux's: `pid`
//!   and `tid` as the recording gives them, named by their commands (a
//!   thread traced on a second core gets a second track, `tid` above 2^32,
//!   named `thread on core`). The RTOS tasks of a core (see
//!   [`crate::tasks`]) are threads of a process of their own named after
//!   the core (`pid` from the same sequence as the context IDs'), `tid`
//!   the task's number times 256 plus the trace ID, named after the task.
//! - Every frame of the reconstructed call stack is a `B`/`E` pair named
//!   by its function, category its [`FrameKind`], `args` its entry
//!   address; the `E` repeats the `B`'s name, category and `args` (what
//!   speedscope needs to pair them; Perfetto and chrome://tracing pair
//!   them by nesting). Every `B` gets its `E` (open frames close at the
//!   end of the trace). A slice that ends at the time it began (on the
//!   written, nanosecond timestamps) is left out: it has no width to
//!   draw, and speedscope cannot nest it in a slice begun at that time
//!   too. The folded stacks and the report still count its instructions. Within a thread the
//!   timestamps never decrease and the pairs nest. An inferred caller (a
//!   return out of the outermost frame) begins where the trace first
//!   shows it, at the return; the folded stacks put it under what ran
//!   before, see [`crate::sinks::folded`].
//! - Exceptions (named by their core's profile: `IRQ`, `SVC`, on
//!   M-profile `SysTick`, see [`Profile`]), trace gaps, trace-on,
//!   memory-not-accessible addresses are thread-scoped instant events
//!   (`i`). Identical instants of a
//!   thread while its stack does not change are one instant at the time of
//!   the first, with `args` `count` (how many) and `last_ts` (the time of
//!   the last) when there are several (see [`super::coalesce`]).
//! - ITM/DWT sources (see [`super::itm`]): exception trace as `B`/`E`
//!   slices of category `exception` on the source's thread (written also
//!   when they end where they began: nothing else on that track nests
//!   in them), stimulus-port
//!   text and overflows as instants, DWT data values as counters (`C`)
//!   named by comparator.
//! - `ts` is in microseconds from the start of the trace (fractional,
//!   three decimals: nanoseconds, rounded to the nearest).
//!
//! [`FrameKind`]: crate::callstack::FrameKind

use super::coalesce::{Held, Instants};
use super::itm::{is_itm_mark, ItmTimeline, Mark};
use crate::callstack::{Frame, FrameKind};
use crate::clock::ClockInfo;
use crate::fast_map::{FastMap, FastSet};
use crate::input::source::Task;
use crate::profile::{Profile, Profiles};
use crate::sinks::context::core_name;
use crate::sinks::{
    is_instant, EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink, ThreadKey,
};
use std::io;
use trace_core::event::{Event, EventKind};

/// The Chrome JSON sink.
#[derive(Debug)]
pub struct ChromeSink<W: Output> {
    out: W,
    first: bool,
    pids: FastMap<Option<u32>, u64>,
    known: FastMap<ThreadKey, (u64, u64)>,
    /// The thread of the latest event and its `pid` and `tid`: events
    /// come from one thread after another in long runs.
    last_ids: Option<(ThreadKey, (u64, u64))>,
    /// Where in `begun` the thread of `last_ids` holds its lines
    /// (`Some(None)`: nowhere yet), once looked up for it.
    begun_of_last: Option<Option<usize>>,
    names: FastMap<u8, String>,
    /// The profile of each source's core, by trace ID.
    profiles: Profiles,
    /// The Linux threads of the run, by thread ID.
    tasks: FastMap<u32, Task>,
    /// The Linux processes and threads whose names are written.
    task_pids: FastSet<u64>,
    task_tids: FastSet<(u64, u64)>,
    /// The RTOS tasks seen, by number, and the process of each core with
    /// tasks.
    rtos: FastMap<u32, crate::tasks::Task>,
    core_pids: FastMap<u8, u64>,
    /// Instants held until their thread's stack changes.
    instants: Instants,
    /// Per thread, the `B` lines of slices begun at one time and not
    /// written yet (see [`Begun`]): where in `begun` a thread's are, and
    /// the latest thread looked up.
    begun_at: FastMap<ThreadKey, usize>,
    begun: Vec<Begun>,
    last_begun: Option<(ThreadKey, usize)>,
    /// Each function's name as a JSON string, by its id.
    json_names: Vec<Option<Box<[u8]>>>,
    /// Each function's slice line from its category on (see [`Tail`]),
    /// by its id.
    tails: Vec<Option<Tail>>,
    /// The start of the event's slice lines, up to its `ts`: the
    /// separator `,\n` and [`begin_line`]'s part, the phase at byte
    /// [`SEP_PH_AT`]. Before the `ts`, `head_len` bytes for the `pid`
    /// and `tid` in `head_ids`.
    head: Vec<u8>,
    head_len: usize,
    head_ids: Option<(u64, u64)>,
    /// The line being written.
    line: Vec<u8>,
    /// The event's `ts` (boxed: taken out and put back for each event).
    ts: Option<Box<EventTs>>,
    /// What the ITM sources' events draw, and each ITM thread's latest
    /// time.
    itm: ItmTimeline,
    itm_time: FastMap<ThreadKey, u64>,
}

impl<W: Output> ChromeSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> ChromeSink<W> {
        ChromeSink {
            out,
            first: true,
            pids: FastMap::default(),
            known: FastMap::default(),
            last_ids: None,
            begun_of_last: None,
            names: FastMap::default(),
            profiles: Profiles::default(),
            tasks: FastMap::default(),
            task_pids: FastSet::default(),
            task_tids: FastSet::default(),
            rtos: FastMap::default(),
            core_pids: FastMap::default(),
            instants: Instants::default(),
            begun_at: FastMap::default(),
            begun: Vec::new(),
            last_begun: None,
            json_names: Vec::new(),
            tails: Vec::new(),
            head: Vec::with_capacity(64),
            head_len: 0,
            head_ids: None,
            line: Vec::with_capacity(256),
            ts: Some(Box::default()),
            itm: ItmTimeline::default(),
            itm_time: FastMap::default(),
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
            self.write_held(thread, clock)?;
        }
        let (pid, tid) = self.ids(thread)?;
        let mut ts = Vec::with_capacity(32);
        write_ts(&mut ts, clock, time);
        for m in marks {
            match m {
                // Exception slices are written as they come, also those
                // that end when they began (an exception between two PC
                // samples, on a clock of samples): the track holds no
                // other slices for them to be nested in.
                Mark::Begin(name) | Mark::End(name) => {
                    self.write_begun(thread, None)?;
                    let ph = if matches!(m, Mark::Begin(_)) {
                        b'B'
                    } else {
                        b'E'
                    };
                    self.exception_line(ph, pid, tid, &ts, name);
                    self.sep()?;
                    self.out.write_all(&self.line)?;
                }
                Mark::Instant(name) => {
                    self.write_begun(thread, Some(&ts))?;
                    self.instant(pid, tid, &ts, name)?;
                }
                Mark::Counter { track, value } => {
                    self.write_begun(thread, Some(&ts))?;
                    let l = &mut self.line;
                    l.clear();
                    l.extend_from_slice(br#"{"ph":"C","pid":"#);
                    push_int(l, pid);
                    l.extend_from_slice(br#","tid":"#);
                    push_int(l, tid);
                    l.extend_from_slice(br#","ts":"#);
                    l.extend_from_slice(&ts);
                    l.extend_from_slice(br#","name":"#);
                    l.extend_from_slice(json_str(track).as_bytes());
                    l.extend_from_slice(br#","args":{"value":"#);
                    l.extend_from_slice(itoa::Buffer::new().format(*value).as_bytes());
                    l.extend_from_slice(b"}}");
                    self.sep()?;
                    self.out.write_all(&self.line)?;
                }
            }
        }
        Ok(())
    }

    /// The `B` or `E` line of an exception slice (ITM exception trace),
    /// category `exception`, in `self.line`.
    fn exception_line(&mut self, ph: u8, pid: u64, tid: u64, ts: &[u8], name: &str) {
        let l = &mut self.line;
        l.clear();
        begin_line(l, ph, pid, tid, ts);
        l.extend_from_slice(br#","cat":"exception","name":"#);
        l.extend_from_slice(json_str(name).as_bytes());
        l.push(b'}');
    }

    /// Write the instants `thread` holds.
    fn write_held(&mut self, thread: ThreadKey, clock: &ClockInfo) -> io::Result<()> {
        let held = self.instants.take(thread);
        self.write_run(thread, held, clock)
    }

    /// Write `held`, instants of `thread`.
    fn write_run(
        &mut self,
        thread: ThreadKey,
        held: Vec<Held>,
        clock: &ClockInfo,
    ) -> io::Result<()> {
        let (pid, tid) = self.ids(thread)?;
        let mut ts = Vec::with_capacity(32);
        for h in held {
            write_ts(&mut ts, clock, h.time);
            self.write_begun(thread, Some(&ts))?;
            self.instant_line(pid, tid, &ts, &h.name);
            if h.count > 1 {
                let l = &mut self.line;
                l.extend_from_slice(br#","args":{"count":"#);
                push_int(l, h.count);
                l.extend_from_slice(br#","last_ts":"#);
                write_ts(&mut ts, clock, h.last);
                l.extend_from_slice(&ts);
                l.push(b'}');
            }
            self.line.push(b'}');
            self.sep()?;
            self.out.write_all(&self.line)?;
        }
        Ok(())
    }

    /// Write the `B` lines `thread` holds, unless they were begun at `ts`
    /// (`None`: whenever they were begun).
    fn write_begun(&mut self, thread: ThreadKey, ts: Option<&[u8]>) -> io::Result<()> {
        let at = self.begun_index(thread, false);
        self.write_begun_at(at, ts)
    }

    /// [`write_begun`](Self::write_begun) of the thread whose lines are
    /// at `at` in `begun`, if any.
    #[inline(always)]
    fn write_begun_at(&mut self, at: Option<usize>, ts: Option<&[u8]>) -> io::Result<()> {
        let Some(i) = at else {
            return Ok(());
        };
        match self.begun.get(i) {
            Some(b) if !b.ends.is_empty() => self.write_held_lines(i, ts),
            _ => Ok(()),
        }
    }

    /// [`write_begun_at`](Self::write_begun_at) for a thread that holds
    /// lines (its only caller sees to that).
    #[inline(never)]
    fn write_held_lines(&mut self, i: usize, ts: Option<&[u8]>) -> io::Result<()> {
        let Some(begun) = self.begun.get_mut(i) else {
            return Ok(());
        };
        if ts.is_some_and(|ts| same_ts(ts, &begun.ts)) {
            return Ok(());
        }
        // Each line begins with its separator: written in one go.
        self.out
            .write_all(separated(&mut self.first, &begun.lines))?;
        begun.lines.clear();
        begun.ends.clear();
        Ok(())
    }

    /// Where `thread`'s held `B` lines are in `begun`; made when `make`,
    /// else `None` for a thread that has held none.
    #[inline(always)]
    fn begun_index(&mut self, thread: ThreadKey, make: bool) -> Option<usize> {
        if let Some((t, i)) = self.last_begun {
            if t == thread {
                return Some(i);
            }
        }
        self.find_begun(thread, make)
    }

    /// [`begun_index`](Self::begun_index) for the thread of the event
    /// being written, whose ids were just asked for
    /// ([`ids`](Self::ids)): kept from its previous event.
    #[inline(always)]
    fn begun_of_event(&mut self, thread: ThreadKey, make: bool) -> Option<usize> {
        debug_assert!(self.last_ids.is_some_and(|(t, _)| t == thread));
        match self.begun_of_last {
            Some(Some(i)) => Some(i),
            Some(None) if !make => None,
            _ => {
                let at = self.begun_index(thread, make);
                self.begun_of_last = Some(at);
                at
            }
        }
    }

    /// [`begun_index`](Self::begun_index) from the map.
    #[inline(never)]
    fn find_begun(&mut self, thread: ThreadKey, make: bool) -> Option<usize> {
        let i = match self.begun_at.get(&thread) {
            Some(&i) => i,
            None if make => {
                self.begun.push(Begun::default());
                let i = self.begun.len() - 1;
                self.begun_at.insert(thread, i);
                i
            }
            None => return None,
        };
        self.last_begun = Some((thread, i));
        Some(i)
    }

    fn sep(&mut self) -> io::Result<()> {
        self.out.write_all(sep(&mut self.first))
    }

    #[inline(always)]
    fn ids(&mut self, thread: ThreadKey) -> io::Result<(u64, u64)> {
        if let Some((t, ids)) = self.last_ids {
            if t == thread {
                return Ok(ids);
            }
        }
        let ids = self.new_ids(thread)?;
        self.last_ids = Some((thread, ids));
        self.begun_of_last = None;
        Ok(ids)
    }

    /// [`ids`](Self::ids) looked up, or made and their names written.
    #[inline(never)]
    fn new_ids(&mut self, thread: ThreadKey) -> io::Result<(u64, u64)> {
        if let Some(ids) = self.known.get(&thread) {
            return Ok(*ids);
        }
        if let Some(tid) = thread.task {
            return self.task_ids(thread, tid);
        }
        let next =
            2 + (self.pids.values().filter(|&&p| p >= 2).count() + self.core_pids.len()) as u64;
        if let Some(number) = thread.rtos {
            return self.rtos_ids(thread, number, next);
        }
        let new_pid = !self.pids.contains_key(&thread.context);
        let pid = *self
            .pids
            .entry(thread.context)
            .or_insert(if thread.context.is_none() { 1 } else { next });
        let tid = u64::from(thread.id);
        if new_pid {
            let pname = match thread.context {
                None => "trace".to_owned(),
                Some(c) => format!("context {c:#x}"),
            };
            self.sep()?;
            write!(
                self.out,
                r#"{{"ph":"M","pid":{pid},"tid":0,"name":"process_name","args":{{"name":{}}}}}"#,
                json_str(&pname)
            )?;
        }
        let tname = core_name(&self.names, thread.id);
        self.sep()?;
        write!(
            self.out,
            r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name","args":{{"name":{}}}}}"#,
            json_str(&tname)
        )?;
        self.known.insert(thread, (pid, tid));
        Ok((pid, tid))
    }

    /// The process and thread of RTOS task `number`'s track: its core's
    /// process (`next` when new), named after the core, and a thread named
    /// after the task.
    fn rtos_ids(&mut self, thread: ThreadKey, number: u32, next: u64) -> io::Result<(u64, u64)> {
        let pid = match self.core_pids.get(&thread.id) {
            Some(p) => *p,
            None => {
                self.core_pids.insert(thread.id, next);
                self.sep()?;
                write!(
                    self.out,
                    r#"{{"ph":"M","pid":{next},"tid":0,"name":"process_name","args":{{"name":{}}}}}"#,
                    json_str(&core_name(&self.names, thread.id))
                )?;
                next
            }
        };
        let tid = (u64::from(number) << 8) | u64::from(thread.id);
        let name = self
            .rtos
            .get(&number)
            .map_or_else(|| format!("task {number}"), |t| t.name.clone());
        self.sep()?;
        write!(
            self.out,
            r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name","args":{{"name":{}}}}}"#,
            json_str(&name)
        )?;
        self.known.insert(thread, (pid, tid));
        Ok((pid, tid))
    }

    /// The process and thread of a Linux thread's track: its own `pid` and
    /// `tid`, named after its command. The same thread traced by another
    /// core (it migrated) gets a track of its own, `tid` above 2^32.
    fn task_ids(&mut self, thread: ThreadKey, tid: u32) -> io::Result<(u64, u64)> {
        let task = self
            .tasks
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| Task::unnamed(tid));
        let (pid, pname, tname) = (u64::from(task.pid), task.process, task.thread);
        if self.task_pids.insert(pid) {
            self.sep()?;
            write!(
                self.out,
                r#"{{"ph":"M","pid":{pid},"tid":0,"name":"process_name","args":{{"name":{}}}}}"#,
                json_str(&pname)
            )?;
        }
        let (track, name) = if self.task_tids.insert((pid, u64::from(tid))) {
            (u64::from(tid), tname)
        } else {
            let core = core_name(&self.names, thread.id);
            let track = ((u64::from(thread.id) + 1) << 32) | u64::from(tid);
            self.task_tids.insert((pid, track));
            (track, format!("{tname} on {core}"))
        };
        self.sep()?;
        write!(
            self.out,
            r#"{{"ph":"M","pid":{pid},"tid":{track},"name":"thread_name","args":{{"name":{}}}}}"#,
            json_str(&name)
        )?;
        self.known.insert(thread, (pid, track));
        Ok((pid, track))
    }

    /// An instant's line up to its name, in `self.line`.
    fn instant_line(&mut self, pid: u64, tid: u64, ts: &[u8], name: &str) {
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(br#"{"ph":"i","s":"t","pid":"#);
        push_int(l, pid);
        l.extend_from_slice(br#","tid":"#);
        push_int(l, tid);
        l.extend_from_slice(br#","ts":"#);
        l.extend_from_slice(ts);
        l.extend_from_slice(br#","name":"#);
        l.extend_from_slice(json_str(name).as_bytes());
    }

    fn instant(&mut self, pid: u64, tid: u64, ts: &[u8], name: &str) -> io::Result<()> {
        self.instant_line(pid, tid, ts, name);
        self.line.push(b'}');
        self.sep()?;
        self.out.write_all(&self.line)
    }

    /// The lines of an event that changed the stack, at `ts`: each
    /// slice line is [`begin_line`]'s start, made once for the event,
    /// and its frame's [`Tail`].
    fn write_change(
        &mut self,
        ctx: &EventCtx<'_>,
        name: Option<String>,
        pid: u64,
        tid: u64,
        ts: &[u8],
    ) -> io::Result<()> {
        let thread = ctx.thread;
        let at = self.begun_of_event(thread, false);
        self.write_begun_at(at, Some(ts))?;
        if self.head_ids == Some((pid, tid)) {
            self.head.truncate(self.head_len);
            self.head.extend_from_slice(ts);
            if let Some(ph) = self.head.get_mut(SEP_PH_AT) {
                *ph = b'E';
            }
        } else {
            self.head.clear();
            self.head.extend_from_slice(b",\n");
            begin_line(&mut self.head, b'E', pid, tid, b"");
            self.head_len = self.head.len();
            self.head_ids = Some((pid, tid));
            self.head.extend_from_slice(ts);
        }
        for f in ctx.closed {
            // A slice begun at this very time: neither line is written.
            if at
                .and_then(|i| self.begun.get_mut(i))
                .is_some_and(Begun::pop)
            {
                continue;
            }
            let tail = tail_of(&mut self.tails, &mut self.json_names, ctx, f);
            self.out.write_all(separated(&mut self.first, &self.head))?;
            self.out.write_all(tail)?;
        }
        if let Some(name) = name {
            self.instant(pid, tid, ts, &name)?;
        }
        if !ctx.opened.is_empty() {
            let at = match at {
                Some(i) => Some(i),
                None => self.begun_of_event(thread, true),
            };
            let Some(begun) = at.and_then(|i| self.begun.get_mut(i)) else {
                return Ok(());
            };
            if begun.ends.is_empty() {
                begun.ts.clear();
                begun.ts.extend_from_slice(ts);
            }
            if let Some(ph) = self.head.get_mut(SEP_PH_AT) {
                *ph = b'B';
            }
            for f in ctx.opened {
                let tail = tail_of(&mut self.tails, &mut self.json_names, ctx, f);
                begun.lines.extend_from_slice(&self.head);
                begun.lines.extend_from_slice(tail);
                begun.ends.push(begun.lines.len());
            }
        }
        Ok(())
    }
}

/// A function's slice line from its category on:
/// `,"cat":"call","name":"f","args":{"entry":"0x00001000"}}`, for the
/// frame kind and entry it was made for.
#[derive(Debug)]
struct Tail {
    kind: FrameKind,
    entry: u32,
    bytes: Box<[u8]>,
}

/// The [`Tail`] of frame `f`, made unless the one of its function is for
/// `f`'s kind and entry; `json_names` keeps the function names as JSON
/// strings.
#[inline(always)]
fn tail_of<'t>(
    tails: &'t mut Vec<Option<Tail>>,
    json_names: &mut Vec<Option<Box<[u8]>>>,
    ctx: &EventCtx<'_>,
    f: &Frame,
) -> &'t [u8] {
    let at = f.func.0 as usize;
    let made = tails
        .get(at)
        .and_then(Option::as_ref)
        .is_some_and(|t| t.kind == f.kind && t.entry == f.entry);
    if !made {
        make_tail(tails, json_names, ctx, f);
    }
    tails
        .get(at)
        .and_then(Option::as_ref)
        .map_or(&[], |t| &t.bytes)
}

/// Make the [`Tail`] of frame `f` ([`tail_of`]).
#[cold]
#[inline(never)]
fn make_tail(
    tails: &mut Vec<Option<Tail>>,
    json_names: &mut Vec<Option<Box<[u8]>>>,
    ctx: &EventCtx<'_>,
    f: &Frame,
) {
    let at = f.func.0 as usize;
    if tails.len() <= at {
        tails.resize_with(at + 1, || None);
    }
    if json_names.len() <= at {
        json_names.resize(at + 1, None);
    }
    let name: &[u8] = match json_names.get_mut(at) {
        Some(n) => n.get_or_insert_with(|| json_str(ctx.name(f)).into_bytes().into_boxed_slice()),
        None => b"\"\"",
    };
    let mut l = Vec::with_capacity(64 + name.len());
    l.extend_from_slice(br#","cat":""#);
    l.extend_from_slice(f.kind.name().as_bytes());
    l.extend_from_slice(br#"","name":"#);
    l.extend_from_slice(name);
    l.extend_from_slice(br#","args":{"entry":"#);
    push_hex_str(&mut l, f.entry);
    l.extend_from_slice(b"}}");
    if let Some(slot) = tails.get_mut(at) {
        *slot = Some(Tail {
            kind: f.kind,
            entry: f.entry,
            bytes: l.into_boxed_slice(),
        });
    }
}

/// Whether two written times are the same. Times written one after the
/// other mostly differ in their last digits, so they are compared from
/// the end, in the loop, without a call to `memcmp`.
#[inline(always)]
fn same_ts(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().rev().zip(b.iter().rev()).all(|(x, y)| x == y)
}

/// Lines that begin with the separator `,\n` ([`sep`]'s after the
/// first line), without the comma when they are the first of the file.
#[inline(always)]
fn separated<'l>(first: &mut bool, lines: &'l [u8]) -> &'l [u8] {
    let skip = usize::from(std::mem::take(first));
    lines.get(skip..).unwrap_or_default()
}

/// The separator before a line: none but a line break before the first.
fn sep(first: &mut bool) -> &'static [u8] {
    if std::mem::take(first) {
        b"\n"
    } else {
        b",\n"
    }
}

/// The `B` lines of a thread's slices begun at one time (`ts`, as
/// written), held until the thread's next line at a later time: a slice
/// that ends at the time it began is left out whole. Such a slice has
/// nothing to draw, and speedscope, which orders a begin and an end of
/// one time by its own rule, cannot nest it inside another slice begun
/// then too. The held lines are the innermost frames of the stack, so an
/// end at the same time always ends the last of them.
#[derive(Debug, Default)]
struct Begun {
    ts: Vec<u8>,
    /// The lines, one after the other, each beginning with its
    /// separator `,\n`, and where each ends.
    lines: Vec<u8>,
    ends: Vec<usize>,
}

impl Begun {
    /// Leave out the last line held: true when there was one.
    fn pop(&mut self) -> bool {
        if self.ends.pop().is_none() {
            return false;
        }
        self.lines.truncate(self.ends.last().copied().unwrap_or(0));
        true
    }
}

/// Where the phase is in a slice line's head: [`begin_line`]'s after
/// the separator `,\n`.
const SEP_PH_AT: usize = 9;

/// Add to `l` the start of an event's line: its phase, process, thread
/// and time.
fn begin_line(l: &mut Vec<u8>, ph: u8, pid: u64, tid: u64, ts: &[u8]) {
    l.extend_from_slice(br#"{"ph":""#);
    l.push(ph);
    l.extend_from_slice(br#"","pid":"#);
    push_int(l, pid);
    l.extend_from_slice(br#","tid":"#);
    push_int(l, tid);
    l.extend_from_slice(br#","ts":"#);
    l.extend_from_slice(ts);
}

fn push_int(line: &mut Vec<u8>, v: u64) {
    line.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// `"0x"` and eight lower-case hex digits, quoted.
fn push_hex_str(line: &mut Vec<u8>, v: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut b = *b"\"0x00000000\"";
    for (i, d) in b[3..11].iter_mut().enumerate() {
        *d = HEX[((v >> (28 - 4 * i)) & 0xF) as usize];
    }
    line.extend_from_slice(&b);
}

/// `ticks` as microseconds with three decimals (nanoseconds, rounded to
/// the nearest, halves up), into `out`.
fn write_ts(out: &mut Vec<u8>, clock: &ClockInfo, ticks: u64) {
    out.clear();
    match whole_hz(clock.hz) {
        Some(hz) => {
            let (micros, frac) = split_ts(ticks, hz);
            out.extend_from_slice(itoa::Buffer::new().format(micros).as_bytes());
            out.push(b'.');
            // Worked out: the reference `EventTs`, which looks the digits
            // up, is tested against.
            out.extend_from_slice(&three_digits(frac));
        }
        None => out.extend_from_slice(format!("{:.3}", clock.micros(ticks)).as_bytes()),
    }
}

/// `hz` when integral (and in the range [`split_ts`] takes): such a
/// frequency gives the exact quotient; any other the floating-point one.
fn whole_hz(hz: f64) -> Option<u64> {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (hz.fract() == 0.0 && (1.0..=9.0e15).contains(&hz)).then_some(hz as u64)
}

/// `ticks` at `hz` as whole microseconds and thousandths (nanoseconds,
/// rounded to the nearest, halves up).
#[inline]
fn split_ts(ticks: u64, hz: u64) -> (u64, u16) {
    // The quotient in 64 bits where it fits (`hz` is at most 9e15, so
    // `2 * hz` always does), else in 128.
    match ticks
        .checked_mul(2_000_000_000)
        .and_then(|t| t.checked_add(hz))
    {
        Some(t) => {
            let nanos = t / (2 * hz);
            (nanos / 1000, (nanos % 1000) as u16)
        }
        None => {
            let hz = u128::from(hz);
            let nanos = (u128::from(ticks) * 2_000_000_000 + hz) / (2 * hz);
            (
                u64::try_from(nanos / 1000).unwrap_or(u64::MAX),
                (nanos % 1000) as u16,
            )
        }
    }
}

/// The three digits of `frac` (below 1000), looked up.
#[inline]
fn frac_digits(frac: u16) -> [u8; 3] {
    FRAC_DIGITS
        .get(usize::from(frac))
        .copied()
        .unwrap_or_else(|| three_digits(frac))
}

/// The three digits of `frac`, worked out (modulo 1000).
const fn three_digits(frac: u16) -> [u8; 3] {
    [
        b'0' + (frac / 100 % 10) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]
}

/// [`three_digits`] of 0 to 999.
static FRAC_DIGITS: [[u8; 3]; 1000] = {
    let mut t = [[0u8; 3]; 1000];
    let mut i = 0;
    while i < 1000 {
        t[i] = three_digits(i as u16);
        i += 1;
    }
    t
};

/// An event's `ts` as [`write_ts`] writes it, made from the previous
/// one's: events come in order of time, many within one microsecond,
/// whose digits are then kept.
#[derive(Debug, Default)]
struct EventTs {
    text: Vec<u8>,
    /// The frequency last seen (its bits) and [`whole_hz`] of it.
    hz: Option<(u64, Option<u64>)>,
    /// The whole microseconds `text` starts with, and where they and the
    /// point end.
    micros: Option<u64>,
    int_len: usize,
}

impl EventTs {
    /// The `ts` of `ticks` on `clock`.
    #[inline]
    fn at(&mut self, clock: &ClockInfo, ticks: u64) -> &[u8] {
        let bits = clock.hz.to_bits();
        let whole = match self.hz {
            Some((b, w)) if b == bits => w,
            _ => {
                let w = whole_hz(clock.hz);
                self.hz = Some((bits, w));
                w
            }
        };
        let Some(hz) = whole else {
            self.micros = None;
            write_ts(&mut self.text, clock, ticks);
            return &self.text;
        };
        let (micros, frac) = split_ts(ticks, hz);
        if self.micros != Some(micros) {
            self.text.clear();
            self.text
                .extend_from_slice(itoa::Buffer::new().format(micros).as_bytes());
            self.text.push(b'.');
            self.int_len = self.text.len();
            self.micros = Some(micros);
        }
        self.text.truncate(self.int_len);
        self.text.extend_from_slice(&frac_digits(frac));
        &self.text
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

impl<W: Output> Sink for ChromeSink<W> {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "chrome"
    }

    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        for s in &info.sources {
            self.names.insert(s.id, s.thread_name());
        }
        self.profiles = Profiles::of_sources(&info.sources);
        for t in &info.tasks {
            self.tasks.insert(t.tid, t.clone());
        }
        write!(
            self.out,
            r#"{{"displayTimeUnit":"ns","otherData":{{"clock":{}}},"traceEvents":["#,
            json_str(info.clock.kind.name())
        )
    }

    fn interest(&self) -> Interest {
        Interest::StackChanges
    }

    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow> {
        if let Some(task) = ctx.task(ctx.thread) {
            self.rtos.entry(task.number).or_insert_with(|| task.clone());
        }
        if is_itm_mark(&event.kind) {
            let mut marks = Vec::new();
            self.itm.marks(event, ctx.thread, &mut marks);
            self.itm_time.insert(ctx.thread, ctx.time);
            self.write_marks(ctx.thread, ctx.time, ctx.clock, &marks)?;
            return Ok(Flow::Continue);
        }
        let changed = !ctx.closed.is_empty() || !ctx.opened.is_empty();
        if !Interest::StackChanges.wants(event, changed) {
            return Ok(Flow::Continue);
        }
        let (pid, tid) = self.ids(ctx.thread)?;
        // Only instants are named (a range, the most common event, is not).
        let name = if is_instant(event) {
            instant_name(event, self.profiles.of(event.id))
        } else {
            None
        };
        if !changed {
            // Held while the stack stays as it is.
            if let Some(name) = name {
                if self.instants.push(ctx.thread, ctx.time, name) {
                    self.write_held(ctx.thread, ctx.clock)?;
                }
            }
            return Ok(Flow::Continue);
        }
        if self.instants.holds(ctx.thread) {
            self.write_held(ctx.thread, ctx.clock)?;
        }
        let mut ts = self.ts.take().unwrap_or_default();
        let done = self.write_change(ctx, name, pid, tid, ts.at(ctx.clock, ctx.time));
        self.ts = Some(ts);
        done?;
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
        let mut threads: Vec<ThreadKey> = self.begun_at.keys().copied().collect();
        threads.sort_unstable();
        for thread in threads {
            self.write_begun(thread, None)?;
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.complete()
    }
}

/// What the timeline marks for `event`, if it is an instant: the
/// exception (named as `profile`, its source's, numbers it), gap,
/// trace-on or memory-not-accessible address.
pub(crate) fn instant_name(event: &Event, profile: Profile) -> Option<String> {
    match event.kind {
        EventKind::Exception { number, ret } => Some(match ret {
            Some(r) => format!("{} (returns to {r:#010x})", profile.exception_name(number)),
            None => profile.exception_name(number),
        }),
        EventKind::Gap(reason) => Some(match reason.addr() {
            Some(a) => format!("trace gap: {} at {a:#010x}", reason.name()),
            None => format!("trace gap: {}", reason.name()),
        }),
        EventKind::TraceOn { reason, .. } => Some(format!("trace on: {}", reason.name())),
        EventKind::AddrNacc { addr } => Some(format!("memory not accessible: {addr:#010x}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ClockKind;

    /// The `B` and `E` lines of `thread` (its `tid`) in `json`, in order:
    /// phase, category, name, entry and `ts`.
    fn slices(json: &serde_json::Value, tid: u64) -> Vec<(String, String, String, String, f64)> {
        let text = |e: &serde_json::Value, k: &str| e[k].as_str().unwrap_or("?").to_owned();
        json["traceEvents"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| matches!(e["ph"].as_str(), Some("B" | "E")) && e["tid"] == tid)
            .map(|e| {
                (
                    text(e, "ph"),
                    text(e, "cat"),
                    text(e, "name"),
                    text(&e["args"], "entry"),
                    e["ts"].as_f64().unwrap_or(-1.0),
                )
            })
            .collect()
    }

    #[test]
    fn each_slice_line_names_its_own_frame_and_thread() {
        // One function entered by a call on one core and by a tail call at
        // another entry on a second core, the two cores' events taking
        // turns: every line carries its own thread, kind and entry.
        let names = crate::callstack::Names::listed(&["f"]);
        let symbols = crate::symbols::Symbolizer::empty();
        let clock = ClockInfo::default();
        let frame = |kind, entry| Frame {
            func: crate::callstack::FuncId(0),
            entry,
            ret: None,
            kind,
            start: 0,
        };
        let call = frame(FrameKind::Call, 0x100);
        let tail = frame(FrameKind::TailCall, 0x200);
        let (a, b) = (ThreadKey::of_id(0x10), ThreadKey::of_id(0x12));
        let buf = crate::sinks::SharedBuffer::new();
        let mut sink = ChromeSink::new(buf.clone());
        sink.begin(&RunInfo::default()).expect("begin");
        let steps: [(ThreadKey, u64, &[Frame], &[Frame]); 6] = [
            (a, 1000, &[], &[call]),
            (b, 1000, &[], &[tail]),
            (a, 2000, &[call], &[]),
            (b, 3000, &[tail], &[]),
            (a, 4000, &[], &[call]),
            (a, 5000, &[call], &[]),
        ];
        let event =
            crate::test_events::range(0x100, 1, trace_core::event::InsnClass::Other, false, false);
        for (thread, time, closed, opened) in steps {
            let ctx = EventCtx {
                thread,
                time,
                end: time,
                cycles: 0,
                closed,
                opened,
                stack: opened,
                names: &names,
                symbols: &symbols,
                memory: None,
                clock: &clock,
                tasks: &[],
                switch: None,
            };
            let flow = sink.event(&event, &ctx).expect("event");
            assert!(matches!(flow, Flow::Continue));
        }
        sink.finish(&RunInfo::default()).expect("finish");
        let json: serde_json::Value = serde_json::from_slice(&buf.bytes()).expect("JSON");
        let line = |ph: &str, kind: &str, entry: &str, ts: f64| {
            (
                ph.to_owned(),
                kind.to_owned(),
                "f".to_owned(),
                entry.to_owned(),
                ts,
            )
        };
        assert_eq!(
            slices(&json, 0x10),
            [
                line("B", "call", "0x00000100", 1.0),
                line("E", "call", "0x00000100", 2.0),
                line("B", "call", "0x00000100", 4.0),
                line("E", "call", "0x00000100", 5.0),
            ]
        );
        assert_eq!(
            slices(&json, 0x12),
            [
                line("B", "tail_call", "0x00000200", 1.0),
                line("E", "tail_call", "0x00000200", 3.0),
            ]
        );
    }

    fn ts(clock: &ClockInfo, ticks: u64) -> String {
        let mut v = Vec::new();
        write_ts(&mut v, clock, ticks);
        String::from_utf8(v).unwrap_or_default()
    }

    #[test]
    fn timestamps_equal_the_formatted_quotient() {
        // Away from exact halves of a nanosecond, the three decimals are
        // those of the floating-point quotient (small values, where its
        // error is far below half a nanosecond).
        for hz in [1e9, 8e8, 3e8, 1_234_567.0, 2.5e9] {
            let clock = ClockInfo::new(ClockKind::Cycles, Some(hz));
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let ticks = x % 50_000_000;
                let exact2 = u128::from(ticks) * 2_000_000_000 % (2 * hz as u128);
                if exact2 == hz as u128 {
                    continue;
                }
                assert_eq!(
                    ts(&clock, ticks),
                    format!("{:.3}", clock.micros(ticks)),
                    "{ticks} ticks at {hz} Hz"
                );
            }
        }
    }

    #[test]
    fn event_timestamps_equal_those_written_afresh() {
        // In order of time with many in one microsecond, then at random
        // (with clock changes between), as `write_ts` writes each alone.
        let mut made = EventTs::default();
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for hz in [1e9, 2.5e9, 3e8, 1.5e9 + 0.25, 1e9] {
            let clock = ClockInfo::new(ClockKind::Cycles, Some(hz));
            let mut ticks = 0u64;
            for i in 0..5_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ticks = if i % 7 == 6 { x } else { ticks + x % 400 };
                assert_eq!(
                    String::from_utf8_lossy(made.at(&clock, ticks)),
                    ts(&clock, ticks),
                    "{ticks} ticks at {hz} Hz"
                );
            }
        }
    }

    #[test]
    fn the_digit_table_spells_every_thousandth() {
        for f in 0..1000u16 {
            assert_eq!(frac_digits(f), format!("{f:03}").as_bytes(), "{f}");
        }
    }

    #[test]
    fn separated_lines_lose_only_the_first_comma_of_the_file() {
        let mut first = true;
        assert_eq!(separated(&mut first, b",\n{}"), b"\n{}");
        assert!(!first);
        assert_eq!(separated(&mut first, b",\n{}"), b",\n{}");
        // As `sep` puts it before lines written without one.
        let mut first = true;
        assert_eq!(sep(&mut first), b"\n");
        assert_eq!(sep(&mut first), b",\n");
    }

    #[test]
    fn times_are_the_same_only_when_every_byte_is() {
        assert!(same_ts(b"12.345", b"12.345"));
        assert!(same_ts(b"", b""));
        assert!(!same_ts(b"12.345", b"12.346"));
        assert!(!same_ts(b"12.345", b"22.345"));
        assert!(!same_ts(b"2.345", b"12.345"));
    }

    #[test]
    fn timestamps_round_halves_up_and_keep_large_values_exact() {
        let clock = ClockInfo::new(ClockKind::Cycles, Some(2e9));
        assert_eq!(ts(&clock, 1), "0.001");
        assert_eq!(ts(&clock, 3), "0.002");
        let ns = ClockInfo::default();
        assert_eq!(ts(&ns, 123_456_789_012_345_678), "123456789012345.678");
        // Either side of where `ticks * 2e9` leaves 64 bits: at 1 GHz a
        // tick is a nanosecond.
        let edge = u64::MAX / 2_000_000_000;
        for t in [edge - 1, edge, edge + 1, u64::MAX] {
            assert_eq!(ts(&ns, t), format!("{}.{:03}", t / 1000, t % 1000), "{t}");
        }
        let odd = ClockInfo::new(ClockKind::Cycles, Some(1.5e9 + 0.25));
        assert_eq!(
            ts(&odd, 3_000_000_500),
            format!("{:.3}", odd.micros(3_000_000_500))
        );
    }
}
