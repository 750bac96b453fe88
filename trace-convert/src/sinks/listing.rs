//! The listings of the `packets` and `decode` commands: one readable line
//! or one JSON object per packet ([`packets`]) or event ([`events`]).
//!
//! [`packets::write_item`] and [`events::write_event`] write a line
//! straight from its record (`serde_json`) or its `Display` form; the
//! writers the CLI uses, [`packet_lines::PacketListing`] and
//! [`event_lines::EventListing`], write the same bytes at the speed of the
//! decode, buffered, for the packets and events that make up nearly every
//! line.

pub mod event_lines;
pub mod events;
mod line_buf;
pub mod packet_lines;
pub mod packets;
pub mod pipeline;
pub mod symbolized;
