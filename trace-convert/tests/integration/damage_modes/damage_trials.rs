//! Damaged versions of the captures and the measurement of their decodes
//! against the clean ones (see `damage_stretches` for the definitions).

use super::damage_stretches::{classify, stretches, Tally};
use super::{decode, ids, with_file, Case, Local};
use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;
use test_support::Rng;
use trace_convert::input::capture::read_capture;
use trace_convert::input::flags::SourceFlags;
use trace_convert::input::resolve;
use trace_convert::input::source::{CaptureSpec, Protocol};
use trace_convert::sinks::listing::packets::PacketRecord;
use trace_core::demux::Item;
use trace_core::event::{Event, EventKind};
use trace_core::frames::{Deformatter, Formatter, FrameEvent, FrameMode};

/// Consecutive agreeing ranges after which a damaged decode agrees with
/// the clean one again; fewer, between disagreements, are coincidences of
/// a wrong walk (4 to 16 give shares within 0.6 points of each other).
const RECONVERGED: usize = 8;

/// What a packet can tell about the decoded flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Mark {
    /// An A-sync, or an I-sync that starts trace (after a filter, an
    /// overflow or debug): a sync point that contradicts nothing.
    Sync,
    /// A periodic I-sync: a sync point whose address the flow must reach.
    PeriodicSync,
    /// A branch address or waypoint update packet.
    Address,
}

/// Marked packets: (trace ID, offset, mark).
type Marks = HashSet<(u8, u64, Mark)>;

/// The packets of `bytes` (read as `spec` describes) that [`Mark`]
/// describes, and the packet errors, as (trace ID, offset).
fn marks(spec: &CaptureSpec, bytes: &[u8]) -> (Marks, Vec<(u8, u64)>) {
    with_file(bytes, |path| {
        let mut spec = spec.clone();
        spec.path = path.to_owned();
        let (mut packets, mut errors) = (HashSet::new(), Vec::new());
        read_capture(&spec, |item| {
            match item {
                Item::Packet { id, offset, packet } => {
                    let r = PacketRecord::from_packet(*offset, *id, packet);
                    let mark = match (r.kind.as_str(), r.reason.as_deref()) {
                        ("i_sync", Some("periodic")) => Some(Mark::PeriodicSync),
                        ("a_sync" | "i_sync", _) => Some(Mark::Sync),
                        ("branch_address" | "waypoint_update", _) => Some(Mark::Address),
                        _ => None,
                    };
                    if let Some(m) = mark {
                        packets.insert((*id, *offset, m));
                    }
                }
                Item::Error { id, error } => errors.push((*id, error.offset())),
                _ => {}
            }
            Ok(())
        })
        .expect("packets");
        (packets, errors)
    })
}

/// One damaged version of a capture.
pub struct Damage {
    /// The kind of damage, as printed.
    pub mode: &'static str,
    /// How the damaged bytes are read (wrong configurations change it).
    spec: CaptureSpec,
    bytes: Vec<u8>,
    /// Clean offsets of the bytes the damage removed.
    lost: Range<u64>,
    /// Wrapped buffers: the damaged offset where the capture's own start
    /// follows its end. Until the clean decode of an ID first
    /// synchronizes it says nothing about the bytes there (which now
    /// continue other trace): they are not judged.
    restart: Option<u64>,
    /// The damaged offset of a clean offset (`None`: not in the damaged
    /// capture).
    place: Box<dyn Fn(u64) -> Option<u64>>,
}

impl Damage {
    fn new(mode: &'static str, spec: &CaptureSpec, bytes: Vec<u8>) -> Damage {
        Damage {
            mode,
            spec: spec.clone(),
            bytes,
            lost: 0..0,
            restart: None,
            place: Box::new(Some),
        }
    }
}

/// A clean decode to compare with, and the marks of its capture.
pub struct Reference<'a> {
    events: &'a [Event],
    marks: Marks,
}

impl<'a> Reference<'a> {
    /// The clean decode `events` of `bytes` read as `spec` says.
    pub fn new(spec: &CaptureSpec, bytes: &[u8], events: &'a [Event]) -> Self {
        // The self-checks never fire on a clean capture.
        let false_alarms: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Inconsistent { .. }))
            .collect();
        assert!(false_alarms.is_empty(), "clean decode: {false_alarms:?}");
        Reference {
            events,
            marks: marks(spec, bytes).0,
        }
    }
}

/// The stretches of `damage`'s decode that differ from the clean one,
/// counted.
pub fn measure(case: &Case, clean: &Reference, damage: &Damage) -> Tally {
    let (mut damaged, _) = decode(case, &damage.spec, &damage.bytes);
    // A raw file given another protocol is read under a trace ID of its
    // own: its events stand for the clean source's.
    let clean_ids = ids(clean.events);
    if let ([c], [_]) = (&clean_ids[..], &ids(&damaged)[..]) {
        damaged.iter_mut().for_each(|e| e.id = *c);
    }
    let (damaged_marks, errors) = marks(&damage.spec, &damage.bytes);
    let mut tally = Tally::default();
    let mut all = clean_ids;
    all.extend(ids(&damaged));
    all.sort_unstable();
    all.dedup();
    for id in all {
        // The sync points: the intact ones, where the clean capture has
        // the same.
        let mut syncs: Vec<u64> = clean
            .marks
            .iter()
            .filter(|m| m.0 == id && m.2 != Mark::Address && !damage.lost.contains(&m.1))
            .filter_map(|&(id, o, m)| Some((id, (damage.place)(o)?, m)))
            .filter(|m| damaged_marks.contains(m))
            .map(|m| m.1)
            .collect();
        syncs.sort_unstable();
        // What can contradict a wrong flow: whatever the damaged capture
        // holds, damaged packets included.
        let mut evidence: Vec<u64> = damaged_marks
            .iter()
            .filter(|m| m.0 == id && m.2 != Mark::Sync)
            .map(|m| m.1)
            .collect();
        evidence.extend(errors.iter().filter(|e| e.0 == id).map(|e| e.1));
        evidence.sort_unstable();
        let unjudged = damage.restart.map_or(0..0, |r| {
            let synced = clean
                .events
                .iter()
                .find(|e| e.id == id && matches!(e.kind, EventKind::TraceOn { .. }))
                .map_or(0, |e| e.offset);
            r..r + synced
        });
        let judged: Vec<Event> = damaged
            .iter()
            .filter(|e| e.id != id || !unjudged.contains(&e.offset))
            .copied()
            .collect();
        for s in stretches(clean.events, &judged, id, RECONVERGED, &damage.place) {
            tally.add(classify(&s, &syncs, &evidence));
        }
    }
    tally
}

/// Bytes `[pos, pos + removed)` of `base` replaced by `inserted`.
fn splice(
    mode: &'static str,
    spec: &CaptureSpec,
    base: &[u8],
    pos: usize,
    removed: usize,
    inserted: Vec<u8>,
) -> Damage {
    let mut bytes = base.to_vec();
    let n = inserted.len() as u64;
    bytes.splice(pos..pos + removed, inserted);
    let (pos, removed) = (pos as u64, removed as u64);
    Damage {
        lost: pos..pos + removed,
        place: Box::new(move |c| {
            Some(if c < pos {
                c
            } else if c < pos + removed {
                // Lost with the bytes: missing where they were.
                pos
            } else {
                c - removed + n
            })
        }),
        ..Damage::new(mode, spec, bytes)
    }
}

/// `trials` damaged versions of `case` in each local mode, made as
/// `local_damage` makes them (with other random draws).
pub fn local_damages(case: &Case, trials: usize) -> Vec<Damage> {
    let mut out = Vec::new();
    let (unit, spec, bytes) = (case.unit, &case.spec, &case.bytes);
    for kind in [Local::Drop, Local::Insert, Local::Flip] {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ case.name.len() as u64 ^ kind as u64);
        for _ in 0..trials {
            let pos = rng.below(bytes.len() / unit - 8) * unit + rng.below(unit);
            let n = unit * (1 + rng.below(4));
            out.push(match kind {
                Local::Drop => splice("dropped bytes", spec, bytes, pos, n, Vec::new()),
                Local::Insert => {
                    let garbage = (0..n).map(|_| rng.next_u64() as u8).collect();
                    splice("inserted garbage", spec, bytes, pos, 0, garbage)
                }
                Local::Flip => {
                    let mut bytes = bytes.clone();
                    for _ in 0..=rng.below(4) {
                        bytes[pos + rng.below(16)] ^= 1 << rng.below(8);
                    }
                    Damage::new("flipped bits", spec, bytes)
                }
            });
        }
    }
    out
}

/// `trials` truncated and `trials` wrapped versions of `case`.
pub fn cut_damages(case: &Case, trials: usize) -> Vec<Damage> {
    let mut out = Vec::new();
    let len = case.bytes.len();
    let mut rng = Rng(0x5851_F42D_4C95_7F2D ^ case.name.len() as u64);
    for _ in 0..trials {
        let cut = 64 + rng.below(len - 128);
        let end = cut as u64;
        out.push(Damage {
            place: Box::new(move |c| (c < end).then_some(c)),
            ..Damage::new("truncation", &case.spec, case.bytes[..cut].to_vec())
        });
        // A circular buffer read from its write pointer, as in
        // `wrapped_circular_buffer_starting_mid_packet`.
        let k = (64 + rng.below(len - 128)) / case.unit * case.unit;
        let mut bytes = case.bytes[k..].to_vec();
        bytes.extend_from_slice(&case.bytes[..k]);
        let (k, first) = (k as u64, (len as u64) - k as u64);
        out.push(Damage {
            restart: Some(first),
            place: Box::new(move |c| Some(if c >= k { c - k } else { c + first })),
            ..Damage::new("wrapped buffer", &case.spec, bytes)
        });
    }
    out
}

/// A formatted (memory-layout) capture's payload written again as a TPIU
/// stream, with the spec that reads it.
pub fn tpiu_stream(case: &Case) -> (CaptureSpec, Vec<u8>) {
    let mut deformat = Deformatter::new(FrameMode::Memory);
    let mut formatter = Formatter::new(FrameMode::Continuous);
    let mut events: Vec<FrameEvent> = deformat.feed(&case.bytes).collect();
    events.extend(deformat.finish());
    for ev in &events {
        if let FrameEvent::Data(run) = ev {
            formatter.push(run.id, run.data());
        }
    }
    let mut spec = case.spec.clone();
    spec.layout = FrameMode::Continuous;
    (spec, formatter.finish())
}

/// The formatted buffer of `case` re-framed as a TPIU stream (as in
/// `tpiu_stream_loses_and_regains_frame_sync`), how to read it, and
/// `trials` versions of it that lose 1 to 15 bytes.
pub fn tpiu_damages(case: &Case, trials: usize) -> (CaptureSpec, Vec<u8>, Vec<Damage>) {
    let (spec, stream) = tpiu_stream(case);
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let damages = (0..trials)
        .map(|_| {
            let pos = 256 + rng.below(stream.len() - 1024);
            let n = 1 + rng.below(15);
            splice("TPIU frame sync loss", &spec, &stream, pos, n, Vec::new())
        })
        .collect();
    (spec, stream, damages)
}

/// The snapshot `dir` read with wrong configurations: another context ID
/// size, the cycle-accurate flag flipped, and (for a single capture file)
/// the other protocol.
pub fn wrong_configurations(dir: &Path) -> Vec<Damage> {
    let clean = resolve(dir, &SourceFlags::default()).expect("snapshot");
    let spec = &clean.captures[0];
    let bytes = std::fs::read(&spec.path).expect("capture");
    let cycle_accurate = spec.sources.iter().any(|s| s.regs.etmcr & 1 << 12 != 0);
    let mut flags = vec![
        SourceFlags {
            context_id_bytes: Some(4),
            ..SourceFlags::default()
        },
        SourceFlags {
            cycle_accurate: Some(!cycle_accurate),
            ..SourceFlags::default()
        },
    ];
    let mut files = vec![dir.to_owned(), dir.to_owned()];
    if let [source] = &spec.sources[..] {
        // Given for the capture file alone, as a user describing a raw
        // file would.
        let other = if source.protocol == Protocol::Ptm {
            Protocol::Etmv3
        } else {
            Protocol::Ptm
        };
        flags.push(SourceFlags {
            protocol: Some(other),
            ..SourceFlags::default()
        });
        files.push(spec.path.clone());
    }
    flags
        .iter()
        .zip(files)
        .map(|(f, file)| {
            let input = resolve(&file, f).expect("input");
            Damage::new("wrong configuration", &input.captures[0], bytes.clone())
        })
        .collect()
}
