//! The routines of FreeRTOS, ThreadX and Zephyr that the task stage knows
//! ([`KNOWN`]), and where they lie in a program ([`Routines`]).
//!
//! Most task switches need no entry here: a handler that returns to
//! another place than the one its exception interrupted resumes or starts
//! a task wherever it is. The table names the rest: the routines that
//! start or resume a task with no exception to return from (a scheduler
//! loop, a first-task start), the trampolines new tasks start in before
//! their entry function, and the idle tasks. docs/tasks.md shows it.

use crate::symbols::Symbolizer;

/// What a known routine is to the task stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoutineKind {
    /// A scheduler that runs on no task's behalf: entering it suspends
    /// the running task, and it runs as the core's idle context until it
    /// leaves to a task (ThreadX's `_tx_thread_schedule`, which waits in
    /// a loop when no thread is ready).
    Scheduler,
    /// A routine whose exit (an exception return, or a branch or return
    /// out of it) resumes or starts a task, whichever task entered it: a
    /// first-task start, a context restore, `--task-switch`.
    Switch,
    /// Where a new task starts before it calls its entry function
    /// (`_tx_thread_shell_entry`, `z_thread_entry`): the task is named
    /// after the function it calls.
    Trampoline,
    /// The entry function of an idle task: the task is named `idle`.
    Idle,
}

impl RoutineKind {
    /// `scheduler`, `switch`, `trampoline`, `idle`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            RoutineKind::Scheduler => "scheduler",
            RoutineKind::Switch => "switch",
            RoutineKind::Trampoline => "trampoline",
            RoutineKind::Idle => "idle",
        }
    }
}

/// One routine of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// Its symbol.
    pub symbol: &'static str,
    /// The RTOS and port it belongs to.
    pub rtos: &'static str,
    /// What it is.
    pub kind: RoutineKind,
}

const fn known(symbol: &'static str, rtos: &'static str, kind: RoutineKind) -> Known {
    Known { symbol, rtos, kind }
}

/// The routines the task stage knows, by symbol.
pub const KNOWN: &[Known] = &[
    // FreeRTOS: tasks start at their entry function; the first one is
    // restored without an exception on the Cortex-A/R ports.
    known(
        "vPortRestoreTaskContext",
        "FreeRTOS Cortex-A/R",
        RoutineKind::Switch,
    ),
    known(
        "prvPortStartFirstTask",
        "FreeRTOS Cortex-M",
        RoutineKind::Switch,
    ),
    known("prvIdleTask", "FreeRTOS", RoutineKind::Idle),
    // ThreadX: `_tx_thread_schedule` waits for a ready thread and resumes
    // it with `RFE` or `BX LR` (Cortex-R); new threads start in the shell.
    known("_tx_thread_schedule", "ThreadX", RoutineKind::Scheduler),
    known("_tx_thread_shell_entry", "ThreadX", RoutineKind::Trampoline),
    // Zephyr: switches return from SVC or the interrupt; the main thread
    // starts without one on Cortex-M; new threads start in
    // `z_thread_entry`.
    known(
        "arch_switch_to_main_thread",
        "Zephyr Cortex-M",
        RoutineKind::Switch,
    ),
    known(
        "z_arm_switch_to_main_no_multithreading",
        "Zephyr Cortex-M",
        RoutineKind::Switch,
    ),
    known("z_thread_entry", "Zephyr", RoutineKind::Trampoline),
    known("idle", "Zephyr", RoutineKind::Idle),
];

/// A routine found in the program: its code and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routine {
    /// First byte of its code.
    pub start: u32,
    /// Just past its code.
    pub end: u32,
    /// Its name.
    pub name: String,
    /// What it is.
    pub kind: RoutineKind,
}

/// The known routines a program has, and those the user named.
#[derive(Debug, Clone, Default)]
pub struct Routines {
    /// Sorted by start address.
    list: Vec<Routine>,
}

impl Routines {
    /// The routines of [`KNOWN`] that `symbols` has, and the functions
    /// named in `switches` as [`RoutineKind::Switch`] routines. Returns
    /// them and the names in `switches` no function of `symbols` has.
    #[must_use]
    pub fn find(symbols: &Symbolizer, switches: &[String]) -> (Routines, Vec<String>) {
        let mut list = Vec::new();
        let mut missing = Vec::new();
        let named = |name: &str| symbols.functions().iter().find(|f| f.name == name);
        for k in KNOWN {
            if let Some(f) = named(k.symbol) {
                list.push(Routine {
                    start: f.start,
                    end: f.end,
                    name: f.name.clone(),
                    kind: k.kind,
                });
            }
        }
        for s in switches {
            match named(s) {
                Some(f) => {
                    list.retain(|r| r.start != f.start);
                    list.push(Routine {
                        start: f.start,
                        end: f.end,
                        name: f.name.clone(),
                        kind: RoutineKind::Switch,
                    });
                }
                None => missing.push(s.clone()),
            }
        }
        list.sort_by_key(|r| r.start);
        (Routines { list }, missing)
    }

    /// The routine whose code holds `addr`.
    #[must_use]
    pub fn at(&self, addr: u32) -> Option<&Routine> {
        let i = self.list.partition_point(|r| r.start <= addr);
        let r = self.list.get(i.checked_sub(1)?)?;
        (addr < r.end).then_some(r)
    }

    /// Whether the routine holding `addr` is of kind `kind`.
    #[must_use]
    pub fn is(&self, addr: u32, kind: RoutineKind) -> bool {
        self.at(addr).is_some_and(|r| r.kind == kind)
    }

    /// Every routine found, by address.
    #[must_use]
    pub fn list(&self) -> &[Routine] {
        &self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::Function;

    fn f(start: u32, end: u32, name: &str) -> Function {
        Function {
            start,
            end,
            name: name.to_owned(),
            thumb: false,
        }
    }

    #[test]
    fn known_and_named_routines_are_found_by_symbol() {
        let sym = Symbolizer::with_functions(vec![
            f(0x100, 0x140, "_tx_thread_schedule"),
            f(0x200, 0x220, "_tx_thread_shell_entry"),
            f(0x300, 0x310, "my_switch"),
            f(0x400, 0x410, "main"),
        ]);
        let (r, missing) = Routines::find(&sym, &["my_switch".into(), "nowhere".into()]);
        assert_eq!(missing, ["nowhere"]);
        assert_eq!(r.list().len(), 3);
        assert!(r.is(0x13c, RoutineKind::Scheduler));
        assert!(!r.is(0x140, RoutineKind::Scheduler));
        assert!(r.is(0x200, RoutineKind::Trampoline));
        assert!(r.is(0x304, RoutineKind::Switch));
        assert!(r.at(0x404).is_none());
        assert!(r.at(0x50).is_none());
    }

    #[test]
    fn the_table_names_each_symbol_once() {
        for (i, k) in KNOWN.iter().enumerate() {
            assert!(
                KNOWN[i + 1..].iter().all(|o| o.symbol != k.symbol),
                "{}",
                k.symbol
            );
        }
    }
}
