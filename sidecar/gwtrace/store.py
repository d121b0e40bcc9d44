"""SQLite trace store shared by the sidecar, `gwtrace show` and `gwtrace serve`.

Why it is shaped like this: the store has to ingest OTLP at a rate close to
what protobuf decoding alone allows, and a row per span (one Python conversion
and several B-tree inserts per span) is an order of magnitude too slow for
that.  So, like Tempo, the unit of storage is a *chunk*: the spans of one trace
that arrived together from one resource and one instrumentation scope, kept as
the serialized OTLP ``ScopeSpans`` message.  Everything a query filters on is
summarised in small, indexed tables at ingest time:

``resources``        one row per distinct OTLP Resource (service, glidein uuid)
``resource_attrs``   (key, value) -> resource, so every ``glidein.*`` identity
                     attribute (site, entry, factory, ...) is indexed
``chunks``           trace id, resource, time range, counts, span ids, body
``traces``           one row per trace: time range, span/error counts, status,
                     root span name and service
``trace_resources``  which resources (hence services, glideins) a trace touches
``trace_ops``        which (service, span name, kind) a trace contains
``operations``       distinct (service, span name, kind), for the query API

Span-level filters that are not summarised (span attributes, span durations)
are answered by decoding the chunks of the candidate traces only.

Ingest is idempotent: a span whose (trace id, span id) is already stored
replaces the stored one (the older chunk is rewritten without it), so a
sidecar that retries a batch after a lost response never duplicates spans.

Several processes (sidecars and one server) may share a file: WAL mode, a busy
timeout and ``BEGIN IMMEDIATE`` for writes.  Within one process a TraceStore may
be used from several threads; each thread gets its own connection for reads,
and every write goes through one writer connection (whose page cache then
stays warm).  WAL checkpoints run in a background thread, so no ingest waits
for one.
"""

from __future__ import annotations

import base64
import collections
import json
import math
import operator
import os
import pathlib
import sqlite3
import sys
import threading
import time
from operator import attrgetter
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

SCHEMA_VERSION = 3

#: How long a writer waits for another process holding the write lock.
BUSY_TIMEOUT_MS = 30_000

_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)

#: Everything ingest needs from a span, read in one C-level call per span.
_SPAN_FIELDS = attrgetter(
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "status.code",
)
# Indexes into the tuples produced by _SPAN_FIELDS.
_TID, _SID, _PARENT, _NAME, _KIND, _START, _END, _STATUS = range(8)

STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2

#: Resource attributes that name a glidein; the first one present wins.
GLIDEIN_UUID_KEYS = ("glidein.uuid", "service.instance.id")

#: Chunk bytes committed between two WAL checkpoints.  A background thread runs
#: them, so that no ingest waits for a checkpoint's copy and fsyncs (tens of ms
#: on a VM disk, paid by whichever commit crossed SQLite's own threshold before).
CHECKPOINT_BYTES = 16 * 2**20
#: SQLite's own after-commit checkpoint stays on as a safety net with a higher
#: threshold (in pages), in case the background one cannot keep up.
_AUTOCHECKPOINT_PAGES = 4096

# Traces whose span ids are remembered in memory to make the idempotency check
# cheap; a miss costs one indexed query, never a wrong answer.
_KNOWN_TRACES_MAX = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    body         BLOB    NOT NULL,
    schema_url   TEXT    NOT NULL DEFAULT '',
    service      TEXT    NOT NULL,
    glidein_uuid TEXT,
    UNIQUE (body, schema_url)
);
CREATE INDEX IF NOT EXISTS resources_service ON resources (service);
CREATE INDEX IF NOT EXISTS resources_glidein ON resources (glidein_uuid);

CREATE TABLE IF NOT EXISTS resource_attrs (
    key         TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    resource_id INTEGER NOT NULL,
    PRIMARY KEY (key, value, resource_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS resource_attrs_resource ON resource_attrs (resource_id);

CREATE TABLE IF NOT EXISTS chunks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id      BLOB    NOT NULL,
    resource_id   INTEGER NOT NULL,
    start_ns      INTEGER NOT NULL,
    max_start_ns  INTEGER NOT NULL,
    end_ns        INTEGER NOT NULL,
    max_dur_ns    INTEGER NOT NULL,
    n_spans       INTEGER NOT NULL,
    n_errors      INTEGER NOT NULL,
    status        INTEGER NOT NULL,
    root_name     TEXT,
    root_start_ns INTEGER,
    first_name    TEXT    NOT NULL,
    span_ids      BLOB    NOT NULL,
    body          BLOB    NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_trace ON chunks (trace_id);
CREATE INDEX IF NOT EXISTS chunks_resource ON chunks (resource_id, start_ns);

CREATE TABLE IF NOT EXISTS traces (
    trace_id      BLOB    PRIMARY KEY,
    start_ns      INTEGER NOT NULL,
    max_start_ns  INTEGER NOT NULL,
    end_ns        INTEGER NOT NULL,
    n_spans       INTEGER NOT NULL,
    n_errors      INTEGER NOT NULL,
    status        INTEGER NOT NULL,
    root_name     TEXT,
    root_start_ns INTEGER,
    root_service  TEXT,
    first_name    TEXT    NOT NULL,
    first_service TEXT    NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS traces_start ON traces (start_ns);
CREATE INDEX IF NOT EXISTS traces_status ON traces (status, start_ns);

CREATE TABLE IF NOT EXISTS trace_resources (
    resource_id INTEGER NOT NULL,
    trace_id    BLOB    NOT NULL,
    PRIMARY KEY (resource_id, trace_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS trace_resources_trace ON trace_resources (trace_id);

-- Keyed by trace first: a new trace's operations land in one B-tree page, not
-- one page per operation (plus an index) as with (service, name, kind) first.
-- "Traces with operation X" is an EXISTS per candidate trace instead.
CREATE TABLE IF NOT EXISTS trace_ops (
    trace_id BLOB    NOT NULL,
    service  TEXT    NOT NULL,
    name     TEXT    NOT NULL,
    kind     INTEGER NOT NULL,
    PRIMARY KEY (trace_id, service, name, kind)
) WITHOUT ROWID;

-- generation: bumped by every purge, so that other processes drop their caches
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (key, value) VALUES ('generation', 0);

CREATE TABLE IF NOT EXISTS operations (
    service TEXT    NOT NULL,
    name    TEXT    NOT NULL,
    kind    INTEGER NOT NULL,
    PRIMARY KEY (service, name, kind)
) WITHOUT ROWID;
"""

_TRACE_UPSERT = """
INSERT INTO traces (trace_id, start_ns, max_start_ns, end_ns, n_spans, n_errors, status,
                    root_name, root_start_ns, root_service, first_name, first_service)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (trace_id) DO UPDATE SET
    start_ns      = min(start_ns, excluded.start_ns),
    max_start_ns  = max(max_start_ns, excluded.max_start_ns),
    end_ns        = max(end_ns, excluded.end_ns),
    n_spans       = n_spans + excluded.n_spans,
    n_errors      = n_errors + excluded.n_errors,
    status        = max(status, excluded.status),
    root_name     = CASE WHEN excluded.root_start_ns IS NOT NULL
                          AND (root_start_ns IS NULL OR excluded.root_start_ns < root_start_ns)
                         THEN excluded.root_name ELSE root_name END,
    root_service  = CASE WHEN excluded.root_start_ns IS NOT NULL
                          AND (root_start_ns IS NULL OR excluded.root_start_ns < root_start_ns)
                         THEN excluded.root_service ELSE root_service END,
    root_start_ns = CASE WHEN excluded.root_start_ns IS NOT NULL
                          AND (root_start_ns IS NULL OR excluded.root_start_ns < root_start_ns)
                         THEN excluded.root_start_ns ELSE root_start_ns END,
    first_name    = CASE WHEN excluded.start_ns < start_ns THEN excluded.first_name ELSE first_name END,
    first_service = CASE WHEN excluded.start_ns < start_ns THEN excluded.first_service ELSE first_service END
"""


def default_store_path() -> pathlib.Path:
    """``${GWTRACE_HOME:-~/.local/share/gwtrace}/traces.db``."""
    home = os.environ.get("GWTRACE_HOME")
    base = pathlib.Path(home) if home else pathlib.Path.home() / ".local" / "share" / "gwtrace"
    return base / "traces.db"


# --------------------------------------------------------------------------
# OTLP values <-> Python


def any_value_to_python(value: AnyValue) -> Any:
    """Convert an OTLP AnyValue to str/bool/int/float/bytes/list/dict/None."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value_to_python(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes_to_dict(value.kvlist_value.values)
    return getattr(value, which)


def attributes_to_dict(attributes: Iterable[KeyValue]) -> Dict[str, Any]:
    """OTLP attributes to a dict; a repeated key keeps its last value, as in the SDK."""
    return {kv.key: any_value_to_python(kv.value) for kv in attributes}


def tag_text(value: Any) -> str:
    """The text form used to compare a stored value with a query tag.

    Jaeger compares tags as strings; booleans are lower case there.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, default=_json_default)
    if value is None:
        return ""
    return str(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"cannot encode {type(value).__name__}")


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _spans_field(serialized_span: bytes) -> bytes:
    """Wire encoding of one element of ``ScopeSpans.spans`` (field 2, length-delimited).

    Concatenating these after a serialized scope gives a valid ScopeSpans
    without copying Span messages in Python.
    """
    return b"\x12" + _varint(len(serialized_span)) + serialized_span


def normalize_trace_id(trace_id: "str | bytes") -> Optional[bytes]:
    """Hex (any case) or raw bytes to the 16-byte id; None if it is not one."""
    if isinstance(trace_id, bytes):
        raw = trace_id
    else:
        text = trace_id.strip()
        if len(text) > 32 or not text:
            return None
        try:
            raw = bytes.fromhex(text.rjust(32, "0"))
        except ValueError:
            return None
    if len(raw) != 16 or raw == _ZERO_TRACE:
        return None
    return raw


def _span_problem(row: tuple) -> Optional[str]:
    tid, sid, parent = row[_TID], row[_SID], row[_PARENT]
    if len(tid) != 16 or tid == _ZERO_TRACE:
        return "trace_id must be 16 bytes and not all zero"
    if len(sid) != 8 or sid == _ZERO_SPAN:
        return "span_id must be 8 bytes and not all zero"
    if parent and len(parent) != 8:
        return "parent_span_id must be empty or 8 bytes"
    if not row[_START]:
        return "start_time_unix_nano is missing"
    if row[_END] < row[_START]:
        return "end_time_unix_nano is before start_time_unix_nano"
    return None


def _is_root(parent: bytes) -> bool:
    return not parent or parent == _ZERO_SPAN


class _Chunk:
    """Summary of the spans of one trace from one ScopeSpans, ready to insert.

    Built from per-field columns (one ``zip`` over the extracted tuples) so
    that every summary is a C-level pass, not a Python loop per span.
    """

    __slots__ = (
        "trace_id", "start_ns", "max_start_ns", "end_ns", "max_dur_ns", "n_spans", "n_errors",
        "status", "root_name", "root_start_ns", "first_name", "span_ids", "id_set", "ops", "body",
    )

    def __init__(self, trace_id: bytes, rows: Sequence[tuple], body: bytes, columns: Optional[Sequence[tuple]] = None):
        _, sids, parents, names, kinds, starts, ends, statuses = columns if columns is not None else zip(*rows)
        self.trace_id = trace_id
        self.body = body
        self.n_spans = len(rows)
        self.start_ns = min(starts)
        self.max_start_ns = max(starts)
        self.end_ns = max(ends)
        self.max_dur_ns = max(map(operator.sub, ends, starts))
        self.n_errors = statuses.count(STATUS_ERROR)
        if self.n_errors:
            self.status = STATUS_ERROR
        elif STATUS_OK in statuses:
            self.status = STATUS_OK
        else:
            self.status = STATUS_UNSET
        self.first_name = names[starts.index(self.start_ns)]
        n_roots = parents.count(b"") + parents.count(_ZERO_SPAN)
        if n_roots == 1:
            i = parents.index(b"") if b"" in parents else parents.index(_ZERO_SPAN)
            self.root_name, self.root_start_ns = names[i], starts[i]
        elif n_roots > 1:
            root = min((r for r in rows if _is_root(r[_PARENT])), key=lambda r: r[_START])
            self.root_name, self.root_start_ns = root[_NAME], root[_START]
        else:
            self.root_name, self.root_start_ns = None, None
        self.span_ids = b"".join(sids)
        self.id_set = set(sids)
        self.ops = set(zip(names, kinds))


def _all_valid(columns: Sequence[tuple]) -> bool:
    """True if every span is valid; C-level passes over columns (the common case)."""
    tids, sids, parents, _, _, starts, ends, _ = columns
    return (
        set(map(len, tids)) == {16} and _ZERO_TRACE not in tids
        and set(map(len, sids)) == {8} and _ZERO_SPAN not in sids
        and set(map(len, parents)) <= {0, 8}
        and 0 not in starts
        and not any(map(operator.lt, ends, starts))
    )


def _read_varint(buf: bytes, pos: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf: bytes, start: int, end: int) -> Iterator[Tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end) of a message's top-level fields."""
    pos = start
    while pos < end:
        key, pos = _read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, nxt = _read_varint(buf, pos)
        elif wire == 1:
            nxt = pos + 8
        elif wire == 2:
            length, pos = _read_varint(buf, pos)
            nxt = pos + length
        elif wire == 5:
            nxt = pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if nxt > end:
            raise ValueError("truncated field")
        yield field, wire, pos, nxt
        pos = nxt


def scope_spans_slices(raw: bytes) -> List[List[bytes]]:
    """The serialized ScopeSpans of an encoded ExportTraceServiceRequest, per ResourceSpans.

    Only two levels of the wire format are walked (never the spans), so
    reusing these bytes is much cheaper than re-serializing the messages.
    """
    out: List[List[bytes]] = []
    for field, wire, start, end in _fields(raw, 0, len(raw)):
        if field == 1 and wire == 2:
            out.append([raw[s:e] for f, w, s, e in _fields(raw, start, end) if f == 2 and w == 2])
    return out


class _TraceCache:
    """In-memory knowledge of one stored trace, to keep re-checks out of SQL."""

    __slots__ = ("last_chunk", "ids", "ops", "resources")

    def __init__(self) -> None:
        self.last_chunk = 0
        self.ids: Set[bytes] = set()
        self.ops: Set[Tuple[str, str, int]] = set()
        self.resources: Set[int] = set()


class _Pending:
    """One ingest waiting for a group commit."""

    __slots__ = ("plan", "done", "error")

    def __init__(self, plan: List[Tuple[Resource, str, "_Chunk"]]):
        self.plan = plan
        self.done = False
        self.error: Optional[BaseException] = None


def _rename_old_trace_ops(conn: sqlite3.Connection) -> Optional[str]:
    """Move a trace_ops table keyed by operation (schema 1-2) aside; return its new name.

    Its rows are copied into the table keyed by trace once that exists.
    """
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'trace_ops'").fetchone()
    if row is None or "PRIMARY KEY (trace_id" in row[0]:
        return None
    conn.execute("DROP INDEX IF EXISTS trace_ops_trace")
    conn.execute("ALTER TABLE trace_ops RENAME TO trace_ops_v2")
    return "trace_ops_v2"


def _split_ids(blob: bytes) -> List[bytes]:
    return [blob[i:i + 8] for i in range(0, len(blob), 8)]


class TraceStore:
    """OTLP spans in one SQLite file; see the module docstring for the layout."""

    def __init__(self, path: "str | os.PathLike[str] | None" = None, retention_days: Optional[float] = None):
        self.path = pathlib.Path(path) if path is not None else default_store_path()
        if retention_days is not None and (math.isnan(retention_days) or retention_days <= 0):
            raise ValueError("retention_days must be a positive number of days")
        self.retention_days = retention_days
        self._local = threading.local()
        self._connections: List[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_lock = threading.Lock()
        # Group commit: threads that ingest at the same time share one transaction.
        self._group_cv = threading.Condition(threading.Lock())
        self._group_queue: List["_Pending"] = []
        self._group_leader = False
        self._generation = -1
        self._ops_seen: Set[Tuple[str, str, int]] = set()
        self._known: "collections.OrderedDict[bytes, _TraceCache]" = collections.OrderedDict()
        self._resource_cache: Dict[int, Tuple[str, Dict[str, Any]]] = {}
        self._closed = False
        self._writer: Optional[sqlite3.Connection] = None
        # Background checkpoints (started on the first large write, so readers never start one).
        self._uncheckpointed = 0
        self._checkpoint_wanted = threading.Event()
        self._checkpointer: Optional[threading.Thread] = None
        if not self.path.parent.exists():
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self.path.exists():
            # Traces carry host names, user names and job ids: owner-only.
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        self._init_schema()
        if retention_days is not None:
            self.purge()

    # ---------------------------------------------------------------- plumbing

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Chunks are ~100 KB blobs: 16 KiB pages halve the page writes per
        # chunk.  Only takes effect on a new, empty file (before WAL).
        conn.execute("PRAGMA page_size = 16384")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA wal_autocheckpoint = {_AUTOCHECKPOINT_PAGES}")
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection, for reads."""
        if self._closed:
            raise RuntimeError("TraceStore is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    def _write_conn(self) -> sqlite3.Connection:
        """The one connection every write uses, whatever the thread (callers hold _write_lock).

        Why one: a connection drops its page cache whenever another connection
        has committed, so writes spread over per-thread connections re-read
        every B-tree page they touch, on every transaction.
        """
        if self._closed:
            raise RuntimeError("TraceStore is closed")
        if self._writer is None:
            self._writer = self._connect()
        return self._writer

    def _init_schema(self) -> None:
        with self._write_lock:
            conn = self._write_conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise RuntimeError(
                        f"{self.path}: store schema version {version} is newer than this gwtrace "
                        f"understands ({SCHEMA_VERSION}); upgrade gwtrace or use another --db"
                    )
                if version < SCHEMA_VERSION:
                    old_ops = _rename_old_trace_ops(conn)
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    if old_ops:
                        conn.execute(
                            "INSERT OR IGNORE INTO trace_ops (trace_id, service, name, kind)"
                            f" SELECT trace_id, service, name, kind FROM {old_ops}"
                        )
                        conn.execute(f"DROP TABLE {old_ops}")
                    # Version 1 had two indexes that cost every write and served only rare reads.
                    conn.execute("DROP INDEX IF EXISTS traces_end")
                    conn.execute("DROP INDEX IF EXISTS traces_sort")
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _wrote(self, n_bytes: int) -> None:
        """Count bytes committed; past CHECKPOINT_BYTES, wake the checkpoint thread."""
        self._uncheckpointed += n_bytes
        if self._uncheckpointed < CHECKPOINT_BYTES:
            return
        self._uncheckpointed = 0
        if self._checkpointer is None:
            self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="gwtrace-checkpoint", daemon=True)
            self._checkpointer.start()
        self._checkpoint_wanted.set()

    def _checkpoint_loop(self) -> None:
        """Copy the WAL into the database (PASSIVE: never blocks readers or writers)."""
        while True:
            self._checkpoint_wanted.wait()
            self._checkpoint_wanted.clear()
            if self._closed:
                return
            try:
                self._conn().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except (sqlite3.Error, RuntimeError):
                pass  # busy or closing: the next one (or SQLite's own) catches up

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        self._closed = True
        if self._checkpointer is not None:
            self._checkpoint_wanted.set()
            self._checkpointer.join(timeout=30)
        with self._connections_lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._connections.clear()
        self._closed = True

    def __enter__(self) -> "TraceStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ ingest

    def ingest(self, request: ExportTraceServiceRequest, raw: Optional[bytes] = None) -> Tuple[int, int, str]:
        """Store the spans of an export request; return (accepted, rejected, message).

        Spans with malformed ids or times are rejected and counted; the others
        are stored in one transaction.  The message names the first problems,
        in the form OTLP's partial success ``error_message`` expects.  ``raw``,
        the request's own encoding when the caller has it, lets whole
        ScopeSpans be stored without re-serializing them.
        """
        slices: Optional[List[List[bytes]]] = None
        if raw is not None:
            try:
                slices = scope_spans_slices(raw)
            except (ValueError, IndexError):
                slices = None
            if slices is not None and (
                len(slices) != len(request.resource_spans)
                or any(len(sl) != len(rs.scope_spans) for sl, rs in zip(slices, request.resource_spans))
            ):
                slices = None
        # Decide what to write before taking the write lock: this is the Python
        # part, and other threads may write meanwhile (sqlite3 releases the GIL).
        rejected = 0
        problems: List[str] = []
        plan: List[Tuple[Any, str, List[_Chunk]]] = []
        for ri, rs in enumerate(request.resource_spans):
            resource_chunks: List[_Chunk] = []
            for si, ss in enumerate(rs.scope_spans):
                if not ss.spans:
                    continue
                chunks, bad = self._chunks_of(ss, slices[ri][si] if slices is not None else None)
                for index, reason in bad:
                    rejected += 1
                    if len(problems) < 5:
                        problems.append(f"resource_spans[{ri}].scope_spans[{si}].spans[{index}]: {reason}")
                resource_chunks.extend(chunks)
            if resource_chunks:
                plan.append((rs.resource, rs.schema_url, resource_chunks))
        accepted = sum(c.n_spans for _, _, chunks in plan for c in chunks)
        if plan:
            self._write(plan)
        message = ""
        if rejected:
            message = f"rejected {rejected} span(s): " + "; ".join(problems)
            if rejected > len(problems):
                message += f"; and {rejected - len(problems)} more"
        return accepted, rejected, message

    def _write(self, plan: List[Tuple[Resource, str, List[_Chunk]]]) -> None:
        """Write one request's chunks, sharing a transaction with concurrent callers.

        Group commit: the first waiting thread becomes the leader, takes every
        plan queued so far and commits them together, while the others wait
        for that commit; a commit's cost (WAL pages, checkpoints) is then paid
        once for several requests.  Each caller returns only after its own data
        is committed.
        """
        mine = _Pending(plan)
        cv = self._group_cv
        with cv:
            self._group_queue.append(mine)
            while not mine.done:
                if self._group_leader:
                    cv.wait()
                    continue
                self._group_leader = True
                group, self._group_queue = self._group_queue, []
                cv.release()
                try:
                    self._commit_group(group)
                finally:
                    cv.acquire()
                    self._group_leader = False
                    cv.notify_all()
        if mine.error is not None:
            raise mine.error

    def _commit_group(self, group: List["_Pending"]) -> None:
        try:
            self._commit_plans([p.plan for p in group])
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
                        self._commit_plans([p.plan])
                    except Exception as exc:  # noqa: BLE001 - handed to that request's caller
                        p.error = exc
        for p in group:
            p.done = True

    def _commit_plans(self, plans: List[List[Tuple[Resource, str, List[_Chunk]]]]) -> None:
        touched = [c.trace_id for plan in plans for _, _, chunks in plan for c in chunks]
        with self._write_lock:
            conn = self._write_conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._check_generation(conn)
                replaced_in: Set[bytes] = set()
                for plan in plans:
                    for resource, schema_url, chunks in plan:
                        resource_id, service = self._resource_id(conn, resource, schema_url)
                        for chunk in chunks:
                            if self._store_chunk(conn, chunk, resource_id, service):
                                replaced_in.add(chunk.trace_id)
                for trace_id in replaced_in:
                    self._recompute_trace(conn, trace_id)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                for trace_id in touched:
                    self._known.pop(trace_id, None)
                self._ops_seen.clear()
                raise
            self._wrote(sum(len(c.body) for plan in plans for _, _, chunks in plan for c in chunks))

    def _check_generation(self, conn: sqlite3.Connection) -> None:
        """Drop the in-memory caches if any process purged since we filled them."""
        generation = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
        if generation != self._generation:
            self._known.clear()
            self._ops_seen.clear()
            self._generation = generation

    def _chunks_of(self, ss: ScopeSpans, raw: Optional[bytes] = None) -> Tuple[List[_Chunk], List[Tuple[int, str]]]:
        """Split one ScopeSpans into per-trace chunks; also return rejected spans."""
        spans = ss.spans
        rows = list(map(_SPAN_FIELDS, spans))
        columns = list(zip(*rows))
        if _all_valid(columns):
            tids = columns[_TID]
            if tids.count(tids[0]) == len(rows) and len(set(columns[_SID])) == len(rows):
                # The common case: one trace, nothing to drop; keep the message as is.
                body = raw if raw is not None else ss.SerializeToString()
                return [_Chunk(tids[0], rows, body, columns)], []
            bad: List[Tuple[int, str]] = []
        else:
            bad = [(i, p) for i, p in ((i, _span_problem(r)) for i, r in enumerate(rows)) if p is not None]
        skip = {i for i, _ in bad}
        groups: Dict[bytes, Dict[bytes, int]] = {}
        for i, r in enumerate(rows):
            if i not in skip:
                # A span repeated within the request: the later copy wins.
                groups.setdefault(r[_TID], {})[r[_SID]] = i
        head = ScopeSpans(scope=ss.scope, schema_url=ss.schema_url).SerializeToString()
        chunks = []
        for trace_id, by_id in groups.items():
            indexes = sorted(by_id.values())
            body = head + b"".join([_spans_field(spans[i].SerializeToString()) for i in indexes])
            chunks.append(_Chunk(trace_id, [rows[i] for i in indexes], body))
        return chunks, bad

    def _resource_id(self, conn: sqlite3.Connection, resource: Resource, schema_url: str) -> Tuple[int, str]:
        body = resource.SerializeToString()
        row = conn.execute(
            "SELECT id, service FROM resources WHERE body = ? AND schema_url = ?", (body, schema_url)
        ).fetchone()
        if row:
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
        conn.executemany(
            "INSERT OR IGNORE INTO resource_attrs (key, value, resource_id) VALUES (?, ?, ?)",
            [(k, tag_text(v), resource_id) for k, v in attrs.items()],
        )
        return resource_id, service

    def _trace_cache(self, conn: sqlite3.Connection, trace_id: bytes) -> "_TraceCache":
        """What is already stored for a trace (cached; refreshed with chunks written since)."""
        entry = self._known.pop(trace_id, None)
        if entry is None:
            entry = _TraceCache()
        for chunk_id, blob in conn.execute(
            "SELECT id, span_ids FROM chunks WHERE trace_id = ? AND id > ?", (trace_id, entry.last_chunk)
        ):
            entry.ids.update(_split_ids(blob))
            entry.last_chunk = max(entry.last_chunk, chunk_id)
        self._known[trace_id] = entry
        while len(self._known) > _KNOWN_TRACES_MAX:
            self._known.popitem(last=False)
        return entry

    def _store_chunk(self, conn: sqlite3.Connection, chunk: _Chunk, resource_id: int, service: str) -> bool:
        """Insert one chunk; return True if it replaced spans stored earlier."""
        trace_id = chunk.trace_id
        cache = self._trace_cache(conn, trace_id)
        new_ids = chunk.id_set
        replaced = bool(cache.ids) and not cache.ids.isdisjoint(new_ids)
        if replaced:
            self._remove_spans(conn, trace_id, cache.ids & new_ids)
        cur = conn.execute(
            "INSERT INTO chunks (trace_id, resource_id, start_ns, max_start_ns, end_ns, max_dur_ns, n_spans,"
            " n_errors, status, root_name, root_start_ns, first_name, span_ids, body)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (trace_id, resource_id, chunk.start_ns, chunk.max_start_ns, chunk.end_ns, chunk.max_dur_ns,
             chunk.n_spans, chunk.n_errors, chunk.status, chunk.root_name, chunk.root_start_ns,
             chunk.first_name, chunk.span_ids, chunk.body),
        )
        cache.ids.update(new_ids)
        cache.last_chunk = cur.lastrowid
        # The index rows below are written once per trace; the caches only skip
        # INSERT OR IGNOREs that would change nothing.
        if resource_id not in cache.resources:
            conn.execute(
                "INSERT OR IGNORE INTO trace_resources (resource_id, trace_id) VALUES (?, ?)", (resource_id, trace_id)
            )
            cache.resources.add(resource_id)
        ops = {(service, name, kind) for name, kind in chunk.ops}
        new_ops = ops - self._ops_seen
        if new_ops:
            conn.executemany("INSERT OR IGNORE INTO operations (service, name, kind) VALUES (?, ?, ?)", new_ops)
            self._ops_seen.update(new_ops)
        new_trace_ops = ops - cache.ops
        if new_trace_ops:
            conn.executemany(
                "INSERT OR IGNORE INTO trace_ops (trace_id, service, name, kind) VALUES (?, ?, ?, ?)",
                [(trace_id,) + op for op in sorted(new_trace_ops)],
            )
            cache.ops.update(new_trace_ops)
        if not replaced:
            conn.execute(
                _TRACE_UPSERT,
                (trace_id, chunk.start_ns, chunk.max_start_ns, chunk.end_ns, chunk.n_spans, chunk.n_errors,
                 chunk.status, chunk.root_name, chunk.root_start_ns,
                 service if chunk.root_name is not None else None, chunk.first_name, service),
            )
        return replaced

    def _remove_spans(self, conn: sqlite3.Connection, trace_id: bytes, span_ids: Set[bytes]) -> None:
        """Drop spans from the chunks that hold them, so a re-sent span replaces them."""
        rows = conn.execute("SELECT id, span_ids, body FROM chunks WHERE trace_id = ?", (trace_id,)).fetchall()
        for chunk_id, blob, body in rows:
            if span_ids.isdisjoint(_split_ids(blob)):
                continue
            old = ScopeSpans.FromString(body)
            keep = [s for s in old.spans if s.span_id not in span_ids]
            if not keep:
                conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))
                continue
            head = ScopeSpans(scope=old.scope, schema_url=old.schema_url).SerializeToString()
            new_body = head + b"".join([_spans_field(s.SerializeToString()) for s in keep])
            c = _Chunk(trace_id, list(map(_SPAN_FIELDS, keep)), new_body)
            conn.execute(
                "UPDATE chunks SET start_ns=?, max_start_ns=?, end_ns=?, max_dur_ns=?, n_spans=?, n_errors=?,"
                " status=?, root_name=?, root_start_ns=?, first_name=?, span_ids=?, body=? WHERE id=?",
                (c.start_ns, c.max_start_ns, c.end_ns, c.max_dur_ns, c.n_spans, c.n_errors, c.status,
                 c.root_name, c.root_start_ns, c.first_name, c.span_ids, c.body, chunk_id),
            )

    def _recompute_trace(self, conn: sqlite3.Connection, trace_id: bytes) -> None:
        """Rebuild a trace's summary rows from its chunks (after spans were replaced)."""
        self._known.pop(trace_id, None)
        conn.execute("DELETE FROM traces WHERE trace_id = ?", (trace_id,))
        conn.execute("DELETE FROM trace_resources WHERE trace_id = ?", (trace_id,))
        conn.execute("DELETE FROM trace_ops WHERE trace_id = ?", (trace_id,))
        rows = conn.execute(
            "SELECT c.resource_id, r.service, c.start_ns, c.max_start_ns, c.end_ns, c.n_spans, c.n_errors,"
            " c.status, c.root_name, c.root_start_ns, c.first_name, c.body"
            " FROM chunks c JOIN resources r ON r.id = c.resource_id WHERE c.trace_id = ? ORDER BY c.id",
            (trace_id,),
        ).fetchall()
        for (resource_id, service, start, max_start, end, n, n_err, status, root_name, root_start,
             first_name, body) in rows:
            conn.execute(
                "INSERT OR IGNORE INTO trace_resources (resource_id, trace_id) VALUES (?, ?)",
                (resource_id, trace_id),
            )
            ops = {(trace_id, service, s.name, s.kind) for s in ScopeSpans.FromString(body).spans}
            conn.executemany("INSERT OR IGNORE INTO trace_ops (trace_id, service, name, kind) VALUES (?, ?, ?, ?)", ops)
            conn.execute(
                _TRACE_UPSERT,
                (trace_id, start, max_start, end, n, n_err, status, root_name, root_start,
                 service if root_name is not None else None, first_name, service),
            )

    # ----------------------------------------------------------------- reading

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

    def _resource(self, conn: sqlite3.Connection, resource_id: int) -> Tuple[str, Dict[str, Any]]:
        """(service, attributes) of a resource row; rows never change, so cache them."""
        cached = self._resource_cache.get(resource_id)
        if cached is None:
            row = conn.execute("SELECT service, body FROM resources WHERE id = ?", (resource_id,)).fetchone()
            if row is None:
                return "unknown_service", {}
            cached = (row[0], attributes_to_dict(Resource.FromString(row[1]).attributes))
            self._resource_cache[resource_id] = cached
        return cached

    def chunks(self, trace_id: bytes, resource_ids: Optional[Sequence[int]] = None) -> Iterator[Tuple[int, ScopeSpans]]:
        """(resource id, ScopeSpans) of each chunk of a trace, oldest first."""
        conn = self._conn()
        sql = "SELECT resource_id, body FROM chunks WHERE trace_id = ?"
        params: List[Any] = [trace_id]
        if resource_ids is not None:
            sql += f" AND resource_id IN ({','.join('?' * len(resource_ids))})"
            params.extend(resource_ids)
        for resource_id, body in conn.execute(sql + " ORDER BY id", params).fetchall():
            yield resource_id, ScopeSpans.FromString(body)

    def trace_chunks(self, trace_id: "str | bytes") -> List[Tuple[int, str, Dict[str, Any], ScopeSpans]]:
        """A trace as stored: (resource id, service, resource attributes, ScopeSpans) per chunk.

        For readers that convert spans straight from OTLP (the query API)
        without building the dicts of ``get_trace`` first.
        """
        raw = normalize_trace_id(trace_id)
        if raw is None:
            return []
        conn = self._conn()
        out = []
        for resource_id, ss in self.chunks(raw):
            service, attrs = self._resource(conn, resource_id)
            out.append((resource_id, service, attrs, ss))
        return out

    def get_trace(self, trace_id: "str | bytes") -> List[Dict[str, Any]]:
        """All spans of a trace as plain dicts, sorted by start time ([] if unknown)."""
        raw = normalize_trace_id(trace_id)
        if raw is None:
            return []
        return self._span_dicts(self.chunks(raw))

    def _span_dicts(self, chunks: Iterable[Tuple[int, ScopeSpans]]) -> List[Dict[str, Any]]:
        conn = self._conn()
        out: List[Dict[str, Any]] = []
        for resource_id, ss in chunks:
            service, resource = self._resource(conn, resource_id)
            scope, scope_version = ss.scope.name, ss.scope.version
            for s in ss.spans:
                out.append(span_to_dict(s, service, resource, scope, scope_version, resource_id))
        out.sort(key=lambda d: (d["start_ns"], -d["end_ns"]))  # parents before children on ties
        return out

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

    def find_traces(
        self,
        *,
        service: Optional[str] = None,
        operation: Optional[str] = None,
        span_kind: Optional[int] = None,
        resource_attrs: Optional[Dict[str, str]] = None,
        tags: Optional[Dict[str, str]] = None,
        start_ns: Optional[int] = None,
        end_ns: Optional[int] = None,
        min_duration_ns: Optional[int] = None,
        max_duration_ns: Optional[int] = None,
        min_trace_duration_ns: Optional[int] = None,
        status: Optional[int] = None,
        limit: int = 20,
    ) -> List[Dict[str, Any]]:
        """Summaries of the most recent traces matching every given condition.

        Trace-level conditions (service, operation, resource attributes,
        status, trace duration, time window on span start times) are answered
        from the indexes.  ``tags`` and the span duration bounds follow
        Jaeger: one span of the trace (of ``service``/``operation`` if given)
        must satisfy all of them, where a tag may be on the span, its resource
        or one of its events; those are checked by decoding the candidates.
        """
        conn = self._conn()
        where: List[str] = []
        params: List[Any] = []
        resource_ids: Optional[List[int]] = None
        tags = dict(tags or {})
        if service is not None or resource_attrs:
            sql = "SELECT id FROM resources WHERE 1=1"
            rparams: List[Any] = []
            if service is not None:
                sql += " AND service = ?"
                rparams.append(service)
            for key, value in (resource_attrs or {}).items():
                sql += " AND id IN (SELECT resource_id FROM resource_attrs WHERE key = ? AND value = ?)"
                rparams.extend([key, value])
            resource_ids = [r[0] for r in conn.execute(sql, rparams)]
            if not resource_ids:
                return []
            where.append(
                f"t.trace_id IN (SELECT trace_id FROM trace_resources WHERE resource_id IN "
                f"({','.join('?' * len(resource_ids))}))"
            )
            params.extend(resource_ids)
        if operation is not None:
            sql = "EXISTS (SELECT 1 FROM trace_ops o WHERE o.trace_id = t.trace_id AND o.name = ?"
            params.append(operation)
            if service is not None:
                sql += " AND o.service = ?"
                params.append(service)
            if span_kind is not None:
                sql += " AND o.kind = ?"
                params.append(span_kind)
            where.append(sql + ")")
        if start_ns is not None:
            where.append("t.max_start_ns >= ?")
            params.append(start_ns)
        if end_ns is not None:
            where.append("t.start_ns <= ?")
            params.append(end_ns)
        if status is not None:
            where.append("t.status = ?")
            params.append(status)
        if min_trace_duration_ns is not None:
            where.append("t.end_ns - t.start_ns >= ?")
            params.append(min_trace_duration_ns)
        span_level = bool(tags) or min_duration_ns is not None or max_duration_ns is not None
        chunk_sql, chunk_params = "", []  # type: Tuple[str, List[Any]]
        if span_level:
            chunk_sql, chunk_params = self._chunk_filter(
                conn, resource_ids, operation, tags, start_ns, end_ns, min_duration_ns)
            where.append(f"t.trace_id IN (SELECT c.trace_id FROM chunks c WHERE {chunk_sql})")
            params.extend(chunk_params)
        sql = (
            "SELECT t.trace_id, t.start_ns, t.end_ns, t.n_spans, t.n_errors, t.status,"
            " coalesce(t.root_name, t.first_name), coalesce(t.root_service, t.first_service)"
            " FROM traces t"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY t.start_ns DESC"
        out: List[Dict[str, Any]] = []
        for row in conn.execute(sql, params).fetchall():
            trace_id = row[0]
            if span_level and not self._trace_has_span(
                trace_id, chunk_sql, chunk_params, operation, span_kind, tags, start_ns, end_ns,
                min_duration_ns, max_duration_ns,
            ):
                continue
            out.append(self._summary(conn, row))
            if len(out) >= limit:
                break
        return out

    def _chunk_filter(
        self,
        conn: sqlite3.Connection,
        resource_ids: Optional[List[int]],
        operation: Optional[str],
        tags: Dict[str, str],
        start_ns: Optional[int],
        end_ns: Optional[int],
        min_duration_ns: Optional[int],
    ) -> Tuple[str, List[Any]]:
        """SQL over ``chunks c`` that every chunk holding a matching span satisfies.

        A necessary condition only, so that just the chunks that may match get
        decoded: a span attribute's key, a span name and a status message are
        stored as UTF-8 in the chunk body, so ``instr`` on the blob rules out
        most chunks without decoding them; resource tags resolve through the
        resource_attrs index.
        """
        conds: List[str] = []
        params: List[Any] = []
        if resource_ids is not None:
            conds.append(f"c.resource_id IN ({','.join('?' * len(resource_ids))})")
            params.extend(resource_ids)
        if operation is not None:
            conds.append("instr(c.body, ?) > 0")
            params.append(operation.encode())
        if start_ns is not None:
            conds.append("c.max_start_ns >= ?")
            params.append(start_ns)
        if end_ns is not None:
            conds.append("c.start_ns <= ?")
            params.append(end_ns)
        if min_duration_ns is not None:
            conds.append("c.max_dur_ns >= ?")
            params.append(min_duration_ns)
        for key, want in tags.items():
            options: List[str] = []
            holders = [r[0] for r in conn.execute(
                "SELECT resource_id FROM resource_attrs WHERE key = ? AND value = ?", (key, want))]
            if holders:
                options.append(f"c.resource_id IN ({','.join('?' * len(holders))})")
                params.extend(holders)
            if key == "error" and want == "true" or key == "otel.status_code" and want == "ERROR":
                options.append("c.n_errors > 0")
            elif key == "otel.status_code" and want == "OK":
                options.append("c.status >= 1")
            elif key == "otel.status_description":
                options.append("instr(c.body, ?) > 0")
                params.append(want.encode())
            elif key == "span.kind":
                options.append("1")  # kinds are not summarised per chunk
            options.append("instr(c.body, ?) > 0")
            params.append(key.encode())
            conds.append("(" + " OR ".join(options) + ")")
        return (" AND ".join(conds) or "1"), params

    def _summary(self, conn: sqlite3.Connection, row: Sequence[Any]) -> Dict[str, Any]:
        trace_id = row[0]
        resources = conn.execute(
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
            attrs = self._resource(conn, glideins[0][0])[1]
            summary["glidein_uuid"] = glideins[0][2]
            summary["site"] = attrs.get("glidein.site")
            summary["entry"] = attrs.get("glidein.entry")
        return summary

    def _trace_has_span(
        self,
        trace_id: bytes,
        chunk_sql: str,
        chunk_params: List[Any],
        operation: Optional[str],
        span_kind: Optional[int],
        tags: Dict[str, str],
        start_ns: Optional[int],
        end_ns: Optional[int],
        min_duration_ns: Optional[int],
        max_duration_ns: Optional[int],
    ) -> bool:
        """Decode the trace's candidate chunks: does one span meet every span-level condition?"""
        conn = self._conn()
        rows = conn.execute(
            f"SELECT c.resource_id, c.body FROM chunks c WHERE c.trace_id = ? AND {chunk_sql}",
            [trace_id, *chunk_params],
        ).fetchall()
        for resource_id, body in rows:
            resource_attrs = self._resource(conn, resource_id)[1]
            for s in ScopeSpans.FromString(body).spans:
                if operation is not None and s.name != operation:
                    continue
                if span_kind is not None and s.kind != span_kind:
                    continue
                if start_ns is not None and s.start_time_unix_nano < start_ns:
                    continue
                if end_ns is not None and s.start_time_unix_nano > end_ns:
                    continue
                duration = s.end_time_unix_nano - s.start_time_unix_nano
                if min_duration_ns is not None and duration < min_duration_ns:
                    continue
                if max_duration_ns is not None and duration > max_duration_ns:
                    continue
                if tags and not _span_has_tags(s, resource_attrs, tags):
                    continue
                return True
        return False

    def glidein_spans(self, glidein_uuid: str) -> List[Dict[str, Any]]:
        """Every span emitted under one glidein's resource(s), in all its traces, by start time."""
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
        chunks: List[Tuple[int, ScopeSpans]] = []
        for trace_id in trace_ids:
            chunks.extend(self.chunks(trace_id, resource_ids))
        return self._span_dicts(chunks)

    def glideins(self, limit: int = 100) -> List[Dict[str, Any]]:
        """Recently seen glideins: uuid, service, site, entry and time range."""
        conn = self._conn()
        rows = conn.execute(
            "SELECT r.glidein_uuid, min(r.id), min(r.service), min(c.start_ns), max(c.end_ns)"
            " FROM resources r JOIN chunks c ON c.resource_id = r.id"
            " WHERE r.glidein_uuid IS NOT NULL GROUP BY r.glidein_uuid ORDER BY max(c.start_ns) DESC LIMIT ?",
            (limit,),
        ).fetchall()
        attrs = {r[1]: self._resource(conn, r[1])[1] for r in rows}
        rows = [(r[0], r[2], r[3], r[4], attrs[r[1]].get("glidein.site"), attrs[r[1]].get("glidein.entry"))
                for r in rows]
        return [
            {"uuid": r[0], "service": r[1], "start_ns": r[2], "end_ns": r[3], "site": r[4], "entry": r[5]}
            for r in rows
        ]

    # --------------------------------------------------------------- retention

    def purge(self, now_ns: Optional[int] = None, older_than_days: Optional[float] = None) -> int:
        """Delete traces that ended before the retention window; return how many.

        Uses ``older_than_days`` or else the store's ``retention_days``; with
        neither, nothing is deleted.
        """
        days = older_than_days if older_than_days is not None else self.retention_days
        if days is None:
            return 0
        cutoff = (now_ns if now_ns is not None else time.time_ns()) - int(days * 86400 * 1e9)
        with self._write_lock:
            conn = self._write_conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                old = [r[0] for r in conn.execute("SELECT trace_id FROM traces WHERE end_ns < ?", (cutoff,))]
                for i in range(0, len(old), 500):
                    batch = old[i:i + 500]
                    marks = ",".join("?" * len(batch))
                    for table in ("chunks", "trace_resources", "trace_ops", "traces"):
                        conn.execute(f"DELETE FROM {table} WHERE trace_id IN ({marks})", batch)
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
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            if old:
                self._known.clear()
                self._ops_seen.clear()
        return len(old)


def span_to_dict(
    s: Span,
    service: str,
    resource: Dict[str, Any],
    scope: str,
    scope_version: str = "",
    resource_id: Optional[int] = None,
) -> Dict[str, Any]:
    """One OTLP span as the plain dict documented on TraceStore.get_trace."""
    parent = s.parent_span_id
    return {
        "trace_id": s.trace_id.hex(),
        "span_id": s.span_id.hex(),
        "parent_span_id": "" if _is_root(parent) else parent.hex(),
        "name": s.name,
        "kind": s.kind,
        "start_ns": s.start_time_unix_nano,
        "end_ns": s.end_time_unix_nano,
        "status_code": s.status.code,
        "status_message": s.status.message,
        "attributes": attributes_to_dict(s.attributes),
        "events": [
            {"name": e.name, "time_ns": e.time_unix_nano, "attributes": attributes_to_dict(e.attributes)}
            for e in s.events
        ],
        "links": [
            {"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex(), "attributes": attributes_to_dict(l.attributes)}
            for l in s.links
        ],
        "trace_state": s.trace_state,
        "flags": s.flags,
        "resource": resource,
        "resource_id": resource_id,
        "service": service,
        "scope": scope,
        "scope_version": scope_version,
    }


def _span_has_tags(s: Span, resource_attrs: Dict[str, Any], tags: Dict[str, str]) -> bool:
    """Jaeger's rule: each tag must be on the span, its process (resource) or one of its logs."""
    for key, want in tags.items():
        if key in resource_attrs and tag_text(resource_attrs[key]) == want:
            continue
        if _special_tag(s, key) == want:
            continue
        if _has_attribute(s.attributes, key, want):
            continue
        if any(_has_attribute(e.attributes, key, want) for e in s.events):
            continue
        return False
    return True


def _has_attribute(attributes: Iterable[KeyValue], key: str, want: str) -> bool:
    # Only the matching key's value is converted: most spans have no such key.
    return any(kv.key == key and tag_text(any_value_to_python(kv.value)) == want for kv in attributes)


def _special_tag(s: Span, key: str) -> Optional[str]:
    """Tags Jaeger derives from span fields rather than attributes."""
    if key == "error":
        return "true" if s.status.code == STATUS_ERROR else None
    if key == "otel.status_code":
        return {STATUS_OK: "OK", STATUS_ERROR: "ERROR"}.get(s.status.code)
    if key == "otel.status_description":
        return s.status.message or None
    if key == "span.kind":
        return SPAN_KIND_NAMES.get(s.kind)
    return None


#: OTLP SpanKind -> the ``span.kind`` tag value Jaeger shows.
SPAN_KIND_NAMES = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
