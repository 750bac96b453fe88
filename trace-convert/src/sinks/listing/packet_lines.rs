//! The `packets` listing at the speed of the parsers: [`PacketListing`]
//! writes every packet's line into its own buffer and hands the buffer on
//! about every 64 KiB. The protocol of each packet says what goes on its
//! line (trace-core's `protocol` seam): its JSON Lines fields through a
//! [`FieldWriter`] that writes JSON straight into the buffer, its text
//! line through a [`TextWriter`] for the packets that make up most of a
//! stream, and, for packets a stream repeats (ETMv3 P-headers, PTM
//! atoms), a key under which the rest of the line is kept and copied
//! after. Every other item goes through [`write_item`], whose bytes these
//! lines equal.

use super::line_buf::{DecCache, LineBuf, Padded};
use super::packets::{write_item, ListFormat};
use std::io::{self, Write};
use trace_core::demux::{AnyPacket, Item};
use trace_core::protocol::{FieldWriter, TextWriter};

/// Width of a padded trace ID field.
const ID: usize = 16;

/// Width of a kept line tail.
const TAIL: usize = 64;

/// The packet listing writer (see the module documentation). Call
/// [`PacketListing::finish`] after the last item: until then the end of
/// the listing may still be in the buffer.
#[derive(Debug)]
pub struct PacketListing {
    format: ListFormat,
    buf: LineBuf,
    /// The lines of recently listed packets after the trace ID, by a hash
    /// of their listing key (streams repeat a few of them).
    tails: Vec<(u64, Padded<TAIL>)>,
    /// `,"id":N` for each trace ID.
    ids: Vec<Padded<ID>>,
    /// Decimal forms of addresses.
    addrs: DecCache,
    /// Lines of the other items, before they join the buffer.
    scratch: Vec<u8>,
}

impl PacketListing {
    /// A writer of `format` lines.
    #[must_use]
    pub fn new(format: ListFormat) -> Self {
        PacketListing {
            format,
            buf: LineBuf::new(),
            // No kept line's key is 0 (see `kept_tail`).
            tails: vec![(0, Padded::new(b"")); 256],
            ids: (0..=u8::MAX)
                .map(|id| Padded::new(format!(",\"id\":{id}").as_bytes()))
                .collect(),
            addrs: DecCache::new(),
            scratch: Vec::new(),
        }
    }

    /// Write the listing line of `item`, as [`write_item`] does.
    ///
    /// # Errors
    ///
    /// The writer's error.
    #[inline]
    pub fn write<W: Write + ?Sized>(&mut self, out: &mut W, item: &Item) -> io::Result<()> {
        if let Item::Packet { id, offset, packet } = item {
            self.buf.room(out)?;
            let done = match self.format {
                ListFormat::Jsonl => self.json(*offset, *id, packet),
                ListFormat::Text => self.text(*offset, *id, packet),
            };
            if done {
                return Ok(());
            }
        }
        self.slow(out, item)
    }

    /// Hand everything written so far to `out`.
    ///
    /// # Errors
    ///
    /// The writer's error.
    pub fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        self.buf.flush(out)
    }

    /// The JSON line of `packet`: `offset`, `id`, `kind` and the fields
    /// its protocol gives. Always written.
    #[inline(always)]
    fn json(&mut self, offset: u64, id: u8, packet: &AnyPacket) -> bool {
        let b = &mut self.buf;
        b.put(b"{\"offset\":");
        b.dec(offset);
        b.name(&self.ids[usize::from(id)]);
        let addrs = &mut self.addrs;
        kept_tail(b, &mut self.tails, packet.listing_key(), |b| {
            b.put(b",\"kind\":\"");
            b.put_str(packet.kind());
            b.byte(b'"');
            packet.fields(&mut JsonFields { b, addrs });
            true
        });
        b.put(b"}\n");
        true
    }

    /// The text line of `packet`, if its protocol writes it (else nothing
    /// is written).
    #[inline(always)]
    fn text(&mut self, offset: u64, id: u8, packet: &AnyPacket) -> bool {
        let b = &mut self.buf;
        let mark = b.mark();
        b.dec_right10(offset);
        b.put(b"  ");
        b.id(id);
        b.put(b"  ");
        let listed = kept_tail(b, &mut self.tails, packet.listing_key(), |b| {
            packet.text(&mut TextLine(b))
        });
        if !listed {
            b.truncate(mark);
            return false;
        }
        b.byte(b'\n');
        true
    }

    /// Any other item.
    #[cold]
    fn slow<W: Write + ?Sized>(&mut self, out: &mut W, item: &Item) -> io::Result<()> {
        self.scratch.clear();
        write_item(&mut self.scratch, self.format, item)?;
        self.buf.put_any(out, &self.scratch)
    }
}

/// The rest of a line from `cache` when `key` is kept there, or written
/// by `write` (which says whether it wrote it) and kept there.
#[inline(always)]
fn kept_tail(
    b: &mut LineBuf,
    cache: &mut [(u64, Padded<TAIL>)],
    key: Option<u64>,
    write: impl FnOnce(&mut LineBuf) -> bool,
) -> bool {
    let Some(key) = key else {
        return write(b);
    };
    let key = key | 1 << 63;
    let at = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize;
    let Some(slot) = cache.get_mut(at) else {
        return write(b);
    };
    if slot.0 == key {
        b.name_within::<32, TAIL>(&slot.1);
        return true;
    }
    let mark = b.mark();
    if !write(b) {
        return false;
    }
    let text = b.since(mark);
    if text.len() <= TAIL {
        *slot = (key, Padded::new(text));
    }
    true
}

/// A packet's fields as JSON, straight into the line buffer.
struct JsonFields<'a> {
    b: &'a mut LineBuf,
    addrs: &'a mut DecCache,
}

impl JsonFields<'_> {
    /// `,"name":`.
    #[inline(always)]
    fn key(&mut self, name: &str) {
        self.b.put(b",\"");
        self.b.put_str(name);
        self.b.put(b"\":");
    }
}

impl FieldWriter for JsonFields<'_> {
    #[inline(always)]
    fn num(&mut self, name: &'static str, value: u64) {
        self.key(name);
        self.b.dec(value);
    }

    #[inline(always)]
    fn address(&mut self, name: &'static str, value: u32) {
        self.key(name);
        self.b.dec_cached(self.addrs, value);
    }

    #[inline(always)]
    fn flag(&mut self, name: &'static str, value: bool) {
        self.key(name);
        if value {
            self.b.put(b"true");
        } else {
            self.b.put(b"false");
        }
    }

    /// A static name needs no escape (see [`FieldWriter::text`]; the
    /// listing tests compare these lines with `serde_json`'s).
    #[inline(always)]
    fn text(&mut self, name: &'static str, value: &'static str) {
        self.key(name);
        self.b.byte(b'"');
        self.b.put_str(value);
        self.b.byte(b'"');
    }

    #[inline(always)]
    fn letters(&mut self, name: &'static str, letters: impl Iterator<Item = u8>) {
        self.key(name);
        self.b.byte(b'"');
        for l in letters {
            self.b.byte(l);
        }
        self.b.byte(b'"');
    }
}

/// A packet's text line, straight into the line buffer.
struct TextLine<'a>(&'a mut LineBuf);

impl TextWriter for TextLine<'_> {
    #[inline(always)]
    fn put(&mut self, text: &str) {
        self.0.put_str(text);
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.0.byte(b);
    }

    #[inline(always)]
    fn dec(&mut self, value: u64) {
        self.0.dec(value);
    }

    #[inline(always)]
    fn hex8(&mut self, value: u32) {
        self.0.hex8(value);
    }
}
