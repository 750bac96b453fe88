//! Chrome trace event JSON (the format of `chrome://tracing`, also read by
//! the Perfetto UI), streamed as events arrive.
//!
//! - One thread per core: `pid` 1, `tid` the trace ID. With context IDs,
//!   each context ID is a process of its own (`pid` 2, 3, ... in order of
//!   appearance, named `context 0x…`), its threads again the cores.
//!   `process_name` and `thread_name` metadata name them, a core after
//!   the snapshot's core when known (`cpu_0 Cortex-A7 (trace ID 0x10,
//!   ETMv3)`, see [`SourceName::thread_name`](super::SourceName::thread_name)).
//! - Every frame of the reconstructed call stack is a `B`/`E` pair named
//!   by its function, category its [`FrameKind`]; every `B` gets its `E`
//!   (open frames close at the end of the trace). Within a thread the
//!   timestamps never decrease and the pairs nest. An inferred caller (a
//!   return out of the outermost frame) begins where the trace first
//!   shows it, at the return; the folded stacks put it under what ran
//!   before, see [`crate::sinks::folded`].
//! - Exceptions, trace gaps, trace-on, memory-not-accessible addresses
//!   are thread-scoped instant events (`i`). Identical instants of a
//!   thread while its stack does not change are one instant at the time of
//!   the first, with `args` `count` (how many) and `last_ts` (the time of
//!   the last) when there are several (see [`super::coalesce`]).
//! - `ts` is in microseconds from the start of the trace (fractional,
//!   three decimals: nanoseconds).
//!
//! [`FrameKind`]: crate::callstack::FrameKind

use super::coalesce::{Held, Instants};
use crate::clock::ClockInfo;
use crate::fast_map::FastMap;
use crate::sinks::{EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink, ThreadKey};
use std::io;
use trace_core::event::{Event, EventKind};

/// The Chrome JSON sink.
#[derive(Debug)]
pub struct ChromeSink<W: Output> {
    out: W,
    first: bool,
    pids: FastMap<Option<u32>, u64>,
    known: FastMap<ThreadKey, (u64, u64)>,
    names: FastMap<u8, String>,
    /// Instants held until their thread's stack changes.
    instants: Instants,
}

impl<W: Output> ChromeSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> ChromeSink<W> {
        ChromeSink {
            out,
            first: true,
            pids: FastMap::default(),
            known: FastMap::default(),
            names: FastMap::default(),
            instants: Instants::default(),
        }
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
        for h in held {
            self.sep()?;
            let ts = clock.micros(h.time);
            write!(
                self.out,
                r#"{{"ph":"i","s":"t","pid":{pid},"tid":{tid},"ts":{ts:.3},"name":{}"#,
                json_str(&h.name)
            )?;
            if h.count > 1 {
                write!(
                    self.out,
                    r#","args":{{"count":{},"last_ts":{:.3}}}"#,
                    h.count,
                    clock.micros(h.last)
                )?;
            }
            self.out.write_all(b"}")?;
        }
        Ok(())
    }

    fn sep(&mut self) -> io::Result<()> {
        if self.first {
            self.first = false;
            self.out.write_all(b"\n")
        } else {
            self.out.write_all(b",\n")
        }
    }

    fn ids(&mut self, thread: ThreadKey) -> io::Result<(u64, u64)> {
        if let Some(ids) = self.known.get(&thread) {
            return Ok(*ids);
        }
        let next = 2 + self.pids.values().filter(|&&p| p >= 2).count() as u64;
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
        let tname = match self.names.get(&thread.id) {
            Some(n) => n.clone(),
            None => format!("trace ID {:#04x}", thread.id),
        };
        self.sep()?;
        write!(
            self.out,
            r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name","args":{{"name":{}}}}}"#,
            json_str(&tname)
        )?;
        self.known.insert(thread, (pid, tid));
        Ok((pid, tid))
    }

    fn instant(&mut self, pid: u64, tid: u64, ts: f64, name: &str) -> io::Result<()> {
        self.sep()?;
        write!(
            self.out,
            r#"{{"ph":"i","s":"t","pid":{pid},"tid":{tid},"ts":{ts:.3},"name":{}}}"#,
            json_str(name)
        )
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
        let changed = !ctx.closed.is_empty() || !ctx.opened.is_empty();
        if !Interest::StackChanges.wants(event, changed) {
            return Ok(Flow::Continue);
        }
        let (pid, tid) = self.ids(ctx.thread)?;
        let name = instant_name(event);
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
        let ts = ctx.clock.micros(ctx.time);
        for _ in ctx.closed {
            self.sep()?;
            write!(
                self.out,
                r#"{{"ph":"E","pid":{pid},"tid":{tid},"ts":{ts:.3}}}"#
            )?;
        }
        if let Some(name) = name {
            self.instant(pid, tid, ts, &name)?;
        }
        for f in ctx.opened {
            self.sep()?;
            write!(
                self.out,
                r#"{{"ph":"B","pid":{pid},"tid":{tid},"ts":{ts:.3},"cat":"{}","name":{}"#,
                f.kind.name(),
                json_str(ctx.name(f))
            )?;
            write!(self.out, r#","args":{{"entry":"{:#010x}"}}}}"#, f.entry)?;
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self, info: &RunInfo) -> io::Result<()> {
        for (thread, held) in self.instants.take_all() {
            self.write_run(thread, held, &info.clock)?;
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.complete()
    }
}

/// What the timeline marks for `event`, if it is an instant: the
/// exception, gap, trace-on or memory-not-accessible address.
pub(crate) fn instant_name(event: &Event) -> Option<String> {
    match event.kind {
        EventKind::Exception { number, ret } => Some(match ret {
            Some(r) => format!("exception {number} (returns to {r:#010x})"),
            None => format!("exception {number}"),
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
