//! Chrome trace event JSON (the format of `chrome://tracing`, also read by
//! the Perfetto UI), streamed as events arrive.
//!
//! - One thread per core: `pid` 1, `tid` the trace ID. With context IDs,
//!   each context ID is a process of its own (`pid` 2, 3, ... in order of
//!   appearance, named `context 0x…`), its threads again the cores.
//!   `process_name` and `thread_name` metadata name them, a core after
//!   the snapshot's core when known (`cpu_0 Cortex-A7 (trace ID 0x10,
//!   ETMv3)`, see [`SourceName::thread_name`](super::SourceName::thread_name)).
//! - Every frame of the reconstructed call stack is a `B`/`E` pair named
//!   by its function, category its [`FrameKind`]; every `B` gets its `E`
//!   (open frames close at the end of the trace). Within a thread the
//!   timestamps never decrease and the pairs nest. An inferred caller (a
//!   return out of the outermost frame) begins where the trace first
//!   shows it, at the return; the folded stacks put it under what ran
//!   before, see [`crate::sinks::folded`].
//! - Exceptions, trace gaps, trace-on, memory-not-accessible addresses
//!   are thread-scoped instant events (`i`).
//! - `ts` is in microseconds from the start of the trace (fractional,
//!   three decimals: nanoseconds, rounded to the nearest).
//!
//! [`FrameKind`]: crate::callstack::FrameKind

use crate::clock::ClockInfo;
use crate::fast_map::FastMap;
use crate::sinks::{EventCtx, Flow, Interest, NoParts, Output, RunInfo, Sink, ThreadKey};
use std::io;
use trace_core::event::{Event, EventKind};

/// The Chrome JSON sink.
#[derive(Debug)]
pub struct ChromeSink<W: Output> {
    out: W,
    first: bool,
    pids: FastMap<Option<u32>, u64>,
    known: FastMap<ThreadKey, (u64, u64)>,
    names: FastMap<u8, String>,
    /// Each function's name as a JSON string, by its id.
    json_names: Vec<Option<Box<[u8]>>>,
    /// The line being written.
    line: Vec<u8>,
    /// The event's `ts`.
    ts: Vec<u8>,
}

impl<W: Output> ChromeSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> ChromeSink<W> {
        ChromeSink {
            out,
            first: true,
            pids: FastMap::default(),
            known: FastMap::default(),
            names: FastMap::default(),
            json_names: Vec::new(),
            line: Vec::with_capacity(256),
            ts: Vec::with_capacity(32),
        }
    }

    fn sep(&mut self) -> io::Result<()> {
        if self.first {
            self.first = false;
            self.out.write_all(b"\n")
        } else {
            self.out.write_all(b",\n")
        }
    }

    fn ids(&mut self, thread: ThreadKey) -> io::Result<(u64, u64)> {
        if let Some(ids) = self.known.get(&thread) {
            return Ok(*ids);
        }
        let next = 2 + self.pids.values().filter(|&&p| p >= 2).count() as u64;
        let new_pid = !self.pids.contains_key(&thread.context);
        let pid = *self
            .pids
            .entry(thread.context)
            .or_insert(if thread.context.is_none() { 1 } else { next });
        let tid = u64::from(thread.id);
        if new_pid {
            let pname = match thread.context {
                None => "trace".to_owned(),
                Some(c) => format!("context {c:#x}"),
            };
            self.sep()?;
            write!(
                self.out,
                r#"{{"ph":"M","pid":{pid},"tid":0,"name":"process_name","args":{{"name":{}}}}}"#,
                json_str(&pname)
            )?;
        }
        let tname = match self.names.get(&thread.id) {
            Some(n) => n.clone(),
            None => format!("trace ID {:#04x}", thread.id),
        };
        self.sep()?;
        write!(
            self.out,
            r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name","args":{{"name":{}}}}}"#,
            json_str(&tname)
        )?;
        self.known.insert(thread, (pid, tid));
        Ok((pid, tid))
    }

    fn instant(&mut self, pid: u64, tid: u64, ts: &[u8], name: &str) -> io::Result<()> {
        self.sep()?;
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(br#"{"ph":"i","s":"t","pid":"#);
        push_int(l, pid);
        l.extend_from_slice(br#","tid":"#);
        push_int(l, tid);
        l.extend_from_slice(br#","ts":"#);
        l.extend_from_slice(ts);
        l.extend_from_slice(br#","name":"#);
        l.extend_from_slice(json_str(name).as_bytes());
        l.push(b'}');
        self.out.write_all(&self.line)
    }
}

fn push_int(line: &mut Vec<u8>, v: u64) {
    line.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// `"0x"` and eight lower-case hex digits, quoted.
fn push_hex_str(line: &mut Vec<u8>, v: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut b = *b"\"0x00000000\"";
    for (i, d) in b[3..11].iter_mut().enumerate() {
        *d = HEX[((v >> (28 - 4 * i)) & 0xF) as usize];
    }
    line.extend_from_slice(&b);
}

/// `ticks` as microseconds with three decimals (nanoseconds, rounded to
/// the nearest, halves up), into `out`.
fn write_ts(out: &mut Vec<u8>, clock: &ClockInfo, ticks: u64) {
    out.clear();
    let hz = clock.hz;
    // An integral frequency gives the exact quotient; any other the
    // floating-point one.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole = (hz.fract() == 0.0 && (1.0..=9.0e15).contains(&hz)).then_some(hz as u64);
    match whole {
        Some(hz) => {
            let hz = u128::from(hz);
            let nanos = (u128::from(ticks) * 2_000_000_000 + hz) / (2 * hz);
            let micros = u64::try_from(nanos / 1000).unwrap_or(u64::MAX);
            let frac = (nanos % 1000) as u16;
            out.extend_from_slice(itoa::Buffer::new().format(micros).as_bytes());
            out.push(b'.');
            out.extend_from_slice(&[
                b'0' + (frac / 100) as u8,
                b'0' + (frac / 10 % 10) as u8,
                b'0' + (frac % 10) as u8,
            ]);
        }
        None => out.extend_from_slice(format!("{:.3}", clock.micros(ticks)).as_bytes()),
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

impl<W: Output> Sink for ChromeSink<W> {
    type Parts = NoParts;

    fn name(&self) -> &str {
        "chrome"
    }

    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        for s in &info.sources {
            self.names.insert(s.id, s.thread_name());
        }
        write!(
            self.out,
            r#"{{"displayTimeUnit":"ns","otherData":{{"clock":{}}},"traceEvents":["#,
            json_str(info.clock.kind.name())
        )
    }

    fn interest(&self) -> Interest {
        Interest::StackChanges
    }

    fn event(&mut self, event: &Event, ctx: &EventCtx<'_>) -> io::Result<Flow> {
        if !Interest::StackChanges.wants(event, !ctx.closed.is_empty() || !ctx.opened.is_empty()) {
            return Ok(Flow::Continue);
        }
        let (pid, tid) = self.ids(ctx.thread)?;
        let mut ts = std::mem::take(&mut self.ts);
        write_ts(&mut ts, ctx.clock, ctx.time);
        let done = self.write_event(event, ctx, pid, tid, &ts);
        self.ts = ts;
        done?;
        Ok(Flow::Continue)
    }

    fn finish(&mut self, _info: &RunInfo) -> io::Result<()> {
        self.out.write_all(b"\n]}\n")?;
        self.out.complete()
    }
}

impl<W: Output> ChromeSink<W> {
    /// The lines of one event, at `ts`.
    fn write_event(
        &mut self,
        event: &Event,
        ctx: &EventCtx<'_>,
        pid: u64,
        tid: u64,
        ts: &[u8],
    ) -> io::Result<()> {
        if !ctx.closed.is_empty() {
            let l = &mut self.line;
            l.clear();
            l.extend_from_slice(br#"{"ph":"E","pid":"#);
            push_int(l, pid);
            l.extend_from_slice(br#","tid":"#);
            push_int(l, tid);
            l.extend_from_slice(br#","ts":"#);
            l.extend_from_slice(ts);
            l.push(b'}');
            for _ in ctx.closed {
                self.sep()?;
                self.out.write_all(&self.line)?;
            }
        }
        match event.kind {
            EventKind::Exception { number, ret } => {
                let name = match ret {
                    Some(r) => format!("exception {number} (returns to {r:#010x})"),
                    None => format!("exception {number}"),
                };
                self.instant(pid, tid, ts, &name)?;
            }
            EventKind::Gap(reason) => {
                let name = match reason.addr() {
                    Some(a) => format!("trace gap: {} at {a:#010x}", reason.name()),
                    None => format!("trace gap: {}", reason.name()),
                };
                self.instant(pid, tid, ts, &name)?;
            }
            EventKind::TraceOn { reason, .. } => {
                self.instant(pid, tid, ts, &format!("trace on: {}", reason.name()))?;
            }
            EventKind::AddrNacc { addr } => {
                self.instant(
                    pid,
                    tid,
                    ts,
                    &format!("memory not accessible: {addr:#010x}"),
                )?;
            }
            _ => {}
        }
        for f in ctx.opened {
            self.sep()?;
            let at = f.func.0 as usize;
            if self.json_names.len() <= at {
                self.json_names.resize(at + 1, None);
            }
            let name = self.json_names[at]
                .get_or_insert_with(|| json_str(ctx.name(f)).into_bytes().into_boxed_slice());
            let l = &mut self.line;
            l.clear();
            l.extend_from_slice(br#"{"ph":"B","pid":"#);
            push_int(l, pid);
            l.extend_from_slice(br#","tid":"#);
            push_int(l, tid);
            l.extend_from_slice(br#","ts":"#);
            l.extend_from_slice(ts);
            l.extend_from_slice(br#","cat":""#);
            l.extend_from_slice(f.kind.name().as_bytes());
            l.extend_from_slice(br#"","name":"#);
            l.extend_from_slice(name);
            l.extend_from_slice(br#","args":{"entry":"#);
            push_hex_str(l, f.entry);
            l.extend_from_slice(b"}}");
            self.out.write_all(&self.line)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ClockKind;

    fn ts(clock: &ClockInfo, ticks: u64) -> String {
        let mut v = Vec::new();
        write_ts(&mut v, clock, ticks);
        String::from_utf8(v).unwrap_or_default()
    }

    #[test]
    fn timestamps_equal_the_formatted_quotient() {
        // Away from exact halves of a nanosecond, the three decimals are
        // those of the floating-point quotient (small values, where its
        // error is far below half a nanosecond).
        for hz in [1e9, 8e8, 3e8, 1_234_567.0, 2.5e9] {
            let clock = ClockInfo::new(ClockKind::Cycles, Some(hz));
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let ticks = x % 50_000_000;
                let exact2 = u128::from(ticks) * 2_000_000_000 % (2 * hz as u128);
                if exact2 == hz as u128 {
                    continue;
                }
                assert_eq!(
                    ts(&clock, ticks),
                    format!("{:.3}", clock.micros(ticks)),
                    "{ticks} ticks at {hz} Hz"
                );
            }
        }
    }

    #[test]
    fn timestamps_round_halves_up_and_keep_large_values_exact() {
        let clock = ClockInfo::new(ClockKind::Cycles, Some(2e9));
        assert_eq!(ts(&clock, 1), "0.001");
        assert_eq!(ts(&clock, 3), "0.002");
        let ns = ClockInfo::default();
        assert_eq!(ts(&ns, 123_456_789_012_345_678), "123456789012345.678");
        let odd = ClockInfo::new(ClockKind::Cycles, Some(1.5e9 + 0.25));
        assert_eq!(
            ts(&odd, 3_000_000_500),
            format!("{:.3}", odd.micros(3_000_000_500))
        );
    }
}
