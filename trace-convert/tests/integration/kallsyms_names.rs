//! `--kallsyms`: function names from a `System.map` / `/proc/kallsyms`
//! list instead of an ELF file; and the first frame of folded stacks
//! naming the core as the timeline tracks do.
//!
//! The map is written by binutils' `nm -n` (`arm-none-eabi-nm`, installed
//! by `.ci/run`) from the bundled example's ELF file: the stacks named
//! through it must be those named through the ELF file itself.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tc-kallsyms-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("tmp");
    d
}

fn missing(what: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is required when CI is set"
    );
    eprintln!("skipping: {what} not available");
}

fn example() -> PathBuf {
    test_support::repo_root().join("examples/snapshot")
}

/// `nm -n` of `elf` written to `map`, or `None` when no ARM `nm` runs.
fn system_map(elf: &Path, map: &Path) -> Option<()> {
    let out = Command::new("arm-none-eabi-nm")
        .arg("-n")
        .arg(elf)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    std::fs::write(map, &out.stdout).expect("write map");
    Some(())
}

fn folded(args: &[&std::ffi::OsStr], out: &Path) -> String {
    let run = bin()
        .arg(example())
        .args(args)
        .arg("--folded")
        .arg(out)
        .output()
        .expect("run");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read_to_string(out).expect("folded")
}

#[test]
fn a_system_map_names_functions_as_the_elf_does() {
    let dir = tmp("map");
    let map = dir.join("System.map");
    let elf = example().join("example.elf");
    if system_map(&elf, &map).is_none() {
        missing("arm-none-eabi-nm");
        return;
    }
    let by_map = folded(
        &["--kallsyms".as_ref(), map.as_os_str()],
        &dir.join("map.folded"),
    );
    // Without inlined frames: a map knows only symbols, no DWARF.
    let by_elf = folded(
        &["--elf".as_ref(), elf.as_os_str(), "--no-inline".as_ref()],
        &dir.join("elf.folded"),
    );
    assert_eq!(by_map, by_elf);
    // Named: the program's functions, not addresses.
    for name in ["main", "sort_task", "crc_task", "irq_handler"] {
        assert!(
            by_map
                .lines()
                .any(|l| l.split([';', ' ']).any(|f| f == name)),
            "{name} missing from\n{by_map}"
        );
    }
    // Every frame is named, but for the A-profile vectors, instructions
    // inside the vector table's symbol, which are named by address.
    for frame in by_map
        .lines()
        .filter_map(|l| l.rsplit_once(' ').map(|x| x.0))
        .flat_map(|s| s.split(';'))
    {
        if let Some(hex) = frame.strip_prefix("0x") {
            let addr = u32::from_str_radix(hex, 16).expect("hex");
            assert!(
                addr < 0x20 && addr % 4 == 0,
                "every frame is named:\n{by_map}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(unix)]
#[test]
fn a_list_from_a_pipe_names_functions_as_the_file_does() {
    // As `--kallsyms <(ssh board cat /proc/kallsyms)` gives it; procfs
    // files (size 0) are read the same way.
    let dir = tmp("pipe");
    let map = dir.join("System.map");
    let elf = example().join("example.elf");
    if system_map(&elf, &map).is_none() {
        missing("arm-none-eabi-nm");
        return;
    }
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()));
    let writer = {
        let (fifo, text) = (fifo.clone(), std::fs::read(&map).expect("map"));
        std::thread::spawn(move || std::fs::write(fifo, text))
    };
    let by_pipe = folded(
        &["--kallsyms".as_ref(), fifo.as_os_str()],
        &dir.join("pipe.folded"),
    );
    writer.join().expect("writer").expect("written");
    let by_file = folded(
        &["--kallsyms".as_ref(), map.as_os_str()],
        &dir.join("file.folded"),
    );
    assert_eq!(by_pipe, by_file);
    assert!(by_pipe.contains("crc_task"), "{by_pipe}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_file_of_another_format_is_refused_naming_the_line() {
    let dir = tmp("bad");
    let map = dir.join("not.map");
    std::fs::write(&map, "c0008000 T stext\nnot a symbol line\n").expect("write");
    let out = bin()
        .arg(example())
        .arg("--kallsyms")
        .arg(&map)
        .arg("--folded")
        .arg(dir.join("x.folded"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("not.map"), "{err}");
    assert!(!dir.join("x.folded").exists());
    // Addresses hidden from an unprivileged reader say so.
    std::fs::write(&map, "00000000 T stext\n00000000 t helper\n").expect("write");
    let out = bin()
        .arg(example())
        .arg("--kallsyms")
        .arg(&map)
        .arg("--folded")
        .arg(dir.join("x.folded"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kptr_restrict"));
    std::fs::remove_dir_all(&dir).ok();
}

/// The `thread_name` values of a Chrome trace.
fn chrome_thread_names(json: &str) -> BTreeSet<String> {
    let v: serde_json::Value = serde_json::from_str(json).expect("json");
    v["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn folded_stacks_of_several_cores_start_with_the_track_name() {
    let Some(data) = test_support::opencsd_dir() else {
        return;
    };
    let dir = tmp("roots");
    let out = bin()
        .arg(data.join("TC2"))
        .arg("--folded")
        .arg(dir.join("tc2.folded"))
        .arg("--chrome")
        .arg(dir.join("tc2.json"))
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tracks = chrome_thread_names(&std::fs::read_to_string(dir.join("tc2.json")).expect("json"));
    assert_eq!(tracks.len(), 4, "{tracks:?}");
    let folded = std::fs::read_to_string(dir.join("tc2.folded")).expect("folded");
    let roots: BTreeSet<String> = folded
        .lines()
        .map(|l| l.split(';').next().expect("frame").to_owned())
        .collect();
    assert_eq!(roots, tracks);
    assert!(
        roots.iter().any(|r| r.starts_with("cpu_0 Cortex-A7 ")),
        "{roots:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
