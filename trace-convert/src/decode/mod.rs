//! Decoding captures into instruction-flow events: memory images for each
//! source, one [`Decoder`] per trace ID, and the `decode` listing.

mod in_parts;
mod mismatches;
pub mod parallel;

use crate::input::shown::shown;
use crate::input::snapshot::Snapshot;
use crate::input::source::CaptureSpec;
use crate::packets::{stream_capture, ReadError};
use std::collections::hash_map::{Entry, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::{Demux, Item, SourceStats};
use trace_core::event::{Event, EventKind};
use trace_core::memory::{Contents, MemoryError, MemoryImage, MemoryMap, Space};

pub use mismatches::{Firsts, Mismatches};
pub(crate) use parallel::decode_to;
pub use parallel::{
    decode_capture_parts, decode_capture_with, DecodeOptions, Delivery, Part, Parts,
};

/// A `--mem FILE@ADDR` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemArg {
    /// The raw binary.
    pub path: PathBuf,
    /// Address of its first byte.
    pub address: u32,
}

impl std::str::FromStr for MemArg {
    type Err = String;

    /// Parse `file.bin@0x80000000` (hexadecimal with `0x`, or decimal).
    ///
    /// # Errors
    ///
    /// A message when there is no `@`, the file name is empty, or the
    /// address is not a 32-bit number.
    fn from_str(s: &str) -> Result<MemArg, String> {
        let (file, addr) = s
            .rsplit_once('@')
            .ok_or_else(|| format!("`{s}`: expected FILE@ADDRESS, e.g. code.bin@0x80000000"))?;
        if file.is_empty() {
            return Err(format!("`{s}`: the file name is empty"));
        }
        let a = addr.trim();
        let address = match a.strip_prefix("0x").or_else(|| a.strip_prefix("0X")) {
            Some(h) => u32::from_str_radix(h, 16),
            None => a.parse(),
        }
        .map_err(|e| format!("`{s}`: `{addr}` is not a 32-bit address: {e}"))?;
        Ok(MemArg {
            path: PathBuf::from(file),
            address,
        })
    }
}

/// Extra memory given on the command line, added to every source's image.
#[derive(Debug, Clone, Default)]
pub struct ExtraMemory {
    /// ELF files.
    pub elves: Vec<PathBuf>,
    /// Raw binaries at addresses.
    pub raw: Vec<MemArg>,
}

/// Some memory image would be found for `source` ([`memory_for`]): extra
/// files are given, or the snapshot binds the source to a core with
/// dumps. Nothing is read.
#[must_use]
pub fn has_memory(snapshot: Option<&Snapshot>, source: &str, extra: &ExtraMemory) -> bool {
    !extra.elves.is_empty()
        || !extra.raw.is_empty()
        || snapshot
            .and_then(|s| s.core_of(source))
            .is_some_and(|core| !core.dumps.is_empty())
}

/// The warning for a source without memory image (`name` is the
/// source's).
#[must_use]
pub fn no_memory_warning(name: &str) -> String {
    format!(
        "{name}: no memory image (give --elf or --mem); every address will be reported as not accessible"
    )
}

/// The memory image of one source: the dumps of the core the snapshot
/// binds it to, then the extra files (which win where they overlap).
///
/// # Errors
///
/// [`MemoryError`] when a dump or file cannot be loaded.
pub fn memory_for(
    snapshot: Option<&Snapshot>,
    source: &str,
    extra: &ExtraMemory,
) -> Result<MemoryMap, MemoryError> {
    let mut map = MemoryMap::new();
    if let (Some(snap), Some(core)) = (snapshot, snapshot.and_then(|s| s.core_of(source))) {
        // Each file once, however many dump sections name it.
        let mut files: HashMap<&Path, Contents> = HashMap::new();
        for d in &core.dumps {
            let space = d
                .space
                .as_deref()
                .and_then(Space::from_snapshot)
                .unwrap_or(Space::Any);
            let base = u32::try_from(d.address).map_err(|_| MemoryError::BadRegion {
                name: d.path.display().to_string(),
                reason: format!("address {:#x} beyond 32 bits", d.address),
            })?;
            let contents = match files.entry(&d.file) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let io = |source| MemoryError::Io {
                        path: d.path.clone(),
                        source,
                    };
                    let file = snap.open(&d.file).map_err(io)?;
                    e.insert(Contents::map(&file).map_err(io)?)
                }
            };
            let name = shown(&d.path.display().to_string());
            map.add_contents(name, contents, base, space, d.offset, d.length)?;
        }
    }
    for e in &extra.elves {
        map.add_elf(e, Space::Any)?;
    }
    for m in &extra.raw {
        map.add_file(&m.path, m.address, Space::Any, 0, None)?;
    }
    Ok(map)
}

/// Counters of one decoded capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodeSummary {
    /// Per trace ID: events, instructions and ranges.
    pub sources: Vec<(u8, SourceCounts)>,
    /// Per configured trace ID: the packet parser's counters (bytes,
    /// packets, bytes skipped, errors).
    pub parsed: Vec<(u8, SourceStats)>,
    /// Bytes read from the capture.
    pub bytes: u64,
}

/// The parser counters of every configured trace ID of `demux`.
pub(crate) fn parsed(demux: &Demux) -> Vec<(u8, SourceStats)> {
    demux
        .ids()
        .into_iter()
        .filter_map(|id| demux.stats(id).map(|s| (id, s)))
        .collect()
}

/// Counters of one trace source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceCounts {
    /// Events emitted.
    pub events: u64,
    /// Instruction ranges.
    pub ranges: u64,
    /// Instructions.
    pub instructions: u64,
    /// Memory-not-accessible events.
    pub nacc: u64,
    /// Gaps (decode errors).
    pub gaps: u64,
    /// Where the trace contradicted its memory image or itself.
    pub mismatches: Mismatches,
}

impl SourceCounts {
    /// Count one event.
    #[inline]
    pub fn count(&mut self, e: &Event) {
        self.events += 1;
        match e.kind {
            EventKind::Range(r) => {
                self.ranges += 1;
                self.instructions += u64::from(r.count);
            }
            EventKind::AddrNacc { .. } => self.nacc += 1,
            EventKind::Gap(_) => {
                self.gaps += 1;
                self.mismatches.count(e);
            }
            EventKind::Inconsistent { .. } => self.mismatches.count(e),
            _ => {}
        }
    }

    /// Add another's counts.
    #[inline]
    pub fn add(&mut self, other: &SourceCounts) {
        self.events += other.events;
        self.ranges += other.ranges;
        self.instructions += other.instructions;
        self.nacc += other.nacc;
        self.gaps += other.gaps;
        self.mismatches.add(&other.mismatches);
    }
}

/// Decode the capture of `spec`, each source against the image `memory`
/// returns for it (by source name), handing every event to `each` in
/// capture order per trace ID.
///
/// Large captures are decoded on all available threads
/// ([`decode_capture_with`] with the default [`DecodeOptions`]); the events
/// and their order are the same either way, and `each` is always called
/// on the calling thread.
///
/// # Errors
///
/// [`ReadError`] when the configuration is unusable, the capture cannot be
/// read, or `each` fails.
pub fn decode_capture(
    spec: &CaptureSpec,
    memory: impl FnMut(&str) -> Arc<dyn MemoryImage>,
    each: impl FnMut(&Event) -> io::Result<()>,
) -> Result<DecodeSummary, ReadError> {
    decode_capture_with(spec, memory, &DecodeOptions::default(), each)
}

/// [`decode_capture`] on the calling thread only.
///
/// # Errors
///
/// As [`decode_capture`].
pub fn decode_sequential(
    spec: &CaptureSpec,
    memory: impl FnMut(&str) -> Arc<dyn MemoryImage>,
    each: impl FnMut(&Event) -> io::Result<()>,
) -> Result<DecodeSummary, ReadError> {
    decode_sequential_into(spec, memory, &mut OnlyEvents(each))
}

/// [`decode_sequential`] handing every delivery to `each`.
pub(crate) fn decode_sequential_into<T: Take>(
    spec: &CaptureSpec,
    mut memory: impl FnMut(&str) -> Arc<dyn MemoryImage>,
    each: &mut T,
) -> Result<DecodeSummary, ReadError> {
    // The decoders in order of first use, and per trace ID the index of
    // its decoder (NO_DECODER: none). Looked up for every packet: a table
    // of its own, not a flag inside each decoder, whose state the decoder
    // has only just written.
    let mut decoders: Vec<Decoder> = Vec::new();
    let mut slot = [NO_DECODER; 256];
    let mut sink = Sink {
        counts: Box::new([SourceCounts::default(); 256]),
        failure: None,
        each,
    };
    // Events held for a consumer that takes them in slices.
    let mut held: Vec<Event> = Vec::with_capacity(if T::SLICES { 2 * SLICE } else { 0 });
    let (demux, bytes) = stream_capture(spec, |items| {
        for item in items {
            match item {
                Item::Packet { id, offset, packet } => {
                    let i = slot[usize::from(*id)];
                    let dec = match decoders.get_mut(usize::from(i)) {
                        Some(d) => d,
                        None => {
                            let Some(src) = spec.source(*id) else {
                                continue;
                            };
                            let cfg = DecoderConfig::new(*id, &src.config()?)
                                .with_etmccer(src.regs.etmccer);
                            slot[usize::from(*id)] =
                                u8::try_from(decoders.len()).unwrap_or(NO_DECODER);
                            decoders.push(Decoder::new(cfg, memory(&src.name)));
                            let Some(d) = decoders.last_mut() else {
                                continue;
                            };
                            d
                        }
                    };
                    if T::SLICES {
                        dec.push(*offset, packet, &mut |e| held.push(e));
                        if held.len() >= SLICE {
                            sink.on_slice(&held);
                            held.clear();
                        }
                    } else {
                        dec.push(*offset, packet, &mut |e| sink.on(&e));
                    }
                }
                Item::Error { id, error } => {
                    if let Some(dec) = decoders.get_mut(usize::from(slot[usize::from(*id)])) {
                        if T::SLICES {
                            dec.packet_error(error.offset(), &mut |e| held.push(e));
                        } else {
                            dec.packet_error(error.offset(), &mut |e| sink.on(&e));
                        }
                    }
                }
                _ => {}
            }
        }
        sink.failure
            .take()
            .map_or(Ok(()), |e| Err(ReadError::Output(e)))
    })?;
    // Finished in trace ID order, as the sources are listed.
    let ids: Vec<u8> = (0u8..=255)
        .filter(|&id| slot[usize::from(id)] != NO_DECODER)
        .collect();
    let counted: &[u8] = if T::COUNTS { &ids } else { &[] };
    for &id in &ids {
        if let Some(dec) = decoders.get_mut(usize::from(slot[usize::from(id)])) {
            if T::SLICES {
                dec.finish(&mut |e| held.push(e));
            } else {
                dec.finish(&mut |e| sink.on(&e));
            }
        }
    }
    // The events held after the last packet, and those of the ends.
    if !held.is_empty() {
        sink.on_slice(&held);
    }
    if sink.failure.is_none() {
        if let Err(e) = sink.each.end() {
            sink.failure = Some(e);
        }
    }
    if let Some(e) = sink.failure.take() {
        return Err(ReadError::Output(e));
    }
    let counts = sink.counts;
    Ok(DecodeSummary {
        sources: counted
            .iter()
            .map(|&id| (id, counts[usize::from(id)]))
            .collect(),
        parsed: parsed(&demux),
        bytes,
    })
}

/// "No decoder" in [`decode_sequential`]'s table (trace IDs are 7-bit, so
/// there are at most 128 decoders).
const NO_DECODER: u8 = u8::MAX;

/// How many events a decode on one thread holds before it hands them to a
/// conversion as one slice (once a packet has brought them to this many;
/// see [`Converter::events`](crate::convert::Converter::events)). The
/// size matters little (figures in `docs/performance.md`).
pub const SLICE: usize = 1024;

/// What a [`Sink`] hands its deliveries to.
pub(crate) trait Take {
    /// The decode counts each source's events for its summary (a
    /// constant: a decode that counts pays no test for it).
    const COUNTS: bool = true;

    /// The decode on the calling thread hands the events in slices
    /// ([`take_slice`](Self::take_slice)): the decoder writes each event
    /// into a buffer, and the consumer reads them later, when the stores
    /// are done, instead of right after each was written field by field.
    const SLICES: bool = false;

    /// Take one delivery.
    fn take(&mut self, d: Delivery<'_>) -> io::Result<()>;

    /// Take events no part has seen, in order (only when
    /// [`SLICES`](Self::SLICES)).
    fn take_slice(&mut self, events: &[Event]) -> io::Result<()> {
        events
            .iter()
            .try_for_each(|e| self.take(Delivery::Event(e)))
    }

    /// Take a run of a parallel decode's events (each with the key of the
    /// item that produced it), in order: seen by a part if `folded`
    /// ([`Delivery::Folded`]), else not ([`Delivery::Event`]).
    fn take_run(&mut self, run: &[(u64, Event)], folded: bool) -> io::Result<()> {
        run.iter().try_for_each(|(_, e)| {
            self.take(if folded {
                Delivery::Folded(e)
            } else {
                Delivery::Event(e)
            })
        })
    }

    /// The decode has ended (after every delivery).
    ///
    /// # Errors
    ///
    /// An error of what is handed on then.
    fn end(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A consumer of events only: it is handed every event, and no part is
/// made for it.
pub(crate) struct OnlyEvents<F>(pub(crate) F);

impl<F: FnMut(&Event) -> io::Result<()>> Take for OnlyEvents<F> {
    // Always inlined: with the match left to the optimiser, a converter's
    // per-event code was no longer inlined into the decoder's loop, and
    // conversions were slower.
    #[inline(always)]
    fn take(&mut self, d: Delivery<'_>) -> io::Result<()> {
        match d {
            Delivery::Event(e) | Delivery::Folded(e) => (self.0)(e),
            Delivery::Part { .. } => Ok(()),
        }
    }
}

/// A consumer of every delivery.
pub(crate) struct All<F>(pub(crate) F);

impl<F: FnMut(Delivery<'_>) -> io::Result<()>> Take for All<F> {
    #[inline(always)]
    fn take(&mut self, d: Delivery<'_>) -> io::Result<()> {
        (self.0)(d)
    }
}

pub(crate) struct Sink<'a, F: Take> {
    /// Per trace ID (an array: indexed by a `u8`, with no bounds check).
    pub(crate) counts: Box<[SourceCounts; 256]>,
    pub(crate) failure: Option<io::Error>,
    pub(crate) each: &'a mut F,
}

impl<F: Take> Sink<'_, F> {
    /// Count `e` and hand it on. By reference: the decoder has only just
    /// written the event field by field, and a copy of it as a whole
    /// would wait for those stores.
    #[inline]
    pub(crate) fn on(&mut self, e: &Event) {
        if F::COUNTS {
            self.counts[usize::from(e.id)].count(e);
        }
        self.deliver(e);
    }

    /// Count `events` and hand them on as one slice.
    #[inline]
    pub(crate) fn on_slice(&mut self, events: &[Event]) {
        if F::COUNTS {
            for e in events {
                self.counts[usize::from(e.id)].count(e);
            }
        }
        self.attempt(|each| each.take_slice(events));
    }

    /// Hand on a run of a parallel decode's events (seen by a part if
    /// `folded`), counted already.
    #[inline]
    pub(crate) fn hand_run(&mut self, run: &[(u64, Event)], folded: bool) {
        if !run.is_empty() {
            self.attempt(|each| each.take_run(run, folded));
        }
    }

    /// Hand `e` on without counting it.
    #[inline(always)]
    pub(crate) fn deliver(&mut self, e: &Event) {
        self.hand(Delivery::Event(e));
    }

    /// Hand `d` on.
    #[inline(always)]
    pub(crate) fn hand(&mut self, d: Delivery<'_>) {
        self.attempt(|each| each.take(d));
    }

    /// `f` on the consumer unless it failed before; its error is kept
    /// (nothing is handed on after it).
    #[inline(always)]
    fn attempt(&mut self, f: impl FnOnce(&mut F) -> io::Result<()>) {
        if self.failure.is_none() {
            if let Err(err) = f(self.each) {
                self.failure = Some(err);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A consumer that counts the events for itself and takes them in
    /// slices.
    struct Sliced {
        events: Vec<Event>,
        /// The length of each slice.
        slices: Vec<usize>,
    }

    impl Take for Sliced {
        const COUNTS: bool = false;
        const SLICES: bool = true;

        fn take(&mut self, d: Delivery<'_>) -> io::Result<()> {
            if let Delivery::Event(e) = d {
                self.events.push(*e);
            }
            Ok(())
        }

        fn take_slice(&mut self, events: &[Event]) -> io::Result<()> {
            self.slices.push(events.len());
            self.events.extend_from_slice(events);
            Ok(())
        }
    }

    /// A consumer that counts for itself and takes slices is handed the
    /// same events, in slices of at least [`SLICE`] but the last; the
    /// parser's counters are the same, and the summary lists no sources.
    #[test]
    fn a_sliced_uncounted_decode_hands_on_the_same_events() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot");
        let input = crate::input::resolve(&dir, &crate::input::flags::SourceFlags::default())
            .expect("the bundled example");
        let spec = input.captures.first().expect("a capture");
        let memory = |name: &str| -> Arc<dyn MemoryImage> {
            Arc::new(
                memory_for(input.snapshot.as_ref(), name, &ExtraMemory::default()).expect("memory"),
            )
        };
        let mut counted = Vec::new();
        let a = decode_sequential(spec, memory, |e| {
            counted.push(*e);
            Ok(())
        })
        .expect("decodes");
        let mut sliced = Sliced {
            events: Vec::new(),
            slices: Vec::new(),
        };
        let b = decode_sequential_into(spec, memory, &mut sliced).expect("decodes");
        assert!(counted.len() > SLICE, "more than one slice");
        assert_eq!(counted, sliced.events);
        let (last, full) = sliced.slices.split_last().expect("slices");
        assert!(*last > 0 && !full.is_empty());
        assert!(full.iter().all(|&n| n >= SLICE), "{:?}", sliced.slices);
        let ranges = counted
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Range(_)))
            .count() as u64;
        assert_eq!(a.sources.iter().map(|(_, c)| c.ranges).sum::<u64>(), ranges);
        assert!(b.sources.is_empty());
        assert_eq!((a.parsed, a.bytes), (b.parsed, b.bytes));
    }

    #[test]
    fn mem_arg_parses_and_rejects() {
        let m: MemArg = "code.bin@0x80000000".parse().expect("valid");
        assert_eq!(m.address, 0x8000_0000);
        assert_eq!(m.path, PathBuf::from("code.bin"));
        let m: MemArg = "a@b.bin@4096".parse().expect("valid");
        assert_eq!((m.path, m.address), (PathBuf::from("a@b.bin"), 4096));
        assert!("code.bin".parse::<MemArg>().is_err());
        assert!("@0x10".parse::<MemArg>().is_err());
        assert!("x.bin@0x1_0000_0000".parse::<MemArg>().is_err());
        assert!("x.bin@0x100000000".parse::<MemArg>().is_err());
    }
}
