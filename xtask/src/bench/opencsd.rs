//! Rows of `cargo xtask bench` that time the CLI against OpenCSD's
//! `trc_pkt_lister` on the same snapshot directory in the same run:
//! packets listed, full decode listed, and the CLI's decode without a
//! listing (`--format none`). The runs alternate (OpenCSD, then ours, for
//! each run), both sides write their listings to /dev/null, and the CLI
//! decodes on one thread (`TRACE_CONVERT_JOBS=1`), as `trc_pkt_lister`
//! does. Without `trc_pkt_lister` on the `PATH` (Debian: package
//! `libopencsd-bin`) one row says so and the others are skipped.

use super::{decode_file, run_child, Opts, Row};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use trace_convert::input::{flags::SourceFlags, resolve};

/// The words every row of this module has in its name (for `--only`).
pub(super) const TAG: &str = "OpenCSD";

/// `trc_pkt_lister` on the `PATH`, if there is one.
fn lister() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("trc_pkt_lister"))
        .find(|f| f.is_file())
}

/// Instructions in OpenCSD's decode of `snap`: the sum of the `num_i(N)`
/// of its instruction ranges, read from its listing as it is written.
fn opencsd_instructions(lister: &Path, snap: &Path) -> Result<u64, String> {
    let mut child = Command::new(lister)
        .arg("-ss_dir")
        .arg(snap)
        // Without a named log file it also writes `trc_pkt_lister.ppl`
        // into its working directory.
        .args(["-decode_only", "-logstdout", "-logfilename", "/dev/null"])
        .current_dir(snap)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", lister.display()))?;
    let out = child.stdout.take().ok_or("no listing")?;
    let mut n = 0u64;
    for line in std::io::BufReader::new(out).split(b'\n') {
        let line = line.map_err(|e| e.to_string())?;
        let Some(at) = line.windows(6).position(|w| w == b"num_i(") else {
            continue;
        };
        let digits = line[at + 6..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .fold(0u64, |a, &b| a * 10 + u64::from(b - b'0'));
        n += digits;
    }
    child.wait().map_err(|e| e.to_string())?;
    Ok(n)
}

/// The rows for each `(name, snapshot, capture file, byte-sum base)`.
///
/// # Errors
///
/// A run that fails or a snapshot that does not resolve.
pub(super) fn rows(
    opts: &Opts,
    bin: &Path,
    inputs: &[(&str, PathBuf, PathBuf, f64)],
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let Some(lister) = lister() else {
        rows.push(Row {
            what: format!("{TAG} rows skipped"),
            bytes: 0,
            time: Duration::ZERO,
            instructions: None,
            base: 0.0,
            note: "trc_pkt_lister is not on the PATH (Debian: libopencsd-bin)".into(),
        });
        return Ok(());
    };
    let null = "/dev/null";
    for (name, snap, file, base) in inputs {
        let bytes = std::fs::metadata(file).map_or(0, |m| m.len()) as usize;
        let input = resolve(snap, &SourceFlags::default()).map_err(|e| e.to_string())?;
        let spec = input.captures.first().ok_or("no capture")?;
        let (ours, _) = decode_file(&input, spec, None, false)?;
        let theirs = opencsd_instructions(&lister, snap)?;
        // (OpenCSD arguments or CLI arguments, after the input.)
        let runs: [(&str, bool, &[&str]); 5] = [
            ("packets", true, &["-logfilename", null]),
            ("packets", false, &["packets"]),
            ("decode", true, &["-decode_only", "-logfilename", null]),
            ("decode", false, &["decode", "--format", "jsonl"]),
            ("decode", false, &["decode", "--format", "none"]),
        ];
        let label = |i: usize| match i {
            0 => format!("{TAG} trc_pkt_lister (packets), {name}"),
            2 => format!("{TAG} trc_pkt_lister -decode_only, {name}"),
            _ => format!("vs {TAG}: CLI {}, {name}", runs[i].2.join(" ")),
        };
        let mut best = [Duration::MAX; 5];
        for _ in 0..opts.runs.min(3) {
            for (i, (_, opencsd, args)) in runs.iter().enumerate() {
                let (t, _, _) = if *opencsd {
                    run_child(&lister, &["-ss_dir"], snap, args, false, &[])?
                } else {
                    let (sub, rest) = args.split_first().ok_or("no subcommand")?;
                    let mut all = vec![*sub];
                    all.extend_from_slice(rest);
                    run_child(bin, &all, snap, &[], false, &[("TRACE_CONVERT_JOBS", "1")])?
                };
                best[i] = best[i].min(t);
            }
        }
        let (packets, decode) = (best[0], best[2]);
        for (i, (what, opencsd, _)) in runs.iter().enumerate() {
            let time = best[i];
            let reference = if *what == "packets" { packets } else { decode };
            let note = if *opencsd {
                if *what == "decode" {
                    format!("{theirs} instructions (ours {ours})")
                } else {
                    String::new()
                }
            } else {
                format!(
                    "{:.3}x OpenCSD's time ({:.1}x as fast)",
                    time.as_secs_f64() / reference.as_secs_f64(),
                    reference.as_secs_f64() / time.as_secs_f64()
                )
            };
            let instructions = match (*what, *opencsd) {
                ("decode", true) => Some(theirs),
                ("decode", false) => Some(ours),
                _ => None,
            };
            rows.push(Row {
                what: label(i),
                bytes,
                time,
                instructions,
                base: *base,
                note,
            });
        }
    }
    Ok(())
}
