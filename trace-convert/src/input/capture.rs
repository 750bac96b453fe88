//! A capture, ready for trace-core: what a [`CaptureSpec`] builds to be
//! read — its bytes ([`open`]), its demultiplexer ([`demux_for`]) read
//! with trace-core's own loop ([`stream_capture`], [`read_capture`] for
//! the packet listing) and its [`CaptureDecoder`] ([`decoder`], run by
//! [`run`]) with each source's configuration and memory image.

use super::source::{CaptureSpec, SourceSpec};
use super::InputError;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;
use trace_core::capture::{
    read_items, Builder, CaptureDecoder, CaptureError, Consumer, DecodeSummary,
};
use trace_core::decode::DecoderConfig;
use trace_core::demux::{Demux, Item, SourceConfig, SourceStats};
use trace_core::frames::FrameEvent;
use trace_core::memory::MemoryImage;
use trace_core::source::RegsError;

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
    pub fn from_capture(path: &std::path::Path, e: CaptureError) -> Self {
        match e {
            CaptureError::Read(source) => ReadError::Io {
                path: path.to_path_buf(),
                source,
            },
            CaptureError::Consumer(e) => ReadError::Output(e),
            CaptureError::Threads(why) => ReadError::Output(io::Error::other(why)),
            CaptureError::ThreadFailed => {
                ReadError::Output(io::Error::other("a decoding thread failed"))
            }
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

impl SourceSpec {
    /// The packet parser configuration of this source.
    ///
    /// # Errors
    ///
    /// [`InputError::BadConfig`] when the registers do not describe a
    /// source of the protocol (e.g. an ETMIDR of another protocol).
    pub fn config(&self) -> Result<SourceConfig, InputError> {
        self.regs
            .source_config(self.protocol)
            .map_err(|e| self.bad_config(e))
    }

    /// The decoder configuration of this source.
    ///
    /// # Errors
    ///
    /// As [`SourceSpec::config`].
    pub fn decoder_config(&self) -> Result<DecoderConfig, InputError> {
        self.regs
            .decoder_config(self.protocol, self.id)
            .map_err(|e| self.bad_config(e))
    }

    fn bad_config(&self, e: RegsError) -> InputError {
        InputError::BadConfig {
            name: self.name.clone(),
            id: self.id,
            reason: format!("ETMIDR {:#010x}: {e}", self.regs.etmidr),
        }
    }
}

/// The source that decodes every trace ID `spec` names no source for,
/// if it has one (captures described by flags).
fn any_id(spec: &CaptureSpec) -> Option<SourceSpec> {
    spec.any_id.map(|(protocol, regs)| SourceSpec {
        name: "any trace ID".into(),
        id: 0,
        protocol,
        regs,
        core: spec.any_core.clone(),
    })
}

/// The demultiplexer of `spec`, for a capture read from its start (see
/// [`open`], which skips to a range's start).
///
/// # Errors
///
/// [`InputError::BadConfig`] when a source's registers are unusable.
pub fn demux_for(spec: &CaptureSpec) -> Result<Demux, InputError> {
    let mut sources = Vec::new();
    for s in &spec.sources {
        sources.push((s.id, s.config()?));
    }
    let any = any_id(spec).map(|s| s.config()).transpose()?;
    let demux = Demux::new(spec.layout, sources, any);
    Ok(match spec.range {
        Some((start, _)) => demux.starting_at(start),
        None => demux,
    })
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
    let mut b = CaptureDecoder::builder(spec.layout);
    // A stream's size is not known: taken to be large.
    if spec.stream.is_none() {
        b = b.size_hint(spec.size());
    }
    for s in &spec.sources {
        b = b.source(s.decoder_config()?).memory(s.id, memory(&s.name));
    }
    if let Some(template) = any_id(spec) {
        b = b
            .any_id(template.decoder_config()?)
            .default_memory(memory(""));
    }
    if let Some((start, _)) = spec.range {
        b = b.starting_at(start);
    }
    Ok(b)
}

/// The bytes of the capture of `spec`: the file, or its range, or the
/// stream as it arrives ([`super::stream`]).
///
/// # Errors
///
/// [`ReadError::Io`] when the file cannot be opened or its range found,
/// or the stream's connection cannot be made.
pub fn open(spec: &CaptureSpec) -> Result<Box<dyn Read + Send>, ReadError> {
    let io_err = |source| ReadError::Io {
        path: spec.path.clone(),
        source,
    };
    if let Some(s) = &spec.stream {
        return Ok(Box::new(super::stream::open(s).map_err(io_err)?));
    }
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

/// Read the capture of `spec` (memory stays bounded), handing each batch
/// of demultiplexer items to `batch`; the last batch holds what the end
/// of the input completes. Returns the demultiplexer, for its counters,
/// and the number of bytes read.
///
/// # Errors
///
/// [`ReadError`] when the configuration is unusable, the file cannot be
/// read, or `batch` fails.
pub fn stream_capture(
    spec: &CaptureSpec,
    mut batch: impl FnMut(&[Item]) -> io::Result<()>,
) -> Result<(Demux, u64), ReadError> {
    let mut demux = demux_for(spec)?;
    let input = open(spec)?;
    let bytes = read_items(&mut demux, input, |items| {
        batch(items).map_err(CaptureError::Consumer)
    })
    .map_err(|e| ReadError::from_capture(&spec.path, e))?;
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
    let (demux, bytes) = stream_capture(spec, |items| {
        for item in items {
            match item {
                Item::Unconfigured { run } => summary.unconfigured += run.data().len() as u64,
                Item::Frame(ev) => summary.discarded += frame_bytes(ev),
                _ => {}
            }
            each(item)?;
        }
        Ok(())
    })?;
    summary.bytes = bytes;
    summary.sources = demux.counters();
    Ok(summary)
}

/// The bytes a frame event discards.
fn frame_bytes(ev: &FrameEvent) -> u64 {
    match *ev {
        FrameEvent::Data(_) => 0,
        FrameEvent::Discarded { run, .. } => run.data().len() as u64,
        FrameEvent::Unsynchronized { len, .. } | FrameEvent::Truncated { len, .. } => len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::memory::{memory_for, ExtraMemory};
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
}
