//! A perf.data recording as an [`Input`]: one capture per piece of AUX
//! data (an AUXTRACE buffer, cut where an AUX record ends inside it), the
//! ETMv3/PTM sources of AUXTRACE_INFO, and the code of the executable
//! mappings as memory: a per-thread buffer's thread ([`Task`], from
//! COMM, FORK, MMAP and ITRACE_START) reads its own process's mappings,
//! a per-CPU buffer those of every process.

use super::auxtrace::{unit_name, CpuBlock, EtmV3, TRACE_ID_UNSET};
use super::records::{Aux, Auxtrace, Body, Mmap, Record};
use super::{PerfData, PerfError};
use crate::input::folder::Folder;
use crate::input::shown::shown;
use crate::input::snapshot::{Device, Dump, Snapshot};
use crate::input::source::{CaptureSpec, Protocol, SourceRegs, SourceSpec, Task};
use crate::input::{Input, InputError, Kind};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use trace_core::frames::FrameMode;
use trace_core::memory::Contents;

/// Where the files a recording mapped are looked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lookup<'a> {
    /// A folder holding them by their absolute path, or by name
    /// (`--symfs`); when given, the paths themselves are not tried.
    pub symfs: Option<&'a Path>,
    /// The build-ID cache (`.build-id/xx/yyyy…` below it).
    pub build_id_cache: Option<&'a Path>,
}

/// Read the perf.data file at `path` and describe its trace, looking for
/// the mapped files as [`Lookup`] says.
///
/// # Errors
///
/// [`InputError::Perf`] when the file cannot be read or is damaged, holds
/// no CoreSight configuration or AUX data, or only trace of units other
/// than ETMv3 and PTM.
pub fn resolve(path: &Path, lookup: Lookup<'_>) -> Result<Input, InputError> {
    let fail = |source: PerfError| InputError::Perf {
        path: path.to_path_buf(),
        source,
    };
    let contents = trace_core::memory::open_regular(path)
        .and_then(|f| Contents::map(&f))
        .map_err(|e| {
            fail(PerfError::Bad {
                offset: 0,
                what: format!("cannot read the file: {e}"),
            })
        })?;
    let perf = PerfData::parse(contents.bytes()).map_err(fail)?;
    let mut notes = Vec::new();
    let (sources, skipped) = sources(&perf).map_err(fail)?;
    let pieces = pieces(&perf, &mut notes);
    if pieces.is_empty() {
        return Err(fail(no_aux_data(&perf)));
    }
    let tasks = tasks(&perf.records);
    let captures: Vec<CaptureSpec> = pieces
        .into_iter()
        .map(|p| capture_of(path, p, &sources, &skipped, &tasks))
        .collect();
    let dumps = dumps(&perf, lookup, &mut notes);
    let snapshot = snapshot_of(path, &captures, &dumps, &tasks, notes)
        .map_err(|what| fail(PerfError::Bad { offset: 0, what }))?;
    Ok(Input {
        kind: Kind::PerfData,
        captures,
        snapshot: Some(snapshot),
        saved: None,
    })
}

/// A source not decoded, and why.
type Skipped = (String, String);

/// The ETMv3 and PTM sources AUXTRACE_INFO describes, in trace ID order,
/// and the CPUs left out with the reason.
///
/// # Errors
///
/// [`PerfError::Bad`] when there is no AUXTRACE_INFO, a register value
/// is beyond 32 bits, or no ETMv3/PTM source is described.
fn sources(perf: &PerfData) -> Result<(Vec<SourceSpec>, Vec<Skipped>), PerfError> {
    let (info_at, info) = perf.cs_etm.clone().ok_or_else(|| PerfError::Bad {
        offset: perf.header.data.offset,
        what: "no AUXTRACE_INFO record: the recording holds no CoreSight trace (record with -e cs_etm//)".into(),
    })?;
    let info = info?;
    let only_cpu = match info.cpus.as_slice() {
        [one] => Some(one.cpu()),
        _ => None,
    };
    let hw_ids = hw_ids(perf, only_cpu);
    let mut sources = Vec::new();
    let mut skipped = Vec::new();
    let mut others = Vec::new();
    for block in &info.cpus {
        match block {
            CpuBlock::EtmV3(e) => match source_of(e, &hw_ids, info_at)? {
                Ok(source) => sources.push(source),
                Err(left_out) => skipped.push(left_out),
            },
            CpuBlock::Other { magic, cpu, .. } => {
                let unit = unit_name(*magic);
                skipped.push((
                    format!("cpu{cpu}"),
                    format!("{unit} trace is not supported (only ETMv3 and PTM)"),
                ));
                others.push(format!("CPU {cpu}: {unit}"));
            }
        }
    }
    if sources.is_empty() {
        let what = if others.is_empty() {
            "AUXTRACE_INFO describes no ETMv3 or PTM source".to_owned()
        } else {
            format!(
                "this recording holds trace this toolkit does not decode ({}); only ETMv3 and PTM are supported",
                others.join(", ")
            )
        };
        return Err(PerfError::Bad {
            offset: info_at,
            what,
        });
    }
    sources.sort_by_key(|s| s.id);
    Ok((sources, skipped))
}

/// The source of an ETMv3/PTM block of AUXTRACE_INFO (at file offset
/// `info_at`), its trace ID from `hw_ids` or the block; the inner `Err`
/// when no trace ID is known (the source is left out).
///
/// # Errors
///
/// [`PerfError::Bad`] when a register value is beyond 32 bits.
fn source_of(
    e: &EtmV3,
    hw_ids: &BTreeMap<u64, u8>,
    info_at: u64,
) -> Result<Result<SourceSpec, Skipped>, PerfError> {
    let protocol = if e.is_ptm() {
        Protocol::Ptm
    } else {
        Protocol::Etmv3
    };
    let name = format!("{} cpu{}", protocol.label(), e.cpu);
    let id = match hw_ids.get(&e.cpu) {
        Some(&id) => Some(id),
        None if e.traceid & TRACE_ID_UNSET != 0 => None,
        None => Some((e.traceid & 0x7F) as u8),
    };
    let Some(id) = id else {
        return Ok(Err((
            name,
            "its trace ID is not in AUXTRACE_INFO and no AUX_OUTPUT_HW_ID record gives it".into(),
        )));
    };
    let word = |v: u64, n: &str| {
        u32::try_from(v).map_err(|_| PerfError::Bad {
            offset: info_at,
            what: format!("AUXTRACE_INFO, CPU {}: {n} {v:#x} is beyond 32 bits", e.cpu),
        })
    };
    Ok(Ok(SourceSpec {
        name,
        id,
        protocol,
        regs: SourceRegs {
            etmcr: word(e.etmcr, "ETMCR")?,
            etmccer: word(e.etmccer, "ETMCCER")?,
            etmidr: word(e.etmidr, "ETMIDR")?,
        },
        core: Some(format!("cpu{}", e.cpu)),
    }))
}

/// Why a recording with no piece of AUX data has none.
fn no_aux_data(perf: &PerfData) -> PerfError {
    let aux = perf
        .records
        .iter()
        .filter(|r| matches!(r.body, Body::Aux(_)))
        .count();
    PerfError::Bad {
        offset: perf.header.data.offset,
        what: format!(
            "no AUX data: no AUXTRACE record holds trace ({aux} AUX records announce data that was not saved)"
        ),
    }
}

/// The capture of one piece of AUX data of the recording at `path`: in
/// frames holding every source, or (raw, from a sink without a
/// formatter) the bytes of the source of the piece's CPU.
fn capture_of(
    path: &Path,
    p: Piece,
    sources: &[SourceSpec],
    skipped: &[Skipped],
    tasks: &Tasks,
) -> CaptureSpec {
    let layout = if p.raw {
        let by_cpu = sources
            .iter()
            .find(|s| s.core.as_deref() == Some(&format!("cpu{}", p.cpu)));
        let id = by_cpu.or(sources.first()).map_or(0, |s| s.id);
        FrameMode::Raw { id }
    } else {
        FrameMode::Memory
    };
    let mut srcs: Vec<SourceSpec> = match layout {
        FrameMode::Raw { id } => sources.iter().filter(|s| s.id == id).cloned().collect(),
        _ => sources.to_vec(),
    };
    let task = (p.cpu == u32::MAX && p.tid != u32::MAX).then(|| tasks.task(p.tid));
    if let Some(t) = &task {
        // The process's own address space: its sources read its memory.
        for s in &mut srcs {
            s.name = process_source(&s.name, t.pid);
        }
    }
    CaptureSpec {
        path: path.to_path_buf(),
        layout,
        sources: srcs,
        any_id: None,
        any_core: None,
        skipped: skipped.to_vec(),
        within: None,
        range: Some((p.start, p.len)),
        task,
        stream: None,
    }
}

/// The name of source `name` reading the memory of process `pid`.
fn process_source(name: &str, pid: u32) -> String {
    format!("{name} pid {pid}")
}

/// CPU to trace ID, from AUX_OUTPUT_HW_ID records (bits 7:0 of the
/// hardware ID, for the CPU of the record's sample fields).
/// A record whose samples carry no CPU (a per-thread recording) counts for
/// the only CPU of a one-CPU recording.
fn hw_ids(perf: &PerfData, only_cpu: Option<u64>) -> BTreeMap<u64, u8> {
    let mut ids = BTreeMap::new();
    for r in &perf.records {
        if let Body::HwId(hw) = &r.body {
            if let Some(cpu) = r.sample.cpu.map(u64::from).or(only_cpu) {
                ids.insert(cpu, (hw & 0x7F) as u8);
            }
        }
    }
    ids
}

/// A piece of AUX data decoded on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// File offset of its first byte.
    pub start: u64,
    /// Bytes.
    pub len: u64,
    /// The CPU of its AUXTRACE buffer (`u32::MAX`: per-thread).
    pub cpu: u32,
    /// The thread of its AUXTRACE buffer (`u32::MAX`: per-CPU).
    pub tid: u32,
    /// One source's bytes, not CoreSight frames.
    pub raw: bool,
}

/// The AUX records of one group of [`Areas`], indexed for the questions
/// [`pieces`] asks about an AUXTRACE buffer: each answer costs a binary
/// search plus what it returns, so a recording with many records is cut
/// in time proportional to its size.
#[derive(Debug, Default)]
struct AuxGroup {
    /// Where each record's data ends, sorted, each once.
    ends: Vec<u64>,
    /// Starts of the records with the truncated flag: those with data,
    /// and those without (which do not reach into a buffer starting there).
    truncated: BTreeSet<u64>,
    truncated_empty: BTreeSet<u64>,
    /// The records with the raw flag by start, each with the largest end
    /// of those up to it.
    raw: Vec<(u64, u64)>,
}

impl AuxGroup {
    fn add(&mut self, aux: &Aux) {
        let end = aux.offset.saturating_add(aux.size);
        self.ends.push(end);
        if aux.flags & Aux::TRUNCATED != 0 {
            if aux.size > 0 {
                self.truncated.insert(aux.offset);
            } else {
                self.truncated_empty.insert(aux.offset);
            }
        }
        if aux.flags & Aux::RAW != 0 {
            self.raw.push((aux.offset, end));
        }
    }

    fn seal(&mut self) {
        self.ends.sort_unstable();
        self.ends.dedup();
        self.raw.sort_unstable();
        let mut reach = 0;
        for r in &mut self.raw {
            reach = reach.max(r.1);
            r.1 = reach;
        }
    }

    /// The ends of records strictly between `lo` and `hi`.
    fn ends_between(&self, lo: u64, hi: u64) -> &[u64] {
        let from = self.ends.partition_point(|&e| e <= lo);
        let to = self.ends.partition_point(|&e| e < hi).max(from);
        examined(to - from);
        &self.ends[from..to]
    }

    /// Whether a record with the truncated flag that reaches into a
    /// buffer starting at `lo` starts at `at` (`at >= lo`).
    fn truncated_at(&self, at: u64, lo: u64) -> bool {
        examined(1);
        self.truncated.contains(&at) || (at > lo && self.truncated_empty.contains(&at))
    }

    /// Whether a record with the raw flag overlaps `lo..hi`.
    fn raw_overlaps(&self, lo: u64, hi: u64) -> bool {
        examined(1);
        let k = self.raw.partition_point(|&(start, _)| start < hi);
        k > 0 && self.raw[k - 1].1 > lo
    }
}

#[cfg(test)]
thread_local! {
    /// AUX records examined by [`pieces`], counted in tests (the cost
    /// that must grow in proportion to the recording).
    static EXAMINED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn examined(n: usize) {
    EXAMINED.with(|c| c.set(c.get() + n));
}

#[cfg(not(test))]
#[inline]
fn examined(_: usize) {}

/// The AUX records of a recording, grouped by what their samples say of
/// their area: an AUX record is about a per-CPU buffer's area when its
/// CPU is that CPU or unknown, about a per-thread buffer's area when its
/// thread is that thread or unknown (or the buffer names no thread).
#[derive(Debug, Default)]
struct Areas {
    by_cpu: BTreeMap<u32, AuxGroup>,
    no_cpu: AuxGroup,
    by_tid: BTreeMap<u32, AuxGroup>,
    no_tid: AuxGroup,
    all: AuxGroup,
}

impl Areas {
    fn new(records: &[Record]) -> Areas {
        let mut areas = Areas::default();
        for r in records {
            let Body::Aux(aux) = &r.body else { continue };
            match r.sample.cpu {
                Some(c) => areas.by_cpu.entry(c).or_default().add(aux),
                None => areas.no_cpu.add(aux),
            }
            match r.sample.tid.map(|(_, tid)| tid) {
                Some(t) => areas.by_tid.entry(t).or_default().add(aux),
                None => areas.no_tid.add(aux),
            }
            areas.all.add(aux);
        }
        let groups = areas.by_cpu.values_mut().chain(areas.by_tid.values_mut());
        for g in groups {
            g.seal();
        }
        areas.no_cpu.seal();
        areas.no_tid.seal();
        areas.all.seal();
        areas
    }

    /// The groups (disjoint) of the AUX records about buffer `a`'s area.
    fn of(&self, a: &Auxtrace) -> Vec<&AuxGroup> {
        let (known, unknown, key) = if a.cpu != u32::MAX {
            (&self.by_cpu, &self.no_cpu, a.cpu)
        } else if a.tid != u32::MAX {
            (&self.by_tid, &self.no_tid, a.tid)
        } else {
            return vec![&self.all];
        };
        let mut groups = vec![unknown];
        groups.extend(known.get(&key));
        groups
    }
}

/// The pieces of AUX data: each AUXTRACE buffer, cut where an AUX record
/// of its area ends inside it (each AUX record is one drain of the trace
/// sink: the trace does not run on across it). A piece that starts where
/// an AUX record with the truncated flag starts follows lost trace: a
/// note says so.
pub fn pieces(perf: &PerfData, notes: &mut Vec<String>) -> Vec<Piece> {
    let areas = Areas::new(&perf.records);
    let mut out = Vec::new();
    for (r, a) in perf.auxtraces() {
        if a.size == 0 {
            continue;
        }
        let groups = areas.of(a);
        // The area's end, as far as the AUX offsets can count (the file
        // holds all `a.size` bytes of trace: `a.data + a.size` cannot
        // overflow).
        let full = a.offset.saturating_add(a.size);
        let raw = groups.iter().any(|g| g.raw_overlaps(a.offset, full));
        let mut end = full;
        // perf pads the data to 8 bytes: the bytes after the last AUX
        // record's data are not trace.
        if let Some(covered) = groups
            .iter()
            .filter_map(|g| g.ends_between(a.offset, end).last().copied())
            .max()
        {
            if end - covered < 8 {
                end = covered;
            }
        }
        let mut cuts: Vec<u64> = groups
            .iter()
            .flat_map(|g| g.ends_between(a.offset, end).iter().copied())
            .collect();
        cuts.push(end);
        cuts.sort_unstable();
        cuts.dedup();
        let mut from = a.offset;
        for cut in cuts {
            if cut <= from {
                continue;
            }
            let start = a.data + (from - a.offset);
            if groups.iter().any(|g| g.truncated_at(from, a.offset)) {
                notes.push(format!(
                    "AUX data at offset {start} (AUXTRACE record at {}, CPU {}): the trace buffer wrapped before it and trace was lost; decoding starts again there",
                    r.offset,
                    cpu_text(a.cpu)
                ));
            }
            out.push(Piece {
                start,
                len: cut - from,
                cpu: a.cpu,
                tid: a.tid,
                raw,
            });
            from = cut;
        }
    }
    out
}

fn cpu_text(cpu: u32) -> String {
    if cpu == u32::MAX {
        "any".into()
    } else {
        cpu.to_string()
    }
}

/// Where a mapped file was looked for.
enum Found {
    /// The file: the folder it was found in (`None`: the file system, by
    /// its own path), its name there, its size.
    At(Option<Folder>, PathBuf, u64),
    /// Nowhere.
    Missing,
    /// Its name (or a link) leads outside `--symfs` or the build-ID
    /// cache: not read.
    Outside,
}

/// The folders of a [`Lookup`], open: a mapped file is opened relative to
/// them, and only when it lies inside, whatever links lie on the way
/// (nothing can swap a link between a check and the open).
struct Roots {
    symfs: Option<Folder>,
    cache: Option<Folder>,
}

impl Roots {
    /// The folders of `lookup` that can be opened (one that cannot holds
    /// nothing to find).
    fn open(lookup: Lookup<'_>) -> Roots {
        Roots {
            symfs: lookup.symfs.and_then(|d| Folder::open(d).ok()),
            cache: lookup.build_id_cache.and_then(|d| Folder::open(d).ok()),
        }
    }
}

/// Where the mapped file `m` is found: under `--symfs`, in the build-ID
/// cache, or (without `--symfs`) at its own path. A name whose `..` parts
/// climb above `--symfs`, or a file under `--symfs` or the cache that is a
/// link leading outside them, is not read.
fn find_file(m: &Mmap, build_id: Option<&str>, lookup: Lookup<'_>, roots: &Roots) -> Found {
    let name = Path::new(&m.filename);
    // (the folder, the name in it)
    let mut tries: Vec<(&Folder, PathBuf)> = Vec::new();
    let mut outside = false;
    if let Some(dir) = &roots.symfs {
        let text = m.filename.trim_start_matches('/');
        match crate::input::folder::relative(text) {
            Some(rel) => tries.push((dir, rel)),
            None => outside = !text.is_empty(),
        }
        if let Some(base) = name.file_name() {
            tries.push((dir, PathBuf::from(base)));
        }
    }
    if let (Some(id), Some(cache)) = (
        build_id.filter(|id| id.len() > 2 && id.bytes().all(|b| b.is_ascii_hexdigit())),
        &roots.cache,
    ) {
        let link = Path::new(".build-id").join(&id[..2]).join(&id[2..]);
        tries.push((cache, link.join("elf")));
        tries.push((cache, link));
    }
    for (dir, rel) in tries {
        match dir.open_file(&rel) {
            Ok(file) => {
                let size = file.metadata().map_or(0, |md| md.len());
                return Found::At(Some(dir.clone()), rel, size);
            }
            Err(e) if crate::input::folder::is_escape(&e) => outside = true,
            Err(_) => {}
        }
    }
    if lookup.symfs.is_none() && name.is_absolute() && name.is_file() {
        // By its own path, as a debugger would: the recording names it.
        if let Ok(real) = std::fs::canonicalize(name) {
            if let (Some(rel), Ok(md)) = (
                real.strip_prefix("/").ok().map(Path::to_path_buf),
                std::fs::metadata(&real),
            ) {
                return Found::At(None, rel, md.len());
            }
        }
    }
    if outside {
        Found::Outside
    } else {
        Found::Missing
    }
}

/// A memory dump of a mapping: the process that mapped it (`u32::MAX`:
/// the kernel), the file offset of its record, the dump.
type Mapped = (u32, u64, Dump);

/// The memory dumps of the executable mappings whose files are found.
fn dumps(perf: &PerfData, lookup: Lookup<'_>, notes: &mut Vec<String>) -> Vec<Mapped> {
    let ids: BTreeMap<&str, String> = perf
        .features
        .build_ids
        .iter()
        .map(|b| (b.filename.as_str(), b.hex()))
        .collect();
    let roots = Roots::open(lookup);
    let mut out = Vec::new();
    let mut missing: BTreeMap<String, u64> = BTreeMap::new();
    let mut outside: BTreeMap<String, u64> = BTreeMap::new();
    for r in &perf.records {
        let Body::Mmap(m) = &r.body else { continue };
        if !m.exec || m.len == 0 {
            continue;
        }
        if m.start.saturating_add(m.len) > 1 << 32 {
            *missing
                .entry(format!("{} (above 4 GiB)", shown(&m.filename)))
                .or_default() += 1;
            continue;
        }
        let id = m
            .build_id
            .as_ref()
            .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>())
            .or_else(|| ids.get(m.filename.as_str()).cloned());
        let (root, file, size) = match find_file(m, id.as_deref(), lookup, &roots) {
            Found::At(root, file, size) => (root, file, size),
            Found::Missing => {
                *missing.entry(shown(&m.filename)).or_default() += 1;
                continue;
            }
            Found::Outside => {
                *outside.entry(shown(&m.filename)).or_default() += 1;
                continue;
            }
        };
        let found = match &root {
            Some(dir) => dir.path().join(&file),
            None => Path::new("/").join(&file),
        };
        if m.pgoff >= size {
            notes.push(format!(
                "{}: mapped from offset {:#x}, past its end ({size} bytes): not used",
                found.display(),
                m.pgoff
            ));
            continue;
        }
        out.push((
            m.pid,
            r.offset,
            Dump {
                path: found,
                file,
                address: m.start,
                length: Some(m.len.min(size - m.pgoff)),
                offset: m.pgoff,
                space: None,
                section: format!("mmap at offset {}", r.offset),
                root,
            },
        ));
    }
    for (name, n) in outside {
        notes.push(format!(
            "{name}: mapped {n} time(s), but the name (or a link it reaches) leads outside {}: not read, code there is not decoded",
            match lookup.symfs {
                Some(d) => format!("--symfs {} and the build-ID cache", d.display()),
                None => "the build-ID cache".into(),
            }
        ));
    }
    for (name, n) in missing {
        notes.push(format!(
            "{name}: mapped {n} time(s) but not found ({}): code there is not decoded",
            match lookup.symfs {
                Some(d) => format!(
                    "looked under --symfs {} and in the build-ID cache",
                    d.display()
                ),
                None =>
                    "give --symfs DIR, run perf archive on the recording machine, or give --elf"
                        .into(),
            }
        ));
    }
    out
}

/// The most executable mappings a recording may hold.
const MAX_MAPPED: usize = 1 << 20;

/// The most processes a process's address space is inherited through
/// (forks without exec): a longer chain is cut there.
const MAX_ANCESTORS: usize = 64;

/// The device holding the kernel's mappings (perf writes them under
/// pid -1): every process's address space lies over it.
const KERNEL: &str = "pid -1 (kernel)";

/// The device holding the mappings of every process, under the cores of
/// per-CPU captures.
const EVERY_PROCESS: &str = "every process";

/// The device holding process `pid`'s own mappings (since its last exec).
fn process_device(pid: u32) -> String {
    format!("pid {pid}")
}

/// The snapshot that stands for the recording: per CPU, a core device
/// reading the mapped files, and the trace source bound to it; a capture
/// of a known thread reads its process's mappings only (a core device per
/// CPU and process). Each mapping is held by one device: a process's
/// device lies over its parent's (up to an exec) or the kernel's
/// ([`Device::under`]), so memory grows with the records, not with the
/// processes times the kernel's mappings.
fn snapshot_of(
    path: &Path,
    captures: &[CaptureSpec],
    dumps: &[Mapped],
    tasks: &Tasks,
    notes: Vec<String>,
) -> Result<Snapshot, String> {
    let folder = Folder::open(Path::new("/"))
        .map_err(|e| format!("cannot open the file system root to read mapped files: {e}"))?;
    if dumps.len() > MAX_MAPPED {
        return Err(format!(
            "the recording holds {} executable mappings, more than {MAX_MAPPED}: not read",
            dumps.len()
        ));
    }
    let mut devices = Vec::new();
    let owned = Owned::new(dumps);
    let device = |name: String, dumps: Vec<Dump>, under: Option<String>| Device {
        name,
        class: "core".into(),
        kind: String::new(),
        regs: Vec::new(),
        dumps,
        file: path.to_path_buf(),
        under,
    };
    let mut processes: BTreeMap<u32, (Option<u32>, usize)> = BTreeMap::new();
    let mut every = false;
    let mut core_sources: Vec<(String, String)> = Vec::new();
    let mut bound: std::collections::HashSet<String> = std::collections::HashSet::new();
    for c in captures {
        for s in &c.sources {
            if !bound.insert(s.name.clone()) {
                continue;
            }
            let core = s.core.clone().unwrap_or_else(|| s.name.clone());
            let (name, under) = match &c.task {
                Some(t) => {
                    tasks.lineage(t.pid, &mut processes);
                    (format!("{core} pid {}", t.pid), process_device(t.pid))
                }
                None => {
                    every = true;
                    (core, EVERY_PROCESS.to_owned())
                }
            };
            devices.push(device(name.clone(), Vec::new(), Some(under)));
            core_sources.push((name, s.name.clone()));
        }
    }
    if every {
        let all = dumps.iter().map(|(_, _, d)| d.clone()).collect();
        devices.push(device(EVERY_PROCESS.into(), all, None));
    }
    if !processes.is_empty() {
        let kernel = owned.of(u32::MAX).iter().map(|&i| dumps[i].2.clone());
        devices.push(device(KERNEL.into(), kernel.collect(), None));
    }
    for (pid, (parent, _)) in processes {
        let under = parent.map_or_else(|| KERNEL.to_owned(), process_device);
        devices.push(device(
            process_device(pid),
            tasks.own(pid, &owned),
            Some(under),
        ));
    }
    Ok(Snapshot {
        dir: path.to_path_buf(),
        folder,
        devices,
        buffers: Vec::new(),
        source_buffers: Vec::new(),
        core_sources,
        timestamp_hz: None,
        notes,
        device_index: Default::default(),
        source_index: Default::default(),
    })
}

/// The threads and processes of a recording, from its COMM, FORK,
/// MMAP and ITRACE_START records.
#[derive(Debug, Default)]
struct Tasks {
    /// Per thread: its process and command name.
    threads: BTreeMap<u32, (u32, String)>,
    /// Per process forked and not (yet) exec'd: the process it was
    /// forked from, whose mappings it shares.
    parent: BTreeMap<u32, u32>,
    /// Per process: the file offset of its last exec (COMM with the exec
    /// flag); mappings before it belong to the program it replaced.
    exec_at: BTreeMap<u32, u64>,
}

/// The threads and processes `records` name.
fn tasks(records: &[Record]) -> Tasks {
    let mut t = Tasks::default();
    for r in records {
        match &r.body {
            Body::Comm {
                pid,
                tid,
                comm,
                exec,
            } => {
                t.threads.insert(*tid, (*pid, comm.clone()));
                if *exec {
                    t.parent.remove(pid);
                    t.exec_at.insert(*pid, r.offset);
                }
            }
            Body::Fork(f) => {
                let comm = t
                    .threads
                    .get(&f.ptid)
                    .map_or_else(|| Task::unnamed_name(f.tid), |(_, c)| c.clone());
                t.threads.insert(f.tid, (f.pid, comm));
                if f.pid != f.ppid {
                    t.parent.insert(f.pid, f.ppid);
                }
            }
            Body::Mmap(Mmap { pid, tid, .. }) | Body::ItraceStart { pid, tid }
                if *pid != u32::MAX =>
            {
                t.threads
                    .entry(*tid)
                    .or_insert_with(|| (*pid, Task::unnamed_name(*tid)));
            }
            _ => {}
        }
    }
    t
}

impl Tasks {
    /// Thread `tid` and its process, named as the recording names them
    /// (`:tid`, as `perf` shows it, when it does not).
    fn task(&self, tid: u32) -> Task {
        let Some((pid, thread)) = self.threads.get(&tid).cloned() else {
            return Task::unnamed(tid);
        };
        let process = self
            .threads
            .get(&pid)
            .map_or_else(|| thread.clone(), |(_, c)| c.clone());
        Task {
            pid,
            tid,
            process,
            thread,
        }
    }

    /// Process `pid` and the processes its address space is inherited
    /// from (forked without exec), each with the one it lies over (`None`:
    /// the kernel's) and how many processes deep that goes, added to
    /// `processes`. A chain that loops back lies over the kernel's where
    /// it would; one deeper than [`MAX_ANCESTORS`] is cut there.
    fn lineage(&self, pid: u32, processes: &mut BTreeMap<u32, (Option<u32>, usize)>) {
        // The processes not seen before, from `pid` up.
        let mut chain: Vec<u32> = Vec::new();
        let mut at = pid;
        while !processes.contains_key(&at) && !chain.contains(&at) {
            chain.push(at);
            match self.parent.get(&at) {
                Some(&p) => at = p,
                None => break,
            }
        }
        for (i, &p) in chain.iter().enumerate().rev() {
            let parent =
                self.parent.get(&p).copied().filter(|q| {
                    *q != u32::MAX && processes.contains_key(q) && !chain[..i].contains(q)
                });
            let depth = parent.map_or(1, |q| processes[&q].1 + 1);
            let entry = if depth > MAX_ANCESTORS {
                (None, 1)
            } else {
                (parent, depth)
            };
            processes.insert(p, entry);
        }
    }

    /// The dumps process `pid` mapped since its last exec, in the order
    /// of their records.
    fn own(&self, pid: u32, owned: &Owned<'_>) -> Vec<Dump> {
        if pid == u32::MAX {
            // The kernel's device holds them.
            return Vec::new();
        }
        let exec = self.exec_at.get(&pid);
        owned
            .of(pid)
            .iter()
            .filter(|&&i| exec.is_none_or(|&e| owned.dumps[i].1 > e))
            .map(|&i| owned.dumps[i].2.clone())
            .collect()
    }
}

/// The mapped dumps by the process that mapped them (positions in the
/// list), so that each process's address space is made from its own
/// (a recording of thousands of processes made it quadratic).
struct Owned<'a> {
    dumps: &'a [Mapped],
    by_owner: BTreeMap<u32, Vec<usize>>,
}

impl<'a> Owned<'a> {
    fn new(dumps: &'a [Mapped]) -> Owned<'a> {
        let mut by_owner: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, (owner, _, _)) in dumps.iter().enumerate() {
            by_owner.entry(*owner).or_default().push(i);
        }
        Owned { dumps, by_owner }
    }

    fn of(&self, owner: u32) -> &[usize] {
        self.by_owner.get(&owner).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::perf::records::{SampleId, Task as Fork};

    fn record(offset: u64, body: Body) -> Record {
        Record {
            offset,
            kind: 0,
            misc: 0,
            size: 0,
            body,
            sample: SampleId::default(),
        }
    }

    fn comm(offset: u64, pid: u32, tid: u32, name: &str, exec: bool) -> Record {
        record(
            offset,
            Body::Comm {
                pid,
                tid,
                comm: name.into(),
                exec,
            },
        )
    }

    fn fork(offset: u64, pid: u32, ppid: u32, tid: u32, ptid: u32) -> Record {
        record(
            offset,
            Body::Fork(Fork {
                pid,
                ppid,
                tid,
                ptid,
                time: 0,
            }),
        )
    }

    fn dump(name: &str) -> Dump {
        Dump {
            path: PathBuf::from(name),
            file: PathBuf::from(name),
            address: 0,
            length: None,
            offset: 0,
            space: None,
            section: String::new(),
            root: None,
        }
    }

    /// A shell (10) forks a child (20) that execs `app`, whose main thread
    /// clones a worker (21); thread 30 is only known from ITRACE_START.
    fn records() -> Vec<Record> {
        vec![
            comm(0, 10, 10, "sh", true),
            fork(10, 20, 10, 20, 10),
            comm(20, 20, 20, "app", true),
            fork(30, 20, 20, 21, 20),
            fork(40, 40, 10, 40, 10),
            record(50, Body::ItraceStart { pid: 30, tid: 30 }),
        ]
    }

    #[test]
    fn threads_take_their_names_as_linux_gives_them() {
        let t = tasks(&records());
        let task = |tid| {
            let x = t.task(tid);
            (x.pid, x.process, x.thread)
        };
        assert_eq!(task(20), (20, "app".into(), "app".into()));
        // A clone without COMM keeps its parent thread's name.
        assert_eq!(task(21), (20, "app".into(), "app".into()));
        // A fork without exec too.
        assert_eq!(task(40), (40, "sh".into(), "sh".into()));
        // Named nowhere: `:tid`, as perf shows it.
        assert_eq!(task(30), (30, ":30".into(), ":30".into()));
        assert_eq!(task(99), (99, ":99".into(), ":99".into()));
    }

    /// The dumps process `pid`'s address space reads, the lowest layer
    /// first: the kernel's, then each process's own from the oldest
    /// ancestor down.
    fn view(t: &Tasks, pid: u32, dumps: &[Mapped]) -> Vec<String> {
        let owned = Owned::new(dumps);
        let mut processes = BTreeMap::new();
        t.lineage(pid, &mut processes);
        let mut layers = vec![pid];
        while let Some(&(Some(p), _)) = processes.get(layers.last().expect("one")) {
            layers.push(p);
        }
        let mut names: Vec<String> = owned
            .of(u32::MAX)
            .iter()
            .map(|&i| dumps[i].2.path.display().to_string())
            .collect();
        for p in layers.iter().rev() {
            names.extend(
                t.own(*p, &owned)
                    .iter()
                    .map(|d| d.path.display().to_string()),
            );
        }
        names
    }

    #[test]
    fn a_process_maps_its_own_code_its_parents_until_exec_and_the_kernels() {
        let t = tasks(&records());
        let dumps = vec![
            (10, 5, dump("sh")),
            (20, 15, dump("before-exec")),
            (20, 25, dump("app")),
            (40, 45, dump("forked")),
            (u32::MAX, 1, dump("kernel")),
        ];
        assert_eq!(view(&t, 20, &dumps), ["kernel", "app"]);
        assert_eq!(view(&t, 40, &dumps), ["kernel", "sh", "forked"]);
        assert_eq!(view(&t, 10, &dumps), ["kernel", "sh"]);
    }

    /// Forks that loop (a recording can say anything) or run deeper than
    /// [`MAX_ANCESTORS`] end in the kernel's mappings, each process named
    /// once, whichever process is looked at first.
    #[test]
    fn fork_chains_that_loop_or_run_deep_are_cut() {
        let mut recs = vec![
            fork(0, 1, 3, 1, 3),
            fork(1, 2, 1, 2, 1),
            fork(2, 3, 2, 3, 2),
        ];
        for i in 0..200u32 {
            recs.push(fork(
                10 + u64::from(i),
                1001 + i,
                1000 + i,
                1001 + i,
                1000 + i,
            ));
        }
        let t = tasks(&recs);
        for start in [1, 2, 3] {
            let mut processes = BTreeMap::new();
            t.lineage(start, &mut processes);
            assert_eq!(processes.len(), 3);
            assert_eq!(processes.values().filter(|(p, _)| p.is_none()).count(), 1);
            assert!(processes.values().all(|&(_, d)| (1..=3).contains(&d)));
        }
        let mut processes = BTreeMap::new();
        for pid in [1100, 1200, 1050] {
            t.lineage(pid, &mut processes);
        }
        assert_eq!(processes.len(), 201, "1000 to 1200, once each");
        for (pid, &(parent, depth)) in &processes {
            assert!((1..=MAX_ANCESTORS).contains(&depth), "{pid}: {depth}");
            let below = parent.map_or(0, |p| processes[&p].1);
            assert_eq!(depth, below + 1, "{pid}");
        }
    }

    /// A recording of `n` drains of 160 bytes, in `buffers` AUXTRACE
    /// buffers (of one CPU); the pieces cut and the AUX records examined.
    fn cut(n: usize, one_buffer: bool) -> (Vec<Piece>, usize) {
        use trace_encode::perf::{write_perf_data, AuxBuffer, AuxPiece, PerfSource, PerfSpec};
        let piece = |i: usize| AuxPiece {
            data: vec![(i % 251) as u8; 160],
            truncated: i % 7 == 3,
        };
        let buffers = if one_buffer {
            vec![AuxBuffer {
                cpu: Some(0),
                tid: None,
                pieces: (0..n).map(piece).collect(),
            }]
        } else {
            (0..n)
                .map(|i| AuxBuffer {
                    cpu: Some(0),
                    tid: None,
                    pieces: vec![piece(i)],
                })
                .collect()
        };
        let bytes = write_perf_data(&PerfSpec {
            sources: vec![PerfSource {
                cpu: 0,
                trace_id: 0x10,
                etmcr: 0x1000,
                etmccer: 0,
                etmidr: 0x4114_F250,
            }],
            version: 1,
            hw_id_records: false,
            raw: false,
            piped: false,
            index: true,
            pid: 1,
            comm: "app".into(),
            mmaps: Vec::new(),
            tasks: Vec::new(),
            buffers,
            attr_config: None,
        });
        let perf = PerfData::parse(&bytes).expect("perf.data");
        EXAMINED.with(|c| c.set(0));
        let mut notes = Vec::new();
        let pieces = pieces(&perf, &mut notes);
        assert_eq!(notes.len(), (0..n).filter(|i| i % 7 == 3).count());
        (pieces, EXAMINED.with(std::cell::Cell::get))
    }

    #[test]
    fn cutting_a_recording_examines_each_aux_record_a_bounded_number_of_times() {
        for one_buffer in [true, false] {
            for n in [500, 2000] {
                let (pieces, examined) = cut(n, one_buffer);
                assert_eq!(pieces.len(), n, "one piece per drain");
                assert!(pieces.iter().all(|p| p.len == 160));
                // Linear: a few looks per record (quadratic was n * n).
                assert!(
                    examined <= 8 * n,
                    "{n} records ({}): {examined} examined",
                    if one_buffer {
                        "one buffer"
                    } else {
                        "a buffer each"
                    }
                );
            }
        }
    }
}
