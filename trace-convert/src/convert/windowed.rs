//! The window stage of a conversion (see [`crate::window`]): each event
//! the call stacks and clocks have seen is handed to the sinks or not, a
//! thread entering the window hands them its whole stack as opened, and a
//! thread leaving it closes what they were handed.

use super::{event_error, Converter, DynSink, EventCtx, Flow, Interest};
use crate::callstack::{Frame, ThreadKey};
use crate::clock::Span;
use crate::window::Step;
use std::io;
use trace_core::event::{Event, EventKind};
use trace_core::memory::MemoryImage;

impl Converter<'_> {
    /// [`dispatch`](Self::dispatch) through the window.
    #[inline(never)]
    pub(super) fn dispatch_windowed(
        &mut self,
        e: &Event,
        thread: ThreadKey,
        span: Span,
        memory: Option<&dyn MemoryImage>,
        changed: bool,
    ) -> io::Result<()> {
        let Some(window) = self.window.as_mut() else {
            return self.dispatch_plain(e, thread, span, memory, changed);
        };
        if matches!(e.kind, EventKind::EndOfTrace) {
            // Closes what the sinks were handed of the thread, if anything.
            if window.unshow(thread) {
                return self.dispatch_plain(e, thread, span, memory, changed);
            }
            return Ok(());
        }
        let instructions = match &e.kind {
            EventKind::Range(r) => u64::from(r.count),
            _ => 0,
        };
        let step = window.step(
            thread,
            span.start,
            self.clocks.placed(thread.id),
            self.stacks.stack(thread),
            self.stacks.names(),
            instructions,
        );
        match step {
            Step::Show => {
                self.dispatch_plain(e, thread, span, memory, changed)?;
                self.batch(e)
            }
            Step::Enter => {
                let stack = self.stacks.stack(thread);
                let ctx = EventCtx {
                    thread,
                    time: span.start,
                    end: span.end,
                    cycles: span.cycles,
                    closed: &[],
                    opened: stack,
                    stack,
                    names: self.stacks.names(),
                    symbols: self.symbols,
                    memory,
                    clock: self.clocks.info(),
                    tasks: self.tracker.tasks(),
                    switch: None,
                };
                let stop = hand(
                    &mut self.sinks,
                    &self.interests,
                    &mut self.stops,
                    e,
                    &ctx,
                    !stack.is_empty(),
                )?;
                if stop {
                    self.apply_stops()?;
                }
                self.batch(e)
            }
            Step::Leave { core } => {
                let frames = window.stack_before(
                    self.stacks.stack(thread),
                    self.stacks.closed(),
                    self.stacks.opened(),
                );
                let r = self.close_shown(e, thread, &frames, span.start);
                if let Some(w) = self.window.as_mut() {
                    w.give_back(frames);
                }
                r?;
                if core {
                    let others = self
                        .window
                        .as_ref()
                        .map(|w| w.shown_of(thread.id, thread))
                        .unwrap_or_default();
                    for other in others {
                        if let Some(w) = self.window.as_mut() {
                            w.unshow(other);
                        }
                        let frames: Vec<Frame> =
                            self.stacks.stack(other).iter().rev().copied().collect();
                        self.close_shown(e, other, &frames, span.start)?;
                    }
                }
                Ok(())
            }
            Step::Hide => Ok(()),
        }
    }

    /// Close `frames` (innermost first) of `thread` at `time` in the
    /// sinks, by an end-of-trace event at `at`'s offset.
    fn close_shown(
        &mut self,
        at: &Event,
        thread: ThreadKey,
        frames: &[Frame],
        time: u64,
    ) -> io::Result<()> {
        let e = Event {
            offset: at.offset,
            id: thread.id,
            kind: EventKind::EndOfTrace,
        };
        let ctx = EventCtx {
            thread,
            time,
            end: time,
            cycles: 0,
            closed: frames,
            opened: &[],
            stack: &[],
            names: self.stacks.names(),
            symbols: self.symbols,
            memory: None,
            clock: self.clocks.info(),
            tasks: self.tracker.tasks(),
            switch: None,
        };
        let stop = hand(
            &mut self.sinks,
            &self.interests,
            &mut self.stops,
            &e,
            &ctx,
            !frames.is_empty(),
        )?;
        if stop {
            self.apply_stops()?;
        }
        Ok(())
    }
}

/// Hand `e` with `ctx` to the sinks that want it; whether one stopped
/// (noted in `stops`).
fn hand(
    sinks: &mut [Box<dyn DynSink + '_>],
    interests: &[Interest],
    stops: &mut Vec<usize>,
    e: &Event,
    ctx: &EventCtx<'_>,
    changed: bool,
) -> io::Result<bool> {
    let mut stop = false;
    for (i, (s, interest)) in sinks.iter_mut().zip(interests).enumerate() {
        if interest.wants(e, changed) {
            match s.event(e, ctx) {
                Ok(Flow::Continue) => {}
                Ok(Flow::Stop) => {
                    stops.push(i);
                    stop = true;
                }
                Err(err) => return Err(event_error(s.name(), e, &err)),
            }
        }
    }
    Ok(stop)
}

impl Converter<'_> {
    /// Hand `e` to the sinks taking plain events that the window does
    /// not apply to ([`Sink::windowed`](crate::sinks::Sink::windowed)).
    pub(super) fn unwindowed(&mut self, e: &Event) -> io::Result<()> {
        let mut stop = false;
        for (i, (s, interest)) in self.sinks.iter_mut().zip(&self.interests).enumerate() {
            if *interest != Interest::EventsOnly || s.windowed() {
                continue;
            }
            match s.events(std::slice::from_ref(e)) {
                Ok(Flow::Continue) => {}
                Ok(Flow::Stop) => {
                    self.stops.push(i);
                    stop = true;
                }
                Err(err) => return Err(event_error(s.name(), e, &err)),
            }
        }
        if stop {
            self.apply_stops()?;
        }
        Ok(())
    }
}
