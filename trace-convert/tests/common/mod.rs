//! Locating the shared real captures (`../shared/testdata` beside the repo).

use std::path::PathBuf;

/// The OpenCSD test data folder, or `None` (with a message) when it is
/// absent. Absence fails the test when the `CI` environment variable is set.
pub fn opencsd_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/testdata/opencsd");
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
