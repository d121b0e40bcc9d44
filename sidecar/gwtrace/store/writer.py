"""Writing chunks: group commit, idempotent replacement of re-sent spans, retention.

Ingest is idempotent: the store keeps one copy of each (trace id, span id),
so a sidecar that retries a batch after a lost response never duplicates
spans. Which copy (``_precedence``): a span sent again identical changes
nothing; a live span (no ``gwtrace.source=factory-logs``) replaces a span the
factory backfilled from its files, never the other way round (the live one
was timed on the node, to the µs); otherwise the later one replaces the
earlier (a sidecar's span re-sent, a glidein backfilled again from files
that grew). So the live and the backfilled spans of one glidein, which share
their ids (``factory.to_trace``), give the same stored trace in any order of
arrival. Only spans whose id is already stored are decoded for this: a chunk
of new spans, the common case, is stored as it came.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from typing import Callable, Dict, List, Set, Tuple

from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from .chunks import Chunk, Plan, chunk_of_spans, split_ids
from . import glideins, live, ops
from .connections import Connections
from .known import KnownTraces
from .schema import TRACE_UPSERT, TRACE_UPSERT_START
from .values import attributes_to_dict, tag_text

#: Resource attributes that name a glidein; the first one present wins.
GLIDEIN_UUID_KEYS = ("glidein.uuid", "service.instance.id")
#: ``gwtrace.source`` of the spans the factory makes from its files (``factory.to_trace.BACKFILLED``)
BACKFILLED = "factory-logs"

_CHUNK_COLUMNS = ("start_ns, max_start_ns, end_ns, max_dur_ns, n_spans, n_errors, status, root_name,"
                  " root_start_ns, first_name, span_ids, body")
_INSERT_CHUNK = (f"INSERT INTO chunks (trace_id, resource_id, {_CHUNK_COLUMNS})"
                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_UPDATE_CHUNK = "UPDATE chunks SET " + ", ".join(f"{c.strip()}=?" for c in _CHUNK_COLUMNS.split(",")) + " WHERE id=?"


def _backfilled(span: Span) -> bool:
    """Whether the factory made this span from its files (``gwtrace.source=factory-logs``)."""
    return any(kv.key == "gwtrace.source" and kv.value.string_value == BACKFILLED for kv in span.attributes)


class _Pending:
    """One ingest waiting for a group commit."""

    __slots__ = ("plan", "done", "error")

    def __init__(self, plan: Plan):
        self.plan = plan
        self.done = False
        self.error: "BaseException | None" = None


class GroupCommit:
    """Threads that write at the same time share one transaction.

    The first waiting thread becomes the leader, takes every plan queued so
    far and commits them together while the others wait; a commit's cost (WAL
    pages, checkpoints) is then paid once for several requests.  Each caller
    returns only after its own data is committed.
    """

    def __init__(self, commit: Callable[[List[Plan]], None]):
        self._commit = commit
        self._cv = threading.Condition(threading.Lock())
        self._queue: List[_Pending] = []
        self._leader = False

    def submit(self, plan: Plan) -> None:
        mine = _Pending(plan)
        cv = self._cv
        with cv:
            self._queue.append(mine)
            while not mine.done:
                if self._leader:
                    cv.wait()
                    continue
                self._leader = True
                group, self._queue = self._queue, []
                cv.release()
                try:
                    self._run(group)
                finally:
                    cv.acquire()
                    self._leader = False
                    cv.notify_all()
        if mine.error is not None:
            raise mine.error

    def _run(self, group: List[_Pending]) -> None:
        try:
            self._commit([p.plan for p in group])
        except sqlite3.OperationalError as exc:
            for p in group:  # locked, disk full...: the same for every request
                p.error = exc
        except Exception:
            if len(group) == 1:
                group[0].error = sys.exc_info()[1]
            else:
                # Isolate the request that failed; the others are committed.
                for p in group:
                    try:
                        self._commit([p.plan])
                    except Exception as exc:  # noqa: BLE001 - handed to that request's caller
                        p.error = exc
        for p in group:
            p.done = True


class Writer:
    """Every write to the store goes through here, on the one writer connection."""

    def __init__(self, connections: Connections):
        self._connections = connections
        self.known = KnownTraces()
        self._group = GroupCommit(self._commit_plans)
        #: resources of glideins (service "glidein"): their traces get records (store/glideins.py)
        self._glidein_resources: Set[int] = set()

    def write(self, plan: Plan) -> None:
        """Write one request's chunks (sharing a transaction with concurrent callers)."""
        self._group.submit(plan)

    def _commit_plans(self, plans: List[Plan]) -> None:
        try:
            with self._connections.transaction() as conn:
                self.known.check_generation(conn)
                replaced_in: Set[bytes] = set()
                for plan in plans:
                    for resource, schema_url, chunks in plan:
                        resource_id, service = self._resource_id(conn, resource, schema_url)
                        for chunk in chunks:
                            if self._store_chunk(conn, chunk, resource_id, service):
                                replaced_in.add(chunk.trace_id)
                            live.drop_arrived(conn, chunk.trace_id, chunk.id_set)   # a live snapshot's end
                        if resource_id in self._glidein_resources:
                            glideins.mark(conn, {chunk.trace_id for chunk in chunks})
                for trace_id in replaced_in:
                    self._recompute_trace(conn, trace_id)
        except BaseException:
            for plan in plans:
                for _, _, chunks in plan:
                    for chunk in chunks:
                        self.known.forget(chunk.trace_id)
            self.known.ops_seen.clear()
            raise
        self._connections.checkpoints.wrote(sum(len(c.body) for plan in plans for _, _, cs in plan for c in cs))

    def _resource_id(self, conn: sqlite3.Connection, resource: Resource, schema_url: str) -> Tuple[int, str]:
        body = resource.SerializeToString()
        row = conn.execute(
            "SELECT id, service FROM resources WHERE body = ? AND schema_url = ?", (body, schema_url)
        ).fetchone()
        if row:
            if row[1] == "glidein":
                self._glidein_resources.add(row[0])
            return row[0], row[1]
        attrs = attributes_to_dict(resource.attributes)
        service = attrs.get("service.name")
        service = str(service) if service not in (None, "") else "unknown_service"
        uuid = next((str(attrs[k]) for k in GLIDEIN_UUID_KEYS if attrs.get(k) not in (None, "")), None)
        cur = conn.execute(
            "INSERT INTO resources (body, schema_url, service, glidein_uuid) VALUES (?, ?, ?, ?)",
            (body, schema_url, service, uuid),
        )
        resource_id = cur.lastrowid
        if service == "glidein":
            self._glidein_resources.add(resource_id)
        conn.executemany(
            "INSERT OR IGNORE INTO resource_attrs (key, value, resource_id) VALUES (?, ?, ?)",
            [(k, tag_text(v), resource_id) for k, v in attrs.items()],
        )
        return resource_id, service

    def _store_chunk(self, conn: sqlite3.Connection, chunk: Chunk, resource_id: int, service: str) -> bool:
        """Insert one chunk; return True if it replaced spans stored earlier."""
        trace_id = chunk.trace_id
        cache = self.known.trace(conn, trace_id)
        fresh = cache.last_chunk == 0  # no chunk of this trace stored yet
        new_ids = chunk.id_set
        replaced = False
        if cache.ids and not cache.ids.isdisjoint(new_ids):
            kept, replaced = self._precedence(conn, trace_id, chunk, cache.ids & new_ids)
            if kept is None:
                return replaced         # every span of it is stored already, as it stays
            chunk = kept
        cur = conn.execute(_INSERT_CHUNK, (trace_id, resource_id) + chunk.summary())
        cache.ids.update(new_ids)
        cache.last_chunk = cur.lastrowid
        # The index rows below are written once per trace; the caches only skip
        # INSERT OR IGNOREs that would change nothing.
        if resource_id not in cache.resources:
            conn.execute(
                "INSERT OR IGNORE INTO trace_resources (resource_id, trace_id) VALUES (?, ?)", (resource_id, trace_id)
            )
            cache.resources.add(resource_id)
        seen = self.known.ops_seen
        new_ops = [(service, name, kind) for name, kind in chunk.ops if (service, name, kind) not in seen]
        if new_ops:
            conn.executemany("INSERT OR IGNORE INTO operations (service, name, kind) VALUES (?, ?, ?)", new_ops)
            seen.update(dict.fromkeys(new_ops, 0))
        if not replaced:  # else the trace's rows are rebuilt once the request is written (_recompute_trace)
            trace_start = conn.execute(
                TRACE_UPSERT_START,
                (trace_id, chunk.start_ns, chunk.max_start_ns, chunk.end_ns, chunk.n_spans, chunk.n_errors,
                 chunk.status, chunk.root_name, chunk.root_start_ns,
                 service if chunk.root_name is not None else None, chunk.first_name, service),
            ).fetchone()[0]
            moved = not fresh and trace_start == chunk.start_ns
            ops.store_ranges(conn, ops.ChunkOps(trace_id, service, chunk.ops, fresh, trace_start, moved),
                             cache.ops, seen)
        return replaced

    def _precedence(self, conn: sqlite3.Connection, trace_id: bytes, chunk: Chunk,
                    overlap: Set[bytes]) -> Tuple["Chunk | None", bool]:
        """Which copy of each span of ``chunk`` already stored stays (module docstring): drop the stored
        ones the new ones replace; return (the chunk without the spans that stay stored, or None when
        nothing of it is left; whether stored spans were dropped)."""
        stored = self._stored_spans(conn, trace_id, overlap)
        incoming = ScopeSpans.FromString(chunk.body)
        keep_new, keep_old = [], set()
        for span in incoming.spans:
            old = stored.get(span.span_id)
            if old is not None and (old == span or (_backfilled(span) and not _backfilled(old))):
                keep_old.add(span.span_id)
            else:
                keep_new.append(span)
        replace = {span.span_id for span in keep_new} & set(stored)
        if replace:
            self._remove_spans(conn, trace_id, replace)
        if not keep_old:
            return chunk, bool(replace)
        if not keep_new:
            return None, bool(replace)
        return chunk_of_spans(trace_id, incoming, keep_new), bool(replace)

    @staticmethod
    def _stored_spans(conn: sqlite3.Connection, trace_id: bytes, span_ids: Set[bytes]) -> Dict[bytes, Span]:
        """The stored spans among ``span_ids`` (decoding only the chunks that hold some)."""
        found: Dict[bytes, Span] = {}
        for blob, body in conn.execute("SELECT span_ids, body FROM chunks WHERE trace_id = ?", (trace_id,)):
            if span_ids.isdisjoint(split_ids(blob)):
                continue
            for span in ScopeSpans.FromString(body).spans:
                if span.span_id in span_ids:
                    found[span.span_id] = span
        return found

    def _remove_spans(self, conn: sqlite3.Connection, trace_id: bytes, span_ids: Set[bytes]) -> None:
        """Drop spans from the chunks that hold them, so a re-sent span replaces them."""
        rows = conn.execute("SELECT id, span_ids, body FROM chunks WHERE trace_id = ?", (trace_id,)).fetchall()
        for chunk_id, blob, body in rows:
            if span_ids.isdisjoint(split_ids(blob)):
                continue
            old = ScopeSpans.FromString(body)
            keep = [s for s in old.spans if s.span_id not in span_ids]
            if not keep:
                conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))
                continue
            conn.execute(_UPDATE_CHUNK, chunk_of_spans(trace_id, old, keep).summary() + (chunk_id,))

    def _recompute_trace(self, conn: sqlite3.Connection, trace_id: bytes) -> None:
        """Rebuild a trace's summary rows from its chunks (after spans were replaced)."""
        self.known.forget(trace_id)
        conn.execute("DELETE FROM traces WHERE trace_id = ?", (trace_id,))
        conn.execute("DELETE FROM trace_resources WHERE trace_id = ?", (trace_id,))
        conn.execute("DELETE FROM trace_ops WHERE trace_id = ?", (trace_id,))
        rows = conn.execute(
            "SELECT c.resource_id, r.service, c.start_ns, c.max_start_ns, c.end_ns, c.n_spans, c.n_errors,"
            " c.status, c.root_name, c.root_start_ns, c.first_name"
            " FROM chunks c JOIN resources r ON r.id = c.resource_id WHERE c.trace_id = ? ORDER BY c.id",
            (trace_id,),
        ).fetchall()
        for (resource_id, service, start, max_start, end, n, n_err, status, root_name, root_start,
             first_name) in rows:
            conn.execute(
                "INSERT OR IGNORE INTO trace_resources (resource_id, trace_id) VALUES (?, ?)",
                (resource_id, trace_id),
            )
            conn.execute(
                TRACE_UPSERT,
                (trace_id, start, max_start, end, n, n_err, status, root_name, root_start,
                 service if root_name is not None else None, first_name, service),
            )
        ops.rebuild(conn, trace_id)

    def drop_backfilled_trace(self, conn: sqlite3.Connection, trace_id: bytes) -> bool:
        """Delete a trace made only of spans the factory backfilled (a glidein's uuid-less trace, once its
        ``.out`` gave the uuid and so its own trace); False, and nothing deleted, if it holds any other."""
        bodies = conn.execute("SELECT body FROM chunks WHERE trace_id = ?", (trace_id,)).fetchall()
        if not bodies or not all(_backfilled(span) for (body,) in bodies
                                 for span in ScopeSpans.FromString(body).spans):
            return False
        for table in ("chunks", "trace_resources", "trace_ops", "traces"):
            conn.execute(f"DELETE FROM {table} WHERE trace_id = ?", (trace_id,))
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")   # other writers' caches
        self.known.forget(trace_id)
        return True

    def purge_before(self, cutoff_ns: int) -> int:
        """Delete traces that ended before ``cutoff_ns``; return how many."""
        with self._connections.transaction() as conn:
            old = [r[0] for r in conn.execute("SELECT trace_id FROM traces WHERE end_ns < ?", (cutoff_ns,))]
            for i in range(0, len(old), 500):
                batch = old[i:i + 500]
                marks = ",".join("?" * len(batch))
                for table in ("chunks", "trace_resources", "trace_ops", "traces"):
                    conn.execute(f"DELETE FROM {table} WHERE trace_id IN ({marks})", batch)
                glideins.forget(conn, batch)
            if old:
                # One pass over trace_ops (it is keyed by trace, not by operation).
                conn.execute(
                    "DELETE FROM operations WHERE (service, name, kind) NOT IN"
                    " (SELECT DISTINCT service, name, kind FROM trace_ops)"
                )
                conn.execute(
                    "DELETE FROM resource_attrs WHERE resource_id NOT IN (SELECT resource_id FROM trace_resources)"
                )
                conn.execute("DELETE FROM resources WHERE id NOT IN (SELECT resource_id FROM trace_resources)")
                conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
                self.known.clear()
        return len(old)
