//! One-line human-readable forms of packets.

use core::fmt;

use crate::packet::{Atom, Atoms, ExceptionInfo, ISyncReason, Isa, Packet};

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for ISyncReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Atom::E => "E",
            Atom::N => "N",
        })
    }
}

/// Atoms oldest first, separated by spaces: `E E N`.
impl fmt::Display for Atoms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{a}")?;
        }
        Ok(())
    }
}

/// `exception=debug-halt(1) ns=0 [alt-isa] [hyp=0]`.
impl fmt::Display for ExceptionInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exception={}({}) ns={}",
            crate::packet::exception_name(self.number),
            self.number,
            u8::from(self.ns)
        )?;
        if self.alt_isa {
            f.write_str(" alt-isa")?;
        }
        if let Some(h) = self.hyp {
            write!(f, " hyp={}", u8::from(h))?;
        }
        Ok(())
    }
}

fn cycles(f: &mut fmt::Formatter<'_>, c: Option<u32>) -> fmt::Result {
    match c {
        Some(c) => write!(f, " cycles={c}"),
        None => Ok(()),
    }
}

/// One line, starting with a short name: `a-sync`,
/// `i-sync addr=0x80000554 isa=arm reason=debug-exit ns=0 hyp=0`,
/// `atom E E N`, `branch addr=0x80000f7c isa=thumb exception=debug-halt(1) ns=0`,
/// `waypoint addr=…`, `trigger`, `context-id 0x…`, `vmid 0x…`,
/// `timestamp 0x…`, `exception-return`, `ignore`; cycle counts are appended
/// as `cycles=N`.
impl fmt::Display for Packet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Packet::ASync => f.write_str("a-sync"),
            Packet::ISync(s) => {
                write!(
                    f,
                    "i-sync addr={:#010x} isa={} reason={} ns={} hyp={}",
                    s.address,
                    s.isa,
                    s.reason,
                    u8::from(s.ns),
                    u8::from(s.hyp)
                )?;
                if let Some(c) = s.context_id {
                    write!(f, " context-id={c:#x}")?;
                }
                cycles(f, s.cycles)
            }
            Packet::Atom { atoms, cycles: c } => {
                write!(f, "atom {atoms}")?;
                cycles(f, *c)
            }
            Packet::BranchAddress(b) => {
                write!(
                    f,
                    "branch addr={:#010x} bits={} isa={}",
                    b.address, b.bits, b.isa
                )?;
                if let Some(e) = b.exception {
                    write!(f, " {e}")?;
                }
                cycles(f, b.cycles)
            }
            Packet::WaypointUpdate(w) => {
                write!(
                    f,
                    "waypoint addr={:#010x} bits={} isa={}",
                    w.address, w.bits, w.isa
                )?;
                if let Some(alt) = w.alt_isa {
                    write!(f, " alt-isa={}", u8::from(alt))?;
                }
                Ok(())
            }
            Packet::Trigger => f.write_str("trigger"),
            Packet::ContextId(v) => write!(f, "context-id {v:#x}"),
            Packet::Vmid(v) => write!(f, "vmid {v:#04x}"),
            Packet::Timestamp(t) => {
                write!(f, "timestamp {:#x} bits={}", t.value, t.bits)?;
                if t.clock_changed {
                    f.write_str(" clock-changed")?;
                }
                cycles(f, t.cycles)
            }
            Packet::ExceptionReturn => f.write_str("exception-return"),
            Packet::Ignore => f.write_str("ignore"),
        }
    }
}
