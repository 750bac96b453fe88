//! The `packets` listing at the speed of the parsers: [`PacketListing`]
//! writes the lines of atoms, branch addresses and A-syncs (nearly every
//! line of a listing) into its own buffer with fixed-width copies and
//! hands the buffer on about every 64 KiB; every other item goes through
//! [`write_item`], whose bytes the fast lines equal.

use super::line_buf::{DecCache, LineBuf, Padded};
use super::packets::{write_item, ListFormat};
use std::io::{self, Write};
use trace_core::demux::{AnyPacket, Item};

/// Width of a padded name or atom string.
const NAME: usize = 16;

/// Width of a cached P-header line.
const P_HEADER: usize = 64;

/// Index of an ETMv3 instruction set in [`Names::etm_isa`].
#[inline(always)]
fn etm_isa(isa: etm_packets::Isa) -> usize {
    use etm_packets::Isa as I;
    match isa {
        I::Arm => 0,
        I::Thumb => 1,
        I::ThumbEE => 2,
        I::Jazelle => 3,
    }
}

/// Index of a PTM instruction set in [`Names::ptm_isa`].
#[inline(always)]
fn ptm_isa(isa: ptm_packets::Isa) -> usize {
    use ptm_packets::Isa as I;
    match isa {
        I::Arm => 0,
        I::Thumb => 1,
        I::ThumbEE => 2,
        I::Jazelle => 3,
    }
}

/// Texts the fast lines copy, each made once from the packets' own names
/// and forms.
#[derive(Debug)]
struct Names {
    etm_isa: [Padded<NAME>; 4],
    ptm_isa: [Padded<NAME>; 4],
    /// PTM atoms as the listing writes them, at `count << 5 | e_bits`.
    ptm_atoms: Vec<Padded<NAME>>,
}

impl Names {
    fn new(format: ListFormat) -> Self {
        use etm_packets::Isa as E;
        use ptm_packets::Isa as P;
        let etm = [E::Arm, E::Thumb, E::ThumbEE, E::Jazelle];
        let ptm = [P::Arm, P::Thumb, P::ThumbEE, P::Jazelle];
        let mut ptm_atoms = vec![Padded::new(b""); 6 << 5];
        for count in 1..=ptm_packets::Atoms::MAX {
            for bits in 0..1u8 << count {
                let Some(atoms) = ptm_packets::Atoms::new(count, bits) else {
                    continue;
                };
                let text: String = match format {
                    ListFormat::Text => atoms.to_string(),
                    ListFormat::Jsonl => atoms
                        .iter()
                        .map(|a| match a {
                            ptm_packets::Atom::E => 'E',
                            ptm_packets::Atom::N => 'N',
                        })
                        .collect(),
                };
                ptm_atoms[usize::from(count) << 5 | usize::from(bits)] =
                    Padded::new(text.as_bytes());
            }
        }
        Names {
            etm_isa: etm.map(|i| Padded::new(i.name().as_bytes())),
            ptm_isa: ptm.map(|i| Padded::new(i.name().as_bytes())),
            ptm_atoms,
        }
    }
}

/// The packet listing writer (see the module documentation). Call
/// [`PacketListing::finish`] after the last item: until then the end of
/// the listing may still be in the buffer.
#[derive(Debug)]
pub struct PacketListing {
    format: ListFormat,
    buf: LineBuf,
    names: Names,
    /// The lines of recent ETMv3 P-headers after the trace ID, by a hash
    /// of the P-header (streams repeat a few of them).
    p_headers: Vec<(u64, Padded<P_HEADER>)>,
    /// `,"id":N` for each trace ID.
    ids: Vec<Padded<NAME>>,
    /// Decimal forms of branch addresses.
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
            names: Names::new(format),
            // No P-header's key is 0 (see `cached_p_header`).
            p_headers: vec![(0, Padded::new(b"")); 256],
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

    /// The JSON line of `packet`, if it has a fast form (else nothing is
    /// written).
    #[inline(always)]
    fn json(&mut self, offset: u64, id: u8, packet: &AnyPacket) -> bool {
        let names = &self.names;
        let b = &mut self.buf;
        let p_headers = &mut self.p_headers;
        let id_text = &self.ids[usize::from(id)];
        let addrs = &mut self.addrs;
        match packet {
            AnyPacket::Ptm(ptm_packets::Packet::Atom { atoms, cycles }) => {
                json_start(b, offset, id_text);
                b.put(b",\"kind\":\"atom\",\"atoms\":\"");
                let k = usize::from(atoms.len() as u8) << 5 | usize::from(atoms.e_bits());
                b.name(&names.ptm_atoms[k & 0xFF]);
                b.byte(b'"');
                if let Some(c) = cycles {
                    b.put(b",\"cycles\":");
                    b.dec(u64::from(*c));
                }
            }
            AnyPacket::Ptm(ptm_packets::Packet::BranchAddress(p)) => {
                json_start(b, offset, id_text);
                b.put(b",\"kind\":\"branch_address\",\"address\":");
                b.dec_cached(addrs, p.address);
                b.put(b",\"bits\":");
                b.dec(u64::from(p.bits));
                b.put(b",\"isa\":\"");
                b.name(&names.ptm_isa[ptm_isa(p.isa)]);
                b.byte(b'"');
                if let Some(e) = p.exception {
                    b.put(b",\"ns\":");
                    flag(b, e.ns);
                    if let Some(h) = e.hyp {
                        b.put(b",\"hyp\":");
                        flag(b, h);
                    }
                    b.put(b",\"alt_isa\":");
                    flag(b, e.alt_isa);
                }
                if let Some(c) = p.cycles {
                    b.put(b",\"cycles\":");
                    b.dec(u64::from(c));
                }
                if let Some(e) = p.exception {
                    b.put(b",\"exception\":");
                    b.dec(u64::from(e.number));
                }
            }
            AnyPacket::Etm(etm_packets::Packet::Atoms(a)) => {
                json_start(b, offset, id_text);
                cached_p_header(b, p_headers, a, |b| {
                    b.put(b",\"kind\":\"p_header\",\"atoms\":\"");
                    etm_atoms(b, a);
                    b.byte(b'"');
                    if a.cycles > 0 {
                        b.put(b",\"cycles\":");
                        b.dec(u64::from(a.cycles));
                    }
                });
            }
            AnyPacket::Etm(etm_packets::Packet::Branch(p)) => {
                json_start(b, offset, id_text);
                b.put(b",\"kind\":\"branch_address\",\"address\":");
                b.dec_cached(addrs, p.address);
                b.put(b",\"bits\":");
                b.dec(u64::from(p.bits));
                if p.known_bits < 32 {
                    b.put(b",\"known_bits\":");
                    b.dec(u64::from(p.known_bits));
                }
                b.put(b",\"isa\":\"");
                b.name(&names.etm_isa[etm_isa(p.isa)]);
                b.put(b"\",\"ns\":");
                flag(b, p.ns);
                b.put(b",\"hyp\":");
                flag(b, p.hyp);
                if let Some(e) = p.exception {
                    b.put(b",\"exception\":");
                    b.dec(u64::from(e.number));
                    b.put(b",\"cancel\":");
                    flag(b, e.cancel);
                    b.put(b",\"resume\":");
                    b.dec(u64::from(e.resume));
                }
            }
            AnyPacket::Etm(etm_packets::Packet::ASync)
            | AnyPacket::Ptm(ptm_packets::Packet::ASync) => {
                json_start(b, offset, id_text);
                b.put(b",\"kind\":\"a_sync\"");
            }
            _ => return false,
        }
        b.put(b"}\n");
        true
    }

    /// The text line of `packet`, if it has a fast form (else nothing is
    /// written).
    #[inline(always)]
    fn text(&mut self, offset: u64, id: u8, packet: &AnyPacket) -> bool {
        let names = &self.names;
        let b = &mut self.buf;
        let p_headers = &mut self.p_headers;
        match packet {
            AnyPacket::Ptm(ptm_packets::Packet::Atom { atoms, cycles }) => {
                text_start(b, offset, id);
                b.put(b"atom ");
                let k = usize::from(atoms.len() as u8) << 5 | usize::from(atoms.e_bits());
                b.name(&names.ptm_atoms[k & 0xFF]);
                ptm_cycles(b, *cycles);
            }
            AnyPacket::Ptm(ptm_packets::Packet::BranchAddress(p)) if p.exception.is_none() => {
                text_start(b, offset, id);
                b.put(b"branch addr=0x");
                b.hex8(p.address);
                b.put(b" bits=");
                b.dec(u64::from(p.bits));
                b.put(b" isa=");
                b.name(&names.ptm_isa[ptm_isa(p.isa)]);
                ptm_cycles(b, p.cycles);
            }
            AnyPacket::Etm(etm_packets::Packet::Atoms(a)) => {
                text_start(b, offset, id);
                cached_p_header(b, p_headers, a, |b| {
                    b.put(b"P-header ");
                    if a.is_empty() {
                        b.put(b"(empty)");
                    }
                    etm_atoms(b, a);
                    b.put(b" (");
                    b.dec(u64::from(a.count));
                    b.put(b" instruction");
                    if a.count != 1 {
                        b.byte(b's');
                    }
                    if a.cycles > 0 {
                        b.put(b", ");
                        b.dec(u64::from(a.cycles));
                        b.put(b" cycle");
                        if a.cycles != 1 {
                            b.byte(b's');
                        }
                    }
                    b.byte(b')');
                });
            }
            AnyPacket::Etm(etm_packets::Packet::Branch(p)) if p.exception.is_none() => {
                text_start(b, offset, id);
                b.put(b"Branch addr=0x");
                b.hex8(p.address);
                b.put(b" (");
                b.dec(u64::from(p.bits));
                b.put(b" bits) isa=");
                b.name(&names.etm_isa[etm_isa(p.isa)]);
                if p.ns {
                    b.put(b" ns");
                } else {
                    b.put(b" s");
                }
                if p.hyp {
                    b.put(b" hyp");
                }
            }
            AnyPacket::Etm(etm_packets::Packet::ASync) => {
                text_start(b, offset, id);
                b.put(b"A-sync");
            }
            AnyPacket::Ptm(ptm_packets::Packet::ASync) => {
                text_start(b, offset, id);
                b.put(b"a-sync");
            }
            _ => return false,
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

/// `{"offset":N,"id":N` (`id` holds `,"id":N`).
#[inline(always)]
fn json_start(b: &mut LineBuf, offset: u64, id: &Padded<NAME>) {
    b.put(b"{\"offset\":");
    b.dec(offset);
    b.name(id);
}

/// The offset right-aligned in 10 columns and the trace ID.
#[inline(always)]
fn text_start(b: &mut LineBuf, offset: u64, id: u8) {
    b.dec_right10(offset);
    b.put(b"  ");
    b.id(id);
    b.put(b"  ");
}

/// The rest of a P-header's line from `cache`, or written by `write` and
/// kept there.
#[inline(always)]
fn cached_p_header(
    b: &mut LineBuf,
    cache: &mut [(u64, Padded<P_HEADER>)],
    a: &etm_packets::Atoms,
    write: impl FnOnce(&mut LineBuf),
) {
    let key = 1 << 63
        | u64::from(a.format.number()) << 40
        | u64::from(a.count) << 32
        | u64::from(a.executed) << 16
        | u64::from(a.cycles);
    let at = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize;
    if let Some(slot) = cache.get_mut(at) {
        if slot.0 == key {
            b.name(&slot.1);
            return;
        }
        let mark = b.mark();
        write(b);
        let text = b.since(mark);
        if text.len() <= P_HEADER {
            *slot = (key, Padded::new(text));
        }
    } else {
        write(b);
    }
}

/// `true` or `false`.
#[inline(always)]
fn flag(b: &mut LineBuf, v: bool) {
    if v {
        b.put(b"true");
    } else {
        b.put(b"false");
    }
}

/// ` cycles=N` of a PTM packet that carries a count.
#[inline(always)]
fn ptm_cycles(b: &mut LineBuf, cycles: Option<u32>) {
    if let Some(c) = cycles {
        b.put(b" cycles=");
        b.dec(u64::from(c));
    }
}

/// The atoms of an ETMv3 P-header in trace order, one letter each.
#[inline(always)]
fn etm_atoms(b: &mut LineBuf, a: &etm_packets::Atoms) {
    for atom in a.iter() {
        b.byte(match atom {
            etm_packets::Atom::E => b'E',
            etm_packets::Atom::N => b'N',
            etm_packets::Atom::W => b'W',
        });
    }
}
