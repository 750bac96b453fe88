//! A sink that only weighs what runs ([`Interest::Weights`]) is handed the
//! quiet ranges of a thread summed: fewer events, and the same
//! instructions and cycles on every frame as a sink given every event.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use trace_convert::clock::{ClockInfo, ClockKind};
use trace_convert::convert::{self, ConvertOptions, Converter};
use trace_convert::input::memory::ExtraMemory;
use trace_convert::input::{self, flags::SourceFlags};
use trace_convert::progress::NoProgress;
use trace_convert::sinks::{EventCtx, Flow, Interest, NoParts, RunInfo, Sink, ThreadKey};
use trace_convert::symbols::Symbolizer;
use trace_core::event::{Event, EventKind};

/// Instructions and cycles by thread and innermost frame, and the events
/// handed over.
#[derive(Debug, Default, PartialEq, Eq)]
struct Weights {
    by_frame: BTreeMap<(ThreadKey, String), (u64, u64)>,
    events: usize,
}

struct Weigher {
    interest: Interest,
    seen: Arc<Mutex<Weights>>,
}

impl Sink for Weigher {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "weigher"
    }

    fn interest(&self) -> Interest {
        self.interest
    }

    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> std::io::Result<Flow> {
        let mut seen = self.seen.lock().expect("lock");
        seen.events += 1;
        if let EventKind::Range(r) = &event.kind {
            let top = ctx.stack.last().map(|f| ctx.name(f).to_owned());
            let w = seen
                .by_frame
                .entry((ctx.thread, top.unwrap_or_default()))
                .or_default();
            w.0 += u64::from(r.count);
            w.1 += ctx.cycles;
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self, _info: &RunInfo) -> std::io::Result<()> {
        Ok(())
    }
}

/// Convert `dir` (with `elf`, if any) into a weigher of `interest`, alone;
/// on a clock of cycles if `cycles`, else the input's.
fn weigh(dir: &Path, elf: Option<&Path>, cycles: bool, interest: Interest) -> Weights {
    let input = input::resolve(dir, &SourceFlags::default()).expect("input");
    let elves: Vec<PathBuf> = elf.map(Path::to_path_buf).into_iter().collect();
    let symbols = Symbolizer::from_elves(&elves).expect("symbols");
    let options = ConvertOptions::default();
    let clock = if cycles {
        // Not on TC2's timestamps, which leave out what comes before a
        // core's first (every event is then looked at one by one).
        ClockInfo::new(ClockKind::Cycles, None)
    } else {
        options.clock_for(&input)
    };
    let mut conv = Converter::new(&symbols, clock, options.max_depth);
    let seen = Arc::new(Mutex::new(Weights::default()));
    conv.add_sink(Box::new(Weigher {
        interest,
        seen: Arc::clone(&seen),
    }));
    let extra = ExtraMemory {
        elves,
        raw: Vec::new(),
    };
    convert::convert_input(&input, &extra, conv, &mut NoProgress).expect("conversion");
    let weights = std::mem::take(&mut *seen.lock().expect("lock"));
    weights
}

fn check(dir: &Path, elf: Option<&Path>, cycles: bool) {
    let every = weigh(dir, elf, cycles, Interest::Every);
    let summed = weigh(dir, elf, cycles, Interest::Weights);
    assert!(!every.by_frame.is_empty(), "{}: nothing ran", dir.display());
    assert_eq!(summed.by_frame, every.by_frame, "{}", dir.display());
    assert!(
        summed.events < every.events,
        "{}: {} summed events against {}",
        dir.display(),
        summed.events,
        every.events
    );
    if cycles {
        let total: u64 = every.by_frame.values().map(|w| w.1).sum();
        assert!(total > 0, "{}: no cycles", dir.display());
    }
}

#[test]
fn quiet_ranges_summed_weigh_as_much_as_one_by_one() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot");
    check(&dir, Some(&dir.join("example.elf")), false);
}

#[test]
fn cycles_summed_weigh_as_much_as_one_by_one() {
    // TC2's ETMv3 sources are cycle-accurate; four cores take turns.
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    check(&dir.join("TC2"), None, true);
}
