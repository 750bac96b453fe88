//! Counting where the trace contradicted its memory image or itself, for
//! the summary: branches into the middle of an instruction of the image
//! and `inconsistent` events, with the first places of each.

use crate::event::{Event, EventKind, GapReason};

/// Where one source's trace contradicted its memory image or itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mismatches {
    /// Gaps where the trace went into the middle of an instruction of the
    /// image, and the first such addresses.
    pub inside: Firsts,
    /// Inconsistency events (the trace contradicting the decoded flow),
    /// and the first offsets where they were found.
    pub inconsistent: Firsts,
}

impl Mismatches {
    /// Count `e` if it is one of these (a gap or an inconsistency; other
    /// events are not looked at).
    #[cold]
    pub fn count(&mut self, e: &Event) {
        match e.kind {
            EventKind::Gap(GapReason::InsideInstruction { addr }) => {
                self.inside.note(u64::from(addr));
            }
            EventKind::Inconsistent { .. } => self.inconsistent.note(e.offset),
            _ => {}
        }
    }

    /// Add `other`'s, counted after these.
    pub fn add(&mut self, other: &Mismatches) {
        self.inside.add(&other.inside);
        self.inconsistent.add(&other.inconsistent);
    }

    /// The summary lines for trace ID `id` (none when nothing was found).
    #[must_use]
    pub fn lines(&self, id: u8) -> Vec<String> {
        let mut lines = Vec::new();
        if self.inside.count > 0 {
            lines.push(format!(
                "ID {id:#04x}: the trace went {} into the middle of an instruction of the image (at {}): the memory image does not match the code that ran",
                plural(self.inside.count, "time"),
                self.inside.list(true)
            ));
        }
        if self.inconsistent.count > 0 {
            lines.push(format!(
                "ID {id:#04x}: the trace contradicted the decoded flow {} (events `inconsistent`, first at offset {}): a memory image that does not match, damaged trace or a wrong configuration",
                plural(self.inconsistent.count, "time"),
                self.inconsistent.list(false)
            ));
        }
        lines
    }
}

/// A count and the first few distinct values counted (addresses or
/// offsets).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Firsts {
    /// How many.
    pub count: u64,
    first: [u64; Firsts::KEPT],
    len: u8,
}

impl Firsts {
    /// Distinct values kept.
    pub const KEPT: usize = 3;

    /// Count `value`.
    #[cold]
    pub fn note(&mut self, value: u64) {
        self.count += 1;
        self.keep(value);
    }

    fn keep(&mut self, value: u64) {
        let len = usize::from(self.len);
        if len < Self::KEPT && !self.kept().contains(&value) {
            self.first[len] = value;
            self.len += 1;
        }
    }

    /// The first distinct values counted, in order.
    #[must_use]
    pub fn kept(&self) -> &[u64] {
        &self.first[..usize::from(self.len)]
    }

    /// Add `other`'s, counted after these.
    pub fn add(&mut self, other: &Firsts) {
        for &v in other.kept() {
            self.keep(v);
        }
        self.count += other.count;
    }

    /// The values kept, in hex or decimal, with `...` when more were
    /// counted.
    fn list(&self, hex: bool) -> String {
        let v: Vec<String> = self
            .kept()
            .iter()
            .map(|v| {
                if hex {
                    format!("{v:#010x}")
                } else {
                    v.to_string()
                }
            })
            .collect();
        let more = if self.count > self.kept().len() as u64 {
            ", ..."
        } else {
            ""
        };
        format!("{}{more}", v.join(", "))
    }
}

/// `n` and `word`, plural but for one (`1 time`, `2 times`).
fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}
