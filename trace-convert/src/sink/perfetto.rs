//! The Perfetto sink: the call stacks of each thread as nested slices on
//! its own track, exceptions and trace gaps as instants, and the call
//! depth as a counter.
//!
//! Tracks: one thread track per core (process 1, thread = trace ID); with
//! context IDs, one process per context ID (2, 3, ... in order of
//! appearance) holding a thread track per core. Timestamps are
//! nanoseconds on the run's clock (see [`crate::clock`]).

use crate::callstack::FastMap;
use crate::formats::perfetto::{PerfettoWriter, TrackId};
use crate::sink::{EventCtx, Interest, Output, RunInfo, Sink, ThreadKey};
use std::io;
use trace_core::event::{Event, EventKind};

#[derive(Debug, Clone, Copy)]
struct Tracks {
    slices: TrackId,
    depth: TrackId,
}

/// Writes a Perfetto trace.
pub struct PerfettoSink<W: Output> {
    writer: Option<PerfettoWriter<W>>,
    pids: FastMap<Option<u32>, i32>,
    tracks: FastMap<ThreadKey, Tracks>,
    names: FastMap<u8, String>,
}

impl<W: Output> std::fmt::Debug for PerfettoSink<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfettoSink")
            .field("tracks", &self.tracks.len())
            .finish_non_exhaustive()
    }
}

impl<W: Output> PerfettoSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> PerfettoSink<W> {
        PerfettoSink {
            writer: Some(PerfettoWriter::new(out)),
            pids: FastMap::default(),
            tracks: FastMap::default(),
            names: FastMap::default(),
        }
    }

    fn tracks(&mut self, w: &mut PerfettoWriter<W>, thread: ThreadKey) -> io::Result<Tracks> {
        if let Some(t) = self.tracks.get(&thread) {
            return Ok(*t);
        }
        let pid = match self.pids.get(&thread.context) {
            Some(p) => *p,
            None => {
                let pid = match thread.context {
                    None => 1,
                    Some(_) => {
                        2 + i32::try_from(self.pids.values().filter(|&&p| p >= 2).count())
                            .unwrap_or(i32::MAX - 2)
                    }
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
        let tname = match self.names.get(&thread.id) {
            Some(n) => format!("trace ID {:#04x} ({n})", thread.id),
            None => format!("trace ID {:#04x}", thread.id),
        };
        let slices = w.thread_track(pid, i32::from(thread.id), &tname)?;
        let depth =
            w.counter_track(&format!("{tname} call depth"), Some("frames"), Some(slices))?;
        let t = Tracks { slices, depth };
        self.tracks.insert(thread, t);
        Ok(t)
    }
}

impl<W: Output> Sink for PerfettoSink<W> {
    fn name(&self) -> &str {
        "perfetto"
    }

    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        for (id, name) in &info.sources {
            self.names.insert(*id, name.clone());
        }
        Ok(())
    }

    fn interest(&self) -> Interest {
        Interest::StackChanges
    }

    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<()> {
        let instant = match event.kind {
            EventKind::Exception { number, .. } => Some(format!("exception {number}")),
            EventKind::Gap(r) => Some(format!("trace gap: {}", r.name())),
            EventKind::TraceOn { reason, .. } => Some(format!("trace on: {}", reason.name())),
            EventKind::AddrNacc { addr } => Some(format!("memory not accessible: {addr:#010x}")),
            _ => None,
        };
        if ctx.closed.is_empty() && ctx.opened.is_empty() && instant.is_none() {
            return Ok(());
        }
        let Some(mut w) = self.writer.take() else {
            return Err(io::Error::other("perfetto output already finished"));
        };
        let result = (|| {
            let t = self.tracks(&mut w, ctx.thread)?;
            let ts = ctx.clock.nanos(ctx.time);
            for _ in ctx.closed {
                w.end(t.slices, ts)?;
            }
            if let Some(name) = &instant {
                w.instant(t.slices, ts, name)?;
            }
            for f in ctx.opened {
                w.begin(t.slices, ts, ctx.name(f))?;
            }
            if !ctx.closed.is_empty() || !ctx.opened.is_empty() {
                w.counter(
                    t.depth,
                    ts,
                    i64::try_from(ctx.stack.len()).unwrap_or(i64::MAX),
                )?;
            }
            Ok(())
        })();
        self.writer = Some(w);
        result
    }

    fn finish(mut self: Box<Self>, _info: &RunInfo) -> io::Result<()> {
        match self.writer.take() {
            Some(w) => w.finish()?.complete(),
            None => Ok(()),
        }
    }
}
