//! What the converter tells sinks: the run ([`RunInfo`]), each event's
//! shared context ([`EventCtx`]), and which events a sink is given
//! ([`Interest`]).

use crate::callstack::{Frame, Names, ThreadKey};
use crate::clock::ClockInfo;
use crate::input::source::Task as LinuxTask;
use crate::symbols::Symbolizer;
use crate::tasks::{Switch, Task};
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

/// What a sink learns about an event beyond the event itself.
pub struct EventCtx<'a> {
    /// The thread the event belongs to (after a context change, the new
    /// one).
    pub thread: ThreadKey,
    /// Clock ticks when the event began.
    pub time: u64,
    /// Clock ticks after it (a range's end; equal to `time` for instants).
    pub end: u64,
    /// Cycles the event carried (cycle-accurate trace), 0 otherwise.
    pub cycles: u64,
    /// Frames closed before the event, innermost first.
    pub closed: &'a [Frame],
    /// Frames opened before the event, outermost first.
    pub opened: &'a [Frame],
    /// The stack after the changes, outermost first.
    pub stack: &'a [Frame],
    /// Function names of frames.
    pub names: &'a Names,
    /// Symbols, for source lines.
    pub symbols: &'a Symbolizer,
    /// The memory image of the event's source, when decoding from a
    /// capture.
    pub memory: Option<&'a dyn MemoryImage>,
    /// The clock the times are on.
    pub clock: &'a ClockInfo,
    /// The RTOS tasks found so far, by number ([`ThreadKey::rtos`]; see
    /// [`crate::tasks`]).
    pub tasks: &'a [Task],
    /// The task switch that made `thread` run, on the first event handed
    /// on after it.
    pub switch: Option<&'a Switch>,
}

impl std::fmt::Debug for EventCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventCtx")
            .field("thread", &self.thread)
            .field("time", &self.time)
            .field("end", &self.end)
            .field("closed", &self.closed)
            .field("opened", &self.opened)
            .field("depth", &self.stack.len())
            .finish_non_exhaustive()
    }
}

impl EventCtx<'_> {
    /// The name of a frame's function.
    #[must_use]
    pub fn name(&self, frame: &Frame) -> &str {
        self.names.get(frame.func)
    }

    /// The RTOS task of `thread`, when it is one.
    #[must_use]
    #[inline]
    pub fn task(&self, thread: ThreadKey) -> Option<&Task> {
        task_of(self.tasks, thread)
    }
}

/// The RTOS task of `thread` in `tasks` (by number), when it is one.
#[must_use]
#[inline]
pub fn task_of(tasks: &[Task], thread: ThreadKey) -> Option<&Task> {
    let n = usize::try_from(thread.rtos?).ok()?;
    tasks.get(n.checked_sub(1)?)
}

/// What every sink is told before the first event and at the end.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The input (snapshot directory, capture or events file).
    pub input: String,
    /// The clock chosen for the run.
    pub clock: ClockInfo,
    /// The trace sources.
    pub sources: Vec<SourceName>,
    /// The Linux threads of a per-thread perf.data recording, which
    /// [`ThreadKey::task`] names.
    pub tasks: Vec<LinuxTask>,
    /// The RTOS tasks the run found, by number ([`ThreadKey::rtos`]):
    /// empty before the first event, complete when the sinks finish.
    pub rtos: Vec<Task>,
}

impl RunInfo {
    /// The Linux thread `tid`, when the run names it.
    #[must_use]
    pub fn task(&self, tid: u32) -> Option<&LinuxTask> {
        self.tasks.iter().find(|t| t.tid == tid)
    }
}

/// A trace source as the outputs name it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceName {
    /// Its trace ID.
    pub id: u8,
    /// Its protocol (`ETMv3`, `PTM`).
    pub protocol: String,
    /// The core it traces, when known: the core's name and type
    /// (`cpu_0 Cortex-A7`).
    pub core: Option<String>,
    /// The profile of that core, which names its exceptions.
    pub profile: crate::profile::Profile,
}

impl SourceName {
    /// The name of its thread track: `cpu_0 Cortex-A7 (trace ID 0x10,
    /// ETMv3)`, or without a known core `trace ID 0x10 (ETMv3)`.
    #[must_use]
    pub fn thread_name(&self) -> String {
        match &self.core {
            Some(core) => format!("{core} (trace ID {:#04x}, {})", self.id, self.protocol),
            None => format!("trace ID {:#04x} ({})", self.id, self.protocol),
        }
    }
}

/// The name of trace ID `id`'s thread track in `names` (from
/// [`SourceName::thread_name`]), else `trace ID 0x10`.
pub(crate) fn core_name(names: &crate::fast_map::FastMap<u8, String>, id: u8) -> String {
    names
        .get(&id)
        .cloned()
        .unwrap_or_else(|| format!("trace ID {id:#04x}"))
}

/// Which events a sink is given ([`Sink::interest`](super::Sink::interest)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interest {
    /// Every event.
    #[default]
    Every,
    /// Every event, but the ranges that open and close no frame and mark
    /// nothing, one after the other on one thread, handed on as one: the
    /// first of them with its instruction count the sum of theirs (its
    /// other fields are the first's own), in the context of the first but
    /// for the time they end at ([`EventCtx::end`](super::EventCtx::end)),
    /// their cycles summed ([`EventCtx::cycles`](super::EventCtx::cycles))
    /// and no memory image. For sinks that only weigh what runs (the
    /// folded stacks, the report). Summed only while no sink takes
    /// [`Interest::Every`] and no window applies.
    Weights,
    /// Only events that open or close frames, and exceptions, gaps,
    /// trace-on and memory-not-accessible events: what a timeline draws.
    /// Most events (ranges inside one function) are then never handed
    /// over.
    StackChanges,
    /// Every event as fed to the converter, without a context, in batches
    /// ([`Sink::events`](super::Sink::events)): for sinks that need nothing but the events
    /// (coverage). They are not given the end-of-trace events the
    /// converter makes for each thread still open at the end.
    EventsOnly,
    /// No events: a sink that only writes what it learns in
    /// [`Sink::begin`](super::Sink::begin) and
    /// [`Sink::finish`](super::Sink::finish), and what a sink that stopped
    /// ([`Flow::Stop`](super::Flow::Stop)) is given from then on.
    Nothing,
}

impl Interest {
    /// Whether a sink with this interest needs the call stacks and the
    /// clock.
    #[must_use]
    pub fn needs_stacks(self) -> bool {
        matches!(
            self,
            Interest::Every | Interest::Weights | Interest::StackChanges
        )
    }

    /// Whether a sink with this interest is given `event` with its context
    /// ([`Sink::event`](super::Sink::event)), when it opened or closed frames (`changed`).
    #[must_use]
    #[inline]
    pub fn wants(self, event: &Event, changed: bool) -> bool {
        match self {
            Interest::Every | Interest::Weights => true,
            Interest::StackChanges => changed || is_instant(event),
            Interest::EventsOnly | Interest::Nothing => false,
        }
    }
}

/// Exceptions, gaps, trace-on and memory-not-accessible events, and the
/// ITM/DWT events a timeline draws ([`super::itm`]): the events a
/// timeline marks without a change of the call stack.
#[must_use]
#[inline]
pub fn is_instant(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::Exception { .. }
            | EventKind::Gap(_)
            | EventKind::TraceOn { .. }
            | EventKind::AddrNacc { .. }
            | EventKind::Stimulus { .. }
            | EventKind::ExceptionTrace { .. }
            | EventKind::DataTrace { .. }
            | EventKind::Overflow
    )
}
