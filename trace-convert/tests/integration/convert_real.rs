//! Converting the real captures: Chrome JSON that parses and nests, and
//! folded stacks whose weights add up to the instruction counts that
//! docs/conformance.md gives from OpenCSD's and DS-5's listings
//! (independent of this decoder).

use crate::convert_common::{check_chrome, folded_map, resolve, run};
use trace_convert::convert::ConvertOptions;
use trace_convert::input::flags::SourceFlags;
use trace_convert::sinks::folded::Weight;

#[test]
fn rstk_stacks_balance_and_weights_sum_to_the_instruction_count() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let input = resolve(&dir.join("tc2-ptm-rstk-t32"), &SourceFlags::default());
    let out = run(
        &input,
        &[],
        Weight::Instructions,
        &ConvertOptions::default(),
    );
    let chrome = check_chrome(&out.chrome);
    assert_eq!(chrome.threads, 1);
    // Every call (an executed branch with link) opens a slice.
    assert!(chrome.begins as u64 > out.report.stacks.calls);
    assert!(chrome.instants >= 2, "two exceptions are instants");
    let folded = folded_map(&out.folded);
    // 192,073 instructions: OpenCSD's decode listing of this capture.
    assert_eq!(folded.values().sum::<u64>(), 192_073);
    assert_eq!(out.report.stacks.dropped, 0);
    let sorted: Vec<&String> = folded.keys().collect();
    let lines: Vec<&str> = out
        .folded
        .lines()
        .map(|l| l.rsplit_once(' ').map_or(l, |x| x.0))
        .collect();
    assert_eq!(sorted, lines, "lines sorted, one per stack");
}

#[test]
fn tc2_stacks_balance_per_core_and_weights_sum_per_core() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let input = resolve(&dir.join("TC2"), &SourceFlags::default());
    let out = run(
        &input,
        &[],
        Weight::Instructions,
        &ConvertOptions::default(),
    );
    let chrome = check_chrome(&out.chrome);
    assert_eq!(chrome.threads, 4, "trace IDs 0x10 to 0x13");
    let folded = folded_map(&out.folded);
    // Instructions per trace ID from DS-5's dumps (docs/conformance.md table).
    for (id, want) in [
        (0x10, 7_205u64),
        (0x11, 7_471),
        (0x12, 1_947),
        (0x13, 9_548),
    ] {
        let prefix = format!("trace ID {id:#04x}");
        let got: u64 = folded
            .iter()
            .filter(|(k, _)| k.split(';').next() == Some(prefix.as_str()))
            .map(|(_, w)| w)
            .sum();
        assert_eq!(got, want, "{prefix}");
    }
    // Cycle weights add up to the cycles the trace carried.
    let cyc = run(&input, &[], Weight::Cycles, &ConvertOptions::default());
    let total: u64 = cyc.report.ids.values().map(|r| r.cycles).sum();
    assert!(total > 0);
    assert_eq!(folded_map(&cyc.folded).values().sum::<u64>(), total);
}

#[test]
fn a_small_depth_bound_drops_and_still_balances() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let input = resolve(&dir.join("tc2-ptm-rstk-t32"), &SourceFlags::default());
    let options = ConvertOptions {
        max_depth: 3,
        ..ConvertOptions::default()
    };
    let out = run(&input, &[], Weight::Instructions, &options);
    let chrome = check_chrome(&out.chrome);
    assert!(chrome.max_depth <= 3);
    assert!(out.report.stacks.dropped > 0);
    assert_eq!(folded_map(&out.folded).values().sum::<u64>(), 192_073);
}
