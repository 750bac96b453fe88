//! Trace configuration: which optional packet fields the PTM emits.
//!
//! The PFT packet grammar is not self-describing: whether a packet carries a
//! cycle count, how many context ID bytes follow an I-sync header and how wide
//! a timestamp is are all fixed by the PTM's programming. [`Config`] captures
//! exactly those settings, either from raw register values
//! ([`Config::from_regs`]) or through the `with_*` builder methods.

use core::fmt;

/// Version of the Program Flow Trace architecture implemented by the PTM.
///
/// Read from ETMIDR bits \[7:4\] (minor architecture version) when ETMIDR bits
/// \[11:8\] (major version) read 3, the value a PTM reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PftVersion {
    /// PFT v1.0 (for example the Cortex-A9 PTM): timestamps are at most
    /// 48 bits and Gray-coded.
    V1_0,
    /// PFT v1.1 (for example the Cortex-A15 PTM): timestamp size and encoding
    /// come from ETMCCER bits \[29\] and \[28\].
    #[default]
    V1_1,
}

/// Number of context ID bytes traced in I-sync and context ID packets.
///
/// From ETMCR bits \[15:14\]: `b00` none, `b01` one byte, `b10` two bytes,
/// `b11` four bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ContextIdSize {
    /// Context ID tracing disabled (ETMCR\[15:14\] = `b00`).
    #[default]
    None,
    /// Bits \[7:0\] of the context ID are traced (ETMCR\[15:14\] = `b01`).
    One,
    /// Bits \[15:0\] of the context ID are traced (ETMCR\[15:14\] = `b10`).
    Two,
    /// All 32 bits of the context ID are traced (ETMCR\[15:14\] = `b11`).
    Four,
}

impl ContextIdSize {
    /// Number of payload bytes: 0, 1, 2 or 4.
    pub const fn bytes(self) -> u8 {
        match self {
            ContextIdSize::None => 0,
            ContextIdSize::One => 1,
            ContextIdSize::Two => 2,
            ContextIdSize::Four => 4,
        }
    }

    /// Largest context ID value representable with this size.
    pub const fn max_value(self) -> u32 {
        match self {
            ContextIdSize::None => 0,
            ContextIdSize::One => 0xff,
            ContextIdSize::Two => 0xffff,
            ContextIdSize::Four => u32::MAX,
        }
    }

    /// Decodes ETMCR bits \[15:14\] (the argument is the 2-bit field value).
    pub const fn from_field(field: u32) -> ContextIdSize {
        match field & 3 {
            0 => ContextIdSize::None,
            1 => ContextIdSize::One,
            2 => ContextIdSize::Two,
            _ => ContextIdSize::Four,
        }
    }
}

/// Why [`Config::from_regs`] rejected a set of register values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigError {
    /// ETMIDR bits \[11:8\] (major architecture version) are not 3, so the
    /// trace unit is not a PTM (an ETMv3 reports 2, for example).
    NotPtm {
        /// The ETMIDR value that was given.
        etmidr: u32,
    },
    /// The PTM reports a PFT minor version other than 1.0 or 1.1
    /// (ETMIDR bits \[7:4\]).
    UnsupportedVersion {
        /// ETMIDR bits \[11:8\].
        major: u8,
        /// ETMIDR bits \[7:4\].
        minor: u8,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NotPtm { etmidr } => write!(
                f,
                "ETMIDR {etmidr:#010x} does not describe a PTM (major version {} instead of 3)",
                (etmidr >> 8) & 0xf
            ),
            ConfigError::UnsupportedVersion { major, minor } => {
                write!(
                    f,
                    "unsupported PFT version (ETMIDR major {major}, minor {minor})"
                )
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ConfigError {}

/// ETMCR bit 8: branch broadcasting.
const ETMCR_BRANCH_BROADCAST: u32 = 1 << 8;
/// ETMCR bit 12: cycle-accurate tracing.
const ETMCR_CYCLE_ACCURATE: u32 = 1 << 12;
/// ETMCR bits \[15:14\]: context ID size.
const ETMCR_CONTEXT_ID_SHIFT: u32 = 14;
/// ETMCR bit 28: timestamp enable.
const ETMCR_TIMESTAMP: u32 = 1 << 28;
/// ETMCR bit 29: return stack enable.
const ETMCR_RETURN_STACK: u32 = 1 << 29;
/// ETMCR bit 30: VMID tracing enable.
const ETMCR_VMID: u32 = 1 << 30;
/// ETMCCER bit 26: Virtualization Extensions implemented (Hyp mode exists).
const ETMCCER_VIRTUALIZATION: u32 = 1 << 26;
/// ETMCCER bit 28: timestamps are natural binary (0: Gray code), PFT v1.1.
const ETMCCER_TS_BINARY: u32 = 1 << 28;
/// ETMCCER bit 29: timestamps are 64 bits (0: 48 bits), PFT v1.1.
const ETMCCER_TS_64BIT: u32 = 1 << 29;

/// How a PTM was programmed, as far as the packet grammar depends on it.
///
/// Build one from register values with [`Config::from_regs`], or start from
/// [`Config::default()`] (PFT v1.1, every optional feature off, 48-bit binary
/// timestamps) and chain the `with_*` methods:
///
/// ```
/// use ptm_packets::{Config, ContextIdSize};
/// let cfg = Config::default()
///     .with_cycle_accurate(true)
///     .with_context_id_size(ContextIdSize::Four);
/// assert!(cfg.cycle_accurate());
/// assert_eq!(cfg.context_id_size().bytes(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    cycle_accurate: bool,
    context_id_size: ContextIdSize,
    timestamps: bool,
    vmid: bool,
    return_stack: bool,
    branch_broadcast: bool,
    timestamp_64bit: bool,
    timestamp_binary: bool,
    version: PftVersion,
    virtualization: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cycle_accurate: false,
            context_id_size: ContextIdSize::None,
            timestamps: false,
            vmid: false,
            return_stack: false,
            branch_broadcast: false,
            timestamp_64bit: false,
            timestamp_binary: true,
            version: PftVersion::V1_1,
            virtualization: false,
        }
    }
}

impl Config {
    /// Builds a configuration from the PTM's ETMCR (main control), ETMCCER
    /// (configuration code extension) and ETMIDR (ID) register values, as
    /// found in a DS-5 / OpenCSD snapshot's `.ini` files or read from the
    /// device.
    ///
    /// For PFT v1.0 the ETMCCER timestamp bits are ignored: timestamps are
    /// then 48-bit and Gray-coded.
    ///
    /// ```
    /// // Cortex-A15 PTM on TC2, cycle-accurate with timestamps.
    /// let cfg = ptm_packets::Config::from_regs(0x1000_1000, 0x34C0_1AC2, 0x411C_F312).unwrap();
    /// assert!(cfg.cycle_accurate() && cfg.timestamps() && cfg.timestamp_64bit());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::NotPtm`] when ETMIDR's major architecture version
    /// (bits \[11:8\]) is not 3, [`ConfigError::UnsupportedVersion`] when its
    /// minor version (bits \[7:4\]) is neither 0 nor 1.
    pub fn from_regs(etmcr: u32, etmccer: u32, etmidr: u32) -> Result<Config, ConfigError> {
        let major = ((etmidr >> 8) & 0xf) as u8;
        let minor = ((etmidr >> 4) & 0xf) as u8;
        if major != 3 {
            return Err(ConfigError::NotPtm { etmidr });
        }
        let version = match minor {
            0 => PftVersion::V1_0,
            1 => PftVersion::V1_1,
            _ => return Err(ConfigError::UnsupportedVersion { major, minor }),
        };
        let v11 = version == PftVersion::V1_1;
        Ok(Config {
            cycle_accurate: etmcr & ETMCR_CYCLE_ACCURATE != 0,
            context_id_size: ContextIdSize::from_field(etmcr >> ETMCR_CONTEXT_ID_SHIFT),
            timestamps: etmcr & ETMCR_TIMESTAMP != 0,
            vmid: etmcr & ETMCR_VMID != 0,
            return_stack: etmcr & ETMCR_RETURN_STACK != 0,
            branch_broadcast: etmcr & ETMCR_BRANCH_BROADCAST != 0,
            timestamp_64bit: v11 && etmccer & ETMCCER_TS_64BIT != 0,
            timestamp_binary: v11 && etmccer & ETMCCER_TS_BINARY != 0,
            version,
            virtualization: etmccer & ETMCCER_VIRTUALIZATION != 0,
        })
    }

    /// Cycle-accurate tracing (ETMCR bit 12): atoms, branch address packets,
    /// timestamps and non-periodic I-syncs carry a cycle count.
    pub const fn cycle_accurate(&self) -> bool {
        self.cycle_accurate
    }

    /// Context ID bytes traced (ETMCR bits \[15:14\]).
    pub const fn context_id_size(&self) -> ContextIdSize {
        self.context_id_size
    }

    /// Timestamping enabled (ETMCR bit 28). Informational: timestamp packets
    /// parse whatever this says.
    pub const fn timestamps(&self) -> bool {
        self.timestamps
    }

    /// VMID tracing enabled (ETMCR bit 30). Informational: VMID packets
    /// parse whatever this says.
    pub const fn vmid(&self) -> bool {
        self.vmid
    }

    /// Return stack enabled (ETMCR bit 29): the decompressor must keep a
    /// return stack; no effect on the packet grammar.
    pub const fn return_stack(&self) -> bool {
        self.return_stack
    }

    /// Branch broadcasting (ETMCR bit 8): direct branches are traced with
    /// branch address packets too; no effect on the packet grammar.
    pub const fn branch_broadcast(&self) -> bool {
        self.branch_broadcast
    }

    /// Timestamps are 64 bits wide (ETMCCER bit 29, PFT v1.1 only); otherwise
    /// 48 bits.
    pub const fn timestamp_64bit(&self) -> bool {
        self.timestamp_64bit
    }

    /// Timestamp values are natural binary (ETMCCER bit 28, PFT v1.1 only);
    /// otherwise Gray-coded. The parser always reports natural binary values.
    pub const fn timestamp_binary(&self) -> bool {
        self.timestamp_binary
    }

    /// Width of a full timestamp value: 48 or 64.
    pub const fn timestamp_bits(&self) -> u8 {
        if self.timestamp_64bit {
            64
        } else {
            48
        }
    }

    /// PFT architecture version (ETMIDR bits \[7:4\]).
    pub const fn version(&self) -> PftVersion {
        self.version
    }

    /// The processor implements the Virtualization Extensions, so Hyp-mode
    /// bits in I-sync and exception information are meaningful
    /// (ETMCCER bit 26).
    pub const fn virtualization(&self) -> bool {
        self.virtualization
    }

    /// Sets cycle-accurate tracing (ETMCR bit 12).
    #[must_use]
    pub const fn with_cycle_accurate(mut self, on: bool) -> Self {
        self.cycle_accurate = on;
        self
    }

    /// Sets the context ID size (ETMCR bits \[15:14\]).
    #[must_use]
    pub const fn with_context_id_size(mut self, size: ContextIdSize) -> Self {
        self.context_id_size = size;
        self
    }

    /// Sets timestamping (ETMCR bit 28).
    #[must_use]
    pub const fn with_timestamps(mut self, on: bool) -> Self {
        self.timestamps = on;
        self
    }

    /// Sets VMID tracing (ETMCR bit 30).
    #[must_use]
    pub const fn with_vmid(mut self, on: bool) -> Self {
        self.vmid = on;
        self
    }

    /// Sets the return stack (ETMCR bit 29).
    #[must_use]
    pub const fn with_return_stack(mut self, on: bool) -> Self {
        self.return_stack = on;
        self
    }

    /// Sets branch broadcasting (ETMCR bit 8).
    #[must_use]
    pub const fn with_branch_broadcast(mut self, on: bool) -> Self {
        self.branch_broadcast = on;
        self
    }

    /// Sets 64-bit (true) or 48-bit (false) timestamps (ETMCCER bit 29).
    #[must_use]
    pub const fn with_timestamp_64bit(mut self, on: bool) -> Self {
        self.timestamp_64bit = on;
        self
    }

    /// Sets natural binary (true) or Gray-coded (false) timestamps
    /// (ETMCCER bit 28).
    #[must_use]
    pub const fn with_timestamp_binary(mut self, on: bool) -> Self {
        self.timestamp_binary = on;
        self
    }

    /// Sets the PFT version (ETMIDR bits \[7:4\]). Does not change the
    /// timestamp settings.
    #[must_use]
    pub const fn with_version(mut self, version: PftVersion) -> Self {
        self.version = version;
        self
    }

    /// Sets Virtualization Extensions support (ETMCCER bit 26).
    #[must_use]
    pub const fn with_virtualization(mut self, on: bool) -> Self {
        self.virtualization = on;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc2_registers() {
        let cfg = Config::from_regs(0x1000_1000, 0x34C0_1AC2, 0x411C_F312).unwrap();
        assert!(cfg.cycle_accurate());
        assert!(cfg.timestamps());
        assert!(cfg.timestamp_64bit());
        assert!(cfg.timestamp_binary());
        assert!(!cfg.return_stack());
        assert!(!cfg.vmid());
        assert!(!cfg.branch_broadcast());
        assert_eq!(cfg.context_id_size(), ContextIdSize::None);
        assert_eq!(cfg.version(), PftVersion::V1_1);
        // Cortex-A15 implements the Virtualization Extensions (ETMCCER bit 26).
        assert!(cfg.virtualization());
    }

    #[test]
    fn rstk_registers() {
        let cfg = Config::from_regs(0x2000_0400, 0x34C0_1AC2, 0x411C_F312).unwrap();
        assert!(cfg.return_stack());
        assert!(!cfg.cycle_accurate());
        assert!(!cfg.timestamps());
    }

    #[test]
    fn context_id_field() {
        for (field, bytes) in [(0u32, 0u8), (1, 1), (2, 2), (3, 4)] {
            let cfg = Config::from_regs(field << 14, 0, 0x411C_F312).unwrap();
            assert_eq!(cfg.context_id_size().bytes(), bytes);
        }
    }

    #[test]
    fn version_checks() {
        // Cortex-A9 style PFT v1.0: timestamp bits of ETMCCER ignored.
        let cfg = Config::from_regs(0, 0x3000_0000, 0x411C_F300).unwrap();
        assert_eq!(cfg.version(), PftVersion::V1_0);
        assert!(!cfg.timestamp_64bit() && !cfg.timestamp_binary());
        // An ETMv3.5 ID register is rejected.
        assert_eq!(
            Config::from_regs(0, 0, 0x410C_F250),
            Err(ConfigError::NotPtm {
                etmidr: 0x410C_F250
            })
        );
        assert_eq!(
            Config::from_regs(0, 0, 0x411C_F322),
            Err(ConfigError::UnsupportedVersion { major: 3, minor: 2 })
        );
    }

    #[test]
    fn builder_round_trip() {
        let cfg = Config::default()
            .with_vmid(true)
            .with_return_stack(true)
            .with_branch_broadcast(true)
            .with_timestamps(true)
            .with_timestamp_64bit(true)
            .with_timestamp_binary(false)
            .with_version(PftVersion::V1_0)
            .with_virtualization(true);
        assert!(cfg.vmid() && cfg.return_stack() && cfg.branch_broadcast());
        assert!(cfg.timestamps() && cfg.timestamp_64bit() && !cfg.timestamp_binary());
        assert_eq!(cfg.timestamp_bits(), 64);
        assert_eq!(cfg.version(), PftVersion::V1_0);
        assert!(cfg.virtualization());
    }
}
