//! The files reading an input opens, which no output may overwrite.

use super::Input;
use std::path::PathBuf;

impl Input {
    /// The files that reading this input opens: its capture files (or
    /// saved-events file) and,
    /// for a snapshot, `snapshot.ini`, the other `.ini` files beside it,
    /// the device files and the memory dumps; each path once, in the
    /// order first named (a perf.data recording's processes name the
    /// kernel's mapped files once each, and each name costs its caller a
    /// `stat`).
    #[must_use]
    pub fn files(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = self.captures.iter().map(|c| c.path.clone()).collect();
        v.extend(self.saved.iter().map(|s| s.path.clone()));
        if let Some(snap) = &self.snapshot {
            v.push(snap.dir.join("snapshot.ini"));
            if let Ok(rd) = std::fs::read_dir(&snap.dir) {
                v.extend(
                    rd.filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "ini")),
                );
            }
            for d in &snap.devices {
                v.push(d.file.clone());
                v.extend(d.dumps.iter().map(|m| m.path.clone()));
            }
            v.extend(snap.buffers.iter().map(|b| b.path.clone()));
        }
        let mut seen = std::collections::HashSet::new();
        v.retain(|p| seen.insert(p.clone()));
        v
    }
}
