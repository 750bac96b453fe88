//! What an output path names: standard output, a regular file (existing
//! or not) to be replaced by a rename, or a pipe or device written in
//! place; and the identity of files, to tell when two paths are one file.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// The identity of an existing file: its device and inode on Unix (the
/// same through hard and symbolic links), its canonical path elsewhere.
#[cfg(unix)]
pub(crate) type FileId = (u64, u64);
/// The identity of an existing file: its device and inode on Unix (the
/// same through hard and symbolic links), its canonical path elsewhere.
#[cfg(not(unix))]
pub(crate) type FileId = PathBuf;

/// The identity of the file at `path` (links followed), or `None` when
/// there is none. Only looks at the file's metadata: it never opens it
/// (opening a named pipe could block).
pub(crate) fn file_id(path: &Path) -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        fs::canonicalize(path).ok()
    }
}

/// Where an output goes.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// Standard output (`-`).
    Stdout,
    /// An existing named pipe or character device (`/dev/null`), or a
    /// descriptor link (`/dev/stdout`, `/proc/self/fd/N`): opened and
    /// written as the data comes, never renamed over.
    InPlace {
        /// The path to open.
        open: PathBuf,
        /// What it is, when it exists.
        id: Option<FileId>,
        /// A character device (which several outputs may share, as
        /// `/dev/null`).
        char_device: bool,
        /// It names standard output's descriptor (`/dev/stdout`,
        /// `/dev/fd/1`, `/proc/self/fd/1`).
        stdout: bool,
    },
    /// A regular file, existing or not, written under a temporary name in
    /// `dir` and renamed to `path` at the end.
    Replace {
        /// The final path, symbolic links followed.
        path: PathBuf,
        /// The existing folder that holds the temporary file: the final
        /// path's folder, or its nearest existing ancestor when folders are
        /// still to be made.
        dir: PathBuf,
        /// The folder to create before the rename, when it does not exist.
        missing: Option<PathBuf>,
        /// The file being replaced, when there is one.
        id: Option<FileId>,
    },
}

impl Kind {
    /// Whether this output writes to standard output: `-`, a descriptor
    /// link to it (`/dev/stdout`, `/proc/self/fd/1`), or the very pipe or
    /// file standard output writes (`stdout`: its identity) other than a
    /// character device (a terminal, `/dev/null`, which many may share).
    pub(crate) fn is_stdout(&self, stdout: Option<&FileId>) -> bool {
        match self {
            Kind::Stdout => true,
            Kind::InPlace { stdout: true, .. } => true,
            Kind::InPlace {
                char_device: true, ..
            } => false,
            Kind::InPlace { id, .. } | Kind::Replace { id, .. } => {
                id.is_some() && id.as_ref() == stdout
            }
        }
    }

    /// The identity of the existing file this output writes, if any.
    pub(crate) fn id(&self) -> Option<&FileId> {
        match self {
            Kind::Stdout => None,
            Kind::InPlace { id, .. } | Kind::Replace { id, .. } => id.as_ref(),
        }
    }
}

/// Why an output path cannot be written.
#[derive(Debug)]
pub(crate) enum Problem {
    /// An existing file of a type that is neither replaced nor written in
    /// place (a folder, a block device, a socket): what it is.
    NotAFile(&'static str),
    /// The output's folder does not exist.
    MissingFolder(PathBuf),
    /// A component of the output's folder is not a folder.
    NotAFolder(PathBuf),
    /// A loop or too long a chain of symbolic links.
    TooManyLinks,
    /// Reading the file system failed.
    Io(io::Error),
}

/// An error that says the path does not exist (a missing component, or
/// one that is not a folder: the caller then finds which).
fn absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Paths whose links lead to an open descriptor rather than to a file.
fn is_descriptor_path(p: &Path) -> bool {
    p.starts_with("/proc") || p.starts_with("/dev/fd")
}

/// Whether `p` (links followed up to a descriptor path) names this
/// process's standard output descriptor, 1.
fn names_stdout(p: &Path) -> bool {
    let pid = std::process::id().to_string();
    let fd1 = |dir: &Path| p == dir.join("1");
    p == Path::new("/dev/stdout")
        || fd1(Path::new("/dev/fd"))
        || fd1(Path::new("/proc/self/fd"))
        || fd1(Path::new("/proc/thread-self/fd"))
        || fd1(&Path::new("/proc").join(pid).join("fd"))
}

/// The identity of what standard output writes to, when it is open.
#[cfg(unix)]
pub(crate) fn stdout_id() -> Option<FileId> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let fd = io::stdout().as_fd().try_clone_to_owned().ok()?;
    let meta = fs::File::from(fd).metadata().ok()?;
    Some((meta.dev(), meta.ino()))
}

/// The identity of what standard output writes to, when it is open.
#[cfg(not(unix))]
pub(crate) fn stdout_id() -> Option<FileId> {
    None
}

/// Resolve the output path `given` (not `-`): follow its symbolic links to
/// the file they name and say how it is written. `make_folders` allows
/// the final folder not to exist yet (it is then created at the commit).
pub(crate) fn resolve(given: &Path, make_folders: bool) -> Result<Kind, Problem> {
    if given.as_os_str() == "-" {
        return Ok(Kind::Stdout);
    }
    let text = given.as_os_str().as_encoded_bytes();
    if text.is_empty() || text.ends_with(b"/") || given.file_name().is_none() {
        return Err(Problem::NotAFile("a folder name or empty"));
    }
    let mut p = given.to_path_buf();
    for _ in 0..40 {
        if is_descriptor_path(&p) {
            return in_place(given, &p);
        }
        let meta = match fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if absent(&e) => return missing(p, make_folders),
            Err(e) => return Err(Problem::Io(e)),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            let to = fs::read_link(&p).map_err(Problem::Io)?;
            p = match p.parent() {
                Some(parent) if to.is_relative() => parent.join(to),
                _ => to,
            };
            continue;
        }
        if ft.is_file() {
            let dir = folder_of(&p);
            return Ok(Kind::Replace {
                id: file_id(&p),
                path: p,
                dir,
                missing: None,
            });
        }
        if ft.is_dir() {
            return Err(Problem::NotAFile("a folder"));
        }
        return in_place(&p, &p);
    }
    Err(Problem::TooManyLinks)
}

/// `open` (which `p` names) is written in place when it is a pipe or a
/// character device (or does not exist behind a descriptor link).
fn in_place(open: &Path, p: &Path) -> Result<Kind, Problem> {
    let meta = match fs::metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Kind::InPlace {
                open: open.to_path_buf(),
                id: None,
                char_device: false,
                stdout: names_stdout(p),
            })
        }
        Err(e) => return Err(Problem::Io(e)),
    };
    let ft = meta.file_type();
    if ft.is_dir() {
        return Err(Problem::NotAFile("a folder"));
    }
    #[cfg(unix)]
    let char_device = {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_block_device() {
            return Err(Problem::NotAFile("a block device"));
        }
        if ft.is_socket() {
            return Err(Problem::NotAFile("a socket"));
        }
        ft.is_char_device()
    };
    #[cfg(not(unix))]
    let char_device = false;
    Ok(Kind::InPlace {
        open: open.to_path_buf(),
        id: file_id(p),
        char_device,
        stdout: names_stdout(p),
    })
}

/// The folder of `p` (`.` for a bare file name).
fn folder_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A regular file still to be made at `p`.
fn missing(p: PathBuf, make_folders: bool) -> Result<Kind, Problem> {
    let folder = folder_of(&p);
    let mut dir = folder.as_path();
    loop {
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => return Err(Problem::NotAFolder(dir.to_path_buf())),
            Err(e) if absent(&e) => {}
            Err(e) => return Err(Problem::Io(e)),
        }
        dir = match dir.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            Some(_) => Path::new("."),
            None => return Err(Problem::MissingFolder(folder)),
        };
    }
    let missing = (dir != folder.as_path()).then(|| folder.clone());
    if missing.is_some() && !make_folders {
        return Err(Problem::MissingFolder(folder));
    }
    Ok(Kind::Replace {
        dir: dir.to_path_buf(),
        path: p,
        missing,
        id: None,
    })
}

/// A name for the file `kind` writes that is the same for every spelling
/// of its path: the canonical path of its existing folder and the rest.
pub(crate) fn canonical(kind: &Kind) -> Option<PathBuf> {
    let Kind::Replace { path, dir, .. } = kind else {
        return None;
    };
    let base = fs::canonicalize(dir).ok()?;
    let rest = if dir.as_os_str() == "." {
        path.strip_prefix(".").unwrap_or(path)
    } else {
        path.strip_prefix(dir).ok()?
    };
    let mut out = base;
    for c in rest.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tc-target-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("mkdir");
        d
    }

    #[test]
    fn dash_is_standard_output() {
        assert!(matches!(resolve(Path::new("-"), false), Ok(Kind::Stdout)));
    }

    #[test]
    fn names_that_are_no_file_names_are_refused() {
        for bad in ["", "out/", "/no-such-folder-xyz/", "a/..", "."] {
            assert!(
                matches!(resolve(Path::new(bad), true), Err(Problem::NotAFile(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn missing_file_in_existing_folder() {
        let d = scratch("missing");
        let p = d.join("x.json");
        match resolve(&p, false) {
            Ok(Kind::Replace {
                path, dir, missing, ..
            }) => {
                assert_eq!(path, p);
                assert_eq!(dir, d);
                assert!(missing.is_none());
            }
            other => panic!("{other:?}"),
        }
        let deep = d.join("a/b/x.json");
        assert!(matches!(
            resolve(&deep, false),
            Err(Problem::MissingFolder(f)) if f == d.join("a/b")
        ));
        match resolve(&deep, true) {
            Ok(Kind::Replace { dir, missing, .. }) => {
                assert_eq!(dir, d);
                assert_eq!(missing, Some(d.join("a/b")));
            }
            other => panic!("{other:?}"),
        }
        fs::remove_dir_all(&d).ok();
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_to_their_target() {
        let d = scratch("links");
        fs::create_dir_all(d.join("real")).expect("mkdir");
        fs::write(d.join("real/f.txt"), "x").expect("write");
        std::os::unix::fs::symlink("real/f.txt", d.join("l1")).expect("link");
        std::os::unix::fs::symlink(d.join("l1"), d.join("l2")).expect("link");
        match resolve(&d.join("l2"), false) {
            Ok(Kind::Replace { path, .. }) => assert_eq!(path, d.join("real/f.txt")),
            other => panic!("{other:?}"),
        }
        // A dangling link names the file to create.
        std::os::unix::fs::symlink("real/new.txt", d.join("dangling")).expect("link");
        match resolve(&d.join("dangling"), false) {
            Ok(Kind::Replace { path, id, .. }) => {
                assert_eq!(path, d.join("real/new.txt"));
                assert!(id.is_none());
            }
            other => panic!("{other:?}"),
        }
        // A loop.
        std::os::unix::fs::symlink("loop2", d.join("loop1")).expect("link");
        std::os::unix::fs::symlink("loop1", d.join("loop2")).expect("link");
        assert!(matches!(
            resolve(&d.join("loop1"), false),
            Err(Problem::TooManyLinks)
        ));
        fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn spellings_of_one_path_are_one_name() {
        let d = scratch("canon");
        fs::create_dir_all(d.join("sub")).expect("mkdir");
        let a = resolve(&d.join("sub/../x"), false).expect("a");
        let b = resolve(&d.join("./x"), false).expect("b");
        let c = resolve(&d.join("new/../x"), true).expect("c");
        let want = fs::canonicalize(&d).expect("canon").join("x");
        assert_eq!(canonical(&a), Some(want.clone()));
        assert_eq!(canonical(&b), Some(want.clone()));
        assert_eq!(canonical(&c), Some(want));
        fs::remove_dir_all(&d).ok();
    }
}
