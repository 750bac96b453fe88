//! Windows on a conversion: only the events between two times
//! (`--since`, `--until`), of some trace IDs (`--trace-id`), or while a
//! function is on the call stack (`--function`) reach the outputs.
//!
//! The window is a stage in front of every sink (see
//! [`Converter::set_window`](crate::convert::Converter::set_window)): the
//! whole capture is still decoded, call stacks and clocks are followed
//! from its start (so times and stacks are those of the full run), and
//! each event is handed on or not:
//!
//! - an event is **in the window** when its trace ID is one of those asked
//!   for, its start time lies in `[since, until)`, and, with functions
//!   asked for, one of them is on its thread's call stack once the event's
//!   calls and returns are applied (for a range: where its instructions
//!   ran). A range counts wholly where it starts;
//! - when a thread enters the window, the sinks are handed its whole stack
//!   as opened (timelines begin the slices of the functions already
//!   running); when it leaves, an end-of-trace event closes what they were
//!   handed. So timelines stay balanced, folded stacks keep their callers,
//!   and every output sees the same events: coverage (LCOV) counts the
//!   instructions in the window, folded stacks weigh them, saved events
//!   hold them.
//!
//! # Times
//!
//! A time is a number and a unit, on the run's clock, counted from the
//! start of the trace as the timelines show it:
//!
//! | form | meaning |
//! |---|---|
//! | `1.5s`, `2ms`, `10us` (`µs`), `250ns` | time, through the clock's frequency (`--cpu-hz`, `--timestamp-hz`; without one a tick is 1 ns) |
//! | `5000cycles` (`cycle`, `cyc`) | cycle counts: the clock must be cycles |
//! | `12000instr` (`instructions`, `insn`) | instructions: the clock must be instructions |
//! | `300ticks` (`tick`) | ticks of whatever the clock is (timestamp ticks on the timestamp axis) |
//!
//! A space between number and unit is allowed (`"10 us"`); `0` needs no
//! unit.
//!
//! ```
//! use trace_convert::clock::{ClockInfo, ClockKind};
//! use trace_convert::window::TimeBound;
//!
//! let cycles = ClockInfo::new(ClockKind::Cycles, Some(2e9));
//! let t: TimeBound = "10us".parse()?;
//! assert_eq!(t.ticks(&cycles)?, 20_000);
//! assert_eq!("7000 cycles".parse::<TimeBound>()?.ticks(&cycles)?, 7000);
//! assert!("12instr".parse::<TimeBound>()?.ticks(&cycles).is_err());
//! # Ok::<(), trace_convert::window::WindowError>(())
//! ```

use crate::callstack::{Frame, Names, ThreadKey};
use crate::clock::{ClockInfo, ClockKind};
use crate::fast_map::FastMap;
use std::str::FromStr;

/// A time given on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeBound {
    /// Seconds, shown through the clock's frequency.
    Seconds(f64),
    /// A count of the clock's own ticks, which must be of `kind` when
    /// given (`None`: any clock, `ticks`).
    Count(u64, Option<ClockKind>),
}

/// Why a window cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WindowError {
    /// A time is not `NUMBER UNIT`.
    #[error("`{0}` is not a time: give a number and a unit (10us, 2ms, 1.5s, 250ns, 5000cycles, 12000instr, 300ticks)")]
    BadTime(String),
    /// A count of cycles or instructions on a clock of another kind.
    #[error("{given} are not the time axis of this run ({clock}): give a time (10us) or ticks of the clock (300ticks), or choose the clock with --clock {given}")]
    OtherClock {
        /// The unit given (`cycles`, `instructions`).
        given: &'static str,
        /// The run's clock.
        clock: &'static str,
    },
    /// `--until` is not after `--since`.
    #[error("--until ({until} ticks) is not after --since ({since} ticks; 0, the start of the trace, when not given): the window is empty")]
    Empty {
        /// `--since` in ticks.
        since: u64,
        /// `--until` in ticks.
        until: u64,
    },
}

impl FromStr for TimeBound {
    type Err = WindowError;

    fn from_str(s: &str) -> Result<TimeBound, WindowError> {
        let bad = || WindowError::BadTime(s.to_owned());
        let t = s.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let unit = unit.trim();
        if num.is_empty() || num.starts_with('.') || num.ends_with('.') {
            return Err(bad());
        }
        let count = |kind| -> Result<TimeBound, WindowError> {
            num.parse::<u64>()
                .map(|n| TimeBound::Count(n, kind))
                .map_err(|_| bad())
        };
        let secs = |scale: f64| -> Result<TimeBound, WindowError> {
            let v: f64 = num.parse().map_err(|_| bad())?;
            let v = v * scale;
            if v.is_finite() && v >= 0.0 {
                Ok(TimeBound::Seconds(v))
            } else {
                Err(bad())
            }
        };
        match unit {
            "" if num.bytes().all(|b| b == b'0') => Ok(TimeBound::Count(0, None)),
            "s" => secs(1.0),
            "ms" => secs(1e-3),
            "us" | "µs" => secs(1e-6),
            "ns" => secs(1e-9),
            "cycles" | "cycle" | "cyc" => count(Some(ClockKind::Cycles)),
            "instr" | "instructions" | "instruction" | "insn" => {
                count(Some(ClockKind::Instructions))
            }
            "ticks" | "tick" => count(None),
            _ => Err(bad()),
        }
    }
}

impl TimeBound {
    /// This time in ticks of `clock` (seconds rounded to the nearest
    /// tick).
    ///
    /// # Errors
    ///
    /// [`WindowError::OtherClock`] for a count of cycles or instructions
    /// on a clock of another kind.
    pub fn ticks(self, clock: &ClockInfo) -> Result<u64, WindowError> {
        match self {
            TimeBound::Seconds(s) => {
                // A float that is finite and not negative: the cast
                // saturates beyond u64.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let t = (s * clock.hz).round() as u64;
                Ok(t)
            }
            // Timestamp ticks on an axis kept in finer units.
            TimeBound::Count(n, None) => Ok(n.saturating_mul(clock.sub)),
            TimeBound::Count(n, Some(kind)) if kind == clock.kind => Ok(n),
            TimeBound::Count(_, Some(kind)) => Err(WindowError::OtherClock {
                given: kind.name(),
                clock: clock.kind.name(),
            }),
        }
    }
}

/// What a window keeps, as given (see the [module](self) docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowSpec {
    /// Events starting before this time are left out.
    pub since: Option<TimeBound>,
    /// Events starting at or after this time are left out.
    pub until: Option<TimeBound>,
    /// Only these trace IDs (none: every one).
    pub ids: Vec<u8>,
    /// Only while one of these functions is on the stack (none: always).
    pub functions: Vec<String>,
}

impl WindowSpec {
    /// Whether it keeps everything (no window at all).
    #[must_use]
    pub fn is_everything(&self) -> bool {
        self.since.is_none()
            && self.until.is_none()
            && self.ids.is_empty()
            && self.functions.is_empty()
    }

    /// The window on `clock`, ready for a converter.
    ///
    /// # Errors
    ///
    /// [`WindowError`] for a count of another clock's unit, or an empty
    /// time window.
    pub fn on(&self, clock: &ClockInfo) -> Result<Window, WindowError> {
        let since = match self.since {
            Some(t) => t.ticks(clock)?,
            None => 0,
        };
        let until = match self.until {
            Some(t) => t.ticks(clock)?,
            None => u64::MAX,
        };
        // `--since` alone may lie past the trace (even past what the
        // ticks can count): the window then keeps nothing, as the summary
        // says; only an `--until` can contradict it.
        if self.until.is_some() && until <= since {
            return Err(WindowError::Empty { since, until });
        }
        let mut ids = [self.ids.is_empty(); 256];
        for id in &self.ids {
            ids[usize::from(*id)] = true;
        }
        Ok(Window {
            align: clock.by_cycles(),
            since,
            until,
            ids: Box::new(ids),
            functions: self.functions.clone(),
            matching: Vec::new(),
            shown: FastMap::default(),
            frames: Vec::new(),
            counts: WindowCounts::default(),
        })
    }
}

/// How many events a window handed on and left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowCounts {
    /// Events handed to the outputs.
    pub shown: u64,
    /// Events left out.
    pub hidden: u64,
    /// Instructions in the ranges handed on.
    pub instructions: u64,
    /// Of the events left out: those before their source's first
    /// timestamp on an axis where that gives them no place (see
    /// [`crate::clock`]), and their instructions.
    pub unplaced: u64,
    /// The instructions of [`unplaced`](Self::unplaced).
    pub unplaced_instructions: u64,
}

/// A window resolved on the run's clock, with what it has handed on so
/// far (see [`Converter::set_window`](crate::convert::Converter::set_window)).
#[derive(Debug)]
pub struct Window {
    /// Events of a core not yet placed on the axis are left out (the
    /// timestamp axis resolved by cycles).
    align: bool,
    since: u64,
    until: u64,
    /// Per trace ID: kept.
    ids: Box<[bool; 256]>,
    functions: Vec<String>,
    /// Per function name (by [`FuncId`](crate::callstack::FuncId)): one of `functions` (`None`: not
    /// looked at yet).
    matching: Vec<Option<bool>>,
    /// The threads whose stacks the sinks were handed.
    shown: FastMap<ThreadKey, ()>,
    /// Frames of a stack being closed (kept for its capacity).
    frames: Vec<Frame>,
    counts: WindowCounts,
}

/// Whether and how an event of a thread is handed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Handed on as it is.
    Show,
    /// Handed on, the thread's whole stack opened before it.
    Enter,
    /// Left out; the thread was shown, and its stack must be closed first
    /// (with, when `core`, every other shown thread of its trace ID).
    Leave {
        /// The trace ID left the window (time, ID), not only the thread
        /// (function).
        core: bool,
    },
    /// Left out.
    Hide,
}

impl Window {
    /// What was handed on and left out so far.
    #[must_use]
    pub fn counts(&self) -> WindowCounts {
        self.counts
    }

    /// Whether trace ID `id` at `time` is in the time and ID window.
    #[inline]
    pub(crate) fn core_in(&self, id: u8, time: u64) -> bool {
        self.ids[usize::from(id)] && (self.since..self.until).contains(&time)
    }

    /// Whether a function asked for is on `stack`.
    fn function_on(&mut self, stack: &[Frame], names: &Names) -> bool {
        if self.functions.is_empty() {
            return true;
        }
        stack.iter().any(|f| {
            let i = f.func.0 as usize;
            if let Some(Some(m)) = self.matching.get(i) {
                return *m;
            }
            let m = self.functions.iter().any(|n| n == names.get(f.func));
            if self.matching.len() <= i {
                self.matching.resize(i + 1, None);
            }
            self.matching[i] = Some(m);
            m
        })
    }

    /// What to do with an event of `thread` starting at `time`, its stack
    /// being `stack` once the event is applied; counts the event.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step(
        &mut self,
        thread: ThreadKey,
        time: u64,
        placed: bool,
        stack: &[Frame],
        names: &Names,
        instructions: u64,
    ) -> Step {
        let unplaced = self.align && !placed;
        if unplaced {
            self.counts.unplaced += 1;
            self.counts.unplaced_instructions += instructions;
        }
        let core = !unplaced && self.core_in(thread.id, time);
        let visible = core && self.function_on(stack, names);
        let shown = self.shown.contains_key(&thread);
        if visible {
            self.counts.shown += 1;
            self.counts.instructions += instructions;
        } else {
            self.counts.hidden += 1;
        }
        match (visible, shown) {
            (true, true) => Step::Show,
            (true, false) => {
                self.shown.insert(thread, ());
                Step::Enter
            }
            (false, true) => {
                self.shown.remove(&thread);
                Step::Leave { core: !core }
            }
            (false, false) => Step::Hide,
        }
    }

    /// Forget that `thread` was shown (its stack was closed); whether it
    /// was.
    pub(crate) fn unshow(&mut self, thread: ThreadKey) -> bool {
        self.shown.remove(&thread).is_some()
    }

    /// The shown threads of trace ID `id` other than `but`, sorted.
    pub(crate) fn shown_of(&self, id: u8, but: ThreadKey) -> Vec<ThreadKey> {
        let mut v: Vec<ThreadKey> = self
            .shown
            .keys()
            .filter(|k| k.id == id && **k != but)
            .copied()
            .collect();
        v.sort_unstable();
        v
    }

    /// The frames to close for a thread whose stack was `before` an event
    /// that left `after`, having closed `closed` (innermost first) and
    /// opened `opened`: the stack before, innermost first.
    pub(crate) fn stack_before(
        &mut self,
        after: &[Frame],
        closed: &[Frame],
        opened: &[Frame],
    ) -> Vec<Frame> {
        let mut v = std::mem::take(&mut self.frames);
        v.clear();
        v.extend_from_slice(closed);
        let kept = after.len().saturating_sub(opened.len());
        v.extend(after.iter().take(kept).rev());
        v
    }

    /// Give back a buffer from [`stack_before`](Self::stack_before).
    pub(crate) fn give_back(&mut self, frames: Vec<Frame>) {
        self.frames = frames;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(kind: ClockKind, hz: Option<f64>) -> ClockInfo {
        ClockInfo::new(kind, hz)
    }

    #[test]
    fn times_with_units() {
        let ns = clock(ClockKind::Instructions, None);
        let cases = [
            ("10us", 10_000),
            ("10 us", 10_000),
            ("10µs", 10_000),
            ("2ms", 2_000_000),
            ("1.5s", 1_500_000_000),
            ("250ns", 250),
            ("0", 0),
            ("300ticks", 300),
            ("12000instr", 12_000),
            ("7insn", 7),
        ];
        for (text, ticks) in cases {
            let t: TimeBound = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(t.ticks(&ns), Ok(ticks), "{text}");
        }
        // Through a given frequency: 100 MHz timestamps, 10 ns a tick.
        let ts = clock(ClockKind::Timestamps, Some(100e6));
        assert_eq!(
            "1us".parse::<TimeBound>().map(|t| t.ticks(&ts)),
            Ok(Ok(100))
        );
        assert_eq!(
            "5cycles".parse::<TimeBound>().map(|t| t.ticks(&ts)),
            Ok(Err(WindowError::OtherClock {
                given: "cycles",
                clock: "timestamps"
            }))
        );
    }

    #[test]
    fn ticks_are_timestamp_ticks_on_an_axis_resolved_by_cycles() {
        let c = ClockInfo::timestamps_by_cycles(Some(24e6));
        assert_eq!(
            "300ticks".parse::<TimeBound>().map(|t| t.ticks(&c)),
            Ok(Ok(300_000))
        );
        // 1 µs of a 24 MHz counter: 24 ticks.
        assert_eq!(
            "1us".parse::<TimeBound>().map(|t| t.ticks(&c)),
            Ok(Ok(24_000))
        );
    }

    #[test]
    fn malformed_times_are_refused() {
        for text in [
            "",
            "10",
            "us",
            "1.2.3ms",
            "-5us",
            ".5s",
            "5.s",
            "10 parsecs",
            "1e3us",
            "2.5cycles",
            "10usx",
        ] {
            assert!(
                matches!(text.parse::<TimeBound>(), Err(WindowError::BadTime(_))),
                "{text:?} accepted"
            );
        }
    }

    #[test]
    fn an_empty_window_is_refused() {
        let spec = WindowSpec {
            since: Some(TimeBound::Count(10, None)),
            until: Some(TimeBound::Count(10, None)),
            ..WindowSpec::default()
        };
        let c = clock(ClockKind::Instructions, None);
        assert!(matches!(
            spec.on(&c),
            Err(WindowError::Empty {
                since: 10,
                until: 10
            })
        ));
        assert!(WindowSpec::default().is_everything());
        assert!(WindowSpec::default().on(&c).is_ok());
    }

    #[test]
    fn a_since_past_what_ticks_count_alone_is_no_error() {
        // 99999999999 s at 1 GHz is past u64::MAX ticks.
        let c = clock(ClockKind::Cycles, Some(1e9));
        let spec = WindowSpec {
            since: Some("99999999999s".parse().expect("a time")),
            ..WindowSpec::default()
        };
        assert!(spec.on(&c).is_ok(), "{:?}", spec.on(&c).err());
        let both = WindowSpec {
            until: Some("99999999999s".parse().expect("a time")),
            ..spec
        };
        assert!(matches!(both.on(&c), Err(WindowError::Empty { .. })));
    }

    #[test]
    fn threads_enter_and_leave() {
        let spec = WindowSpec {
            since: Some(TimeBound::Count(100, None)),
            until: Some(TimeBound::Count(200, None)),
            ids: vec![0x10],
            functions: Vec::new(),
        };
        let mut w = spec
            .on(&clock(ClockKind::Instructions, None))
            .expect("window");
        let names = Names::default();
        let t = ThreadKey::of_id(0x10);
        let other = ThreadKey::of_id(0x11);
        assert_eq!(w.step(t, 50, true, &[], &names, 1), Step::Hide);
        assert_eq!(w.step(t, 100, true, &[], &names, 1), Step::Enter);
        assert_eq!(w.step(t, 199, true, &[], &names, 1), Step::Show);
        assert_eq!(w.step(other, 150, true, &[], &names, 1), Step::Hide);
        assert_eq!(
            w.step(t, 200, true, &[], &names, 1),
            Step::Leave { core: true }
        );
        assert_eq!(w.step(t, 300, true, &[], &names, 1), Step::Hide);
        assert_eq!(
            w.counts(),
            WindowCounts {
                shown: 2,
                hidden: 4,
                instructions: 2,
                ..WindowCounts::default()
            }
        );
    }
}
