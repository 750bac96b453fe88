//! The listings of the `packets` and `decode` commands: one readable line
//! or one JSON object per packet ([`packets`]) or event ([`events`]).

pub mod events;
pub mod packets;
