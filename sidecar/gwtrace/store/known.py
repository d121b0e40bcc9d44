"""The writer's memory of what is stored, so that re-checks stay out of SQL.

A cache miss costs one indexed query, never a wrong answer: entries are
refreshed with the chunks written since, and everything is dropped when any
process purged (the ``generation`` counter in ``meta``).
"""

from __future__ import annotations

import collections
import sqlite3
from typing import Dict, Set, Tuple

from .chunks import split_ids

#: Traces whose span ids are remembered.
KNOWN_TRACES_MAX = 256

#: (service, span name, kind)
Operation = Tuple[str, str, int]


class TraceCache:
    """In-memory knowledge of one stored trace."""

    __slots__ = ("last_chunk", "ids", "ops", "resources")

    def __init__(self) -> None:
        self.last_chunk = 0
        self.ids: Set[bytes] = set()
        #: operation -> (earliest, latest start) as last written to trace_ops
        self.ops: Dict[Operation, Tuple[int, int]] = {}
        self.resources: Set[int] = set()


class KnownTraces:
    """Recently written traces (least recently used dropped first) and every operation seen, with its lag."""

    def __init__(self) -> None:
        self._traces: "collections.OrderedDict[bytes, TraceCache]" = collections.OrderedDict()
        #: operation -> a lower bound of its operations.max_lag_ns
        self.ops_seen: Dict[Operation, int] = {}
        self._generation = -1

    def check_generation(self, conn: sqlite3.Connection) -> None:
        """Forget everything if any process purged since we last looked."""
        generation = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
        if generation != self._generation:
            self.clear()
            self._generation = generation

    def trace(self, conn: sqlite3.Connection, trace_id: bytes) -> TraceCache:
        """What is already stored for a trace (refreshed with chunks written since)."""
        entry = self._traces.pop(trace_id, None)
        if entry is None:
            entry = TraceCache()
        for chunk_id, blob in conn.execute(
            "SELECT id, span_ids FROM chunks WHERE trace_id = ? AND id > ?", (trace_id, entry.last_chunk)
        ):
            entry.ids.update(split_ids(blob))
            entry.last_chunk = max(entry.last_chunk, chunk_id)
        self._traces[trace_id] = entry
        while len(self._traces) > KNOWN_TRACES_MAX:
            self._traces.popitem(last=False)
        return entry

    def forget(self, trace_id: bytes) -> None:
        self._traces.pop(trace_id, None)

    def clear(self) -> None:
        self._traces.clear()
        self.ops_seen.clear()
