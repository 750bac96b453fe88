//! Hostile and odd snapshot folders: links and FIFOs that would lead reads
//! outside the folder or block, duplicates with one rule each (and a note),
//! sources that cannot be decoded said so, and sizes that used to take
//! cubic time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::Duration;
use trace_convert::input::flags::SourceFlags;
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::snapshot::{Snapshot, SnapshotError};
use trace_convert::input::{self, Input};

const CONFIG: i32 = 4;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot")
}

/// A scratch folder holding a copy of the bundled example snapshot in
/// `snap/`, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let root = std::env::temp_dir().join(format!("tc-hostile-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let snap = root.join("snap");
        std::fs::create_dir_all(&snap).expect("mkdir");
        for e in std::fs::read_dir(example()).expect("example") {
            let e = e.expect("entry");
            std::fs::copy(e.path(), snap.join(e.file_name())).expect("copy");
        }
        Scratch(root)
    }

    fn snap(&self) -> PathBuf {
        self.0.join("snap")
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.snap().join(name), text).expect("write");
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.snap().join(name)).expect("read")
    }

    /// Replace `name` in the snapshot by a symbolic link to `target`.
    #[cfg(unix)]
    fn link(&self, name: &str, target: &Path) {
        let at = self.snap().join(name);
        std::fs::remove_file(&at).expect("remove");
        std::os::unix::fs::symlink(target, &at).expect("symlink");
    }

    /// Replace `name` in the snapshot by a FIFO.
    fn fifo(&self, name: &str) {
        let at = self.snap().join(name);
        let _ = std::fs::remove_file(&at);
        let made = Command::new("mkfifo").arg(&at).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", at.display());
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run `f` on another thread; fail if it has not returned in 30 s (a
/// FIFO read blocks, cubic work never ends).
fn within_30s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()).ok());
    rx.recv_timeout(Duration::from_secs(30))
        .expect("returned within 30 s")
}

fn resolve(dir: &Path) -> Result<Input, input::InputError> {
    input::resolve(dir, &SourceFlags::default())
}

fn cli(args: &[&std::ffi::OsStr]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trace-convert"));
    cmd.args(args).stdin(std::process::Stdio::null());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(cmd.output().expect("run")).ok());
    rx.recv_timeout(Duration::from_secs(60))
        .expect("trace-convert returned within 60 s")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Instructions decoded from the first capture of `input` with its
/// snapshot's memory.
fn instructions(input: &Input) -> Result<u64, String> {
    let capture = &input.captures[0];
    let snap = input.snapshot.clone();
    let mut err = None;
    let summary = trace_convert::input::capture::decoder(capture, |name| {
        match memory_for(snap.as_ref(), name, &ExtraMemory::default()) {
            Ok(m) => std::sync::Arc::new(m),
            Err(e) => {
                err = Some(e.to_string());
                std::sync::Arc::new(trace_core::memory::MemoryMap::new())
            }
        }
    })
    .and_then(|d| {
        trace_convert::input::capture::run(
            capture,
            &mut d.build(),
            &mut trace_core::capture::each_event(|_| Ok(())),
        )
    })
    .map_err(|e| e.to_string())?;
    if let Some(e) = err {
        return Err(e);
    }
    Ok(summary.sources.iter().map(|(_, c)| c.instructions).sum())
}

#[test]
fn the_example_decodes_as_a_baseline() {
    let s = Scratch::new("base");
    let input = resolve(&s.snap()).expect("resolves");
    assert!(instructions(&input).expect("decodes") > 0);
    assert!(input.snapshot.expect("snapshot").notes.is_empty());
}

#[cfg(unix)]
#[test]
fn snapshot_ini_leading_outside_is_refused() {
    let s = Scratch::new("top");
    s.link("snapshot.ini", Path::new("/etc/passwd"));
    let err = Snapshot::read(&s.snap()).expect_err("a link to /etc/passwd");
    assert!(
        matches!(err, SnapshotError::OutsideSnapshot { .. }),
        "{err}"
    );
    // A link to another snapshot's snapshot.ini, beside this one.
    let other = Scratch::new("top-other");
    s.link("snapshot.ini", &other.snap().join("snapshot.ini"));
    let err = Snapshot::read(&s.snap()).expect_err("a link to another snapshot");
    assert!(
        matches!(err, SnapshotError::OutsideSnapshot { .. }),
        "{err}"
    );
    // Relative, climbing out.
    std::fs::copy(other.snap().join("snapshot.ini"), s.0.join("snapshot.ini")).expect("copy");
    s.link("snapshot.ini", Path::new("../snapshot.ini"));
    let err = Snapshot::read(&s.snap()).expect_err("a link climbing out");
    assert!(
        matches!(err, SnapshotError::OutsideSnapshot { .. }),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn files_swapped_for_links_after_reading_are_not_followed() {
    let s = Scratch::new("swap");
    let input = resolve(&s.snap()).expect("resolves");
    // The same bytes, outside the folder: reading them would succeed.
    let outside = s.0.join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    for f in ["trace.bin", "core_0_0.bin"] {
        std::fs::copy(s.snap().join(f), outside.join(f)).expect("copy");
    }
    s.link("trace.bin", &outside.join("trace.bin"));
    let err = instructions(&input).expect_err("the buffer now leads outside");
    assert!(err.contains("outside"), "{err}");
    std::fs::remove_file(s.snap().join("trace.bin")).expect("rm");
    std::fs::copy(outside.join("trace.bin"), s.snap().join("trace.bin")).expect("copy");
    s.link("core_0_0.bin", &outside.join("core_0_0.bin"));
    let err = instructions(&input).expect_err("the dump now leads outside");
    assert!(err.contains("outside"), "{err}");
    // A link that stays inside is followed.
    s.link("core_0_0.bin", Path::new("trace.bin"));
    std::fs::copy(outside.join("core_0_0.bin"), s.snap().join("code.bin")).expect("copy");
    s.link("core_0_0.bin", Path::new("code.bin"));
    assert!(instructions(&input).expect("inside") > 0);
}

#[test]
fn fifos_are_refused_without_blocking() {
    // As the buffer, swapped in after the snapshot was read.
    let s = Scratch::new("fifo");
    let input = resolve(&s.snap()).expect("resolves");
    s.fifo("trace.bin");
    let err = within_30s(move || instructions(&input)).expect_err("a FIFO buffer");
    assert!(err.contains("not a regular file"), "{err}");
    // As a dump.
    let s = Scratch::new("fifo-dump");
    s.fifo("core_0_0.bin");
    let dir = s.snap();
    let err = within_30s(move || resolve(&dir).map(|_| ())).expect_err("a FIFO dump");
    assert!(err.to_string().contains("not a regular file"), "{err}");
    // As each .ini file.
    for ini in ["snapshot.ini", "trace.ini", "source_0.ini"] {
        let s = Scratch::new("fifo-ini");
        s.fifo(ini);
        let dir = s.snap();
        let err = within_30s(move || Snapshot::read(&dir).map(|_| ())).expect_err("a FIFO .ini");
        assert!(
            err.to_string().contains("not a regular file"),
            "{ini}: {err}"
        );
    }
}

#[test]
fn names_with_dot_parts_that_stay_inside_are_accepted() {
    let s = Scratch::new("dots");
    std::fs::create_dir_all(s.snap().join("t")).expect("mkdir");
    s.write(
        "trace.ini",
        &s.read("trace.ini")
            .replace("file=trace.bin", "file=./trace.bin"),
    );
    s.write(
        "core_0.ini",
        &s.read("core_0.ini")
            .replace("file=core_0_0.bin", "file=t/../core_0_0.bin"),
    );
    let input = resolve(&s.snap()).expect("resolves");
    assert!(instructions(&input).expect("decodes") > 0);
}

#[test]
fn carriage_returns_alone_end_lines() {
    let s = Scratch::new("cr");
    for f in ["snapshot.ini", "trace.ini", "core_0.ini", "source_0.ini"] {
        s.write(f, &s.read(f).replace('\n', "\r"));
    }
    let input = resolve(&s.snap()).expect("resolves");
    assert!(instructions(&input).expect("decodes") > 0);
}

fn skipped(dir: &Path) -> Vec<(String, String)> {
    let input = resolve(dir).expect("resolves");
    input
        .captures
        .iter()
        .flat_map(|c| c.skipped.clone())
        .collect()
}

#[test]
fn sources_that_cannot_be_decoded_are_said_so() {
    let s = Scratch::new("skip");
    let src = s.read("source_0.ini");
    s.write("source_0.ini", &src.replace("=0x30001000", "=0x1FFFFFFFF"));
    let why = skipped(&s.snap());
    assert!(
        why.iter()
            .any(|(_, w)| w.contains("ETMCR=0x1ffffffff is out of range")),
        "{why:?}"
    );
    for id in ["0x00000000", "0x7F", "0x70"] {
        s.write("source_0.ini", &src.replace("0x00000010", id));
        let why = skipped(&s.snap());
        assert!(
            why.iter().any(|(_, w)| w.contains("reserved")),
            "{id}: {why:?}"
        );
    }
    s.write("source_0.ini", &src.replace("0x00000010", "0x80"));
    let why = skipped(&s.snap());
    assert!(
        why.iter().any(|(_, w)| w.contains("out of range")),
        "{why:?}"
    );
    s.write("source_0.ini", &src.replace("PTM1.1", "ETM4.0"));
    let why = skipped(&s.snap());
    // The reason follows "not decoded: " in messages: it does not say so
    // again.
    assert!(
        why.iter()
            .any(|(_, w)| w.contains("ETM4.0 trace") && !w.contains("not decoded")),
        "{why:?}"
    );
}

#[test]
fn a_second_source_on_a_taken_trace_id_is_skipped_and_the_first_kept() {
    let s = Scratch::new("sameid");
    s.write(
        "source_1.ini",
        &s.read("source_0.ini").replace("PTM_0", "PTM_1"),
    );
    s.write(
        "snapshot.ini",
        &s.read("snapshot.ini").replace(
            "device2=source_0.ini",
            "device2=source_0.ini\ndevice3=source_1.ini",
        ),
    );
    s.write(
        "trace.ini",
        &s.read("trace.ini")
            .replace("PTM_0=buffer0", "PTM_0=buffer0\nPTM_1=buffer0"),
    );
    let input = resolve(&s.snap()).expect("resolves");
    let c = &input.captures[0];
    assert_eq!(c.sources.len(), 1);
    assert_eq!(c.sources[0].name, "PTM_0");
    assert_eq!(c.skipped.len(), 1);
    assert_eq!(c.skipped[0].0, "PTM_1");
    assert!(
        c.skipped[0].1.contains("already PTM_0's"),
        "{:?}",
        c.skipped
    );
}

#[test]
fn without_source_buffers_a_note_and_a_failing_run() {
    let s = Scratch::new("nosb");
    s.write(
        "trace.ini",
        &s.read("trace.ini")
            .replace("[source_buffers]\nPTM_0=buffer0\n", ""),
    );
    let input = resolve(&s.snap()).expect("resolves");
    let notes = &input.snapshot.as_ref().expect("snapshot").notes;
    assert!(
        notes.iter().any(|n| n.contains("no [source_buffers]")),
        "{notes:?}"
    );
    let out = cli(&["decode".as_ref(), s.snap().as_os_str()]);
    assert_eq!(out.status.code(), Some(CONFIG), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("decoded no instruction"),
        "{}",
        stderr(&out)
    );
    let lcov = s.0.join("x.info");
    let out = cli(&[s.snap().as_os_str(), "--folded".as_ref(), lcov.as_os_str()]);
    assert_eq!(out.status.code(), Some(CONFIG), "{}", stderr(&out));
}

#[test]
fn duplicates_follow_one_rule_each_with_a_note() {
    let s = Scratch::new("dups");
    // A register given twice: the last value counts (the INI rule).
    s.write(
        "source_0.ini",
        &format!("{}ETMTRACEIDR=0x22\n", s.read("source_0.ini")),
    );
    // A device file listed three times, a buffer listed three times.
    s.write(
        "snapshot.ini",
        &s.read("snapshot.ini").replace(
            "device2=source_0.ini",
            "device2=source_0.ini\ndevice3=source_0.ini\ndevice4=./source_0.ini",
        ),
    );
    s.write(
        "trace.ini",
        &s.read("trace.ini")
            .replace("buffers=buffer0", "buffers=buffer0, buffer0,buffer0"),
    );
    let input = resolve(&s.snap()).expect("resolves");
    let snap = input.snapshot.as_ref().expect("snapshot");
    assert_eq!(
        snap.device("PTM_0").and_then(|d| d.reg("ETMTRACEIDR")),
        Some(0x22)
    );
    assert_eq!(input.captures[0].sources[0].id, 0x22);
    assert_eq!(snap.devices.len(), 2);
    assert_eq!(input.captures.len(), 1, "buffer0 is decoded once");
    let notes = snap.notes.join("\n");
    for needle in [
        "register ETMTRACEIDR is given more than once",
        "listed 3 times in [device_list]",
        "listed 3 times in [trace_buffers]",
    ] {
        assert!(notes.contains(needle), "{needle}: {notes}");
    }

    // Two device files naming one device: the one listed later is used.
    let s = Scratch::new("dupname");
    s.write(
        "source_1.ini",
        &s.read("source_0.ini").replace("0x00000010", "0x00000033"),
    );
    s.write(
        "snapshot.ini",
        &s.read("snapshot.ini").replace(
            "device2=source_0.ini",
            "device2=source_0.ini\ndevice3=source_1.ini",
        ),
    );
    let input = resolve(&s.snap()).expect("resolves");
    assert_eq!(input.captures[0].sources[0].id, 0x33);
    let notes = input.snapshot.as_ref().expect("snapshot").notes.join("\n");
    assert!(notes.contains("both name a device PTM_0"), "{notes}");
}

#[test]
fn a_buffer_whose_name_differs_from_its_section_is_decoded_once() {
    // As in TC2: section [buffer0] describes buffer ETB_0.
    let s = Scratch::new("bufname");
    let renamed = s
        .read("trace.ini")
        .replace("name=buffer0", "name=ETB_0")
        .replace("PTM_0=buffer0", "PTM_0=ETB_0");
    s.write(
        "trace.ini",
        &renamed.replace("buffers=buffer0", "buffers=buffer0,buffer0"),
    );
    let once = instructions(&resolve(&s.snap()).expect("resolves")).expect("decodes");
    assert!(once > 0);
    let input = resolve(&s.snap()).expect("resolves");
    assert_eq!(input.captures.len(), 1, "buffer0 is decoded once");
    let notes = input.snapshot.as_ref().expect("snapshot").notes.join("\n");
    assert!(
        notes.contains("listed 2 times in [trace_buffers]"),
        "{notes}"
    );

    // Two sections describing one buffer: decoded once, from the first.
    s.write(
        "trace.ini",
        &renamed
            .replace("buffers=buffer0", "buffers=buffer0,buffer1")
            .replace(
                "[source_buffers]",
                "[buffer1]\nname=ETB_0\nfile=trace.bin\n\n[source_buffers]",
            ),
    );
    let input = resolve(&s.snap()).expect("resolves");
    assert_eq!(input.captures.len(), 1, "ETB_0 is decoded once");
    let notes = input.snapshot.as_ref().expect("snapshot").notes.join("\n");
    assert!(
        notes.contains("sections [buffer0] and [buffer1] both describe buffer ETB_0"),
        "{notes}"
    );
    // The run's counts are those of one decode.
    let out = cli(&[
        "decode".as_ref(),
        s.snap().as_os_str(),
        "--format".as_ref(),
        "none".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(" {once} instructions")),
        "{once}: {}",
        stderr(&out)
    );
}

#[test]
fn overlapping_dumps_and_lengths_past_the_file_are_noted() {
    let s = Scratch::new("dumps");
    s.write(
        "core_0.ini",
        &format!(
            "{}\n[dump2]\nfile=core_0_0.bin\naddress=0x100\nlength=0x10\n[dump3]\nfile=core_0_0.bin\naddress=0x10000\nlength=0x1000\n",
            s.read("core_0.ini")
        ),
    );
    let input = resolve(&s.snap()).expect("resolves");
    let notes = input.snapshot.as_ref().expect("snapshot").notes.join("\n");
    assert!(
        notes.contains("1 overlap(s) between dump sections, first [dump1] and [dump2] at 0x100"),
        "{notes}"
    );
    assert!(
        notes.contains("[dump3] length 0x1000 goes past the end"),
        "{notes}"
    );
    // The rules: the later dump wins where they overlap.
    let map =
        memory_for(input.snapshot.as_ref(), "PTM_0", &ExtraMemory::default()).expect("memory");
    let mut b = [0u8; 4];
    use trace_core::memory::{MemoryImage, Space};
    assert_eq!(map.read(Space::Any, 0x100, &mut b), 4);
    let file = std::fs::read(s.snap().join("core_0_0.bin")).expect("read");
    assert_eq!(b, file[..4], "dump2 (file offset 0) answers at 0x100");
    assert_eq!(map.read(Space::Any, 0x10000 + 0x300, &mut b), 4);
    assert_eq!(
        map.read(Space::Any, 0x10000 + 808, &mut b),
        0,
        "cut at the file's end"
    );
}

#[test]
fn ini_text_is_escaped_in_messages() {
    let s = Scratch::new("esc");
    s.write(
        "trace.ini",
        &s.read("trace.ini")
            .replace("PTM_0=buffer0", "PTM_0=buffer0\nEVIL\u{1b}[2J=buffer0"),
    );
    let out = cli(&["decode".as_ref(), s.snap().as_os_str()]);
    let err = stderr(&out);
    assert!(err.contains("EVIL\\u{1b}[2J"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err}");
}

#[test]
fn thousands_of_dump_sections_load_in_near_linear_time() {
    // 4,000 sections took 113 s when each rebuilt the lookup table.
    let s = Scratch::new("many");
    let mut core = s.read("core_0.ini");
    for k in 0..4000u32 {
        core.push_str(&format!(
            "[dump_{k}]\nfile=core_0_0.bin\naddress={:#x}\nlength=0x328\n",
            0x10_0000 + k * 0x200
        ));
    }
    s.write("core_0.ini", &core);
    let dir = s.snap();
    let n = within_30s(move || {
        let input = resolve(&dir).expect("resolves");
        let map =
            memory_for(input.snapshot.as_ref(), "PTM_0", &ExtraMemory::default()).expect("memory");
        map.regions().count()
    });
    assert_eq!(n, 4001);
}

#[test]
fn special_files_as_elf_or_mem_are_refused() {
    let s = Scratch::new("special");
    s.fifo("app.fifo");
    let fifo = s.snap().join("app.fifo");
    let out_file = s.0.join("o.folded");
    for (flag, value) in [
        ("--elf", fifo.clone().into_os_string()),
        ("--elf", "/dev/zero".into()),
        ("--mem", format!("{}@0x0", fifo.display()).into()),
        ("--mem", "/dev/zero@0x0".into()),
    ] {
        let out = cli(&[
            s.snap().as_os_str(),
            flag.as_ref(),
            &value,
            "--folded".as_ref(),
            out_file.as_os_str(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{flag} {value:?}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("not a regular file"),
            "{}",
            stderr(&out)
        );
    }
}

/// Resident memory of this process in KiB (Linux), if known.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_sparse_dump_named_by_many_sections_is_mapped_once() {
    // A 1 GiB sparse dump named by 8 sections once took 6.4 GB and aborted.
    let s = Scratch::new("sparse");
    std::fs::File::create(s.snap().join("sparse.bin"))
        .and_then(|f| f.set_len(1 << 30))
        .expect("sparse file");
    let sections: String = (0..8)
        .map(|k| format!("[dump_s{k}]\nfile=sparse.bin\naddress=0x0\n"))
        .collect();
    s.write("core_0.ini", &format!("{}{sections}", s.read("core_0.ini")));
    let input = resolve(&s.snap()).expect("resolves");
    let Some(before) = rss_kib() else { return };
    let map =
        memory_for(input.snapshot.as_ref(), "PTM_0", &ExtraMemory::default()).expect("memory");
    assert_eq!(map.regions().count(), 9);
    let grown = rss_kib().unwrap_or(0).saturating_sub(before);
    assert!(grown < 64 << 10, "the process grew by {grown} KiB");
}

/// Saved events are read from regular files only (a FIFO given as a
/// capture is a stream: `stream_inputs.rs`).
#[test]
fn a_fifo_as_saved_events_is_refused() {
    let s = Scratch::new("fifo-cli");
    s.fifo("capture.fifo");
    let fifo = s.snap().join("capture.fifo");
    let folded = s.0.join("x.folded");
    let out = cli(&[
        "--from-events".as_ref(),
        fifo.as_os_str(),
        "--folded".as_ref(),
        folded.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
}
