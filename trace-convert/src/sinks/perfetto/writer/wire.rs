//! Protocol buffer wire encoding: just the field kinds the Perfetto writer
//! uses (varints, 64-bit doubles, length-delimited bytes), appended to a
//! caller-owned buffer so nothing is allocated per field.

/// Wire type of varint fields (integers, booleans, enums).
const VARINT: u32 = 0;
/// Wire type of 64-bit fields (`double`, `fixed64`).
const I64: u32 = 1;
/// Wire type of length-delimited fields (strings, bytes, messages).
const LEN: u32 = 2;

/// Append `v` as a base-128 varint.
#[inline]
pub(crate) fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

#[inline]
fn tag(buf: &mut Vec<u8>, field: u32, wire: u32) {
    varint(buf, u64::from((field << 3) | wire));
}

/// An unsigned integer, `bool` or enum field.
#[inline]
pub(crate) fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    tag(buf, field, VARINT);
    varint(buf, v);
}

/// An `int32`/`int64` field: negative values take ten bytes (two's
/// complement, sign-extended to 64 bits), as the protobuf encoding says.
#[inline]
pub(crate) fn int(buf: &mut Vec<u8>, field: u32, v: i64) {
    tag(buf, field, VARINT);
    varint(buf, v as u64);
}

/// A `double` field.
#[inline]
pub(crate) fn double(buf: &mut Vec<u8>, field: u32, v: f64) {
    tag(buf, field, I64);
    buf.extend_from_slice(&v.to_bits().to_le_bytes());
}

/// Bytes of `v` as a varint.
#[inline]
pub(crate) fn varint_len(v: u64) -> usize {
    // 1 + the number of 7-bit groups above the first.
    1 + (63 - (v | 1).leading_zeros() as usize) / 7
}

/// Bytes of an unsigned integer field [`uint`] writes.
#[inline]
pub(crate) fn uint_len(field: u32, v: u64) -> usize {
    varint_len(u64::from(field << 3)) + varint_len(v)
}

/// Bytes of the tag and length of a length-delimited field of `len`
/// bytes (not counting those bytes).
#[inline]
pub(crate) fn len_head(field: u32, len: usize) -> usize {
    varint_len(u64::from((field << 3) | LEN)) + varint_len(len as u64)
}

/// The tag and length of a length-delimited field whose `len` bytes the
/// caller writes next (the writer uses [`Scratch::head`]; this one is the
/// tests' reference).
#[cfg(test)]
fn head(buf: &mut Vec<u8>, field: u32, len: usize) {
    tag(buf, field, LEN);
    varint(buf, len as u64);
}

/// A `string`, `bytes` or embedded message field.
#[inline]
pub(crate) fn bytes(buf: &mut Vec<u8>, field: u32, v: &[u8]) {
    tag(buf, field, LEN);
    varint(buf, v.len() as u64);
    buf.extend_from_slice(v);
}

/// Bytes the longest packet [`Scratch`] is used for can take (a track
/// event with every integer field at its ten-byte maximum is under 90).
const SCRATCH_BYTES: usize = 96;

/// A packet written in place at the end of the output buffer (see
/// [`append_with`]): each byte is a store at an index, where a `Vec` push
/// checks its capacity and keeps its length in memory. Writes past the
/// end are dropped (only the first [`SCRATCH_BYTES`] bytes are kept);
/// callers keep packets shorter.
pub(crate) struct Scratch<'a> {
    bytes: &'a mut [u8],
    len: usize,
}

/// Append a packet of at most [`SCRATCH_BYTES`] bytes to `buf`, written
/// by `write` in place: room for the longest packet is made first and
/// what is not written cut off again. A packet built elsewhere and then
/// copied in had the copy wait for the bytes just stored one by one.
#[inline(always)]
pub(crate) fn append_with(buf: &mut Vec<u8>, write: impl FnOnce(&mut Scratch<'_>)) {
    let start = buf.len();
    buf.resize(start + SCRATCH_BYTES, 0);
    let mut s = Scratch {
        bytes: buf.get_mut(start..).unwrap_or_default(),
        len: 0,
    };
    write(&mut s);
    let end = start + s.len.min(SCRATCH_BYTES);
    buf.truncate(end);
}

impl Scratch<'_> {
    #[inline(always)]
    fn push(&mut self, b: u8) {
        if let Some(x) = self.bytes.get_mut(self.len) {
            *x = b;
        }
        self.len += 1;
    }

    /// [`varint`] here.
    #[inline(always)]
    pub(crate) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.push(v as u8);
    }

    /// [`uint`] here.
    #[inline(always)]
    pub(crate) fn uint(&mut self, field: u32, v: u64) {
        self.varint(u64::from((field << 3) | VARINT));
        self.varint(v);
    }

    /// The tag and length of a length-delimited field whose `len` bytes
    /// are written next.
    #[inline(always)]
    pub(crate) fn head(&mut self, field: u32, len: usize) {
        self.varint(u64::from((field << 3) | LEN));
        self.varint(len as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_what_is_written() {
        for v in [0u64, 1, 127, 128, 300, 16_383, 16_384, 1 << 35, u64::MAX] {
            let mut b = Vec::new();
            varint(&mut b, v);
            assert_eq!(varint_len(v), b.len(), "{v}");
            for field in [1u32, 15, 16, 2047, 2048] {
                let mut b = Vec::new();
                uint(&mut b, field, v);
                assert_eq!(uint_len(field, v), b.len(), "{field} {v}");
            }
        }
        for (field, len) in [(1u32, 0usize), (11, 127), (11, 128), (16, 20_000)] {
            let mut b = Vec::new();
            head(&mut b, field, len);
            assert_eq!(len_head(field, len), b.len());
            let mut c = Vec::new();
            bytes(&mut c, field, &vec![0; len]);
            assert_eq!(&c[..b.len()], &b[..]);
        }
    }

    #[test]
    fn varints_follow_the_protobuf_encoding() {
        // Examples from the protobuf encoding guide: 1 -> 01, 150 -> 96 01.
        let mut b = Vec::new();
        varint(&mut b, 1);
        varint(&mut b, 150);
        assert_eq!(b, [0x01, 0x96, 0x01]);
        for (v, len) in [
            (0u64, 1),
            (127, 1),
            (128, 2),
            (16_383, 2),
            (16_384, 3),
            (u64::MAX, 10),
        ] {
            let mut b = Vec::new();
            varint(&mut b, v);
            assert_eq!(b.len(), len, "{v}");
        }
        let mut b = Vec::new();
        int(&mut b, 1, -1);
        assert_eq!(b.len(), 11, "tag + ten bytes");
    }

    #[test]
    fn scratch_writes_what_the_vec_writers_do() {
        let fields = [
            (1u32, 0u64),
            (8, 127),
            (11, 128),
            (16, 1 << 35),
            (2047, u64::MAX),
        ];
        let mut v = Vec::new();
        for (field, x) in fields {
            uint(&mut v, field, x);
            head(&mut v, field, x as usize % 300);
        }
        let mut s = Vec::new();
        append_with(&mut s, |s| {
            for (field, x) in fields {
                s.uint(field, x);
                s.head(field, x as usize % 300);
            }
        });
        assert_eq!(s, v);
    }

    #[test]
    fn scratch_appends_its_bytes_only() {
        let mut buf = vec![7u8; 3];
        append_with(&mut buf, |s| s.uint(1, 300));
        append_with(&mut buf, |s| s.uint(1, 300));
        assert_eq!(buf, [7, 7, 7, 0x08, 0xAC, 0x02, 0x08, 0xAC, 0x02]);
    }

    #[test]
    fn scratch_drops_what_does_not_fit() {
        let mut buf = vec![7u8; 3];
        append_with(&mut buf, |s| {
            for _ in 0..20 {
                s.varint(u64::MAX);
            }
        });
        assert_eq!(buf.len(), 3 + SCRATCH_BYTES);
        assert!(buf[3..].iter().all(|&b| b == 0xFF || b == 0x01));
    }

    #[test]
    fn fields_carry_their_tags() {
        let mut b = Vec::new();
        bytes(&mut b, 2, b"testing");
        // Field 2, wire type 2: 0x12, then length 7.
        assert_eq!(&b[..2], &[0x12, 0x07]);
        let mut b = Vec::new();
        double(&mut b, 44, 1.5);
        assert_eq!(b[..2], [0xE1, 0x02]);
        assert_eq!(b.len(), 10);
    }
}
