//! Trace sources and captures: which bytes hold which source's trace, and
//! the register values that configure each source's packet parser.

use super::folder::Folder;
use std::path::PathBuf;
use trace_core::frames::FrameMode;

pub use trace_core::source::{Protocol, Regs as SourceRegs};

/// One trace source in a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    /// Name (snapshot device name, or `ID 0x..` for flags).
    pub name: String,
    /// Trace ID under which its bytes appear.
    pub id: u8,
    /// Its protocol.
    pub protocol: Protocol,
    /// Its configuration registers.
    pub regs: SourceRegs,
    /// The core it traces, when known (snapshot `[core_trace_sources]`).
    pub core: Option<String>,
}

/// One capture file and the sources it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureSpec {
    /// The capture file.
    pub path: PathBuf,
    /// How its bytes are laid out.
    pub layout: FrameMode,
    /// The sources it holds, in trace ID order.
    pub sources: Vec<SourceSpec>,
    /// For captures described by flags: the protocol and registers used for
    /// any trace ID found that is not in `sources`.
    pub any_id: Option<(Protocol, SourceRegs)>,
    /// The core those sources trace, when named (`--core`).
    pub any_core: Option<String>,
    /// Sources the snapshot names that are not decoded, with the reason
    /// (both printable: control characters escaped).
    pub skipped: Vec<(String, String)>,
    /// For a snapshot's buffer: the open snapshot folder and the file's
    /// name in it, through which the file is opened (while `path` still
    /// names that file).
    pub within: Option<(Folder, PathBuf)>,
    /// The part of the file that holds the capture, as its offset and
    /// length (a piece of AUX data in a perf.data file); `None`: all of
    /// it. Offsets in packets and events stay offsets in the file.
    pub range: Option<(u64, u64)>,
    /// The Linux thread whose trace the capture is (a per-thread perf.data
    /// recording), when known.
    pub task: Option<Task>,
    /// The stream the capture's bytes come from as they arrive (a TCP
    /// connection, standard input, a FIFO), instead of the file `path`
    /// (which then spells the stream).
    pub stream: Option<super::stream::StreamSpec>,
}

/// A Linux thread and its process, as a perf.data recording names them
/// (COMM and FORK records).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Task {
    /// The process ID.
    pub pid: u32,
    /// The thread ID.
    pub tid: u32,
    /// The process's command name (its main thread's).
    pub process: String,
    /// The thread's command name.
    pub thread: String,
}

impl Task {
    /// The name of thread `tid` when the recording gives none: `:tid`,
    /// as `perf` shows it.
    #[must_use]
    pub fn unnamed_name(tid: u32) -> String {
        format!(":{tid}")
    }

    /// Thread `tid` that the recording names nowhere: its own process,
    /// both [unnamed](Self::unnamed_name).
    #[must_use]
    pub fn unnamed(tid: u32) -> Task {
        Task {
            pid: tid,
            tid,
            process: Task::unnamed_name(tid),
            thread: Task::unnamed_name(tid),
        }
    }
}

impl CaptureSpec {
    /// Open the capture file: through the snapshot folder for a snapshot's
    /// buffer (so it cannot lead outside), and in every case only when
    /// what was opened is a regular file (a FIFO or a device is refused,
    /// without blocking). A stream is opened by [`super::capture::open`].
    ///
    /// # Errors
    ///
    /// The error of opening it, or of it not being a regular file (or the
    /// capture being a stream).
    pub fn open(&self) -> std::io::Result<std::fs::File> {
        if let Some(s) = &self.stream {
            return Err(std::io::Error::other(format!(
                "{} is a stream, read as it arrives",
                s.stream
            )));
        }
        match &self.within {
            Some((folder, name)) if folder.path().join(name) == self.path => folder.open_file(name),
            _ => trace_core::memory::open_regular(&self.path),
        }
    }

    /// The size of the capture (of its range of the file), 0 when it
    /// cannot be opened (the error comes when it is read) or is a stream.
    #[must_use]
    pub fn size(&self) -> u64 {
        if self.stream.is_some() {
            return 0;
        }
        if let Some((_, len)) = self.range {
            return len;
        }
        self.open()
            .and_then(|f| f.metadata())
            .map_or(0, |m| m.len())
    }

    /// The configured source for trace ID `id`, if any.
    #[must_use]
    pub fn source(&self, id: u8) -> Option<SourceSpec> {
        if let Some(s) = self.sources.iter().find(|s| s.id == id) {
            return Some(s.clone());
        }
        self.any_id.map(|(protocol, regs)| SourceSpec {
            name: format!("ID {id:#04x}"),
            id,
            protocol,
            regs,
            core: self.any_core.clone(),
        })
    }
}
