//! One-line human-readable text for packets.

use core::fmt;

use crate::packet::{Atom, Atoms, Branch, ISync, Isa, Packet, Reason};

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::E => "E",
            Self::N => "N",
            Self::W => "W",
        })
    }
}

impl fmt::Display for Atoms {
    /// `P-header WEWN (2 instructions, 2 cycles)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("P-header ")?;
        if self.is_empty() {
            f.write_str("(empty)")?;
        }
        for a in self.iter() {
            write!(f, "{a}")?;
        }
        let s = if self.count == 1 { "" } else { "s" };
        write!(f, " ({} instruction{s}", self.count)?;
        if self.cycles > 0 {
            let s = if self.cycles == 1 { "" } else { "s" };
            write!(f, ", {} cycle{s}", self.cycles)?;
        }
        f.write_str(")")
    }
}

fn security(f: &mut fmt::Formatter<'_>, ns: bool, hyp: bool) -> fmt::Result {
    f.write_str(if ns { " ns" } else { " s" })?;
    if hyp {
        f.write_str(" hyp")?;
    }
    Ok(())
}

impl fmt::Display for ISync {
    /// `I-sync reason=periodic addr=0xc002115c isa=thumb s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "I-sync reason={}", self.reason())?;
        if self.is_data_only() {
            f.write_str(" data-only")?;
        } else {
            write!(f, " addr={:#010x} isa={}", self.address(), self.isa())?;
        }
        security(f, self.ns(), self.hyp())?;
        if let Some(l) = self.lsip() {
            write!(f, " lsip={:#010x} ({} bits)", l.address, l.bits)?;
        }
        if let Some(c) = self.context_id() {
            write!(f, " ctxid={c:#x}")?;
        }
        if let Some(c) = self.cycle_count() {
            write!(f, " cycles={c}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Branch {
    /// `Branch addr=0xc035beb6 (28 bits) isa=thumb s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Branch addr={:#010x} ({} bits) isa={}",
            self.address, self.bits, self.isa
        )?;
        security(f, self.ns, self.hyp)?;
        if let Some(e) = self.exception {
            write!(f, " exception={}", e.number)?;
            if e.cancel {
                f.write_str(" cancel")?;
            }
            if e.resume != 0 {
                write!(f, " resume={}", e.resume)?;
            }
        }
        Ok(())
    }
}

fn data_addr(f: &mut fmt::Formatter<'_>, first: bool, addr: Option<u32>, bits: u8) -> fmt::Result {
    if first {
        f.write_str(" first")?;
    }
    if let Some(a) = addr {
        write!(f, " addr={a:#010x} ({bits} bits)")?;
    }
    Ok(())
}

impl fmt::Display for Packet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ASync => f.write_str("A-sync"),
            Self::ISync(s) => write!(f, "{s}"),
            Self::Atoms(a) => write!(f, "{a}"),
            Self::Branch(b) => write!(f, "{b}"),
            Self::CycleCount(c) => write!(f, "Cycle count {c}"),
            Self::ContextId(c) => write!(f, "Context ID {c:#x}"),
            Self::Vmid(v) => write!(f, "VMID {v:#04x}"),
            Self::Timestamp(t) => {
                write!(
                    f,
                    "Timestamp {:#x} ({}) ({} bits)",
                    t.value, t.value, t.bits
                )?;
                if t.clock_changed {
                    f.write_str(" clock changed")?;
                }
                Ok(())
            }
            Self::ExceptionEntry => f.write_str("Exception entry"),
            Self::ExceptionExit => f.write_str("Exception exit"),
            Self::Trigger => f.write_str("Trigger"),
            Self::Ignore => f.write_str("Ignore"),
            Self::StoreFailed => f.write_str("Store failed"),
            Self::DataSuppressed => f.write_str("Data suppressed"),
            Self::ValueNotTraced(v) => {
                f.write_str("Value not traced")?;
                data_addr(f, v.first, v.address, v.address_bits)
            }
            Self::NormalData(d) => {
                f.write_str("Data")?;
                data_addr(f, d.first, d.address, d.address_bits)?;
                if let Some(v) = d.value {
                    write!(f, " value={v:#x} ({} bytes)", d.size)?;
                }
                Ok(())
            }
            Self::OutOfOrderData(d) => write!(
                f,
                "Out-of-order data tag={} value={:#x} ({} bytes)",
                d.tag, d.value, d.size
            ),
            Self::OutOfOrderPlaceholder(d) => {
                write!(f, "Out-of-order placeholder tag={}", d.tag)?;
                data_addr(f, d.first, d.address, d.address_bits)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::packet::*;

    #[test]
    fn texts() {
        let a = Atoms {
            format: PHeaderFormat::Format1,
            count: 3,
            executed: 0b011,
            cycles: 0,
        };
        assert_eq!(
            Packet::Atoms(a).to_string(),
            "P-header EEN (3 instructions)"
        );
        let s = ISync::new(0xc002_115c, Isa::Thumb, Reason::Periodic);
        assert_eq!(
            Packet::ISync(s).to_string(),
            "I-sync reason=periodic addr=0xc002115c isa=thumb s"
        );
        let b = Branch {
            address: 0xc035_beb6,
            bits: 28,
            known_bits: 32,
            isa: Isa::Thumb,
            ns: true,
            hyp: false,
            exception: Some(ExceptionInfo {
                number: 14,
                cancel: true,
                resume: 0,
            }),
        };
        assert_eq!(
            b.to_string(),
            "Branch addr=0xc035beb6 (28 bits) isa=thumb ns exception=14 cancel"
        );
    }
}
