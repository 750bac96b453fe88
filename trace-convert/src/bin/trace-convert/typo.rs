//! Mistyped subcommands: `trace-convert packet TC2` names no subcommand
//! and no input, and is most likely `packets`.

use std::path::Path;

/// The subcommands, for suggestions.
const SUBCOMMANDS: [&str; 4] = ["packets", "decode", "convert", "report"];

/// The subcommand `word` is most likely a misspelling of: the nearest one
/// within 2 edits, when `word` is not itself a subcommand, an option or an
/// existing path.
pub fn subcommand_typo(word: &str) -> Option<&'static str> {
    if word.starts_with('-') || SUBCOMMANDS.contains(&word) || Path::new(word).exists() {
        return None;
    }
    SUBCOMMANDS
        .iter()
        .map(|s| (strsim::levenshtein(word, s), *s))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::subcommand_typo;

    #[test]
    fn near_misses_name_the_subcommand() {
        assert_eq!(subcommand_typo("packet"), Some("packets"));
        assert_eq!(subcommand_typo("pakets"), Some("packets"));
        assert_eq!(subcommand_typo("decod"), Some("decode"));
        assert_eq!(subcommand_typo("Decode"), Some("decode"));
        assert_eq!(subcommand_typo("convret"), Some("convert"));
    }

    #[test]
    fn other_words_are_left_alone() {
        for w in ["packets", "decode", "TC2", "x", "--packet", "pcktz_long"] {
            assert_eq!(subcommand_typo(w), None, "{w}");
        }
        // An existing path is an input, however it is spelled.
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("packet");
        std::fs::write(&f, b"").expect("write");
        assert_eq!(subcommand_typo(&f.display().to_string()), None);
    }
}
