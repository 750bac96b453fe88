//! Text from input files made safe to print: control characters (escape
//! sequences, carriage returns, bells) are written as escapes.

use std::fmt::Write;

/// `text` with every control character escaped (`\u{1b}`, `\r`, ...).
#[must_use]
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            let _ = write!(out, "{}", c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(shown("ETM\u{1b}[2J"), "ETM\\u{1b}[2J");
        assert_eq!(shown("a\rb\u{7}\u{9b}"), "a\\rb\\u{7}\\u{9b}");
        assert_eq!(shown("Cortex-A15 µ"), "Cortex-A15 µ");
    }
}
