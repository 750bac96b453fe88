//! Large traces for benchmarks: a flow encoded again and again, each
//! repetition starting with an A-sync and an I-sync (trace on), streamed to
//! a writer.

use crate::drive::{Backend, Classifier, Driver};
use crate::etm::{EtmBackend, EtmOptions};
use crate::flow::FlowItem;
use crate::ptm::{PtmBackend, PtmOptions};
use crate::EncodeError;
use std::io::Write;
use trace_core::memory::MemoryImage;

/// Which protocol and options to encode with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encoding {
    /// PTM.
    Ptm(PtmOptions),
    /// ETMv3.
    Etm(EtmOptions),
}

/// What [`write_repeated`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RepeatStats {
    /// Repetitions of the flow.
    pub repetitions: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Instructions traced.
    pub instructions: u64,
}

/// Writes at least `min_bytes` of trace (at least one repetition) by
/// encoding `flow` repeatedly, each repetition restarting trace with an
/// A-sync and an I-sync at its first traced instruction. The return stack,
/// compression state and context ID restart too, so every repetition
/// decodes like the first; without timestamps the repetitions are
/// byte-identical and the flow is encoded once.
///
/// # Errors
///
/// As [`encode_ptm`](crate::encode_ptm), and [`EncodeError::Io`] when
/// writing fails.
pub fn write_repeated<W: Write>(
    flow: &[FlowItem],
    memory: &dyn MemoryImage,
    encoding: &Encoding,
    min_bytes: u64,
    out: &mut W,
) -> Result<RepeatStats, EncodeError> {
    let mut cls = Classifier::new(memory);
    match encoding {
        Encoding::Ptm(o) => {
            let mut b = PtmBackend::new(o)?;
            repeat(&mut b, &mut cls, &o.trace, flow, min_bytes, out, |b| {
                &mut b.out
            })
        }
        Encoding::Etm(o) => {
            let mut b = EtmBackend::new(o)?;
            repeat(&mut b, &mut cls, &o.trace, flow, min_bytes, out, |b| {
                &mut b.out
            })
        }
    }
}

fn repeat<B: Backend, W: Write>(
    b: &mut B,
    cls: &mut Classifier<'_>,
    opts: &crate::TraceOptions,
    flow: &[FlowItem],
    min_bytes: u64,
    out: &mut W,
    buf: impl Fn(&mut B) -> &mut Vec<u8>,
) -> Result<RepeatStats, EncodeError> {
    let mut driver = Driver::new(opts);
    let mut stats = RepeatStats::default();
    driver.run(b, cls, flow)?;
    let per_run = b.stats().instructions;
    // Without timestamps every repetition encodes to the same bytes (the
    // I-sync resets the compression state and the return stack): encode
    // once, write it again and again.
    let once = std::mem::take(buf(b));
    if once.is_empty() {
        return Err(EncodeError::Options("the flow encodes to no bytes".into()));
    }
    loop {
        if opts.timestamps && stats.repetitions > 0 {
            driver.run(b, cls, flow)?;
            let bytes = buf(b);
            out.write_all(bytes)?;
            stats.bytes += bytes.len() as u64;
            bytes.clear();
        } else {
            out.write_all(&once)?;
            stats.bytes += once.len() as u64;
        }
        stats.repetitions += 1;
        stats.instructions += per_run;
        if stats.bytes >= min_bytes {
            break;
        }
    }
    out.flush()?;
    Ok(stats)
}
