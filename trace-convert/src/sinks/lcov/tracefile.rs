//! LCOV tracefiles: the model ([`LcovReport`]) and its writer.
//!
//! The writer emits, per source file in path order, the records `genhtml`
//! and other LCOV consumers read:
//!
//! ```text
//! TN:<test name>                 (when the report has one)
//! SF:<source file path>
//! FN:<first line>,<function>     (by line, then name)
//! FNDA:<calls>,<function>
//! FNF:<functions> / FNH:<functions called>
//! BRDA:<line>,<block>,<branch>,<taken count or ->
//! BRF:<branches> / BRH:<branches taken>
//! DA:<line>,<count>              (by line)
//! LF:<lines> / LH:<lines hit>
//! end_of_record
//! ```
//!
//! A branch's count is `-` when the code holding it never ran. The output
//! is deterministic: the same model always gives the same bytes.

use crate::escape::escaped;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// Coverage of one function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FunctionCoverage {
    /// Line of the function's first line (its `FN:` line).
    pub line: u32,
    /// Times the function was entered.
    pub count: u64,
}

/// Coverage of one branch direction (`BRDA`), keyed in
/// [`FileCoverage::branches`] by `(line, block, branch)`.
pub type BranchCount = Option<u64>;

/// Coverage of one source file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileCoverage {
    /// Functions by name.
    pub functions: BTreeMap<String, FunctionCoverage>,
    /// Execution count by line number.
    pub lines: BTreeMap<u32, u64>,
    /// Branch directions by `(line, block, branch)`: times taken, or
    /// `None` when the code holding the branch never ran.
    pub branches: BTreeMap<(u32, u32, u32), BranchCount>,
}

/// Found and hit totals of one kind of item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// Items found.
    pub found: u64,
    /// Items with a count above zero.
    pub hit: u64,
}

impl Totals {
    fn add(&mut self, other: Totals) {
        self.found += other.found;
        self.hit += other.hit;
    }
}

/// Totals of a file or of a whole report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    /// Lines (`LF`/`LH`).
    pub lines: Totals,
    /// Functions (`FNF`/`FNH`).
    pub functions: Totals,
    /// Branch directions (`BRF`/`BRH`).
    pub branches: Totals,
}

impl FileCoverage {
    /// Record `count` executions of `line`, keeping the largest count seen
    /// for the line.
    pub fn line_max(&mut self, line: u32, count: u64) {
        let c = self.lines.entry(line).or_insert(0);
        *c = (*c).max(count);
    }

    /// This file's totals.
    #[must_use]
    pub fn summary(&self) -> Summary {
        let count = |hit: usize, found: usize| Totals {
            found: found as u64,
            hit: hit as u64,
        };
        Summary {
            lines: count(
                self.lines.values().filter(|&&c| c > 0).count(),
                self.lines.len(),
            ),
            functions: count(
                self.functions.values().filter(|f| f.count > 0).count(),
                self.functions.len(),
            ),
            branches: count(
                self.branches
                    .values()
                    .filter(|c| c.is_some_and(|c| c > 0))
                    .count(),
                self.branches.len(),
            ),
        }
    }
}

/// A whole LCOV tracefile.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LcovReport {
    /// Test name (`TN:`), if any.
    pub test_name: Option<String>,
    /// Source files by path.
    pub files: BTreeMap<String, FileCoverage>,
}

impl LcovReport {
    /// Totals over all files.
    #[must_use]
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for f in self.files.values() {
            let fs = f.summary();
            s.lines.add(fs.lines);
            s.functions.add(fs.functions);
            s.branches.add(fs.branches);
        }
        s
    }

    /// Write the tracefile.
    ///
    /// # Errors
    ///
    /// `InvalidInput` when a test name, path or function name is empty;
    /// otherwise the error of the writer. Control characters in them (line
    /// breaks too) are written escaped ([`crate::escape`]).
    pub fn write<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let mut out = io::BufWriter::new(w);
        for (path, file) in &self.files {
            // Control characters (line breaks too) escaped: see
            // crate::escape.
            if let Some(tn) = &self.test_name {
                check_text("test name", tn)?;
                writeln!(out, "TN:{}", escaped(tn))?;
            }
            check_text("source path", path)?;
            writeln!(out, "SF:{}", escaped(path))?;
            let mut fns: Vec<(&String, &FunctionCoverage)> = file.functions.iter().collect();
            fns.sort_by_key(|(name, f)| (f.line, *name));
            for (name, f) in &fns {
                check_text("function name", name)?;
                writeln!(out, "FN:{},{}", f.line, escaped(name))?;
            }
            for (name, f) in &fns {
                writeln!(out, "FNDA:{},{}", f.count, escaped(name))?;
            }
            let s = file.summary();
            writeln!(out, "FNF:{}", s.functions.found)?;
            writeln!(out, "FNH:{}", s.functions.hit)?;
            for (&(line, block, branch), count) in &file.branches {
                match count {
                    Some(c) => writeln!(out, "BRDA:{line},{block},{branch},{c}")?,
                    None => writeln!(out, "BRDA:{line},{block},{branch},-")?,
                }
            }
            writeln!(out, "BRF:{}", s.branches.found)?;
            writeln!(out, "BRH:{}", s.branches.hit)?;
            for (line, count) in &file.lines {
                writeln!(out, "DA:{line},{count}")?;
            }
            writeln!(out, "LF:{}", s.lines.found)?;
            writeln!(out, "LH:{}", s.lines.hit)?;
            writeln!(out, "end_of_record")?;
        }
        out.flush()
    }
}

fn check_text(what: &str, text: &str) -> io::Result<()> {
    if text.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} {text:?} cannot be written in an LCOV file"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_in_order() {
        let mut f = FileCoverage::default();
        f.functions
            .insert("b".into(), FunctionCoverage { line: 10, count: 0 });
        f.functions
            .insert("a".into(), FunctionCoverage { line: 3, count: 2 });
        f.line_max(4, 2);
        f.line_max(3, 1);
        f.line_max(3, 5);
        f.line_max(11, 0);
        f.branches.insert((4, 0, 0), Some(1));
        f.branches.insert((4, 0, 1), Some(0));
        f.branches.insert((11, 0, 0), None);
        let mut r = LcovReport {
            test_name: Some("t".into()),
            ..LcovReport::default()
        };
        r.files.insert("/src/x.c".into(), f);
        let mut out = Vec::new();
        r.write(&mut out).expect("write");
        let text = String::from_utf8(out).expect("utf8");
        let expected = "TN:t\nSF:/src/x.c\nFN:3,a\nFN:10,b\nFNDA:2,a\nFNDA:0,b\nFNF:2\nFNH:1\n\
                        BRDA:4,0,0,1\nBRDA:4,0,1,0\nBRDA:11,0,0,-\nBRF:3\nBRH:1\n\
                        DA:3,5\nDA:4,2\nDA:11,0\nLF:3\nLH:2\nend_of_record\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn control_characters_in_names_are_escaped_and_empty_names_refused() {
        let mut r = LcovReport::default();
        let mut f = FileCoverage::default();
        f.functions.insert(
            "evil\nend_of_record\n\u{1b}[2J".into(),
            FunctionCoverage { line: 1, count: 1 },
        );
        r.files.insert("a\nb.c".into(), f);
        let mut out = Vec::new();
        r.write(&mut out).expect("written");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(
            text.starts_with("SF:a\\nb.c\nFN:1,evil\\nend_of_record\\n\\u{1b}[2J\n"),
            "{text}"
        );
        assert_eq!(text.matches("end_of_record\n").count(), 1, "{text}");
        assert!(!text.contains('\u{1b}'));
        let mut r = LcovReport::default();
        r.files.insert(String::new(), FileCoverage::default());
        assert!(r.write(&mut Vec::new()).is_err());
    }
}
