//! Temporary files left by a run that was killed (SIGKILL, a power cut)
//! before it could remove them: their names say whose they are, so the
//! next run writing the same output finds them, removes those whose
//! process is gone and names the others.
//!
//! A temporary file of output `NAME` is `.NAME.trace-convert.PID.XXXXXX.tmp`
//! in the output's folder (`PID`: the process writing it; `XXXXXX`:
//! random letters and digits), and its writer holds an advisory lock
//! (`flock`) on it until it is renamed or removed; the kernel drops the
//! lock when the process dies, however it dies. A file is stale, and
//! removed, when no process holds its lock and no process of its `PID`
//! runs here: a writer in another PID namespace still holds its lock, and
//! a `PID` reused by another program keeps a file it should not (it is
//! named, not removed).

use std::ffi::OsString;
use std::path::Path;

/// The word that marks a temporary file as ours.
const MARK: &str = "trace-convert";

/// The start of the names of this process's temporary files for an
/// output whose file name is `name` (the random part and `.tmp` follow).
pub(crate) fn prefix(name: &std::ffi::OsStr) -> OsString {
    prefix_of(name, std::process::id())
}

fn prefix_of(name: &std::ffi::OsStr, pid: u32) -> OsString {
    let mut p = OsString::from(".");
    p.push(name);
    p.push(format!(".{MARK}.{pid}."));
    p
}

/// The process that made the temporary file `entry` of output `name`,
/// when `entry` is one (by its name).
fn owner(entry: &std::ffi::OsStr, name: &std::ffi::OsStr) -> Option<u32> {
    let mut head = OsString::from(".");
    head.push(name);
    head.push(format!(".{MARK}."));
    let rest = entry
        .as_encoded_bytes()
        .strip_prefix(head.as_encoded_bytes())?
        .strip_suffix(b".tmp")?;
    let dot = rest.iter().position(|&b| b == b'.')?;
    let (pid, random) = (&rest[..dot], &rest[dot + 1..]);
    if random.is_empty() || !random.iter().all(u8::is_ascii_alphanumeric) {
        return None;
    }
    if pid.is_empty() || pid.len() > 10 || !pid.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(pid).ok()?.parse().ok()
}

/// Take the lock of the temporary file `file` (just created): a
/// duplicate of it, which keeps the lock until dropped; `None` where
/// locks are not available.
pub(crate) fn lock(file: &std::fs::File) -> Option<std::fs::File> {
    #[cfg(unix)]
    {
        use rustix::fs::{flock, FlockOperation};
        flock(file, FlockOperation::NonBlockingLockExclusive).ok()?;
        file.try_clone().ok()
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}

/// Whether a process holds the lock of the file at `path`: `None` when
/// that cannot be told.
fn locked(path: &Path) -> Option<bool> {
    #[cfg(unix)]
    {
        use rustix::fs::{flock, FlockOperation};
        let file = std::fs::File::open(path).ok()?;
        match flock(&file, FlockOperation::NonBlockingLockShared) {
            // Released when `file` is dropped.
            Ok(()) => Some(false),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Some(true),
            Err(_) => None,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Whether process `pid` is running (`true` where that cannot be told).
fn running(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// Look in `dir` for temporary files of output `path` left by other runs:
/// remove those whose process is gone, and say what was found, one note
/// each.
pub(crate) fn sweep(path: &Path, dir: &Path) -> Vec<String> {
    let Some(name) = path.file_name() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut notes = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let Some(pid) = owner(&e.file_name(), name) else {
            continue;
        };
        // Only regular files (not a link someone put there).
        if pid == me || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let at = e.path();
        if locked(&at) == Some(true) || running(pid) {
            notes.push(format!(
                "{}: a temporary file of {}, made by process {pid}, which is still running or holds it (another run writing the same output?): left alone",
                at.display(),
                path.display()
            ));
            continue;
        }
        let size = e.metadata().map_or(0, |m| m.len());
        notes.push(match std::fs::remove_file(&at) {
            Ok(()) => format!(
                "removed {} ({size} bytes), a temporary file of {} left by a run that was killed (process {pid})",
                at.display(),
                path.display()
            ),
            Err(err) => format!(
                "{}: a temporary file of {} left by a run that was killed (process {pid}), cannot be removed: {err}",
                at.display(),
                path.display()
            ),
        });
    }
    notes.sort();
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn only_our_names_for_this_output_are_recognised() {
        let name = OsStr::new("stacks.folded");
        let ours = |s: &str| owner(OsStr::new(s), name);
        assert_eq!(
            ours(".stacks.folded.trace-convert.4242.a8Xk2p.tmp"),
            Some(4242)
        );
        let mut own = prefix(name);
        own.push("Zz09ab.tmp");
        assert_eq!(owner(&own, name), Some(std::process::id()));
        for other in [
            "stacks.folded",
            ".stacks.folded.a8Xk2p.tmp",
            ".stacks.folded.trace-convert.4242.tmp",
            ".stacks.folded.trace-convert..a8Xk2p.tmp",
            ".stacks.folded.trace-convert.42x.a8Xk2p.tmp",
            ".stacks.folded.trace-convert.4242.a8X/k2p.tmp",
            ".stacks.folded.trace-convert.4242.a8Xk2p.tmp.bak",
            ".other.folded.trace-convert.4242.a8Xk2p.tmp",
            ".stacks.folded.x.trace-convert.4242.a8Xk2p.tmp",
        ] {
            assert_eq!(ours(other), None, "{other}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_locked_file_is_in_use_whatever_its_process_number() {
        let dir = std::env::temp_dir().join(format!("tc-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        // A process number that ran and is gone.
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let gone = child.id();
        child.wait().expect("wait");
        let out = dir.join("t.folded");
        let tmp = dir.join(format!(".t.folded.trace-convert.{gone}.Xy12Zz.tmp"));
        let file = std::fs::File::create(&tmp).expect("create");
        // Held as by a writer in another PID namespace: left alone.
        let held = lock(&file).expect("a lock");
        assert_eq!(locked(&tmp), Some(true));
        let notes = sweep(&out, &dir);
        assert!(tmp.exists(), "{notes:?}");
        assert!(notes[0].contains("left alone"), "{notes:?}");
        // Released (the writer died): removed.
        drop((held, file));
        assert_eq!(locked(&tmp), Some(false));
        let notes = sweep(&out, &dir);
        assert!(!tmp.exists(), "{notes:?}");
        assert!(notes[0].starts_with("removed"), "{notes:?}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
