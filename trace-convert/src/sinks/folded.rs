//! Folded stacks (`frame;frame;frame weight`), the input of flame-graph
//! tools (inferno, speedscope, Brendan Gregg's `flamegraph.pl`).
//!
//! Each line is one distinct stack, outermost frame first, and its weight:
//! the instructions (or, with [`Weight::Cycles`], the cycles) executed
//! with exactly that stack; lines are sorted. Cycles the trace reports
//! while no code was traced (trace filtered off) count under
//! `[untraced]`. The weights add up to the
//! instructions (cycles) decoded. When the capture has more than one
//! thread (cores, context IDs), each stack starts with a frame naming it
//! as the Chrome and Perfetto tracks do: after the snapshot's core when
//! known (`cpu_0 Cortex-A7 (trace ID 0x10, ETMv3)`, see
//! [`SourceName::thread_name`]), else `trace ID 0x10 (ETMv3)`, or
//! `trace ID 0x10` for a source the run did not name; with context IDs
//! the context first (`context 0x2a/cpu_0 Cortex-A7 (trace ID 0x10,
//! ETMv3)`). The threads of a per-thread perf.data recording are named
//! after their process instead (`app (pid 1234)`), on every stack: the
//! threads of one process, on whichever cores they ran, add up to one
//! set of stacks per process. The stacks of an RTOS task (see
//! [`crate::tasks`]) always start with its name (`task_a;task_a;crc 120`;
//! `cpu_0 Cortex-R5/task_a;...` when the run has several sources), those
//! of the code that ran before the core's first task switch as above.
//!
//! The PC samples of an ITM/DWT source (DWT periodic sampling, the
//! profile of a core without an ETM) weigh one each, on the stack of the
//! source's thread and the function holding the sampled address (its
//! address when no symbol covers it, `[sleep]` for samples taken while
//! the processor slept).
//!
//! An inferred caller (a return out of the outermost frame) is placed
//! under everything that ran before it since the trace (re)started, as
//! the caller it stands for was running from then on. `;` in names
//! becomes `:` and line breaks spaces.
//!
//! Memory stays bounded by the distinct stacks, not by the input: each
//! run of an outermost frame is a subtree of its own only while an
//! inferred caller may still claim it; once it closes unclaimed, it is
//! merged into one shared tree and its nodes are reused.

use crate::callstack::FrameKind;
use crate::fast_map::FastMap;
use crate::input::source::Task;
use crate::sinks::context::core_name;
use crate::sinks::{
    EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink, SourceName, ThreadKey,
};
use std::collections::BTreeMap;
use std::io::{self, Write};
use trace_core::event::{Event, EventKind};

/// What a stack is weighted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weight {
    /// Instructions executed.
    #[default]
    Instructions,
    /// Cycles (cycle-accurate trace only; otherwise all weights are 0).
    Cycles,
}

const NONE: u32 = u32::MAX;
/// [`FoldedStacks::node`]'s `run` for a node that starts a run.
const NEW_RUN: u32 = u32::MAX - 1;

#[derive(Debug, Clone, Copy)]
struct Node {
    parent: u32,
    label: u32,
    weight: u64,
    /// The outermost node of the run it belongs to; `NONE` in the shared
    /// tree (and for thread roots).
    run: u32,
    /// The child last looked up: (label, node), `NONE` when none.
    recent: (u32, u32),
}

/// The folded-stacks sink; the aggregation also serves tests through
/// [`FoldedStacks`].
#[derive(Debug)]
pub struct FoldedSink<W: Output> {
    out: W,
    stacks: FoldedStacks,
}

impl<W: Output> FoldedSink<W> {
    /// A sink writing to `out`, weighting by `weight`.
    pub fn new(out: W, weight: Weight) -> FoldedSink<W> {
        FoldedSink {
            out,
            stacks: FoldedStacks::new(weight),
        }
    }
}

/// Stacks and their weights, aggregated in a tree.
#[derive(Debug)]
pub struct FoldedStacks {
    weight: Weight,
    nodes: Vec<Node>,
    labels: Vec<String>,
    /// Label of each function, by its id (`NONE`: none yet).
    func_labels: Vec<u32>,
    children: FastMap<(u32, u32), u32>,
    threads: FastMap<ThreadKey, u32>,
    /// The open frames' nodes of each thread but the current one.
    paths: FastMap<ThreadKey, Vec<u32>>,
    /// The current thread, its root node and its open frames' nodes.
    current: Option<(ThreadKey, u32, Vec<u32>)>,
    untraced_label: Option<u32>,
    /// The thread of the last event and the node of its innermost frame,
    /// while it has one.
    last: Option<(ThreadKey, u32)>,
    /// Nodes of each open run, by its outermost node, parents first.
    runs: FastMap<u32, Vec<u32>>,
    /// Nodes free for reuse.
    free: Vec<u32>,
    /// The name of each source's thread, by trace ID.
    source_names: FastMap<u8, String>,
    /// The name of each Linux thread's process, by thread ID.
    task_names: FastMap<u32, String>,
    /// Some thread is a Linux thread: every stack starts with its process.
    by_process: bool,
    /// The thread nodes of RTOS tasks, whose name starts every stack.
    task_nodes: crate::fast_map::FastSet<u32>,
    /// The labels of PC samples' functions, by name.
    sample_labels: FastMap<String, u32>,
}

impl FoldedStacks {
    /// Empty.
    #[must_use]
    pub fn new(weight: Weight) -> FoldedStacks {
        FoldedStacks {
            weight,
            nodes: Vec::new(),
            labels: Vec::new(),
            func_labels: Vec::new(),
            children: FastMap::default(),
            threads: FastMap::default(),
            paths: FastMap::default(),
            current: None,
            untraced_label: None,
            last: None,
            runs: FastMap::default(),
            free: Vec::new(),
            source_names: FastMap::default(),
            task_names: FastMap::default(),
            by_process: false,
            task_nodes: crate::fast_map::FastSet::default(),
            sample_labels: FastMap::default(),
        }
    }

    /// A PC sample of an ITM/DWT source: one more under the function
    /// holding `pc` (its address when no symbol covers it; `[sleep]` for
    /// a processor asleep) on the source's thread.
    #[inline(never)]
    fn sample(&mut self, pc: Option<u32>, ctx: &EventCtx<'_>) {
        let root = self.thread_node(ctx.thread, ctx);
        let name = ctx.symbols.sample_name(pc);
        let label = match self.sample_labels.get(&name) {
            Some(&l) => l,
            None => {
                let l = self.label(name.clone());
                self.sample_labels.insert(name, l);
                l
            }
        };
        let n = self.child(root, label);
        if let Some(node) = self.nodes.get_mut(n as usize) {
            node.weight += 1;
        }
    }

    /// Name the Linux threads of a per-thread recording after their
    /// processes (`app (pid 1234)`); before the first event.
    pub fn set_tasks(&mut self, tasks: &[Task]) {
        for t in tasks {
            self.task_names
                .insert(t.tid, format!("{} (pid {})", t.process, t.pid));
        }
    }

    /// Name the threads of these sources as their tracks are named
    /// ([`SourceName::thread_name`]); before the first event.
    pub fn set_sources(&mut self, sources: &[SourceName]) {
        for s in sources {
            self.source_names.insert(s.id, s.thread_name());
        }
    }

    /// Nodes held (the shared tree and the open runs), freed ones not
    /// counted.
    #[must_use]
    pub fn nodes_in_use(&self) -> usize {
        self.nodes.len() - self.free.len()
    }

    /// A new node under `parent`, in `run` (`NONE`: the shared tree; the
    /// node itself when it is `NEW_RUN`).
    fn node(&mut self, parent: u32, label: u32, run: u32) -> u32 {
        let fresh = Node {
            parent,
            label,
            weight: 0,
            run,
            recent: (NONE, NONE),
        };
        let id = match self.free.pop() {
            Some(id) => {
                if let Some(n) = self.nodes.get_mut(id as usize) {
                    *n = fresh;
                }
                id
            }
            None => {
                self.nodes.push(fresh);
                u32::try_from(self.nodes.len() - 1).unwrap_or(NONE)
            }
        };
        if run == NEW_RUN {
            if let Some(n) = self.nodes.get_mut(id as usize) {
                n.run = id;
            }
            self.runs.insert(id, vec![id]);
        } else if run != NONE {
            if let Some(list) = self.runs.get_mut(&run) {
                list.push(id);
            }
        }
        id
    }

    /// A child of `parent` labelled `label`: the existing one or a new one
    /// in the parent's run.
    fn child(&mut self, parent: u32, label: u32) -> u32 {
        let (recent, run) = self
            .nodes
            .get(parent as usize)
            .map_or(((NONE, NONE), NONE), |p| (p.recent, p.run));
        if recent.0 == label {
            if let Some(c) = self.nodes.get(recent.1 as usize) {
                if c.parent == parent && c.label == label {
                    return recent.1;
                }
            }
        }
        let n = match self.children.get(&(parent, label)) {
            Some(n) => *n,
            None => {
                let n = self.node(parent, label, run);
                self.children.insert((parent, label), n);
                n
            }
        };
        if let Some(p) = self.nodes.get_mut(parent as usize) {
            p.recent = (label, n);
        }
        n
    }

    /// The label of `f`'s function.
    fn func_label(&mut self, f: &crate::callstack::Frame, ctx: &EventCtx<'_>) -> u32 {
        let at = f.func.0 as usize;
        if let Some(&l) = self.func_labels.get(at) {
            if l != NONE {
                return l;
            }
        }
        let l = self.label(ctx.name(f).to_owned());
        if self.func_labels.len() <= at {
            self.func_labels.resize(at + 1, NONE);
        }
        if let Some(slot) = self.func_labels.get_mut(at) {
            *slot = l;
        }
        l
    }

    /// The root node and open frames of `thread`, made current.
    fn take_path(&mut self, thread: ThreadKey, ctx: &EventCtx<'_>) -> (u32, Vec<u32>) {
        match self.current.take() {
            Some((t, root, path)) if t == thread => (root, path),
            other => {
                if let Some((t, _, path)) = other {
                    self.paths.insert(t, path);
                }
                let root = self.thread_node(thread, ctx);
                (root, self.paths.remove(&thread).unwrap_or_default())
            }
        }
    }

    /// Put the closed run `old` under `caller`, the outermost node of a
    /// new run: the two become one run.
    fn adopt(&mut self, caller: u32, old: u32) {
        let moved = self.runs.remove(&old).unwrap_or_default();
        for &x in &moved {
            if let Some(n) = self.nodes.get_mut(x as usize) {
                n.run = caller;
            }
        }
        if let Some(o) = self.nodes.get_mut(old as usize) {
            o.parent = caller;
        }
        if let Some(list) = self.runs.get_mut(&caller) {
            list.extend(moved);
        }
    }

    /// Merge the closed, unclaimed run of `outer` into the shared tree
    /// under `root` and free its nodes.
    fn merge_run(&mut self, root: u32, outer: u32) {
        let Some(list) = self.runs.remove(&outer) else {
            return;
        };
        let mut shared: FastMap<u32, u32> = FastMap::default();
        for &x in &list {
            let Some(n) = self.nodes.get(x as usize).copied() else {
                continue;
            };
            let parent = if x == outer {
                root
            } else {
                match shared.get(&n.parent) {
                    Some(p) => *p,
                    None => continue,
                }
            };
            let to = self.child(parent, n.label);
            if let Some(t) = self.nodes.get_mut(to as usize) {
                t.weight += n.weight;
            }
            shared.insert(x, to);
        }
        for &x in &list {
            let Some(n) = self.nodes.get(x as usize).copied() else {
                continue;
            };
            if self.children.get(&(n.parent, n.label)) == Some(&x) {
                self.children.remove(&(n.parent, n.label));
            }
            if let Some(m) = self.nodes.get_mut(x as usize) {
                m.weight = 0;
                m.run = NONE;
            }
            self.free.push(x);
        }
    }

    fn label(&mut self, text: String) -> u32 {
        let id = u32::try_from(self.labels.len()).unwrap_or(NONE);
        self.labels.push(crate::escape::folded_frame(&text));
        id
    }

    fn thread_node(&mut self, thread: ThreadKey, ctx: &EventCtx<'_>) -> u32 {
        if let Some(n) = self.threads.get(&thread) {
            return *n;
        }
        let core = core_name(&self.source_names, thread.id);
        if let Some(task) = ctx.task(thread) {
            let name = task.name.clone();
            let n = match thread.task {
                // Tasks inside a Linux thread: under its process.
                Some(_) => {
                    let outer = self.thread_node(
                        ThreadKey {
                            rtos: None,
                            ..thread
                        },
                        ctx,
                    );
                    let l = self.label(name);
                    self.node(outer, l, NONE)
                }
                None => {
                    let text = if self.source_names.len() > 1 {
                        format!("{core}/{name}")
                    } else {
                        name
                    };
                    let l = self.label(text);
                    let n = self.node(NONE, l, NONE);
                    self.task_nodes.insert(n);
                    n
                }
            };
            self.threads.insert(thread, n);
            return n;
        }
        let text = match (thread.task, thread.context) {
            (Some(tid), _) => {
                self.by_process = true;
                self.task_names
                    .get(&tid)
                    .cloned()
                    .unwrap_or_else(|| Task::unnamed_name(tid))
            }
            (None, Some(c)) => format!("context {c:#x}/{core}"),
            (None, None) => core,
        };
        let l = self.label(text);
        let n = self.node(NONE, l, NONE);
        self.threads.insert(thread, n);
        n
    }

    /// The node for weight outside any frame (cycles while no code was
    /// traced).
    fn untraced(&mut self, root: u32) -> u32 {
        let label = match self.untraced_label {
            Some(l) => l,
            None => {
                let l = self.label("[untraced]".to_owned());
                self.untraced_label = Some(l);
                l
            }
        };
        self.child(root, label)
    }

    /// Feed one event.
    #[inline]
    pub fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) {
        if ctx.closed.is_empty() && ctx.opened.is_empty() {
            // The common case: weight on the current frame.
            let w = self.weight_of(event, ctx);
            if w == 0 {
                if let EventKind::PcSample { pc } = event.kind {
                    self.sample(pc, ctx);
                }
                return;
            }
            let at = match self.last {
                Some((thread, at)) if thread == ctx.thread => Some(at),
                _ => match &self.current {
                    Some((t, _, path)) if *t == ctx.thread => path.last().copied(),
                    _ => self.paths.get(&ctx.thread).and_then(|p| p.last()).copied(),
                },
            };
            if let Some(at) = at {
                self.last = Some((ctx.thread, at));
                if let Some(n) = self.nodes.get_mut(at as usize) {
                    n.weight += w;
                }
                return;
            }
        }
        self.change(event, ctx);
    }

    /// [`event`](Self::event) when frames changed or the thread has none.
    #[inline(never)]
    fn change(&mut self, event: &Event, ctx: &EventCtx<'_>) {
        let (root, mut path) = self.take_path(ctx.thread, ctx);
        let mut outermost_closed = None;
        for _ in ctx.closed {
            outermost_closed = path.pop().or(outermost_closed);
        }
        // The run just closed, which only an inferred caller opened now
        // can still claim.
        let mut claimable = outermost_closed.filter(|_| path.is_empty());
        for (i, f) in ctx.opened.iter().enumerate() {
            let label = self.func_label(f, ctx);
            let node = match path.last() {
                // Outermost frames get a run of their own, so an inferred
                // caller can later be put above exactly this run.
                None => {
                    let n = self.node(root, label, NEW_RUN);
                    if i == 0 && f.kind == FrameKind::Inferred {
                        if let Some(old) = claimable.take() {
                            self.adopt(n, old);
                        }
                    }
                    n
                }
                Some(&parent) => self.child(parent, label),
            };
            if let Some(old) = claimable.take() {
                self.merge_run(root, old);
            }
            path.push(node);
        }
        if let Some(old) = claimable {
            self.merge_run(root, old);
        }
        let w = self.weight_of(event, ctx);
        if w > 0 {
            let at = match path.last() {
                Some(n) => *n,
                None => self.untraced(root),
            };
            if let Some(n) = self.nodes.get_mut(at as usize) {
                n.weight += w;
            }
        }
        self.last = path.last().map(|&at| (ctx.thread, at));
        self.current = Some((ctx.thread, root, path));
    }

    fn weight_of(&self, event: &Event, ctx: &EventCtx<'_>) -> u64 {
        match (self.weight, &event.kind) {
            (Weight::Instructions, EventKind::Range(r)) => u64::from(r.count),
            (Weight::Instructions, _) => 0,
            (Weight::Cycles, _) => ctx.cycles,
        }
    }

    /// The folded lines: each distinct stack and its weight, sorted by
    /// stack.
    #[must_use]
    pub fn lines(&self) -> BTreeMap<String, u64> {
        let threads = self
            .threads
            .iter()
            .filter(|(k, n)| k.rtos.is_none() && !self.task_nodes.contains(n))
            .count();
        let mut out = BTreeMap::new();
        let mut parts: Vec<&str> = Vec::new();
        for (at, n) in (0u32..).zip(&self.nodes) {
            if n.weight == 0 {
                continue;
            }
            parts.clear();
            let mut cur = Some((at, n));
            let mut guard = 0usize;
            while let Some((id, node)) = cur {
                let is_thread = node.parent == NONE;
                if !is_thread
                    || threads > 1
                    || self.by_process
                    || parts.is_empty()
                    || self.task_nodes.contains(&id)
                {
                    parts.push(
                        self.labels
                            .get(node.label as usize)
                            .map_or("?", String::as_str),
                    );
                }
                cur = self
                    .nodes
                    .get(node.parent as usize)
                    .map(|p| (node.parent, p));
                guard += 1;
                if guard > self.nodes.len() {
                    break;
                }
            }
            parts.reverse();
            *out.entry(parts.join(";")).or_insert(0) += n.weight;
        }
        out
    }

    /// Write the lines.
    ///
    /// # Errors
    ///
    /// The output error.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        for (stack, w) in self.lines() {
            writeln!(out, "{stack} {w}")?;
        }
        Ok(())
    }
}

impl<W: Output> Sink for FoldedSink<W> {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "folded"
    }

    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        self.stacks.set_sources(&info.sources);
        self.stacks.set_tasks(&info.tasks);
        Ok(())
    }

    fn interest(&self) -> Interest {
        // Quiet ranges weigh on the frame they run in, in any number.
        Interest::Weights
    }

    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow> {
        self.stacks.event(event, ctx);
        Ok(Flow::Continue)
    }

    fn finish(&mut self, _info: &RunInfo) -> io::Result<()> {
        self.stacks.write(&mut self.out)?;
        self.out.complete()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callstack::{Frame, FuncId, Names};
    use crate::clock::ClockInfo;
    use crate::symbols::Symbolizer;
    use crate::test_events::range;
    use trace_core::event::InsnClass;

    fn frame(func: u32, kind: FrameKind) -> Frame {
        Frame {
            func: FuncId(func),
            entry: 0,
            ret: None,
            kind,
            start: 0,
        }
    }

    /// Feeds `count` instructions after closing `closed` frames and
    /// opening `opened` ones (outermost first).
    struct Feed {
        stacks: FoldedStacks,
        names: Names,
        symbols: Symbolizer,
        clock: ClockInfo,
        stack: Vec<Frame>,
    }

    impl Feed {
        fn new(names: &[&str]) -> Feed {
            Feed {
                stacks: FoldedStacks::new(Weight::Instructions),
                names: Names::listed(names),
                symbols: Symbolizer::empty(),
                clock: ClockInfo::default(),
                stack: Vec::new(),
            }
        }

        fn step(&mut self, close: usize, opened: &[Frame], count: u32) {
            let keep = self.stack.len().saturating_sub(close);
            let closed: Vec<Frame> = self.stack.drain(keep..).rev().collect();
            self.stack.extend_from_slice(opened);
            let ctx = EventCtx {
                thread: ThreadKey::of_id(0x10),
                time: 0,
                end: 0,
                cycles: 0,
                closed: &closed,
                opened,
                stack: &self.stack,
                names: &self.names,
                symbols: &self.symbols,
                memory: None,
                clock: &self.clock,
                tasks: &[],
                switch: None,
            };
            self.stacks
                .event(&range(0x1000, count, InsnClass::Other, false, false), &ctx);
        }
    }

    #[test]
    fn repeated_runs_keep_the_nodes_bounded() {
        let mut f = Feed::new(&["main", "work", "leaf"]);
        let mut held = Vec::new();
        for round in 0..1000 {
            // A run of main -> work -> leaf, then a reset (all closed).
            f.step(0, &[frame(0, FrameKind::Root)], 1);
            f.step(0, &[frame(1, FrameKind::Call)], 2);
            f.step(0, &[frame(2, FrameKind::Call)], 3);
            f.step(1, &[], 4);
            f.step(2, &[], 0);
            if round == 1 || round == 999 {
                held.push(f.stacks.nodes_in_use());
            }
        }
        assert_eq!(held[0], held[1], "nodes grow with the runs");
        let lines = f.stacks.lines();
        let want: BTreeMap<String, u64> = [
            ("main".to_owned(), 1000),
            ("main;work".to_owned(), 6000),
            ("main;work;leaf".to_owned(), 3000),
        ]
        .into_iter()
        .collect();
        assert_eq!(lines, want);
    }

    #[test]
    fn an_inferred_caller_still_claims_the_run_it_returns_from() {
        let mut f = Feed::new(&["a", "b", "caller", "c"]);
        f.step(0, &[frame(0, FrameKind::Root)], 1);
        f.step(0, &[frame(1, FrameKind::Call)], 2);
        f.step(1, &[], 3);
        // A return out of the outermost frame: an inferred caller.
        f.step(1, &[frame(2, FrameKind::Inferred)], 4);
        f.step(1, &[], 0);
        // A later run of `a` that closes unclaimed, then one opened by a
        // call right after a reset.
        f.step(0, &[frame(0, FrameKind::Root)], 5);
        f.step(1, &[frame(3, FrameKind::Root)], 6);
        let lines = f.stacks.lines();
        let want: BTreeMap<String, u64> = [
            ("a".to_owned(), 5),
            ("c".to_owned(), 6),
            ("caller".to_owned(), 4),
            ("caller;a".to_owned(), 4),
            ("caller;a;b".to_owned(), 2),
        ]
        .into_iter()
        .collect();
        assert_eq!(lines, want);
    }
}
