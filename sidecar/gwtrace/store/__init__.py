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

``TraceStore`` (here) is what one file keeps, by kind: ``traces.Traces``
(ingest, retention, search, and ``Reader``'s reads), ``live.LiveSnapshots``
(each running glidein's open spans), ``glidein_records.GlideinRecords``
(records, hourly cells, summaries) and ``metrics.Metrics`` (what each glidein
and job used: resource metrics per subject); ``parts`` is how other packages hand the
store their tables and rules (the store imports none of them). Their
collaborators have one job each: ``schema`` (tables, migrations), ``connections`` (per-thread
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
from typing import Any, Optional

from gwtrace.home import SQLITE_COMPANIONS, check_store_files, gwtrace_home, open_own_file
from . import glidein_summaries, metrics, parts
from .connections import BUSY_TIMEOUT_MS, CHECKPOINT_BYTES, Connections
from .glidein_records import GlideinRecords
from .live import LiveSnapshots
from .metrics import Metrics
from .reader import ReadBudget, ReadList, ResourceCache
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
from .traces import Traces
from .wire import scope_spans_slices
from .writer import GLIDEIN_UUID_KEYS, Writer

__all__ = [
    "BUSY_TIMEOUT_MS", "CHECKPOINT_BYTES", "GLIDEIN_UUID_KEYS", "ReadBudget", "ReadList", "SCHEMA_VERSION",
    "SPAN_KIND_NAMES",
    "STATUS_ERROR", "STATUS_OK", "STATUS_UNSET", "StoreUnreadable", "TraceStore", "any_value_to_python",
    "attributes_to_dict", "create_store_file", "default_store_path", "normalize_trace_id", "scope_spans_slices", "span_to_dict",
    "tag_text",
]


def default_store_path() -> pathlib.Path:
    """``${GWTRACE_HOME:-~/.local/share/gwtrace}/traces.db``."""
    return gwtrace_home() / "traces.db"


class StoreUnreadable(OSError):
    """The file is missing, not a gwtrace store, or damaged; the message says which, in one line."""


class TraceStore(Traces, LiveSnapshots, GlideinRecords, Metrics):
    """OTLP spans in one SQLite file, with the live snapshots and glidein records kept next to them.

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
        metrics_retention_days: Optional[float] = None,
    ):
        self.path = pathlib.Path(path) if path is not None else default_store_path()
        if retention_days is not None and (math.isnan(retention_days) or retention_days <= 0):
            raise ValueError("retention_days must be a positive number of days")
        if metrics_retention_days is not None and (math.isnan(metrics_retention_days) or metrics_retention_days <= 0):
            raise ValueError("metrics_retention_days must be a positive number of days")
        self.retention_days = retention_days
        self.metrics_retention_days = metrics_retention_days
        if create:
            create_store_file(self.path)
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
        Traces.__init__(self, self._connections, ResourceCache())
        self._parts_seen = -1
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
        if retention_days is not None or metrics_retention_days is not None:
            self.purge_metrics()

    def _init_schema(self, create: bool) -> None:
        with self._connections.transaction() as conn:
            # Every store has a user_version (1 up): 0 is an empty file or another program's database.
            if not create and conn.execute("PRAGMA user_version").fetchone()[0] == 0:
                raise StoreUnreadable(f"{self.path} is not a gwtrace store")
            migrate(conn, self.path)

    def _apply_parts(self) -> None:
        """The tables and migrations of the parts registered (``store.parts``), on the first use that needs
        them and after each registration since: opening a store reads nothing but its header."""
        if self._parts_seen != parts.generation():
            with self._connections.transaction() as conn:
                self._parts_seen = parts.apply(conn, glidein_summaries.summary_parts() + [metrics.PART])

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        self._connections.close()

    def __enter__(self) -> "TraceStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------- tables of other packages

    def transaction(self) -> Any:
        """A write transaction on the store's one writer connection (``with store.transaction() as conn``),
        for tables other packages keep in the store (``journey.table``)."""
        self._apply_parts()
        return self._connections.transaction()

    def reader(self) -> Any:
        """This thread's read connection, for tables other packages keep in the store."""
        self._apply_parts()
        return self._connections.reader()


def _not_a_store(path: pathlib.Path, exc: sqlite3.DatabaseError) -> StoreUnreadable:
    """Another program's file, or a damaged store: one line, with what to do."""
    if "malformed" in str(exc):
        return StoreUnreadable(f"{path} is a damaged store ({exc}): restore it from a backup, or move it "
                               "away and let `gwtrace ingest` or `gwtrace serve` make a new one")
    return StoreUnreadable(f"{path} is not a gwtrace store ({exc}): give the traces.db that `gwtrace serve` "
                           "or `gwtrace ingest` writes")


def create_store_file(path: pathlib.Path) -> None:
    """The store's directory and file, owner-only: traces carry host names, user
    names and job ids. Only a private directory and files of the user's own,
    never a symbolic link (home.py: another user's link planted as traces.db
    would have their file turned into a database).

    A new store is built beside its path and linked into place complete, so that
    a reader never finds it empty: a sidecar says "ready" before it makes its
    embedded store, and `gwtrace job`, the pages or a test may look at that
    moment (an empty file is "not a gwtrace store" to them)."""
    if not os.path.lexists(path):
        _build_new_store(path)
    os.close(open_own_file(path, os.O_CREAT | os.O_RDWR))
    check_store_files(path)


def _build_new_store(path: pathlib.Path) -> None:
    """A store with its schema in a private file beside ``path``, hard-linked to ``path`` (atomic; a store
    another process made first stays, this one is dropped)."""
    import threading

    tmp = path.with_name(f".{path.name}.new-{os.getpid()}-{threading.get_ident()}")
    for suffix in ("",) + SQLITE_COMPANIONS:
        _unlink(f"{tmp}{suffix}")              # left by a process killed while building
    os.close(open_own_file(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR))
    try:
        connections = Connections(tmp)
        try:
            with connections.transaction() as conn:
                migrate(conn, tmp)
        finally:
            connections.close()                # the last connection: SQLite folds the WAL into the file
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:         # a file system without hard links: made in place, as before
            pass
    finally:
        for suffix in ("",) + SQLITE_COMPANIONS:
            _unlink(f"{tmp}{suffix}")


def _unlink(name: str) -> None:
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass
