//! The `packets` and `decode` listings are the same bytes on one thread
//! and on several (lines formatted on a thread of their own, the decode
//! on the others), in every format, with `--instructions` and
//! `--trace-id`. Needs the shared test data: skips without it, fails when
//! CI is set.

use std::path::Path;
use std::process::Command;

fn listing(dir: &Path, args: &[&str], jobs: &str) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .env("TRACE_CONVERT_JOBS", jobs)
        .args(args)
        .arg(dir)
        .output()
        .expect("run trace-convert");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn listings_are_the_same_bytes_on_any_number_of_threads() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let runs: [&[&str]; 8] = [
        &["packets", "--format", "jsonl"],
        &["packets"],
        &["packets", "--trace-id", "0x11"],
        &["decode", "--format", "jsonl"],
        &["decode"],
        &["decode", "--instructions"],
        &["decode", "--format", "jsonl", "--instructions"],
        &["decode", "--trace-id", "0x10", "--trace-id", "0x13"],
    ];
    for snap in ["TC2", "tc2-ptm-rstk-t32"] {
        let dir = dir.join(snap);
        for args in runs {
            // tc2-ptm-rstk-t32 has one source, 0x02.
            if snap != "TC2" && args.contains(&"--trace-id") {
                continue;
            }
            let one = listing(&dir, args, "1");
            // TC2's listings run to tens of thousands of lines: several
            // blocks of the formatting thread.
            assert!(one.len() > 100_000, "{snap} {args:?}: {} bytes", one.len());
            for jobs in ["2", "3"] {
                assert!(
                    listing(&dir, args, jobs) == one,
                    "{snap} {args:?}: {jobs} threads differ from one"
                );
            }
        }
    }
}
