//! ITM/DWT events in the outputs: what the timelines draw of them
//! ([`ItmTimeline`], shared by the Chrome and Perfetto sinks) and the
//! stimulus-port console (`--itm-text FILE`, [`ItmTextSink`]).
//!
//! On a timeline, on the track of the ITM source's thread:
//!
//! - **exception trace** as slices named by the ARMv7-M exception
//!   (`SysTick`, `PendSV`, `IRQ 5`, see [`MExceptionName`]): an entry
//!   begins one, an exit ends it (and any entered inside it and not
//!   exited, whose exits were lost); a return to an exception ends those
//!   entered after it, a return to thread mode every one. Slices still
//!   open at the end of the trace end there;
//! - **stimulus-port writes** as log instants: the text of a port (its
//!   writes whose bytes are all printable), one instant per line, named
//!   `port N: text`; a write that is not text is an instant of its own,
//!   `port N: 0x0800`, after the port's text so far;
//! - **DWT data trace** values as one counter track per comparator
//!   (`DWT comparator 1`, with the address's bits 15:0 when the trace gave
//!   them before the first value): a comparator watches one address;
//! - **overflows** as instants (`ITM overflow`).
//!
//! The console holds each port's text: with one port used, the text as
//! written; with several, each line prefixed by its port (`[port 1]
//! Sorting`), in the order the lines ended. A carriage return that does
//! not end a line, a vertical tab and a form feed are written as `\r`,
//! `\u{b}` and `\u{c}` (the only control characters ITM text can hold
//! besides newline and tab), so that no line hides another on a terminal.
//! Lines are held until the end, where the prefixes are decided, up to
//! [`CONSOLE_HELD`] bytes; past that (a long stream), they are written as
//! they end, prefixed once a second port has been seen.

use crate::fast_map::FastMap;
use crate::sinks::{EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink, ThreadKey};
use std::collections::BTreeMap;
use std::io;
use trace_core::event::{DataItem, Event, EventKind, ExceptionAction, MExceptionName};

/// What a timeline draws for an ITM event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// Begin a slice named so.
    Begin(String),
    /// End the innermost slice begun by a [`Mark::Begin`], named so.
    End(String),
    /// An instant named so.
    Instant(String),
    /// A value of the counter track named so.
    Counter {
        /// The track's name.
        track: String,
        /// The value.
        value: i64,
    },
}

/// Whether `kind` is an ITM/DWT event a timeline draws.
#[must_use]
#[inline]
pub fn is_itm_mark(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Stimulus { .. }
            | EventKind::ExceptionTrace { .. }
            | EventKind::DataTrace { .. }
            | EventKind::Overflow
    )
}

/// Python's `string.printable` (as sigrok's `arm_itm` takes text): the
/// bytes that make stimulus-port text.
fn printable(b: u8) -> bool {
    b.is_ascii_graphic() || matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

/// The bytes of a stimulus write when they are text (every byte
/// printable), in the order written (little-endian).
#[must_use]
pub fn stimulus_text(value: u32, size: u8) -> Option<Vec<u8>> {
    let bytes: Vec<u8> = value.to_le_bytes()[..usize::from(size.clamp(1, 4))].to_vec();
    bytes.iter().all(|&b| printable(b)).then_some(bytes)
}

/// The timelines' state of the ITM sources: see the [module](self) docs.
#[derive(Debug, Default)]
pub struct ItmTimeline {
    /// Per thread, the exceptions whose slices are open, innermost last.
    open: FastMap<ThreadKey, Vec<u16>>,
    /// Per thread and port, the text of the line under way.
    lines: BTreeMap<(ThreadKey, u32), Vec<u8>>,
    /// Per source and comparator, the address offset last traced and the
    /// name of its counter track once made.
    address: FastMap<(u8, u8), u16>,
    tracks: FastMap<(u8, u8), String>,
}

impl ItmTimeline {
    /// The marks of `event`, on `thread`'s track, into `out`.
    pub fn marks(&mut self, event: &Event, thread: ThreadKey, out: &mut Vec<Mark>) {
        match event.kind {
            EventKind::ExceptionTrace { number, action } => {
                let open = self.open.entry(thread).or_default();
                match action {
                    ExceptionAction::Enter => {
                        open.push(number);
                        out.push(Mark::Begin(MExceptionName(number).to_string()));
                    }
                    ExceptionAction::Exit => {
                        if let Some(at) = open.iter().rposition(|&n| n == number) {
                            end_from(open, at, out);
                        }
                    }
                    ExceptionAction::Return => {
                        let keep = if number == 0 {
                            0
                        } else {
                            open.iter()
                                .rposition(|&n| n == number)
                                .map_or(open.len(), |at| at + 1)
                        };
                        end_from(open, keep, out);
                    }
                }
            }
            EventKind::Stimulus { port, value, size } => match stimulus_text(value, size) {
                Some(bytes) => {
                    let line = self.lines.entry((thread, port)).or_default();
                    for b in bytes {
                        match b {
                            b'\n' => out.push(Mark::Instant(port_line(port, line))),
                            b'\r' => {}
                            b => line.push(b),
                        }
                    }
                }
                None => {
                    if let Some(line) = self.lines.get_mut(&(thread, port)) {
                        if !line.is_empty() {
                            out.push(Mark::Instant(port_line(port, line)));
                        }
                    }
                    let w = 2 + 2 * usize::from(size);
                    out.push(Mark::Instant(format!("port {port}: {value:#0w$x}")));
                }
            },
            EventKind::DataTrace { comparator, item } => match item {
                DataItem::Address(a) => {
                    self.address.insert((event.id, comparator), a);
                }
                DataItem::Value { value, .. } => {
                    let key = (event.id, comparator);
                    let address = self.address.get(&key).copied();
                    let track = self
                        .tracks
                        .entry(key)
                        .or_insert_with(|| match address {
                            Some(a) => {
                                format!("DWT comparator {comparator} (address bits 15:0 {a:#06x})")
                            }
                            None => format!("DWT comparator {comparator}"),
                        })
                        .clone();
                    out.push(Mark::Counter {
                        track,
                        value: i64::from(value),
                    });
                }
                DataItem::Pc(_) => {}
            },
            EventKind::Overflow => out.push(Mark::Instant("ITM overflow".to_owned())),
            _ => {}
        }
    }

    /// The end of the trace: what ends every open slice and writes every
    /// line under way, per thread.
    pub fn end(&mut self) -> Vec<(ThreadKey, Vec<Mark>)> {
        let mut out: BTreeMap<ThreadKey, Vec<Mark>> = BTreeMap::new();
        for ((thread, port), line) in &mut self.lines {
            if !line.is_empty() {
                out.entry(*thread)
                    .or_default()
                    .push(Mark::Instant(port_line(*port, line)));
            }
        }
        for (thread, mut open) in self.open.drain() {
            end_from(&mut open, 0, out.entry(thread).or_default());
        }
        out.into_iter().collect()
    }
}

/// End the slices of `open` from the `at`-th on, innermost first.
fn end_from(open: &mut Vec<u16>, at: usize, out: &mut Vec<Mark>) {
    while open.len() > at {
        if let Some(n) = open.pop() {
            out.push(Mark::End(MExceptionName(n).to_string()));
        }
    }
}

/// `port N: text` of a line, which is emptied.
fn port_line(port: u32, line: &mut Vec<u8>) -> String {
    let text = String::from_utf8_lossy(line).into_owned();
    line.clear();
    format!("port {port}: {text}")
}

/// The bytes of complete lines the console holds before it writes them as
/// they end.
pub const CONSOLE_HELD: usize = 16 << 20;

/// The stimulus-port console (`--itm-text FILE`): see the
/// [module](self) docs.
#[derive(Debug)]
pub struct ItmTextSink<W: Output> {
    out: W,
    /// Complete lines in the order they ended: port and text.
    done: Vec<(u32, Vec<u8>)>,
    /// Their bytes.
    held: usize,
    /// Past [`CONSOLE_HELD`]: lines are written as they end.
    streaming: bool,
    /// The ports whose lines were written or held.
    ports: std::collections::BTreeSet<u32>,
    /// Per port, the line under way.
    open: BTreeMap<u32, Vec<u8>>,
    /// A line written escaped.
    scratch: Vec<u8>,
}

impl<W: Output> ItmTextSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> ItmTextSink<W> {
        ItmTextSink {
            out,
            done: Vec::new(),
            held: 0,
            streaming: false,
            ports: std::collections::BTreeSet::new(),
            open: BTreeMap::new(),
            scratch: Vec::new(),
        }
    }

    fn take(&mut self, event: &Event) -> io::Result<()> {
        if let EventKind::Stimulus { port, value, size } = event.kind {
            let Some(bytes) = stimulus_text(value, size) else {
                return Ok(());
            };
            for b in bytes {
                let line = self.open.entry(port).or_default();
                line.push(b);
                if b == b'\n' {
                    let line = std::mem::take(line);
                    self.ports.insert(port);
                    if self.streaming {
                        self.write_line(port, &line, self.ports.len() > 1)?;
                    } else {
                        self.held += line.len();
                        self.done.push((port, line));
                        if self.held > CONSOLE_HELD {
                            self.flush_held()?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Write the lines held so far and go on writing lines as they end.
    fn flush_held(&mut self) -> io::Result<()> {
        self.streaming = true;
        let several = self.ports.len() > 1;
        for (port, line) in std::mem::take(&mut self.done) {
            self.write_line(port, &line, several)?;
        }
        self.held = 0;
        Ok(())
    }

    /// Write `line` of `port`, prefixed by its port when `several`.
    fn write_line(&mut self, port: u32, line: &[u8], several: bool) -> io::Result<()> {
        if several {
            write!(self.out, "[port {port}] ")?;
        }
        self.scratch.clear();
        for (i, &b) in line.iter().enumerate() {
            match b {
                b'\r' if line.get(i + 1) == Some(&b'\n') => self.scratch.push(b),
                b'\r' => self.scratch.extend_from_slice(b"\\r"),
                0x0B => self.scratch.extend_from_slice(b"\\u{b}"),
                0x0C => self.scratch.extend_from_slice(b"\\u{c}"),
                _ => self.scratch.push(b),
            }
        }
        self.out.write_all(&self.scratch)?;
        if several && line.last() != Some(&b'\n') {
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }
}

impl<W: Output> Sink for ItmTextSink<W> {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "itm-text"
    }

    fn interest(&self) -> Interest {
        Interest::EventsOnly
    }

    fn events(&mut self, events: &[Event]) -> io::Result<Flow> {
        for e in events {
            self.take(e)?;
        }
        Ok(Flow::Continue)
    }

    fn event(&mut self, event: &Event, _ctx: &EventCtx<'_>) -> io::Result<Flow> {
        self.take(event)?;
        Ok(Flow::Continue)
    }

    fn finish(&mut self, _info: &RunInfo) -> io::Result<()> {
        let rest: Vec<(u32, Vec<u8>)> = std::mem::take(&mut self.open)
            .into_iter()
            .filter(|(_, l)| !l.is_empty())
            .collect();
        self.ports.extend(rest.iter().map(|(p, _)| *p));
        let several = self.ports.len() > 1;
        for (port, line) in std::mem::take(&mut self.done).into_iter().chain(rest) {
            self.write_line(port, &line, several)?;
        }
        self.out.complete()
    }

    fn notes(&self) -> Vec<String> {
        if self.ports.is_empty() && self.open.values().all(Vec::is_empty) {
            vec!["no stimulus-port text in the trace (ITM sources: --protocol itm or --itm-trace-id)".to_owned()]
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: EventKind) -> Event {
        Event {
            offset: 0,
            id: 1,
            kind,
        }
    }

    fn exc(number: u16, action: ExceptionAction) -> Event {
        ev(EventKind::ExceptionTrace { number, action })
    }

    /// Nested exceptions nest; an exit whose entry was not seen draws
    /// nothing; a return to thread mode ends what is left open.
    #[test]
    fn exception_slices_nest() {
        let mut t = ItmTimeline::default();
        let th = ThreadKey::default();
        let mut out = Vec::new();
        for e in [
            exc(20, ExceptionAction::Exit),
            exc(15, ExceptionAction::Enter),
            exc(21, ExceptionAction::Enter),
            exc(21, ExceptionAction::Exit),
            exc(15, ExceptionAction::Return),
            exc(14, ExceptionAction::Enter),
            exc(0, ExceptionAction::Return),
            exc(3, ExceptionAction::Enter),
        ] {
            t.marks(&e, th, &mut out);
        }
        assert_eq!(
            out,
            [
                Mark::Begin("SysTick".into()),
                Mark::Begin("IRQ 5".into()),
                Mark::End("IRQ 5".into()),
                Mark::Begin("PendSV".into()),
                Mark::End("PendSV".into()),
                Mark::End("SysTick".into()),
                Mark::Begin("HardFault".into()),
            ]
        );
        assert_eq!(t.end(), [(th, vec![Mark::End("HardFault".into())])]);
    }

    /// Text goes by lines; a value that is not text ends the line under
    /// way and is an instant of its own.
    #[test]
    fn stimulus_lines() {
        let mut t = ItmTimeline::default();
        let th = ThreadKey::default();
        let mut out = Vec::new();
        for (v, size) in [
            (u32::from(b'h'), 1),
            (0x0A69, 2),
            (u32::from(b'S'), 1),
            (0xEB, 4),
        ] {
            t.marks(
                &ev(EventKind::Stimulus {
                    port: 1,
                    value: v,
                    size,
                }),
                th,
                &mut out,
            );
        }
        assert_eq!(
            out,
            [
                Mark::Instant("port 1: hi".into()),
                Mark::Instant("port 1: S".into()),
                Mark::Instant("port 1: 0x000000eb".into()),
            ]
        );
    }

    fn stimulus(port: u32, text: &[u8]) -> Vec<Event> {
        text.iter()
            .map(|&b| {
                ev(EventKind::Stimulus {
                    port,
                    value: u32::from(b),
                    size: 1,
                })
            })
            .collect()
    }

    fn console(events: &[Event]) -> String {
        let buf = crate::sinks::SharedBuffer::new();
        let mut sink = ItmTextSink::new(buf.clone());
        assert!(matches!(
            sink.events(events).expect("events"),
            Flow::Continue
        ));
        sink.finish(&RunInfo::default()).expect("finish");
        drop(sink);
        String::from_utf8(buf.bytes()).expect("UTF-8")
    }

    /// A carriage return that does not end a line, a vertical tab and a
    /// form feed reach the console escaped; CRLF, tabs and backslashes
    /// stay as written.
    #[test]
    fn console_escapes_what_would_hide_a_line() {
        let text = console(&stimulus(0, b"ok\r\nsecret\rfake\x0b\x0c\tC:\\x\n"));
        assert_eq!(text, "ok\r\nsecret\\rfake\\u{b}\\u{c}\tC:\\x\n");
    }

    /// Past what the console holds, lines are written as they end; the
    /// text is the same, prefixed once a second port is seen.
    #[test]
    fn a_long_console_is_written_as_it_goes() {
        let line = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
        let lines = CONSOLE_HELD / line.len() + 2;
        let mut events = Vec::new();
        for _ in 0..lines {
            events.extend(stimulus(0, line));
        }
        events.extend(stimulus(3, b"other\n"));
        events.extend(stimulus(0, b"last\n"));
        let text = console(&events);
        let want = format!(
            "{}[port 3] other\n[port 0] last\n",
            std::str::from_utf8(line).expect("text").repeat(lines)
        );
        assert!(
            text == want,
            "{} bytes, {} expected",
            text.len(),
            want.len()
        );
    }
}
