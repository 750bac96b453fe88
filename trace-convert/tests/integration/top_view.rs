//! `trace-convert top` in a real terminal (tmux, detached, 120x40): on
//! the bundled example and on the same trace replayed over TCP, the
//! screen shows the functions that ran most, in the order and with the
//! self instructions of the report of the same capture; `q` (a file) and
//! Ctrl-C (a stream) end it with exit code 0 and give the terminal back
//! (the alternate screen left: the shell's lines are there again).
//! Without a terminal, `--once` prints the final view.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_trace-convert")
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/snapshot")
        .canonicalize()
        .expect("the bundled example")
}

/// The report's rows of the example (function, self instructions), most
/// first: the independent count the view is checked against.
fn report_rows() -> Vec<(String, u64)> {
    let snap = example();
    let out = Command::new(bin())
        .arg("report")
        .arg(&snap)
        .arg("--elf")
        .arg(snap.join("example.elf"))
        .args(["--format", "csv"])
        .output()
        .expect("report");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().expect("header").split(',').collect();
    let name = head
        .iter()
        .position(|h| *h == "function")
        .expect("function");
    let own = head
        .iter()
        .position(|h| *h == "self_instructions")
        .expect("self_instructions");
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[name].to_owned(), f[own].parse().expect("a count"))
        })
        .collect()
}

/// A tmux server of this test's own.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// A server running `command` in a detached 120x40 session; `None`
    /// when tmux is missing (and not under CI, where that fails).
    fn start(name: &str, command: &str) -> Option<Tmux> {
        let t = Tmux {
            socket: format!("trace-convert-top-{}-{name}", std::process::id()),
        };
        let made = t.run(&[
            "new-session",
            "-d",
            "-s",
            "top",
            "-x",
            "120",
            "-y",
            "40",
            command,
        ]);
        match made {
            Some(o) if o.status.success() => Some(t),
            _ if std::env::var_os("CI").is_some() => panic!("tmux is needed: {made:?}"),
            _ => {
                eprintln!("tmux not available: the terminal test is skipped");
                None
            }
        }
    }

    fn run(&self, args: &[&str]) -> Option<Output> {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .ok()
    }

    fn pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "top"])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// The pane once `ready` holds for it (within a minute).
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let p = self.pane();
            if ready(&p) {
                return p;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "waited for {what}; the pane:\n{p}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &str) {
        self.run(&["send-keys", "-t", "top", keys]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// The function rows of the view on `pane`: (name, self instructions).
fn shown_rows(pane: &str) -> Vec<(String, u64)> {
    pane.lines()
        .skip_while(|l| !l.trim_end().ends_with("Function"))
        .skip(1)
        .map_while(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 || !f[0].ends_with('%') {
                return None;
            }
            Some((f[4..].join(" "), f[1].parse().ok()?))
        })
        .collect()
}

/// The first `n` rows of the view are the report's first `n`.
fn same_top(pane: &str, want: &[(String, u64)], n: usize) {
    let shown = shown_rows(pane);
    assert!(shown.len() >= n, "{n} rows wanted; the pane:\n{pane}");
    assert_eq!(&shown[..n], &want[..n], "the pane:\n{pane}");
}

/// The command line `top` is run with in the terminal, followed by the
/// exit code.
fn shell(args: &[&str]) -> String {
    let mut c = vec![bin().to_owned(), "top".into()];
    c.extend(args.iter().map(|a| (*a).to_owned()));
    format!("{} 2>/dev/null; echo EXIT=$?; sleep 600", c.join(" "))
}

#[test]
fn top_on_the_example_shows_the_reports_top_functions() {
    let want = report_rows();
    assert!(want.len() >= 5, "{want:?}");
    let snap = example();
    let elf = snap.join("example.elf");
    let cmd = shell(&[
        snap.to_str().expect("utf-8"),
        "--elf",
        elf.to_str().expect("utf-8"),
    ]);
    let Some(t) = Tmux::start("file", &cmd) else {
        return;
    };
    let pane = t.wait_for("the final view", |p| {
        p.contains("done (q or Ctrl-C to quit)")
    });
    same_top(&pane, &want, 8);
    assert!(pane.contains("36444 instructions"), "{pane}");
    // q: the view ends, the terminal is back, exit code 0.
    t.keys("q");
    let pane = t.wait_for("the exit", |p| p.contains("EXIT="));
    assert!(pane.contains("EXIT=0"), "{pane}");
    assert!(!pane.contains("Self instr"), "the view is gone:\n{pane}");
}

#[test]
fn top_on_a_stream_shows_the_reports_top_functions_and_ctrl_c_ends_it() {
    let want = report_rows();
    let snap = example();
    let trace = std::fs::read(snap.join("trace.bin")).expect("trace");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = format!("tcp://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel::<()>();
    let peer = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().expect("accept");
        for piece in trace.chunks(512) {
            c.write_all(piece).expect("send");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Open until the test is done.
        let _ = rx.recv_timeout(Duration::from_secs(120));
    });
    let elf = snap.join("example.elf");
    let cmd = shell(&[
        &addr,
        "--snapshot",
        snap.to_str().expect("utf-8"),
        "--elf",
        elf.to_str().expect("utf-8"),
    ]);
    let Some(t) = Tmux::start("stream", &cmd) else {
        let _ = tx.send(());
        return;
    };
    // Streaming, and (the replay takes about 0.4 s) all of it decoded.
    let pane = t.wait_for("the whole trace", |p| {
        p.contains("streaming") && p.contains("36444 instructions")
    });
    assert!(pane.contains("8.34 KiB received"), "{pane}");
    same_top(&pane, &want, 8);
    // Ctrl-C: the stream ends, and so does the view, with exit code 0.
    t.keys("C-c");
    let pane = t.wait_for("the exit", |p| p.contains("EXIT="));
    assert!(pane.contains("EXIT=0"), "{pane}");
    let _ = tx.send(());
    peer.join().expect("server");
}

#[test]
fn top_once_prints_the_final_view() {
    let want = report_rows();
    let snap = example();
    let out = Command::new(bin())
        .arg("top")
        .arg("--once")
        .arg(&snap)
        .arg("--elf")
        .arg(snap.join("example.elf"))
        .output()
        .expect("top");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(!text.contains('\x1b'), "plain text:\n{text}");
    same_top(&text, &want, want.len().min(20));
}
