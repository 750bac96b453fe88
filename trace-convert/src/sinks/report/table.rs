//! The per-function table of a report: calls, self and total
//! instructions and cycles, aggregated from the events and their stack
//! changes.
//!
//! - **self**: what ran while the function was the innermost frame: the
//!   weight the folded stacks give the stacks that end in it;
//! - **total**: what ran while the function was anywhere on the stack,
//!   counted once however often it is on it (recursion): the weight of
//!   the folded stacks that contain it. An inferred caller (a return out
//!   of the outermost frame) stands for the code that ran before it since
//!   the outermost frame it replaces was opened, as in the folded stacks;
//! - **calls**: frames opened for the function by a call, a tail call, an
//!   exception, the start of an RTOS task or, with inlined rows, entering
//!   an inlined copy.
//!
//! Rows are keyed by name: two functions of one name are one row, as they
//! are one frame name in the folded stacks. Without inlined rows, frames
//! of inlined functions are left out and their code counts for the
//! function it was inlined into.

use crate::callstack::{Frame, FrameKind, FuncId};
use crate::fast_map::FastMap;
use crate::sinks::{EventCtx, ThreadKey};
use std::collections::HashMap;
use trace_core::event::{Event, EventKind};

/// The row of cycles that no traced code carried (trace filtered off).
pub const UNTRACED: &str = "[untraced]";

/// One function's line of the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// The function's name.
    pub name: String,
    /// Frames opened for it (calls, tail calls, exceptions, inlined
    /// entries).
    pub calls: u64,
    /// Instructions executed while it was the innermost frame.
    pub self_instructions: u64,
    /// Instructions executed while it was on the stack.
    pub total_instructions: u64,
    /// Cycles while it was the innermost frame.
    pub self_cycles: u64,
    /// Cycles while it was on the stack.
    pub total_cycles: u64,
    /// PC samples of an ITM/DWT source in it (DWT periodic sampling).
    pub samples: u64,
}

/// Instructions and cycles counted so far, per thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Count {
    instructions: u64,
    cycles: u64,
}

impl Count {
    fn minus(self, other: Count) -> Count {
        Count {
            instructions: self.instructions.saturating_sub(other.instructions),
            cycles: self.cycles.saturating_sub(other.cycles),
        }
    }
}

/// A function on a thread's stack.
#[derive(Debug, Clone, Copy, Default)]
struct OnStack {
    /// Frames of it on the stack.
    depth: u32,
    /// The thread's count when it came on the stack.
    since: Count,
    /// The outermost frame's opening (`ThreadState::outer`) whose
    /// counts `added` belongs to.
    outer: u64,
    /// Added to its total since that opening.
    added: Count,
}

#[derive(Debug, Default)]
struct ThreadState {
    /// What ran on this thread so far.
    count: Count,
    /// The rows of the stack's frames (inlined frames left out unless
    /// shown), outermost first.
    stack: Vec<usize>,
    /// Per row on the stack or seen since the outermost frame opened.
    on: FastMap<usize, OnStack>,
    /// How many times an outermost frame was opened (not by an inferred
    /// caller), and the count then.
    outer: u64,
    outer_since: Count,
}

/// The report's aggregation; see the [module](self) docs.
#[derive(Debug, Default)]
pub struct ReportTable {
    inline: bool,
    rows: Vec<Row>,
    by_func: FastMap<FuncId, usize>,
    by_name: HashMap<String, usize>,
    /// Each thread's index in `states`.
    threads: FastMap<ThreadKey, usize>,
    states: Vec<ThreadState>,
    /// The thread of the last event and its index (most events follow
    /// one of the same thread).
    last: Option<(ThreadKey, usize)>,
    /// The rows and kinds of the frames opened by an event (kept to
    /// reuse its memory).
    opened: Vec<(usize, FrameKind)>,
    instructions: u64,
    cycles: u64,
}

impl ReportTable {
    /// Empty; `inline`: inlined functions get rows of their own.
    #[must_use]
    pub fn new(inline: bool) -> ReportTable {
        ReportTable {
            inline,
            ..ReportTable::default()
        }
    }

    fn shown(&self, f: &Frame) -> bool {
        self.inline || f.kind != FrameKind::Inline
    }

    fn row_named(&mut self, name: &str) -> usize {
        if let Some(&r) = self.by_name.get(name) {
            return r;
        }
        let r = self.rows.len();
        self.rows.push(Row {
            name: name.to_owned(),
            ..Row::default()
        });
        self.by_name.insert(name.to_owned(), r);
        r
    }

    fn row(&mut self, f: &Frame, ctx: &EventCtx<'_>) -> usize {
        if let Some(&r) = self.by_func.get(&f.func) {
            return r;
        }
        let r = self.row_named(ctx.name(f));
        self.by_func.insert(f.func, r);
        r
    }

    /// Feed one event with its context.
    pub fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) {
        if !ctx.closed.is_empty() || !ctx.opened.is_empty() {
            self.change(ctx);
        }
        let instructions = match event.kind {
            EventKind::Range(r) => u64::from(r.count),
            EventKind::PcSample { pc } => {
                self.sample(pc, ctx);
                return;
            }
            _ => 0,
        };
        let cycles = ctx.cycles;
        if instructions == 0 && cycles == 0 {
            return;
        }
        self.instructions += instructions;
        self.cycles += cycles;
        let t = self.thread(ctx.thread);
        let Some(state) = self.states.get_mut(t) else {
            return;
        };
        state.count.instructions += instructions;
        state.count.cycles += cycles;
        let top = state.stack.last().copied();
        let r = match top {
            Some(r) => r,
            None if cycles > 0 => self.row_named(UNTRACED),
            None => return,
        };
        if let Some(row) = self.rows.get_mut(r) {
            row.self_instructions += instructions;
            row.self_cycles += cycles;
            if top.is_none() {
                row.total_cycles += cycles;
            }
        }
    }

    /// A PC sample: one more for the function holding `pc` (its address
    /// when no symbol covers it, `[sleep]` for a processor asleep).
    #[inline(never)]
    fn sample(&mut self, pc: Option<u32>, ctx: &EventCtx<'_>) {
        let name = ctx.symbols.sample_name(pc);
        let r = self.row_named(&name);
        if let Some(row) = self.rows.get_mut(r) {
            row.samples += 1;
        }
    }

    /// The index of `thread`'s state, made when new.
    #[inline]
    fn thread(&mut self, thread: ThreadKey) -> usize {
        if let Some((k, i)) = self.last {
            if k == thread {
                return i;
            }
        }
        let next = self.states.len();
        let i = *self.threads.entry(thread).or_insert(next);
        if i == next {
            self.states.push(ThreadState::default());
        }
        self.last = Some((thread, i));
        i
    }

    /// Apply the frames closed and opened before an event.
    fn change(&mut self, ctx: &EventCtx<'_>) {
        let mut opened = std::mem::take(&mut self.opened);
        opened.clear();
        for f in ctx.opened {
            if self.shown(f) {
                opened.push((self.row(f, ctx), f.kind));
            }
        }
        let closed = ctx.closed.iter().filter(|f| self.shown(f)).count();
        let t = self.thread(ctx.thread);
        let mut state = match self.states.get_mut(t) {
            Some(s) => std::mem::take(s),
            None => return,
        };
        let now = state.count;
        let mut emptied = false;
        for _ in 0..closed {
            let Some(r) = state.stack.pop() else { break };
            emptied = state.stack.is_empty();
            let outer = state.outer;
            if let Some(on) = state.on.get_mut(&r) {
                on.depth = on.depth.saturating_sub(1);
                if on.depth == 0 {
                    let d = now.minus(on.since);
                    if on.outer != outer {
                        on.outer = outer;
                        on.added = Count::default();
                    }
                    on.added.instructions += d.instructions;
                    on.added.cycles += d.cycles;
                    if let Some(row) = self.rows.get_mut(r) {
                        row.total_instructions += d.instructions;
                        row.total_cycles += d.cycles;
                    }
                }
            }
        }
        for (i, &(r, kind)) in opened.iter().enumerate() {
            let inferred = i == 0 && kind == FrameKind::Inferred && emptied;
            if state.stack.is_empty() && !inferred {
                state.outer += 1;
                state.outer_since = now;
            }
            if matches!(
                kind,
                FrameKind::Call
                    | FrameKind::TailCall
                    | FrameKind::Handler
                    | FrameKind::Inline
                    | FrameKind::Task
            ) {
                if let Some(row) = self.rows.get_mut(r) {
                    row.calls += 1;
                }
            }
            let outer = state.outer;
            let outer_since = state.outer_since;
            let on = state.on.entry(r).or_default();
            if on.depth == 0 {
                if inferred {
                    // It stands for everything since the outermost frame
                    // it replaces was opened, less what it already had.
                    if on.outer != outer {
                        on.outer = outer;
                        on.added = Count::default();
                    }
                    let d = now.minus(outer_since).minus(on.added);
                    on.added.instructions += d.instructions;
                    on.added.cycles += d.cycles;
                    if let Some(row) = self.rows.get_mut(r) {
                        row.total_instructions += d.instructions;
                        row.total_cycles += d.cycles;
                    }
                }
                on.since = now;
            }
            on.depth += 1;
            state.stack.push(r);
        }
        if let Some(s) = self.states.get_mut(t) {
            *s = state;
        }
        self.opened = opened;
    }

    /// Close every frame still open (the converter closes them at the end
    /// of each thread; this only matters for a run cut short).
    pub fn close_all(&mut self) {
        for state in &mut self.states {
            let now = state.count;
            for (r, on) in &mut state.on {
                if on.depth > 0 {
                    let d = now.minus(on.since);
                    on.depth = 0;
                    if let Some(row) = self.rows.get_mut(*r) {
                        row.total_instructions += d.instructions;
                        row.total_cycles += d.cycles;
                    }
                }
            }
            state.stack.clear();
        }
    }

    /// Every row, in order of first sight.
    #[must_use]
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Instructions of the run.
    #[must_use]
    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    /// Cycles of the run (0 without cycle-accurate trace).
    #[must_use]
    pub fn cycles(&self) -> u64 {
        self.cycles
    }
}
