//! The packets of the ETMv3 protocol (ARM IHI 0014Q chapter 7).
//!
//! [`Packet`] is a plain `Copy` enum holding only valid packets; invalid
//! input is reported by the parser as an [`Error`](crate::Error). Fields
//! that the protocol compresses (branch addresses, data addresses,
//! timestamps) hold the *full* reconstructed value plus the number of low
//! bits the packet itself carried.

/// Instruction set state (IHI 0014Q table 7.20).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Isa {
    /// ARM (A32) state, word-aligned addresses.
    #[default]
    Arm,
    /// Thumb state, including 32-bit Thumb-2 instructions (T32);
    /// halfword-aligned addresses.
    Thumb,
    /// ThumbEE state (ETMv3.3 and later: T bit and AltISA bit set).
    ThumbEE,
    /// Jazelle (Java bytecode) state, byte-aligned addresses.
    Jazelle,
}

impl Isa {
    /// Stable lower-case name (`arm`, `thumb`, `thumbee`, `jazelle`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Arm => "arm",
            Self::Thumb => "thumb",
            Self::ThumbEE => "thumbee",
            Self::Jazelle => "jazelle",
        }
    }

    /// How far a branch address is shifted right before it is packed:
    /// 2 for ARM, 1 for Thumb and ThumbEE, 0 for Jazelle.
    #[must_use]
    pub const fn address_shift(self) -> u32 {
        match self {
            Self::Arm => 2,
            Self::Thumb | Self::ThumbEE => 1,
            Self::Jazelle => 0,
        }
    }
}

/// Reason code of an I-sync packet (IHI 0014Q table 7.21).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Reason {
    /// `0b00`: periodic synchronization.
    #[default]
    Periodic,
    /// `0b01`: tracing enabled (trace on).
    TraceOn,
    /// `0b10`: tracing restarted after a FIFO overflow.
    Overflow,
    /// `0b11`: the processor has exited from debug state.
    DebugExit,
}

impl Reason {
    /// Decodes the two-bit field.
    #[must_use]
    pub const fn from_bits(bits: u8) -> Self {
        match bits & 3 {
            0 => Self::Periodic,
            1 => Self::TraceOn,
            2 => Self::Overflow,
            _ => Self::DebugExit,
        }
    }
    /// The two-bit field value.
    #[must_use]
    pub const fn bits(self) -> u8 {
        match self {
            Self::Periodic => 0,
            Self::TraceOn => 1,
            Self::Overflow => 2,
            Self::DebugExit => 3,
        }
    }
    /// Stable snake_case name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Periodic => "periodic",
            Self::TraceOn => "trace_on",
            Self::Overflow => "overflow",
            Self::DebugExit => "debug_exit",
        }
    }
}

/// One P-header atom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Atom {
    /// An instruction executed and passed its condition code test.
    E,
    /// An instruction executed and failed its condition code test.
    N,
    /// A cycle boundary (cycle-accurate mode only).
    W,
}

/// Which P-header encoding produced an [`Atoms`] packet
/// (IHI 0014Q tables 7.2 and 7.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PHeaderFormat {
    /// Cycle-accurate `b10000000`: one W. ETMv3.0 only.
    Format0,
    /// Non cycle-accurate `b1NEEEE00` (0-15 E, 0-1 N) or cycle-accurate
    /// `b1N0EEE00` (0-7 WE, 0-1 WN).
    Format1,
    /// `b1000FF10`: two E/N atoms (preceded by one W in cycle-accurate
    /// mode).
    Format2,
    /// Cycle-accurate `b1E1WWW00`: 1-8 W, then 0-1 E.
    Format3,
    /// Cycle-accurate `b10010F10`: one E/N atom with no cycle boundary.
    /// ETMv3.3 and later.
    Format4,
}

impl PHeaderFormat {
    /// Format number 0 to 4.
    #[must_use]
    pub const fn number(self) -> u8 {
        match self {
            Self::Format0 => 0,
            Self::Format1 => 1,
            Self::Format2 => 2,
            Self::Format3 => 3,
            Self::Format4 => 4,
        }
    }
}

/// A P-header: a run of E/N atoms (one per instruction) and W atoms
/// (cycles), stored compactly.
///
/// Atom `i` (0 = oldest) of the E/N atoms is E when bit `i` of
/// [`executed`](Self::executed) is set. The exact interleaving of W and
/// E/N atoms follows from the format; [`iter`](Self::iter) replays it.
/// `cycles` is nonzero only in cycle-accurate mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(align(8))]
pub struct Atoms {
    /// The encoding used.
    pub format: PHeaderFormat,
    /// Number of E/N atoms (instructions), 0 to 16.
    pub count: u8,
    /// Bit `i` set: instruction `i` passed its condition code test (E).
    pub executed: u16,
    /// Number of W atoms (cycles).
    pub cycles: u8,
}

impl Atoms {
    /// Number of instructions (E/N atoms).
    #[must_use]
    pub const fn instructions(&self) -> u32 {
        self.count as u32
    }

    /// Whether instruction `i` (0 = oldest) executed (E) rather than
    /// failed its condition (N). `false` for `i >= count`.
    #[must_use]
    pub const fn is_executed(&self, i: u32) -> bool {
        i < self.count as u32 && i < 16 && (self.executed >> i) & 1 != 0
    }

    /// Replays the atoms in trace order, W atoms included
    /// (e.g. `W E W E W N` for a cycle-accurate format 1 header).
    #[must_use]
    pub fn iter(&self) -> AtomIter {
        AtomIter {
            atoms: *self,
            step: 0,
        }
    }

    /// Total number of atoms `iter` yields.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.count as usize + self.cycles as usize
    }

    /// True when the header carries no atom at all (non cycle-accurate
    /// `b10000000`).
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl IntoIterator for Atoms {
    type Item = Atom;
    type IntoIter = AtomIter;
    fn into_iter(self) -> AtomIter {
        self.iter()
    }
}

/// Iterator over the atoms of a P-header, see [`Atoms::iter`].
#[derive(Clone, Debug)]
pub struct AtomIter {
    atoms: Atoms,
    step: u32,
}

impl Iterator for AtomIter {
    type Item = Atom;

    fn next(&mut self) -> Option<Atom> {
        let a = &self.atoms;
        let s = self.step;
        if s as usize >= a.len() {
            return None;
        }
        self.step += 1;
        let en = |i: u32| if a.is_executed(i) { Atom::E } else { Atom::N };
        let ca = a.cycles > 0;
        Some(match a.format {
            // Cycle-accurate format 1: W E/N pairs; otherwise a plain run.
            PHeaderFormat::Format1 if ca => {
                if s % 2 == 0 {
                    Atom::W
                } else {
                    en(s / 2)
                }
            }
            // Cycle-accurate format 2: one W, then both atoms.
            PHeaderFormat::Format2 if ca => {
                if s == 0 {
                    Atom::W
                } else {
                    en(s - 1)
                }
            }
            // W atoms first, then the optional E.
            PHeaderFormat::Format3 | PHeaderFormat::Format0 => {
                if s < u32::from(a.cycles) {
                    Atom::W
                } else {
                    en(s - u32::from(a.cycles))
                }
            }
            _ => en(s),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.atoms.len().saturating_sub(self.step as usize);
        (n, Some(n))
    }
}

impl ExactSizeIterator for AtomIter {}

/// The current-instruction address of a Load/Store-in-Progress I-sync,
/// compressed against the data instruction address in the same packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LsipAddress {
    /// Full reconstructed address of the instruction executing when trace
    /// started.
    pub address: u32,
    /// Number of low address bits the packet carried (0 when building a
    /// packet to encode: the encoder picks the minimal form).
    pub bits: u8,
}

const F_CTXID: u8 = 1;
const F_CYCLES: u8 = 2;
const F_NS: u8 = 4;
const F_HYP: u8 = 8;
const F_DATA_ONLY: u8 = 16;
const F_LSIP: u8 = 32;

/// An I-sync packet in any of its forms: normal, with cycle count,
/// Load/Store in Progress (LSiP), LSiP with cycle count, and data-only.
///
/// Fields are read through accessors and set with the `with_*` builders so
/// that the packet stays small (the [`Packet`] enum is at most 32 bytes).
///
/// ```
/// use etm_packets::{ISync, Isa, Reason};
/// let s = ISync::new(0xc002_115c, Isa::Thumb, Reason::Periodic).with_context_id(Some(0x42));
/// assert_eq!(s.address(), 0xc002_115c);
/// assert_eq!(s.context_id(), Some(0x42));
/// assert_eq!(s.cycle_count(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ISync {
    address: u32,
    context_id: u32,
    cycle_count: u32,
    lsip_address: u32,
    lsip_bits: u8,
    flags: u8,
    reason: Reason,
    isa: Isa,
}

impl ISync {
    /// A normal I-sync: execution continues at `address` in state `isa`.
    /// For ARM, Thumb and ThumbEE, bit 0 of `address` must be 0 (the packet
    /// uses it for the Thumb bit); in Jazelle state every bit is address.
    #[must_use]
    pub const fn new(address: u32, isa: Isa, reason: Reason) -> Self {
        Self {
            address,
            context_id: 0,
            cycle_count: 0,
            lsip_address: 0,
            lsip_bits: 0,
            flags: 0,
            reason,
            isa,
        }
    }

    /// A data-only I-sync (ETMCR\[20\] data-only mode): no instruction
    /// address; [`address`](Self::address) reads 0 and
    /// [`isa`](Self::isa) reads [`Isa::Arm`].
    #[must_use]
    pub const fn data_only(reason: Reason) -> Self {
        let mut s = Self::new(0, Isa::Arm, reason);
        s.flags = F_DATA_ONLY;
        s
    }

    const fn set(mut self, flag: u8, on: bool) -> Self {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
        self
    }

    /// Sets the context ID (present when the configuration traces one).
    #[must_use]
    pub const fn with_context_id(mut self, context_id: Option<u32>) -> Self {
        match context_id {
            Some(c) => {
                self.context_id = c;
                self.set(F_CTXID, true)
            }
            None => {
                self.context_id = 0;
                self.set(F_CTXID, false)
            }
        }
    }

    /// Sets the cycle count (I-sync with cycle count, header `0x70`).
    #[must_use]
    pub const fn with_cycle_count(mut self, cycles: Option<u32>) -> Self {
        match cycles {
            Some(c) => {
                self.cycle_count = c;
                self.set(F_CYCLES, true)
            }
            None => {
                self.cycle_count = 0;
                self.set(F_CYCLES, false)
            }
        }
    }

    /// Sets the Non-secure bit.
    #[must_use]
    pub const fn with_ns(self, ns: bool) -> Self {
        self.set(F_NS, ns)
    }

    /// Sets the Hyp bit (ETMv3.5 with Virtualization Extensions).
    #[must_use]
    pub const fn with_hyp(self, hyp: bool) -> Self {
        self.set(F_HYP, hyp)
    }

    /// Makes this an LSiP I-sync: [`address`](Self::address) is then the
    /// data instruction's address and `lsip` the instruction executing
    /// when trace started.
    #[must_use]
    pub const fn with_lsip(mut self, lsip: Option<LsipAddress>) -> Self {
        match lsip {
            Some(l) => {
                self.lsip_address = l.address;
                self.lsip_bits = l.bits;
                self.set(F_LSIP, true)
            }
            None => {
                self.lsip_address = 0;
                self.lsip_bits = 0;
                self.set(F_LSIP, false)
            }
        }
    }

    /// Sets the instruction set state.
    #[must_use]
    pub const fn with_isa(mut self, isa: Isa) -> Self {
        self.isa = isa;
        self
    }

    /// Instruction address (Thumb bit removed except in Jazelle state). For
    /// LSiP packets, the data instruction's address; 0 for data-only.
    #[must_use]
    pub const fn address(&self) -> u32 {
        self.address
    }
    /// Context ID, if the configuration traces one.
    #[must_use]
    pub const fn context_id(&self) -> Option<u32> {
        if self.flags & F_CTXID != 0 {
            Some(self.context_id)
        } else {
            None
        }
    }
    /// Cycle count of an "I-sync with cycle count" packet: W atoms since
    /// the last P-header (unknown when the reason is overflow in ETMv3.5).
    #[must_use]
    pub const fn cycle_count(&self) -> Option<u32> {
        if self.flags & F_CYCLES != 0 {
            Some(self.cycle_count)
        } else {
            None
        }
    }
    /// Reason code.
    #[must_use]
    pub const fn reason(&self) -> Reason {
        self.reason
    }
    /// Instruction set state (from the J, T and AltISA bits).
    #[must_use]
    pub const fn isa(&self) -> Isa {
        self.isa
    }
    /// Non-secure state.
    #[must_use]
    pub const fn ns(&self) -> bool {
        self.flags & F_NS != 0
    }
    /// Hyp mode.
    #[must_use]
    pub const fn hyp(&self) -> bool {
        self.flags & F_HYP != 0
    }
    /// Data-only form (no instruction address).
    #[must_use]
    pub const fn is_data_only(&self) -> bool {
        self.flags & F_DATA_ONLY != 0
    }
    /// The current-instruction address of an LSiP I-sync.
    #[must_use]
    pub const fn lsip(&self) -> Option<LsipAddress> {
        if self.flags & F_LSIP != 0 {
            Some(LsipAddress {
                address: self.lsip_address,
                bits: self.lsip_bits,
            })
        } else {
            None
        }
    }
    /// Address at which instruction tracing resumes: the LSiP current
    /// address when present, else [`address`](Self::address).
    #[must_use]
    pub const fn resume_address(&self) -> u32 {
        if self.flags & F_LSIP != 0 {
            self.lsip_address
        } else {
            self.address
        }
    }
}

/// Exception information carried by a branch address packet
/// (exception information bytes 0 to 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExceptionInfo {
    /// Exception number (9 bits: byte 0 bits \[4:1\] and byte 1 bits
    /// \[4:0\]). Its meaning depends on the architecture profile; for
    /// ARMv7-A/R, e.g. 1 = halting debug, 2 = SMC, 3 = Hyp trap,
    /// 4 = asynchronous data abort, 5 = Jazelle, 8 = reset, 9 =
    /// undefined, 10 = SVC, 11 = prefetch abort, 12 = data abort,
    /// 13 = generic, 14 = IRQ, 15 = FIQ. The three-bit code of the
    /// deprecated "exception in address bytes" form is reported in this
    /// numbering (see the crate notes).
    pub number: u16,
    /// The Cancel bit: the last traced instruction was cancelled by the
    /// exception and did not complete.
    pub cancel: bool,
    /// Resume field (byte 2 bits \[3:0\], ARMv7-M), 0 when absent.
    pub resume: u8,
}

/// A branch address packet: where execution continued after an indirect
/// branch, exception or state change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Branch {
    /// Full reconstructed target address (compressed bits merged with the
    /// previous branch or I-sync address).
    pub address: u32,
    /// Number of low address bits the packet carried (32 for a 5-byte
    /// address). When encoding, 0 asks for the minimal encoding and a
    /// larger value for at least that many bits.
    pub bits: u8,
    /// Number of low bits of `address` that are known: the bits this
    /// packet carried and those that earlier packets carried since the
    /// parser synchronized (32 once an I-sync or a five-byte address was
    /// seen). Before that, the bits above come from no packet and read as
    /// 0: `address` is not where execution went, only its low bits are.
    /// Ignored when encoding.
    pub known_bits: u8,
    /// Instruction set state after the branch.
    pub isa: Isa,
    /// Non-secure state after the branch.
    pub ns: bool,
    /// Hyp mode after the branch.
    pub hyp: bool,
    /// Exception details, when the packet signals an exception (nonzero
    /// exception number, Cancel bit or resume field).
    pub exception: Option<ExceptionInfo>,
}

/// A timestamp packet (ETMv3.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Timestamp {
    /// Full timestamp value, natural binary (Gray-coded timestamps are
    /// converted). 0 means "unknown".
    pub value: u64,
    /// Number of low bits the packet carried. When encoding, 0 asks for
    /// the minimal encoding.
    pub bits: u8,
    /// The R bit: the processor or timestamp clock frequency changed since
    /// the last timestamp.
    pub clock_changed: bool,
}

/// A normal data packet (header `b00A0SS10`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NormalData {
    /// The A bit: first data packet of an instruction, an address is
    /// expected (present only if data address tracing is enabled).
    pub first: bool,
    /// Full reconstructed data address, when the packet carried one.
    pub address: Option<u32>,
    /// Number of low address bits the packet carried (0 when no address;
    /// 0 when encoding asks for the minimal form).
    pub address_bits: u8,
    /// Data value, when data value tracing is enabled.
    pub value: Option<u32>,
    /// Number of value bytes the SS field announced: 0, 1, 2 or 4.
    pub size: u8,
}

/// An out-of-order data packet (header `b0TT0SS00`): the value for an
/// earlier out-of-order placeholder with the same tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutOfOrderData {
    /// Tag, 1 to 3.
    pub tag: u8,
    /// Data value.
    pub value: u32,
    /// Number of value bytes (SS field): 0, 1, 2 or 4.
    pub size: u8,
}

/// An out-of-order placeholder packet (header `b01A1TT00`): a data
/// transfer whose value comes later in an out-of-order data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutOfOrderPlaceholder {
    /// Tag, 1 to 3.
    pub tag: u8,
    /// The A bit (address expected).
    pub first: bool,
    /// Full reconstructed data address, when the packet carried one.
    pub address: Option<u32>,
    /// Number of low address bits the packet carried.
    pub address_bits: u8,
}

/// A value-not-traced packet (header `b011A1010`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueNotTraced {
    /// The A bit (address expected).
    pub first: bool,
    /// Full reconstructed data address, when the packet carried one.
    pub address: Option<u32>,
    /// Number of low address bits the packet carried.
    pub address_bits: u8,
}

/// One valid ETMv3 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Packet {
    /// A-sync: five or more `0x00` bytes then `0x80`.
    ASync,
    /// I-sync in any form (header `0x08` or, with cycle count, `0x70`).
    ISync(ISync),
    /// P-header (atoms), header `b1xxxxxx0`.
    Atoms(Atoms),
    /// Branch address, header `bCxxxxxx1`.
    Branch(Branch),
    /// Cycle count (header `0x04`): W atoms before the most recent
    /// non-periodic I-sync; 0 means the counter overflowed.
    CycleCount(u32),
    /// Context ID (header `0x6E`), 1, 2 or 4 bytes per the configuration.
    ContextId(u32),
    /// VMID (header `0x3C`, ETMv3.5).
    Vmid(u8),
    /// Timestamp (header `b01000R10`, ETMv3.5).
    Timestamp(Timestamp),
    /// Exception entry (header `0x7E`).
    ExceptionEntry,
    /// Exception exit / return from exception (header `0x76`).
    ExceptionExit,
    /// Trigger (header `0x0C`).
    Trigger,
    /// Ignore (header `0x66`).
    Ignore,
    /// Store failed, for STREX (header `0x50`).
    StoreFailed,
    /// Data suppressed (header `0x62`).
    DataSuppressed,
    /// Value not traced (header `b011A1010`).
    ValueNotTraced(ValueNotTraced),
    /// Normal data (header `b00A0SS10`).
    NormalData(NormalData),
    /// Out-of-order data (header `b0TT0SS00`).
    OutOfOrderData(OutOfOrderData),
    /// Out-of-order placeholder (header `b01A1TT00`).
    OutOfOrderPlaceholder(OutOfOrderPlaceholder),
}

impl Packet {
    /// Stable snake_case name of the packet kind.
    #[must_use]
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::ASync => "a_sync",
            Self::ISync(_) => "i_sync",
            Self::Atoms(_) => "p_header",
            Self::Branch(_) => "branch_address",
            Self::CycleCount(_) => "cycle_count",
            Self::ContextId(_) => "context_id",
            Self::Vmid(_) => "vmid",
            Self::Timestamp(_) => "timestamp",
            Self::ExceptionEntry => "exception_entry",
            Self::ExceptionExit => "exception_exit",
            Self::Trigger => "trigger",
            Self::Ignore => "ignore",
            Self::StoreFailed => "store_failed",
            Self::DataSuppressed => "data_suppressed",
            Self::ValueNotTraced(_) => "value_not_traced",
            Self::NormalData(_) => "normal_data",
            Self::OutOfOrderData(_) => "out_of_order_data",
            Self::OutOfOrderPlaceholder(_) => "out_of_order_placeholder",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_is_small() {
        assert!(
            core::mem::size_of::<Packet>() <= 32,
            "{}",
            core::mem::size_of::<Packet>()
        );
        assert!(core::mem::size_of::<ISync>() <= 20);
    }

    #[test]
    fn atom_iteration_ca_format1() {
        let a = Atoms {
            format: PHeaderFormat::Format1,
            count: 3,
            executed: 0b011,
            cycles: 3,
        };
        let v: Vec<Atom> = a.iter().collect();
        assert_eq!(v, [Atom::W, Atom::E, Atom::W, Atom::E, Atom::W, Atom::N]);
    }

    #[test]
    fn isync_builders_roundtrip() {
        let s = ISync::new(0x1000, Isa::Arm, Reason::TraceOn)
            .with_cycle_count(Some(7))
            .with_ns(true)
            .with_hyp(true)
            .with_lsip(Some(LsipAddress {
                address: 0x1004,
                bits: 8,
            }));
        assert_eq!(s.cycle_count(), Some(7));
        assert!(s.ns() && s.hyp() && !s.is_data_only());
        assert_eq!(s.resume_address(), 0x1004);
        let s = s.with_lsip(None).with_ns(false).with_cycle_count(None);
        assert_eq!(
            s,
            ISync::new(0x1000, Isa::Arm, Reason::TraceOn).with_hyp(true)
        );
    }
}
