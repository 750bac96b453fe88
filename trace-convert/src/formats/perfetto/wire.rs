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

/// A `string`, `bytes` or embedded message field.
#[inline]
pub(crate) fn bytes(buf: &mut Vec<u8>, field: u32, v: &[u8]) {
    tag(buf, field, LEN);
    varint(buf, v.len() as u64);
    buf.extend_from_slice(v);
}

#[cfg(test)]
mod tests {
    use super::*;

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
