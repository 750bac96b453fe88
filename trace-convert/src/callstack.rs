//! Call-stack reconstruction from decoded events, per thread (trace ID and
//! context ID).
//!
//! The stack changes only where control flow is transferred; each change
//! is decided when the destination is known (the first address of the
//! next range, or an exception's return address):
//!
//! - **call**: a range whose last instruction is a branch with link that
//!   executed (`Range::link && executed`) opens a frame for the
//!   destination, remembering the return address (the address just past
//!   the branch);
//! - **return**: a range ending in a return (`Range::ret`) that executed
//!   closes frames down to the one whose return address is the
//!   destination; without such a frame it closes the innermost one. Any
//!   other transfer to a return address on the stack (`LDR PC`, an
//!   exception return, ...) closes frames down to it too;
//! - **return with no matching call**: returning out of the outermost
//!   frame opens an *inferred* frame for the caller (named by the code
//!   returned to), which stands for code running since the trace began;
//! - **tail call**: a branch without link to the entry of another function
//!   (a symbol's start, or without symbols an address some call went to)
//!   replaces the innermost frame, keeping its return address; with
//!   symbols, a branch into another function's body does the same;
//! - **exception**: opens a *handler* frame for the code at the vector,
//!   returning to the exception's preferred return address (a branch from
//!   the vector to the real handler is a tail call that keeps it a
//!   handler frame); [`EventKind::ExceptionReturn`], or arriving at the
//!   return address, closes it and everything above it;
//! - **trace gap**: [`EventKind::TraceOn`], [`EventKind::NoSync`],
//!   [`EventKind::Gap`] and [`EventKind::AddrNacc`] close every frame of
//!   the thread (what ran in between is unknown), and the next range
//!   opens a fresh outermost frame;
//! - **context change**: a new context ID switches to that process's own
//!   stack; the other stays as it was;
//! - **task switch**: the task stage ([`crate::tasks`]) switches trace ID
//!   to the stack of another RTOS task ([`CallStacks::resume`],
//!   [`CallStacks::start`]); the task left keeps its stack, and the one
//!   resumed closes the frames above the one it was suspended in when it
//!   arrives.
//!
//! **Inlined functions** ([`FrameKind::Inline`]) are frames above the real
//! function whose code runs inside them, as DWARF tells
//! ([`Symbolizer::inline_scope`]): after each range the frames above the
//! innermost real frame are the chain of inlined functions at the range's
//! first instruction, closing and opening only where the chain differs (two
//! copies of one inlined function are two frames). A call from inlined code
//! nests the callee above them; the return closes it and the chain at the
//! return address takes over. An exception takes the chain at its return
//! address before the handler opens. A range that crosses from one chain
//! to another is split by the converter ([`split`]), so that each piece
//! runs in one chain; an unsplit range takes the chain of its first
//! instruction.
//!
//! The depth is bounded ([`CallStacks::new`]); calls beyond it are counted
//! ([`StackStats::dropped`]) and their returns matched against the count;
//! inlined frames beyond it are left out.
//!
//! Frames are named by the symbol covering their entry address, or
//! `0x…` (the entry address) without one; inlined frames by the DWARF name
//! of the inlined function. See [`crate::symbols`].

pub mod split;

use crate::fast_map::{FastMap, FastSet};
use crate::symbols::{hex_name, InlineScope, InlineSite, Symbolizer};

use trace_core::event::{Event, EventKind, InsnClass, Range};

/// Who executed the code: a core (trace ID) and, when context IDs are
/// traced, a process (context ID); in a per-thread perf.data recording,
/// also the Linux thread whose trace it is; on a core running an RTOS,
/// the task the task stage found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ThreadKey {
    /// Trace ID of the source (one per core).
    pub id: u8,
    /// Context ID, when the trace carries one.
    pub context: Option<u32>,
    /// The Linux thread ID, when the input says whose trace it is (see
    /// [`CallStacks::set_task`]).
    pub task: Option<u32>,
    /// The RTOS task, by its number in the run (see [`crate::tasks`]);
    /// `None` for what ran on the core before its first task switch.
    pub rtos: Option<u32>,
}

impl ThreadKey {
    /// The thread of trace ID `id`, with no context ID and no task.
    #[must_use]
    pub const fn of_id(id: u8) -> ThreadKey {
        ThreadKey {
            id,
            context: None,
            task: None,
            rtos: None,
        }
    }
}

/// Default bound of the stack depth.
pub const DEFAULT_MAX_DEPTH: usize = 1024;

/// Index of a function name in [`Names`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

/// How a frame was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// The outermost frame when tracing (re)started.
    Root,
    /// A call (branch with link).
    Call,
    /// A tail call or jump into another function, replacing a frame.
    TailCall,
    /// An exception handler (the code at the vector and where it
    /// branches to).
    Handler,
    /// A caller the trace never saw calling: a return went out of the
    /// outermost frame.
    Inferred,
    /// An inlined function (DWARF), above the real function its code was
    /// inlined into; it has no return address, and its entry is the lowest
    /// address of that inlined copy.
    Inline,
    /// The first frame of an RTOS task that started at a function's entry
    /// (see [`crate::tasks`]): the RTOS entered it.
    Task,
}

impl FrameKind {
    /// `root`, `call`, `tail_call`, `handler`, `inferred`, `inline`,
    /// `task`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            FrameKind::Root => "root",
            FrameKind::Call => "call",
            FrameKind::TailCall => "tail_call",
            FrameKind::Handler => "handler",
            FrameKind::Inferred => "inferred",
            FrameKind::Inline => "inline",
            FrameKind::Task => "task",
        }
    }
}

/// One open frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Its function's name.
    pub func: FuncId,
    /// Where it was entered.
    pub entry: u32,
    /// Where it returns to, when known.
    pub ret: Option<u32>,
    /// How it was opened.
    pub kind: FrameKind,
    /// Clock ticks when it was opened.
    pub start: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum NameKey {
    Symbol(usize),
    Addr(u32),
    Inline(u32),
}

/// Interned frame names.
#[derive(Debug, Default)]
pub struct Names {
    names: Vec<String>,
    keys: FastMap<NameKey, FuncId>,
    /// The name of code at an entry address, by address hashed: calls
    /// go to the same few functions again and again.
    seen: CodeNames,
}

/// Slots of [`CodeNames`] (a power of two).
const CODE_SLOTS: usize = 256;

/// A direct-mapped cache of [`Names::code`]: each slot holds an entry
/// address that hashes to it and its name.
#[derive(Debug)]
struct CodeNames(Box<[Option<(u32, FuncId)>; CODE_SLOTS]>);

impl Default for CodeNames {
    fn default() -> CodeNames {
        CodeNames(Box::new([None; CODE_SLOTS]))
    }
}

impl CodeNames {
    #[inline]
    fn slot(&mut self, addr: u32) -> Option<&mut Option<(u32, FuncId)>> {
        self.0.get_mut(addr_hash8(addr) as usize & (CODE_SLOTS - 1))
    }
}

impl Names {
    /// The name of `id` (empty for an unknown id).
    #[must_use]
    pub fn get(&self, id: FuncId) -> &str {
        self.names.get(id.0 as usize).map_or("", String::as_str)
    }

    /// Number of names.
    #[must_use]
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// No names yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    fn intern(&mut self, key: NameKey, make: impl FnOnce() -> String) -> FuncId {
        if let Some(id) = self.keys.get(&key) {
            return *id;
        }
        let id = FuncId(u32::try_from(self.names.len()).unwrap_or(u32::MAX));
        self.names.push(make());
        self.keys.insert(key, id);
        id
    }

    fn code(&mut self, symbols: &Symbolizer, addr: u32) -> FuncId {
        if let Some(&mut Some((a, id))) = self.seen.slot(addr) {
            if a == addr {
                return id;
            }
        }
        let id = self.code_of(symbols, addr);
        if let Some(slot) = self.seen.slot(addr) {
            *slot = Some((addr, id));
        }
        id
    }

    /// [`code`](Self::code) looked up.
    fn code_of(&mut self, symbols: &Symbolizer, addr: u32) -> FuncId {
        match symbols.function_index(addr) {
            Some(i) => self.intern(NameKey::Symbol(i), || {
                symbols
                    .functions()
                    .get(i)
                    .map_or_else(|| hex_name(addr), |f| f.name.clone())
            }),
            None => self.intern(NameKey::Addr(addr), || hex_name(addr)),
        }
    }

    /// Names given in order (`FuncId(0)`, `FuncId(1)`, ...), for tests.
    #[cfg(test)]
    pub(crate) fn listed(names: &[&str]) -> Names {
        let mut n = Names::default();
        for (i, name) in (0u32..).zip(names) {
            n.intern(NameKey::Addr(i), || (*name).to_owned());
        }
        n
    }

    /// The name of an exception handler's frame entered at `addr`: its
    /// function's, when `addr` is that function's entry (a vector table of
    /// addresses, as M-profile cores have, leads there); else the address
    /// itself. An A/R-profile vector is an instruction inside the vector
    /// table, under whatever symbol covers it (`_start` of the startup
    /// code): the frame is named `0x00000018`, not after that symbol.
    fn vector(&mut self, symbols: &Symbolizer, addr: u32) -> FuncId {
        match symbols.function(addr) {
            Some(f) if f.start != addr => self.intern(NameKey::Addr(addr), || hex_name(addr)),
            _ => self.code(symbols, addr),
        }
    }

    fn inline(&mut self, symbols: &Symbolizer, name: u32) -> FuncId {
        self.intern(NameKey::Inline(name), || symbols.inline_name(name))
    }
}

/// The transfer a range's last instruction makes, as far as the stacks go
/// (see [`CallStacks::last_transfer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferKind {
    /// None: the flow goes on after it (or nothing is known).
    None,
    /// A branch with link that executed.
    Call,
    /// A subroutine return that executed.
    Return,
    /// Any other branch that executed (exception returns included).
    Branch,
}

/// How the flow of a trace ID left its latest range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastTransfer {
    /// What its last instruction does.
    pub kind: TransferKind,
    /// Where the range ended (the address after its last instruction).
    pub end: u32,
    /// The size of that instruction.
    pub last_size: u8,
    /// Its instruction set.
    pub isa: trace_core::event::Isa,
}

impl LastTransfer {
    /// The address of the range's last instruction.
    #[must_use]
    pub fn last(&self) -> u32 {
        self.end.wrapping_sub(u32::from(self.last_size))
    }
}

/// Counters of the reconstruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackStats {
    /// Calls seen.
    pub calls: u64,
    /// Returns matched to a frame on the stack.
    pub returns: u64,
    /// Returns with no matching frame (closed the innermost one or
    /// inferred a caller).
    pub unmatched_returns: u64,
    /// Inferred caller frames.
    pub inferred: u64,
    /// Tail calls and jumps into other functions.
    pub tail_calls: u64,
    /// Exceptions.
    pub exceptions: u64,
    /// Times every frame was closed because the trace started again or
    /// could not be followed: the sum of the three counts below.
    pub resets: u64,
    /// Of those, at a trace-on (tracing started again, with the stack
    /// unknown).
    pub resets_at_trace_on: u64,
    /// Of those, at a gap in the trace (damaged or lost trace, lost
    /// synchronization).
    pub resets_at_gaps: u64,
    /// Of those, at an address the memory image does not cover.
    pub resets_at_nacc: u64,
    /// Calls not recorded because the stack was at its depth bound.
    pub dropped: u64,
    /// Deepest stack seen.
    pub max_depth: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Pending {
    #[default]
    None,
    Call {
        ret: u32,
    },
    Return,
    Branch,
    Handler {
        ret: Option<u32>,
    },
    /// A task resumed (see [`CallStacks::resume`]): its frames from this
    /// index on close when it arrives.
    Resume(usize),
}

#[derive(Debug, Default)]
struct Thread {
    frames: Vec<Frame>,
    /// `masks[i]` is the filter of the return addresses of `frames[..=i]`
    /// ([`ret_bit`] of each), so that closing frames finds the filter of
    /// those left without going through them.
    masks: Vec<u64>,
    overflow: u64,
    pending: Pending,
    prev_end: Option<u32>,
    /// Size and instruction set of the last instruction of the latest
    /// range (ending at `prev_end`).
    last_size: u8,
    last_isa: trace_core::event::Isa,
    /// Instructions run by the thread.
    instructions: u64,
    /// The next frame opened on an empty stack is a task's first
    /// ([`FrameKind::Task`]).
    starting: bool,
    /// A filter of the frames' return addresses ([`ret_bit`] of each):
    /// an address whose bit is clear is no frame's return address.
    rets: u64,
    /// Inlined frames above the innermost real frame.
    inl: usize,
    /// Where those inlined frames hold: code in `lo..hi` runs in the same
    /// chain of inlined functions.
    lo: u32,
    hi: u32,
    /// What the short path reads, made after every full update.
    quick: Quick,
}

/// What [`CallStacks::quiet_range`] needs of a thread besides its pending
/// transfer, made after every full update (the short path changes none
/// of it): the frames as a few plain values.
#[derive(Debug, Clone, Copy, Default)]
struct Quick {
    /// The thread has a real frame and no call past the depth bound.
    open: bool,
    /// The innermost real frame's entry.
    entry: u32,
    /// The function holding `entry`, when known (`fn_lo..fn_hi`, else
    /// empty): a branch inside it is no tail call.
    fn_lo: u32,
    fn_hi: u32,
}

impl Thread {
    /// Make `rets` and `inl` again from the frames (after frames were
    /// closed).
    fn refilter(&mut self) {
        self.masks.truncate(self.frames.len());
        self.rets = self.masks.last().copied().unwrap_or(0);
        debug_assert_eq!(
            self.rets,
            self.frames
                .iter()
                .filter_map(|f| f.ret)
                .fold(0, |m, r| m | ret_bit(r))
        );
        self.inl = self
            .frames
            .iter()
            .rev()
            .take_while(|f| f.kind == FrameKind::Inline)
            .count();
    }

    /// Whether some frame returns to `target`. The filter answers most
    /// queries; its hits are checked against the frames, as a branch
    /// whose target only shares a bit with a return address (one in
    /// nine of the branches in the bundled example's loops) changes no
    /// frame.
    #[inline(always)]
    fn returns_to(&self, target: u32) -> bool {
        self.rets & ret_bit(target) != 0 && self.holds_return(target)
    }

    /// Whether the flow reaches `target` with no frame opened or closed,
    /// as far as the real frames go (see
    /// [`CallStacks::quiet_range`]): the thread has a real frame within
    /// the depth bound, and the flow goes on sequentially from the range
    /// before, or a branch lands inside the innermost real frame's
    /// function, to no return address on the stack.
    ///
    /// Without symbols (`calls`: the filter of the call targets, see
    /// [`Shared::calls`]), a branch to no address some call went to is no
    /// tail call either.
    #[inline(always)]
    fn goes_on_quietly(&self, target: u32, calls: Option<&CallFilter>) -> bool {
        let q = self.quick;
        q.open
            && match self.pending {
                Pending::None => self.prev_end == Some(target),
                Pending::Branch => {
                    (q.entry == target
                        || (q.fn_lo <= target && target < q.fn_hi)
                        || calls.is_some_and(|c| !c.may_hold(target)))
                        && !self.returns_to(target)
                }
                _ => false,
            }
    }

    /// `r` ran last: what its last instruction transfers to, and where
    /// it ends.
    #[inline(always)]
    fn ran(&mut self, r: &Range) {
        self.pending = pending_after(r);
        self.prev_end = Some(r.end);
        self.last_size = r.last_size;
        self.last_isa = r.isa;
        self.instructions += u64::from(r.count);
    }

    /// Whether some frame returns to `target` (the filter said maybe).
    #[inline(never)]
    fn holds_return(&self, target: u32) -> bool {
        self.frames.iter().any(|f| f.ret == Some(target))
    }

    /// The innermost real (not inlined) frame.
    #[inline]
    fn real_top(&self) -> Option<&Frame> {
        self.frames
            .len()
            .checked_sub(self.inl + 1)
            .and_then(|i| self.frames.get(i))
    }
}

/// The bit of a return address in [`Thread::rets`].
#[inline]
fn ret_bit(addr: u32) -> u64 {
    1 << (((addr >> 1) ^ (addr >> 7)) % 64)
}

/// Eight bits of a code address, hashed (Fibonacci hashing of the
/// halfword address): the slot or bit of [`CodeNames`] and [`CallFilter`].
#[inline(always)]
fn addr_hash8(addr: u32) -> u32 {
    (addr >> 1).wrapping_mul(0x9E37_79B1) >> 24
}

/// A filter of the addresses calls went to ([`Shared::call_targets`]): an
/// address whose bit is clear is none of them.
#[derive(Debug, Default)]
struct CallFilter([u64; 4]);

impl CallFilter {
    /// The word and bit of `addr`.
    #[inline(always)]
    fn at(addr: u32) -> (usize, u64) {
        let h = addr_hash8(addr);
        ((h as usize >> 6) & 3, 1 << (h & 63))
    }

    fn add(&mut self, addr: u32) {
        let (w, bit) = CallFilter::at(addr);
        if let Some(word) = self.0.get_mut(w) {
            *word |= bit;
        }
    }

    /// Whether some call may have gone to `addr`.
    #[inline(always)]
    fn may_hold(&self, addr: u32) -> bool {
        let (w, bit) = CallFilter::at(addr);
        self.0.get(w).is_none_or(|word| word & bit != 0)
    }
}

/// The call targets met last, one per slot of [`addr_hash8`]: a call to
/// one of them needs no look into [`Shared::call_targets`], which holds
/// it already.
#[derive(Debug)]
struct RecentCalls(Box<[u64; 256]>);

impl Default for RecentCalls {
    fn default() -> RecentCalls {
        // No address is `u64::MAX`.
        RecentCalls(Box::new([u64::MAX; 256]))
    }
}

impl RecentCalls {
    /// Whether `addr` is not the latest call target of its slot; it
    /// becomes it.
    #[inline(always)]
    fn fresh(&mut self, addr: u32) -> bool {
        let slot = self.0.get_mut(addr_hash8(addr) as usize);
        match slot {
            Some(s) if *s == u64::from(addr) => false,
            Some(s) => {
                *s = u64::from(addr);
                true
            }
            None => true,
        }
    }
}

/// The call stacks of every thread.
#[derive(Debug)]
pub struct CallStacks {
    /// Every thread's stack, with its key at the same index in `keys`.
    threads: Vec<Thread>,
    keys: Vec<ThreadKey>,
    slots: FastMap<ThreadKey, usize>,
    /// Per trace ID: its current context ID.
    context: Vec<Option<u32>>,
    /// Per trace ID: its current RTOS task.
    rtos: Vec<Option<u32>>,
    /// The Linux thread the events now fed belong to.
    task: Option<u32>,
    /// Per trace ID: the index of its current thread, or `usize::MAX`.
    current_slot: Box<[usize; 256]>,
    /// Everything but the threads, so that a thread and the rest can be
    /// borrowed at once.
    shared: Shared,
}

/// The state shared by all threads.
#[derive(Debug)]
struct Shared {
    names: Names,
    call_targets: FastSet<u32>,
    /// The filter of `call_targets`, read by the short path when there are
    /// no symbols ([`Shared::calls`]).
    call_filter: CallFilter,
    /// The targets last added to both.
    recent_calls: RecentCalls,
    /// No symbols: a branch is a tail call only to a call target.
    no_symbols: bool,
    /// The function last found by `function_of`: start, end, index.
    fn_cache: Option<(u32, u32, usize)>,
    max_depth: usize,
    stats: StackStats,
    closed: Vec<Frame>,
    opened: Vec<Frame>,
}

impl Default for CallStacks {
    fn default() -> CallStacks {
        CallStacks::new(DEFAULT_MAX_DEPTH)
    }
}

impl CallStacks {
    /// Empty stacks bounded at `max_depth` frames (at least 1).
    #[must_use]
    pub fn new(max_depth: usize) -> CallStacks {
        CallStacks {
            threads: Vec::new(),
            keys: Vec::new(),
            slots: FastMap::default(),
            context: vec![None; 256],
            rtos: vec![None; 256],
            task: None,
            current_slot: Box::new([usize::MAX; 256]),
            shared: Shared {
                names: Names::default(),
                call_targets: FastSet::default(),
                call_filter: CallFilter::default(),
                recent_calls: RecentCalls::default(),
                no_symbols: false,
                fn_cache: None,
                max_depth: max_depth.max(1),
                stats: StackStats::default(),
                closed: Vec::new(),
                opened: Vec::new(),
            },
        }
    }

    /// Frame names.
    #[must_use]
    pub fn names(&self) -> &Names {
        &self.shared.names
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> StackStats {
        self.shared.stats
    }

    /// Frames the last call closed, innermost first.
    #[must_use]
    pub fn closed(&self) -> &[Frame] {
        &self.shared.closed
    }

    /// Whether the last call opened or closed frames.
    #[must_use]
    #[inline]
    pub fn changed(&self) -> bool {
        !self.shared.closed.is_empty() || !self.shared.opened.is_empty()
    }

    /// Frames the last call opened, outermost first.
    #[must_use]
    pub fn opened(&self) -> &[Frame] {
        &self.shared.opened
    }

    /// The stack of `thread`, outermost first.
    #[must_use]
    #[inline(always)]
    pub fn stack(&self, thread: ThreadKey) -> &[Frame] {
        let cur = self.current_slot[usize::from(thread.id)];
        let i = if self.keys.get(cur) == Some(&thread) {
            Some(cur)
        } else {
            self.slots.get(&thread).copied()
        };
        i.map_or(&[], |i| &self.threads[i].frames)
    }

    /// The thread events of trace ID `id` currently belong to.
    #[must_use]
    #[inline]
    pub fn current(&self, id: u8) -> ThreadKey {
        ThreadKey {
            id,
            context: self.context[usize::from(id)],
            task: self.task,
            rtos: self.rtos[usize::from(id)],
        }
    }

    /// Say which Linux thread the events fed from now on belong to
    /// (`None`: unknown): the trace of each thread of a per-thread
    /// perf.data recording gets stacks of its own.
    pub fn set_task(&mut self, task: Option<u32>) {
        if task != self.task {
            self.task = task;
            self.current_slot.fill(usize::MAX);
        }
    }

    /// How the flow of trace ID `id` left its latest range: the transfer
    /// its last instruction makes, where the range ended, and the size and
    /// instruction set of that instruction (for the task stage, which
    /// looks at it again); `None` before the first range or after a gap.
    #[must_use]
    pub fn last_transfer(&self, id: u8) -> Option<LastTransfer> {
        let t = self.threads.get(self.slot_if_known(id)?)?;
        let end = t.prev_end?;
        Some(LastTransfer {
            kind: match t.pending {
                Pending::Call { .. } => TransferKind::Call,
                Pending::Return => TransferKind::Return,
                Pending::Branch => TransferKind::Branch,
                Pending::None | Pending::Handler { .. } | Pending::Resume(_) => TransferKind::None,
            },
            end,
            last_size: t.last_size,
            isa: t.last_isa,
        })
    }

    /// Whether the latest range of trace ID `id` ended in a branch that is
    /// neither a call nor a subroutine return (see
    /// [`CallStacks::last_transfer`]) while its thread holds an exception
    /// frame: the only branch that can be an exception return.
    #[inline]
    #[must_use]
    pub fn branched_in_handler(&self, id: u8) -> bool {
        let slot = match self.current_slot[usize::from(id)] {
            usize::MAX => self.slot_if_known(id),
            i => Some(i),
        };
        slot.and_then(|i| self.threads.get(i)).is_some_and(|t| {
            t.pending == Pending::Branch && t.frames.iter().any(|f| f.kind == FrameKind::Handler)
        })
    }

    /// The slot of trace ID `id`'s current thread, when it has one.
    fn slot_if_known(&self, id: u8) -> Option<usize> {
        match self.current_slot[usize::from(id)] {
            usize::MAX => self.slots.get(&self.current(id)).copied(),
            i => Some(i),
        }
    }

    /// The threads of trace ID `id` in its current context ID (the RTOS
    /// tasks of that core and what ran before them), with their stacks.
    pub fn contexts(&self, id: u8) -> impl Iterator<Item = (ThreadKey, &[Frame])> {
        let context = self.context[usize::from(id)];
        let task = self.task;
        self.keys
            .iter()
            .zip(&self.threads)
            .filter(move |(k, _)| k.id == id && k.context == context && k.task == task)
            .map(|(k, t)| (*k, t.frames.as_slice()))
    }

    /// Instructions each thread ran so far, by thread.
    #[must_use]
    pub fn instructions(&self) -> Vec<(ThreadKey, u64)> {
        let mut v: Vec<(ThreadKey, u64)> = self
            .keys
            .iter()
            .zip(&self.threads)
            .map(|(k, t)| (*k, t.instructions))
            .collect();
        v.sort_unstable();
        v
    }

    /// Make RTOS task `rtos` the one trace ID `id` runs from now on (its
    /// stack as it was left), without changing any frame.
    pub fn switch(&mut self, id: u8, rtos: Option<u32>) {
        let i = usize::from(id);
        if self.rtos[i] != rtos {
            self.rtos[i] = rtos;
            self.current_slot[i] = usize::MAX;
        }
    }

    /// Resume `key` on its trace ID: it becomes current, and where the
    /// flow arrives next its frames from `index` on close (the frame it
    /// was suspended in, and those above it), as a return to that frame
    /// would close them.
    pub fn resume(&mut self, key: ThreadKey, index: usize) {
        self.switch(key.id, key.rtos);
        let slot = self.slot_of(self.current(key.id));
        if let Some(t) = self.threads.get_mut(slot) {
            t.pending = Pending::Resume(index);
            t.prev_end = None;
            t.quick = Quick::default();
        }
    }

    /// Start `key` on its trace ID afresh: it becomes current, and its
    /// stack begins where the flow arrives next (frames it still has
    /// close there), with a [`FrameKind::Task`] frame when `entry` (the
    /// task starts at a function's entry).
    pub fn start(&mut self, key: ThreadKey, entry: bool) {
        self.resume(key, 0);
        if let Some(t) = self.threads.get_mut(self.current_slot[usize::from(key.id)]) {
            t.starting = entry;
        }
    }

    /// Threads of trace ID `id` with open frames, sorted.
    #[must_use]
    pub fn open_threads(&self, id: u8) -> Vec<ThreadKey> {
        let mut v: Vec<ThreadKey> = self
            .keys
            .iter()
            .zip(&self.threads)
            .filter(|(k, t)| k.id == id && !t.frames.is_empty())
            .map(|(k, _)| *k)
            .collect();
        v.sort_unstable();
        v
    }

    /// Every thread with open frames, sorted.
    #[must_use]
    pub fn all_open_threads(&self) -> Vec<ThreadKey> {
        let mut v: Vec<ThreadKey> = self
            .keys
            .iter()
            .zip(&self.threads)
            .filter(|(_, t)| !t.frames.is_empty())
            .map(|(k, _)| *k)
            .collect();
        v.sort_unstable();
        v
    }

    /// Close every frame of `thread` (the end of its trace): afterwards
    /// [`closed`](Self::closed) lists them.
    pub fn close_all(&mut self, thread: ThreadKey) {
        self.shared.closed.clear();
        self.shared.opened.clear();
        if let Some(t) = self
            .slots
            .get(&thread)
            .copied()
            .and_then(|i| self.threads.get_mut(i))
        {
            self.shared.closed.extend(t.frames.drain(..).rev());
            t.masks.clear();
            t.rets = 0;
            t.inl = 0;
            t.quick = Quick::default();
            t.overflow = 0;
            t.pending = Pending::None;
            t.prev_end = None;
        }
    }

    /// [`apply`](Self::apply) for a range of trace ID `id` that opens and
    /// closes no frame, the most common event, done quickly: when the
    /// range goes on sequentially from the one before, or is the target of
    /// a branch inside the innermost real frame's function (to no return
    /// address on the stack), and runs where the inlined frames on top
    /// hold, it is applied and its thread returned. Otherwise nothing
    /// changes and `None` says to use `apply`.
    #[inline(always)]
    pub fn quiet_range(&mut self, id: u8, r: &Range) -> Option<ThreadKey> {
        self.ran_quietly(id, r).then(|| self.current(id))
    }

    /// [`quiet_range`](Self::quiet_range) saying only whether the range
    /// was applied (its thread is then [`current`](Self::current)).
    #[inline(always)]
    pub fn ran_quietly(&mut self, id: u8, r: &Range) -> bool {
        let slot = self.current_slot[usize::from(id)];
        let Some(t) = self.threads.get_mut(slot) else {
            return false;
        };
        let target = r.start;
        let calls = self.shared.calls();
        let quiet = t.lo <= target && r.end <= t.hi && t.goes_on_quietly(target, calls);
        if !quiet {
            return false;
        }
        t.ran(r);
        self.shared.closed.clear();
        self.shared.opened.clear();
        true
    }

    /// Whether the flow of trace ID `id` reaches `target` with no real
    /// frame opened or closed, as [`quiet_range`](Self::quiet_range)
    /// tests it before it looks at the inlined frames.
    #[inline]
    #[must_use]
    pub fn goes_on(&self, id: u8, target: u32) -> bool {
        self.threads
            .get(self.current_slot[usize::from(id)])
            .is_some_and(|t| t.goes_on_quietly(target, self.shared.calls()))
    }

    /// [`apply`](Self::apply) at clock ticks `time` for a range of trace
    /// ID `id` that [`quiet_range`](Self::quiet_range) turned down only
    /// because it starts where other inlined frames hold than those on
    /// top: the real frames stay as they are, the inlined ones on top
    /// become those at the range's start, and the thread is returned
    /// ([`closed`](Self::closed) and [`opened`](Self::opened) tell what
    /// changed). A range that is no such range, or that runs on into
    /// other inlined code (to be cut, see [`split`]), changes nothing, and
    /// `None` says to use `apply`.
    #[inline]
    pub fn inline_range(
        &mut self,
        id: u8,
        r: &Range,
        time: u64,
        symbols: &Symbolizer,
    ) -> Option<ThreadKey> {
        let slot = self.current_slot[usize::from(id)];
        let t = self.threads.get_mut(slot)?;
        if !t.goes_on_quietly(r.start, self.shared.calls()) {
            return None;
        }
        let scope = symbols.inline_scope(r.start);
        if r.count > 1 && r.end > scope.hi {
            return None;
        }
        self.shared.closed.clear();
        self.shared.opened.clear();
        self.shared.set_scope(t, &scope, time, symbols);
        t.ran(r);
        Some(self.current(id))
    }

    /// Apply `event` (at clock ticks `time`) to its thread's stack and
    /// return that thread; [`closed`](Self::closed) and
    /// [`opened`](Self::opened) then tell what changed. An
    /// [`EventKind::EndOfTrace`] changes nothing here: use
    /// [`close_all`](Self::close_all) for each of
    /// [`open_threads`](Self::open_threads).
    #[inline]
    pub fn apply(&mut self, event: &Event, time: u64, symbols: &Symbolizer) -> ThreadKey {
        self.shared.closed.clear();
        self.shared.opened.clear();
        let id = usize::from(event.id);
        if let EventKind::Context(c) = &event.kind {
            if c.context_id.is_some() && c.context_id != self.context[id] {
                self.context[id] = c.context_id;
                self.current_slot[id] = usize::MAX;
            }
        }
        let key = self.current(event.id);
        let slot = match self.current_slot[id] {
            usize::MAX => self.slot_of(key),
            i => i,
        };
        let Some(t) = self.threads.get_mut(slot) else {
            return key;
        };
        self.shared.no_symbols = symbols.is_empty();
        self.shared.apply(t, &event.kind, time, symbols);
        t.quick = self.shared.quick(t, symbols);
        key
    }

    /// The index of `key`'s thread (made when new), remembered as the
    /// current thread of its trace ID.
    #[inline(never)]
    fn slot_of(&mut self, key: ThreadKey) -> usize {
        let i = *self.slots.entry(key).or_insert_with(|| {
            self.threads.push(Thread::default());
            self.keys.push(key);
            self.threads.len() - 1
        });
        self.current_slot[usize::from(key.id)] = i;
        i
    }
}

impl Shared {
    /// The filter of the call targets when there are no symbols (a branch
    /// is then a tail call only to one of them), else `None`.
    #[inline(always)]
    fn calls(&self) -> Option<&CallFilter> {
        self.no_symbols.then_some(&self.call_filter)
    }

    #[inline]
    fn apply(&mut self, t: &mut Thread, kind: &EventKind, time: u64, symbols: &Symbolizer) {
        match kind {
            EventKind::Range(r) => self.range(t, r, time, symbols),
            EventKind::Exception { ret, .. } => self.exception(t, *ret, time, symbols),
            EventKind::ExceptionReturn => {
                if let Pending::Resume(i) = t.pending {
                    self.pop_to(t, i);
                } else if let Some(i) = t.frames.iter().rposition(|f| f.kind == FrameKind::Handler)
                {
                    self.pop_to(t, i);
                    self.stats.returns += 1;
                }
                t.pending = Pending::None;
                t.prev_end = None;
            }
            EventKind::TraceOn { .. }
            | EventKind::NoSync
            | EventKind::Gap(_)
            | EventKind::AddrNacc { .. } => {
                if !t.frames.is_empty() {
                    self.stats.resets += 1;
                    match kind {
                        EventKind::TraceOn { .. } => self.stats.resets_at_trace_on += 1,
                        EventKind::AddrNacc { .. } => self.stats.resets_at_nacc += 1,
                        _ => self.stats.resets_at_gaps += 1,
                    }
                }
                self.closed.extend(t.frames.drain(..).rev());
                t.masks.clear();
                t.rets = 0;
                t.inl = 0;
                t.overflow = 0;
                t.pending = Pending::None;
                t.prev_end = None;
            }
            _ => {}
        }
    }

    fn push(&mut self, t: &mut Thread, frame: Frame) {
        if t.frames.len() >= self.max_depth {
            t.overflow += 1;
            self.stats.dropped += 1;
        } else {
            t.frames.push(frame);
            t.rets |= frame.ret.map_or(0, ret_bit);
            t.masks.push(t.rets);
            t.inl = 0;
            self.opened.push(frame);
        }
        self.stats.max_depth = self.stats.max_depth.max(t.frames.len() as u64 + t.overflow);
    }

    /// Close frames `i..` (innermost first).
    fn pop_to(&mut self, t: &mut Thread, i: usize) {
        if let Some(gone) = t.frames.get(i..) {
            self.closed.extend(gone.iter().rev());
            t.frames.truncate(i);
        }
        t.refilter();
        t.overflow = 0;
    }

    /// Close the innermost real frame (with the inlined frames above it),
    /// or one above the depth bound.
    fn pop_one(&mut self, t: &mut Thread) {
        if t.overflow > 0 {
            t.overflow -= 1;
        } else if !t.frames.is_empty() {
            let i = t.frames.len().saturating_sub(t.inl + 1);
            self.pop_to(t, i);
        }
    }

    /// Make the inlined frames above the innermost real frame the chain at
    /// `addr` (when the stack is within its bound).
    #[inline]
    fn inline_at(&mut self, t: &mut Thread, addr: u32, time: u64, symbols: &Symbolizer) {
        if t.overflow > 0 || t.frames.is_empty() {
            return;
        }
        let scope = symbols.inline_scope(addr);
        self.set_scope(t, &scope, time, symbols);
    }

    /// Make `scope` the one `t` runs in, its inlined frames those on top.
    #[inline]
    fn set_scope(
        &mut self,
        t: &mut Thread,
        scope: &InlineScope<'_>,
        time: u64,
        symbols: &Symbolizer,
    ) {
        t.lo = scope.lo;
        t.hi = scope.hi;
        if t.inl > 0 || !scope.chain.is_empty() {
            self.set_chain(t, scope.chain, time, symbols);
        }
    }

    /// Close the inlined frames on top that differ from `chain` and open
    /// the rest of it.
    #[inline(never)]
    fn set_chain(&mut self, t: &mut Thread, chain: &[InlineSite], time: u64, symbols: &Symbolizer) {
        let base = t.frames.len().saturating_sub(t.inl);
        let mut keep = 0;
        while keep < t.inl && keep < chain.len() {
            let (Some(f), Some(site)) = (t.frames.get(base + keep), chain.get(keep)) else {
                break;
            };
            if f.entry != site.entry || f.func != self.names.inline(symbols, site.name) {
                break;
            }
            keep += 1;
        }
        // Inlined frames return nowhere: the filter stays as it is.
        while t.frames.len() > base + keep {
            if let Some(f) = t.frames.pop() {
                self.closed.push(f);
            }
        }
        t.masks.truncate(t.frames.len());
        for site in chain.iter().skip(keep) {
            if t.frames.len() >= self.max_depth {
                break;
            }
            let f = Frame {
                func: self.names.inline(symbols, site.name),
                entry: site.entry,
                ret: None,
                kind: FrameKind::Inline,
                start: time,
            };
            t.frames.push(f);
            t.masks.push(t.rets);
            self.opened.push(f);
        }
        t.inl = t.frames.len().saturating_sub(base);
        self.stats.max_depth = self.stats.max_depth.max(t.frames.len() as u64);
    }

    fn code_frame(
        &mut self,
        kind: FrameKind,
        entry: u32,
        ret: Option<u32>,
        time: u64,
        symbols: &Symbolizer,
    ) -> Frame {
        Frame {
            func: self.names.code(symbols, entry),
            entry,
            ret,
            kind,
            start: time,
        }
    }

    /// Settle a pending transfer now that its destination is known.
    #[inline]
    fn arrive(&mut self, t: &mut Thread, target: u32, time: u64, symbols: &Symbolizer) {
        let pending = std::mem::take(&mut t.pending);
        if let Pending::Resume(i) = pending {
            self.pop_to(t, i);
        }
        if t.frames.is_empty() && t.overflow == 0 {
            let kind = if std::mem::take(&mut t.starting) {
                FrameKind::Task
            } else {
                FrameKind::Root
            };
            let f = self.code_frame(kind, target, None, time, symbols);
            self.push(t, f);
            return;
        }
        match pending {
            Pending::Call { ret } => {
                self.stats.calls += 1;
                if self.recent_calls.fresh(target) {
                    self.call_targets.insert(target);
                    self.call_filter.add(target);
                }
                let f = self.code_frame(FrameKind::Call, target, Some(ret), time, symbols);
                self.push(t, f);
            }
            Pending::Handler { ret } => {
                let f = Frame {
                    func: self.names.vector(symbols, target),
                    entry: target,
                    ret,
                    kind: FrameKind::Handler,
                    start: time,
                };
                self.push(t, f);
            }
            Pending::Return => {
                if self.pop_to_return(t, target) {
                    self.stats.returns += 1;
                } else {
                    self.stats.unmatched_returns += 1;
                    self.pop_one(t);
                    if t.frames.is_empty() && t.overflow == 0 {
                        self.stats.inferred += 1;
                        let f = self.code_frame(FrameKind::Inferred, target, None, time, symbols);
                        self.push(t, f);
                    }
                }
            }
            Pending::Branch => {
                if self.pop_to_return(t, target) {
                    self.stats.returns += 1;
                } else {
                    self.maybe_tail_call(t, target, time, symbols);
                }
            }
            Pending::None => {
                if t.prev_end != Some(target) && self.pop_to_return(t, target) {
                    self.stats.returns += 1;
                }
            }
            Pending::Resume(_) => {}
        }
    }

    /// Close frames down to the innermost one returning to `target`.
    fn pop_to_return(&mut self, t: &mut Thread, target: u32) -> bool {
        if t.rets & ret_bit(target) == 0 {
            return false;
        }
        match t.frames.iter().rposition(|f| f.ret == Some(target)) {
            Some(i) => {
                self.pop_to(t, i);
                true
            }
            None => false,
        }
    }

    fn maybe_tail_call(&mut self, t: &mut Thread, target: u32, time: u64, symbols: &Symbolizer) {
        if t.overflow > 0 {
            return;
        }
        let Some(top) = t.real_top().copied() else {
            return;
        };
        if top.entry == target {
            return;
        }
        let other_function = if symbols.is_empty() {
            self.call_targets.contains(&target)
        } else {
            let here = self.function_of(symbols, top.entry);
            let there = self.function_of(symbols, target);
            there.is_some() && there != here
        };
        if other_function {
            self.stats.tail_calls += 1;
            self.pop_one(t);
            let kind = if top.kind == FrameKind::Handler {
                FrameKind::Handler
            } else {
                FrameKind::TailCall
            };
            let f = self.code_frame(kind, target, top.ret, time, symbols);
            self.push(t, f);
        }
    }

    /// The index of the function covering `addr`; the last one found is
    /// remembered, as branches mostly stay inside one function.
    fn function_of(&mut self, symbols: &Symbolizer, addr: u32) -> Option<usize> {
        if let Some((start, end, i)) = self.fn_cache {
            if (start..end).contains(&addr) {
                return Some(i);
            }
        }
        let i = symbols.function_index(addr)?;
        if let Some(f) = symbols.functions().get(i) {
            self.fn_cache = Some((f.start, f.end, i));
        }
        Some(i)
    }

    #[inline]
    fn range(&mut self, t: &mut Thread, r: &Range, time: u64, symbols: &Symbolizer) {
        self.arrive(t, r.start, time, symbols);
        // The inlined frames hold while no frame changed and the range
        // starts where they do.
        if !(self.opened.is_empty() && self.closed.is_empty() && t.lo <= r.start && r.start < t.hi)
        {
            self.inline_at(t, r.start, time, symbols);
        }
        t.ran(r);
    }

    /// The short path's view of `t` (after a full update).
    #[inline]
    fn quick(&mut self, t: &Thread, symbols: &Symbolizer) -> Quick {
        let Some(top) = t.real_top().copied() else {
            return Quick::default();
        };
        let (fn_lo, fn_hi) = match self.function_of(symbols, top.entry) {
            Some(i) => symbols
                .functions()
                .get(i)
                .map_or((0, 0), |f| (f.start, f.end)),
            None => (0, 0),
        };
        Quick {
            open: t.overflow == 0,
            entry: top.entry,
            fn_lo,
            fn_hi,
        }
    }

    fn exception(&mut self, t: &mut Thread, ret: Option<u32>, time: u64, symbols: &Symbolizer) {
        self.stats.exceptions += 1;
        match ret {
            Some(ret) => {
                self.arrive(t, ret, time, symbols);
                self.inline_at(t, ret, time, symbols);
            }
            None => t.pending = Pending::None,
        }
        t.pending = Pending::Handler { ret };
        t.prev_end = None;
    }
}

/// The transfer a range's last instruction makes.
#[inline]
fn pending_after(r: &Range) -> Pending {
    let branch = matches!(r.last, InsnClass::Branch | InsnClass::IndirectBranch);
    if !r.executed || !branch {
        Pending::None
    } else if r.link {
        Pending::Call { ret: r.end }
    } else if r.ret {
        Pending::Return
    } else {
        Pending::Branch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Apply `e`, ranges through the short path first when `quick`.
    fn feed_either(s: &mut CallStacks, e: &Event, quick: bool, sym: &Symbolizer) -> ThreadKey {
        match (&e.kind, quick) {
            (EventKind::Range(r), true) => match s.quiet_range(e.id, r) {
                Some(k) => k,
                None => match s.inline_range(e.id, r, 0, sym) {
                    Some(k) => k,
                    None => s.apply(e, 0, sym),
                },
            },
            _ => s.apply(e, 0, sym),
        }
    }
    use crate::test_events::range;
    use trace_core::event::Isa;

    fn ev(kind: EventKind) -> Event {
        Event {
            offset: 0,
            id: 1,
            kind,
        }
    }

    fn names(s: &CallStacks, key: ThreadKey) -> Vec<String> {
        s.stack(key)
            .iter()
            .map(|f| s.names().get(f.func).to_owned())
            .collect()
    }

    #[test]
    fn call_return_tail_call_and_inferred_caller() {
        let sym = Symbolizer::empty();
        let mut s = CallStacks::default();
        let k = s.apply(&range(0x100, 2, InsnClass::Branch, true, false), 0, &sym);
        assert_eq!(names(&s, k), ["0x00000100"]);
        // call 0x200 (returns to 0x108), which calls 0x300 (returns to 0x208)
        s.apply(&range(0x200, 2, InsnClass::Branch, true, false), 1, &sym);
        assert_eq!(s.opened().len(), 1);
        s.apply(
            &range(0x300, 1, InsnClass::IndirectBranch, false, true),
            2,
            &sym,
        );
        assert_eq!(names(&s, k), ["0x00000100", "0x00000200", "0x00000300"]);
        // the return arrives at 0x208, closing 0x300
        s.apply(
            &range(0x208, 1, InsnClass::IndirectBranch, false, false),
            3,
            &sym,
        );
        assert_eq!(names(&s, k), ["0x00000100", "0x00000200"]);
        // a branch without the return hint to a return address closes too
        s.apply(&range(0x108, 1, InsnClass::Branch, false, false), 4, &sym);
        assert_eq!(s.closed().len(), 1);
        assert_eq!(names(&s, k), ["0x00000100"]);
        // a jump to a known call target is a tail call
        s.apply(
            &range(0x200, 1, InsnClass::IndirectBranch, false, true),
            5,
            &sym,
        );
        assert_eq!(names(&s, k), ["0x00000200"]);
        // returning out of the outermost frame infers a caller
        s.apply(&range(0x500, 1, InsnClass::Other, false, false), 6, &sym);
        assert_eq!(names(&s, k), ["0x00000500"]);
        assert_eq!(s.stack(k)[0].kind, FrameKind::Inferred);
        let st = s.stats();
        assert_eq!(
            (st.calls, st.returns, st.tail_calls, st.inferred),
            (2, 2, 1, 1)
        );
    }

    #[test]
    fn exceptions_nest_and_gaps_close_everything() {
        let sym = Symbolizer::empty();
        let mut s = CallStacks::default();
        let k = s.apply(&range(0x100, 2, InsnClass::Other, false, false), 0, &sym);
        s.apply(
            &ev(EventKind::Exception {
                number: 14,
                ret: Some(0x108),
            }),
            1,
            &sym,
        );
        s.apply(
            &range(0x18, 1, InsnClass::IndirectBranch, false, false),
            1,
            &sym,
        );
        assert_eq!(names(&s, k), ["0x00000100", "0x00000018"]);
        assert_eq!(s.stack(k)[1].kind, FrameKind::Handler);
        // the handler's last branch arrives at the return address
        s.apply(&range(0x108, 1, InsnClass::Other, false, false), 2, &sym);
        assert_eq!(names(&s, k), ["0x00000100"]);
        s.apply(&ev(EventKind::NoSync), 3, &sym);
        assert_eq!(s.closed().len(), 1);
        assert!(s.stack(k).is_empty());
    }

    #[test]
    fn exception_return_closes_the_handler_and_contexts_keep_their_stacks() {
        use trace_core::event::Context;
        let sym = Symbolizer::empty();
        let mut s = CallStacks::default();
        let ctx = |id| {
            ev(EventKind::Context(Context {
                ns: true,
                hyp: false,
                context_id: Some(id),
                vmid: None,
                isa: Isa::A32,
                cycles: None,
            }))
        };
        let a = s.apply(&ctx(7), 0, &sym);
        s.apply(&range(0x100, 1, InsnClass::Branch, true, false), 0, &sym);
        s.apply(&range(0x200, 1, InsnClass::Other, false, false), 1, &sym);
        s.apply(
            &ev(EventKind::Exception {
                number: 14,
                ret: Some(0x204),
            }),
            2,
            &sym,
        );
        s.apply(&range(0x18, 1, InsnClass::Other, false, false), 2, &sym);
        assert_eq!(s.stack(a).len(), 3);
        s.apply(&ev(EventKind::ExceptionReturn), 3, &sym);
        assert_eq!(s.closed().len(), 1);
        assert_eq!(names(&s, a), ["0x00000100", "0x00000200"]);
        // Another process runs on the same core: its own stack.
        let b = s.apply(&ctx(9), 4, &sym);
        assert_ne!(a, b);
        s.apply(&range(0x900, 1, InsnClass::Other, false, false), 4, &sym);
        assert_eq!(names(&s, b), ["0x00000900"]);
        assert_eq!(s.stack(a).len(), 2, "the first keeps its frames");
        assert_eq!(s.open_threads(1), vec![a, b]);
    }

    #[test]
    fn a_branch_to_a_return_address_in_the_same_function_closes_frames() {
        use crate::symbols::Function;
        let f = |start: u32, end: u32, name: &str| Function {
            start,
            end,
            name: name.to_owned(),
            thumb: false,
        };
        // `outer` at 0x100 calls itself at 0x110 (returning to 0x114);
        // the inner call branches (no return hint) to 0x114.
        let sym = Symbolizer::with_functions(vec![f(0x100, 0x200, "outer")]);
        for quick in [false, true] {
            let mut s = CallStacks::default();
            let feed = |s: &mut CallStacks, e: &Event| feed_either(s, e, quick, &sym);
            let k = feed(&mut s, &range(0x100, 5, InsnClass::Branch, true, false));
            feed(&mut s, &range(0x100, 1, InsnClass::Branch, false, false));
            assert_eq!(s.stack(k).len(), 2);
            // Inside the function, to an address that is no return
            // address: nothing changes.
            feed(&mut s, &range(0x120, 1, InsnClass::Branch, false, false));
            assert!(!s.changed());
            assert_eq!(s.stack(k).len(), 2);
            // To the return address of the inner frame: it closes.
            feed(&mut s, &range(0x114, 1, InsnClass::Other, false, false));
            assert_eq!(s.closed().len(), 1, "quick: {quick}");
            assert_eq!(s.stack(k).len(), 1);
        }
    }

    #[test]
    fn without_symbols_a_branch_to_no_call_target_stays_quick() {
        // Without symbols a branch is a tail call only to an address some
        // call went to: a loop's branch to any other takes the short path.
        let sym = Symbolizer::empty();
        let mut s = CallStacks::default();
        let k = s.apply(&range(0x100, 2, InsnClass::Branch, true, false), 0, &sym);
        s.apply(&range(0x200, 2, InsnClass::Branch, false, false), 1, &sym);
        let body = (0x204..0x300)
            .step_by(4)
            .find(|&a| CallFilter::at(a) != CallFilter::at(0x200))
            .expect("an address of another filter bit");
        let EventKind::Range(r) = range(body, 2, InsnClass::Branch, true, false).kind else {
            unreachable!()
        };
        assert_eq!(s.quiet_range(1, &r), Some(k));
        assert!(!s.changed());
        assert_eq!(names(&s, k), ["0x00000100", "0x00000200"]);
        // The call from there goes to 0x300, and returns.
        s.apply(
            &range(0x300, 1, InsnClass::IndirectBranch, false, true),
            2,
            &sym,
        );
        s.apply(&range(r.end, 1, InsnClass::Branch, false, false), 3, &sym);
        assert_eq!(names(&s, k), ["0x00000100", "0x00000200"]);
        // A branch to 0x300, a call target, is a tail call: not quick.
        let tail = range(0x300, 1, InsnClass::Other, false, false);
        let EventKind::Range(t) = tail.kind else {
            unreachable!()
        };
        assert_eq!(s.quiet_range(1, &t), None);
        s.apply(&tail, 4, &sym);
        assert_eq!(names(&s, k), ["0x00000100", "0x00000300"]);
        assert_eq!(s.stats().tail_calls, 1);
    }

    #[test]
    fn a_branch_sharing_a_filter_bit_with_a_return_address_stays_quick() {
        use crate::symbols::Function;
        // `outer` at 0x100 calls itself at 0x110 (returning to 0x114),
        // branches inside itself once (the function is looked up), then
        // to an address whose filter bit is the return address's.
        let sym = Symbolizer::with_functions(vec![Function {
            start: 0x100,
            end: 0x400,
            name: "outer".to_owned(),
            thumb: false,
        }]);
        let twin = (0x100..0x400)
            .step_by(4)
            .find(|&a| a != 0x114 && ret_bit(a) == ret_bit(0x114))
            .expect("an address sharing the bit");
        let mut s = CallStacks::default();
        let k = s.apply(&range(0x100, 5, InsnClass::Branch, true, false), 0, &sym);
        s.apply(&range(0x100, 1, InsnClass::Branch, false, false), 1, &sym);
        s.apply(&range(0x120, 1, InsnClass::Branch, false, false), 2, &sym);
        let EventKind::Range(r) = range(twin, 1, InsnClass::Other, false, false).kind else {
            unreachable!()
        };
        assert_eq!(s.quiet_range(1, &r), Some(k));
        assert!(!s.changed());
        assert_eq!(s.stack(k).len(), 2);
    }

    /// `outer` at 0x100..0x200 has `a` inlined at 0x110..0x130, and `b`
    /// inlined in `a` at 0x118..0x120; `leaf` is at 0x300..0x320.
    fn outer_with_inlined_code() -> Symbolizer {
        let f = |start: u32, end: u32, name: &str| crate::symbols::Function {
            start,
            end,
            name: name.to_owned(),
            thumb: false,
        };
        let mut sym =
            Symbolizer::with_functions(vec![f(0x100, 0x200, "outer"), f(0x300, 0x320, "leaf")]);
        sym.with_test_scopes(
            0,
            &[
                (0x110, 0x130, &[("a", 0x110)]),
                (0x118, 0x120, &[("a", 0x110), ("b", 0x118)]),
            ],
        );
        sym
    }

    #[test]
    fn inlined_frames_nest_calls_and_come_back_after_returns() {
        // `outer` calls `leaf` from 0x11c (inside `b`, inlined in `a`).
        let sym = outer_with_inlined_code();
        for quick in [false, true] {
            let mut s = CallStacks::default();
            let feed = |s: &mut CallStacks, e: &Event| feed_either(s, e, quick, &sym);
            let k = feed(&mut s, &range(0x100, 4, InsnClass::Other, false, false));
            assert_eq!(names(&s, k), ["outer"]);
            // Sequential into `a`: not quiet, `a` opens.
            feed(&mut s, &range(0x110, 2, InsnClass::Other, false, false));
            assert_eq!(names(&s, k), ["outer", "a"]);
            assert_eq!(s.stack(k)[1].kind, FrameKind::Inline);
            // Into `b`, ending in a call.
            feed(&mut s, &range(0x118, 2, InsnClass::Branch, true, false));
            assert_eq!(names(&s, k), ["outer", "a", "b"]);
            feed(
                &mut s,
                &range(0x300, 2, InsnClass::IndirectBranch, false, true),
            );
            assert_eq!(names(&s, k), ["outer", "a", "b", "leaf"]);
            // The return lands at 0x120: `leaf` and `b` close, `a` stays.
            feed(&mut s, &range(0x120, 2, InsnClass::Other, false, false));
            assert_eq!(names(&s, k), ["outer", "a"]);
            assert_eq!(s.closed().len(), 2, "quick: {quick}");
            // Quiet inside `a`.
            feed(&mut s, &range(0x128, 1, InsnClass::Branch, false, false));
            assert!(!s.changed());
            // A branch within `outer` out of the inlined code closes `a`.
            feed(&mut s, &range(0x140, 1, InsnClass::Other, false, false));
            assert_eq!(names(&s, k), ["outer"]);
            assert_eq!(s.closed().len(), 1, "quick: {quick}");
        }
        // Bounded: inlined frames beyond the depth bound are left out.
        let mut s = CallStacks::new(2);
        let k = s.apply(&range(0x118, 1, InsnClass::Other, false, false), 0, &sym);
        assert_eq!(names(&s, k), ["outer", "a"]);
        assert_eq!(s.stats().dropped, 0);
    }

    #[test]
    fn depth_is_bounded() {
        let sym = Symbolizer::empty();
        let mut s = CallStacks::new(4);
        let mut k = s.current(1);
        for i in 0..10u32 {
            k = s.apply(
                &range(0x1000 * (i + 1), 1, InsnClass::Branch, true, false),
                0,
                &sym,
            );
        }
        assert_eq!(s.stack(k).len(), 4);
        assert_eq!(s.stats().dropped, 6);
    }

    /// The return-address filter of each thread, kept per frame so that
    /// closing frames finds it without going through those left, equals
    /// the one made afresh from the frames after any sequence of calls,
    /// returns, tail calls, branches, exceptions, gaps and inlined
    /// scopes, within and beyond the depth bound, through either path.
    #[test]
    fn the_return_filter_is_the_frames_own() {
        use proptest::prelude::*;
        let inl = outer_with_inlined_code();
        let empty = Symbolizer::empty();
        // A step: an address among a few (so that returns and branches
        // meet return addresses), how the range ends, or another event.
        let step = (0u32..24, 0u8..8, any::<bool>());
        proptest!(ProptestConfig::with_cases(256), |(
            steps in proptest::collection::vec(step, 1..120),
            depth in 1usize..8,
            with_scopes in any::<bool>(),
        )| {
            let sym = if with_scopes { &inl } else { &empty };
            let mut s = CallStacks::new(depth);
            for (at, how, quick) in steps {
                let start = 0x100 + 8 * at;
                let e = match how {
                    0 => range(start, 2, InsnClass::Branch, true, false),
                    1 => range(start, 1, InsnClass::IndirectBranch, false, true),
                    2 => range(start, 1, InsnClass::Branch, false, false),
                    3 => range(start, 3, InsnClass::Other, false, false),
                    4 => ev(EventKind::Exception {
                        number: 14,
                        ret: Some(start + 4),
                    }),
                    5 => ev(EventKind::ExceptionReturn),
                    6 if at == 0 => ev(EventKind::NoSync),
                    _ => range(start, 1, InsnClass::IndirectBranch, false, false),
                };
                feed_either(&mut s, &e, quick, sym);
                for t in &s.threads {
                    let fresh = t
                        .frames
                        .iter()
                        .filter_map(|f| f.ret)
                        .fold(0, |m, r| m | ret_bit(r));
                    prop_assert_eq!(t.rets, fresh);
                    prop_assert_eq!(t.masks.len(), t.frames.len());
                    prop_assert_eq!(t.masks.last().copied().unwrap_or(0), fresh);
                }
            }
        });
    }
}
