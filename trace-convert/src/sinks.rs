//! Every output of the toolkit: the converters fed by one decode pass
//! (Chrome JSON, Perfetto, LCOV, folded stacks, the per-function report,
//! AutoFDO profiles, saved events) and the
//! `packets` and `decode` listings ([`listing`]).
//!
//! The [`convert`](crate::convert) driver decodes once and hands every
//! event to each [`Sink`] in turn, in capture order per trace ID, together
//! with an [`EventCtx`] computed once per event and shared by all sinks:
//!
//! - the **thread** the event belongs to (trace ID, i.e. the core, and
//!   the context ID, i.e. the process, when traced);
//! - the **time** before and after the event on the run's clock (cycles,
//!   timestamps or instructions, see [`crate::clock`]) and the cycles the
//!   event carried;
//! - the **call-stack changes** of that thread caused by the event: frames
//!   closed (innermost first) and then frames opened (outermost first),
//!   and the stack as it stands afterwards (see [`crate::callstack`]);
//! - the function names of frames, the [`Symbolizer`](crate::symbols::Symbolizer)
//!   for lines, and the memory image of the source for a per-instruction
//!   view.
//!
//! Stack changes are applied *before* the event they belong to: for a
//! range, `closed`/`opened` describe the call or return that led to its
//! first instruction, and `stack` is where its instructions ran. At the
//! end of each thread an [`EventKind::EndOfTrace`] event closes every open
//! frame, so a sink sees each opened frame closed exactly once.
//!
//! A sink says which events it needs ([`Sink::interest`]), may stop early
//! ([`Flow::Stop`]), and may have its work on plain events done on the
//! decoding threads ([`Sink::Parts`]), merged back with its own type
//! ([`Sink::merge`]).
//!
//! # Adding an output format
//!
//! 1. Write its sink in a module here (`sinks/NAME.rs`, with a folder
//!    `sinks/NAME/` for its file format when that is more than a few
//!    lines): a type implementing [`Sink`] over any [`Output`], that
//!    completes its output in [`Sink::finish`]. Name it after its flag
//!    ([`Sink::name`]).
//! 2. Add one entry to [`registry::FORMATS`]: flag, help, file name in
//!    `--out-dir`, what it needs (source lines, code, a capture), how to
//!    open the result, and the function that opens its sink from the
//!    run's [`registry::Setup`] (add a field there if the format has
//!    options of its own).
//!
//! The command line makes the flag, the `--out-dir` file, the help and the
//! summary line from the entry; nothing else changes.
//!
//! # Why the listings are not sinks
//!
//! The `packets` and `decode` listings ([`listing`]) are outputs too,
//! written all or nothing through the same output plan
//! ([`crate::output::OutputPlan`]) from the same ready captures
//! ([`crate::input::capture`]), but they do not go through the
//! [`convert`](crate::convert) driver:
//!
//! - the packet listing lists what the demultiplexer hands on (packets,
//!   parser errors, frame events, bytes of unconfigured trace IDs): no
//!   decode runs, so there are no events to hand a sink;
//! - the decode listing lists every event as the decoder emits it, with
//!   none of what the driver adds (call stacks, clock, window, per-ID
//!   report): as a sink it would be handed each event after that work,
//!   done for nothing (call stacks and clock alone take a decode of the
//!   example's PTM capture to 1.84× its time, `docs/performance.md`).
//!   It takes the decode's event slices
//!   straight from the [`trace_core::capture::Consumer`] and, on two or
//!   more threads, formats them on a thread of its own
//!   ([`listing::pipeline`]).
//!
//! [`EventKind::EndOfTrace`]: trace_core::event::EventKind::EndOfTrace

pub mod autofdo;
pub mod chrome;
pub mod coalesce;
pub mod events_file;
pub mod folded;
pub mod itm;
pub mod lcov;
pub mod listing;
pub mod perfetto;
pub mod registry;
pub mod report;
pub mod tasks;
pub mod top;

mod context;
mod dyn_sink;
mod output;
mod sink;

pub use crate::callstack::ThreadKey;
pub use context::{is_instant, task_of, EventCtx, Interest, RunInfo, SourceName};
pub use dyn_sink::DynSink;
pub use output::{Output, SharedBuffer};
pub use sink::{Flow, NoParts, Sink, WorkerPart, WorkerParts};
