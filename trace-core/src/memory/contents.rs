//! File contents for memory images: opened only when they are regular
//! files, and mapped rather than read, so an image costs memory only for
//! the pages the decoder touches.

use alloc::sync::Arc;
use alloc::vec::Vec;
#[cfg(feature = "std")]
use std::fs::File;
#[cfg(feature = "std")]
use std::io;
#[cfg(feature = "std")]
use std::path::Path;

/// Open `path` for reading, refusing anything but a regular file.
///
/// The file is opened without blocking (a FIFO with no writer would
/// otherwise wait forever in `open`), and the check is made on what was
/// opened, not on the path, so a file swapped in between cannot slip by.
///
/// # Errors
///
/// The error of opening the file, or [`io::ErrorKind::InvalidInput`] when
/// it is a FIFO, a device, a socket or a directory.
#[cfg(feature = "std")]
pub fn open_regular(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    check_regular(&file)?;
    Ok(file)
}

/// Refuse `file` unless it is a regular file.
///
/// # Errors
///
/// [`io::ErrorKind::InvalidInput`] naming what the file is instead, or
/// the error of reading its metadata.
#[cfg(feature = "std")]
pub fn check_regular(file: &File) -> io::Result<()> {
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file (a {})", kind_name(kind)),
    ))
}

#[cfg(feature = "std")]
fn kind_name(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "FIFO";
        }
        if kind.is_char_device() {
            return "character device";
        }
        if kind.is_block_device() {
            return "block device";
        }
        if kind.is_socket() {
            return "socket";
        }
    }
    if kind.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// The bytes of a file or a buffer, shared by every region cut from them.
#[derive(Debug, Clone)]
pub struct Contents(Store);

#[derive(Debug, Clone)]
enum Store {
    Owned(Arc<[u8]>),
    #[cfg(feature = "std")]
    Mapped(Arc<memmap2::Mmap>),
}

impl Contents {
    /// Map the regular file `file` into memory (read only).
    ///
    /// Pages are read from the file when first touched, so a large or
    /// sparse file costs only what is used of it.
    ///
    /// # Errors
    ///
    /// The errors of [`check_regular`], or of mapping the file.
    #[cfg(feature = "std")]
    pub fn map(file: &File) -> io::Result<Contents> {
        check_regular(file)?;
        if file.metadata()?.len() == 0 {
            return Ok(Contents(Store::Owned(Arc::from(Vec::new()))));
        }
        // SAFETY: the mapping is read only, of a regular file (checked
        // above). Rust assumes the mapped bytes do not change while they
        // are borrowed; another process rewriting or truncating the file
        // during the run breaks that (a truncation ends the run with
        // SIGBUS). The inputs are captures and images at rest, and mapping
        // is what keeps memory in proportion to what is used: a 4 GiB
        // sparse `--mem` file took 12.6 GB of memory when read in.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(file)? };
        Ok(Contents(Store::Mapped(Arc::new(map))))
    }

    /// Open the regular file `path` and map it.
    ///
    /// # Errors
    ///
    /// The errors of [`open_regular`] and [`Contents::map`].
    #[cfg(feature = "std")]
    pub fn map_path(path: &Path) -> io::Result<Contents> {
        Contents::map(&open_regular(path)?)
    }

    /// The bytes.
    #[must_use]
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match &self.0 {
            Store::Owned(b) => b,
            #[cfg(feature = "std")]
            Store::Mapped(m) => m,
        }
    }

    /// Number of bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    /// Whether there are no bytes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<Arc<[u8]>> for Contents {
    fn from(bytes: Arc<[u8]>) -> Contents {
        Contents(Store::Owned(bytes))
    }
}

impl From<Vec<u8>> for Contents {
    fn from(bytes: Vec<u8>) -> Contents {
        Contents(Store::Owned(bytes.into()))
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn directories_are_refused_and_files_mapped() {
        let dir = std::env::temp_dir().join(format!("tc-contents-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let err = open_regular(&dir).expect_err("a directory");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let f = dir.join("f.bin");
        std::fs::write(&f, [1u8, 2, 3]).expect("write");
        assert_eq!(Contents::map_path(&f).expect("maps").bytes(), &[1, 2, 3]);
        std::fs::write(&f, []).expect("write");
        assert!(Contents::map_path(&f).expect("maps").is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }
}
