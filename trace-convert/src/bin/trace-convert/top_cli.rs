//! `trace-convert top`: a terminal view, redrawn about once a second while
//! a stream (or a file) decodes, of the functions that ran most, the RTOS
//! tasks when known, the exceptions and the trace's health, as `top` and
//! orbtop show theirs. The counting is the [`TopSink`]'s; this module
//! draws it with plain ANSI sequences (the alternate screen, the cursor
//! moved home), reads `q` from the keyboard, and gives the terminal back
//! as it found it.
//!
//! In a terminal, the final view stays until `q` or Ctrl-C once the
//! decode has ended (a file's end, a stream's peer closing it or
//! `--duration`); `q` or Ctrl-C while it runs ends the decode (a stream's
//! reading) and the view at once. With `--once`, or when standard output is not a terminal,
//! nothing is drawn while decoding and the final view is printed once, as
//! plain text.

use crate::convert_cli::{self, ConvertArgs, Watch};
use clap::{Args, ValueEnum};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use trace_convert::input::stream::{Received, Stop};
use trace_convert::progress::Progress;
use trace_convert::sinks::top::{top_rows, SharedView, TopSink, TopView};
use trace_convert::sinks::DynSink;

/// How often the view is redrawn.
const REFRESH: Duration = Duration::from_secs(1);

/// The arguments of `top`: a conversion's (outputs are optional), and the
/// view's own.
#[derive(Debug, Args)]
#[command(mut_arg("path", |a| a.help(
    "A snapshot directory, a capture file or a stream (tcp://HOST:PORT, - for standard input, a FIFO); none at all shows the bundled example"
)))]
pub struct TopArgs {
    /// Print the final view once, as plain text, instead of drawing it
    /// while decoding (also when standard output is not a terminal).
    #[arg(help_heading = "View", long)]
    once: bool,
    /// Functions shown (default: as many as the terminal has room for).
    #[arg(help_heading = "View", long, value_name = "N")]
    rows: Option<usize>,
    /// Order of the functions: self instructions or self cycles (cycles
    /// need cycle-accurate trace).
    #[arg(help_heading = "View", long, value_enum, default_value_t = SortArg::Instructions)]
    sort: SortArg,
    #[command(flatten)]
    convert: ConvertArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SortArg {
    /// Instructions run as the innermost frame, most first.
    Instructions,
    /// Cycles spent as the innermost frame, most first.
    Cycles,
}

/// Run `top`.
pub fn run(args: &TopArgs) -> ExitCode {
    let interactive = !args.once && std::io::stdout().is_terminal();
    let mut watch = TopWatch {
        view: SharedView::default(),
        stop: Stop::default(),
        interactive,
        rows: args.rows,
        by_cycles: args.sort == SortArg::Cycles,
        at: Arc::default(),
        ended: Arc::default(),
        render: None,
        progress: OffsetProgress(Arc::default()),
        name: String::new(),
    };
    watch.progress = OffsetProgress(Arc::clone(&watch.at));
    convert_cli::run_watched(&args.convert, &mut watch)
}

/// The offset the decode has reached, for the view.
struct OffsetProgress(Arc<AtomicU64>);

impl Progress for OffsetProgress {
    fn start(&mut self, _path: &Path, _size: u64) {}
    fn at(&mut self, offset: u64) {
        self.0.store(offset, Ordering::Relaxed);
    }
    fn done(&mut self) {}
}

/// The view of one run.
struct TopWatch {
    view: SharedView,
    stop: Stop,
    interactive: bool,
    rows: Option<usize>,
    by_cycles: bool,
    /// The byte offset the decode has reached.
    at: Arc<AtomicU64>,
    /// The decode has ended.
    ended: Arc<AtomicBool>,
    render: Option<JoinHandle<()>>,
    progress: OffsetProgress,
    /// The input, as given.
    name: String,
}

/// What the drawing thread knows of the run.
struct Screen {
    view: SharedView,
    stop: Stop,
    ended: Arc<AtomicBool>,
    name: String,
    /// A stream's bytes received, or a file's size and the offset reached.
    received: Option<Received>,
    size: u64,
    at: Arc<AtomicU64>,
    rows: Option<usize>,
    by_cycles: bool,
    /// Wait for `q` or Ctrl-C once the decode has ended.
    hold: bool,
}

impl Watch for TopWatch {
    fn sink(&mut self) -> Box<dyn DynSink + 'static> {
        Box::new(TopSink::new(Arc::clone(&self.view), self.stop.flag()))
    }

    fn stop(&self) -> Stop {
        self.stop.clone()
    }

    fn started(&mut self, name: &str, received: Option<Received>, size: u64) {
        // Ctrl-C ends the decode and the view, file or stream.
        trace_convert::output::stop_streams_on_signal(self.stop.flag());
        self.name = name.to_owned();
        if !self.interactive {
            return;
        }
        let screen = Screen {
            view: Arc::clone(&self.view),
            stop: self.stop.clone(),
            ended: Arc::clone(&self.ended),
            name: name.to_owned(),
            received,
            size,
            at: Arc::clone(&self.at),
            rows: self.rows,
            by_cycles: self.by_cycles,
            hold: true,
        };
        // Standard input that is the stream is not the keyboard.
        let keys = name != "-";
        self.render = std::thread::Builder::new()
            .name("top-view".into())
            .spawn(move || screen.show(keys))
            .ok();
    }

    fn progress(&mut self) -> &mut dyn Progress {
        &mut self.progress
    }

    fn ended(&mut self, ok: bool) {
        if !ok {
            self.stop.set();
        }
        self.ended.store(true, Ordering::SeqCst);
        match self.render.take() {
            Some(t) => {
                let _ = t.join();
            }
            None => {
                let view = self
                    .view
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .view();
                let header = Header {
                    title: format!("trace-convert top: {}", self.name),
                    progress: String::new(),
                };
                let lines = lines(&view, &header, self.rows.unwrap_or(20), self.by_cycles);
                let mut out = std::io::stdout().lock();
                for l in lines {
                    let _ = writeln!(out, "{l}");
                }
            }
        }
    }
}

/// The terminal's settings before `top` changed them, put back on drop.
struct RawMode {
    #[cfg(unix)]
    saved: Option<rustix::termios::Termios>,
}

impl RawMode {
    /// Keys are read one by one, not echoed (Ctrl-C still sends SIGINT);
    /// the alternate screen, the cursor hidden.
    fn enter(keys: bool) -> RawMode {
        #[cfg(unix)]
        let saved = keys
            .then(|| {
                use rustix::termios::{tcgetattr, tcsetattr, LocalModes, OptionalActions};
                let stdin = std::io::stdin();
                let saved = tcgetattr(&stdin).ok()?;
                let mut t = saved.clone();
                t.local_modes &= !(LocalModes::ICANON | LocalModes::ECHO);
                tcsetattr(&stdin, OptionalActions::Now, &t).ok()?;
                Some(saved)
            })
            .flatten();
        #[cfg(not(unix))]
        let _ = keys;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(b"\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");
        let _ = out.flush();
        RawMode {
            #[cfg(unix)]
            saved,
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(b"\x1b[?25h\x1b[?1049l");
        let _ = out.flush();
        #[cfg(unix)]
        if let Some(t) = &self.saved {
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                t,
            );
        }
    }
}

/// The terminal's size (columns, rows), 80x24 when unknown.
fn terminal_size() -> (usize, usize) {
    #[cfg(unix)]
    if let Ok(ws) = rustix::termios::tcgetwinsize(std::io::stdout()) {
        if ws.ws_col > 0 && ws.ws_row > 0 {
            return (usize::from(ws.ws_col), usize::from(ws.ws_row));
        }
    }
    (80, 24)
}

/// The first lines of the view: the input, how far it has got, the rates.
struct Header {
    title: String,
    progress: String,
}

/// Counts at one redraw, for the rates of the next.
#[derive(Clone, Copy)]
struct Mark {
    when: Instant,
    bytes: u64,
    instructions: u64,
    exceptions: u64,
}

impl Screen {
    /// Draw until the decode has ended (and, when held, until `q` or
    /// Ctrl-C), reading `q` from the keyboard when `keys`.
    fn show(self, keys: bool) {
        let _raw = RawMode::enter(keys);
        if keys {
            let stop = self.stop.clone();
            // Blocks on the keyboard until the process ends.
            let _ = std::thread::Builder::new()
                .name("top-keys".into())
                .spawn(move || {
                    let mut stdin = std::io::stdin().lock();
                    let mut b = [0u8; 1];
                    while let Ok(1) = stdin.read(&mut b) {
                        if matches!(b[0], b'q' | b'Q') {
                            stop.set();
                            break;
                        }
                    }
                });
        }
        let mut last = Mark {
            when: Instant::now(),
            bytes: 0,
            instructions: 0,
            exceptions: 0,
        };
        let mut drawn: Option<Instant> = None;
        let mut final_drawn = false;
        loop {
            let ended = self.ended.load(Ordering::SeqCst);
            let stopped = self.stop.is_set();
            if ended && final_drawn && (stopped || !self.hold) {
                break;
            }
            let due = drawn.is_none_or(|d| d.elapsed() >= REFRESH);
            if due || (ended && !final_drawn) {
                last = self.draw(last, ended);
                drawn = Some(Instant::now());
                final_drawn = ended;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Draw the view once; the counts drawn.
    fn draw(&self, last: Mark, ended: bool) -> Mark {
        let view = self
            .view
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .view();
        let now = Instant::now();
        let secs = now.duration_since(last.when).as_secs_f64().max(1e-3);
        let bytes = match &self.received {
            Some(r) => r.get(),
            None if ended => self.size,
            None => self.at.load(Ordering::Relaxed),
        };
        let mark = Mark {
            when: now,
            bytes,
            instructions: view.instructions,
            exceptions: view.exceptions,
        };
        let rate = |a: u64, b: u64| ((a.saturating_sub(b)) as f64 / secs) as u64;
        let state = match (ended, self.stop.is_set(), self.received.is_some()) {
            (true, _, _) if self.hold => "done (q or Ctrl-C to quit)",
            (true, _, _) => "done",
            (false, true, _) => "stopping",
            (false, false, true) => "streaming",
            (false, false, false) => "decoding",
        };
        let progress = match &self.received {
            Some(_) => format!(
                "{} received ({}/s)   {} instructions ({}/s)   exceptions {}/s",
                indicatif::HumanBytes(bytes),
                indicatif::HumanBytes(rate(bytes, last.bytes)),
                indicatif::HumanCount(view.instructions),
                indicatif::HumanCount(rate(view.instructions, last.instructions)),
                rate(view.exceptions, last.exceptions),
            ),
            None => format!(
                "{} of {}   {} instructions ({}/s)   exceptions {}/s",
                indicatif::HumanBytes(bytes.min(self.size)),
                indicatif::HumanBytes(self.size),
                indicatif::HumanCount(view.instructions),
                indicatif::HumanCount(rate(view.instructions, last.instructions)),
                rate(view.exceptions, last.exceptions),
            ),
        };
        let header = Header {
            title: format!("trace-convert top: {}   {state}", self.name),
            progress,
        };
        let (cols, rows) = terminal_size();
        // Header, health, blank, column names; tasks and the key line.
        let tasks = if view.tasks.is_empty() {
            0
        } else {
            view.tasks.len() + 3
        };
        let room = rows.saturating_sub(7 + tasks).max(1);
        let n = self.rows.unwrap_or(room);
        let mut text = String::from("\x1b[H");
        for l in lines(&view, &header, n, self.by_cycles) {
            let l: String = l.chars().take(cols).collect();
            text.push_str(&l);
            text.push_str("\x1b[K\r\n");
        }
        text.push_str("q or Ctrl-C: quit\x1b[K\x1b[J");
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        mark
    }
}

/// The lines of `view` under `header`, with the top `n` functions.
fn lines(view: &TopView, header: &Header, n: usize, by_cycles: bool) -> Vec<String> {
    let mut v = vec![header.title.clone()];
    if !header.progress.is_empty() {
        v.push(header.progress.clone());
    }
    let h = view.health;
    v.push(format!(
        "{} instructions, {} cycles, {} exceptions   health: {} gaps, {} overflows, {} not in the image, {} inconsistent",
        view.instructions, view.cycles, view.exceptions, h.gaps, h.overflows, h.nacc, h.inconsistent
    ));
    v.push(String::new());
    v.push(format!(
        "{:>7}  {:>12}  {:>12}  {:>8}  Function",
        "Self%", "Self instr", "Self cycles", "Calls"
    ));
    let whole = if by_cycles {
        view.cycles
    } else {
        view.instructions
    };
    let share = |r: &trace_convert::sinks::report::table::Row| {
        if by_cycles {
            r.self_cycles
        } else {
            r.self_instructions
        }
    };
    let pct = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            100.0 * part as f64 / whole as f64
        }
    };
    for r in top_rows(view, n, by_cycles) {
        v.push(format!(
            "{:>6.2}%  {:>12}  {:>12}  {:>8}  {}",
            pct(share(r), whole),
            r.self_instructions,
            r.self_cycles,
            r.calls,
            trace_convert::escape::escaped(&r.name)
        ));
    }
    if !view.tasks.is_empty() {
        v.push(String::new());
        v.push(format!("{:>7}  {:>12}  Task", "Share", "Instructions"));
        let mut tasks = view.tasks.clone();
        tasks.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (name, instr, _) in tasks {
            v.push(format!(
                "{:>6.2}%  {:>12}  {}",
                pct(instr, view.instructions),
                instr,
                trace_convert::escape::escaped(&name)
            ));
        }
    }
    v
}
