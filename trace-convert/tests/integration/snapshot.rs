//! Reading snapshot directories: the real ones, and broken ones.

use std::path::{Path, PathBuf};
use trace_convert::input::snapshot::{BufferFormat, Snapshot, SnapshotError};

#[test]
fn tc2_snapshot() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let snap = Snapshot::read(&dir.join("TC2")).expect("TC2 reads");
    assert_eq!(snap.devices.len(), 11);
    let etm = snap.device("ETM_0").expect("ETM_0");
    assert_eq!(etm.kind, "ETM3.5");
    assert_eq!(etm.reg("ETMCR"), Some(0x1000_1860));
    assert_eq!(etm.reg("etmtraceidr"), Some(0x10));
    let ptm = snap.device("PTM_0").expect("PTM_0");
    assert_eq!(ptm.reg("ETMCCER"), Some(0x34C0_1AC2));
    assert_eq!(snap.buffers.len(), 1);
    assert_eq!(snap.buffers[0].format, BufferFormat::CoreSight);
    assert!(snap.buffers[0].path.ends_with("cstrace.bin"));
    assert_eq!(snap.source_buffers.len(), 6);
    let core = snap.core_of("PTM_0").expect("core of PTM_0");
    assert_eq!(core.name, "cpu_3");
    assert_eq!(core.dumps.len(), 1);
    assert_eq!(core.dumps[0].address, 0xC000_8000);
    assert_eq!(core.dumps[0].length, Some(0x50000));
}

#[test]
fn rstk_snapshot() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let snap = Snapshot::read(&dir.join("tc2-ptm-rstk-t32")).expect("reads");
    assert_eq!(snap.timestamp_hz, Some(25_000_000));
    assert_eq!(snap.buffers[0].format, BufferFormat::SourceData);
    let ptm = snap.device("PTM_0_2").expect("PTM_0_2");
    assert_eq!(ptm.reg("ETMCR"), Some(0x2000_0400));
    assert_eq!(ptm.reg("ETMTRACEIDR"), Some(2));
    let core = snap.core_of("PTM_0_2").expect("core");
    assert_eq!(core.dumps.len(), 9);
    assert_eq!(core.dumps[1].address, 0x8000_0278);
    assert_eq!(core.dumps[1].space.as_deref(), Some("S"));
    assert_eq!(core.reg("CNTPCT"), Some(0x0000_0434_29D1_ACFF));
}

/// A scratch snapshot directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, files: &[(&str, &str)]) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tc-snap-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        for (file, text) in files {
            std::fs::write(dir.join(file), text).expect("write");
        }
        Scratch(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const DEVICE: &str =
    "[device]\nname=ETM_0\nclass=trace_source\ntype=ETM3.5\n[regs]\nETMCR=0x1000\n";

#[test]
fn missing_snapshot_ini() {
    let s = Scratch::new("empty", &[]);
    let err = Snapshot::read(s.path()).expect_err("no snapshot.ini");
    assert!(matches!(err, SnapshotError::Io { .. }));
    assert!(err.to_string().contains("snapshot.ini"));
}

#[test]
fn missing_device_file() {
    let s = Scratch::new(
        "nodev",
        &[("snapshot.ini", "[device_list]\ndevice0=absent.ini\n")],
    );
    let err = Snapshot::read(s.path()).expect_err("absent device");
    assert!(err.to_string().contains("absent.ini"), "{err}");
}

#[test]
fn paths_may_not_leave_the_snapshot() {
    for bad in ["../outside.ini", "/etc/passwd", "a/../../b.ini"] {
        let text = format!("[device_list]\ndevice0={bad}\n");
        let s = Scratch::new("escape", &[("snapshot.ini", &text)]);
        let err = Snapshot::read(s.path()).expect_err("escape");
        assert!(
            matches!(err, SnapshotError::OutsideSnapshot { .. }),
            "{bad}: {err}"
        );
    }
}

#[test]
fn malformed_values_name_file_and_key() {
    let dev = "[device]\nname=ETM_0\n[regs]\nETMCR=banana\n";
    let s = Scratch::new(
        "badreg",
        &[
            ("snapshot.ini", "[device_list]\nd=dev.ini\n"),
            ("dev.ini", dev),
        ],
    );
    let err = Snapshot::read(s.path()).expect_err("bad value");
    let text = err.to_string();
    assert!(
        text.contains("dev.ini") && text.contains("ETMCR") && text.contains("banana"),
        "{text}"
    );

    let s = Scratch::new("badini", &[("snapshot.ini", "[device_list\n")]);
    let err = Snapshot::read(s.path()).expect_err("bad ini");
    assert!(err.to_string().contains("line 1"), "{err}");
}

#[test]
fn trace_metadata_needs_buffers() {
    let s = Scratch::new(
        "nobuf",
        &[
            (
                "snapshot.ini",
                "[device_list]\nd=dev.ini\n[trace]\nmetadata=trace.ini\n",
            ),
            ("dev.ini", DEVICE),
            ("trace.ini", "[source_buffers]\nETM_0=ETB_0\n"),
        ],
    );
    let err = Snapshot::read(s.path()).expect_err("no buffers");
    assert!(err.to_string().contains("[trace_buffers] buffers"), "{err}");

    let s = Scratch::new(
        "badfmt",
        &[
            ("snapshot.ini", "[trace]\nmetadata=trace.ini\n"),
            (
                "trace.ini",
                "[trace_buffers]\nbuffers=b0\n[b0]\nname=ETB_0\nfile=x.bin\nformat=weird\n",
            ),
        ],
    );
    let err = Snapshot::read(s.path()).expect_err("bad format");
    assert!(err.to_string().contains("weird"), "{err}");
}

#[test]
fn absurd_dump_address_is_rejected() {
    let dev = "[device]\nname=cpu\nclass=core\n[dump]\nfile=m.bin\naddress=0x1_0000_0000\n";
    let s = Scratch::new(
        "addr",
        &[
            ("snapshot.ini", "[device_list]\nd=dev.ini\n"),
            ("dev.ini", dev),
        ],
    );
    let err = Snapshot::read(s.path()).expect_err("address");
    assert!(err.to_string().contains("32-bit"), "{err}");
}

#[test]
fn oversized_ini_is_rejected_without_reading_it() {
    let s = Scratch::new("big", &[]);
    let f = std::fs::File::create(s.path().join("snapshot.ini")).expect("create");
    f.set_len(64 << 20).expect("sparse file");
    let err = Snapshot::read(s.path()).expect_err("too large");
    assert!(matches!(err, SnapshotError::TooLarge { .. }), "{err}");
}
