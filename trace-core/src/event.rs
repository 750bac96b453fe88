//! The decoder's output vocabulary: protocol-neutral trace events.
//!
//! Every [`Event`] carries the trace ID of its source and the byte offset
//! (in the capture file) of the packet that produced it. Events are small
//! and `Copy`; executed code comes as [`Range`]s of consecutive
//! instructions, with [`Range::instructions`] giving a per-instruction view
//! when a memory image is at hand.

use crate::memory::{MemoryImage, Space};

/// Instruction set of a range of code (isa-decode's: one type from the
/// instruction decoder to the events).
pub use isa_decode::Isa;

/// What the last instruction of a range is, as far as program flow goes.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum InsnClass {
    /// Not a branch (the range ended for another reason: an atom per
    /// instruction in ETMv3, a waypoint update, an exception).
    #[default]
    Other,
    /// Direct branch (`B`, `BL`, `BLX imm`, `CBZ`, `CBNZ`).
    Branch,
    /// Indirect branch or exception return (`BX`, `LDR PC`, `POP {PC}`,
    /// `SUBS PC, LR`, ...).
    IndirectBranch,
    /// Instruction synchronization barrier (a PFT waypoint).
    Isb,
    /// DMB/DSB treated as waypoints, `ENTERX`/`LEAVEX`.
    Barrier,
}

impl InsnClass {
    /// Stable snake_case name: `other`, `branch`, `indirect_branch`, `isb`,
    /// `barrier`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            InsnClass::Other => "other",
            InsnClass::Branch => "branch",
            InsnClass::IndirectBranch => "indirect_branch",
            InsnClass::Isb => "isb",
            InsnClass::Barrier => "barrier",
        }
    }

    /// Classify a decoded instruction.
    #[must_use]
    pub const fn of(insn: &isa_decode::Insn) -> InsnClass {
        use isa_decode::Kind;
        match insn.kind {
            Kind::Branch | Kind::CompareBranch => InsnClass::Branch,
            Kind::IndirectBranch | Kind::ExceptionReturn => InsnClass::IndirectBranch,
            Kind::Isb => InsnClass::Isb,
            Kind::Dmb | Kind::Dsb | Kind::EnterX | Kind::LeaveX => InsnClass::Barrier,
            _ => InsnClass::Other,
        }
    }
}

/// Consecutive instructions executed (or, for the last one, possibly
/// failing its condition) between two trace-visible points.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Range {
    /// Address of the first instruction.
    pub start: u32,
    /// Address just past the last instruction (exclusive).
    pub end: u32,
    /// Number of instructions.
    pub count: u32,
    /// Instruction set.
    pub isa: Isa,
    /// Size in bytes of the last instruction.
    pub last_size: u8,
    /// Class of the last instruction.
    pub last: InsnClass,
    /// The last instruction is a branch with link.
    pub link: bool,
    /// The last instruction is a conventional subroutine return
    /// (`BX LR`, `MOV PC, LR`, `POP {..., PC}`).
    pub ret: bool,
    /// The last instruction's encoding makes it conditional (an A32
    /// condition field other than AL, a T32 `B<c>`, `CBZ`/`CBNZ`).
    /// Instructions made conditional by a T32 IT block are not flagged
    /// here (the flag describes the opcode, as OpenCSD's `<cond>` does);
    /// [`Range::instructions`] gives their effective condition.
    pub cond: bool,
    /// The last instruction passed its condition check (E atom); false for
    /// an N atom.
    pub executed: bool,
    /// Cycle count the trace attached to this range (cycle-accurate mode):
    /// PTM, the count of the atom or branch address packet that ended it;
    /// ETMv3, the W atoms of the P-header right before this instruction
    /// (cycles of W-only P-headers and cycle count packets come as
    /// [`EventKind::CycleCount`]).
    pub cycles: Option<u32>,
    /// Memory space the code was read from.
    pub space: Space,
}

impl Range {
    /// The instructions of this range, decoded again from `memory`
    /// (per-instruction view for coverage and listings). Stops early if
    /// the memory does not cover the whole range.
    #[must_use]
    pub fn instructions<'a>(&self, memory: &'a dyn MemoryImage) -> Instructions<'a> {
        Instructions {
            memory,
            space: self.space,
            isa: self.isa,
            addr: self.start,
            left: self.count,
            it: isa_decode::ItState::new(),
        }
    }
}

/// One instruction of a [`Range`], see [`Range::instructions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction {
    /// Its address.
    pub addr: u32,
    /// Its opcode bytes (little-endian instruction order), `size` of them.
    pub bytes: [u8; 4],
    /// The decoded instruction.
    pub insn: isa_decode::Insn,
    /// Its effective condition (IT block included).
    pub cond: isa_decode::Cond,
}

impl Instruction {
    /// The opcode bytes.
    #[must_use]
    pub fn opcode(&self) -> &[u8] {
        &self.bytes[..usize::from(self.insn.size).min(4)]
    }
}

/// Iterator over the instructions of a range.
#[derive(Clone)]
pub struct Instructions<'a> {
    memory: &'a dyn MemoryImage,
    space: Space,
    isa: Isa,
    addr: u32,
    left: u32,
    it: isa_decode::ItState,
}

impl core::fmt::Debug for Instructions<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Instructions")
            .field("addr", &self.addr)
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}

impl Iterator for Instructions<'_> {
    type Item = Instruction;

    fn next(&mut self) -> Option<Instruction> {
        if self.left == 0 {
            return None;
        }
        let mut bytes = [0u8; 4];
        let n = self.memory.read(self.space, self.addr, &mut bytes);
        let insn = isa_decode::decode(self.isa, &bytes[..n], self.addr)?;
        let cond = match self.isa {
            Isa::T32 => self.it.step(&insn),
            Isa::A32 => insn.cond,
        };
        let out = Instruction {
            addr: self.addr,
            bytes,
            insn,
            cond,
        };
        self.addr = self.addr.wrapping_add(u32::from(insn.size));
        self.left -= 1;
        Some(out)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

/// Why tracing (re)started.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceOnReason {
    /// First synchronization, or trace enabled by the filter (TraceEnable).
    Filter,
    /// Trace restarted after a FIFO overflow.
    Overflow,
    /// The processor left debug state.
    DebugExit,
}

impl TraceOnReason {
    /// Stable snake_case name: `filter`, `overflow`, `debug_exit`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            TraceOnReason::Filter => "filter",
            TraceOnReason::Overflow => "overflow",
            TraceOnReason::DebugExit => "debug_exit",
        }
    }
}

/// Why the decoded flow has a hole, or why decoding stopped until the next
/// synchronization point.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GapReason {
    /// The code at `addr` is an UNDEFINED encoding (wrong memory image,
    /// wrong instruction set, or a branch into data).
    Undefined {
        /// Address of the instruction.
        addr: u32,
    },
    /// More than the walk limit of instructions without a waypoint.
    NoWaypoint {
        /// Where the walk started.
        addr: u32,
    },
    /// An indirect branch atom with no known target (return stack empty
    /// or disabled).
    UnknownTarget {
        /// Address of the branch.
        addr: u32,
    },
    /// The trace enters the code at `addr`, where the image holds no valid
    /// instruction, and the halfword before `addr` begins a 32-bit T32
    /// instruction that covers it: the trace goes into the middle of an
    /// instruction of the image. The image does not match the code that
    /// ran (or the trace is damaged); nothing is decoded until the next
    /// address.
    InsideInstruction {
        /// The address the trace went to.
        addr: u32,
    },
    /// The processor is in an instruction set the decoder cannot follow
    /// (Jazelle).
    UnsupportedIsa,
    /// The packet parser reported damaged or unsynchronized input.
    PacketError,
}

impl GapReason {
    /// Stable snake_case name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            GapReason::Undefined { .. } => "undefined",
            GapReason::NoWaypoint { .. } => "no_waypoint",
            GapReason::UnknownTarget { .. } => "unknown_target",
            GapReason::InsideInstruction { .. } => "inside_instruction",
            GapReason::UnsupportedIsa => "unsupported_isa",
            GapReason::PacketError => "packet_error",
        }
    }

    /// The address concerned, when there is one.
    #[must_use]
    pub const fn addr(self) -> Option<u32> {
        match self {
            GapReason::Undefined { addr }
            | GapReason::NoWaypoint { addr }
            | GapReason::UnknownTarget { addr }
            | GapReason::InsideInstruction { addr } => Some(addr),
            _ => None,
        }
    }
}

/// Which of the trace's own cross-checks found the decoded flow and the
/// trace in disagreement (see [`EventKind::Inconsistent`]).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Check {
    /// A periodic I-sync names another address than the one the walk
    /// reached (PTM: one outside the straight-line code up to the next
    /// waypoint).
    Sync,
    /// A branch address packet without an exception where the walk ended
    /// on no indirect branch: its target is not where the image's
    /// instruction goes.
    Branch,
    /// ETMv3: atoms after an executed indirect branch, before the branch
    /// address packet that must give its target.
    Atoms,
    /// PTM: a waypoint update names an instruction outside the
    /// straight-line code from the walk's position up to the next
    /// waypoint.
    Waypoint,
}

impl Check {
    /// Stable snake_case name: `sync`, `branch`, `atoms`, `waypoint`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Check::Sync => "sync",
            Check::Branch => "branch",
            Check::Atoms => "atoms",
            Check::Waypoint => "waypoint",
        }
    }
}

/// What the processor did with an exception, as an ARMv7-M DWT exception
/// trace packet reports it.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExceptionAction {
    /// The exception was entered.
    Enter,
    /// Its handler exited.
    Exit,
    /// Execution returned to it (number 0: thread mode).
    Return,
}

impl ExceptionAction {
    /// Stable snake_case name: `enter`, `exit`, `return`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ExceptionAction::Enter => "enter",
            ExceptionAction::Exit => "exit",
            ExceptionAction::Return => "return",
        }
    }
}

/// The name of an ARMv7-M exception number (ARM DDI 0403, B1.5.2):
/// `Thread` (0), `Reset`, `NMI`, `HardFault`, `MemManage`, `BusFault`,
/// `UsageFault`, `SVCall` (11), `DebugMonitor` (12), `PendSV` (14),
/// `SysTick` (15), `IRQ n` (16 + n), `exception n` for the reserved
/// numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MExceptionName(pub u16);

impl core::fmt::Display for MExceptionName {
    /// The names of the ITM packets' exception numbers (one table for both).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&itm_packets::ExceptionName(self.0), f)
    }
}

/// What a DWT data trace packet carries about the access a watchpoint
/// comparator matched.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataItem {
    /// The address of the instruction that made the access.
    Pc(u32),
    /// Bits 15:0 of the data address.
    Address(u16),
    /// The value read or written.
    Value {
        /// The value (its low `size` bytes).
        value: u32,
        /// Size in bytes: 1, 2 or 4.
        size: u8,
        /// Written (`true`) or read.
        write: bool,
    },
}

impl DataItem {
    /// Stable snake_case name: `pc`, `address`, `value`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            DataItem::Pc(_) => "pc",
            DataItem::Address(_) => "address",
            DataItem::Value { .. } => "value",
        }
    }
}

/// How a local timestamp relates to the packet it times (ITM's TC field).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeRelation {
    /// The counter's value when the packet was generated.
    Sync,
    /// The timestamp packet was delayed.
    TimestampDelayed,
    /// The packet it times was delayed.
    PacketDelayed,
    /// Both were delayed.
    BothDelayed,
}

impl TimeRelation {
    /// Stable snake_case name: `sync`, `timestamp_delayed`,
    /// `packet_delayed`, `both_delayed`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            TimeRelation::Sync => "sync",
            TimeRelation::TimestampDelayed => "timestamp_delayed",
            TimeRelation::PacketDelayed => "packet_delayed",
            TimeRelation::BothDelayed => "both_delayed",
        }
    }
}

/// Processor context after a synchronization or change.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Context {
    /// Non-secure state.
    pub ns: bool,
    /// Hyp mode.
    pub hyp: bool,
    /// Context ID, when traced.
    pub context_id: Option<u32>,
    /// VMID, when traced.
    pub vmid: Option<u8>,
    /// Instruction set.
    pub isa: Isa,
    /// Cycle count carried by the packet (ETMv3 I-sync with cycle count).
    pub cycles: Option<u32>,
}

/// What happened.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// Instructions executed.
    Range(Range),
    /// An exception was taken.
    Exception {
        /// Architecture exception number as traced (1 = debug halt,
        /// 14 = IRQ, ...).
        number: u16,
        /// Preferred return address: where execution resumes on return
        /// (`None` when the decoder did not know the position).
        ret: Option<u32>,
    },
    /// Return from an exception.
    ExceptionReturn,
    /// Processor context (security state, Hyp, context ID, VMID, ISA).
    Context(Context),
    /// Tracing (re)started.
    TraceOn {
        /// Why.
        reason: TraceOnReason,
        /// Cycle count carried by the packet (PTM I-sync).
        cycles: Option<u32>,
    },
    /// The decoder has no synchronization yet.
    NoSync,
    /// A timestamp.
    Timestamp {
        /// Timestamp value.
        value: u64,
        /// Cycle count carried by the packet.
        cycles: Option<u32>,
    },
    /// Cycles that belong to no instruction (W atoms, cycle count packets).
    CycleCount(u32),
    /// The memory image does not cover `addr`; decoding resumes at the next
    /// address packet.
    AddrNacc {
        /// The address that could not be read.
        addr: u32,
    },
    /// A hole in the decoded flow; decoding resumes at the next address
    /// packet or I-sync.
    Gap(GapReason),
    /// The trace contradicts the flow decoded so far: a flipped atom, lost
    /// bytes or a memory image that does not match walked the decoder
    /// somewhere the processor did not go. The decoder follows the trace
    /// from here (the traced address when there is one, else the next
    /// address packet).
    Inconsistent {
        /// Which check found it.
        check: Check,
        /// Where the decoded flow was (the next instruction; for
        /// [`Check::Atoms`] the indirect branch waiting for its target).
        expected: u32,
        /// The address the trace gives (`None` for [`Check::Atoms`]).
        traced: Option<u32>,
    },
    /// The end of the trace.
    EndOfTrace,
    /// ITM: software wrote a stimulus port.
    Stimulus {
        /// The stimulus port (0 to 31, more with ITM pages).
        port: u32,
        /// The value written (its low `size` bytes).
        value: u32,
        /// Size of the write in bytes: 1, 2 or 4.
        size: u8,
    },
    /// DWT exception trace (ARMv7-M): an exception entered, exited or
    /// returned to.
    ExceptionTrace {
        /// The ARMv7-M exception number (see [`MExceptionName`]).
        number: u16,
        /// What happened.
        action: ExceptionAction,
    },
    /// DWT periodic PC sample.
    PcSample {
        /// The sampled PC; `None`: the processor was asleep (WFI, WFE).
        pc: Option<u32>,
    },
    /// DWT data trace: an access a watchpoint comparator matched.
    DataTrace {
        /// The comparator (0 to 3).
        comparator: u8,
        /// What the packet carries.
        item: DataItem,
    },
    /// ITM overflow: packets were lost (the ITM's output was full).
    Overflow,
    /// ITM local timestamp: time since the previous one, in the local
    /// timestamp clock's ticks.
    LocalTimestamp {
        /// Ticks since the previous local timestamp.
        delta: u32,
        /// How it relates to the packet it times.
        relation: TimeRelation,
    },
}

impl EventKind {
    /// Stable snake_case name: `range`, `exception`, `exception_return`,
    /// `context`, `trace_on`, `no_sync`, `timestamp`, `cycle_count`,
    /// `addr_nacc`, `gap`, `inconsistent`, `end_of_trace`, and for ITM/DWT
    /// `stimulus`, `exception_trace`, `pc_sample`, `data_trace`,
    /// `overflow`, `local_timestamp`.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            EventKind::Range(_) => "range",
            EventKind::Exception { .. } => "exception",
            EventKind::ExceptionReturn => "exception_return",
            EventKind::Context(_) => "context",
            EventKind::TraceOn { .. } => "trace_on",
            EventKind::NoSync => "no_sync",
            EventKind::Timestamp { .. } => "timestamp",
            EventKind::CycleCount(_) => "cycle_count",
            EventKind::AddrNacc { .. } => "addr_nacc",
            EventKind::Gap(_) => "gap",
            EventKind::Inconsistent { .. } => "inconsistent",
            EventKind::EndOfTrace => "end_of_trace",
            EventKind::Stimulus { .. } => "stimulus",
            EventKind::ExceptionTrace { .. } => "exception_trace",
            EventKind::PcSample { .. } => "pc_sample",
            EventKind::DataTrace { .. } => "data_trace",
            EventKind::Overflow => "overflow",
            EventKind::LocalTimestamp { .. } => "local_timestamp",
        }
    }
}

/// One decoded event.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Event {
    /// Offset in the capture of the packet that produced the event.
    pub offset: u64,
    /// Trace ID of the source.
    pub id: u8,
    /// What happened.
    pub kind: EventKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_is_compact() {
        assert!(
            std::mem::size_of::<Event>() <= 48,
            "{}",
            std::mem::size_of::<Event>()
        );
    }
}
