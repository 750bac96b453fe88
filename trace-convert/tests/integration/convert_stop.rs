//! A sink that says it needs no more events ([`Flow::Stop`]) is handed
//! none after that and still finished; the other sinks go on as if it were
//! not there; once every sink has stopped, the decode ends.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use trace_convert::convert::{self, ConvertOptions, ConvertReport, Converter};
use trace_convert::input::memory::ExtraMemory;
use trace_convert::input::{self, flags::SourceFlags};
use trace_convert::progress::NoProgress;
use trace_convert::sinks::folded::{FoldedSink, Weight};
use trace_convert::sinks::{EventCtx, Flow, Interest, NoParts, RunInfo, SharedBuffer, Sink};
use trace_convert::symbols::Symbolizer;
use trace_core::event::Event;

/// What a [`Stopper`] saw.
#[derive(Debug, Default)]
struct Seen {
    /// Calls of `event` (or of `events`).
    calls: usize,
    /// Events handed over.
    events: usize,
    finished: usize,
}

/// Stops after `after` calls.
struct Stopper {
    interest: Interest,
    after: usize,
    seen: Arc<Mutex<Seen>>,
}

impl Stopper {
    fn new(interest: Interest, after: usize) -> (Stopper, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let s = Stopper {
            interest,
            after,
            seen: Arc::clone(&seen),
        };
        (s, seen)
    }

    fn call(&mut self, events: usize) -> Flow {
        let mut seen = self.seen.lock().expect("lock");
        seen.calls += 1;
        seen.events += events;
        if seen.calls >= self.after {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

impl Sink for Stopper {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "stopper"
    }

    fn interest(&self) -> Interest {
        self.interest
    }

    fn event(&mut self, _event: &Event, _ctx: &EventCtx<'_>) -> std::io::Result<Flow> {
        Ok(self.call(1))
    }

    fn events(&mut self, events: &[Event]) -> std::io::Result<Flow> {
        Ok(self.call(events.len()))
    }

    fn finish(&mut self, _info: &RunInfo) -> std::io::Result<()> {
        self.seen.lock().expect("lock").finished += 1;
        Ok(())
    }
}

fn example() -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot");
    let elf = dir.join("example.elf");
    (dir, elf)
}

/// Convert the bundled example with `sinks` (and folded stacks when
/// `folded`): the folded text and the report.
fn run(sinks: Vec<Stopper>, folded: bool) -> (String, ConvertReport) {
    let (dir, elf) = example();
    let input = input::resolve(&dir, &SourceFlags::default()).expect("input");
    let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).expect("symbols");
    let options = ConvertOptions::default();
    let mut conv = Converter::new(&symbols, options.clock_for(&input), options.max_depth);
    let out = SharedBuffer::new();
    if folded {
        conv.add_sink(Box::new(FoldedSink::new(out.clone(), Weight::Instructions)));
    }
    for s in sinks {
        conv.add_sink(Box::new(s));
    }
    let extra = ExtraMemory {
        elves: vec![elf],
        raw: Vec::new(),
    };
    let report = convert::convert_input(&input, &extra, conv, &mut NoProgress).expect("conversion");
    (String::from_utf8(out.bytes()).expect("UTF-8"), report)
}

fn total_events(r: &ConvertReport) -> u64 {
    r.ids.values().map(|c| c.events).sum()
}

#[test]
fn a_sink_that_stops_is_handed_nothing_more_and_the_others_go_on() {
    let (alone, alone_report) = run(Vec::new(), true);
    assert!(total_events(&alone_report) > 100, "the example has events");
    for interest in [
        Interest::Every,
        Interest::Weights,
        Interest::StackChanges,
        Interest::EventsOnly,
    ] {
        let (stopper, seen) = Stopper::new(interest, 3);
        let (with, report) = run(vec![stopper], true);
        let seen = seen.lock().expect("lock");
        assert_eq!(seen.calls, 3, "{interest:?}: no call after Stop");
        assert_eq!(seen.finished, 1, "{interest:?}: finished once");
        assert_eq!(with, alone, "{interest:?}: the folded stacks are unchanged");
        assert_eq!(report.ids, alone_report.ids, "{interest:?}: every event");
    }
}

#[test]
fn once_every_sink_stopped_the_decode_ends() {
    let (_, full) = run(Vec::new(), false);
    let (every, seen_every) = Stopper::new(Interest::Every, 5);
    let (plain, seen_plain) = Stopper::new(Interest::EventsOnly, 1);
    let (_, report) = run(vec![every, plain], false);
    for seen in [&seen_every, &seen_plain] {
        assert_eq!(seen.lock().expect("lock").finished, 1);
    }
    assert_eq!(seen_every.lock().expect("lock").calls, 5);
    assert_eq!(seen_plain.lock().expect("lock").calls, 1);
    // The events up to the last stop, not the capture's.
    let taken = total_events(&report);
    let handed = seen_plain.lock().expect("lock").events as u64;
    assert!(taken > 0 && taken < total_events(&full), "{taken}");
    assert!(
        taken <= handed.max(5) + 1,
        "{taken} events taken, {handed} handed"
    );
}

#[test]
fn a_sink_alone_that_stops_ends_the_decode() {
    let (_, full) = run(Vec::new(), false);
    for interest in [Interest::Every, Interest::Weights, Interest::StackChanges] {
        let (stopper, seen) = Stopper::new(interest, 4);
        let (_, report) = run(vec![stopper], false);
        let seen = seen.lock().expect("lock");
        assert_eq!(seen.calls, 4, "{interest:?}: no call after Stop");
        assert_eq!(seen.finished, 1, "{interest:?}: finished once");
        let taken = total_events(&report);
        assert!(
            taken > 0 && taken < total_events(&full),
            "{interest:?}: {taken} events taken"
        );
    }
}
