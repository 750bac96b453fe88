//! The `packets` listing: one text line or one JSON object per packet. The
//! JSON object is the stable machine-readable form of the listing; its
//! schema is written once, in `docs/jsonl.md` of the repository (section
//! "Packets").

use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use trace_core::demux::{AnyPacket, Item};
use trace_core::frames::{DiscardReason, FrameEvent};

/// A packet, error or capture event as one flat record.
///
/// Every record has `offset`, `id` and `kind`; the other fields appear
/// when the packet carries them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
}

fn atoms_text(iter: impl Iterator<Item = char>) -> String {
    iter.collect()
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

    /// The record of a packet.
    #[must_use]
    pub fn from_packet(offset: u64, id: u8, packet: &AnyPacket) -> PacketRecord {
        let mut r = Self::new(offset, id, packet.kind());
        match packet {
            AnyPacket::Etm(p) => r.fill_etm(p),
            AnyPacket::Ptm(p) => r.fill_ptm(p),
        }
        r
    }

    fn fill_etm(&mut self, p: &etm_packets::Packet) {
        use etm_packets::Packet as P;
        match *p {
            P::ISync(s) => {
                if !s.is_data_only() {
                    self.address = Some(s.address());
                    self.isa = Some(s.isa().name().to_owned());
                }
                self.ns = Some(s.ns());
                self.hyp = Some(s.hyp());
                self.reason = Some(s.reason().name().to_owned());
                self.context_id = s.context_id();
                self.cycles = s.cycle_count().map(u64::from);
                self.lsip_address = s.lsip().map(|l| l.address);
            }
            P::Atoms(a) => {
                self.atoms = Some(atoms_text(a.iter().map(|atom| match atom {
                    etm_packets::Atom::E => 'E',
                    etm_packets::Atom::N => 'N',
                    etm_packets::Atom::W => 'W',
                })));
                if a.cycles > 0 {
                    self.cycles = Some(u64::from(a.cycles));
                }
            }
            P::Branch(b) => {
                self.address = Some(b.address);
                self.bits = Some(b.bits);
                self.known_bits = (b.known_bits < 32).then_some(b.known_bits);
                self.isa = Some(b.isa.name().to_owned());
                self.ns = Some(b.ns);
                self.hyp = Some(b.hyp);
                if let Some(e) = b.exception {
                    self.exception = Some(e.number);
                    self.cancel = Some(e.cancel);
                    self.resume = Some(e.resume);
                }
            }
            P::CycleCount(c) => self.cycles = Some(u64::from(c)),
            P::ContextId(c) => self.context_id = Some(c),
            P::Vmid(v) => self.vmid = Some(v),
            P::Timestamp(t) => {
                self.timestamp = Some(t.value);
                self.bits = Some(t.bits);
                self.clock_changed = Some(t.clock_changed);
            }
            P::NormalData(d) => {
                self.first = Some(d.first);
                self.data_address = d.address;
                self.value = d.value;
                self.size = Some(d.size);
            }
            P::ValueNotTraced(d) => {
                self.first = Some(d.first);
                self.data_address = d.address;
            }
            P::OutOfOrderData(d) => {
                self.tag = Some(d.tag);
                self.value = Some(d.value);
                self.size = Some(d.size);
            }
            P::OutOfOrderPlaceholder(d) => {
                self.tag = Some(d.tag);
                self.first = Some(d.first);
                self.data_address = d.address;
            }
            _ => {}
        }
    }

    fn fill_ptm(&mut self, p: &ptm_packets::Packet) {
        use ptm_packets::Packet as P;
        match *p {
            P::ISync(s) => {
                self.address = Some(s.address);
                self.isa = Some(s.isa.name().to_owned());
                self.ns = Some(s.ns);
                self.hyp = Some(s.hyp);
                self.reason = Some(s.reason.name().to_owned());
                self.context_id = s.context_id;
                self.cycles = s.cycles.map(u64::from);
            }
            P::Atom { atoms, cycles } => {
                self.atoms = Some(atoms_text(atoms.iter().map(|a| match a {
                    ptm_packets::Atom::E => 'E',
                    ptm_packets::Atom::N => 'N',
                })));
                self.cycles = cycles.map(u64::from);
            }
            P::BranchAddress(b) => {
                self.address = Some(b.address);
                self.bits = Some(b.bits);
                self.isa = Some(b.isa.name().to_owned());
                self.cycles = b.cycles.map(u64::from);
                if let Some(e) = b.exception {
                    self.exception = Some(e.number);
                    self.ns = Some(e.ns);
                    self.alt_isa = Some(e.alt_isa);
                    self.hyp = e.hyp;
                }
            }
            P::WaypointUpdate(w) => {
                self.address = Some(w.address);
                self.bits = Some(w.bits);
                self.isa = Some(w.isa.name().to_owned());
                self.alt_isa = w.alt_isa;
            }
            P::ContextId(c) => self.context_id = Some(c),
            P::Vmid(v) => self.vmid = Some(v),
            P::Timestamp(t) => {
                self.timestamp = Some(t.value);
                self.bits = Some(t.bits);
                self.clock_changed = Some(t.clock_changed);
                self.cycles = t.cycles.map(u64::from);
            }
            _ => {}
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
