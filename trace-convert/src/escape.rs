//! Names from inputs made safe for the text the tool writes. Symbol names
//! (ELF, DWARF, `--kallsyms`), perf.data command names, snapshot core and
//! source names and `.ini` text are written by whoever made the input: a
//! name with an escape sequence must not reach a terminal, and one with a
//! newline or a `;` must not break a line-based format.
//!
//! The rule, everywhere text is written (the report as text or CSV, the
//! listings, folded stacks, LCOV, messages on standard error): every
//! control character (C0, DEL and C1) is written as its Rust escape,
//! `\u{1b}` for ESC, `\u{7}` for BEL, `\n`, `\r` and `\t` for those.
//! Folded stacks also write `;` inside a name as `:` (`;` separates
//! frames there). JSON outputs escape as JSON does; Perfetto's protobuf
//! holds the names as they are.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character escaped (`\u{1b}`, `\r`, ...);
/// borrowed when it has none.
#[must_use]
pub fn escaped(text: &str) -> Cow<'_, str> {
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
