//! Which kind of input a path holds, told from what it is (a folder) and
//! how it starts (the perf.data magic), as `object::FileKind` tells file
//! formats apart: the one place an input's format is recognised.

use super::perf;
use super::saved;
use super::InputError;
use std::io::Read;
use std::path::Path;

/// The kinds of input, each read by a module of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A snapshot directory (`snapshot.ini` and the files it names), read
    /// by [`super::snapshot`].
    Snapshot,
    /// A `perf.data` recording of `perf record -e cs_etm//`, read by
    /// [`super::perf`].
    PerfData,
    /// A capture file of trace bytes, described by flags
    /// ([`super::flags`]).
    Capture,
    /// Events saved by `--save-events`, read by [`super::saved`].
    SavedEvents,
}

impl Kind {
    /// The kind of the input at `path`: a folder is a snapshot directory,
    /// a regular file starting with the perf.data magic a recording, one
    /// starting with the saved-events magic saved events, any other file a
    /// capture; so is a stream ([`super::stream::Stream::parse`]: it is
    /// not read here).
    ///
    /// # Errors
    ///
    /// [`InputError::NotFound`] when nothing is at `path`.
    pub fn detect(path: &Path) -> Result<Kind, InputError> {
        if super::stream::Stream::parse(path).is_some() {
            return Ok(Kind::Capture);
        }
        if path.is_dir() {
            return Ok(Kind::Snapshot);
        }
        let head = head(path);
        if perf::is_perf_data(&head) {
            Ok(Kind::PerfData)
        } else if saved::is_saved_events(&head) {
            Ok(Kind::SavedEvents)
        } else if path.exists() {
            Ok(Kind::Capture)
        } else {
            Err(InputError::NotFound(path.to_path_buf()))
        }
    }

    /// The kind's name, as messages and listings give it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Kind::Snapshot => "snapshot directory",
            Kind::PerfData => "perf.data recording",
            Kind::Capture => "capture file",
            Kind::SavedEvents => "saved events",
        }
    }
}

/// The first 8 bytes of the regular file `path`, where the magics of
/// perf.data and saved-events files are (zeros when it is shorter or
/// cannot be read; a FIFO or a device is not opened for reading).
fn head(path: &Path) -> [u8; 8] {
    let mut head = [0u8; 8];
    if trace_core::memory::open_regular(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_err()
    {
        head = [0; 8];
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_recordings_and_captures_are_told_apart() {
        let dir = tempfile::tempdir().expect("dir");
        assert_eq!(Kind::detect(dir.path()).ok(), Some(Kind::Snapshot));
        let perf = dir.path().join("perf.data");
        // The magic is `PERFILE2` (tools/perf/util/header.c).
        std::fs::write(&perf, b"PERFILE2\x68\0\0\0\0\0\0\0").expect("write");
        assert_eq!(Kind::detect(&perf).ok(), Some(Kind::PerfData));
        let capture = dir.path().join("etb.bin");
        std::fs::write(&capture, [0x00, 0x00, 0x00, 0x80]).expect("write");
        assert_eq!(Kind::detect(&capture).ok(), Some(Kind::Capture));
        let saved = dir.path().join("run.events");
        std::fs::write(&saved, b"TCEVENTS\x02\0").expect("write");
        assert_eq!(Kind::detect(&saved).ok(), Some(Kind::SavedEvents));
        let short = dir.path().join("short.bin");
        std::fs::write(&short, b"PERF").expect("write");
        assert_eq!(Kind::detect(&short).ok(), Some(Kind::Capture));
        assert!(matches!(
            Kind::detect(&dir.path().join("missing")),
            Err(InputError::NotFound(_))
        ));
    }
}
