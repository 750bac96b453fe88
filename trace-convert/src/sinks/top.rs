//! The live view of `trace-convert top`: the per-function counts of the
//! report ([`ReportTable`]), per RTOS task when tasks are known, the
//! exceptions and the trace's health (gaps, overflows, addresses the
//! image does not hold, inconsistencies), counted into shared
//! [`TopCounts`] whose [`TopView`] a terminal (or anything else) takes
//! while the decode goes on.
//!
//! The sink stops the decode ([`Flow::Stop`]) once its stop flag is set:
//! a file's decode then ends early, as a stream's does.

use super::report::by_task::ByTask;
use super::report::table::{ReportTable, Row};
use super::{EventCtx, Flow, NoParts, RunInfo, Sink};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use trace_core::event::{Event, EventKind, TraceOnReason};

/// Events between two looks at the stop flag.
const CHECK_EVERY: u32 = 4096;

/// The trace's health: what the decode could not follow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Health {
    /// Holes in the decoded flow ([`EventKind::Gap`]).
    pub gaps: u64,
    /// Trace restarts after a FIFO overflow.
    pub overflows: u64,
    /// Addresses the memory image does not hold ([`EventKind::AddrNacc`]).
    pub nacc: u64,
    /// Places where the trace contradicted the decoded flow
    /// ([`EventKind::Inconsistent`]).
    pub inconsistent: u64,
}

/// What the view shows, as of its publication.
#[derive(Debug, Clone, Default)]
pub struct TopView {
    /// Every function seen, with its counts (self counts are current;
    /// totals are complete once [`TopView::done`]).
    pub rows: Vec<Row>,
    /// Per RTOS task (empty when the run has none): its name and its
    /// instructions and cycles.
    pub tasks: Vec<(String, u64, u64)>,
    /// Instructions of the run so far.
    pub instructions: u64,
    /// Cycles of the run so far (0 without cycle-accurate trace).
    pub cycles: u64,
    /// Exceptions taken so far.
    pub exceptions: u64,
    /// What the decode could not follow.
    pub health: Health,
    /// The decode has ended (the view is final).
    pub done: bool,
}

/// The counts behind the view, shared between the sink and its reader.
#[derive(Debug)]
pub struct TopCounts {
    table: ReportTable,
    by_task: ByTask,
    has_tasks: bool,
    exceptions: u64,
    health: Health,
    done: bool,
}

impl Default for TopCounts {
    fn default() -> TopCounts {
        TopCounts {
            table: ReportTable::new(true),
            by_task: ByTask::new(true),
            has_tasks: false,
            exceptions: 0,
            health: Health::default(),
            done: false,
        }
    }
}

impl TopCounts {
    /// The view of the counts so far.
    #[must_use]
    pub fn view(&self) -> TopView {
        let tasks = if self.has_tasks {
            self.by_task
                .tables()
                .iter()
                .map(|(name, t)| (name.clone(), t.instructions(), t.cycles()))
                .collect()
        } else {
            Vec::new()
        };
        TopView {
            rows: self.table.rows().to_vec(),
            tasks,
            instructions: self.table.instructions(),
            cycles: self.table.cycles(),
            exceptions: self.exceptions,
            health: self.health,
            done: self.done,
        }
    }
}

/// The counts, shared between the sink and its reader (who takes a
/// [`TopCounts::view`] now and then).
pub type SharedView = Arc<Mutex<TopCounts>>;

/// The sink of the live view: it counts under the lock of the shared
/// counts, event by event (uncontended but for the reader's look about
/// once a second), so that the view is current however the events come.
#[derive(Debug)]
pub struct TopSink {
    counts: SharedView,
    stop: Arc<AtomicBool>,
    /// Events since the stop flag was last looked at.
    since_check: u32,
}

impl TopSink {
    /// A sink counting into `counts`, stopping the decode once `stop` is
    /// set.
    #[must_use]
    pub fn new(counts: SharedView, stop: Arc<AtomicBool>) -> TopSink {
        TopSink {
            counts,
            stop,
            since_check: 0,
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, TopCounts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Sink for TopSink {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "top"
    }

    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        self.counts().by_task.begin(info);
        Ok(())
    }

    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow> {
        {
            let mut c = self.counts();
            c.table.event(event, ctx);
            c.by_task.event(event, ctx);
            match event.kind {
                EventKind::Exception { .. } => c.exceptions += 1,
                EventKind::Gap(_) => c.health.gaps += 1,
                EventKind::TraceOn {
                    reason: TraceOnReason::Overflow,
                    ..
                } => c.health.overflows += 1,
                EventKind::AddrNacc { .. } => c.health.nacc += 1,
                EventKind::Inconsistent { .. } => c.health.inconsistent += 1,
                _ => {}
            }
            if !c.has_tasks && ctx.task(ctx.thread).is_some() {
                c.has_tasks = true;
            }
        }
        self.since_check += 1;
        if self.since_check >= CHECK_EVERY {
            self.since_check = 0;
            if self.stop.load(Ordering::Relaxed) {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self, _info: &RunInfo) -> io::Result<()> {
        let mut c = self.counts();
        c.table.close_all();
        c.done = true;
        Ok(())
    }
}

/// The rows of `view` to show: the `n` functions with the most self
/// instructions (`by_cycles`: self cycles), most first, ties by name.
#[must_use]
pub fn top_rows(view: &TopView, n: usize, by_cycles: bool) -> Vec<&Row> {
    let mut rows: Vec<&Row> = view.rows.iter().collect();
    let key = |r: &Row| {
        if by_cycles {
            r.self_cycles
        } else {
            r.self_instructions
        }
    };
    rows.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
    rows.retain(|r| key(r) > 0);
    rows.truncate(n);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_rows_are_the_largest_self_counts() {
        let row = |name: &str, i: u64, c: u64| Row {
            name: name.into(),
            self_instructions: i,
            self_cycles: c,
            ..Row::default()
        };
        let view = TopView {
            rows: vec![
                row("a", 5, 50),
                row("b", 9, 10),
                row("c", 5, 70),
                row("z", 0, 0),
            ],
            ..TopView::default()
        };
        let names = |rows: Vec<&Row>| rows.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(top_rows(&view, 10, false)), ["b", "a", "c"]);
        assert_eq!(names(top_rows(&view, 2, true)), ["c", "a"]);
    }
}
