//! Development tasks, run as `cargo xtask <task>`:
//!
//! - `ci`: formatting, lints, the documentation with warnings denied,
//!   the library crates' feature combinations, the MSRV build (when that
//!   toolchain is installed), the `no_std` builds for a Cortex-M target,
//!   the whole test suite and conformance: what `.ci/run` runs.
//! - `conformance`: our packets against OpenCSD's listings of the real
//!   captures in `../shared/testdata/opencsd` and the third-party ones in
//!   `../shared/testdata/real`; with `--decode`, our decoded events
//!   against OpenCSD's decode listings, every instruction against ARM
//!   DS-5's dumps, and the third-party captures' instructions against
//!   OpenCSD's.
//! - `no-std`: the `no_std` builds alone (see [`no_std::run`]).
//! - `bench`: packet parsing and full decode throughput on large inputs
//!   built from the real captures.
//! - `gen-corpus`: build the programs in `corpus/` and record their
//!   emulated flow and expected coverage; `check-corpus` reruns the
//!   emulator on the committed ELFs and compares.
//! - `gen-example`: encode the corpus program `example` into the bundled
//!   example snapshot that `trace-convert` decodes without arguments.
//! - `assets [DIR]`: `trace-convert`'s shell completions and man pages.

mod align;
mod assets;
mod bench;
mod conformance;
mod conformance_decode;
mod conformance_real;
mod corpus;
mod example;
mod listing;
mod no_std;
mod publish_checks;
mod real_categories;
mod real_decode;
mod real_packets;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("conformance") if args.iter().any(|a| a == "--decode") => {
            let verbose = args.iter().any(|a| a == "--verbose");
            both(
                conformance_decode::run(&testdata_dir(), verbose),
                conformance_real::run_decode(&test_support::real_path(), verbose),
            )
        }
        Some("conformance") => both(
            conformance::run(&testdata_dir(), &args[1..]),
            conformance_real::run_packets(
                &test_support::real_path(),
                args.iter().any(|a| a == "--verbose"),
            ),
        ),
        Some("no-std") => no_std::run(),
        Some("bench") if args[1..].iter().any(|a| a == "--help" || a == "-h") => {
            println!("{}", bench::USAGE);
            Ok(())
        }
        Some("bench") => bench::run(&testdata_dir(), &args[1..]),
        Some("bench-decode") => bench::child(&args[1..]),
        Some("gen-corpus") => corpus::generate().and_then(|()| example::generate()),
        Some("gen-example") => example::generate(),
        Some("check-corpus") => corpus::check(&args[1..]),
        Some("assets") => assets::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci | conformance [--decode] [--verbose] | no-std | bench [--help] \
                 | gen-corpus | gen-example | check-corpus [--qemu] | assets [DIR]>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Both results, the errors of both when both failed.
fn both(a: Result<(), String>, b: Result<(), String>) -> Result<(), String> {
    match (a, b) {
        (Err(a), Err(b)) => Err(format!("{a}\n{b}")),
        (a, b) => a.and(b),
    }
}

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// `../shared/testdata/opencsd` beside the workspace.
fn testdata_dir() -> PathBuf {
    test_support::opencsd_path()
}

fn cargo(args: &[&str]) -> Result<(), String> {
    cargo_with_env(args, &[])
}

/// [`cargo`] with environment variables set.
fn cargo_with_env(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let shown: Vec<String> = env.iter().map(|(k, v)| format!("{k}=\"{v}\" ")).collect();
    eprintln!("xtask: {}cargo {}", shown.concat(), args.join(" "));
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed ({status})", args.join(" ")))
    }
}

fn ci() -> Result<(), String> {
    cargo(&["fmt", "--all", "--", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    publish_checks::docs()?;
    publish_checks::features()?;
    publish_checks::msrv_build()?;
    no_std::run()?;
    conformance::run(&testdata_dir(), &[])?;
    conformance_real::run_packets(&test_support::real_path(), false)?;
    conformance_decode::run(&testdata_dir(), false)?;
    conformance_real::run_decode(&test_support::real_path(), false)?;
    corpus_check_or_skip()?;
    fuzz_lock_is_current()?;
    cargo(&["test", "--workspace"])
}

/// `fuzz/` is a workspace of its own with its own `Cargo.lock`: resolving
/// it with `--locked` fails when the lock no longer matches the crates it
/// builds (as `cargo fuzz build` would then rewrite it).
fn fuzz_lock_is_current() -> Result<(), String> {
    let args = [
        "metadata",
        "--locked",
        "--format-version",
        "1",
        "--manifest-path",
        "fuzz/Cargo.toml",
    ];
    eprintln!("xtask: cargo {}", args.join(" "));
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .current_dir(root())
        .stdout(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "fuzz/Cargo.lock is out of date (refresh it with `cargo update --workspace --manifest-path fuzz/Cargo.toml`): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Rerun the emulator over the committed corpus; without the Python
/// modules it needs, say so and go on, except under CI.
fn corpus_check_or_skip() -> Result<(), String> {
    match corpus::check(&[]) {
        Err(e) if e.contains("cannot import") && std::env::var_os("CI").is_none() => {
            eprintln!("xtask: skipping check-corpus: {e}");
            Ok(())
        }
        other => other,
    }
}
