//! Several sources in one capture: CoreSight formatter frames, as a trace
//! funnel and an ETB (memory layout) or a TPIU (continuous mode, with
//! full-frame syncs) would write them.

use trace_core::frames::{is_source_id, Formatter, FrameMode};

/// How the frames are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// 16-byte frames back to back, as in an ETB/ETF/ETR buffer.
    Memory,
    /// TPIU continuous mode: a full-frame sync before the first frame and
    /// every 16th frame after it.
    Continuous,
}

/// One source of a capture.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// Trace ID, 0x01 to 0x6F.
    pub id: u8,
    /// The source's trace bytes.
    pub bytes: &'a [u8],
}

/// Why a capture could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// A trace ID outside 0x01..=0x6F.
    #[error("trace ID {0:#04x} cannot carry trace data (0x01 to 0x6f)")]
    BadId(u8),
    /// Two sources share a trace ID.
    #[error("trace ID {0:#04x} is used twice")]
    DuplicateId(u8),
}

/// Interleaves the sources' bytes, `chunk` bytes of each in turn (as a
/// funnel arbitrating between busy inputs), into formatter frames. The
/// last frame is padded with the null ID. Deformatting the result gives
/// back each source's bytes exactly.
///
/// # Errors
///
/// [`CaptureError`] for a trace ID that cannot carry data or is used
/// twice.
pub fn format_capture(
    sources: &[Source<'_>],
    layout: Layout,
    chunk: usize,
) -> Result<Vec<u8>, CaptureError> {
    for (i, s) in sources.iter().enumerate() {
        if !is_source_id(s.id) {
            return Err(CaptureError::BadId(s.id));
        }
        if sources[..i].iter().any(|o| o.id == s.id) {
            return Err(CaptureError::DuplicateId(s.id));
        }
    }
    let mut f = Formatter::new(match layout {
        Layout::Memory => FrameMode::Memory,
        Layout::Continuous => FrameMode::Continuous,
    });
    let chunk = chunk.max(1);
    let mut pos = vec![0usize; sources.len()];
    loop {
        let mut any = false;
        for (s, p) in sources.iter().zip(pos.iter_mut()) {
            let rest = s.bytes.get(*p..).unwrap_or_default();
            if rest.is_empty() {
                continue;
            }
            let n = rest.len().min(chunk);
            f.push(s.id, &rest[..n]);
            *p += n;
            any = true;
        }
        if !any {
            break;
        }
    }
    Ok(f.finish())
}
