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

/// Every process of a per-thread recording holds the kernel's mappings
/// (perf writes them under pid -1): the files the input opens, which the
/// command compares with every output by `stat`, are named once each,
/// not once per process (1,023 processes of 1,024 kernel mappings made
/// 2^20 `stat` calls, 60% of a 17-second run of a 361 KB recording).
#[test]
fn processes_sharing_the_kernels_mappings_name_each_file_once() {
    let s = Scratch::new("kernel-maps");
    let input = resolve(&example(), &SourceFlags::default()).expect("example");
    let (mut spec, _) = spec_of(&input, &input.captures[0]);
    let mapped = spec.mmaps[0].clone();
    let other = s.0.join("module.ko");
    std::fs::copy(&mapped.filename, &other).expect("copy");
    // The traced "process" is the kernel: its mappings are pid -1's.
    spec.pid = u32::MAX;
    spec.comm = "swapper".into();
    spec.mmaps = (0..4u64)
        .map(|i| {
            let mut m = mapped.clone();
            m.start += 0x1000_0000 * (i + 1);
            if i % 2 == 1 {
                m.filename = other.display().to_string();
            }
            m
        })
        .collect();
    let processes = 8u32;
    traced_processes(&mut spec, processes);
    let path = write(&s.0, "perf.data", &spec);
    let input = resolve(&path, &SourceFlags::default()).expect("perf.data resolves");
    // Each process's address space holds the four kernel mappings, which
    // one device holds for all.
    assert_eq!(dumps(&input), 4);
    let files = input.files();
    let mut unique = files.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(files.len(), unique.len(), "{files:?}");
    let canonical: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| std::fs::canonicalize(f).ok())
        .collect();
    for f in [
        &mapped.filename,
        &other.display().to_string(),
        &path.display().to_string(),
    ] {
        let f = std::fs::canonicalize(f).expect("a file");
        assert!(canonical.contains(&f), "{} not in {files:?}", f.display());
    }
}

/// Make `spec` a per-thread recording of `processes` traced processes
/// (pids and tids from 100, named `p0`, `p1`, ...), each with a buffer of
/// 16 zero bytes.
fn traced_processes(spec: &mut trace_encode::perf::PerfSpec, processes: u32) {
    use trace_encode::perf::{AuxBuffer, AuxPiece, PerfTask};
    spec.tasks = (0..processes)
        .map(|i| PerfTask {
            pid: 100 + i,
            tid: 100 + i,
            comm: format!("p{i}"),
            mmaps: Vec::new(),
        })
        .collect();
    spec.buffers = (0..processes)
        .map(|i| AuxBuffer {
            cpu: None,
            tid: Some(100 + i),
            pieces: vec![AuxPiece {
                data: vec![0; 16],
                truncated: false,
            }],
        })
        .collect();
}

/// A recording of `processes` traced processes (a per-thread buffer
/// each) and `kernel` kernel mappings of the example's code (808 bytes
/// each, 1 MiB apart from 0x4000_0000); the example's code.
fn kernel_heavy(s: &Scratch, processes: u32, kernel: u64) -> (PathBuf, Vec<u8>) {
    let input = resolve(&example(), &SourceFlags::default()).expect("example");
    let (mut spec, _) = spec_of(&input, &input.captures[0]);
    let mapped = spec.mmaps[0].clone();
    let code = std::fs::read(&mapped.filename).expect("the example's code");
    spec.pid = u32::MAX;
    spec.comm = "swapper".into();
    spec.mmaps = (0..kernel)
        .map(|i| {
            let mut m = mapped.clone();
            m.start = 0x4000_0000 + 0x10_0000 * i;
            m
        })
        .collect();
    traced_processes(&mut spec, processes);
    (write(&s.0, "perf.data", &spec), code)
}

/// 2,048 processes over 1,024 kernel mappings (a 0.7 MB recording): the
/// kernel's mappings are held once, not once per process (2^21 copies
/// peaked near 1 GB; the recording was refused past 2^20), and every
/// process's memory reads the kernel's code.
#[test]
fn processes_share_one_copy_of_the_kernels_mappings() {
    use trace_convert::input::memory::ExtraMemory;
    use trace_core::memory::Space;
    let s = Scratch::new("kernel-shared");
    let (path, code) = kernel_heavy(&s, 2048, 1024);
    let input = resolve(&path, &SourceFlags::default()).expect("perf.data resolves");
    assert_eq!(input.captures.len(), 2048);
    assert_eq!(dumps(&input), 1024, "each mapping held once");
    let images = input.images(&ExtraMemory::default()).expect("memory loads");
    assert!(images.empty().is_empty(), "{:?}", images.empty());
    for c in input.captures.iter().step_by(97) {
        let image = images.get(&c.sources[0].name).expect("an image");
        for k in [0u32, 511, 1023] {
            let mut b = [0u8; 8];
            let at = 0x4000_0000 + 0x10_0000 * k + 0x20;
            assert_eq!(image.read(Space::Any, at, &mut b), 8);
            assert_eq!(b[..], code[0x20..0x28], "{} at {at:#x}", c.sources[0].name);
        }
        let mut b = [0u8; 4];
        assert_eq!(image.read(Space::Any, 0x4000_0000 + 808, &mut b), 0);
    }
}
