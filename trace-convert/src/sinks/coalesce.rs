//! Coalescing of repeated instants on the timelines (Chrome, Perfetto).
//!
//! A capture decoded without its code image reports "memory not
//! accessible" each time the trace reaches the same address again, and a
//! long one does so millions of times: as many instants make a timeline
//! no viewer loads. So the instants of a thread are held while its stack
//! does not change (a *run*: no slice begins or ends on its track), and
//! identical ones (the same name: kind, address, reason) become one
//! instant at the time of the first, carrying how many it stands for and
//! the time of the last. A run ends, and its instants are written in the
//! order they first came, when a slice of the thread begins or ends, at
//! the end of the trace, or when it holds [`MAX_DISTINCT`] different
//! instants. The timestamps of a track thus never go back.
//!
//! An instant of an event that itself begins or ends slices (an
//! exception entering its handler, a gap closing the stack) is written
//! at once, as it comes.
//!
//! ```
//! use trace_convert::sinks::coalesce::Instants;
//! use trace_convert::sinks::ThreadKey;
//!
//! let t = ThreadKey::of_id(0x10);
//! let mut held = Instants::default();
//! for time in [5, 9, 12] {
//!     held.push(t, time, "memory not accessible: 0x00001000".to_owned());
//! }
//! held.push(t, 13, "trace on: filter".to_owned());
//! let run = held.take(t);
//! assert_eq!(run.len(), 2);
//! assert_eq!((run[0].time, run[0].last, run[0].count), (5, 12, 3));
//! assert_eq!((run[1].time, run[1].count), (13, 1));
//! ```

use crate::fast_map::FastMap;
use crate::sinks::ThreadKey;

/// Different instants a run holds before it is written out.
pub const MAX_DISTINCT: usize = 4096;

/// One instant standing for `count` identical ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Its name (what it says).
    pub name: String,
    /// Clock ticks of the first.
    pub time: u64,
    /// Clock ticks of the last.
    pub last: u64,
    /// How many.
    pub count: u64,
}

/// The instants held per thread (see the [module](self) docs).
#[derive(Debug, Default)]
pub struct Instants {
    runs: FastMap<ThreadKey, Run>,
}

#[derive(Debug, Default)]
struct Run {
    held: Vec<Held>,
    by_name: FastMap<String, usize>,
}

impl Instants {
    /// Hold an instant of `thread` at `time`; whether the thread's run is
    /// now full ([`MAX_DISTINCT`]) and should be taken.
    pub fn push(&mut self, thread: ThreadKey, time: u64, name: String) -> bool {
        let run = self.runs.entry(thread).or_default();
        if let Some(h) = run.by_name.get(&name).and_then(|&i| run.held.get_mut(i)) {
            h.count += 1;
            h.last = time;
            return false;
        }
        run.by_name.insert(name.clone(), run.held.len());
        run.held.push(Held {
            name,
            time,
            last: time,
            count: 1,
        });
        run.held.len() >= MAX_DISTINCT
    }

    /// Whether `thread` holds instants.
    #[must_use]
    pub fn holds(&self, thread: ThreadKey) -> bool {
        !self.runs.is_empty() && self.runs.get(&thread).is_some_and(|r| !r.held.is_empty())
    }

    /// End `thread`'s run: its instants, in the order they first came.
    pub fn take(&mut self, thread: ThreadKey) -> Vec<Held> {
        self.runs
            .remove(&thread)
            .map(|r| r.held)
            .unwrap_or_default()
    }

    /// End every run: the threads (sorted) and their instants.
    pub fn take_all(&mut self) -> Vec<(ThreadKey, Vec<Held>)> {
        let mut v: Vec<(ThreadKey, Vec<Held>)> = self
            .runs
            .drain()
            .filter(|(_, r)| !r.held.is_empty())
            .map(|(t, r)| (t, r.held))
            .collect();
        v.sort_unstable_by_key(|(t, _)| *t);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_instants_of_a_run_become_one_per_thread() {
        let a = ThreadKey::of_id(1);
        let b = ThreadKey::of_id(2);
        let mut i = Instants::default();
        i.push(a, 1, "x".into());
        i.push(b, 2, "x".into());
        i.push(a, 3, "y".into());
        i.push(a, 4, "x".into());
        assert!(i.holds(a));
        let run = i.take(a);
        let got: Vec<(&str, u64, u64, u64)> = run
            .iter()
            .map(|h| (h.name.as_str(), h.time, h.last, h.count))
            .collect();
        assert_eq!(got, vec![("x", 1, 4, 2), ("y", 3, 3, 1)]);
        assert!(!i.holds(a));
        // A new run starts afresh.
        i.push(a, 9, "x".into());
        let all = i.take_all();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].0, a);
        assert_eq!(all[1].1[0].count, 1);
    }

    #[test]
    fn a_full_run_says_so() {
        let t = ThreadKey::of_id(1);
        let mut i = Instants::default();
        for n in 0..MAX_DISTINCT - 1 {
            assert!(!i.push(t, 0, format!("{n}")));
        }
        assert!(!i.push(t, 0, "0".into()), "a repeat adds nothing");
        assert!(i.push(t, 0, "last".into()));
    }
}
