"""Which operations a trace holds and when their spans start: ``trace_ops`` and ``operations.max_spread_ns``.

Jaeger's search by service, operation and window asks for traces with a span
of that operation *starting in the window*; ``gwtrace analyze --source
jaeger=URL`` pages through a period that way, by each glidein's root span.
Answering it from the chunks meant decoding every trace that merely overlaps
the window (hours-long glideins overlap many windows) and walking the
one-sided chunk index.  So each (trace, service, name, kind) row keeps the
earliest and latest start of its spans, indexed by (service, name,
min_start_ns), and each operation the widest such spread it has shown: a span
starting in [a, b] then lies in a trace whose min_start_ns is in
[a - spread, b], a range bounded on both sides, and a row whose earliest or
latest start is itself in the window needs no decoding at all.

Written by ingest (one upsert per operation a chunk widens), by the rebuild of
a trace whose spans were replaced, and by the migration of older stores.
"""

from __future__ import annotations

import sqlite3
from typing import Dict, Iterable, List, Optional, Tuple

from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans

#: (span name, kind) -> [earliest start, latest start] of its spans, in one chunk or trace
Ranges = Dict[Tuple[str, int], List[int]]
#: (service, span name, kind)
Operation = Tuple[str, str, int]

UPSERT = """
INSERT INTO trace_ops (trace_id, service, name, kind, min_start_ns, max_start_ns) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (trace_id, service, name, kind) DO UPDATE SET
    min_start_ns = min(min_start_ns, excluded.min_start_ns),
    max_start_ns = max(max_start_ns, excluded.max_start_ns)
RETURNING min_start_ns, max_start_ns
"""

_RAISE_SPREAD = ("UPDATE operations SET max_spread_ns = max(max_spread_ns, ?)"
                 " WHERE service = ? AND name = ? AND kind = ?")


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


def store_ranges(conn: sqlite3.Connection, trace_id: bytes, service: str, ranges: Ranges,
                 known: Dict[Operation, Tuple[int, int]], spreads: Dict[Operation, int]) -> None:
    """Widen the trace's rows with one chunk's ranges; raise an operation's spread when the trace widened it.

    ``known`` (the trace's rows as last written, possibly incomplete) and
    ``spreads`` (a lower bound of each operation's stored spread) only skip
    statements that would change nothing: the SQL takes min/max itself.
    """
    for (name, kind), (lo, hi) in sorted(ranges.items()):
        op = (service, name, kind)
        had = known.get(op)
        if had is not None and had[0] <= lo and hi <= had[1]:
            continue
        row = conn.execute(UPSERT, (trace_id, service, name, kind, lo, hi)).fetchone()
        known[op] = (row[0], row[1])
        spread = row[1] - row[0]
        if spread > spreads.get(op, 0):
            conn.execute(_RAISE_SPREAD, (spread, service, name, kind))
            spreads[op] = spread


def rebuild(conn: sqlite3.Connection, trace_id: Optional[bytes] = None) -> None:
    """(Re)write the trace_ops rows of one trace, or of every trace, from the stored chunks.

    The caller has deleted the rows it rebuilds.  Chunks are read in trace
    order, so memory holds one trace's ranges at a time.
    """
    sql = "SELECT c.trace_id, r.service, c.body FROM chunks c JOIN resources r ON r.id = c.resource_id"
    params: Tuple[bytes, ...] = ()
    if trace_id is not None:
        sql, params = sql + " WHERE c.trace_id = ?", (trace_id,)
    spreads: Dict[Operation, int] = {}
    current: Optional[bytes] = None
    per_service: Dict[str, Ranges] = {}
    for tid, service, body in conn.execute(sql + " ORDER BY c.trace_id, c.id", params):
        if tid != current:
            _write(conn, current, per_service, spreads)
            current, per_service = tid, {}
        spans = ScopeSpans.FromString(body).spans
        ranges_of([s.name for s in spans], [s.kind for s in spans], [s.start_time_unix_nano for s in spans],
                  per_service.setdefault(service, {}))
    _write(conn, current, per_service, spreads)
    conn.executemany("INSERT OR IGNORE INTO operations (service, name, kind) VALUES (?, ?, ?)", list(spreads))
    conn.executemany(_RAISE_SPREAD, [(spread, *op) for op, spread in spreads.items()])


def _write(conn: sqlite3.Connection, trace_id: Optional[bytes], per_service: Dict[str, Ranges],
           spreads: Dict[Operation, int]) -> None:
    """Insert one trace's rows and note each operation's widest spread."""
    if trace_id is None:
        return
    rows = []
    for service, ranges in per_service.items():
        for (name, kind), (lo, hi) in ranges.items():
            rows.append((trace_id, service, name, kind, lo, hi))
            op = (service, name, kind)
            spreads[op] = max(spreads.get(op, 0), hi - lo)
    conn.executemany("INSERT INTO trace_ops (trace_id, service, name, kind, min_start_ns, max_start_ns)"
                     " VALUES (?, ?, ?, ?, ?, ?)", rows)
