//! The task stage's decisions: at each place the flow may change context
//! ([`Tracker::step`]), which context runs, and the stretches it holds
//! back until it knows ([`Tracker::hold`]).

use super::known::{RoutineKind, Routines};
use super::probe::{Candidate, Goal, Outcome, Probe, Program};
use super::{Switch, Task, TaskKind, TaskOptions, TaskReport};
use crate::callstack::{CallStacks, Frame, FrameKind, ThreadKey, TransferKind};
use crate::symbols::{hex_name, Symbolizer};
use trace_core::event::{Event, EventKind, Isa, Range};
use trace_core::memory::{MemoryImage, Space};

/// Events held back at most, per stretch, before the stage gives up
/// waiting for the flow to tell which task it is.
pub(crate) const HOLD_LIMIT: usize = 1 << 16;

/// Where the flow goes on after a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// This context, its frames from `index` on closing where it arrives.
    Resume(ThreadKey, usize),
    /// This context, afresh; its first frame a task's entry when told.
    Start(ThreadKey, bool),
}

/// What to do with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Apply it, after these deferred events (an exception return and
    /// what came between it and the event).
    Go(Vec<Event>),
    /// Switch first (to `to`, recorded as `switch`), then apply the
    /// deferred events, then the event.
    Switch {
        to: Target,
        switch: Switch,
        before: Vec<Event>,
    },
    /// The stage keeps it (a deferred exception return, or the first
    /// event of a held stretch).
    Kept,
}

/// A held stretch the stage lets go: the decision for its first arrival
/// (`None`: the context that ran goes on) and its events, to be applied
/// again in order.
#[derive(Debug)]
pub(crate) struct Release {
    pub first: Option<(Target, Switch)>,
    pub events: Vec<Event>,
}

/// A stretch held back.
#[derive(Debug)]
struct Hold {
    events: Vec<Event>,
    probe: Probe,
    /// The context that ran before the stretch.
    from: ThreadKey,
    /// Where the stretch starts, and the offset of the event that arrived
    /// there.
    at: u32,
    offset: u64,
    /// `at` is a function's entry.
    entry: bool,
}

/// What the stage keeps of a core.
#[derive(Debug, Default)]
struct Core {
    /// The trace carries context IDs: they name the contexts.
    off: bool,
    /// An exception return whose destination is not known yet, and the
    /// events after it that do not tell (timestamps, cycle counts).
    deferred: Vec<Event>,
    /// The next arrival was decided by a held stretch.
    decided: bool,
    /// The number of the core's scheduler context.
    idle: Option<u32>,
    hold: Option<Hold>,
}

/// The task stage of a run.
#[derive(Debug)]
pub(crate) struct Tracker {
    on: bool,
    routines: Routines,
    /// By trace ID.
    cores: Vec<Core>,
    /// Per trace ID, whether the stage watches its events: a stretch is
    /// held, or an exception return waits for its destination.
    watch: Box<[bool; 256]>,
    /// How many trace IDs it watches.
    watched: usize,
    /// Per trace ID, whether its trace marks exception returns (PTM, and
    /// ETMv3 on ARMv7-M do; ETMv3 on Cortex-A/R does not): then a branch
    /// is never one without the mark.
    marked: Box<[bool; 256]>,
    report: TaskReport,
}

impl Tracker {
    /// The stage for `options`, the routines found in `symbols`.
    pub(crate) fn new(options: &TaskOptions, symbols: &Symbolizer) -> Tracker {
        let (routines, missing) = Routines::find(symbols, &options.switches);
        Tracker {
            on: options.on,
            routines,
            cores: (0..256).map(|_| Core::default()).collect(),
            watch: Box::new([false; 256]),
            watched: 0,
            marked: Box::new([false; 256]),
            report: TaskReport {
                missing,
                ..TaskReport::default()
            },
        }
    }

    /// Whether the stage watches trace ID `id`'s events (see
    /// [`Tracker::holds`], [`Tracker::step`]).
    #[inline]
    pub(crate) fn watching(&self, id: u8) -> bool {
        self.watch[usize::from(id)]
    }

    /// Whether a stretch of trace ID `id` is held: its next event goes to
    /// [`Tracker::hold`].
    pub(crate) fn holds(&self, id: u8) -> bool {
        self.core(id).is_some_and(|c| c.hold.is_some())
    }

    /// Whether any stretch is held.
    pub(crate) fn any_held(&self) -> bool {
        self.cores.iter().any(|c| c.hold.is_some())
    }

    /// The exception returns still waiting for their destination, taken.
    pub(crate) fn take_deferred(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        for id in 0..=255 {
            if let Some(c) = self.core_mut(id) {
                out.append(&mut c.deferred);
            }
            self.sync(id);
        }
        out
    }

    /// Make `watch` say again what trace ID `id`'s core holds.
    fn sync(&mut self, id: u8) {
        let now = self
            .core(id)
            .is_some_and(|c| c.hold.is_some() || !c.deferred.is_empty());
        let was = std::mem::replace(&mut self.watch[usize::from(id)], now);
        match (was, now) {
            (false, true) => self.watched += 1,
            (true, false) => self.watched -= 1,
            _ => {}
        }
    }

    /// Whether the stage watches any trace ID's events.
    #[inline]
    pub(crate) fn watches_any(&self) -> bool {
        self.watched > 0
    }

    /// Whether `e` (of a trace ID the stage does not watch) needs the
    /// stage's decision ([`Tracker::step`]): an exception return, a context
    /// ID, or an arrival that may be a switch (after a branch that may be
    /// an exception return, or where routines of the table are); else it
    /// is applied as it is.
    #[inline]
    pub(crate) fn looks_at(&self, e: &Event, stacks: &CallStacks) -> bool {
        self.on
            && match e.kind {
                EventKind::ExceptionReturn | EventKind::Context(_) => true,
                EventKind::Range(_) | EventKind::Exception { .. } => {
                    !self.routines.list().is_empty()
                        || (!self.marked[usize::from(e.id)] && stacks.branched_in_handler(e.id))
                }
                _ => false,
            }
    }

    /// The tasks so far, by number.
    pub(crate) fn tasks(&self) -> &[Task] {
        &self.report.tasks
    }

    /// What the stage found; `instructions`: per context.
    pub(crate) fn report(&self, instructions: Vec<(ThreadKey, u64)>) -> TaskReport {
        TaskReport {
            instructions,
            ..self.report.clone()
        }
    }

    fn core(&self, id: u8) -> Option<&Core> {
        self.cores.get(usize::from(id))
    }

    fn core_mut(&mut self, id: u8) -> Option<&mut Core> {
        self.cores.get_mut(usize::from(id))
    }

    /// A new task of trace ID `id`, numbered next.
    fn new_task(&mut self, id: u8, name: String, start: u32, kind: TaskKind) -> u32 {
        let number = u32::try_from(self.report.tasks.len() + 1).unwrap_or(u32::MAX);
        self.report.tasks.push(Task {
            number,
            id,
            name,
            start,
            kind,
        });
        number
    }

    /// Decide what to do with `e` (not held), its source's call stacks
    /// as they stand before it.
    pub(crate) fn step(
        &mut self,
        e: &Event,
        stacks: &CallStacks,
        memory: Option<&dyn MemoryImage>,
        symbols: &Symbolizer,
    ) -> Step {
        let step = self.decide(e, stacks, memory, symbols);
        self.sync(e.id);
        step
    }

    fn decide(
        &mut self,
        e: &Event,
        stacks: &CallStacks,
        memory: Option<&dyn MemoryImage>,
        symbols: &Symbolizer,
    ) -> Step {
        let id = e.id;
        let Some(core) = self.cores.get_mut(usize::from(id)) else {
            return Step::Go(Vec::new());
        };
        let at = match e.kind {
            EventKind::Range(r) => r.start,
            EventKind::Exception { ret: Some(ret), .. } => ret,
            EventKind::ExceptionReturn if !core.off => {
                self.marked[usize::from(id)] = true;
                // Applied where the flow arrives: it may return to another
                // task than the one it leaves.
                if core.deferred.is_empty() {
                    core.deferred.push(*e);
                    return Step::Kept;
                }
                let earlier = std::mem::take(&mut core.deferred);
                core.deferred.push(*e);
                return Step::Go(earlier);
            }
            EventKind::Context(c) if c.context_id.is_some() => {
                core.off = true;
                return Step::Go(std::mem::take(&mut core.deferred));
            }
            EventKind::Timestamp { .. }
            | EventKind::CycleCount(_)
            | EventKind::Inconsistent { .. }
            | EventKind::Context(_) => {
                if core.deferred.is_empty() {
                    return Step::Go(Vec::new());
                }
                core.deferred.push(*e);
                return Step::Kept;
            }
            _ => return Step::Go(std::mem::take(&mut core.deferred)),
        };
        if core.off || std::mem::take(&mut core.decided) {
            return Step::Go(std::mem::take(&mut core.deferred));
        }
        let last = stacks.last_transfer(id);
        // The common case: a call, a return or the next instruction, no
        // exception return waiting and no routine to look at.
        if core.deferred.is_empty()
            && self.routines.list().is_empty()
            && !last.is_some_and(|l| l.kind == TransferKind::Branch)
        {
            return Step::Go(Vec::new());
        }
        let current = stacks.current(id);
        let idle = core.idle;
        let from = last.map(|l| l.last());
        let routines = &self.routines;
        let from_routine = from.and_then(|a| routines.at(a));
        // Into the scheduler from outside it: the running task is
        // suspended, the scheduler runs as the core's idle context.
        if let Some(r) = routines.at(at) {
            let inside = from_routine.is_some_and(|f| f.start == r.start);
            if r.kind == RoutineKind::Scheduler && !inside && last.is_some() {
                if current.rtos.is_some() && current.rtos == idle {
                    return Step::Go(self.deferred(id));
                }
                let number = match idle {
                    Some(n) => n,
                    None => {
                        let n = self.new_task(id, "idle".to_owned(), at, TaskKind::Idle);
                        if let Some(c) = self.core_mut(id) {
                            c.idle = Some(n);
                        }
                        n
                    }
                };
                return self.switch_to(
                    e,
                    current,
                    Target::Start(with_rtos(current, number), false),
                    at,
                );
            }
        }
        // Out of a switch routine (a call out of it is no exit).
        let leaves = from_routine.is_some_and(|r| {
            matches!(r.kind, RoutineKind::Scheduler | RoutineKind::Switch)
                && !(r.start..r.end).contains(&at)
        }) && !last.is_some_and(|l| l.kind == TransferKind::Call);
        let frames = stacks.stack(current);
        let handler = || frames.iter().rposition(|f| f.kind == FrameKind::Handler);
        let deferred = self.core(id).is_some_and(|c| !c.deferred.is_empty());
        // Most arrivals are none of these: decided before the frames or
        // the code are looked at.
        let marked = self.marked[usize::from(id)];
        let exception_return = || {
            deferred
                || !marked
                    && last.is_some_and(|l| {
                        l.kind == TransferKind::Branch
                            && memory.is_some_and(|m| {
                                is_exception_return(m, l.last(), l.isa, l.last_size)
                            })
                    })
        };
        let handler = if leaves {
            handler()
        } else {
            if !(deferred || last.is_some_and(|l| l.kind == TransferKind::Branch)) {
                return Step::Go(self.deferred(id));
            }
            let h = handler();
            if h.is_none() || !exception_return() {
                return Step::Go(self.deferred(id));
            }
            h
        };
        // A handler whose return address the trace did not give returns
        // where it will.
        if !leaves
            && handler
                .and_then(|i| frames.get(i))
                .is_some_and(|f| f.ret.is_none())
        {
            return Step::Go(self.deferred(id));
        }
        let mut candidates: Vec<Candidate> = stacks
            .contexts(id)
            .filter(|(k, _)| k.rtos.is_none() || k.rtos != idle)
            .filter_map(|(k, f)| waiting_at(f, at).map(|i| Candidate::new(k, i, f)))
            .collect();
        let waiting: Vec<u32> = stacks
            .contexts(id)
            .filter(|(k, _)| k.rtos.is_none() || k.rtos != idle)
            .flat_map(|(_, f)| waiting_addresses(f))
            .collect();
        match candidates.len() {
            0 => {
                if symbols.is_empty() {
                    let n = self.new_task(id, hex_name(at), at, TaskKind::Task);
                    return self.switch_to(
                        e,
                        current,
                        Target::Start(with_rtos(current, n), false),
                        at,
                    );
                }
                self.begin_hold(
                    e,
                    current,
                    waiting,
                    Goal::Name { start: at },
                    from,
                    symbols,
                    memory,
                )
            }
            1 => {
                let c = candidates.remove(0);
                if c.key == current {
                    return Step::Go(self.deferred(id));
                }
                self.switch_to(e, current, Target::Resume(c.key, c.index), at)
            }
            _ => {
                self.report.held += 1;
                self.begin_hold(
                    e,
                    current,
                    waiting,
                    Goal::Which(candidates),
                    from,
                    symbols,
                    memory,
                )
            }
        }
    }

    /// The deferred events of trace ID `id`, taken.
    fn deferred(&mut self, id: u8) -> Vec<Event> {
        self.core_mut(id)
            .map(|c| std::mem::take(&mut c.deferred))
            .unwrap_or_default()
    }

    fn switch_to(&mut self, e: &Event, from: ThreadKey, to: Target, at: u32) -> Step {
        self.report.switches += 1;
        let key = match to {
            Target::Resume(k, _) | Target::Start(k, _) => k,
        };
        Step::Switch {
            to,
            switch: Switch {
                offset: e.offset,
                from,
                to: key,
                at,
            },
            before: self.deferred(e.id),
        }
    }

    /// Hold `e` and what follows until `goal` is reached.
    #[allow(clippy::too_many_arguments)]
    fn begin_hold(
        &mut self,
        e: &Event,
        current: ThreadKey,
        waiting: Vec<u32>,
        goal: Goal,
        from: Option<u32>,
        symbols: &Symbolizer,
        memory: Option<&dyn MemoryImage>,
    ) -> Step {
        let at = match e.kind {
            EventKind::Range(r) => r.start,
            EventKind::Exception { ret, .. } => ret.unwrap_or_default(),
            _ => 0,
        };
        let program = Program {
            symbols,
            routines: &self.routines,
        };
        let mut probe = Probe::new(goal, at, from, waiting, &program);
        // The first event only sets where the flow goes next.
        let _ = probe.feed(e, &program, &mut |r| range_returns(memory, r));
        let Some(core) = self.core_mut(e.id) else {
            return Step::Go(Vec::new());
        };
        let mut events = std::mem::take(&mut core.deferred);
        events.push(*e);
        core.hold = Some(Hold {
            events,
            probe,
            from: current,
            at,
            offset: e.offset,
            entry: symbols.is_entry(at),
        });
        Step::Kept
    }

    /// Hold `e` too (its trace ID is held); the stretch when it ends.
    pub(crate) fn hold(
        &mut self,
        e: &Event,
        memory: Option<&dyn MemoryImage>,
        symbols: &Symbolizer,
    ) -> Option<Release> {
        let program = Program {
            symbols,
            routines: &self.routines,
        };
        let hold = self.cores.get_mut(usize::from(e.id))?.hold.as_mut()?;
        hold.events.push(*e);
        let outcome = hold
            .probe
            .feed(e, &program, &mut |r| range_returns(memory, r));
        let outcome = if outcome == Outcome::Open && hold.events.len() >= HOLD_LIMIT {
            hold.probe.give_up(&program)
        } else {
            outcome
        };
        if outcome == Outcome::Open {
            return None;
        }
        Some(self.release(e.id, outcome))
    }

    /// Let every held stretch go (the end of a capture), deciding with what
    /// is known.
    pub(crate) fn release_all(&mut self, symbols: &Symbolizer) -> Vec<Release> {
        let program = Program {
            symbols,
            routines: &self.routines,
        };
        let ids: Vec<u8> = (0..=255u8)
            .filter(|&id| self.core(id).is_some_and(|c| c.hold.is_some()))
            .collect();
        let outcomes: Vec<(u8, Outcome)> = ids
            .iter()
            .filter_map(|id| {
                let h = self.core(*id)?.hold.as_ref()?;
                Some((*id, h.probe.give_up(&program)))
            })
            .collect();
        outcomes
            .into_iter()
            .map(|(id, o)| self.release(id, o))
            .collect()
    }

    /// End trace ID `id`'s stretch with `outcome`.
    fn release(&mut self, id: u8, outcome: Outcome) -> Release {
        let release = self.let_go(id, outcome);
        self.sync(id);
        release
    }

    fn let_go(&mut self, id: u8, outcome: Outcome) -> Release {
        let Some(core) = self.core_mut(id) else {
            return Release {
                first: None,
                events: Vec::new(),
            };
        };
        let Some(hold) = core.hold.take() else {
            return Release {
                first: None,
                events: Vec::new(),
            };
        };
        core.decided = true;
        let switch = |to: ThreadKey| Switch {
            offset: hold.offset,
            from: hold.from,
            to,
            at: hold.at,
        };
        let target = match outcome {
            Outcome::Open => None,
            Outcome::Continues(c) if c.key == hold.from => None,
            Outcome::Continues(c) => Some(Target::Resume(c.key, c.index)),
            Outcome::Named(name) => {
                let kind = if name == "idle" {
                    TaskKind::Idle
                } else {
                    TaskKind::Task
                };
                let n = self.new_task(id, name, hold.at, kind);
                Some(Target::Start(with_rtos(hold.from, n), hold.entry))
            }
            Outcome::Unknown => {
                self.report.unresolved += 1;
                let n = self.new_task(id, "unknown".to_owned(), hold.at, TaskKind::Unknown);
                Some(Target::Start(with_rtos(hold.from, n), false))
            }
        };
        let first = target.map(|t| {
            self.report.switches += 1;
            let key = match t {
                Target::Resume(k, _) | Target::Start(k, _) => k,
            };
            (t, switch(key))
        });
        Release {
            first,
            events: hold.events,
        }
    }
}

/// `key` on RTOS task `number`.
fn with_rtos(key: ThreadKey, number: u32) -> ThreadKey {
    ThreadKey {
        rtos: Some(number),
        ..key
    }
}

/// The frame of `frames` that waits for the flow to come back to `at`: the
/// innermost real frame, or else the innermost exception frame, when it
/// returns there.
fn waiting_at(frames: &[Frame], at: u32) -> Option<usize> {
    let real = frames.iter().rposition(|f| f.kind != FrameKind::Inline)?;
    if frames.get(real).is_some_and(|f| f.ret == Some(at)) {
        return Some(real);
    }
    let handler = frames.iter().rposition(|f| f.kind == FrameKind::Handler)?;
    frames
        .get(handler)
        .is_some_and(|f| f.ret == Some(at))
        .then_some(handler)
}

/// Where a context with `frames` waits: the return addresses of its
/// innermost real frame and innermost exception frame.
fn waiting_addresses(frames: &[Frame]) -> impl Iterator<Item = u32> + '_ {
    let real = frames.iter().rev().find(|f| f.kind != FrameKind::Inline);
    let handler = frames.iter().rev().find(|f| f.kind == FrameKind::Handler);
    real.and_then(|f| f.ret)
        .into_iter()
        .chain(handler.and_then(|f| f.ret))
}

/// Whether range `r` ends in an exception return, as `memory` shows.
fn range_returns(memory: Option<&dyn MemoryImage>, r: &Range) -> bool {
    memory.is_some_and(|m| {
        is_exception_return(
            m,
            r.end.wrapping_sub(u32::from(r.last_size)),
            r.isa,
            r.last_size,
        )
    })
}

/// Whether the instruction of `size` bytes at `addr` in `memory` is an
/// exception return (`SUBS PC, LR`, `MOVS PC, LR`, `LDM ..^`, `RFE`,
/// `ERET`).
fn is_exception_return(memory: &dyn MemoryImage, addr: u32, isa: Isa, size: u8) -> bool {
    let mut bytes = [0u8; 4];
    let n = memory.read(Space::Any, addr, &mut bytes);
    isa_decode::decode(isa, &bytes[..n], addr)
        .is_some_and(|i| i.size == size && i.kind == isa_decode::Kind::ExceptionReturn)
}
