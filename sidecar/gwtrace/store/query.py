"""Trace search: trace-level conditions from the indexes, span-level ones by decoding candidates.

Trace-level conditions (service, operation, resource attributes, status,
trace duration, time window on span start times) are answered from the
summary tables.  ``tags`` and span duration bounds follow Jaeger: one span of
the trace (of ``service``/``operation`` if given) must satisfy all of them,
where a tag may be on the span, its resource or one of its events; only the
chunks that may hold such a span are decoded.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from .reader import ResourceCache
from .tags import span_has_tags


@dataclass
class TraceQuery:
    """The conditions of one search; see ``TraceStore.find_traces``."""

    service: Optional[str] = None
    operation: Optional[str] = None
    span_kind: Optional[int] = None
    resource_attrs: Dict[str, str] = field(default_factory=dict)
    tags: Dict[str, str] = field(default_factory=dict)
    start_ns: Optional[int] = None
    end_ns: Optional[int] = None
    min_duration_ns: Optional[int] = None
    max_duration_ns: Optional[int] = None
    min_trace_duration_ns: Optional[int] = None
    status: Optional[int] = None
    limit: int = 20

    @property
    def windowed(self) -> bool:
        return self.start_ns is not None or self.end_ns is not None

    @property
    def span_level(self) -> bool:
        """Whether a single span must meet conditions the summary tables do not hold.

        As in Jaeger, an operation with a time window asks for a span *of that
        operation* starting in the window (not any span of a trace that has the
        operation somewhere): that is what lets a client page through a period
        by each trace's root, however long the traces are.
        """
        return (bool(self.tags) or self.min_duration_ns is not None or self.max_duration_ns is not None
                or (self.operation is not None and self.windowed))

    @property
    def op_range_decides(self) -> bool:
        """Whether a trace_ops row's start range can settle a match alone: the operation's
        service, name and kind are the row's key, and no other span-level condition is asked."""
        return (not self.tags and not self.resource_attrs and self.min_duration_ns is None
                and self.max_duration_ns is None)

    def root_matches(self, root_name: Optional[str], root_service: Optional[str],
                     root_start_ns: Optional[int]) -> bool:
        """The common case answered from the summary: the root is the operation and starts in the window."""
        if self.tags or self.min_duration_ns is not None or self.max_duration_ns is not None or self.span_kind:
            return False
        if root_name != self.operation or root_start_ns is None or self.resource_attrs:
            return False
        if self.service is not None and root_service != self.service:
            return False
        return not ((self.start_ns is not None and root_start_ns < self.start_ns)
                    or (self.end_ns is not None and root_start_ns > self.end_ns))

    def span_matches(self, s: Span, resource_attrs: Dict[str, Any]) -> bool:
        """Does one decoded span meet every span-level condition?"""
        if self.operation is not None and s.name != self.operation:
            return False
        if self.span_kind is not None and s.kind != self.span_kind:
            return False
        start = s.start_time_unix_nano
        if (self.start_ns is not None and start < self.start_ns) or (self.end_ns is not None and start > self.end_ns):
            return False
        duration = s.end_time_unix_nano - start
        if self.min_duration_ns is not None and duration < self.min_duration_ns:
            return False
        if self.max_duration_ns is not None and duration > self.max_duration_ns:
            return False
        return not self.tags or span_has_tags(s, resource_attrs, self.tags)


class Where:
    """A conjunction of SQL conditions and their parameters, built up in order."""

    def __init__(self) -> None:
        self.conditions: List[str] = []
        self.params: List[Any] = []

    def add(self, condition: str, *params: Any) -> None:
        self.conditions.append(condition)
        self.params.extend(params)

    def add_in(self, column: str, values: Sequence[Any]) -> None:
        self.add(f"{column} IN ({','.join('?' * len(values))})", *values)

    def add_optional(self, condition: str, value: Any) -> None:
        """``condition`` (one ``?``) when ``value`` is given."""
        if value is not None:
            self.add(condition, value)

    def sql(self) -> str:
        return " AND ".join(self.conditions) or "1"


def _window(where: Where, alias: str, q: TraceQuery) -> None:
    """A span started in [start, end]: the summary's latest start and earliest start bound it."""
    where.add_optional(f"{alias}.max_start_ns >= ?", q.start_ns)
    where.add_optional(f"{alias}.start_ns <= ?", q.end_ns)


class TraceFinder:
    """Runs a TraceQuery against one connection."""

    def __init__(self, conn: sqlite3.Connection, resources: ResourceCache):
        self._conn = conn
        self._resources = resources

    def find(self, q: TraceQuery) -> List[Dict[str, Any]]:
        """Summaries of the most recent matching traces, newest first."""
        if q.operation is not None and q.service is not None and q.windowed:
            return self._find_by_op_window(q)
        resource_ids = self._resource_ids(q)
        if resource_ids == []:
            return []
        where = self._trace_where(q, resource_ids)
        chunk_where = self._chunk_where(q, resource_ids) if q.span_level else None
        if chunk_where is not None:
            where.add(f"t.trace_id IN (SELECT c.trace_id FROM chunks c WHERE {chunk_where.sql()})",
                      *chunk_where.params)
        sql = (
            "SELECT t.trace_id, t.start_ns, t.end_ns, t.n_spans, t.n_errors, t.status,"
            " coalesce(t.root_name, t.first_name), coalesce(t.root_service, t.first_service),"
            f" t.root_name, t.root_start_ns FROM traces t WHERE {where.sql()} ORDER BY t.start_ns DESC"
        )
        return self._page(self._conn.execute(sql, where.params).fetchall(), q, lambda row: (
            chunk_where is None or q.root_matches(row[8], row[7], row[9])
            or self._trace_has_span(row[0], chunk_where, q)))

    def _find_by_op_window(self, q: TraceQuery) -> List[Dict[str, Any]]:
        """A span of (service, operation) starting in the window, from trace_ops' start ranges (``store.ops``).

        The candidates are the traces that started in [start - the operation's
        lag, end], newest first from ``traces_start``, so a page stops at its
        limit; a trace whose rows put an earliest or latest start in the window
        matches, and only one whose spans of the operation start both before
        and after it, or a query with other span-level conditions, has its
        chunks decoded.
        """
        lag_where = Where()
        lag_where.add("service = ?", q.service)
        lag_where.add("name = ?", q.operation)
        lag_where.add_optional("kind = ?", q.span_kind)
        lag = self._conn.execute(f"SELECT max(max_lag_ns) FROM operations WHERE {lag_where.sql()}",
                                 lag_where.params).fetchone()[0]
        resource_ids = self._resource_ids(q) if q.resource_attrs else None
        if lag is None or resource_ids == []:
            return []
        on = Where()
        on.add("o.trace_id = t.trace_id")
        on.add("o.service = ?", q.service)
        on.add("o.name = ?", q.operation)
        on.add_optional("o.kind = ?", q.span_kind)
        on.add_optional("o.min_start_ns <= ?", q.end_ns)
        on.add_optional("o.max_start_ns >= ?", q.start_ns)
        where = Where()
        where.add_optional("t.start_ns >= ?", None if q.start_ns is None else q.start_ns - lag)
        where.add_optional("t.start_ns <= ?", q.end_ns)
        if resource_ids is not None:
            where.add(f"t.trace_id IN (SELECT trace_id FROM trace_resources WHERE resource_id IN"
                      f" ({','.join('?' * len(resource_ids))}))", *resource_ids)
        where.add_optional("t.status = ?", q.status)
        where.add_optional("t.end_ns - t.start_ns >= ?", q.min_trace_duration_ns)
        sql = (
            "SELECT t.trace_id, t.start_ns, t.end_ns, t.n_spans, t.n_errors, t.status,"
            " coalesce(t.root_name, t.first_name), coalesce(t.root_service, t.first_service),"
            " t.root_name, t.root_start_ns, max(o.min_start_ns), min(o.max_start_ns)"
            f" FROM traces t JOIN trace_ops o ON {on.sql()} WHERE {where.sql()}"
            " GROUP BY t.start_ns, t.trace_id ORDER BY t.start_ns DESC, t.trace_id DESC"
        )
        chunk_where = self._chunk_where(q, resource_ids)

        def matches(row: Sequence[Any]) -> bool:
            inside = q.start_ns is None or q.end_ns is None or row[10] >= q.start_ns or row[11] <= q.end_ns
            return (q.op_range_decides and inside) or q.root_matches(row[8], row[7], row[9]) \
                or self._trace_has_span(row[0], chunk_where, q)

        return self._page(self._conn.execute(sql, on.params + where.params), q, matches)

    def _page(self, rows: Iterable[Sequence[Any]], q: TraceQuery,
              matches: Callable[[Sequence[Any]], bool]) -> List[Dict[str, Any]]:
        """The summaries of the candidate rows that match, newest first, up to the query's limit."""
        out: List[Dict[str, Any]] = []
        for row in rows:
            if matches(row):
                out.append(self._summary(row))
                if len(out) >= q.limit:
                    break
        return out

    def _resource_ids(self, q: TraceQuery) -> Optional[List[int]]:
        """Resources of the service with the resource attributes; None when neither is asked."""
        if q.service is None and not q.resource_attrs:
            return None
        where = Where()
        where.add_optional("service = ?", q.service)
        for key, value in q.resource_attrs.items():
            where.add("id IN (SELECT resource_id FROM resource_attrs WHERE key = ? AND value = ?)", key, value)
        return [r[0] for r in self._conn.execute(f"SELECT id FROM resources WHERE {where.sql()}", where.params)]

    def _trace_where(self, q: TraceQuery, resource_ids: Optional[List[int]]) -> Where:
        """Conditions on ``traces t`` from the summary tables."""
        where = Where()
        if resource_ids is not None:
            marks = ",".join("?" * len(resource_ids))
            where.add(f"t.trace_id IN (SELECT trace_id FROM trace_resources WHERE resource_id IN ({marks}))",
                      *resource_ids)
        if q.operation is not None:
            op = Where()
            op.add("o.trace_id = t.trace_id")
            op.add("o.name = ?", q.operation)
            op.add_optional("o.service = ?", q.service)
            op.add_optional("o.kind = ?", q.span_kind)
            where.add(f"EXISTS (SELECT 1 FROM trace_ops o WHERE {op.sql()})", *op.params)
        _window(where, "t", q)
        where.add_optional("t.status = ?", q.status)
        where.add_optional("t.end_ns - t.start_ns >= ?", q.min_trace_duration_ns)
        return where

    def _chunk_where(self, q: TraceQuery, resource_ids: Optional[List[int]]) -> Where:
        """Conditions on ``chunks c`` that every chunk holding a matching span satisfies.

        A necessary condition only, so that just the chunks that may match get
        decoded: a span attribute's key, a span name and a status message are
        stored as UTF-8 in the chunk body, so ``instr`` on the blob rules out
        most chunks without decoding them; resource tags resolve through the
        resource_attrs index.
        """
        where = Where()
        if resource_ids is not None:
            where.add_in("c.resource_id", resource_ids)
        elif q.service is not None:
            where.add("EXISTS (SELECT 1 FROM resources r WHERE r.id = c.resource_id AND r.service = ?)", q.service)
        if q.operation is not None:
            where.add("instr(c.body, ?) > 0", q.operation.encode())
        _window(where, "c", q)
        where.add_optional("c.max_dur_ns >= ?", q.min_duration_ns)
        for key, want in q.tags.items():
            where.add(*self._tag_options(key, want))
        return where

    def _tag_options(self, key: str, want: str) -> tuple:
        """One tag as a chunk condition: any place the tag may come from, ORed."""
        options = Where()
        holders = [r[0] for r in self._conn.execute(
            "SELECT resource_id FROM resource_attrs WHERE key = ? AND value = ?", (key, want))]
        if holders:
            options.add_in("c.resource_id", holders)
        if key == "error" and want == "true" or key == "otel.status_code" and want == "ERROR":
            options.add("c.n_errors > 0")
        elif key == "otel.status_code" and want == "OK":
            options.add("c.status >= 1")
        elif key == "otel.status_description":
            options.add("instr(c.body, ?) > 0", want.encode())
        elif key == "span.kind":
            options.add("1")  # kinds are not summarised per chunk
        options.add("instr(c.body, ?) > 0", key.encode())
        return ("(" + " OR ".join(options.conditions) + ")", *options.params)

    def _trace_has_span(self, trace_id: bytes, chunk_where: Where, q: TraceQuery) -> bool:
        """Decode the trace's candidate chunks: does one span meet every span-level condition?"""
        rows = self._conn.execute(
            f"SELECT c.resource_id, c.body FROM chunks c WHERE c.trace_id = ? AND {chunk_where.sql()}",
            [trace_id, *chunk_where.params],
        ).fetchall()
        for resource_id, body in rows:
            resource_attrs = self._resources.get(self._conn, resource_id)[1]
            if any(q.span_matches(s, resource_attrs) for s in ScopeSpans.FromString(body).spans):
                return True
        return False

    def _summary(self, row: Sequence[Any]) -> Dict[str, Any]:
        trace_id = row[0]
        resources = self._conn.execute(
            "SELECT r.id, r.service, r.glidein_uuid FROM trace_resources tr JOIN resources r ON r.id = tr.resource_id"
            " WHERE tr.trace_id = ? ORDER BY r.id",
            (trace_id,),
        ).fetchall()
        summary = {
            "trace_id": trace_id.hex(),
            "start_ns": row[1],
            "end_ns": row[2],
            "span_count": row[3],
            "error_count": row[4],
            "status_code": row[5],
            "root_name": row[6],
            "root_service": row[7],
            "services": sorted({r[1] for r in resources}),
            "glidein_uuid": None,
            "site": None,
            "entry": None,
        }
        # The glidein the trace belongs to: prefer a resource of the root's service.
        glideins = sorted((r for r in resources if r[2]), key=lambda r: r[1] != row[7])
        if glideins:
            attrs = self._resources.get(self._conn, glideins[0][0])[1]
            summary["glidein_uuid"] = glideins[0][2]
            summary["site"] = attrs.get("glidein.site")
            summary["entry"] = attrs.get("glidein.entry")
        return summary
