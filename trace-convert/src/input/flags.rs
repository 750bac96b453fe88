//! Describing a capture file with flags instead of a snapshot: the
//! protocol, the layout, and register bits set one by one.

use super::cores::CorePreset;
use super::source::{CaptureSpec, Protocol, SourceRegs, SourceSpec};
use super::{Input, InputError, Kind};
use std::path::Path;
use trace_core::frames::FrameMode;

/// How a capture file's bytes are laid out (`--layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One source's raw bytes.
    #[default]
    Raw,
    /// CoreSight formatter frames from an ETB, ETF or ETR buffer.
    Frames,
    /// CoreSight formatter frames from a TPIU in continuous mode, with
    /// synchronisation patterns.
    Tpiu,
}

/// Settings for the sources of a capture described by flags. Each setting
/// that is `Some` overrides the register bit it stands for; registers start
/// from the typical values of the protocol (ETMv3.5 or PFT 1.1) or from
/// explicit register values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceFlags {
    /// Protocol of the sources (`--protocol`); required for capture files.
    pub protocol: Option<Protocol>,
    /// Layout of the capture (`--layout`).
    pub layout: Layout,
    /// Trace ID: the ID reported for a raw capture, or the only ID decoded
    /// from a formatted one (`--trace-id`).
    pub trace_id: Option<u8>,
    /// The core traced (`--core`): its macrocell's protocol and ID
    /// registers, under the flags that set them, and its profile.
    pub core: Option<&'static CorePreset>,
    /// Trace ID of the ITM/DWT source of a formatted capture whose other
    /// sources are of `protocol` (`--itm-trace-id`).
    pub itm_trace_id: Option<u8>,
    /// ETMCR value (`--etmcr`).
    pub etmcr: Option<u32>,
    /// ETMCCER value (`--etmccer`).
    pub etmccer: Option<u32>,
    /// ETMIDR value (`--etmidr`).
    pub etmidr: Option<u32>,
    /// ETMCR bit 12 (`--cycle-accurate`).
    pub cycle_accurate: Option<bool>,
    /// ETMCR bits 15:14 as a byte count 0, 1, 2 or 4 (`--context-id-bytes`).
    pub context_id_bytes: Option<u8>,
    /// ETMCR bit 28 (`--timestamps`).
    pub timestamps: Option<bool>,
    /// ETMCCER bit 29: 64-bit rather than 48-bit timestamps
    /// (`--timestamp-bits`).
    pub timestamp_64bit: Option<bool>,
    /// ETMCR bit 30 (`--vmid`).
    pub vmid: Option<bool>,
    /// ETMCR bit 29, PTM only (`--return-stack`).
    pub return_stack: Option<bool>,
    /// ETMCR bit 8 (`--branch-broadcast`).
    pub branch_broadcast: Option<bool>,
    /// ETMv3 minor version 0 to 5, in ETMIDR bits 7:4 (`--etm-version`).
    pub etm_minor: Option<u8>,
    /// ETMIDR bit 20: ETMv3.4+ alternative branch address encoding
    /// (`--alt-branch`).
    pub alt_branch: Option<bool>,
    /// Where the files mapped in a perf.data recording are found, by
    /// their absolute path under it (`--symfs`).
    pub symfs: Option<std::path::PathBuf>,
    /// The build-ID cache where the files mapped in a perf.data recording
    /// are also looked for, by build ID (`perf`'s `$PERF_BUILDID_DIR`,
    /// else `~/.debug`, as the command line fills it in); `None`: none.
    pub build_id_cache: Option<std::path::PathBuf>,
    /// For a stream: the snapshot directory whose configuration (sources,
    /// registers, memory images) describes its bytes (`--snapshot`).
    pub snapshot: Option<std::path::PathBuf>,
}

fn set(reg: &mut u32, bit: u32, on: Option<bool>) {
    match on {
        Some(true) => *reg |= 1 << bit,
        Some(false) => *reg &= !(1 << bit),
        None => {}
    }
}

impl SourceFlags {
    /// Whether any register-level setting is given (they may also refine a
    /// snapshot's registers).
    #[must_use]
    pub fn overrides_registers(&self) -> bool {
        self.etmcr.is_some()
            || self.etmccer.is_some()
            || self.etmidr.is_some()
            || self.cycle_accurate.is_some()
            || self.context_id_bytes.is_some()
            || self.timestamps.is_some()
            || self.timestamp_64bit.is_some()
            || self.vmid.is_some()
            || self.return_stack.is_some()
            || self.branch_broadcast.is_some()
            || self.etm_minor.is_some()
            || self.alt_branch.is_some()
    }

    /// Apply the settings to `regs`.
    #[must_use]
    pub fn apply(&self, mut regs: SourceRegs) -> SourceRegs {
        if let Some(v) = self.etmcr {
            regs.etmcr = v;
        }
        if let Some(v) = self.etmccer {
            regs.etmccer = v;
        }
        if let Some(v) = self.etmidr {
            regs.etmidr = v;
        }
        set(&mut regs.etmcr, 12, self.cycle_accurate);
        set(&mut regs.etmcr, 28, self.timestamps);
        set(&mut regs.etmcr, 30, self.vmid);
        set(&mut regs.etmcr, 29, self.return_stack);
        set(&mut regs.etmcr, 8, self.branch_broadcast);
        set(&mut regs.etmccer, 29, self.timestamp_64bit);
        set(&mut regs.etmidr, 20, self.alt_branch);
        if let Some(n) = self.context_id_bytes {
            let field = match n {
                0 => 0,
                1 => 1,
                2 => 2,
                _ => 3,
            };
            regs.etmcr = (regs.etmcr & !(3 << 14)) | (field << 14);
        }
        if let Some(minor) = self.etm_minor {
            regs.etmidr = (regs.etmidr & !0xF0) | (u32::from(minor & 0xF) << 4);
        }
        regs
    }

    /// The registers a source of `protocol` starts from (the protocol's
    /// typical values: ETMv3.5 of a Cortex-A7, PFT 1.1 of a Cortex-A15).
    #[must_use]
    pub fn base_regs(protocol: Protocol) -> SourceRegs {
        protocol.typical_regs()
    }

    /// The capture `path` described by these flags, or `None` when no
    /// protocol is given.
    #[must_use]
    pub fn capture(&self, path: &Path) -> Option<CaptureSpec> {
        let preset = self.core;
        let protocol = self.protocol.or(preset.map(|c| c.protocol))?;
        let base = match preset {
            Some(c) if c.protocol == protocol => c.regs(),
            _ => Self::base_regs(protocol),
        };
        let regs = self.apply(base);
        let core = preset.map(|c| c.core.to_owned());
        let layout = match self.layout {
            Layout::Raw => FrameMode::Raw {
                id: self.trace_id.unwrap_or(0),
            },
            Layout::Frames => FrameMode::Memory,
            Layout::Tpiu => FrameMode::Continuous,
        };
        let (sources, any_id) = match (self.layout, self.trace_id) {
            (Layout::Raw, id) | (_, id @ Some(_)) => {
                let id = id.unwrap_or(0);
                let spec = SourceSpec {
                    name: format!("ID {id:#04x}"),
                    id,
                    protocol,
                    regs,
                    core: core.clone(),
                };
                (vec![spec], None)
            }
            (_, None) => (Vec::new(), Some((protocol, regs))),
        };
        let mut sources = sources;
        if let Some(id) = self.itm_trace_id.filter(|_| protocol != Protocol::Itm) {
            if !matches!(self.layout, Layout::Raw) {
                sources.retain(|s| s.id != id);
                sources.push(SourceSpec {
                    name: format!("ITM {id:#04x}"),
                    id,
                    protocol: Protocol::Itm,
                    regs: Protocol::Itm.typical_regs(),
                    core: core.clone(),
                });
            }
        }
        Some(CaptureSpec {
            path: path.to_path_buf(),
            layout,
            sources,
            any_core: any_id.and(core),
            any_id,
            skipped: Vec::new(),
            within: None,
            range: None,
            task: None,
            stream: None,
        })
    }
}

/// The capture file `path` as an input, described by `flags`.
///
/// # Errors
///
/// [`InputError::NoProtocol`] when `flags` give no protocol.
pub fn open(path: &Path, flags: &SourceFlags) -> Result<Input, InputError> {
    let capture = flags
        .capture(path)
        .ok_or_else(|| InputError::NoProtocol(path.to_path_buf()))?;
    Ok(Input {
        kind: Kind::Capture,
        captures: vec![capture],
        snapshot: None,
        saved: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_land_where_the_registers_have_them() {
        let flags = SourceFlags {
            cycle_accurate: Some(true),
            context_id_bytes: Some(4),
            timestamps: Some(true),
            return_stack: Some(true),
            etm_minor: Some(3),
            alt_branch: Some(true),
            ..SourceFlags::default()
        };
        let r = flags.apply(SourceRegs {
            etmcr: 0,
            etmccer: 0,
            etmidr: 0x410C_F250,
        });
        assert_eq!(r.etmcr, (1 << 12) | (3 << 14) | (1 << 28) | (1 << 29));
        assert_eq!(r.etmidr, 0x411C_F230);
        let off = SourceFlags {
            cycle_accurate: Some(false),
            ..SourceFlags::default()
        };
        assert_eq!(
            off.apply(SourceRegs {
                etmcr: 0x1000,
                etmccer: 0,
                etmidr: 0
            })
            .etmcr,
            0
        );
    }

    /// `--core` gives the protocol, the ID registers under the flags and
    /// the core of every source; `--itm-trace-id` adds an ITM source
    /// beside them.
    #[test]
    fn core_presets_and_the_itm_source() {
        let flags = SourceFlags {
            layout: Layout::Tpiu,
            core: crate::input::cores::core_preset("cortex-m4"),
            etmcr: Some(0x980),
            itm_trace_id: Some(1),
            ..SourceFlags::default()
        };
        let cap = flags
            .capture(Path::new("swo.bin"))
            .expect("the core names a protocol");
        let etm = cap.source(0x0A).expect("any ID");
        assert_eq!(etm.protocol, Protocol::Etmv3);
        assert_eq!(
            (etm.regs.etmcr, etm.regs.etmidr, etm.regs.etmccer),
            (0x980, 0x4114_F250, 0x1854_1800)
        );
        assert_eq!(etm.core.as_deref(), Some("Cortex-M4"));
        let itm = cap.source(1).expect("the ITM source");
        assert_eq!(itm.protocol, Protocol::Itm);
        // An explicit register overrides the preset.
        let flags = SourceFlags {
            etmidr: Some(0x4114_F240),
            ..flags
        };
        let cap = flags.capture(Path::new("swo.bin")).expect("protocol");
        assert_eq!(cap.source(0x0A).map(|s| s.regs.etmidr), Some(0x4114_F240));
    }

    #[test]
    fn formatted_capture_without_id_decodes_every_id() {
        let flags = SourceFlags {
            protocol: Some(Protocol::Ptm),
            layout: Layout::Frames,
            ..SourceFlags::default()
        };
        let cap = flags.capture(Path::new("x.bin")).expect("protocol given");
        assert!(cap.sources.is_empty());
        assert!(cap.any_id.is_some());
        assert!(flags
            .capture(Path::new("x.bin"))
            .and_then(|c| c.source(0x42))
            .is_some());
        assert!(SourceFlags::default().capture(Path::new("x.bin")).is_none());
    }
}
