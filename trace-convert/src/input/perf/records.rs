//! The records of a perf.data file's data section.

use super::bytes::{c_string, size, Cursor};
use super::header::{sample, Attr, Section};
use super::PerfError;

/// Record types read here (`perf_event_type` and perf's own).
pub mod kind {
    /// A memory mapping (`PERF_RECORD_MMAP`).
    pub const MMAP: u32 = 1;
    /// Lost records.
    pub const LOST: u32 = 2;
    /// A command name (`PERF_RECORD_COMM`).
    pub const COMM: u32 = 3;
    /// A process or thread exit.
    pub const EXIT: u32 = 4;
    /// A fork.
    pub const FORK: u32 = 7;
    /// A sample.
    pub const SAMPLE: u32 = 9;
    /// A memory mapping with more detail (`PERF_RECORD_MMAP2`).
    pub const MMAP2: u32 = 10;
    /// New data in the AUX area (`PERF_RECORD_AUX`).
    pub const AUX: u32 = 11;
    /// Instruction trace started for a thread.
    pub const ITRACE_START: u32 = 12;
    /// A context switch of the traced thread.
    pub const SWITCH: u32 = 14;
    /// A context switch, CPU-wide.
    pub const SWITCH_CPU_WIDE: u32 = 15;
    /// The hardware ID of an AUX data source (`PERF_RECORD_AUX_OUTPUT_HW_ID`).
    pub const AUX_OUTPUT_HW_ID: u32 = 21;
    /// An event attribute (pipe mode).
    pub const HEADER_ATTR: u32 = 64;
    /// The end of a round of records.
    pub const FINISHED_ROUND: u32 = 68;
    /// Event IDs to CPU and thread.
    pub const ID_INDEX: u32 = 69;
    /// The AUX area's decoder configuration.
    pub const AUXTRACE_INFO: u32 = 70;
    /// A buffer of AUX area data, which follows the record.
    pub const AUXTRACE: u32 = 71;
    /// A header feature (pipe mode).
    pub const HEADER_FEATURE: u32 = 80;
}

/// `misc` bit of MMAP: a data (not executable) mapping; of COMM: the
/// name comes from an exec; of SWITCH: a switch out.
pub const MISC_2000: u16 = 0x2000;
/// `misc` bit of MMAP2: a build ID replaces the device and inode numbers.
pub const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// The sample fields at the end of a non-sample record (when the
/// attribute's `sample_id_all` is set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleId {
    /// Process and thread IDs.
    pub tid: Option<(u32, u32)>,
    /// Time stamp.
    pub time: Option<u64>,
    /// Event ID.
    pub id: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
}

/// A memory mapping (MMAP or MMAP2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mmap {
    /// Process ID (`u32::MAX` for the kernel).
    pub pid: u32,
    /// Thread ID.
    pub tid: u32,
    /// Address of the first mapped byte.
    pub start: u64,
    /// Length of the mapping.
    pub len: u64,
    /// Offset in the file of the first mapped byte.
    pub pgoff: u64,
    /// Whether the mapping is executable.
    pub exec: bool,
    /// Protection bits (MMAP2).
    pub prot: Option<u32>,
    /// Build ID (MMAP2 with a build ID).
    pub build_id: Option<Vec<u8>>,
    /// The mapped file's name.
    pub filename: String,
}

/// A process or thread that started or ended (FORK, EXIT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// Process ID.
    pub pid: u32,
    /// Parent process ID.
    pub ppid: u32,
    /// Thread ID.
    pub tid: u32,
    /// Parent thread ID.
    pub ptid: u32,
    /// Time.
    pub time: u64,
}

/// New data in the AUX area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aux {
    /// Offset in the AUX area.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// Flags ([`Aux::TRUNCATED`], [`Aux::OVERWRITE`], [`Aux::PARTIAL`],
    /// [`Aux::COLLISION`], and [`Aux::RAW`] in the format bits).
    pub flags: u64,
}

impl Aux {
    /// The buffer wrapped: data was lost before this.
    pub const TRUNCATED: u64 = 0x01;
    /// Snapshot mode: the data was overwritten.
    pub const OVERWRITE: u64 = 0x02;
    /// A partial record.
    pub const PARTIAL: u64 = 0x04;
    /// A sample collided with another.
    pub const COLLISION: u64 = 0x08;
    /// CoreSight: the data is one source's bytes, not formatter frames.
    pub const RAW: u64 = 0x100;
}

/// A buffer of AUX area data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Auxtrace {
    /// Bytes of trace that follow the record.
    pub size: u64,
    /// Offset in the AUX area.
    pub offset: u64,
    /// A reference (time or sequence) given by the recorder.
    pub reference: u64,
    /// The AUX area's index (one per CPU, or per thread).
    pub idx: u32,
    /// The thread (per-thread recordings).
    pub tid: u32,
    /// The CPU (`u32::MAX` when unknown).
    pub cpu: u32,
    /// File offset of the trace's first byte.
    pub data: u64,
}

/// What a record holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Body {
    /// MMAP or MMAP2.
    Mmap(Mmap),
    /// COMM: a thread's command name.
    Comm {
        /// Process ID.
        pid: u32,
        /// Thread ID.
        tid: u32,
        /// The name.
        comm: String,
        /// Set by an exec.
        exec: bool,
    },
    /// FORK.
    Fork(Task),
    /// EXIT.
    Exit(Task),
    /// AUX.
    Aux(Aux),
    /// ITRACE_START.
    ItraceStart {
        /// Process ID.
        pid: u32,
        /// Thread ID.
        tid: u32,
    },
    /// SWITCH or SWITCH_CPU_WIDE.
    Switch {
        /// Switched out (else in).
        out: bool,
        /// CPU-wide: the process and thread switched to or from.
        other: Option<(u32, u32)>,
    },
    /// AUX_OUTPUT_HW_ID.
    HwId(u64),
    /// AUXTRACE_INFO: the type and the words after it.
    AuxtraceInfo {
        /// The AUX area type (3 for CoreSight ETM).
        kind: u32,
        /// The words.
        words: Vec<u64>,
    },
    /// AUXTRACE.
    Auxtrace(Auxtrace),
    /// HEADER_ATTR (pipe mode).
    Attr(Attr),
    /// HEADER_FEATURE (pipe mode): the feature and its data.
    Feature {
        /// The feature's number.
        id: u64,
        /// Where its data lies.
        data: Section,
    },
    /// Any other record.
    Other,
}

/// One record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// File offset of the record.
    pub offset: u64,
    /// Its type.
    pub kind: u32,
    /// Its `misc` bits.
    pub misc: u16,
    /// Its size as its header gives it (for AUXTRACE, without the data).
    pub size: u16,
    /// What it holds.
    pub body: Body,
    /// Its sample fields.
    pub sample: SampleId,
}

/// Size of the sample fields `sample_type` puts at the end of a
/// non-sample record.
fn sample_id_size(sample_type: u64) -> usize {
    [
        (sample::TID, 8),
        (sample::TIME, 8),
        (sample::ID, 8),
        (sample::STREAM_ID, 8),
        (sample::CPU, 8),
        (sample::IDENTIFIER, 8),
    ]
    .iter()
    .filter(|(bit, _)| sample_type & bit != 0)
    .map(|(_, n)| n)
    .sum()
}

/// The sample type that describes the sample fields of `body` (the bytes
/// after the record header), from the attributes.
fn sample_type_of(body: &[u8], attrs: &[Attr]) -> Option<u64> {
    let first = attrs.iter().find(|a| a.sample_id_all())?;
    if first.sample_type & sample::IDENTIFIER != 0 && body.len() >= 8 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&body[body.len() - 8..]);
        let id = u64::from_le_bytes(a);
        if let Some(attr) = attrs.iter().find(|a| a.ids.contains(&id)) {
            return Some(attr.sample_type);
        }
    }
    Some(first.sample_type)
}

fn read_sample_id(bytes: &[u8], sample_type: u64, offset: u64) -> Result<SampleId, PerfError> {
    let mut c = Cursor::new(bytes, offset);
    let mut s = SampleId::default();
    if sample_type & sample::TID != 0 {
        s.tid = Some((c.u32("pid")?, c.u32("tid")?));
    }
    if sample_type & sample::TIME != 0 {
        s.time = Some(c.u64("time")?);
    }
    if sample_type & sample::ID != 0 {
        s.id = Some(c.u64("id")?);
    }
    if sample_type & sample::STREAM_ID != 0 {
        c.u64("stream id")?;
    }
    if sample_type & sample::CPU != 0 {
        s.cpu = Some(c.u32("cpu")?);
        c.u32("reserved")?;
    }
    if sample_type & sample::IDENTIFIER != 0 {
        s.id = Some(c.u64("identifier")?);
    }
    Ok(s)
}

/// Read the records of the data section `data` of `file`. In pipe mode,
/// the attributes arrive as records and are appended to `attrs`.
///
/// # Errors
///
/// [`PerfError`] for a record whose size is too small or reaches past the
/// data section, an AUXTRACE record whose trace is not all in the file,
/// or a record too short for what its type holds.
pub fn read_records(
    file: &[u8],
    data: Section,
    attrs: &mut Vec<Attr>,
) -> Result<Vec<Record>, PerfError> {
    let bytes = data.of(file, "the data section")?;
    let mut c = Cursor::new(bytes, data.offset);
    let mut records = Vec::new();
    while c.left() > 0 {
        let offset = c.offset();
        let mut h = c.clone();
        let kind = h.u32("a record's type")?;
        let misc = h.u16("a record's misc bits")?;
        let rsize = h.u16("a record's size")?;
        if rsize < 8 {
            return Err(PerfError::Bad {
                offset,
                what: format!("record of type {kind} with size {rsize}: smaller than its header"),
            });
        }
        let whole = c.take(usize::from(rsize), &format!("record of type {kind}"))?;
        let body = &whole[8..];
        let (body_bytes, sample) = split_sample(kind, body, attrs, offset)?;
        let head = Head { offset, kind, misc };
        let parsed = read_body(head, body, body_bytes, &mut c, attrs)?;
        records.push(Record {
            offset,
            kind,
            misc,
            size: rsize,
            body: parsed,
            sample,
        });
    }
    Ok(records)
}

/// The header fields of a record.
#[derive(Clone, Copy)]
struct Head {
    /// File offset of the record.
    offset: u64,
    /// Its type.
    kind: u32,
    /// Its misc bits.
    misc: u16,
}

/// The body of a record of type `kind` (past its 8-byte header, at file
/// offset `offset`) split into what its type holds and the sample fields
/// that end it (for the non-sample kernel records, when the attribute
/// asks for `sample_id_all`).
fn split_sample<'b>(
    kind: u32,
    body: &'b [u8],
    attrs: &[Attr],
    offset: u64,
) -> Result<(&'b [u8], SampleId), PerfError> {
    if !matches!(kind, 1..=63) || kind == kind::SAMPLE {
        return Ok((body, SampleId::default()));
    }
    let Some(st) = sample_type_of(body, attrs) else {
        return Ok((body, SampleId::default()));
    };
    let n = sample_id_size(st);
    if n > body.len() {
        return Err(PerfError::Bad {
            offset,
            what: format!(
                "record of type {kind}: {} bytes, too short for its {n} bytes of sample fields",
                body.len() + 8
            ),
        });
    }
    let (b, s) = body.split_at(body.len() - n);
    Ok((b, read_sample_id(s, st, offset + 8 + b.len() as u64)?))
}

/// What a record holds: `body` is all of it past the header,
/// `body_bytes` the part before the sample fields; an AUXTRACE record's
/// trace, which follows it, is taken from `c`.
fn read_body(
    head: Head,
    body: &[u8],
    body_bytes: &[u8],
    c: &mut Cursor<'_>,
    attrs: &mut Vec<Attr>,
) -> Result<Body, PerfError> {
    let Head { offset, kind, misc } = head;
    let mut b = Cursor::new(body_bytes, offset + 8);
    Ok(match kind {
        kind::MMAP | kind::MMAP2 => Body::Mmap(read_mmap(&mut b, kind, misc)?),
        kind::COMM => Body::Comm {
            pid: b.u32("COMM pid")?,
            tid: b.u32("COMM tid")?,
            comm: c_string(b.rest()),
            exec: misc & MISC_2000 != 0,
        },
        kind::FORK | kind::EXIT => {
            let t = Task {
                pid: b.u32("pid")?,
                ppid: b.u32("ppid")?,
                tid: b.u32("tid")?,
                ptid: b.u32("ptid")?,
                time: b.u64("time")?,
            };
            if kind == kind::FORK {
                Body::Fork(t)
            } else {
                Body::Exit(t)
            }
        }
        kind::AUX => Body::Aux(Aux {
            offset: b.u64("AUX offset")?,
            size: b.u64("AUX size")?,
            flags: b.u64("AUX flags")?,
        }),
        kind::ITRACE_START => Body::ItraceStart {
            pid: b.u32("ITRACE_START pid")?,
            tid: b.u32("ITRACE_START tid")?,
        },
        kind::SWITCH => Body::Switch {
            out: misc & MISC_2000 != 0,
            other: None,
        },
        kind::SWITCH_CPU_WIDE => Body::Switch {
            out: misc & MISC_2000 != 0,
            other: Some((b.u32("pid")?, b.u32("tid")?)),
        },
        kind::AUX_OUTPUT_HW_ID => Body::HwId(b.u64("the hardware ID")?),
        kind::HEADER_ATTR => {
            let attr = read_attr_record(body, offset)?;
            attrs.push(attr.clone());
            Body::Attr(attr)
        }
        kind::AUXTRACE_INFO => {
            let k = b.u32("the AUX area type")?;
            b.u32("reserved")?;
            Body::AuxtraceInfo {
                kind: k,
                words: u64_words(b.rest()),
            }
        }
        kind::AUXTRACE => Body::Auxtrace(read_auxtrace(&mut b, c, offset)?),
        kind::HEADER_FEATURE => {
            let id = b.u64("the feature number")?;
            Body::Feature {
                id,
                data: Section {
                    offset: b.offset(),
                    size: b.left() as u64,
                },
            }
        }
        _ => Body::Other,
    })
}

/// The little-endian 64-bit words of `bytes` (a partial last word left
/// out).
fn u64_words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|w| {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            u64::from_le_bytes(a)
        })
        .collect()
}

/// The attribute of a pipe-mode attribute record (`body` past the
/// header, at file offset `offset + 8`) and the event IDs after it.
fn read_attr_record(body: &[u8], offset: u64) -> Result<Attr, PerfError> {
    let attr_size = if body.len() >= 8 {
        u32::from_le_bytes([body[4], body[5], body[6], body[7]]) as usize
    } else {
        0
    };
    if attr_size < 8 || attr_size > body.len() {
        return Err(PerfError::Bad {
            offset,
            what: format!(
                "attribute record: attribute size {attr_size} does not fit its {} bytes",
                body.len()
            ),
        });
    }
    let mut attr = Attr::parse(&body[..attr_size], offset + 8)?;
    attr.ids = u64_words(&body[attr_size..]);
    Ok(attr)
}

/// An AUXTRACE record's fields from `b`; its trace, which follows the
/// record, is taken from `c` (refused when not all of it is there).
fn read_auxtrace(
    b: &mut Cursor<'_>,
    c: &mut Cursor<'_>,
    offset: u64,
) -> Result<Auxtrace, PerfError> {
    let a = Auxtrace {
        size: b.u64("AUXTRACE size")?,
        offset: b.u64("AUXTRACE offset")?,
        reference: b.u64("AUXTRACE reference")?,
        idx: b.u32("AUXTRACE idx")?,
        tid: b.u32("AUXTRACE tid")?,
        cpu: b.u32("AUXTRACE cpu")?,
        data: c.offset(),
    };
    let n = size(a.size, offset, "AUXTRACE data")?;
    if n > c.left() {
        return Err(PerfError::MissingAuxData {
            offset,
            size: a.size,
            have: c.left() as u64,
        });
    }
    c.take(n, "AUXTRACE data")?;
    Ok(a)
}

fn read_mmap(b: &mut Cursor<'_>, kind: u32, misc: u16) -> Result<Mmap, PerfError> {
    let pid = b.u32("mmap pid")?;
    let tid = b.u32("mmap tid")?;
    let start = b.u64("mmap start")?;
    let len = b.u64("mmap length")?;
    let pgoff = b.u64("mmap offset")?;
    let (prot, build_id) = if kind == kind::MMAP2 {
        let build_id = if misc & MISC_MMAP_BUILD_ID != 0 {
            let n = usize::from(b.u8("build ID size")?).min(20);
            b.take(3, "reserved")?;
            let id = b.take(20, "build ID")?;
            b.take(4, "reserved")?;
            Some(id[..n].to_vec())
        } else {
            b.take(24, "device and inode numbers")?;
            None
        };
        let prot = b.u32("mmap prot")?;
        b.u32("mmap flags")?;
        (Some(prot), build_id)
    } else {
        (None, None)
    };
    let exec = match prot {
        Some(p) => p & 4 != 0,
        None => misc & MISC_2000 == 0,
    };
    Ok(Mmap {
        pid,
        tid,
        start,
        len,
        pgoff,
        exec,
        prot,
        build_id,
        filename: c_string(b.rest()),
    })
}
