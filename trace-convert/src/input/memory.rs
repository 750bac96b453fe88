//! The memory an input's sources need: for each source, the dumps of the
//! core the input binds it to (a snapshot's dumps, a recording's mapped
//! files), then the files given besides ([`ExtraMemory`]: `--elf`,
//! `--mem`), loaded once per input ([`Images`]) for the decode and the
//! outputs alike.

use super::layered::Layered;
use super::shown::shown;
use super::snapshot::{Device, Snapshot};
use super::source::CaptureSpec;
use super::Input;
use std::collections::hash_map::{Entry, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
        || snapshot.is_some_and(|s| {
            s.core_of(source)
                .is_some_and(|core| s.layers(core).iter().any(|d| !d.dumps.is_empty()))
        })
}

/// The warning for a source without memory image (`name` is the
/// source's, written escaped).
#[must_use]
pub fn no_memory_warning(name: &str) -> String {
    format!(
        "{}: no memory image (give --elf or --mem); every address will be reported as not accessible",
        shown(name)
    )
}

/// The memory image of one source: the dumps of the core the snapshot
/// binds it to (and of the devices beneath it, [`Snapshot::layers`],
/// added first), then the extra files (which win where they overlap).
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
        let mut files = Files::default();
        for device in snap.layers(core) {
            add_dumps(&mut map, snap, device, &mut files)?;
        }
    }
    add_extra(&mut map, extra)?;
    Ok(map)
}

/// The dump files opened, each once however many dump sections (and
/// devices) name it.
type Files<'s> = HashMap<(Option<&'s Path>, &'s Path), Contents>;

/// Add the dumps of `device` (of `snap`) to `map`, in their order.
fn add_dumps<'s>(
    map: &mut MemoryMap,
    snap: &Snapshot,
    device: &'s Device,
    files: &mut Files<'s>,
) -> Result<(), MemoryError> {
    for d in &device.dumps {
        let space = d
            .space
            .as_deref()
            .and_then(Space::from_snapshot)
            .unwrap_or(Space::Any);
        let base = u32::try_from(d.address).map_err(|_| MemoryError::BadRegion {
            name: d.path.display().to_string(),
            reason: format!("address {:#x} beyond 32 bits", d.address),
        })?;
        let root = d.root.as_ref();
        let contents = match files.entry((root.map(|r| r.path()), &d.file)) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let io = |source| MemoryError::Io {
                    path: d.path.clone(),
                    source,
                };
                let file = match root {
                    Some(dir) => dir.open_file(&d.file),
                    None => snap.open(&d.file),
                }
                .map_err(io)?;
                e.insert(Contents::map(&file).map_err(io)?)
            }
        };
        let name = shown(&d.path.display().to_string());
        map.add_contents(name, contents, base, space, d.offset, d.length)?;
    }
    Ok(())
}

/// Add the extra files to `map`.
fn add_extra(map: &mut MemoryMap, extra: &ExtraMemory) -> Result<(), MemoryError> {
    for e in &extra.elves {
        map.add_elf(e, Space::Any)?;
    }
    for m in &extra.raw {
        map.add_file(&m.path, m.address, Space::Any, 0, None)?;
    }
    Ok(())
}

/// An image, and whether it holds anything.
type Held = (Arc<dyn MemoryImage>, bool);

/// The images of the devices beneath sources' cores, each built once
/// and shared by the devices above it: a perf.data recording's thousand
/// processes hold one copy of the kernel's mappings, not a thousand.
#[derive(Default)]
struct Beneath<'s> {
    /// Per device name: its image (its dumps over those beneath it) and
    /// whether that holds anything.
    by_device: HashMap<String, Held>,
    files: Files<'s>,
}

impl<'s> Beneath<'s> {
    /// The image of `layers` (of `snap`, the lowest first), built on the
    /// images of the ones below as they are found or made.
    fn image(
        &mut self,
        snap: &Snapshot,
        layers: &[&'s Device],
    ) -> Result<Option<Held>, MemoryError> {
        let mut below: Option<Held> = None;
        for device in layers {
            if let Some(known) = self.by_device.get(&device.name) {
                below = Some(known.clone());
                continue;
            }
            let mut own = MemoryMap::new();
            add_dumps(&mut own, snap, device, &mut self.files)?;
            let made = over(own, below.take());
            self.by_device.insert(device.name.clone(), made.clone());
            below = Some(made);
        }
        Ok(below)
    }
}

/// `top` over `under` (when there is one), and whether it holds anything.
fn over(top: MemoryMap, under: Option<Held>) -> Held {
    match under {
        Some((under, true)) if top.is_empty() => (under, true),
        Some((under, true)) => (Arc::new(Layered::new(top, under)), true),
        _ => {
            let held = !top.is_empty();
            (Arc::new(top), held)
        }
    }
}

/// The memory images of an input's sources, loaded before decoding
/// starts: one per source name, and one for trace IDs no source
/// describes (the extra files alone).
#[derive(Clone)]
pub struct Images {
    by_source: HashMap<String, Arc<dyn MemoryImage>>,
    /// The sources whose image holds nothing, in input order.
    empty: Vec<String>,
    other: Arc<dyn MemoryImage>,
}

impl std::fmt::Debug for Images {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.by_source.keys().collect();
        names.sort();
        f.debug_struct("Images")
            .field("sources", &names)
            .field("empty", &self.empty)
            .finish_non_exhaustive()
    }
}

impl Images {
    /// The image of the source named `source`, if the input has one.
    #[must_use]
    pub fn get(&self, source: &str) -> Option<&Arc<dyn MemoryImage>> {
        self.by_source.get(source)
    }

    /// The image of the source named `source`, else the one for any
    /// other trace ID.
    #[must_use]
    pub fn of(&self, source: &str) -> Arc<dyn MemoryImage> {
        Arc::clone(self.by_source.get(source).unwrap_or(&self.other))
    }

    /// The image for trace IDs no source describes.
    #[must_use]
    pub fn other(&self) -> &Arc<dyn MemoryImage> {
        &self.other
    }

    /// The images of `capture`'s sources by trace ID.
    #[must_use]
    pub fn by_id(&self, capture: &CaptureSpec) -> HashMap<u8, Arc<dyn MemoryImage>> {
        capture
            .sources
            .iter()
            .filter_map(|s| self.get(&s.name).map(|m| (s.id, Arc::clone(m))))
            .collect()
    }

    /// The names of the sources whose image holds nothing (every address
    /// they reach will be reported as not accessible), in input order.
    #[must_use]
    pub fn empty(&self) -> &[String] {
        &self.empty
    }
}

impl Input {
    /// Load the memory image of every source, and the one for any other
    /// trace ID, with `extra` added to each (winning where they overlap).
    ///
    /// # Errors
    ///
    /// [`MemoryError`] when a dump or file cannot be loaded.
    pub fn images(&self, extra: &ExtraMemory) -> Result<Images, MemoryError> {
        let mut by_source: HashMap<String, Arc<dyn MemoryImage>> = HashMap::new();
        let mut empty = Vec::new();
        let mut beneath = Beneath::default();
        for s in self.captures.iter().flat_map(|c| &c.sources) {
            if by_source.contains_key(&s.name) {
                continue;
            }
            let snap = self.snapshot.as_ref();
            let layers = snap
                .zip(snap.and_then(|snap| snap.core_of(&s.name)))
                .map(|(snap, core)| (snap, snap.layers(core)));
            let (image, held) = match layers {
                // A core with devices beneath: their shared image under
                // its own dumps and the extra files.
                Some((snap, layers)) if layers.len() > 1 => {
                    let (core, lower) = layers.split_last().expect("two layers or more");
                    let under = beneath.image(snap, lower)?;
                    let mut top = MemoryMap::new();
                    add_dumps(&mut top, snap, core, &mut beneath.files)?;
                    add_extra(&mut top, extra)?;
                    over(top, under)
                }
                _ => {
                    let m = memory_for(snap, &s.name, extra)?;
                    let held = !m.is_empty();
                    (Arc::new(m) as Arc<dyn MemoryImage>, held)
                }
            };
            if !held {
                empty.push(s.name.clone());
            }
            by_source.insert(s.name.clone(), image);
        }
        let other = Arc::new(memory_for(self.snapshot.as_ref(), "", extra)?);
        Ok(Images {
            by_source,
            empty,
            other,
        })
    }

    /// The names of the sources of instruction-trace protocols whose
    /// image holds nothing (every address they reach will be reported
    /// as not accessible), in input order.
    #[must_use]
    pub fn without_memory<'i>(&self, images: &'i Images) -> Vec<&'i str> {
        images
            .empty()
            .iter()
            .filter(|name| {
                self.captures
                    .iter()
                    .flat_map(|c| &c.sources)
                    .any(|s| &s.name == *name && s.protocol.traces_instructions())
            })
            .map(String::as_str)
            .collect()
    }

    /// Whether a decode of the input that walks no instruction found
    /// nothing: some source is of a protocol that traces the instructions
    /// executed, or no source is known at all.
    #[must_use]
    pub fn expects_instructions(&self) -> bool {
        let mut protocols = self
            .captures
            .iter()
            .flat_map(|c| {
                c.sources
                    .iter()
                    .map(|s| s.protocol)
                    .chain(c.any_id.map(|a| a.0))
            })
            .peekable();
        protocols.peek().is_none() || protocols.any(|p| p.traces_instructions())
    }

    /// Whether some memory image would be found for the source named
    /// `source` (files are given in `extra`, or the input binds the source
    /// to a core with dumps); nothing is read.
    #[must_use]
    pub fn has_memory(&self, source: &str, extra: &ExtraMemory) -> bool {
        has_memory(self.snapshot.as_ref(), source, extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
