//! The one list of protocols (`for_each_protocol!`) and the closed
//! types made from it: [`Protocol`], [`SourceConfig`], [`AnyPacket`],
//! [`PacketError`] and [`RegsError`]. Adding a protocol is one line of
//! the list; the `match`es over protocols here, in the demultiplexer
//! and in the decoder are all written from it.

use super::fields::{FieldWriter, TextWriter};
use super::regs::Regs;
use super::seam::PacketProtocol;
use crate::decode::op::Atoms;
use alloc::string::String;
use core::fmt;

/// Hands the list of protocols to the macro `$m`, one entry each:
/// `Name (Variant) = Type;` with its documentation, where `Name` is its
/// [`Protocol`] variant, `Variant` the variant of the types of its
/// values ([`SourceConfig`], [`AnyPacket`], [`PacketError`],
/// [`RegsError`], the demultiplexer's parsers, the decoder's state) and
/// `Type` the type that implements [`PacketProtocol`] for it.
///
/// **This is the registration**: a new protocol is one entry here (and
/// its module beside this one).
macro_rules! for_each_protocol {
    ($m:ident) => {
        $m! {
            /// ETM architecture v3.0 to v3.5 (ARM IHI 0014).
            Etmv3 (Etm) = $crate::protocol::etm::Etmv3;
            /// Program Flow Trace v1.0/v1.1, as emitted by a PTM (ARM IHI 0035).
            Ptm (Ptm) = $crate::protocol::ptm::Ptm;
            /// ITM and DWT trace of ARMv7-M cores (ARM DDI 0403, appendix D4).
            Itm (Itm) = $crate::protocol::itm::Itm;
        }
    };
}
pub(crate) use for_each_protocol;

/// Makes [`Protocol`] and the types of the protocols' values, with the
/// `match`es that hand each value to its protocol.
macro_rules! core_types {
    ($( $(#[$doc:meta])* $name:ident ($var:ident) = $imp:ty; )*) => {
        /// The trace protocol of a source.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Protocol {
            $( $(#[$doc])* $name, )*
        }

        impl Protocol {
            /// Every protocol, in the order of the registry.
            pub const ALL: &'static [Protocol] = &[$(Protocol::$name),*];

            /// Lower-case name used in listings and JSON: `etmv3`, `ptm`.
            #[must_use]
            pub fn name(self) -> &'static str {
                match self { $( Protocol::$name => <$imp>::NAME, )* }
            }

            /// The value of `--protocol` that names it: `etm`, `ptm`.
            #[must_use]
            pub fn flag(self) -> &'static str {
                match self { $( Protocol::$name => <$imp>::FLAG, )* }
            }

            /// Short upper-case label, in the names made for sources: `ETM`, `PTM`.
            #[must_use]
            pub fn label(self) -> &'static str {
                match self { $( Protocol::$name => <$imp>::LABEL, )* }
            }

            /// Its name in sentences: `ETMv3`, `PTM/PFT`.
            #[must_use]
            pub fn title(self) -> &'static str {
                match self { $( Protocol::$name => <$imp>::TITLE, )* }
            }

            /// What it is, in one line.
            #[must_use]
            pub fn about(self) -> &'static str {
                match self { $( Protocol::$name => <$imp>::ABOUT, )* }
            }

            /// Its number in saved-events files.
            #[must_use]
            pub fn code(self) -> u8 {
                match self { $( Protocol::$name => <$imp>::CODE, )* }
            }

            /// Whether its packets trace the instructions executed (its
            /// sources need a memory image).
            #[must_use]
            pub fn traces_instructions(self) -> bool {
                match self { $( Protocol::$name => <$imp>::INSTRUCTIONS, )* }
            }

            /// What its atoms stand for (instruction trace).
            #[must_use]
            pub fn atoms(self) -> Atoms {
                match self { $( Protocol::$name => <$imp>::ATOMS, )* }
            }

            /// Whether a capture can be recognized as this protocol by how
            /// well its bytes parse ([`PacketProtocol::RECOGNIZABLE`]).
            #[must_use]
            pub fn recognizable(self) -> bool {
                match self { $( Protocol::$name => <$imp>::RECOGNIZABLE, )* }
            }

            /// The registers a source described by flags alone starts from.
            #[must_use]
            pub fn typical_regs(self) -> Regs {
                match self { $( Protocol::$name => <$imp>::TYPICAL_REGS, )* }
            }

            /// The trace ID and registers of a snapshot device of this
            /// protocol, from its register values by name.
            ///
            /// # Errors
            ///
            /// A readable reason when a register it needs is missing or
            /// out of range.
            pub fn device_regs(self, reg: &dyn Fn(&str) -> Option<u64>) -> Result<(u8, Regs), String> {
                match self { $( Protocol::$name => <$imp>::device_regs(reg), )* }
            }

            /// The packet parser configuration of a source of this
            /// protocol with registers `regs`.
            ///
            /// # Errors
            ///
            /// [`RegsError`] when the registers do not describe a source
            /// of this protocol.
            pub fn source_config(self, regs: Regs) -> Result<SourceConfig, RegsError> {
                match self {
                    $( Protocol::$name => <$imp>::config(regs)
                        .map(SourceConfig::$var)
                        .map_err(RegsError::$var), )*
                }
            }

            /// Whether a snapshot device `type` is of this protocol.
            fn is_device_type(self, kind: &str) -> bool {
                match self { $( Protocol::$name => <$imp>::is_device_type(kind), )* }
            }
        }

        /// Configuration of one trace source's packet parser.
        /// (`non_exhaustive`: code outside this crate that matches it
        /// keeps compiling when a protocol is registered.)
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum SourceConfig {
            $( $(#[$doc])* $var(<$imp as PacketProtocol>::Config), )*
        }

        impl SourceConfig {
            /// Its protocol.
            #[must_use]
            pub fn protocol(&self) -> Protocol {
                match self { $( SourceConfig::$var(_) => Protocol::$name, )* }
            }

            /// The configuration of a source read from a TPIU stream
            /// ([`PacketProtocol::in_stream`]).
            #[must_use]
            pub fn in_stream(self) -> SourceConfig {
                match self { $( SourceConfig::$var(c) => SourceConfig::$var(<$imp>::in_stream(c)), )* }
            }

            /// Whether the source is cycle-accurate.
            #[must_use]
            pub fn cycle_accurate(&self) -> bool {
                match self { $( SourceConfig::$var(c) => <$imp>::cycle_accurate(c), )* }
            }

            /// Whether the source emits timestamps.
            #[must_use]
            pub fn timestamps(&self) -> bool {
                match self { $( SourceConfig::$var(c) => <$imp>::timestamps(c), )* }
            }

            /// Whether the source keeps a return stack.
            #[must_use]
            pub fn return_stack(&self) -> bool {
                match self { $( SourceConfig::$var(c) => <$imp>::return_stack(c), )* }
            }

            /// Whether DMB and DSB are waypoints for this source with
            /// ETMCCER `etmccer`.
            #[must_use]
            pub fn barrier_waypoints(&self, etmccer: u32) -> bool {
                match self { $( SourceConfig::$var(c) => <$imp>::barrier_waypoints(c, etmccer), )* }
            }
        }

        /// A packet of any protocol (`non_exhaustive`, as
        /// [`SourceConfig`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum AnyPacket {
            $( $(#[$doc])* $var(<$imp as PacketProtocol>::Packet), )*
        }

        impl AnyPacket {
            /// Its protocol.
            #[must_use]
            pub fn protocol(&self) -> Protocol {
                match self { $( AnyPacket::$var(_) => Protocol::$name, )* }
            }

            /// Stable snake_case name of the packet kind.
            #[must_use]
            #[inline]
            pub fn kind(&self) -> &'static str {
                match self { $( AnyPacket::$var(p) => <$imp>::kind(p), )* }
            }

            /// Its fields in the JSON Lines listing (after `offset`, `id`
            /// and `kind`), handed to `w` in the schema's order.
            #[inline(always)]
            pub fn fields<W: FieldWriter>(&self, w: &mut W) {
                match self { $( AnyPacket::$var(p) => <$imp>::fields(p, w), )* }
            }

            /// See [`PacketProtocol::listing_key`]; the keys of different
            /// protocols differ.
            #[must_use]
            #[inline]
            pub fn listing_key(&self) -> Option<u64> {
                match self {
                    $( AnyPacket::$var(p) => <$imp>::listing_key(p)
                        .map(|k| k << 8 | u64::from(<$imp>::CODE)), )*
                }
            }

            /// Its text line (the `Display` form) written with `w`, for
            /// the packets that make up most of a stream; `false` (nothing
            /// written) for the others.
            #[inline(always)]
            pub fn text<W: TextWriter>(&self, w: &mut W) -> bool {
                match self { $( AnyPacket::$var(p) => <$imp>::text(p, w), )* }
            }

            /// A timestamp packet's value and the number of low-order
            /// bits it carried.
            #[must_use]
            #[inline]
            pub fn timestamp(&self) -> Option<(u64, u8)> {
                match self { $( AnyPacket::$var(p) => <$imp>::packet_timestamp(p), )* }
            }

            /// Whether the two are the same but for a timestamp's value.
            #[must_use]
            pub fn same_but_timestamp(&self, other: &AnyPacket) -> bool {
                match (self, other) {
                    $( (AnyPacket::$var(a), AnyPacket::$var(b)) => <$imp>::same_but_timestamp(a, b), )*
                    #[allow(unreachable_patterns)]
                    _ => false,
                }
            }
        }

        impl fmt::Display for AnyPacket {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self { $( AnyPacket::$var(p) => p.fmt(f), )* }
            }
        }

        /// A packet parser's error, of any protocol.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum PacketError {
            $( $(#[$doc])* $var(<$imp as PacketProtocol>::Error), )*
        }

        impl PacketError {
            /// Offset in the capture of the first byte concerned.
            #[must_use]
            pub fn offset(&self) -> u64 {
                match self { $( PacketError::$var(e) => <$imp>::error_offset(e), )* }
            }

            /// Number of bytes skipped (not part of any packet) that this
            /// error accounts for.
            #[must_use]
            pub fn skipped(&self) -> u64 {
                match self { $( PacketError::$var(e) => <$imp>::error_skipped(e), )* }
            }
        }

        impl fmt::Display for PacketError {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self { $( PacketError::$var(e) => e.fmt(f), )* }
            }
        }

        impl core::error::Error for PacketError {}

        /// Registers that do not describe a source of the protocol (e.g.
        /// an ETMIDR of another protocol).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum RegsError {
            $( $(#[$doc])* $var(<$imp as PacketProtocol>::ConfigError), )*
        }

        impl fmt::Display for RegsError {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self { $( RegsError::$var(e) => e.fmt(f), )* }
            }
        }

        impl core::error::Error for RegsError {}
    };
}

for_each_protocol!(core_types);

impl Protocol {
    /// The protocol of a snapshot device `type`, e.g. `ETM3.5`, `PTM1.1`,
    /// `PFT1.0`; `None` for sources this toolkit does not decode (STM,
    /// ETMv4, ...).
    #[must_use]
    pub fn from_device_type(kind: &str) -> Option<Protocol> {
        let k = kind.trim().to_ascii_uppercase();
        Protocol::ALL.iter().copied().find(|p| p.is_device_type(&k))
    }

    /// Every protocol in a sentence: `ETMv3 and PTM/PFT`.
    #[must_use]
    pub fn decoded_list() -> String {
        list(Protocol::ALL.iter().map(|p| p.title()), " and ")
    }

    /// Every `--protocol` value in a sentence: `--protocol etm or
    /// --protocol ptm`.
    #[must_use]
    pub fn flag_list() -> String {
        let flags: alloc::vec::Vec<String> = Protocol::ALL
            .iter()
            .map(|p| alloc::format!("--protocol {}", p.flag()))
            .collect();
        list(flags.iter().map(String::as_str), " or ")
    }

    /// The protocol `--protocol` names (`etm`, `ptm`).
    #[must_use]
    pub fn from_flag(flag: &str) -> Option<Protocol> {
        Protocol::ALL.iter().copied().find(|p| p.flag() == flag)
    }

    /// The protocol of number `code` in a saved-events file.
    #[must_use]
    pub fn from_code(code: u8) -> Option<Protocol> {
        Protocol::ALL.iter().copied().find(|p| p.code() == code)
    }
}

/// `a`, `a LAST b`, `a, b LAST c`.
fn list<'a>(items: impl Iterator<Item = &'a str>, last: &str) -> String {
    let items: alloc::vec::Vec<&str> = items.collect();
    let mut out = String::new();
    for (i, t) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == items.len() { last } else { ", " });
        }
        out.push_str(t);
    }
    out
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Regs {
    /// The packet parser configuration of a source of `protocol` with
    /// these registers.
    ///
    /// # Errors
    ///
    /// [`RegsError`] when the registers do not describe a source of
    /// `protocol`.
    pub fn source_config(self, protocol: Protocol) -> Result<SourceConfig, RegsError> {
        protocol.source_config(self)
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
        assert_eq!(Protocol::from_device_type(" pft1.0 "), Some(Protocol::Ptm));
        assert_eq!(Protocol::from_device_type("ITM"), Some(Protocol::Itm));
        assert_eq!(Protocol::from_device_type("STM"), None);
        assert_eq!(Protocol::from_device_type("ETM4.0"), None);
    }

    /// Names, flags and saved-events codes tell the protocols apart, and
    /// each leads back to its protocol.
    #[test]
    fn names_flags_and_codes_are_unique() {
        for (i, p) in Protocol::ALL.iter().enumerate() {
            for q in &Protocol::ALL[i + 1..] {
                assert_ne!(p.name(), q.name());
                assert_ne!(p.flag(), q.flag());
                assert_ne!(p.code(), q.code());
                assert_ne!(p.label(), q.label());
            }
            assert_eq!(Protocol::from_flag(p.flag()), Some(*p));
            assert_eq!(Protocol::from_code(p.code()), Some(*p));
            assert!(Protocol::decoded_list().contains(p.title()));
            assert!(Protocol::flag_list().contains(&alloc::format!("--protocol {}", p.flag())));
        }
        // Saved-events files written before the registry.
        assert_eq!(Protocol::from_code(0), Some(Protocol::Etmv3));
        assert_eq!(Protocol::from_code(1), Some(Protocol::Ptm));
    }

    /// Lists in sentences.
    #[test]
    fn lists_read_as_sentences() {
        assert_eq!(list(["a"].into_iter(), " and "), "a");
        assert_eq!(list(["a", "b"].into_iter(), " and "), "a and b");
        assert_eq!(list(["a", "b", "c"].into_iter(), " or "), "a, b or c");
    }

    /// The typical registers of each protocol configure a source of it.
    #[test]
    fn typical_registers_configure_their_protocol() {
        for p in Protocol::ALL {
            let cfg = p
                .typical_regs()
                .source_config(*p)
                .expect("typical registers");
            assert_eq!(cfg.protocol(), *p);
        }
    }
}
