//! How a protocol lists its packets without knowing where the lines go:
//! [`FieldWriter`] takes a packet's JSON Lines fields, [`TextWriter`] the
//! pieces of its text line. The listing writers implement them (a JSON
//! line buffer, a record for tests), so a new protocol's packets are
//! listed by both forms with no change to the listings.

/// Where a packet's fields go, in the order the protocol gives them.
///
/// Names are the schema's (`docs/jsonl.md`): snake_case, the same name
/// meaning the same thing in every protocol (`address`, `isa`,
/// `cycles`, ...).
pub trait FieldWriter {
    /// A number.
    fn num(&mut self, name: &'static str, value: u64);
    /// An address (a listing may keep the decimal forms of those it met:
    /// a stream's branches go to a few addresses again and again).
    fn address(&mut self, name: &'static str, value: u32) {
        self.num(name, u64::from(value));
    }
    /// `true` or `false`.
    fn flag(&mut self, name: &'static str, value: bool);
    /// A name of the protocol's own vocabulary (`arm`, `periodic`):
    /// static text of ASCII letters, digits, `_` and `-`, which the
    /// listings write as it is.
    fn text(&mut self, name: &'static str, value: &'static str);
    /// A string of one ASCII letter per item (atoms: `EEN`).
    fn letters(&mut self, name: &'static str, letters: impl Iterator<Item = u8>);
}

/// Where the pieces of a packet's text line go.
pub trait TextWriter {
    /// Text as it is.
    fn put(&mut self, text: &str);
    /// One ASCII byte.
    fn byte(&mut self, b: u8);
    /// A number in decimal.
    fn dec(&mut self, value: u64);
    /// A 32-bit value as 8 lower-case hexadecimal digits.
    fn hex8(&mut self, value: u32);
}
