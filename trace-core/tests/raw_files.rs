//! Raw memory files (`--mem`, snapshot dumps): only the bytes a region
//! uses are read, and regions must fit the 32-bit address space.

use trace_core::memory::{MemoryImage, MemoryMap, Space};

fn scratch(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("raw-files-{}-{name}.bin", std::process::id()));
    std::fs::write(&p, bytes).expect("write");
    p
}

#[test]
fn a_declared_length_beyond_the_file_uses_the_file() {
    let bytes: Vec<u8> = (0..=255u8).collect();
    let f = scratch("len", &bytes);
    let mut map = MemoryMap::new();
    map.add_file(&f, 0x1000, Space::Any, 16, Some(u64::from(u32::MAX)))
        .expect("clamped to the file");
    let mut buf = [0u8; 4];
    assert_eq!(map.read(Space::Any, 0x1000, &mut buf), 4);
    assert_eq!(buf, [16, 17, 18, 19]);
    // The region ends where the file does: 240 bytes.
    assert_eq!(map.read(Space::Any, 0x1000 + 238, &mut buf), 2);
    let _ = std::fs::remove_file(f);
}

#[test]
fn offset_past_the_file_and_regions_past_4_gib_are_errors() {
    let f = scratch("end", &[0u8; 4096]);
    let mut map = MemoryMap::new();
    let err = map
        .add_file(&f, 0x1000, Space::Any, 5000, None)
        .expect_err("offset past the end");
    assert!(err.to_string().contains("past the end"), "{err}");
    let err = map
        .add_file(&f, 0xFFFF_FF00, Space::Any, 0, None)
        .expect_err("past 4 GiB");
    assert!(err.to_string().contains("32-bit address space"), "{err}");
    // Exactly up to the top of the address space is fine.
    map.add_file(&f, 0xFFFF_F000, Space::Any, 0, None)
        .expect("fits");
    let _ = std::fs::remove_file(f);
}

/// Run `f` on another thread and fail if it has not returned in 20 s (a
/// read of a FIFO or a device would block or never end).
fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()).ok());
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .expect("returned within 20 s")
}

#[cfg(unix)]
#[test]
fn fifos_and_devices_are_refused_before_reading() {
    let dir = std::env::temp_dir().join(format!("raw-files-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let fifo = dir.join("mem.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    for path in [fifo, "/dev/zero".into()] {
        let p = path.clone();
        let err = within_20s(move || MemoryMap::new().add_file(&p, 0x1000, Space::Any, 0, None))
            .expect_err("not a regular file");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let p = path.clone();
        let err = within_20s(move || MemoryMap::new().add_elf(&p, Space::Any))
            .expect_err("not a regular file");
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Resident memory of this process in KiB (Linux), if known.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_sparse_file_costs_only_what_is_touched() {
    // 256 MiB of holes: read into memory it took 256 MiB and more.
    let p = std::env::temp_dir().join(format!("raw-files-{}-sparse.bin", std::process::id()));
    std::fs::File::create(&p)
        .and_then(|f| f.set_len(256 << 20))
        .expect("sparse file");
    let Some(before) = rss_kib() else { return };
    let mut map = MemoryMap::new();
    for k in 0..4u32 {
        map.add_file(&p, k << 28, Space::Any, 0, None)
            .expect("maps");
    }
    let mut buf = [0xAAu8; 4];
    assert_eq!(map.read(Space::Any, 0x1000_0000 + 0x0FF0_0000, &mut buf), 4);
    assert_eq!(buf, [0; 4]);
    let grown = rss_kib().unwrap_or(0).saturating_sub(before);
    assert!(
        grown < 32 << 10,
        "4 x 256 MiB regions grew the process by {grown} KiB"
    );
    let _ = std::fs::remove_file(p);
}
