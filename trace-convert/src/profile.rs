//! The profile of a traced core, which says how its trace numbers
//! exceptions: ETMv3 and PTM on an A or R-profile core (Cortex-A,
//! Cortex-R) give the architecture's exception types (14 is IRQ), ETMv3
//! on an ARMv7-M core (Cortex-M3, Cortex-M4) numbers its exceptions
//! differently (14 is PendSV, and external interrupts have numbers of
//! their own). The outputs name exceptions by it.
//!
//! A source's profile comes from what the input says of its core (the
//! snapshot's core type, a perf.data recording's CPU, a core named for
//! a capture described by flags): see [`Profile::of_source`].

use trace_core::source::Protocol;

/// How a core's trace numbers its exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Profile {
    /// Not known: exceptions are named by number.
    #[default]
    Unknown,
    /// An A or R-profile core (ARMv7-A/R): Cortex-A, Cortex-R.
    ApplicationOrRealTime,
    /// An M-profile core (ARMv7-M): Cortex-M3, Cortex-M4.
    Microcontroller,
}

impl Profile {
    /// The profile of a core named `core` as inputs name cores
    /// (`Cortex-M4`, `cpu_0 Cortex-R5`, `Cortex-A15_0`): the letter after
    /// `Cortex-`; `Unknown` for any other name.
    #[must_use]
    pub fn of_core(core: &str) -> Profile {
        let lower = core.to_ascii_lowercase();
        match lower
            .find("cortex-")
            .and_then(|i| lower[i + "cortex-".len()..].chars().next())
        {
            Some('a' | 'r') => Profile::ApplicationOrRealTime,
            Some('m') => Profile::Microcontroller,
            _ => Profile::Unknown,
        }
    }

    /// The profile of a source of `protocol` tracing the core `core` (as
    /// the input names it, when it does): PTM traces A-profile cores
    /// only; ETMv3 the profile of its core, when known.
    #[must_use]
    pub fn of_source(protocol: Protocol, core: Option<&str>) -> Profile {
        match (core.map(Profile::of_core), protocol) {
            (Some(p), _) if p != Profile::Unknown => p,
            (_, Protocol::Ptm) => Profile::ApplicationOrRealTime,
            _ => Profile::Unknown,
        }
    }

    /// The name of exception `number` as this profile's trace numbers it
    /// (the exception field of a branch address packet): `IRQ`, `SVC`,
    /// `Data abort`, `Debug halt`; on M-profile `SysTick`, `PendSV`,
    /// `IRQ 9`. A number the profile has no name for, or any number of an
    /// unknown profile, is `exception 14`.
    #[must_use]
    pub fn exception_name(self, number: u16) -> String {
        let name = match self {
            Profile::ApplicationOrRealTime => ar_exception(number),
            Profile::Microcontroller => return m_exception(number),
            Profile::Unknown => None,
        };
        name.map_or_else(|| format!("exception {number}"), str::to_owned)
    }
}

/// ETMv3 and PFT on ARMv7-A/R: the exception types.
fn ar_exception(number: u16) -> Option<&'static str> {
    Some(match number {
        1 => "Debug halt",
        2 => "Secure monitor call",
        3 => "Hyp trap",
        4 => "Asynchronous data abort",
        8 => "Reset",
        9 => "Undefined instruction",
        10 => "SVC",
        11 => "Prefetch abort",
        12 => "Data abort",
        13 => "Generic exception",
        14 => "IRQ",
        15 => "FIQ",
        _ => return None,
    })
}

/// ETMv3 on ARMv7-M: interrupts 0 to 7 have the numbers 8 and 1 to 7, the
/// system exceptions those below 24, and interrupts 8 to 495 the numbers
/// from 24 (0x18) to 511.
fn m_exception(number: u16) -> String {
    let fixed = match number {
        1..=7 => return format!("IRQ {number}"),
        8 => "IRQ 0",
        9 => "UsageFault",
        10 => "NMI",
        11 => "SVC",
        12 => "DebugMonitor",
        13 => "MemManage",
        14 => "PendSV",
        15 => "SysTick",
        17 => "Reset",
        19 => "HardFault",
        21 => "BusFault",
        24..=511 => return format!("IRQ {}", number - 16),
        _ => return format!("exception {number}"),
    };
    fixed.to_owned()
}

/// The profile of each trace ID's core, for naming exceptions in
/// listings; a trace ID without one is [`Profile::Unknown`].
#[derive(Debug, Clone)]
pub struct Profiles(Box<[Profile; 256]>);

impl Default for Profiles {
    fn default() -> Self {
        Profiles(Box::new([Profile::Unknown; 256]))
    }
}

impl Profiles {
    /// The profiles of the sources `names` (as [`crate::convert::source_names`]
    /// gives them).
    #[must_use]
    pub fn of_sources(names: &[crate::sinks::SourceName]) -> Profiles {
        let mut p = Profiles::default();
        for n in names {
            p.0[usize::from(n.id)] = n.profile;
        }
        p
    }

    /// The profile of trace ID `id`'s core.
    #[must_use]
    pub fn of(&self, id: u8) -> Profile {
        self.0[usize::from(id)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_give_their_profiles() {
        for (core, want) in [
            ("Cortex-M4", Profile::Microcontroller),
            ("cpu_0 Cortex-M3", Profile::Microcontroller),
            ("cpu_0 Cortex-R5", Profile::ApplicationOrRealTime),
            ("Cortex-A15_0", Profile::ApplicationOrRealTime),
            ("cpu3", Profile::Unknown),
            ("", Profile::Unknown),
        ] {
            assert_eq!(Profile::of_core(core), want, "{core}");
        }
        assert_eq!(
            Profile::of_source(Protocol::Ptm, None),
            Profile::ApplicationOrRealTime
        );
        assert_eq!(Profile::of_source(Protocol::Etmv3, None), Profile::Unknown);
        assert_eq!(
            Profile::of_source(Protocol::Etmv3, Some("cpu_0 Cortex-M4")),
            Profile::Microcontroller
        );
    }

    #[test]
    fn exceptions_are_named_by_profile() {
        let ar = Profile::ApplicationOrRealTime;
        let m = Profile::Microcontroller;
        // The PFT exception encoding (ptm-packets names it too).
        for n in [1u16, 10, 12, 14, 15] {
            assert_eq!(
                ar.exception_name(n).to_ascii_lowercase().replace(' ', "-"),
                ptm_packets::exception_name(n),
                "{n}"
            );
        }
        assert_eq!(ar.exception_name(14), "IRQ");
        assert_eq!(ar.exception_name(6), "exception 6");
        assert_eq!(m.exception_name(14), "PendSV");
        assert_eq!(m.exception_name(15), "SysTick");
        assert_eq!(m.exception_name(8), "IRQ 0");
        assert_eq!(m.exception_name(3), "IRQ 3");
        assert_eq!(m.exception_name(24), "IRQ 8");
        assert_eq!(m.exception_name(511), "IRQ 495");
        assert_eq!(m.exception_name(16), "exception 16");
        assert_eq!(Profile::Unknown.exception_name(14), "exception 14");
    }
}
