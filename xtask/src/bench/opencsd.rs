//! Rows of `cargo xtask bench` that time the CLI against OpenCSD's
//! `trc_pkt_lister` on the same snapshot directory in the same run:
//! packets listed, the decode listed (ours as JSON Lines and as text), and
//! the decode without a listing: ours `--format none`, OpenCSD's
//! `-decode_only -profile` (its fastest mode, which decodes and prints
//! nothing) where the lister has that option (v1.8.0 and 1.5.5, Debian
//! trixie's source package, have it; Debian bookworm's 1.3.3 does not).
//! The runs alternate (every command once per run), every listing goes to
//! /dev/null, and the CLI decodes on one thread (`TRACE_CONVERT_JOBS=1`),
//! as `trc_pkt_lister` does.
//!
//! Asked only for the goal rows (`--only goal`, not `OpenCSD`), only
//! `--format none` and `-decode_only -profile` run: OpenCSD's listings of
//! the goals' sizes take minutes each.
//!
//! The lister is the one named by `XTASK_OPENCSD` (a path; its own folder
//! goes first in `LD_LIBRARY_PATH`, where OpenCSD's makefile build puts its
//! shared libraries), else `trc_pkt_lister` on the `PATH` (Debian:
//! `libopencsd-bin`); without either one row says so.

use super::real_snapshots::Capture;
use super::{decode_file, run_child, Opts, Row};
use std::ffi::OsString;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use trace_convert::input::{flags::SourceFlags, resolve};

/// The words every row of this module has in its name (for `--only`).
pub(super) const TAG: &str = "OpenCSD";

/// The environment variable that names the `trc_pkt_lister` to use.
const ENV: &str = "XTASK_OPENCSD";

/// `decode --format none` against OpenCSD `-decode_only -profile`, on
/// the raw PTM capture and on every other input.
const GOAL_NONE_PTM: f64 = 25.0;
const GOAL_NONE: f64 = 10.0;
/// `decode --format jsonl` against OpenCSD `-decode_only` (listing), on
/// the raw PTM capture.
const GOAL_JSONL: f64 = 25.0;
/// Any listing of ours against OpenCSD `-decode_only -profile`.
const GOAL_LISTING: f64 = 1.0;

/// An OpenCSD `trc_pkt_lister` and what it supports.
pub(super) struct Lister {
    path: PathBuf,
    /// `LD_LIBRARY_PATH` for it, when it is not the one on the `PATH`.
    library_path: Option<OsString>,
    /// The library version its help text reports.
    version: String,
    /// Whether it has `-profile`.
    profile: bool,
}

impl Lister {
    /// A command running the lister with its library path set.
    fn command(&self) -> Command {
        let mut c = Command::new(&self.path);
        if let Some(p) = &self.library_path {
            c.env("LD_LIBRARY_PATH", p);
        }
        c.stdin(Stdio::null()).stderr(Stdio::null());
        c
    }

    /// What the rows say of it.
    fn describe(&self) -> String {
        format!("{} (library {})", self.path.display(), self.version)
    }
}

/// `trc_pkt_lister` on the `PATH`, if there is one.
fn on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("trc_pkt_lister"))
        .find(|f| f.is_file())
}

/// The lister named by `XTASK_OPENCSD`, else the one on the `PATH`, with
/// its version and options read from its help text (run in `tmp`, where
/// it leaves a log file); `None` without either.
///
/// # Errors
///
/// `XTASK_OPENCSD` naming no file, or a lister that cannot be run.
pub(super) fn lister(tmp: &Path) -> Result<Option<Lister>, String> {
    let (path, library_path) = match std::env::var_os(ENV) {
        Some(p) => {
            let path = PathBuf::from(p);
            if !path.is_file() {
                return Err(format!("{ENV}={}: no such file", path.display()));
            }
            let mut dirs: Vec<PathBuf> = path.parent().map(Path::to_path_buf).into_iter().collect();
            if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
                dirs.extend(std::env::split_paths(&old));
            }
            let joined = std::env::join_paths(dirs).map_err(|e| e.to_string())?;
            (path, Some(joined))
        }
        None => match on_path() {
            Some(p) => (p, None),
            None => return Ok(None),
        },
    };
    let mut lister = Lister {
        path,
        library_path,
        version: "unknown".into(),
        profile: false,
    };
    let help = lister
        .command()
        .arg("-help")
        .current_dir(tmp)
        .output()
        .map_err(|e| format!("{}: {e}", lister.path.display()))?;
    let _ = std::fs::remove_file(tmp.join("trc_pkt_lister.ppl"));
    let (version, profile) = read_help(&String::from_utf8_lossy(&help.stdout));
    if let Some(v) = version {
        lister.version = v;
    }
    lister.profile = profile;
    Ok(Some(lister))
}

/// The library version a lister's help text reports, and whether it lists
/// the `-profile` option.
fn read_help(text: &str) -> (Option<String>, bool) {
    let version = text
        .lines()
        .find_map(|l| l.split_once("Library Version :"))
        .map(|(_, v)| v.trim().to_owned());
    let profile = text
        .lines()
        .any(|l| l.split_whitespace().next() == Some("-profile"));
    (version, profile)
}

/// Whether `line` holds the lister's closing words (after an error
/// message on the same line, when its decode halted).
fn is_closing(line: &[u8]) -> bool {
    let key = b"Trace Packet Lister : Trace buffer done";
    line.windows(key.len()).any(|w| w == key)
}

/// The byte count of the lister's closing line ("Trace buffer done,
/// processed N bytes"), if `line` is it.
fn processed(line: &[u8]) -> Option<u64> {
    let key = b"processed ";
    let at = line.windows(key.len()).position(|w| w == key)?;
    let digits: Vec<u8> = line[at + key.len()..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .copied()
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// Instructions in OpenCSD's decode of `snap` (the sum of the `num_i(N)`
/// of its instruction ranges, read from its listing as it is written) and
/// the bytes it says it processed.
fn opencsd_instructions(lister: &Lister, snap: &Path) -> Result<(u64, Option<u64>), String> {
    let mut child = lister
        .command()
        .arg("-ss_dir")
        .arg(snap)
        // Without a named log file it also writes `trc_pkt_lister.ppl`
        // into its working directory.
        .args(["-decode_only", "-logstdout", "-logfilename", "/dev/null"])
        .current_dir(snap)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", lister.path.display()))?;
    let out = child.stdout.take().ok_or("no listing")?;
    let (mut n, mut done) = (0u64, None);
    for line in std::io::BufReader::new(out).split(b'\n') {
        let line = line.map_err(|e| e.to_string())?;
        let Some(at) = line.windows(6).position(|w| w == b"num_i(") else {
            if is_closing(&line) {
                done = processed(&line);
            }
            continue;
        };
        let digits = line[at + 6..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .fold(0u64, |a, &b| a * 10 + u64::from(b - b'0'));
        n += digits;
    }
    child.wait().map_err(|e| e.to_string())?;
    Ok((n, done))
}

/// One run of the lister on `snap` with `args`: wall time, the bytes it
/// says it processed (read from its log on standard output when `log`),
/// and how it ended. The exit status is not an error: v1.8.0 with
/// `-profile` crashes at exit, after the whole buffer.
fn run_lister(
    lister: &Lister,
    snap: &Path,
    args: &[&str],
    log: bool,
) -> Result<(Duration, Option<u64>, String), String> {
    let t = Instant::now();
    let mut child = lister
        .command()
        .arg("-ss_dir")
        .arg(snap)
        .args(args)
        .current_dir(snap)
        .stdout(if log { Stdio::piped() } else { Stdio::null() })
        .spawn()
        .map_err(|e| format!("{}: {e}", lister.path.display()))?;
    let mut text = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_end(&mut text).map_err(|e| e.to_string())?;
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let elapsed = t.elapsed();
    let done = text
        .split(|&b| b == b'\n')
        .filter(|l| is_closing(l))
        .find_map(processed);
    Ok((elapsed, done, status.to_string()))
}

/// One timed command.
struct Cmd {
    /// Row name (before the input's name).
    label: &'static str,
    /// OpenCSD's (arguments after `-ss_dir DIR`) or ours (subcommand and
    /// arguments, before the input).
    opencsd: bool,
    args: &'static [&'static str],
    /// Instructions are counted for it (a decode).
    decode: bool,
}

const PACKETS: usize = 0;
const DECODE_ONLY: usize = 2;
const PROFILE: usize = 3;
const NONE: usize = 6;

/// Every command, in the order of a run; `PROFILE` only where the lister
/// has `-profile`.
const CMDS: [Cmd; 7] = [
    Cmd {
        label: "trc_pkt_lister (packets)",
        opencsd: true,
        args: &["-logfilename", "/dev/null"],
        decode: false,
    },
    Cmd {
        label: "packets",
        opencsd: false,
        args: &["packets"],
        decode: false,
    },
    Cmd {
        label: "trc_pkt_lister -decode_only",
        opencsd: true,
        args: &["-decode_only", "-logfilename", "/dev/null"],
        decode: true,
    },
    Cmd {
        label: "trc_pkt_lister -decode_only -profile",
        opencsd: true,
        args: &["-decode_only", "-profile", "-logstdout"],
        decode: true,
    },
    Cmd {
        label: "decode --format jsonl",
        opencsd: false,
        args: &["decode", "--format", "jsonl"],
        decode: true,
    },
    Cmd {
        label: "decode (text)",
        opencsd: false,
        args: &["decode"],
        decode: true,
    },
    Cmd {
        label: "decode --format none",
        opencsd: false,
        args: &["decode", "--format", "none"],
        decode: true,
    },
];

/// "met" or "NOT met" for a ratio against its goal.
fn verdict(ratio: f64, goal: f64) -> &'static str {
    if ratio >= goal {
        "met"
    } else {
        "NOT met"
    }
}

/// The row saying that the OpenCSD rows are skipped, and why.
pub(super) fn skipped(why: String) -> Row {
    Row {
        what: format!("{TAG} rows skipped"),
        bytes: 0,
        time: Duration::ZERO,
        instructions: None,
        base: 0.0,
        note: why,
    }
}

/// The rows for each input.
///
/// # Errors
///
/// A run of ours that fails or a snapshot that does not resolve.
pub(super) fn rows(
    opts: &Opts,
    bin: &Path,
    lister: &Lister,
    inputs: &[Capture],
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    if !lister.profile {
        rows.push(skipped(format!(
            "-profile rows: {} has no -profile (set {ENV} to a lister that has it, such as v1.8.0's)",
            lister.describe()
        )));
    }
    if !opts.wants(TAG) {
        // Only the goal rows: OpenCSD's listings (minutes each on the
        // goals' sizes) are not run.
        return goal_rows(bin, lister, inputs, opts.runs.min(3), rows);
    }
    for input in inputs {
        let name = &input.name;
        let bytes = std::fs::metadata(&input.file).map_or(0, |m| m.len());
        let resolved = resolve(&input.snap, &SourceFlags::default()).map_err(|e| e.to_string())?;
        let spec = resolved.captures.first().ok_or("no capture")?;
        let (ours, _) = decode_file(&resolved, spec, None, false, false)?;
        let (theirs, done) = opencsd_instructions(lister, &input.snap)?;
        if done.is_some_and(|d| d < bytes) {
            rows.push(Row {
                what: format!("{TAG} rows of {name} skipped"),
                bytes: 0,
                time: Duration::ZERO,
                instructions: None,
                base: 0.0,
                note: format!(
                    "trc_pkt_lister stops after {} of {bytes} bytes ({theirs} instructions, \
                     ours {ours}): nothing to compare",
                    done.unwrap_or(0)
                ),
            });
            continue;
        }
        let active = |i: usize| i != PROFILE || lister.profile;
        let mut best = [Duration::MAX; CMDS.len()];
        let mut profile_end = (None, String::new());
        for _ in 0..opts.runs.min(3) {
            for (i, cmd) in CMDS.iter().enumerate().filter(|(i, _)| active(*i)) {
                let t = if cmd.opencsd {
                    let (t, done, status) =
                        run_lister(lister, &input.snap, cmd.args, i == PROFILE)?;
                    if i == PROFILE {
                        profile_end = (done, status);
                    }
                    t
                } else {
                    run_child(
                        bin,
                        cmd.args,
                        &input.snap,
                        &[],
                        false,
                        &[("TRACE_CONVERT_JOBS", "1")],
                    )?
                    .0
                };
                best[i] = best[i].min(t);
            }
        }
        let vs = |i: usize, reference: usize| best[reference].as_secs_f64() / best[i].as_secs_f64();
        let ptm = name.starts_with("PTM");
        for (i, cmd) in CMDS.iter().enumerate().filter(|(i, _)| active(*i)) {
            let note = match i {
                PACKETS => String::new(),
                1 => format!("{:.1}x as fast as OpenCSD's packets", vs(i, PACKETS)),
                DECODE_ONLY => {
                    format!("{theirs} instructions (ours {ours}); {}", lister.describe())
                }
                PROFILE => format!(
                    "prints nothing; processed {} of {bytes} bytes; exit: {}",
                    profile_end
                        .0
                        .map_or_else(|| "?".to_owned(), |d| d.to_string()),
                    profile_end.1
                ),
                _ => {
                    let listing = vs(i, DECODE_ONLY);
                    let mut note = format!("{listing:.1}x as fast as -decode_only");
                    if i == 4 && ptm {
                        note += &format!(" (goal {GOAL_JSONL}x: {})", verdict(listing, GOAL_JSONL));
                    }
                    if lister.profile {
                        let fastest = vs(i, PROFILE);
                        let goal = if i == NONE {
                            none_goal(name)
                        } else {
                            GOAL_LISTING
                        };
                        note += &format!(
                            "; {fastest:.2}x as fast as -profile (goal {goal}x: {})",
                            verdict(fastest, goal)
                        );
                    }
                    note
                }
            };
            let what = if cmd.opencsd {
                format!("{TAG} {}, {name}", cmd.label)
            } else {
                format!("vs {TAG}: CLI {}, {name}", cmd.label)
            };
            let instructions = cmd
                .decode
                .then_some(if cmd.opencsd { theirs } else { ours });
            rows.push(Row {
                what,
                bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
                time: best[i],
                instructions,
                base: input.base,
                note,
            });
        }
        // The goal itself, on a row of its own.
        let goal = none_goal(name);
        let note = if lister.profile {
            profile_verdict(vs(NONE, PROFILE), goal)
        } else {
            format!(
                "not measured: {} has no -profile; {:.2}x as fast as -decode_only",
                lister.describe(),
                vs(NONE, DECODE_ONLY)
            )
        };
        rows.push(Row {
            what: goal_row_name(name),
            bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
            time: best[NONE],
            instructions: Some(ours),
            base: input.base,
            note,
        });
    }
    Ok(())
}

/// The goal of `decode --format none` against `-profile` on the input
/// named `name`.
fn none_goal(name: &str) -> f64 {
    if name.starts_with("PTM") {
        GOAL_NONE_PTM
    } else {
        GOAL_NONE
    }
}

/// The name of the goal row of the input named `name`.
fn goal_row_name(name: &str) -> String {
    format!(
        "{}: decode --format none vs {TAG}, {name}",
        super::goals::TAG
    )
}

/// What the goal row says of a ratio `r` against `-profile` for `goal`.
fn profile_verdict(r: f64, goal: f64) -> String {
    format!(
        "{r:.2}x as fast as OpenCSD -decode_only -profile (goal {goal}x: {})",
        verdict(r, goal)
    )
}

/// The goal rows alone: `decode --format none` against `-decode_only
/// -profile`, best of `runs` each, taken in turn; the profile run must
/// have gone through the whole capture.
fn goal_rows(
    bin: &Path,
    lister: &Lister,
    inputs: &[Capture],
    runs: usize,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let none = &CMDS[NONE];
    for input in inputs {
        let name = &input.name;
        let bytes = std::fs::metadata(&input.file).map_or(0, |m| m.len());
        let goal = none_goal(name);
        let what = goal_row_name(name);
        let row = |time, note| Row {
            what: what.clone(),
            bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
            time,
            instructions: None,
            base: input.base,
            note,
        };
        if !lister.profile {
            rows.push(row(
                Duration::ZERO,
                format!("not measured: {} has no -profile", lister.describe()),
            ));
            continue;
        }
        let (mut ours, mut theirs) = (Duration::MAX, Duration::MAX);
        let mut end = (None, String::new());
        for _ in 0..runs.max(1) {
            let (t, done, status) = run_lister(lister, &input.snap, CMDS[PROFILE].args, true)?;
            theirs = theirs.min(t);
            end = (done, status);
            let (t, _, _) = run_child(
                bin,
                none.args,
                &input.snap,
                &[],
                false,
                &[("TRACE_CONVERT_JOBS", "1")],
            )?;
            ours = ours.min(t);
        }
        let note = match end.0 {
            Some(done) if done >= bytes => {
                let r = theirs.as_secs_f64() / ours.as_secs_f64();
                format!(
                    "{}; OpenCSD {:.3} s; {}",
                    profile_verdict(r, goal),
                    theirs.as_secs_f64(),
                    lister.describe()
                )
            }
            done => format!(
                "not measured: trc_pkt_lister -profile processed {} of {bytes} bytes (exit: {})",
                done.map_or_else(|| "?".to_owned(), |d| d.to_string()),
                end.1
            ),
        };
        rows.push(row(ours, note));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{is_closing, processed, read_help};

    #[test]
    fn the_byte_count_is_read_from_the_closing_line_even_after_an_error() {
        let plain =
            b"Trace Packet Lister : Trace buffer done, processed 16786168 bytes in 7.6 seconds.";
        assert!(is_closing(plain));
        assert_eq!(processed(plain), Some(16_786_168));
        let halted = b"0x0017 (ERR) bad config.Trace Packet Lister : Trace buffer done, processed 28624 bytes in 0.001 seconds.";
        assert!(is_closing(halted));
        assert_eq!(processed(halted), Some(28_624));
        assert!(!is_closing(b"Idx:16; ID:10; TRACE_ON"));
    }

    #[test]
    fn the_help_text_gives_the_version_and_whether_profile_is_there() {
        let with = "x\n** Library Version : 1.8.0\n\n-stats  Output statistics.\n-profile            Mute logging\n";
        assert_eq!(read_help(with), (Some("1.8.0".to_owned()), true));
        // An option that only starts with the word does not count.
        let without = "** Library Version : 1.3.3\n-profiled   other\n-stats  x\n";
        assert_eq!(read_help(without), (Some("1.3.3".to_owned()), false));
        assert_eq!(read_help(""), (None, false));
    }
}
