//! Core presets (`--core cortex-m4`): the trace protocol of a core's
//! trace macrocell and the ID and configuration registers a user does
//! not know (ETMIDR, ETMCCER), so that a capture is described by the
//! registers the firmware set and the name of the core. The values and
//! where they come from are tabled in `docs/cortex-m.md` ("Core
//! presets").

use super::source::{Protocol, SourceRegs};

/// One core's trace macrocell, as its technical reference manual gives
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CorePreset {
    /// The value of `--core` (`cortex-m4`).
    pub flag: &'static str,
    /// The core's name as inputs name cores (`Cortex-M4`): the outputs
    /// take its profile (how exceptions are numbered) from it.
    pub core: &'static str,
    /// Its trace protocol.
    pub protocol: Protocol,
    /// ETMIDR: architecture version and options.
    pub etmidr: u32,
    /// ETMCCER: configuration code extension.
    pub etmccer: u32,
}

impl CorePreset {
    /// The registers a capture of this core starts from (ETMCR 0: the
    /// trace options are the user's flags).
    #[must_use]
    pub fn regs(&self) -> SourceRegs {
        SourceRegs {
            etmcr: 0,
            etmccer: self.etmccer,
            etmidr: self.etmidr,
        }
    }

    /// One line saying what was assumed, for standard error.
    #[must_use]
    pub fn assumed(&self) -> String {
        format!(
            "--core {}: {} with ETMIDR {:#010x} and ETMCCER {:#010x}, exceptions numbered as on {}",
            self.flag,
            self.protocol.title(),
            self.etmidr,
            self.etmccer,
            if self.core.starts_with("Cortex-M") {
                "ARMv7-M"
            } else {
                "ARMv7-A/R"
            }
        )
    }
}

const fn preset(
    flag: &'static str,
    core: &'static str,
    protocol: Protocol,
    etmidr: u32,
    etmccer: u32,
) -> CorePreset {
    CorePreset {
        flag,
        core,
        protocol,
        etmidr,
        etmccer,
    }
}

/// Every preset, in the order of `--core`'s values. The decoders read
/// ETMIDR's version (bits 11:4) and bits 18 (32-bit Thumb), 19 (Security
/// Extensions) and 20 (alternative branch encoding), and ETMCCER's bits
/// 22, 28, 29 (ETMv3.5 timestamps: implemented, natural binary, 64-bit),
/// 24 (PTM: DMB/DSB are waypoints) and 26 (virtualization).
pub const CORES: &[CorePreset] = &[
    // Cortex-M3's ETM (its TRM, ARM DDI 0337I, ETMIDR): ETMv3.5,
    // alternative branch encoding, no Security Extensions, 32-bit Thumb;
    // ETMCCER as the Cortex-M4's.
    preset(
        "cortex-m3",
        "Cortex-M3",
        Protocol::Etmv3,
        0x4114_F250,
        0x1854_1800,
    ),
    // ETM-M4: ETMv3.5 (bubble-sort's STM32F407).
    preset(
        "cortex-m4",
        "Cortex-M4",
        Protocol::Etmv3,
        0x4114_F250,
        0x1854_1800,
    ),
    // ETM-R4: ETMv3.3, no Security Extensions.
    preset(
        "cortex-r4",
        "Cortex-R4",
        Protocol::Etmv3,
        0x4104_F230,
        0x0000_09BA,
    ),
    // ETM-R5: ETMv3.3 (the AM243x captures' .ini).
    preset(
        "cortex-r5",
        "Cortex-R5",
        Protocol::Etmv3,
        0x4104_F230,
        0x0000_09BA,
    ),
    // ETM-A5 (its TRM, ARM DDI 0435A: 0x410CF25x): ETMv3.5 with Security
    // Extensions; ETMCCER as the Cortex-A7's.
    preset(
        "cortex-a5",
        "Cortex-A5",
        Protocol::Etmv3,
        0x410C_F250,
        0x3440_08F2,
    ),
    // Cortex-A7's ETM: ETMv3.5 (TC2's snapshot).
    preset(
        "cortex-a7",
        "Cortex-A7",
        Protocol::Etmv3,
        0x410C_F250,
        0x3440_08F2,
    ),
    // Cortex-A8's ETM (its TRM, ARM DDI 0344H): ETMv3.3 with Security
    // Extensions and 32-bit Thumb (before ETMv3.5 no ETMCCER bit is read).
    preset("cortex-a8", "Cortex-A8", Protocol::Etmv3, 0x410C_F230, 0),
    // PTM-A9: PFT 1.0 (ETMIDR as ARM IHI 0035B lays it out: bit 20 reads
    // as one), Security Extensions; ETMCCER: no virtualization, DMB/DSB
    // not waypoints.
    preset("cortex-a9", "Cortex-A9", Protocol::Ptm, 0x411C_F300, 0),
    // Cortex-A15's PTM: PFT 1.1 (TC2's snapshot).
    preset(
        "cortex-a15",
        "Cortex-A15",
        Protocol::Ptm,
        0x411C_F312,
        0x34C0_1AC2,
    ),
];

/// The preset `--core` names.
#[must_use]
pub fn core_preset(flag: &str) -> Option<&'static CorePreset> {
    CORES.iter().find(|c| c.flag.eq_ignore_ascii_case(flag))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every preset configures a parser of its protocol, of the
    /// architecture version its core's macrocell has.
    #[test]
    fn presets_configure_their_protocol() {
        for c in CORES {
            let cfg = c.regs().source_config(c.protocol).expect(c.flag);
            assert_eq!(cfg.protocol(), c.protocol, "{}", c.flag);
            assert_eq!(c.etmidr >> 24, 0x41, "{}: implementer ARM", c.flag);
            let major = (c.etmidr >> 8) & 0xF;
            let minor = (c.etmidr >> 4) & 0xF;
            match c.protocol {
                // PFT: architecture 0x3, minor 0 (1.0) or 1 (1.1).
                Protocol::Ptm => assert_eq!(major, 3, "{}", c.flag),
                // ETMv3.x: major field 2.
                _ => assert_eq!(major, 2, "{}", c.flag),
            }
            assert!(minor <= 5, "{}", c.flag);
        }
    }

    /// The presets of the cores in the real snapshots (TC2's Cortex-A7
    /// and Cortex-A15, the AM243x's Cortex-R5) carry the ETMIDR and
    /// ETMCCER their snapshots' device files give; and the STM32F4's
    /// ETMIDR and ETMCCER (bubble-sort's) are the Cortex-M4's.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn presets_agree_with_the_snapshots() {
        let mut snapshots = Vec::new();
        if let Some(d) = test_support::opencsd_dir() {
            snapshots.push(d.join("TC2"));
        }
        if let Some(d) = test_support::real_dir() {
            snapshots.push(d.join("am243x-r5f/002b37c-freertos"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for dir in snapshots {
            let input =
                crate::input::resolve(&dir, &crate::input::flags::SourceFlags::default()).unwrap();
            for s in input.captures.iter().flat_map(|c| &c.sources) {
                let Some(core) = crate::convert::core_label(&input, s) else {
                    continue;
                };
                // `cpu_0 Cortex-A7`, `Cortex-A15_0`: the type's name.
                let lower = core.to_ascii_lowercase();
                let Some(at) = lower.find("cortex-") else {
                    panic!("no core type in {core}");
                };
                let kind: String = lower[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                let preset = core_preset(&kind).unwrap_or_else(|| panic!("no preset for {core}"));
                assert_eq!(preset.protocol, s.protocol, "{core}");
                assert_eq!(
                    (preset.etmidr, preset.etmccer),
                    (s.regs.etmidr, s.regs.etmccer),
                    "{core}"
                );
                seen.insert(kind);
            }
        }
        eprintln!("checked {seen:?}");
        if test_support::opencsd_dir().is_some() && test_support::real_dir().is_some() {
            assert_eq!(seen.len(), 3, "{seen:?}");
        }
        let m4 = core_preset("cortex-m4").unwrap();
        assert_eq!((m4.etmidr, m4.etmccer), (0x4114_F250, 0x1854_1800));
        assert!(core_preset("Cortex-A15").is_some());
        assert!(core_preset("cortex-m7").is_none());
    }
}
