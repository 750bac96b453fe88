//! The temporary files of unfinished outputs, known process-wide so that
//! a signal that ends the process can remove them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Every temporary file not yet renamed or removed, with its ticket.
static TEMPORARIES: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());

/// The list, held: while held, no signal handler removes anything, and a
/// temporary file created and registered under it is never missed.
pub(crate) struct Held(MutexGuard<'static, Vec<(u64, PathBuf)>>);

/// Take the list (waiting for a signal handler that is removing files).
pub(crate) fn hold() -> Held {
    Held(TEMPORARIES.lock().unwrap_or_else(PoisonError::into_inner))
}

impl Held {
    /// Add `path`; its ticket takes it off again.
    pub(crate) fn register(&mut self, path: PathBuf) -> Ticket {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.0.push((id, path));
        Ticket(Some(id))
    }

    /// Take `ticket`'s file off the list (it was renamed into place).
    pub(crate) fn release(&mut self, mut ticket: Ticket) {
        if let Some(id) = ticket.0.take() {
            self.0.retain(|(i, _)| *i != id);
        }
    }
}

/// A file on the list; dropped, it takes the file off (the file itself is
/// removed by its owner).
#[derive(Debug)]
pub(crate) struct Ticket(Option<u64>);

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(id) = self.0.take() {
            hold().0.retain(|(i, _)| *i != id);
        }
    }
}

/// The flag a stream input registered ([`stop_streams_on_signal`]): the
/// next SIGINT or SIGTERM sets it instead of ending the process.
static STREAM_STOP: Mutex<Option<Arc<AtomicBool>>> = Mutex::new(None);

/// From now on, the next SIGINT or SIGTERM sets `flag` (a stream input's
/// [`Stop`](crate::input::stream::Stop)) instead of removing the outputs
/// and ending the process: for a stream, Ctrl-C is its normal end, and
/// the outputs of what arrived are committed. A second signal does what
/// [`remove_temporaries_on_signal`] says. Without that call (no handler
/// thread), nothing.
pub fn stop_streams_on_signal(flag: Arc<AtomicBool>) {
    *STREAM_STOP.lock().unwrap_or_else(PoisonError::into_inner) = Some(flag);
}

/// From now on, when SIGINT, SIGTERM or SIGHUP arrives, remove every
/// temporary output file and then end the process as that signal does by
/// default (so the parent sees the signal). A no-op where there are no
/// such signals.
///
/// Call it once, early, in a program that writes outputs through
/// [`OutputSet`](super::OutputSet): it starts one thread that waits for
/// the signals.
///
/// # Errors
///
/// The error of registering the handlers or starting the thread.
pub fn remove_temporaries_on_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        std::thread::Builder::new()
            .name("output-cleanup".into())
            .spawn(move || {
                for signal in signals.forever() {
                    if signal != SIGHUP {
                        let stream = STREAM_STOP
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .take();
                        if let Some(stop) = stream {
                            stop.store(true, Ordering::SeqCst);
                            continue;
                        }
                    }
                    // Held to the end: nothing is created or renamed after.
                    let held = hold();
                    for (_, path) in held.0.iter() {
                        let _ = std::fs::remove_file(path);
                    }
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                    std::process::exit(128 + signal);
                }
            })?;
    }
    Ok(())
}
