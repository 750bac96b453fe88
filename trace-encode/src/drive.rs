//! The protocol-independent part of encoding: walking the flow, checking
//! it against the code, and telling a protocol back end what happened.

use crate::flow::{ExceptionKind, FlowItem, Isa};
use crate::options::{EncodeStats, SyncPeriod, TraceOptions};
use crate::EncodeError;
use isa_decode::{Insn, Kind};
use std::collections::HashMap;
use trace_core::memory::{CodeKind, MemoryImage, Space};

/// Decodes (and remembers) the instructions of the flow.
pub(crate) struct Classifier<'m> {
    mem: &'m dyn MemoryImage,
    cache: HashMap<(u32, bool), Insn>,
}

impl<'m> Classifier<'m> {
    pub(crate) fn new(mem: &'m dyn MemoryImage) -> Self {
        Classifier {
            mem,
            cache: HashMap::new(),
        }
    }

    fn get(&mut self, index: u64, addr: u32, isa: Isa, size: u8) -> Result<Insn, EncodeError> {
        let key = (addr, isa == Isa::T32);
        let insn = match self.cache.get(&key) {
            Some(i) => *i,
            None => {
                let mut buf = [0u8; 4];
                let n = self.mem.read(Space::Secure, addr, &mut buf);
                let insn = isa_decode::decode(isa, &buf[..n.min(4)], addr)
                    .ok_or(EncodeError::Memory { index, addr })?;
                self.cache.insert(key, insn);
                insn
            }
        };
        if insn.size != size {
            return Err(EncodeError::SizeMismatch {
                index,
                addr,
                flow: size,
                decoded: insn.size,
            });
        }
        Ok(insn)
    }
}

/// One instruction, as the back ends see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step {
    pub index: u64,
    pub addr: u32,
    pub isa: Isa,
    pub insn: Insn,
    /// Passed its condition (E atom).
    pub passed: bool,
    /// An exception raised by this instruction follows: it did not
    /// complete.
    pub cancelled: bool,
    /// Cycles it took.
    pub cycles: u32,
}

impl Step {
    /// A direct branch that was taken.
    pub fn taken_direct(&self) -> bool {
        self.passed && self.insn.is_direct()
    }

    /// An indirect branch (or exception return) that was taken.
    pub fn taken_indirect(&self) -> bool {
        self.passed && self.insn.is_indirect()
    }
}

/// What a protocol encoder does at each point of the flow.
pub(crate) trait Backend {
    /// A-sync, then I-sync (trace on) at the first traced instruction.
    fn start(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError>;
    /// The target of a pending taken indirect branch is known: the next
    /// instruction is at `addr`.
    fn resolve(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError>;
    /// Whether a periodic I-sync can be placed before the next
    /// instruction.
    fn clean(&self) -> bool;
    /// A-sync and periodic I-sync at `addr`.
    fn periodic_sync(&mut self, index: u64, addr: u32, isa: Isa) -> Result<(), EncodeError>;
    /// A timestamp packet with `value`.
    fn timestamp(&mut self, index: u64, value: u64) -> Result<(), EncodeError>;
    /// A context ID packet.
    fn context(&mut self, index: u64, value: u32) -> Result<(), EncodeError>;
    /// One instruction.
    fn insn(&mut self, step: &Step) -> Result<(), EncodeError>;
    /// An exception; `handler_isa` is the instruction set at `vector`.
    fn exception(
        &mut self,
        index: u64,
        kind: ExceptionKind,
        vector: u32,
        ret: u32,
        handler_isa: Isa,
    ) -> Result<(), EncodeError>;
    /// The last instruction returned from an exception to `ret`.
    fn exception_return(&mut self, index: u64, ret: u32, ret_isa: Isa) -> Result<(), EncodeError>;
    /// End of trace: flush.
    fn finish(&mut self, index: u64) -> Result<(), EncodeError>;
    /// Total bytes written so far.
    fn bytes(&self) -> u64;
    /// Counters.
    fn stats(&mut self) -> &mut EncodeStats;
}

/// Where the code says execution continues after `step` (`None`: the
/// trace must say, for a taken indirect branch).
fn successor(step: &Step) -> Option<(u32, Isa)> {
    if step.taken_indirect() {
        return None;
    }
    if step.taken_direct() {
        if let Some(t) = step.insn.target {
            return Some((t.addr, t.isa));
        }
    }
    Some((step.addr.wrapping_add(u32::from(step.insn.size)), step.isa))
}

/// Per-run bookkeeping of periodic packets.
pub(crate) struct Driver<'o> {
    opts: &'o TraceOptions,
    /// Bytes written when the last I-sync was.
    last_sync_bytes: u64,
    last_sync_insn: u64,
    last_ts_insn: u64,
    next_change: usize,
}

impl<'o> Driver<'o> {
    pub(crate) fn new(opts: &'o TraceOptions) -> Self {
        Driver {
            opts,
            last_sync_bytes: 0,
            last_sync_insn: 0,
            last_ts_insn: 0,
            next_change: 0,
        }
    }

    /// Encodes `items` from the start instruction on (an A-sync and I-sync
    /// first), and flushes at the end.
    pub(crate) fn run<B: Backend>(
        &mut self,
        b: &mut B,
        cls: &mut Classifier<'_>,
        items: &[FlowItem],
    ) -> Result<(), EncodeError> {
        let opts = self.opts;
        let mut index: u64 = 0;
        let mut started = false;
        self.next_change = 0;
        for (i, item) in items.iter().enumerate() {
            let next = items.get(i + 1);
            match *item {
                FlowItem::Insn {
                    addr,
                    isa,
                    size,
                    cond,
                } => {
                    let this = index;
                    index += 1;
                    if this < opts.start_at {
                        continue;
                    }
                    let cancelled = cond.passed()
                        && matches!(next, Some(FlowItem::Exception { kind, ret, .. })
                            if kind.is_synchronous_fault() && *ret == addr);
                    let insn = cls.get(this, addr, isa, size)?;
                    if insn.kind == Kind::Undefined && !cancelled {
                        return Err(EncodeError::Undefined { index: this, addr });
                    }
                    if started {
                        b.resolve(this, addr, isa)?;
                        self.boundary(b, this, addr, isa)?;
                    } else {
                        b.start(this, addr, isa)?;
                        started = true;
                        self.last_sync_bytes = b.bytes();
                        self.last_sync_insn = this;
                        self.last_ts_insn = this;
                        while let Some(&(at, _)) = opts.context_changes.get(self.next_change) {
                            if at > this {
                                break;
                            }
                            self.next_change += 1;
                        }
                        if opts.timestamps {
                            let v = self.ts_value(b);
                            b.timestamp(this, v)?;
                        }
                    }
                    let mut step = Step {
                        index: this,
                        addr,
                        isa,
                        insn,
                        passed: cond.passed(),
                        cancelled,
                        cycles: 0,
                    };
                    let taken = step.taken_indirect()
                        || (step.taken_direct()
                            && successor(&step) != Some((addr.wrapping_add(u32::from(size)), isa)));
                    step.cycles = opts.cycles.cycles(taken);
                    if !cancelled {
                        check_next(&step, next, items.get(i + 2))?;
                    }
                    let st = b.stats();
                    st.instructions += 1;
                    st.cycles += u64::from(step.cycles);
                    b.insn(&step)?;
                }
                FlowItem::Exception { kind, vector, ret } if started => {
                    let handler_isa = match next {
                        Some(FlowItem::Insn { addr, isa, .. }) if *addr == vector => *isa,
                        _ if kind.is_m_profile() => Isa::T32,
                        _ => Isa::A32,
                    };
                    b.stats().exceptions += 1;
                    b.exception(index, kind, vector, ret, handler_isa)?;
                }
                FlowItem::ExceptionReturn { ret } if started => {
                    // An exception taken before the first instruction at
                    // `ret` hides its instruction set (an RTOS resuming a
                    // Thumb task from an A32 handler, interrupted at
                    // once): the image's mapping symbols tell it, or the
                    // instruction that runs there later.
                    let known = || match cls.mem.code_kind(ret) {
                        Some(CodeKind::Arm) => Some(Isa::A32),
                        Some(CodeKind::Thumb) => Some(Isa::T32),
                        _ => items.get(i + 1..).and_then(|rest| {
                            rest.iter().find_map(|it| match it {
                                FlowItem::Insn { addr, isa, .. } if *addr == ret => Some(*isa),
                                _ => None,
                            })
                        }),
                    };
                    let ret_isa = match (next, items.get(i.wrapping_sub(1))) {
                        (Some(FlowItem::Insn { addr, isa, .. }), _) if *addr == ret => *isa,
                        (_, Some(FlowItem::Insn { isa, .. })) => known().unwrap_or(*isa),
                        _ => known().unwrap_or(Isa::A32),
                    };
                    b.stats().exception_returns += 1;
                    b.exception_return(index, ret, ret_isa)?;
                }
                FlowItem::Halt => break,
                _ => {}
            }
        }
        if !started {
            return Err(EncodeError::StartBeyondEnd {
                start: opts.start_at,
                instructions: index,
            });
        }
        b.finish(index)
    }

    fn ts_value<B: Backend>(&self, b: &mut B) -> u64 {
        self.opts.timestamp_base.wrapping_add(b.stats().cycles)
    }

    /// Periodic syncs, timestamps and context changes due before
    /// instruction `index`.
    fn boundary<B: Backend>(
        &mut self,
        b: &mut B,
        index: u64,
        addr: u32,
        isa: Isa,
    ) -> Result<(), EncodeError> {
        let opts = self.opts;
        while let Some(&(at, value)) = opts.context_changes.get(self.next_change) {
            if at > index {
                break;
            }
            self.next_change += 1;
            if opts.context_id_bytes > 0 {
                b.context(index, value & opts.context_mask())?;
            }
        }
        let due = match opts.sync {
            Some(SyncPeriod::Bytes(n)) => b.bytes() - self.last_sync_bytes >= n.max(1),
            Some(SyncPeriod::Instructions(n)) => index - self.last_sync_insn >= n.max(1),
            None => false,
        };
        let mut synced = false;
        if due && b.clean() {
            b.periodic_sync(index, addr, isa)?;
            self.last_sync_bytes = b.bytes();
            self.last_sync_insn = index;
            synced = true;
        }
        if opts.timestamps
            && (synced || index - self.last_ts_insn >= opts.timestamp_interval.max(1))
        {
            let v = self.ts_value(b);
            b.timestamp(index, v)?;
            self.last_ts_insn = index;
        }
        Ok(())
    }
}

/// Checks that the record after `step` agrees with the code.
fn check_next(
    step: &Step,
    next: Option<&FlowItem>,
    after: Option<&FlowItem>,
) -> Result<(), EncodeError> {
    match next {
        Some(FlowItem::Insn { addr, isa, .. }) => {
            if let Some((expected, eisa)) = successor(step) {
                if (expected, eisa) != (*addr, *isa) {
                    return Err(EncodeError::Discontinuity {
                        index: step.index,
                        addr: step.addr,
                        expected,
                        found: *addr,
                    });
                }
            }
        }
        Some(FlowItem::ExceptionReturn { ret }) => {
            if !step.taken_indirect() {
                return Err(EncodeError::NotABranch {
                    index: step.index,
                    addr: step.addr,
                });
            }
            if let Some(FlowItem::Insn { addr, .. }) = after {
                if addr != ret {
                    return Err(EncodeError::Discontinuity {
                        index: step.index,
                        addr: step.addr,
                        expected: *ret,
                        found: *addr,
                    });
                }
            }
        }
        _ => {}
    }
    Ok(())
}
