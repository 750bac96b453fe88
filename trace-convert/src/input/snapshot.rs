//! Trace snapshot directories as written by ARM DS-5 and used by OpenCSD:
//! `snapshot.ini` lists device files (cores with memory dumps, trace
//! sources with register values) and names `trace.ini`, which lists the
//! trace buffers and binds sources to buffers and cores to sources.

use super::ini::{parse_u64, Ini, IniError, Section};
use std::path::{Component, Path, PathBuf};

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
    #[error("{path}: {size} bytes is too large for a snapshot .ini file")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
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
    /// The dump file, inside the snapshot directory.
    pub path: PathBuf,
    /// Address of the file's first byte (after `offset`).
    pub address: u64,
    /// Bytes to use, when given; otherwise the rest of the file.
    pub length: Option<u64>,
    /// Offset into the file where the dump starts.
    pub offset: u64,
    /// Memory space, as written (`S`, `N`, ...), when given.
    pub space: Option<String>,
}

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
    /// The capture file, inside the snapshot directory.
    pub path: PathBuf,
    /// Its layout.
    pub format: BufferFormat,
}

/// A parsed snapshot directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The directory.
    pub dir: PathBuf,
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
        let top = dir.join("snapshot.ini");
        let ini = read_ini(&top)?;
        let mut devices = Vec::new();
        if let Some(list) = ini.section("device_list") {
            for (_, file) in &list.entries {
                let path = inside(dir, &top, file)?;
                devices.push(read_device(dir, &path)?);
            }
        }
        let mut snap = Snapshot {
            dir: dir.to_path_buf(),
            devices,
            buffers: Vec::new(),
            source_buffers: Vec::new(),
            core_sources: Vec::new(),
            timestamp_hz: None,
        };
        let Some(meta) = ini.section("trace").and_then(|s| s.get("metadata")) else {
            return Ok(snap);
        };
        let trace_path = inside(dir, &top, meta)?;
        let trace = read_ini(&trace_path)?;
        let names = trace
            .section("trace_buffers")
            .and_then(|s| s.get("buffers"))
            .ok_or_else(|| SnapshotError::Missing {
                path: trace_path.clone(),
                what: "[trace_buffers] buffers".into(),
            })?;
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let sec = trace.section(name).ok_or_else(|| SnapshotError::Missing {
                path: trace_path.clone(),
                what: format!("[{name}] section for buffer {name}"),
            })?;
            snap.buffers.push(read_buffer(dir, &trace_path, sec)?);
        }
        snap.source_buffers = pairs(&trace, "source_buffers");
        snap.core_sources = pairs(&trace, "core_trace_sources");
        if let Some(f) = trace.section("timestamp").and_then(|s| s.get("frequency")) {
            snap.timestamp_hz = Some(number(&trace_path, "frequency", f)?);
        }
        Ok(snap)
    }

    /// The device called `name`.
    #[must_use]
    pub fn device(&self, name: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.name == name)
    }

    /// The buffer called `name`.
    #[must_use]
    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// The core a trace source traces, when `[core_trace_sources]` says.
    #[must_use]
    pub fn core_of(&self, source: &str) -> Option<&Device> {
        self.core_sources
            .iter()
            .find(|(_, s)| s == source)
            .and_then(|(core, _)| self.device(core))
    }
}

fn pairs(ini: &Ini, section: &str) -> Vec<(String, String)> {
    ini.section(section)
        .map(|s| s.entries.clone())
        .unwrap_or_default()
}

fn read_ini(path: &Path) -> Result<Ini, SnapshotError> {
    let io = |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > MAX_INI_BYTES {
        return Err(SnapshotError::TooLarge {
            path: path.to_path_buf(),
            size,
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let text = String::from_utf8_lossy(&bytes);
    Ini::parse(&text).map_err(|source| SnapshotError::Ini {
        path: path.to_path_buf(),
        source,
    })
}

/// Resolve `name`, written in `file`, to a path inside `dir`.
fn inside(dir: &Path, file: &Path, name: &str) -> Result<PathBuf, SnapshotError> {
    let escapes = || SnapshotError::OutsideSnapshot {
        path: file.to_path_buf(),
        value: name.to_owned(),
    };
    let rel = Path::new(name);
    if name.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(escapes());
    }
    let path = dir.join(rel);
    // A symbolic link may still lead elsewhere: compare real paths when the
    // file exists (a missing file is reported when it is opened).
    if let (Ok(real), Ok(base)) = (path.canonicalize(), dir.canonicalize()) {
        if !real.starts_with(base) {
            return Err(escapes());
        }
    }
    Ok(path)
}

fn number(path: &Path, key: &str, value: &str) -> Result<u64, SnapshotError> {
    parse_u64(value).ok_or_else(|| SnapshotError::BadValue {
        path: path.to_path_buf(),
        key: key.to_owned(),
        value: value.to_owned(),
        reason: "not a number".into(),
    })
}

fn read_device(dir: &Path, path: &Path) -> Result<Device, SnapshotError> {
    let ini = read_ini(path)?;
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
    };
    for sec in &ini.sections {
        if sec.name.eq_ignore_ascii_case("regs") {
            for (key, value) in &sec.entries {
                let name = key.split('(').next().unwrap_or(key).trim();
                device.regs.push(Register {
                    name: name.to_owned(),
                    value: number(path, key, value)?,
                });
            }
        } else if sec.name.to_ascii_lowercase().starts_with("dump") {
            device.dumps.push(read_dump(dir, path, sec)?);
        }
    }
    Ok(device)
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
    Ok(Dump {
        path: inside(dir, path, file)?,
        address,
        length: opt("length")?,
        offset: opt("offset")?.unwrap_or(0),
        space: sec.get("space").map(str::to_owned),
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
    Ok(Buffer {
        name: name.to_owned(),
        path: inside(dir, path, file)?,
        format,
    })
}
