//! Trace snapshot directories as written by ARM DS-5 and used by OpenCSD:
//! `snapshot.ini` lists device files (cores with memory dumps, trace
//! sources with register values) and names `trace.ini`, which lists the
//! trace buffers and binds sources to buffers and cores to sources.

use super::folder::{is_escape, relative, Folder};
use super::ini::{parse_u64, Ini, IniError, Section};
use super::name_index::NameIndex;
use super::shown::shown;
use super::source::{CaptureSpec, Protocol, SourceSpec};
use super::{Input, InputError, Kind};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use trace_core::frames::FrameMode;
use trace_core::memory::Space;

/// Largest `.ini` file read, so a hostile snapshot cannot make us load a
/// huge file as text.
const MAX_INI_BYTES: u64 = 4 << 20;

/// Why a snapshot could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not valid INI.
    #[error("{path}: {source}")]
    Ini {
        /// The file.
        path: PathBuf,
        /// Where and what.
        source: IniError,
    },
    /// A required section or entry is absent.
    #[error("{path}: missing {what}")]
    Missing {
        /// The file that should hold it.
        path: PathBuf,
        /// What is missing, e.g. `[trace] metadata`.
        what: String,
    },
    /// An entry has a value that cannot be used.
    #[error("{path}: {key}={value}: {reason}")]
    BadValue {
        /// The file.
        path: PathBuf,
        /// The entry's key.
        key: String,
        /// The value as written.
        value: String,
        /// Why it is not usable.
        reason: String,
    },
    /// A file name points outside the snapshot directory.
    #[error("{path}: {value}: file names must stay inside the snapshot directory")]
    OutsideSnapshot {
        /// The file naming it.
        path: PathBuf,
        /// The file name as written.
        value: String,
    },
    /// A `.ini` file is implausibly large.
    #[error("{path}: more than {limit} bytes: too large for a snapshot .ini file")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The largest size read.
        limit: u64,
    },
}

/// A register value from a device file, e.g. `ETMCR(id:0x0)=0x000E2C42`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Register {
    /// The name before any parenthesis, e.g. `ETMCR`.
    pub name: String,
    /// The value.
    pub value: u64,
}

/// A memory dump of a core device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dump {
    /// The dump file, inside the snapshot directory (for messages).
    pub path: PathBuf,
    /// The dump file's name relative to the snapshot directory, as it is
    /// opened.
    pub file: PathBuf,
    /// Address of the file's first byte (after `offset`).
    pub address: u64,
    /// Bytes to use, when given; otherwise the rest of the file.
    pub length: Option<u64>,
    /// Offset into the file where the dump starts.
    pub offset: u64,
    /// Memory space, as written (`S`, `N`, ...), when given.
    pub space: Option<String>,
    /// The `[dump...]` section's name, for messages.
    pub section: String,
    /// The folder `file` is opened in when it is not the snapshot's (a
    /// perf.data recording's `--symfs` folder or build-ID cache): only a
    /// file inside it is opened, whatever links lie on the way.
    pub root: Option<Folder>,
}

/// The most devices [`Snapshot::layers`] stacks.
pub const MAX_LAYERS: usize = 68;

/// One device file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// `[device] name`.
    pub name: String,
    /// `[device] class`: `core`, `trace_source`, ...
    pub class: String,
    /// `[device] type`: `Cortex-A15`, `ETM3.5`, `PTM1.1`, ...
    pub kind: String,
    /// `[regs]` entries that hold numbers.
    pub regs: Vec<Register>,
    /// `[dump*]` sections.
    pub dumps: Vec<Dump>,
    /// The device file.
    pub file: PathBuf,
    /// The device whose memory lies beneath this one's: read where this
    /// one's dumps map nothing ([`Snapshot::layers`]). A perf.data
    /// recording's processes share the kernel's mappings (and a forked
    /// process its parent's) this way instead of each holding a copy.
    pub under: Option<String>,
}

impl Device {
    /// The value of register `name` (compared without case).
    #[must_use]
    pub fn reg(&self, name: &str) -> Option<u64> {
        self.regs
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
            .map(|r| r.value)
    }
}

/// How a trace buffer's bytes are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferFormat {
    /// CoreSight formatter frames (`format=coresight`).
    CoreSight,
    /// One source's raw bytes (`format=source_data`).
    SourceData,
}

/// A trace buffer listed in `trace.ini`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    /// `name`, referred to by `[source_buffers]`.
    pub name: String,
    /// The capture file, inside the snapshot directory (for messages).
    pub path: PathBuf,
    /// The capture file's name relative to the snapshot directory, as it
    /// is opened.
    pub file: PathBuf,
    /// Its layout.
    pub format: BufferFormat,
}

/// A parsed snapshot directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The directory.
    pub dir: PathBuf,
    /// The directory, open: every file of the snapshot is opened through
    /// it, so none can lead outside.
    pub folder: Folder,
    /// Devices in `[device_list]` order.
    pub devices: Vec<Device>,
    /// Trace buffers in `buffers=` order.
    pub buffers: Vec<Buffer>,
    /// `[source_buffers]`: trace source name to buffer name.
    pub source_buffers: Vec<(String, String)>,
    /// `[core_trace_sources]`: core name to trace source name.
    pub core_sources: Vec<(String, String)>,
    /// `[timestamp] frequency`, when given.
    pub timestamp_hz: Option<u64>,
    /// What was repeated, overlaps or is left unused, and the rule applied
    /// (printable: control characters escaped).
    pub notes: Vec<String>,
    /// [`devices`](Self::devices) by name, for [`Snapshot::device`].
    pub device_index: NameIndex,
    /// [`core_sources`](Self::core_sources) by source, for
    /// [`Snapshot::core_of`].
    pub source_index: NameIndex,
}

/// The snapshot directory `dir` as an input: one capture per trace
/// buffer, the snapshot for the memory of its cores.
///
/// # Errors
///
/// [`InputError::NotASnapshot`] for a folder without `snapshot.ini`,
/// [`InputError::Snapshot`] when the snapshot is broken,
/// [`InputError::NoBuffers`] when it names no trace buffer.
pub fn open(dir: &Path) -> Result<Input, InputError> {
    if std::fs::symlink_metadata(dir.join("snapshot.ini")).is_err() {
        return Err(InputError::NotASnapshot(dir.to_path_buf()));
    }
    let snap = Snapshot::read(dir)?;
    let captures = CaptureSpec::from_snapshot(&snap);
    if captures.is_empty() {
        return Err(InputError::NoBuffers(dir.to_path_buf()));
    }
    Ok(Input {
        kind: Kind::Snapshot,
        captures,
        snapshot: Some(snap),
        saved: None,
    })
}

/// Whether `dir` looks like a snapshot directory: it holds a
/// `snapshot.ini` file.
#[must_use]
pub fn is_snapshot(dir: &Path) -> bool {
    dir.join("snapshot.ini").is_file()
}

/// The devices of `[device_list]` of `ini` (the `snapshot.ini` at
/// `top`), each file read once, a later device of the same name replacing
/// the earlier; notes for what is repeated and for the dumps.
fn read_devices(
    folder: &Folder,
    top: &Path,
    ini: &Ini,
    notes: &mut Vec<String>,
) -> Result<Vec<Device>, SnapshotError> {
    let mut devices: Vec<Device> = Vec::new();
    let mut files = Files::default();
    if let Some(list) = ini.section("device_list") {
        let mut listed: HashSet<PathBuf> = HashSet::new();
        let mut repeated: BTreeMap<PathBuf, usize> = BTreeMap::new();
        for (_, file) in &list.entries {
            let rel = inside(top, file)?;
            if !listed.insert(rel.clone()) {
                *repeated.entry(rel).or_default() += 1;
                continue;
            }
            let device = read_device(folder, &rel, &mut files, notes)?;
            match devices.iter_mut().find(|d| d.name == device.name) {
                Some(earlier) => {
                    notes.push(format!(
                        "{} and {} both name a device {}: the one listed later ({}) is used",
                        shown_path(&earlier.file),
                        shown_path(&device.file),
                        shown(&device.name),
                        shown_path(&device.file),
                    ));
                    *earlier = device;
                }
                None => devices.push(device),
            }
        }
        for (rel, n) in repeated {
            notes.push(format!(
                "{}: {} is listed {} times in [device_list]: it is read once",
                top.display(),
                shown_path(&rel),
                n + 1
            ));
        }
    }
    for d in &devices {
        note_dumps(d, &files, notes);
    }
    Ok(devices)
}

impl Snapshot {
    /// Read the snapshot in `dir`.
    ///
    /// # Errors
    ///
    /// A [`SnapshotError`] naming the file for a missing or unreadable
    /// file, malformed INI, a missing required entry, a value that is not a
    /// number where one is needed, or a file name leading outside `dir`.
    pub fn read(dir: &Path) -> Result<Snapshot, SnapshotError> {
        let folder = Folder::open(dir).map_err(|source| SnapshotError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut notes = Vec::new();
        let top = dir.join("snapshot.ini");
        let ini = read_ini(&folder, Path::new("snapshot.ini"), &mut notes)?;
        let devices = read_devices(&folder, &top, &ini, &mut notes)?;
        let mut snap = Snapshot {
            dir: dir.to_path_buf(),
            folder,
            devices,
            buffers: Vec::new(),
            source_buffers: Vec::new(),
            core_sources: Vec::new(),
            timestamp_hz: None,
            notes,
            device_index: NameIndex::default(),
            source_index: NameIndex::default(),
        };
        if let Some(meta) = ini.section("trace").and_then(|s| s.get("metadata")) {
            let trace_rel = inside(&top, meta)?;
            snap.read_trace(&trace_rel)?;
        }
        Ok(snap)
    }

    /// Read the trace metadata file `trace_rel` (`trace.ini`, relative to
    /// the folder): the buffers, which source each holds, which core each
    /// source traces, the timestamp frequency.
    fn read_trace(&mut self, trace_rel: &Path) -> Result<(), SnapshotError> {
        let dir = self.dir.clone();
        let trace_path = dir.join(trace_rel);
        let trace = read_ini(&self.folder, trace_rel, &mut self.notes)?;
        let names = trace
            .section("trace_buffers")
            .and_then(|s| s.get("buffers"))
            .ok_or_else(|| SnapshotError::Missing {
                path: trace_path.clone(),
                what: "[trace_buffers] buffers".into(),
            })?;
        // Sections already read (`buffers=` lists section names, and a
        // section's `name=` may differ from it), and the section of each
        // buffer kept.
        let mut seen: Vec<&str> = Vec::new();
        let mut kept: Vec<&str> = Vec::new();
        let mut repeated: BTreeMap<&str, usize> = BTreeMap::new();
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if seen.contains(&name) {
                *repeated.entry(name).or_default() += 1;
                continue;
            }
            seen.push(name);
            let sec = trace.section(name).ok_or_else(|| SnapshotError::Missing {
                path: trace_path.clone(),
                what: format!("[{0}] section for buffer {0}", shown(name)),
            })?;
            let buffer = read_buffer(&dir, &trace_path, sec)?;
            if let Some(at) = self.buffers.iter().position(|b| b.name == buffer.name) {
                self.notes.push(format!(
                    "{}: sections [{}] and [{}] both describe buffer {}: it is decoded once, from [{}]",
                    trace_path.display(),
                    shown(kept[at]),
                    shown(name),
                    shown(&buffer.name),
                    shown(kept[at]),
                ));
                continue;
            }
            self.buffers.push(buffer);
            kept.push(name);
        }
        for (name, n) in repeated {
            self.notes.push(format!(
                "{}: buffer {} is listed {} times in [trace_buffers] buffers: it is decoded once",
                trace_path.display(),
                shown(name),
                n + 1
            ));
        }
        self.read_bindings(&trace, &trace_path);
        if let Some(f) = trace.section("timestamp").and_then(|s| s.get("frequency")) {
            self.timestamp_hz = Some(number(&trace_path, "frequency", f)?);
        }
        Ok(())
    }

    /// `[source_buffers]` and `[core_trace_sources]` of the trace
    /// metadata `trace` (read from `trace_path`), with a note for what
    /// binds nothing.
    fn read_bindings(&mut self, trace: &Ini, trace_path: &Path) {
        match trace.section("source_buffers") {
            None if !self.buffers.is_empty() => self.notes.push(format!(
                "{}: no [source_buffers] section: no trace source is bound to a buffer, so nothing is decoded",
                trace_path.display()
            )),
            _ => {}
        }
        self.source_buffers = pairs(trace, "source_buffers");
        for (source, buffer) in &self.source_buffers {
            if self.buffer(buffer).is_none() {
                self.notes.push(format!(
                    "{}: [source_buffers] binds {} to {}, which is not a listed buffer: it is not decoded",
                    trace_path.display(),
                    shown(source),
                    shown(buffer)
                ));
            }
        }
        self.core_sources = pairs(trace, "core_trace_sources");
    }

    /// Open the snapshot file `name` (relative to the folder, as in
    /// [`Dump::file`] and [`Buffer::file`]): only a regular file inside the
    /// folder is opened, whatever links lie on the way.
    ///
    /// # Errors
    ///
    /// The error of opening it, or of what was opened not being a regular
    /// file inside the folder.
    pub fn open(&self, name: &Path) -> std::io::Result<std::fs::File> {
        self.folder.open_file(name)
    }

    /// The device called `name`.
    #[must_use]
    pub fn device(&self, name: &str) -> Option<&Device> {
        let at = self
            .device_index
            .find(&self.devices, name, |d| d.name.as_str())?;
        self.devices.get(at)
    }

    /// The buffer called `name`.
    #[must_use]
    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// The devices whose dumps make `device`'s memory, the lowest first
    /// and `device` last: each reads through to the one before it where
    /// its own dumps map nothing (the later wins where they overlap).
    /// At most [`MAX_LAYERS`] deep; a device named twice ends the list.
    #[must_use]
    pub fn layers<'s>(&'s self, device: &'s Device) -> Vec<&'s Device> {
        let mut out = vec![device];
        let mut at = device;
        while let Some(below) = at.under.as_deref().and_then(|n| self.device(n)) {
            if out.len() >= MAX_LAYERS || out.iter().any(|d| d.name == below.name) {
                break;
            }
            out.push(below);
            at = below;
        }
        out.reverse();
        out
    }

    /// The core a trace source traces, when `[core_trace_sources]` says.
    #[must_use]
    pub fn core_of(&self, source: &str) -> Option<&Device> {
        let at = self
            .source_index
            .find(&self.core_sources, source, |(_, s)| s.as_str())?;
        self.core_sources
            .get(at)
            .and_then(|(core, _)| self.device(core))
    }
}

fn pairs(ini: &Ini, section: &str) -> Vec<(String, String)> {
    ini.section(section)
        .map(|s| s.entries.clone())
        .unwrap_or_default()
}

/// `path` made printable: control characters escaped.
fn shown_path(path: &Path) -> String {
    shown(&path.display().to_string())
}

/// Read and parse the `.ini` file `rel` of the folder, noting repeated
/// keys.
fn read_ini(folder: &Folder, rel: &Path, notes: &mut Vec<String>) -> Result<Ini, SnapshotError> {
    let path = folder.path().join(rel);
    let bytes = match folder.read_capped(rel, MAX_INI_BYTES) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => {
            return Err(SnapshotError::TooLarge {
                path,
                limit: MAX_INI_BYTES,
            })
        }
        Err(e) if is_escape(&e) => {
            return Err(SnapshotError::OutsideSnapshot {
                path: folder.path().to_path_buf(),
                value: shown_path(rel),
            })
        }
        Err(source) => return Err(SnapshotError::Io { path, source }),
    };
    let text = String::from_utf8_lossy(&bytes);
    let ini = Ini::parse(&text).map_err(|source| SnapshotError::Ini {
        path: path.clone(),
        source,
    })?;
    let mut counts: BTreeMap<(&str, &str), (usize, usize)> = BTreeMap::new();
    for (line, section, key) in &ini.repeats {
        let c = counts.entry((section, key)).or_default();
        c.0 += 1;
        c.1 = *line;
    }
    for ((section, key), (n, line)) in counts {
        notes.push(format!(
            "{}: [{}] {} is given {} times: the last value (line {line}) is used",
            path.display(),
            shown(section),
            shown(key),
            n + 1
        ));
    }
    Ok(ini)
}

/// Resolve `name`, written in `file`, to a name relative to the snapshot
/// folder that stays inside it (`.` and `..` parts applied). Links are checked when
/// the file is opened, through the open folder.
fn inside(file: &Path, name: &str) -> Result<PathBuf, SnapshotError> {
    relative(name).ok_or_else(|| SnapshotError::OutsideSnapshot {
        path: file.to_path_buf(),
        value: shown(name),
    })
}

fn number(path: &Path, key: &str, value: &str) -> Result<u64, SnapshotError> {
    parse_u64(value).ok_or_else(|| SnapshotError::BadValue {
        path: path.to_path_buf(),
        key: key.to_owned(),
        value: value.to_owned(),
        reason: "not a number".into(),
    })
}

/// Sizes of the dump files, opened once each while the snapshot is read.
#[derive(Default)]
struct Files {
    sizes: HashMap<PathBuf, Option<u64>>,
}

impl Files {
    /// The size of dump file `rel`, `None` when it does not exist (an
    /// error when it is loaded).
    fn size(
        &mut self,
        folder: &Folder,
        path: &Path,
        rel: &Path,
    ) -> Result<Option<u64>, SnapshotError> {
        if let Some(&size) = self.sizes.get(rel) {
            return Ok(size);
        }
        let size = match folder.open_file(rel).and_then(|f| f.metadata()) {
            Ok(m) => Some(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) if is_escape(&e) => {
                return Err(SnapshotError::OutsideSnapshot {
                    path: path.to_path_buf(),
                    value: shown_path(rel),
                })
            }
            Err(source) => {
                return Err(SnapshotError::Io {
                    path: folder.path().join(rel),
                    source,
                })
            }
        };
        self.sizes.insert(rel.to_path_buf(), size);
        Ok(size)
    }
}

fn read_device(
    folder: &Folder,
    rel: &Path,
    files: &mut Files,
    notes: &mut Vec<String>,
) -> Result<Device, SnapshotError> {
    let ini = read_ini(folder, rel, notes)?;
    let path = &folder.path().join(rel);
    let missing = |what: &str| SnapshotError::Missing {
        path: path.to_path_buf(),
        what: what.to_owned(),
    };
    let dev = ini.section("device").ok_or_else(|| missing("[device]"))?;
    let name = dev.get("name").ok_or_else(|| missing("[device] name"))?;
    let mut device = Device {
        name: name.to_owned(),
        class: dev.get("class").unwrap_or_default().to_owned(),
        kind: dev.get("type").unwrap_or_default().to_owned(),
        regs: Vec::new(),
        dumps: Vec::new(),
        file: path.to_path_buf(),
        under: None,
    };
    for sec in &ini.sections {
        if sec.name.eq_ignore_ascii_case("regs") {
            for (key, value) in &sec.entries {
                let name = key.split('(').next().unwrap_or(key).trim();
                let value = number(path, key, value)?;
                // One register written twice (`ETMCR` and `ETMCR(id:0x0)`,
                // or in two [regs] sections): the last value counts.
                match device
                    .regs
                    .iter_mut()
                    .find(|r| r.name.eq_ignore_ascii_case(name))
                {
                    Some(r) => {
                        notes.push(format!(
                            "{}: register {} is given more than once: the last value ({value:#x}) is used",
                            path.display(),
                            shown(name)
                        ));
                        r.value = value;
                    }
                    None => device.regs.push(Register {
                        name: name.to_owned(),
                        value,
                    }),
                }
            }
        } else if sec.name.to_ascii_lowercase().starts_with("dump") {
            let dump = read_dump(folder.path(), path, sec)?;
            if let Some(size) = files.size(folder, path, &dump.file)? {
                note_dump_length(path, sec, &dump, size, notes);
            }
            device.dumps.push(dump);
        }
    }
    Ok(device)
}

/// Note a dump whose length passes the end of its file (the file's bytes
/// are used).
fn note_dump_length(path: &Path, sec: &Section, dump: &Dump, size: u64, notes: &mut Vec<String>) {
    let Some(length) = dump.length else { return };
    let room = size.saturating_sub(dump.offset);
    if length > room && dump.offset <= size {
        notes.push(format!(
            "{}: [{}] length {length:#x} goes past the end of {} ({size} bytes, from offset {}): its {room} bytes are used",
            path.display(),
            shown(&sec.name),
            shown_path(&dump.file),
            dump.offset
        ));
    }
}

/// Note dumps of `device` that overlap (where they do, the one listed
/// later is used).
fn note_dumps(device: &Device, files: &Files, notes: &mut Vec<String>) {
    // (start, end, index) of every dump whose extent is known.
    let mut spans: Vec<(u64, u64, usize)> = device
        .dumps
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let size = (*files.sizes.get(&d.file)?)?;
            let len = d
                .length
                .unwrap_or(u64::MAX)
                .min(size.checked_sub(d.offset)?);
            (len > 0).then(|| (d.address, d.address + len, i))
        })
        .collect();
    spans.sort_unstable();
    let space = |i: usize| {
        device.dumps[i]
            .space
            .as_deref()
            .and_then(Space::from_snapshot)
            .unwrap_or(Space::Any)
    };
    let mut overlaps = 0usize;
    let mut first = None;
    // The dump reaching furthest so far, per sweep: any later start below
    // its end overlaps it (or one before it).
    let mut reach: Option<(u64, usize)> = None;
    for &(start, end, i) in &spans {
        if let Some((far, j)) = reach {
            if start < far && space(i).serves(space(j)) {
                overlaps += 1;
                first.get_or_insert((j.min(i), j.max(i), start));
            }
        }
        if reach.is_none_or(|(far, _)| end > far) {
            reach = Some((end, i));
        }
    }
    if let Some((a, b, at)) = first {
        notes.push(format!(
            "{}: {overlaps} overlap(s) between dump sections, first [{}] and [{}] at {at:#x}: where dumps overlap, the one listed later is used",
            device.file.display(),
            shown(&device.dumps[a].section),
            shown(&device.dumps[b].section),
        ));
    }
}

fn read_dump(dir: &Path, path: &Path, sec: &Section) -> Result<Dump, SnapshotError> {
    let missing = |key: &str| SnapshotError::Missing {
        path: path.to_path_buf(),
        what: format!("[{}] {key}", sec.name),
    };
    let file = sec.get("file").ok_or_else(|| missing("file"))?;
    let address = sec.get("address").ok_or_else(|| missing("address"))?;
    let opt = |key: &str| -> Result<Option<u64>, SnapshotError> {
        sec.get(key).map(|v| number(path, key, v)).transpose()
    };
    let address = number(path, "address", address)?;
    if address > u64::from(u32::MAX) {
        return Err(SnapshotError::BadValue {
            path: path.to_path_buf(),
            key: "address".into(),
            value: format!("{address:#x}"),
            reason: "beyond the 32-bit address space".into(),
        });
    }
    let rel = inside(path, file)?;
    Ok(Dump {
        path: dir.join(&rel),
        file: rel,
        section: sec.name.clone(),
        address,
        length: opt("length")?,
        offset: opt("offset")?.unwrap_or(0),
        space: sec.get("space").map(str::to_owned),
        root: None,
    })
}

fn read_buffer(dir: &Path, path: &Path, sec: &Section) -> Result<Buffer, SnapshotError> {
    let missing = |key: &str| SnapshotError::Missing {
        path: path.to_path_buf(),
        what: format!("[{}] {key}", sec.name),
    };
    let name = sec.get("name").ok_or_else(|| missing("name"))?;
    let file = sec.get("file").ok_or_else(|| missing("file"))?;
    let format = match sec.get("format").unwrap_or("coresight") {
        f if f.eq_ignore_ascii_case("coresight") => BufferFormat::CoreSight,
        f if f.eq_ignore_ascii_case("source_data") => BufferFormat::SourceData,
        other => {
            return Err(SnapshotError::BadValue {
                path: path.to_path_buf(),
                key: "format".into(),
                value: other.to_owned(),
                reason: "expected coresight or source_data".into(),
            })
        }
    };
    let rel = inside(path, file)?;
    Ok(Buffer {
        name: name.to_owned(),
        path: dir.join(&rel),
        file: rel,
        format,
    })
}

impl CaptureSpec {
    /// The captures of a snapshot: one per trace buffer, each with the
    /// sources bound to it.
    ///
    /// A source is skipped, with the reason in [`CaptureSpec::skipped`],
    /// when it has no device file, is of a kind not decoded, lacks ETMCR
    /// or ETMTRACEIDR or has one out of range, has a reserved trace ID in
    /// a formatted buffer (0x00, 0x70 to 0x7F), or has the trace ID of a
    /// source already bound to the same buffer (their bytes cannot be told
    /// apart: the first one listed is decoded).
    #[must_use]
    pub fn from_snapshot(snap: &Snapshot) -> Vec<CaptureSpec> {
        snap.buffers
            .iter()
            .map(|buffer| {
                let mut sources: Vec<SourceSpec> = Vec::new();
                let mut skipped = Vec::new();
                let formatted = buffer.format == BufferFormat::CoreSight;
                for (source, _) in snap
                    .source_buffers
                    .iter()
                    .filter(|(_, b)| *b == buffer.name)
                {
                    match source_of(snap, source, formatted) {
                        Ok(spec) => match sources.iter().find(|s| s.id == spec.id) {
                            Some(first) => skipped.push((
                                shown(source),
                                format!(
                                    "trace ID {:#04x} is already {}'s in buffer {}: their trace cannot be told apart (the first one listed is decoded)",
                                    spec.id,
                                    shown(&first.name),
                                    shown(&buffer.name)
                                ),
                            )),
                            None => sources.push(spec),
                        },
                        Err(why) => skipped.push((shown(source), why)),
                    }
                }
                if !formatted && sources.len() > 1 {
                    for extra in sources.drain(1..) {
                        skipped.push((
                            shown(&extra.name),
                            format!(
                                "buffer {} holds one source's data (format=source_data): only the first one bound to it is decoded",
                                shown(&buffer.name)
                            ),
                        ));
                    }
                }
                sources.sort_by_key(|s| s.id);
                let layout = if formatted {
                    FrameMode::Memory
                } else {
                    FrameMode::Raw {
                        id: sources.first().map_or(0, |s| s.id),
                    }
                };
                CaptureSpec {
                    path: buffer.path.clone(),
                    layout,
                    sources,
                    any_id: None,
                    any_core: None,
                    skipped,
                    within: Some((snap.folder.clone(), buffer.file.clone())),
                    range: None,
                    task: None,
                    stream: None,
                }
            })
            .collect()
    }
}

/// The source `source` of `snap`, bound to a buffer (`formatted`: in
/// CoreSight frames, where the trace ID tells sources apart), or why it
/// cannot be decoded.
fn source_of(snap: &Snapshot, source: &str, formatted: bool) -> Result<SourceSpec, String> {
    let dev = snap.device(source).ok_or("no device file lists it")?;
    let protocol = Protocol::from_device_type(&dev.kind).ok_or_else(|| {
        format!(
            "{} trace (only {} are decoded)",
            if dev.kind.is_empty() {
                "a device without a type".to_owned()
            } else {
                shown(&dev.kind)
            },
            Protocol::decoded_list()
        )
    })?;
    let (id, regs) = protocol.device_regs(&|n| dev.reg(n))?;
    if formatted && (id == 0 || id >= 0x70) {
        return Err(format!(
            "trace ID {id:#04x} is reserved in CoreSight frames (sources use 0x01 to 0x6F)"
        ));
    }
    Ok(SourceSpec {
        name: dev.name.clone(),
        id,
        protocol,
        regs,
        core: snap.core_of(source).map(|c| c.name.clone()),
    })
}
