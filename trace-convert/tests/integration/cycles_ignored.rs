//! A source that is not configured cycle-accurate carries no cycle
//! counts: the cycle-count packets its trace still holds (the
//! 002b37c-zephyr capture of the TI AM243x, ETMCR 0xC40, has four, after
//! damage OpenCSD reports too) are ignored by every output and counted
//! as ignored, with their offsets; a cycle-accurate source keeps its
//! cycles.

use crate::convert_common::{folded_map, resolve, run};
use std::path::{Path, PathBuf};
use trace_convert::convert::ConvertOptions;
use trace_convert::input::flags::SourceFlags;
use trace_convert::sinks::folded::Weight;

/// How many `CYCLE_COUNT` packets OpenCSD's packet listing has (its `Idx`
/// numbers the bytes per frame block, so the count is compared, and the
/// offsets with our own packet listing's).
fn opencsd_cycle_count_packets(listing: &Path) -> usize {
    let bytes = std::fs::read(listing).expect("listing");
    let mut text = Vec::new();
    lzma_rs::xz_decompress(&mut &bytes[..], &mut text).expect("xz");
    String::from_utf8_lossy(&text)
        .lines()
        .filter(|l| l.starts_with("Idx:") && l.contains("\tCYCLE_COUNT : "))
        .count()
}

#[test]
fn zephyr_cycle_counts_are_ignored_and_said_where() {
    let Some(real) = test_support::real_dir() else {
        return;
    };
    let dir = real.join("am243x-r5f/002b37c-zephyr");
    let input = resolve(&dir, &SourceFlags::default());
    let elves: Vec<PathBuf> = vec![dir.join("zephyr.elf")];
    let out = run(&input, &elves, Weight::Cycles, &ConvertOptions::default());
    let id = &out.report.ids[&0x10];
    assert_eq!(id.cycles, 0, "no cycles counted");
    let packets =
        opencsd_cycle_count_packets(&real.join("am243x-r5f/expected/002b37c-zephyr.ppl.xz"));
    assert_eq!(packets, 4);
    assert_eq!(id.cycles_ignored, packets as u64);
    // The offsets of the first cycle-count packets, as the packet listing
    // gives them.
    let listing = std::process::Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(["packets", "--format", "jsonl"])
        .arg(&dir)
        .output()
        .expect("run");
    let offsets: Vec<u64> = String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "cycle_count")
        .filter_map(|v| v["offset"].as_u64())
        .collect();
    assert_eq!(offsets.len(), packets);
    assert_eq!(id.cycles_ignored_at, offsets[..3]);
    // Weighted by cycles, the folded stacks weigh nothing.
    assert_eq!(folded_map(&out.folded).values().sum::<u64>(), 0);
    // The command line says so, and counts no cycles.
    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .arg(&dir)
        .arg("--elf")
        .arg(&elves[0])
        .args(["--report", "-"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&cli.stderr);
    let stdout = String::from_utf8_lossy(&cli.stdout);
    assert!(
        stderr.contains(&format!(
            "ID 0x10: 4 cycle counts ignored: the source is not cycle-accurate (ETMCR bit 12 clear), so its trace carries no cycle counts; first at offset {}, {}, {}, ...",
            offsets[0], offsets[1], offsets[2]
        )),
        "{stderr}"
    );
    assert!(
        !stderr.contains(" cycles,") && !stderr.contains(" cycles\n"),
        "{stderr}"
    );
    assert!(
        !stdout.lines().next().unwrap_or_default().contains("cycles"),
        "{stdout}"
    );
}

#[test]
fn cycle_accurate_sources_keep_their_cycles() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    // TC2's sources are cycle-accurate: their cycles count.
    let input = resolve(&dir.join("TC2"), &SourceFlags::default());
    let out = run(&input, &[], Weight::Cycles, &ConvertOptions::default());
    for (id, r) in &out.report.ids {
        assert!(r.cycles > 0, "ID {id:#x}");
        assert_eq!(r.cycles_ignored, 0, "ID {id:#x}");
    }
}
