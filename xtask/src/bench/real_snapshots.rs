//! The third-party Cortex-R5 ETMv3.3 captures (`testdata/real/am243x-r5f`)
//! as inputs of the OpenCSD rows. Each is an ETB read-out that starts and
//! ends mid-packet, so its buffer repeated as it is does not chain (OpenCSD
//! stops at the first join with a bad packet sequence). Instead its ETM
//! stream (trace ID 0x10) from its first to its last A-sync is framed
//! again as a CoreSight formatted buffer of one source, and that unit is
//! repeated to size in a copy of the snapshot: still formatted, as the
//! original, and every copy starts with an A-sync.

use super::{byte_sum_base, etm_unit, snapshot_with};
use std::path::{Path, PathBuf};
use trace_convert::input::{flags::SourceFlags, resolve};
use trace_encode::capture::{format_capture, Layout, Source};

/// The folder of the captures below `testdata/real`.
const FOLDER: &str = "am243x-r5f";

/// The trace ID of the ETM in every capture.
const TRACE_ID: u8 = 0x10;

/// One input of the OpenCSD rows: a snapshot copy whose buffer is
/// repeated to size.
pub(super) struct Capture {
    /// Name in the table.
    pub(super) name: String,
    /// The snapshot directory.
    pub(super) snap: PathBuf,
    /// Its (repeated) trace buffer.
    pub(super) file: PathBuf,
    /// Byte-sum throughput of the buffer (MB/s), the table's baseline.
    pub(super) base: f64,
}

/// Copies of every capture below `real` (the `testdata/real` folder) in
/// `dir`, each buffer about `size` bytes; none when the folder is absent.
///
/// # Errors
///
/// A snapshot that does not resolve, or a file that cannot be read or
/// written.
pub(super) fn inputs(
    real: &Path,
    dir: &Path,
    size: usize,
    runs: usize,
) -> Result<Vec<Capture>, String> {
    let root = real.join(FOLDER);
    if !root.is_dir() {
        eprintln!("bench: {} not found, its rows skipped", root.display());
        return Ok(Vec::new());
    }
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(&root)
        .map_err(|e| format!("{}: {e}", root.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("snapshot.ini").is_file())
        .collect();
    snaps.sort();
    let mut out = Vec::with_capacity(snaps.len());
    for src in snaps {
        let input = resolve(&src, &SourceFlags::default()).map_err(|e| e.to_string())?;
        let buffer = &input.captures.first().ok_or("no capture")?.path;
        let capture = std::fs::read(buffer).map_err(|e| format!("{}: {e}", buffer.display()))?;
        let payload = etm_unit(&capture, TRACE_ID);
        let unit = format_capture(
            &[Source {
                id: TRACE_ID,
                bytes: &payload,
            }],
            Layout::Memory,
            payload.len().max(1),
        )
        .map_err(|e| e.to_string())?;
        let (snap, file) = snapshot_with(&src, dir, &unit, size)?;
        let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let name = src
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        out.push(Capture {
            name: format!("R5 {name}"),
            snap,
            file,
            base: byte_sum_base(runs, &bytes),
        });
    }
    Ok(out)
}
