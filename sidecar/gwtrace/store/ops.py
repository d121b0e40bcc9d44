"""Which operations a trace holds and when their spans start: ``trace_ops`` and ``operations.max_lag_ns``.

Jaeger's search by service, operation and window asks for traces with a span
of that operation *starting in the window*; ``gwtrace analyze --source
jaeger=URL`` pages through a period that way, by each glidein's root span.
Answered from the chunks, that meant decoding every trace that merely
overlaps the window (hours-long glideins overlap many windows), found through
an index bounded on one side only.  So each (trace, service, name, kind) row
keeps the earliest and latest start of its spans, and each operation the
largest lag of its latest start behind its trace's start: a span starting in
[a, b] lies in a trace that started in [a - lag, b], a range of the
``traces_start`` index bounded on both sides (for a root span the lag is 0),
and a row whose earliest or latest start is itself in the window needs no
decoding at all.

No index is added: ``trace_ops`` stays keyed by trace first, so a new trace's
rows still land in one B-tree page (ingest writes pages, not rows).  Written
by ingest (one statement for a new trace, an upsert per operation a later
chunk widens), by the rebuild of a trace whose spans were replaced, and by the
migration of older stores.
"""

from __future__ import annotations

import sqlite3
from typing import Dict, Iterable, List, Optional, Tuple

from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans

#: (span name, kind) -> [earliest start, latest start] of its spans, in one chunk or trace
Ranges = Dict[Tuple[str, int], List[int]]
#: (service, span name, kind)
Operation = Tuple[str, str, int]

#: a new row (a rebuild, whose caller deleted the trace's rows: a second row for a key is an error)
INSERT = "INSERT INTO trace_ops (trace_id, service, name, kind, min_start_ns, max_start_ns) VALUES (?, ?, ?, ?, ?, ?)"
#: a row, or the row's range widened
UPSERT = INSERT + """
ON CONFLICT (trace_id, service, name, kind) DO UPDATE SET
    min_start_ns = min(min_start_ns, excluded.min_start_ns),
    max_start_ns = max(max_start_ns, excluded.max_start_ns)
"""
#: the same, answering the row's merged range
UPSERT_RETURNING = UPSERT + "RETURNING min_start_ns, max_start_ns"

_RAISE_LAG = "UPDATE operations SET max_lag_ns = max(max_lag_ns, ?) WHERE service = ? AND name = ? AND kind = ?"


def ranges_of(names: Iterable[str], kinds: Iterable[int], starts: Iterable[int], into: Optional[Ranges] = None) -> Ranges:
    """The start range of each (name, kind) among some spans (merged into ``into`` if given)."""
    out: Ranges = {} if into is None else into
    for key, start in zip(zip(names, kinds), starts):
        got = out.get(key)
        if got is None:
            out[key] = [start, start]
        elif start < got[0]:
            got[0] = start
        elif start > got[1]:
            got[1] = start
    return out


class ChunkOps:
    """One chunk's operations as ingest writes them: whose trace, which service, which start ranges."""

    __slots__ = ("trace_id", "service", "ranges", "fresh", "trace_start", "moved")

    def __init__(self, trace_id: bytes, service: str, ranges: Ranges, fresh: bool, trace_start: int,
                 moved: bool) -> None:
        self.trace_id, self.service, self.ranges = trace_id, service, ranges
        #: the trace had no chunk before this one (so it has no trace_ops row either)
        self.fresh = fresh
        #: the trace's start once this chunk is merged, and whether this chunk may have moved it earlier
        self.trace_start, self.moved = trace_start, moved


def store_ranges(conn: sqlite3.Connection, chunk: ChunkOps, known: Dict[Operation, Tuple[int, int]],
                 lags: Dict[Operation, int]) -> None:
    """Widen the trace's rows with one chunk's ranges; raise an operation's lag when the trace raised it.

    A fresh trace's rows are plain inserts (one statement, as for most
    chunks). Otherwise each range the trace's ``known`` rows (as last written,
    possibly incomplete) do not cover is an upsert that returns the merged
    range. ``lags`` is a lower bound of each operation's stored lag: it only
    skips updates that would change nothing, since the SQL takes min/max itself.
    """
    service = chunk.service
    if chunk.fresh:
        rows = [(chunk.trace_id, service, name, kind, lo, hi) for (name, kind), (lo, hi) in chunk.ranges.items()]
        conn.executemany(UPSERT, rows)
        merged = [((service, name, kind), (lo, hi)) for _, _, name, kind, lo, hi in rows]
    else:
        merged = []
        for (name, kind), (lo, hi) in sorted(chunk.ranges.items()):
            had = known.get((service, name, kind))
            if had is None or lo < had[0] or hi > had[1]:
                row = conn.execute(UPSERT_RETURNING, (chunk.trace_id, service, name, kind, lo, hi)).fetchone()
                merged.append(((service, name, kind), (row[0], row[1])))
    for op, lo_hi in merged:
        known[op] = lo_hi
    if chunk.moved:  # every operation of the trace now lags further behind its start
        merged = [((r[0], r[1], r[2]), (r[3], r[4])) for r in conn.execute(
            "SELECT service, name, kind, min_start_ns, max_start_ns FROM trace_ops WHERE trace_id = ?",
            (chunk.trace_id,))]
    for op, (_, hi) in merged:
        if hi - chunk.trace_start > lags.get(op, 0):
            conn.execute(_RAISE_LAG, (hi - chunk.trace_start, *op))
            lags[op] = hi - chunk.trace_start


def rebuild(conn: sqlite3.Connection, trace_id: Optional[bytes] = None) -> None:
    """(Re)write the trace_ops rows of one trace, or of every trace, from the stored chunks.

    The caller has deleted the rows it rebuilds.  Chunks are read in trace
    order, so memory holds one trace's ranges at a time.
    """
    sql = "SELECT c.trace_id, r.service, c.body FROM chunks c JOIN resources r ON r.id = c.resource_id"
    params: Tuple[bytes, ...] = ()
    if trace_id is not None:
        sql, params = sql + " WHERE c.trace_id = ?", (trace_id,)
    lags: Dict[Operation, int] = {}
    current: Optional[bytes] = None
    per_service: Dict[str, Ranges] = {}
    for tid, service, body in conn.execute(sql + " ORDER BY c.trace_id, c.id", params):
        if tid != current:
            _write(conn, current, per_service, lags)
            current, per_service = tid, {}
        spans = ScopeSpans.FromString(body).spans
        ranges_of([s.name for s in spans], [s.kind for s in spans], [s.start_time_unix_nano for s in spans],
                  per_service.setdefault(service, {}))
    _write(conn, current, per_service, lags)
    conn.executemany("INSERT OR IGNORE INTO operations (service, name, kind) VALUES (?, ?, ?)", list(lags))
    conn.executemany(_RAISE_LAG, [(lag, *op) for op, lag in lags.items()])


def _write(conn: sqlite3.Connection, trace_id: Optional[bytes], per_service: Dict[str, Ranges],
           lags: Dict[Operation, int]) -> None:
    """Insert one trace's rows and note each operation's largest lag behind the trace's start."""
    if trace_id is None:
        return
    start = min(lo for ranges in per_service.values() for lo, _ in ranges.values())
    rows = []
    for service, ranges in per_service.items():
        for (name, kind), (lo, hi) in ranges.items():
            rows.append((trace_id, service, name, kind, lo, hi))
            op = (service, name, kind)
            lags[op] = max(lags.get(op, 0), hi - start)
    conn.executemany(INSERT, rows)
