//! Counts in messages: `1 error`, `2 errors`.

/// `n` and `word`, with an `s` added unless `n` is 1: `1 byte`,
/// `0 bytes`, `2 bytes`.
#[must_use]
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::plural;

    #[test]
    fn one_is_singular_and_the_rest_plural() {
        assert_eq!(plural(1, "error"), "1 error");
        assert_eq!(plural(0, "error"), "0 errors");
        assert_eq!(plural(2, "byte"), "2 bytes");
        assert_eq!(plural(u64::MAX, "gap"), format!("{} gaps", u64::MAX));
    }
}
