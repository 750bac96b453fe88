//! One value per trace ID: the table every stage that keeps something per
//! source (a packet parser, a decoder, a part, a memory image) looks up.

use alloc::vec::Vec;

/// Number of trace IDs (they are 7-bit).
pub const TRACE_IDS: usize = 128;

/// No value for a trace ID in [`PerId`]'s index.
const NONE: u8 = u8::MAX;

/// At most one value per trace ID (0 to 127), kept in the order they were
/// inserted, with a table from trace ID to value: the lookup done for
/// every packet reads one byte of a small table, not a flag inside the
/// value, whose state its user has only just written.
#[derive(Clone)]
pub struct PerId<T> {
    index: [u8; TRACE_IDS],
    values: Vec<(u8, T)>,
}

impl<T> Default for PerId<T> {
    fn default() -> Self {
        PerId::new()
    }
}

impl<T: core::fmt::Debug> core::fmt::Debug for PerId<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<T> PerId<T> {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        PerId {
            index: [NONE; TRACE_IDS],
            values: Vec::new(),
        }
    }

    /// The value of trace ID `id`, if any.
    #[inline]
    #[must_use]
    pub fn get(&self, id: u8) -> Option<&T> {
        let i = *self.index.get(usize::from(id))?;
        self.values.get(usize::from(i)).map(|(_, v)| v)
    }

    /// The value of trace ID `id`, if any, to change.
    #[inline]
    pub fn get_mut(&mut self, id: u8) -> Option<&mut T> {
        let i = *self.index.get(usize::from(id))?;
        self.values.get_mut(usize::from(i)).map(|(_, v)| v)
    }

    /// Whether trace ID `id` has a value.
    #[inline]
    #[must_use]
    pub fn contains(&self, id: u8) -> bool {
        self.get(id).is_some()
    }

    /// Set the value of trace ID `id` (ignored when `id` is not a 7-bit
    /// trace ID); returns the value it had.
    pub fn insert(&mut self, id: u8, value: T) -> Option<T> {
        if let Some(old) = self.get_mut(id) {
            return Some(core::mem::replace(old, value));
        }
        let slot = self.index.get_mut(usize::from(id))?;
        // At most 128 values: the index fits in a byte below NONE.
        *slot = u8::try_from(self.values.len()).unwrap_or(NONE);
        self.values.push((id, value));
        None
    }

    /// The value of trace ID `id`, made by `make` when there is none yet
    /// (`None` when `make` gives none, or `id` is not a 7-bit trace ID).
    #[inline]
    pub fn get_or_insert_with(
        &mut self,
        id: u8,
        make: impl FnOnce() -> Option<T>,
    ) -> Option<&mut T> {
        let i = usize::from(*self.index.get(usize::from(id))?);
        if i < self.values.len() {
            return self.values.get_mut(i).map(|(_, v)| v);
        }
        self.insert_made(id, make)
    }

    /// [`PerId::get_or_insert_with`] for a trace ID without a value.
    #[cold]
    fn insert_made(&mut self, id: u8, make: impl FnOnce() -> Option<T>) -> Option<&mut T> {
        self.insert(id, make()?);
        self.get_mut(id)
    }

    /// Remove the value of trace ID `id`; the others keep their order.
    pub fn remove(&mut self, id: u8) -> Option<T> {
        let i = usize::from(*self.index.get(usize::from(id))?);
        if i >= self.values.len() {
            return None;
        }
        let (_, v) = self.values.remove(i);
        self.index = [NONE; TRACE_IDS];
        for (n, (k, _)) in self.values.iter().enumerate() {
            self.index[usize::from(*k)] = u8::try_from(n).unwrap_or(NONE);
        }
        Some(v)
    }

    /// Number of trace IDs with a value.
    #[must_use]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no trace ID has a value.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The trace IDs with a value, in ascending order.
    #[must_use]
    pub fn ids(&self) -> Vec<u8> {
        (0u8..)
            .zip(self.index.iter())
            .filter(|(_, &i)| i != NONE)
            .map(|(id, _)| id)
            .collect()
    }

    /// The values with their trace IDs, in ascending trace ID order.
    pub fn iter(&self) -> impl Iterator<Item = (u8, &T)> + '_ {
        self.index
            .iter()
            .filter_map(move |&i| self.values.get(usize::from(i)).map(|(id, v)| (*id, v)))
    }

    /// The values to change with their trace IDs, in ascending trace ID
    /// order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (u8, &mut T)> + '_ {
        let mut refs: Vec<&mut (u8, T)> = self.values.iter_mut().collect();
        refs.sort_unstable_by_key(|e| e.0);
        refs.into_iter().map(|(id, v)| (*id, v))
    }

    /// The values with their trace IDs, in the order they were inserted.
    pub fn in_insertion_order(&self) -> impl Iterator<Item = (u8, &T)> + '_ {
        self.values.iter().map(|(id, v)| (*id, v))
    }

    /// The values to change with their trace IDs, in the order they were
    /// inserted.
    pub fn in_insertion_order_mut(&mut self) -> impl Iterator<Item = (u8, &mut T)> + '_ {
        self.values.iter_mut().map(|(id, v)| (*id, v))
    }

    /// The values with their trace IDs, in the order they were inserted,
    /// taken out.
    pub fn into_insertion_order(self) -> impl Iterator<Item = (u8, T)> {
        self.values.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_by_trace_id() {
        let mut t: PerId<&str> = PerId::new();
        assert_eq!(t.insert(0x20, "b"), None);
        assert_eq!(t.insert(0x10, "a"), None);
        assert_eq!(t.insert(0x80, "x"), None, "not a trace ID: ignored");
        assert_eq!(t.insert(0x20, "c"), Some("b"));
        assert_eq!(t.get(0x20), Some(&"c"));
        assert_eq!(t.get(0x11), None);
        assert_eq!(t.get(0xFF), None);
        assert_eq!(t.ids(), [0x10, 0x20]);
        assert_eq!(t.iter().collect::<Vec<_>>(), [(0x10, &"a"), (0x20, &"c")]);
        let order: Vec<u8> = t.in_insertion_order().map(|(id, _)| id).collect();
        assert_eq!(order, [0x20, 0x10]);
        assert_eq!(t.get_or_insert_with(0x30, || Some("d")), Some(&mut "d"));
        assert_eq!(t.get_or_insert_with(0x31, || None), None);
        assert_eq!(t.remove(0x20), Some("c"));
        assert_eq!(t.ids(), [0x10, 0x30]);
        assert_eq!(t.get(0x30), Some(&"d"));
        for (_, v) in t.iter_mut() {
            *v = "z";
        }
        assert_eq!(t.iter().map(|(_, v)| *v).collect::<Vec<_>>(), ["z", "z"]);
        assert_eq!(t.len(), 2);
    }
}
