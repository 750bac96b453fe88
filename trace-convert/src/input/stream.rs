//! Captures read as they arrive: a TCP connection (`tcp://HOST:PORT`, as
//! orbuculum, OpenOCD's TPIU output and J-Link's SWO port serve trace),
//! standard input (`-`) or a FIFO or character device. A stream is a byte
//! source of the capture-file and snapshot kinds, not a format of its own:
//! its bytes are laid out as the flags (or `--snapshot DIR`) say.
//!
//! A stream ends when its peer closes it, when [`Live::stop`] is set (a
//! signal, see [`crate::output::stop_streams_on_signal`]) or when
//! [`Live::duration`] has passed; the decode then finishes what arrived.
//! Bytes are read on a thread of their own into a bounded queue
//! ([`QUEUED`] pieces of [`PIECE`] bytes), so memory stays bounded however
//! long the stream runs, and a read that has had nothing new for
//! [`Live::latency`] fails with [`io::ErrorKind::WouldBlock`], which
//! trace-core's decode takes as "hand on what arrived".

use super::flags::SourceFlags;
use super::{Input, InputError};
use std::fmt;
use std::io::{self, Read};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes read from a stream at a time, at most.
pub const PIECE: usize = 64 << 10;
/// Pieces read and not yet decoded, at most: a peer faster than the
/// decode waits (TCP's own flow control, or a full pipe).
pub const QUEUED: usize = 16;
/// The default [`Live::latency`].
pub const LATENCY: Duration = Duration::from_millis(100);

/// Where a stream's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stream {
    /// A TCP connection to `HOST:PORT`.
    Tcp(String),
    /// Standard input.
    Stdin,
    /// A FIFO or a character device.
    Fifo(PathBuf),
}

impl Stream {
    /// The stream `arg` names: `tcp://HOST:PORT`, `-`, or the path of a
    /// FIFO or character device; `None` for anything else (a regular
    /// file, a folder, nothing).
    #[must_use]
    pub fn parse(arg: &Path) -> Option<Stream> {
        let s = arg.to_str();
        if let Some(addr) = s.and_then(|s| s.strip_prefix("tcp://")) {
            return Some(Stream::Tcp(addr.trim_end_matches('/').to_string()));
        }
        if s == Some("-") {
            return Some(Stream::Stdin);
        }
        is_fifo_or_device(arg).then(|| Stream::Fifo(arg.to_path_buf()))
    }

    /// Open the stream: connect, or open the FIFO or device (which waits
    /// for a writer).
    ///
    /// # Errors
    ///
    /// The connection cannot be made (with the address in the message), or
    /// the FIFO cannot be opened.
    fn connect(&self) -> io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            Stream::Tcp(addr) => {
                let s = TcpStream::connect(addr.as_str()).map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot connect to {addr}: {e}"))
                })?;
                Box::new(s)
            }
            Stream::Stdin => Box::new(io::stdin()),
            Stream::Fifo(p) => Box::new(std::fs::File::open(p)?),
        })
    }
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stream::Tcp(a) => write!(f, "tcp://{a}"),
            Stream::Stdin => f.write_str("standard input"),
            Stream::Fifo(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The input of the stream `stream`, spelled `arg`: its bytes laid out as
/// `flags` say (a capture file's flags), or, with
/// [`SourceFlags::snapshot`], as the first trace buffer of that snapshot
/// (its sources, registers refined by the flags, and memory images).
/// It is read with the default [`Live`] settings until the caller sets
/// others ([`Input::set_live`]).
///
/// # Errors
///
/// As [`super::resolve`] for the snapshot or the flags;
/// [`InputError::NoStreamConfig`] when the snapshot has no trace buffer.
pub fn resolve(arg: &Path, stream: Stream, flags: &SourceFlags) -> Result<Input, InputError> {
    let spec = StreamSpec {
        stream,
        live: Live::default(),
    };
    let mut input = match &flags.snapshot {
        Some(dir) => {
            let mut input = super::refine::refine(dir, super::snapshot::open(dir)?, flags)?;
            input.captures.truncate(1);
            if input.captures.is_empty() {
                return Err(InputError::NoStreamConfig(dir.clone()));
            }
            input
        }
        None => super::flags::open(arg, flags)?,
    };
    for c in &mut input.captures {
        c.path = arg.to_path_buf();
        c.within = None;
        c.range = None;
        c.stream = Some(spec.clone());
    }
    Ok(input)
}

impl Input {
    /// Read every stream of the input with `live`'s settings.
    pub fn set_live(&mut self, live: &Live) {
        for s in self.captures.iter_mut().filter_map(|c| c.stream.as_mut()) {
            s.live = live.clone();
        }
    }

    /// Whether the input is read from a stream.
    #[must_use]
    pub fn is_stream(&self) -> bool {
        self.captures.iter().any(|c| c.stream.is_some())
    }
}

/// Whether `path` is a FIFO or a character device.
fn is_fifo_or_device(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| {
            let t = m.file_type();
            t.is_fifo() || t.is_char_device()
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// A flag that ends every stream reading it (set from a signal handler's
/// thread, or by a caller). Clones share the flag; two flags are equal
/// when they are the same flag.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Set the flag: the streams reading it end at their next read.
    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the flag is set.
    #[must_use]
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The flag itself, for a signal handler to set.
    #[must_use]
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}

impl PartialEq for Stop {
    fn eq(&self, other: &Stop) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Stop {}

/// A count of bytes received, shared by clones; two are equal when they
/// are the same count.
#[derive(Debug, Clone, Default)]
pub struct Received(Arc<AtomicU64>);

impl Received {
    /// Bytes received so far.
    #[must_use]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self, n: usize) {
        self.0.fetch_add(n as u64, Ordering::Relaxed);
    }
}

impl PartialEq for Received {
    fn eq(&self, other: &Received) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Received {}

/// How a stream is read and when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Live {
    /// Set, the stream ends (Ctrl-C).
    pub stop: Stop,
    /// The stream ends this long after it was opened (`--duration`).
    pub duration: Option<Duration>,
    /// A TCP connection that closes or drops is made again until the
    /// stream is stopped (`--reconnect`); otherwise a drop is an error and
    /// a close is the end.
    pub reconnect: bool,
    /// How long a read waits for new bytes before the decode is told to
    /// hand on what arrived.
    pub latency: Duration,
    /// Bytes read from the stream so far, for a progress line.
    pub received: Received,
}

impl Default for Live {
    fn default() -> Live {
        Live {
            stop: Stop::default(),
            duration: None,
            reconnect: false,
            latency: LATENCY,
            received: Received::default(),
        }
    }
}

/// A capture's stream and how it is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    /// Where the bytes come from.
    pub stream: Stream,
    /// How it is read and when it ends.
    pub live: Live,
}

/// What the reading thread hands on.
enum Piece {
    Bytes(Vec<u8>),
    /// The stream failed (the reading thread ends).
    Failed(io::Error),
}

/// A stream being read, as a [`Read`] for trace-core's decode.
pub struct StreamReader {
    rx: Receiver<Piece>,
    /// The piece being handed out, and how much of it has been.
    piece: Vec<u8>,
    at: usize,
    live: Live,
    deadline: Option<Instant>,
    ended: bool,
    /// Set when the reader is dropped: the reading thread stops trying to
    /// connect again.
    gone: Arc<AtomicBool>,
}

impl Drop for StreamReader {
    fn drop(&mut self) {
        self.gone.store(true, Ordering::SeqCst);
    }
}

impl fmt::Debug for StreamReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamReader")
            .field("live", &self.live)
            .finish_non_exhaustive()
    }
}

/// Open `spec`'s stream and start reading it (a FIFO or device is opened
/// by the reading thread, as its opening waits for a writer: an error in
/// opening it comes with the first read).
///
/// # Errors
///
/// The connection cannot be made, or standard input not read.
pub fn open(spec: &StreamSpec) -> io::Result<StreamReader> {
    // A FIFO is opened by the reading thread: its opening waits for a
    // writer, and a stop must still end the stream meanwhile.
    let first = match spec.stream {
        Stream::Fifo(_) => None,
        _ => Some(spec.stream.connect()?),
    };
    let (tx, rx) = mpsc::sync_channel(QUEUED);
    let (stream, live) = (spec.stream.clone(), spec.live.clone());
    let gone = Arc::new(AtomicBool::new(false));
    let deadline = spec.live.duration.map(|d| Instant::now() + d);
    let ended = Arc::clone(&gone);
    std::thread::Builder::new()
        .name("stream-read".into())
        .spawn(move || pump(first, &stream, &live, &tx, &ended, deadline))?;
    Ok(StreamReader {
        rx,
        piece: Vec::new(),
        at: 0,
        deadline,
        live: spec.live.clone(),
        ended: false,
        gone,
    })
}

/// The reading thread: read pieces and queue them until the stream ends
/// (or, with [`Live::reconnect`], is stopped, its time is up or its
/// reader `gone`), or the decode no longer takes them.
fn pump(
    first: Option<Box<dyn Read + Send>>,
    stream: &Stream,
    live: &Live,
    tx: &SyncSender<Piece>,
    gone: &AtomicBool,
    deadline: Option<Instant>,
) {
    let mut from = match first.map_or_else(|| stream.connect(), Ok) {
        Ok(f) => f,
        Err(e) => {
            let e = io::Error::new(e.kind(), format!("{stream}: {e}"));
            let _ = tx.send(Piece::Failed(e));
            return;
        }
    };
    let mut buf = vec![0u8; PIECE];
    loop {
        match from.read(&mut buf) {
            Ok(0) if !live.reconnect => return,
            Ok(n) if n > 0 => {
                live.received.add(n);
                if tx.send(Piece::Bytes(buf[..n].to_vec())).is_err() {
                    return;
                }
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if !live.reconnect => {
                let e = io::Error::new(e.kind(), format!("{stream}: the stream broke: {e}"));
                let _ = tx.send(Piece::Failed(e));
                return;
            }
            // Closed or dropped, to be made again.
            _ => {}
        }
        from = loop {
            let over = deadline.is_some_and(|d| Instant::now() >= d);
            if live.stop.is_set() || over || gone.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
            if let Ok(s) = stream.connect() {
                break s;
            }
        };
    }
}

impl StreamReader {
    /// Whether the stream is to end now: stopped, or its time is up.
    fn over(&self) -> bool {
        self.live.stop.is_set() || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

impl Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ended || buf.is_empty() {
            return Ok(0);
        }
        if self.at == self.piece.len() {
            if self.over() {
                self.ended = true;
                return Ok(0);
            }
            let mut wait = self.live.latency;
            if let Some(d) = self.deadline {
                wait = wait.min(d.saturating_duration_since(Instant::now()));
            }
            match self.rx.recv_timeout(wait) {
                Ok(Piece::Bytes(b)) => {
                    self.piece = b;
                    self.at = 0;
                }
                Ok(Piece::Failed(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        "nothing new on the stream for now",
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    return Ok(0);
                }
            }
        }
        let n = buf.len().min(self.piece.len() - self.at);
        buf[..n].copy_from_slice(&self.piece[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn streams_are_told_by_spelling_and_file_type() {
        assert_eq!(
            Stream::parse(Path::new("tcp://127.0.0.1:3402")),
            Some(Stream::Tcp("127.0.0.1:3402".into()))
        );
        assert_eq!(Stream::parse(Path::new("-")), Some(Stream::Stdin));
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("cap.bin");
        std::fs::write(&file, [0u8; 4]).expect("write");
        assert_eq!(Stream::parse(&file), None);
        assert_eq!(Stream::parse(dir.path()), None);
        assert_eq!(Stream::parse(&dir.path().join("missing")), None);
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            rustix::fs::mkfifoat(
                rustix::fs::CWD,
                &fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
            )
            .expect("mkfifo");
            assert_eq!(Stream::parse(&fifo), Some(Stream::Fifo(fifo.clone())));
            assert_eq!(
                Stream::parse(Path::new("/dev/null")),
                Some(Stream::Fifo("/dev/null".into()))
            );
        }
    }

    /// The bytes sent arrive in order and complete; a pause longer than
    /// the latency is told as `WouldBlock`; the peer closing ends it.
    #[test]
    fn a_tcp_stream_hands_on_what_arrives() {
        let server = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = server.local_addr().expect("addr");
        let sent: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let data = sent.clone();
        let peer = std::thread::spawn(move || {
            let (mut c, _) = server.accept().expect("accept");
            c.write_all(&data[..1000]).expect("send");
            std::thread::sleep(Duration::from_millis(300));
            c.write_all(&data[1000..]).expect("send");
        });
        let spec = StreamSpec {
            stream: Stream::Tcp(addr.to_string()),
            live: Live {
                latency: Duration::from_millis(50),
                ..Live::default()
            },
        };
        let mut r = open(&spec).expect("connects");
        let mut got = Vec::new();
        let mut idle = 0;
        let mut buf = [0u8; 4096];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => idle += 1,
                Err(e) => panic!("{e}"),
            }
        }
        peer.join().expect("peer");
        assert_eq!(got, sent);
        assert!(idle >= 2, "{idle} idle reads in a 300 ms pause");
        assert_eq!(spec.live.received.get(), sent.len() as u64);
    }

    /// With `--reconnect`, a peer that closes is connected to again: the
    /// bytes of both connections arrive, until the duration ends it.
    #[test]
    fn a_closed_connection_is_made_again_with_reconnect() {
        let server = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = server.local_addr().expect("addr");
        let peer = std::thread::spawn(move || {
            for b in [1u8, 2] {
                let (mut c, _) = server.accept().expect("accept");
                c.write_all(&[b; 100]).expect("send");
            }
        });
        let spec = StreamSpec {
            stream: Stream::Tcp(addr.to_string()),
            live: Live {
                reconnect: true,
                latency: Duration::from_millis(20),
                duration: Some(Duration::from_millis(1500)),
                ..Live::default()
            },
        };
        let mut r = open(&spec).expect("connects");
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
        }
        peer.join().expect("peer");
        let mut want = vec![1u8; 100];
        want.extend([2u8; 100]);
        assert_eq!(got, want);
    }

    #[test]
    fn a_connection_that_cannot_be_made_says_where() {
        // A port just freed: nothing listens there.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let spec = StreamSpec {
            stream: Stream::Tcp(format!("127.0.0.1:{port}")),
            live: Live::default(),
        };
        let e = open(&spec).expect_err("refused");
        assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    }

    /// A stop ends the stream at the next read, with what arrived before
    /// read; so does the duration.
    #[test]
    fn a_stop_or_the_duration_ends_a_stream_that_stays_open() {
        let server = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = server.local_addr().expect("addr");
        let peer = std::thread::spawn(move || {
            let (mut c, _) = server.accept().expect("accept");
            c.write_all(&[7u8; 100]).expect("send");
            // Stays open until the reader has gone.
            std::thread::sleep(Duration::from_millis(800));
        });
        let live = Live {
            latency: Duration::from_millis(20),
            duration: Some(Duration::from_millis(400)),
            ..Live::default()
        };
        let spec = StreamSpec {
            stream: Stream::Tcp(addr.to_string()),
            live,
        };
        let started = Instant::now();
        let mut r = open(&spec).expect("connects");
        let mut got = 0;
        let mut buf = [0u8; 64];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(got, 100);
        assert!(started.elapsed() >= Duration::from_millis(400));
        peer.join().expect("peer");
        // A stop set before reading ends it at once.
        let stopped = Stop::default();
        stopped.set();
        let mut r = StreamReader {
            rx: mpsc::sync_channel(1).1,
            piece: Vec::new(),
            at: 0,
            live: Live {
                stop: stopped,
                ..Live::default()
            },
            deadline: None,
            ended: false,
            gone: Arc::default(),
        };
        assert_eq!(r.read(&mut buf).expect("ends"), 0);
    }
}
