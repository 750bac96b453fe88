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
use std::collections::BTreeMap;
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
    let snapshot = snapshot_of(path, &captures, &dumps, &tasks, notes).map_err(|e| {
        fail(PerfError::Bad {
            offset: 0,
            what: format!("cannot open the file system root to read mapped files: {e}"),
        })
    })?;
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
        skipped: skipped.to_vec(),
        within: None,
        range: Some((p.start, p.len)),
        task,
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

/// Whether AUX record `aux` (of CPU `cpu` and thread `tid`, when its
/// samples say) is about buffer `a`'s part of the AUX area (one area per
/// CPU, or per thread).
fn same_area(aux: &Aux, cpu: Option<u32>, tid: Option<u32>, a: &Auxtrace) -> bool {
    let cpu_ok = match cpu {
        Some(c) => a.cpu == u32::MAX || c == a.cpu,
        None => true,
    };
    let tid_ok = match tid {
        Some(t) => a.cpu != u32::MAX || a.tid == u32::MAX || t == a.tid,
        None => true,
    };
    let end = a.offset.saturating_add(a.size);
    let aux_end = aux.offset.saturating_add(aux.size);
    cpu_ok && tid_ok && aux.offset < end.max(a.offset.saturating_add(1)) && aux_end > a.offset
}

/// The pieces of AUX data: each AUXTRACE buffer, cut where an AUX record
/// of its area ends inside it (each AUX record is one drain of the trace
/// sink: the trace does not run on across it). A piece that starts where
/// an AUX record with the truncated flag starts follows lost trace: a
/// note says so.
pub fn pieces(perf: &PerfData, notes: &mut Vec<String>) -> Vec<Piece> {
    let auxes: Vec<(Aux, Option<u32>, Option<u32>)> = perf
        .records
        .iter()
        .filter_map(|r| match r.body {
            Body::Aux(a) => Some((a, r.sample.cpu, r.sample.tid.map(|(_, tid)| tid))),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (r, a) in perf.auxtraces() {
        if a.size == 0 {
            continue;
        }
        let mine: Vec<&(Aux, Option<u32>, Option<u32>)> = auxes
            .iter()
            .filter(|(x, cpu, tid)| same_area(x, *cpu, *tid, a))
            .collect();
        let raw = mine.iter().any(|(x, _, _)| x.flags & Aux::RAW != 0);
        // The area's end, as far as the AUX offsets can count (the file
        // holds all `a.size` bytes of trace: `a.data + a.size` cannot
        // overflow).
        let mut end = a.offset.saturating_add(a.size);
        // perf pads the data to 8 bytes: the bytes after the last AUX
        // record's data are not trace.
        if let Some(covered) = mine
            .iter()
            .map(|(x, _, _)| x.offset.saturating_add(x.size))
            .filter(|&e| e > a.offset && e < end)
            .max()
        {
            if end - covered < 8 {
                end = covered;
            }
        }
        let mut cuts: Vec<u64> = mine
            .iter()
            .map(|(x, _, _)| x.offset.saturating_add(x.size))
            .filter(|&e| e > a.offset && e < end)
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
            if mine
                .iter()
                .any(|(x, _, _)| x.offset == from && x.flags & Aux::TRUNCATED != 0)
            {
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

/// Where the mapped file `m` is found: under `symfs`, in the build-ID
/// cache, or (without `symfs`) at its own path.
fn find_file(m: &Mmap, build_id: Option<&str>, lookup: Lookup<'_>) -> Option<PathBuf> {
    let symfs = lookup.symfs;
    let name = Path::new(&m.filename);
    let mut tries = Vec::new();
    if let Some(dir) = symfs {
        let rel = name.strip_prefix("/").unwrap_or(name);
        tries.push(dir.join(rel));
        if let Some(base) = name.file_name() {
            tries.push(dir.join(base));
        }
    }
    if let Some(id) = build_id.filter(|id| id.len() > 2) {
        if let Some(cache) = lookup.build_id_cache {
            let link = cache.join(".build-id").join(&id[..2]).join(&id[2..]);
            tries.push(link.join("elf"));
            tries.push(link);
        }
    }
    if symfs.is_none() && name.is_absolute() {
        tries.push(name.to_path_buf());
    }
    tries.into_iter().find(|p| p.is_file())
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
    let mut out = Vec::new();
    let mut missing: BTreeMap<String, u64> = BTreeMap::new();
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
        let Some(found) = find_file(m, id.as_deref(), lookup) else {
            *missing.entry(shown(&m.filename)).or_default() += 1;
            continue;
        };
        let Ok(real) = std::fs::canonicalize(&found) else {
            continue;
        };
        let Some(file) = real.strip_prefix("/").ok().map(Path::to_path_buf) else {
            continue;
        };
        let Ok(size) = std::fs::metadata(&real).map(|md| md.len()) else {
            continue;
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
                path: found.clone(),
                file,
                address: m.start,
                length: Some(m.len.min(size - m.pgoff)),
                offset: m.pgoff,
                space: None,
                section: format!("mmap at offset {}", r.offset),
            },
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

/// The snapshot that stands for the recording: per CPU, a core device
/// whose dumps are the mapped files, and the trace source bound to it; a
/// capture of a known thread reads its process's mappings only (a core
/// device per CPU and process).
fn snapshot_of(
    path: &Path,
    captures: &[CaptureSpec],
    dumps: &[Mapped],
    tasks: &Tasks,
    notes: Vec<String>,
) -> std::io::Result<Snapshot> {
    let folder = Folder::open(Path::new("/"))?;
    let mut devices = Vec::new();
    let mut core_sources: Vec<(String, String)> = Vec::new();
    for c in captures {
        for s in &c.sources {
            if core_sources.iter().any(|(_, n)| *n == s.name) {
                continue;
            }
            let core = s.core.clone().unwrap_or_else(|| s.name.clone());
            let (name, dumps) = match &c.task {
                Some(t) => (
                    format!("{core} pid {}", t.pid),
                    tasks.mapped_by(t.pid, dumps),
                ),
                None => (core, dumps.iter().map(|(_, _, d)| d.clone()).collect()),
            };
            devices.push(Device {
                name: name.clone(),
                class: "core".into(),
                kind: String::new(),
                regs: Vec::new(),
                dumps,
                file: path.to_path_buf(),
            });
            core_sources.push((name, s.name.clone()));
        }
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

    /// The dumps of process `pid`'s address space: its own mappings since
    /// its last exec, those of the processes it was forked from (up to an
    /// exec), and the kernel's.
    fn mapped_by(&self, pid: u32, dumps: &[Mapped]) -> Vec<Dump> {
        let mut chain = vec![pid];
        let mut at = pid;
        while let Some(&p) = self.parent.get(&at) {
            if chain.contains(&p) || chain.len() > 64 {
                break;
            }
            chain.push(p);
            at = p;
        }
        dumps
            .iter()
            .filter(|(owner, offset, _)| {
                *owner == u32::MAX
                    || (chain.contains(owner)
                        && self.exec_at.get(owner).is_none_or(|&e| *offset > e))
            })
            .map(|(_, _, d)| d.clone())
            .collect()
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
        let names = |pid| -> Vec<String> {
            t.mapped_by(pid, &dumps)
                .iter()
                .map(|d| d.path.display().to_string())
                .collect()
        };
        assert_eq!(names(20), ["app", "kernel"]);
        assert_eq!(names(40), ["sh", "forked", "kernel"]);
        assert_eq!(names(10), ["sh", "kernel"]);
    }
}
