//! The AutoFDO sink (`--autofdo FILE`): an LLVM sample profile in text
//! form from the exact trace, for `clang -fprofile-sample-use=FILE`
//! ([`profile`] describes the format and the counts, [`dwarf`] what is
//! read from the `--elf` files).
//!
//! Every instruction is counted as often as the trace ran it (the
//! converter's coverage count, [`Coverage`]); calls are the executed
//! branches with link, paired with the address the flow continued at
//! (the next range of the source, or the return address of an exception
//! taken before the callee's first instruction).

pub mod dwarf;
pub mod profile;

use self::dwarf::ProfileDwarf;
use self::profile::Profile;
use crate::sinks::lcov::coverage::Coverage;
use crate::sinks::{EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

/// Counts instructions and calls, and writes the profile at the end.
pub struct AutofdoSink<W: Output> {
    out: W,
    dwarf: ProfileDwarf,
    coverage: Coverage,
    /// Per trace ID: the address of a call just executed, waiting for
    /// where it went.
    pending: Box<[Option<u32>; 256]>,
    calls: HashMap<(u32, u32), u64>,
    /// Why the profile written was empty.
    empty: Option<String>,
}

impl<W: Output> std::fmt::Debug for AutofdoSink<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutofdoSink")
            .field("calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

impl<W: Output> AutofdoSink<W> {
    /// A sink reading code from `memory` (the image the events are decoded
    /// with), describing it with `dwarf`.
    pub fn new(out: W, memory: Arc<dyn MemoryImage>, dwarf: ProfileDwarf) -> AutofdoSink<W> {
        AutofdoSink {
            out,
            dwarf,
            coverage: Coverage::new(memory),
            pending: Box::new([None; 256]),
            calls: HashMap::new(),
            empty: None,
        }
    }

    fn add(&mut self, event: &Event) {
        self.coverage.add(event);
        let slot = &mut self.pending[usize::from(event.id)];
        let to = match event.kind {
            EventKind::Range(r) => {
                let to = slot.take().map(|from| (from, r.start));
                if r.link && r.executed {
                    *slot = Some(r.end.wrapping_sub(u32::from(r.last_size)));
                }
                to
            }
            EventKind::Exception { ret, .. } => slot.take().zip(ret),
            EventKind::TraceOn { .. }
            | EventKind::NoSync
            | EventKind::Gap(_)
            | EventKind::AddrNacc { .. }
            | EventKind::Inconsistent { .. } => {
                *slot = None;
                None
            }
            _ => None,
        };
        if let Some(pair) = to {
            *self.calls.entry(pair).or_insert(0) += 1;
        }
    }

    /// The profile of the events so far.
    #[must_use]
    pub fn profile(&self) -> Profile {
        let counts: Vec<(u32, u64)> = self
            .coverage
            .instructions()
            .iter()
            .map(|i| (i.addr, i.reached))
            .collect();
        Profile::build(&self.dwarf, &counts, &self.calls)
    }
}

impl<W: Output> Sink for AutofdoSink<W> {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "autofdo"
    }

    fn interest(&self) -> Interest {
        Interest::EventsOnly
    }

    fn event(&mut self, event: &Event, _ctx: &EventCtx<'_>) -> io::Result<Flow> {
        self.add(event);
        Ok(Flow::Continue)
    }

    fn events(&mut self, events: &[Event]) -> io::Result<Flow> {
        for e in events {
            self.add(e);
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self, _info: &RunInfo) -> io::Result<()> {
        let profile = self.profile();
        profile.write(&mut self.out)?;
        if profile.functions.values().all(|p| p.total() == 0) {
            let ran: u64 = self.coverage.instructions().iter().map(|i| i.reached).sum();
            self.empty = Some(why_empty(&self.dwarf, ran, &profile));
        }
        self.out.complete()
    }

    fn notes(&self) -> Vec<String> {
        self.empty.iter().cloned().collect()
    }
}

/// Why a profile of `ran` instructions executed, described by `dwarf`,
/// came out empty.
fn why_empty(dwarf: &ProfileDwarf, ran: u64, profile: &Profile) -> String {
    let why = if ran == 0 {
        "no instruction was handed to it (none was decoded, or none in the window)".to_owned()
    } else if dwarf.is_empty() {
        "the --elf files have no DWARF functions (build with -g and give the ELF file that ran)"
            .to_owned()
    } else {
        let left = &profile.left_out;
        format!(
            "of {ran} instructions executed, {} ran outside every function the DWARF describes and {} on no line (is the --elf file the program that ran?)",
            left.no_function, left.no_line
        )
    };
    format!("the profile is empty: {why}")
}
