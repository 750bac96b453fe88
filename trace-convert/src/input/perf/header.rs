//! The perf.data file header and the event attributes it points to.

use super::bytes::{size, Cursor};
use super::PerfError;

/// `PERFILE2` read as a little-endian `u64`: the magic of a perf.data
/// file written on a little-endian machine.
pub const MAGIC: u64 = u64::from_le_bytes(*b"PERFILE2");

/// The magic as a big-endian machine writes it.
const MAGIC_SWAPPED: u64 = u64::from_be_bytes(*b"PERFILE2");

/// Size of the header of a file written to a seekable file.
pub const FILE_HEADER_SIZE: u64 = 104;

/// Size of the header of a file written to a pipe.
pub const PIPE_HEADER_SIZE: u64 = 16;

/// Whether `bytes` start like a perf.data file (either byte order).
#[must_use]
pub fn is_perf_data(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && {
        let mut a = [0u8; 8];
        a.copy_from_slice(&bytes[..8]);
        let m = u64::from_le_bytes(a);
        m == MAGIC || m == MAGIC_SWAPPED
    }
}

/// A `{offset, size}` pair naming a part of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Section {
    /// File offset of its first byte.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
}

impl Section {
    pub(crate) fn read(c: &mut Cursor<'_>, what: &str) -> Result<Section, PerfError> {
        Ok(Section {
            offset: c.u64(what)?,
            size: c.u64(what)?,
        })
    }

    /// The bytes of this section of `file`.
    ///
    /// # Errors
    ///
    /// [`PerfError::OutOfFile`] when it does not lie inside the file.
    pub fn of<'a>(&self, file: &'a [u8], what: &str) -> Result<&'a [u8], PerfError> {
        let end = self.offset.checked_add(self.size);
        match end {
            Some(end) if end <= file.len() as u64 => {
                let start = size(self.offset, self.offset, what)?;
                let end = size(end, self.offset, what)?;
                Ok(&file[start..end])
            }
            _ => Err(PerfError::OutOfFile {
                what: what.to_owned(),
                offset: self.offset,
                size: self.size,
                file: file.len() as u64,
            }),
        }
    }
}

/// The header of a perf.data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    /// Written to a pipe: only magic and size; attributes and features
    /// come as records.
    pub piped: bool,
    /// The header's size.
    pub size: u64,
    /// Size of one entry of the attribute section (the attribute and its
    /// ID section).
    pub attr_size: u64,
    /// The attribute section.
    pub attrs: Section,
    /// The data section, which holds the records.
    pub data: Section,
    /// The (unused) event types section.
    pub event_types: Section,
    /// The feature bits: bit N set when feature N has a section.
    pub features: [u64; 4],
}

impl FileHeader {
    /// Read the header at the start of `file`.
    ///
    /// # Errors
    ///
    /// [`PerfError`] for a file that does not start with the magic, is
    /// big-endian, or whose header is cut short or has an unknown size.
    pub fn read(file: &[u8]) -> Result<FileHeader, PerfError> {
        let mut c = Cursor::new(file, 0);
        let magic = c.u64("the magic")?;
        if magic == MAGIC_SWAPPED {
            return Err(PerfError::BigEndian);
        }
        if magic != MAGIC {
            return Err(PerfError::NotPerf);
        }
        let size = c.u64("the header size")?;
        if size == PIPE_HEADER_SIZE {
            return Ok(FileHeader {
                piped: true,
                size,
                attr_size: 0,
                attrs: Section::default(),
                data: Section {
                    offset: PIPE_HEADER_SIZE,
                    size: file.len() as u64 - PIPE_HEADER_SIZE,
                },
                event_types: Section::default(),
                features: [0; 4],
            });
        }
        if size < FILE_HEADER_SIZE {
            return Err(PerfError::Bad {
                offset: 8,
                what: format!(
                    "header size {size}: neither a file header ({FILE_HEADER_SIZE}) nor a pipe header ({PIPE_HEADER_SIZE})"
                ),
            });
        }
        let attr_size = c.u64("the attribute entry size")?;
        let attrs = Section::read(&mut c, "the attribute section")?;
        let data = Section::read(&mut c, "the data section")?;
        let event_types = Section::read(&mut c, "the event types section")?;
        let mut features = [0u64; 4];
        for f in &mut features {
            *f = c.u64("the feature bits")?;
        }
        Ok(FileHeader {
            piped: false,
            size,
            attr_size,
            attrs,
            data,
            event_types,
            features,
        })
    }

    /// Whether feature `bit` has a section.
    #[must_use]
    pub fn has_feature(&self, bit: u32) -> bool {
        bit < 256 && self.features[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    }
}

/// `sample_type` bits that matter here.
pub mod sample {
    /// The instruction pointer.
    pub const IP: u64 = 1 << 0;
    /// Process and thread IDs.
    pub const TID: u64 = 1 << 1;
    /// A time stamp.
    pub const TIME: u64 = 1 << 2;
    /// An address.
    pub const ADDR: u64 = 1 << 3;
    /// The event ID.
    pub const ID: u64 = 1 << 6;
    /// The CPU.
    pub const CPU: u64 = 1 << 7;
    /// The period.
    pub const PERIOD: u64 = 1 << 8;
    /// The stream ID.
    pub const STREAM_ID: u64 = 1 << 9;
    /// The event ID, at a fixed place.
    pub const IDENTIFIER: u64 = 1 << 16;
}

/// One event attribute (`perf_event_attr`), with the IDs of its events.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attr {
    /// The PMU type (e.g. the `cs_etm` PMU's number).
    pub kind: u32,
    /// The size of the attribute structure as written.
    pub size: u32,
    /// The event's configuration (for `cs_etm`, the trace options).
    pub config: u64,
    /// Sample period or frequency.
    pub sample_period: u64,
    /// What samples hold.
    pub sample_type: u64,
    /// The read format.
    pub read_format: u64,
    /// The flag bits (disabled, inherit, ..., `sample_id_all` is bit 18).
    pub flags: u64,
    /// `config1`, when written.
    pub config1: u64,
    /// `config2`, when written (for `cs_etm`, the sink).
    pub config2: u64,
    /// The IDs of the events opened with this attribute.
    pub ids: Vec<u64>,
}

/// The `sample_id_all` flag: non-sample records end with sample fields.
pub const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;

impl Attr {
    /// Parse the attribute structure in `bytes` (its IDs are not part of
    /// it). Fields beyond `bytes` read as 0 (older, shorter attributes).
    ///
    /// # Errors
    ///
    /// [`PerfError::Truncated`] when fewer than the first 8 bytes are there.
    pub fn parse(bytes: &[u8], offset: u64) -> Result<Attr, PerfError> {
        let mut c = Cursor::new(bytes, offset);
        let kind = c.u32("the attribute's type")?;
        let size = c.u32("the attribute's size")?;
        let next = |c: &mut Cursor<'_>| if c.left() >= 8 { c.u64("") } else { Ok(0) };
        let config = next(&mut c)?;
        let sample_period = next(&mut c)?;
        let sample_type = next(&mut c)?;
        let read_format = next(&mut c)?;
        let flags = next(&mut c)?;
        let _wakeup_and_bp_type = next(&mut c)?;
        let config1 = next(&mut c)?;
        let config2 = next(&mut c)?;
        Ok(Attr {
            kind,
            size,
            config,
            sample_period,
            sample_type,
            read_format,
            flags,
            config1,
            config2,
            ids: Vec::new(),
        })
    }

    /// Whether records other than samples end with sample fields.
    #[must_use]
    pub fn sample_id_all(&self) -> bool {
        self.flags & FLAG_SAMPLE_ID_ALL != 0
    }
}

/// Read the attribute section of a (not piped) file.
///
/// # Errors
///
/// [`PerfError`] when the section lies outside the file, the entry size
/// is too small, or an entry's ID section lies outside the file.
pub fn read_attrs(file: &[u8], header: &FileHeader) -> Result<Vec<Attr>, PerfError> {
    let bytes = header.attrs.of(file, "the attribute section")?;
    if header.attr_size < 16 + 8 {
        if header.attrs.size == 0 {
            return Ok(Vec::new());
        }
        return Err(PerfError::Bad {
            offset: 16,
            what: format!(
                "attribute entry size {}: too small for an attribute and its ID section",
                header.attr_size
            ),
        });
    }
    let entry = size(header.attr_size, 16, "the attribute entry size")?;
    let mut attrs = Vec::new();
    for (i, e) in bytes.chunks(entry).enumerate() {
        let at = header.attrs.offset + (i * entry) as u64;
        if e.len() < entry {
            return Err(PerfError::Truncated {
                offset: at,
                what: format!("attribute {i}"),
                need: entry as u64,
                have: e.len() as u64,
            });
        }
        let (attr_bytes, ids_bytes) = e.split_at(entry - 16);
        let mut attr = Attr::parse(attr_bytes, at)?;
        let mut c = Cursor::new(ids_bytes, at + (entry - 16) as u64);
        let ids = Section::read(&mut c, "an attribute's ID section")?;
        let idb = ids.of(file, &format!("attribute {i}'s IDs"))?;
        attr.ids = idb
            .chunks_exact(8)
            .map(|w| {
                let mut a = [0u8; 8];
                a.copy_from_slice(w);
                u64::from_le_bytes(a)
            })
            .collect();
        attrs.push(attr);
    }
    Ok(attrs)
}
