//! Converters as sinks of one decode pass.
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
//! - the function names of frames, the [`Symbolizer`] for lines, and the
//!   memory image of the source for a per-instruction view.
//!
//! Stack changes are applied *before* the event they belong to: for a
//! range, `closed`/`opened` describe the call or return that led to its
//! first instruction, and `stack` is where its instructions ran. At the
//! end of each thread an [`EventKind::EndOfTrace`] event closes every open
//! frame, so a sink sees each opened frame closed exactly once.
//!
//! [`EventKind::EndOfTrace`]: trace_core::event::EventKind::EndOfTrace

pub mod chrome;
pub mod events_file;
pub mod folded;
pub mod lcov;
pub mod listing;
pub mod perfetto;
pub mod registry;

mod context;
mod dyn_sink;
mod output;
mod sink;

pub use crate::callstack::ThreadKey;
pub use context::{is_instant, EventCtx, Interest, RunInfo};
pub use dyn_sink::DynSink;
pub use output::{Output, SharedBuffer};
pub use sink::{Flow, NoParts, Sink, WorkerPart, WorkerParts};
