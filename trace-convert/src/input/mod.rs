//! Where trace comes from: snapshot directories, or capture files described
//! by command-line flags.

pub mod flags;
pub mod folder;
pub mod ini;
pub mod perf;
pub mod shown;
pub mod snapshot;
pub mod source;

use flags::SourceFlags;
use snapshot::{Snapshot, SnapshotError};
use source::{CaptureSpec, Protocol, SourceSpec};
use std::path::{Path, PathBuf};
use trace_core::demux::SourceConfig;

/// Why an input could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The input path does not exist.
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    /// The snapshot directory is broken.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A capture file was given without `--protocol`.
    #[error(
        "{0}: a capture file needs --protocol etm or --protocol ptm (or give a snapshot directory)"
    )]
    NoProtocol(PathBuf),
    /// The snapshot holds no trace buffer.
    #[error("{0}: the snapshot names no trace buffer")]
    NoBuffers(PathBuf),
    /// `--trace-id` names no source of the snapshot.
    #[error("{path}: no source has trace ID {id:#04x}; the snapshot's sources are {present}")]
    NoSuchTraceId {
        /// The snapshot directory.
        path: PathBuf,
        /// The trace ID asked for.
        id: u8,
        /// The trace IDs and names the snapshot has, readable.
        present: String,
    },
    /// A perf.data file could not be used.
    #[error("{path}: {source}")]
    Perf {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: perf::PerfError,
    },
    /// A source's registers do not describe a usable configuration.
    #[error("{name} (trace ID {id:#04x}): {reason}")]
    BadConfig {
        /// Source name.
        name: String,
        /// Its trace ID.
        id: u8,
        /// What is wrong.
        reason: String,
    },
}

/// A resolved input: the captures to decode and, for snapshots, the
/// snapshot they came from (memory dumps, cores).
#[derive(Debug, Clone)]
pub struct Input {
    /// Captures, one per trace buffer.
    pub captures: Vec<CaptureSpec>,
    /// The snapshot, when the input was a snapshot directory.
    pub snapshot: Option<Snapshot>,
}

/// Resolve `path`, a snapshot directory, a perf.data file (known by its
/// magic) or a capture file, with `flags`.
///
/// For a snapshot or a perf.data file, register-level flags refine every
/// source's registers and `--trace-id` keeps only that source.
///
/// # Errors
///
/// [`InputError`] when the path does not exist, the snapshot is broken or
/// names no buffer, the perf.data file is damaged or holds no ETMv3/PTM
/// trace, or a capture file comes without a protocol.
pub fn resolve(path: &Path, flags: &SourceFlags) -> Result<Input, InputError> {
    if !path.is_dir() && starts_like_perf_data(path) {
        let input = perf::resolve::resolve(
            path,
            perf::resolve::Lookup {
                symfs: flags.symfs.as_deref(),
                build_id_cache: flags.build_id_cache.as_deref(),
            },
        )?;
        return refine(path, input, flags);
    }
    if path.is_dir() {
        let snap = Snapshot::read(path)?;
        let captures = CaptureSpec::from_snapshot(&snap);
        if captures.is_empty() {
            return Err(InputError::NoBuffers(path.to_path_buf()));
        }
        return refine(
            path,
            Input {
                captures,
                snapshot: Some(snap),
            },
            flags,
        );
    }
    if !path.exists() {
        return Err(InputError::NotFound(path.to_path_buf()));
    }
    let capture = flags
        .capture(path)
        .ok_or_else(|| InputError::NoProtocol(path.to_path_buf()))?;
    Ok(Input {
        captures: vec![capture],
        snapshot: None,
    })
}

/// Whether the regular file `path` starts with the perf.data magic.
fn starts_like_perf_data(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8];
    trace_core::memory::open_regular(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && perf::is_perf_data(&head)
}

/// Apply `flags` to the sources of `input` (a snapshot's or a perf.data
/// file's): `--trace-id` keeps only that source, register-level flags
/// refine every source's registers.
fn refine(path: &Path, input: Input, flags: &SourceFlags) -> Result<Input, InputError> {
    let Input {
        mut captures,
        snapshot,
    } = input;
    {
        if let Some(id) = flags.trace_id {
            let all: Vec<&SourceSpec> = captures.iter().flat_map(|c| &c.sources).collect();
            if !all.iter().any(|s| s.id == id) {
                let present = all
                    .iter()
                    .map(|s| format!("{:#04x} ({})", s.id, s.name))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(InputError::NoSuchTraceId {
                    path: path.to_path_buf(),
                    id,
                    present: if present.is_empty() {
                        "none".to_owned()
                    } else {
                        present
                    },
                });
            }
        }
        for cap in &mut captures {
            if let Some(id) = flags.trace_id {
                cap.sources.retain(|s| s.id == id);
            }
            for s in &mut cap.sources {
                if let Some(p) = flags.protocol {
                    s.protocol = p;
                }
                s.regs = flags.apply(s.regs);
            }
        }
    }
    Ok(Input { captures, snapshot })
}

impl SourceSpec {
    /// The packet parser configuration of this source.
    ///
    /// # Errors
    ///
    /// [`InputError::BadConfig`] when the registers do not describe a
    /// source of the protocol (e.g. an ETMIDR of the other protocol).
    pub fn config(&self) -> Result<SourceConfig, InputError> {
        let r = self.regs;
        let bad = |reason: String| InputError::BadConfig {
            name: self.name.clone(),
            id: self.id,
            reason,
        };
        match self.protocol {
            Protocol::Etmv3 => etm_packets::Config::from_regs(r.etmcr, r.etmccer, r.etmidr)
                .map(SourceConfig::Etm)
                .map_err(|e| bad(format!("ETMIDR {:#010x}: {e}", r.etmidr))),
            Protocol::Ptm => ptm_packets::Config::from_regs(r.etmcr, r.etmccer, r.etmidr)
                .map(SourceConfig::Ptm)
                .map_err(|e| bad(format!("ETMIDR {:#010x}: {e}", r.etmidr))),
        }
    }
}
