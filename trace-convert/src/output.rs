//! Output files that appear complete, all of them, or not at all.
//!
//! An [`OutputPlan`] takes every output of a run before anything is read
//! or written: it resolves each path (following symbolic links to the
//! file they name, `-` for standard output), refuses two outputs that are
//! one file, more than one `-`, a folder, block device or socket as an
//! output, and (with [`OutputPlan::check_inputs`]) an output that is one
//! of the run's inputs. [`OutputPlan::create`] then makes a temporary file
//! beside each regular file (removing the temporary files of the same
//! output left by a killed run, see [`OutputSet::notes`]), and
//! [`OutputSet::commit`] renames them all
//! into place once every one is complete. A run that fails or is dropped
//! before the commit leaves nothing under a final name and no temporary
//! file; [`remove_temporaries_on_signal`] extends that to SIGINT, SIGTERM
//! and SIGHUP.
//!
//! A file that is replaced keeps its permissions and owner (the temporary
//! file is given them); one with other hard links, or whose owner cannot
//! be given, is overwritten in place at the commit instead of renamed
//! over, so that it stays the same file.
//!
//! Named pipes, character devices (`/dev/null`) and descriptor links
//! (`/dev/stdout`) are written in place as the data comes, like standard
//! output: they are never renamed over.

mod cleanup;
mod stale;
mod target;

pub use cleanup::{remove_temporaries_on_signal, stop_streams_on_signal};

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use target::{FileId, Kind, Problem};

/// Why the outputs cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// An output is one of the inputs (the same file, also through a link).
    #[error("{label} `{}` is the input `{}` (the same file): writing it would destroy the input; choose another output path", output.display(), input.display())]
    SameAsInput {
        /// The output's flag.
        label: String,
        /// The output path as given.
        output: PathBuf,
        /// The input path.
        input: PathBuf,
    },
    /// Two outputs are one file.
    #[error("{label} `{}` and {other_label} `{}` are the same file: give each output its own path", path.display(), other.display())]
    Duplicate {
        /// The later output's flag.
        label: String,
        /// The later output's path.
        path: PathBuf,
        /// The earlier output's flag.
        other_label: String,
        /// The earlier output's path.
        other: PathBuf,
    },
    /// More than one output goes to standard output (`-`, `/dev/stdout`,
    /// `/proc/self/fd/1`, or the file or pipe standard output writes).
    #[error("{label} and {other_label} both go to standard output: only one output can")]
    TwoStdout {
        /// The later output's flag.
        label: String,
        /// The earlier output's flag.
        other_label: String,
    },
    /// The path names something that is not written as an output.
    #[error("{}: is {what}, not a file", path.display())]
    NotAFile {
        /// The output path as given.
        path: PathBuf,
        /// What it is ("a folder", "a block device", "a socket").
        what: &'static str,
    },
    /// The output's folder does not exist.
    #[error("{}: the folder `{}` does not exist", path.display(), folder.display())]
    MissingFolder {
        /// The output path as given.
        path: PathBuf,
        /// The missing folder.
        folder: PathBuf,
    },
    /// A component of the output's folder is a file.
    #[error("{}: `{}` is not a folder", path.display(), folder.display())]
    NotAFolder {
        /// The output path as given.
        path: PathBuf,
        /// The component that is not a folder.
        folder: PathBuf,
    },
    /// A loop or too long a chain of symbolic links.
    #[error("{}: too many levels of symbolic links", path.display())]
    TooManyLinks {
        /// The output path as given.
        path: PathBuf,
    },
    /// A sink never completed its output: a bug, reported rather than
    /// committing a partial file.
    #[error("{}: the output was not completed", path.display())]
    Incomplete {
        /// The output path as given.
        path: PathBuf,
    },
    /// Creating, writing or renaming failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The output path as given.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

impl OutputError {
    /// Whether the command line is at fault (an output that is an input or
    /// another output, two `-`), rather than the file system.
    #[must_use]
    pub fn is_misuse(&self) -> bool {
        matches!(
            self,
            OutputError::SameAsInput { .. }
                | OutputError::Duplicate { .. }
                | OutputError::TwoStdout { .. }
        )
    }

    fn of(path: &Path, problem: Problem) -> OutputError {
        let path = path.to_path_buf();
        match problem {
            Problem::NotAFile(what) => OutputError::NotAFile { path, what },
            Problem::MissingFolder(folder) => OutputError::MissingFolder { path, folder },
            Problem::NotAFolder(folder) => OutputError::NotAFolder { path, folder },
            Problem::TooManyLinks => OutputError::TooManyLinks { path },
            Problem::Io(source) => OutputError::Io { path, source },
        }
    }
}

/// One planned output.
#[derive(Debug)]
struct Planned {
    label: String,
    given: PathBuf,
    kind: Kind,
    /// The canonical name of a regular file (see [`target::canonical`]).
    name: Option<PathBuf>,
}

/// The outputs of a run, checked, before anything is created.
#[derive(Debug, Default)]
pub struct OutputPlan {
    outputs: Vec<Planned>,
}

/// Which output of a plan (in the order added).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputId(usize);

impl OutputPlan {
    /// No outputs yet.
    #[must_use]
    pub fn new() -> OutputPlan {
        OutputPlan::default()
    }

    /// Add the output `path` (`-` for standard output), named `label` in
    /// messages (its flag, say `--chrome`). With `make_folders`, folders
    /// missing on the way to it are created at the commit.
    ///
    /// # Errors
    ///
    /// A path that is a folder, block device or socket, a missing folder
    /// (without `make_folders`), a folder that is a file, a link loop, an
    /// output that is one file with an earlier one, a second `-`.
    pub fn add(
        &mut self,
        label: &str,
        path: &Path,
        make_folders: bool,
    ) -> Result<OutputId, OutputError> {
        let kind = target::resolve(path, make_folders).map_err(|p| OutputError::of(path, p))?;
        let name = target::canonical(&kind);
        let stdout = target::stdout_id();
        for other in &self.outputs {
            if kind.is_stdout(stdout.as_ref()) && other.kind.is_stdout(stdout.as_ref()) {
                return Err(OutputError::TwoStdout {
                    label: label.to_owned(),
                    other_label: other.label.clone(),
                });
            }
            let same_name = name.is_some() && name == other.name;
            let same_file = kind.id().is_some() && kind.id() == other.kind.id();
            // Several outputs may share `/dev/null` (not a terminal: their
            // lines would interleave).
            let shared_device = matches!(
                kind,
                Kind::InPlace {
                    char_device: true,
                    ..
                }
            ) && kind.id() == target::file_id(Path::new("/dev/null")).as_ref();
            if same_name || (same_file && !shared_device) {
                return Err(OutputError::Duplicate {
                    label: label.to_owned(),
                    path: path.to_path_buf(),
                    other_label: other.label.clone(),
                    other: other.given.clone(),
                });
            }
        }
        self.outputs.push(Planned {
            label: label.to_owned(),
            given: path.to_path_buf(),
            kind,
            name,
        });
        Ok(OutputId(self.outputs.len() - 1))
    }

    /// Refuse an output that is one of `inputs` (the same file: the same
    /// device and inode, also through hard or symbolic links). Inputs that
    /// do not exist are left to the code that reads them.
    ///
    /// # Errors
    ///
    /// [`OutputError::SameAsInput`] for the first such output.
    pub fn check_inputs<'p>(
        &self,
        inputs: impl IntoIterator<Item = &'p Path>,
    ) -> Result<(), OutputError> {
        let mut ids: Vec<(FileId, &Path)> = Vec::new();
        for input in inputs {
            if let Some(id) = target::file_id(input) {
                ids.push((id, input));
            }
        }
        for out in &self.outputs {
            let Some(id) = out.kind.id() else { continue };
            if let Some((_, input)) = ids.iter().find(|(i, _)| i == id) {
                return Err(OutputError::SameAsInput {
                    label: out.label.clone(),
                    output: out.given.clone(),
                    input: input.to_path_buf(),
                });
            }
        }
        Ok(())
    }

    /// Whether the plan has no outputs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// Whether output `id` goes to standard output.
    #[must_use]
    pub fn is_stdout(&self, id: OutputId) -> bool {
        self.outputs
            .get(id.0)
            .is_some_and(|o| matches!(o.kind, Kind::Stdout))
    }

    /// Create every output: a temporary file beside each regular file,
    /// pipes and devices opened. Folders are not made yet.
    ///
    /// # Errors
    ///
    /// The first error of creating or opening; what was created is
    /// removed.
    pub fn create(self) -> Result<OutputSet, OutputError> {
        let mut notes = Vec::new();
        let mut pending = Vec::with_capacity(self.outputs.len());
        let mut writers = Vec::with_capacity(self.outputs.len());
        for out in self.outputs {
            let done = Arc::new(AtomicBool::new(false));
            let (dest, commit) = match &out.kind {
                Kind::Stdout => (Dest::Stdout(io::stdout()), None),
                Kind::InPlace { open, .. } => {
                    let file = std::fs::OpenOptions::new()
                        .append(true)
                        .open(open)
                        .map_err(|source| OutputError::Io {
                            path: out.given.clone(),
                            source,
                        })?;
                    (Dest::Direct(file), None)
                }
                Kind::Replace {
                    path,
                    dir,
                    missing,
                    id,
                } => {
                    let io = |source| OutputError::Io {
                        path: out.given.clone(),
                        source,
                    };
                    let existing = match id {
                        Some(_) => Some(std::fs::metadata(path).map_err(io)?),
                        None => None,
                    };
                    notes.extend(stale::sweep(path, dir));
                    let (file, temporary) = temporary(path, dir).map_err(io)?;
                    let overwrite = match &existing {
                        Some(old) => !keep_attributes(&file, path, old).map_err(io)?,
                        None => false,
                    };
                    let rename = Rename {
                        temporary,
                        to: path.clone(),
                        folder: missing.clone(),
                        overwrite,
                    };
                    (Dest::Temporary(file), Some(rename))
                }
            };
            writers.push(OutputFile {
                given: out.given.clone(),
                out: BufWriter::with_capacity(1 << 16, dest),
                done: Arc::clone(&done),
            });
            pending.push(Pending {
                given: out.given,
                done,
                rename: commit,
            });
        }
        Ok(OutputSet {
            pending,
            writers,
            notes,
        })
    }
}

/// A temporary file in `dir` for `path`, on the list of temporaries.
fn temporary(path: &Path, dir: &Path) -> io::Result<(File, Temporary)> {
    let name = path.file_name().unwrap_or(path.as_os_str());
    let prefix = stale::prefix(name);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // As a new file gets it (less the umask), not tempfile's 0600.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    // Created and listed in one step, so that a signal never misses it.
    let mut held = cleanup::hold();
    let (file, path) = builder.tempfile_in(dir)?.into_parts();
    let ticket = held.register(path.to_path_buf());
    let lock = stale::lock(&file);
    Ok((file, Temporary { path, ticket, lock }))
}

/// Give the temporary file `file` the permissions and owner of the file
/// `old` (at `path`) it replaces, as editors do; `false` when the rename
/// would lose something that cannot be carried over, other hard links to
/// `old` or an owner or group this process cannot give, and `old` can be
/// written: it is then overwritten in place at the commit.
///
/// # Errors
///
/// The error of setting the permissions.
#[cfg(unix)]
fn keep_attributes(file: &File, path: &Path, old: &std::fs::Metadata) -> io::Result<bool> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let owner_kept = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid())).is_ok();
    // Set-ID bits only go with the owner they were set for.
    let mode = if owner_kept {
        old.mode() & 0o7777
    } else {
        old.mode() & 0o777
    };
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    if owner_kept && old.nlink() <= 1 {
        return Ok(true);
    }
    // Opened, not changed: can it be overwritten at the commit?
    let writable = std::fs::OpenOptions::new().write(true).open(path).is_ok();
    Ok(!writable)
}

/// Give the temporary file `file` the permissions of the file `old` it
/// replaces; `true`: the rename loses nothing.
///
/// # Errors
///
/// The error of setting the permissions.
#[cfg(not(unix))]
fn keep_attributes(file: &File, _path: &Path, old: &std::fs::Metadata) -> io::Result<bool> {
    file.set_permissions(old.permissions())?;
    Ok(true)
}

/// A temporary file: removed when dropped.
#[derive(Debug)]
struct Temporary {
    /// Removes the file when dropped (before the ticket is).
    path: tempfile::TempPath,
    ticket: cleanup::Ticket,
    /// Holds the file's lock until it is renamed or removed, which tells
    /// other runs it is in use ([`stale`]).
    lock: Option<File>,
}

/// The rename that commits a regular file.
#[derive(Debug)]
struct Rename {
    temporary: Temporary,
    to: PathBuf,
    folder: Option<PathBuf>,
    /// Copy the contents over the existing file instead (it has other
    /// hard links, or an owner the temporary file could not be given).
    overwrite: bool,
}

/// One output of a set, as the set keeps it.
#[derive(Debug)]
struct Pending {
    given: PathBuf,
    done: Arc<AtomicBool>,
    rename: Option<Rename>,
}

/// Created outputs, committed together by [`OutputSet::commit`]; dropped
/// without a commit, the temporary files are removed.
#[derive(Debug)]
pub struct OutputSet {
    pending: Vec<Pending>,
    writers: Vec<OutputFile>,
    notes: Vec<String>,
}

impl OutputSet {
    /// What was found while creating the outputs: temporary files of the
    /// same outputs left by runs that were killed (removed) or that are
    /// still running (left alone), one line each.
    #[must_use]
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The writers, in the order the outputs were added (once: later calls
    /// give none).
    pub fn writers(&mut self) -> Vec<OutputFile> {
        std::mem::take(&mut self.writers)
    }

    /// When every writer was completed ([`OutputFile::complete`]): make
    /// the missing folders and rename every temporary file to its final
    /// name.
    ///
    /// # Errors
    ///
    /// [`OutputError::Incomplete`] (before any rename) when a writer was
    /// not completed; the error of making a folder or renaming. The
    /// temporary files not yet renamed are removed.
    pub fn commit(self) -> Result<(), OutputError> {
        let OutputSet {
            pending, writers, ..
        } = self;
        drop(writers);
        if let Some(p) = pending.iter().find(|p| !p.done.load(Ordering::Acquire)) {
            return Err(OutputError::Incomplete {
                path: p.given.clone(),
            });
        }
        let mut renames: Vec<(PathBuf, Rename)> = pending
            .into_iter()
            .filter_map(|p| p.rename.map(|r| (p.given, r)))
            .collect();
        // A signal now waits until every file is renamed or removed.
        let mut held = cleanup::hold();
        let result = rename_all(&mut renames, &mut held);
        drop(held);
        // Those not renamed (after an error) are removed here.
        drop(renames);
        result
    }
}

/// Make the folders, then rename the files, taking each renamed file off
/// `renames`.
fn rename_all(
    renames: &mut Vec<(PathBuf, Rename)>,
    held: &mut cleanup::Held,
) -> Result<(), OutputError> {
    for (given, r) in renames.iter() {
        if let Some(folder) = &r.folder {
            std::fs::create_dir_all(folder).map_err(|source| OutputError::Io {
                path: given.clone(),
                source,
            })?;
        }
    }
    while let Some((given, r)) = renames.pop() {
        // The lock goes with the iteration, after the rename.
        let Temporary { path, ticket, lock } = r.temporary;
        let _lock = lock;
        if r.overwrite {
            let copied = overwrite(&path, &r.to);
            // Removes the temporary file.
            drop(path);
            held.release(ticket);
            copied.map_err(|source| OutputError::Io {
                path: given,
                source,
            })?;
            continue;
        }
        match path.persist(&r.to) {
            Ok(()) => held.release(ticket),
            Err(e) => {
                // `e.path` removes the temporary file when dropped.
                drop(e.path);
                held.release(ticket);
                return Err(OutputError::Io {
                    path: given,
                    source: e.error,
                });
            }
        }
    }
    Ok(())
}

/// Copy the complete temporary file `from` over the existing file `to`,
/// keeping `to` itself (its links, owner and permissions).
///
/// # Errors
///
/// The error of reading, writing or syncing.
fn overwrite(from: &Path, to: &Path) -> io::Result<()> {
    let mut src = File::open(from)?;
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(to)?;
    io::copy(&mut src, &mut dst)?;
    dst.sync_all()
}

/// Where an [`OutputFile`] writes.
#[derive(Debug)]
enum Dest {
    Stdout(io::Stdout),
    Direct(File),
    Temporary(File),
    /// Completed: the file is closed.
    Completed,
}

/// The error of writing to an output once it is complete.
fn completed() -> io::Error {
    io::Error::other("output already complete")
}

impl Write for Dest {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Dest::Stdout(s) => s.write(buf),
            Dest::Direct(f) | Dest::Temporary(f) => f.write(buf),
            Dest::Completed => Err(completed()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Dest::Stdout(s) => s.flush(),
            Dest::Direct(f) | Dest::Temporary(f) => f.flush(),
            Dest::Completed => Ok(()),
        }
    }
}

/// The writer of one output of an [`OutputSet`] (buffered).
#[derive(Debug)]
pub struct OutputFile {
    given: PathBuf,
    out: BufWriter<Dest>,
    done: Arc<AtomicBool>,
}

impl OutputFile {
    /// The output's path as given (`-` for standard output).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.given
    }

    /// Flush the output (and sync a file to disk): it is then ready for
    /// the set's commit.
    ///
    /// # Errors
    ///
    /// The error of writing or syncing.
    pub fn complete(mut self) -> io::Result<()> {
        self.complete_in_place()
    }

    /// [`complete`](Self::complete) for a writer that stays in place (a
    /// sink's, completed by its `finish`): the file is closed, and writing
    /// to it afterwards is an error.
    ///
    /// # Errors
    ///
    /// The error of writing or syncing.
    pub fn complete_in_place(&mut self) -> io::Result<()> {
        let given = &self.given;
        let named = |e: io::Error| named(given, e);
        self.out.flush().map_err(named)?;
        match std::mem::replace(self.out.get_mut(), Dest::Completed) {
            Dest::Temporary(f) => f.sync_all().map_err(named)?,
            Dest::Stdout(mut s) => s.flush().map_err(named)?,
            Dest::Direct(_) | Dest::Completed => {}
        }
        self.done.store(true, Ordering::Release);
        Ok(())
    }
}

/// `e` with the output's path in its message (of the same kind).
#[cold]
fn named(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Errors name the output's path.
impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf).map_err(|e| named(&self.given, e))
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf).map_err(|e| named(&self.given, e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush().map_err(|e| named(&self.given, e))
    }
}

#[cfg(test)]
mod tests;
