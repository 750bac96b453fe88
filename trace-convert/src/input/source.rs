//! Trace sources and captures: which bytes hold which source's trace, and
//! the register values that configure each source's packet parser.

use super::snapshot::{BufferFormat, Snapshot};
use std::fmt;
use std::path::PathBuf;
use trace_core::frames::FrameMode;

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

/// The configuration registers a packet parser needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceRegs {
    /// ETMCR, the main control register.
    pub etmcr: u32,
    /// ETMCCER, the configuration code extension register.
    pub etmccer: u32,
    /// ETMIDR, the ID register (architecture version, options).
    pub etmidr: u32,
}

/// One trace source in a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    /// Name (snapshot device name, or `ID 0x..` for flags).
    pub name: String,
    /// Trace ID under which its bytes appear.
    pub id: u8,
    /// Its protocol.
    pub protocol: Protocol,
    /// Its configuration registers.
    pub regs: SourceRegs,
    /// The core it traces, when known (snapshot `[core_trace_sources]`).
    pub core: Option<String>,
}

/// One capture file and the sources it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureSpec {
    /// The capture file.
    pub path: PathBuf,
    /// How its bytes are laid out.
    pub layout: FrameMode,
    /// The sources it holds, in trace ID order.
    pub sources: Vec<SourceSpec>,
    /// For captures described by flags: the protocol and registers used for
    /// any trace ID found that is not in `sources`.
    pub any_id: Option<(Protocol, SourceRegs)>,
    /// Sources the snapshot names that are not decoded, with the reason.
    pub skipped: Vec<(String, String)>,
}

impl CaptureSpec {
    /// The configured source for trace ID `id`, if any.
    #[must_use]
    pub fn source(&self, id: u8) -> Option<SourceSpec> {
        if let Some(s) = self.sources.iter().find(|s| s.id == id) {
            return Some(s.clone());
        }
        self.any_id.map(|(protocol, regs)| SourceSpec {
            name: format!("ID {id:#04x}"),
            id,
            protocol,
            regs,
            core: None,
        })
    }

    /// The captures of a snapshot: one per trace buffer, each with the
    /// sources bound to it.
    #[must_use]
    pub fn from_snapshot(snap: &Snapshot) -> Vec<CaptureSpec> {
        snap.buffers
            .iter()
            .map(|buffer| {
                let mut sources = Vec::new();
                let mut skipped = Vec::new();
                for (source, _) in snap
                    .source_buffers
                    .iter()
                    .filter(|(_, b)| *b == buffer.name)
                {
                    let Some(dev) = snap.device(source) else {
                        skipped.push((source.clone(), "no device file".to_owned()));
                        continue;
                    };
                    let Some(protocol) = Protocol::from_device_type(&dev.kind) else {
                        skipped
                            .push((source.clone(), format!("{} trace is not decoded", dev.kind)));
                        continue;
                    };
                    let reg = |n: &str| dev.reg(n).and_then(|v| u32::try_from(v).ok());
                    let (Some(etmcr), Some(id)) = (reg("ETMCR"), reg("ETMTRACEIDR")) else {
                        skipped.push((source.clone(), "ETMCR or ETMTRACEIDR missing".to_owned()));
                        continue;
                    };
                    sources.push(SourceSpec {
                        name: dev.name.clone(),
                        id: (id & 0x7F) as u8,
                        protocol,
                        regs: SourceRegs {
                            etmcr,
                            etmccer: reg("ETMCCER").unwrap_or(0),
                            etmidr: reg("ETMIDR").unwrap_or(0),
                        },
                        core: snap.core_of(source).map(|c| c.name.clone()),
                    });
                }
                sources.sort_by_key(|s| s.id);
                let layout = match buffer.format {
                    BufferFormat::CoreSight => FrameMode::Memory,
                    BufferFormat::SourceData => FrameMode::Raw {
                        id: sources.first().map_or(0, |s| s.id),
                    },
                };
                CaptureSpec {
                    path: buffer.path.clone(),
                    layout,
                    sources,
                    any_id: None,
                    skipped,
                }
            })
            .collect()
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
