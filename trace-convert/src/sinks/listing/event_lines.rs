//! The `decode` listing at the speed of the decode: [`EventListing`]
//! writes the lines of ranges and cycle counts (nearly every line of a
//! listing) into its own buffer with fixed-width copies and hands the
//! buffer on about every 64 KiB; every other event goes through
//! [`write_event`](super::events::write_event), whose bytes the fast lines equal.

use super::events::{write_event_named, EventFormat};
use super::line_buf::{DecCache, LineBuf, Padded};
use crate::profile::Profiles;
use std::io::{self, Write};
use trace_core::event::{Event, EventKind, InsnClass, Isa, Range};
use trace_core::memory::MemoryImage;

/// Instruction sets in the order of their discriminants.
const ISAS: [Isa; 2] = [Isa::A32, Isa::T32];

/// Classes of a range's last instruction in the order of their
/// discriminants.
const CLASSES: [InsnClass; 5] = [
    InsnClass::Other,
    InsnClass::Branch,
    InsnClass::IndirectBranch,
    InsnClass::Isb,
    InsnClass::Barrier,
];

/// Width of the precomputed end of a range line.
const TAIL: usize = 128;

/// Index of a range's flags in the tables of line ends.
#[inline(always)]
fn flags(r: &Range) -> usize {
    let mut k = r.isa as usize;
    k = k * 2 + usize::from(r.executed);
    k = k * CLASSES.len() + r.last as usize;
    k = k * 2 + usize::from(r.link);
    k = k * 2 + usize::from(r.ret);
    k * 2 + usize::from(r.cond)
}

/// The decode listing writer (see the module documentation). Call
/// [`EventListing::finish`] after the last event: until then the end of
/// the listing may still be in the buffer.
#[derive(Debug)]
pub struct EventListing {
    format: EventFormat,
    buf: LineBuf,
    /// The end of a range line after its count, for each [`flags`] index.
    tails: Vec<Padded<TAIL>>,
    /// The start of a JSON range line after its offset, for each trace
    /// ID.
    heads: Vec<Padded<48>>,
    /// Decimal forms of range addresses.
    addrs: DecCache,
    /// Lines of the other events, before they join the buffer.
    scratch: Vec<u8>,
    /// The cores' profiles, which name exceptions.
    profiles: Option<Profiles>,
}

impl EventListing {
    /// A writer of `format` lines.
    #[must_use]
    pub fn new(format: EventFormat) -> Self {
        let mut tails = Vec::with_capacity(2 * 2 * CLASSES.len() * 8);
        for isa in ISAS {
            for executed in [false, true] {
                for last in CLASSES {
                    for link in [false, true] {
                        for ret in [false, true] {
                            for cond in [false, true] {
                                let t = match format {
                                    EventFormat::Jsonl => format!(
                                        ",\"isa\":\"{}\",\"executed\":{executed},\"last\":\"{}\",\
                                         \"link\":{link},\"ret\":{ret},\"cond\":{cond}",
                                        isa.name(),
                                        last.name()
                                    ),
                                    EventFormat::Text => format!(
                                        " insns {} {} {}{}{}{}",
                                        isa.name(),
                                        if executed { "E" } else { "N" },
                                        last.name(),
                                        if link { " link" } else { "" },
                                        if ret { " ret" } else { "" },
                                        if cond { " cond" } else { "" },
                                    ),
                                };
                                tails.push(Padded::new(t.as_bytes()));
                            }
                        }
                    }
                }
            }
        }
        let heads = (0..=u8::MAX)
            .map(|id| Padded::new(format!(",\"id\":{id},\"kind\":\"range\",\"start\":").as_bytes()))
            .collect();
        EventListing {
            format,
            buf: LineBuf::new(),
            tails,
            heads,
            addrs: DecCache::new(),
            scratch: Vec::new(),
            profiles: None,
        }
    }

    /// Name exceptions by the profiles of the cores (by number alone
    /// without).
    pub fn set_profiles(&mut self, profiles: Profiles) {
        self.profiles = Some(profiles);
    }

    /// Write the listing of `e`, as
    /// [`write_event_named`] does.
    ///
    /// # Errors
    ///
    /// The writer's error.
    #[inline]
    pub fn write<W: Write + ?Sized>(
        &mut self,
        out: &mut W,
        e: &Event,
        instructions: Option<&dyn MemoryImage>,
    ) -> io::Result<()> {
        if instructions.is_none() {
            match (&e.kind, self.format) {
                (EventKind::Range(r), EventFormat::Jsonl) => {
                    self.buf.room(out)?;
                    self.range_json(e, r);
                    return Ok(());
                }
                (EventKind::Range(r), EventFormat::Text) => {
                    self.buf.room(out)?;
                    self.range_text(e, r);
                    return Ok(());
                }
                (EventKind::CycleCount(c), EventFormat::Jsonl) => {
                    self.buf.room(out)?;
                    let b = &mut self.buf;
                    b.put(b"{\"offset\":");
                    b.dec(e.offset);
                    b.put(b",\"id\":");
                    b.dec(u64::from(e.id));
                    b.put(b",\"kind\":\"cycle_count\",\"cycles\":");
                    b.dec(u64::from(*c));
                    b.put(b"}\n");
                    return Ok(());
                }
                (EventKind::CycleCount(c), EventFormat::Text) => {
                    self.buf.room(out)?;
                    let b = &mut self.buf;
                    b.dec_right10(e.offset);
                    b.put(b"  ");
                    b.id(e.id);
                    b.put(b"  cycles ");
                    b.dec(u64::from(*c));
                    b.byte(b'\n');
                    return Ok(());
                }
                _ => {}
            }
        }
        self.slow(out, e, instructions)
    }

    /// Hand everything written so far to `out`.
    ///
    /// # Errors
    ///
    /// The writer's error.
    pub fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        self.buf.flush(out)
    }

    #[inline(always)]
    fn range_json(&mut self, e: &Event, r: &Range) {
        let b = &mut self.buf;
        b.put(b"{\"offset\":");
        b.dec(e.offset);
        b.name(&self.heads[usize::from(e.id)]);
        b.dec_cached(&mut self.addrs, r.start);
        b.put(b",\"end\":");
        b.dec_cached(&mut self.addrs, r.end);
        b.put(b",\"count\":");
        b.dec(u64::from(r.count));
        b.name(&self.tails[flags(r)]);
        if let Some(c) = r.cycles {
            b.put(b",\"cycles\":");
            b.dec(u64::from(c));
        }
        b.put(b"}\n");
    }

    #[inline(always)]
    fn range_text(&mut self, e: &Event, r: &Range) {
        let b = &mut self.buf;
        b.dec_right10(e.offset);
        b.put(b"  ");
        b.id(e.id);
        b.put(b"  range ");
        b.hex8(r.start);
        b.put(b"..");
        b.hex8(r.end);
        b.byte(b' ');
        b.dec(u64::from(r.count));
        b.name(&self.tails[flags(r)]);
        if let Some(c) = r.cycles {
            b.put(b" cc=");
            b.dec(u64::from(c));
        }
        b.byte(b'\n');
    }

    /// Any other event, or a range listed instruction by instruction.
    #[cold]
    fn slow<W: Write + ?Sized>(
        &mut self,
        out: &mut W,
        e: &Event,
        instructions: Option<&dyn MemoryImage>,
    ) -> io::Result<()> {
        if instructions.is_some() {
            // Listed as written, however many lines a range takes.
            self.buf.flush(out)?;
            let profiles = self.profiles.as_ref();
            return write_event_named(out, self.format, e, instructions, profiles);
        }
        self.scratch.clear();
        let profiles = self.profiles.as_ref();
        write_event_named(&mut self.scratch, self.format, e, None, profiles)?;
        self.buf.put_any(out, &self.scratch)
    }
}
