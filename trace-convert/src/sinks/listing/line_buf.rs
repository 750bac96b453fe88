//! The output buffer of the fast listing writers: lines are written into a
//! buffer allocated (and zeroed) once, with fixed-width copies, and the
//! buffer goes to the writer about every 64 KiB.
//!
//! Each fixed-width write copies a whole field of constant size (a padded
//! name, 20 bytes of digits, 8 hex digits) and then moves the cursor by
//! the length that counts; the bytes beyond are overwritten by the next
//! field. The buffer keeps [`SLACK`] bytes after [`FLUSH_AT`] so that a
//! whole line of a fast writer always fits once [`LineBuf::room`] has made
//! room.

use std::io::{self, Write};

/// The buffer goes to the writer once it holds this many bytes.
const FLUSH_AT: usize = 1 << 16;

/// Room after [`FLUSH_AT`]: the longest line a fast writer composes
/// (including the overrun of its last fixed-width copy) fits in it.
pub(crate) const SLACK: usize = 1024;

/// A name padded to a fixed width, with its length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Padded<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Padded<N> {
    /// `s` padded with zeros to `N` bytes; longer text is cut at `N`
    /// bytes (the tables of the writers hold only their own short texts).
    pub(crate) fn new(s: &[u8]) -> Self {
        let mut bytes = [0u8; N];
        let len = s.len().min(N);
        bytes[..len].copy_from_slice(&s[..len]);
        Padded { bytes, len }
    }
}

/// Powers of ten, `POW10[k] = 10^k`.
const POW10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut k = 1;
    while k < 20 {
        t[k] = t[k - 1] * 10;
        k += 1;
    }
    t
};

/// Number of decimal digits of `v`: from its bit length (log10(2) is
/// about 1233 / 4096), one comparison with a power of ten settles it.
#[inline(always)]
fn digits(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    let guess = (bits * 1233) >> 12;
    guess + usize::from((v | 1) >= POW10[guess])
}

/// The 8 lower-case hex digits of `v`, most significant first.
#[inline(always)]
pub(crate) fn hex8(v: u32) -> [u8; 8] {
    // One nibble per byte, nibble 0 in the lowest byte.
    let mut x = u64::from(v);
    x = ((x & 0xFFFF_0000) << 16) | (x & 0xFFFF);
    x = ((x & 0x0000_FF00_0000_FF00) << 8) | (x & 0x0000_00FF_0000_00FF);
    x = ((x & 0x00F0_00F0_00F0_00F0) << 4) | (x & 0x000F_000F_000F_000F);
    // Bytes 10..15 become 'a'..'f': add 39 more than '0' to them.
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    (x + 0x3030_3030_3030_3030 + letters * 39).to_be_bytes()
}

/// The decimal forms of recently written 32-bit values, by a hash of the
/// value.
#[derive(Debug)]
pub(crate) struct DecCache {
    slots: Vec<(u32, Padded<16>)>,
}

impl DecCache {
    /// log2 of the number of slots.
    const BITS: u32 = 10;

    /// A cache whose slots all hold 0 (correct, whatever slot 0 is read
    /// from).
    pub(crate) fn new() -> Self {
        DecCache {
            slots: vec![(0, Padded::new(b"0")); 1 << Self::BITS],
        }
    }
}

/// The listing's output buffer (see the module documentation).
#[derive(Debug)]
pub(crate) struct LineBuf {
    buf: Box<[u8]>,
    len: usize,
}

impl LineBuf {
    /// An empty buffer.
    pub(crate) fn new() -> Self {
        LineBuf {
            buf: vec![0u8; FLUSH_AT + SLACK].into_boxed_slice(),
            len: 0,
        }
    }

    /// Hand the buffer to `out` if it is full enough: afterwards a line of
    /// up to [`SLACK`] bytes fits.
    ///
    /// # Errors
    ///
    /// The writer's error.
    #[inline(always)]
    pub(crate) fn room<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        if self.len >= FLUSH_AT {
            self.flush(out)?;
        }
        Ok(())
    }

    /// Hand everything buffered to `out`.
    ///
    /// # Errors
    ///
    /// The writer's error.
    pub(crate) fn flush<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        let len = core::mem::take(&mut self.len);
        out.write_all(&self.buf[..len])
    }

    /// Append bytes of any length (text of the slower paths).
    ///
    /// # Errors
    ///
    /// The writer's error, when the bytes do not fit and go to it.
    pub(crate) fn put_any<W: Write + ?Sized>(
        &mut self,
        out: &mut W,
        bytes: &[u8],
    ) -> io::Result<()> {
        if self.len + bytes.len() > FLUSH_AT {
            self.flush(out)?;
            if bytes.len() > FLUSH_AT {
                return out.write_all(bytes);
            }
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
        Ok(())
    }

    /// Bytes buffered so far (a mark for [`LineBuf::since`]).
    #[inline(always)]
    pub(crate) fn mark(&self) -> usize {
        self.len
    }

    /// The bytes appended since `mark` (with no flush in between).
    #[inline(always)]
    pub(crate) fn since(&self, mark: usize) -> &[u8] {
        &self.buf[mark..self.len]
    }

    /// Append a constant piece.
    #[inline(always)]
    pub(crate) fn put<const N: usize>(&mut self, bytes: &[u8; N]) {
        self.buf[self.len..self.len + N].copy_from_slice(bytes);
        self.len += N;
    }

    /// Append one byte.
    /// Append `text`: a short piece of a line (a name, a field), which
    /// the room [`LineBuf::room`] keeps holds. Pieces of up to 16 bytes
    /// (kinds, names, instruction sets) are copied as two overlapping
    /// words, without a call to `memmove` for a length known only now.
    #[inline(always)]
    pub(crate) fn put_str(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let n = bytes.len();
        let at = self.len;
        match n {
            8..=16 => {
                let (head, tail) = (&bytes[..8], &bytes[n - 8..]);
                self.buf[at..at + 8].copy_from_slice(head);
                self.buf[at + n - 8..at + n].copy_from_slice(tail);
            }
            4..=7 => {
                let (head, tail) = (&bytes[..4], &bytes[n - 4..]);
                self.buf[at..at + 4].copy_from_slice(head);
                self.buf[at + n - 4..at + n].copy_from_slice(tail);
            }
            _ => self.buf[at..at + n].copy_from_slice(bytes),
        }
        self.len += n;
    }

    /// Drop what was written since `mark` ([`LineBuf::mark`]).
    #[inline(always)]
    pub(crate) fn truncate(&mut self, mark: usize) {
        self.len = mark.min(self.len);
    }

    #[inline(always)]
    pub(crate) fn byte(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// Append a padded name (its `N` bytes are copied, its length counts).
    #[inline(always)]
    pub(crate) fn name<const N: usize>(&mut self, p: &Padded<N>) {
        self.buf[self.len..self.len + N].copy_from_slice(&p.bytes);
        self.len += p.len;
    }

    /// [`LineBuf::name`] copying only the first `M` bytes when the name
    /// fits in them (a short kept line costs half the copy).
    #[inline(always)]
    pub(crate) fn name_within<const M: usize, const N: usize>(&mut self, p: &Padded<N>) {
        if p.len <= M && M <= N {
            self.buf[self.len..self.len + M].copy_from_slice(&p.bytes[..M]);
            self.len += p.len;
        } else {
            self.name(p);
        }
    }

    /// Append `v` in decimal, as `itoa` or `{}` write it.
    #[inline(always)]
    pub(crate) fn dec(&mut self, v: u64) {
        let n = digits(v);
        let field: &mut [u8] = &mut self.buf[self.len..self.len + 20];
        write_digits(field, n, v);
        self.len += n;
    }

    /// Append `v` in decimal, from `cache` when it holds it (addresses
    /// repeat: code runs in loops).
    #[inline(always)]
    pub(crate) fn dec_cached(&mut self, cache: &mut DecCache, v: u32) {
        let slot =
            &mut cache.slots[(v.wrapping_mul(0x9E37_79B1) >> (32 - DecCache::BITS)) as usize];
        if slot.0 != v {
            let n = digits(u64::from(v));
            let mut field = [0u8; 20];
            write_digits(&mut field, n, u64::from(v));
            *slot = (v, Padded::new(&field[..n]));
        }
        self.name(&slot.1);
    }

    /// Append `v` in decimal, right-aligned in a field of 10 (`{:>10}`;
    /// longer numbers take their own width).
    #[inline(always)]
    pub(crate) fn dec_right10(&mut self, v: u64) {
        let n = digits(v);
        let field: &mut [u8] = &mut self.buf[self.len..self.len + 20];
        if n < 10 {
            field[..10].copy_from_slice(b"          ");
            write_digits(&mut field[10 - n..], n, v);
            self.len += 10;
        } else {
            write_digits(field, n, v);
            self.len += n;
        }
    }

    /// Append `v` as 8 lower-case hex digits (`{:08x}`).
    #[inline(always)]
    pub(crate) fn hex8(&mut self, v: u32) {
        self.put(&hex8(v));
    }

    /// Append a trace ID as `{:#04x}` writes it: `0x` and two hex digits.
    #[inline(always)]
    pub(crate) fn id(&mut self, id: u8) {
        let h = hex8(u32::from(id));
        self.put(&[b'0', b'x', h[6], h[7]]);
    }
}

/// The `n` decimal digits of `v` into `field[..n]` (and bytes up to 16
/// beyond, which the next field overwrites).
#[inline(always)]
fn write_digits(field: &mut [u8], n: usize, v: u64) {
    if n <= 8 {
        // One group of eight, its leading zeros shifted out.
        let d = eight_digits(v as u32) >> (8 * (8 - n));
        field[..8].copy_from_slice(&d.to_le_bytes());
    } else if n <= 16 {
        let (hi, lo) = (v / 100_000_000, v % 100_000_000);
        let d = eight_digits(hi as u32) >> (8 * (16 - n));
        field[..8].copy_from_slice(&d.to_le_bytes());
        let at = n - 8;
        field[at..at + 8].copy_from_slice(&eight_digits(lo as u32).to_le_bytes());
    } else {
        let (hi, lo) = (v / 10_000_000_000_000_000, v % 10_000_000_000_000_000);
        let at = n - 16;
        // 1 to 4 digits.
        let d = eight_digits(hi as u32) >> (8 * (8 - at));
        field[..8].copy_from_slice(&d.to_le_bytes());
        write_digits(&mut field[at..], 16, lo);
    }
}

/// The eight decimal digits of `v` (< 10^8, with leading zeros) as ASCII,
/// first digit in the lowest byte: each step splits every lane of the
/// number in two at once (four digits, two, one) instead of dividing it
/// digit after digit.
#[inline(always)]
fn eight_digits(v: u32) -> u64 {
    let v = u64::from(v);
    // Lanes of 32 bits: the first four digits, then the last four.
    let fours = (v / 10_000) | ((v % 10_000) << 32);
    // Lanes of 16 bits: pairs of digits (x / 100 as x * 10486 >> 20).
    let hundreds = ((fours * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let pairs = ((fours - 100 * hundreds) << 16) | hundreds;
    // Lanes of 8 bits: digits (x / 10 as x * 103 >> 10).
    let tens = ((pairs * 103) >> 10) & 0x000F_000F_000F_000F;
    let digits = ((pairs - 10 * tens) << 8) | tens;
    digits + 0x3030_3030_3030_3030
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut LineBuf)) -> String {
        let mut b = LineBuf::new();
        f(&mut b);
        let mut out = Vec::new();
        b.flush(&mut out).expect("vec");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn pieces_of_every_length_are_copied_whole() {
        let letters: String = ('a'..='z').chain('A'..='Z').collect();
        for n in 0..=letters.len() {
            let piece = &letters[..n];
            assert_eq!(
                text(|b| {
                    b.put(b"<");
                    b.put_str(piece);
                    b.put(b">");
                }),
                format!("<{piece}>")
            );
        }
    }

    #[test]
    fn numbers_are_written_as_core_fmt_writes_them() {
        let mut values: Vec<u64> = vec![0, 9, 10, 99, 100, u64::MAX, u64::from(u32::MAX)];
        for k in 0..20u32 {
            let p = 10u64.pow(k);
            values.extend([p - 1, p, p + 1, p.wrapping_mul(7) / 3]);
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        let mut cache = DecCache::new();
        for v in values {
            assert_eq!(text(|b| b.dec(v)), format!("{v}"));
            let w = v as u32;
            // Twice: once computed, once from the cache.
            for _ in 0..2 {
                assert_eq!(text(|b| b.dec_cached(&mut cache, w)), format!("{w}"));
            }
            assert_eq!(text(|b| b.dec_right10(v)), format!("{v:>10}"));
            let w = v as u32;
            assert_eq!(text(|b| b.hex8(w)), format!("{w:08x}"));
            let id = v as u8;
            assert_eq!(text(|b| b.id(id)), format!("{id:#04x}"));
        }
    }

    #[test]
    fn pieces_follow_each_other_and_long_text_goes_through() {
        let mut b = LineBuf::new();
        let mut out = Vec::new();
        b.put(b"ab");
        b.name(&Padded::<16>::new(b"cde"));
        b.byte(b'f');
        b.dec(12345);
        let long = vec![b'x'; FLUSH_AT + 5];
        b.put_any(&mut out, &long).expect("vec");
        b.put_any(&mut out, b"yz").expect("vec");
        b.flush(&mut out).expect("vec");
        let mut want = b"abcdef12345".to_vec();
        want.extend_from_slice(&long);
        want.extend_from_slice(b"yz");
        assert_eq!(out, want);
    }
}
