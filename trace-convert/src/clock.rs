//! The time axis of converted output.
//!
//! One clock is chosen per run ([`ClockKind`]):
//!
//! - **cycles** when every source is cycle-accurate: time advances by the
//!   cycle counts the trace carries (ranges, cycle count events, I-sync
//!   and timestamp packets); shown at `--cpu-hz` (1 GHz when not given,
//!   so one cycle is shown as one nanosecond);
//! - **timestamps** when every source has timestamps: time jumps to each
//!   timestamp (relative to the first one of the run) scaled by
//!   `--timestamp-hz` (1 GHz when not given), and between two timestamps
//!   advances by one tick per instruction so slices keep a width; it never
//!   goes back;
//! - **instructions** otherwise: one tick per instruction, shown as one
//!   nanosecond.
//!
//! Only the sources that trace instructions choose the clock. An ITM/DWT
//! source executes no instruction of its own: on the cycles and
//! instructions clocks its time advances by its local timestamps (ticks
//! of the local timestamp clock) and by one tick per periodic PC sample
//! that no local timestamp came before (the samples are one sampling
//! period apart); on the timestamp clock, by its global timestamps.
//!
//! Each trace ID (core) has its own position on the clock.
//!
//! **Several cores on one axis.** Cycle counts start at each core's own
//! zero, so the cores of a multi-core capture do not line up on them;
//! timestamps come from one counter shared by all. When the sources are
//! cycle-accurate *and* have timestamps, the timestamp axis is resolved by
//! the cycle counts ([`ClockInfo::timestamps_by_cycles`]): at each
//! timestamp a core's time is the timestamp (relative to the first one of
//! the run), and between two it advances by its cycles, turned into
//! timestamp ticks at the rate that core's cycles ran against the
//! timestamps so far (the cycles between its earlier timestamps over the
//! ticks between them; before its second timestamp one cycle counts as
//! [`SUB_TICKS`]`⁻¹` tick). Time is kept in thousandths of a timestamp tick
//! ([`SUB_TICKS`]) and never goes back. A core's events before its first
//! timestamp have no place on that axis ([`Clocks::placed`]): the
//! converter leaves them out (see [`crate::window`]).

use trace_core::event::{Event, EventKind, Range};

/// What the clock counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockKind {
    /// Processor cycles from cycle-accurate trace.
    Cycles,
    /// Timestamp ticks.
    Timestamps,
    /// Instructions executed.
    #[default]
    Instructions,
}

impl ClockKind {
    /// `cycles`, `timestamps`, `instructions`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ClockKind::Cycles => "cycles",
            ClockKind::Timestamps => "timestamps",
            ClockKind::Instructions => "instructions",
        }
    }
}

/// The chosen clock and how its ticks become seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockInfo {
    /// What a tick is.
    pub kind: ClockKind,
    /// Ticks per second.
    pub hz: f64,
    /// `hz` came from the command line (otherwise it is the 1 GHz
    /// assumption).
    pub hz_given: bool,
    /// Ticks of the axis per timestamp tick: [`SUB_TICKS`] on a timestamp
    /// axis resolved by cycle counts, else 1 (`hz` is then the timestamp
    /// frequency times this).
    pub sub: u64,
}

/// Ticks of a timestamp axis resolved by cycle counts per timestamp tick.
pub const SUB_TICKS: u64 = 1000;

impl Default for ClockInfo {
    fn default() -> ClockInfo {
        ClockInfo {
            kind: ClockKind::Instructions,
            hz: 1e9,
            hz_given: false,
            sub: 1,
        }
    }
}

impl ClockInfo {
    /// A clock of `kind` at `hz` ticks per second (1 GHz when `None`).
    #[must_use]
    pub fn new(kind: ClockKind, hz: Option<f64>) -> ClockInfo {
        let hz_ok = hz.filter(|h| h.is_finite() && *h > 0.0);
        ClockInfo {
            kind,
            hz: hz_ok.unwrap_or(1e9),
            hz_given: hz_ok.is_some(),
            sub: 1,
        }
    }

    /// The timestamp axis resolved by cycle counts (see the
    /// [module](self) docs), timestamps at `hz` ticks per second (1 GHz
    /// when `None`): every core of a capture on one axis.
    #[must_use]
    pub fn timestamps_by_cycles(hz: Option<f64>) -> ClockInfo {
        let base = ClockInfo::new(ClockKind::Timestamps, hz);
        #[allow(clippy::cast_precision_loss)]
        let sub = SUB_TICKS as f64;
        ClockInfo {
            hz: base.hz * sub,
            sub: SUB_TICKS,
            ..base
        }
    }

    /// Whether the axis is timestamps resolved by cycle counts.
    #[must_use]
    pub fn by_cycles(&self) -> bool {
        self.kind == ClockKind::Timestamps && self.sub > 1
    }

    /// Microseconds for `ticks`.
    #[must_use]
    pub fn micros(&self, ticks: u64) -> f64 {
        // u64 → f64 loses precision only beyond 2^53 ticks.
        #[allow(clippy::cast_precision_loss)]
        let t = ticks as f64;
        t * 1e6 / self.hz
    }

    /// Nanoseconds for `ticks` (rounded down).
    #[must_use]
    pub fn nanos(&self, ticks: u64) -> u64 {
        if (self.hz - 1e9).abs() < f64::EPSILON {
            return ticks;
        }
        // Float to integer: saturates, and ticks beyond 2^53 lose precision.
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let ns = (ticks as f64 * 1e9 / self.hz) as u64;
        ns
    }

    /// A sentence saying which clock is used.
    #[must_use]
    pub fn describe(&self) -> String {
        let scale = if self.hz_given {
            format!("at {} Hz", self.hz)
        } else {
            "one tick shown as 1 ns".to_owned()
        };
        match self.kind {
            ClockKind::Cycles => format!(
                "time axis: cycle counts ({scale}{})",
                if self.hz_given { "" } else { "; give --cpu-hz" }
            ),
            ClockKind::Timestamps if self.by_cycles() => format!(
                "time axis: timestamps, every core on one axis, resolved by each core's cycle counts between them ({}{})",
                if self.hz_given {
                    #[allow(clippy::cast_precision_loss)]
                    let hz = self.hz / self.sub as f64;
                    format!("at {hz} Hz")
                } else {
                    "one timestamp tick shown as 1 ns".to_owned()
                },
                if self.hz_given {
                    ""
                } else {
                    "; give --timestamp-hz"
                }
            ),
            ClockKind::Timestamps => format!(
                "time axis: timestamps ({scale}{})",
                if self.hz_given {
                    ""
                } else {
                    "; give --timestamp-hz"
                }
            ),
            ClockKind::Instructions => {
                "time axis: instruction count (no cycle counts or timestamps; one instruction shown as 1 ns)".to_owned()
            }
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct CoreClock {
    now: u64,
    /// A timestamp axis resolved by cycles: the core's last timestamp
    /// (raw value) and where it put the core, the cycles since, and the
    /// cycles and ticks between its timestamps so far.
    placed: Option<(u64, u64)>,
    cycles_since: u64,
    cycles_seen: u64,
    ticks_seen: u64,
    /// An ITM source sent a local timestamp since its last PC sample:
    /// the next sample's time is the timestamp's.
    local: bool,
}

impl CoreClock {
    /// On a timestamp axis resolved by cycles: advance over `cycles`.
    #[inline]
    fn run_cycles(&mut self, cycles: u64) {
        self.cycles_since = self.cycles_since.saturating_add(cycles);
        let Some((_, at)) = self.placed else {
            return;
        };
        // Sub-ticks: cycles × SUB_TICKS × ticks / cycles seen; before a
        // rate is known, one sub-tick per cycle.
        let step = if self.cycles_seen > 0 && self.ticks_seen > 0 {
            let v =
                u128::from(self.cycles_since) * u128::from(SUB_TICKS) * u128::from(self.ticks_seen)
                    / u128::from(self.cycles_seen);
            u64::try_from(v).unwrap_or(u64::MAX)
        } else {
            self.cycles_since
        };
        self.now = self.now.max(at.saturating_add(step));
    }

    /// On a timestamp axis resolved by cycles: a timestamp `value`, the
    /// run's first being `first`.
    fn timestamp(&mut self, value: u64, first: u64) {
        if let Some((last, _)) = self.placed {
            if value > last && self.cycles_since > 0 {
                self.cycles_seen = self.cycles_seen.saturating_add(self.cycles_since);
                self.ticks_seen = self.ticks_seen.saturating_add(value - last);
            }
        }
        let at = value.saturating_sub(first).saturating_mul(SUB_TICKS);
        self.now = self.now.max(at);
        self.placed = Some((value, at));
        self.cycles_since = 0;
    }
}

/// The position of each core on the run's clock.
#[derive(Debug, Clone)]
pub struct Clocks {
    info: ClockInfo,
    /// Per trace ID.
    cores: Box<[CoreClock; 256]>,
    first_timestamp: Option<u64>,
}

/// Times of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// Ticks when the event began.
    pub start: u64,
    /// Ticks after it.
    pub end: u64,
    /// Cycles the event carried.
    pub cycles: u64,
}

/// Cycles an event carries.
#[must_use]
#[inline]
pub fn cycles_of(kind: &EventKind) -> u64 {
    let c = match kind {
        EventKind::Range(r) => r.cycles,
        EventKind::CycleCount(n) => Some(*n),
        EventKind::Context(c) => c.cycles,
        EventKind::TraceOn { cycles, .. } | EventKind::Timestamp { cycles, .. } => *cycles,
        _ => None,
    };
    c.map_or(0, u64::from)
}

impl Clocks {
    /// Clocks on `info`, every core at 0.
    #[must_use]
    pub fn new(info: ClockInfo) -> Clocks {
        Clocks {
            info,
            cores: Box::new([CoreClock::default(); 256]),
            first_timestamp: None,
        }
    }

    /// The clock.
    #[must_use]
    pub fn info(&self) -> &ClockInfo {
        &self.info
    }

    /// The current time of core `id`.
    #[must_use]
    pub fn now(&self, id: u8) -> u64 {
        self.cores[usize::from(id)].now
    }

    /// [`advance`](Self::advance) over a range of source `id` (the common
    /// event, with less to look at).
    #[inline]
    pub fn advance_range(&mut self, id: u8, r: &Range) -> Span {
        let cycles = r.cycles.map_or(0, u64::from);
        if self.info.sub > 1 {
            let core = &mut self.cores[usize::from(id)];
            let start = core.now;
            core.run_cycles(cycles);
            return Span {
                start,
                end: core.now,
                cycles,
            };
        }
        let step = match self.info.kind {
            ClockKind::Cycles => cycles,
            ClockKind::Instructions | ClockKind::Timestamps => u64::from(r.count),
        };
        let core = &mut self.cores[usize::from(id)];
        let start = core.now;
        core.now = start.saturating_add(step);
        Span {
            start,
            end: core.now,
            cycles,
        }
    }

    /// [`advance_range`](Self::advance_range) when the span is not
    /// needed.
    #[inline]
    pub fn step_range(&mut self, id: u8, r: &Range) {
        if self.info.sub > 1 {
            self.advance_range(id, r);
            return;
        }
        let step = match self.info.kind {
            ClockKind::Cycles => r.cycles.map_or(0, u64::from),
            ClockKind::Instructions | ClockKind::Timestamps => u64::from(r.count),
        };
        let core = &mut self.cores[usize::from(id)];
        core.now = core.now.saturating_add(step);
    }

    /// Advance core `event.id`'s clock over `event`.
    #[inline]
    pub fn advance(&mut self, event: &Event) -> Span {
        let cycles = cycles_of(&event.kind);
        if self.info.sub > 1 {
            return self.advance_by_cycles(event, cycles);
        }
        let kind = self.info.kind;
        let core = &mut self.cores[usize::from(event.id)];
        let start = core.now;
        match (kind, &event.kind) {
            // ITM/DWT: local timestamps give the ticks since the last one;
            // without them, PC samples come one sampling period apart.
            (
                ClockKind::Instructions | ClockKind::Cycles,
                EventKind::LocalTimestamp { delta, .. },
            ) => {
                core.now = core.now.saturating_add(u64::from(*delta));
                core.local = true;
            }
            (ClockKind::Instructions | ClockKind::Cycles, EventKind::PcSample { .. }) => {
                if core.local {
                    core.local = false;
                } else {
                    core.now = core.now.saturating_add(1);
                }
            }
            (ClockKind::Cycles, _) => core.now = core.now.saturating_add(cycles),
            (ClockKind::Instructions | ClockKind::Timestamps, EventKind::Range(r)) => {
                core.now = core.now.saturating_add(u64::from(r.count));
            }
            _ => {}
        }
        if let (ClockKind::Timestamps, EventKind::Timestamp { value, .. }) = (kind, &event.kind) {
            let first = *self.first_timestamp.get_or_insert(*value);
            core.now = core.now.max(value.saturating_sub(first));
        }
        let end = core.now;
        Span { start, end, cycles }
    }

    /// [`advance`](Self::advance) on a timestamp axis resolved by cycles.
    fn advance_by_cycles(&mut self, event: &Event, cycles: u64) -> Span {
        let first = match &event.kind {
            EventKind::Timestamp { value, .. } => Some(*self.first_timestamp.get_or_insert(*value)),
            _ => None,
        };
        let core = &mut self.cores[usize::from(event.id)];
        let mut start = core.now;
        core.run_cycles(cycles);
        if let (EventKind::Timestamp { value, .. }, Some(first)) = (&event.kind, first) {
            core.timestamp(*value, first);
            // A timestamp is at the time it gives (which places the core).
            start = core.now;
        }
        Span {
            start,
            end: core.now,
            cycles,
        }
    }

    /// Whether core `id` has a place on the axis: on a timestamp axis
    /// resolved by cycles, once it has had a timestamp; always on the
    /// other clocks.
    #[must_use]
    #[inline]
    pub fn placed(&self, id: u8) -> bool {
        self.info.sub == 1 || self.cores[usize::from(id)].placed.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_core::event::{InsnClass, Isa, Range};
    use trace_core::memory::Space;

    fn range(count: u32, cycles: Option<u32>) -> Event {
        Event {
            offset: 0,
            id: 1,
            kind: EventKind::Range(Range {
                start: 0,
                end: count * 4,
                count,
                isa: Isa::A32,
                last_size: 4,
                last: InsnClass::Other,
                link: false,
                ret: false,
                cond: false,
                executed: true,
                cycles,
                space: Space::Any,
            }),
        }
    }

    #[test]
    fn advance_range_is_advance_on_ranges() {
        for kind in [
            ClockKind::Cycles,
            ClockKind::Timestamps,
            ClockKind::Instructions,
        ] {
            let mut a = Clocks::new(ClockInfo::new(kind, None));
            let mut b = a.clone();
            let mut c = a.clone();
            for (n, cycles) in [
                (3, Some(7)),
                (1, None),
                (5, Some(0)),
                (1 << 20, Some(u32::MAX)),
            ] {
                let e = range(n, cycles);
                let EventKind::Range(r) = e.kind else {
                    unreachable!("a range");
                };
                let span = a.advance(&e);
                assert_eq!(span, b.advance_range(e.id, &r), "{kind:?}");
                // Stepping lands where the span ends.
                c.step_range(e.id, &r);
                assert_eq!(c.now(e.id), span.end, "{kind:?}");
            }
        }
    }

    #[test]
    fn cycles_and_instructions_advance() {
        let mut c = Clocks::new(ClockInfo::new(ClockKind::Cycles, Some(2e6)));
        assert_eq!(c.advance(&range(3, Some(7))).end, 7);
        let s = c.advance(&Event {
            offset: 0,
            id: 1,
            kind: EventKind::CycleCount(5),
        });
        assert_eq!((s.start, s.end, s.cycles), (7, 12, 5));
        assert!((c.info().micros(12) - 6.0).abs() < 1e-9);

        let mut i = Clocks::new(ClockInfo::new(ClockKind::Instructions, None));
        assert_eq!(i.advance(&range(3, Some(7))).end, 3);
        assert_eq!(i.now(2), 0, "cores are separate");
    }

    #[test]
    fn cores_line_up_on_timestamps_resolved_by_cycles() {
        let mut c = Clocks::new(ClockInfo::timestamps_by_cycles(None));
        let ts = |id, v| Event {
            offset: 0,
            id,
            kind: EventKind::Timestamp {
                value: v,
                cycles: None,
            },
        };
        let on = |id, mut e: Event| {
            e.id = id;
            e
        };
        // Core 1 before its first timestamp: not placed.
        c.advance(&on(1, range(1, Some(5))));
        assert!(!c.placed(1));
        c.advance(&ts(1, 1000));
        assert!(c.placed(1));
        assert_eq!(c.now(1), 0);
        // No rate yet: one sub-tick per cycle.
        c.advance(&on(1, range(2, Some(40))));
        assert_eq!(c.now(1), 40);
        // 100 ticks for 400 cycles: 4 cycles a tick from now on.
        c.advance(&on(1, range(2, Some(360))));
        c.advance(&ts(1, 1100));
        assert_eq!(c.now(1), 100 * SUB_TICKS);
        let s = c.advance(&on(1, range(1, Some(2))));
        assert_eq!((s.start, s.end), (100 * SUB_TICKS, 100 * SUB_TICKS + 500));
        // Core 2 starts later, on the same axis.
        c.advance(&ts(2, 1050));
        assert_eq!(c.now(2), 50 * SUB_TICKS);
        let s = c.advance(&on(2, range(1, Some(3))));
        assert_eq!(s.start, 50 * SUB_TICKS);
        // Time never goes back: a timestamp behind the estimate.
        c.advance(&on(1, range(1, Some(4000))));
        let before = c.now(1);
        c.advance(&ts(1, 1101));
        assert_eq!(c.now(1), before);
        assert!(
            (c.info().micros(SUB_TICKS) - 0.001).abs() < 1e-12,
            "a tick shown as 1 ns"
        );
    }

    /// An ITM source's time: its local timestamps' ticks, and one tick
    /// per PC sample that no local timestamp came before.
    #[test]
    fn itm_time_follows_local_timestamps_and_samples() {
        let mut c = Clocks::new(ClockInfo::default());
        let ev = |kind| Event {
            offset: 0,
            id: 1,
            kind,
        };
        let local = |delta| {
            ev(EventKind::LocalTimestamp {
                delta,
                relation: trace_core::event::TimeRelation::Sync,
            })
        };
        let sample = ev(EventKind::PcSample { pc: Some(0x100) });
        let times: Vec<u64> = [
            sample,
            sample,
            local(50),
            sample,
            sample,
            ev(EventKind::Overflow),
            local(7),
        ]
        .iter()
        .map(|e| c.advance(e).end)
        .collect();
        assert_eq!(times, [1, 2, 52, 52, 53, 53, 60]);
        assert_eq!(c.now(2), 0);
    }

    #[test]
    fn timestamps_never_go_back() {
        let mut c = Clocks::new(ClockInfo::new(ClockKind::Timestamps, None));
        let ts = |v| Event {
            offset: 0,
            id: 1,
            kind: EventKind::Timestamp {
                value: v,
                cycles: None,
            },
        };
        c.advance(&ts(1000));
        c.advance(&range(5, None));
        assert_eq!(c.now(1), 5);
        c.advance(&ts(1100));
        assert_eq!(c.now(1), 100);
        c.advance(&range(500, None));
        c.advance(&ts(1200));
        assert_eq!(
            c.now(1),
            600,
            "a timestamp behind the estimate keeps the time"
        );
    }
}
