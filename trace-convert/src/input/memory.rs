//! The memory an input's sources need: for each source, the dumps of the
//! core the input binds it to (a snapshot's dumps, a recording's mapped
//! files), then the files given besides ([`ExtraMemory`]).

use super::source::CaptureSpec;
use super::Input;
use crate::decode::{memory_for, ExtraMemory};
use std::collections::HashMap;
use std::sync::Arc;
use trace_core::memory::{MemoryError, MemoryImage};

/// The memory images of an input's sources, loaded before decoding
/// starts: one per source name, and one for trace IDs no source
/// describes (the extra files alone).
#[derive(Clone)]
pub struct Images {
    by_source: HashMap<String, Arc<dyn MemoryImage>>,
    /// The sources whose image holds nothing, in input order.
    empty: Vec<String>,
    other: Arc<dyn MemoryImage>,
}

impl std::fmt::Debug for Images {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.by_source.keys().collect();
        names.sort();
        f.debug_struct("Images")
            .field("sources", &names)
            .field("empty", &self.empty)
            .finish_non_exhaustive()
    }
}

impl Images {
    /// The image of the source named `source`, if the input has one.
    #[must_use]
    pub fn get(&self, source: &str) -> Option<&Arc<dyn MemoryImage>> {
        self.by_source.get(source)
    }

    /// The image of the source named `source`, else the one for any
    /// other trace ID.
    #[must_use]
    pub fn of(&self, source: &str) -> Arc<dyn MemoryImage> {
        Arc::clone(self.by_source.get(source).unwrap_or(&self.other))
    }

    /// The image for trace IDs no source describes.
    #[must_use]
    pub fn other(&self) -> &Arc<dyn MemoryImage> {
        &self.other
    }

    /// The images of `capture`'s sources by trace ID.
    #[must_use]
    pub fn by_id(&self, capture: &CaptureSpec) -> HashMap<u8, Arc<dyn MemoryImage>> {
        capture
            .sources
            .iter()
            .filter_map(|s| self.get(&s.name).map(|m| (s.id, Arc::clone(m))))
            .collect()
    }

    /// The names of the sources whose image holds nothing (every address
    /// they reach will be reported as not accessible), in input order.
    #[must_use]
    pub fn empty(&self) -> &[String] {
        &self.empty
    }
}

impl Input {
    /// Load the memory image of every source, and the one for any other
    /// trace ID, with `extra` added to each (winning where they overlap).
    ///
    /// # Errors
    ///
    /// [`MemoryError`] when a dump or file cannot be loaded.
    pub fn images(&self, extra: &ExtraMemory) -> Result<Images, MemoryError> {
        let mut by_source: HashMap<String, Arc<dyn MemoryImage>> = HashMap::new();
        let mut empty = Vec::new();
        for s in self.captures.iter().flat_map(|c| &c.sources) {
            if by_source.contains_key(&s.name) {
                continue;
            }
            let m = memory_for(self.snapshot.as_ref(), &s.name, extra)?;
            if m.is_empty() {
                empty.push(s.name.clone());
            }
            by_source.insert(s.name.clone(), Arc::new(m));
        }
        let other = Arc::new(memory_for(self.snapshot.as_ref(), "", extra)?);
        Ok(Images {
            by_source,
            empty,
            other,
        })
    }

    /// Whether some memory image would be found for the source named
    /// `source` (files are given in `extra`, or the input binds the source
    /// to a core with dumps); nothing is read.
    #[must_use]
    pub fn has_memory(&self, source: &str, extra: &ExtraMemory) -> bool {
        crate::decode::has_memory(self.snapshot.as_ref(), source, extra)
    }
}
