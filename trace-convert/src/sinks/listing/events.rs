//! The `decode` listing: one JSON object or one text line per event.
//!
//! The JSONL schema (fields, their values, examples) is written once, in
//! `docs/jsonl.md` of the repository (section "Decode").

use crate::profile::{Profile, Profiles};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use trace_core::event::{DataItem, Event, EventKind, MExceptionName, Range};
use trace_core::memory::MemoryImage;

/// One event as a flat record (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Offset of the packet that produced the event.
    pub offset: u64,
    /// Trace ID.
    pub id: u8,
    /// Event kind (snake_case).
    pub kind: String,
    /// Range start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u32>,
    /// Range end (exclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<u32>,
    /// Instructions in the range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Instruction set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isa: Option<String>,
    /// The last instruction passed its condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executed: Option<bool>,
    /// Class of the last instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
    /// The last instruction is a branch with link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<bool>,
    /// The last instruction is a subroutine return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ret: Option<bool>,
    /// The last instruction is conditional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cond: Option<bool>,
    /// Cycle count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u32>,
    /// Exception number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u16>,
    /// Preferred return address of an exception.
    #[serde(default, rename = "return", skip_serializing_if = "Option::is_none")]
    pub return_addr: Option<u32>,
    /// Address of a memory-not-accessible event, gap or instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<u32>,
    /// Reason of a trace-on or gap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Non-secure state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns: Option<bool>,
    /// Hyp mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyp: Option<bool>,
    /// Context ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<u32>,
    /// VMID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vmid: Option<u8>,
    /// Timestamp value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<u64>,
    /// Which self-check an inconsistency comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// Where the decoded flow was when the trace contradicted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<u32>,
    /// The address the trace gives instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced: Option<u32>,
    /// ITM stimulus port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u32>,
    /// Value written to a stimulus port or traced by a DWT comparator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u32>,
    /// Size of that value in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u8>,
    /// ARMv7-M exception number of an exception trace event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<u16>,
    /// `enter`, `exit` or `return` (exception trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The processor was asleep when its PC was sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep: Option<bool>,
    /// DWT comparator of a data trace event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparator: Option<u8>,
    /// What a data trace event carries: `pc`, `address`, `value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    /// Bits 15:0 of a traced data address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_address: Option<u16>,
    /// The traced access was a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<bool>,
    /// Ticks since the previous local timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<u32>,
    /// How a local timestamp relates to the packet it times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    /// The opcode in hex as objdump prints it (instruction records): an
    /// A32 word, a T32 halfword, or a 32-bit T32 instruction's two
    /// halfwords, first first, apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opcode: Option<String>,
    /// Disassembly (instruction records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The function and offset of the address (range start or
    /// instruction), `name+0x10`, when symbols are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sym: Option<String>,
    /// Source file and line of the instruction, `file:line`, when symbols
    /// with DWARF line information are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srcline: Option<String>,
}

impl EventRecord {
    /// The record of `e`.
    #[must_use]
    pub fn from_event(e: &Event) -> EventRecord {
        let mut r = EventRecord {
            offset: e.offset,
            id: e.id,
            kind: e.kind.name().into(),
            ..EventRecord::default()
        };
        match e.kind {
            EventKind::Range(g) => {
                r.start = Some(g.start);
                r.end = Some(g.end);
                r.count = Some(g.count);
                r.isa = Some(g.isa.name().into());
                r.executed = Some(g.executed);
                r.last = Some(g.last.name().into());
                r.link = Some(g.link);
                r.ret = Some(g.ret);
                r.cond = Some(g.cond);
                r.cycles = g.cycles;
            }
            EventKind::Exception { number, ret } => {
                r.number = Some(number);
                r.return_addr = ret;
            }
            EventKind::Context(c) => {
                r.ns = Some(c.ns);
                r.hyp = Some(c.hyp);
                r.context_id = c.context_id;
                r.vmid = c.vmid;
                r.isa = Some(c.isa.name().into());
                r.cycles = c.cycles;
            }
            EventKind::TraceOn { reason, cycles } => {
                r.reason = Some(reason.name().into());
                r.cycles = cycles;
            }
            EventKind::Timestamp { value, cycles } => {
                r.timestamp = Some(value);
                r.cycles = cycles;
            }
            EventKind::CycleCount(c) => r.cycles = Some(c),
            EventKind::AddrNacc { addr } => r.address = Some(addr),
            EventKind::Gap(g) => {
                r.reason = Some(g.name().into());
                r.address = g.addr();
            }
            EventKind::Inconsistent {
                check,
                expected,
                traced,
            } => {
                r.check = Some(check.name().into());
                r.expected = Some(expected);
                r.traced = traced;
            }
            EventKind::Stimulus { port, value, size } => {
                r.port = Some(port);
                r.value = Some(value);
                r.size = Some(size);
            }
            EventKind::ExceptionTrace { number, action } => {
                r.exception = Some(number);
                r.action = Some(action.name().into());
            }
            EventKind::PcSample { pc } => match pc {
                Some(a) => r.address = Some(a),
                None => r.sleep = Some(true),
            },
            EventKind::DataTrace { comparator, item } => {
                r.comparator = Some(comparator);
                r.item = Some(item.name().into());
                match item {
                    DataItem::Pc(pc) => r.address = Some(pc),
                    DataItem::Address(a) => r.data_address = Some(a),
                    DataItem::Value { value, size, write } => {
                        r.value = Some(value);
                        r.size = Some(size);
                        r.write = Some(write);
                    }
                }
            }
            EventKind::LocalTimestamp { delta, relation } => {
                r.delta = Some(delta);
                r.relation = Some(relation.name().into());
            }
            // Kinds without fields, and any later kind: its name only.
            _ => {}
        }
        r
    }
}

/// Listing formats of the `decode` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFormat {
    /// One readable line per event.
    Text,
    /// One JSON object per line ([`EventRecord`]).
    Jsonl,
}

/// A range as a JSONL line, the same bytes `serde_json` writes for its
/// [`EventRecord`] (ranges are nearly every line of a listing, so they are
/// written without building the record).
fn write_range_json<W: Write + ?Sized>(
    out: &mut W,
    e: &Event,
    r: &trace_core::event::Range,
) -> io::Result<()> {
    let mut line = [0u8; 320];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        line[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    let mut num = itoa::Buffer::new();
    let flag = |b: bool| -> &'static [u8] {
        if b {
            b"true"
        } else {
            b"false"
        }
    };
    put(b"{\"offset\":");
    put(num.format(e.offset).as_bytes());
    put(b",\"id\":");
    put(num.format(e.id).as_bytes());
    put(b",\"kind\":\"range\",\"start\":");
    put(num.format(r.start).as_bytes());
    put(b",\"end\":");
    put(num.format(r.end).as_bytes());
    put(b",\"count\":");
    put(num.format(r.count).as_bytes());
    put(b",\"isa\":\"");
    put(r.isa.name().as_bytes());
    put(b"\",\"executed\":");
    put(flag(r.executed));
    put(b",\"last\":\"");
    put(r.last.name().as_bytes());
    put(b"\",\"link\":");
    put(flag(r.link));
    put(b",\"ret\":");
    put(flag(r.ret));
    put(b",\"cond\":");
    put(flag(r.cond));
    if let Some(c) = r.cycles {
        put(b",\"cycles\":");
        put(num.format(c).as_bytes());
    }
    put(b"}\n");
    out.write_all(&line[..at])
}

/// The opcode as objdump and DS-5 show it: the little-endian A32 word,
/// T32 halfwords in order (`eb02 0385`).
#[must_use]
pub fn opcode_hex(bytes: &[u8], isa: trace_core::event::Isa) -> String {
    match (isa, bytes) {
        (trace_core::event::Isa::A32, [a, b, c, d]) => {
            format!("{:08x}", u32::from_le_bytes([*a, *b, *c, *d]))
        }
        (_, [a, b]) => format!("{:04x}", u16::from_le_bytes([*a, *b])),
        (_, [a, b, c, d]) => format!(
            "{:04x} {:04x}",
            u16::from_le_bytes([*a, *b]),
            u16::from_le_bytes([*c, *d])
        ),
        _ => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// Write the listing of `e`; with `instructions`, a range is listed
/// instruction by instruction with disassembly read from that image.
///
/// # Errors
///
/// The writer's error.
pub fn write_event<W: Write + ?Sized>(
    out: &mut W,
    format: EventFormat,
    e: &Event,
    instructions: Option<&dyn MemoryImage>,
) -> io::Result<()> {
    write_event_named(out, format, e, instructions, None)
}

/// [`write_event`], naming exceptions in the text form by the profile of
/// each trace ID's core (`profiles`; without, by number alone).
///
/// # Errors
///
/// The writer's error.
pub fn write_event_named<W: Write + ?Sized>(
    out: &mut W,
    format: EventFormat,
    e: &Event,
    instructions: Option<&dyn MemoryImage>,
    profiles: Option<&Profiles>,
) -> io::Result<()> {
    if let (Some(mem), EventKind::Range(r)) = (instructions, &e.kind) {
        return write_instructions(out, format, e, r, mem, None);
    }
    match format {
        EventFormat::Jsonl => {
            if let EventKind::Range(r) = &e.kind {
                return write_range_json(out, e, r);
            }
            serde_json::to_writer(&mut *out, &EventRecord::from_event(e))?;
            out.write_all(b"\n")
        }
        EventFormat::Text => write_text(out, e, profiles),
    }
}

/// Write the range `r` of `e` instruction by instruction, with
/// disassembly read from `mem`, and each instruction's function and
/// source line from `symbols` when given.
pub(crate) fn write_instructions<W: Write + ?Sized>(
    out: &mut W,
    format: EventFormat,
    e: &Event,
    r: &Range,
    mem: &dyn MemoryImage,
    symbols: Option<&crate::symbols::Symbolizer>,
) -> io::Result<()> {
    let n = r.count;
    for (k, i) in r.instructions(mem).enumerate() {
        let last = k as u32 + 1 == n;
        let text = isa_decode::disassemble(i.opcode(), i.addr, r.isa)
            .unwrap_or_else(|| "<undecodable>".into());
        let executed = !last || r.executed;
        let sym = symbols.and_then(|s| sym_off(s, i.addr));
        let srcline = symbols.and_then(|s| src_line(s, i.addr));
        match format {
            EventFormat::Jsonl => {
                let rec = EventRecord {
                    offset: e.offset,
                    id: e.id,
                    kind: "instruction".into(),
                    address: Some(i.addr),
                    isa: Some(r.isa.name().into()),
                    executed: Some(executed),
                    opcode: Some(opcode_hex(i.opcode(), r.isa)),
                    text: Some(text),
                    sym,
                    srcline,
                    ..EventRecord::default()
                };
                serde_json::to_writer(&mut *out, &rec)?;
                out.write_all(b"\n")?;
            }
            EventFormat::Text => {
                write!(
                    out,
                    "{:>10}  {:#04x}  {:08x}  {:<9}  {}{}",
                    e.offset,
                    e.id,
                    i.addr,
                    opcode_hex(i.opcode(), r.isa),
                    text,
                    if executed { "" } else { "  (condition failed)" }
                )?;
                // Names from the ELF file: control characters escaped.
                if let Some(sym) = sym {
                    write!(out, "  <{}>", crate::escape::escaped(&sym))?;
                }
                if let Some(line) = srcline {
                    write!(out, "  {}", crate::escape::escaped(&line))?;
                }
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}

/// Write the text line of `e`.
fn write_text<W: Write + ?Sized>(
    out: &mut W,
    e: &Event,
    profiles: Option<&Profiles>,
) -> io::Result<()> {
    write!(out, "{:>10}  {:#04x}  ", e.offset, e.id)?;
    match e.kind {
        EventKind::Range(r) => writeln!(
            out,
            "range {:08x}..{:08x} {} insns {} {} {}{}{}{}{}",
            r.start,
            r.end,
            r.count,
            r.isa.name(),
            if r.executed { "E" } else { "N" },
            r.last.name(),
            if r.link { " link" } else { "" },
            if r.ret { " ret" } else { "" },
            if r.cond { " cond" } else { "" },
            r.cycles.map(|c| format!(" cc={c}")).unwrap_or_default()
        ),
        EventKind::Exception { number, ret } => {
            let name = profiles
                .map_or(Profile::Unknown, |p| p.of(e.id))
                .exception_name(number);
            let plain = format!("exception {number}");
            let ret = ret.map_or_else(|| "unknown".into(), |a| format!("{a:08x}"));
            if name == plain {
                writeln!(out, "{plain} return {ret}")
            } else {
                writeln!(out, "{plain} ({name}) return {ret}")
            }
        }
        EventKind::Context(c) => writeln!(
            out,
            "context {} {}{}{}{}",
            c.isa.name(),
            if c.ns { "NS" } else { "S" },
            if c.hyp { " hyp" } else { "" },
            c.context_id
                .map(|v| format!(" ctxid={v:#x}"))
                .unwrap_or_default(),
            c.vmid.map(|v| format!(" vmid={v}")).unwrap_or_default()
        ),
        EventKind::TraceOn { reason, .. } => writeln!(out, "trace on ({})", reason.name()),
        EventKind::Timestamp { value, .. } => writeln!(out, "timestamp {value:#x}"),
        EventKind::CycleCount(c) => writeln!(out, "cycles {c}"),
        EventKind::AddrNacc { addr } => {
            writeln!(out, "memory not accessible at {addr:08x}")
        }
        EventKind::Gap(g) => writeln!(
            out,
            "gap ({}){}",
            g.name(),
            g.addr().map(|a| format!(" at {a:08x}")).unwrap_or_default()
        ),
        EventKind::Inconsistent {
            check,
            expected,
            traced,
        } => writeln!(
            out,
            "inconsistent ({}): decoded flow at {expected:08x}, trace {}",
            check.name(),
            traced.map_or_else(|| "gives no address".to_owned(), |t| format!("at {t:08x}"))
        ),
        EventKind::ExceptionReturn => writeln!(out, "exception return"),
        EventKind::NoSync => writeln!(out, "no sync"),
        EventKind::EndOfTrace => writeln!(out, "end of trace"),
        EventKind::Stimulus { port, value, size } => writeln!(
            out,
            "stimulus port {port}: {value:#0w$x} ({size} bytes)",
            w = 2 + 2 * usize::from(size)
        ),
        EventKind::ExceptionTrace { number, action } => writeln!(
            out,
            "exception {} {} ({number})",
            action.name(),
            MExceptionName(number)
        ),
        EventKind::PcSample { pc: Some(pc) } => writeln!(out, "pc sample {pc:08x}"),
        EventKind::PcSample { pc: None } => writeln!(out, "pc sample: sleeping"),
        EventKind::DataTrace { comparator, item } => match item {
            DataItem::Pc(pc) => writeln!(out, "data trace comparator {comparator}: pc {pc:08x}"),
            DataItem::Address(a) => {
                writeln!(out, "data trace comparator {comparator}: address {a:#06x}")
            }
            DataItem::Value { value, size, write } => writeln!(
                out,
                "data trace comparator {comparator}: {} {value:#0w$x} ({size} bytes)",
                if write { "write" } else { "read" },
                w = 2 + 2 * usize::from(size)
            ),
        },
        EventKind::Overflow => writeln!(out, "overflow"),
        EventKind::LocalTimestamp { delta, relation } => {
            writeln!(out, "local timestamp +{delta} ({})", relation.name())
        }
        // A later kind: its name.
        other => writeln!(out, "{}", other.name()),
    }
}

/// `name+0x10`: the function covering `addr` and the offset into it.
#[must_use]
pub fn sym_off(symbols: &crate::symbols::Symbolizer, addr: u32) -> Option<String> {
    let f = symbols.function(addr)?;
    Some(format!("{}+{:#x}", f.name, addr.wrapping_sub(f.start)))
}

/// `file:line` of the instruction at `addr` (the innermost inlined
/// location).
#[must_use]
pub fn src_line(symbols: &crate::symbols::Symbolizer, addr: u32) -> Option<String> {
    let l = symbols.line(addr)?;
    Some(format!("{}:{}", l.file, l.line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_lines_are_the_records_serde_writes() {
        use trace_core::event::{InsnClass, Isa, Range};
        use trace_core::memory::Space;
        let classes = [
            InsnClass::Other,
            InsnClass::Branch,
            InsnClass::IndirectBranch,
            InsnClass::Isb,
            InsnClass::Barrier,
        ];
        let mut n = 0u32;
        for (k, last) in classes.into_iter().enumerate() {
            for bits in 0..64u32 {
                let r = Range {
                    start: 0xFFFF_FFF0u32.wrapping_mul(bits + 1),
                    end: bits * 4,
                    count: bits * 977,
                    isa: if bits & 1 == 0 { Isa::A32 } else { Isa::T32 },
                    last_size: 4,
                    last,
                    link: bits & 2 != 0,
                    ret: bits & 4 != 0,
                    cond: bits & 8 != 0,
                    executed: bits & 16 != 0,
                    cycles: (bits & 32 != 0).then_some(u32::MAX - bits),
                    space: Space::Any,
                };
                let e = Event {
                    offset: u64::MAX - u64::from(bits) * k as u64,
                    id: (bits as u8) ^ 0x7f,
                    kind: EventKind::Range(r),
                };
                let mut fast = Vec::new();
                write_event(&mut fast, EventFormat::Jsonl, &e, None).expect("write");
                let mut serde = serde_json::to_vec(&EventRecord::from_event(&e)).expect("json");
                serde.push(b'\n');
                assert_eq!(
                    String::from_utf8_lossy(&fast),
                    String::from_utf8_lossy(&serde)
                );
                n += 1;
            }
        }
        assert_eq!(n, 320);
    }
}
