//! Output files that appear complete or not at all.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file written under a temporary name beside its final path and renamed
/// into place by [`AtomicFile::commit`]. Dropped without a commit, the
/// temporary file is removed, so an interrupted or failed run never leaves
/// a partial file under the final name.
///
/// An existing path that is not a regular file (`/dev/null`, a named pipe,
/// a terminal) is written directly: renaming over it would replace the
/// device or pipe with a plain file.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    /// The temporary file, or `None` when writing a special file directly.
    tmp: Option<PathBuf>,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Start writing `path`.
    ///
    /// # Errors
    ///
    /// The error of creating the temporary file (for example a missing
    /// folder or no permission); an error too when `path` is an existing
    /// directory, found here rather than at the final rename.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        if path.is_dir() {
            return Err(io::Error::other("is a directory, not a file"));
        }
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            let file = std::fs::OpenOptions::new().write(true).open(path)?;
            return Ok(AtomicFile {
                path: path.to_path_buf(),
                tmp: None,
                writer: Some(BufWriter::with_capacity(1 << 16, file)),
            });
        }
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let file = File::create(&tmp)?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp: Some(tmp),
            writer: Some(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// Flush and move the file to its final name.
    ///
    /// # Errors
    ///
    /// The error of flushing, syncing or renaming.
    pub fn commit(mut self) -> io::Result<()> {
        let Some(w) = self.writer.take() else {
            return Ok(());
        };
        let file = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        match &self.tmp {
            Some(tmp) => {
                file.sync_all()?;
                std::fs::rename(tmp, &self.path)
            }
            None => Ok(()),
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.writer.as_mut() {
            Some(w) => w.write(buf),
            None => Err(io::Error::other("file already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            if let Some(tmp) = &self.tmp {
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_renames_and_drop_cleans_up() {
        let dir = std::env::temp_dir().join(format!("tc-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("out.txt");
        let mut f = AtomicFile::create(&path).expect("create");
        f.write_all(b"hello").expect("write");
        assert!(!path.exists(), "nothing under the final name before commit");
        f.commit().expect("commit");
        assert_eq!(std::fs::read(&path).expect("read"), b"hello");

        let other = dir.join("other.txt");
        {
            let mut g = AtomicFile::create(&other).expect("create");
            g.write_all(b"partial").expect("write");
        }
        assert!(!other.exists());
        assert_eq!(
            std::fs::read_dir(&dir).expect("ls").count(),
            1,
            "temp file removed"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn missing_folder_is_an_error() {
        assert!(AtomicFile::create(Path::new("/nonexistent-dir-xyz/out.json")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_written_in_place() {
        use std::os::unix::fs::FileTypeExt;
        let null = Path::new("/dev/null");
        if !std::fs::metadata(null).is_ok_and(|m| m.file_type().is_char_device()) {
            return;
        }
        let mut f = AtomicFile::create(null).expect("open /dev/null");
        f.write_all(&[0u8; 100_000]).expect("write");
        f.commit().expect("commit");
        let m = std::fs::metadata(null).expect("still there");
        assert!(
            m.file_type().is_char_device(),
            "/dev/null is still a device"
        );
    }
}
