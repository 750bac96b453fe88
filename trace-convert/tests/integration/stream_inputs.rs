//! Captures read as they arrive (docs/live.md): a loopback server that
//! replays a capture in small pieces, standard input and a FIFO give the
//! outputs the file gives (folded stacks, LCOV, report); Ctrl-C (SIGINT,
//! SIGTERM) on a stream commits the outputs of what arrived and exits 0;
//! a connection that cannot be made is an input error.
//!
//! Runs on the bundled example snapshot (a PTM source in CoreSight
//! frames), and on its trace repeated, decoded on two threads.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

const INPUT: i32 = 3;
const USAGE: i32 = 2;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/snapshot")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stream-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

/// The three outputs compared.
const OUTPUTS: [(&str, &str); 3] = [
    ("--folded", "folded"),
    ("--lcov", "info"),
    ("--report", "txt"),
];

/// A conversion of `input` with `extra` arguments into `dir/NAME.*`,
/// with `jobs` decoding threads.
fn command(input: &Path, extra: &[&str], dir: &Path, name: &str, jobs: usize) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trace-convert"));
    c.arg("--no-progress")
        .arg(input)
        .args(extra)
        .arg("--elf")
        .arg(example().join("example.elf"))
        .env("TRACE_CONVERT_JOBS", jobs.to_string());
    for (flag, ext) in OUTPUTS {
        c.arg(flag).arg(dir.join(format!("{name}.{ext}")));
    }
    c
}

/// The outputs `dir/NAME.*`, in the order of [`OUTPUTS`].
fn outputs(dir: &Path, name: &str) -> Vec<Vec<u8>> {
    OUTPUTS
        .iter()
        .map(|(_, ext)| {
            let p = dir.join(format!("{name}.{ext}"));
            std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        })
        .collect()
}

fn succeeds(out: &Output) {
    assert!(
        out.status.success(),
        "{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Write `bytes` to `to` in pieces of `piece` bytes, pausing `pause`
/// after each and 250 ms (longer than a stream's wait for new bytes)
/// after every 16th.
fn replay(to: &mut impl Write, bytes: &[u8], piece: usize, pause: Duration) {
    for (i, p) in bytes.chunks(piece).enumerate() {
        to.write_all(p).expect("send");
        to.flush().expect("flush");
        std::thread::sleep(if i % 16 == 15 {
            Duration::from_millis(250)
        } else {
            pause
        });
    }
}

/// A loopback server replaying `bytes` to its first client, then closing
/// (or, with `hold`, keeping the connection open until the receiver says).
fn server(bytes: Vec<u8>, hold: Option<mpsc::Receiver<()>>) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = format!("tcp://{}", listener.local_addr().expect("addr"));
    let t = std::thread::spawn(move || {
        let (mut c, _): (TcpStream, _) = listener.accept().expect("accept");
        replay(&mut c, &bytes, 997, Duration::from_millis(1));
        if let Some(rx) = hold {
            let _ = rx.recv_timeout(Duration::from_secs(60));
        }
    });
    (addr, t)
}

/// The example's trace over TCP, standard input and a FIFO, each with the
/// snapshot's configuration (`--snapshot`), and over TCP described by
/// flags: the outputs are the file's, byte for byte.
#[test]
fn streams_give_the_files_outputs() {
    let dir = scratch("same");
    let snap = example();
    let trace = std::fs::read(snap.join("trace.bin")).expect("trace");
    succeeds(&command(&snap, &[], &dir, "file", 1).output().expect("run"));
    let want = outputs(&dir, "file");
    let with_snapshot = ["--snapshot", snap.to_str().expect("utf-8")];

    let (addr, peer) = server(trace.clone(), None);
    let out = command(Path::new(&addr), &with_snapshot, &dir, "tcp", 2)
        .output()
        .expect("run");
    succeeds(&out);
    peer.join().expect("server");
    assert_eq!(outputs(&dir, "tcp"), want, "TCP");

    let mut child = command(Path::new("-"), &with_snapshot, &dir, "stdin", 2)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    replay(&mut stdin, &trace, 501, Duration::from_millis(1));
    drop(stdin);
    succeeds(&child.wait_with_output().expect("wait"));
    assert_eq!(outputs(&dir, "stdin"), want, "standard input");

    #[cfg(unix)]
    {
        let fifo = dir.join("trace.fifo");
        let made = Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let writer = {
            let (fifo, trace) = (fifo.clone(), trace.clone());
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&fifo)
                    .expect("open the FIFO");
                replay(&mut f, &trace, 256, Duration::from_millis(1));
            })
        };
        let out = command(&fifo, &with_snapshot, &dir, "fifo", 2)
            .output()
            .expect("run");
        succeeds(&out);
        writer.join().expect("writer");
        assert_eq!(outputs(&dir, "fifo"), want, "FIFO");
    }

    // The same capture described by flags (the snapshot's registers).
    let flags = [
        "--protocol",
        "ptm",
        "--layout",
        "frames",
        "--etmcr",
        "0x30001000",
        "--etmccer",
        "0x34C01AC2",
        "--etmidr",
        "0x411CF312",
        "--trace-id",
        "0x10",
    ];
    let file = snap.join("trace.bin");
    succeeds(
        &command(&file, &flags, &dir, "flags-file", 1)
            .output()
            .expect("run"),
    );
    let (addr, peer) = server(trace, None);
    succeeds(
        &command(Path::new(&addr), &flags, &dir, "flags-tcp", 2)
            .output()
            .expect("run"),
    );
    peer.join().expect("server");
    assert_eq!(outputs(&dir, "flags-tcp"), outputs(&dir, "flags-file"));
    std::fs::remove_dir_all(&dir).ok();
}

/// A longer capture (the example's trace 60 times, about 0.5 MB) over TCP
/// is cut into many chunks decoded on two threads as it arrives, with
/// pauses that hand on short chunks: the outputs of one thread on the
/// file.
#[test]
fn a_long_stream_decoded_on_two_threads_gives_the_files_outputs() {
    let dir = scratch("long");
    let snap = dir.join("snap");
    std::fs::create_dir_all(&snap).expect("mkdir");
    for e in std::fs::read_dir(example()).expect("example") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), snap.join(e.file_name())).expect("copy");
    }
    let trace = std::fs::read(snap.join("trace.bin"))
        .expect("trace")
        .repeat(60);
    std::fs::write(snap.join("trace.bin"), &trace).expect("write");
    succeeds(&command(&snap, &[], &dir, "file", 1).output().expect("run"));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = format!("tcp://{}", listener.local_addr().expect("addr"));
    let peer = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().expect("accept");
        replay(&mut c, &trace, 8 << 10, Duration::ZERO);
    });
    let with_snapshot = ["--snapshot", snap.to_str().expect("utf-8")];
    succeeds(
        &command(Path::new(&addr), &with_snapshot, &dir, "tcp", 2)
            .output()
            .expect("run"),
    );
    peer.join().expect("server");
    assert_eq!(outputs(&dir, "tcp"), outputs(&dir, "file"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Send `signal` to `child`.
#[cfg(unix)]
fn kill(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(sent.success());
}

/// The server sends the whole trace and keeps the connection open; the
/// signal ends the stream: exit 0, and the outputs are those of the
/// trace (all of it arrived).
#[cfg(unix)]
fn a_signal_commits_a_streams_outputs(signal: &str) {
    let dir = scratch(&format!("signal-{signal}"));
    let snap = example();
    let trace = std::fs::read(snap.join("trace.bin")).expect("trace");
    succeeds(&command(&snap, &[], &dir, "file", 1).output().expect("run"));
    let (tx, rx) = mpsc::channel();
    let (addr, peer) = server(trace, Some(rx));
    let with_snapshot = ["--snapshot", snap.to_str().expect("utf-8")];
    let mut child = command(Path::new(&addr), &with_snapshot, &dir, "tcp", 2)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // The replay takes about 0.7 s; then the stream idles, open.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(child.try_wait().expect("wait").is_none(), "still streaming");
    assert!(!dir.join("tcp.folded").exists(), "nothing committed yet");
    kill(&child, signal);
    let out = child.wait_with_output().expect("wait");
    let _ = tx.send(());
    peer.join().expect("server");
    succeeds(&out);
    assert_eq!(outputs(&dir, "tcp"), outputs(&dir, "file"));
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(unix)]
#[test]
fn sigint_commits_a_streams_outputs() {
    a_signal_commits_a_streams_outputs("INT");
}

#[cfg(unix)]
#[test]
fn sigterm_commits_a_streams_outputs() {
    a_signal_commits_a_streams_outputs("TERM");
}

/// `--duration` ends a stream that stays open, as Ctrl-C does.
#[test]
fn the_duration_ends_a_stream() {
    let dir = scratch("duration");
    let snap = example();
    let trace = std::fs::read(snap.join("trace.bin")).expect("trace");
    succeeds(&command(&snap, &[], &dir, "file", 1).output().expect("run"));
    let (tx, rx) = mpsc::channel();
    let (addr, peer) = server(trace, Some(rx));
    let args = [
        "--snapshot",
        snap.to_str().expect("utf-8"),
        "--duration",
        "2s",
    ];
    let out = command(Path::new(&addr), &args, &dir, "tcp", 2)
        .output()
        .expect("run");
    let _ = tx.send(());
    peer.join().expect("server");
    succeeds(&out);
    assert_eq!(outputs(&dir, "tcp"), outputs(&dir, "file"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Nothing listening: an input error naming the address, no output.
#[test]
fn a_connection_that_cannot_be_made_is_an_input_error() {
    let dir = scratch("refused");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let addr = format!("tcp://127.0.0.1:{port}");
    let snap = example();
    let with_snapshot = ["--snapshot", snap.to_str().expect("utf-8")];
    let out = command(Path::new(&addr), &with_snapshot, &dir, "tcp", 2)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(INPUT), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(!dir.join("tcp.folded").exists());
    // Stream flags on a file are refused.
    let out = command(&example(), &["--duration", "1s"], &dir, "file", 1)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(USAGE), "{out:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A FIFO no writer has opened yet: Ctrl-C still ends the stream (empty),
/// and its outputs (of nothing) are committed; a writer that closes at
/// once gives an empty capture, not an error.
#[cfg(unix)]
#[test]
fn a_fifo_without_a_writer_ends_on_ctrl_c() {
    use std::time::Instant;
    let dir = scratch("fifo-no-writer");
    let fifo = dir.join("t.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let snap = example();
    let with_snapshot = ["--snapshot", snap.to_str().expect("utf-8")];
    let child = command(&fifo, &with_snapshot, &dir, "fifo", 2)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(1000));
    let sent = Instant::now();
    kill(&child, "INT");
    let out = child.wait_with_output().expect("wait");
    assert!(sent.elapsed() < Duration::from_secs(10), "ended on Ctrl-C");
    succeeds(&out);
    // Written, and empty of samples.
    let folded = std::fs::read(dir.join("fifo.folded")).expect("folded");
    assert!(folded.is_empty(), "{}", String::from_utf8_lossy(&folded));
    // A writer that closes at once: an empty capture.
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            drop(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&fifo)
                    .expect("open the FIFO"),
            );
        })
    };
    let out = command(&fifo, &with_snapshot, &dir, "empty", 2)
        .output()
        .expect("run");
    writer.join().expect("writer");
    succeeds(&out);
    std::fs::remove_dir_all(&dir).ok();
}
