//! Snapshot directories, in the layout ARM DS-5 writes and `trace-convert`
//! (and OpenCSD) read: `snapshot.ini` listing the device files, one device
//! file per core (registers and memory dumps) and per trace source (its
//! ETMCR, ETMCCER, ETMIDR and ETMTRACEIDR), `trace.ini` naming the trace
//! buffer and binding sources to it and cores to sources, and the capture.
//!
//! Every file is written under a temporary name and renamed when
//! complete.

use crate::options::{Protocol, Regs};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use trace_core::memory::MemoryMap;

/// Memory contents at an address, saved as a dump file of a core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dump {
    /// Address of the first byte.
    pub address: u32,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The dumps of every region of a memory map (for a map built with
/// [`MemoryMap::add_elf`]: the ELF file's loadable segments).
#[must_use]
pub fn dumps_of(memory: &MemoryMap) -> Vec<Dump> {
    memory
        .regions()
        .filter(|r| !r.is_empty())
        .map(|r| Dump {
            address: r.base,
            bytes: r.bytes().to_vec(),
        })
        .collect()
}

/// A core: its name, processor type and memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Core {
    /// Device name, e.g. `cpu_0`.
    pub name: String,
    /// Processor, e.g. `Cortex-A15`.
    pub kind: String,
    /// Program counter written to the registers (informational).
    pub pc: u32,
    /// Memory dumps.
    pub dumps: Vec<Dump>,
}

/// A trace source: a PTM or ETM tracing one core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Device name, e.g. `PTM_0`.
    pub name: String,
    /// Its protocol.
    pub protocol: Protocol,
    /// Its configuration registers.
    pub regs: Regs,
    /// Its trace ID (ETMTRACEIDR).
    pub id: u8,
    /// Name of the core it traces.
    pub core: String,
}

/// How the capture file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferFormat {
    /// CoreSight formatter frames (`format=coresight`), several sources.
    CoreSight,
    /// One source's raw bytes (`format=source_data`).
    SourceData,
}

/// Everything a snapshot holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotSpec {
    /// Cores.
    pub cores: Vec<Core>,
    /// Trace sources.
    pub sources: Vec<Source>,
    /// The capture.
    pub trace: Vec<u8>,
    /// Its layout.
    pub format: BufferFormat,
    /// Timestamp frequency in Hz written to `trace.ini`, if any.
    pub timestamp_hz: Option<u64>,
}

/// Why a snapshot could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotWriteError {
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The description is inconsistent.
    #[error("{0}")]
    Invalid(String),
}

fn device_type(s: &Source) -> String {
    match s.protocol {
        Protocol::Ptm => "PTM1.1".into(),
        Protocol::Etmv3 => format!("ETM3.{}", (s.regs.etmidr >> 4) & 0xf),
        other => other.label().into(),
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// Writes `path` under a temporary name, then renames it.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), SnapshotWriteError> {
    let io = |source| SnapshotWriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io)
}

/// Writes the snapshot into `dir` (created if needed): `snapshot.ini`,
/// `core_<n>.ini` with `PC` and one `[dump<k>]` per dump
/// (`core_<n>_<k>.bin`), `source_<n>.ini` with `ETMCR(id:0x0)`,
/// `ETMCCER(id:0x7A)`, `ETMIDR(id:0x79)` and `ETMTRACEIDR(id:0x80)`,
/// `trace.ini` and `trace.bin`.
///
/// # Errors
///
/// [`SnapshotWriteError::Invalid`] for names that are empty or hold
/// characters other than letters, digits, `_`, `-` and `.`, a source
/// naming an unknown core, several sources in a `source_data` buffer;
/// [`SnapshotWriteError::Io`] when a file cannot be written.
pub fn write_snapshot(dir: &Path, spec: &SnapshotSpec) -> Result<(), SnapshotWriteError> {
    let invalid = |s: String| Err(SnapshotWriteError::Invalid(s));
    for name in spec
        .cores
        .iter()
        .map(|c| &c.name)
        .chain(spec.sources.iter().map(|s| &s.name))
    {
        if !valid_name(name) {
            return invalid(format!("device name `{name}`"));
        }
    }
    for s in &spec.sources {
        if !spec.cores.iter().any(|c| c.name == s.core) {
            return invalid(format!("source {} traces unknown core {}", s.name, s.core));
        }
    }
    if spec.format == BufferFormat::SourceData && spec.sources.len() != 1 {
        return invalid("a source_data buffer holds exactly one source".into());
    }
    std::fs::create_dir_all(dir).map_err(|source| SnapshotWriteError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut top = String::from("[snapshot]\nversion=1.0\n\n[device_list]\n");
    let mut n = 0;
    for (i, core) in spec.cores.iter().enumerate() {
        n += 1;
        let file = format!("core_{i}.ini");
        let _ = writeln!(top, "device{n}={file}");
        let mut ini = format!(
            "[device]\nname={}\nclass=core\ntype={}\n\n[regs]\nPC={:#010X}\n",
            core.name, core.kind, core.pc
        );
        for (k, d) in core.dumps.iter().enumerate() {
            let bin = format!("core_{i}_{k}.bin");
            write_file(&dir.join(&bin), &d.bytes)?;
            let _ = write!(
                ini,
                "\n[dump{}]\nfile={bin}\naddress={:#010X}\nlength={:#X}\n",
                k + 1,
                d.address,
                d.bytes.len()
            );
        }
        write_file(&dir.join(&file), ini.as_bytes())?;
    }
    for (i, s) in spec.sources.iter().enumerate() {
        n += 1;
        let file = format!("source_{i}.ini");
        let _ = writeln!(top, "device{n}={file}");
        let ini = format!(
            "[device]\nname={}\nclass=trace_source\ntype={}\n\n[regs]\nETMCR(id:0x0)={:#010X}\nETMCCER(id:0x7A)={:#010X}\nETMIDR(id:0x79)={:#010X}\nETMTRACEIDR(id:0x80)={:#010X}\n",
            s.name,
            device_type(s),
            s.regs.etmcr,
            s.regs.etmccer,
            s.regs.etmidr,
            s.id
        );
        write_file(&dir.join(&file), ini.as_bytes())?;
    }
    top.push_str("\n[trace]\nmetadata=trace.ini\n");
    let mut trace = String::new();
    if let Some(hz) = spec.timestamp_hz {
        let _ = write!(trace, "[timestamp]\nfrequency={hz}\n\n");
    }
    let format = match spec.format {
        BufferFormat::CoreSight => "coresight",
        BufferFormat::SourceData => "source_data",
    };
    let _ = write!(
        trace,
        "[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=buffer0\nfile=trace.bin\nformat={format}\n\n[source_buffers]\n"
    );
    for s in &spec.sources {
        let _ = writeln!(trace, "{}=buffer0", s.name);
    }
    trace.push_str("\n[core_trace_sources]\n");
    for s in &spec.sources {
        let _ = writeln!(trace, "{}={}", s.core, s.name);
    }
    write_file(&dir.join("trace.bin"), &spec.trace)?;
    write_file(&dir.join("trace.ini"), trace.as_bytes())?;
    write_file(&dir.join("snapshot.ini"), top.as_bytes())?;
    Ok(())
}
