//! Looking a snapshot's devices and core bindings up by name in constant
//! time: a perf.data recording of many processes describes a core device
//! per process, and each capture's memory looks its core up, which a
//! search through the lists made quadratic (16,000 processes: 4 s).

use std::collections::HashMap;
use std::sync::OnceLock;

/// Positions by name (the first entry of each name), built on first use
/// from the list it is asked about. The lists are public and may change
/// after: a position is used only when the entry there still has that
/// name, and a name not found there is searched for in the list itself.
#[derive(Debug, Clone, Default)]
pub struct NameIndex(OnceLock<HashMap<String, usize>>);

impl NameIndex {
    /// The position of the first entry of `list` whose name (`name_of`)
    /// is `name`.
    pub fn find<T>(&self, list: &[T], name: &str, name_of: impl Fn(&T) -> &str) -> Option<usize> {
        let map = self.0.get_or_init(|| {
            let mut m = HashMap::with_capacity(list.len());
            for (i, x) in list.iter().enumerate() {
                m.entry(name_of(x).to_owned()).or_insert(i);
            }
            m
        });
        match map.get(name) {
            Some(&i) if list.get(i).is_some_and(|x| name_of(x) == name) => Some(i),
            _ => list.iter().position(|x| name_of(x) == name),
        }
    }
}

/// Equal whatever they hold: an index is not part of what a snapshot says.
impl PartialEq for NameIndex {
    fn eq(&self, _: &NameIndex) -> bool {
        true
    }
}

impl Eq for NameIndex {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_checked_against_the_list_as_it_is() {
        let idx = NameIndex::default();
        let mut list = vec!["a".to_owned(), "b".to_owned(), "a".to_owned()];
        #[allow(clippy::ptr_arg)] // The list's items are Strings.
        fn name(s: &String) -> &str {
            s.as_str()
        }
        assert_eq!(idx.find(&list, "a", name), Some(0));
        assert_eq!(idx.find(&list, "b", name), Some(1));
        assert_eq!(idx.find(&list, "c", name), None);
        list.remove(0);
        list.push("c".into());
        assert_eq!(idx.find(&list, "b", name), Some(0));
        assert_eq!(idx.find(&list, "a", name), Some(1));
        assert_eq!(idx.find(&list, "c", name), Some(2));
    }
}
