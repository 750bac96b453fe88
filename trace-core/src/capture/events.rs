//! Pulling a capture's events: the decode on the calling thread, run as
//! far as the next event asked for.

use super::sequential::FEED;
use super::{CaptureError, DecodeSummary, Plan, SourceCounts};
use crate::decode::Decoder;
use crate::demux::{Demux, Item};
use crate::event::Event;
use crate::per_id::PerId;
use std::collections::VecDeque;
use std::io::{self, Read};

/// The events of a capture, decoded as they are pulled (made by
/// [`CaptureDecoder::events`](super::CaptureDecoder::events)): the same
/// events, in the same order, as [`CaptureDecoder::run`](super::CaptureDecoder::run)
/// hands on. After an error, the iterator ends.
pub struct Events<R> {
    plan: Plan,
    input: R,
    demux: Demux,
    decoders: PerId<Decoder>,
    counts: PerId<SourceCounts>,
    buf: Vec<u8>,
    items: Vec<Item>,
    ready: VecDeque<Event>,
    bytes: u64,
    ended: bool,
}

impl<R> core::fmt::Debug for Events<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Events")
            .field("bytes", &self.bytes)
            .field("ready", &self.ready.len())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<R: Read> Events<R> {
    pub(super) fn new(plan: Plan, input: R) -> Self {
        let demux = plan.demux();
        Events {
            plan,
            input,
            demux,
            decoders: PerId::new(),
            counts: PerId::new(),
            buf: vec![0u8; FEED],
            items: Vec::new(),
            ready: VecDeque::new(),
            bytes: 0,
            ended: false,
        }
    }

    /// The counters of the events pulled so far (complete once the
    /// iterator has ended).
    #[must_use]
    pub fn summary(&self) -> DecodeSummary {
        DecodeSummary {
            sources: self
                .decoders
                .ids()
                .into_iter()
                .map(|id| (id, self.counts.get(id).copied().unwrap_or_default()))
                .collect(),
            parsed: self.demux.counters(),
            bytes: self.bytes,
        }
    }

    /// Read and decode the next piece of the capture (or its end).
    fn advance(&mut self) -> Result<(), CaptureError> {
        let n = loop {
            match self.input.read(&mut self.buf) {
                Ok(n) => break n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) => {}
                Err(e) => return Err(CaptureError::Read(e)),
            }
        };
        self.items.clear();
        if n == 0 {
            self.demux.finish(&mut self.items);
        } else {
            self.bytes += n as u64;
            self.demux.feed(&self.buf[..n], &mut self.items);
        }
        let Events {
            plan,
            decoders,
            ready,
            items,
            ..
        } = self;
        for item in items.iter() {
            match item {
                Item::Packet { id, offset, packet } => {
                    let dec = decoders.get_or_insert_with(*id, || {
                        Some(Decoder::new(plan.source(*id)?, plan.image(*id)))
                    });
                    if let Some(dec) = dec {
                        dec.push(*offset, packet, &mut |e| ready.push_back(e));
                    }
                }
                Item::Error { id, error } => {
                    if let Some(dec) = decoders.get_mut(*id) {
                        dec.packet_error(error.offset(), &mut |e| ready.push_back(e));
                    }
                }
                _ => {}
            }
        }
        if n == 0 {
            // Finished in trace ID order, as the sources are listed.
            for (_, dec) in decoders.iter_mut() {
                dec.finish(&mut |e| ready.push_back(e));
            }
            self.ended = true;
        }
        Ok(())
    }
}

impl<R: Read> Iterator for Events<R> {
    type Item = Result<Event, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                if let Some(c) = self
                    .counts
                    .get_or_insert_with(e.id, || Some(SourceCounts::default()))
                {
                    c.count(&e);
                }
                return Some(Ok(e));
            }
            if self.ended {
                return None;
            }
            if let Err(e) = self.advance() {
                self.ended = true;
                return Some(Err(e));
            }
        }
    }
}
