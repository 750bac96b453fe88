//! The ETMv3 encoder.
//!
//! What is emitted, following the ETM architecture v3.5 (ARM IHI 0014Q):
//!
//! - an A-sync and an I-sync (reason: trace on; the "I-sync with cycle
//!   count" form in cycle-accurate mode; with the context ID when traced)
//!   at the first traced instruction; periodic A-sync + I-sync pairs
//!   between instructions;
//! - one atom per instruction: E when it executed (passed its condition),
//!   N when it failed, packed into P-headers (formats 1 and 2; in
//!   cycle-accurate mode formats 1 to 4 with one W atom per cycle);
//! - after the P-header holding a taken indirect branch, a branch address
//!   packet to its target (for every taken branch with branch
//!   broadcasting), in the original or the alternative encoding;
//! - for an exception: a branch address packet to the vector with the
//!   exception number (ARMv7-A/R numbering, or the ARMv7-M one for `m<N>`
//!   exceptions); an instruction that raised a fault is traced and
//!   cancelled (the Cancel bit);
//! - an exception exit packet after an exception return, before the
//!   branch address packet (as the Cortex-A7 ETMs of ARM's TC2 board do);
//! - ETMv3.5 timestamps and context ID packets as the options say.

use crate::drive::{Backend, Step};
use crate::flow::{ExceptionKind, Isa};
use crate::options::{EncodeStats, Regs, TraceOptions};
use crate::ptm::a_profile_exception_number;
use crate::EncodeError;
use etm_packets::{
    Atoms, Branch, Config, Encoder, EtmVersion, ExceptionInfo, ISync, PHeaderFormat, Packet,
    Reason, Timestamp,
};

/// How the ETM is programmed and what the synthetic trace contains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtmOptions {
    /// Options shared with PTM.
    pub trace: TraceOptions,
    /// ETM architecture version (timestamps need ETMv3.5, the alternative
    /// branch encoding ETMv3.4 or later).
    pub version: EtmVersion,
    /// Cycle-accurate tracing (ETMCR bit 12).
    pub cycle_accurate: bool,
    /// Alternative branch address encoding (ETMIDR bit 20).
    pub alt_branch: bool,
    /// Branch broadcasting (ETMCR bit 8): an address for every taken
    /// branch.
    pub branch_broadcast: bool,
}

impl Default for EtmOptions {
    fn default() -> Self {
        EtmOptions {
            trace: TraceOptions::default(),
            version: EtmVersion::V3_5,
            cycle_accurate: false,
            alt_branch: false,
            branch_broadcast: false,
        }
    }
}

/// ETMCCER of a Cortex-A7 ETM: timestamps implemented, 64-bit natural
/// binary, Virtualization Extensions.
const ETMCCER: u32 = 0x3440_08F2;
/// ETMIDR of an ETMv3.x with the Security Extensions and 32-bit Thumb
/// instructions traced as one; the minor version goes in bits \[7:4\].
const ETMIDR_BASE: u32 = 0x410C_F200;

/// ETMv3 exception number of an ARMv7-M exception (IHI 0014Q, exception
/// encodings for ARMv7-M): IRQ1-IRQ7 are 1-7, IRQ0 8, UsageFault 9, NMI
/// 10, SVCall 11, DebugMonitor 12, MemManage 13, PendSV 14, SysTick 15,
/// Reset 17, HardFault 19, BusFault 21; external interrupts from IRQ8 on
/// keep their exception number (24 and up).
#[must_use]
pub fn m_profile_exception_number(number: u16) -> u16 {
    match number {
        1 => 17,
        2 => 10,
        3 => 19,
        4 => 13,
        5 => 21,
        6 => 9,
        11 => 11,
        12 => 12,
        14 => 14,
        15 => 15,
        16 => 8,
        17..=23 => number - 16,
        n => n,
    }
}

impl EtmOptions {
    /// The register values describing this configuration.
    ///
    /// # Errors
    ///
    /// [`EncodeError::Options`] for a context ID size other than 0, 1, 2
    /// or 4, timestamps before ETMv3.5, or the alternative branch encoding
    /// before ETMv3.4.
    pub fn regs(&self) -> Result<Regs, EncodeError> {
        if self.trace.timestamps && self.version < EtmVersion::V3_5 {
            return Err(EncodeError::Options("timestamps need ETMv3.5".into()));
        }
        if self.alt_branch && self.version < EtmVersion::V3_4 {
            return Err(EncodeError::Options(
                "the alternative branch encoding needs ETMv3.4 or later".into(),
            ));
        }
        let mut etmcr = self.trace.context_field()? << 14;
        etmcr |= u32::from(self.branch_broadcast) << 8;
        etmcr |= u32::from(self.cycle_accurate) << 12;
        etmcr |= u32::from(self.trace.timestamps) << 28;
        let etmidr = ETMIDR_BASE
            | (u32::from(self.version.minor()) << 4)
            | (u32::from(self.alt_branch) << 20);
        let etmccer = if self.version >= EtmVersion::V3_1 {
            ETMCCER
        } else {
            0
        };
        Ok(Regs {
            etmcr,
            etmccer,
            etmidr,
        })
    }

    /// The packet configuration.
    ///
    /// # Errors
    ///
    /// As [`EtmOptions::regs`].
    pub fn config(&self) -> Result<Config, EncodeError> {
        let r = self.regs()?;
        Config::from_regs(r.etmcr, r.etmccer, r.etmidr)
            .map_err(|e| EncodeError::Options(e.to_string()))
    }
}

/// One instruction's atoms: W atoms (cycle-accurate) then E or N.
#[derive(Debug, Clone, Copy)]
struct InsnAtom {
    cycles: u32,
    passed: bool,
}

/// The ETMv3 back end.
pub(crate) struct EtmBackend<'o> {
    opts: &'o EtmOptions,
    enc: Encoder,
    pub(crate) out: Vec<u8>,
    written: u64,
    atoms: Vec<InsnAtom>,
    /// A taken indirect branch waits for its target.
    pending: Option<Isa>,
    /// The last instruction raised the exception that follows.
    cancel: bool,
    context_id: u32,
    stats: EncodeStats,
}

fn etm_isa(isa: Isa) -> etm_packets::Isa {
    match isa {
        Isa::A32 => etm_packets::Isa::Arm,
        Isa::T32 => etm_packets::Isa::Thumb,
    }
}

impl<'o> EtmBackend<'o> {
    pub(crate) fn new(opts: &'o EtmOptions) -> Result<Self, EncodeError> {
        let cfg = opts.config()?;
        Ok(EtmBackend {
            opts,
            enc: Encoder::new(cfg),
            out: Vec::new(),
            written: 0,
            atoms: Vec::new(),
            pending: None,
            cancel: false,
            context_id: opts.trace.context_id & opts.trace.context_mask(),
            stats: EncodeStats::default(),
        })
    }

    fn emit(&mut self, index: u64, p: &Packet) -> Result<(), EncodeError> {
        let mut buf = [0u8; 32];
        let n = self
            .enc
            .encode(p, &mut buf)
            .map_err(|e| EncodeError::Packet {
                index,
                reason: format!("{e} ({p:?})"),
            })?;
        self.out.extend_from_slice(&buf[..n]);
        self.written += n as u64;
        self.stats.packets += 1;
        self.stats.bytes += n as u64;
        Ok(())
    }

    fn header(
        &mut self,
        index: u64,
        format: PHeaderFormat,
        count: u8,
        executed: u16,
        cycles: u8,
    ) -> Result<(), EncodeError> {
        self.emit(
            index,
            &Packet::Atoms(Atoms {
                format,
                count,
                executed,
                cycles,
            }),
        )
    }

    /// Packs the pending atoms into P-headers.
    fn flush_atoms(&mut self, index: u64) -> Result<(), EncodeError> {
        let atoms = std::mem::take(&mut self.atoms);
        if self.opts.cycle_accurate {
            self.pack_cycle_accurate(index, &atoms)
        } else {
            self.pack(index, &atoms)
        }
    }

    /// Formats 1 (E run, optional N) and 2 (two atoms starting with N).
    fn pack(&mut self, index: u64, atoms: &[InsnAtom]) -> Result<(), EncodeError> {
        let mut i = 0;
        while let Some(a) = atoms.get(i) {
            if !a.passed {
                if let Some(b) = atoms.get(i + 1) {
                    self.header(
                        index,
                        PHeaderFormat::Format2,
                        2,
                        u16::from(b.passed) << 1,
                        0,
                    )?;
                    i += 2;
                } else {
                    self.header(index, PHeaderFormat::Format1, 1, 0, 0)?;
                    i += 1;
                }
                continue;
            }
            let e = atoms[i..].iter().take(15).take_while(|a| a.passed).count();
            let n = usize::from(atoms.get(i + e).is_some_and(|a| !a.passed));
            let count = (e + n) as u8;
            self.header(
                index,
                PHeaderFormat::Format1,
                count,
                ((1u32 << e) - 1) as u16,
                0,
            )?;
            i += e + n;
        }
        Ok(())
    }

    /// Cycle-accurate: one W per cycle, the instruction in its last cycle.
    /// Format 1 for runs of one-cycle instructions (`WE`... `WN`), format 2
    /// for a one-cycle instruction followed by one sharing its cycle,
    /// format 4 for an instruction without a cycle of its own, format 3
    /// (up to 8 W, then E) for longer ones.
    fn pack_cycle_accurate(&mut self, index: u64, atoms: &[InsnAtom]) -> Result<(), EncodeError> {
        let mut i = 0;
        while let Some(a) = atoms.get(i) {
            if a.cycles == 0 {
                if self.opts.version < EtmVersion::V3_3 {
                    return Err(EncodeError::Options(
                        "an instruction without a cycle needs ETMv3.3 (format 4 P-header)".into(),
                    ));
                }
                self.header(index, PHeaderFormat::Format4, 1, u16::from(a.passed), 0)?;
                i += 1;
                continue;
            }
            if let (1, Some(b)) = (a.cycles, atoms.get(i + 1).filter(|b| b.cycles == 0)) {
                // One cycle, two instructions.
                let executed = u16::from(a.passed) | (u16::from(b.passed) << 1);
                self.header(index, PHeaderFormat::Format2, 2, executed, 1)?;
                i += 2;
                continue;
            }
            if a.cycles == 1 {
                let e = atoms[i..]
                    .iter()
                    .take(7)
                    .take_while(|a| a.cycles == 1 && a.passed)
                    .count();
                let n = usize::from(atoms.get(i + e).is_some_and(|a| a.cycles == 1 && !a.passed));
                let count = (e + n) as u8;
                self.header(
                    index,
                    PHeaderFormat::Format1,
                    count,
                    ((1u32 << e) - 1) as u16,
                    count,
                )?;
                i += e + n;
                continue;
            }
            // Leading W-only cycles, then the last cycle with the atom.
            let mut w = if a.passed { a.cycles } else { a.cycles - 1 };
            let keep = if a.passed { w.min(8) } else { 0 };
            while w > keep {
                let m = (w - keep).min(8);
                self.header(index, PHeaderFormat::Format3, 0, 0, m as u8)?;
                w -= m;
            }
            if a.passed {
                self.header(index, PHeaderFormat::Format3, 1, 1, keep as u8)?;
            } else {
                self.header(index, PHeaderFormat::Format1, 1, 0, 1)?;
            }
            i += 1;
        }
        Ok(())
    }

    fn branch(
        &mut self,
        index: u64,
        addr: u32,
        isa: Isa,
        exception: Option<ExceptionInfo>,
    ) -> Result<(), EncodeError> {
        self.flush_atoms(index)?;
        self.emit(
            index,
            &Packet::Branch(Branch {
                address: addr,
                bits: 0,
                known_bits: 32,
                isa: etm_isa(isa),
                ns: false,
                hyp: false,
                exception,
            }),
        )
    }

    fn isync(
        &mut self,
        index: u64,
        addr: u32,
        isa: Isa,
        periodic: bool,
    ) -> Result<(), EncodeError> {
        self.flush_atoms(index)?;
        self.emit(index, &Packet::ASync)?;
        let reason = if periodic {
            Reason::Periodic
        } else {
            Reason::TraceOn
        };
        let mut s = ISync::new(addr, etm_isa(isa), reason);
        if self.opts.trace.context_id_bytes > 0 {
            s = s.with_context_id(Some(self.context_id));
        }
        if self.opts.cycle_accurate && !periodic {
            s = s.with_cycle_count(Some(0));
        }
        self.stats.isyncs += 1;
        self.emit(index, &Packet::ISync(s))
    }

    fn resolve_to(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError> {
        if self.pending.take().is_some() {
            self.branch(index, addr, isa, None)?;
        }
        Ok(())
    }
}

impl Backend for EtmBackend<'_> {
    fn start(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError> {
        self.context_id = self.opts.trace.context_id & self.opts.trace.context_mask();
        self.isync(index, addr, isa, false)
    }

    fn resolve(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError> {
        self.resolve_to(index, addr, isa)
    }

    fn clean(&self) -> bool {
        self.pending.is_none()
    }

    fn periodic_sync(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError> {
        self.isync(index, addr, isa, true)
    }

    fn timestamp(&mut self, index: u64, value: u64) -> Result<(), EncodeError> {
        self.flush_atoms(index)?;
        self.emit(
            index,
            &Packet::Timestamp(Timestamp {
                value,
                bits: 0,
                clock_changed: false,
            }),
        )
    }

    fn context(&mut self, index: u64, value: u32) -> Result<(), EncodeError> {
        self.flush_atoms(index)?;
        self.context_id = value;
        self.emit(index, &Packet::ContextId(value))
    }

    fn insn(&mut self, s: &Step) -> Result<(), EncodeError> {
        if s.cancelled && s.insn.kind == isa_decode::Kind::Undefined {
            // The decoder cannot walk an UNDEFINED encoding: leave it out;
            // the exception's return address still points at it.
            return Ok(());
        }
        let cycles = if self.opts.cycle_accurate {
            s.cycles
        } else {
            0
        };
        self.atoms.push(InsnAtom {
            cycles,
            passed: s.passed,
        });
        if s.cancelled {
            self.cancel = true;
            return self.flush_atoms(s.index);
        }
        if s.taken_indirect() {
            self.pending = Some(s.isa);
            return self.flush_atoms(s.index);
        }
        if self.opts.branch_broadcast && s.taken_direct() {
            if let Some(t) = s.insn.target {
                self.branch(s.index, t.addr, t.isa, None)?;
            }
        }
        Ok(())
    }

    fn exception(
        &mut self,
        index: u64,
        kind: ExceptionKind,
        vector: u32,
        ret: u32,
        handler_isa: Isa,
    ) -> Result<(), EncodeError> {
        if let Some(isa) = self.pending {
            self.resolve_to(index, ret, isa)?;
        }
        let number = match kind {
            ExceptionKind::M(n) => m_profile_exception_number(n),
            k => a_profile_exception_number(k),
        };
        let info = ExceptionInfo {
            number,
            cancel: std::mem::take(&mut self.cancel),
            resume: 0,
        };
        self.branch(index, vector, handler_isa, Some(info))
    }

    fn exception_return(&mut self, index: u64, ret: u32, ret_isa: Isa) -> Result<(), EncodeError> {
        self.flush_atoms(index)?;
        self.emit(index, &Packet::ExceptionExit)?;
        self.resolve_to(index, ret, ret_isa)
    }

    fn finish(&mut self, index: u64) -> Result<(), EncodeError> {
        self.pending = None;
        self.cancel = false;
        self.flush_atoms(index)
    }

    fn bytes(&self) -> u64 {
        self.written
    }

    fn stats(&mut self) -> &mut EncodeStats {
        &mut self.stats
    }
}
