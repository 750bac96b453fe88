//! Decoding a capture on the calling thread: read in chunks (memory stays
//! bounded), demultiplexed, each trace ID's packets run by its decoder.

use super::consumer::{Consumer, Sink};
use super::{CaptureError, DecodeSummary, Plan, SLICE};
use crate::decode::Decoder;
use crate::demux::{Demux, Item};
use crate::event::Event;
use crate::per_id::PerId;
use std::cell::Cell;
use std::io::{self, Read};

/// Bytes read from the capture at a time.
const CHUNK: usize = 1 << 20;

/// Bytes handed to the demultiplexer at a time: their items (a packet
/// takes one to a few bytes, its item 40) stay within the core's cache.
pub(crate) const FEED: usize = 4 << 10;

/// Read `input` through `demux` in chunks (memory stays bounded),
/// handing each batch of demultiplexer items to `batch`; the last batch
/// holds what the end of the input completes. A stream's read that has
/// nothing new for now (`WouldBlock`) gets an empty batch. Returns the number of
/// bytes read. This is the read loop of every capture decode; a packet
/// listing uses it with a [`Demux`] of its own.
///
/// # Errors
///
/// [`CaptureError::Read`] when the input cannot be read, or `batch`'s
/// error.
pub fn read_items<R: Read>(
    demux: &mut Demux,
    mut input: R,
    mut batch: impl FnMut(&[Item]) -> Result<(), CaptureError>,
) -> Result<u64, CaptureError> {
    // Grown up to CHUNK while reads fill it: a small input (one piece of
    // a perf.data recording among thousands) costs no megabyte.
    let mut buf = vec![0u8; FEED];
    let mut items = Vec::new();
    let mut bytes = 0u64;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            // A stream with nothing new for now: what it sent is handed
            // on already.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) =>
            {
                continue
            }
            Err(e) => return Err(CaptureError::Read(e)),
        };
        bytes += n as u64;
        // Fed a slice at a time, so that the items of a slice are still in
        // the cache when `batch` reads them (a whole chunk's items would
        // be tens of megabytes).
        for slice in buf[..n].chunks(FEED) {
            items.clear();
            demux.feed(slice, &mut items);
            batch(&items)?;
        }
        if n == buf.len() && buf.len() < CHUNK {
            buf.resize(buf.len() * 2, 0);
        }
    }
    items.clear();
    demux.finish(&mut items);
    batch(&items)?;
    Ok(bytes)
}

/// Decode the capture read from `input` on the calling thread, handing
/// every delivery to `each`.
pub(crate) fn decode_sequential<R: Read, T: Consumer + ?Sized>(
    plan: &Plan,
    input: R,
    each: &mut T,
) -> Result<DecodeSummary, CaptureError> {
    let mut decoders: PerId<Decoder> = PerId::new();
    let mut sink = Sink::new(each);
    // Events held for a consumer that takes them in slices.
    let mut held: Vec<Event> = Vec::with_capacity(if T::SLICES { 2 * SLICE } else { 0 });
    let mut demux = plan.demux();
    // Set when a read said that a stream has nothing new for now.
    let idle = Cell::new(false);
    let input = Idle { input, idle: &idle };
    let bytes = read_items(&mut demux, input, |items| {
        for item in items {
            match item {
                Item::Packet { id, offset, packet } => {
                    let Some(dec) = decoders.get_or_insert_with(*id, || {
                        let cfg = plan.source(*id)?;
                        Some(Decoder::new(cfg, plan.image(*id)))
                    }) else {
                        continue;
                    };
                    if T::SLICES {
                        dec.push(*offset, packet, &mut |e| held.push(e));
                        if held.len() >= SLICE {
                            sink.on_slice(&held);
                            held.clear();
                        }
                    } else {
                        dec.push(*offset, packet, &mut |e| sink.on(&e));
                    }
                }
                Item::Error { id, error } => {
                    if let Some(dec) = decoders.get_mut(*id) {
                        if T::SLICES {
                            dec.packet_error(error.offset(), &mut |e| held.push(e));
                        } else {
                            dec.packet_error(error.offset(), &mut |e| sink.on(&e));
                        }
                    }
                }
                _ => {}
            }
        }
        // A stream with nothing new for now: the events held are handed
        // on rather than kept until it sends more.
        if items.is_empty() && idle.replace(false) && !held.is_empty() {
            sink.on_slice(&held);
            held.clear();
        }
        sink.failure
            .take()
            .map_or(Ok(()), |e| Err(CaptureError::Consumer(e)))
    })?;
    // Finished in trace ID order, as the sources are listed.
    let ids = decoders.ids();
    for (_, dec) in decoders.iter_mut() {
        if T::SLICES {
            dec.finish(&mut |e| held.push(e));
        } else {
            dec.finish(&mut |e| sink.on(&e));
        }
    }
    // The events held after the last packet, and those of the ends.
    if !held.is_empty() {
        sink.on_slice(&held);
    }
    sink.end();
    if let Some(e) = sink.failure.take() {
        return Err(CaptureError::Consumer(e));
    }
    let counted: &[u8] = if T::COUNTS { &ids } else { &[] };
    Ok(DecodeSummary {
        sources: counted
            .iter()
            .map(|&id| (id, *sink.counts_of(id)))
            .collect(),
        parsed: demux.counters(),
        bytes,
    })
}

/// A capture's input that notes when a read says that a stream has
/// nothing new for now (`WouldBlock`).
struct Idle<'a, R> {
    input: R,
    idle: &'a Cell<bool>,
}

impl<R: Read> Read for Idle<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.input.read(buf);
        if let Err(e) = &r {
            if e.kind() == io::ErrorKind::WouldBlock {
                self.idle.set(true);
            }
        }
        r
    }
}
