//! The result of decoding one instruction: [`Insn`] and the small types it
//! is made of.

/// Instruction set state of the processor.
///
/// ThumbEE is decoded as [`Isa::T32`] (its encodings differ from Thumb only
/// in a few 16-bit load/store and handler-branch forms that this crate does
/// not distinguish); Jazelle is not an instruction set this crate decodes.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Isa {
    /// The 32-bit ARM instruction set (ARM state).
    #[default]
    A32,
    /// The Thumb instruction set, 16- and 32-bit encodings (Thumb state).
    T32,
}

impl Isa {
    /// Stable lower-case name: `a32`, `t32`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Isa::A32 => "a32",
            Isa::T32 => "t32",
        }
    }
}

/// An ARM condition code (the `cond` field of the ARM ARM, A8.3).
///
/// The value `0b1111` never appears here: in A32 it selects the
/// unconditional instruction space (reported as [`Cond::Al`]); in T32 it
/// selects other instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Cond {
    /// Equal (Z set).
    Eq = 0,
    /// Not equal (Z clear).
    Ne = 1,
    /// Carry set / unsigned higher or same (C set).
    Cs = 2,
    /// Carry clear / unsigned lower (C clear).
    Cc = 3,
    /// Minus, negative (N set).
    Mi = 4,
    /// Plus, positive or zero (N clear).
    Pl = 5,
    /// Overflow (V set).
    Vs = 6,
    /// No overflow (V clear).
    Vc = 7,
    /// Unsigned higher (C set and Z clear).
    Hi = 8,
    /// Unsigned lower or same (C clear or Z set).
    Ls = 9,
    /// Signed greater than or equal (N == V).
    Ge = 10,
    /// Signed less than (N != V).
    Lt = 11,
    /// Signed greater than (Z clear and N == V).
    Gt = 12,
    /// Signed less than or equal (Z set or N != V).
    Le = 13,
    /// Always (unconditional).
    Al = 14,
}

impl Cond {
    const ALL: [Cond; 16] = [
        Cond::Eq,
        Cond::Ne,
        Cond::Cs,
        Cond::Cc,
        Cond::Mi,
        Cond::Pl,
        Cond::Vs,
        Cond::Vc,
        Cond::Hi,
        Cond::Ls,
        Cond::Ge,
        Cond::Lt,
        Cond::Gt,
        Cond::Le,
        Cond::Al,
        Cond::Al,
    ];

    /// The condition for a 4-bit `cond` field (bits above bit 3 are
    /// ignored). `0b1111` maps to [`Cond::Al`].
    #[inline]
    pub const fn from_bits(bits: u32) -> Cond {
        Cond::ALL[(bits & 0xF) as usize]
    }

    /// The 4-bit encoding of this condition.
    #[inline]
    pub const fn bits(self) -> u8 {
        self as u8
    }

    /// The opposite condition (`Eq` ↔ `Ne`, …); [`Cond::Al`] stays `Al`.
    #[inline]
    pub const fn invert(self) -> Cond {
        match self {
            Cond::Al => Cond::Al,
            c => Cond::from_bits((c as u32) ^ 1),
        }
    }

    /// Whether the condition passes for the given flags, packed as
    /// `N:Z:C:V` in bits 3..0 (the ARM ARM's `ConditionPassed()`).
    #[inline]
    pub const fn passes(self, nzcv: u8) -> bool {
        let n = nzcv & 8 != 0;
        let z = nzcv & 4 != 0;
        let c = nzcv & 2 != 0;
        let v = nzcv & 1 != 0;
        match self {
            Cond::Eq => z,
            Cond::Ne => !z,
            Cond::Cs => c,
            Cond::Cc => !c,
            Cond::Mi => n,
            Cond::Pl => !n,
            Cond::Vs => v,
            Cond::Vc => !v,
            Cond::Hi => c && !z,
            Cond::Ls => !c || z,
            Cond::Ge => n == v,
            Cond::Lt => n != v,
            Cond::Gt => !z && n == v,
            Cond::Le => z || n != v,
            Cond::Al => true,
        }
    }

    /// The assembler suffix (`"eq"`, `"ne"`, …; empty for [`Cond::Al`]).
    pub const fn suffix(self) -> &'static str {
        match self {
            Cond::Eq => "eq",
            Cond::Ne => "ne",
            Cond::Cs => "cs",
            Cond::Cc => "cc",
            Cond::Mi => "mi",
            Cond::Pl => "pl",
            Cond::Vs => "vs",
            Cond::Vc => "vc",
            Cond::Hi => "hi",
            Cond::Ls => "ls",
            Cond::Ge => "ge",
            Cond::Lt => "lt",
            Cond::Gt => "gt",
            Cond::Le => "le",
            Cond::Al => "",
        }
    }
}

/// What an instruction does, as far as program flow tracing cares.
///
/// Everything that cannot change the program counter other than by moving
/// to the next instruction, and is not one of the other variants, is
/// [`Kind::Other`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Executes sequentially: the next instruction is at `addr + size`.
    Other,
    /// Direct branch: `B`, `B<c>`, `BL`, `BLX (immediate)`. The target is
    /// in [`Insn::target`]. A waypoint.
    Branch,
    /// Compare and branch on (non-)zero: `CBZ`, `CBNZ` (T32 only). A
    /// direct, conditional branch whose condition is a register test
    /// ([`Insn::cond`] is `Al`). The target is in [`Insn::target`].
    CompareBranch,
    /// Indirect branch: any instruction other than an exception return that
    /// writes the PC with a value not known from the opcode alone — `BX`,
    /// `BLX (register)`, `BXJ`, loads of the PC (`LDR`, `LDM`, `POP`),
    /// data processing with the PC as destination, `TBB`, `TBH`. A
    /// waypoint.
    IndirectBranch,
    /// Exception return: `ERET`, `RFE`, `SUBS PC, LR, #imm` and the other
    /// A32 data-processing instructions with `S` set and the PC as
    /// destination, `LDM` with `^` and the PC in the list. An indirect
    /// waypoint; the PTM also emits an exception-return packet.
    ExceptionReturn,
    /// Instruction synchronization barrier (`ISB`, or the CP15 form
    /// `MCR p15, 0, Rt, c7, c5, 4`). PFT treats it as a direct waypoint
    /// whose target is the next instruction.
    Isb,
    /// Data synchronization barrier (`DSB`, or `MCR p15, 0, Rt, c7, c10,
    /// 4`). A waypoint only when ETMCCER bit 24 says so.
    Dsb,
    /// Data memory barrier (`DMB`, or `MCR p15, 0, Rt, c7, c10, 5`). A
    /// waypoint only when ETMCCER bit 24 says so.
    Dmb,
    /// Wait for interrupt. Not a waypoint.
    Wfi,
    /// Wait for event. Not a waypoint.
    Wfe,
    /// Supervisor call: takes an exception (traced as an exception, not as
    /// a waypoint).
    Svc,
    /// Secure monitor call (Security Extensions): takes an exception.
    Smc,
    /// Hypervisor call (Virtualization Extensions): takes an exception.
    Hvc,
    /// Breakpoint: takes a Prefetch Abort (or enters debug state).
    Bkpt,
    /// Permanently undefined (`UDF`): takes an Undefined Instruction
    /// exception.
    Udf,
    /// If-Then (T32): makes up to four following instructions conditional.
    /// The block is in [`Insn::it`].
    It,
    /// `ENTERX`: enter ThumbEE state. PFT treats it as a direct waypoint
    /// whose target is the next instruction.
    EnterX,
    /// `LEAVEX`: leave ThumbEE state. PFT treats it as a direct waypoint
    /// whose target is the next instruction.
    LeaveX,
    /// An UNDEFINED encoding (unallocated in ARMv7): executing it takes an
    /// Undefined Instruction exception.
    Undefined,
}

/// A known destination of a direct waypoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// Address of the next instruction if the waypoint is taken.
    pub addr: u32,
    /// Instruction set at that address.
    pub isa: Isa,
}

/// How an instruction that writes the PC is conventionally used as a
/// return (a hint for call-stack reconstruction; the trace still gives the
/// real target of any indirect branch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReturnHint {
    /// `BX LR`.
    BxLr,
    /// `MOV PC, LR` (without `S`).
    MovPcLr,
    /// The PC loaded from the stack: `POP {…, PC}` (`LDM SP!`), `LDM SP`
    /// without write-back, `LDR PC, [SP], #imm`, and the A32 APCS frame
    /// return `LDMDB FP, {…, SP, PC}`.
    Pop,
    /// Exception return by data processing: `SUBS PC, LR, #imm` (T32 and
    /// A32), and in A32 `MOVS PC, LR` and the other data-processing
    /// instructions with `S` set and the PC as destination.
    SubsPc,
    /// `ERET` (Virtualization Extensions).
    Eret,
    /// `RFE` (return from exception using the stack).
    Rfe,
    /// A32 `LDM {…, PC}^`: exception return that also restores CPSR from
    /// SPSR.
    LdmException,
}

impl ReturnHint {
    /// Whether this is an exception return (restores CPSR from SPSR or the
    /// stack) rather than a subroutine return.
    #[inline]
    pub const fn is_exception_return(self) -> bool {
        matches!(
            self,
            ReturnHint::SubsPc | ReturnHint::Eret | ReturnHint::Rfe | ReturnHint::LdmException
        )
    }
}

/// The operands of an `IT` instruction: `firstcond` and `mask`.
///
/// Use [`ItBlock::state`] (or [`ItState::step`](crate::ItState::step)) to follow the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItBlock {
    /// The 4-bit `firstcond` field (bits 7..4 of the instruction).
    pub firstcond: u8,
    /// The 4-bit `mask` field (bits 3..0 of the instruction); never zero.
    pub mask: u8,
}

impl ItBlock {
    /// Number of instructions in the block (1 to 4).
    #[inline]
    pub const fn len(self) -> u8 {
        // A zero mask (not an IT instruction) gives 0.
        4 - ((self.mask & 0xF) | 0x10).trailing_zeros() as u8
    }

    /// Whether the block is empty: only for a zero `mask`, which no IT
    /// instruction has.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.mask & 0xF == 0
    }

    /// Condition of the first instruction of the block.
    #[inline]
    pub const fn first_cond(self) -> Cond {
        Cond::from_bits(self.firstcond as u32)
    }

    /// Condition of instruction `i` (0-based) of the block, or `None` past
    /// its end.
    pub const fn cond(self, i: u8) -> Option<Cond> {
        if i >= self.len() {
            return None;
        }
        if i == 0 {
            return Some(self.first_cond());
        }
        // ITSTATE shifts the mask left once per instruction, so bit
        // (4 - i) of the mask is bit 0 of instruction i's condition.
        let bit0 = (self.mask >> (4 - i)) & 1;
        Some(Cond::from_bits(((self.firstcond & 0xE) | bit0) as u32))
    }
}

/// One decoded instruction: everything a program-flow trace decoder needs.
///
/// Produced by [`decode_a32`](crate::decode_a32),
/// [`decode_t32`](crate::decode_t32) and [`decode`](crate::decode).
///
/// For UNPREDICTABLE encodings `unpredictable` is set and the other fields
/// describe the instruction *as written*; in particular an encoding that
/// names the PC as a destination register (including base write-back) is
/// reported as [`Kind::IndirectBranch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Insn {
    /// Size in bytes: 4 for A32, 2 or 4 for T32.
    pub size: u8,
    /// What the instruction does to program flow.
    pub kind: Kind,
    /// Condition code from the encoding: the A32 `cond` field, or the
    /// condition of a T32 `B<c>`. Other T32 instructions report
    /// [`Cond::Al`]; their condition inside an IT block comes from
    /// [`ItState`](crate::ItState).
    pub cond: Cond,
    /// Branch with link: `BL`, `BLX` (both forms). The return address is
    /// `addr + size` (with bit 0 set when returning to T32).
    pub link: bool,
    /// The encoding is UNPREDICTABLE in ARMv7. Checked for every
    /// encoding that names the PC (as a destination, a base register with
    /// write-back, or an operand of a control-flow instruction) and for
    /// the should-be-zero/one fields of control-flow instructions. Other
    /// UNPREDICTABLE conditions that cannot affect program flow (register
    /// overlaps, empty register lists without the PC, …) are not checked,
    /// nor are IT-block placement rules (see [`ItState`](crate::ItState)).
    pub unpredictable: bool,
    /// Destination of a direct waypoint when taken: the branch target of
    /// [`Kind::Branch`] and [`Kind::CompareBranch`], and the next
    /// instruction for [`Kind::Isb`], [`Kind::Dsb`], [`Kind::Dmb`],
    /// [`Kind::EnterX`], [`Kind::LeaveX`]. `None` otherwise.
    pub target: Option<Target>,
    /// Return hint for instructions that are conventionally returns.
    pub ret: Option<ReturnHint>,
    /// The block opened by an `IT` instruction.
    pub it: Option<ItBlock>,
}

impl Insn {
    /// An instruction of `size` bytes with the given kind and condition and
    /// nothing else set.
    #[inline]
    pub(crate) const fn new(size: u8, kind: Kind, cond: Cond) -> Insn {
        Insn {
            size,
            kind,
            cond,
            link: false,
            unpredictable: false,
            target: None,
            ret: None,
            it: None,
        }
    }

    /// Same instruction, marked UNPREDICTABLE when `u` is true.
    #[inline]
    pub(crate) const fn unpred_if(mut self, u: bool) -> Insn {
        self.unpredictable |= u;
        self
    }

    /// Same instruction with a return hint.
    #[inline]
    pub(crate) const fn with_ret(mut self, r: Option<ReturnHint>) -> Insn {
        self.ret = r;
        self
    }

    /// Same instruction with a direct target.
    #[inline]
    pub(crate) const fn with_target(mut self, addr: u32, isa: Isa) -> Insn {
        self.target = Some(Target { addr, isa });
        self
    }

    /// Whether PFT classes this instruction as a waypoint, with DMB and DSB
    /// not treated as waypoints (ETMCCER bit 24 clear). Waypoints are the
    /// direct and indirect branches, exception returns, `ISB`, `ENTERX`
    /// and `LEAVEX`.
    #[inline]
    pub const fn is_waypoint(&self) -> bool {
        matches!(
            self.kind,
            Kind::Branch
                | Kind::CompareBranch
                | Kind::IndirectBranch
                | Kind::ExceptionReturn
                | Kind::Isb
                | Kind::EnterX
                | Kind::LeaveX
        )
    }

    /// Like [`Insn::is_waypoint`], with `DMB` and `DSB` waypoints when
    /// `barriers` is true (the PTM's ETMCCER bit 24).
    #[inline]
    pub const fn is_waypoint_with(&self, barriers: bool) -> bool {
        self.is_waypoint() || (barriers && matches!(self.kind, Kind::Dmb | Kind::Dsb))
    }

    /// Whether the instruction is a branch: it can move the PC anywhere but
    /// to the next instruction (direct, indirect, or exception return).
    #[inline]
    pub const fn is_branch(&self) -> bool {
        matches!(
            self.kind,
            Kind::Branch | Kind::CompareBranch | Kind::IndirectBranch | Kind::ExceptionReturn
        )
    }

    /// Whether the instruction is a direct branch (target known from the
    /// opcode, in [`Insn::target`]).
    #[inline]
    pub const fn is_direct(&self) -> bool {
        matches!(self.kind, Kind::Branch | Kind::CompareBranch)
    }

    /// Whether the instruction is an indirect branch or an exception
    /// return (target known only at run time).
    #[inline]
    pub const fn is_indirect(&self) -> bool {
        matches!(self.kind, Kind::IndirectBranch | Kind::ExceptionReturn)
    }

    /// Whether the instruction is a conventional return (see
    /// [`ReturnHint`]).
    #[inline]
    pub const fn is_return(&self) -> bool {
        self.ret.is_some()
    }

    /// Whether the instruction generates an exception when executed
    /// (`SVC`, `SMC`, `HVC`, `BKPT`, `UDF`, or an undefined encoding).
    #[inline]
    pub const fn is_exception(&self) -> bool {
        matches!(
            self.kind,
            Kind::Svc | Kind::Smc | Kind::Hvc | Kind::Bkpt | Kind::Udf | Kind::Undefined
        )
    }

    /// Whether the instruction is a barrier (`ISB`, `DSB`, `DMB`).
    #[inline]
    pub const fn is_barrier(&self) -> bool {
        matches!(self.kind, Kind::Isb | Kind::Dsb | Kind::Dmb)
    }

    /// Whether the encoding itself makes the instruction conditional: a
    /// condition other than `AL`, or `CBZ`/`CBNZ`. (T32 instructions made
    /// conditional by an IT block are not included; see [`ItState`](crate::ItState).)
    #[inline]
    pub const fn is_conditional(&self) -> bool {
        !matches!(self.cond, Cond::Al) || matches!(self.kind, Kind::CompareBranch)
    }

    /// Address of the next sequential instruction.
    #[inline]
    pub const fn next_addr(&self, addr: u32) -> u32 {
        addr.wrapping_add(self.size as u32)
    }
}
