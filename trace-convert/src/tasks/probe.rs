//! Following a stretch of flow the task stage holds back: which of the
//! tasks waiting where the flow resumed it continues ([`Goal::Which`]),
//! or which function names a task that just started ([`Goal::Name`]).
//!
//! The probe keeps only the return addresses of the frames the stretch
//! opens. A return to an address it did not open goes below the frame the
//! task resumed in: that is the evidence. Each candidate expects the
//! return addresses of its own frames below that one, innermost first; a
//! candidate whose next expected address is another one is ruled out, one
//! whose stack ends there (its outermost frame, whose caller the trace
//! never showed) cannot be. A plain branch counts as a return only when
//! some candidate expects its target.

use super::known::{RoutineKind, Routines};
use crate::callstack::{Frame, FrameKind, ThreadKey};
use crate::symbols::{hex_name, Symbolizer};
use trace_core::event::{Event, EventKind, InsnClass, Range};

/// A context waiting where the flow resumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its thread.
    pub key: ThreadKey,
    /// The frame it waits in (the one returning where the flow resumed).
    pub index: usize,
    /// The return addresses of its frames below that one, innermost first,
    /// up to a frame whose return the trace never showed (`None`).
    expected: Vec<Option<u32>>,
    /// Not ruled out.
    alive: bool,
}

impl Candidate {
    /// `key`, waiting in frame `index` of `frames`.
    #[must_use]
    pub fn new(key: ThreadKey, index: usize, frames: &[Frame]) -> Candidate {
        let mut expected = Vec::new();
        for f in frames.get(..index).unwrap_or_default().iter().rev() {
            if f.kind == FrameKind::Inline {
                continue;
            }
            expected.push(f.ret);
            if f.ret.is_none() {
                break;
            }
        }
        Candidate {
            key,
            index,
            expected,
            alive: true,
        }
    }
}

/// What a probe finds out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Goal {
    /// Which of these contexts the flow continues.
    Which(Vec<Candidate>),
    /// The name of a task that started at `start`.
    Name {
        /// Where it started.
        start: u32,
    },
}

/// How a held stretch ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Not known yet: hold the next event too.
    Open,
    /// The flow continues this candidate.
    Continues(Candidate),
    /// No candidate or several remain, and the stretch ended (another
    /// switch, a gap, the end of the trace, the hold's bound).
    Unknown,
    /// The new task's name.
    Named(String),
}

/// The transfer the latest range's last instruction makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transfer {
    None,
    Call(u32),
    Return,
    Branch,
    ExceptionReturn,
}

/// What the probe needs to know about the program.
pub struct Program<'a> {
    /// Function names and entries.
    pub symbols: &'a Symbolizer,
    /// The known routines.
    pub routines: &'a Routines,
}

/// Follows a held stretch.
#[derive(Debug, Clone)]
pub struct Probe {
    goal: Goal,
    /// Return addresses of the frames the stretch opened.
    local: Vec<u32>,
    pending: Transfer,
    prev_end: Option<u32>,
    /// The latest range's last instruction.
    last: u32,
    /// Returns below the frame resumed so far.
    below: usize,
    /// Naming: the function that names the task so far (its entry, or the
    /// address the task started at), and the depth of its frame in
    /// `local`.
    root: u32,
    base: usize,
    /// Where other contexts of the core wait: an exception return of the
    /// stretch to one of these may go to any of them.
    waiting: Vec<u32>,
}

impl Probe {
    /// A probe for `goal`, the flow arriving at `at` from an instruction
    /// at `from` (`None`: unknown).
    #[must_use]
    pub fn new(
        goal: Goal,
        at: u32,
        from: Option<u32>,
        waiting: Vec<u32>,
        program: &Program<'_>,
    ) -> Probe {
        let root = program.symbols.function(at).map_or(at, |f| f.start);
        Probe {
            goal,
            local: Vec::new(),
            pending: Transfer::None,
            prev_end: None,
            last: from.unwrap_or(at),
            below: 0,
            root,
            base: 0,
            waiting,
        }
    }

    /// The name the task has so far.
    fn name(&self, program: &Program<'_>) -> String {
        if program.routines.is(self.root, RoutineKind::Idle) {
            return "idle".to_owned();
        }
        program
            .symbols
            .function(self.root)
            .map_or_else(|| hex_name(self.root), |f| f.name.clone())
    }

    /// The outcome when the stretch ends here, before what it would tell
    /// next (the hold's bound, the end of the capture).
    #[must_use]
    pub fn give_up(&self, program: &Program<'_>) -> Outcome {
        self.ended(program)
    }

    /// The outcome when the stretch ends here.
    fn ended(&self, program: &Program<'_>) -> Outcome {
        match &self.goal {
            Goal::Name { .. } => Outcome::Named(self.name(program)),
            Goal::Which(c) => {
                let mut alive = c.iter().filter(|c| c.alive);
                match (alive.next(), alive.next()) {
                    (Some(one), None) if self.below > 0 => Outcome::Continues(one.clone()),
                    _ => Outcome::Unknown,
                }
            }
        }
    }

    /// Follow `e`, the next event of the stretch (the first is the one
    /// that arrived where the stretch starts); `exception_return` says
    /// whether a range ends in an exception return (as the memory image
    /// shows).
    pub fn feed(
        &mut self,
        e: &Event,
        program: &Program<'_>,
        exception_return: &mut dyn FnMut(&Range) -> bool,
    ) -> Outcome {
        match &e.kind {
            EventKind::Range(r) => {
                if let Some(end) = self.arrive(r.start, program) {
                    return end;
                }
                self.pending = transfer_after(r);
                if self.pending == Transfer::Branch && exception_return(r) {
                    self.pending = Transfer::ExceptionReturn;
                }
                self.prev_end = Some(r.end);
                self.last = r.end.wrapping_sub(u32::from(r.last_size));
                Outcome::Open
            }
            EventKind::Exception { ret, .. } => {
                if let Some(ret) = ret {
                    if let Some(end) = self.arrive(*ret, program) {
                        return end;
                    }
                }
                self.local.push(ret.unwrap_or(u32::MAX));
                self.pending = Transfer::None;
                self.prev_end = None;
                Outcome::Open
            }
            EventKind::ExceptionReturn => {
                self.pending = Transfer::ExceptionReturn;
                Outcome::Open
            }
            EventKind::Context(c) if c.context_id.is_some() => self.ended(program),
            EventKind::TraceOn { .. }
            | EventKind::NoSync
            | EventKind::Gap(_)
            | EventKind::AddrNacc { .. }
            | EventKind::EndOfTrace => self.ended(program),
            _ => Outcome::Open,
        }
    }

    /// The flow arrives at `target`: settle the pending transfer. Returns
    /// the outcome when the stretch ends here.
    fn arrive(&mut self, target: u32, program: &Program<'_>) -> Option<Outcome> {
        let routines = program.routines;
        let from = self.last;
        // Into a scheduler, or out of a switch routine: another switch.
        let left = routines.at(from).filter(|r| {
            matches!(r.kind, RoutineKind::Scheduler | RoutineKind::Switch)
                && !(r.start..r.end).contains(&target)
        });
        let entered = routines
            .at(target)
            .filter(|r| r.kind == RoutineKind::Scheduler && !(r.start..r.end).contains(&from));
        let call = matches!(self.pending, Transfer::Call(_));
        if self.prev_end.is_some() && ((left.is_some() && !call) || entered.is_some()) {
            return Some(self.ended(program));
        }
        let mut transfer = std::mem::replace(&mut self.pending, Transfer::None);
        if transfer == Transfer::None && self.prev_end.is_some_and(|p| p != target) {
            transfer = Transfer::Branch;
        }
        match transfer {
            Transfer::None => None,
            Transfer::Call(ret) => {
                let depth = self.local.len();
                self.local.push(ret);
                if depth == self.base {
                    if program.routines.is(self.root, RoutineKind::Trampoline) {
                        // The trampoline calls the task's entry.
                        self.root = program.symbols.function(target).map_or(target, |f| f.start);
                        self.base = self.local.len();
                    } else if matches!(self.goal, Goal::Name { .. }) {
                        return Some(self.ended(program));
                    }
                }
                None
            }
            Transfer::Return | Transfer::Branch | Transfer::ExceptionReturn => {
                if transfer == Transfer::ExceptionReturn && self.waiting.contains(&target) {
                    // Another context waits there too: a switch may be.
                    return Some(self.ended(program));
                }
                if let Some(i) = self.local.iter().rposition(|&r| r == target) {
                    self.local.truncate(i);
                    if self.local.len() < self.base {
                        return Some(self.ended(program));
                    }
                    return None;
                }
                if transfer == Transfer::ExceptionReturn {
                    // Back to no frame of the stretch: a switch.
                    return Some(self.ended(program));
                }
                self.below_or_jump(target, transfer == Transfer::Return, program)
            }
        }
    }

    /// A return (`ret`) or branch to `target`, no frame of the stretch's:
    /// evidence when it goes below the frame resumed, else a jump (a tail
    /// call names the task after its target).
    fn below_or_jump(&mut self, target: u32, ret: bool, program: &Program<'_>) -> Option<Outcome> {
        match &mut self.goal {
            Goal::Name { .. } => {
                if ret && self.local.len() == self.base {
                    // The task's root returned.
                    return Some(self.ended(program));
                }
                if self.local.len() == self.base {
                    if let Some(f) = program.symbols.function(target) {
                        if f.start == target && f.start != self.root {
                            self.root = f.start;
                        }
                    }
                }
                None
            }
            Goal::Which(candidates) => {
                if !self.local.is_empty() {
                    return None;
                }
                let k = self.below;
                let expects = candidates
                    .iter()
                    .any(|c| c.alive && c.expected.get(k) == Some(&Some(target)));
                if !ret && !expects {
                    return None;
                }
                for c in candidates.iter_mut().filter(|c| c.alive) {
                    if matches!(c.expected.get(k), Some(Some(x)) if *x != target) {
                        c.alive = false;
                    }
                }
                self.below += 1;
                let exact = candidates
                    .iter()
                    .filter(|c| c.alive && c.expected.get(k) == Some(&Some(target)))
                    .count();
                let alive = candidates.iter().filter(|c| c.alive).count();
                match alive {
                    0 => Some(Outcome::Unknown),
                    1 if exact == 1 => candidates
                        .iter()
                        .find(|c| c.alive)
                        .map(|c| Outcome::Continues(c.clone())),
                    _ => None,
                }
            }
        }
    }
}

/// The transfer a range's last instruction makes (as the call stacks see
/// it; exception returns are told apart by the caller).
fn transfer_after(r: &Range) -> Transfer {
    let branch = matches!(r.last, InsnClass::Branch | InsnClass::IndirectBranch);
    if !r.executed || !branch {
        Transfer::None
    } else if r.link {
        Transfer::Call(r.end)
    } else if r.ret {
        Transfer::Return
    } else {
        Transfer::Branch
    }
}
