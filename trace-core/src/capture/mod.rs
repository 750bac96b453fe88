//! Decoding whole captures: the deformatter, one packet parser and one
//! [`Decoder`](crate::decode::Decoder) per trace ID, memory images per
//! trace ID, on the calling thread or (with the `parallel` feature) cut
//! into chunks decoded on several threads with the same events in the
//! same order.
//!
//! One [`CaptureDecoder`], made by its [`Builder`], has two ways in:
//! [`CaptureDecoder::run`] hands every event (or the results of work done
//! on the decoding threads, [`Parts`]) to a [`Consumer`];
//! [`CaptureDecoder::events`] is an iterator that pulls them.
//!
//! ```
//! use std::sync::Arc;
//! use trace_core::capture::{each_event, CaptureDecoder};
//! use trace_core::event::EventKind;
//! use trace_core::frames::FrameMode;
//! use trace_core::memory::{MemoryMap, Region, Space};
//! use trace_core::source::{Protocol, Regs};
//!
//! // A PTM source (ETMIDR of a PFT v1.1) on trace ID 0x10, alone in a raw
//! // capture: A-sync, an I-sync to 0x1000 (ARM state), three E atoms.
//! let regs = Regs { etmcr: 0, etmccer: 0, etmidr: 0x4114_f310 };
//! let cfg = regs.decoder_config(Protocol::Ptm, 0x10)?;
//! let capture: &[u8] = &[
//!     0x00, 0x00, 0x00, 0x00, 0x00, 0x80, // A-sync
//!     0x08, 0x00, 0x10, 0x00, 0x00, 0x01, // I-sync: 0x1000, A32, periodic
//!     0x84, 0x84, 0x84, // three E atoms
//! ];
//! // MOV r0, #0; ADD r0, r0, #1; B 0x1000 (ARM ARM A8.8).
//! let code: Vec<u8> = [0xE3A0_0000u32, 0xE280_0001, 0xEAFF_FFFC]
//!     .iter()
//!     .flat_map(|w| w.to_le_bytes())
//!     .collect();
//! let mut memory = MemoryMap::new();
//! memory.add(Region::new("code", 0x1000, Space::Any, code.into(), 0, 12)?);
//!
//! let mut decoder = CaptureDecoder::builder(FrameMode::Raw { id: 0x10 })
//!     .source(cfg)
//!     .memory(0x10, Arc::new(memory))
//!     .build();
//! let mut instructions = 0;
//! let summary = decoder.run(capture, &mut each_event(|e| {
//!     if let EventKind::Range(r) = e.kind {
//!         instructions += u64::from(r.count);
//!     }
//!     Ok(())
//! }))?;
//! assert_eq!(instructions, 9);
//! assert_eq!(summary.sources[0].1.instructions, 9);
//!
//! // The same events, pulled (here without a memory image: the decoder
//! // finds its way to 0x1000 and no further).
//! let decoder = CaptureDecoder::builder(FrameMode::Raw { id: 0x10 })
//!     .source(cfg)
//!     .build();
//! let mut events = decoder.events(capture);
//! let kinds: Vec<&str> = events
//!     .by_ref()
//!     .map(|e| e.map(|e| e.kind.name()))
//!     .collect::<Result<_, _>>()?;
//! assert!(kinds.contains(&"addr_nacc"), "{kinds:?}");
//! assert_eq!(events.summary().sources[0].1.nacc, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod consumer;
mod events;
mod in_parts;
mod mismatches;
mod options;
#[cfg(feature = "parallel")]
mod parallel;
mod parts;
mod sequential;
mod summary;

pub use consumer::{deliveries, each_event, Consumer, Deliveries, EachEvent};
pub use events::Events;
pub use mismatches::{Firsts, Mismatches};
pub use options::{DecodeOptions, ParallelStats, WarmUp};
pub use parts::{Delivery, Part, Parts};
pub use sequential::read_items;
pub use summary::{DecodeSummary, SourceCounts};

use crate::decode::DecoderConfig;
use crate::demux::Demux;
use crate::frames::FrameMode;
use crate::memory::{MemoryImage, MemoryMap};
use crate::per_id::PerId;
use std::io::{self, Read};
use std::sync::Arc;

/// How many events a decode on one thread holds before it hands them to a
/// consumer that takes slices ([`Consumer::SLICES`]) as one slice (once a
/// packet has brought them to this many). The size matters little
/// (figures in `docs/performance.md`).
pub const SLICE: usize = 1024;

/// Why a capture could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The capture could not be read.
    #[error("reading the capture: {0}")]
    Read(io::Error),
    /// The consumer failed (its error; nothing was handed on after it).
    #[error("{0}")]
    Consumer(io::Error),
    /// The decoding threads could not be started.
    #[error("starting the decoding threads: {0}")]
    Threads(String),
    /// A decoding thread failed.
    #[error("a decoding thread failed")]
    ThreadFailed,
}

/// What a capture decode needs to know: the layout, the sources, their
/// memory images.
#[derive(Clone)]
pub(crate) struct Plan {
    pub(crate) layout: FrameMode,
    /// The configured sources.
    sources: PerId<DecoderConfig>,
    /// The configuration of any other trace ID found (its `id` replaced).
    any_id: Option<DecoderConfig>,
    memory: PerId<Arc<dyn MemoryImage>>,
    default_memory: Arc<dyn MemoryImage>,
    /// The capture starts at this offset of a file.
    pub(crate) start: Option<u64>,
    /// Every source's ETMv3 instructions by runs
    /// ([`DecoderConfig::with_block_ranges`]).
    block_ranges: bool,
}

impl Plan {
    /// The decoder configuration of trace ID `id`, if it has a source.
    #[inline]
    pub(crate) fn source(&self, id: u8) -> Option<DecoderConfig> {
        let cfg = self.sources.get(id).copied().or_else(|| {
            self.any_id.map(|mut c| {
                c.id = id;
                c
            })
        });
        cfg.map(|c| c.with_block_ranges(c.block_ranges || self.block_ranges))
    }

    /// The configured trace IDs, in ascending order.
    #[cfg(feature = "parallel")]
    pub(crate) fn configured(&self) -> Vec<u8> {
        self.sources.ids()
    }

    /// The memory image of trace ID `id`.
    pub(crate) fn image(&self, id: u8) -> Arc<dyn MemoryImage> {
        Arc::clone(self.memory.get(id).unwrap_or(&self.default_memory))
    }

    /// The demultiplexer of the capture.
    pub(crate) fn demux(&self) -> Demux {
        let demux = Demux::new(
            self.layout,
            self.sources.iter().map(|(id, c)| (id, c.source)),
            self.any_id.map(|c| c.source),
        );
        match self.start {
            Some(offset) => demux.starting_at(offset),
            None => demux,
        }
    }
}

/// Decodes one capture: see the [module](self) documentation.
pub struct CaptureDecoder {
    plan: Plan,
    options: DecodeOptions,
    size: Option<u64>,
    parts: Option<Arc<dyn Parts>>,
    #[cfg(feature = "parallel")]
    pool: Option<Arc<rayon::ThreadPool>>,
    stats: ParallelStats,
}

impl core::fmt::Debug for CaptureDecoder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CaptureDecoder")
            .field("layout", &self.plan.layout)
            .field("sources", &self.plan.sources)
            .field("any_id", &self.plan.any_id)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Makes a [`CaptureDecoder`].
#[must_use]
pub struct Builder {
    decoder: CaptureDecoder,
}

impl core::fmt::Debug for Builder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.decoder.fmt(f)
    }
}

impl CaptureDecoder {
    /// A builder for a capture laid out as `layout`, with no sources yet,
    /// the default [`DecodeOptions`], and no memory image (every address
    /// not accessible) until one is given.
    pub fn builder(layout: FrameMode) -> Builder {
        Builder {
            decoder: CaptureDecoder {
                plan: Plan {
                    layout,
                    sources: PerId::new(),
                    any_id: None,
                    memory: PerId::new(),
                    default_memory: Arc::new(MemoryMap::new()),
                    start: None,
                    block_ranges: false,
                },
                options: DecodeOptions::default(),
                size: None,
                parts: None,
                #[cfg(feature = "parallel")]
                pool: None,
                stats: ParallelStats::default(),
            },
        }
    }

    /// Decode the capture read from `input`, handing the deliveries to
    /// `consumer` on the calling thread, in capture order per trace ID;
    /// the events and their order are the same whatever the threads.
    ///
    /// On several threads (with the `parallel` feature, [`DecodeOptions::jobs`]
    /// above 1, a capture of [`DecodeOptions::min_parallel_bytes`] or more
    /// by [`Builder::size_hint`], frames that are not a TPIU stream, and
    /// no [`Builder::starting_at`]), each source's events in each chunk a
    /// worker decodes go to a fresh part made by [`Builder::parts`], if
    /// given, and the consumer is handed the parts' results in the place
    /// of those events. On one thread, parts that keep no events are fed
    /// on the calling thread and their results handed on about every
    /// [`DecodeOptions::part_bytes`] of the capture; parts that keep
    /// events are not made then, and every event is handed on as
    /// [`Delivery::Event`] (the consumer does the part's work on it as
    /// fast).
    ///
    /// `input` may be a stream (a socket, a pipe): bytes are decoded as
    /// they arrive, and a read that fails with
    /// [`io::ErrorKind::WouldBlock`] says that nothing new has come for a
    /// while, so that the chunks read so far are decoded and handed on
    /// rather than held for a full chunk (the read is then tried again;
    /// such a read should itself wait a little first). Memory stays
    /// bounded however long the stream runs.
    ///
    /// # Errors
    ///
    /// [`CaptureError`] when the capture cannot be read, the threads
    /// fail, or the consumer fails.
    pub fn run<R: Read, C: Consumer + ?Sized>(
        &mut self,
        input: R,
        consumer: &mut C,
    ) -> Result<DecodeSummary, CaptureError> {
        #[cfg(feature = "parallel")]
        if self.parallel() {
            let (summary, stats) = parallel::decode_chunks(
                &self.plan,
                input,
                &self.options,
                self.parts.clone(),
                self.pool.as_deref(),
                consumer,
            )?;
            self.stats = stats;
            return Ok(summary);
        }
        self.stats = ParallelStats::default();
        in_parts::decode_sequential_parts(
            &self.plan,
            input,
            self.parts.as_deref(),
            self.options.part_bytes,
            consumer,
        )
    }

    /// Whether [`CaptureDecoder::run`] decodes on several threads.
    #[cfg(feature = "parallel")]
    fn parallel(&self) -> bool {
        let opts = &self.options;
        let jobs = match &self.pool {
            Some(p) => p.current_num_threads() + 1,
            None => opts.jobs,
        };
        jobs > 1
            && self.size.is_none_or(|s| s >= opts.min_parallel_bytes)
            && self.plan.start.is_none()
            && matches!(self.plan.layout, FrameMode::Memory | FrameMode::Raw { .. })
    }

    /// How the last [`CaptureDecoder::run`] went on several threads.
    #[must_use]
    pub fn parallel_stats(&self) -> ParallelStats {
        self.stats
    }

    /// The events of the capture read from `input`, decoded on the
    /// calling thread as they are pulled (parts and threads are not
    /// used); [`Events::summary`] gives the counters at the end.
    pub fn events<R: Read>(self, input: R) -> Events<R> {
        Events::new(self.plan, input)
    }
}

impl Builder {
    /// Decode the source `cfg.id` as configured by `cfg` (a later call for
    /// the same trace ID replaces it).
    pub fn source(mut self, cfg: DecoderConfig) -> Self {
        self.decoder.plan.sources.insert(cfg.id, cfg);
        self
    }

    /// Decode every trace ID found that has no source of its own as
    /// configured by `template` (its `id` is replaced by each one's).
    pub fn any_id(mut self, template: DecoderConfig) -> Self {
        self.decoder.plan.any_id = Some(template);
        self
    }

    /// The memory image the decoder of trace ID `id` reads code from.
    pub fn memory(mut self, id: u8, image: Arc<dyn MemoryImage>) -> Self {
        self.decoder.plan.memory.insert(id, image);
        self
    }

    /// The memory image of every trace ID without one of its own.
    pub fn default_memory(mut self, image: Arc<dyn MemoryImage>) -> Self {
        self.decoder.plan.default_memory = image;
        self
    }

    /// The capture starts at `offset` of a file (e.g. a piece of AUX data
    /// in a perf.data file): packets and events carry file offsets. Such
    /// a capture is decoded on the calling thread.
    pub fn starting_at(mut self, offset: u64) -> Self {
        self.decoder.plan.start = Some(offset);
        self
    }

    /// The capture's size in bytes, when known: smaller captures than
    /// [`DecodeOptions::min_parallel_bytes`] are decoded on the calling
    /// thread (without a hint, the size is taken to be large).
    pub fn size_hint(mut self, bytes: u64) -> Self {
        self.decoder.size = Some(bytes);
        self
    }

    /// Hand on every source's ETMv3 instructions by runs rather than
    /// one range per instruction (see
    /// [`DecoderConfig::with_block_ranges`]): what a consumer that needs
    /// no event per instruction decodes fastest. The instructions are
    /// the same whatever the threads; where a run goes through a T32 IT
    /// block that a decoder entered after its IT instruction, the runs
    /// may be cut in other places on several threads than on one.
    pub fn block_ranges(mut self, on: bool) -> Self {
        self.decoder.plan.block_ranges = on;
        self
    }

    /// How the work is spread over threads.
    pub fn options(mut self, options: DecodeOptions) -> Self {
        self.decoder.options = options;
        self
    }

    /// Work on the events done on the decoding threads (see [`Parts`]).
    pub fn parts(mut self, parts: Arc<dyn Parts>) -> Self {
        self.decoder.parts = Some(parts);
        self
    }

    /// Decode on `pool`'s threads (and the calling thread) rather than a
    /// pool of [`DecodeOptions::jobs`] threads made for each capture.
    #[cfg(feature = "parallel")]
    pub fn thread_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Self {
        self.decoder.pool = Some(pool);
        self
    }

    /// Whether the decoder decodes on several threads (see
    /// [`CaptureDecoder::run`]) as built so far: for a consumer that
    /// chooses its [`Parts`] by it.
    #[must_use]
    pub fn runs_in_parallel(&self) -> bool {
        #[cfg(feature = "parallel")]
        return self.decoder.parallel();
        #[cfg(not(feature = "parallel"))]
        false
    }

    /// The decoder.
    #[must_use]
    pub fn build(self) -> CaptureDecoder {
        self.decoder
    }
}
