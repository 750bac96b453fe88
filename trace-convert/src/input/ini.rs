//! The small INI dialect of trace snapshots: `[section]`, `key=value`,
//! `;` or `#` comments, keys unique per section (the last one wins).

use std::fmt;

/// One `[section]` with its entries in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    /// Section name as written, without the brackets.
    pub name: String,
    /// `(key, value)` pairs, trimmed, in file order.
    pub entries: Vec<(String, String)>,
    /// 1-based line of the section header.
    pub line: usize,
}

impl Section {
    /// The value of `key` (compared without case), the last if repeated.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }
}

/// A parsed INI file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ini {
    /// Sections in file order; a section name may repeat.
    pub sections: Vec<Section>,
}

/// A line that is neither a section header, an entry nor a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IniError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for IniError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for IniError {}

impl Ini {
    /// Parse INI text.
    ///
    /// # Errors
    ///
    /// An [`IniError`] for an unterminated section header, an entry before
    /// the first section, or a line without `=`.
    pub fn parse(text: &str) -> Result<Ini, IniError> {
        let mut ini = Ini::default();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim().trim_start_matches('\u{feff}');
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            let err = |message: &str| IniError {
                line: n + 1,
                message: message.to_owned(),
            };
            if let Some(rest) = line.strip_prefix('[') {
                let name = rest
                    .strip_suffix(']')
                    .ok_or_else(|| err("section header without ']'"))?;
                ini.sections.push(Section {
                    name: name.trim().to_owned(),
                    entries: Vec::new(),
                    line: n + 1,
                });
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| err("expected `key=value`"))?;
            let section = ini
                .sections
                .last_mut()
                .ok_or_else(|| err("entry before the first [section]"))?;
            section
                .entries
                .push((key.trim().to_owned(), value.trim().to_owned()));
        }
        Ok(ini)
    }

    /// The first section called `name` (compared without case).
    #[must_use]
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }
}

/// Parse an unsigned number written in decimal or with a `0x` prefix.
#[must_use]
pub fn parse_u64(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16).ok(),
        None => t.replace('_', "").parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_entries_and_comments() {
        let ini = Ini::parse("; c\n[a]\nx = 1\n# c\n[b]\ny=0x10\ny=2\n").expect("parses");
        assert_eq!(ini.sections.len(), 2);
        assert_eq!(ini.section("A").and_then(|s| s.get("x")), Some("1"));
        assert_eq!(ini.section("b").and_then(|s| s.get("Y")), Some("2"));
    }

    #[test]
    fn malformed_lines_are_errors_with_line_numbers() {
        assert_eq!(Ini::parse("[a\n").map_err(|e| e.line), Err(1));
        assert_eq!(Ini::parse("x=1\n").map_err(|e| e.line), Err(1));
        assert_eq!(Ini::parse("[a]\n\nnonsense\n").map_err(|e| e.line), Err(3));
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u64("0x1F"), Some(31));
        assert_eq!(parse_u64(" 42 "), Some(42));
        assert_eq!(parse_u64("0x"), None);
        assert_eq!(parse_u64("-1"), None);
    }
}
