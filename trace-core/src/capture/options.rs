//! How a capture decode spreads its work over threads.

/// How a [`CaptureDecoder`](super::CaptureDecoder) spreads the work.
///
/// The default reads nothing from the environment: a program that lets
/// its users choose (a command-line option, an environment variable) sets
/// [`jobs`](Self::jobs) itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Decoding threads; 1 decodes on the calling thread only (so does
    /// any number without the `parallel` feature).
    pub jobs: usize,
    /// Captures smaller than this many bytes are decoded on the calling
    /// thread.
    pub min_parallel_bytes: u64,
    /// The capture is cut into chunks of at most about this many bytes
    /// (fewer when the trace gives many events per byte); on the calling
    /// thread only, the results of [`Parts`](super::Parts) are handed on
    /// about this often.
    pub part_bytes: u64,
    /// Chunks per thread in one window of work; two windows are handed
    /// out ahead of the join.
    pub parts_per_job: usize,
    /// When a source with a return stack is warmed up (see
    /// [`WarmUp`]).
    pub warm_up: WarmUp,
}

/// When the workers of a parallel decode warm up the return stack of a
/// PTM source that keeps one, by decoding the bytes just before each
/// chunk (so that returns to calls made there need nothing from earlier
/// chunks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WarmUp {
    /// Once one of the source's shares had to be decoded again.
    #[default]
    Auto,
    /// In every chunk.
    Always,
    /// Never.
    Never,
}

/// The threads available to the process, asked once (the answer reads
/// cgroup files: a recording cut into many pieces asks per piece).
fn available_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

impl Default for DecodeOptions {
    /// All available threads, for captures of 4 MiB and more, in chunks
    /// of up to 1 MiB.
    fn default() -> Self {
        DecodeOptions {
            jobs: available_threads(),
            min_parallel_bytes: 4 << 20,
            part_bytes: 1 << 20,
            parts_per_job: 1,
            warm_up: WarmUp::Auto,
        }
    }
}

impl DecodeOptions {
    /// The defaults with `jobs` threads (0: all available).
    #[must_use]
    pub fn with_jobs(jobs: usize) -> Self {
        let mut o = DecodeOptions::default();
        if jobs > 0 {
            o.jobs = jobs;
        }
        o
    }

    /// `jobs` threads (0: all available) for captures of any size: what
    /// a user who chose the number of threads expects.
    #[must_use]
    pub fn chosen_jobs(jobs: usize) -> Self {
        let mut o = DecodeOptions::with_jobs(jobs);
        o.min_parallel_bytes = 0;
        o
    }
}

/// Counters of a parallel decode (all zero for a decode on the calling
/// thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParallelStats {
    /// Chunks the capture was cut into.
    pub chunks: u64,
    /// Sources' shares of chunks decoded on worker threads from their
    /// first I-sync.
    pub parts: u64,
    /// Of those, shares whose start did not match the real state at the
    /// join and were parsed and decoded again on the calling thread.
    pub redone: u64,
    /// Shares without an I-sync, parsed and decoded on the calling thread.
    pub serial: u64,
    /// Of those, formatted shares the worker gave up before the chunk's
    /// end, when its sources without an I-sync had kept as many runs as a
    /// chunk may: the calling thread read them from the chunk's frames.
    pub given_up: u64,
    /// The most room for events the sources of one chunk held (their
    /// buffers' capacity, in events): with the chunks in flight, what
    /// bounds the memory a parallel decode takes.
    pub largest_chunk_room: u64,
}
