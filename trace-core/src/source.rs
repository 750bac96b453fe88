//! What a trace source is: its protocol and the register values that
//! configure its packet parser and decoder.

use crate::decode::DecoderConfig;
use crate::demux::SourceConfig;
use core::fmt;

/// The trace protocol of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// ETM architecture v3.0 to v3.5 (ARM IHI 0014).
    Etmv3,
    /// Program Flow Trace v1.0/v1.1, as emitted by a PTM (ARM IHI 0035).
    Ptm,
}

impl Protocol {
    /// The protocol of a snapshot device `type`, e.g. `ETM3.5`, `PTM1.1`,
    /// `PFT1.0`; `None` for sources this toolkit does not decode (ITM, STM,
    /// ETMv4).
    #[must_use]
    pub fn from_device_type(kind: &str) -> Option<Protocol> {
        let k = kind.trim().to_ascii_uppercase();
        if k == "ETM3" || k.starts_with("ETM3.") || k == "ETMV3" || k.starts_with("ETMV3.") {
            Some(Protocol::Etmv3)
        } else if k.starts_with("PTM") || k.starts_with("PFT") {
            Some(Protocol::Ptm)
        } else {
            None
        }
    }

    /// Lower-case name used in listings and JSON: `etmv3` or `ptm`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Etmv3 => "etmv3",
            Protocol::Ptm => "ptm",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The configuration registers a source's packet parser and decoder need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Regs {
    /// ETMCR, the main control register.
    pub etmcr: u32,
    /// ETMCCER, the configuration code extension register.
    pub etmccer: u32,
    /// ETMIDR, the ID register (architecture version, options).
    pub etmidr: u32,
}

/// Registers that do not describe a source of the protocol (e.g. an
/// ETMIDR of the other protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegsError {
    /// From the ETMv3 packet crate.
    Etm(etm_packets::ConfigError),
    /// From the PTM packet crate.
    Ptm(ptm_packets::ConfigError),
}

impl fmt::Display for RegsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegsError::Etm(e) => e.fmt(f),
            RegsError::Ptm(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for RegsError {}

impl Regs {
    /// The packet parser configuration of a source of `protocol` with
    /// these registers.
    ///
    /// # Errors
    ///
    /// [`RegsError`] when the registers do not describe a source of
    /// `protocol`.
    pub fn source_config(self, protocol: Protocol) -> Result<SourceConfig, RegsError> {
        let Regs {
            etmcr,
            etmccer,
            etmidr,
        } = self;
        match protocol {
            Protocol::Etmv3 => etm_packets::Config::from_regs(etmcr, etmccer, etmidr)
                .map(SourceConfig::Etm)
                .map_err(RegsError::Etm),
            Protocol::Ptm => ptm_packets::Config::from_regs(etmcr, etmccer, etmidr)
                .map(SourceConfig::Ptm)
                .map_err(RegsError::Ptm),
        }
    }

    /// The decoder configuration of trace ID `id`, a source of `protocol`
    /// with these registers (DMB/DSB waypoints from ETMCCER bit 24).
    ///
    /// # Errors
    ///
    /// As [`Regs::source_config`].
    pub fn decoder_config(self, protocol: Protocol, id: u8) -> Result<DecoderConfig, RegsError> {
        Ok(DecoderConfig::new(id, &self.source_config(protocol)?).with_etmccer(self.etmccer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_types() {
        assert_eq!(Protocol::from_device_type("ETM3.5"), Some(Protocol::Etmv3));
        assert_eq!(Protocol::from_device_type("ETM3"), Some(Protocol::Etmv3));
        assert_eq!(Protocol::from_device_type("PTM1.1"), Some(Protocol::Ptm));
        assert_eq!(Protocol::from_device_type("PFT1.1"), Some(Protocol::Ptm));
        assert_eq!(Protocol::from_device_type("ITM"), None);
        assert_eq!(Protocol::from_device_type("ETM4.0"), None);
    }
}
