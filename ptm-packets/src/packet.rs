//! The packet vocabulary: one variant per valid PFT packet.

/// Longest packet the parser buffers across chunk boundaries, in bytes: an
/// I-sync with a 5-byte cycle count and a 4-byte context ID, or a 64-bit
/// timestamp with a 5-byte cycle count. (A-sync packets may be longer
/// because of extra leading zeros; they are counted, never buffered.)
pub const MAX_PACKET_LEN: usize = 15;

/// Instruction set state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Isa {
    /// A32, word-aligned.
    #[default]
    Arm,
    /// T32 (Thumb-2), halfword-aligned.
    Thumb,
    /// ThumbEE: Thumb address format with the AltISA bit set.
    ThumbEE,
    /// Jazelle, byte-aligned. PFT does not trace bytecode; a branch into
    /// Jazelle state is the last traced waypoint until an I-sync.
    Jazelle,
}

impl Isa {
    /// Stable lower-case name: `arm`, `thumb`, `thumbee`, `jazelle`.
    pub const fn name(self) -> &'static str {
        match self {
            Isa::Arm => "arm",
            Isa::Thumb => "thumb",
            Isa::ThumbEE => "thumbee",
            Isa::Jazelle => "jazelle",
        }
    }
}

/// Why the PTM emitted an I-sync (information byte bits \[6:5\]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ISyncReason {
    /// `b00`: periodic synchronization; no gap in the trace. Never carries
    /// a cycle count.
    #[default]
    Periodic,
    /// `b01`: tracing was turned on (TraceEnable became active).
    TraceOn,
    /// `b10`: trace restarted after a FIFO overflow.
    Overflow,
    /// `b11`: the processor exited debug state.
    DebugExit,
}

impl ISyncReason {
    /// Decodes the 2-bit reason field.
    pub const fn from_bits(bits: u8) -> ISyncReason {
        match bits & 3 {
            0 => ISyncReason::Periodic,
            1 => ISyncReason::TraceOn,
            2 => ISyncReason::Overflow,
            _ => ISyncReason::DebugExit,
        }
    }

    /// The 2-bit reason field.
    pub const fn bits(self) -> u8 {
        match self {
            ISyncReason::Periodic => 0,
            ISyncReason::TraceOn => 1,
            ISyncReason::Overflow => 2,
            ISyncReason::DebugExit => 3,
        }
    }

    /// Stable snake_case name: `periodic`, `trace_on`, `overflow`, `debug_exit`.
    pub const fn name(self) -> &'static str {
        match self {
            ISyncReason::Periodic => "periodic",
            ISyncReason::TraceOn => "trace_on",
            ISyncReason::Overflow => "overflow",
            ISyncReason::DebugExit => "debug_exit",
        }
    }
}

/// I-sync: the full processor state at the next instruction to execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ISync {
    /// Address of the next instruction (bit 0 clear; the T bit is in `isa`).
    pub address: u32,
    /// Instruction set, from the address T bit and the AltISA bit:
    /// T=0 → ARM, T=1 → Thumb, T=1 with AltISA → ThumbEE. The combination
    /// T=0 with AltISA (never generated, PFT does not trace Jazelle code) is
    /// reported as [`Isa::Jazelle`].
    pub isa: Isa,
    /// Non-secure state (information byte bit 3).
    pub ns: bool,
    /// Hyp mode (information byte bit 1, Virtualization Extensions only).
    pub hyp: bool,
    /// Why the I-sync was emitted.
    pub reason: ISyncReason,
    /// Context ID, present when the configured context ID size is not zero.
    pub context_id: Option<u32>,
    /// Cycles since the last cycle count output; present in cycle-accurate
    /// mode unless `reason` is [`ISyncReason::Periodic`].
    pub cycles: Option<u32>,
}

/// One waypoint outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Atom {
    /// The waypoint instruction passed its condition code check (taken).
    E,
    /// The waypoint instruction failed its condition code check.
    N,
}

/// One to five atoms of an atom packet, oldest first.
///
/// Bit `i` of [`Atoms::e_bits`] is set when the `i`-th oldest atom is an E.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Atoms {
    count: u8,
    e_bits: u8,
}

impl Atoms {
    /// Largest number of atoms in one packet.
    pub const MAX: u8 = 5;

    /// Builds an atom list of `count` atoms (1 to 5); bit `i` of `e_bits`
    /// set means the `i`-th oldest atom is an E. Bits at or above `count`
    /// must be clear. Returns `None` otherwise.
    pub const fn new(count: u8, e_bits: u8) -> Option<Atoms> {
        if count == 0 || count > Atoms::MAX || (e_bits >> count) != 0 {
            None
        } else {
            Some(Atoms { count, e_bits })
        }
    }

    /// From a decode table entry `count << 5 | e_bits` (count 1..=5).
    #[inline(always)]
    pub(crate) const fn from_table(entry: u8) -> Atoms {
        Atoms {
            count: entry >> 5,
            e_bits: entry & 0x1f,
        }
    }

    /// A single atom.
    pub const fn single(atom: Atom) -> Atoms {
        Atoms {
            count: 1,
            e_bits: matches!(atom, Atom::E) as u8,
        }
    }

    /// Number of atoms, 1 to 5.
    pub const fn len(&self) -> usize {
        self.count as usize
    }

    /// Always false: an atom packet holds at least one atom.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The E/N bits, oldest atom in bit 0, 1 = E.
    pub const fn e_bits(&self) -> u8 {
        self.e_bits
    }

    /// The `index`-th oldest atom, if there is one.
    pub const fn get(&self, index: usize) -> Option<Atom> {
        if index >= self.count as usize {
            None
        } else if (self.e_bits >> index) & 1 == 1 {
            Some(Atom::E)
        } else {
            Some(Atom::N)
        }
    }

    /// Iterates over the atoms, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = Atom> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

/// Exception information bytes of a branch address packet.
///
/// Present on exception branches and whenever the security state, Hyp mode
/// or AltISA (ThumbEE) state changes; [`ExceptionInfo::number`] is 0 when no
/// exception was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ExceptionInfo {
    /// Exception number, 9 bits: bits \[3:0\] in the first information byte,
    /// bits \[8:4\] in the optional second. See [`exception_name`].
    pub number: u16,
    /// Non-secure state after the branch (first byte, bit 0).
    pub ns: bool,
    /// AltISA: with a Thumb-format address the target is ThumbEE (first
    /// byte, bit 6). The value persists until the next I-sync or exception
    /// information byte.
    pub alt_isa: bool,
    /// Hyp mode after the branch; `Some` when the second information byte
    /// was present (bit 5). That byte also holds exception number bits
    /// \[8:4\], so it is `Some` whenever `number` is above 15.
    pub hyp: Option<bool>,
}

impl ExceptionInfo {
    /// Whether encoding needs the second information byte.
    pub const fn needs_second_byte(&self) -> bool {
        self.number > 0xf || self.hyp.is_some()
    }
}

/// Name of a PFT exception number: `none`, `debug-halt`, `smc`, `hyp`,
/// `async-data-abort`, `thumbee-check`, `reset`, `undefined`, `svc`,
/// `prefetch-abort`, `data-abort`, `generic`, `irq`, `fiq`; `reserved` for
/// 6, 7 and every number above 15.
pub const fn exception_name(number: u16) -> &'static str {
    match number {
        0 => "none",
        1 => "debug-halt",
        2 => "smc",
        3 => "hyp",
        4 => "async-data-abort",
        5 => "thumbee-check",
        8 => "reset",
        9 => "undefined",
        10 => "svc",
        11 => "prefetch-abort",
        12 => "data-abort",
        13 => "generic",
        14 => "irq",
        15 => "fiq",
        _ => "reserved",
    }
}

/// Branch address packet: the target of an indirect branch, an exception,
/// or a state change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BranchAddress {
    /// The full target address: the packet's low `bits` bits over the
    /// previous branch or I-sync address.
    pub address: u32,
    /// How many low address bits the packet gave. Depends on the number of
    /// address bytes (1–5) and the address format: ARM 8/14/21/28/32,
    /// Thumb/ThumbEE 7/13/20/27/32, Jazelle 6/12/19/26/32.
    pub bits: u8,
    /// Instruction set at the target. Only a 5-byte address can change the
    /// address format (ARM/Thumb/Jazelle); Thumb versus ThumbEE follows the
    /// AltISA state.
    pub isa: Isa,
    /// Exception information bytes, when present.
    pub exception: Option<ExceptionInfo>,
    /// Cycle count (cycle-accurate mode only).
    pub cycles: Option<u32>,
}

/// Waypoint update: the address of the last waypoint (an instruction the PTM
/// treated as a waypoint, for example before an exception).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct WaypointUpdate {
    /// Full waypoint address, compressed like a branch address against the
    /// last branch or I-sync address. Per PFT B.3.2 (analyze_waypoint_update)
    /// it does not itself become the base address of later packets.
    pub address: u32,
    /// Low address bits given by the packet (same table as
    /// [`BranchAddress::bits`]).
    pub bits: u8,
    /// Instruction set of the waypoint.
    pub isa: Isa,
    /// The AltISA bit of the optional information byte that can follow a
    /// 5-byte address; `None` when absent.
    pub alt_isa: Option<bool>,
}

/// Timestamp packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Timestamp {
    /// Full timestamp, natural binary (Gray-coded streams are converted).
    pub value: u64,
    /// How many low bits the packet gave: 7 per byte, 48 or 64 when full.
    pub bits: u8,
    /// The R bit (header bit 2): the clock frequency changed since the last
    /// timestamp.
    pub clock_changed: bool,
    /// Cycle count (cycle-accurate mode only).
    pub cycles: Option<u32>,
}

/// A valid PFT packet. Errors are reported separately ([`crate::Error`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Packet {
    /// A-sync (alignment synchronization): five or more `0x00` then `0x80`.
    ASync,
    /// I-sync (instruction synchronization), header `0x08`.
    ISync(ISync),
    /// Atom packet, header `b1xxxxxx0`: 1–5 atoms, or in cycle-accurate mode
    /// one atom with its cycle count.
    Atom {
        /// The atoms, oldest first.
        atoms: Atoms,
        /// Cycle count (cycle-accurate mode only).
        cycles: Option<u32>,
    },
    /// Branch address packet, header `bCxxxxxx1`.
    BranchAddress(BranchAddress),
    /// Waypoint update, header `0x72`.
    WaypointUpdate(WaypointUpdate),
    /// Trigger, header `0x0C`.
    Trigger,
    /// Context ID, header `0x6E`, with the configured number of bytes
    /// (a 0-byte configuration yields 0).
    ContextId(u32),
    /// VMID, header `0x3C`.
    Vmid(u8),
    /// Timestamp, header `0x42` or `0x46`.
    Timestamp(Timestamp),
    /// Exception return, header `0x76`.
    ExceptionReturn,
    /// Ignore, header `0x66`.
    Ignore,
}

impl Packet {
    /// Stable snake_case name of the packet kind: `a_sync`, `i_sync`,
    /// `atom`, `branch_address`, `waypoint_update`, `trigger`, `context_id`,
    /// `vmid`, `timestamp`, `exception_return`, `ignore`.
    pub const fn kind(&self) -> &'static str {
        match self {
            Packet::ASync => "a_sync",
            Packet::ISync(_) => "i_sync",
            Packet::Atom { .. } => "atom",
            Packet::BranchAddress(_) => "branch_address",
            Packet::WaypointUpdate(_) => "waypoint_update",
            Packet::Trigger => "trigger",
            Packet::ContextId(_) => "context_id",
            Packet::Vmid(_) => "vmid",
            Packet::Timestamp(_) => "timestamp",
            Packet::ExceptionReturn => "exception_return",
            Packet::Ignore => "ignore",
        }
    }

    /// The packet's cycle count, if it carries one.
    pub const fn cycles(&self) -> Option<u32> {
        match self {
            Packet::ISync(p) => p.cycles,
            Packet::Atom { cycles, .. } => *cycles,
            Packet::BranchAddress(p) => p.cycles,
            Packet::Timestamp(p) => p.cycles,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_is_small() {
        assert!(core::mem::size_of::<Packet>() <= 32);
    }

    #[test]
    fn atoms_accessors() {
        let a = Atoms::new(3, 0b101).unwrap();
        assert_eq!(a.len(), 3);
        assert!(!a.is_empty());
        let v: [Atom; 3] = [Atom::E, Atom::N, Atom::E];
        assert!(a.iter().eq(v));
        assert_eq!(a.get(3), None);
        assert!(Atoms::new(0, 0).is_none());
        assert!(Atoms::new(6, 0).is_none());
        assert!(Atoms::new(2, 0b100).is_none());
        assert_eq!(Atoms::single(Atom::N).e_bits(), 0);
    }

    #[test]
    fn names() {
        assert_eq!(exception_name(1), "debug-halt");
        assert_eq!(exception_name(15), "fiq");
        assert_eq!(exception_name(300), "reserved");
        assert_eq!(ISyncReason::from_bits(3), ISyncReason::DebugExit);
        for r in 0..4 {
            assert_eq!(ISyncReason::from_bits(r).bits(), r);
        }
        assert_eq!(Packet::Ignore.kind(), "ignore");
    }
}
