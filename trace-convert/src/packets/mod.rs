//! Reading captures into packets (their listing is
//! [`crate::sinks::listing::packets`]).

use crate::input::source::CaptureSpec;
use crate::input::InputError;
use std::io::{self, Read};
use std::path::PathBuf;
use trace_core::demux::{Demux, Item, SourceStats};

/// Bytes read from a capture file at a time.
const CHUNK: usize = 1 << 20;

/// Bytes handed to the demultiplexer at a time: their items (a packet
/// takes one to a few bytes, its item 40) stay within the core's cache.
const FEED: usize = 4 << 10;

/// Why a capture could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The capture's description is unusable.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The capture file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// Writing the output failed.
    #[error("writing output: {0}")]
    Output(io::Error),
}

impl ReadError {
    /// The error of decoding the capture file `path`.
    #[must_use]
    pub fn from_capture(path: &std::path::Path, e: trace_core::capture::CaptureError) -> Self {
        use trace_core::capture::CaptureError as E;
        match e {
            E::Read(source) => ReadError::Io {
                path: path.to_path_buf(),
                source,
            },
            E::Consumer(e) => ReadError::Output(e),
            E::Threads(why) => ReadError::Output(io::Error::other(why)),
            E::ThreadFailed => ReadError::Output(io::Error::other("a decoding thread failed")),
            other => ReadError::Output(io::Error::other(other.to_string())),
        }
    }
}

/// What was read from one capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureSummary {
    /// Bytes in the capture file.
    pub bytes: u64,
    /// Per configured trace ID: its counters.
    pub sources: Vec<(u8, SourceStats)>,
    /// Payload bytes under trace IDs without a configured source.
    pub unconfigured: u64,
    /// Frame bytes discarded (null or reserved IDs, before the first ID,
    /// before frame alignment, incomplete last frame).
    pub discarded: u64,
}

/// Build the demultiplexer for `spec`.
///
/// # Errors
///
/// [`InputError::BadConfig`] when a source's registers are unusable.
pub fn demux_for(spec: &CaptureSpec) -> Result<Demux, InputError> {
    let mut sources = Vec::new();
    for s in &spec.sources {
        sources.push((s.id, s.config()?));
    }
    let any = match spec.any_id {
        Some((protocol, regs)) => {
            let template = crate::input::source::SourceSpec {
                name: "any trace ID".into(),
                id: 0,
                protocol,
                regs,
                core: None,
            };
            Some(template.config()?)
        }
        None => None,
    };
    Ok(Demux::new(spec.layout, sources, any))
}

/// Read the capture of `spec` in chunks (memory stays bounded), handing
/// each batch of demultiplexer items to `batch`; the last batch holds what
/// the end of the input completes. Returns the demultiplexer, for its
/// counters, and the number of bytes read.
///
/// # Errors
///
/// [`ReadError`] when the configuration is unusable, the file cannot be
/// read, or `batch` fails.
pub fn stream_capture(
    spec: &CaptureSpec,
    mut batch: impl FnMut(&[Item]) -> Result<(), ReadError>,
) -> Result<(Demux, u64), ReadError> {
    let mut demux = demux_for(spec)?;
    let io_err = |source| ReadError::Io {
        path: spec.path.clone(),
        source,
    };
    let file = spec.open().map_err(io_err)?;
    let mut file: Box<dyn Read> = match spec.range {
        Some((start, len)) => {
            use std::io::{Seek, SeekFrom};
            let mut file = file;
            file.seek(SeekFrom::Start(start)).map_err(io_err)?;
            demux = demux.starting_at(start);
            Box::new(file.take(len))
        }
        None => Box::new(file),
    };
    // No more than the piece (one of thousands in a perf.data recording).
    let size = spec.range.map_or(CHUNK, |(_, len)| {
        usize::try_from(len).map_or(CHUNK, |l| l.clamp(1, CHUNK))
    });
    let mut buf = vec![0u8; size];
    let mut items = Vec::new();
    let mut bytes = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(e)),
        };
        bytes += n as u64;
        // Fed a slice at a time, so that the items of a slice are still in
        // the cache when `batch` reads them (a whole chunk's items would
        // be tens of megabytes).
        for slice in buf[..n].chunks(FEED) {
            items.clear();
            demux.feed(slice, &mut items);
            batch(&items)?;
        }
    }
    items.clear();
    demux.finish(&mut items);
    batch(&items)?;
    Ok((demux, bytes))
}

/// Read the capture of `spec` and hand every item to `each`, in capture
/// order.
///
/// # Errors
///
/// [`ReadError`] when the configuration is unusable, the file cannot be
/// read, or `each` fails (its error is returned as [`ReadError::Output`]).
pub fn read_capture(
    spec: &CaptureSpec,
    mut each: impl FnMut(&Item) -> io::Result<()>,
) -> Result<CaptureSummary, ReadError> {
    let mut summary = CaptureSummary::default();
    let (demux, bytes) = stream_capture(spec, |items| deliver(items, &mut summary, &mut each))?;
    summary.bytes = bytes;
    summary.sources = demux
        .ids()
        .into_iter()
        .filter_map(|id| demux.stats(id).map(|s| (id, s)))
        .collect();
    Ok(summary)
}

fn deliver(
    items: &[Item],
    summary: &mut CaptureSummary,
    each: &mut impl FnMut(&Item) -> io::Result<()>,
) -> Result<(), ReadError> {
    for item in items {
        match item {
            Item::Unconfigured { run } => summary.unconfigured += run.data().len() as u64,
            Item::Frame(ev) => summary.discarded += frame_bytes(ev),
            _ => {}
        }
        each(item).map_err(ReadError::Output)?;
    }
    Ok(())
}

fn frame_bytes(ev: &trace_core::frames::FrameEvent) -> u64 {
    use trace_core::frames::FrameEvent as F;
    match *ev {
        F::Data(_) => 0,
        F::Discarded { run, .. } => run.data().len() as u64,
        F::Unsynchronized { len, .. } | F::Truncated { len, .. } => len,
    }
}
