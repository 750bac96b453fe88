//! Decode listings with symbols, as `perf script -F ip,sym,symoff,srcline`
//! shows them: each range with the function and offset of its first
//! instruction, each instruction (with `--instructions`) with its own and
//! its source file and line.

pub use super::events::{src_line, sym_off};

use super::events::{write_event_named, write_instructions, EventFormat, EventRecord};
use crate::profile::Profiles;
use crate::symbols::Symbolizer;
use std::io::{self, Write};
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

/// [`write_event_named`] with symbols: a range's line ends with its first
/// instruction's `<function+offset>` (JSONL: `sym`); with `instructions`,
/// every instruction's line with its own and its `file:line` (JSONL:
/// `sym`, `srcline`).
///
/// # Errors
///
/// The writer's error.
pub fn write_event_symbolized<W: Write + ?Sized>(
    out: &mut W,
    format: EventFormat,
    e: &Event,
    instructions: Option<&dyn MemoryImage>,
    symbols: &Symbolizer,
    profiles: Option<&Profiles>,
) -> io::Result<()> {
    let EventKind::Range(r) = &e.kind else {
        return write_event_named(out, format, e, instructions, profiles);
    };
    if let Some(mem) = instructions {
        return write_instructions(out, format, e, r, mem, Some(symbols));
    }
    let Some(sym) = sym_off(symbols, r.start) else {
        return write_event_named(out, format, e, None, profiles);
    };
    match format {
        EventFormat::Jsonl => {
            let mut rec = EventRecord::from_event(e);
            rec.sym = Some(sym);
            serde_json::to_writer(&mut *out, &rec)?;
            out.write_all(b"\n")
        }
        EventFormat::Text => {
            let mut line = Vec::with_capacity(128);
            write_event_named(&mut line, format, e, None, profiles)?;
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            out.write_all(&line)?;
            writeln!(out, "  <{}>", crate::escape::escaped(&sym))
        }
    }
}
