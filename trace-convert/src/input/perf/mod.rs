//! perf.data files recorded by Linux `perf record -e cs_etm//` (or
//! written by `trace-encode`): the file header, the event attributes, the
//! records (memory maps, threads, AUX data buffers), the header features,
//! and the CoreSight configuration of AUXTRACE_INFO. See `docs/perf.md`.

pub mod auxtrace;
mod bytes;
pub mod features;
pub mod header;
pub mod records;
pub mod resolve;

use auxtrace::CsEtmInfo;
use features::Features;
use header::{Attr, FileHeader};
use records::{Body, Record};

pub use header::is_perf_data;

/// Why a perf.data file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PerfError {
    /// The file does not start with the perf.data magic.
    #[error("not a perf.data file (no PERFILE2 magic)")]
    NotPerf,
    /// The file was written by a big-endian machine.
    #[error("a big-endian perf.data file: only little-endian files are read")]
    BigEndian,
    /// A field runs past the end of what holds it.
    #[error("offset {offset}: {what} is cut short: {need} bytes needed, {have} left")]
    Truncated {
        /// File offset where it starts.
        offset: u64,
        /// What was being read.
        what: String,
        /// Bytes needed.
        need: u64,
        /// Bytes there.
        have: u64,
    },
    /// A section lies outside the file.
    #[error("{what} ({size} bytes at offset {offset}) lies outside the file ({file} bytes)")]
    OutOfFile {
        /// The section.
        what: String,
        /// Its offset.
        offset: u64,
        /// Its size.
        size: u64,
        /// The file's size.
        file: u64,
    },
    /// An AUXTRACE record's trace is not all in the file.
    #[error("offset {offset}: AUXTRACE record announces {size} bytes of trace, only {have} follow in the data section: AUX data is missing (a cut or damaged file)")]
    MissingAuxData {
        /// File offset of the record.
        offset: u64,
        /// Bytes announced.
        size: u64,
        /// Bytes there.
        have: u64,
    },
    /// A value that cannot be right.
    #[error("offset {offset}: {what}")]
    Bad {
        /// File offset of the record or field.
        offset: u64,
        /// What is wrong.
        what: String,
    },
}

/// A read perf.data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfData {
    /// The header.
    pub header: FileHeader,
    /// The event attributes (from the attribute section, or from records
    /// in pipe mode).
    pub attrs: Vec<Attr>,
    /// The records, in file order.
    pub records: Vec<Record>,
    /// The header features.
    pub features: Features,
    /// The CoreSight configuration, with the offset of its record, when
    /// the file has an AUXTRACE_INFO record.
    pub cs_etm: Option<(u64, Result<CsEtmInfo, PerfError>)>,
}

impl PerfData {
    /// Read the perf.data file whose bytes are `file`.
    ///
    /// # Errors
    ///
    /// [`PerfError`] for a file that is not perf.data, is big-endian, or
    /// whose header, attributes, records or feature table are damaged.
    pub fn parse(file: &[u8]) -> Result<PerfData, PerfError> {
        let header = FileHeader::read(file)?;
        let mut attrs = if header.piped {
            Vec::new()
        } else {
            header::read_attrs(file, &header)?
        };
        let records = records::read_records(file, header.data, &mut attrs)?;
        let mut features = if header.piped {
            Features::default()
        } else {
            features::read_features(file, &header)?
        };
        let mut cs_etm = None;
        for r in &records {
            match &r.body {
                Body::Feature { id, data } => {
                    if let (Ok(bit), Ok(bytes)) = (u32::try_from(*id), data.of(file, "a feature")) {
                        features.add(bit, bytes, data.offset);
                    }
                }
                Body::AuxtraceInfo { kind, words } if cs_etm.is_none() => {
                    cs_etm = Some((r.offset, CsEtmInfo::parse(*kind, words, r.offset)));
                }
                _ => {}
            }
        }
        Ok(PerfData {
            header,
            attrs,
            records,
            features,
            cs_etm,
        })
    }

    /// The AUXTRACE records.
    pub fn auxtraces(&self) -> impl Iterator<Item = (&Record, &records::Auxtrace)> {
        self.records.iter().filter_map(|r| match &r.body {
            Body::Auxtrace(a) => Some((r, a)),
            _ => None,
        })
    }
}
