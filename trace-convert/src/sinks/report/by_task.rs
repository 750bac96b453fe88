//! The report per task (`report --by-task`): a table of the tasks (their
//! instructions, cycles and share of the run), then each task's own
//! per-function report, its shares of the task's instructions. A task is
//! an RTOS task (see [`crate::tasks`]), by name; what ran outside any
//! task (before a core's first task switch, or on a core without tasks)
//! is its core's, named as its timeline track.

use super::table::ReportTable;
use super::write::{csv_field, JsonRow, Report};
use super::{ReportFormat, SortKey};
use crate::escape::escaped;
use crate::fast_map::FastMap;
use crate::sinks::context::core_name;
use crate::sinks::{EventCtx, RunInfo, ThreadKey};
use std::io::{self, Write};
use trace_core::event::Event;

/// The per-task tables of a report.
#[derive(Debug)]
pub struct ByTask {
    inline: bool,
    /// Per task name, in order of appearance.
    tasks: Vec<(String, ReportTable)>,
    /// The task of each thread, by index in `tasks`.
    of_thread: FastMap<ThreadKey, usize>,
    /// The name of each source's track, by trace ID.
    names: FastMap<u8, String>,
}

impl ByTask {
    /// Empty; `inline`: inlined functions get rows of their own.
    #[must_use]
    pub fn new(inline: bool) -> ByTask {
        ByTask {
            inline,
            tasks: Vec::new(),
            of_thread: FastMap::default(),
            names: FastMap::default(),
        }
    }

    /// Name the sources as their tracks are named; before the first event.
    pub fn begin(&mut self, info: &RunInfo) {
        for s in &info.sources {
            self.names.insert(s.id, s.thread_name());
        }
    }

    /// The name of `ctx`'s thread's task.
    fn task_name(&self, ctx: &EventCtx<'_>) -> String {
        let t = ctx.thread;
        if let Some(task) = ctx.task(t) {
            return task.name.clone();
        }
        let core = core_name(&self.names, t.id);
        match t.context {
            Some(c) => format!("context {c:#x}/{core}"),
            None => core,
        }
    }

    /// Feed one event with its context.
    pub fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) {
        let i = match self.of_thread.get(&ctx.thread) {
            Some(i) => *i,
            None => {
                let name = self.task_name(ctx);
                let i = match self.tasks.iter().position(|(n, _)| *n == name) {
                    Some(i) => i,
                    None => {
                        self.tasks.push((name, ReportTable::new(self.inline)));
                        self.tasks.len() - 1
                    }
                };
                self.of_thread.insert(ctx.thread, i);
                i
            }
        };
        if let Some((_, table)) = self.tasks.get_mut(i) {
            table.event(event, ctx);
        }
    }

    /// Each task's name and table, in order of appearance.
    #[must_use]
    pub fn tables(&self) -> &[(String, ReportTable)] {
        &self.tasks
    }

    /// Write the report in `format`, rows sorted by `sort`.
    ///
    /// # Errors
    ///
    /// The output's error.
    pub fn write(
        &mut self,
        format: ReportFormat,
        sort: SortKey,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        for (_, t) in &mut self.tasks {
            t.close_all();
        }
        let instructions: u64 = self.tasks.iter().map(|(_, t)| t.instructions()).sum();
        let cycles: u64 = self.tasks.iter().map(|(_, t)| t.cycles()).sum();
        let mut order: Vec<&(String, ReportTable)> = self.tasks.iter().collect();
        order.sort_by(|a, b| {
            b.1.instructions()
                .cmp(&a.1.instructions())
                .then_with(|| a.0.cmp(&b.0))
        });
        let share = |n: u64| {
            if instructions == 0 {
                0.0
            } else {
                n as f64 * 100.0 / instructions as f64
            }
        };
        match format {
            ReportFormat::Text => {
                write!(out, "# {instructions} instructions")?;
                if cycles > 0 {
                    write!(out, ", {cycles} cycles")?;
                }
                writeln!(out, ", {} tasks", order.len())?;
                writeln!(out, "#")?;
                writeln!(out, "#   Share  Instructions  Cycles  Task")?;
                for (name, t) in &order {
                    let c = if cycles > 0 {
                        t.cycles().to_string()
                    } else {
                        "-".to_owned()
                    };
                    writeln!(
                        out,
                        "  {:>6.2}%  {:>12}  {:>6}  {}",
                        share(t.instructions()),
                        t.instructions(),
                        c,
                        escaped(name)
                    )?;
                }
                for (name, t) in &order {
                    writeln!(out)?;
                    writeln!(out, "# task {}", escaped(name))?;
                    Report::new(t.rows(), sort, t.instructions(), t.cycles())
                        .write(ReportFormat::Text, out)?;
                }
                Ok(())
            }
            ReportFormat::Csv => {
                writeln!(
                    out,
                    "task,task_instructions,task_cycles,task_percent,function,calls,self_instructions,self_percent,total_instructions,total_percent,self_cycles,total_cycles"
                )?;
                for (name, t) in &order {
                    let report = Report::new(t.rows(), sort, t.instructions(), t.cycles());
                    let head = format!(
                        "{},{},{},{:.4},",
                        csv_field(&escaped(name)),
                        t.instructions(),
                        if cycles > 0 {
                            t.cycles().to_string()
                        } else {
                            String::new()
                        },
                        share(t.instructions())
                    );
                    for row in report.json_rows() {
                        write!(out, "{head}")?;
                        row.write_csv(out)?;
                    }
                }
                Ok(())
            }
            ReportFormat::Json => {
                let tasks: Vec<JsonTask<'_>> = order
                    .iter()
                    .map(|(name, t)| {
                        let report = Report::new(t.rows(), sort, t.instructions(), t.cycles());
                        JsonTask {
                            task: name,
                            instructions: t.instructions(),
                            cycles: (cycles > 0).then_some(t.cycles()),
                            percent: share(t.instructions()),
                            functions: report.json_rows(),
                        }
                    })
                    .collect();
                serde_json::to_writer_pretty(&mut *out, &tasks).map_err(io::Error::other)?;
                writeln!(out)
            }
        }
    }
}

/// One task of the JSON form.
#[derive(serde::Serialize)]
struct JsonTask<'a> {
    task: &'a str,
    instructions: u64,
    cycles: Option<u64>,
    percent: f64,
    functions: Vec<JsonRow<'a>>,
}
