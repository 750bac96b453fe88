//! The report's three forms: aligned text (as `perf report` prints),
//! CSV with a header, and a JSON array of objects (schema in
//! `docs/report.md`).

use super::table::Row;
use super::{ReportFormat, SortKey};
use crate::escape::escaped;
use std::io::{self, Write};

/// What is written: the sorted rows and the run's totals.
#[derive(Debug)]
pub struct Report<'a> {
    /// The rows, in the order they are written.
    pub rows: Vec<&'a Row>,
    /// Instructions of the run (the sum of the self counts).
    pub instructions: u64,
    /// Cycles of the run (0: the trace has no cycle counts, and the
    /// cycle columns are left out or empty).
    pub cycles: u64,
    /// PC samples of the run's ITM/DWT sources (0: none, and the sample
    /// columns are left out).
    pub samples: u64,
}

impl<'a> Report<'a> {
    /// `rows` sorted by `key` (counts descending, names ascending; ties
    /// by name).
    #[must_use]
    pub fn new(rows: &'a [Row], key: SortKey, instructions: u64, cycles: u64) -> Report<'a> {
        let mut rows: Vec<&Row> = rows.iter().collect();
        let by = |r: &Row| match key {
            SortKey::SelfCount => r.self_instructions,
            SortKey::Total => r.total_instructions,
            SortKey::Calls => r.calls,
            SortKey::Name => 0,
        };
        // Rows of samples only (ITM/DWT) after those of instructions, by
        // their samples.
        let samples_by = |r: &Row| if key == SortKey::Name { 0 } else { r.samples };
        rows.sort_by(|a, b| {
            by(b)
                .cmp(&by(a))
                .then_with(|| samples_by(b).cmp(&samples_by(a)))
                .then_with(|| a.name.cmp(&b.name))
        });
        let samples = rows.iter().map(|r| r.samples).sum();
        Report {
            rows,
            instructions,
            cycles,
            samples,
        }
    }

    fn sample_percent(&self, n: u64) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            n as f64 * 100.0 / self.samples as f64
        }
    }

    fn percent(&self, n: u64) -> f64 {
        if self.instructions == 0 {
            0.0
        } else {
            n as f64 * 100.0 / self.instructions as f64
        }
    }

    /// Write in `format`.
    ///
    /// # Errors
    ///
    /// The output's error.
    pub fn write(&self, format: ReportFormat, out: &mut dyn Write) -> io::Result<()> {
        match format {
            ReportFormat::Text => self.text(out),
            ReportFormat::Csv => self.csv(out),
            ReportFormat::Json => self.json(out),
        }
    }

    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let cycles = self.cycles > 0;
        let mut head: Vec<String> = vec![
            "Self%".into(),
            "Total%".into(),
            "Self".into(),
            "Total".into(),
            "Calls".into(),
        ];
        if cycles {
            head.push("Self cycles".into());
            head.push("Total cycles".into());
        }
        let samples = self.samples > 0;
        if samples {
            head.push("Samples%".into());
            head.push("Samples".into());
        }
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let mut v = vec![
                    format!("{:.2}%", self.percent(r.self_instructions)),
                    format!("{:.2}%", self.percent(r.total_instructions)),
                    r.self_instructions.to_string(),
                    r.total_instructions.to_string(),
                    r.calls.to_string(),
                ];
                if cycles {
                    v.push(r.self_cycles.to_string());
                    v.push(r.total_cycles.to_string());
                }
                if samples {
                    v.push(format!("{:.2}%", self.sample_percent(r.samples)));
                    v.push(r.samples.to_string());
                }
                v
            })
            .collect();
        let widths: Vec<usize> = head
            .iter()
            .enumerate()
            .map(|(i, h)| {
                cells
                    .iter()
                    .filter_map(|c| c.get(i))
                    .map(String::len)
                    .chain([h.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        write!(out, "# {} instructions", self.instructions)?;
        if cycles {
            write!(out, ", {} cycles", self.cycles)?;
        }
        if samples {
            write!(out, ", {} PC samples", self.samples)?;
        }
        writeln!(
            out,
            ", {} functions; self: as the innermost frame, total: anywhere on the stack",
            self.rows.len()
        )?;
        writeln!(out, "#")?;
        let line = |out: &mut dyn Write, cols: &[String], fill: bool| -> io::Result<()> {
            write!(out, "{}", if fill { "# " } else { "  " })?;
            for (c, w) in cols.iter().zip(&widths) {
                write!(out, "{c:>w$}  ")?;
            }
            Ok(())
        };
        line(out, &head, true)?;
        writeln!(out, "Function")?;
        let dots: Vec<String> = widths.iter().map(|w| ".".repeat(*w)).collect();
        line(out, &dots, true)?;
        writeln!(out, "{}", ".".repeat(8))?;
        writeln!(out, "#")?;
        for (r, c) in self.rows.iter().zip(&cells) {
            line(out, c, false)?;
            writeln!(out, "{}", escaped(&r.name))?;
        }
        Ok(())
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let samples = self.samples > 0;
        writeln!(
            out,
            "function,calls,self_instructions,self_percent,total_instructions,total_percent,self_cycles,total_cycles{}",
            if samples { ",samples,samples_percent" } else { "" }
        )?;
        for r in &self.rows {
            write!(
                out,
                "{},{},{},{:.4},{},{:.4},",
                csv_field(&escaped(&r.name)),
                r.calls,
                r.self_instructions,
                self.percent(r.self_instructions),
                r.total_instructions,
                self.percent(r.total_instructions),
            )?;
            if self.cycles > 0 {
                write!(out, "{},{}", r.self_cycles, r.total_cycles)?;
            } else {
                write!(out, ",")?;
            }
            if samples {
                write!(out, ",{},{:.4}", r.samples, self.sample_percent(r.samples))?;
            }
            writeln!(out)?;
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &self.json_rows()).map_err(io::Error::other)?;
        writeln!(out)
    }

    /// The rows as the JSON form writes them.
    pub(super) fn json_rows(&self) -> Vec<JsonRow<'a>> {
        let cycles = |n: u64| (self.cycles > 0).then_some(n);
        self.rows
            .iter()
            .map(|r| JsonRow {
                function: &r.name,
                calls: r.calls,
                self_instructions: r.self_instructions,
                self_percent: self.percent(r.self_instructions),
                total_instructions: r.total_instructions,
                total_percent: self.percent(r.total_instructions),
                self_cycles: cycles(r.self_cycles),
                total_cycles: cycles(r.total_cycles),
                samples: (self.samples > 0).then_some(r.samples),
                samples_percent: (self.samples > 0).then(|| self.sample_percent(r.samples)),
            })
            .collect()
    }
}

impl JsonRow<'_> {
    /// The row as a line of the CSV form.
    pub(super) fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        write!(
            out,
            "{},{},{},{:.4},{},{:.4},",
            csv_field(&escaped(self.function)),
            self.calls,
            self.self_instructions,
            self.self_percent,
            self.total_instructions,
            self.total_percent,
        )?;
        match (self.self_cycles, self.total_cycles) {
            (Some(s), Some(t)) => writeln!(out, "{s},{t}"),
            _ => writeln!(out, ","),
        }
    }
}

/// One object of the JSON form, its fields in the documented order.
#[derive(serde::Serialize)]
pub(super) struct JsonRow<'a> {
    function: &'a str,
    calls: u64,
    self_instructions: u64,
    self_percent: f64,
    total_instructions: u64,
    total_percent: f64,
    self_cycles: Option<u64>,
    total_cycles: Option<u64>,
    /// PC samples (runs with ITM/DWT samples only).
    #[serde(skip_serializing_if = "Option::is_none")]
    samples: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    samples_percent: Option<f64>,
}

/// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a
/// line break, quotes doubled.
pub(super) fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, calls: u64, own: u64, total: u64) -> Row {
        Row {
            name: name.into(),
            calls,
            self_instructions: own,
            total_instructions: total,
            ..Row::default()
        }
    }

    #[test]
    fn sorted_by_each_key() {
        let rows = [
            row("b", 1, 10, 50),
            row("a", 5, 30, 30),
            row("c", 2, 10, 90),
        ];
        let names = |k| -> Vec<&str> {
            Report::new(&rows, k, 50, 0)
                .rows
                .iter()
                .map(|r| r.name.as_str())
                .collect()
        };
        assert_eq!(names(SortKey::SelfCount), ["a", "b", "c"]);
        assert_eq!(names(SortKey::Total), ["c", "b", "a"]);
        assert_eq!(names(SortKey::Calls), ["a", "c", "b"]);
        assert_eq!(names(SortKey::Name), ["a", "b", "c"]);
    }

    #[test]
    fn csv_quotes_names_with_commas() {
        let rows = [row("f(int, char)", 1, 2, 4)];
        let mut out = Vec::new();
        Report::new(&rows, SortKey::SelfCount, 4, 0)
            .write(ReportFormat::Csv, &mut out)
            .expect("write");
        let text = String::from_utf8(out).expect("UTF-8");
        assert_eq!(
            text.lines().nth(1),
            Some("\"f(int, char)\",1,2,50.0000,4,100.0000,,")
        );
    }

    #[test]
    fn text_columns_line_up() {
        let rows = [
            row("short", 1, 2, 4),
            row("long", 123_456, 1_000_000, 1_000_002),
        ];
        let mut out = Vec::new();
        Report::new(&rows, SortKey::SelfCount, 1_000_002, 0)
            .write(ReportFormat::Text, &mut out)
            .expect("write");
        let text = String::from_utf8(out).expect("UTF-8");
        let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(body.len(), 2);
        // Every name starts in the same column as the header's.
        let col = text
            .lines()
            .find(|l| l.ends_with("Function"))
            .map(|l| l.len() - "Function".len());
        for l in body {
            let name = l.rsplit(' ').next().unwrap_or("");
            assert_eq!(Some(l.len() - name.len()), col, "{l}");
        }
    }
}
