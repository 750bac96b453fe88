//! The RTOS tasks of a run and their switches as JSON lines (`--tasks
//! FILE`; see [`crate::tasks`] and the schema in `docs/jsonl.md`).
//!
//! Each task gets a `task` line when it first runs, each switch a
//! `task_switch` line, in the order they happen per trace ID:
//!
//! ```json
//! {"kind":"task","task":2,"id":16,"name":"task_a","type":"task","start":460}
//! {"kind":"task_switch","offset":1206,"id":16,"from":"task_a","to":"task_b","from_task":2,"to_task":3,"address":850,"time":16877}
//! ```
//!
//! `from` and `to` name the contexts (`null` for what ran on the core
//! before its first switch, whose `from_task`/`to_task` are absent);
//! `time` is in nanoseconds on the run's clock.

use crate::fast_map::FastSet;
use crate::sinks::{EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink, ThreadKey};
use crate::tasks::{Task, TaskKind};
use std::io;
use trace_core::event::Event;

/// The tasks sink.
#[derive(Debug)]
pub struct TasksSink<W: Output> {
    out: W,
    /// The tasks whose `task` line is written.
    written: FastSet<u32>,
}

impl<W: Output> TasksSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> TasksSink<W> {
        TasksSink {
            out,
            written: FastSet::default(),
        }
    }

    fn task_line(&mut self, task: &Task) -> io::Result<()> {
        if !self.written.insert(task.number) {
            return Ok(());
        }
        let kind = match task.kind {
            TaskKind::Task => "task",
            TaskKind::Idle => "idle",
            TaskKind::Unknown => "unknown",
        };
        let line = serde_json::json!({
            "kind": "task",
            "task": task.number,
            "id": task.id,
            "name": task.name,
            "type": kind,
            "start": task.start,
        });
        writeln!(self.out, "{line}")
    }
}

impl<W: Output> Sink for TasksSink<W> {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "tasks"
    }

    fn interest(&self) -> Interest {
        Interest::StackChanges
    }

    fn event(&mut self, _event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow> {
        let Some(s) = ctx.switch else {
            return Ok(Flow::Continue);
        };
        let name = |k: ThreadKey| ctx.task(k).map(|t| t.name.clone());
        for k in [s.from, s.to] {
            if let Some(t) = ctx.task(k) {
                let t = t.clone();
                self.task_line(&t)?;
            }
        }
        let line = serde_json::json!({
            "kind": "task_switch",
            "offset": s.offset,
            "id": s.to.id,
            "from": name(s.from),
            "to": name(s.to),
            "from_task": s.from.rtos,
            "to_task": s.to.rtos,
            "address": s.at,
            "time": ctx.clock.nanos(ctx.time),
        });
        writeln!(self.out, "{line}")?;
        Ok(Flow::Continue)
    }

    fn finish(&mut self, info: &RunInfo) -> io::Result<()> {
        for t in &info.rtos {
            self.task_line(t)?;
        }
        self.out.complete()
    }
}
