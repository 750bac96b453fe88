//! Trace configuration: which packet forms the ETM produces.
//!
//! The ETMv3 packet grammar is not self-describing: the number of context
//! ID bytes, whether data addresses and values follow a data header, the
//! meaning of a P-header byte and the size of a timestamp all depend on how
//! the ETM was programmed. [`Config`] holds those facts. Build it from the
//! register values a capture tool saved ([`Config::from_regs`]) or by hand
//! with [`Config::new`] and the `with_*` methods.

use core::fmt;

/// ETM architecture version, ETMv3.0 to ETMv3.5.
///
/// Taken from ETMIDR bits \[11:8\] (major, must read 2 for ETMv3) and
/// bits \[7:4\] (minor, 0 to 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EtmVersion {
    /// ETMv3.0: cycle-accurate format 0 P-header valid.
    V3_0,
    /// ETMv3.1.
    V3_1,
    /// ETMv3.2.
    V3_2,
    /// ETMv3.3: format 4 P-header, AltISA bit (ThumbEE).
    V3_3,
    /// ETMv3.4: alternative branch address encoding may be implemented.
    V3_4,
    /// ETMv3.5: timestamps, VMID, Hyp bit.
    V3_5,
}

impl EtmVersion {
    /// The minor version number (0 for ETMv3.0 … 5 for ETMv3.5).
    #[must_use]
    pub const fn minor(self) -> u8 {
        match self {
            Self::V3_0 => 0,
            Self::V3_1 => 1,
            Self::V3_2 => 2,
            Self::V3_3 => 3,
            Self::V3_4 => 4,
            Self::V3_5 => 5,
        }
    }

    /// The version for a minor number 0..=5.
    #[must_use]
    pub const fn from_minor(minor: u8) -> Option<Self> {
        Some(match minor {
            0 => Self::V3_0,
            1 => Self::V3_1,
            2 => Self::V3_2,
            3 => Self::V3_3,
            4 => Self::V3_4,
            5 => Self::V3_5,
            _ => return None,
        })
    }
}

impl fmt::Display for EtmVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ETMv3.{}", self.minor())
    }
}

/// Number of context ID bytes in I-sync and context ID packets
/// (ETMCR bits \[15:14\]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ContextIdSize {
    /// `0b00`: no context ID is traced.
    #[default]
    None,
    /// `0b01`: one byte, context ID bits \[7:0\].
    One,
    /// `0b10`: two bytes, context ID bits \[15:0\].
    Two,
    /// `0b11`: four bytes, the whole context ID.
    Four,
}

impl ContextIdSize {
    /// Number of bytes this size puts in a packet.
    #[must_use]
    pub const fn bytes(self) -> usize {
        match self {
            Self::None => 0,
            Self::One => 1,
            Self::Two => 2,
            Self::Four => 4,
        }
    }

    /// Decodes the two-bit ETMCR\[15:14\] field.
    #[must_use]
    pub const fn from_field(field: u32) -> Self {
        match field & 3 {
            0 => Self::None,
            1 => Self::One,
            2 => Self::Two,
            _ => Self::Four,
        }
    }
}

/// Error from [`Config::from_regs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// ETMIDR does not describe an ETMv3 (major version field \[11:8\] must
    /// read 2; PTM reads 3).
    NotEtmV3 {
        /// ETMIDR bits \[11:8\].
        major: u8,
    },
    /// ETMIDR minor version (bits \[7:4\]) is above 5.
    UnknownMinorVersion {
        /// ETMIDR bits \[7:4\].
        minor: u8,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotEtmV3 { major } => write!(
                f,
                "ETMIDR major version field is {major}, not 2 (ETMv3); this is not an ETMv3 trace source"
            ),
            Self::UnknownMinorVersion { minor } => {
                write!(f, "ETMIDR minor version {minor} is not 0..=5 (ETMv3.0 to ETMv3.5)")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ConfigError {}

/// How the ETM was programmed, as far as the packet grammar depends on it.
///
/// Every field records the register bit it comes from; see the accessor
/// documentation. [`Config::new`] gives an ETMv3.5 with everything off
/// (non cycle-accurate, no context ID, no data trace, 64-bit natural binary
/// timestamps if any appear).
///
/// There is no Jazelle or return-stack setting: Jazelle (and ThumbEE)
/// state comes from the trace itself (I-sync J/AltISA bits, the fifth byte
/// of branch addresses, exception information bytes), and ETMv3 has no
/// return stack (that is PTM's ETMCR\[29\]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    version: EtmVersion,
    cycle_accurate: bool,
    context_id: ContextIdSize,
    data_address: bool,
    data_value: bool,
    data_only: bool,
    branch_broadcast: bool,
    timestamps: bool,
    timestamp_64bit: bool,
    timestamp_gray: bool,
    vmid: bool,
    alt_branch: bool,
    security_extensions: bool,
    thumb2: bool,
    virtualization: bool,
    isync_sync: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

const fn bit(v: u32, n: u32) -> bool {
    (v >> n) & 1 != 0
}

impl Config {
    /// ETMv3.5, non cycle-accurate, no context ID, no data trace, no
    /// timestamps (64-bit natural binary if any are parsed), original
    /// branch encoding.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            version: EtmVersion::V3_5,
            cycle_accurate: false,
            context_id: ContextIdSize::None,
            data_address: false,
            data_value: false,
            data_only: false,
            branch_broadcast: false,
            timestamps: false,
            timestamp_64bit: true,
            timestamp_gray: false,
            vmid: false,
            alt_branch: false,
            security_extensions: false,
            thumb2: false,
            virtualization: false,
            isync_sync: false,
        }
    }

    /// Builds a configuration from the ETM's main control register
    /// (ETMCR, 0x000), configuration code extension register (ETMCCER,
    /// 0x07A; pass 0 for ETMv3.0, which has none) and ID register
    /// (ETMIDR, 0x079).
    ///
    /// Bits used: ETMIDR\[11:8\] major (must be 2), \[7:4\] minor,
    /// \[20\] alternative branch encoding, \[19\] Security Extensions,
    /// \[18\] 32-bit Thumb traced as one instruction; ETMCR\[3\] data
    /// address, \[2\] data value, \[8\] branch output, \[12\] cycle-accurate,
    /// \[15:14\] context ID size, \[20\] data-only mode, \[28\] timestamp
    /// enable, \[30\] VMID enable; ETMCCER\[22\] timestamping implemented,
    /// \[26\] Virtualization Extensions, \[28\] timestamp encoding (1 =
    /// natural binary, 0 = Gray), \[29\] timestamp size (1 = 64 bits,
    /// 0 = 48 bits).
    ///
    /// # Errors
    ///
    /// [`ConfigError::NotEtmV3`] if ETMIDR's major field is not 2 (a PTM
    /// reads 3), [`ConfigError::UnknownMinorVersion`] if the minor field
    /// is above 5.
    ///
    /// ```
    /// use etm_packets::{Config, EtmVersion};
    /// // TC2 snapshot, Cortex-A7 ETM.
    /// let cfg = Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250).unwrap();
    /// assert_eq!(cfg.version(), EtmVersion::V3_5);
    /// assert!(cfg.cycle_accurate());
    /// assert!(cfg.timestamps());
    /// ```
    pub fn from_regs(etmcr: u32, etmccer: u32, etmidr: u32) -> Result<Self, ConfigError> {
        let major = ((etmidr >> 8) & 0xF) as u8;
        if major != 2 {
            return Err(ConfigError::NotEtmV3 { major });
        }
        let minor = ((etmidr >> 4) & 0xF) as u8;
        let version =
            EtmVersion::from_minor(minor).ok_or(ConfigError::UnknownMinorVersion { minor })?;
        // ETMCCER only exists from ETMv3.1 and its timestamp fields only
        // from ETMv3.5.
        let ccer = if version >= EtmVersion::V3_1 {
            etmccer
        } else {
            0
        };
        let v35 = version >= EtmVersion::V3_5;
        Ok(Self {
            version,
            cycle_accurate: bit(etmcr, 12),
            context_id: ContextIdSize::from_field(etmcr >> 14),
            data_address: bit(etmcr, 3),
            data_value: bit(etmcr, 2),
            data_only: bit(etmcr, 20),
            branch_broadcast: bit(etmcr, 8),
            timestamps: v35 && bit(etmcr, 28) && bit(ccer, 22),
            timestamp_64bit: v35 && bit(ccer, 29),
            timestamp_gray: v35 && !bit(ccer, 28),
            vmid: v35 && bit(etmcr, 30),
            alt_branch: version >= EtmVersion::V3_4 && bit(etmidr, 20),
            security_extensions: bit(etmidr, 19),
            thumb2: bit(etmidr, 18),
            virtualization: v35 && bit(ccer, 26),
            isync_sync: false,
        })
    }

    /// ETM architecture version (ETMIDR\[7:4\]).
    #[must_use]
    pub const fn version(&self) -> EtmVersion {
        self.version
    }
    /// Cycle-accurate tracing (ETMCR\[12\]): selects the cycle-accurate
    /// P-header encodings.
    #[must_use]
    pub const fn cycle_accurate(&self) -> bool {
        self.cycle_accurate
    }
    /// Context ID size (ETMCR\[15:14\]).
    #[must_use]
    pub const fn context_id_size(&self) -> ContextIdSize {
        self.context_id
    }
    /// Data address tracing (ETMCR\[3\], the "address" half of the data
    /// access field \[3:2\]): data headers with A=1 carry an address.
    #[must_use]
    pub const fn data_address(&self) -> bool {
        self.data_address
    }
    /// Data value tracing (ETMCR\[2\]): normal data packets carry a value.
    #[must_use]
    pub const fn data_value(&self) -> bool {
        self.data_value
    }
    /// Data-only mode (ETMCR\[20\]): I-sync packets take the data-only form.
    #[must_use]
    pub const fn data_only(&self) -> bool {
        self.data_only
    }
    /// Branch output / broadcast (ETMCR\[8\]): every branch gets a branch
    /// address packet. Does not change the grammar; recorded for decoders.
    #[must_use]
    pub const fn branch_broadcast(&self) -> bool {
        self.branch_broadcast
    }
    /// Timestamps enabled (ETMCR\[28\] and implemented per ETMCCER\[22\],
    /// ETMv3.5 only). Timestamp headers are parsed either way.
    #[must_use]
    pub const fn timestamps(&self) -> bool {
        self.timestamps
    }
    /// Timestamps are up to 64 bits (ETMCCER\[29\] = 1) rather than 48.
    #[must_use]
    pub const fn timestamp_64bit(&self) -> bool {
        self.timestamp_64bit
    }
    /// Timestamps are Gray coded (ETMCCER\[28\] = 0) rather than natural
    /// binary. The parser reports the binary value either way.
    #[must_use]
    pub const fn timestamp_gray(&self) -> bool {
        self.timestamp_gray
    }
    /// VMID tracing enabled (ETMCR\[30\], ETMv3.5).
    #[must_use]
    pub const fn vmid(&self) -> bool {
        self.vmid
    }
    /// Alternative branch address encoding (ETMIDR\[20\], ETMv3.4 and
    /// later): the last byte of a 2 to 4 byte branch address carries an
    /// "exception information follows" bit instead of an address bit.
    #[must_use]
    pub const fn alt_branch(&self) -> bool {
        self.alt_branch
    }
    /// The processor implements the Security Extensions (ETMIDR\[19\]);
    /// otherwise the NS bits read 0.
    #[must_use]
    pub const fn security_extensions(&self) -> bool {
        self.security_extensions
    }
    /// 32-bit Thumb instructions are traced as one instruction
    /// (ETMIDR\[18\]). Does not change the grammar.
    #[must_use]
    pub const fn thumb2(&self) -> bool {
        self.thumb2
    }
    /// The processor implements the Virtualization Extensions
    /// (ETMCCER\[26\], ETMv3.5): Hyp bits may be set.
    #[must_use]
    pub const fn virtualization(&self) -> bool {
        self.virtualization
    }

    /// Sets the architecture version.
    #[must_use]
    pub const fn with_version(mut self, v: EtmVersion) -> Self {
        self.version = v;
        self
    }
    /// Sets cycle-accurate mode (ETMCR\[12\]).
    #[must_use]
    pub const fn with_cycle_accurate(mut self, on: bool) -> Self {
        self.cycle_accurate = on;
        self
    }
    /// Sets the context ID size (ETMCR\[15:14\]).
    #[must_use]
    pub const fn with_context_id_size(mut self, size: ContextIdSize) -> Self {
        self.context_id = size;
        self
    }
    /// Sets data address tracing (ETMCR\[3\]).
    #[must_use]
    pub const fn with_data_address(mut self, on: bool) -> Self {
        self.data_address = on;
        self
    }
    /// Sets data value tracing (ETMCR\[2\]).
    #[must_use]
    pub const fn with_data_value(mut self, on: bool) -> Self {
        self.data_value = on;
        self
    }
    /// Sets data-only mode (ETMCR\[20\]).
    #[must_use]
    pub const fn with_data_only(mut self, on: bool) -> Self {
        self.data_only = on;
        self
    }
    /// Sets branch output (ETMCR\[8\]).
    #[must_use]
    pub const fn with_branch_broadcast(mut self, on: bool) -> Self {
        self.branch_broadcast = on;
        self
    }
    /// Sets timestamps enabled (ETMCR\[28\]).
    #[must_use]
    pub const fn with_timestamps(mut self, on: bool) -> Self {
        self.timestamps = on;
        self
    }
    /// Sets 64-bit (true) or 48-bit (false) timestamps (ETMCCER\[29\]).
    #[must_use]
    pub const fn with_timestamp_64bit(mut self, on: bool) -> Self {
        self.timestamp_64bit = on;
        self
    }
    /// Sets Gray-coded timestamps (ETMCCER\[28\] = 0).
    #[must_use]
    pub const fn with_timestamp_gray(mut self, on: bool) -> Self {
        self.timestamp_gray = on;
        self
    }
    /// Sets VMID tracing (ETMCR\[30\]).
    #[must_use]
    pub const fn with_vmid(mut self, on: bool) -> Self {
        self.vmid = on;
        self
    }
    /// Sets the alternative branch address encoding (ETMIDR\[20\]).
    #[must_use]
    pub const fn with_alt_branch(mut self, on: bool) -> Self {
        self.alt_branch = on;
        self
    }
    /// Sets Security Extensions support (ETMIDR\[19\]).
    #[must_use]
    pub const fn with_security_extensions(mut self, on: bool) -> Self {
        self.security_extensions = on;
        self
    }
    /// Sets 32-bit Thumb single-instruction tracing (ETMIDR\[18\]).
    #[must_use]
    pub const fn with_thumb2(mut self, on: bool) -> Self {
        self.thumb2 = on;
        self
    }
    /// Sets Virtualization Extensions support (ETMCCER\[26\]).
    #[must_use]
    pub const fn with_virtualization(mut self, on: bool) -> Self {
        self.virtualization = on;
        self
    }

    /// Whether the parser, while unsynchronized, also synchronizes at an
    /// I-sync packet (not a register setting; off by default, as in
    /// OpenCSD, which waits for an A-sync). See
    /// [`with_isync_sync`](Self::with_isync_sync).
    #[must_use]
    pub const fn isync_sync(&self) -> bool {
        self.isync_sync
    }

    /// Also synchronize at an I-sync before the stream's first
    /// synchronization: for a capture whose A-sync was cut off (a stream
    /// received from a trace port starts anywhere), decoding then starts at
    /// the first I-sync instead of the next A-sync, which may come a long
    /// way later. Synchronization lost later (to damage) comes back at an
    /// A-sync only, as without this option: the values compressed against
    /// what the lost packets said (timestamps, data addresses) are known
    /// again only after it.
    ///
    /// An I-sync candidate in unsynchronized bytes is taken only when its
    /// fields are valid for this configuration (an I-sync header; no
    /// Jazelle state; the NS, AltISA and Hyp bits only where the Security
    /// Extensions, ETMv3.3 and the Virtualization Extensions have them;
    /// bit 0 of the information byte set, as the ETMs seen write it; a
    /// word-aligned ARM address; a valid LSiP address, never with the
    /// periodic reason) and the bytes after it, up to 24 bytes from its
    /// header, parse as valid packets (up to an A-sync). Otherwise its
    /// header byte is skipped as before. A candidate in the last 23 bytes
    /// of the input is not confirmed.
    /// The parser's [`Stats::isync_syncs`](crate::Stats::isync_syncs)
    /// counts the synchronizations made so.
    #[must_use]
    pub const fn with_isync_sync(mut self, on: bool) -> Self {
        self.isync_sync = on;
        self
    }

    /// Largest timestamp value width in bits (48 or 64).
    #[must_use]
    pub const fn timestamp_bits(&self) -> u32 {
        if self.timestamp_64bit {
            64
        } else {
            48
        }
    }

    /// Versions from ETMv3.3 decode the AltISA bit (ThumbEE state).
    pub(crate) fn has_alt_isa(&self) -> bool {
        self.version >= EtmVersion::V3_3
    }

    /// ETMv3.5 decodes the Hyp bits.
    pub(crate) fn has_hyp(&self) -> bool {
        self.version >= EtmVersion::V3_5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc2_registers() {
        let c = Config::from_regs(0x1000_1860, 0x3440_08F2, 0x410C_F250).expect("valid");
        assert_eq!(c.version(), EtmVersion::V3_5);
        assert!(c.cycle_accurate());
        assert!(c.timestamps());
        assert!(c.timestamp_64bit());
        assert!(!c.timestamp_gray());
        assert_eq!(c.context_id_size(), ContextIdSize::None);
        assert!(!c.data_address() && !c.data_value() && !c.data_only());
        assert!(!c.vmid());
        assert!(!c.alt_branch());
        assert!(c.security_extensions());
        assert!(c.thumb2());
        assert!(c.virtualization());
    }

    #[test]
    fn rejects_ptm_and_bad_minor() {
        // TC2's PTM (Cortex-A15) ETMIDR.
        assert_eq!(
            Config::from_regs(0x1000_1000, 0x34C0_1AC2, 0x411C_F312),
            Err(ConfigError::NotEtmV3 { major: 3 })
        );
        assert_eq!(
            Config::from_regs(0, 0, 0x4100_0260),
            Err(ConfigError::UnknownMinorVersion { minor: 6 })
        );
    }

    #[test]
    fn builder() {
        let c = Config::new()
            .with_version(EtmVersion::V3_3)
            .with_context_id_size(ContextIdSize::Two)
            .with_data_address(true);
        assert_eq!(c.version(), EtmVersion::V3_3);
        assert_eq!(c.context_id_size().bytes(), 2);
        assert!(c.data_address());
    }

    #[test]
    fn fields_from_etmcr() {
        let idr = 0x4100_4230; // ETMv3.3, alt branch bit ignored before 3.4
        let c = Config::from_regs(0x4010_C00C | (1 << 20) | (1 << 8), 0, idr | (1 << 20))
            .expect("valid");
        assert_eq!(c.version(), EtmVersion::V3_3);
        assert_eq!(c.context_id_size(), ContextIdSize::Four);
        assert!(c.data_address() && c.data_value() && c.data_only() && c.branch_broadcast());
        assert!(!c.vmid(), "VMID is ETMv3.5 only");
        assert!(!c.alt_branch(), "alternative encoding is ETMv3.4 and later");
    }
}
