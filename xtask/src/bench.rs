//! `cargo xtask bench`: throughput of packet parsing, full decode (one
//! thread and all threads), the CLI end to end with its peak memory,
//! the CLI's start-up time, and the CLI against OpenCSD's `trc_pkt_lister`
//! where it is installed, printed as one table.
//!
//! Inputs, built from the real captures: the raw PTM capture of
//! tc2-ptm-rstk-t32 repeated (it starts with A-sync + I-sync and ends in a
//! debug halt, so copies chain); the TC2 ETMv3 stream of trace ID 0x10 from
//! its first to its last A-sync, repeated; and the whole TC2 formatted
//! buffer repeated as sessions (several sources, formatted). Throughput
//! figures are the best of several runs; a plain byte sum over the same
//! input, measured in the same run, is the baseline the ratios refer to.
//! The parallel rows say how much CPU time the threads took together,
//! against the one-thread decode's, how much of it the calling thread
//! took (joining the chunks, handing on every event, and working chunks
//! while it waits), and how many sources' chunk shares it decoded again;
//! for the raw PTM file, as many one-thread decodes as threads are also
//! run at once, whose combined throughput is the most the machine gives
//! that many threads (the ceiling of the parallel speed-up). This is a
//! measurement, not a test: nothing is asserted.
//!
//! Options: `--size-mb N` (size of the in-memory inputs, default 64),
//! `--file-mb N` (size of the capture files that the library and the CLI
//! decode in a child process, whose peak memory is reported; default 256),
//! `--cli-mb N` (size of the files the CLI lists as JSON Lines; default 16),
//! `--rss-mb N` (size of the inputs whose peak memory is measured for
//! every output, see [`goals`]; default 1024, 0: none),
//! `--opencsd-mb N` (size of the snapshots that the CLI and OpenCSD's
//! `trc_pkt_lister` both list, see [`opencsd`]; by default the raw PTM
//! capture ×1,024 and TC2's buffer ×64, the real captures 16 MiB),
//! `--goal-copies N` (copies of the raw PTM capture that the conversion
//! goals are measured on, see [`goals`]; default 256),
//! `--runs N` (default 5), `--jobs N` (threads of the parallel rows,
//! default all), `--only TEXT` (only the rows whose name contains TEXT,
//! e.g. for a profiler).

mod goals;
mod opencsd;
mod real_snapshots;

use real_snapshots::Capture;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use trace_convert::input::capture::{self as dec, decoder};
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::source::CaptureSpec;
use trace_convert::input::{flags::SourceFlags, resolve, Input};
use trace_core::capture::{
    deliveries, each_event, DecodeOptions, Delivery, ParallelStats, Part, Parts,
};
use trace_core::decode::{Decoder, DecoderConfig};
use trace_core::demux::{AnyPacket, SourceConfig};
use trace_core::event::{Event, EventKind};
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};
use trace_core::memory::MemoryImage;
// Events handed to a converter at once in the sink rows, as the CLI's
// decode hands them.
use trace_core::capture::SLICE;

const CHUNK: usize = 1 << 20;

/// The options of `bench`, each followed by its value.
const VALUED: [&str; 9] = [
    "--size-mb",
    "--file-mb",
    "--cli-mb",
    "--opencsd-mb",
    "--goal-copies",
    "--rss-mb",
    "--runs",
    "--jobs",
    "--only",
];

/// What `bench` takes.
pub const USAGE: &str = "usage: cargo xtask bench [--only TEXT] [--runs N] [--jobs N] \
     [--size-mb N] [--file-mb N] [--cli-mb N] [--opencsd-mb N] [--goal-copies N] [--rss-mb N]\n\
     --only TEXT runs the rows whose name contains TEXT (\"goal\": the goals)";

/// Command-line options.
struct Opts {
    size: usize,
    file_size: usize,
    cli_size: usize,
    /// `None`: the sizes of the goals.
    opencsd_size: Option<usize>,
    goal_copies: usize,
    rss_size: usize,
    runs: usize,
    jobs: usize,
    only: Option<String>,
}

impl Opts {
    fn parse(args: &[String]) -> Result<Opts, String> {
        let mut rest = args.iter();
        while let Some(a) = rest.next() {
            if !VALUED.contains(&a.as_str()) {
                return Err(format!("bench: unknown argument {a:?}\n{USAGE}"));
            }
            if rest.next().is_none() {
                return Err(format!("bench: {a} needs a value\n{USAGE}"));
            }
        }
        let value = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
        };
        let number = |name: &str, default: usize| -> Result<usize, String> {
            value(name).map_or(Ok(default), |v| {
                v.parse().map_err(|e| format!("{name} {v}: {e}"))
            })
        };
        Ok(Opts {
            size: number("--size-mb", 64)? << 20,
            file_size: number("--file-mb", 256)? << 20,
            cli_size: number("--cli-mb", 16)? << 20,
            opencsd_size: match value("--opencsd-mb") {
                Some(_) => Some(number("--opencsd-mb", 16)? << 20),
                None => None,
            },
            goal_copies: number("--goal-copies", 256)?.max(1),
            rss_size: number("--rss-mb", 1024)? << 20,
            runs: number("--runs", 5)?.max(1),
            jobs: number("--jobs", 0)?,
            only: value("--only").cloned(),
        })
    }

    fn wants(&self, what: &str) -> bool {
        self.only.as_ref().is_none_or(|o| what.contains(o.as_str()))
    }

    /// Whether some row whose name starts with `prefix` may be wanted.
    fn may_want(&self, prefix: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| prefix.contains(o.as_str()) || o.starts_with(prefix))
    }
}

/// Throughput (MB/s) of a plain byte sum over `bytes`: the baseline.
fn byte_sum_base(runs: usize, bytes: &[u8]) -> f64 {
    let (t, _) = best(runs, || {
        black_box(
            bytes
                .iter()
                .fold(0u64, |a, &b| a.wrapping_add(u64::from(b))),
        )
    });
    mb_s(bytes.len(), t)
}

/// Best wall time of `runs` runs of `f`, and its last result.
fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        out = Some(r);
    }
    (best, out.expect("runs > 0"))
}

fn repeat(unit: &[u8], size: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(size + unit.len());
    while v.len() < size {
        v.extend_from_slice(unit);
    }
    v
}

/// One line of the table.
struct Row {
    what: String,
    bytes: usize,
    time: Duration,
    instructions: Option<u64>,
    /// Byte-sum throughput of the same input (MB/s).
    base: f64,
    /// Free text (memory, speed-up).
    note: String,
}

impl Row {
    /// A decode engine's row: `n` instructions from `bytes` bytes in `time`.
    fn engine(what: String, bytes: usize, time: Duration, n: u64, base: f64, note: String) -> Row {
        Row {
            what,
            bytes,
            time,
            instructions: Some(n),
            base,
            note,
        }
    }
}

fn mb_s(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e6
}

/// Parse `bytes` with the source's parser; returns packets.
fn parse(cfg: SourceConfig, bytes: &[u8]) -> u64 {
    let mut n = 0u64;
    match cfg {
        SourceConfig::Etm(c) => {
            let mut p = etm_packets::Parser::new(c);
            for chunk in bytes.chunks(CHUNK) {
                for item in p.feed(chunk) {
                    n += u64::from(item.is_ok());
                }
            }
        }
        SourceConfig::Ptm(c) => {
            let mut p = ptm_packets::Parser::new(c);
            for chunk in bytes.chunks(CHUNK) {
                for item in p.feed(chunk) {
                    n += u64::from(item.is_ok());
                }
            }
        }
        // The benchmarked captures are instruction trace.
        _ => {}
    }
    n
}

/// Parse and decode `bytes`, ETMv3 by runs when `runs`
/// ([`DecoderConfig::with_block_ranges`]); returns instructions.
fn decode(id: u8, cfg: SourceConfig, mem: &Arc<dyn MemoryImage>, bytes: &[u8], runs: bool) -> u64 {
    let cfg_of = DecoderConfig::new(id, &cfg).with_block_ranges(runs);
    let mut d = Decoder::new(cfg_of, Arc::clone(mem));
    let mut n = 0u64;
    let mut sink = |e: Event| {
        if let EventKind::Range(r) = e.kind {
            n += u64::from(r.count);
        }
    };
    match cfg {
        SourceConfig::Etm(c) => {
            let mut p = etm_packets::Parser::new(c);
            for chunk in bytes.chunks(CHUNK) {
                for (off, pkt) in p.feed(chunk).flatten() {
                    d.push(off, &AnyPacket::Etm(pkt), &mut sink);
                }
            }
        }
        SourceConfig::Ptm(c) => {
            let mut p = ptm_packets::Parser::new(c);
            for chunk in bytes.chunks(CHUNK) {
                for (off, pkt) in p.feed(chunk).flatten() {
                    d.push(off, &AnyPacket::Ptm(pkt), &mut sink);
                }
            }
        }
        _ => {}
    }
    d.finish(&mut sink);
    n
}

/// The source `id` of a resolved snapshot: its parser configuration and
/// memory image.
fn source(input: &Input, id: u8) -> Result<(SourceConfig, Arc<dyn MemoryImage>), String> {
    let spec = input
        .captures
        .iter()
        .flat_map(|c| c.sources.iter())
        .find(|s| s.id == id)
        .ok_or_else(|| format!("no source with trace ID {id:#x}"))?;
    let cfg = spec.config().map_err(|e| e.to_string())?;
    let mem = memory_for(input.snapshot.as_ref(), &spec.name, &ExtraMemory::default())
        .map_err(|e| e.to_string())?;
    Ok((cfg, Arc::new(mem)))
}

/// A source's parser configuration, memory image and trace bytes.
type SourceInput = (SourceConfig, Arc<dyn MemoryImage>, Vec<u8>);

/// ETMv3 trace without cycle accuracy of the corpus program `fixture`,
/// repeated to about `size` bytes.
fn etm_plain(fixture: &str, size: usize) -> Result<SourceInput, String> {
    use trace_encode::{encode_etm, write_repeated, Encoding, EtmOptions};
    let crate::example::Fixture { flow, memory, .. } = crate::example::fixture(fixture)?;
    let opts = EtmOptions::default();
    let sample = encode_etm(&flow.items, &memory, &opts).map_err(|e| e.to_string())?;
    let cfg = sample.source_config().map_err(|e| e.to_string())?;
    let mut bytes = Vec::with_capacity(size);
    write_repeated(
        &flow.items,
        &memory,
        &Encoding::Etm(opts),
        size as u64,
        &mut bytes,
    )
    .map_err(|e| e.to_string())?;
    Ok((cfg, Arc::new(memory), bytes))
}

/// Trace ID `id`'s payload of a formatted capture, from its first to its
/// last A-sync (so that copies chain).
fn etm_unit(capture: &[u8], id: u8) -> Vec<u8> {
    let mut d = Deformatter::new(FrameMode::Memory);
    let mut payload = Vec::new();
    for ev in d.feed(capture) {
        if let FrameEvent::Data(run) = ev {
            if run.id == id {
                payload.extend_from_slice(run.data());
            }
        }
    }
    let sync = [0u8, 0, 0, 0, 0, 0x80];
    let first = payload.windows(6).position(|w| w == sync).unwrap_or(0);
    let last = payload
        .windows(6)
        .rposition(|w| w == sync)
        .unwrap_or(payload.len());
    payload[first..last.max(first)].to_vec()
}

/// Decode a capture file with the library (all sources); returns
/// instructions.
fn decode_file(
    input: &Input,
    spec: &CaptureSpec,
    jobs: Option<usize>,
    on_workers: bool,
    runs: bool,
) -> Result<(u64, Option<ParallelStats>), String> {
    let mut n = 0u64;
    let memory = |name: &str| -> Arc<dyn MemoryImage> {
        Arc::new(
            memory_for(input.snapshot.as_ref(), name, &ExtraMemory::default()).unwrap_or_default(),
        )
    };
    // Parallel rows: on `jobs` threads whatever the capture's size.
    let opts = DecodeOptions::chosen_jobs(jobs.unwrap_or(1));
    let mut b = decoder(spec, memory)
        .map_err(|e| e.to_string())?
        .options(opts)
        .block_ranges(runs);
    if jobs.is_some() && on_workers {
        b = b.parts(Arc::new(Counting));
    }
    let mut d = b.build();
    if jobs.is_some() && on_workers {
        let mut each = deliveries(|d| {
            match d {
                Delivery::Event(e) | Delivery::Folded(e) => count_event(&mut n, e),
                Delivery::Part { result, .. } => {
                    n += result.downcast::<u64>().map_or(0, |c| *c);
                }
            }
            Ok(())
        });
        dec::run(spec, &mut d, &mut each)
    } else {
        dec::run(
            spec,
            &mut d,
            &mut each_event(|e| {
                count_event(&mut n, e);
                Ok(())
            }),
        )
    }
    .map_err(|e| e.to_string())?;
    Ok((n, jobs.map(|_| d.parallel_stats())))
}

/// Add `e`'s instructions to `n`. The whole event is read, as a real
/// consumer does (a consumer that reads one field lets the compiler skip
/// building the others).
#[inline]
fn count_event(n: &mut u64, e: &Event) {
    black_box(e);
    if let EventKind::Range(r) = e.kind {
        *n += u64::from(r.count);
    }
}

/// Counts instructions on the worker threads, as [`decode_file`]'s
/// consumer does on the calling thread.
struct Counting;

/// One share's count.
struct Count(u64);

impl Part for Count {
    fn event(&mut self, event: &Event) {
        count_event(&mut self.0, event);
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        Box::new(self.0)
    }
}

impl Parts for Counting {
    fn part(&self, _id: u8) -> Option<Box<dyn Part>> {
        Some(Box::new(Count(0)))
    }

    fn keep_events(&self) -> bool {
        false
    }

    fn reads_timestamps(&self) -> bool {
        false
    }
}

/// A snapshot directory under `dir` whose capture is the corpus program
/// `example` encoded by trace-encode and repeated to `size` bytes (streamed
/// to the file): cycle-accurate PTM with the return stack from the T32
/// build, or cycle-accurate ETMv3.5 from the A32 build, raw.
fn encoded_snapshot(dir: &Path, ptm: bool, size: usize) -> Result<(PathBuf, PathBuf), String> {
    use std::io::Write;
    use trace_encode::snapshot::{dumps_of, write_snapshot, BufferFormat, Core, SnapshotSpec};
    use trace_encode::{encode_etm, encode_ptm, write_repeated, Encoding, EtmOptions};
    let fixture = if ptm { "example-t" } else { "example-a" };
    let crate::example::Fixture {
        flow, memory: mem, ..
    } = crate::example::fixture(fixture)?;
    let encoding = if ptm {
        Encoding::Ptm(trace_encode::PtmOptions {
            return_stack: true,
            cycle_accurate: true,
            ..trace_encode::PtmOptions::default()
        })
    } else {
        Encoding::Etm(EtmOptions {
            cycle_accurate: true,
            ..EtmOptions::default()
        })
    };
    let sample = match &encoding {
        Encoding::Ptm(o) => encode_ptm(&flow.items, &mem, o),
        Encoding::Etm(o) => encode_etm(&flow.items, &mem, o),
    }
    .map_err(|e| e.to_string())?;
    let out = dir.join(format!("encoded-{fixture}"));
    let spec = SnapshotSpec {
        cores: vec![Core {
            name: "cpu_0".into(),
            kind: "Cortex-A9".into(),
            pc: 0,
            dumps: dumps_of(&mem),
        }],
        sources: vec![trace_encode::snapshot::Source {
            name: "source_0".into(),
            protocol: sample.protocol,
            regs: sample.regs,
            id: 0x10,
            core: "cpu_0".into(),
        }],
        trace: Vec::new(),
        format: BufferFormat::SourceData,
        timestamp_hz: None,
    };
    write_snapshot(&out, &spec).map_err(|e| e.to_string())?;
    let file = out.join("trace.bin");
    let f = std::fs::File::create(&file).map_err(|e| e.to_string())?;
    let mut w = std::io::BufWriter::new(f);
    write_repeated(&flow.items, &mem, &encoding, size as u64, &mut w).map_err(|e| e.to_string())?;
    w.flush().map_err(|e| e.to_string())?;
    Ok((out, file))
}

/// A snapshot directory under `dir` whose capture is CoreSight-formatted
/// with two sources made by trace-encode from the corpus program
/// `example`: cycle-accurate PTM with the return stack (T32 build) on
/// trace ID 0x10 and cycle-accurate ETMv3.5 (A32 build) on 0x21, both with
/// timestamps and an A-sync/I-sync every KiB, interleaved in frames 64
/// bytes of each at a time; a unit of about 8 MiB repeated to `size`
/// bytes (each unit's streams end at the end of a repetition of the
/// program, so units chain).
fn encoded_two_source_snapshot(dir: &Path, size: usize) -> Result<(PathBuf, PathBuf), String> {
    use std::io::Write;
    use trace_encode::capture::{format_capture, Layout, Source};
    use trace_encode::snapshot::{dumps_of, write_snapshot, BufferFormat, Core, SnapshotSpec};
    use trace_encode::{
        write_repeated, CycleModel, Encoding, EtmOptions, PtmOptions, SyncPeriod, TraceOptions,
    };
    let t = crate::example::fixture("example-t")?;
    let a = crate::example::fixture("example-a")?;
    let trace = TraceOptions {
        sync: Some(SyncPeriod::Bytes(1024)),
        timestamps: true,
        timestamp_interval: 2000,
        cycles: CycleModel {
            per_instruction: 1,
            taken_branch: 2,
        },
        ..TraceOptions::default()
    };
    let ptm = Encoding::Ptm(PtmOptions {
        return_stack: true,
        cycle_accurate: true,
        trace: trace.clone(),
        ..PtmOptions::default()
    });
    let etm = Encoding::Etm(EtmOptions {
        cycle_accurate: true,
        trace,
        ..EtmOptions::default()
    });
    let unit = 4u64 << 20;
    let (mut ptm_bytes, mut etm_bytes) = (Vec::new(), Vec::new());
    write_repeated(&t.flow.items, &t.memory, &ptm, unit, &mut ptm_bytes)
        .map_err(|e| e.to_string())?;
    write_repeated(&a.flow.items, &a.memory, &etm, unit, &mut etm_bytes)
        .map_err(|e| e.to_string())?;
    let capture = format_capture(
        &[
            Source {
                id: 0x10,
                bytes: &ptm_bytes,
            },
            Source {
                id: 0x21,
                bytes: &etm_bytes,
            },
        ],
        Layout::Memory,
        64,
    )
    .map_err(|e| e.to_string())?;
    // The registers of each encoding, from a short sample of it.
    let regs = |enc: &Encoding, memory: &trace_core::memory::MemoryMap, flow: &[_]| {
        match enc {
            Encoding::Ptm(o) => trace_encode::encode_ptm(flow, memory, o),
            Encoding::Etm(o) => trace_encode::encode_etm(flow, memory, o),
        }
        .map(|t| (t.protocol, t.regs))
        .map_err(|e| e.to_string())
    };
    let (ptm_protocol, ptm_regs) = regs(&ptm, &t.memory, &t.flow.items)?;
    let (etm_protocol, etm_regs) = regs(&etm, &a.memory, &a.flow.items)?;
    let out = dir.join("encoded-two-sources");
    let core = |name: &str, memory: &trace_core::memory::MemoryMap| Core {
        name: name.into(),
        kind: "Cortex-A9".into(),
        pc: 0,
        dumps: dumps_of(memory),
    };
    let spec = SnapshotSpec {
        cores: vec![core("cpu_0", &t.memory), core("cpu_1", &a.memory)],
        sources: vec![
            trace_encode::snapshot::Source {
                name: "PTM_0".into(),
                protocol: ptm_protocol,
                regs: ptm_regs,
                id: 0x10,
                core: "cpu_0".into(),
            },
            trace_encode::snapshot::Source {
                name: "ETM_1".into(),
                protocol: etm_protocol,
                regs: etm_regs,
                id: 0x21,
                core: "cpu_1".into(),
            },
        ],
        trace: Vec::new(),
        format: BufferFormat::CoreSight,
        timestamp_hz: None,
    };
    write_snapshot(&out, &spec).map_err(|e| e.to_string())?;
    let file = out.join("trace.bin");
    let f = std::fs::File::create(&file).map_err(|e| e.to_string())?;
    let mut w = std::io::BufWriter::new(f);
    let mut written = 0;
    while written < size.max(1) {
        w.write_all(&capture).map_err(|e| e.to_string())?;
        written += capture.len().max(1);
    }
    w.flush().map_err(|e| e.to_string())?;
    Ok((out, file))
}

/// A copy of snapshot `src` in `dir` whose trace buffer file is `unit`
/// repeated up to `size` bytes, at the same place in the snapshot (the
/// other files beside `snapshot.ini` are copied); returns the copy and its
/// buffer's path.
fn snapshot_with(
    src: &Path,
    dir: &Path,
    unit: &[u8],
    size: usize,
) -> Result<(PathBuf, PathBuf), String> {
    use std::io::Write;
    let input = resolve(src, &SourceFlags::default()).map_err(|e| e.to_string())?;
    let buffer = input
        .captures
        .first()
        .map(|c| c.path.clone())
        .ok_or("no capture")?;
    let within = buffer
        .strip_prefix(src)
        .map_err(|_| format!("{}: buffer outside the snapshot", buffer.display()))?;
    let name = src.file_name().ok_or("snapshot name")?;
    let out = dir.join(name);
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(src).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let Some(file) = path.file_name().filter(|_| path.is_file()) else {
            continue;
        };
        if path != buffer {
            std::fs::copy(&path, out.join(file)).map_err(|e| e.to_string())?;
        }
    }
    let big = out.join(within);
    if let Some(parent) = big.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    let f = std::fs::File::create(&big).map_err(|e| format!("{}: {e}", big.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let mut written = 0;
    while written < size.max(1) {
        w.write_all(unit).map_err(|e| e.to_string())?;
        written += unit.len().max(1);
    }
    w.flush().map_err(|e| e.to_string())?;
    Ok((out, big))
}

/// `cargo xtask bench-decode DIR JOBS [workers]`: decode the snapshot
/// `DIR` with the library on `JOBS` threads (1: the one-thread decoder),
/// counting instructions on the calling thread (`workers`: on the threads
/// that decoded them, see [`Parts`]); run by the benchmark as a child
/// process so that its peak memory can be read.
pub fn child(args: &[String]) -> Result<(), String> {
    let usage = "bench-decode DIR JOBS [workers | runs]";
    let dir = args.first().ok_or(usage)?;
    let jobs: usize = args
        .get(1)
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("JOBS: {e}"))?;
    // `workers`: counted on the worker threads; `runs`: ETMv3 by runs, as
    // `decode --format none` decodes it.
    let (on_workers, runs) = match args.get(2).map(String::as_str) {
        None => (false, false),
        Some("workers") => (true, false),
        Some("runs") => (false, true),
        Some(other) => return Err(format!("`{other}`: {usage}")),
    };
    let input = resolve(Path::new(dir), &SourceFlags::default()).map_err(|e| e.to_string())?;
    let spec = input.captures.first().ok_or("no capture")?;
    let (n, stats) = decode_file(&input, spec, (jobs > 1).then_some(jobs), on_workers, runs)?;
    // CPU time of the whole process and of this (the calling) thread, in
    // clock ticks: what the threads cost together, and the share of the
    // thread that joins the chunks, hands on every event and works chunks
    // while it waits.
    let ticks = |path: &str| {
        std::fs::read_to_string(path).ok().and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
    };
    println!("{n}");
    println!(
        "{} {}",
        ticks("/proc/self/stat").unwrap_or(0),
        ticks("/proc/thread-self/stat").unwrap_or(0)
    );
    // Parallel: how many sources' shares of chunks the calling thread
    // decoded again.
    if let Some(s) = stats {
        eprintln!("{s:?}");
        println!("{} {}", s.redone, s.parts);
    }
    Ok(())
}

/// Wall time of `n` one-thread decodes of `snap` (`bench-decode` children
/// of `me`) run at once.
fn concurrent(me: &Path, snap: &Path, n: usize) -> Result<Duration, String> {
    let t = Instant::now();
    let children = (0..n)
        .map(|_| {
            Command::new(me)
                .arg("bench-decode")
                .arg(snap)
                .arg("1")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("{}: {e}", me.display()))
        })
        .collect::<Result<Vec<_>, String>>()?;
    for mut c in children {
        let st = c.wait().map_err(|e| e.to_string())?;
        if !st.success() {
            return Err(format!("bench-decode {}: {st}", snap.display()));
        }
    }
    Ok(t.elapsed())
}

/// Run the CLI once: wall time and peak resident memory (bytes, from the
/// child's `VmHWM`, sampled until it exits).
fn run_cli(bin: &Path, args: &[&str], input: &Path) -> Result<(Duration, u64), String> {
    run_child(bin, args, input, &[], false, &[]).map(|(t, p, _)| (t, p))
}

/// Run `bin args input tail` with the environment variables `env` set:
/// wall time and peak resident memory (and its output when `output`).
fn run_child(
    bin: &Path,
    args: &[&str],
    input: &Path,
    tail: &[&str],
    output: bool,
    env: &[(&str, &str)],
) -> Result<(Duration, u64, String), String> {
    use std::io::Read;
    let t = Instant::now();
    let mut child = Command::new(bin)
        .envs(env.iter().copied())
        .args(args)
        .arg(input)
        .args(tail)
        .stdout(if output {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status) {
            if let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kb * 1024);
            }
        }
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            let elapsed = t.elapsed();
            if !st.success() {
                return Err(format!("{} {args:?} failed: {st}", bin.display()));
            }
            let mut text = String::new();
            if let Some(mut out) = child.stdout.take() {
                out.read_to_string(&mut text).map_err(|e| e.to_string())?;
            }
            return Ok((elapsed, peak, text));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The release `trace-convert` binary beside this one, built if needed.
fn cli_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bin = exe.with_file_name("trace-convert");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--quiet", "--release", "-p", "trace-convert"])
        .current_dir(crate::root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() || !bin.is_file() {
        return Err(format!("cannot build {}", bin.display()));
    }
    Ok(bin)
}

/// Parse and decode the PTM `bytes` as trace ID 0x10, handing the events
/// to `each` in slices of about [`SLICE`], as the CLI's decode hands them
/// to a converter.
///
/// # Errors
///
/// The first error of `each`.
fn decode_in_slices(
    cfg: &SourceConfig,
    mem: &Arc<dyn MemoryImage>,
    bytes: &[u8],
    mut each: impl FnMut(&[Event]) -> Result<(), String>,
) -> Result<(), String> {
    let mut d = Decoder::new(DecoderConfig::new(0x10, cfg), Arc::clone(mem));
    let mut held: Vec<Event> = Vec::with_capacity(2 * SLICE);
    if let SourceConfig::Ptm(c) = cfg {
        let mut p = ptm_packets::Parser::new(*c);
        for chunk in bytes.chunks(CHUNK) {
            for (off, pkt) in p.feed(chunk).flatten() {
                d.push(off, &AnyPacket::Ptm(pkt), &mut |e| held.push(e));
                if held.len() >= SLICE {
                    each(&held)?;
                    held.clear();
                }
            }
        }
    }
    d.finish(&mut |e| held.push(e));
    each(&held)
}

/// Rows of the output sinks: the corpus program `example` (T32, with its
/// ELF and DWARF) encoded as cycle-accurate PTM with the return stack,
/// repeated to a quarter of the in-memory size, decoded and converted
/// through each sink into files under `dir`; each row also gives its cost
/// against the decode alone (whose count is inlined into the decoder, so
/// that its events need not be written out) and against the decode
/// handing its events on in slices, as a converter is given them.
fn sink_rows(opts: &Opts, dir: &Path, rows: &mut Vec<Row>) -> Result<(), String> {
    use trace_convert::convert::{ConvertOptions, Converter};
    use trace_convert::output::OutputPlan;
    use trace_convert::sinks::chrome::ChromeSink;
    use trace_convert::sinks::folded::{FoldedSink, Weight};
    use trace_convert::sinks::lcov::coverage::LcovOptions;
    use trace_convert::sinks::lcov::LcovSink;
    use trace_convert::sinks::perfetto::PerfettoSink;
    use trace_convert::symbols::Symbolizer;
    use trace_encode::{write_repeated, Encoding, PtmOptions};

    if !opts.wants("sink") {
        return Ok(());
    }
    let crate::example::Fixture {
        flow,
        elf,
        memory: map,
    } = crate::example::fixture("example-t")?;
    let ptm = PtmOptions {
        return_stack: true,
        cycle_accurate: true,
        ..PtmOptions::default()
    };
    let mut bytes = Vec::new();
    write_repeated(
        &flow.items,
        &map,
        &Encoding::Ptm(ptm.clone()),
        (opts.size / 4) as u64,
        &mut bytes,
    )
    .map_err(|e| e.to_string())?;
    let regs = ptm.regs().map_err(|e| e.to_string())?;
    let cfg = SourceConfig::Ptm(ptm.config().map_err(|e| e.to_string())?);
    let mem: Arc<dyn MemoryImage> = Arc::new(map);
    let symbols = Symbolizer::from_elves(std::slice::from_ref(&elf)).map_err(|e| e.to_string())?;
    let clock = ConvertOptions::default().clock_for_etmcr(&[regs.etmcr]);
    let base = byte_sum_base(opts.runs, &bytes);

    // Decode alone: parse, decode, count.
    let (alone, insns) = best(opts.runs, || decode(0x10, cfg, &mem, &bytes, false));
    rows.push(Row {
        what: "sinks input: decode alone (example, PTM)".into(),
        bytes: bytes.len(),
        time: alone,
        instructions: Some(insns),
        base,
        note: String::new(),
    });
    // The decode with its events written out, handed on in slices as the
    // converter takes them (counted from the slices).
    let (held_time, _) = best(opts.runs, || {
        let mut n = 0u64;
        let counted = decode_in_slices(&cfg, &mem, &bytes, |held| {
            for e in black_box(held) {
                if let EventKind::Range(r) = &e.kind {
                    n += u64::from(r.count);
                }
            }
            Ok(())
        });
        counted.map(|()| n)
    });
    rows.push(Row {
        what: "sinks input: decode, events handed on in slices".into(),
        bytes: bytes.len(),
        time: held_time,
        instructions: Some(insns),
        base,
        note: format!(
            "{:.2}x the decode alone",
            held_time.as_secs_f64() / alone.as_secs_f64()
        ),
    });
    for set in [
        &["stacks"][..],
        &["folded"],
        &["chrome"],
        &["perfetto"],
        &["lcov"],
        &["perfetto", "lcov"],
        &["chrome", "perfetto", "lcov", "folded"],
    ] {
        let mut failure = None;
        let (time, _) = best(opts.runs, || {
            let run = || -> Result<(), String> {
                // The outputs are committed together, as the CLI does.
                let mut plan = OutputPlan::new();
                for &s in set {
                    let name = match s {
                        "folded" => "b.folded",
                        "chrome" => "b.json",
                        "perfetto" => "b.pftrace",
                        "lcov" => "b.info",
                        _ => continue,
                    };
                    plan.add(s, &dir.join(name), false)
                        .map_err(|e| e.to_string())?;
                }
                let mut outputs = plan.create().map_err(|e| e.to_string())?;
                let mut conv = Converter::new(&symbols, clock, 1024);
                for (&s, out) in set
                    .iter()
                    .filter(|&&s| s != "stacks")
                    .zip(outputs.writers())
                {
                    match s {
                        "folded" => {
                            conv.add_sink(Box::new(FoldedSink::new(out, Weight::Instructions)))
                        }
                        "chrome" => conv.add_sink(Box::new(ChromeSink::new(out))),
                        "perfetto" => {
                            conv.add_sink(Box::new(PerfettoSink::new(out)));
                        }
                        "lcov" => conv.add_sink(Box::new(LcovSink::new(
                            out,
                            Arc::clone(&mem),
                            &symbols,
                            LcovOptions::default(),
                        ))),
                        _ => {}
                    }
                }
                // Events go to the converter in slices, as the CLI hands
                // them.
                decode_in_slices(&cfg, &mem, &bytes, |held| {
                    conv.events(held, Some(&*mem)).map_err(|e| e.to_string())
                })?;
                conv.finish().map_err(|e| e.to_string())?;
                outputs.commit().map_err(|e| e.to_string())
            };
            if let Err(e) = run() {
                failure = Some(e);
            }
        });
        if let Some(e) = failure {
            return Err(format!("sink bench: {e}"));
        }
        let what = if set == ["stacks"] {
            "convert: call stacks and clock, no output".to_owned()
        } else {
            format!("convert: {}", set.join(" + "))
        };
        rows.push(Row {
            what,
            bytes: bytes.len(),
            time,
            instructions: Some(insns),
            base,
            note: format!(
                "{:.2}x the decode alone, {:.2}x the decode handing on its events",
                time.as_secs_f64() / alone.as_secs_f64(),
                time.as_secs_f64() / held_time.as_secs_f64()
            ),
        });
    }
    Ok(())
}

/// Run the benchmark suite.
pub fn run(dir: &Path, args: &[String]) -> Result<(), String> {
    let opts = Opts::parse(args)?;
    let size = opts.size;
    let jobs = if opts.jobs == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        opts.jobs
    };
    if !dir.is_dir() {
        return Err(format!(
            "{} not found: the benchmark inputs come from it",
            dir.display()
        ));
    }
    let tmp = TempDir::new()?;
    let mut rows: Vec<Row> = Vec::new();
    let sum = |bytes: &[u8]| byte_sum_base(opts.runs, bytes);

    // PTM, raw capture repeated.
    let rstk_dir = dir.join("tc2-ptm-rstk-t32");
    let rstk = resolve(&rstk_dir, &SourceFlags::default()).map_err(|e| e.to_string())?;
    let (ptm_cfg, ptm_mem) = source(&rstk, 2)?;
    let unit = std::fs::read(&rstk.captures[0].path).map_err(|e| e.to_string())?;
    let ptm = repeat(&unit, size);
    let ptm_base = sum(&ptm);

    // ETMv3, TC2 trace ID 0x10 repeated; and the TC2 buffer as sessions.
    let tc2_dir = dir.join("TC2");
    let tc2 = resolve(&tc2_dir, &SourceFlags::default()).map_err(|e| e.to_string())?;
    let (etm_cfg, etm_mem) = source(&tc2, 0x10)?;
    let capture = std::fs::read(&tc2.captures[0].path).map_err(|e| e.to_string())?;
    let etm = repeat(&etm_unit(&capture, 0x10), size);
    let etm_base = sum(&etm);
    let sessions = repeat(&capture, size);
    let sessions_base = sum(&sessions);

    rows.push(Row {
        what: "baseline: byte sum".into(),
        bytes: ptm.len(),
        time: Duration::from_secs_f64(ptm.len() as f64 / ptm_base / 1e6),
        instructions: None,
        base: ptm_base,
        note: String::new(),
    });
    for (name, cfg, bytes, base) in [
        ("PTM", ptm_cfg, &ptm, ptm_base),
        ("ETMv3", etm_cfg, &etm, etm_base),
    ] {
        let what = format!("{name} packet parsing");
        if opts.wants(&what) {
            let (t, n) = best(opts.runs, || parse(cfg, bytes));
            rows.push(Row {
                what,
                bytes: bytes.len(),
                time: t,
                instructions: None,
                base,
                note: format!("{:.1} M packets/s", n as f64 / t.as_secs_f64() / 1e6),
            });
        }
    }
    if opts.wants(&format!("{}: deformatter", goals::TAG)) {
        rows.push(goals::deformat_row(&opts, &sessions, sessions_base));
    }
    for (name, id, cfg, mem, bytes, base, runs) in [
        ("PTM", 2u8, ptm_cfg, &ptm_mem, &ptm, ptm_base, false),
        ("ETMv3", 0x10, etm_cfg, &etm_mem, &etm, etm_base, false),
        (
            "ETMv3 by runs",
            0x10,
            etm_cfg,
            &etm_mem,
            &etm,
            etm_base,
            true,
        ),
    ] {
        let what = format!("{name} decode, 1 thread (engine)");
        // The goal of the cycle-accurate ETMv3 engine, by runs as the
        // conversions decode it.
        let goal = format!(
            "{}: ETMv3 engine, cycle-accurate (TC2 trace ID 0x10, by runs)",
            goals::TAG
        );
        let goal = (runs && opts.wants(&goal)).then_some(goal);
        if opts.wants(&what) || goal.is_some() {
            let (t, n) = best(opts.runs, || decode(id, cfg, mem, bytes, runs));
            let rate = n as f64 / t.as_secs_f64() / 1e6;
            let goal_note = format!(
                "{rate:.1} M instructions/s (goal 150{})",
                if rate >= 150.0 { ", met" } else { ", not met" }
            );
            let wanted = opts.wants(&what).then(|| (what, String::new()));
            for (what, note) in wanted.into_iter().chain(goal.map(|g| (g, goal_note))) {
                rows.push(Row::engine(what, bytes.len(), t, n, base, note));
            }
        }
    }

    // ETMv3 without cycle accuracy: the corpus program `example` (A32 and
    // T32 builds) encoded by trace-encode, repeated in memory.
    for (fixture, isa, runs) in [
        ("example-a", "A32", false),
        ("example-t", "T32", false),
        ("example-a", "A32 by runs", true),
        ("example-t", "T32 by runs", true),
    ] {
        let what = format!("ETMv3 decode, not cycle-accurate, {isa}, 1 thread (engine)");
        if opts.wants(&what) {
            let (cfg, mem, bytes) = etm_plain(fixture, size)?;
            let base = sum(&bytes);
            let (t, n) = best(opts.runs, || decode(0x10, cfg, &mem, &bytes, runs));
            let note = format!("trace-encode, corpus program {fixture}");
            rows.push(Row::engine(what, bytes.len(), t, n, base, note));
        }
    }

    // Whole captures from files, decoded by trace-convert's library in a
    // child process (for its peak memory): one thread, then all.
    // (Only the inputs of the rows asked for are written.)
    drop((ptm, etm, sessions));
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    type Make<'a> = Box<dyn Fn() -> Result<(PathBuf, PathBuf), String> + 'a>;
    let file_size = opts.file_size;
    let inputs: Vec<(&str, Make<'_>, f64)> = vec![
        (
            "PTM raw file",
            Box::new(|| snapshot_with(&rstk_dir, &tmp.0, &unit, file_size)),
            ptm_base,
        ),
        (
            "TC2 sessions file",
            Box::new(|| snapshot_with(&tc2_dir, &tmp.0, &capture, file_size)),
            sessions_base,
        ),
        (
            "encoder PTM+ETMv3 formatted file",
            Box::new(|| encoded_two_source_snapshot(&tmp.0, file_size)),
            sessions_base,
        ),
        (
            "encoder PTM file (example)",
            Box::new(|| encoded_snapshot(&tmp.0, true, file_size)),
            ptm_base,
        ),
        (
            "encoder ETMv3 file (example)",
            Box::new(|| encoded_snapshot(&tmp.0, false, file_size)),
            etm_base,
        ),
    ];
    for (name, make, base) in &inputs {
        let (name, base) = (*name, *base);
        // One thread; `jobs` threads handing every event to the calling
        // thread in order; `jobs` threads counting on the workers.
        let variants = [(1, false), (jobs, false), (jobs, true)];
        let title = |threads: usize, on_workers: bool| {
            let mut w = format!("{name} decode, {threads} thread(s)");
            if on_workers {
                w += ", counted on the workers";
            }
            w
        };
        if !variants.iter().any(|&(t, w)| opts.wants(&title(t, w))) {
            continue;
        }
        let (snap, file) = make()?;
        let (snap, file) = (&snap, &file);
        let bytes = std::fs::metadata(file).map_or(0, |m| m.len()) as usize;
        let mut one = None;
        for (threads, on_workers) in variants {
            let what = title(threads, on_workers);
            if !opts.wants(&what) || (threads == 1 && one.is_some()) || (on_workers && jobs == 1) {
                continue;
            }
            let mut time = Duration::MAX;
            let mut peak = 0;
            let mut insns = None;
            let mut redone = String::new();
            // CPU ticks of the fastest run: the process's, the calling
            // thread's.
            let mut cpu = (0u64, 0u64);
            for _ in 0..opts.runs.min(3) {
                let n = threads.to_string();
                let tail: &[&str] = if on_workers { &[&n, "workers"] } else { &[&n] };
                let (t, p, out) = run_child(&me, &["bench-decode"], snap, tail, true, &[])?;
                peak = peak.max(p);
                let mut lines = out.lines();
                insns = lines.next().and_then(|l| l.trim().parse().ok());
                let ticks = lines.next().and_then(|l| {
                    let (a, b) = l.split_once(' ')?;
                    Some((a.parse().ok()?, b.parse().ok()?))
                });
                if t < time {
                    time = t;
                    cpu = ticks.unwrap_or_default();
                }
                if let Some((r, parts)) = lines.next().and_then(|l| l.split_once(' ')) {
                    redone = format!(", {r} of {parts} shares redone");
                }
            }
            let speedup = match one {
                Some((t1, cpu1)) if threads > 1 => {
                    let mut s = format!(
                        ", {:.2}x one thread",
                        Duration::as_secs_f64(&t1) / time.as_secs_f64()
                    );
                    // Costs of the parallel decode, against one thread's
                    // CPU time (ticks of 10 ms: only for long runs).
                    if cpu1 >= 50 && cpu.0 > 0 {
                        s += &format!(
                            ", CPU {:.2}x one thread's ({:.0}% on the calling thread)",
                            cpu.0 as f64 / cpu1 as f64,
                            100.0 * cpu.1 as f64 / cpu.0 as f64
                        );
                    }
                    s
                }
                _ => String::new(),
            };
            one.get_or_insert((time, cpu.0));
            rows.push(Row {
                what,
                bytes,
                time,
                instructions: insns,
                base,
                note: format!("peak RSS {:.1} MB{speedup}{redone}", peak as f64 / 1e6),
            });
        }
        // What the machine gives: `jobs` one-thread decodes of the raw PTM
        // file at once, against one alone (their threads share nothing).
        let what = format!("{name}: {jobs} one-thread decodes at once");
        if let (Some((t1, _)), true) =
            (one, jobs > 1 && name == "PTM raw file" && opts.wants(&what))
        {
            let mut time = Duration::MAX;
            for _ in 0..opts.runs.min(3) {
                time = time.min(concurrent(&me, snap, jobs)?);
            }
            rows.push(Row {
                what,
                bytes: bytes * jobs,
                time,
                instructions: None,
                base,
                note: format!(
                    "{:.2}x one decode's throughput: the most {jobs} threads can give here",
                    jobs as f64 * t1.as_secs_f64() / time.as_secs_f64()
                ),
            });
        }
        // Gigabyte inputs: do not keep them all at once.
        let _ = std::fs::remove_dir_all(snap);
    }

    sink_rows(&opts, &tmp.0, &mut rows)?;

    // The CLI end to end, and its start-up on the small real captures.
    let cli_rows = [
        "CLI decode --format jsonl",
        "CLI convert to",
        "CLI start-up + decode",
        opencsd::TAG,
    ];
    if cli_rows.iter().any(|w| opts.wants(w)) || opts.may_want(goals::TAG) {
        let bin = cli_binary()?;
        let cli_dir = tmp.0.join("cli");
        let (ptm_snap, ptm_file) = snapshot_with(&rstk_dir, &cli_dir, &unit, opts.cli_size)?;
        let (tc2_snap, tc2_file) = snapshot_with(&tc2_dir, &cli_dir, &capture, opts.cli_size)?;
        for (name, snap, file, base) in [
            ("PTM raw", &ptm_snap, &ptm_file, ptm_base),
            ("TC2 sessions", &tc2_snap, &tc2_file, sessions_base),
        ] {
            if !opts.wants(cli_rows[0]) {
                break;
            }
            let bytes = std::fs::metadata(file).map_or(0, |m| m.len()) as usize;
            let mut time = Duration::MAX;
            let mut peak = 0;
            for _ in 0..opts.runs.min(3) {
                let (t, p) = run_cli(&bin, &["decode", "--format", "jsonl"], snap)?;
                time = time.min(t);
                peak = peak.max(p);
            }
            rows.push(Row {
                what: format!("CLI decode --format jsonl, {name}"),
                bytes,
                time,
                instructions: None,
                base,
                note: format!("peak RSS {:.1} MB", peak as f64 / 1e6),
            });
        }
        if opts.wants(cli_rows[1]) {
            convert_rows(&opts, &bin, &cli_dir, jobs, &mut rows)?;
        }
        if opts.may_want(goals::TAG) {
            // The conversions' goals are on the raw PTM capture ×256.
            let goal_dir = tmp.0.join("goal");
            let copies = opts.goal_copies;
            let (goal_snap, goal_file) =
                snapshot_with(&rstk_dir, &goal_dir, &unit, copies * unit.len())?;
            let goal_name = format!("PTM raw x{copies}");
            let inputs: [(&str, &Path, &Path); 2] = [
                (&goal_name, &goal_snap, &goal_file),
                ("TC2 sessions", &tc2_snap, &tc2_file),
            ];
            goals::cli_rows(&opts, &bin, jobs, &inputs, &mut rows)?;
            goals::rss_rows(&opts, &bin, &tc2_dir, &capture, &tmp.0, &mut rows)?;
            goals::stream_rows(&opts, &bin, &rstk_dir, &unit, &tmp.0, &mut rows)?;
        }
        let goal_rows = format!("{}: decode --format none vs {}", goals::TAG, opencsd::TAG);
        if opts.wants(opencsd::TAG) || opts.may_want(&goal_rows) {
            match opencsd::lister(&tmp.0)? {
                None => rows.push(opencsd::skipped(
                    "trc_pkt_lister is neither named by XTASK_OPENCSD nor on the PATH \
                     (Debian: libopencsd-bin)"
                        .into(),
                )),
                Some(lister) => {
                    let dir = tmp.0.join("opencsd");
                    // The goals' sizes: the raw PTM capture ×1,024, TC2's
                    // buffer ×64.
                    let ptm_size = opts.opencsd_size.unwrap_or(1024 * unit.len());
                    let tc2_size = opts.opencsd_size.unwrap_or(64 * capture.len());
                    let (ptm_snap, ptm_file) = snapshot_with(&rstk_dir, &dir, &unit, ptm_size)?;
                    let (tc2_snap, tc2_file) = snapshot_with(&tc2_dir, &dir, &capture, tc2_size)?;
                    let copies = |file: &Path, unit: usize| {
                        std::fs::metadata(file).map_or(0, |m| m.len() as usize) / unit.max(1)
                    };
                    let mut inputs = vec![
                        Capture {
                            name: format!("PTM raw x{}", copies(&ptm_file, unit.len())),
                            snap: ptm_snap,
                            file: ptm_file,
                            base: ptm_base,
                        },
                        Capture {
                            name: format!("TC2 sessions x{}", copies(&tc2_file, capture.len())),
                            snap: tc2_snap,
                            file: tc2_file,
                            base: sessions_base,
                        },
                    ];
                    if opts.wants(opencsd::TAG) {
                        inputs.extend(real_snapshots::inputs(
                            &test_support::real_path(),
                            &dir,
                            opts.opencsd_size.unwrap_or(16 << 20),
                            opts.runs,
                        )?);
                    }
                    opencsd::rows(&opts, &bin, &lister, &inputs, &mut rows)?;
                }
            }
        }
        for (name, snap) in [("TC2", &tc2_dir), ("tc2-ptm-rstk-t32", &rstk_dir)] {
            if !opts.wants(cli_rows[2]) {
                break;
            }
            let mut times = Vec::new();
            let mut peak = 0;
            for _ in 0..11 {
                let (t, p) = run_cli(&bin, &["decode", "--format", "jsonl"], snap)?;
                times.push(t);
                peak = peak.max(p);
            }
            times.sort_unstable();
            let bytes = resolve(snap, &SourceFlags::default())
                .ok()
                .and_then(|i| i.captures.first().map(|c| c.path.clone()))
                .and_then(|p| std::fs::metadata(p).ok())
                .map_or(0, |m| m.len() as usize);
            rows.push(Row {
                what: format!("CLI start-up + decode, {name} (median of 11)"),
                bytes,
                time: times[times.len() / 2],
                instructions: None,
                base: 0.0,
                note: format!("peak RSS {:.1} MB", peak as f64 / 1e6),
            });
        }
    }

    print(&opts, jobs, &rows);
    Ok(())
}

/// Rows of the CLI converting a capture file end to end (read, decode,
/// Perfetto and LCOV written), each against the library decode of the same
/// file on as many threads (`bench-decode`, a child process too): the
/// corpus program `example` encoded as in [`encoded_snapshot`], of the CLI
/// size.
fn convert_rows(
    opts: &Opts,
    bin: &Path,
    dir: &Path,
    jobs: usize,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let (snap, file) = encoded_snapshot(dir, true, opts.cli_size)?;
    let elf = crate::example::fixture("example-t")?.elf;
    let elf = elf.to_str().ok_or("ELF path")?;
    let (pf, info) = (dir.join("c.pftrace"), dir.join("c.info"));
    let (pf, info) = (
        pf.to_str().ok_or("output path")?,
        info.to_str().ok_or("output path")?,
    );
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len()) as usize;
    // LCOV alone is counted on the decoding threads (`Sink::parts`).
    let outputs: [(&str, &[&str]); 2] = [
        (
            "Perfetto + LCOV",
            &["--elf", elf, "--perfetto", pf, "--lcov", info],
        ),
        ("LCOV", &["--elf", elf, "--lcov", info]),
    ];
    for (threads, (what, args)) in [1, jobs]
        .into_iter()
        .flat_map(|t| outputs.iter().map(move |o| (t, *o)))
    {
        if threads > 1 && jobs == 1 {
            break;
        }
        let n = threads.to_string();
        let (mut decode, mut convert, mut peak) = (Duration::MAX, Duration::MAX, 0);
        let mut insns = None;
        for _ in 0..opts.runs.min(3) {
            let (t, _, out) = run_child(&me, &["bench-decode"], &snap, &[&n], true, &[])?;
            decode = decode.min(t);
            insns = out.lines().next().and_then(|l| l.trim().parse().ok());
            let (t, p, _) = run_child(bin, args, &snap, &[], false, &[("TRACE_CONVERT_JOBS", &n)])?;
            convert = convert.min(t);
            peak = peak.max(p);
        }
        rows.push(Row {
            what: format!("CLI convert to {what}, {threads} thread(s)"),
            bytes,
            time: convert,
            instructions: insns,
            base: 0.0,
            note: format!(
                "{:.2}x the library decode of the file ({:.0} ms); peak RSS {:.1} MB",
                convert.as_secs_f64() / decode.as_secs_f64(),
                decode.as_secs_f64() * 1e3,
                peak as f64 / 1e6
            ),
        });
    }
    if std::env::var_os("XTASK_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(snap);
    }
    Ok(())
}

fn print(opts: &Opts, jobs: usize, rows: &[Row]) {
    println!(
        "inputs: {} MiB in memory, {} MiB files, {} MiB for the CLI, {} against OpenCSD; \
         best of {} runs (children: of up to 3); {jobs} threads in the parallel rows",
        opts.size >> 20,
        opts.file_size >> 20,
        opts.cli_size >> 20,
        opts.opencsd_size.map_or_else(
            || "raw PTM x1024, TC2 x64, 16 MiB real captures".to_owned(),
            |s| format!("{} MiB", s >> 20)
        ),
        opts.runs
    );
    let width = rows.iter().map(|r| r.what.len()).max().unwrap_or(0).max(50);
    println!(
        "{:<width$} {:>10} {:>9} {:>10} {:>10}  note",
        "what", "time", "MB/s", "M insn/s", "vs sum"
    );
    for r in rows {
        if r.time.is_zero() {
            println!(
                "{:<width$} {:>10} {:>9} {:>10} {:>10}  {}",
                r.what, "-", "-", "-", "-", r.note
            );
            continue;
        }
        let mbs = mb_s(r.bytes, r.time);
        let insn = r.instructions.map_or_else(
            || "-".to_owned(),
            |n| format!("{:.1}", n as f64 / r.time.as_secs_f64() / 1e6),
        );
        let ratio = if r.base > 0.0 {
            format!("{:.3}x", mbs / r.base)
        } else {
            "-".to_owned()
        };
        println!(
            "{:<width$} {:>8.1}ms {:>9.1} {:>10} {:>10}  {}",
            r.what,
            r.time.as_secs_f64() * 1e3,
            mbs,
            insn,
            ratio,
            r.note
        );
    }
}

/// A temporary directory for the input files, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        let dir = std::env::temp_dir().join(format!("xtask-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    /// Removes the directory, unless `XTASK_BENCH_KEEP` is set: then its
    /// inputs stay for profiling runs by hand, and its path is printed.
    fn drop(&mut self) {
        if std::env::var_os("XTASK_BENCH_KEEP").is_some() {
            eprintln!("inputs kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::Opts;

    fn parse(args: &[&str]) -> Result<Opts, String> {
        let args: Vec<String> = args.iter().map(|a| (*a).to_string()).collect();
        Opts::parse(&args)
    }

    #[test]
    fn options_take_their_values() {
        let o = parse(&["--only", "goal", "--runs", "3", "--size-mb", "2"]).unwrap();
        assert_eq!(o.only.as_deref(), Some("goal"));
        assert_eq!(o.runs, 3);
        assert_eq!(o.size, 2 << 20);
        assert!(o.opencsd_size.is_none());
    }

    #[test]
    fn an_unknown_argument_or_a_missing_value_is_refused() {
        for args in [
            &["--help"][..],
            &["--runs"],
            &["--only", "goal", "stray"],
            &["--run", "3"],
        ] {
            let e = parse(args).err().unwrap_or_default();
            assert!(e.contains("usage: cargo xtask bench"), "{args:?}: {e:?}");
        }
        assert!(parse(&["--runs", "x"]).is_err());
    }
}
