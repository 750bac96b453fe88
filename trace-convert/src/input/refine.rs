//! The flags over the sources a snapshot or a perf.data recording
//! describes: `--trace-id` keeps one source, `--protocol` and the
//! register flags override what the input says.

use super::flags::SourceFlags;
use super::source::SourceSpec;
use super::{Input, InputError};
use std::path::Path;

/// Apply `flags` to the sources of `input` (a snapshot's or a perf.data
/// file's): `--trace-id` keeps only that source, register-level flags
/// refine every source's registers.
///
/// # Errors
///
/// [`InputError::NoSuchTraceId`] when `--trace-id` names no source of
/// the input.
pub fn refine(path: &Path, input: Input, flags: &SourceFlags) -> Result<Input, InputError> {
    let Input {
        kind,
        mut captures,
        snapshot,
        saved,
    } = input;
    {
        if let Some(id) = flags.trace_id {
            let all: Vec<&SourceSpec> = captures.iter().flat_map(|c| &c.sources).collect();
            if !all.iter().any(|s| s.id == id) {
                let present = all
                    .iter()
                    .map(|s| format!("{:#04x} ({})", s.id, s.name))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(InputError::NoSuchTraceId {
                    path: path.to_path_buf(),
                    id,
                    present: if present.is_empty() {
                        "none".to_owned()
                    } else {
                        present
                    },
                });
            }
        }
        for cap in &mut captures {
            if let Some(id) = flags.trace_id {
                cap.sources.retain(|s| s.id == id);
            }
            for s in &mut cap.sources {
                if let Some(p) = flags.protocol {
                    s.protocol = p;
                }
                s.regs = flags.apply(s.regs);
            }
        }
    }
    Ok(Input {
        kind,
        captures,
        snapshot,
        saved,
    })
}
