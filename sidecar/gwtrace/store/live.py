"""The latest live snapshot per glidein, kept apart from the spans until the real ones arrive.

Why a table of its own: a snapshot's spans are *open* (no end time, attributes
so far) and are replaced every interval; mixing them into ``chunks`` would
show half-spans in traces and search, and every replacement would rewrite
the trace's summary. So ``live_snapshots`` holds one row per glidein (the
snapshot's key: its uuid, else its sidecar), replaced by each snapshot, with
what ``gwtrace now`` needs already worked out at write time (site, entry, the
phase and since when, the jobs running), and the snapshot itself (OTLP
bytes: the controller reads a job's owner there). Nothing here is
ever read as a span by traces, search or the Jaeger API.

A row goes away when the glidein's root span (``root_trace_id``,
``root_span_id``: the glidein's span if open, else the earliest top-level open
span) arrives as a real span: the writer calls ``drop_arrived`` for every
chunk it stores (one indexed look-up per chunk). A snapshot that arrives after
its root span did (the last one, raced by the final export) is not stored.
Heartbeats (``gwtrace.snapshot.unchanged``) only move ``received_ns``. A
snapshot with no open span removes the row (nothing of that glidein runs
now). A glidein silent for a week (sidecar and spans lost) is forgotten.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .connections import Connections
from .live_phase import classify, root_of
from .values import attributes_to_dict, is_root

SCOPE_NAME = "gwtrace.snapshot"
MARK = "gwtrace.snapshot"
#: A glidein silent this long (its sidecar and its spans lost) is forgotten at the next snapshot of any glidein.
FORGET_AFTER_NS = 7 * 86400 * 10**9

SCHEMA = """
CREATE TABLE IF NOT EXISTS live_snapshots (
    key           TEXT PRIMARY KEY,
    root_trace_id BLOB,
    root_span_id  BLOB,
    service       TEXT, glidein_uuid TEXT, site TEXT, entry TEXT, frontend TEXT, host TEXT,
    seq           INTEGER NOT NULL,
    taken_ns      INTEGER NOT NULL,
    received_ns   INTEGER NOT NULL,
    interval_s    REAL    NOT NULL,
    n_spans       INTEGER NOT NULL,
    phase         TEXT    NOT NULL,
    phase_since_ns INTEGER NOT NULL,
    started_ns    INTEGER,
    jobs          TEXT    NOT NULL,
    seen          TEXT    NOT NULL,
    body          BLOB    NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS live_snapshots_root ON live_snapshots (root_trace_id);
"""

#: The columns ``rows`` gives, in order (everything but the snapshot's bytes).
COLUMNS = ("key", "root_trace_id", "root_span_id", "service", "glidein_uuid", "site", "entry", "frontend", "host",
           "seq", "taken_ns", "received_ns", "interval_s", "n_spans", "phase", "phase_since_ns", "started_ns",
           "jobs")


class BadSnapshot(ValueError):
    """A request that is not a gwtrace snapshot: answered 400, never stored."""


def _meta(req: ExportTraceServiceRequest) -> Tuple[Dict[str, Any], Dict[str, Any], list]:
    """(resource attributes, scope attributes, spans) of a snapshot request, checked."""
    if len(req.resource_spans) != 1 or len(req.resource_spans[0].scope_spans) != 1:
        raise BadSnapshot("a snapshot is one ResourceSpans with one ScopeSpans")
    rs = req.resource_spans[0]
    ss = rs.scope_spans[0]
    if ss.scope.name != SCOPE_NAME:
        raise BadSnapshot(f"a snapshot's scope is {SCOPE_NAME!r}, not {ss.scope.name!r}")
    meta = attributes_to_dict(ss.scope.attributes)
    if not isinstance(meta.get("gwtrace.snapshot.key"), str) or not meta["gwtrace.snapshot.key"]:
        raise BadSnapshot("gwtrace.snapshot.key is missing")
    for span in ss.spans:
        if not any(kv.key == MARK and kv.value.bool_value for kv in span.attributes):
            raise BadSnapshot(f"span {span.name!r} lacks {MARK}=true: only snapshots are taken here")
        if len(span.trace_id) != 16 or len(span.span_id) != 8:
            raise BadSnapshot(f"span {span.name!r} has malformed ids")
    return attributes_to_dict(rs.resource.attributes), meta, list(ss.spans)


def _span(s: Any) -> Dict[str, Any]:
    attrs = attributes_to_dict(s.attributes)
    attrs.pop(MARK, None)
    return {"trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
            "parent_span_id": "" if is_root(s.parent_span_id) else s.parent_span_id.hex(),
            "name": s.name, "start_ns": s.start_time_unix_nano, "attributes": attrs}


def _arrived(conn: sqlite3.Connection, trace_id: bytes, span_id: bytes) -> bool:
    """Whether a span is stored as a real span (its chunk's id list holds it)."""
    for (blob,) in conn.execute("SELECT span_ids FROM chunks WHERE trace_id = ?", (trace_id,)):
        blob = bytes(blob)
        if any(blob[i:i + 8] == span_id for i in range(0, len(blob), 8)):
            return True
    return False


def put(conn: sqlite3.Connection, req: ExportTraceServiceRequest, now_ns: Optional[int] = None) -> bool:
    """Store a snapshot (replacing the glidein's last); False for a heartbeat of an unknown glidein."""
    resource, meta, proto_spans = _meta(req)
    key = meta["gwtrace.snapshot.key"]
    now_ns = time.time_ns() if now_ns is None else now_ns
    taken = int(meta.get("gwtrace.snapshot.taken_unix_nano") or now_ns)
    seq = int(meta.get("gwtrace.snapshot.seq") or 0)
    if meta.get("gwtrace.snapshot.unchanged"):
        cur = conn.execute("UPDATE live_snapshots SET received_ns = ?, taken_ns = ?, seq = ? WHERE key = ?",
                           (now_ns, taken, seq, key))
        return cur.rowcount > 0
    conn.execute("DELETE FROM live_snapshots WHERE received_ns < ?", (now_ns - FORGET_AFTER_NS,))
    spans = [_span(s) for s in proto_spans]
    if not spans:                  # nothing open: nothing of this glidein runs now (its spans are on their way)
        conn.execute("DELETE FROM live_snapshots WHERE key = ?", (key,))
        return True
    root = root_of(spans)
    root_ids = (bytes.fromhex(root["trace_id"]), bytes.fromhex(root["span_id"])) if root else (None, None)
    if root is not None and _arrived(conn, *root_ids):     # a late snapshot of a glidein already over
        conn.execute("DELETE FROM live_snapshots WHERE key = ?", (key,))
        return True
    old = conn.execute("SELECT phase, phase_since_ns, seen FROM live_snapshots WHERE key = ?", (key,)).fetchone()
    seen = json.loads(old[2]) if old else {}
    phase, since, jobs, seen = classify(spans, seen, (old[0], old[1]) if old else None, taken)
    job_list = [{"name": j["name"], "trace_id": j["trace_id"], "span_id": j["span_id"], "start_ns": j["start_ns"],
                 "job_id": next((str(j["attributes"][k]) for k in ("condor.job_id", "htcondor.job.id",
                                                                  "condor.job.id") if k in j["attributes"]), "")}
                for j in jobs]
    conn.execute(
        "INSERT OR REPLACE INTO live_snapshots VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (key, root_ids[0], root_ids[1], resource.get("service.name"),
         resource.get("glidein.uuid") or resource.get("service.instance.id"), resource.get("glidein.site"),
         resource.get("glidein.entry"), resource.get("glidein.client"), resource.get("host.name"), seq, taken,
         now_ns, float(meta.get("gwtrace.snapshot.interval_s") or 60.0), len(spans), phase, since,
         root["start_ns"] if root else None, json.dumps(job_list), json.dumps(seen), req.SerializeToString()))
    return True


def drop_arrived(conn: sqlite3.Connection, trace_id: bytes, span_ids: Iterable[bytes]) -> int:
    """Delete the snapshots whose root span is among a stored chunk's spans; return how many."""
    rows = conn.execute("SELECT key, root_span_id FROM live_snapshots WHERE root_trace_id = ?",
                        (trace_id,)).fetchall()
    if not rows:
        return 0
    ids = set(span_ids)
    gone = [(key,) for key, root in rows if bytes(root) in ids]
    conn.executemany("DELETE FROM live_snapshots WHERE key = ?", gone)
    return len(gone)


def rows(conn: sqlite3.Connection) -> List[Dict[str, Any]]:
    """Every kept snapshot as a dict of COLUMNS (ids as hex, jobs decoded), oldest glidein first."""
    out = []
    for row in conn.execute(f"SELECT {', '.join(COLUMNS)} FROM live_snapshots ORDER BY started_ns, key"):
        item = dict(zip(COLUMNS, row))
        for name in ("root_trace_id", "root_span_id"):
            item[name] = bytes(item[name]).hex() if item[name] is not None else None
        item["jobs"] = json.loads(item["jobs"])
        out.append(item)
    return out


def open_spans(conn: sqlite3.Connection, key: str) -> List[Dict[str, Any]]:
    """The open spans of one glidein's last snapshot (name, ids, start, attributes so far): the
    controller finds there whose job a back channel command names (controller/book.py)."""
    row = conn.execute("SELECT body FROM live_snapshots WHERE key = ?", (key,)).fetchone()
    if row is None:
        return []
    req = ExportTraceServiceRequest()
    req.ParseFromString(bytes(row[0]))
    return [_span(s) for s in req.resource_spans[0].scope_spans[0].spans]


class LiveSnapshots:
    """The live snapshots of a ``TraceStore``: each running glidein's open spans, until its root span arrives."""

    _connections: Connections

    def put_live_snapshot(self, request: ExportTraceServiceRequest, now_ns: Optional[int] = None) -> bool:
        """Keep a sidecar's snapshot of its open spans (``put``); False: a heartbeat of an unknown glidein.

        Raises ``live.BadSnapshot`` for a request that is not a gwtrace snapshot.
        """
        with self._connections.transaction() as conn:
            return put(conn, request, now_ns)

    def live_snapshots(self) -> List[Dict[str, Any]]:
        """The latest snapshot of every glidein whose real root span has not arrived yet."""
        return rows(self._connections.reader())

    def live_open_spans(self, key: str) -> List[Dict[str, Any]]:
        """The open spans of one glidein's latest snapshot (the back channel's owner check)."""
        return open_spans(self._connections.reader(), key)
