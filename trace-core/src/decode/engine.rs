//! The decompression engine: runs [`TraceOp`]s against a memory image
//! (PFT v1.1 B.3.2 for PTM, one atom per instruction for ETMv3).

use super::block::{Block, BlockCache, BlockEnd, CInsn, NONE};
use super::op::{Atoms, Branch, InsnAtoms, Sync, SyncReason, Target, TraceOp};
use super::rstack::{self, ReturnStack};
use crate::event::{Check, Context, Event, EventKind, GapReason, Isa, Range, TraceOnReason};
use crate::memory::{MemoryImage, Space};
use alloc::sync::Arc;

/// Where execution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pc {
    addr: u32,
    isa: Isa,
    /// Cached block starting at `addr`, or `NONE`.
    block: u32,
    /// ETMv3: index of `addr` inside `block`.
    index: u32,
}

/// What the walk of a PTM block needs of its last instruction (the
/// waypoint).
#[derive(Debug, Clone, Copy)]
struct Waypoint {
    /// Taken target of a direct branch.
    target: Option<(u32, Isa)>,
    /// Indirect branch or exception return.
    indirect: bool,
    /// Branch with link.
    link: bool,
    /// Its address.
    addr: u32,
    /// The address after it (the return address of a link).
    after: u32,
}

/// The instruction-flow engine of one trace source: it runs the
/// operations an instruction-trace protocol lowers its packets into
/// ([`Engine::run`], and the atoms' fast paths) against the source's
/// memory image, and emits the events. A protocol that is not
/// instruction trace only reads [`Engine::id`].
pub struct Engine {
    id: u8,
    flavor: Atoms,
    return_stack_on: bool,
    mem: Arc<dyn MemoryImage>,
    cache: BlockCache,
    /// Known next instruction; `None` while waiting for an address.
    pc: Option<Pc>,
    /// Low address bits the trace has given since the last I-sync or loss
    /// of synchronization (32: the whole address is known).
    known_bits: u8,
    /// ETMv3: the executed indirect branch whose target the next branch
    /// address packet must give.
    awaiting: Option<u32>,
    synced: bool,
    started: bool,
    ns: bool,
    hyp: bool,
    context_id: Option<u32>,
    vmid: Option<u8>,
    rstack: ReturnStack,
    /// ETMv3: the last instruction, held back until the next packet says
    /// whether an exception cancelled it.
    pending: Option<Event>,
    /// ETMv3: hand on runs of instructions as one range each (see
    /// [`Engine::set_block_ranges`]).
    block_ranges: bool,
    /// ETMv3 by runs: `pending` is a run whose last instruction executed
    /// and is not a waypoint, and the PC is the instruction after it: the
    /// next P-header's first instructions go on with it.
    open: bool,
    /// ETMv3 by runs: `pending` without its last instruction (when it
    /// has more than one), what an exception that cancels that
    /// instruction leaves.
    shrunk: Option<Event>,
    /// ETMv3 by runs: the last instruction of the run in `pending`, its
    /// index in the block cache's `alone` and in its block.
    last_at: (u32, u32),
    /// ETMv3 by runs: the cycles of that last instruction, and of those
    /// the W atoms of earlier P-headers it took in (`carry`).
    last_cycles: u32,
    last_carried: u32,
    /// ETMv3 by runs: W atoms of P-headers since the open run in
    /// `pending` (before its next instruction), and the first such
    /// P-header's offset.
    carry: u32,
    carry_at: u64,
    last_offset: u64,
    ignored: u64,
    /// The PC was reached from this block's taken (true) or fall-through
    /// (false) edge: link the block found at the PC to it.
    link: Option<(u32, bool)>,
    /// Instruction set of the last known position.
    cur_isa: Isa,
    /// Started at an I-sync in the middle of the trace: the state right
    /// after that I-sync, to be checked against the real one.
    entry: Option<FlowState>,
    /// The block cache's generation when the return stack's hints (the
    /// blocks of the calls, see [`Engine::call_hint`]) were given.
    hint_generation: u32,
    /// Marked at an I-sync after a warm-up ([`Engine::mark_share`]): the
    /// return stack there, which must be the newest entries of the real
    /// one.
    warm: Option<ReturnStack>,
}

/// The engine state that decides what later operations emit, except the
/// return stack (which [`Engine::join`] checks on its own terms), the
/// block cache (a memo of the memory image) and the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowState {
    pc: Option<Pc>,
    known_bits: u8,
    awaiting: Option<u32>,
    synced: bool,
    started: bool,
    ns: bool,
    hyp: bool,
    context_id: Option<u32>,
    vmid: Option<u8>,
    pending: Option<Event>,
    link: Option<(u32, bool)>,
    cur_isa: Isa,
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine")
            .field("id", &self.id)
            .field("flavor", &self.flavor)
            .field("pc", &self.pc)
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// A fresh engine.
    pub(crate) fn new(
        id: u8,
        flavor: Atoms,
        return_stack: bool,
        barriers: bool,
        mem: Arc<dyn MemoryImage>,
    ) -> Engine {
        let mut cache = BlockCache::default();
        cache.barriers = barriers;
        Engine {
            id,
            flavor,
            return_stack_on: return_stack,
            mem,
            cache,
            pc: None,
            known_bits: 0,
            awaiting: None,
            synced: false,
            started: false,
            ns: false,
            hyp: false,
            context_id: None,
            vmid: None,
            rstack: ReturnStack::default(),
            pending: None,
            block_ranges: false,
            open: false,
            shrunk: None,
            last_at: (0, 0),
            last_cycles: 0,
            last_carried: 0,
            carry: 0,
            carry_at: 0,
            last_offset: 0,
            ignored: 0,
            link: None,
            cur_isa: Isa::A32,
            entry: None,
            warm: None,
            hint_generation: 0,
        }
    }

    /// The state that decides what later operations emit.
    pub(crate) fn flow_state(&self) -> FlowState {
        FlowState {
            pc: self.pc,
            known_bits: self.known_bits,
            awaiting: self.awaiting,
            synced: self.synced,
            started: self.started,
            ns: self.ns,
            hyp: self.hyp,
            context_id: self.context_id,
            vmid: self.vmid,
            pending: self.pending,
            link: self.link,
            cur_isa: self.cur_isa,
        }
    }

    /// Join the trace at the I-sync `sync` (at `offset`) of a trace already
    /// under way, whose context ID and VMID before the I-sync were
    /// `context_id` and `vmid`; the I-sync's own events are dropped (they
    /// belong to the decoder before it). The return stack continues an
    /// unknown one. [`Engine::join`] later checks this start against the
    /// real state.
    pub(crate) fn start_at_sync(
        &mut self,
        offset: u64,
        sync: &Sync,
        context_id: Option<u32>,
        vmid: Option<u8>,
    ) {
        self.started = true;
        self.synced = true;
        self.context_id = context_id;
        self.vmid = vmid;
        self.run(offset, &TraceOp::Sync(*sync), &mut |_| {});
        self.rstack.continue_unknown();
        self.entry = Some(self.flow_state());
    }

    /// Whether this engine, started with [`Engine::start_at_sync`], has
    /// emitted exactly what an engine continuing `prev` would have, `prev`
    /// having run every operation up to and including that I-sync. If so,
    /// take over `prev`'s return stack and counters, so that this engine's
    /// state is the real one, and return `true`. The check: the state
    /// right after the I-sync equals `prev`'s, and no pop reached below
    /// this engine's own return-stack entries unless `prev`'s stack was
    /// empty too (a pop of an empty stack gives the same result either
    /// way).
    ///
    /// After [`Engine::mark_share`], the return stack at the mark must
    /// also be the newest entries of `prev`'s (all of them when the
    /// warm-up saw the whole stack), and the rest of `prev`'s stack is the
    /// base put beneath.
    pub(crate) fn join(&mut self, prev: &Engine) -> bool {
        let Some(entry) = self.entry else {
            return false;
        };
        let base = match &self.warm {
            None => prev.rstack,
            Some(w) => match prev.rstack.beneath(w) {
                Some(b) => b,
                None => return false,
            },
        };
        if entry != prev.flow_state() || (self.rstack.underflowed() && !base.is_empty()) {
            return false;
        }
        self.rstack.rebase(&base);
        self.ignored += prev.ignored;
        self.entry = None;
        self.warm = None;
        true
    }

    /// Mark the state right after the I-sync just run as the start of a
    /// share of the trace that [`Engine::join`] checks, for an engine that
    /// has decoded some of the trace before it from an earlier I-sync (a
    /// warm-up whose events are dropped). Its return stack holds the
    /// entries pushed during the warm-up and not yet popped: the newest
    /// entries of the real stack, so that returns to calls made in the
    /// warm-up need no entry from before it.
    pub(crate) fn mark_share(&mut self) {
        self.entry = Some(self.flow_state());
        self.warm = Some(self.rstack);
        self.rstack.mark();
    }

    /// Packets that did not affect the flow (data trace, triggers, ...).
    pub(crate) fn ignored(&self) -> u64 {
        self.ignored
    }

    /// Take the block cache out, leaving an empty one in its place; the
    /// engine goes on as before (it finds its blocks again).
    pub(crate) fn take_cache(&mut self) -> BlockCache {
        let mut empty = BlockCache::default();
        empty.barriers = self.cache.barriers;
        self.forget_blocks();
        core::mem::replace(&mut self.cache, empty)
    }

    /// Use `cache` (made for the same memory image and barrier setting)
    /// instead of the engine's own.
    pub(crate) fn set_cache(&mut self, cache: BlockCache) {
        self.forget_blocks();
        self.cache = cache;
    }

    /// Whether `mem` is this engine's memory image and `barriers` its
    /// setting: a cache of one may go to the other.
    pub(crate) fn same_code(&self, mem: &Arc<dyn MemoryImage>, barriers: bool) -> bool {
        Arc::ptr_eq(&self.mem, mem) && self.cache.barriers == barriers
    }

    /// The engine's memory image.
    pub(crate) fn memory(&self) -> &Arc<dyn MemoryImage> {
        &self.mem
    }

    /// Drop every reference to a cached block (the PC's block and the
    /// pending link); the PC's address and instruction set stay.
    fn forget_blocks(&mut self) {
        if let Some(pc) = self.pc.as_mut() {
            pc.block = NONE;
            pc.index = 0;
        }
        self.link = None;
        self.rstack.forget_hints();
    }

    /// The return stack's hint for a call ending block `b`: the block and
    /// the address space, so that the return finds the block after the
    /// call through `b`'s fall-through link instead of a lookup.
    #[inline]
    fn call_hint(&mut self, b: u32) -> u64 {
        if self.hint_generation != self.cache.generation {
            self.rstack.forget_hints();
            self.hint_generation = self.cache.generation;
        }
        u64::from(b) | u64::from(self.ns) << 32
    }

    /// Where a return to `addr` (popped with `hint`) goes on: its block
    /// when the call's block links to it already, else a link to make.
    #[inline]
    fn return_to(&mut self, addr: u32, isa: Isa, hint: u64) -> Pc {
        let mut pc = Pc {
            addr,
            isa,
            block: NONE,
            index: 0,
        };
        if hint != rstack::NO_HINT
            && self.hint_generation == self.cache.generation
            && hint >> 32 == u64::from(self.ns)
        {
            let b = hint as u32;
            if let Some(blk) = self.cache.blocks.get(b as usize) {
                if blk.end_addr == addr {
                    if blk.fall == NONE {
                        self.link = Some((b, false));
                    } else {
                        pc.block = blk.fall;
                    }
                }
            }
        }
        pc
    }

    #[inline]
    fn space(&self) -> Space {
        if self.ns {
            Space::NonSecure
        } else {
            Space::Secure
        }
    }

    #[inline]
    fn ev(&self, offset: u64, kind: EventKind) -> Event {
        Event {
            offset,
            id: self.id,
            kind,
        }
    }

    #[inline]
    fn flush<F: FnMut(Event)>(&mut self, out: &mut F) {
        self.open = false;
        if let Some(e) = self.pending.take() {
            out(e);
            if self.carry > 0 {
                let c = core::mem::take(&mut self.carry);
                out(self.ev(self.carry_at, EventKind::CycleCount(c)));
            }
        }
    }

    /// ETMv3: hand on each run of instructions inside one block (up to
    /// and including a waypoint, a conditional instruction or one that
    /// failed its condition, across P-headers while nothing else comes
    /// between) as one range with the cycles of its instructions summed,
    /// instead of one range per instruction. The instructions, their order, what
    /// each range says of its last instruction and the cycles' total are
    /// the same; the instructions before a range's last one all executed.
    pub(crate) fn set_block_ranges(&mut self, on: bool) {
        self.block_ranges = on && self.flavor == Atoms::PerInstruction;
    }

    /// The trace ID its events are stamped with.
    #[must_use]
    pub fn id(&self) -> u8 {
        self.id
    }

    /// Run one operation.
    pub fn run<F: FnMut(Event)>(&mut self, offset: u64, op: &TraceOp, out: &mut F) {
        self.run_inline(offset, op, out);
    }

    /// [`run`](Self::run), inlined where a decoder runs the operations of
    /// a stream's packets: a call there costs the PTM decode 3% of its
    /// instructions.
    #[inline(always)]
    pub(crate) fn run_inline<F: FnMut(Event)>(&mut self, offset: u64, op: &TraceOp, out: &mut F) {
        self.enter(offset, out);
        match *op {
            TraceOp::InsnAtoms(a) => {
                self.insn_atoms(offset, a, out);
                return;
            }
            TraceOp::WaypointAtoms {
                count,
                e_bits,
                cycles,
            } => {
                self.flush(out);
                self.waypoint_atoms(offset, count, e_bits, cycles, out);
                return;
            }
            TraceOp::Branch(b) => {
                self.branch(offset, &b, out);
                return;
            }
            _ => {}
        }
        self.flush(out);
        match *op {
            TraceOp::ASync => {}
            TraceOp::Sync(s) => self.sync(offset, &s, out),
            TraceOp::WaypointUpdate(t) => self.waypoint_update(offset, t, out),
            TraceOp::ContextId(c) => {
                if self.context_id != Some(c) {
                    self.context_id = Some(c);
                    self.report_context(offset, out);
                }
            }
            TraceOp::Vmid(v) => {
                if self.vmid != Some(v) {
                    self.vmid = Some(v);
                    self.report_context(offset, out);
                }
            }
            TraceOp::ExceptionReturn => out(self.ev(offset, EventKind::ExceptionReturn)),
            TraceOp::Timestamp { value, cycles } => {
                out(self.ev(offset, EventKind::Timestamp { value, cycles }));
            }
            TraceOp::CycleCount(c) => out(self.ev(offset, EventKind::CycleCount(c))),
            TraceOp::ExceptionEntry | TraceOp::Ignored => self.ignored += 1,
            TraceOp::InsnAtoms(_) | TraceOp::WaypointAtoms { .. } | TraceOp::Branch(_) => {}
        }
    }

    /// The packet stream was damaged: forget the position until the next
    /// address packet or I-sync.
    pub(crate) fn lose_sync<F: FnMut(Event)>(&mut self, offset: u64, out: &mut F) {
        self.flush(out);
        // Packets were lost: the calls and returns among them changed the
        // processor's return stack in ways nobody knows, so the model's
        // entries would give wrong return addresses; a return predicted
        // by the hardware now shows as an unknown target instead.
        self.rstack.clear();
        self.known_bits = 0;
        // Waiting for the target of an executed indirect branch (ETMv3),
        // the decoder had a position too: the damage may have taken the
        // packet that gives it.
        let awaiting = self.awaiting.take().is_some();
        if self.pc.take().is_some() || awaiting {
            out(self.ev(offset, EventKind::Gap(GapReason::PacketError)));
        }
    }

    /// End of the trace.
    pub(crate) fn finish<F: FnMut(Event)>(&mut self, out: &mut F) {
        self.flush(out);
        out(self.ev(self.last_offset, EventKind::EndOfTrace));
    }

    fn context(&self, cycles: Option<u32>) -> Context {
        Context {
            ns: self.ns,
            hyp: self.hyp,
            context_id: self.context_id,
            vmid: self.vmid,
            isa: self.pc.map_or(self.cur_isa, |p| p.isa),
            cycles,
        }
    }

    /// Report a context change (after synchronization only: the I-sync
    /// reports the first context).
    fn report_context<F: FnMut(Event)>(&mut self, offset: u64, out: &mut F) {
        if self.synced {
            let c = self.context(None);
            out(self.ev(offset, EventKind::Context(c)));
        }
    }

    fn set_target<F: FnMut(Event)>(&mut self, offset: u64, t: Target, out: &mut F) {
        self.link = None;
        self.awaiting = None;
        match t.isa {
            Some(isa) => {
                self.cur_isa = isa;
                self.pc = Some(Pc {
                    addr: t.addr,
                    isa,
                    block: NONE,
                    index: 0,
                });
            }
            None => {
                self.pc = None;
                out(self.ev(offset, EventKind::Gap(GapReason::UnsupportedIsa)));
            }
        }
    }

    fn sync<F: FnMut(Event)>(&mut self, offset: u64, s: &Sync, out: &mut F) {
        let first = !self.synced;
        if s.reason == SyncReason::Periodic && !first && s.lsip.is_none() {
            self.check_sync(offset, s.target, out);
        }
        let before = (
            self.pc.map_or(self.cur_isa, |p| p.isa),
            self.ns,
            self.hyp,
            self.context_id,
        );
        self.synced = true;
        self.known_bits = 32;
        self.ns = s.ns;
        self.hyp = s.hyp;
        if s.context_id.is_some() {
            self.context_id = s.context_id;
        }
        let trace_on = match s.reason {
            SyncReason::TraceOn(r) => Some(r),
            SyncReason::Periodic if first => Some(TraceOnReason::Filter),
            SyncReason::Periodic => None,
        };
        if trace_on.is_some() {
            self.rstack.clear();
        }
        self.set_target(offset, s.target, out);
        let (on_cycles, ctx_cycles) = match self.flavor {
            Atoms::PerWaypoint => (s.cycles, None),
            Atoms::PerInstruction => (None, s.cycles),
        };
        if let Some(reason) = trace_on {
            out(self.ev(
                offset,
                EventKind::TraceOn {
                    reason,
                    cycles: on_cycles,
                },
            ));
        }
        match self.flavor {
            Atoms::PerInstruction => {
                let c = self.context(ctx_cycles);
                out(self.ev(offset, EventKind::Context(c)));
            }
            Atoms::PerWaypoint => {
                // Reported when the I-sync shows a state other than the
                // one the decoder was following.
                let now = (self.cur_isa, self.ns, self.hyp, self.context_id);
                if first || now != before {
                    let c = self.context(None);
                    out(self.ev(offset, EventKind::Context(c)));
                }
            }
        }
        if let (Some(lsip), Some(pc)) = (s.lsip, self.pc) {
            // The data instruction at the I-sync address executed; tracing
            // goes on at the LSiP address.
            let b = self.cache.get(&*self.mem, pc.addr, pc.isa, self.space());
            let blk = self.cache.blocks[b as usize];
            if let Some(&i) = self
                .cache
                .arena
                .get(blk.first as usize)
                .filter(|_| blk.len > 0)
            {
                let r = range_of(&i, 1, pc.addr, pc.isa, true, None, self.space());
                out(self.ev(offset, EventKind::Range(r)));
            }
            self.pc = Some(Pc {
                addr: lsip,
                isa: pc.isa,
                block: NONE,
                index: 0,
            });
        }
    }

    /// Report why the block at the PC could not be followed and wait for
    /// the next address.
    fn block_error<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        end: BlockEnd,
        start: u32,
        isa: Isa,
        out: &mut F,
    ) {
        let kind = match end {
            BlockEnd::Nacc(addr) => EventKind::AddrNacc { addr },
            BlockEnd::Undefined(addr) if addr == start && self.inside_instruction(addr, isa) => {
                EventKind::Gap(GapReason::InsideInstruction { addr })
            }
            BlockEnd::Undefined(addr) => EventKind::Gap(GapReason::Undefined { addr }),
            BlockEnd::Limit | BlockEnd::Waypoint => {
                EventKind::Gap(GapReason::NoWaypoint { addr: start })
            }
        };
        out(self.ev(offset, kind));
        self.pc = None;
    }

    /// Whether the halfword before `addr` begins a 32-bit T32 instruction
    /// of the image that covers `addr`.
    #[cold]
    fn inside_instruction(&self, addr: u32, isa: Isa) -> bool {
        if isa != Isa::T32 || addr < 2 {
            return false;
        }
        let at = addr - 2;
        let mut bytes = [0u8; 4];
        let n = self.mem.read(self.space(), at, &mut bytes);
        isa_decode::decode(isa_decode::Isa::T32, &bytes[..n], at).is_some_and(|i| i.size == 4)
    }

    /// Report that the trace contradicts the decoded flow.
    #[cold]
    fn inconsistent<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        check: Check,
        expected: u32,
        traced: Option<u32>,
        out: &mut F,
    ) {
        // The calls and returns of the wrong walk left entries the
        // processor's return stack does not have.
        self.rstack.clear();
        out(self.ev(
            offset,
            EventKind::Inconsistent {
                check,
                expected,
                traced,
            },
        ));
    }

    /// A branch address packet without exception after a walk that goes
    /// on at `addr` in `isa` (the fall-through or the target of a direct
    /// branch): the packet must name the same place.
    #[inline]
    fn check_branch<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        addr: u32,
        isa: Isa,
        target: Target,
        out: &mut F,
    ) {
        if target.addr != addr || target.isa.is_some_and(|t| t != isa) {
            self.inconsistent(offset, Check::Branch, addr, Some(target.addr), out);
        }
    }

    /// A periodic I-sync at `target` while the walk is at the PC: ETMv3
    /// must be exactly there; PTM anywhere in the straight-line code from
    /// the PC up to and including the next waypoint (a PTM I-sync may come
    /// between two waypoints).
    fn check_sync<F: FnMut(Event)>(&mut self, offset: u64, target: Target, out: &mut F) {
        let Some(pc) = self.pc else {
            return;
        };
        let same_isa = target.isa.is_none_or(|t| t == pc.isa);
        let ok = match self.flavor {
            Atoms::PerInstruction => target.addr == pc.addr && same_isa,
            Atoms::PerWaypoint => {
                let b = self.cache.get(&*self.mem, pc.addr, pc.isa, self.space());
                let blk = self.cache.blocks[b as usize];
                same_isa
                    && target.addr >= pc.addr
                    && (target.addr < blk.end_addr || target.addr == pc.addr)
            }
        };
        if !ok {
            self.inconsistent(offset, Check::Sync, pc.addr, Some(target.addr), out);
        }
    }

    #[inline]
    fn block_at(&mut self, pc: &mut Pc) -> u32 {
        if pc.block == NONE {
            let space = self.space();
            let generation = self.cache.generation;
            let b = self.cache.get(&*self.mem, pc.addr, pc.isa, space);
            pc.block = b;
            pc.index = 0;
            // When a clear made room for this block, the source is gone.
            let kept = self.cache.generation == generation;
            if let Some((src, taken)) = self.link.take().filter(|_| kept) {
                if let Some(s) = self.cache.blocks.get_mut(src as usize) {
                    if taken {
                        s.taken = b;
                    } else {
                        s.fall = b;
                    }
                }
            }
        }
        self.link = None;
        pc.block
    }

    /// Walk from the PC to the next waypoint and report the range; returns
    /// the waypoint, or `None` (after reporting why) when there is none.
    #[inline(always)]
    fn walk_to_waypoint<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        executed: bool,
        cycles: Option<u32>,
        out: &mut F,
    ) -> Option<(Pc, Waypoint, u32)> {
        let mut pc = self.pc?;
        let b = self.block_at(&mut pc);
        let space = self.space();
        // Fields are read where they lie: a copy of the whole block or
        // instruction went through the stack, and reading parts of it
        // back waited for the copy's stores.
        let blk = &self.cache.blocks[b as usize];
        let (end, end_addr, len) = (blk.end, blk.end_addr, blk.len);
        if end != BlockEnd::Waypoint {
            self.block_error(offset, end, pc.addr, pc.isa, out);
            return None;
        }
        let last = &self.cache.arena[(blk.first + len - 1) as usize];
        let mut r = range_of(last, len, pc.addr, pc.isa, executed, cycles, space);
        let wp = Waypoint {
            target: last.target,
            indirect: last.indirect,
            link: last.link,
            addr: last.addr,
            after: last.addr.wrapping_add(u32::from(last.size)),
        };
        r.end = end_addr;
        out(self.ev(offset, EventKind::Range(r)));
        Some((pc, wp, b))
    }

    fn waypoint_atoms<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        count: u8,
        e_bits: u8,
        cycles: Option<u32>,
        out: &mut F,
    ) {
        for i in 0..count {
            if self.pc.is_none() {
                return;
            }
            let taken = (e_bits >> i) & 1 != 0;
            let cyc = if i + 1 == count { cycles } else { None };
            let Some((pc, last, b)) = self.walk_to_waypoint(offset, taken, cyc, out) else {
                return;
            };
            if !taken {
                let blk = &mut self.cache.blocks[b as usize];
                self.pc = Some(Pc {
                    addr: blk.end_addr,
                    isa: pc.isa,
                    block: blk.fall,
                    index: 0,
                });
                self.link = Some((b, false));
                continue;
            }
            let ret_isa = pc.isa;
            if let Some((addr, isa)) = last.target {
                let next = self.cache.blocks[b as usize].taken;
                self.pc = Some(Pc {
                    addr,
                    isa,
                    block: next,
                    index: 0,
                });
                self.link = Some((b, true));
            } else if last.indirect {
                match self
                    .return_stack_on
                    .then(|| self.rstack.pop_hinted())
                    .flatten()
                {
                    Some((addr, isa, hint)) => {
                        self.pc = Some(self.return_to(addr, isa, hint));
                    }
                    None => {
                        out(self.ev(
                            offset,
                            EventKind::Gap(GapReason::UnknownTarget { addr: last.addr }),
                        ));
                        self.pc = None;
                    }
                }
            }
            if last.link && self.return_stack_on {
                let hint = self.call_hint(b);
                self.rstack.push_hinted(last.after, ret_isa, hint);
            }
        }
    }
}

impl Engine {
    fn branch<F: FnMut(Event)>(&mut self, offset: u64, b: &Branch, out: &mut F) {
        self.known_bits = self.known_bits.max(b.bits);
        if self.known_bits < 32 {
            // Some high bits of the target were never traced: following it
            // would decode from a guessed address. Wait for an I-sync or a
            // full address (the PC is unknown already: it is set only
            // where every bit is known).
            self.flush(out);
            self.pc = None;
            self.link = None;
            return;
        }
        let mut ret = self.pc.map(|p| p.addr);
        match self.flavor {
            Atoms::PerWaypoint => {
                self.flush(out);
                if b.exception == 0 && self.pc.is_some() {
                    if let Some((pc, last, blk)) =
                        self.walk_to_waypoint(offset, true, b.cycles, out)
                    {
                        if last.link && self.return_stack_on {
                            let hint = self.call_hint(blk);
                            self.rstack.push_hinted(last.after, pc.isa, hint);
                        }
                        if let Some((addr, isa)) = last.target {
                            self.check_branch(offset, addr, isa, b.target, out);
                        }
                    }
                }
            }
            Atoms::PerInstruction => {
                if b.cancel {
                    if self.carry > 0 {
                        // Cycles came after the last instruction: one
                        // range per instruction would have handed it on
                        // already.
                        self.flush(out);
                    }
                    self.open = false;
                    match self.pending.take() {
                        Some(e) if self.block_ranges => ret = Some(self.cancel_run(e, out)),
                        Some(Event {
                            kind: EventKind::Range(r),
                            ..
                        }) => ret = Some(r.start),
                        _ => {}
                    }
                }
                self.flush(out);
                if let (0, false, Some(pc)) = (b.exception, b.cancel, self.pc) {
                    self.check_branch(offset, pc.addr, pc.isa, b.target, out);
                }
            }
        }
        if b.exception != 0 {
            out(self.ev(
                offset,
                EventKind::Exception {
                    number: b.exception,
                    ret,
                },
            ));
        }
        let before = (self.ns, self.hyp);
        if let Some(ns) = b.ns {
            self.ns = ns;
        }
        if let Some(hyp) = b.hyp {
            self.hyp = hyp;
        }
        self.set_target(offset, b.target, out);
        if before != (self.ns, self.hyp) {
            self.report_context(offset, out);
        }
    }

    fn waypoint_update<F: FnMut(Event)>(&mut self, offset: u64, wp: Target, out: &mut F) {
        let Some(mut pc) = self.pc else {
            return;
        };
        let mut b = self.block_at(&mut pc);
        let mut blk = self.cache.blocks[b as usize];
        // The packet names the last instruction executed since the last
        // waypoint: one of the straight-line code from the PC up to and
        // including the next waypoint.
        let beyond = blk.end == BlockEnd::Waypoint && wp.addr >= blk.end_addr;
        if wp.addr < pc.addr || beyond {
            self.inconsistent(offset, Check::Waypoint, pc.addr, Some(wp.addr), out);
            // Follow the trace: the instruction there executed.
            let Some(isa) = wp.isa else {
                self.pc = None;
                return;
            };
            pc = Pc {
                addr: wp.addr,
                isa,
                block: NONE,
                index: 0,
            };
            self.link = None;
            b = self.block_at(&mut pc);
            blk = self.cache.blocks[b as usize];
        }
        let mut found = None;
        for k in pc.index..blk.len {
            let i = self.cache.arena[(blk.first + k) as usize];
            let next = i.addr.wrapping_add(u32::from(i.size));
            if next > wp.addr || next < i.addr || k + 1 == blk.len {
                found = Some((k - pc.index + 1, i));
                break;
            }
        }
        let Some((count, last)) =
            found.filter(|(_, i)| i.waypoint || i.addr.wrapping_add(u32::from(i.size)) > wp.addr)
        else {
            self.block_error(offset, blk.end, pc.addr, pc.isa, out);
            return;
        };
        let r = range_of(&last, count, pc.addr, pc.isa, true, None, self.space());
        out(self.ev(offset, EventKind::Range(r)));
        self.pc = Some(Pc {
            addr: last.addr.wrapping_add(u32::from(last.size)),
            isa: pc.isa,
            block: NONE,
            index: 0,
        });
    }

    /// A PTM atom packet of `count` atoms whose E bits are `e_bits`: what
    /// [`Engine::run`] does for [`TraceOp::WaypointAtoms`], with the
    /// operation in registers (an operation built in memory and read back
    /// at once made the reads wait for its stores).
    #[inline]
    pub fn run_waypoint_atoms<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        count: u8,
        e_bits: u8,
        cycles: Option<u32>,
        out: &mut F,
    ) {
        self.enter(offset, out);
        self.flush(out);
        self.waypoint_atoms(offset, count, e_bits, cycles, out);
    }

    /// An ETMv3 P-header of `count` instructions whose E bits are
    /// `executed`, with, in cycle-accurate mode, the W atoms before the
    /// first instruction, before each later one and after the last one
    /// packed as `first | each << 8 | trailing << 16`: what [`Engine::run`]
    /// does for [`TraceOp::InsnAtoms`], with the operation in registers.
    #[inline]
    pub fn run_p_header<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        count: u32,
        executed: u16,
        cycles: Option<u32>,
        out: &mut F,
    ) {
        self.enter(offset, out);
        self.p_header(offset, count, executed, cycles, out);
    }

    /// What comes before every operation: the first one says the trace
    /// starts unsynchronized, and each is the latest offset.
    #[inline]
    fn enter<F: FnMut(Event)>(&mut self, offset: u64, out: &mut F) {
        if !self.started {
            self.started = true;
            out(self.ev(offset, EventKind::NoSync));
        }
        self.last_offset = offset;
    }

    /// [`TraceOp::InsnAtoms`].
    fn insn_atoms<F: FnMut(Event)>(&mut self, offset: u64, a: InsnAtoms, out: &mut F) {
        let cycles = a
            .cycles
            .map(|(f, e, t)| u32::from(f) | u32::from(e) << 8 | u32::from(t) << 16);
        self.p_header(offset, u32::from(a.count.min(16)), a.executed, cycles, out);
    }

    /// One range event per instruction, the last held back in `pending`
    /// (an exception in the next packet may cancel it). Instructions inside
    /// a block need no look at their atom: only a block's last
    /// instruction (its waypoint, when it has one) can move the PC
    /// elsewhere.
    #[inline(always)]
    fn p_header<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        count: u32,
        executed: u16,
        cycles: Option<u32>,
        out: &mut F,
    ) {
        let (first, each, trailing) = match cycles {
            Some(s) => (Some(s & 0xFF), Some(s >> 8 & 0xFF), s >> 16 & 0xFF),
            None => (None, None, 0),
        };
        if count > 0 {
            if self.block_ranges {
                if let Some(pc) = self.pc {
                    self.walk_runs(offset, pc, count, executed, first, each, out);
                } else {
                    self.flush(out);
                    if let Some(expected) = self.awaiting.take() {
                        self.inconsistent(offset, Check::Atoms, expected, None, out);
                    }
                }
            } else if let Some(pc) = self.pc {
                self.flush(out);
                self.walk_insns(offset, pc, count, executed, first, each, out);
            } else {
                self.flush(out);
                if let Some(expected) = self.awaiting.take() {
                    self.inconsistent(offset, Check::Atoms, expected, None, out);
                }
            }
        }
        if trailing > 0 {
            if self.open {
                // Before the next instruction of the open run.
                if self.carry == 0 {
                    self.carry_at = offset;
                }
                self.carry = self.carry.saturating_add(trailing);
            } else {
                self.flush(out);
                out(self.ev(offset, EventKind::CycleCount(trailing)));
            }
        }
    }

    /// The instructions of a P-header from `pc` on (`pending` is empty).
    /// Each instruction's range is handed on at once, except the last
    /// one of the packet, which is held back: nothing else can come
    /// between an instruction and the next one of the same packet.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn walk_insns<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        mut pc: Pc,
        count: u32,
        executed: u16,
        first: Option<u32>,
        each: Option<u32>,
        out: &mut F,
    ) {
        let id = self.id;
        let last = count - 1;
        let mut i = 0u32;
        loop {
            let b = self.block_at(&mut pc);
            let blk = self.cache.blocks[b as usize];
            if pc.index >= blk.len {
                self.block_error(offset, blk.end, pc.addr, pc.isa, out);
                return;
            }
            let span = blk.first as usize..(blk.first + blk.len) as usize;
            let alone = &self.cache.alone[span.clone()];
            let mut emit = |i: u32, alone: &Range, pending: &mut Option<Event>| {
                let exec = (executed >> i) & 1 != 0;
                let cycles = if i == 0 { first } else { each };
                let mut r = *alone;
                r.executed = exec;
                r.cycles = cycles;
                let e = Event {
                    offset,
                    id,
                    kind: EventKind::Range(r),
                };
                if i == last {
                    *pending = Some(e);
                } else {
                    out(e);
                }
                exec
            };
            // The instructions before the block's last one only move the
            // PC on by their size.
            let tail = blk.len - 1;
            while pc.index < tail {
                let r = &alone[pc.index as usize];
                emit(i, r, &mut self.pending);
                i += 1;
                pc.index += 1;
                pc.addr = r.end;
                if i == count {
                    self.pc = Some(pc);
                    return;
                }
            }
            let exec = emit(i, &alone[tail as usize], &mut self.pending);
            let insn = self.cache.arena[span][tail as usize];
            i += 1;
            match self.leave_block(offset, b, &blk, &insn, pc.isa, exec, i < count, out) {
                Some(next) => pc = next,
                None => return,
            }
            if i == count {
                self.pc = Some(pc);
                return;
            }
        }
    }

    /// ETMv3: where the flow goes after `insn`, the last instruction of
    /// block `b` (`blk`), whose atom was `exec`: its taken target or the
    /// instruction after it, with the link to make to that block. `None`
    /// when the target of an executed indirect branch is to come in the
    /// branch address packet: then the engine waits for it, or, with
    /// `more` atoms in the packet, reports the trace inconsistent.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn leave_block<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        b: u32,
        blk: &Block,
        insn: &CInsn,
        isa: Isa,
        exec: bool,
        more: bool,
        out: &mut F,
    ) -> Option<Pc> {
        if exec && insn.waypoint && (insn.target.is_some() || insn.indirect) {
            if let Some((addr, isa)) = insn.target {
                self.link = Some((b, true));
                return Some(Pc {
                    addr,
                    isa,
                    block: blk.taken,
                    index: 0,
                });
            }
            // The target comes in the branch address packet, before any
            // more atoms.
            self.pc = None;
            if more {
                self.inconsistent(offset, Check::Atoms, insn.addr, None, out);
            } else {
                self.awaiting = Some(insn.addr);
            }
            return None;
        }
        self.link = Some((b, false));
        Some(Pc {
            addr: insn.addr.wrapping_add(u32::from(insn.size)),
            isa,
            block: blk.fall,
            index: 0,
        })
    }

    /// [`Engine::walk_insns`] by runs (see [`Engine::set_block_ranges`]):
    /// the instructions of a P-header from `pc` on, the first ones going
    /// on with `pending` when that is open. The run under way is kept in
    /// `pending` (where it stays at the end of the packet).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn walk_runs<F: FnMut(Event)>(
        &mut self,
        offset: u64,
        mut pc: Pc,
        count: u32,
        executed: u16,
        first: Option<u32>,
        each: Option<u32>,
        out: &mut F,
    ) {
        let mut extend = self.open;
        if !extend {
            self.flush(out);
        }
        self.open = false;
        let mut i = 0u32;
        loop {
            let b = self.block_at(&mut pc);
            let blk = self.cache.blocks[b as usize];
            if pc.index >= blk.len {
                self.flush(out);
                self.block_error(offset, blk.end, pc.addr, pc.isa, out);
                return;
            }
            // The atoms of this block's instructions from the PC on, up to
            // the end of the packet: a run goes up to the first that
            // failed its condition.
            let n = (blk.len - pc.index).min(count - i);
            let bits = u32::from(executed) >> i & ((1u32 << n) - 1);
            let lead = (!bits).trailing_zeros();
            let (mut run, mut exec) = if lead < n {
                (lead + 1, false)
            } else {
                (n, true)
            };
            // A conditional instruction ends a run too: its outcome is
            // then the range's own.
            let base = (blk.first + pc.index) as usize;
            let stop = u32::from(self.cache.stop[base]);
            if stop < run {
                run = stop;
                exec = true;
            }
            let j = pc.index + run - 1;
            let at = (blk.first + j) as usize;
            let r = self.cache.alone[at];
            let carried = core::mem::take(&mut self.carry);
            let cycles = match (first, each) {
                (Some(f), Some(e)) if i == 0 => Some(f + e * (run - 1) + carried),
                (_, Some(e)) => Some(e * run),
                _ => None,
            };
            self.last_cycles = match (first, each) {
                (Some(f), _) if i + run == 1 => f + carried,
                (_, Some(e)) => e,
                _ => 0,
            };
            self.last_carried = if i + run == 1 { carried } else { 0 };
            match &mut self.pending {
                Some(Event {
                    kind: EventKind::Range(p),
                    ..
                }) if extend => {
                    if pc.index == 0 && run == 1 {
                        // The instruction before the last is in another
                        // block: kept for a cancel.
                        self.shrunk = Some(Event {
                            offset,
                            id: self.id,
                            kind: EventKind::Range(*p),
                        });
                    }
                    p.end = r.end;
                    p.count += run;
                    p.last_size = r.last_size;
                    p.last = r.last;
                    p.link = r.link;
                    p.ret = r.ret;
                    p.cond = r.cond;
                    p.executed = exec;
                    // A source's ranges all have cycles or none.
                    if let (Some(x), Some(y)) = (p.cycles.as_mut(), cycles) {
                        *x = x.saturating_add(y);
                    }
                }
                _ => {
                    let start = self.cache.alone[(blk.first + pc.index) as usize].start;
                    self.pending = Some(Event {
                        offset,
                        id: self.id,
                        kind: EventKind::Range(Range {
                            start,
                            count: run,
                            executed: exec,
                            cycles,
                            ..r
                        }),
                    });
                }
            }
            self.last_at = (at as u32, j);
            i += run;
            pc.index = j + 1;
            pc.addr = r.end;
            let waypoint = j == blk.len - 1 && blk.end == BlockEnd::Waypoint;
            // A run ends at a waypoint, a conditional instruction or a
            // failed condition; one cut short by the end of a block that is
            // not a waypoint goes on.
            extend = exec && !waypoint && !self.cache.arena[at].conditional;
            if !extend && i < count {
                self.flush(out);
            }
            if j == blk.len - 1 {
                let insn = self.cache.arena[at];
                match self.leave_block(offset, b, &blk, &insn, pc.isa, exec, i < count, out) {
                    Some(next) => pc = next,
                    None => return,
                }
            }
            if i == count {
                self.open = extend;
                self.pc = Some(pc);
                return;
            }
        }
    }

    /// ETMv3 by runs: an exception cancelled the last instruction of the
    /// run in `pending`, whose last instruction's cycles were
    /// `last_cycles`: hand on the rest of the run, if any; returns the
    /// cancelled instruction's address.
    #[cold]
    fn cancel_run<F: FnMut(Event)>(&mut self, e: Event, out: &mut F) -> u32 {
        let EventKind::Range(r) = e.kind else {
            return 0;
        };
        let addr = r.end.wrapping_sub(u32::from(r.last_size));
        let shrunk = self.shrunk.take();
        if r.count > 1 {
            let (at, j) = self.last_at;
            let rest = if j > 0 {
                let prev = (at as usize).checked_sub(1);
                prev.and_then(|k| self.cache.alone.get(k)).map(|p| Event {
                    kind: EventKind::Range(Range {
                        start: r.start,
                        count: r.count - 1,
                        executed: true,
                        cycles: r.cycles.map(|c| c.saturating_sub(self.last_cycles)),
                        ..*p
                    }),
                    ..e
                })
            } else {
                shrunk.map(|s| Event {
                    offset: e.offset,
                    ..s
                })
            };
            if let Some(rest) = rest {
                out(rest);
            }
            // The W atoms that came before the cancelled instruction in
            // P-headers of their own stay, as one range per instruction
            // hands them on.
            if self.last_carried > 0 {
                let c = core::mem::take(&mut self.last_carried);
                out(self.ev(self.carry_at, EventKind::CycleCount(c)));
            }
        }
        addr
    }
}

/// A one-range report of `count` instructions from `start` ending with
/// `last`.
#[inline]
fn range_of(
    last: &CInsn,
    count: u32,
    start: u32,
    isa: Isa,
    executed: bool,
    cycles: Option<u32>,
    space: Space,
) -> Range {
    Range {
        start,
        end: last.addr.wrapping_add(u32::from(last.size)),
        count,
        isa,
        last_size: last.size,
        last: last.class,
        link: last.link,
        ret: last.ret,
        cond: last.cond,
        executed,
        cycles,
        space,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryMap;

    fn engine() -> Engine {
        Engine::new(
            1,
            Atoms::PerWaypoint,
            true,
            false,
            Arc::new(MemoryMap::new()),
        )
    }

    fn sync(addr: u32, context_id: Option<u32>) -> Sync {
        Sync {
            target: Target {
                addr,
                isa: Some(Isa::A32),
            },
            ns: false,
            hyp: false,
            context_id,
            reason: SyncReason::Periodic,
            cycles: None,
            lsip: None,
        }
    }

    /// `prev` ran up to and including the I-sync; the part started at it.
    fn pair(prev_ctx: Option<u32>, part_ctx: Option<u32>) -> (Engine, Engine) {
        let mut prev = engine();
        prev.run(0, &TraceOp::ContextId(7), &mut |_| {});
        if prev_ctx != Some(7) {
            prev.context_id = prev_ctx;
        }
        prev.run(10, &TraceOp::Sync(sync(0x8000, None)), &mut |_| {});
        let mut part = engine();
        part.start_at_sync(10, &sync(0x8000, None), part_ctx, None);
        (prev, part)
    }

    #[test]
    fn join_accepts_the_same_state_and_rejects_another() {
        let (prev, mut part) = pair(Some(7), Some(7));
        assert!(part.join(&prev));
        let (prev, mut part) = pair(Some(7), Some(8));
        assert!(!part.join(&prev), "context ID differs");
        // An I-sync to a state the decoder cannot follow keeps the
        // instruction set from before it.
        let mut jazelle = sync(0x8000, None);
        jazelle.target.isa = None;
        let mut prev = engine();
        prev.cur_isa = Isa::T32;
        prev.run(10, &TraceOp::Sync(jazelle), &mut |_| {});
        let mut part = engine();
        part.start_at_sync(10, &jazelle, None, None);
        assert!(!part.join(&prev), "instruction set differs");
    }

    #[test]
    fn join_rejects_a_pop_below_the_part_when_the_stack_was_not_empty() {
        let (mut prev, mut part) = pair(Some(7), Some(7));
        prev.rstack.push(0x9000, Isa::A32);
        assert_eq!(part.rstack.pop(), None);
        assert!(!part.join(&prev));
        // With an empty stack before, the pop's result was right.
        let (prev, mut part) = pair(Some(7), Some(7));
        assert_eq!(part.rstack.pop(), None);
        assert!(part.join(&prev));
        // Pushes since the I-sync go on top of the real stack.
        let (mut prev, mut part) = pair(Some(7), Some(7));
        prev.rstack.push(0x9000, Isa::A32);
        part.rstack.push(0xA000, Isa::T32);
        assert!(part.join(&prev));
        assert_eq!(part.rstack.pop(), Some((0xA000, Isa::T32)));
        assert_eq!(part.rstack.pop(), Some((0x9000, Isa::A32)));
    }

    /// An engine warmed up from an earlier I-sync and marked at a later
    /// one keeps the calls made in between: a return to one of them is
    /// no longer a pop below its own entries.
    #[test]
    fn join_after_a_warm_up_keeps_its_calls() {
        let warmed = |prev: &mut Engine| {
            let mut part = engine();
            part.start_at_sync(10, &sync(0x8000, None), Some(7), None);
            // The warm-up saw a call (both stacks got its return address).
            prev.rstack.push(0x9000, Isa::A32);
            part.rstack.push(0x9000, Isa::A32);
            prev.run(20, &TraceOp::Sync(sync(0x8000, None)), &mut |_| {});
            part.run(20, &TraceOp::Sync(sync(0x8000, None)), &mut |_| {});
            part.mark_share();
            part
        };
        // The share returns from that call, then from an older one.
        let (mut prev, _) = pair(Some(7), Some(7));
        prev.rstack.push(0x7000, Isa::T32);
        let mut part = warmed(&mut prev);
        assert_eq!(part.rstack.pop(), Some((0x9000, Isa::A32)));
        assert!(part.join(&prev), "the return's call was in the warm-up");
        assert_eq!(part.rstack.pop(), Some((0x7000, Isa::T32)));
        assert_eq!(part.rstack.pop(), None);
        let mut part = warmed(&mut prev);
        assert_eq!(part.rstack.pop(), Some((0x9000, Isa::A32)));
        assert_eq!(part.rstack.pop(), None);
        assert!(!part.join(&prev), "a return to a call before the warm-up");
        // The real stack's newest entry is not the warm-up's call.
        let mut part = warmed(&mut prev);
        prev.rstack.push(0x6000, Isa::A32);
        assert!(!part.join(&prev));
        // Or its state after the I-sync differs.
        let (mut prev, _) = pair(Some(7), Some(7));
        let mut part = warmed(&mut prev);
        prev.context_id = Some(8);
        assert!(!part.join(&prev));
    }
}
