//! Saved events (files written by `--save-events`) as an input: events
//! decoded by an earlier run, converted again without decoding. The file
//! is known by its magic ([`format::MAGIC`]); its header names the
//! sources and the memory images the events were decoded with, and a
//! first reading of its events says what they tell of time (cycle counts,
//! timestamps), from which a conversion's clock is chosen as for a
//! capture's sources.

pub mod format;

use super::{Input, InputError, Kind};
use format::{EventReader, Events, Header};
use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use trace_core::event::EventKind;

/// What a saved-events input holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedEvents {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Its header: the input decoded, the sources, the memory images.
    pub header: Header,
    /// Per trace ID whose events hold code: whether they carry cycle
    /// counts and timestamps.
    pub timing: BTreeMap<u8, (bool, bool)>,
}

/// Whether `head`, a file's first bytes, start a saved-events file.
#[must_use]
pub fn is_saved_events(head: &[u8]) -> bool {
    head.starts_with(&format::MAGIC)
}

/// The saved-events file `path` as an input (its events read once, for
/// what they tell of time).
///
/// # Errors
///
/// [`InputError::Saved`] when the file cannot be read or is not a
/// complete saved-events file.
pub fn open(path: &Path) -> Result<Input, InputError> {
    let bad = |reason: String| InputError::Saved {
        path: path.to_path_buf(),
        reason,
    };
    let file = trace_core::memory::open_regular(path).map_err(|e| bad(e.to_string()))?;
    let size = file.metadata().map_or(0, |m| m.len());
    let (header, events) =
        EventReader::open(BufReader::new(file)).map_err(|e| bad(e.to_string()))?;
    // Per trace ID: (has ranges, has cycles, has timestamps).
    let mut seen: BTreeMap<u8, (bool, bool, bool)> = BTreeMap::new();
    for e in events {
        let e = e.map_err(|e| bad(e.to_string()))?;
        let s = seen.entry(e.id).or_default();
        match e.kind {
            EventKind::Range(r) => {
                s.0 = true;
                s.1 |= r.cycles.is_some();
            }
            // A source whose cycles were ignored saved them as 0.
            EventKind::CycleCount(n) => s.1 |= n > 0,
            EventKind::Timestamp { .. } => s.2 = true,
            _ => {}
        }
    }
    let timing = seen
        .into_iter()
        .filter(|(_, s)| s.0)
        .map(|(id, s)| (id, (s.1, s.2)))
        .collect();
    Ok(Input {
        kind: Kind::SavedEvents,
        captures: Vec::new(),
        snapshot: None,
        saved: Some(SavedEvents {
            path: path.to_path_buf(),
            size,
            header,
            timing,
        }),
    })
}

impl SavedEvents {
    /// The events, read again from the file.
    ///
    /// # Errors
    ///
    /// [`InputError::Saved`] when the file cannot be read again.
    pub fn events(&self) -> Result<Events<BufReader<std::fs::File>>, InputError> {
        let bad = |reason: String| InputError::Saved {
            path: self.path.clone(),
            reason,
        };
        let file = trace_core::memory::open_regular(&self.path).map_err(|e| bad(e.to_string()))?;
        let (_, events) =
            EventReader::open(BufReader::new(file)).map_err(|e| bad(e.to_string()))?;
        Ok(events)
    }
}
