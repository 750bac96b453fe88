//! Output files that appear complete or not at all.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file written under a temporary name beside its final path and renamed
/// into place by [`AtomicFile::commit`]. Dropped without a commit, the
/// temporary file is removed, so an interrupted or failed run never leaves
/// a partial file under the final name.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
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
            tmp,
            writer: Some(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// Flush and move the file to its final name.
    ///
    /// # Errors
    ///
    /// The error of flushing, syncing or renaming.
    pub fn commit(mut self) -> io::Result<()> {
        if let Some(w) = self.writer.take() {
            let file = w.into_inner().map_err(io::IntoInnerError::into_error)?;
            file.sync_all()?;
        }
        std::fs::rename(&self.tmp, &self.path)
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
            let _ = std::fs::remove_file(&self.tmp);
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
}
