//! The packets of the ITM and DWT protocol (ARMv7-M Architecture
//! Reference Manual, ARM DDI 0403, appendix D4).

/// One ITM or DWT packet.
///
/// Every variant is a valid packet; malformed input is reported as an
/// [`Error`](crate::Error) instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Packet {
    /// Synchronization: at least 47 zero bits then a one, byte-aligned five
    /// or more `0x00` bytes then `0x80` (all the zeros belong to it).
    Sync,
    /// Overflow (`0x70`): a stimulus port write or a hardware source packet
    /// was lost because the output buffer was full, or the local timestamp
    /// counter overflowed.
    Overflow,
    /// Local timestamp, format 1 or 2: time since the previous local
    /// timestamp.
    LocalTimestamp(LocalTimestamp),
    /// Global timestamp, GTS1 (low-order bits) or GTS2 (high-order bits).
    GlobalTimestamp(GlobalTimestamp),
    /// Extension packet: for the ITM (software) the stimulus port page of
    /// the stimulus packets that follow.
    Extension(Extension),
    /// Instrumentation packet: software wrote a stimulus port.
    Stimulus(Stimulus),
    /// DWT event counter packet (hardware source ID 0): counters that
    /// wrapped.
    EventCounter(EventCounter),
    /// DWT exception trace packet (hardware source ID 1).
    ExceptionTrace(ExceptionTrace),
    /// DWT periodic PC sample packet (hardware source ID 2), full or the
    /// sleep form.
    PcSample(PcSample),
    /// DWT data trace packet (hardware source IDs 8 to 23).
    DataTrace(DataTrace),
}

impl Packet {
    /// The packet's kind in `snake_case` (`sync`, `overflow`,
    /// `local_timestamp`, `global_timestamp`, `extension`, `stimulus`,
    /// `event_counter`, `exception_trace`, `pc_sample`, `data_trace`), as
    /// machine-readable listings name it.
    #[must_use]
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Overflow => "overflow",
            Self::LocalTimestamp(_) => "local_timestamp",
            Self::GlobalTimestamp(_) => "global_timestamp",
            Self::Extension(_) => "extension",
            Self::Stimulus(_) => "stimulus",
            Self::EventCounter(_) => "event_counter",
            Self::ExceptionTrace(_) => "exception_trace",
            Self::PcSample(_) => "pc_sample",
            Self::DataTrace(_) => "data_trace",
        }
    }
}

/// How a local timestamp relates to the packet it times (the TC field of a
/// format 1 local timestamp; format 2 is always [`Synchronous`](Self::Synchronous)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TimestampRelation {
    /// `0b00`: the timestamp is the counter value when the ITM or DWT
    /// packet was generated.
    #[default]
    Synchronous,
    /// `0b01`: the timestamp packet itself was delayed: the value is the
    /// counter when the timestamp packet was generated, the packet it times
    /// happened between the previous timestamp and this one.
    TimestampDelayed,
    /// `0b10`: the ITM or DWT packet was delayed relative to the event it
    /// reports.
    PacketDelayed,
    /// `0b11`: both delays.
    BothDelayed,
}

impl TimestampRelation {
    /// The relation of a TC field value (its two low bits).
    #[must_use]
    pub const fn from_tc(tc: u8) -> Self {
        match tc & 3 {
            0 => Self::Synchronous,
            1 => Self::TimestampDelayed,
            2 => Self::PacketDelayed,
            _ => Self::BothDelayed,
        }
    }

    /// The TC field value.
    #[must_use]
    pub const fn tc(self) -> u8 {
        match self {
            Self::Synchronous => 0,
            Self::TimestampDelayed => 1,
            Self::PacketDelayed => 2,
            Self::BothDelayed => 3,
        }
    }

    /// `sync`, `timestamp_delayed`, `packet_delayed` or `both_delayed`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Synchronous => "sync",
            Self::TimestampDelayed => "timestamp_delayed",
            Self::PacketDelayed => "packet_delayed",
            Self::BothDelayed => "both_delayed",
        }
    }
}

/// A local timestamp: the local timestamp counter's value since the
/// previous local timestamp (a delta), in its clock's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocalTimestamp {
    /// The time since the previous local timestamp (up to 28 bits).
    pub value: u32,
    /// How the timestamp relates to the packet it times.
    pub relation: TimestampRelation,
    /// Payload bytes: 1 to 4 for format 1 (seven value bits each); 0 for
    /// format 2, the one-byte form for values 1 to 6 (header `0b0TTT0000`).
    pub len: u8,
}

impl LocalTimestamp {
    /// The shortest encoding of `value` with `relation`: format 2 for a
    /// synchronous value of 1 to 6, else format 1 with as few payload
    /// bytes as the value needs. Values above 28 bits are cut to 28.
    #[must_use]
    pub const fn new(value: u32, relation: TimestampRelation) -> Self {
        let value = value & 0x0FFF_FFFF;
        let len = if matches!(relation, TimestampRelation::Synchronous) && value >= 1 && value <= 6
        {
            0
        } else {
            continued_len(value as u64, 4)
        };
        Self {
            value,
            relation,
            len,
        }
    }
}

/// Bytes of seven value bits needed for `v`, at least 1, at most `max`.
pub(crate) const fn continued_len(v: u64, max: u8) -> u8 {
    let mut n = 1;
    while n < max && (v >> (7 * n as u32)) != 0 {
        n += 1;
    }
    n
}

/// A global timestamp packet: GTS1 carries bits \[25:0\] of the global
/// timestamp, GTS2 the bits above (\[47:26\] or \[63:26\]).
///
/// A full timestamp is the last GTS2's bits above the last GTS1's; a GTS1
/// of fewer than four payload bytes replaces only the low bits it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GlobalTimestamp {
    /// `false`: GTS1 (header `0x94`); `true`: GTS2 (header `0xB4`).
    pub high: bool,
    /// The timestamp bits the packet carries, from its lowest: for GTS1
    /// bits \[6:0\], \[13:7\], \[20:14\] and \[25:21\] of the timestamp,
    /// as far as `len` goes; for GTS2 the value of bits \[47:26\] or
    /// \[63:26\] (shifted down by 26).
    pub bits: u64,
    /// Payload bytes: 1 to 4 for GTS1; 4 (48-bit timestamps) or 6
    /// (64-bit) for GTS2.
    pub len: u8,
    /// GTS1 with four payload bytes only: the high-order bits (the next
    /// GTS2) changed since the last GTS2 was output.
    pub wrap: bool,
    /// GTS1 with four payload bytes only: the system asserted a clock
    /// change since the last global timestamp.
    pub clock_change: bool,
}

impl GlobalTimestamp {
    /// The GTS1 packet for the low 26 bits of `timestamp`, in full (four
    /// payload bytes) with the given flags.
    #[must_use]
    pub const fn low(timestamp: u64, wrap: bool, clock_change: bool) -> Self {
        Self {
            high: false,
            bits: timestamp & 0x03FF_FFFF,
            len: 4,
            wrap,
            clock_change,
        }
    }

    /// The GTS2 packet for the bits of `timestamp` above bit 25: six payload
    /// bytes when `wide` (64-bit timestamps), else four (48-bit).
    #[must_use]
    pub const fn high(timestamp: u64, wide: bool) -> Self {
        let bits = timestamp >> 26;
        Self {
            high: true,
            bits: if wide { bits } else { bits & 0x3F_FFFF },
            len: if wide { 6 } else { 4 },
            wrap: false,
            clock_change: false,
        }
    }

    /// Number of timestamp bits the packet carries: 7, 14, 21 or 26 for
    /// GTS1, 22 or 38 for GTS2.
    #[must_use]
    pub const fn width(&self) -> u32 {
        match (self.high, self.len) {
            (false, 4) => 26,
            (false, n) => 7 * n as u32,
            (true, 6) => 38,
            (true, _) => 22,
        }
    }
}

/// An extension packet: information about the source of the packets that
/// follow. For the ITM (`hardware == false`) the value is the stimulus
/// port page: the stimulus packets that follow are for ports
/// `32 * page + n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Extension {
    /// The SH bit: the extension is for the hardware source (DWT) rather
    /// than the ITM.
    pub hardware: bool,
    /// The EX value: three bits in the header, seven more per payload byte.
    pub value: u32,
    /// Payload bytes, 0 to 4.
    pub len: u8,
}

impl Extension {
    /// The ITM stimulus port page extension for `page`, in the fewest bytes.
    #[must_use]
    pub const fn page(page: u32) -> Self {
        let value = page & 0x7FFF_FFFF;
        let len = if value < 8 {
            0
        } else {
            continued_len((value >> 3) as u64, 4)
        };
        Self {
            hardware: false,
            value,
            len,
        }
    }
}

/// A write to an ITM stimulus port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stimulus {
    /// The stimulus port: the header's five-bit port number plus 32 times
    /// the page of the last ITM extension packet (0 until one is seen;
    /// bits of the page above 26 are dropped).
    pub port: u32,
    /// The value written (its low `size` bytes).
    pub value: u32,
    /// Size of the write in bytes: 1, 2 or 4.
    pub size: u8,
}

/// Which DWT counters wrapped (event counter packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventCounter {
    /// The payload byte: bit 5 CPI... see the accessors.
    pub flags: u8,
}

impl EventCounter {
    /// DWT_CPICNT wrapped (payload bit 0).
    #[must_use]
    pub const fn cpi(&self) -> bool {
        self.flags & 0x01 != 0
    }
    /// DWT_EXCCNT wrapped (bit 1).
    #[must_use]
    pub const fn exc(&self) -> bool {
        self.flags & 0x02 != 0
    }
    /// DWT_SLEEPCNT wrapped (bit 2).
    #[must_use]
    pub const fn sleep(&self) -> bool {
        self.flags & 0x04 != 0
    }
    /// DWT_LSUCNT wrapped (bit 3).
    #[must_use]
    pub const fn lsu(&self) -> bool {
        self.flags & 0x08 != 0
    }
    /// DWT_FOLDCNT wrapped (bit 4).
    #[must_use]
    pub const fn fold(&self) -> bool {
        self.flags & 0x10 != 0
    }
    /// The cycle counter's POSTCNT tap wrapped (bit 5).
    #[must_use]
    pub const fn cyc(&self) -> bool {
        self.flags & 0x20 != 0
    }
}

/// What the processor did with an exception (the FN field of an exception
/// trace packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExceptionAction {
    /// `0b01`: entered the exception.
    Enter,
    /// `0b10`: exited it.
    Exit,
    /// `0b11`: returned to it (to the exception number given; 0 is thread
    /// mode).
    Return,
}

impl ExceptionAction {
    /// The action of an FN field value; `None` for the reserved `0b00`.
    #[must_use]
    pub const fn from_field(field: u8) -> Option<Self> {
        match field & 3 {
            1 => Some(Self::Enter),
            2 => Some(Self::Exit),
            3 => Some(Self::Return),
            _ => None,
        }
    }

    /// The FN field value.
    #[must_use]
    pub const fn field(self) -> u8 {
        match self {
            Self::Enter => 1,
            Self::Exit => 2,
            Self::Return => 3,
        }
    }

    /// `enter`, `exit` or `return`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Enter => "enter",
            Self::Exit => "exit",
            Self::Return => "return",
        }
    }
}

/// An exception entered, exited or returned to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExceptionTrace {
    /// The ARMv7-M exception number (9 bits): 0 thread mode, 1 Reset,
    /// 2 NMI, 3 HardFault, ..., 11 SVCall, 14 PendSV, 15 SysTick,
    /// 16 + n external interrupt n.
    pub number: u16,
    /// What happened.
    pub action: ExceptionAction,
}

impl ExceptionTrace {
    /// The exception's name: see [`ExceptionName`].
    #[must_use]
    pub const fn name(&self) -> ExceptionName {
        ExceptionName(self.number)
    }
}

/// The name of an ARMv7-M exception number, as its [`Display`](core::fmt::Display)
/// writes it: `Thread`, `Reset`, `NMI`, `HardFault`, `MemManage`,
/// `BusFault`, `UsageFault`, `SVCall`, `DebugMonitor`, `PendSV`,
/// `SysTick`, `IRQ n` (number 16 + n), or `exception n` for the reserved
/// numbers 7 to 10 and 13.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExceptionName(pub u16);

/// A periodic PC sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PcSample {
    /// The sampled PC, or `None` for the one-byte sleep form: the
    /// processor was in a power-saving state (WFI or WFE) when sampled.
    pub pc: Option<u32>,
}

/// A DWT data trace packet: what a watchpoint comparator saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataTrace {
    /// The comparator (0 to 3).
    pub comparator: u8,
    /// What the packet carries.
    pub kind: DataTraceKind,
}

/// The three data trace packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataTraceKind {
    /// PC value packet (ID 8 + 2n): the address of the instruction that
    /// made the access.
    Pc(u32),
    /// Address offset packet (ID 9 + 2n): bits \[15:0\] of the data
    /// address.
    Address(u16),
    /// Data value packet (IDs 16 to 23): the value read or written.
    Value {
        /// The value (its low `size` bytes).
        value: u32,
        /// Size in bytes: 1, 2 or 4.
        size: u8,
        /// Written (`true`) or read.
        write: bool,
    },
}

impl DataTraceKind {
    /// `pc`, `address` or `value`.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Pc(_) => "pc",
            Self::Address(_) => "address",
            Self::Value { .. } => "value",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_is_small() {
        assert!(core::mem::size_of::<Packet>() <= 24);
    }

    #[test]
    fn shortest_forms() {
        let t = LocalTimestamp::new(5, TimestampRelation::Synchronous);
        assert_eq!(t.len, 0);
        let t = LocalTimestamp::new(7, TimestampRelation::Synchronous);
        assert_eq!(t.len, 1);
        let t = LocalTimestamp::new(5, TimestampRelation::PacketDelayed);
        assert_eq!(t.len, 1);
        assert_eq!(
            LocalTimestamp::new(1 << 21, TimestampRelation::Synchronous).len,
            4
        );
        assert_eq!(Extension::page(7).len, 0);
        assert_eq!(Extension::page(8).len, 1);
    }
}
