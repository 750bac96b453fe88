//! The PTM (PFT v1.1) encoder.
//!
//! What is emitted, following PFT v1.1 (ARM IHI 0035B):
//!
//! - an A-sync and an I-sync (reason: trace on; with a cycle count in
//!   cycle-accurate mode; with the context ID when traced) at the first
//!   traced instruction; periodic A-sync + I-sync pairs after a waypoint;
//! - one atom per waypoint (branches, exception returns, `ISB`, and `DMB`
//!   / `DSB` when ETMCCER bit 24 is set): E when it passed its condition,
//!   N when it failed; up to five per atom packet, or one per packet with
//!   its cycle count in cycle-accurate mode;
//! - a branch address packet instead of the E atom for a taken indirect
//!   branch, unless the return stack is on and predicts the target (then
//!   the E atom alone); with branch broadcasting, for every taken branch;
//! - for an exception: a waypoint update to the last instruction executed
//!   since the last waypoint (if any), then a branch address packet to the
//!   vector carrying the exception number; an instruction that raised a
//!   fault (its address is the preferred return address) did not complete
//!   and is left out;
//! - an exception return packet after the branch of an exception return;
//! - timestamps, context ID packets as the options say;
//! - at the end, a waypoint update to the last instruction executed.

use crate::drive::{Backend, Step};
use crate::flow::{ExceptionKind, Isa};
use crate::options::{EncodeStats, Regs, TraceOptions};
use crate::rstack::ReturnStack;
use crate::EncodeError;
use ptm_packets::{Atom, Atoms, Config, Encoder, ExceptionInfo, ISync, ISyncReason, Packet};

/// How the PTM is programmed and what the synthetic trace contains.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PtmOptions {
    /// Options shared with ETMv3.
    pub trace: TraceOptions,
    /// Return stack (ETMCR bit 29): a branch with link pushes its return
    /// address; a taken indirect branch whose target is on top of the
    /// stack pops it and is traced by its E atom alone. The stack holds
    /// [`RETURN_STACK_DEPTH`](crate::RETURN_STACK_DEPTH) entries, as the
    /// decoder's does; I-syncs at trace on empty it. Not used with branch
    /// broadcasting.
    pub return_stack: bool,
    /// Cycle-accurate tracing (ETMCR bit 12).
    pub cycle_accurate: bool,
    /// Branch broadcasting (ETMCR bit 8).
    pub branch_broadcast: bool,
    /// DMB and DSB are waypoints (ETMCCER bit 24).
    pub barrier_waypoints: bool,
}

/// ETMCCER of a Cortex-A15 PTM: 64-bit natural binary timestamps,
/// Virtualization Extensions.
const ETMCCER_BASE: u32 = 0x34C0_1AC2;
/// ETMIDR of a PFT v1.1 PTM.
const ETMIDR: u32 = 0x411C_F312;

impl PtmOptions {
    /// The register values describing this configuration.
    ///
    /// # Errors
    ///
    /// [`EncodeError::Options`] for a context ID size other than 0, 1, 2
    /// or 4.
    pub fn regs(&self) -> Result<Regs, EncodeError> {
        let mut etmcr = self.trace.context_field()? << 14;
        etmcr |= u32::from(self.branch_broadcast) << 8;
        etmcr |= u32::from(self.cycle_accurate) << 12;
        etmcr |= u32::from(self.trace.timestamps) << 28;
        etmcr |= u32::from(self.return_stack) << 29;
        let etmccer = ETMCCER_BASE | (u32::from(self.barrier_waypoints) << 24);
        Ok(Regs {
            etmcr,
            etmccer,
            etmidr: ETMIDR,
        })
    }

    /// The packet configuration.
    ///
    /// # Errors
    ///
    /// As [`PtmOptions::regs`].
    pub fn config(&self) -> Result<Config, EncodeError> {
        let r = self.regs()?;
        Config::from_regs(r.etmcr, r.etmccer, r.etmidr)
            .map_err(|e| EncodeError::Options(e.to_string()))
    }
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    addr: u32,
    isa: Isa,
    size: u8,
    link: bool,
}

/// The PTM back end.
pub(crate) struct PtmBackend<'o> {
    opts: &'o PtmOptions,
    enc: Encoder,
    pub(crate) out: Vec<u8>,
    written: u64,
    atoms: (u8, u8),
    /// Last instruction executed since the last waypoint.
    since_waypoint: Option<(u32, Isa)>,
    pending: Option<Pending>,
    rstack: ReturnStack,
    cycles: u64,
    context_id: u32,
    stats: EncodeStats,
}

fn ptm_isa(isa: Isa) -> ptm_packets::Isa {
    match isa {
        Isa::A32 => ptm_packets::Isa::Arm,
        Isa::T32 => ptm_packets::Isa::Thumb,
    }
}

/// PFT exception numbers (the same as ETMv3's for ARMv7-A/R).
#[must_use]
pub fn a_profile_exception_number(kind: ExceptionKind) -> u16 {
    match kind {
        ExceptionKind::Reset => 8,
        ExceptionKind::Undef => 9,
        ExceptionKind::Svc => 10,
        ExceptionKind::Pabort => 11,
        ExceptionKind::Dabort => 12,
        ExceptionKind::Irq => 14,
        ExceptionKind::Fiq => 15,
        // No A-profile equivalent: the "generic" exception.
        ExceptionKind::M(_) => 13,
    }
}

impl<'o> PtmBackend<'o> {
    pub(crate) fn new(opts: &'o PtmOptions) -> Result<Self, EncodeError> {
        let cfg = opts.config()?;
        Ok(PtmBackend {
            opts,
            enc: Encoder::new(cfg),
            out: Vec::new(),
            written: 0,
            atoms: (0, 0),
            since_waypoint: None,
            pending: None,
            rstack: ReturnStack::default(),
            cycles: 0,
            context_id: opts.trace.context_id & opts.trace.context_mask(),
            stats: EncodeStats::default(),
        })
    }

    fn ca(&self) -> bool {
        self.opts.cycle_accurate
    }

    /// The cycles since the last cycle count, for a packet that carries
    /// one (cycle-accurate mode only).
    fn take_cycles(&mut self) -> Option<u32> {
        if self.ca() {
            let c = u32::try_from(self.cycles).unwrap_or(u32::MAX);
            self.cycles = 0;
            Some(c)
        } else {
            None
        }
    }

    fn emit(&mut self, index: u64, p: &Packet) -> Result<(), EncodeError> {
        let n = self
            .enc
            .encode_extend(p, &mut self.out)
            .map_err(|e| EncodeError::Packet {
                index,
                reason: format!("{e} ({p:?})"),
            })?;
        self.written += n as u64;
        self.stats.packets += 1;
        self.stats.bytes += n as u64;
        Ok(())
    }

    fn flush_atoms(&mut self, index: u64) -> Result<(), EncodeError> {
        let (count, e_bits) = self.atoms;
        if count == 0 {
            return Ok(());
        }
        self.atoms = (0, 0);
        let atoms = Atoms::new(count, e_bits).ok_or(EncodeError::Packet {
            index,
            reason: "atom count".into(),
        })?;
        self.emit(
            index,
            &Packet::Atom {
                atoms,
                cycles: None,
            },
        )
    }

    fn atom(&mut self, index: u64, e: bool) -> Result<(), EncodeError> {
        if self.ca() {
            let cycles = self.take_cycles();
            let atom = if e { Atom::E } else { Atom::N };
            return self.emit(
                index,
                &Packet::Atom {
                    atoms: Atoms::single(atom),
                    cycles,
                },
            );
        }
        let (count, bits) = self.atoms;
        self.atoms = (count + 1, bits | (u8::from(e) << count));
        if count + 1 == Atoms::MAX {
            self.flush_atoms(index)?;
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
        let cycles = self.take_cycles();
        let p = self.enc.branch(addr, ptm_isa(isa), exception, cycles);
        self.emit(index, &p)
    }

    fn context_id(&self) -> Option<u32> {
        (self.opts.trace.context_id_bytes > 0).then_some(self.context_id)
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
        let cycles = if periodic { None } else { self.take_cycles() };
        let s = ISync {
            address: addr,
            isa: ptm_isa(isa),
            ns: false,
            hyp: false,
            reason: if periodic {
                ISyncReason::Periodic
            } else {
                ISyncReason::TraceOn
            },
            context_id: self.context_id(),
            cycles,
        };
        self.stats.isyncs += 1;
        self.emit(index, &Packet::ISync(s))
    }

    /// Traces the pending indirect branch as going to `addr`.
    fn resolve_to(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError> {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        if self.opts.return_stack && !self.opts.branch_broadcast && self.rstack.pop_if(addr, isa) {
            self.atom(index, true)?;
        } else {
            self.branch(index, addr, isa, None)?;
        }
        if p.link && self.opts.return_stack {
            self.rstack
                .push(p.addr.wrapping_add(u32::from(p.size)), p.isa);
        }
        Ok(())
    }

    fn waypoint_update(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError> {
        self.flush_atoms(index)?;
        let p = self.enc.waypoint_update(addr, ptm_isa(isa));
        self.emit(index, &p)
    }
}

impl Backend for PtmBackend<'_> {
    fn start(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError> {
        self.context_id = self.opts.trace.context_id & self.opts.trace.context_mask();
        self.rstack.clear();
        self.isync(index, addr, isa, false)
    }

    fn resolve(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError> {
        self.resolve_to(index, addr, isa)
    }

    fn clean(&self) -> bool {
        self.pending.is_none() && self.since_waypoint.is_none()
    }

    fn periodic_sync(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError> {
        self.isync(index, addr, isa, true)
    }

    fn timestamp(&mut self, index: u64, value: u64) -> Result<(), EncodeError> {
        self.flush_atoms(index)?;
        let cycles = self.take_cycles();
        let p = self.enc.timestamp(value, false, cycles);
        self.emit(index, &p)
    }

    fn context(&mut self, index: u64, value: u32) -> Result<(), EncodeError> {
        self.flush_atoms(index)?;
        self.context_id = value;
        self.emit(index, &Packet::ContextId(value))
    }

    fn insn(&mut self, s: &Step) -> Result<(), EncodeError> {
        self.cycles += u64::from(s.cycles);
        if s.cancelled {
            return Ok(());
        }
        if !s.insn.is_waypoint_with(self.opts.barrier_waypoints) {
            self.since_waypoint = Some((s.addr, s.isa));
            return Ok(());
        }
        self.since_waypoint = None;
        let ret = s.addr.wrapping_add(u32::from(s.insn.size));
        if !s.passed {
            return self.atom(s.index, false);
        }
        if s.insn.is_indirect() {
            self.pending = Some(Pending {
                addr: s.addr,
                isa: s.isa,
                size: s.insn.size,
                link: s.insn.link,
            });
            return Ok(());
        }
        match s.insn.target {
            Some(t) if self.opts.branch_broadcast && s.insn.is_direct() => {
                self.branch(s.index, t.addr, t.isa, None)?;
            }
            _ => self.atom(s.index, true)?,
        }
        if s.insn.link && self.opts.return_stack {
            self.rstack.push(ret, s.isa);
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
        if let Some(p) = self.pending {
            self.resolve_to(index, ret, p.isa)?;
        }
        self.flush_atoms(index)?;
        if let Some((addr, isa)) = self.since_waypoint.take() {
            self.waypoint_update(index, addr, isa)?;
        }
        let info = ExceptionInfo {
            number: a_profile_exception_number(kind),
            ns: false,
            alt_isa: false,
            hyp: None,
        };
        self.branch(index, vector, handler_isa, Some(info))
    }

    fn exception_return(&mut self, index: u64, ret: u32, ret_isa: Isa) -> Result<(), EncodeError> {
        self.resolve_to(index, ret, ret_isa)?;
        self.flush_atoms(index)?;
        self.emit(index, &Packet::ExceptionReturn)
    }

    fn finish(&mut self, index: u64) -> Result<(), EncodeError> {
        if let Some(p) = self.pending.take() {
            self.since_waypoint = None;
            self.waypoint_update(index, p.addr, p.isa)?;
        }
        if let Some((addr, isa)) = self.since_waypoint.take() {
            self.waypoint_update(index, addr, isa)?;
        }
        self.flush_atoms(index)
    }

    fn bytes(&self) -> u64 {
        self.written
    }

    fn stats(&mut self) -> &mut EncodeStats {
        &mut self.stats
    }
}
