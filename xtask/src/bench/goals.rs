//! Rows of the performance goals not covered elsewhere, each a ratio
//! measured in the same run:
//!
//! - the deformatter alone on TC2's formatted buffer (MB/s, goal 500);
//! - the CLI's listings against its own `decode --format none` of the
//!   same file (JSONL within 1.5×, text within 3×), the packet listings in
//!   MB/s (goal 100), and each on all threads against one (goal 1.7×);
//! - the CLI's conversions of the frame-dense raw PTM capture (×256 by
//!   default, `--goal-copies`; Chrome,
//!   Perfetto, folded stacks, written to standard output and discarded,
//!   so that the disk is not measured) against `decode --format none`
//!   (goals 3×, 2×, 2×), and on all threads against one (goal 1.6×);
//! - with `--rss-mb N`, the peak memory of every output on an N MiB input
//!   (goal: under 100 MB whatever the size);
//! - a capture read as a stream (a loopback TCP connection, a FIFO)
//!   against the same file (goal: within 10% of its time), and the peak
//!   memory of an N MiB stream over TCP (goal: under 100 MB).
//!
//! Two more kinds of `goal:` rows are made where their measurements are:
//! the cycle-accurate ETMv3 engine by runs (M instructions/s, goal 150)
//! beside the engine rows, and `decode --format none` against OpenCSD's
//! `-decode_only -profile` (goal 25× on the raw PTM capture ×1,024, 10×
//! on TC2's buffer ×64) beside the OpenCSD rows, in the same run.
//!
//! The CLI runs as a child process; times are the best of the runs, one
//! thread and all alternating.

use super::{encoded_snapshot, run_child, snapshot_with, Opts, Row};
use std::path::Path;
use std::time::{Duration, Instant};
use trace_core::frames::{Deformatter, FrameEvent, FrameMode};

/// Tag of these rows for `--only`.
pub const TAG: &str = "goal";

/// The deformatter on `buffer` (whole frames), fed 4 KiB at a time as the
/// demultiplexer is.
pub fn deformat_row(opts: &Opts, buffer: &[u8], base: f64) -> Row {
    let mut best = Duration::MAX;
    let mut bytes = 0usize;
    for _ in 0..opts.runs {
        let t = Instant::now();
        let mut d = Deformatter::new(FrameMode::Memory);
        let mut n = 0usize;
        for chunk in buffer.chunks(4096) {
            d.feed_each(chunk, |ev| {
                if let FrameEvent::Data(run) = ev {
                    n += run.data().len();
                }
            });
        }
        best = best.min(t.elapsed());
        bytes = std::hint::black_box(n);
    }
    Row {
        what: format!("{TAG}: deformatter, TC2 buffer"),
        bytes: buffer.len(),
        time: best,
        instructions: None,
        base,
        note: format!(
            "{:.0} MB/s (goal 500); {:.0}% of the bytes are payload",
            buffer.len() as f64 / best.as_secs_f64() / 1e6,
            100.0 * bytes as f64 / buffer.len().max(1) as f64
        ),
    }
}

/// Best wall time of `args` on `snap` with `TRACE_CONVERT_JOBS` at each
/// of `jobs`, alternating; and the peak memory of each.
fn times(
    opts: &Opts,
    bin: &Path,
    args: &[&str],
    snap: &Path,
    jobs: &[usize],
) -> Result<Vec<(Duration, u64)>, String> {
    let mut out = vec![(Duration::MAX, 0u64); jobs.len()];
    for _ in 0..opts.runs.min(5) {
        for (i, j) in jobs.iter().enumerate() {
            let n = j.to_string();
            let (t, p, _) = run_child(bin, args, snap, &[], false, &[("TRACE_CONVERT_JOBS", &n)])?;
            out[i].0 = out[i].0.min(t);
            out[i].1 = out[i].1.max(p);
        }
    }
    Ok(out)
}

/// Best wall time of the library's one-thread decode of `snap` in a child
/// process (`xtask bench-decode SNAP 1 runs`), handing every event to a
/// consumer that reads it whole: ETMv3 by runs, as `decode --format none`.
fn events_time(opts: &Opts, snap: &Path) -> Result<Duration, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut best = Duration::MAX;
    for _ in 0..opts.runs.min(5) {
        let (t, _, _) = run_child(&me, &["bench-decode"], snap, &["1", "runs"], false, &[])?;
        best = best.min(t);
    }
    Ok(best)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// The listing and conversion rows on the CLI-sized copies of the raw PTM
/// capture and TC2's buffer (`inputs`: name, snapshot, capture file).
pub fn cli_rows(
    opts: &Opts,
    bin: &Path,
    jobs: usize,
    inputs: &[(&str, &Path, &Path)],
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let threads = if jobs > 1 { vec![1, jobs] } else { vec![1] };
    for &(name, snap, file) in inputs {
        let bytes = std::fs::metadata(file).map_or(0, |m| m.len()) as usize;
        let mut runs: Vec<(String, Vec<&str>, &str, f64)> = vec![
            (
                "decode --format jsonl".into(),
                vec!["decode", "--format", "jsonl"],
                "1.5x",
                1.5,
            ),
            ("decode (text)".into(), vec!["decode"], "3x", 3.0),
            (
                "packets --format jsonl".into(),
                vec!["packets", "--format", "jsonl"],
                "",
                0.0,
            ),
            ("packets (text)".into(), vec!["packets"], "", 0.0),
        ];
        // Conversions of the frame-dense capture.
        if name.starts_with("PTM") {
            runs.extend([
                (
                    "--chrome".into(),
                    vec!["--no-progress", "--chrome", "-"],
                    "3x",
                    3.0,
                ),
                (
                    "--perfetto".into(),
                    vec!["--no-progress", "--perfetto", "-"],
                    "2x",
                    2.0,
                ),
                (
                    "--folded".into(),
                    vec!["--no-progress", "--folded", "-"],
                    "2x",
                    2.0,
                ),
            ]);
        }
        let row_of = |what: &str| format!("{TAG}: CLI {what}, {name}");
        runs.retain(|(what, ..)| opts.wants(&row_of(what)));
        if runs.is_empty() {
            continue;
        }
        // The baseline, on one thread: what every ratio is against.
        let none = times(opts, bin, &["decode", "--format", "none"], snap, &[1])?;
        // `--format none` builds no events (its consumer takes nothing):
        // every listing and conversion pays for them, so each is also set
        // against the same decode handing on every event, read whole.
        let events = events_time(opts, snap)?;
        for (what, args, goal, limit) in runs {
            let row = row_of(&what);
            let t = times(opts, bin, &args, snap, &threads)?;
            let mut note = if limit > 0.0 {
                let r = ratio(t[0].0, none[0].0);
                format!(
                    "{r:.2}x decode --format none ({:.0} ms; goal {goal}{}); \
                     {:.2}x the decode handing on every event ({:.0} ms)",
                    none[0].0.as_secs_f64() * 1e3,
                    if r <= limit { ", met" } else { ", not met" },
                    ratio(t[0].0, events),
                    events.as_secs_f64() * 1e3,
                )
            } else {
                let mb = bytes as f64 / t[0].0.as_secs_f64() / 1e6;
                format!(
                    "{mb:.0} MB/s (goal 100{})",
                    if mb >= 100.0 { ", met" } else { ", not met" }
                )
            };
            if let Some(&(tn, _)) = t.get(1) {
                let goal = if what.starts_with("--") { 1.6 } else { 1.7 };
                let s = ratio(t[0].0, tn);
                note += &format!(
                    "; {jobs} threads {s:.2}x one (goal {goal}x{})",
                    if s >= goal { ", met" } else { ", not met" }
                );
            }
            note += &format!("; peak RSS {:.1} MB", t[0].1 as f64 / 1e6);
            rows.push(Row {
                what: row,
                bytes,
                time: t[0].0,
                instructions: None,
                base: 0.0,
                note,
            });
        }
    }
    Ok(())
}

/// Peak memory of each output on a copy of TC2's buffer of `opts.rss_size`
/// bytes (call-stack resets at every gap: the input that grew the folded
/// stacks' memory), each written to standard output (discarded), and of
/// all outputs but Chrome's at once, into files; LCOV and AutoFDO, which
/// need an ELF, on the corpus program `example` encoded as PTM to the
/// same size.
pub fn rss_rows(
    opts: &Opts,
    bin: &Path,
    tc2_dir: &Path,
    unit: &[u8],
    dir: &Path,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    if opts.rss_size == 0 || !opts.may_want(&format!("{TAG}: peak RSS")) {
        return Ok(());
    }
    let (snap, file) = snapshot_with(tc2_dir, &dir.join("rss"), unit, opts.rss_size)?;
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len()) as usize;
    let files = dir.join("rss-out");
    std::fs::create_dir_all(&files).map_err(|e| e.to_string())?;
    let out = |n: &str| files.join(n).display().to_string();
    let (pf, fo, rep, ev) = (
        out("t.pftrace"),
        out("t.folded"),
        out("t.txt"),
        out("t.events"),
    );
    let outputs: Vec<(&str, Vec<&str>)> = vec![
        ("decode --format none", vec!["decode", "--format", "none"]),
        ("decode --format jsonl", vec!["decode", "--format", "jsonl"]),
        (
            "packets --format jsonl",
            vec!["packets", "--format", "jsonl"],
        ),
        ("--chrome -", vec!["--no-progress", "--chrome", "-"]),
        ("--perfetto -", vec!["--no-progress", "--perfetto", "-"]),
        ("--folded -", vec!["--no-progress", "--folded", "-"]),
        ("--report -", vec!["--no-progress", "--report", "-"]),
        (
            "--save-events -",
            vec!["--no-progress", "--save-events", "-"],
        ),
        (
            "--perfetto, --folded, --report and --save-events to files",
            vec![
                "--no-progress",
                "--perfetto",
                &pf,
                "--folded",
                &fo,
                "--report",
                &rep,
                "--save-events",
                &ev,
            ],
        ),
    ];
    for (what, args) in outputs {
        rows.extend(rss_row(
            opts,
            bin,
            &args,
            &snap,
            &format!("{what}, TC2"),
            bytes,
        )?);
        for f in [&pf, &fo, &rep, &ev] {
            let _ = std::fs::remove_file(f);
        }
    }
    let _ = std::fs::remove_dir_all(&snap);
    // Coverage and the sample profile need an ELF with DWARF lines: the
    // corpus program `example` encoded as PTM, with its ELF.
    let (snap, file) = encoded_snapshot(&dir.join("rss-elf"), true, opts.rss_size)?;
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len()) as usize;
    let elf = crate::example::fixture("example-t")?.elf;
    let elf = elf.to_str().ok_or("ELF path")?;
    for (what, args) in [
        ("--lcov -", ["--no-progress", "--elf", elf, "--lcov", "-"]),
        (
            "--autofdo -",
            ["--no-progress", "--elf", elf, "--autofdo", "-"],
        ),
    ] {
        rows.extend(rss_row(
            opts,
            bin,
            &args,
            &snap,
            &format!("{what}, encoded example"),
            bytes,
        )?);
    }
    let _ = std::fs::remove_dir_all(dir.join("rss-elf"));
    let _ = std::fs::remove_dir_all(&files);
    Ok(())
}

/// One run of the CLI with `args` on `snap` (`bytes` of capture) on the
/// default threads (all of them, for the parallel decode's memory): its
/// peak memory against the goal; nothing when the row is not wanted.
fn rss_row(
    opts: &Opts,
    bin: &Path,
    args: &[&str],
    snap: &Path,
    what: &str,
    bytes: usize,
) -> Result<Option<Row>, String> {
    let what = format!("{TAG}: peak RSS, {what} {} MiB", bytes >> 20);
    if !opts.wants(&what) {
        return Ok(None);
    }
    let (time, peak, _) = run_child(bin, args, snap, &[], false, &[])?;
    Ok(Some(Row {
        what,
        bytes,
        time,
        instructions: None,
        base: 0.0,
        note: format!(
            "peak RSS {:.1} MB (goal < 100 MB{})",
            peak as f64 / 1e6,
            if peak < 100_000_000 {
                ", met"
            } else {
                ", not met"
            }
        ),
    }))
}

/// A loopback server sending `bytes` (the file `from`, or `unit` repeated
/// to `size` bytes) to its first client as fast as it takes them, then
/// closing; its address as `tcp://...`.
fn tcp_server(
    from: Option<&Path>,
    unit: &[u8],
    size: usize,
) -> Result<(String, std::thread::JoinHandle<()>), String> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = format!(
        "tcp://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    let file = from.map(std::path::Path::to_path_buf);
    let unit = unit.to_vec();
    let t = std::thread::spawn(move || {
        let Ok((mut c, _)) = listener.accept() else {
            return;
        };
        match file {
            Some(p) => {
                if let Ok(mut f) = std::fs::File::open(p) {
                    let mut buf = vec![0u8; 1 << 20];
                    while let Ok(n) = f.read(&mut buf) {
                        if n == 0 || c.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                }
            }
            None => {
                let mut sent = 0;
                while sent < size && !unit.is_empty() {
                    if c.write_all(&unit).is_err() {
                        break;
                    }
                    sent += unit.len();
                }
            }
        }
    });
    Ok((addr, t))
}

/// A FIFO in `dir` fed with the file `from` once a reader opens it.
fn fifo_feeder(
    dir: &Path,
    from: &Path,
) -> Result<(std::path::PathBuf, std::thread::JoinHandle<()>), String> {
    let fifo = dir.join("stream.fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .map_err(|e| format!("mkfifo: {e}"))?;
    if !made.success() {
        return Err("mkfifo failed".into());
    }
    let (path, from) = (fifo.clone(), from.to_path_buf());
    let t = std::thread::spawn(move || {
        if let (Ok(mut w), Ok(mut r)) = (
            std::fs::OpenOptions::new().write(true).open(&path),
            std::fs::File::open(&from),
        ) {
            let _ = std::io::copy(&mut r, &mut w);
        }
    });
    Ok((fifo, t))
}

/// Stream against file: the folded stacks of the raw PTM capture
/// (`unit` repeated to four times `--cli-mb`) from the file, over a
/// loopback TCP connection and through a FIFO, each with the snapshot's
/// configuration (goal: within 10% of the file's time); and the peak
/// memory of a TCP stream of `--rss-mb` (goal: under 100 MB).
pub fn stream_rows(
    opts: &Opts,
    bin: &Path,
    rstk_dir: &Path,
    unit: &[u8],
    dir: &Path,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let prefix = format!("{TAG}: stream");
    if !opts.may_want(&prefix) {
        return Ok(());
    }
    let dir = dir.join("stream");
    let (snap, file) = snapshot_with(rstk_dir, &dir, unit, 4 * opts.cli_size)?;
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len()) as usize;
    let snap_arg = snap.to_str().ok_or("snapshot path")?;
    let args = ["--no-progress", "--folded", "-"];
    let with_snapshot = ["--no-progress", "--folded", "-", "--snapshot", snap_arg];
    let what = |how: &str| format!("{prefix} {how} vs file, --folded, PTM raw");
    let ways = ["over TCP", "through a FIFO"];
    if ways.iter().any(|w| opts.wants(&what(w))) {
        let (mut file_t, mut tcp_t, mut fifo_t) = (Duration::MAX, Duration::MAX, Duration::MAX);
        for _ in 0..opts.runs.min(3) {
            file_t = file_t.min(run_child(bin, &args, &snap, &[], false, &[])?.0);
            let (addr, server) = tcp_server(Some(&file), &[], 0)?;
            tcp_t = tcp_t.min(run_child(bin, &with_snapshot, Path::new(&addr), &[], false, &[])?.0);
            let _ = server.join();
            let (fifo, feeder) = fifo_feeder(&dir, &file)?;
            fifo_t = fifo_t.min(run_child(bin, &with_snapshot, &fifo, &[], false, &[])?.0);
            let _ = feeder.join();
        }
        for (way, t) in ways.iter().zip([tcp_t, fifo_t]) {
            let r = ratio(t, file_t);
            rows.push(Row {
                what: what(way),
                bytes,
                time: t,
                instructions: None,
                base: 0.0,
                note: format!(
                    "{r:.2}x the file's time ({:.0} ms; goal within 10%{})",
                    file_t.as_secs_f64() * 1e3,
                    if r <= 1.10 { ", met" } else { ", not met" }
                ),
            });
        }
    }
    let rss = format!(
        "{prefix} over TCP, peak RSS, --folded -, PTM raw {} MiB",
        opts.rss_size >> 20
    );
    if opts.rss_size > 0 && opts.wants(&rss) {
        let (addr, server) = tcp_server(None, unit, opts.rss_size)?;
        let (time, peak, _) = run_child(bin, &with_snapshot, Path::new(&addr), &[], false, &[])?;
        let _ = server.join();
        rows.push(Row {
            what: rss,
            bytes: opts.rss_size,
            time,
            instructions: None,
            base: 0.0,
            note: format!(
                "peak RSS {:.1} MB (goal < 100 MB{})",
                peak as f64 / 1e6,
                if peak < 100_000_000 {
                    ", met"
                } else {
                    ", not met"
                }
            ),
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
