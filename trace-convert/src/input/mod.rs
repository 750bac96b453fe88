//! Where trace comes from. One detection ([`Kind::detect`]) tells the
//! kinds of input apart and one entry ([`resolve`]) hands the path to the
//! module of its kind, each of which returns the same [`Input`]: the
//! captures to decode and what their memory images are made of.
//!
//! - [`snapshot`]: snapshot directories (`snapshot.ini`, device files,
//!   memory dumps, trace buffers), with [`ini`] and [`folder`];
//! - [`perf`]: `perf.data` recordings (AUX trace, AUXTRACE_INFO, the
//!   mapped files as memory);
//! - [`flags`]: a capture file described by command-line flags;
//! - [`saved`]: events saved by an earlier run (`--save-events`).
//!
//! A capture's bytes may also come as they arrive ([`stream`]: a TCP
//! connection, standard input, a FIFO), described by the flags or by a
//! snapshot's configuration (`--snapshot DIR`).
//!
//! [`source`] describes captures and their sources for all of them,
//! [`refine`] applies the flags to the sources a snapshot or recording
//! describes, [`memory`] loads the images, [`files`] lists what an input
//! reads, and [`capture`] makes of each capture what trace-core reads: its
//! bytes, its demultiplexer and its decoder. A new kind of input is a
//! module here, a [`Kind`] and an arm of [`resolve`].

pub mod capture;
pub mod cores;
pub mod files;
pub mod flags;
pub mod folder;
pub mod ini;
pub mod kind;
mod layered;
pub mod memory;
pub mod name_index;
pub mod perf;
pub mod refine;
pub mod saved;
pub mod shown;
pub mod snapshot;
pub mod source;
pub mod stream;

use flags::SourceFlags;
pub use kind::Kind;
use snapshot::{Snapshot, SnapshotError};
use source::CaptureSpec;
use std::path::{Path, PathBuf};

/// Why an input could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The input path does not exist.
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    /// The input is a folder without `snapshot.ini`.
    #[error("{0}: a folder, but not a trace snapshot folder (it holds no snapshot.ini); give a snapshot folder, a capture file or a perf.data recording")]
    NotASnapshot(PathBuf),
    /// The snapshot directory is broken.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A capture file was given without `--protocol`.
    #[error(
        "{}: a capture file needs {} (or give a snapshot directory)",
        .0.display(),
        source::Protocol::flag_list()
    )]
    NoProtocol(PathBuf),
    /// A stream was given with `--snapshot` but the snapshot describes no
    /// capture.
    #[error("{0}: the snapshot describes no trace buffer whose configuration a stream could take")]
    NoStreamConfig(PathBuf),
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
    /// A saved-events file is unusable.
    #[error("{path}: {reason}")]
    Saved {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
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

/// A resolved input: the captures to decode and, for snapshots and
/// perf.data recordings, the snapshot they describe (cores with their
/// memory dumps, the files read, notes); or the events saved by an
/// earlier run.
#[derive(Debug, Clone)]
pub struct Input {
    /// What kind of input it was.
    pub kind: Kind,
    /// Captures, one per trace buffer.
    pub captures: Vec<CaptureSpec>,
    /// The snapshot, when the input was a snapshot directory (or a
    /// perf.data recording, described as one: its mapped files are the
    /// memory dumps of its CPUs).
    pub snapshot: Option<Snapshot>,
    /// Saved events, converted instead of decoding captures (then there
    /// are none).
    pub saved: Option<saved::SavedEvents>,
}

/// Resolve `path`, a snapshot directory, a perf.data file (known by its
/// magic) or a capture file ([`Kind::detect`]), with `flags`, by the
/// module of its kind; or a stream ([`stream::Stream::parse`]), described
/// by the flags or by the snapshot of [`SourceFlags::snapshot`].
///
/// For a snapshot or a perf.data file, register-level flags refine every
/// source's registers and `--trace-id` keeps only that source
/// ([`refine::refine`]).
///
/// # Errors
///
/// [`InputError`] when the path does not exist, the snapshot is broken or
/// names no buffer, the perf.data file is damaged or holds no ETMv3/PTM
/// trace, or a capture file comes without a protocol.
pub fn resolve(path: &Path, flags: &SourceFlags) -> Result<Input, InputError> {
    if let Some(stream) = stream::Stream::parse(path) {
        return stream::resolve(path, stream, flags);
    }
    match Kind::detect(path)? {
        Kind::Snapshot => refine::refine(path, snapshot::open(path)?, flags),
        Kind::PerfData => {
            let lookup = perf::resolve::Lookup {
                symfs: flags.symfs.as_deref(),
                build_id_cache: flags.build_id_cache.as_deref(),
            };
            refine::refine(path, perf::resolve::resolve(path, lookup)?, flags)
        }
        Kind::Capture => flags::open(path, flags),
        Kind::SavedEvents => saved::open(path),
    }
}
