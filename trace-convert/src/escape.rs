//! Names from inputs made safe for the text the tool writes. Symbol names
//! (ELF, DWARF, `--kallsyms`), perf.data command names, snapshot core and
//! source names and `.ini` text are written by whoever made the input: a
//! name with an escape sequence must not reach a terminal, and one with a
//! newline or a `;` must not break a line-based format.
//!
//! The rule, everywhere text is written (the report as text or CSV, the
//! listings, folded stacks, LCOV, messages on standard error): every
//! control character (C0, DEL and C1) is written as its Rust escape,
//! `\u{1b}` for ESC, `\u{7}` for BEL, `\n`, `\r` and `\t` for those,
//! and a backslash as `\\`, so that escaped text reads one way only (a
//! name holding the six characters `\u{1b}` is written `\\u{1b}`).
//! Folded stacks also write `;` inside a name as `:` (`;` separates
//! frames there). JSON outputs escape as JSON does; Perfetto's protobuf
//! holds the names as they are.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` is written escaped.
fn needs_escape(c: char) -> bool {
    c.is_control() || c == '\\'
}

/// `text` with every control character escaped (`\u{1b}`, `\r`, ...),
/// and every backslash (`\\`); borrowed when it has none.
#[must_use]
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            let _ = write!(out, "{}", c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` with every control character escaped, backslashes left as they
/// are: for messages built from names escaped already ([`escaped`]), as
/// the last guard before a terminal (escaping them again would double
/// their backslashes). Borrowed when there is none.
#[must_use]
pub fn guarded(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            let _ = write!(out, "{}", c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` with every control character escaped, as [`escaped`].
#[must_use]
pub fn shown(text: &str) -> String {
    escaped(text).into_owned()
}

/// A name as one frame of a folded stack: control characters escaped and
/// `;` (the frame separator) written as `:`.
#[must_use]
pub fn folded_frame(name: &str) -> String {
    escaped(name).replace(';', ":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(shown("ETM\u{1b}[2J"), "ETM\\u{1b}[2J");
        assert_eq!(shown("a\rb\u{7}\u{9b}"), "a\\rb\\u{7}\\u{9b}");
        assert_eq!(shown("a\nb\tc\u{7f}"), "a\\nb\\tc\\u{7f}");
        assert_eq!(shown("Cortex-A15 µ"), "Cortex-A15 µ");
        // A backslash too: the text `\u{1b}` and an ESC read differently.
        assert_eq!(shown("a\\u{1b}"), "a\\\\u{1b}");
        assert_ne!(shown("a\\u{1b}"), shown("a\u{1b}"));
        assert_eq!(shown("C:\\ti"), "C:\\\\ti");
        // Escaped once, guarded any number of times: the same.
        let once = shown("a\\b\u{1b}");
        assert_eq!(guarded(&once), once);
        assert_eq!(guarded("a\\b\u{1b}"), "a\\b\\u{1b}");
        assert!(matches!(escaped("main"), Cow::Borrowed("main")));
    }

    #[test]
    fn folded_frames_cannot_split_a_stack_or_a_line() {
        assert_eq!(folded_frame("a;b\nc 5"), "a:b\\nc 5");
        assert_eq!(
            folded_frame("operator new(unsigned int)"),
            "operator new(unsigned int)"
        );
    }
}
