//! One-line human-readable text for packets.

use core::fmt;

use crate::packet::{
    DataTrace, DataTraceKind, EventCounter, ExceptionName, ExceptionTrace, Extension,
    GlobalTimestamp, LocalTimestamp, Packet, PcSample, Stimulus,
};

impl fmt::Display for ExceptionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.0 {
            0 => "Thread",
            1 => "Reset",
            2 => "NMI",
            3 => "HardFault",
            4 => "MemManage",
            5 => "BusFault",
            6 => "UsageFault",
            11 => "SVCall",
            12 => "DebugMonitor",
            14 => "PendSV",
            15 => "SysTick",
            n @ 16.. => return write!(f, "IRQ {}", n - 16),
            n => return write!(f, "exception {n}"),
        };
        f.write_str(name)
    }
}

impl fmt::Display for LocalTimestamp {
    /// `Local timestamp +1234 (packet delayed)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Local timestamp +{}", self.value)?;
        match self.relation.tc() {
            0 => Ok(()),
            1 => f.write_str(" (timestamp delayed)"),
            2 => f.write_str(" (packet delayed)"),
            _ => f.write_str(" (timestamp and packet delayed)"),
        }
    }
}

impl fmt::Display for GlobalTimestamp {
    /// `GTS1 bits[25:0]=0x12345 wrap clock-change` or `GTS2 bits[47:26]=0x3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.high {
            let top = if self.len == 6 { 63 } else { 47 };
            write!(f, "GTS2 bits[{top}:26]={:#x}", self.bits)
        } else {
            write!(f, "GTS1 bits[{}:0]={:#x}", self.width() - 1, self.bits)?;
            if self.wrap {
                f.write_str(" wrap")?;
            }
            if self.clock_change {
                f.write_str(" clock-change")?;
            }
            Ok(())
        }
    }
}

impl fmt::Display for Extension {
    /// `Extension page=1` (ITM) or `Extension hardware value=0x5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.hardware {
            write!(f, "Extension hardware value={:#x}", self.value)
        } else {
            write!(f, "Extension page={}", self.value)
        }
    }
}

impl fmt::Display for Stimulus {
    /// `Stimulus port 0: 0x41 (1 byte)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.size == 1 { "" } else { "s" };
        write!(
            f,
            "Stimulus port {}: {:#0w$x} ({} byte{s})",
            self.port,
            self.value,
            self.size,
            w = 2 + 2 * usize::from(self.size)
        )
    }
}

impl fmt::Display for EventCounter {
    /// `Event counter wrap: CYC LSU`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Event counter wrap:")?;
        for (on, name) in [
            (self.cyc(), "CYC"),
            (self.fold(), "FOLD"),
            (self.lsu(), "LSU"),
            (self.sleep(), "SLEEP"),
            (self.exc(), "EXC"),
            (self.cpi(), "CPI"),
        ] {
            if on {
                write!(f, " {name}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for ExceptionTrace {
    /// `Exception enter SysTick (15)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Exception {} {} ({})",
            self.action.name(),
            self.name(),
            self.number
        )
    }
}

impl fmt::Display for PcSample {
    /// `PC sample 0x08000206` or `PC sample: sleeping`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pc {
            Some(pc) => write!(f, "PC sample {pc:#010x}"),
            None => f.write_str("PC sample: sleeping"),
        }
    }
}

impl fmt::Display for DataTrace {
    /// `Data trace comparator 1: PC 0x0800027c`, `... address offset
    /// 0x1014`, `... write 0x00000200 (4 bytes)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Data trace comparator {}: ", self.comparator)?;
        match self.kind {
            DataTraceKind::Pc(pc) => write!(f, "PC {pc:#010x}"),
            DataTraceKind::Address(a) => write!(f, "address offset {a:#06x}"),
            DataTraceKind::Value { value, size, write } => {
                let s = if size == 1 { "" } else { "s" };
                write!(
                    f,
                    "{} {:#0w$x} ({size} byte{s})",
                    if write { "write" } else { "read" },
                    value,
                    w = 2 + 2 * usize::from(size)
                )
            }
        }
    }
}

impl fmt::Display for Packet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sync => f.write_str("Sync"),
            Self::Overflow => f.write_str("Overflow"),
            Self::LocalTimestamp(t) => t.fmt(f),
            Self::GlobalTimestamp(g) => g.fmt(f),
            Self::Extension(e) => e.fmt(f),
            Self::Stimulus(s) => s.fmt(f),
            Self::EventCounter(c) => c.fmt(f),
            Self::ExceptionTrace(x) => x.fmt(f),
            Self::PcSample(s) => s.fmt(f),
            Self::DataTrace(d) => d.fmt(f),
        }
    }
}
