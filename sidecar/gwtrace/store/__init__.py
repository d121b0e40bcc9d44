# size: TraceStore is ~250 lines of one-line delegations: the facade the module docstring describes.
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
``trace_ops``        which (service, span name, kind) a trace contains, and when
                     its spans of it start (earliest, latest): search by
                     operation and window (``ops``)
``operations``       distinct (service, span name, kind), for the query API,
                     with how far its spans start behind their trace's start

Span-level filters that are not summarised (span attributes, span durations)
are answered by decoding the chunks of the candidate traces only.

Ingest is idempotent: a span whose (trace id, span id) is already stored is
kept once (the older chunk is rewritten without the copy that goes), so a
sidecar that retries a batch after a lost response never duplicates spans;
which copy stays is ``writer``'s rule (a live span over a backfilled one).

The package is a facade (``TraceStore``, here) over collaborators with one
job each: ``schema`` (tables, migrations), ``connections`` (per-thread
readers, the one writer connection and its transaction helper, background
WAL checkpoints), ``chunks`` (a request split into chunks, no SQL),
``writer`` (group commit, idempotent replacement, retention), ``ops`` (each
trace's operations and when their spans start, for search by operation and
window), ``reader`` and
``query`` (search, with one WHERE builder for traces and chunks), ``tags``
(Jaeger's tag semantics, shared with the server), ``values`` and ``wire``
(OTLP values and the protobuf wire walker).

Several processes (sidecars and one server) may share a file: WAL mode, a busy
timeout and ``BEGIN IMMEDIATE`` for writes.  Within one process a TraceStore may
be used from several threads; each thread gets its own connection for reads,
and every write goes through one writer connection (whose page cache then
stays warm).  WAL checkpoints run in a background thread, so no ingest waits
for one.
"""

from __future__ import annotations

import math
import os
import pathlib
import sqlite3
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans

from gwtrace.home import check_store_files, gwtrace_home, open_own_file
from . import glidein_parts, glidein_reads, glideins, live
from . import limits
from .chunks import plan_request, request_slices
from .connections import BUSY_TIMEOUT_MS, CHECKPOINT_BYTES, Connections
from .query import TraceFinder, TraceQuery
from .reader import ChunkRow, ReadBudget, Reader, ReadList, ResourceCache
from .schema import SCHEMA_VERSION, migrate
from .tags import SPAN_KIND_NAMES
from .values import (
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    any_value_to_python,
    attributes_to_dict,
    normalize_trace_id,
    span_to_dict,
    tag_text,
)
from .wire import scope_spans_slices
from .writer import GLIDEIN_UUID_KEYS, Writer

#: traces whose records are made per transaction when they are refreshed
REFRESH_BATCH = 500

__all__ = [
    "BUSY_TIMEOUT_MS", "CHECKPOINT_BYTES", "GLIDEIN_UUID_KEYS", "ReadBudget", "ReadList", "SCHEMA_VERSION",
    "SPAN_KIND_NAMES",
    "STATUS_ERROR", "STATUS_OK", "STATUS_UNSET", "StoreUnreadable", "TraceStore", "any_value_to_python",
    "attributes_to_dict", "default_store_path", "normalize_trace_id", "scope_spans_slices", "span_to_dict",
    "tag_text",
]


def default_store_path() -> pathlib.Path:
    """``${GWTRACE_HOME:-~/.local/share/gwtrace}/traces.db``."""
    return gwtrace_home() / "traces.db"


class StoreUnreadable(OSError):
    """The file is missing, not a gwtrace store, or damaged; the message says which, in one line."""


class TraceStore:
    """OTLP spans in one SQLite file: a facade over the connections, writer, reader and search.

    ``create=False`` opens an existing store only (for readers such as
    ``gwtrace show``): no directory or file is created, and a file that is not
    a store is refused rather than turned into one.
    """

    def __init__(
        self,
        path: "str | os.PathLike[str] | None" = None,
        retention_days: Optional[float] = None,
        *,
        create: bool = True,
    ):
        self.path = pathlib.Path(path) if path is not None else default_store_path()
        if retention_days is not None and (math.isnan(retention_days) or retention_days <= 0):
            raise ValueError("retention_days must be a positive number of days")
        self.retention_days = retention_days
        if create:
            _create_file(self.path)
        elif not self.path.exists():
            raise StoreUnreadable(f"no store at {self.path} yet: `gwtrace ingest` or `gwtrace serve` makes it "
                                  "(run one first), or give the path of one")
        elif not self.path.is_file():
            raise StoreUnreadable(f"{self.path} is not a file: give the path of a gwtrace store (traces.db)")
        elif self.path.stat().st_size == 0:
            raise StoreUnreadable(f"{self.path} is empty, not a gwtrace store")
        try:
            self._connections = Connections(self.path, create=create)
        except sqlite3.OperationalError:
            raise                         # locked, no permission...: sqlite's own words say it
        except sqlite3.DatabaseError as exc:
            raise _not_a_store(self.path, exc) from None
        self._resources = ResourceCache()
        self._reader = Reader(self._connections, self._resources)
        self._writer = Writer(self._connections)
        try:
            self._init_schema(create)
        except BaseException as exc:
            self._connections.close()
            if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
                raise _not_a_store(self.path, exc) from None
            raise
        if retention_days is not None:
            self.purge()

    def _init_schema(self, create: bool) -> None:
        with self._connections.transaction() as conn:
            # Every store has a user_version (1 up): 0 is an empty file or another program's database.
            if not create and conn.execute("PRAGMA user_version").fetchone()[0] == 0:
                raise StoreUnreadable(f"{self.path} is not a gwtrace store")
            migrate(conn, self.path)

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        self._connections.close()

    def __enter__(self) -> "TraceStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ ingest

    def ingest(self, request: ExportTraceServiceRequest, raw: Optional[bytes] = None) -> Tuple[int, int, str]:
        """Store the spans of an export request; return (accepted, rejected, message).

        What is over the limits (``store.limits``: attributes, events, links,
        string sizes) is cut and marked ``gwtrace.truncated`` first, in place;
        more spans than one request may hold raise ``limits.TooLarge``.  Spans
        with malformed ids or times are rejected and counted; the others are
        stored in one transaction.  The message names the first problems (and
        the cut spans), in the form OTLP's partial success ``error_message``
        expects.  ``raw``, the request's own encoding when the caller has it,
        lets whole ScopeSpans be stored without re-serializing them.
        """
        # Planned before taking the write lock: this is the Python part, and
        # other threads may write meanwhile (sqlite3 releases the GIL).
        slices = request_slices(request, raw)
        cut = limits.enforce(request, slices)
        if cut:
            raw, slices = None, None      # the cut ScopeSpans are encoded again
        plan, rejected, message = plan_request(request, raw, slices, cut)
        if plan:
            self._writer.write(plan)
        return sum(c.n_spans for _, _, chunks in plan for c in chunks), rejected, message

    def purge(self, now_ns: Optional[int] = None, older_than_days: Optional[float] = None) -> int:
        """Delete traces that ended before the retention window; return how many.

        Uses ``older_than_days`` or else the store's ``retention_days``; with
        neither, nothing is deleted.
        """
        days = older_than_days if older_than_days is not None else self.retention_days
        if days is None:
            return 0
        cutoff = (now_ns if now_ns is not None else time.time_ns()) - int(days * 86400 * 1e9)
        return self._writer.purge_before(cutoff)

    # ----------------------------------------------------------------- reading

    def span_count(self) -> int:
        """Number of distinct spans stored."""
        return self._reader.span_count()

    def trace_count(self) -> int:
        return self._reader.trace_count()

    def last_trace_id(self, service: Optional[str] = None) -> Optional[str]:
        """The trace whose root span (or, lacking one, earliest span) started last."""
        return self._reader.last_trace_id(service)

    def chunks(self, trace_id: bytes, resource_ids: Optional[Sequence[int]] = None) -> Iterator[Tuple[int, ScopeSpans]]:
        """(resource id, ScopeSpans) of each chunk of a trace, oldest first."""
        return self._reader.chunks(trace_id, resource_ids)

    def trace_chunks(self, trace_id: "str | bytes", budget: Optional[ReadBudget] = None) -> ReadList:
        """A trace as stored: (resource id, service, resource attributes, ScopeSpans) per chunk.

        For readers that convert spans straight from OTLP (the query API)
        without building the dicts of ``get_trace`` first.  As much as one
        answer may read (``budget``, shared by the traces of one answer; a
        fresh ``ReadBudget`` by default): ``cut`` on the list says what was
        left out.  ``get_trace``, ``get_trace_otlp`` and ``glidein_chunks``
        are bounded the same way.
        """
        return self._reader.trace_chunks(trace_id, budget)

    def get_trace(self, trace_id: "str | bytes") -> List[Dict[str, Any]]:
        """All spans of a trace as plain dicts, sorted by start time ([] if unknown)."""
        return self._reader.get_trace(trace_id)

    def get_trace_otlp(self, trace_id: "str | bytes") -> List[Tuple[Resource, str, List[ScopeSpans]]]:
        """A trace as OTLP messages: [(resource, resource schema_url, [ScopeSpans...])]."""
        return self._reader.get_trace_otlp(trace_id)

    def glidein_chunks(self, glidein_uuid: str) -> List[ChunkRow]:
        """Every chunk under one glidein's resource(s), in all its traces (as ``trace_chunks``)."""
        return self._reader.glidein_chunks(glidein_uuid)

    def glidein_spans(self, glidein_uuid: str) -> List[Dict[str, Any]]:
        """Every span emitted under one glidein's resource(s), in all its traces, by start time."""
        return self._reader.glidein_spans(glidein_uuid)

    def glideins(self, limit: int = 100) -> List[Dict[str, Any]]:
        """Recently seen glideins: uuid, service, site, entry and time range."""
        return self._reader.glideins(limit)

    def services(self) -> List[str]:
        return self._reader.services()

    def operations(self, service: str, kind: Optional[int] = None) -> List[Tuple[str, int]]:
        """Distinct (span name, kind) seen for a service."""
        return self._reader.operations(service, kind)

    def resource_attribute_values(self, key: str, limit: int = 1000) -> List[str]:
        """Distinct values of a resource attribute (e.g. glidein.site), for search forms."""
        return self._reader.resource_attribute_values(key, limit)

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
        """Summaries of the most recent traces matching every given condition (see ``store.query``)."""
        query = TraceQuery(
            service=service, operation=operation, span_kind=span_kind, resource_attrs=dict(resource_attrs or {}),
            tags=dict(tags or {}), start_ns=start_ns, end_ns=end_ns, min_duration_ns=min_duration_ns,
            max_duration_ns=max_duration_ns, min_trace_duration_ns=min_trace_duration_ns, status=status,
            limit=limit,
        )
        return TraceFinder(self._connections.reader(), self._resources).find(query)

    # ----------------------------------------------------------- live snapshots

    def put_live_snapshot(self, request: ExportTraceServiceRequest, now_ns: Optional[int] = None) -> bool:
        """Keep a sidecar's snapshot of its open spans (``store.live``); False: a heartbeat of an unknown glidein.

        Raises ``live.BadSnapshot`` for a request that is not a gwtrace snapshot.
        """
        with self._connections.transaction() as conn:
            return live.put(conn, request, now_ns)

    def live_snapshots(self) -> List[Dict[str, Any]]:
        """The latest snapshot of every glidein whose real root span has not arrived yet."""
        return live.rows(self._connections.reader())

    def live_open_spans(self, key: str) -> List[Dict[str, Any]]:
        """The open spans of one glidein's latest snapshot."""
        return live.open_spans(self._connections.reader(), key)

    # ------------------------------------------------- tables of other packages

    def transaction(self) -> Any:
        """A write transaction on the store's one writer connection (``with store.transaction() as conn``),
        for tables other packages keep in the store (``journey.table``)."""
        return self._connections.transaction()

    def reader(self) -> Any:
        """This thread's read connection, for tables other packages keep in the store."""
        return self._connections.reader()

    # ---------------------------------------------------------- glidein records

    def put_glidein_records(self, records: Sequence[Any]) -> Dict[int, str]:
        """Store the records the factory's files gave, keyed by their glidein's trace id, with their hourly
        cells; return {index in ``records``: trace id} for those whose spans belong in another trace than
        their identity's (a Condor-G-only record of a glidein already known by its live trace).

        A record that names its uuid replaces what was kept of its Condor-G job before (a record, and a trace
        of backfilled spans only). A glidein that also has a live trace gets the two merged on the next
        read (``refresh_glidein_records``); one a node of gwtrace before issue 26 traced under the
        uuid-less id has its spans sent there (``glidein_parts.legacy_traces``).
        """
        moved: Dict[int, str] = {}
        with self._connections.transaction() as conn:
            pairs = [(glidein_parts.record_key(rec), rec) for rec in records]
            others = glidein_parts.same_jobs(conn, pairs)
            for index, (key, rec) in enumerate(pairs):
                if key not in others:
                    continue                # the common case: no other glidein of its Condor-G job is stored
                self._drop_queued(conn, glidein_parts.queued_of(rec, others[key]))
                host = glidein_parts.traced_of_job(conn, rec, others[key])
                if host is not None:
                    pairs[index] = (host[0], rec)
                    moved[index] = host[1].hex()
            for index, trace in glidein_parts.legacy_traces(conn, records).items():
                pairs[index][1].trace_id = trace.hex()   # its spans join the live trace a pre-uuid node made
                moved[index] = trace.hex()
            keys = [key for key, _ in pairs]
            glidein_parts.drop_files(conn, keys)
            elsewhere = glideins.put_many(conn, pairs, source="files")     # traced glideins' other trace ids
            glideins.mark(conn, glidein_parts.with_live_spans(conn, keys + elsewhere))
        return moved

    def _drop_queued(self, conn: Any, keys: List[bytes]) -> None:
        """What was kept of a glidein under a uuid-less key: its record, and its trace if only backfilled."""
        glideins.forget(conn, keys)
        for key in keys:
            self._writer.drop_backfilled_trace(conn, key)

    def refresh_glidein_records(self) -> int:
        """(Re)make the records of traced glideins whose spans arrived since; return how many were made.

        Ingest only marks such traces (cheap, in its own transaction); the spans are read back and
        turned into records here, before any read of records. A glidein the factory's files were read for
        gets the two merged (``factory/merge.py``); one whose trace holds backfilled spans only keeps the
        files' record as it is (nothing to add, nothing decoded).
        """
        from gwtrace.factory.from_trace import record_from_trace

        reader = self._connections.reader()
        pending = glideins.dirty(reader)
        if not pending:
            return 0
        # a batch at a time: memory stays flat however many traces arrived
        return sum(self._refresh(reader, pending[at:at + REFRESH_BATCH], record_from_trace)
                   for at in range(0, len(pending), REFRESH_BATCH))

    def _refresh(self, reader: Any, pending: List[bytes], record_from_trace: Any) -> int:
        files = glidein_parts.with_files(reader, pending)
        live = glidein_parts.with_live_spans(reader, [t for t in pending if t in files])
        made: List[Tuple[bytes, Any]] = []
        for trace_id in pending:
            if trace_id in files and trace_id not in live:
                continue                    # backfilled spans only: the files' record stands
            rec = record_from_trace(self.get_trace(trace_id))
            if rec is not None:
                rec.trace_id = trace_id.hex()  # type: ignore[attr-defined]  # where its spans are
                made.append((glidein_parts.record_key(rec, trace_id), rec))
        with self._connections.transaction() as conn:
            known = glidein_parts.files_records(conn, [key for key, _ in made])
            others = glidein_parts.same_jobs(conn, [(key, rec) for key, rec in made if key not in known])
            pairs: Dict[str, List[Tuple[bytes, Any]]] = {"trace": [], "files+trace": []}
            for key, rec in made:
                mine = known.get(key)
                queued = glidein_parts.queued_of(rec, others.get(key, []))
                if mine is None and len(queued) == 1:     # its Condor-G job, kept before its uuid was known
                    mine = glidein_parts.files_records(conn, queued)[queued[0]]
                    self._drop_queued(conn, queued)
                if mine is None:
                    pairs["trace"].append((key, rec))
                else:
                    glidein_parts.keep_files(conn, [(key, mine)])
                    pairs["files+trace"].append((key, _merged(mine, rec)))
            for source, items in pairs.items():
                glideins.put_many(conn, items, source=source)
            glideins.clean(conn, pending)
        return len(made)

    def glidein_records(self, since: Optional[int] = None, until: Optional[int] = None, site: Optional[str] = None,
                        entry: Optional[str] = None, frontend: Optional[str] = None) -> Iterator[Dict[str, Any]]:
        """Stored records (``GlideinRecord.to_dict()`` + ``trace_id``); filters as ``gwtrace glideins``."""
        self.refresh_glidein_records()
        return glideins.records(self._connections.reader(), since=since, until=until, site=site, entry=entry,
                                frontend=frontend)

    def glidein_outcomes(self, since: Optional[int] = None, until: Optional[int] = None
                         ) -> Iterator[Tuple[Any, Any, Any]]:
        """(site, ended, status) of the glideins that ended in [since, until) (the site lights)."""
        self.refresh_glidein_records()
        return glidein_reads.outcomes(self._connections.reader(), since, until)

    def glidein_statuses(self, trace_ids: Sequence[bytes]) -> Dict[str, Tuple[Any, Any]]:
        """trace id (hex) -> (status, failed script) of the glideins whose record those traces are (as stored:
        the search page must stay quick, so traced glideins not yet remade keep their last record)."""
        return glidein_reads.statuses(self._connections.reader(), trace_ids)

    def glidein_page(self, **query: Any) -> Tuple[int, List[Dict[str, Any]]]:
        """(count, records of one page) of the stored glideins: ``store.glidein_reads.page``."""
        self.refresh_glidein_records()
        return glidein_reads.page(self._connections.reader(), **query)

    def glidein_record_texts(self, since: Optional[int] = None, until: Optional[int] = None,
                             site: Optional[str] = None, entry: Optional[str] = None,
                             frontend: Optional[str] = None) -> Iterator[str]:
        """``glidein_records`` as JSON texts, as stored (``gwtrace glideins --format json``)."""
        self.refresh_glidein_records()
        return glidein_reads.record_texts(self._connections.reader(), since=since, until=until, site=site, entry=entry,
                                     frontend=frontend)

    def glidein_summaries(self, since: Optional[int] = None, until: Optional[int] = None,
                          site: Optional[str] = None, entry: Optional[str] = None,
                          frontend: Optional[str] = None,
                          part: Optional[Tuple[Optional[int], Optional[int]]] = None,
                          refresh: bool = True) -> Iterator[List[Any]]:
        """The analysis summaries (``analysis.summary``) of the stored glideins, one at a time; ``part``: a range
        of start keys (``summary_cuts``); ``refresh=False``: the caller made the traced glideins' records."""
        if refresh:
            self.refresh_glidein_records()
        return glideins.summaries(self._connections.reader(), part, since=since, until=until, site=site,
                                  entry=entry, frontend=frontend)

    def summary_cuts(self, parts: int, min_part: int, **filters: Any) -> List[int]:
        """Start keys cutting the glideins ``glidein_summaries(**filters)`` gives into parts (``analysis.fold``)."""
        return glideins.summary_cuts(self._connections.reader(), parts, min_part, **filters)

    def glidein_entry(self, trace_id: str) -> Optional[str]:
        """The entry of the glidein the trace ``trace_id`` (hex) is the record of: by key, else by scan
        (a traced glidein whose spans are in a trace other than its identity's)."""
        self.refresh_glidein_records()
        reader = self._connections.reader()
        entry = glideins.entry_of(reader, bytes.fromhex(trace_id))
        if entry is None:
            entry = next((row[6] for row in glideins.rows(reader, since=None, until=None, site=None, entry=None,
                                                          frontend=None) if row[0] == trace_id), None)
        return entry

    def glidein_record_rows(self, since: Optional[int] = None, until: Optional[int] = None,
                            site: Optional[str] = None, entry: Optional[str] = None,
                            frontend: Optional[str] = None) -> Iterator[Tuple[Any, ...]]:
        """Light tuples in ``store.glideins.ROW_COLUMNS`` order, no JSON decoded."""
        self.refresh_glidein_records()
        return glideins.rows(self._connections.reader(), since=since, until=until, site=site, entry=entry,
                             frontend=frontend)

    def glidein_series(self, bucket: int, by: Optional[str] = None, since: Optional[int] = None,
                       until: Optional[int] = None, **filters: Optional[str]) -> Dict[Tuple[str, int], Dict[str, float]]:
        """Canonical CPU seconds per (group, bucket start) and category, from the hourly cells."""
        self.refresh_glidein_records()
        return glideins.hours(self._connections.reader(), bucket, by, since, until, **filters)

    def glidein_gwms(self, by: Optional[str] = None, since: Optional[int] = None, until: Optional[int] = None,
                     **filters: Optional[str]) -> Iterator[Tuple[str, Dict[str, Any]]]:
        """(group, GlideinWMS per-glidein figures) of the glideins that ended in [since, until)."""
        self.refresh_glidein_records()
        return glideins.gwms_figures(self._connections.reader(), by, since, until, **filters)


def _not_a_store(path: pathlib.Path, exc: sqlite3.DatabaseError) -> StoreUnreadable:
    """Another program's file, or a damaged store: one line, with what to do."""
    if "malformed" in str(exc):
        return StoreUnreadable(f"{path} is a damaged store ({exc}): restore it from a backup, or move it "
                               "away and let `gwtrace ingest` or `gwtrace serve` make a new one")
    return StoreUnreadable(f"{path} is not a gwtrace store ({exc}): give the traces.db that `gwtrace serve` "
                           "or `gwtrace ingest` writes")
def _merged(files: Dict[str, Any], traced: Any) -> Any:
    """The record the files gave (JSON form) merged with the one the trace gave (``factory/merge.py``)."""
    from gwtrace.factory.merge import merge_records
    from gwtrace.factory.record import GlideinRecord

    merged = merge_records(GlideinRecord.from_dict(files), traced)
    merged.trace_id = traced.trace_id
    return merged


def _create_file(path: pathlib.Path) -> None:
    """The store's directory and file, owner-only: traces carry host names, user
    names and job ids. Only a private directory and files of the user's own,
    never a symbolic link (home.py: another user's link planted as traces.db
    would have their file turned into a database)."""
    os.close(open_own_file(path, os.O_CREAT | os.O_RDWR))
    check_store_files(path)
