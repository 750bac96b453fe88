//! A snapshot folder: its files are opened relative to a handle on the
//! folder, in a way that cannot lead outside it (no `..` above it, no
//! absolute or escaping symbolic link), and only when they are regular
//! files.

use std::fmt;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// An open snapshot folder.
#[derive(Clone)]
pub struct Folder {
    dir: Arc<cap_std::fs::Dir>,
    path: PathBuf,
}

impl fmt::Debug for Folder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Folder").field(&self.path).finish()
    }
}

impl PartialEq for Folder {
    fn eq(&self, other: &Folder) -> bool {
        self.path == other.path
    }
}

impl Eq for Folder {}

/// The name `name` (written in a snapshot file) made relative to the
/// folder: `.` parts dropped and `..` parts applied, as long as they stay
/// inside; `None` for an empty or absolute name, or one whose `..` parts
/// climb above the folder.
#[must_use]
pub fn relative(name: &str) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in Path::new(name).components() {
        match c {
            Component::Normal(p) => parts.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.iter().collect())
}

/// What an open through a [`Folder`] says of a path that leads outside it.
const OUTSIDE: &str = "leads outside the snapshot folder";

/// Whether `e`, from [`Folder::open_file`], says the path led outside the
/// folder (through `..` or a link).
#[must_use]
pub fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied && e.to_string() == OUTSIDE
}

impl Folder {
    /// Open the folder at `path`.
    ///
    /// # Errors
    ///
    /// The error of opening it as a directory.
    pub fn open(path: &Path) -> io::Result<Folder> {
        let dir = cap_std::fs::Dir::open_ambient_dir(path, cap_std::ambient_authority())?;
        Ok(Folder {
            dir: Arc::new(dir),
            path: path.to_path_buf(),
        })
    }

    /// The folder's path as given.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Open the regular file `name` (relative, from [`relative`]) for
    /// reading. The open does not block (on a FIFO) and what was opened is
    /// checked to be a regular file.
    ///
    /// # Errors
    ///
    /// The error of opening it; a name leading outside the folder gives an
    /// error for which [`is_escape`] holds; anything but a regular file is
    /// [`io::ErrorKind::InvalidInput`].
    pub fn open_file(&self, name: &Path) -> io::Result<std::fs::File> {
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        }
        let file = self
            .dir
            .open_with(name, &options)
            .map_err(|e| {
                // cap-std's word for a path that escapes the folder.
                if e.kind() == io::ErrorKind::PermissionDenied && e.to_string().contains("outside")
                {
                    io::Error::new(io::ErrorKind::PermissionDenied, OUTSIDE)
                } else {
                    e
                }
            })?
            .into_std();
        trace_core::memory::check_regular(&file)?;
        Ok(file)
    }

    /// Read the regular file `name`, at most `max` bytes.
    ///
    /// # Errors
    ///
    /// The errors of [`Folder::open_file`]; `Ok(Err(size))` when the file
    /// holds more than `max` bytes (`size` is what was read, `max + 1`).
    pub fn read_capped(&self, name: &Path, max: u64) -> io::Result<Result<Vec<u8>, u64>> {
        let file = self.open_file(name)?;
        read_capped(file, max)
    }
}

/// Read at most `max` bytes of `file`; `Ok(Err(n))` when it holds more.
///
/// # Errors
///
/// The error of reading.
pub fn read_capped(file: impl Read, max: u64) -> io::Result<Result<Vec<u8>, u64>> {
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    let n = bytes.len() as u64;
    Ok(if n > max { Err(n) } else { Ok(bytes) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_inside_and_outside() {
        assert_eq!(relative("a.bin"), Some(PathBuf::from("a.bin")));
        assert_eq!(
            relative("./PTM_0_2.bin"),
            Some(PathBuf::from("PTM_0_2.bin"))
        );
        assert_eq!(relative("t/../t/x"), Some(PathBuf::from("t/x")));
        assert_eq!(relative("t/./x"), Some(PathBuf::from("t/x")));
        assert_eq!(relative(""), None);
        assert_eq!(relative("."), None);
        assert_eq!(relative("../x"), None);
        assert_eq!(relative("t/../../x"), None);
        assert_eq!(relative("/etc/passwd"), None);
    }
}
