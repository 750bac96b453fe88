//! Which protocol and layout a capture file looks like, for a run whose
//! flags decoded nothing from it: its first bytes are parsed as every
//! protocol of the registry that bytes can be recognized by
//! ([`Protocol::recognizable`]: not ITM, whose packets almost any bytes
//! form) in every layout (raw, frames, TPIU), and a
//! description whose packets fit clearly better than the one given is
//! named.
//!
//! A fit is the share of the payload bytes that formed packets and the
//! parse errors per KiB. Any byte stream parses as something, but trace
//! read as the other protocol or in another layout leaves more bytes
//! skipped or gives far more errors. On the shared real captures (raw
//! PTM, TC2's ETMv3 and PTM sources in frames, two of the Cortex-R5
//! ETMv3 buffers) the right description has 92.9% to 100% of its bytes
//! in packets and at most 0.23 errors per KiB; the other protocol in the
//! same layout has 7 to 77 points fewer bytes in packets (PTM's parser
//! takes most ETMv3 bytes as packets: 89.5% on one buffer) and 8 times
//! the errors or more. Registers far from the typical values the flags
//! start from, or a TPIU stream without full frame syncs, fit no
//! description, and nothing is named then.

use crate::input::flags::{Layout, SourceFlags};
use crate::input::source::Protocol;
use std::io::Read;
use std::path::Path;

/// Bytes of the capture parsed per description.
pub const PROBE: u64 = 64 << 10;

/// How well one description of a capture fits its first bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The protocol.
    pub protocol: Protocol,
    /// The layout.
    pub layout: Layout,
    /// Payload bytes the packet parsers were given.
    pub bytes: u64,
    /// Of those, bytes that formed packets.
    pub in_packets: u64,
    /// Parse errors.
    pub errors: u64,
}

impl Fit {
    /// The share of the payload that formed packets (0 without payload).
    #[must_use]
    pub fn share(&self) -> f64 {
        if self.bytes == 0 {
            0.0
        } else {
            self.in_packets as f64 / self.bytes as f64
        }
    }

    /// Parse errors per KiB of payload.
    #[must_use]
    pub fn errors_per_kib(&self) -> f64 {
        self.errors as f64 * 1024.0 / self.bytes.max(1) as f64
    }

    /// Whether the bytes look like trace described this way: most of a
    /// payload of some size formed packets, with few errors.
    #[must_use]
    pub fn looks_right(&self) -> bool {
        self.bytes >= 256 && self.share() >= 0.9 && self.errors_per_kib() <= 1.0
    }

    /// Whether this fit looks right and clearly better than `other`'s: 5
    /// points more of the payload in packets, or a quarter of the errors.
    #[must_use]
    pub fn clearly_better_than(&self, other: &Fit) -> bool {
        self.looks_right()
            && (self.share() >= other.share() + 0.05
                || other.errors_per_kib() >= 4.0 * self.errors_per_kib() + 1.0)
    }

    /// The flags that give this description.
    #[must_use]
    pub fn flags(&self) -> String {
        let protocol = self.protocol.flag();
        let layout = match self.layout {
            Layout::Raw => "raw",
            Layout::Frames => "frames",
            Layout::Tpiu => "tpiu",
        };
        format!("--protocol {protocol} --layout {layout}")
    }
}

/// The fit of the first [`PROBE`] bytes of the capture file `path` as
/// described by `flags` (its protocol and layout replaced by `protocol`
/// and `layout`; register values given for another protocol left out);
/// `None` when that description is unusable or the file cannot be read.
#[must_use]
pub fn fit(path: &Path, flags: &SourceFlags, protocol: Protocol, layout: Layout) -> Option<Fit> {
    let mut f = flags.clone();
    if f.protocol != Some(protocol) {
        f.etmidr = None;
        f.etmccer = None;
        f.protocol = Some(protocol);
    }
    f.layout = layout;
    let spec = f.capture(path)?;
    let mut demux = crate::input::capture::demux_for(&spec).ok()?;
    let mut head = Vec::new();
    spec.open().ok()?.take(PROBE).read_to_end(&mut head).ok()?;
    let mut items = Vec::new();
    for slice in head.chunks(4 << 10) {
        items.clear();
        demux.feed(slice, &mut items);
    }
    items.clear();
    demux.finish(&mut items);
    let mut fit = Fit {
        protocol,
        layout,
        bytes: 0,
        in_packets: 0,
        errors: 0,
    };
    for id in demux.ids() {
        if let Some(s) = demux.stats(id) {
            fit.bytes += s.bytes;
            fit.in_packets += s.in_packets;
            fit.errors += s.errors;
        }
    }
    Some(fit)
}

/// Every description's fit, the one `flags` give first.
#[must_use]
pub fn fits(path: &Path, flags: &SourceFlags) -> Vec<Fit> {
    let given = (flags.protocol, flags.layout);
    let mut all = Vec::new();
    for &protocol in Protocol::ALL.iter().filter(|p| p.recognizable()) {
        for layout in [Layout::Raw, Layout::Frames, Layout::Tpiu] {
            if let Some(f) = fit(path, flags, protocol, layout) {
                all.push(f);
            }
        }
    }
    all.sort_by_key(|f| (Some(f.protocol), f.layout) != given);
    all
}

/// For a capture file described by `flags` from which nothing was
/// decoded: when the given description does not fit its first bytes, the
/// one that fits them clearly better (the best of those that look right:
/// in the layout given if one does, then by share, then errors), if any.
#[must_use]
pub fn better(path: &Path, flags: &SourceFlags) -> Option<Fit> {
    let all = fits(path, flags);
    let (given, others) = match all.first() {
        Some(f) if (Some(f.protocol), f.layout) == (flags.protocol, flags.layout) => {
            (Some(*f), &all[1..])
        }
        _ => (None, &all[..]),
    };
    let best = others
        .iter()
        .filter(|f| f.looks_right())
        .max_by(|a, b| {
            // The layout given first: an ETB buffer fits as a TPIU stream
            // too, with more bytes in packets (the stream synchronizes
            // sooner), but the flags given are nearer the truth.
            (a.layout == flags.layout)
                .cmp(&(b.layout == flags.layout))
                .then(a.share().total_cmp(&b.share()))
                .then(b.errors_per_kib().total_cmp(&a.errors_per_kib()))
        })
        .copied()?;
    match given {
        // A description that fits is not what went wrong (the registers
        // are), even where another fits more bytes: an ETB buffer read as
        // a TPIU stream synchronizes at its first I-sync rather than its
        // first A-sync.
        Some(g) if g.looks_right() || !best.clearly_better_than(&g) => None,
        _ => Some(best),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real captures and the description that is right for each.
    fn captures() -> Vec<(std::path::PathBuf, SourceFlags)> {
        let mut out = Vec::new();
        let flags = |protocol, layout, trace_id| SourceFlags {
            protocol: Some(protocol),
            layout,
            trace_id,
            ..SourceFlags::default()
        };
        if let Some(d) = test_support::opencsd_dir() {
            out.push((
                d.join("tc2-ptm-rstk-t32/PTM_0_2.bin"),
                flags(Protocol::Ptm, Layout::Raw, None),
            ));
            // TC2 mixes ETMv3 and PTM sources: one of each, with its
            // registers (its device files').
            for (id, p, etmcr) in [
                (0x10, Protocol::Etmv3, 0x1000_1860),
                (0x13, Protocol::Ptm, 0x1000_1000),
            ] {
                let f = SourceFlags {
                    etmcr: Some(etmcr),
                    ..flags(p, Layout::Frames, Some(id))
                };
                out.push((d.join("TC2/cstrace.bin"), f));
            }
        }
        if let Some(d) = test_support::real_dir() {
            // (The Zephyr buffer starts damaged, and the SWO stream needs
            // realigning: no description fits their first 64 KiB.)
            for name in ["002b37c-freertos", "b8b29a1-threadx"] {
                let dir = d.join("am243x-r5f").join(name);
                if let Some(f) = std::fs::read_dir(dir.join("files"))
                    .ok()
                    .and_then(|mut r| r.next())
                    .and_then(Result::ok)
                {
                    out.push((f.path(), flags(Protocol::Etmv3, Layout::Frames, None)));
                }
            }
        }
        out.retain(|(p, _)| p.is_file());
        out
    }

    #[test]
    fn the_right_description_of_each_real_capture_is_the_one_that_fits() {
        let all = captures();
        if all.is_empty() {
            assert!(std::env::var_os("CI").is_none(), "shared test data missing");
            return;
        }
        let mut wrong = Vec::new();
        for (path, right) in all {
            for f in fits(&path, &right) {
                let is_right = (Some(f.protocol), f.layout) == (right.protocol, right.layout);
                eprintln!(
                    "{}: {}: {} bytes, {:.1}% in packets, {:.2} errors/KiB{}",
                    path.display(),
                    f.flags(),
                    f.bytes,
                    100.0 * f.share(),
                    f.errors_per_kib(),
                    if is_right { " (right)" } else { "" }
                );
                if is_right && !f.looks_right() {
                    wrong.push(format!("{}: {f:?}", path.display()));
                }
            }
            // Given the other protocol, the right one is named.
            let other = match right.protocol {
                Some(Protocol::Etmv3) => Protocol::Ptm,
                _ => Protocol::Etmv3,
            };
            let other_flags = SourceFlags {
                protocol: Some(other),
                ..right.clone()
            };
            let hint = better(&path, &other_flags).map(|f| (f.protocol, f.layout));
            if hint != right.protocol.map(|p| (p, right.layout)) {
                wrong.push(format!("{}: hint {hint:?}", path.display()));
            }
            assert!(better(&path, &right).is_none());
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}
