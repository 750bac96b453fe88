//! Decoding the captures of an input: memory images for each source, and
//! the [`CaptureDecoder`] of a [`CaptureSpec`] (its layout, its sources
//! by trace ID, each one's memory image).

use crate::input::shown::shown;
use crate::input::snapshot::Snapshot;
use crate::input::source::{CaptureSpec, SourceSpec};
use crate::input::InputError;
use crate::packets::ReadError;
use std::collections::hash_map::{Entry, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trace_core::capture::{Builder, CaptureDecoder, Consumer, DecodeSummary};
use trace_core::decode::DecoderConfig;
use trace_core::memory::{Contents, MemoryError, MemoryImage, MemoryMap, Space};

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

/// The decoder configuration of `source`.
///
/// # Errors
///
/// [`InputError::BadConfig`] when its registers are unusable.
fn decoder_config(source: &SourceSpec) -> Result<DecoderConfig, InputError> {
    Ok(DecoderConfig::new(source.id, &source.config()?).with_etmccer(source.regs.etmccer))
}

/// A builder of the decoder of `spec`: its layout, its sources (and the
/// configuration of any other trace ID, for captures described by flags),
/// each configured source's memory image as `memory` returns it for the
/// source's name (other trace IDs get the image it returns for `""`),
/// the capture's size and, for a range of a file, its offset. Options,
/// parts and threads are the caller's to add.
///
/// # Errors
///
/// [`ReadError::Input`] ([`InputError::BadConfig`]) when a source's
/// registers are unusable.
pub fn decoder(
    spec: &CaptureSpec,
    mut memory: impl FnMut(&str) -> Arc<dyn MemoryImage>,
) -> Result<Builder, ReadError> {
    let mut b = CaptureDecoder::builder(spec.layout).size_hint(spec.size());
    for s in &spec.sources {
        b = b.source(decoder_config(s)?).memory(s.id, memory(&s.name));
    }
    if let Some((protocol, regs)) = spec.any_id {
        let template = SourceSpec {
            name: "any trace ID".into(),
            id: 0,
            protocol,
            regs,
            core: None,
        };
        b = b
            .any_id(decoder_config(&template)?)
            .default_memory(memory(""));
    }
    if let Some((start, _)) = spec.range {
        b = b.starting_at(start);
    }
    Ok(b)
}

/// The capture of `spec` to read: the file, or its range.
///
/// # Errors
///
/// [`ReadError::Io`] when the file cannot be opened or its range found.
pub fn open(spec: &CaptureSpec) -> Result<Box<dyn Read + Send>, ReadError> {
    let io_err = |source| ReadError::Io {
        path: spec.path.clone(),
        source,
    };
    let mut file = spec.open().map_err(io_err)?;
    Ok(match spec.range {
        Some((start, len)) => {
            file.seek(SeekFrom::Start(start)).map_err(io_err)?;
            Box::new(file.take(len))
        }
        None => Box::new(file),
    })
}

/// Decode the capture of `spec` with `decoder` (made from [`decoder`]),
/// handing the deliveries to `consumer`.
///
/// # Errors
///
/// [`ReadError`] when the capture cannot be read, the decoding threads
/// fail, or `consumer` fails ([`ReadError::Output`]).
pub fn run<C: Consumer + ?Sized>(
    spec: &CaptureSpec,
    decoder: &mut CaptureDecoder,
    consumer: &mut C,
) -> Result<DecodeSummary, ReadError> {
    let input = open(spec)?;
    decoder
        .run(input, consumer)
        .map_err(|e| ReadError::from_capture(&spec.path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io;
    use trace_core::capture::{Delivery, SLICE};
    use trace_core::event::{Event, EventKind};

    /// A consumer that counts the events for itself and takes them in
    /// slices.
    struct Sliced {
        events: Vec<Event>,
        /// The length of each slice.
        slices: Vec<usize>,
    }

    impl Consumer for Sliced {
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
        let one = trace_core::capture::DecodeOptions::with_jobs(1);
        let mut d = decoder(spec, memory)
            .expect("configuration")
            .options(one)
            .build();
        let mut counted = Vec::new();
        let a = run(
            spec,
            &mut d,
            &mut trace_core::capture::each_event(|e| {
                counted.push(*e);
                Ok(())
            }),
        )
        .expect("decodes");
        let mut sliced = Sliced {
            events: Vec::new(),
            slices: Vec::new(),
        };
        let b = run(spec, &mut d, &mut sliced).expect("decodes");
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
