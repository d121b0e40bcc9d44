"""Reading traces back: spans of a trace or a glidein, services, operations, counts."""

from __future__ import annotations

import collections
import sqlite3
import threading
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans

from .connections import Connections
from .values import attributes_to_dict, normalize_trace_id, span_to_dict

#: (resource id, service, resource attributes, ScopeSpans) of one stored chunk.
ChunkRow = Tuple[int, str, Dict[str, Any], ScopeSpans]


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

    def chunks(self, trace_id: bytes, resource_ids: Optional[Sequence[int]] = None) -> Iterator[Tuple[int, ScopeSpans]]:
        """(resource id, ScopeSpans) of each chunk of a trace, oldest first."""
        sql = "SELECT resource_id, body FROM chunks WHERE trace_id = ?"
        params: List[Any] = [trace_id]
        if resource_ids is not None:
            sql += f" AND resource_id IN ({','.join('?' * len(resource_ids))})"
            params.extend(resource_ids)
        for resource_id, body in self._conn().execute(sql + " ORDER BY id", params).fetchall():
            yield resource_id, ScopeSpans.FromString(body)

    def _with_resources(self, chunks: Iterable[Tuple[int, ScopeSpans]]) -> List[ChunkRow]:
        conn = self._conn()
        out = []
        for resource_id, ss in chunks:
            service, attrs = self.resources.get(conn, resource_id)
            out.append((resource_id, service, attrs, ss))
        return out

    def trace_chunks(self, trace_id: "str | bytes") -> List[ChunkRow]:
        """A trace as stored: (resource id, service, resource attributes, ScopeSpans) per chunk."""
        raw = normalize_trace_id(trace_id)
        return [] if raw is None else self._with_resources(self.chunks(raw))

    def get_trace(self, trace_id: "str | bytes") -> List[Dict[str, Any]]:
        """All spans of a trace as plain dicts, sorted by start time ([] if unknown)."""
        return span_dicts(self.trace_chunks(trace_id))

    def get_trace_otlp(self, trace_id: "str | bytes") -> List[Tuple[Resource, str, List[ScopeSpans]]]:
        """A trace as OTLP messages: [(resource, resource schema_url, [ScopeSpans...])]."""
        raw = normalize_trace_id(trace_id)
        if raw is None:
            return []
        conn = self._conn()
        by_resource: "collections.OrderedDict[int, List[ScopeSpans]]" = collections.OrderedDict()
        for resource_id, ss in self.chunks(raw):
            by_resource.setdefault(resource_id, []).append(ss)
        out = []
        for resource_id, scope_spans in by_resource.items():
            row = conn.execute("SELECT body, schema_url FROM resources WHERE id = ?", (resource_id,)).fetchone()
            resource = Resource.FromString(row[0]) if row else Resource()
            out.append((resource, row[1] if row else "", scope_spans))
        return out

    def glidein_chunks(self, glidein_uuid: str) -> List[ChunkRow]:
        """Every chunk emitted under one glidein's resource(s), in all its traces."""
        conn = self._conn()
        resource_ids = [
            r[0] for r in conn.execute("SELECT id FROM resources WHERE glidein_uuid = ?", (glidein_uuid,))
        ]
        if not resource_ids:
            return []
        marks = ",".join("?" * len(resource_ids))
        trace_ids = [
            r[0] for r in conn.execute(
                f"SELECT DISTINCT trace_id FROM trace_resources WHERE resource_id IN ({marks})", resource_ids
            )
        ]
        out: List[ChunkRow] = []
        for trace_id in trace_ids:
            out.extend(self._with_resources(self.chunks(trace_id, resource_ids)))
        return out

    def glidein_spans(self, glidein_uuid: str) -> List[Dict[str, Any]]:
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


def span_dicts(chunks: Iterable[ChunkRow]) -> List[Dict[str, Any]]:
    """The spans of stored chunks as the dicts of ``span_to_dict``, parents before children on ties."""
    out: List[Dict[str, Any]] = []
    for resource_id, service, resource, ss in chunks:
        scope, scope_version = ss.scope.name, ss.scope.version
        for s in ss.spans:
            out.append(span_to_dict(s, service, resource, scope, scope_version, resource_id))
    out.sort(key=lambda d: (d["start_ns"], -d["end_ns"]))
    return out
