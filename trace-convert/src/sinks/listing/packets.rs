//! The `packets` listing: one text line or one JSON object per packet. The
//! JSON object is the stable machine-readable form of the listing; its
//! schema is written once, in `docs/jsonl.md` of the repository (section
//! "Packets").

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, Write};
use trace_core::demux::{AnyPacket, Item};
use trace_core::frames::{DiscardReason, FrameEvent};
use trace_core::protocol::FieldWriter;

/// A packet, error or capture event as one flat record.
///
/// Every record has `offset`, `id` and `kind`; the other fields appear
/// when the packet carries them. A packet's fields are those its protocol
/// gives ([`AnyPacket::fields`]), in the schema's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PacketRecord {
    /// Offset of the first byte in the capture file.
    pub offset: u64,
    /// Trace ID of the source.
    pub id: u8,
    /// Packet kind (snake_case), or `error`, `discarded`, `unsynchronized`,
    /// `truncated`, `unconfigured` for what is not a packet.
    pub kind: String,
    /// Instruction address (I-sync, branch, waypoint update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<u32>,
    /// Number of low address or timestamp bits the packet carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<u8>,
    /// ETMv3 branch address whose high bits no packet has given yet
    /// (before the first I-sync or full address, or after a damaged
    /// packet): how many low bits of `address` are known. Absent when all
    /// 32 are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_bits: Option<u8>,
    /// Instruction set: `arm`, `thumb`, `thumbee`, `jazelle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isa: Option<String>,
    /// Non-secure state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns: Option<bool>,
    /// Hyp mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyp: Option<bool>,
    /// AltISA bit of a PTM exception byte or waypoint update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alt_isa: Option<bool>,
    /// I-sync reason: `periodic`, `trace_on`, `overflow`, `debug_exit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Atoms oldest first: `E` executed, `N` not executed, `W` a cycle
    /// (ETMv3 cycle-accurate P-headers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atoms: Option<String>,
    /// Cycle count carried by the packet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    /// Timestamp value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<u64>,
    /// The timestamp's clock-changed (R) bit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_changed: Option<bool>,
    /// Context ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<u32>,
    /// VMID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vmid: Option<u8>,
    /// Exception number of a branch packet with exception information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<u16>,
    /// ETMv3 cancel (E) bit: the last instruction did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// ETMv3 resume field (ARMv7-M).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<u8>,
    /// LSiP I-sync: address of the instruction in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lsip_address: Option<u32>,
    /// Data trace: data address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_address: Option<u32>,
    /// Data trace: data value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u32>,
    /// Data trace: size field (bytes 1, 2 or 4 as encoded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u8>,
    /// Data trace: first data packet of an instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<bool>,
    /// Data trace: out-of-order tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<u8>,
    /// For `error` and capture events: how many bytes are skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
    /// For `error` and `discarded`: what happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fields of a protocol that the ones above do not name, by name
    /// (listed after them).
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl PacketRecord {
    fn new(offset: u64, id: u8, kind: &str) -> Self {
        PacketRecord {
            offset,
            id,
            kind: kind.to_owned(),
            ..PacketRecord::default()
        }
    }

    /// The record of a demultiplexer item.
    #[must_use]
    pub fn from_item(item: &Item) -> PacketRecord {
        match item {
            Item::Packet { id, offset, packet } => Self::from_packet(*offset, *id, packet),
            Item::Error { id, error } => {
                let mut r = Self::new(error.offset(), *id, "error");
                r.len = Some(error.skipped());
                r.message = Some(error.to_string());
                r
            }
            Item::Unconfigured { run } => {
                let mut r = Self::new(run.offset, run.id, "unconfigured");
                r.len = Some(run.data().len() as u64);
                r
            }
            Item::Frame(ev) => match *ev {
                FrameEvent::Data(run) => {
                    let mut r = Self::new(run.offset, run.id, "data");
                    r.len = Some(run.data().len() as u64);
                    r
                }
                FrameEvent::Discarded { reason, run } => {
                    let mut r = Self::new(run.offset, run.id, "discarded");
                    r.len = Some(run.data().len() as u64);
                    r.message = Some(
                        match reason {
                            DiscardReason::Unassigned => "before any trace ID",
                            DiscardReason::Null => "null trace ID",
                            DiscardReason::Reserved => "reserved trace ID",
                        }
                        .to_owned(),
                    );
                    r
                }
                FrameEvent::Unsynchronized { offset, len } => {
                    let mut r = Self::new(offset, 0, "unsynchronized");
                    r.len = Some(len);
                    r
                }
                FrameEvent::Truncated { offset, len } => {
                    let mut r = Self::new(offset, 0, "truncated");
                    r.len = Some(len);
                    r
                }
            },
        }
    }

    /// The record of a packet: its protocol hands over its fields
    /// ([`AnyPacket::fields`]).
    #[must_use]
    pub fn from_packet(offset: u64, id: u8, packet: &AnyPacket) -> PacketRecord {
        let mut r = Self::new(offset, id, packet.kind());
        packet.fields(&mut r);
        r
    }
}

/// A packet's fields set by name; a name this record has no field for
/// goes to [`PacketRecord::other`].
impl FieldWriter for PacketRecord {
    fn num(&mut self, name: &'static str, value: u64) {
        let (v32, v16, v8) = (
            u32::try_from(value).ok(),
            u16::try_from(value).ok(),
            u8::try_from(value).ok(),
        );
        match name {
            "address" if v32.is_some() => self.address = v32,
            "bits" if v8.is_some() => self.bits = v8,
            "known_bits" if v8.is_some() => self.known_bits = v8,
            "cycles" => self.cycles = Some(value),
            "timestamp" => self.timestamp = Some(value),
            "context_id" if v32.is_some() => self.context_id = v32,
            "vmid" if v8.is_some() => self.vmid = v8,
            "exception" if v16.is_some() => self.exception = v16,
            "resume" if v8.is_some() => self.resume = v8,
            "lsip_address" if v32.is_some() => self.lsip_address = v32,
            "data_address" if v32.is_some() => self.data_address = v32,
            "value" if v32.is_some() => self.value = v32,
            "size" if v8.is_some() => self.size = v8,
            "tag" if v8.is_some() => self.tag = v8,
            "len" => self.len = Some(value),
            _ => {
                self.other.insert(name.to_owned(), value.into());
            }
        }
    }

    fn flag(&mut self, name: &'static str, value: bool) {
        match name {
            "ns" => self.ns = Some(value),
            "hyp" => self.hyp = Some(value),
            "alt_isa" => self.alt_isa = Some(value),
            "clock_changed" => self.clock_changed = Some(value),
            "cancel" => self.cancel = Some(value),
            "first" => self.first = Some(value),
            _ => {
                self.other.insert(name.to_owned(), value.into());
            }
        }
    }

    fn text(&mut self, name: &'static str, value: &'static str) {
        match name {
            "isa" => self.isa = Some(value.to_owned()),
            "reason" => self.reason = Some(value.to_owned()),
            "atoms" => self.atoms = Some(value.to_owned()),
            "message" => self.message = Some(value.to_owned()),
            _ => {
                self.other.insert(name.to_owned(), value.into());
            }
        }
    }

    fn letters(&mut self, name: &'static str, letters: impl Iterator<Item = u8>) {
        let text: String = letters.map(char::from).collect();
        match name {
            "atoms" => self.atoms = Some(text),
            _ => {
                self.other.insert(name.to_owned(), text.into());
            }
        }
    }
}

/// Listing formats of the `packets` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFormat {
    /// One readable line per packet.
    Text,
    /// One JSON object per line ([`PacketRecord`]).
    Jsonl,
}

/// Write the listing line of `item` to `out`.
///
/// # Errors
///
/// The writer's error.
pub fn write_item<W: Write + ?Sized>(
    out: &mut W,
    format: ListFormat,
    item: &Item,
) -> io::Result<()> {
    match format {
        ListFormat::Jsonl => {
            serde_json::to_writer(&mut *out, &PacketRecord::from_item(item))?;
            out.write_all(b"\n")
        }
        ListFormat::Text => match item {
            Item::Packet { id, offset, packet } => {
                writeln!(out, "{offset:>10}  {id:#04x}  {packet}")
            }
            Item::Error { id, error } => {
                writeln!(out, "{:>10}  {id:#04x}  error: {error}", error.offset())
            }
            other => {
                let r = PacketRecord::from_item(other);
                let what = r.message.as_deref().unwrap_or("");
                writeln!(
                    out,
                    "{:>10}  {:#04x}  {} ({}) {what}",
                    r.offset,
                    r.id,
                    r.kind,
                    crate::plural::plural(r.len.unwrap_or(0), "byte")
                )
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field of another protocol than those the record names is kept
    /// by name, read back, and written after the record's own fields.
    #[test]
    fn fields_the_record_does_not_name_are_kept_in_other() {
        let mut r = PacketRecord::new(7, 1, "stimulus");
        r.num("port", 3);
        r.address("address", 0x2000);
        r.flag("overflow", false);
        r.text("isa", "thumb");
        r.letters("atoms", b"EN".iter().copied());
        assert_eq!(r.address, Some(0x2000));
        assert_eq!(r.isa.as_deref(), Some("thumb"));
        assert_eq!(r.atoms.as_deref(), Some("EN"));
        assert_eq!(r.other.get("port"), Some(&serde_json::Value::from(3)));
        assert_eq!(
            r.other.get("overflow"),
            Some(&serde_json::Value::from(false))
        );
        let line = serde_json::to_string(&r).expect("serializes");
        assert_eq!(
            line,
            r#"{"offset":7,"id":1,"kind":"stimulus","address":8192,"isa":"thumb","atoms":"EN","overflow":false,"port":3}"#
        );
        let back: PacketRecord = serde_json::from_str(&line).expect("reads back");
        assert_eq!(back, r);
    }
}
