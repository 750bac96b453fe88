//! RTOS tasks from the instruction flow alone: which task of an RTOS each
//! event belongs to, so that every output keeps a call stack, a track and
//! a flame graph per task instead of stacking one task on another.
//!
//! A task is an execution context: it is suspended inside an exception
//! handler (IRQ, SVC, PendSV) or in the scheduler, and it resumes exactly
//! where it was suspended. So the stage keeps one call stack per context
//! ([`crate::callstack`] keys it by [`ThreadKey::rtos`]) and watches the
//! places where the flow may go from one context to another:
//!
//! - an **exception return** (found by the instruction at the end of the
//!   range, `SUBS PC, LR`, `MOVS PC, LR`, `LDM ..^`, `RFE`, or by the
//!   trace's exception-return packet) of a context that holds an
//!   exception frame;
//! - a **branch or return out of a switch routine** ([`known`]: a first
//!   task start, a scheduler's exit, `--task-switch`);
//! - a **branch into a scheduler** ([`known::RoutineKind::Scheduler`]),
//!   which suspends the running task; the scheduler runs as the core's
//!   idle context.
//!
//! Where the flow arrives there, the contexts that wait are those whose
//! innermost frame (or innermost exception frame) returns to that address.
//! One: it resumes (its frames above the one it waited in close); it may
//! be the context that was running. None: a new task starts, named after
//! its entry function (through trampolines such as
//! `_tx_thread_shell_entry` and tail calls, up to its first call; `idle`
//! for an idle task; its first address without symbols). Several (tasks
//! blocked at the same SVC site): the stage holds the flow back and
//! follows it until a return below the frame it resumed in tells which
//! stack it continues ([`probe`]); what ran meanwhile goes to that task.
//! When nothing tells them apart before the flow leaves again (the same
//! code with the same stack), the stretch goes to a context of its own,
//! named `unknown`, and the run's report counts it: the stage never
//! guesses. A context that never resumes (a deleted task) keeps its
//! frames until the end of the trace.
//!
//! Where the trace carries context IDs, the stage leaves that core alone:
//! the context IDs name the contexts ([`ThreadKey::context`]).
//!
//! The method, its limits and the table are described in `docs/tasks.md`.

pub mod known;
pub mod probe;
mod tracker;

pub(crate) use tracker::{Release, Step, Target, Tracker};

use crate::callstack::ThreadKey;

/// How the task stage runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOptions {
    /// Find tasks at all (`--no-tasks` turns it off).
    pub on: bool,
    /// Functions whose exit resumes or starts a task, besides the known
    /// ones (`--task-switch SYMBOL`).
    pub switches: Vec<String>,
}

impl Default for TaskOptions {
    fn default() -> TaskOptions {
        TaskOptions {
            on: true,
            switches: Vec::new(),
        }
    }
}

/// What a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskKind {
    /// A task that started (or was first resumed) in the trace.
    Task,
    /// The idle task, or a scheduler waiting for a ready task.
    Idle,
    /// A stretch the stage could not tell to which of several waiting
    /// tasks it belongs.
    Unknown,
}

/// A task the stage found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Its number ([`ThreadKey::rtos`]), from 1 in order of appearance.
    pub number: u32,
    /// The trace ID of its core.
    pub id: u8,
    /// Its name: its entry function, `idle`, `unknown`, or its first
    /// address (`0x…`) without symbols.
    pub name: String,
    /// Where it was first seen running.
    pub start: u32,
    /// What it is.
    pub kind: TaskKind,
}

/// A switch from one context to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    /// The offset of the event where the new context runs.
    pub offset: u64,
    /// The context left.
    pub from: ThreadKey,
    /// The context that runs.
    pub to: ThreadKey,
    /// Where the new context runs.
    pub at: u32,
}

/// What the stage found in a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskReport {
    /// The tasks, by number.
    pub tasks: Vec<Task>,
    /// Instructions per context (cores' initial contexts included).
    pub instructions: Vec<(ThreadKey, u64)>,
    /// Task switches.
    pub switches: u64,
    /// Resumptions held back because several tasks waited there.
    pub held: u64,
    /// Of those, the ones no return told apart (their stretches went to an
    /// `unknown` context).
    pub unresolved: u64,
    /// `--task-switch` names no function has.
    pub missing: Vec<String>,
}

impl TaskReport {
    /// The task numbered `number`.
    #[must_use]
    pub fn task(&self, number: u32) -> Option<&Task> {
        self.tasks
            .get(usize::try_from(number).ok()?.checked_sub(1)?)
    }
}

#[cfg(test)]
mod tests;
