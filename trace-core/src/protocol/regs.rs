//! The register values that configure a source, and how the ETM-style
//! registers of a snapshot device are read.

use alloc::format;
use alloc::string::{String, ToString};

/// The configuration registers a source's packet parser and decoder need
/// (a protocol without them ignores them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Regs {
    /// ETMCR, the main control register.
    pub etmcr: u32,
    /// ETMCCER, the configuration code extension register.
    pub etmccer: u32,
    /// ETMIDR, the ID register (architecture version, options).
    pub etmidr: u32,
}

/// The trace ID and registers of an ETMv3 or PTM snapshot device:
/// ETMCR and ETMTRACEIDR (7 bits) are needed, ETMCCER and ETMIDR are 0
/// when absent.
///
/// # Errors
///
/// A readable reason when ETMCR or ETMTRACEIDR is missing, or a value is
/// out of range.
pub fn etm_device_regs(reg: &dyn Fn(&str) -> Option<u64>) -> Result<(u8, Regs), String> {
    let reg32 = |n: &str| -> Result<Option<u32>, String> {
        reg(n)
            .map(|v| u32::try_from(v).map_err(|_| format!("{n}={v:#x} is out of range (32 bits)")))
            .transpose()
    };
    let etmcr = reg32("ETMCR")?.ok_or_else(|| "ETMCR missing".to_string())?;
    let id = reg32("ETMTRACEIDR")?.ok_or_else(|| "ETMTRACEIDR missing".to_string())?;
    let id = u8::try_from(id)
        .ok()
        .filter(|&i| i < 0x80)
        .ok_or_else(|| format!("ETMTRACEIDR={id:#x} is out of range (trace IDs are 7 bits)"))?;
    Ok((
        id,
        Regs {
            etmcr,
            etmccer: reg32("ETMCCER")?.unwrap_or(0),
            etmidr: reg32("ETMIDR")?.unwrap_or(0),
        },
    ))
}
