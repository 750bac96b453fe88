//! Outputs on the command line: an output that is an input or another
//! output is refused before anything is read or written; a failed or
//! interrupted run leaves nothing under a final name and no temporary
//! file; links are written through, `-` is standard output, pipes and
//! devices are written in place (docs/cli.md, "Exit codes" and "Converting").
//!
//! Runs on the bundled example snapshot, copied into a scratch folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const USAGE: i32 = 2;
const INPUT: i32 = 3;
const OUTPUT: i32 = 5;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trace-convert"));
    c.arg("--no-progress");
    c
}

fn run(args: &[&Path]) -> Output {
    bin().args(args).output().expect("run trace-convert")
}

fn listing(sub: &str, args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .arg(sub)
        .args(args)
        .output()
        .expect("run trace-convert")
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cli-outputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

/// A copy of the bundled example snapshot in `dir/snap`.
fn example_in(dir: &Path) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot");
    let to = dir.join("snap");
    std::fs::create_dir_all(&to).expect("mkdir");
    for e in std::fs::read_dir(&from).expect("example") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
    }
    to
}

/// Every file below `dir` (not following links) with its bytes; links as
/// `->target`, pipes and devices by their kind.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("ls") {
            let path = e.expect("entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("meta");
            if meta.is_dir() {
                todo.push(path.clone());
                m.insert(path, b"<dir>".to_vec());
            } else if meta.file_type().is_symlink() {
                let to = std::fs::read_link(&path).expect("link");
                m.insert(path, format!("->{}", to.display()).into_bytes());
            } else if meta.is_file() {
                m.insert(path.clone(), std::fs::read(&path).expect("read"));
            } else {
                // A pipe or device: opening it could block.
                m.insert(path, b"<special>".to_vec());
            }
        }
    }
    m
}

/// The temporary files left below `dir`.
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    contents(dir)
        .into_keys()
        .filter(|p| p.extension().is_some_and(|x| x == "tmp"))
        .collect()
}

/// The run failed with `code` and its last line on stderr, the error,
/// mentions each of `needles`.
fn fails(out: &Output, code: i32, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("trace-convert: "), "{err}");
    for n in needles {
        assert!(last.contains(n), "`{last}` should mention `{n}`");
    }
}

fn succeeds(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = scratch("same");
    let snap = example_in(&dir);
    let s = |name: &str| snap.join(name);
    // Saved events, to be an input too.
    let events = dir.join("run.events");
    succeeds(&run(&[&snap, p("--save-events"), &events]));
    std::fs::hard_link(s("trace.bin"), s("hard.bin")).expect("hard link");
    #[cfg(unix)]
    std::os::unix::fs::symlink("trace.bin", s("soft.bin")).expect("symlink");
    let before = contents(&dir);
    let (trace, trace_ini, top_ini, core_ini, dump, elf, hard) = (
        s("trace.bin"),
        s("trace.ini"),
        s("snapshot.ini"),
        s("core_0.ini"),
        s("core_0_0.bin"),
        s("example.elf"),
        s("hard.bin"),
    );
    let mem = PathBuf::from(format!("{}@0", dump.display()));
    let raw = |rest: &[&'static Path]| -> Vec<PathBuf> {
        let mut v = vec![trace.clone()];
        v.extend(
            ["--protocol", "ptm", "--layout", "frames"]
                .iter()
                .map(PathBuf::from),
        );
        v.extend(rest.iter().map(|p| p.to_path_buf()));
        v
    };
    let owned = |v: &[&Path]| -> Vec<PathBuf> { v.iter().map(|p| p.to_path_buf()).collect() };
    let mut cases: Vec<Vec<PathBuf>> = vec![
        // The capture file itself.
        [raw(&[]), owned(&[p("--chrome"), &trace])].concat(),
        // The snapshot's trace buffer, `.ini` files and memory dump.
        owned(&[&snap, p("--perfetto"), &trace]),
        owned(&[&snap, p("--folded"), &trace_ini]),
        owned(&[&snap, p("--chrome"), &top_ini]),
        owned(&[&snap, p("--chrome"), &core_ini]),
        owned(&[&snap, p("--folded"), &dump]),
        // --elf, --mem, --from-events.
        owned(&[&snap, p("--elf"), &elf, p("--lcov"), &elf]),
        [raw(&[]), owned(&[p("--mem"), &mem, p("--folded"), &dump])].concat(),
        owned(&[p("--from-events"), &events, p("--chrome"), &events]),
        // Through a hard link and a symbolic link.
        owned(&[&snap, p("--chrome"), &hard]),
    ];
    #[cfg(unix)]
    cases.push(owned(&[&snap, p("--chrome"), &s("soft.bin")]));
    for args in &cases {
        let args: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
        fails(&run(&args), USAGE, &["is the input", "same file"]);
        assert_eq!(contents(&dir), before, "{args:?} changed a file");
    }
    // The listings' -o.
    for (sub, args) in [
        ("decode", [raw(&[]), owned(&[p("-o"), &trace])].concat()),
        ("decode", owned(&[&snap, p("-o"), &hard])),
        ("packets", owned(&[&snap, p("-o"), &trace_ini])),
        ("decode", owned(&[&snap, p("--elf"), &elf, p("-o"), &elf])),
        (
            "decode",
            [raw(&[]), owned(&[p("--mem"), &mem, p("-o"), &dump])].concat(),
        ),
    ] {
        let args: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
        fails(&listing(sub, &args), USAGE, &["is the input"]);
        assert_eq!(contents(&dir), before, "{sub} {args:?} changed a file");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn two_outputs_on_one_path_are_refused_before_decoding() {
    let dir = scratch("dups");
    let snap = example_in(&dir);
    let elf = snap.join("example.elf");
    let x = dir.join("x");
    let d = dir.join("d");
    let before = contents(&dir);
    for args in [
        vec![&snap, p("--chrome"), &x, p("--folded"), &x],
        vec![&snap, p("--chrome"), &x, p("--folded"), &dir.join("./x")],
        vec![
            &snap,
            p("--out-dir"),
            &d,
            p("--folded"),
            &d.join("trace.json"),
        ],
        vec![
            &snap,
            p("--elf"),
            &elf,
            p("--save-events"),
            &x,
            p("--lcov"),
            &x,
        ],
        vec![&snap, p("--chrome"), p("-"), p("--folded"), p("-")],
    ] {
        let out = run(&args);
        fails(&out, USAGE, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("same file") || err.contains("only one output"),
            "{err}"
        );
        // Refused before decoding: no summary of the trace.
        assert!(!err.contains("instructions in"), "{err}");
        assert_eq!(contents(&dir), before, "{args:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_output_commits_no_other_output() {
    // /dev/full fails every write (ENOSPC), as a full disk does: the
    // folded output fails after the other three are written in full.
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = scratch("full");
    let snap = example_in(&dir);
    let elf = snap.join("example.elf");
    // The output folder does not exist: it is not made.
    let fresh = dir.join("fresh");
    let before = contents(&dir);
    let out = run(&[
        &snap,
        p("--elf"),
        &elf,
        p("--out-dir"),
        &fresh,
        p("--folded"),
        p("/dev/full"),
    ]);
    fails(&out, OUTPUT, &["/dev/full"]);
    assert_eq!(contents(&dir), before);
    // An output folder with an earlier run's files: they stay as they were.
    let old = dir.join("old");
    std::fs::create_dir_all(&old).expect("mkdir");
    for name in ["trace.json", "trace.pftrace", "coverage.info"] {
        std::fs::write(old.join(name), format!("earlier {name}")).expect("write");
    }
    let before = contents(&dir);
    let out = run(&[
        &snap,
        p("--elf"),
        &elf,
        p("--out-dir"),
        &old,
        p("--folded"),
        p("/dev/full"),
        p("--save-events"),
        &dir.join("run.events"),
    ]);
    fails(&out, OUTPUT, &["/dev/full"]);
    assert_eq!(contents(&dir), before);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_failed_run_makes_no_output_folder() {
    let dir = scratch("nofolder");
    let snap = example_in(&dir);
    let out_dir = dir.join("out");
    let out = run(&[
        &snap,
        p("--out-dir"),
        &out_dir,
        p("--elf"),
        p("/nonexistent/app.elf"),
    ]);
    fails(&out, INPUT, &["/nonexistent/app.elf"]);
    assert!(
        !out_dir.exists(),
        "--out-dir made its folder for a failed run"
    );
    assert!(temporaries(&dir).is_empty());
    // A successful run makes it, nested folders included.
    let nested = dir.join("a/b");
    succeeds(&run(&[&snap, p("--out-dir"), &nested]));
    assert!(nested.join("trace.json").is_file());
    assert!(temporaries(&dir).is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn out_dir_on_a_file_says_it_is_not_a_folder() {
    let dir = scratch("outdirfile");
    let snap = example_in(&dir);
    let file = dir.join("plain");
    std::fs::write(&file, "keep").expect("write");
    fails(
        &run(&[&snap, p("--out-dir"), &file]),
        OUTPUT,
        &["--out-dir", "plain", "not a folder"],
    );
    assert_eq!(std::fs::read(&file).expect("read"), b"keep");
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(unix)]
#[test]
fn symlinked_outputs_are_written_through_the_link() {
    let dir = scratch("links");
    let snap = example_in(&dir);
    // The reference: a plain file.
    let plain = dir.join("plain.folded");
    succeeds(&run(&[&snap, p("--folded"), &plain]));
    let want = std::fs::read(&plain).expect("plain");
    assert!(!want.is_empty());
    // An existing file behind a link, and a dangling link.
    std::fs::create_dir_all(dir.join("real")).expect("mkdir");
    std::fs::write(dir.join("real/a.folded"), "old").expect("write");
    std::os::unix::fs::symlink("real/a.folded", dir.join("a-link")).expect("symlink");
    std::os::unix::fs::symlink(dir.join("real/b.folded"), dir.join("b-link")).expect("symlink");
    for (link, target) in [("a-link", "real/a.folded"), ("b-link", "real/b.folded")] {
        succeeds(&run(&[&snap, p("--folded"), &dir.join(link)]));
        let meta = std::fs::symlink_metadata(dir.join(link)).expect("link");
        assert!(meta.file_type().is_symlink(), "{link} is still a link");
        assert_eq!(std::fs::read(dir.join(target)).expect("target"), want);
    }
    // A link to an open descriptor, as /dev/stdout is: written to the
    // descriptor (here standard output, a file), the link left alone.
    std::os::unix::fs::symlink("/proc/self/fd/1", dir.join("fd-link")).expect("symlink");
    let captured = dir.join("captured");
    let status = bin()
        .arg(&snap)
        .arg("--folded")
        .arg(dir.join("fd-link"))
        .stdout(std::fs::File::create(&captured).expect("create"))
        .stderr(Stdio::null())
        .status()
        .expect("run");
    assert!(status.success());
    assert!(std::fs::symlink_metadata(dir.join("fd-link"))
        .expect("link")
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&captured).expect("captured"), want);
    assert!(temporaries(&dir).is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn dash_is_standard_output() {
    let dir = scratch("dash");
    let snap = example_in(&dir);
    let folded = dir.join("f.folded");
    let chrome = dir.join("c.json");
    succeeds(&run(&[&snap, p("--folded"), &folded]));
    succeeds(&run(&[&snap, p("--chrome"), &chrome]));
    // One output on standard output, another in a file.
    let out = run(&[
        &snap,
        p("--folded"),
        p("-"),
        p("--chrome"),
        &dir.join("c2.json"),
    ]);
    succeeds(&out);
    assert_eq!(out.stdout, std::fs::read(&folded).expect("folded"));
    assert_eq!(
        std::fs::read(dir.join("c2.json")).expect("c2"),
        std::fs::read(&chrome).expect("chrome")
    );
    assert!(!dir.join("-").exists());
    // The listings: -o - is what no -o gives.
    for sub in ["decode", "packets"] {
        let plain = listing(sub, &[&snap]);
        let dash = listing(sub, &[&snap, p("-o"), p("-")]);
        succeeds(&plain);
        succeeds(&dash);
        assert!(!plain.stdout.is_empty());
        assert_eq!(dash.stdout, plain.stdout, "{sub}");
    }
    assert!(!dir.join("-").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(unix)]
#[test]
fn pipes_and_devices_are_written_in_place() {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("fifo");
    let snap = example_in(&dir);
    let plain = dir.join("plain.folded");
    succeeds(&run(&[&snap, p("--folded"), &plain]));
    let want = std::fs::read(&plain).expect("plain");

    // /dev/null, even for several outputs: still a device afterwards.
    let null = p("/dev/null");
    if std::fs::metadata(null).is_ok_and(|m| m.file_type().is_char_device()) {
        succeeds(&run(&[&snap, p("--folded"), null, p("--chrome"), null]));
        let m = std::fs::metadata(null).expect("null");
        assert!(m.file_type().is_char_device());
    }

    // A named pipe: its reader gets the output, the pipe stays a pipe.
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return;
    }
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut v = Vec::new();
            std::fs::File::open(&fifo)
                .expect("open pipe")
                .read_to_end(&mut v)
                .expect("read pipe");
            v
        })
    };
    succeeds(&run(&[&snap, p("--folded"), &fifo]));
    assert_eq!(reader.join().expect("reader"), want);
    let m = std::fs::symlink_metadata(&fifo).expect("pipe");
    assert!(m.file_type().is_fifo(), "the pipe is still a pipe");

    // A folder is refused.
    fails(
        &run(&[&snap, p("--folded"), &dir]),
        OUTPUT,
        &["folder, not a file"],
    );
    assert!(temporaries(&dir).is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

/// Start a conversion of a large capture (the example's trace repeated),
/// wait until its outputs are being written, send `signal`, and check that
/// the process ends by it and leaves no temporary file and no output.
#[cfg(unix)]
fn interrupted_by(signal: &str, number: i32) {
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};
    let dir = scratch(&format!("signal-{signal}"));
    let snap = example_in(&dir);
    let trace = std::fs::read(snap.join("trace.bin")).expect("trace");
    // About 17 MB: seconds of work for a debug build.
    std::fs::write(snap.join("trace.bin"), trace.repeat(2000)).expect("write");
    let out_dir = dir.join("out");
    let events = dir.join("run.events");
    let mut child = bin()
        .arg(&snap)
        .arg("--out-dir")
        .arg(&out_dir)
        .arg("--save-events")
        .arg(&events)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // The outputs are being written: a temporary file has grown.
    let start = Instant::now();
    loop {
        let growing = temporaries(&dir)
            .iter()
            .any(|t| std::fs::metadata(t).is_ok_and(|m| m.len() > 100_000));
        if growing {
            break;
        }
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("the conversion ended before the signal: {status}");
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no output seen");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    let sent = Command::new("sh")
        .args(["-c", &format!("kill -{signal} {pid}")])
        .status()
        .expect("kill");
    assert!(sent.success());
    let status = child.wait().expect("wait");
    assert!(!status.success());
    assert_eq!(status.signal(), Some(number), "{status}");
    assert_eq!(temporaries(&dir), Vec::<PathBuf>::new());
    assert!(!out_dir.exists(), "no output folder");
    assert!(!events.exists(), "no saved events");
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(unix)]
#[test]
fn sigint_removes_the_temporary_files() {
    interrupted_by("INT", 2);
}

#[cfg(unix)]
#[test]
fn sigterm_removes_the_temporary_files() {
    interrupted_by("TERM", 15);
}

/// The names in `dir`.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("ls")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[cfg(target_os = "linux")]
#[test]
fn the_temporary_file_of_a_killed_run_is_removed_by_the_next_run() {
    let dir = scratch("killed");
    let snap = example_in(&dir);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("mkdir");
    let folded = out.join("s.folded");
    // The report goes to a FIFO no one reads: the run blocks opening it,
    // after the folded stacks' temporary file is made. Then SIGKILL.
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()));
    let mut child = bin()
        .args([&snap, p("--folded"), &folded, p("--report"), &fifo])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mark = format!(".s.folded.trace-convert.{}.", child.id());
    let start = std::time::Instant::now();
    while !names_in(&out).iter().any(|n| n.starts_with(&mark)) {
        assert!(
            start.elapsed().as_secs() < 60,
            "no temporary file: {:?}",
            names_in(&out)
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    let left = names_in(&out);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with(&mark) && left[0].ends_with(".tmp"));

    // A temporary file of a process that still runs (this one) is left
    // alone, and so is a file of another pattern.
    let live = format!(".s.folded.trace-convert.{}.Ab12Cd.tmp", std::process::id());
    std::fs::write(out.join(&live), "in use").expect("write");
    std::fs::write(out.join(".s.folded.mine.tmp"), "other").expect("write");
    let res = run(&[&snap, p("--folded"), &folded]);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    assert!(
        err.contains(&format!("note: removed {}", out.join(&left[0]).display())),
        "{err}"
    );
    assert!(err.contains("left by a run that was killed"), "{err}");
    assert!(err.contains("which is still running"), "{err}");
    assert_eq!(
        names_in(&out),
        [".s.folded.mine.tmp", live.as_str(), "s.folded"]
    );
    std::fs::remove_dir_all(&dir).ok();
}
