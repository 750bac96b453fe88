//! Helpers shared by the workspace's tests: where the real captures are.
//!
//! The captures live in `../shared/testdata/opencsd` (and third-party ones
//! in `../shared/testdata/real`) beside the repository and are not part
//! of it. Tests that need them call [`opencsd_dir`]: on a
//! user's clone without that folder the test says so and passes; when the
//! `CI` environment variable is set, a missing folder fails the test.

pub mod opencsd_frames;
pub mod rng;
pub mod sigrok;

pub use rng::Rng;

use std::path::{Path, PathBuf};

/// Whether `program` runs with `args` and exits with success.
#[must_use]
pub fn runs(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What a test does without something it needs (`what`, with how to get
/// it): says it is skipped and returns `false`.
///
/// # Panics
///
/// When the `CI` environment variable is set: CI installs everything.
#[must_use]
pub fn missing(what: &str) -> bool {
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is required when CI is set"
    );
    eprintln!("skipping: {what} not available");
    false
}

/// Whether the tool `program` runs (checked with `args`, such as
/// `--version`); when it does not, as [`missing`] with `what`.
///
/// # Panics
///
/// As [`missing`].
#[must_use]
pub fn tool(program: &str, args: &[&str], what: &str) -> bool {
    runs(program, args) || missing(what)
}

/// The repository root (this crate lives one level below it).
#[must_use]
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The corpus fixtures (`corpus/fixtures`: the programs' ELF files,
/// recorded flows and coverage truth), or `None` (after printing why) when
/// their manifest is absent.
///
/// # Panics
///
/// When the manifest is absent and the `CI` environment variable is set.
#[must_use]
pub fn corpus_fixtures() -> Option<PathBuf> {
    let dir = repo_root().join("corpus/fixtures");
    if dir.join("manifest.json").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing and CI is set",
        dir.display()
    );
    eprintln!("skipping: {} not found", dir.display());
    None
}

/// The names of the corpus programs in `dir` (see [`corpus_fixtures`])
/// that have a file ending in `suffix` (`.flow`, `.cov.json`), sorted.
///
/// # Panics
///
/// When `dir` cannot be listed or holds no such file.
#[must_use]
pub fn corpus_programs(dir: &Path, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the corpus fixtures can be listed")
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(suffix)
                .map(str::to_owned)
        })
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no {suffix} file in {}", dir.display());
    names
}

/// `../shared/testdata/opencsd` beside the repository, whether or not it
/// exists.
#[must_use]
pub fn opencsd_path() -> PathBuf {
    repo_root().join("../shared/testdata/opencsd")
}

/// The OpenCSD test data folder, or `None` (after printing why) when it is
/// absent.
///
/// # Panics
///
/// When the folder is absent and the `CI` environment variable is set.
#[must_use]
pub fn opencsd_dir() -> Option<PathBuf> {
    present(opencsd_path())
}

/// `../shared/testdata/real` beside the repository (third-party captures
/// with OpenCSD listings), whether or not it exists.
#[must_use]
pub fn real_path() -> PathBuf {
    repo_root().join("../shared/testdata/real")
}

/// The third-party captures folder (see [`real_path`]), or `None` (after
/// printing why) when it is absent.
///
/// # Panics
///
/// When the folder is absent and the `CI` environment variable is set.
#[must_use]
pub fn real_dir() -> Option<PathBuf> {
    present(real_path())
}

/// Read a file below the OpenCSD test data folder; `None` when the folder
/// is absent (see [`opencsd_dir`]).
///
/// # Panics
///
/// When the folder exists but the file cannot be read, or as
/// [`opencsd_dir`] does.
#[must_use]
pub fn read_opencsd(rel: &str) -> Option<Vec<u8>> {
    let path = opencsd_dir()?.join(rel);
    Some(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// The perf.data files recorded by others, with Linux perf's dumps of
/// them (`../shared/testdata/perf`), or `None` (after printing why) when
/// absent.
///
/// # Panics
///
/// When the folder is absent and the `CI` environment variable is set.
#[must_use]
pub fn perf_dir() -> Option<PathBuf> {
    present(repo_root().join("../shared/testdata/perf"))
}

/// `dir` when it is a folder; else `None` after printing that the tests
/// needing it are skipped.
///
/// # Panics
///
/// When `dir` is absent and the `CI` environment variable is set.
fn present(dir: PathBuf) -> Option<PathBuf> {
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing and CI is set",
        dir.display()
    );
    eprintln!("skipping: {} not found", dir.display());
    None
}
