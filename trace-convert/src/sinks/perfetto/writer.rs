//! A streaming writer of Perfetto's native trace format.
//!
//! The file is a protobuf `Trace`: a sequence of `TracePacket`s (field 1,
//! each length-delimited), which is also what the writer streams, one
//! packet at a time, so the output never has to be held in memory. Tracks
//! are declared with `TrackDescriptor` packets; slices, instants and
//! counters are `TrackEvent` packets whose names are interned (each
//! distinct name is sent once, in the `InternedData` of the first packet
//! that uses it, and referred to by number afterwards).
//!
//! All packets belong to one trusted packet sequence. The first packet
//! clears the sequence's incremental state; every packet that uses an
//! interned name says it needs that state (slice ends and counter values
//! do not). Timestamps are nanoseconds.
//!
//! Output is gathered in an internal buffer and handed to the writer in
//! large chunks; after the first use of each name and track nothing is
//! allocated per event.
//!
//! ```
//! use trace_convert::sinks::perfetto::writer::PerfettoWriter;
//!
//! let mut w = PerfettoWriter::new(Vec::new());
//! let cpu = w.thread_track(1, 1, "cpu0")?;
//! w.begin(cpu, 1_000, "main")?;
//! w.instant(cpu, 1_500, "irq")?;
//! let work = w.name("work")?; // looked up once, used many times
//! w.begin_named(cpu, 1_600, work)?;
//! w.end(cpu, 1_700)?;
//! w.end(cpu, 2_000)?;
//! let bytes = w.finish()?;
//! assert!(!bytes.is_empty());
//! # Ok::<(), std::io::Error>(())
//! ```

mod wire;

use std::io::{self, Write};

/// Field numbers and enum values of the Perfetto trace protos
/// (`perfetto/trace/trace_packet.proto`, `track_event/*.proto`).
mod proto {
    /// `Trace.packet`.
    pub const TRACE_PACKET: u32 = 1;

    /// `TracePacket.timestamp`.
    pub const PACKET_TIMESTAMP: u32 = 8;
    /// `TracePacket.trusted_packet_sequence_id`.
    pub const PACKET_SEQUENCE_ID: u32 = 10;
    /// `TracePacket.track_event`.
    pub const PACKET_TRACK_EVENT: u32 = 11;
    /// `TracePacket.interned_data`.
    pub const PACKET_INTERNED_DATA: u32 = 12;
    /// `TracePacket.sequence_flags`.
    pub const PACKET_SEQUENCE_FLAGS: u32 = 13;
    /// `TracePacket.track_descriptor`.
    pub const PACKET_TRACK_DESCRIPTOR: u32 = 60;

    /// `SEQ_INCREMENTAL_STATE_CLEARED`.
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    /// `SEQ_NEEDS_INCREMENTAL_STATE`.
    pub const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;

    /// `TrackDescriptor.uuid`.
    pub const TRACK_UUID: u32 = 1;
    /// `TrackDescriptor.name`.
    pub const TRACK_NAME: u32 = 2;
    /// `TrackDescriptor.process`.
    pub const TRACK_PROCESS: u32 = 3;
    /// `TrackDescriptor.thread`.
    pub const TRACK_THREAD: u32 = 4;
    /// `TrackDescriptor.parent_uuid`.
    pub const TRACK_PARENT_UUID: u32 = 5;
    /// `TrackDescriptor.counter`.
    pub const TRACK_COUNTER: u32 = 8;

    /// `ProcessDescriptor.pid`.
    pub const PROCESS_PID: u32 = 1;
    /// `ProcessDescriptor.process_name`.
    pub const PROCESS_NAME: u32 = 6;
    /// `ThreadDescriptor.pid`.
    pub const THREAD_PID: u32 = 1;
    /// `ThreadDescriptor.tid`.
    pub const THREAD_TID: u32 = 2;
    /// `ThreadDescriptor.thread_name`.
    pub const THREAD_NAME: u32 = 5;
    /// `CounterDescriptor.unit_name`.
    pub const COUNTER_UNIT_NAME: u32 = 6;

    /// `TrackEvent.type`.
    pub const EVENT_TYPE: u32 = 9;
    /// `TrackEvent.name_iid`.
    pub const EVENT_NAME_IID: u32 = 10;
    /// `TrackEvent.name` (a name not interned).
    pub const EVENT_NAME: u32 = 23;
    /// `TrackEvent.track_uuid`.
    pub const EVENT_TRACK_UUID: u32 = 11;
    /// `TrackEvent.counter_value`.
    pub const EVENT_COUNTER_VALUE: u32 = 30;
    /// `TrackEvent.double_counter_value`.
    pub const EVENT_DOUBLE_COUNTER_VALUE: u32 = 44;
    /// `TrackEvent.extra_counter_track_uuids`.
    pub const EVENT_EXTRA_COUNTER_TRACK_UUIDS: u32 = 31;
    /// `TrackEvent.extra_counter_values`.
    pub const EVENT_EXTRA_COUNTER_VALUES: u32 = 12;
    /// `TrackEvent.debug_annotations`.
    pub const EVENT_DEBUG_ANNOTATIONS: u32 = 4;
    /// `DebugAnnotation.name`.
    pub const ANNOTATION_NAME: u32 = 10;
    /// `DebugAnnotation.uint_value`.
    pub const ANNOTATION_UINT: u32 = 3;

    /// `TYPE_SLICE_BEGIN`.
    pub const TYPE_SLICE_BEGIN: u64 = 1;
    /// `TYPE_SLICE_END`.
    pub const TYPE_SLICE_END: u64 = 2;
    /// `TYPE_INSTANT`.
    pub const TYPE_INSTANT: u64 = 3;
    /// `TYPE_COUNTER`.
    pub const TYPE_COUNTER: u64 = 4;

    /// `InternedData.event_names`.
    pub const INTERNED_EVENT_NAMES: u32 = 2;
    /// `EventName.iid`.
    pub const NAME_IID: u32 = 1;
    /// `EventName.name`.
    pub const NAME_NAME: u32 = 2;
}

/// The sequence ID of every packet this writer emits.
const SEQUENCE_ID: u64 = 1;

/// Names given as text (instants, slices by name) are interned up to this
/// many; later new ones are written in their events: a trace that names
/// every event differently (ITM text of damaged or random bytes) keeps
/// the writer's memory bounded. Names from [`PerfettoWriter::name`]
/// (function names) are always interned.
const MAX_TEXT_NAMES: usize = 1 << 16;

/// Track UUIDs are this base plus the track's index. Any 64-bit values
/// unique in the trace will do, and every event names its track: small
/// ones keep that to two bytes.
const UUID_BASE: u64 = 1;

/// The buffer is handed to the writer when it grows past this size.
const FLUSH_AT: usize = 1 << 16;

/// A track declared in a [`PerfettoWriter`]; pass it to the event methods
/// of the writer that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TrackId(u32);

impl TrackId {
    /// The track's UUID in the trace (`TrackDescriptor.uuid`).
    #[must_use]
    pub const fn uuid(self) -> u64 {
        UUID_BASE + self.0 as u64
    }
}

/// An event name interned in a [`PerfettoWriter`] by
/// [`PerfettoWriter::name`]; pass it to the event methods of the writer
/// that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NameId(u64);

/// An event's name: none, one to look up (and intern when new), or one
/// already interned.
#[derive(Debug, Clone, Copy)]
enum EventName<'a> {
    None,
    Text(&'a str),
    Interned(NameId),
}

/// What the writer remembers of a track.
#[derive(Debug, Clone, Copy, Default)]
struct TrackState {
    /// Slices begun and not yet ended.
    open: u32,
    /// Latest timestamp of an event on the track.
    last_ts: u64,
    /// A counter track (takes only counter values).
    counter: bool,
}

/// Streams a Perfetto trace into `W`; see the [module](self) docs.
#[derive(Debug)]
pub struct PerfettoWriter<W: Write> {
    out: W,
    /// Encoded packets waiting to be written.
    buf: Vec<u8>,
    /// The packet being built.
    packet: Vec<u8>,
    /// A message nested in the packet (track descriptor, track event).
    msg: Vec<u8>,
    /// A message nested one level deeper (process/thread/counter
    /// descriptor, interned event name).
    inner: Vec<u8>,
    /// Interned event names and their IDs (from 1).
    names: crate::fast_map::FastMap<String, u64>,
    tracks: Vec<TrackState>,
    /// No packet written yet: the next one clears the incremental state.
    first: bool,
}

impl<W: Write> PerfettoWriter<W> {
    /// A writer with no tracks yet.
    pub fn new(out: W) -> PerfettoWriter<W> {
        PerfettoWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 1024),
            packet: Vec::with_capacity(256),
            msg: Vec::with_capacity(128),
            inner: Vec::with_capacity(128),
            names: crate::fast_map::FastMap::default(),
            tracks: Vec::new(),
            first: true,
        }
    }

    /// Declare a process track (a process in Perfetto's UI: the parent of
    /// its thread tracks, found by `pid`).
    ///
    /// # Errors
    ///
    /// The error of the underlying writer.
    pub fn process_track(&mut self, pid: i32, name: &str) -> io::Result<TrackId> {
        let id = self.new_track(false)?;
        self.inner.clear();
        wire::int(&mut self.inner, proto::PROCESS_PID, i64::from(pid));
        wire::bytes(&mut self.inner, proto::PROCESS_NAME, name.as_bytes());
        self.msg.clear();
        wire::uint(&mut self.msg, proto::TRACK_UUID, id.uuid());
        wire::bytes(&mut self.msg, proto::TRACK_PROCESS, &self.inner);
        self.emit_descriptor()?;
        Ok(id)
    }

    /// Declare a thread track of process `pid`.
    ///
    /// # Errors
    ///
    /// The error of the underlying writer.
    pub fn thread_track(&mut self, pid: i32, tid: i32, name: &str) -> io::Result<TrackId> {
        let id = self.new_track(false)?;
        self.inner.clear();
        wire::int(&mut self.inner, proto::THREAD_PID, i64::from(pid));
        wire::int(&mut self.inner, proto::THREAD_TID, i64::from(tid));
        wire::bytes(&mut self.inner, proto::THREAD_NAME, name.as_bytes());
        self.msg.clear();
        wire::uint(&mut self.msg, proto::TRACK_UUID, id.uuid());
        wire::bytes(&mut self.msg, proto::TRACK_THREAD, &self.inner);
        self.emit_descriptor()?;
        Ok(id)
    }

    /// Declare a named track for slices and instants, optionally nested
    /// under `parent` (a process, thread or other track).
    ///
    /// # Errors
    ///
    /// `InvalidInput` if `parent` is not a track of this writer; the error
    /// of the underlying writer.
    pub fn track(&mut self, name: &str, parent: Option<TrackId>) -> io::Result<TrackId> {
        if let Some(p) = parent {
            self.state(p)?;
        }
        let id = self.new_track(false)?;
        self.msg.clear();
        wire::uint(&mut self.msg, proto::TRACK_UUID, id.uuid());
        wire::bytes(&mut self.msg, proto::TRACK_NAME, name.as_bytes());
        if let Some(p) = parent {
            wire::uint(&mut self.msg, proto::TRACK_PARENT_UUID, p.uuid());
        }
        self.emit_descriptor()?;
        Ok(id)
    }

    /// Declare a counter track, with an optional unit name (`"cycles"`,
    /// `"instructions"`, ...), optionally nested under `parent`.
    ///
    /// # Errors
    ///
    /// `InvalidInput` if `parent` is not a track of this writer; the error
    /// of the underlying writer.
    pub fn counter_track(
        &mut self,
        name: &str,
        unit: Option<&str>,
        parent: Option<TrackId>,
    ) -> io::Result<TrackId> {
        if let Some(p) = parent {
            self.state(p)?;
        }
        let id = self.new_track(true)?;
        self.inner.clear();
        if let Some(u) = unit {
            wire::bytes(&mut self.inner, proto::COUNTER_UNIT_NAME, u.as_bytes());
        }
        self.msg.clear();
        wire::uint(&mut self.msg, proto::TRACK_UUID, id.uuid());
        wire::bytes(&mut self.msg, proto::TRACK_NAME, name.as_bytes());
        if let Some(p) = parent {
            wire::uint(&mut self.msg, proto::TRACK_PARENT_UUID, p.uuid());
        }
        wire::bytes(&mut self.msg, proto::TRACK_COUNTER, &self.inner);
        self.emit_descriptor()?;
        Ok(id)
    }

    /// Open a slice named `name` on `track` at `ts_ns`. Slices on one track
    /// nest: each [`end`](Self::end) closes the latest open one.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for an unknown or counter track; the error of the
    /// underlying writer.
    pub fn begin(&mut self, track: TrackId, ts_ns: u64, name: &str) -> io::Result<()> {
        self.open_slice(track, ts_ns, EventName::Text(name), None)
    }

    /// The interned form of `name`, for [`begin_named`](Self::begin_named):
    /// a caller that opens slices of a few names many times looks each
    /// name up once. A new name is sent in a packet of its own.
    ///
    /// # Errors
    ///
    /// The error of the underlying writer.
    pub fn name(&mut self, name: &str) -> io::Result<NameId> {
        if let Some(&iid) = self.names.get(name) {
            return Ok(NameId(iid));
        }
        self.start_packet(true);
        let iid = self.intern(name);
        self.end_packet()?;
        Ok(NameId(iid))
    }

    /// [`begin`](Self::begin) with a name from [`name`](Self::name).
    ///
    /// # Errors
    ///
    /// As [`begin`](Self::begin); also `InvalidInput` for a name this
    /// writer did not intern.
    pub fn begin_named(&mut self, track: TrackId, ts_ns: u64, name: NameId) -> io::Result<()> {
        self.check_name(name)?;
        self.open_slice(track, ts_ns, EventName::Interned(name), None)
    }

    /// [`begin_named`](Self::begin_named), the same packet also giving
    /// counter track `counter` the value `value` at `ts_ns`
    /// (`TrackEvent.extra_counter_values`: a counter sampled where a slice
    /// begins or ends costs a few bytes instead of a packet of its own).
    ///
    /// # Errors
    ///
    /// As [`begin_named`](Self::begin_named); also `InvalidInput` when
    /// `counter` is not a counter track of this writer.
    pub fn begin_named_counted(
        &mut self,
        track: TrackId,
        ts_ns: u64,
        name: NameId,
        counter: TrackId,
        value: i64,
    ) -> io::Result<()> {
        self.check_name(name)?;
        self.counter_track_state(counter, ts_ns)?;
        let extra = Some(Extra {
            track: counter,
            value,
        });
        self.open_slice(track, ts_ns, EventName::Interned(name), extra)
    }

    /// `InvalidInput` unless this writer interned `name`.
    fn check_name(&self, name: NameId) -> io::Result<()> {
        if name.0 == 0 || name.0 > self.names.len() as u64 {
            return Err(invalid("unknown interned name"));
        }
        Ok(())
    }

    fn open_slice(
        &mut self,
        track: TrackId,
        ts_ns: u64,
        name: EventName<'_>,
        extra: Option<Extra>,
    ) -> io::Result<()> {
        let st = self.slice_track(track, ts_ns)?;
        st.open += 1;
        self.emit_event(Ev {
            track,
            ts_ns,
            kind: proto::TYPE_SLICE_BEGIN,
            name,
            value: None,
            extra,
        })
    }

    /// Close the latest open slice of `track` at `ts_ns`.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for an unknown or counter track, or a track with no
    /// open slice; the error of the underlying writer.
    pub fn end(&mut self, track: TrackId, ts_ns: u64) -> io::Result<()> {
        self.close_slice(track, ts_ns, None)
    }

    /// [`end`](Self::end), the same packet also giving counter track
    /// `counter` the value `value` at `ts_ns` (see
    /// [`begin_named_counted`](Self::begin_named_counted)).
    ///
    /// # Errors
    ///
    /// As [`end`](Self::end); also `InvalidInput` when `counter` is not a
    /// counter track of this writer.
    pub fn end_counted(
        &mut self,
        track: TrackId,
        ts_ns: u64,
        counter: TrackId,
        value: i64,
    ) -> io::Result<()> {
        self.counter_track_state(counter, ts_ns)?;
        let extra = Some(Extra {
            track: counter,
            value,
        });
        self.close_slice(track, ts_ns, extra)
    }

    fn close_slice(&mut self, track: TrackId, ts_ns: u64, extra: Option<Extra>) -> io::Result<()> {
        let st = self.slice_track(track, ts_ns)?;
        if st.open == 0 {
            return Err(invalid("slice end on a track with no open slice"));
        }
        st.open -= 1;
        self.emit_event(Ev {
            track,
            ts_ns,
            kind: proto::TYPE_SLICE_END,
            name: EventName::None,
            value: None,
            extra,
        })
    }

    /// A zero-duration event named `name` on `track` at `ts_ns`.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for an unknown or counter track; the error of the
    /// underlying writer.
    pub fn instant(&mut self, track: TrackId, ts_ns: u64, name: &str) -> io::Result<()> {
        self.slice_track(track, ts_ns)?;
        self.emit_event(Ev {
            track,
            ts_ns,
            kind: proto::TYPE_INSTANT,
            name: EventName::Text(name),
            value: None,
            extra: None,
        })
    }

    /// An instant standing for `count` identical ones (see
    /// [`crate::sinks::coalesce`]): named `name`, with a debug annotation
    /// `count` (the trace processor's `debug.count` argument); a count of
    /// 1 is a plain [`instant`](Self::instant).
    ///
    /// # Errors
    ///
    /// As [`instant`](Self::instant).
    pub fn instant_counted(
        &mut self,
        track: TrackId,
        ts_ns: u64,
        name: &str,
        count: u64,
    ) -> io::Result<()> {
        if count == 1 {
            return self.instant(track, ts_ns, name);
        }
        self.slice_track(track, ts_ns)?;
        self.start_packet(true);
        wire::uint(&mut self.packet, proto::PACKET_TIMESTAMP, ts_ns);
        let iid = self.intern_text(name);
        self.msg.clear();
        wire::uint(&mut self.msg, proto::EVENT_TYPE, proto::TYPE_INSTANT);
        wire::uint(&mut self.msg, proto::EVENT_TRACK_UUID, track.uuid());
        match iid {
            Some(iid) => wire::uint(&mut self.msg, proto::EVENT_NAME_IID, iid),
            None => wire::bytes(&mut self.msg, proto::EVENT_NAME, name.as_bytes()),
        }
        self.inner.clear();
        wire::bytes(&mut self.inner, proto::ANNOTATION_NAME, b"count");
        wire::uint(&mut self.inner, proto::ANNOTATION_UINT, count);
        wire::bytes(&mut self.msg, proto::EVENT_DEBUG_ANNOTATIONS, &self.inner);
        wire::bytes(&mut self.packet, proto::PACKET_TRACK_EVENT, &self.msg);
        self.end_packet()
    }

    /// An integer counter value on a counter track.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for an unknown track or one that is not a counter
    /// track; the error of the underlying writer.
    pub fn counter(&mut self, track: TrackId, ts_ns: u64, value: i64) -> io::Result<()> {
        self.counter_track_state(track, ts_ns)?;
        self.emit_event(Ev {
            track,
            ts_ns,
            kind: proto::TYPE_COUNTER,
            name: EventName::None,
            value: Some(CounterValue::Int(value)),
            extra: None,
        })
    }

    /// A floating-point counter value on a counter track.
    ///
    /// # Errors
    ///
    /// As [`counter`](Self::counter).
    pub fn counter_f64(&mut self, track: TrackId, ts_ns: u64, value: f64) -> io::Result<()> {
        self.counter_track_state(track, ts_ns)?;
        self.emit_event(Ev {
            track,
            ts_ns,
            kind: proto::TYPE_COUNTER,
            name: EventName::None,
            value: Some(CounterValue::Double(value)),
            extra: None,
        })
    }

    /// Number of slices open on `track` (0 for an unknown track).
    #[must_use]
    pub fn open_slices(&self, track: TrackId) -> u32 {
        self.tracks.get(track.0 as usize).map_or(0, |t| t.open)
    }

    /// Close the slices still open (each at the latest timestamp seen on
    /// its track), write everything out, flush, and return the writer.
    ///
    /// # Errors
    ///
    /// The error of the underlying writer.
    pub fn finish(mut self) -> io::Result<W> {
        for i in 0..self.tracks.len() {
            let st = self.tracks[i];
            let track = TrackId(i as u32);
            for _ in 0..st.open {
                self.emit_event(Ev {
                    track,
                    ts_ns: st.last_ts,
                    kind: proto::TYPE_SLICE_END,
                    name: EventName::None,
                    value: None,
                    extra: None,
                })?;
            }
            self.tracks[i].open = 0;
        }
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()?;
        Ok(self.out)
    }

    fn new_track(&mut self, counter: bool) -> io::Result<TrackId> {
        let index = u32::try_from(self.tracks.len())
            .ok()
            .filter(|&i| i < u32::MAX)
            .ok_or_else(|| invalid("too many tracks"))?;
        self.tracks.push(TrackState {
            counter,
            ..TrackState::default()
        });
        Ok(TrackId(index))
    }

    fn state(&mut self, track: TrackId) -> io::Result<&mut TrackState> {
        self.tracks
            .get_mut(track.0 as usize)
            .ok_or_else(|| invalid("unknown track"))
    }

    fn slice_track(&mut self, track: TrackId, ts_ns: u64) -> io::Result<&mut TrackState> {
        let st = self.state(track)?;
        if st.counter {
            return Err(invalid("slice or instant on a counter track"));
        }
        st.last_ts = st.last_ts.max(ts_ns);
        Ok(st)
    }

    fn counter_track_state(&mut self, track: TrackId, ts_ns: u64) -> io::Result<()> {
        let st = self.state(track)?;
        if !st.counter {
            return Err(invalid("counter value on a track that is not a counter"));
        }
        st.last_ts = st.last_ts.max(ts_ns);
        Ok(())
    }

    /// Packet header fields common to every packet.
    fn start_packet(&mut self, needs_state: bool) {
        self.packet.clear();
        wire::uint(&mut self.packet, proto::PACKET_SEQUENCE_ID, SEQUENCE_ID);
        let mut flags = 0;
        if self.first {
            flags |= proto::SEQ_INCREMENTAL_STATE_CLEARED;
            self.first = false;
        }
        if needs_state {
            flags |= proto::SEQ_NEEDS_INCREMENTAL_STATE;
        }
        if flags != 0 {
            wire::uint(&mut self.packet, proto::PACKET_SEQUENCE_FLAGS, flags);
        }
    }

    /// Emit `msg` as a track descriptor packet.
    fn emit_descriptor(&mut self) -> io::Result<()> {
        self.start_packet(false);
        wire::bytes(&mut self.packet, proto::PACKET_TRACK_DESCRIPTOR, &self.msg);
        self.end_packet()
    }

    /// Always inlined: at each call the kind of event and which of the
    /// optional fields it has are known, and the common packet becomes
    /// straight-line code (the rest is in [`emit_built`](Self::emit_built)).
    #[inline(always)]
    fn emit_event(&mut self, ev: Ev<'_>) -> io::Result<()> {
        let Ev {
            track,
            ts_ns,
            kind,
            name,
            value,
            extra,
        } = ev;
        // The common packet (no new name to intern, not the first packet,
        // no double) is written in one piece in place at the end of the
        // buffer, its lengths worked out first: building it in nested
        // buffers, or on the stack, and copying it had each copy wait on
        // the bytes just stored.
        let iid = match name {
            EventName::None => Some(None),
            EventName::Interned(n) => Some(Some(n.0)),
            EventName::Text(n) => self.names.get(n).map(|&i| Some(i)),
        };
        if let (Some(iid), false, None | Some(CounterValue::Int(_))) = (iid, self.first, value) {
            let int = match value {
                Some(CounterValue::Int(v)) => Some(v as u64),
                _ => None,
            };
            let msg = wire::uint_len(proto::EVENT_TYPE, kind)
                + wire::uint_len(proto::EVENT_TRACK_UUID, track.uuid())
                + iid.map_or(0, |i| wire::uint_len(proto::EVENT_NAME_IID, i))
                + int.map_or(0, |v| wire::uint_len(proto::EVENT_COUNTER_VALUE, v))
                + extra.map_or(0, |x| {
                    wire::uint_len(proto::EVENT_EXTRA_COUNTER_TRACK_UUIDS, x.track.uuid())
                        + wire::uint_len(proto::EVENT_EXTRA_COUNTER_VALUES, x.value as u64)
                });
            // Only a packet that uses an interned name needs the
            // sequence's incremental state.
            let flags = iid.map(|_| proto::SEQ_NEEDS_INCREMENTAL_STATE);
            let packet = wire::uint_len(proto::PACKET_SEQUENCE_ID, SEQUENCE_ID)
                + flags.map_or(0, |f| wire::uint_len(proto::PACKET_SEQUENCE_FLAGS, f))
                + wire::uint_len(proto::PACKET_TIMESTAMP, ts_ns)
                + wire::len_head(proto::PACKET_TRACK_EVENT, msg)
                + msg;
            wire::append_with(
                &mut self.buf,
                #[inline(always)]
                |b| {
                    b.head(proto::TRACE_PACKET, packet);
                    b.uint(proto::PACKET_SEQUENCE_ID, SEQUENCE_ID);
                    if let Some(f) = flags {
                        b.uint(proto::PACKET_SEQUENCE_FLAGS, f);
                    }
                    b.uint(proto::PACKET_TIMESTAMP, ts_ns);
                    b.head(proto::PACKET_TRACK_EVENT, msg);
                    b.uint(proto::EVENT_TYPE, kind);
                    b.uint(proto::EVENT_TRACK_UUID, track.uuid());
                    if let Some(i) = iid {
                        b.uint(proto::EVENT_NAME_IID, i);
                    }
                    if let Some(v) = int {
                        b.uint(proto::EVENT_COUNTER_VALUE, v);
                    }
                    if let Some(x) = extra {
                        b.uint(proto::EVENT_EXTRA_COUNTER_TRACK_UUIDS, x.track.uuid());
                        b.uint(proto::EVENT_EXTRA_COUNTER_VALUES, x.value as u64);
                    }
                },
            );
            if self.buf.len() >= FLUSH_AT {
                self.out.write_all(&self.buf)?;
                self.buf.clear();
            }
            return Ok(());
        }
        self.emit_built(ev)
    }

    /// [`emit_event`](Self::emit_event) for any packet: built field by
    /// field in the nested buffers, interning a new name on the way.
    #[inline(never)]
    fn emit_built(&mut self, ev: Ev<'_>) -> io::Result<()> {
        self.start_packet(!matches!(ev.name, EventName::None));
        wire::uint(&mut self.packet, proto::PACKET_TIMESTAMP, ev.ts_ns);
        let iid = match ev.name {
            EventName::None => None,
            EventName::Interned(n) => Some(n.0),
            EventName::Text(n) => self.intern_text(n),
        };
        self.msg.clear();
        wire::uint(&mut self.msg, proto::EVENT_TYPE, ev.kind);
        wire::uint(&mut self.msg, proto::EVENT_TRACK_UUID, ev.track.uuid());
        match (iid, ev.name) {
            (Some(iid), _) => wire::uint(&mut self.msg, proto::EVENT_NAME_IID, iid),
            (None, EventName::Text(n)) => {
                wire::bytes(&mut self.msg, proto::EVENT_NAME, n.as_bytes());
            }
            (None, _) => {}
        }
        match ev.value {
            Some(CounterValue::Int(v)) => wire::int(&mut self.msg, proto::EVENT_COUNTER_VALUE, v),
            Some(CounterValue::Double(v)) => {
                wire::double(&mut self.msg, proto::EVENT_DOUBLE_COUNTER_VALUE, v);
            }
            None => {}
        }
        if let Some(x) = ev.extra {
            wire::uint(
                &mut self.msg,
                proto::EVENT_EXTRA_COUNTER_TRACK_UUIDS,
                x.track.uuid(),
            );
            wire::int(&mut self.msg, proto::EVENT_EXTRA_COUNTER_VALUES, x.value);
        }
        wire::bytes(&mut self.packet, proto::PACKET_TRACK_EVENT, &self.msg);
        self.end_packet()
    }

    /// The interning ID of `name`; a new name is added to the packet being
    /// built as interned data.
    /// [`intern`](Self::intern) for a name given as text, unless
    /// [`MAX_TEXT_NAMES`] are interned already and `name` is not one:
    /// then `None`, and the event carries the name itself.
    fn intern_text(&mut self, name: &str) -> Option<u64> {
        if let Some(&iid) = self.names.get(name) {
            return Some(iid);
        }
        (self.names.len() < MAX_TEXT_NAMES).then(|| self.intern(name))
    }

    fn intern(&mut self, name: &str) -> u64 {
        if let Some(&iid) = self.names.get(name) {
            return iid;
        }
        let iid = self.names.len() as u64 + 1;
        self.names.insert(name.to_owned(), iid);
        self.inner.clear();
        wire::uint(&mut self.inner, proto::NAME_IID, iid);
        wire::bytes(&mut self.inner, proto::NAME_NAME, name.as_bytes());
        self.msg.clear();
        wire::bytes(&mut self.msg, proto::INTERNED_EVENT_NAMES, &self.inner);
        wire::bytes(&mut self.packet, proto::PACKET_INTERNED_DATA, &self.msg);
        iid
    }

    /// Append the packet being built to the output as a `Trace.packet`.
    fn end_packet(&mut self) -> io::Result<()> {
        wire::bytes(&mut self.buf, proto::TRACE_PACKET, &self.packet);
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// One `TrackEvent` packet to write.
#[derive(Debug, Clone, Copy)]
struct Ev<'a> {
    track: TrackId,
    ts_ns: u64,
    /// `TrackEvent.type`.
    kind: u64,
    name: EventName<'a>,
    value: Option<CounterValue>,
    extra: Option<Extra>,
}

/// A counter value carried by a slice event (`extra_counter_*`).
#[derive(Debug, Clone, Copy)]
struct Extra {
    track: TrackId,
    value: i64,
}

#[derive(Debug, Clone, Copy)]
enum CounterValue {
    Int(i64),
    Double(f64),
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misuse_is_an_error() {
        let mut w = PerfettoWriter::new(Vec::new());
        let t = w.track("t", None).expect("track");
        let c = w.counter_track("c", None, None).expect("counter");
        assert!(w.end(t, 1).is_err(), "no open slice");
        assert!(w.begin(c, 1, "x").is_err(), "slice on a counter");
        assert!(w.counter(t, 1, 3).is_err(), "counter on a slice track");
        assert!(w.track("u", Some(TrackId(99))).is_err(), "unknown parent");
        w.begin(t, 5, "open").expect("begin");
        assert_eq!(w.open_slices(t), 1);
        let mut other = PerfettoWriter::new(Vec::new());
        let foreign = other.name("a").and_then(|_| other.name("b")).expect("name");
        assert!(
            w.begin_named(t, 6, foreign).is_err(),
            "name of another writer"
        );
        let open = w.name("open").expect("name");
        assert_eq!(w.name("open").expect("name"), open, "interned once");
        w.begin_named(t, 6, open).expect("begin by name");
        assert_eq!(w.open_slices(t), 2);
        assert!(
            w.begin_named_counted(t, 7, open, t, 1).is_err(),
            "counted on a track that is not a counter"
        );
        assert!(w.end_counted(c, 7, c, 1).is_err(), "slice end on a counter");
        assert_eq!(w.open_slices(t), 2, "nothing opened or closed");
        w.begin_named_counted(t, 7, open, c, 3)
            .expect("counted begin");
        w.end_counted(t, 8, c, 2).expect("counted end");
        assert_eq!(w.open_slices(t), 2);
        assert!(!w.finish().expect("finish").is_empty());
    }

    /// Occurrences of `needle` in `hay`.
    fn occurrences(hay: &[u8], needle: &[u8]) -> usize {
        hay.windows(needle.len()).filter(|w| *w == needle).count()
    }

    #[test]
    fn text_names_past_the_cap_are_written_in_their_events() {
        let mut w = PerfettoWriter::new(Vec::new());
        let t = w.track("t", None).expect("track");
        let extra = 100;
        for i in 0..MAX_TEXT_NAMES + extra {
            w.instant(t, i as u64, &format!("port 1: <{i}>"))
                .expect("instant");
        }
        // Names interned before the cap still are; later ones are not.
        w.instant(t, 1 << 20, "port 1: <0>").expect("instant");
        let last = format!("port 1: <{}>", MAX_TEXT_NAMES + extra - 1);
        w.instant(t, 1 << 21, &last).expect("instant");
        w.instant_counted(t, 1 << 22, &last, 3).expect("instant");
        assert_eq!(w.names.len(), MAX_TEXT_NAMES);
        let out = w.finish().expect("finish");
        assert_eq!(occurrences(&out, b"port 1: <0>"), 1, "interned once");
        assert_eq!(occurrences(&out, last.as_bytes()), 3, "in each event");
        // Past the cap a name goes in `TrackEvent.name` (field 23, length
        // delimited: tag 23 << 3 | 2 = 0xBA 0x01).
        let mut inline = vec![0xBA, 0x01, last.len() as u8];
        inline.extend_from_slice(last.as_bytes());
        assert_eq!(occurrences(&out, &inline), 3);
    }
}
