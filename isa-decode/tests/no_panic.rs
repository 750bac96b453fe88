//! Every input decodes without panicking, and the result is consistent.
//!
//! The default tests cover every T32 first halfword with 256 second
//! halfwords and 2^24 A32 words spread over the whole space; the ignored
//! ones cover all 2^32 A32 words and all 2^32 T32 pairs (run them with
//! `cargo test --release -p isa-decode --test no_panic -- --ignored`).

use isa_decode::{decode_a32, decode_t32, t32_size, Insn, Kind};

fn check(i: &Insn, size: u8) {
    assert_eq!(i.size, size);
    assert_eq!(
        i.is_direct(),
        matches!(i.kind, Kind::Branch | Kind::CompareBranch)
    );
    if i.is_direct() || i.is_barrier() || matches!(i.kind, Kind::EnterX | Kind::LeaveX) {
        assert!(i.target.is_some(), "{i:?}");
    } else {
        assert!(i.target.is_none(), "{i:?}");
    }
    if i.link || i.ret.is_some() {
        assert!(i.is_branch(), "{i:?}");
    }
    if let Some(r) = i.ret {
        assert_eq!(
            r.is_exception_return(),
            i.kind == Kind::ExceptionReturn,
            "{i:?}"
        );
    }
    assert_eq!(i.it.is_some(), i.kind == Kind::It, "{i:?}");
    assert!(!(i.is_branch() && i.is_exception()));
}

fn a32_range(words: impl Iterator<Item = u32>) {
    for w in words {
        check(&decode_a32(w, w.rotate_left(7)), 4);
    }
}

fn t32_range(hw1s: impl Iterator<Item = u16>, hw2s: impl Fn(u16) -> Vec<u16>) {
    for hw1 in hw1s {
        let size = t32_size(hw1);
        for hw2 in hw2s(hw1) {
            let addr = (u32::from(hw1) << 16 | u32::from(hw2)).rotate_left(5) & !1;
            check(&decode_t32(hw1, hw2, addr), size);
        }
    }
}

#[test]
fn a32_spread() {
    // 2^24 words: every value of the top 16 bits with 256 mixed low parts.
    a32_range((0u32..1 << 24).map(|i| (i << 8) ^ (i.wrapping_mul(0x9E37_79B9) >> 16)));
}

#[test]
fn t32_spread() {
    t32_range(0..=u16::MAX, |hw1| {
        (0..256u32)
            .map(|j| ((j << 8) | ((j * 37 + u32::from(hw1)) & 0xFF)) as u16)
            .collect()
    });
}

#[test]
#[ignore = "2^32 decodes: run in release with --ignored"]
fn a32_all_words() {
    a32_range(0..=u32::MAX);
}

#[test]
#[ignore = "2^32 decodes: run in release with --ignored"]
fn t32_all_pairs() {
    t32_range(0..=u16::MAX, |_| (0..=u16::MAX).collect());
}
