//! Writing perf.data recordings of ETMv3/PTM trace, as Linux `perf record
//! -e cs_etm//` lays them out: a file header (or a pipe header), one event
//! attribute, COMM and MMAP2 records, PERF_RECORD_AUXTRACE_INFO with one
//! ETMv3/PTM block per CPU, AUX records and AUXTRACE buffers holding the
//! trace, and the header features (host, command line, AUXTRACE index).
//! Used to turn captures into recordings for tests.

/// The `cs_etm` PMU type number written in the attribute and in
/// AUXTRACE_INFO.
pub const PMU_TYPE: u32 = 8;

/// One CPU's trace source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerfSource {
    /// The CPU.
    pub cpu: u32,
    /// Its trace ID.
    pub trace_id: u8,
    /// The ETMCR word (the event's configuration; its option bits are
    /// ETMCR's).
    pub etmcr: u32,
    /// ETMCCER.
    pub etmccer: u32,
    /// ETMIDR.
    pub etmidr: u32,
}

/// One drain of the trace sink: an AUX record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuxPiece {
    /// Its trace bytes.
    pub data: Vec<u8>,
    /// The sink wrapped before it (trace was lost): the AUX record's
    /// truncated flag.
    pub truncated: bool,
}

/// One AUXTRACE buffer: the pieces that perf read from the AUX area at
/// once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuxBuffer {
    /// The CPU of a per-CPU recording; `None` for a per-thread one.
    pub cpu: Option<u32>,
    /// A per-thread recording's thread whose trace the buffer holds;
    /// `None`: the main thread ([`PerfSpec::pid`]).
    pub tid: Option<u32>,
    /// Its pieces, in order.
    pub pieces: Vec<AuxPiece>,
}

/// An executable mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfMmap {
    /// Address of the first mapped byte.
    pub start: u64,
    /// Length.
    pub len: u64,
    /// Offset in the file of the first mapped byte.
    pub pgoff: u64,
    /// The file's path as the recording machine knew it.
    pub filename: String,
}

/// A thread started after the traced process ([`PerfSpec::pid`]): a
/// FORK record, then COMM (an exec for a new process), then its
/// mappings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfTask {
    /// Its process: a new process (forked from [`PerfSpec::pid`], then
    /// its COMM marked as an exec) when equal to `tid`, else a thread of
    /// that process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// Its command name.
    pub comm: String,
    /// A new process's executable mappings.
    pub mmaps: Vec<PerfMmap>,
}

/// A recording to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfSpec {
    /// The trace sources, one per CPU.
    pub sources: Vec<PerfSource>,
    /// AUXTRACE_INFO header version: 0 (no parameter counts), 1 or 2.
    pub version: u64,
    /// Version 2: the trace IDs are given by AUX_OUTPUT_HW_ID records
    /// (one per CPU), AUXTRACE_INFO marks them unset.
    pub hw_id_records: bool,
    /// The AUX data is one source's bytes, not CoreSight frames (AUX
    /// records' format flag).
    pub raw: bool,
    /// Written to a pipe: a 16-byte header, the attribute and features as
    /// records, no AUXTRACE index.
    pub piped: bool,
    /// Write the HEADER_AUXTRACE index feature.
    pub index: bool,
    /// The traced process and thread.
    pub pid: u32,
    /// Its command name.
    pub comm: String,
    /// Its executable mappings.
    pub mmaps: Vec<PerfMmap>,
    /// Threads and processes started after it.
    pub tasks: Vec<PerfTask>,
    /// The AUXTRACE buffers.
    pub buffers: Vec<AuxBuffer>,
    /// The event attribute's `config`; `None`: the first source's ETMCR
    /// word, as `perf record` writes it. (Linux perf 6.1 decodes a
    /// per-thread recording only when bit 28, timestamps, is clear here;
    /// the AUXTRACE_INFO words keep ETMCR, which says how to parse.)
    pub attr_config: Option<u64>,
}

/// Overwrite the first 16 bytes of `data` (or fewer) with four
/// 0x7FFFFFFF words, the barrier the ETB, ETF and ETR drivers write at
/// the start of the data after the buffer wrapped.
pub fn insert_barrier(data: &mut [u8]) {
    for (i, b) in data.iter_mut().take(16).enumerate() {
        *b = if i % 4 == 3 { 0x7F } else { 0xFF };
    }
}

const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_PERIOD: u64 = 1 << 8;
const SAMPLE_IDENTIFIER: u64 = 1 << 16;
/// The attribute's flags: exclude_kernel (5), mmap (8), comm (9), task
/// (13), sample_id_all (18).
const ATTR_FLAGS: u64 = (1 << 5) | (1 << 8) | (1 << 9) | (1 << 13) | (1 << 18);
const ATTR_SIZE: u32 = 128;
/// The event ID of the attribute.
const EVENT_ID: u64 = 42;

struct Out(Vec<u8>);

impl Out {
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

/// A record: header, body, then the sample fields (pid, tid, cpu, the
/// event ID).
fn record(
    out: &mut Out,
    kind: u32,
    misc: u16,
    body: &[u8],
    sample: Option<(u32, u32, Option<u32>)>,
) {
    let extra = match sample {
        Some((_, _, Some(_))) => 24,
        Some(_) => 16,
        None => 0,
    };
    let size = 8 + body.len() + extra;
    out.u32(kind);
    out.u16(misc);
    out.u16(u16::try_from(size).unwrap_or(u16::MAX));
    out.bytes(body);
    if let Some((pid, tid, cpu)) = sample {
        out.u32(pid);
        out.u32(tid);
        if let Some(cpu) = cpu {
            out.u32(cpu);
            out.u32(0);
        }
        out.u64(EVENT_ID);
    }
}

/// The body of an MMAP2 record of `m` in process `pid`, thread `tid`.
fn mmap_body(pid: u32, tid: u32, m: &PerfMmap) -> Vec<u8> {
    let mut b = Out(Vec::new());
    b.u32(pid);
    b.u32(tid);
    b.u64(m.start);
    b.u64(m.len);
    b.u64(m.pgoff);
    b.u32(0); // maj
    b.u32(0); // min
    b.u64(0); // ino
    b.u64(0); // ino generation
    b.u32(5); // PROT_READ | PROT_EXEC
    b.u32(2); // MAP_PRIVATE
    b.bytes(&padded(&m.filename));
    b.0
}

/// A NUL-terminated string padded to 8 bytes.
fn padded(s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    while b.len() % 8 != 0 {
        b.push(0);
    }
    b
}

/// The attribute; its samples hold the CPU in a per-CPU recording only
/// (as `perf record` does: perf 6.1 matches a per-thread AUX record to
/// its buffer only when the record gives no CPU).
fn attr_bytes(config: u64, per_cpu: bool) -> Vec<u8> {
    let mut a = Out(Vec::new());
    a.u32(PMU_TYPE);
    a.u32(ATTR_SIZE);
    a.u64(config);
    a.u64(1); // sample period
    let cpu = if per_cpu { SAMPLE_CPU } else { 0 };
    a.u64(SAMPLE_IP | SAMPLE_TID | cpu | SAMPLE_PERIOD | SAMPLE_IDENTIFIER);
    a.u64(0); // read format
    a.u64(ATTR_FLAGS);
    while a.0.len() < ATTR_SIZE as usize {
        a.0.push(0);
    }
    a.0
}

fn info_words(spec: &PerfSpec) -> Vec<u64> {
    let mut w = vec![
        spec.version,
        (u64::from(PMU_TYPE) << 32) | spec.sources.len() as u64,
        0,
    ];
    for s in &spec.sources {
        w.push(0x3030_3030_3030_3030);
        w.push(u64::from(s.cpu));
        if spec.version > 0 {
            w.push(4);
        }
        let id = if spec.hw_id_records {
            u64::from(s.trace_id) | (1 << 31)
        } else {
            u64::from(s.trace_id)
        };
        w.extend([
            u64::from(s.etmcr),
            id,
            u64::from(s.etmccer),
            u64::from(s.etmidr),
        ]);
    }
    w
}

/// Feature sections written: (number, bytes).
fn features(spec: &PerfSpec, index: &[(u64, u64)]) -> Vec<(u32, Vec<u8>)> {
    let string = |s: &str| {
        let mut o = Out(Vec::new());
        let p = padded(s);
        o.u32(p.len() as u32);
        o.bytes(&p);
        o.0
    };
    let mut f = vec![
        (3, string("trace-encode")),
        (4, string("6.1.0")),
        (5, string("6.1")),
        (6, string("armv7l")),
    ];
    let mut n = Out(Vec::new());
    n.u32(spec.sources.len() as u32);
    n.u32(spec.sources.len() as u32);
    f.push((7, n.0));
    let mut c = Out(Vec::new());
    let words = ["perf", "record", "-e", "cs_etm//", &spec.comm];
    c.u32(words.len() as u32);
    for w in words {
        c.bytes(&string(w));
    }
    f.push((11, c.0));
    if spec.index && !spec.piped {
        let mut i = Out(Vec::new());
        i.u64(index.len() as u64);
        for &(o, s) in index {
            i.u64(o);
            i.u64(s);
        }
        f.push((18, i.0));
    }
    f
}

/// The bytes of the recording `spec` describes.
#[must_use]
pub fn write_perf_data(spec: &PerfSpec) -> Vec<u8> {
    let header_size: u64 = if spec.piped { 16 } else { 104 };
    let mut out = Out(Vec::new());
    out.bytes(b"PERFILE2");
    out.u64(header_size);
    if !spec.piped {
        out.0.resize(104, 0);
    }
    let config = spec
        .attr_config
        .unwrap_or_else(|| spec.sources.first().map_or(0, |s| u64::from(s.etmcr)));
    let per_cpu = spec.buffers.iter().any(|b| b.cpu.is_some());
    // Attribute section (file mode): the attribute, then its ID section.
    let mut attrs_at = 0;
    if !spec.piped {
        let ids_at = out.len();
        out.u64(EVENT_ID);
        attrs_at = out.len();
        out.bytes(&attr_bytes(config, per_cpu));
        out.u64(ids_at);
        out.u64(8);
    }
    let data_at = out.len();
    let pid = spec.pid;
    let sample_cpu = |cpu: Option<u32>| Some((pid, pid, per_cpu.then(|| cpu.unwrap_or(0))));
    if spec.piped {
        let mut b = attr_bytes(config, per_cpu);
        b.extend_from_slice(&EVENT_ID.to_le_bytes());
        record(&mut out, 64, 0, &b, None);
        for (id, bytes) in features(spec, &[]) {
            let mut b = Out(Vec::new());
            b.u64(u64::from(id));
            b.bytes(&bytes);
            record(&mut out, 80, 0, &b.0, None);
        }
    }
    // AUXTRACE_INFO.
    let mut b = Out(Vec::new());
    b.u32(3);
    b.u32(0);
    for w in info_words(spec) {
        b.u64(w);
    }
    record(&mut out, 70, 0, &b.0, None);
    // COMM (exec) and the mappings.
    let mut b = Out(Vec::new());
    b.u32(pid);
    b.u32(pid);
    b.bytes(&padded(&spec.comm));
    record(&mut out, 3, 0x2000, &b.0, sample_cpu(None));
    for m in &spec.mmaps {
        record(&mut out, 10, 2, &mmap_body(pid, pid, m), sample_cpu(None));
    }
    for t in &spec.tasks {
        let task_sample = Some((t.pid, t.tid, per_cpu.then_some(0)));
        // A new process is forked from the traced one and execs; a thread
        // is cloned by its process's main thread.
        let new_process = t.tid == t.pid && t.pid != pid;
        let parent = if new_process { pid } else { t.pid };
        let mut b = Out(Vec::new());
        b.u32(t.pid);
        b.u32(parent);
        b.u32(t.tid);
        b.u32(parent);
        b.u64(0); // time
        record(&mut out, 7, 0, &b.0, task_sample);
        let mut b = Out(Vec::new());
        b.u32(t.pid);
        b.u32(t.tid);
        b.bytes(&padded(&t.comm));
        let exec = if new_process { 0x2000 } else { 0 };
        record(&mut out, 3, exec, &b.0, task_sample);
        for m in &t.mmaps {
            record(&mut out, 10, 2, &mmap_body(t.pid, t.tid, m), task_sample);
        }
    }
    if spec.hw_id_records {
        for s in &spec.sources {
            let mut b = Out(Vec::new());
            b.u64(u64::from(s.trace_id));
            record(&mut out, 21, 0, &b.0, sample_cpu(Some(s.cpu)));
        }
    }
    let mut b = Out(Vec::new());
    b.u32(pid);
    b.u32(pid);
    record(&mut out, 12, 0, &b.0, sample_cpu(None));
    // Per AUX area (CPU, or the thread): the running AUX offset.
    let mut aux_offset: std::collections::BTreeMap<(Option<u32>, Option<u32>), u64> =
        Default::default();
    // A per-thread buffer's thread and its process.
    let task_of = |buf: &AuxBuffer| {
        let tid = buf.tid.unwrap_or(pid);
        let owner = spec
            .tasks
            .iter()
            .find(|t| t.tid == tid)
            .map_or(pid, |t| t.pid);
        (owner, tid)
    };
    // Per-thread recordings: one AUX area per thread, in order of first use.
    let mut areas: Vec<u32> = Vec::new();
    let mut index = Vec::new();
    for (n, buf) in spec.buffers.iter().enumerate() {
        let area = (buf.cpu, buf.tid);
        let start = *aux_offset.get(&area).unwrap_or(&0);
        let (owner, tid) = task_of(buf);
        let aux_sample = match buf.cpu {
            Some(_) => sample_cpu(buf.cpu),
            None => Some((owner, tid, None)),
        };
        let mut at = start;
        for p in &buf.pieces {
            let flags = u64::from(p.truncated) | if spec.raw { 0x100 } else { 0 };
            let mut b = Out(Vec::new());
            b.u64(at);
            b.u64(p.data.len() as u64);
            b.u64(flags);
            record(&mut out, 11, 0, &b.0, aux_sample);
            at += p.data.len() as u64;
        }
        let data: Vec<u8> = buf.pieces.iter().flat_map(|p| p.data.clone()).collect();
        let mut padded_len = data.len();
        while padded_len % 8 != 0 {
            padded_len += 1;
        }
        index.push((out.len(), 48));
        let idx = match buf.cpu {
            Some(c) => spec.sources.iter().position(|s| s.cpu == c).unwrap_or(n) as u32,
            None => {
                if !areas.contains(&tid) {
                    areas.push(tid);
                }
                areas.iter().position(|&t| t == tid).unwrap_or(0) as u32
            }
        };
        let mut b = Out(Vec::new());
        b.u64(padded_len as u64);
        b.u64(start);
        b.u64(n as u64);
        b.u32(idx);
        b.u32(if buf.cpu.is_some() { u32::MAX } else { tid });
        b.u32(buf.cpu.unwrap_or(u32::MAX));
        b.u32(0);
        record(&mut out, 71, 0, &b.0, None);
        out.bytes(&data);
        out.0.resize(out.0.len() + (padded_len - data.len()), 0);
        aux_offset.insert(area, start + data.len() as u64);
    }
    let data_size = out.len() - data_at;
    if !spec.piped {
        let feats = features(spec, &index);
        let table_at = out.len();
        let mut at = table_at + 16 * feats.len() as u64;
        let mut bits = [0u64; 4];
        for (id, bytes) in &feats {
            bits[(*id / 64) as usize] |= 1 << (id % 64);
            out.u64(at);
            out.u64(bytes.len() as u64);
            at += bytes.len() as u64;
        }
        for (_, bytes) in &feats {
            out.bytes(bytes);
        }
        let mut h = Out(Vec::new());
        h.bytes(b"PERFILE2");
        h.u64(104);
        h.u64(u64::from(ATTR_SIZE) + 16);
        h.u64(attrs_at);
        h.u64(u64::from(ATTR_SIZE) + 16);
        h.u64(data_at);
        h.u64(data_size);
        h.u64(0);
        h.u64(0);
        for b in bits {
            h.u64(b);
        }
        out.0[..104].copy_from_slice(&h.0);
    }
    out.0
}
