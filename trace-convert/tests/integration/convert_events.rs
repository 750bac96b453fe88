//! `--save-events` then `--from-events` (or the saved events given as
//! the input) gives the same outputs, byte for byte, as converting the
//! capture directly.

use std::path::Path;
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_trace-convert")
}

#[test]
fn saved_events_convert_to_identical_outputs() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("tc-events-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let t = |n: &str| tmp.join(n);
    let outputs = |prefix: &str| {
        vec![
            "--chrome".to_owned(),
            t(&format!("{prefix}.json")).display().to_string(),
            "--folded".to_owned(),
            t(&format!("{prefix}.folded")).display().to_string(),
            "--perfetto".to_owned(),
            t(&format!("{prefix}.pftrace")).display().to_string(),
        ]
    };
    for capture in ["tc2-ptm-rstk-t32", "TC2"] {
        let direct = Command::new(bin())
            .arg(dir.join(capture))
            .args(outputs("direct"))
            .arg("--save-events")
            .arg(t("saved.events"))
            .output()
            .expect("run");
        assert!(
            direct.status.success(),
            "{}",
            String::from_utf8_lossy(&direct.stderr)
        );
        let later = Command::new(bin())
            .arg("--from-events")
            .arg(t("saved.events"))
            .args(outputs("later"))
            .output()
            .expect("run");
        assert!(
            later.status.success(),
            "{}",
            String::from_utf8_lossy(&later.stderr)
        );
        // Known by its magic as any input is.
        let input = Command::new(bin())
            .arg(t("saved.events"))
            .args(outputs("input"))
            .output()
            .expect("run");
        assert!(
            input.status.success(),
            "{}",
            String::from_utf8_lossy(&input.stderr)
        );
        for ext in ["json", "folded", "pftrace"] {
            let a = std::fs::read(t(&format!("direct.{ext}"))).expect("direct output");
            let b = std::fs::read(t(&format!("later.{ext}"))).expect("later output");
            let c = std::fs::read(t(&format!("input.{ext}"))).expect("input output");
            assert!(!a.is_empty());
            assert!(a == b, "{capture}: {ext} differs");
            assert!(
                a == c,
                "{capture}: {ext} of the saved events as input differs"
            );
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn a_damaged_events_file_is_an_input_error() {
    let tmp = std::env::temp_dir().join(format!("tc-events-bad-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let bad = tmp.join("bad.events");
    std::fs::write(&bad, b"not an events file at all").expect("write");
    let out = Command::new(bin())
        .arg("--from-events")
        .arg(&bad)
        .arg("--folded")
        .arg(tmp.join("x.folded"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.events"), "{err}");
    assert!(
        !Path::new(&tmp.join("x.folded")).exists(),
        "no partial output"
    );
    std::fs::remove_dir_all(&tmp).ok();
}

/// `packets` and `decode` read captures: saved events given to them are
/// refused with a message that says how to convert them, and no listing
/// is written.
#[test]
fn listings_refuse_saved_events() {
    let (dir, _) = example();
    let tmp = std::env::temp_dir().join(format!("tc-events-list-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let saved = tmp.join("run.events");
    let out = Command::new(bin())
        .arg(&dir)
        .arg("--save-events")
        .arg(&saved)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for command in ["packets", "decode"] {
        let listing = tmp.join(format!("{command}.txt"));
        let out = Command::new(bin())
            .arg(command)
            .arg(&saved)
            .arg("-o")
            .arg(&listing)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("saved events"), "{command}: {err}");
        assert!(!listing.exists(), "{command}: no listing");
    }
    std::fs::remove_dir_all(&tmp).ok();
}

/// The bundled example snapshot and its ELF file.
fn example() -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot");
    let elf = dir.join("example.elf");
    (dir, elf)
}

#[test]
fn an_elf_the_events_were_not_decoded_with_is_refused() {
    let (dir, elf) = example();
    let tmp = std::env::temp_dir().join(format!("tc-events-img-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let saved = tmp.join("run.events");
    let out = Command::new(bin())
        .arg(&dir)
        .arg("--elf")
        .arg(&elf)
        .arg("--save-events")
        .arg(&saved)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Another program: the same file with one byte of its code changed.
    let mut other = std::fs::read(&elf).expect("elf");
    let at = other.len() / 2;
    other[at] ^= 0xFF;
    let other_elf = tmp.join("other.elf");
    std::fs::write(&other_elf, &other).expect("write");
    let convert = |elf: &Path, extra: &[&str]| {
        Command::new(bin())
            .arg("--from-events")
            .arg(&saved)
            .arg("--elf")
            .arg(elf)
            .arg("--folded")
            .arg(tmp.join("x.folded"))
            .args(extra)
            .output()
            .expect("run")
    };
    let same = convert(&elf, &[]);
    assert!(
        same.status.success(),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    let refused = convert(&other_elf, &[]);
    assert_eq!(refused.status.code(), Some(3));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("other.elf") && err.contains("not an image the events"),
        "{err}"
    );
    let forced = convert(&other_elf, &["--ignore-image-mismatch"]);
    assert!(
        forced.status.success(),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    assert!(String::from_utf8_lossy(&forced.stderr).contains("warning"));
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn unreadable_dwarf_is_named_and_fails_lcov() {
    use object::{Object, ObjectSection};
    let (dir, elf) = example();
    let tmp = std::env::temp_dir().join(format!("tc-dwarf-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let mut bytes = std::fs::read(&elf).expect("elf");
    let (start, size) = {
        let file = object::File::parse(&*bytes).expect("ELF");
        let line = file
            .section_by_name(".debug_line")
            .expect("the example has .debug_line");
        line.file_range().expect("in the file")
    };
    // A line program header claiming a length past the section.
    let (start, size) = (start as usize, size as usize);
    assert!(size >= 4);
    bytes[start..start + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    let bad = tmp.join("bad.elf");
    std::fs::write(&bad, &bytes).expect("write");
    let out = Command::new(bin())
        .arg(&dir)
        .arg("--elf")
        .arg(&bad)
        .arg("--lcov")
        .arg(tmp.join("x.info"))
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(".debug_line") && err.contains("bad.elf"),
        "{err}"
    );
    std::fs::remove_dir_all(&tmp).ok();
}
