//! Lowering PTM (PFT) packets into [`TraceOp`]s.

use crate::decode::op::{Branch, Sync, SyncReason, Target, TraceOp};
use crate::event::{Isa, TraceOnReason};
use ptm_packets::{ISyncReason, Isa as PIsa, Packet};

fn target(addr: u32, isa: PIsa) -> Target {
    Target {
        addr,
        isa: match isa {
            PIsa::Arm => Some(Isa::A32),
            PIsa::Thumb | PIsa::ThumbEE => Some(Isa::T32),
            PIsa::Jazelle => None,
        },
    }
}

/// The operation a PTM packet stands for.
#[must_use]
pub fn lower(packet: &Packet) -> TraceOp {
    match *packet {
        Packet::ASync => TraceOp::ASync,
        Packet::ISync(s) => TraceOp::Sync(Sync {
            target: target(s.address, s.isa),
            ns: s.ns,
            hyp: s.hyp,
            context_id: s.context_id,
            reason: match s.reason {
                ISyncReason::Periodic => SyncReason::Periodic,
                ISyncReason::TraceOn => SyncReason::TraceOn(TraceOnReason::Filter),
                ISyncReason::Overflow => SyncReason::TraceOn(TraceOnReason::Overflow),
                ISyncReason::DebugExit => SyncReason::TraceOn(TraceOnReason::DebugExit),
            },
            cycles: s.cycles,
            lsip: None,
        }),
        Packet::Atom { atoms, cycles } => TraceOp::WaypointAtoms {
            count: atoms.len() as u8,
            e_bits: atoms.e_bits(),
            cycles,
        },
        Packet::BranchAddress(b) => TraceOp::Branch(Branch {
            target: target(b.address, b.isa),
            bits: b.bits,
            exception: b.exception.map_or(0, |e| e.number),
            cancel: false,
            ns: b.exception.map(|e| e.ns),
            hyp: b.exception.and_then(|e| e.hyp),
            cycles: b.cycles,
        }),
        Packet::WaypointUpdate(w) => TraceOp::WaypointUpdate(target(w.address, w.isa)),
        Packet::ContextId(c) => TraceOp::ContextId(c),
        Packet::Vmid(v) => TraceOp::Vmid(v),
        Packet::Timestamp(t) => TraceOp::Timestamp {
            value: t.value,
            cycles: t.cycles,
        },
        Packet::ExceptionReturn => TraceOp::ExceptionReturn,
        Packet::Trigger | Packet::Ignore => TraceOp::Ignored,
    }
}
