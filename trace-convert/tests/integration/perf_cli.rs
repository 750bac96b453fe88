//! The command line on perf.data recordings of every real capture gives
//! what it gives on the captures' snapshots: `packets` and `decode`
//! list the same items (offsets moved by where the trace lies in the
//! perf.data file), and a conversion writes the same LCOV, the same
//! folded stacks (under the recording's process instead of the cores)
//! and as many timeline slices. Needs the shared test data: skips without
//! it, fails when CI is set.

use crate::convert_common::{cli, folded_map};
use crate::perf_common::{spec_of, write};
use crate::perf_recordings::snapshots;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trace_convert::input::{flags::SourceFlags, resolve};

/// The JSON lines `args` print, each with `offset` (and an offset its
/// message starts with) less `shift`.
fn listing(args: &[&str], shift: u64) -> Vec<serde_json::Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(args)
        .output()
        .expect("run trace-convert");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let offset = v["offset"].as_u64().expect("an offset");
            v["offset"] = (offset - shift).into();
            // Messages name the offset in the file too.
            if let Some(m) = v["message"].as_str() {
                if let Some((n, rest)) =
                    m.strip_prefix("at offset ").and_then(|r| r.split_once(':'))
                {
                    let n: u64 = n.parse().expect("an offset");
                    v["message"] = format!("at offset {}:{rest}", n - shift).into();
                }
            }
            v
        })
        .collect()
}

/// The ELF beside a snapshot, if it has one.
fn elf_of(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .expect("snapshot")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "elf" || x == "out"))
}

/// Convert `input` to folded stacks, LCOV (with `elf`), Chrome JSON and
/// Perfetto; the folded stacks, LCOV and the number of Chrome slices.
fn convert(input: &Path, elf: Option<&Path>, out: &Path) -> (String, String, usize) {
    let (folded, lcov, chrome) = (out.join("t.folded"), out.join("t.info"), out.join("t.json"));
    let perfetto = out.join("t.pftrace");
    let mut args = vec![
        input.display().to_string(),
        "--folded".into(),
        folded.display().to_string(),
        "--chrome".into(),
        chrome.display().to_string(),
        "--perfetto".into(),
        perfetto.display().to_string(),
    ];
    if let Some(elf) = elf {
        args.extend([
            "--elf".into(),
            elf.display().to_string(),
            "--lcov".into(),
            lcov.display().to_string(),
        ]);
    }
    cli(&args);
    let pftrace = std::fs::metadata(&perfetto).expect("Perfetto trace").len();
    assert!(
        pftrace > 1000,
        "{}: {pftrace} bytes of Perfetto",
        input.display()
    );
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let begins = read(&chrome).matches(r#""ph":"B""#).count();
    (read(&folded), read(&lcov), begins)
}

/// Folded stacks with their first frame (the thread: a core, or the
/// recording's process) dropped when `rooted`, the rest added up.
fn unrooted(text: &str, rooted: bool) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (stack, w) in folded_map(text) {
        let rest = if rooted {
            stack
                .split_once(';')
                .map_or(String::new(), |(_, r)| r.to_owned())
        } else {
            stack
        };
        *out.entry(rest).or_default() += w;
    }
    out
}

#[test]
fn the_command_line_reads_recordings_as_their_snapshots() {
    let Some(dirs) = snapshots() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut compared = 0;
    for dir in dirs {
        let input = resolve(&dir, &SourceFlags::default()).expect("snapshot");
        let [cap] = &input.captures[..] else {
            panic!("{}: one capture", dir.display());
        };
        let (spec, _) = spec_of(&input, cap);
        let path = write(tmp.path(), "rec.data", &spec);
        let rec = resolve(&path, &SourceFlags::default()).expect("recording");
        let shift = rec.captures[0].range.expect("a piece").0;
        let (snap, perf) = (dir.display().to_string(), path.display().to_string());
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();

        let want = listing(&["packets", &snap, "--format", "jsonl"], 0);
        let got = listing(&["packets", &perf, "--format", "jsonl"], shift);
        assert!(want.len() > 1000, "{name}: {} packets", want.len());
        if let Some(i) = (0..want.len().max(got.len())).find(|&i| want.get(i) != got.get(i)) {
            panic!(
                "{name}: packet {i} of {} / {} differs: snapshot {:?}, recording {:?}",
                want.len(),
                got.len(),
                want.get(i),
                got.get(i)
            );
        }

        let want = listing(&["decode", &snap, "--format", "jsonl"], 0);
        let got = listing(&["decode", &perf, "--format", "jsonl"], shift);
        assert!(want.len() > 1000, "{name}: {} events", want.len());
        if let Some(i) = (0..want.len().max(got.len())).find(|&i| want.get(i) != got.get(i)) {
            panic!(
                "{name}: event {i} of {} / {} differs: snapshot {:?}, recording {:?}",
                want.len(),
                got.len(),
                want.get(i),
                got.get(i)
            );
        }

        let elf = elf_of(&dir);
        let (snap_out, perf_out) = (tmp.path().join("snap"), tmp.path().join("perf"));
        std::fs::create_dir_all(&snap_out).expect("dir");
        std::fs::create_dir_all(&perf_out).expect("dir");
        let (folded_s, lcov_s, slices_s) = convert(&dir, elf.as_deref(), &snap_out);
        let (folded_p, lcov_p, slices_p) = convert(&path, elf.as_deref(), &perf_out);
        // The snapshot's stacks start with their core when it has more
        // than one; the recording's always with its process.
        let cores = folded_map(&folded_s)
            .keys()
            .all(|k| k.starts_with("cpu_") || k.starts_with("Cortex"));
        assert!(
            folded_map(&folded_p)
                .keys()
                .all(|k| k.starts_with(&format!("{} (pid {});", spec.comm, spec.pid))),
            "{name}: stacks under the process"
        );
        assert_eq!(
            unrooted(&folded_p, true),
            unrooted(&folded_s, cores),
            "{name}: folded stacks"
        );
        assert_eq!(lcov_p, lcov_s, "{name}: LCOV");
        assert!(elf.is_none() || lcov_s.contains("DA:"), "{name}: line data");
        assert_eq!(slices_p, slices_s, "{name}: timeline slices");
        assert!(slices_s > 100, "{name}: {slices_s} slices");
        eprintln!(
            "{name}: packets, events, {} stacks, {} LCOV bytes, {slices_s} slices agree",
            unrooted(&folded_s, cores).len(),
            lcov_s.len()
        );
        compared += 1;
    }
    assert_eq!(
        compared, 6,
        "TC2, tc2-ptm-rstk-t32 and the four Cortex-R5 captures"
    );
}
