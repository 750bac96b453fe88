//! The task stage of a conversion (see [`crate::tasks`]): before an event
//! reaches the call stacks, the stage may switch its source to another
//! task's stack, keep an exception return until the flow shows where it
//! goes, or hold a stretch of the source's events until it knows which
//! task they belong to; a held stretch is applied in order once it does.

use super::{Converter, MemoryOf};
use crate::tasks::{Release, Step, Target, TaskOptions, Tracker};
use std::collections::VecDeque;
use std::io;
use trace_core::event::Event;
use trace_core::memory::MemoryImage;

impl Converter<'_> {
    /// Find RTOS tasks as `options` say (by default, with the known
    /// routines only); before the first event.
    pub fn set_task_options(&mut self, options: &TaskOptions) {
        self.tracker = Tracker::new(options, self.symbols);
    }

    /// `e`, whose source the task stage watches: held, or applied with
    /// what a stretch it ends lets go.
    pub(super) fn watched(
        &mut self,
        e: &Event,
        memory: Option<&dyn MemoryImage>,
    ) -> io::Result<()> {
        let mut queue = VecDeque::from([*e]);
        while let Some(ev) = queue.pop_front() {
            if self.tracker.holds(ev.id) {
                if let Some(release) = self.tracker.hold(&ev, memory, self.symbols) {
                    self.watching = self.tracker.watches_any();
                    self.let_go(release, &mut queue);
                }
            } else {
                self.task_step(&ev, memory)?;
            }
        }
        Ok(())
    }

    /// Put a released stretch's events first in `queue`, after switching
    /// to the task its first arrival goes to.
    fn let_go(&mut self, release: Release, queue: &mut VecDeque<Event>) {
        if let Some((to, switch)) = release.first {
            self.switch_context(to);
            self.switch_note = Some(switch);
        }
        for (i, e) in release.events.into_iter().enumerate() {
            queue.insert(i, e);
        }
    }

    /// Make `to` the running context of its source.
    fn switch_context(&mut self, to: Target) {
        match to {
            Target::Resume(key, index) => self.stacks.resume(key, index),
            Target::Start(key, entry) => self.stacks.start(key, entry),
        }
    }

    /// Apply `e` (not held) as the task stage decides.
    pub(super) fn task_step(
        &mut self,
        e: &Event,
        memory: Option<&dyn MemoryImage>,
    ) -> io::Result<()> {
        let step = self.tracker.step(e, &self.stacks, memory, self.symbols);
        self.watching = self.tracker.watches_any();
        match step {
            Step::Kept => Ok(()),
            Step::Go(before) => {
                for b in &before {
                    self.apply(b, memory)?;
                }
                self.apply(e, memory)
            }
            Step::Switch { to, switch, before } => {
                self.switch_context(to);
                self.switch_note = Some(switch);
                for b in &before {
                    self.apply(b, memory)?;
                }
                self.apply(e, memory)
            }
        }
    }

    /// Let every held stretch go, deciding with what is known, and apply
    /// its events (`memory`: the image of each source); at the end of a
    /// capture.
    pub(super) fn release_held<'m>(&mut self, memory: impl MemoryOf<'m>) -> io::Result<()> {
        self.flush_quiet()?;
        let released = self.tracker.release_all(self.symbols);
        self.watching = self.tracker.watches_any();
        for release in released {
            let Some(id) = release.events.first().map(|e| e.id) else {
                continue;
            };
            let mut queue = VecDeque::new();
            self.let_go(release, &mut queue);
            let image = memory.of(id);
            while let Some(ev) = queue.pop_front() {
                if self.tracker.holds(ev.id) {
                    if let Some(again) = self.tracker.hold(&ev, image, self.symbols) {
                        self.watching = self.tracker.watches_any();
                        self.let_go(again, &mut queue);
                    }
                } else {
                    self.task_step(&ev, image)?;
                }
            }
        }
        // What a stretch that began at its very end holds.
        if self.tracker.any_held() {
            return self.release_held(memory);
        }
        let deferred = self.tracker.take_deferred();
        self.watching = self.tracker.watches_any();
        for e in deferred {
            self.apply(&e, memory.of(e.id))?;
        }
        Ok(())
    }
}
