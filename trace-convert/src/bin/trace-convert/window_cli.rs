//! The window flags of the command line (`--since`, `--until`,
//! `--function`; `--trace-id` is an input flag) and the trace IDs kept of
//! a resolved input.

use clap::Args;
use trace_convert::input::Input;
use trace_convert::window::{TimeBound, WindowSpec};

/// Which events reach the outputs (see docs/cli.md, "Windows").
#[derive(Debug, Args)]
pub struct WindowArgs {
    /// Leave out the events before TIME, on the run's clock from the start
    /// of the trace: 10us, 2ms, 1.5s, 250ns, 5000cycles, 12000instr,
    /// 300ticks. Example: --since 2ms
    #[arg(help_heading = "Time and windows", long, value_name = "TIME", value_parser = parse_time)]
    since: Option<TimeBound>,
    /// Leave out the events from TIME on (same units as --since).
    /// Example: --until 2.5ms
    #[arg(help_heading = "Time and windows", long, value_name = "TIME", value_parser = parse_time)]
    until: Option<TimeBound>,
    /// Only while function NAME is on the call stack, as the outputs name
    /// it (repeatable: any of them). Example: --function crc_task
    #[arg(
        help_heading = "Time and windows",
        long = "function",
        value_name = "NAME"
    )]
    functions: Vec<String>,
}

fn parse_time(s: &str) -> Result<TimeBound, String> {
    s.parse().map_err(|e| format!("{e}"))
}

impl WindowArgs {
    /// The functions of `--function`, when no time bound is given with
    /// them (a window that only they limit).
    pub fn functions_alone(&self) -> Option<&[String]> {
        (self.since.is_none() && self.until.is_none() && !self.functions.is_empty())
            .then_some(self.functions.as_slice())
    }

    /// The window these flags and the trace IDs `ids` ask for.
    pub fn spec(&self, ids: &[u8]) -> WindowSpec {
        WindowSpec {
            since: self.since,
            until: self.until,
            ids: ids.to_vec(),
            functions: self.functions.clone(),
        }
    }
}

/// The trace IDs a window keeps, of those given with `--trace-id`: none
/// (every ID) for a raw capture, whose one `--trace-id` names the ID its
/// bytes are reported under rather than choosing among sources.
pub fn window_ids<'a>(input: Option<&Input>, ids: &'a [u8]) -> &'a [u8] {
    if input.is_some_and(is_raw) {
        return &[];
    }
    ids
}

/// A capture file of one source's raw bytes, described by flags.
fn is_raw(input: &Input) -> bool {
    input.snapshot.is_none()
        && input
            .captures
            .iter()
            .any(|c| matches!(c.layout, trace_core::frames::FrameMode::Raw { .. }))
}

/// Keep only the sources of `input` with one of the trace IDs `ids` (all
/// when none is given; one ID is kept by the input itself). A raw
/// capture described by flags holds one source: more than one ID is
/// refused.
///
/// # Errors
///
/// A message when an ID names no source of a snapshot, or several IDs
/// are given for a raw capture.
pub fn keep_ids(input: &mut Input, ids: &[u8]) -> Result<(), String> {
    if ids.len() < 2 {
        return Ok(());
    }
    if is_raw(input) {
        return Err(
            "a raw capture holds one source: give one --trace-id (or --layout frames)".to_owned(),
        );
    }
    let present: Vec<(u8, String)> = input
        .captures
        .iter()
        .flat_map(|c| &c.sources)
        .map(|s| (s.id, s.name.clone()))
        .collect();
    let described = input.captures.iter().any(|c| c.any_id.is_some());
    for id in ids {
        if !described && !present.iter().any(|(p, _)| p == id) {
            let list: Vec<String> = present
                .iter()
                .map(|(p, n)| format!("{p:#04x} ({n})"))
                .collect();
            return Err(format!(
                "no source has trace ID {id:#04x}; the sources are {}",
                if list.is_empty() {
                    "none".to_owned()
                } else {
                    list.join(", ")
                }
            ));
        }
    }
    for c in &mut input.captures {
        c.sources.retain(|s| ids.contains(&s.id));
    }
    Ok(())
}
