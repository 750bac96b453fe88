//! Hostile perf.data recordings: mapped file names that would lead reads
//! outside `--symfs` or the build-ID cache, and sizes that used to take
//! quadratic time.

use crate::perf_common::{spec_of, write};
use std::path::{Path, PathBuf};
use trace_convert::input::{flags::SourceFlags, resolve, Input};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot")
}

/// A scratch folder, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let root =
            std::env::temp_dir().join(format!("tc-perf-hostile-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("symfs")).expect("mkdir");
        Scratch(root)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bundled example as a recording whose one mapping (of the example's
/// code) is named `name`; the code itself is copied to `secret.bin`
/// beside the `symfs/` folder of `s`.
fn recording_mapping(s: &Scratch, name: &str) -> PathBuf {
    let input = resolve(&example(), &SourceFlags::default()).expect("example");
    let (mut spec, _) = spec_of(&input, &input.captures[0]);
    assert_eq!(spec.mmaps.len(), 1, "{:?}", spec.mmaps);
    std::fs::copy(&spec.mmaps[0].filename, s.0.join("secret.bin")).expect("copy");
    spec.mmaps[0].filename = name.into();
    write(&s.0, "perf.data", &spec)
}

fn with_symfs(path: &Path, symfs: &Path) -> Input {
    let flags = SourceFlags {
        symfs: Some(symfs.to_path_buf()),
        ..SourceFlags::default()
    };
    resolve(path, &flags).expect("perf.data resolves")
}

fn dumps(input: &Input) -> usize {
    let snap = input.snapshot.as_ref().expect("a snapshot");
    snap.devices.iter().map(|d| d.dumps.len()).sum()
}

fn notes(input: &Input) -> String {
    input
        .snapshot
        .as_ref()
        .expect("a snapshot")
        .notes
        .join("\n")
}

#[test]
fn a_mapped_name_that_climbs_out_of_symfs_is_not_read() {
    let s = Scratch::new("dotdot");
    // symfs/../secret.bin: the file exists, outside --symfs.
    let path = recording_mapping(&s, "/../secret.bin");
    let input = with_symfs(&path, &s.0.join("symfs"));
    assert_eq!(dumps(&input), 0, "nothing outside --symfs is mapped");
    let n = notes(&input);
    assert!(
        n.contains("/../secret.bin: mapped 1 time(s), but the name (or a link it reaches) leads outside --symfs"),
        "{n}"
    );

    // The same file inside --symfs is read: the recording is sound.
    std::fs::copy(s.0.join("secret.bin"), s.0.join("symfs/secret.bin")).expect("copy");
    let path = recording_mapping(&s, "/secret.bin");
    assert_eq!(dumps(&with_symfs(&path, &s.0.join("symfs"))), 1);
}

#[cfg(unix)]
#[test]
fn a_link_in_symfs_to_a_file_outside_is_not_read() {
    let s = Scratch::new("link");
    std::os::unix::fs::symlink(s.0.join("secret.bin"), s.0.join("symfs/app")).expect("symlink");
    let path = recording_mapping(&s, "/app");
    let input = with_symfs(&path, &s.0.join("symfs"));
    assert_eq!(dumps(&input), 0, "the link leads outside --symfs");
    assert!(
        notes(&input).contains("/app: mapped 1 time(s), but"),
        "{}",
        notes(&input)
    );
    // A link that stays inside is followed.
    std::fs::copy(s.0.join("secret.bin"), s.0.join("symfs/real")).expect("copy");
    std::fs::remove_file(s.0.join("symfs/app")).expect("rm");
    std::os::unix::fs::symlink("real", s.0.join("symfs/app")).expect("symlink");
    assert_eq!(dumps(&with_symfs(&path, &s.0.join("symfs"))), 1);
}

/// A file found inside `--symfs` is opened through the folder when its
/// memory is loaded: links swapped in between (after the recording was
/// resolved, before the decode reads the code) lead nowhere outside.
#[cfg(unix)]
#[test]
fn a_link_swapped_in_after_the_check_is_not_followed_outside() {
    use trace_convert::input::memory::ExtraMemory;
    let s = Scratch::new("swap");
    let path = recording_mapping(&s, "/app");
    std::fs::copy(s.0.join("secret.bin"), s.0.join("symfs/real")).expect("copy");
    std::os::unix::fs::symlink("real", s.0.join("symfs/app")).expect("symlink");
    let input = with_symfs(&path, &s.0.join("symfs"));
    assert_eq!(dumps(&input), 1, "the link stays inside: read");
    // Now every name inside leads to the file outside.
    for name in ["app", "real"] {
        std::fs::remove_file(s.0.join("symfs").join(name)).expect("rm");
        std::os::unix::fs::symlink(s.0.join("secret.bin"), s.0.join("symfs").join(name))
            .expect("symlink");
    }
    let extra = ExtraMemory::default();
    match input.images(&extra) {
        Ok(_) => panic!("a file outside --symfs was read"),
        Err(e) => assert!(e.to_string().contains("outside"), "{e}"),
    }
}
