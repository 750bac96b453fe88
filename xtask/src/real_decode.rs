//! Decoded instructions of a third-party capture against OpenCSD's decode
//! listing, instruction by instruction.
//!
//! OpenCSD's ETMv3 decoder emits one `INSTR_RANGE` per atom and ours may
//! group instructions differently, so both sides are expanded to the
//! sequence of executed instructions (address, instruction set, and
//! whether it passed its condition check), each with the `Idx` of the
//! packet that produced it, and aligned with [`crate::align`]. The
//! elements between instructions (exceptions, trace on, memory not
//! accessible, OpenCSD's address unknown, our gaps) are kept as marks to
//! explain the differences (see `real_categories`).

use crate::align::{align, Alignment};
use crate::conformance::opencsd_indices;
use crate::listing::parse_line;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::{flags::SourceFlags, resolve};
use trace_core::event::{EventKind, InsnClass, Isa, Range};
use trace_core::memory::Space;
use trace_core::memory::{MemoryImage, MemoryMap};

/// One executed instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Insn {
    /// Its address.
    pub addr: u32,
    /// T32 rather than A32.
    pub thumb: bool,
    /// It passed its condition check (E atom).
    pub executed: bool,
}

/// What lies between instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkKind {
    /// An exception, with its number.
    Exception(u16),
    /// A branch packet with the cancel bit (OpenCSD's side only).
    Cancel,
    /// Trace (re)starts.
    TraceOn,
    /// Memory not accessible at the address.
    Nacc(u32),
    /// OpenCSD: the address after an indirect branch is unknown.
    AddrUnknown,
    /// Ours: a gap, by reason, and the address concerned.
    Gap(&'static str, Option<u32>),
}

/// A mark, placed before the instruction at position `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// Position in the instruction sequence.
    pub at: usize,
    /// Offset (`Idx`) of the packet that produced it.
    pub idx: u64,
    /// What it is.
    pub kind: MarkKind,
}

/// What kind of instruction a decoder took an instruction for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Not a branch (also barriers).
    Other,
    /// A direct branch.
    Branch,
    /// An indirect branch.
    Indirect,
}

/// One decoder's instructions.
#[derive(Debug, Default)]
pub struct Side {
    /// The instructions in order.
    pub insns: Vec<Insn>,
    /// Per instruction: the `Idx` of the packet that produced it.
    pub idx: Vec<u64>,
    /// Per instruction: what the decoder took it for.
    pub class: Vec<Class>,
    /// The elements between them.
    pub marks: Vec<Mark>,
}

impl Side {
    fn push(&mut self, insn: Insn, idx: u64, class: Class) {
        self.insns.push(insn);
        self.idx.push(idx);
        self.class.push(class);
    }

    fn mark(&mut self, idx: u64, kind: MarkKind) {
        self.marks.push(Mark {
            at: self.insns.len(),
            idx,
            kind,
        });
    }

    /// The marks placed from position `from` to `to` (both included).
    pub fn marks_between(&self, from: usize, to: usize) -> &[Mark] {
        let a = self.marks.partition_point(|m| m.at < from);
        let b = self.marks.partition_point(|m| m.at <= to);
        &self.marks[a..b]
    }
}

/// OpenCSD's side, with what the listing says about the stream.
#[derive(Debug, Default)]
pub struct Listed {
    /// The instructions and marks.
    pub side: Side,
    /// Offsets of the I-sync and branch address packets.
    pub cuts: Vec<u64>,
    /// Offset of the first I-sync.
    pub first_isync: Option<u64>,
    /// Where OpenCSD stopped decoding at a fatal error.
    pub fatal: Option<u64>,
}

fn field<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let at = s.find(key)? + key.len();
    let rest = &s[at..];
    let end = rest
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

fn num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn addr(s: &str, key: &str) -> Option<u32> {
    field(s, key)
        .and_then(num)
        .and_then(|a| u32::try_from(a).ok())
}

/// Read OpenCSD's decode listing (trace ID `id`); ranges of more than one
/// instruction are expanded with `mem`.
pub fn parse_listing(text: &str, id: u8, mem: &dyn MemoryImage) -> Listed {
    let mut out = Listed::default();
    let id_text = format!("ID:{id:x};");
    for (n, line) in text.lines().enumerate() {
        if let Some(at) = line
            .find("TrcIdx=")
            .filter(|_| line.contains("fatal error"))
        {
            out.fatal = out
                .fatal
                .or_else(|| field(&line[at..], "TrcIdx=").and_then(num));
        }
        let Some(p) = line.find("OCSD_GEN_TRC_ELEM_") else {
            if let Some(pkt) = parse_line(n + 1, line).filter(|p| p.id == id) {
                if matches!(pkt.kind.as_str(), "I_SYNC" | "BRANCH_ADDRESS") {
                    out.cuts.push(pkt.idx);
                }
                if pkt.kind == "I_SYNC" {
                    out.first_isync.get_or_insert(pkt.idx);
                }
                if pkt.cancel {
                    out.side.mark(pkt.idx, MarkKind::Cancel);
                }
            }
            continue;
        };
        if !line.replace(' ', "").contains(&id_text) {
            continue;
        }
        let Some(idx) = field(line, "Idx:").and_then(num) else {
            continue;
        };
        let body = &line[p + "OCSD_GEN_TRC_ELEM_".len()..];
        let kind = &body[..body.find('(').unwrap_or(body.len())];
        match kind {
            "INSTR_RANGE" => {
                let start = addr(body, "range=").unwrap_or(0);
                let n = field(body, "num_i(").and_then(num).unwrap_or(0);
                let thumb = field(body, "(ISA=") == Some("T32");
                let executed = body.contains(") E ");
                let class = if body.contains(" iBR ") {
                    Class::Indirect
                } else if body.contains(" BR ") {
                    Class::Branch
                } else {
                    Class::Other
                };
                let at = out.side.insns.len();
                expand_listed(&mut out.side, idx, start, n, thumb, executed, mem);
                if out.side.insns.len() > at {
                    if let Some(c) = out.side.class.last_mut() {
                        *c = class;
                    }
                }
            }
            "EXCEPTION" => {
                let number = field(body, "excep num (")
                    .and_then(num)
                    .and_then(|n| u16::try_from(n).ok())
                    .unwrap_or(0);
                out.side.mark(idx, MarkKind::Exception(number));
            }
            "TRACE_ON" => out.side.mark(idx, MarkKind::TraceOn),
            "ADDR_NACC" => {
                let a = addr(body, "ADDR_NACC( ").unwrap_or(0);
                out.side.mark(idx, MarkKind::Nacc(a));
            }
            "ADDR_UNKNOWN" => out.side.mark(idx, MarkKind::AddrUnknown),
            _ => {}
        }
    }
    out.cuts.sort_unstable();
    out.cuts.dedup();
    out
}

/// One listed range as instructions: its first at `start`, the others
/// (when it has more than one) decoded from `mem`.
fn expand_listed(
    side: &mut Side,
    idx: u64,
    start: u32,
    n: u64,
    thumb: bool,
    executed: bool,
    mem: &dyn MemoryImage,
) {
    let count = u32::try_from(n).unwrap_or(u32::MAX);
    let range = Range {
        start,
        end: start,
        count,
        isa: if thumb { Isa::T32 } else { Isa::A32 },
        last_size: 0,
        last: InsnClass::Other,
        link: false,
        ret: false,
        cond: false,
        executed,
        cycles: None,
        space: Space::Any,
    };
    let mut k = 0;
    if count > 1 {
        for i in range.instructions(mem) {
            k += 1;
            side.push(
                Insn {
                    addr: i.addr,
                    thumb,
                    executed: executed || k < count,
                },
                idx,
                Class::Other,
            );
        }
    }
    if k == 0 && count > 0 {
        side.push(
            Insn {
                addr: start,
                thumb,
                executed: executed || count > 1,
            },
            idx,
            Class::Other,
        );
    }
}

/// Our decode of the snapshot, trace ID `id`, as a [`Side`]; also the
/// memory image of that source.
///
/// # Errors
///
/// When the snapshot cannot be read or decoded.
pub fn decode_ours(snapshot: &Path, id: u8) -> Result<(Side, Arc<MemoryMap>), String> {
    let input = resolve(snapshot, &SourceFlags::default()).map_err(|e| e.to_string())?;
    let mut side = Side::default();
    let mut mem_of_id = None;
    for capture in &input.captures {
        let bytes =
            std::fs::read(&capture.path).map_err(|e| format!("{}: {e}", capture.path.display()))?;
        let index = opencsd_indices(&bytes, capture.layout).unwrap_or_default();
        let mut by_name = HashMap::new();
        for s in &capture.sources {
            let m = memory_for(input.snapshot.as_ref(), &s.name, &ExtraMemory::default())
                .map_err(|e| e.to_string())?;
            let m = Arc::new(m);
            if s.id == id {
                mem_of_id = Some(Arc::clone(&m));
            }
            by_name.insert(s.name.clone(), m);
        }
        let mut events = Vec::new();
        trace_convert::input::capture::decoder(capture, |name| {
            by_name.get(name).map_or_else(
                || Arc::new(MemoryMap::new()) as Arc<dyn MemoryImage>,
                |m| Arc::clone(m) as Arc<dyn MemoryImage>,
            )
        })
        .and_then(|d| {
            trace_convert::input::capture::run(
                capture,
                &mut d.build(),
                &mut trace_core::capture::each_event(|e| {
                    if e.id == id {
                        events.push(*e);
                    }
                    Ok(())
                }),
            )
        })
        .map_err(|e| e.to_string())?;
        let mem: &dyn MemoryImage = match &mem_of_id {
            Some(m) => &**m,
            None => return Err(format!("no source with trace ID {id:#04x}")),
        };
        for e in &events {
            let idx = index.get(&e.offset).copied().unwrap_or(e.offset);
            match e.kind {
                EventKind::Range(r) => {
                    let mut k = 0;
                    for i in r.instructions(mem) {
                        k += 1;
                        let class = match r.last {
                            _ if k < r.count => Class::Other,
                            InsnClass::Branch => Class::Branch,
                            InsnClass::IndirectBranch => Class::Indirect,
                            _ => Class::Other,
                        };
                        side.push(
                            Insn {
                                addr: i.addr,
                                thumb: r.isa == Isa::T32,
                                executed: r.executed || k < r.count,
                            },
                            idx,
                            class,
                        );
                    }
                }
                EventKind::Exception { number, .. } => {
                    side.mark(idx, MarkKind::Exception(number));
                }
                EventKind::TraceOn { .. } => side.mark(idx, MarkKind::TraceOn),
                EventKind::AddrNacc { addr } => side.mark(idx, MarkKind::Nacc(addr)),
                EventKind::Gap(g) => side.mark(idx, MarkKind::Gap(g.name(), g.addr())),
                _ => {}
            }
        }
    }
    let mem = mem_of_id.ok_or_else(|| format!("no source with trace ID {id:#04x}"))?;
    Ok((side, mem))
}

/// Align the two sides at OpenCSD's address packets.
#[must_use]
pub fn compare(listed: &Listed, ours: &Side) -> Alignment {
    align(
        &listed.side.insns,
        &listed.side.idx,
        &ours.insns,
        &ours.idx,
        &listed.cuts,
    )
}

/// One kind of element between instructions compared: see
/// [`compare_marks`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkFigures {
    /// The kind's name.
    pub kind: &'static str,
    /// OpenCSD's elements of this kind.
    pub listed: usize,
    /// Ours.
    pub ours: usize,
    /// Ours before OpenCSD's first I-sync.
    pub ours_before_isync: usize,
    /// OpenCSD's that we produce at the same offset with the same value.
    pub matched: usize,
}

/// Per kind of element between instructions (exception, trace on, memory
/// not accessible): how many of OpenCSD's we produce at the same offset
/// with the same value.
#[must_use]
pub fn compare_marks(listed: &Listed, ours: &Side) -> Vec<MarkFigures> {
    type Is = fn(&MarkKind) -> bool;
    let kinds: [(&str, Is); 3] = [
        ("exceptions", |k| matches!(k, MarkKind::Exception(_))),
        ("trace on", |k| matches!(k, MarkKind::TraceOn)),
        ("memory not accessible", |k| matches!(k, MarkKind::Nacc(_))),
    ];
    kinds
        .iter()
        .map(|&(kind, is)| {
            let of = |s: &Side| -> Vec<(u64, MarkKind)> {
                s.marks
                    .iter()
                    .filter(|m| is(&m.kind))
                    .map(|m| (m.idx, m.kind.clone()))
                    .collect()
            };
            let theirs = of(&listed.side);
            let all_ours = of(ours);
            let mut left = all_ours.clone();
            let matched = theirs
                .iter()
                .filter(|t| {
                    left.iter()
                        .position(|o| o == *t)
                        .map(|p| left.swap_remove(p))
                        .is_some()
                })
                .count();
            MarkFigures {
                kind,
                listed: theirs.len(),
                ours: all_ours.len(),
                ours_before_isync: all_ours
                    .iter()
                    .filter(|(i, _)| listed.first_isync.is_none_or(|s| *i < s))
                    .count(),
                matched,
            }
        })
        .collect()
}
