//! The small INI dialect of trace snapshots: `[section]`, `key=value`,
//! `;` or `#` comments, keys unique per section (the last one wins, and
//! the repeat is recorded); lines end with LF, CR LF or CR alone.

use std::collections::HashMap;
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
    /// Keys given again in the same section: (1-based line of the repeat,
    /// section name, key). The value of the repeat replaced the earlier
    /// one, which keeps its place in the entries.
    pub repeats: Vec<(usize, String, String)>,
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
        // Per section of `ini.sections`: lower-case key to entry index.
        let mut keys: Vec<HashMap<String, usize>> = Vec::new();
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
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
                keys.push(HashMap::new());
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| err("expected `key=value`"))?;
            let (Some(section), Some(index)) = (ini.sections.last_mut(), keys.last_mut()) else {
                return Err(err("entry before the first [section]"));
            };
            let (key, value) = (key.trim().to_owned(), value.trim().to_owned());
            match index.get(&key.to_ascii_lowercase()) {
                Some(&at) => {
                    ini.repeats.push((n + 1, section.name.clone(), key));
                    section.entries[at].1 = value;
                }
                None => {
                    index.insert(key.to_ascii_lowercase(), section.entries.len());
                    section.entries.push((key, value));
                }
            }
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
    fn a_repeated_key_keeps_its_place_and_takes_the_last_value() {
        let ini = Ini::parse("[l]\na=1\nb=2\nA=3\n").expect("parses");
        let l = ini.section("l").expect("section");
        assert_eq!(
            l.entries,
            vec![
                ("a".to_owned(), "3".to_owned()),
                ("b".to_owned(), "2".to_owned())
            ]
        );
        assert_eq!(ini.repeats, vec![(4, "l".to_owned(), "A".to_owned())]);
    }

    #[test]
    fn carriage_returns_alone_end_lines() {
        for text in ["[a]\rx=1\r\r[b]\ry=2\r", "[a]\r\nx=1\r\n\r\n[b]\r\ny=2"] {
            let ini = Ini::parse(text).expect("parses");
            assert_eq!(ini.section("a").and_then(|s| s.get("x")), Some("1"));
            assert_eq!(ini.section("b").and_then(|s| s.get("y")), Some("2"));
            assert_eq!(ini.section("b").map(|s| s.line), Some(4));
        }
        assert_eq!(Ini::parse("[a]\rnonsense").map_err(|e| e.line), Err(2));
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
