"""Read a Perfetto trace with the official protobuf schema (the `perfetto`
Python package) and check it the way a consumer sees it.

Usage: perfetto_check.py TRACE_FILE [TRACE_PROCESSOR_SHELL]

Checks, failing with exit status 1 and a message:
- every packet is on one trusted sequence; the first one clears the
  incremental state; every packet that uses an interned name says it
  needs that state;
- every track is declared once before use; parents are declared tracks;
- every interned name id resolves to a name sent earlier on the sequence;
- per track, timestamps never go backwards, every slice end closes an open
  slice, and no slice is left open; slices and instants are named;
  counter values (counter events, and the extra counter values other
  events carry) only go to counter tracks.

Prints a JSON summary on standard output: for each track (by name) its
kind, parent name, slices [name, begin, end, depth], instants [name, ts]
and counter values [ts, value]; and "descriptors", every track in order
of declaration with its kind, name, process and thread IDs (process and
thread tracks) and number of slices. With a trace_processor_shell path, also
loads the trace in Perfetto's trace processor and adds "tp_slices", the
number of slices it finds.
"""

import json
import sys

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import (
    Trace,
    TracePacket,
    TrackEvent,
)

CLEARED = TracePacket.SequenceFlags.Value("SEQ_INCREMENTAL_STATE_CLEARED")
NEEDS = TracePacket.SequenceFlags.Value("SEQ_NEEDS_INCREMENTAL_STATE")


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def main():
    with open(sys.argv[1], "rb") as f:
        trace = Trace.FromString(f.read())
    if not trace.packet:
        fail("no packets")
    seq = None
    names = {}
    tracks = {}
    stacks = {}
    last_ts = {}
    state_valid = False
    for i, p in enumerate(trace.packet):
        if not p.HasField("trusted_packet_sequence_id"):
            fail(f"packet {i}: no sequence id")
        if seq is None:
            seq = p.trusted_packet_sequence_id
        elif p.trusted_packet_sequence_id != seq:
            fail(f"packet {i}: sequence id changed")
        if i == 0 and not (p.sequence_flags & CLEARED):
            fail("first packet does not clear the incremental state")
        if p.sequence_flags & CLEARED:
            names = {}
            state_valid = True
        for n in p.interned_data.event_names:
            if n.iid in names:
                fail(f"packet {i}: name id {n.iid} interned twice")
            names[n.iid] = n.name
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.uuid in tracks:
                fail(f"packet {i}: track {d.uuid} declared twice")
            if d.HasField("thread"):
                kind, name = "thread", d.thread.thread_name
            elif d.HasField("process"):
                kind, name = "process", d.process.process_name
            elif d.HasField("counter"):
                kind, name = "counter", d.name
            else:
                kind, name = "track", d.name
            parent = None
            if d.HasField("parent_uuid"):
                if d.parent_uuid not in tracks:
                    fail(f"packet {i}: parent {d.parent_uuid} undeclared")
                parent = tracks[d.parent_uuid]["name"]
            pid = tid = None
            if kind == "thread":
                pid, tid = d.thread.pid, d.thread.tid
            elif kind == "process":
                pid = d.process.pid
            tracks[d.uuid] = {
                "name": name,
                "pid": pid,
                "tid": tid,
                "kind": kind,
                "parent": parent,
                "unit": d.counter.unit_name if kind == "counter" else None,
                "slices": [],
                "instants": [],
                "counters": [],
            }
            stacks[d.uuid] = []
        if p.HasField("track_event"):
            e = p.track_event
            if e.HasField("name_iid") and (
                not (p.sequence_flags & NEEDS) or not state_valid
            ):
                fail(f"packet {i}: interned name without valid incremental state")
            if e.track_uuid not in tracks:
                fail(f"packet {i}: event on undeclared track {e.track_uuid}")
            t = tracks[e.track_uuid]
            ts = p.timestamp
            if ts < last_ts.get(e.track_uuid, 0):
                fail(f"packet {i}: time goes backwards on {t['name']}")
            last_ts[e.track_uuid] = ts
            name = None
            if e.HasField("name_iid"):
                if e.name_iid not in names:
                    fail(f"packet {i}: name id {e.name_iid} not interned")
                name = names[e.name_iid]
            elif e.HasField("name"):
                name = e.name
            stack = stacks[e.track_uuid]
            if e.type == TrackEvent.TYPE_SLICE_BEGIN:
                if not name or t["kind"] == "counter":
                    fail(f"packet {i}: unnamed slice or slice on a counter")
                stack.append((name, ts, len(stack)))
            elif e.type == TrackEvent.TYPE_SLICE_END:
                if not stack:
                    fail(f"packet {i}: unbalanced slice end on {t['name']}")
                n, begin, depth = stack.pop()
                t["slices"].append([n, begin, ts, depth])
            elif e.type == TrackEvent.TYPE_INSTANT:
                if not name or t["kind"] == "counter":
                    fail(f"packet {i}: unnamed instant or instant on a counter")
                t["instants"].append([name, ts])
            elif e.type == TrackEvent.TYPE_COUNTER:
                if t["kind"] != "counter":
                    fail(f"packet {i}: counter value on {t['name']}")
                if e.HasField("double_counter_value"):
                    t["counters"].append([ts, e.double_counter_value])
                else:
                    t["counters"].append([ts, e.counter_value])
            else:
                fail(f"packet {i}: unexpected event type {e.type}")
            # Counter values carried by the event (sampled at its time).
            if len(e.extra_counter_track_uuids) != len(e.extra_counter_values):
                fail(f"packet {i}: extra counter tracks and values differ in number")
            for uuid, value in zip(e.extra_counter_track_uuids, e.extra_counter_values):
                c = tracks.get(uuid)
                if c is None or c["kind"] != "counter":
                    fail(f"packet {i}: extra counter value on a track that is not a counter")
                if ts < last_ts.get(uuid, 0):
                    fail(f"packet {i}: time goes backwards on {c['name']}")
                last_ts[uuid] = ts
                c["counters"].append([ts, value])
    for uuid, stack in stacks.items():
        if stack:
            fail(f"track {tracks[uuid]['name']}: {len(stack)} slices left open")
    out = {
        "tracks": {t["name"]: t for t in tracks.values()},
        "descriptors": [
            {
                "kind": t["kind"],
                "name": t["name"],
                "parent": t["parent"],
                "pid": t["pid"],
                "tid": t["tid"],
                "slices": len(t["slices"]),
            }
            for t in tracks.values()
        ],
    }
    if len(sys.argv) > 2:
        from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

        tp = TraceProcessor(
            trace=sys.argv[1], config=TraceProcessorConfig(bin_path=sys.argv[2])
        )
        rows = tp.query("select count(*) as n from slice")
        out["tp_slices"] = next(iter(rows)).n
        tp.close()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
