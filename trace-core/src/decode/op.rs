//! The protocol-neutral trace operations the engine runs (PFT v1.1 B.3.2
//! plus what ETMv3 adds). Packets of either protocol are lowered into
//! these by [`Decoder::lower`](super::Decoder::lower).

use crate::event::{Isa, TraceOnReason};

/// Where an address packet says execution continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// Address of the next instruction.
    pub addr: u32,
    /// Its instruction set; `None` for a state the decoder cannot follow
    /// (Jazelle).
    pub isa: Option<Isa>,
}

/// Why an I-sync was emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncReason {
    /// Periodic: no gap in the trace.
    Periodic,
    /// Trace (re)started.
    TraceOn(TraceOnReason),
}

/// Instruction synchronization: the full state at the next instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sync {
    /// Next instruction.
    pub target: Target,
    /// Non-secure state.
    pub ns: bool,
    /// Hyp mode.
    pub hyp: bool,
    /// Context ID, when the packet carries one.
    pub context_id: Option<u32>,
    /// Why.
    pub reason: SyncReason,
    /// Cycle count of the packet.
    pub cycles: Option<u32>,
    /// ETMv3 Load/Store-in-Progress: the data instruction at
    /// `target` executed, and tracing continues at this address.
    pub lsip: Option<u32>,
}

/// A branch address: `branch_no_excp` or `branch_with_excp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Branch {
    /// The branch target.
    pub target: Target,
    /// Number of low bits of `target.addr` the trace has given: those of
    /// this packet and, for ETMv3, of the packets before it since the
    /// parser synchronized (32 for a full address). A decoder that has not
    /// seen every bit of the address since its last I-sync or loss of
    /// synchronization must not follow it: the other bits are not known.
    pub bits: u8,
    /// Exception number (0: no exception).
    pub exception: u16,
    /// ETMv3 Cancel bit: the last traced instruction did not complete.
    pub cancel: bool,
    /// New security state, when the packet says.
    pub ns: Option<bool>,
    /// New Hyp mode, when the packet says.
    pub hyp: Option<bool>,
    /// Cycle count of the packet.
    pub cycles: Option<u32>,
}

/// ETMv3 P-header: one E/N atom per instruction, and cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InsnAtoms {
    /// Number of instructions, 0 to 16.
    pub count: u8,
    /// Bit `i`: instruction `i` passed its condition (E).
    pub executed: u16,
    /// Cycle-accurate mode: W atoms before the first instruction, before
    /// each later instruction, and after the last one.
    pub cycles: Option<(u8, u8, u8)>,
}

/// One operation of the decompressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceOp {
    /// Alignment synchronization (no effect on the flow).
    ASync,
    /// I-sync.
    Sync(Sync),
    /// PFT `analyze_atomheader`: one atom per waypoint, oldest in bit 0.
    WaypointAtoms {
        /// Number of atoms, 1 to 5.
        count: u8,
        /// Bit `i`: atom `i` is E.
        e_bits: u8,
        /// Cycle count of the packet.
        cycles: Option<u32>,
    },
    /// ETMv3 atoms (one per instruction).
    InsnAtoms(InsnAtoms),
    /// `branch_no_excp` / `branch_with_excp`.
    Branch(Branch),
    /// `analyze_waypoint_update`.
    WaypointUpdate(Target),
    /// `analyze_cid`.
    ContextId(u32),
    /// `analyze_vmid`.
    Vmid(u8),
    /// `analyze_eret`, or an ETMv3 exception exit packet.
    ExceptionReturn,
    /// ETMv3 exception entry packet (M profile): no flow change.
    ExceptionEntry,
    /// A timestamp.
    Timestamp {
        /// Value.
        value: u64,
        /// Cycle count of the packet.
        cycles: Option<u32>,
    },
    /// A cycle count packet.
    CycleCount(u32),
    /// A packet that does not affect instruction flow (data trace,
    /// trigger, ignore).
    Ignored,
}

/// What atoms stand for in an instruction-trace protocol, which sets how
/// the [`Engine`](super::Engine) walks the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Atoms {
    /// One atom per waypoint (PFT): the engine walks to the next branch;
    /// the context is reported when it changes.
    PerWaypoint,
    /// One atom per instruction (ETMv3): the engine steps instruction by
    /// instruction; the context is reported at every I-sync.
    PerInstruction,
}
