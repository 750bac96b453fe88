//! The `packets` and `decode` listings with their lines formatted on a
//! thread of their own ([`pipelined`]), when the user's threads would
//! decode the capture in parallel: the same bytes as on one thread.

use crate::{decode_summary, jobs, read_failure, DecodeArgs, Totals};
use std::io;
use std::process::ExitCode;
use trace_convert::input::capture::{self as dec, CaptureSummary, ReadError};
use trace_convert::input::memory::Images;
use trace_convert::input::source::CaptureSpec;
use trace_convert::profile::Profiles;
use trace_convert::sinks::listing::event_lines::EventListing;
use trace_convert::sinks::listing::events::EventFormat;
use trace_convert::sinks::listing::packet_lines::PacketListing;
use trace_convert::sinks::listing::packets::ListFormat;
use trace_convert::sinks::listing::pipeline::{pipelined, Feeder};
use trace_core::capture::{Consumer, Delivery};
use trace_core::demux::Item;
use trace_core::event::Event;

/// Whether a listing of `capture` is formatted on a thread of its own
/// ([`pipelined`]): when the user's threads would decode it in parallel.
/// The decode then has one thread less.
pub(crate) fn pipelines(capture: &CaptureSpec) -> bool {
    let opts = jobs::decode_options();
    opts.jobs >= 2 && capture.size() >= opts.min_parallel_bytes
}

/// [`decode_listing`] of a fast listing, its lines formatted on a second
/// thread: the same bytes.
pub(crate) fn decode_pipelined(
    args: &DecodeArgs,
    format: EventFormat,
    profiles: &Profiles,
    capture: &CaptureSpec,
    images: &Images,
    out: &mut dyn io::Write,
) -> Result<Totals, ExitCode> {
    let only = &args.input.source.trace_id;
    let mut opts = jobs::decode_options();
    opts.jobs -= 1;
    let by_id = images.by_id(capture);
    let other = std::sync::Arc::clone(images.other());
    let instructions = args.instructions;
    // A formatter per thread, each with its own listing writer.
    let formatter = || {
        let mut listing = EventListing::new(format);
        listing.set_profiles(profiles.clone());
        let (by_id, other) = (by_id.clone(), std::sync::Arc::clone(&other));
        move |block: &[Event], bytes: &mut Vec<u8>| -> io::Result<()> {
            for e in block {
                let mem = instructions.then(|| by_id.get(&e.id).map_or(&*other, |m| &**m));
                listing.write(bytes, e, mem)?;
            }
            listing.finish(bytes)
        }
    };
    let mut decoder = dec::decoder(capture, |name| images.of(name))
        .map_err(read_failure)?
        .options(opts)
        .build();
    let summary = pipelined(out, formatter, |feed| {
        dec::run(capture, &mut decoder, &mut ToFeeder { feed, only })
    })
    .map_err(|e| read_failure(ReadError::Output(e)))?
    .map_err(read_failure)?;
    Ok(decode_summary(capture, &summary))
}

/// Hands a decode's events to a listing's formatters, in slices as the
/// decode stores them (those of `only` when given).
struct ToFeeder<'f, 'o, F> {
    feed: &'f mut Feeder<'o, Event, F>,
    only: &'f [u8],
}

impl<F> Consumer for ToFeeder<'_, '_, F>
where
    F: FnMut(&[Event], &mut Vec<u8>) -> io::Result<()>,
{
    const SLICES: bool = true;

    fn take(&mut self, d: Delivery<'_>) -> io::Result<()> {
        match d {
            Delivery::Event(e) | Delivery::Folded(e) => {
                if self.only.is_empty() || self.only.contains(&e.id) {
                    self.feed.push(*e)?;
                }
                Ok(())
            }
            Delivery::Part { .. } => Ok(()),
        }
    }

    fn take_slice(&mut self, events: &[Event]) -> io::Result<()> {
        if self.only.is_empty() {
            return self.feed.extend(events);
        }
        events
            .iter()
            .filter(|e| self.only.contains(&e.id))
            .try_for_each(|e| self.feed.push(*e))
    }
}

/// The packet listing of `capture` (the items `listed` says), its lines
/// formatted on a second thread.
pub(crate) fn packets_pipelined(
    capture: &CaptureSpec,
    format: ListFormat,
    out: &mut dyn io::Write,
    listed: impl Fn(&Item) -> bool,
) -> Result<CaptureSummary, ExitCode> {
    let formatter = || {
        let mut lines = PacketListing::new(format);
        move |block: &[Item], bytes: &mut Vec<u8>| {
            for item in block {
                lines.write(bytes, item)?;
            }
            lines.finish(bytes)
        }
    };
    pipelined(out, formatter, |feed| {
        dec::read_capture(capture, |item| {
            if listed(item) {
                feed.push(item.clone())?;
            }
            Ok(())
        })
    })
    .map_err(|e| read_failure(ReadError::Output(e)))?
    .map_err(read_failure)
}
