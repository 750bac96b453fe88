//! How the parser starts: at a synchronization packet, or at the first
//! byte.
//!
//! The ITM and DWT packet protocol is self-describing: no register says
//! how to read a packet. What a parser must be told is where packets
//! begin. A stream read out of a circular buffer starts anywhere, and
//! only a synchronization packet shows where a packet starts; a stream
//! received from a serial wire output (SWO) since before tracing was
//! enabled starts with a packet header, and often carries no
//! synchronization packet at all (ARM recommends disabling them on
//! asynchronous ports to save bandwidth).

/// Parser configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Config {
    aligned_start: bool,
}

impl Config {
    /// Waits for a synchronization packet before decoding (as OpenCSD's
    /// ITM packet processor does); bytes before it are reported as
    /// [`ErrorKind::Unsynchronized`](crate::ErrorKind::Unsynchronized).
    #[must_use]
    pub const fn new() -> Self {
        Self {
            aligned_start: false,
        }
    }

    /// Whether the first byte of the input is a packet header
    /// (`true`: decoding starts at once) or packets must be found from a
    /// synchronization packet first (`false`, the default).
    #[must_use]
    pub const fn with_aligned_start(mut self, yes: bool) -> Self {
        self.aligned_start = yes;
        self
    }

    /// See [`with_aligned_start`](Self::with_aligned_start).
    #[must_use]
    pub const fn aligned_start(&self) -> bool {
        self.aligned_start
    }
}
