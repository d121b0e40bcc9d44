"""``TraceStore``, the store of one file, and its creation (the package docstring says how it is shaped).

A module of its own so that ``import gwtrace.store`` (``parts``, ``default_store_path``) stays cheap:
the package loads this, the SQL layers and the OTLP protobuf classes on first use of ``TraceStore``.
"""

from __future__ import annotations

import math
import os
import pathlib
import sqlite3
from typing import Any, Optional

from gwtrace.home import SQLITE_COMPANIONS, check_store_files, open_own_file
from . import glidein_summaries, metrics, parts  # noqa: F401 - their parts register with the store
from . import StoreUnreadable, default_store_path
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
