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
//! ETMv3)`).
//!
//! An inferred caller (a return out of the outermost frame) is placed
//! under everything that ran before it since the trace (re)started, as
//! the caller it stands for was running from then on. `;` in names
//! becomes `:` and line breaks spaces.

use crate::callstack::{FrameKind, FuncId};
use crate::fast_map::FastMap;
use crate::sinks::{EventCtx, Flow, NoParts, Output, RunInfo, Sink, SourceName, ThreadKey};
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

#[derive(Debug, Clone, Copy)]
struct Node {
    parent: u32,
    label: u32,
    weight: u64,
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
    func_labels: FastMap<FuncId, u32>,
    children: FastMap<(u32, u32), u32>,
    threads: FastMap<ThreadKey, u32>,
    paths: FastMap<ThreadKey, Vec<u32>>,
    untraced_label: Option<u32>,
    /// The thread of the last event and the node of its innermost frame,
    /// while it has one.
    last: Option<(ThreadKey, u32)>,
    /// The name of each source's thread, by trace ID.
    source_names: FastMap<u8, String>,
}

impl FoldedStacks {
    /// Empty.
    #[must_use]
    pub fn new(weight: Weight) -> FoldedStacks {
        FoldedStacks {
            weight,
            nodes: Vec::new(),
            labels: Vec::new(),
            func_labels: FastMap::default(),
            children: FastMap::default(),
            threads: FastMap::default(),
            paths: FastMap::default(),
            untraced_label: None,
            last: None,
            source_names: FastMap::default(),
        }
    }

    /// Name the threads of these sources as their tracks are named
    /// ([`SourceName::thread_name`]); before the first event.
    pub fn set_sources(&mut self, sources: &[SourceName]) {
        for s in sources {
            self.source_names.insert(s.id, s.thread_name());
        }
    }

    fn node(&mut self, parent: u32, label: u32) -> u32 {
        let id = u32::try_from(self.nodes.len()).unwrap_or(NONE);
        self.nodes.push(Node {
            parent,
            label,
            weight: 0,
        });
        id
    }

    fn label(&mut self, text: String) -> u32 {
        let id = u32::try_from(self.labels.len()).unwrap_or(NONE);
        self.labels
            .push(text.replace(';', ":").replace(['\n', '\r'], " "));
        id
    }

    fn thread_node(&mut self, thread: ThreadKey) -> u32 {
        if let Some(n) = self.threads.get(&thread) {
            return *n;
        }
        let core = match self.source_names.get(&thread.id) {
            Some(name) => name.clone(),
            None => format!("trace ID {:#04x}", thread.id),
        };
        let text = match thread.context {
            Some(c) => format!("context {c:#x}/{core}"),
            None => core,
        };
        let l = self.label(text);
        let n = self.node(NONE, l);
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
        match self.children.get(&(root, label)) {
            Some(n) => *n,
            None => {
                let n = self.node(root, label);
                self.children.insert((root, label), n);
                n
            }
        }
    }

    /// Feed one event.
    #[inline]
    pub fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) {
        if ctx.closed.is_empty() && ctx.opened.is_empty() {
            // The common case: weight on the current frame.
            let w = self.weight_of(event, ctx);
            if w == 0 {
                return;
            }
            let at = match self.last {
                Some((thread, at)) if thread == ctx.thread => Some(at),
                _ => self.paths.get(&ctx.thread).and_then(|p| p.last()).copied(),
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
        let root = self.thread_node(ctx.thread);
        let mut path = std::mem::take(self.paths.entry(ctx.thread).or_default());
        let mut outermost_closed = None;
        for _ in ctx.closed {
            outermost_closed = path.pop().or(outermost_closed);
        }
        for (i, f) in ctx.opened.iter().enumerate() {
            let label = match self.func_labels.get(&f.func) {
                Some(l) => *l,
                None => {
                    let l = self.label(ctx.name(f).to_owned());
                    self.func_labels.insert(f.func, l);
                    l
                }
            };
            let node = match path.last() {
                // Outermost frames get a node of their own, so an inferred
                // caller can later be put above exactly this run.
                None => {
                    let n = self.node(root, label);
                    if i == 0 && f.kind == FrameKind::Inferred {
                        if let Some(old) = outermost_closed {
                            if let Some(o) = self.nodes.get_mut(old as usize) {
                                o.parent = n;
                            }
                        }
                    }
                    n
                }
                Some(&parent) => match self.children.get(&(parent, label)) {
                    Some(n) => *n,
                    None => {
                        let n = self.node(parent, label);
                        self.children.insert((parent, label), n);
                        n
                    }
                },
            };
            path.push(node);
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
        if let Some(p) = self.paths.get_mut(&ctx.thread) {
            *p = path;
        }
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
        let threads = self.threads.len();
        let mut out = BTreeMap::new();
        let mut parts: Vec<&str> = Vec::new();
        for n in &self.nodes {
            if n.weight == 0 {
                continue;
            }
            parts.clear();
            let mut cur = Some(n);
            let mut guard = 0usize;
            while let Some(node) = cur {
                let is_thread = node.parent == NONE;
                if !is_thread || threads > 1 || parts.is_empty() {
                    parts.push(
                        self.labels
                            .get(node.label as usize)
                            .map_or("?", String::as_str),
                    );
                }
                cur = self.nodes.get(node.parent as usize);
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
        Ok(())
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
