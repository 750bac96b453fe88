//! Options shared by both protocols, and the encoder's output.

use trace_core::decode::DecoderConfig;
use trace_core::demux::SourceConfig;

/// When to repeat the A-sync + I-sync pair after the start of trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPeriod {
    /// After at least this many trace bytes since the last I-sync.
    Bytes(u64),
    /// After at least this many instructions since the last I-sync.
    Instructions(u64),
}

/// The synthetic timing model: how many cycles each instruction takes.
/// Deterministic, so cycle counts and timestamps can be checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleModel {
    /// Cycles of every instruction. 0 makes instructions that are not
    /// taken branches share the cycle of the instruction before them
    /// (ETMv3 then uses format 2 and format 4 P-headers, ETMv3.3 and
    /// later).
    pub per_instruction: u32,
    /// Extra cycles of a branch that is taken (changes the flow).
    pub taken_branch: u32,
}

impl Default for CycleModel {
    fn default() -> Self {
        CycleModel {
            per_instruction: 1,
            taken_branch: 2,
        }
    }
}

impl CycleModel {
    /// Cycles of one instruction.
    #[must_use]
    pub fn cycles(&self, taken_branch: bool) -> u32 {
        let base = self.per_instruction;
        if taken_branch {
            base.saturating_add(self.taken_branch)
        } else {
            base
        }
    }
}

/// Options both encoders share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOptions {
    /// Trace starts at this instruction of the flow (0 = the first): the
    /// trace begins with an A-sync and an I-sync (reason: trace on) there.
    pub start_at: u64,
    /// Periodic A-sync + I-sync, or `None` for only the first.
    pub sync: Option<SyncPeriod>,
    /// Emit timestamps: after every I-sync and then every
    /// `timestamp_interval` instructions. The value is
    /// `timestamp_base` plus the cycles executed since the start.
    pub timestamps: bool,
    /// Instructions between timestamps (at least 1).
    pub timestamp_interval: u64,
    /// Value of the first timestamp.
    pub timestamp_base: u64,
    /// Context ID bytes traced: 0, 1, 2 or 4 (ETMCR bits \[15:14\]).
    pub context_id_bytes: u8,
    /// Context ID at the start of trace (truncated to the traced size).
    pub context_id: u32,
    /// Context ID changes: `(instruction index, new value)`, in index
    /// order; a context ID packet is emitted before that instruction.
    pub context_changes: Vec<(u64, u32)>,
    /// The timing model.
    pub cycles: CycleModel,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            start_at: 0,
            sync: None,
            timestamps: false,
            timestamp_interval: 1000,
            timestamp_base: 0x1000,
            context_id_bytes: 0,
            context_id: 0,
            context_changes: Vec::new(),
            cycles: CycleModel::default(),
        }
    }
}

impl TraceOptions {
    pub(crate) fn context_field(&self) -> Result<u32, crate::EncodeError> {
        match self.context_id_bytes {
            0 => Ok(0),
            1 => Ok(1),
            2 => Ok(2),
            4 => Ok(3),
            n => Err(crate::EncodeError::Options(format!(
                "context ID size {n} is not 0, 1, 2 or 4 bytes"
            ))),
        }
    }

    pub(crate) fn context_mask(&self) -> u32 {
        match self.context_id_bytes {
            1 => 0xff,
            2 => 0xffff,
            4 => u32::MAX,
            _ => 0,
        }
    }
}

pub use trace_core::source::{Protocol, Regs};

/// Counters of one encoding run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncodeStats {
    /// Instructions traced (from the start instruction on; cancelled
    /// instructions included).
    pub instructions: u64,
    /// Exceptions traced.
    pub exceptions: u64,
    /// Exception returns traced.
    pub exception_returns: u64,
    /// Packets written.
    pub packets: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Cycles of the traced instructions under the timing model.
    pub cycles: u64,
    /// I-syncs written (the first included).
    pub isyncs: u64,
}

/// An encoded trace: one source's raw bytes and how to read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The protocol.
    pub protocol: Protocol,
    /// The trace bytes, starting with an A-sync.
    pub bytes: Vec<u8>,
    /// Register values describing the configuration.
    pub regs: Regs,
    /// Counters.
    pub stats: EncodeStats,
}

impl Trace {
    /// The packet parser configuration, from [`Trace::regs`].
    ///
    /// # Errors
    ///
    /// [`EncodeError::Options`](crate::EncodeError::Options) if the
    /// registers do not describe a source of the trace's protocol (not
    /// produced by this crate's encoders).
    pub fn source_config(&self) -> Result<SourceConfig, crate::EncodeError> {
        source_config(self.protocol, self.regs)
    }

    /// A decoder configuration for trace ID `id` (DMB/DSB waypoints from
    /// ETMCCER bit 24).
    ///
    /// # Errors
    ///
    /// As [`Trace::source_config`].
    pub fn decoder_config(&self, id: u8) -> Result<DecoderConfig, crate::EncodeError> {
        Ok(DecoderConfig::new(id, &self.source_config()?).with_etmccer(self.regs.etmccer))
    }
}

/// The packet parser configuration of a source with these registers.
///
/// # Errors
///
/// [`EncodeError::Options`](crate::EncodeError::Options) when the
/// registers do not describe a source of `protocol`.
pub fn source_config(protocol: Protocol, r: Regs) -> Result<SourceConfig, crate::EncodeError> {
    r.source_config(protocol)
        .map_err(|e| crate::EncodeError::Options(e.to_string()))
}
