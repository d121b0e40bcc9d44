"""Reading traces back: spans of a trace or a glidein, services, operations, counts.

What one answer reads is bounded (``ReadBudget``): spans arrive from untrusted
nodes, and a trace may hold more than any answer can build (a 64 MB chunk of
33 million attributes, stored before the ingest limits, took 8.6 GB to read
and died).  Chunks are read oldest first until the budget is spent; the lists
returned then say why they stop (``ReadList.cut``), and every reader shows it.
"""

from __future__ import annotations

import collections
import sqlite3
import threading
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans

from . import limits
from .connections import Connections
from .values import attributes_to_dict, normalize_trace_id, span_to_dict

#: (resource id, service, resource attributes, ScopeSpans) of one stored chunk.
ChunkRow = Tuple[int, str, Dict[str, Any], ScopeSpans]

#: Spans one answer reads at most (a 10,000-span trace takes ~30 MB and 0.6 s as Jaeger JSON).
MAX_READ_SPANS = 20_000
#: What decoding the chunks of one answer may cost (``limits.decode_cost``); also bounds what is built
#: from them, since a span's Jaeger or dict form grows with its attributes as its decode cost does.
MAX_READ_COST = 32 << 20


class ReadBudget:
    """What one answer may still read; ``cut`` says why it stopped (None: nothing was left out)."""

    def __init__(self, spans: Optional[int] = None, cost: Optional[int] = None) -> None:
        self.spans = MAX_READ_SPANS if spans is None else spans
        self.cost = MAX_READ_COST if cost is None else cost
        self.cut: Optional[str] = None
        self.skipped_spans = 0

    def fits(self, n_spans: int, cost: int) -> bool:
        """Take a chunk of ``n_spans`` spans costing ``cost`` if both fit; else note the cut."""
        if n_spans <= self.spans and cost <= self.cost:
            self.spans -= n_spans
            self.cost -= cost
            return True
        self.skipped_spans += n_spans
        why = "more spans than one answer holds" if n_spans > self.spans else "more than one answer may decode"
        self.cut = f"cut: {self.skipped_spans} span(s) not read, the answer would hold {why}"
        return False


class ReadList(list):  # type: ignore[type-arg]
    """A list of what was read, and ``cut``: why some was left out (None when nothing was)."""

    cut: Optional[str] = None


class ResourceCache:
    """(service, attributes) of resource rows; rows never change, so they are kept."""

    def __init__(self) -> None:
        self._rows: Dict[int, Tuple[str, Dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def get(self, conn: sqlite3.Connection, resource_id: int) -> Tuple[str, Dict[str, Any]]:
        cached = self._rows.get(resource_id)
        if cached is None:
            row = conn.execute("SELECT service, body FROM resources WHERE id = ?", (resource_id,)).fetchone()
            if row is None:
                return "unknown_service", {}
            cached = (row[0], attributes_to_dict(Resource.FromString(row[1]).attributes))
            with self._lock:
                self._rows[resource_id] = cached
        return cached


class Reader:
    """Read-only views of the store, each on the calling thread's connection."""

    def __init__(self, connections: Connections, resources: ResourceCache):
        self._connections = connections
        self.resources = resources

    def _conn(self) -> sqlite3.Connection:
        return self._connections.reader()

    def span_count(self) -> int:
        """Number of distinct spans stored."""
        return int(self._conn().execute("SELECT coalesce(sum(n_spans), 0) FROM traces").fetchone()[0])

    def trace_count(self) -> int:
        return int(self._conn().execute("SELECT count(*) FROM traces").fetchone()[0])

    def last_trace_id(self, service: Optional[str] = None) -> Optional[str]:
        """The trace whose root span (or, lacking one, earliest span) started last."""
        if service is None:
            row = self._conn().execute(
                "SELECT trace_id FROM traces ORDER BY coalesce(root_start_ns, start_ns) DESC LIMIT 1"
            ).fetchone()
        else:
            row = self._conn().execute(
                "SELECT t.trace_id FROM traces t WHERE t.trace_id IN ("
                " SELECT tr.trace_id FROM trace_resources tr JOIN resources r ON r.id = tr.resource_id"
                " WHERE r.service = ?) ORDER BY coalesce(t.root_start_ns, t.start_ns) DESC LIMIT 1",
                (service,),
            ).fetchone()
        return row[0].hex() if row else None

    def chunks(self, trace_id: bytes, resource_ids: Optional[Sequence[int]] = None,
               budget: Optional[ReadBudget] = None) -> Iterator[Tuple[int, ScopeSpans]]:
        """(resource id, ScopeSpans) of each chunk of a trace, oldest first, while ``budget`` (a fresh
        ReadBudget by default) lasts: a chunk over what is left is not read, nor any after it."""
        budget = budget if budget is not None else ReadBudget()
        sql = "SELECT id, resource_id, n_spans, length(body) FROM chunks WHERE trace_id = ?"
        params: List[Any] = [trace_id]
        if resource_ids is not None:
            sql += f" AND resource_id IN ({','.join('?' * len(resource_ids))})"
            params.extend(resource_ids)
        conn = self._conn()
        for chunk_id, resource_id, n_spans, size in conn.execute(sql + " ORDER BY id", params).fetchall():
            if budget.cut is not None or n_spans > budget.spans or size > budget.cost:
                budget.fits(n_spans, size)   # records the cut (a chunk never costs less than its size)
                continue
            body = conn.execute("SELECT body FROM chunks WHERE id = ?", (chunk_id,)).fetchone()[0]
            if budget.fits(n_spans, limits.decode_cost(body)):
                yield resource_id, ScopeSpans.FromString(body)

    def _with_resources(self, chunks: Iterable[Tuple[int, ScopeSpans]], out: Optional[ReadList] = None) -> ReadList:
        conn = self._conn()
        out = out if out is not None else ReadList()
        for resource_id, ss in chunks:
            service, attrs = self.resources.get(conn, resource_id)
            out.append((resource_id, service, attrs, ss))
        return out

    def trace_chunks(self, trace_id: "str | bytes", budget: Optional[ReadBudget] = None) -> ReadList:
        """A trace as stored: (resource id, service, resource attributes, ScopeSpans) per chunk, as much
        of it as ``budget`` allows (``ReadList.cut`` says what was left out)."""
        raw = normalize_trace_id(trace_id)
        if raw is None:
            return ReadList()
        budget = budget if budget is not None else ReadBudget()
        out = self._with_resources(self.chunks(raw, budget=budget))
        out.cut = budget.cut
        return out

    def get_trace(self, trace_id: "str | bytes") -> ReadList:
        """All spans of a trace (as much as one answer may read) as plain dicts, sorted by start time
        ([] if unknown)."""
        return span_dicts(self.trace_chunks(trace_id))

    def get_trace_otlp(self, trace_id: "str | bytes") -> ReadList:
        """A trace as OTLP messages: [(resource, resource schema_url, [ScopeSpans...])] (``cut`` as above)."""
        raw = normalize_trace_id(trace_id)
        if raw is None:
            return ReadList()
        conn = self._conn()
        budget = ReadBudget()
        by_resource: "collections.OrderedDict[int, List[ScopeSpans]]" = collections.OrderedDict()
        for resource_id, ss in self.chunks(raw, budget=budget):
            by_resource.setdefault(resource_id, []).append(ss)
        out = ReadList()
        out.cut = budget.cut
        for resource_id, scope_spans in by_resource.items():
            row = conn.execute("SELECT body, schema_url FROM resources WHERE id = ?", (resource_id,)).fetchone()
            resource = Resource.FromString(row[0]) if row else Resource()
            out.append((resource, row[1] if row else "", scope_spans))
        return out

    def glidein_chunks(self, glidein_uuid: str) -> ReadList:
        """Every chunk emitted under one glidein's resource(s), in all its traces (as much as one answer
        may read: ``cut`` as above)."""
        conn = self._conn()
        resource_ids = [
            r[0] for r in conn.execute("SELECT id FROM resources WHERE glidein_uuid = ?", (glidein_uuid,))
        ]
        if not resource_ids:
            return ReadList()
        marks = ",".join("?" * len(resource_ids))
        trace_ids = [
            r[0] for r in conn.execute(
                f"SELECT DISTINCT trace_id FROM trace_resources WHERE resource_id IN ({marks})", resource_ids
            )
        ]
        budget = ReadBudget()
        out = ReadList()
        for trace_id in trace_ids:
            self._with_resources(self.chunks(trace_id, resource_ids, budget), out)
        out.cut = budget.cut
        return out

    def glidein_spans(self, glidein_uuid: str) -> ReadList:
        """Every span emitted under one glidein's resource(s), in all its traces, by start time."""
        return span_dicts(self.glidein_chunks(glidein_uuid))

    def glideins(self, limit: int = 100) -> List[Dict[str, Any]]:
        """Recently seen glideins: uuid, service, site, entry and time range."""
        conn = self._conn()
        rows = conn.execute(
            "SELECT r.glidein_uuid, min(r.id), min(r.service), min(c.start_ns), max(c.end_ns)"
            " FROM resources r JOIN chunks c ON c.resource_id = r.id"
            " WHERE r.glidein_uuid IS NOT NULL GROUP BY r.glidein_uuid ORDER BY max(c.start_ns) DESC LIMIT ?",
            (limit,),
        ).fetchall()
        out = []
        for uuid, resource_id, service, start_ns, end_ns in rows:
            attrs = self.resources.get(conn, resource_id)[1]
            out.append({"uuid": uuid, "service": service, "start_ns": start_ns, "end_ns": end_ns,
                        "site": attrs.get("glidein.site"), "entry": attrs.get("glidein.entry")})
        return out

    def services(self) -> List[str]:
        rows = self._conn().execute("SELECT DISTINCT service FROM operations ORDER BY service").fetchall()
        return [r[0] for r in rows]

    def operations(self, service: str, kind: Optional[int] = None) -> List[Tuple[str, int]]:
        """Distinct (span name, kind) seen for a service."""
        sql = "SELECT name, kind FROM operations WHERE service = ?"
        params: List[Any] = [service]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        return [(r[0], r[1]) for r in self._conn().execute(sql + " ORDER BY name, kind", params)]

    def resource_attribute_values(self, key: str, limit: int = 1000) -> List[str]:
        """Distinct values of a resource attribute (e.g. glidein.site), for search forms."""
        rows = self._conn().execute(
            "SELECT DISTINCT value FROM resource_attrs WHERE key = ? ORDER BY value LIMIT ?", (key, limit)
        ).fetchall()
        return [r[0] for r in rows]


def span_dicts(chunks: Iterable[ChunkRow]) -> ReadList:
    """The spans of stored chunks as the dicts of ``span_to_dict``, parents before children on ties
    (``cut`` is the chunks' own)."""
    out = ReadList()
    out.cut = getattr(chunks, "cut", None)
    for resource_id, service, resource, ss in chunks:
        scope, scope_version = ss.scope.name, ss.scope.version
        for s in ss.spans:
            out.append(span_to_dict(s, service, resource, scope, scope_version, resource_id))
    out.sort(key=lambda d: (d["start_ns"], -d["end_ns"]))
    return out
