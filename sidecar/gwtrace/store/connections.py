"""SQLite connections of one store: per-thread readers, one writer, background checkpoints.

Why one writer: a connection drops its page cache whenever another connection
has committed, so writes spread over per-thread connections would re-read
every B-tree page they touch, on every transaction.  Why a checkpoint thread:
a WAL checkpoint copies pages and fsyncs (tens of ms on a VM disk), and
SQLite's own after-commit checkpoint makes whichever commit crossed the
threshold pay for it.
"""

from __future__ import annotations

import contextlib
import pathlib
import sqlite3
import threading
from typing import Iterator, List, Optional

#: How long a writer waits for another process holding the write lock.
BUSY_TIMEOUT_MS = 30_000

#: Chunk bytes committed between two WAL checkpoints, run by a background thread.
CHECKPOINT_BYTES = 16 * 2**20
#: SQLite's own after-commit checkpoint stays on as a safety net with a higher
#: threshold (in pages), in case the background one cannot keep up.
_AUTOCHECKPOINT_PAGES = 4096


class Connections:
    """Opens, hands out and closes every connection a store uses, in any thread."""

    def __init__(self, path: pathlib.Path, create: bool = True):
        self.path = path
        self._create = create
        self._local = threading.local()
        self._all: List[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        #: Held by whoever uses the writer connection.
        self.write_lock = threading.Lock()
        self._writer: Optional[sqlite3.Connection] = None
        self._closed = False
        self.checkpoints = Checkpointer(self)

    def _connect(self) -> sqlite3.Connection:
        # mode=rw: an existing store is opened, never created (``create=False``).
        target, uri = (str(self.path), False) if self._create else (f"file:{self.path}?mode=rw", True)
        conn = sqlite3.connect(
            target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False, uri=uri
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if self._create:
            # Chunks are ~100 KB blobs: 16 KiB pages halve the page writes per
            # chunk.  Only takes effect on a new, empty file (before WAL).  A
            # store is in WAL mode for good, so opening one never sets these.
            conn.execute("PRAGMA page_size = 16384")
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA wal_autocheckpoint = {_AUTOCHECKPOINT_PAGES}")
        with self._all_lock:
            self._all.append(conn)
        return conn

    def reader(self) -> sqlite3.Connection:
        """This thread's connection, for reads."""
        if self._closed:
            raise RuntimeError("TraceStore is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    def writer(self) -> sqlite3.Connection:
        """The one connection every write uses, whatever the thread (callers hold write_lock)."""
        if self._closed:
            raise RuntimeError("TraceStore is closed")
        if self._writer is None:
            self._writer = self._connect()
        return self._writer

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The writer inside ``BEGIN IMMEDIATE``: committed on success, rolled back on any error."""
        with self.write_lock:
            conn = self.writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop the checkpoint thread and close every connection (in any thread)."""
        self._closed = True
        self.checkpoints.stop()
        with self._all_lock:
            for conn in self._all:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._all.clear()


class Checkpointer:
    """Copies the WAL into the database from a thread of its own, every CHECKPOINT_BYTES."""

    def __init__(self, connections: Connections):
        self._connections = connections
        self._uncheckpointed = 0
        self._wanted = threading.Event()
        #: Started on the first large write, so that readers never start one.
        self.thread: Optional[threading.Thread] = None

    def wrote(self, n_bytes: int) -> None:
        """Count bytes committed; past CHECKPOINT_BYTES, wake the checkpoint thread."""
        self._uncheckpointed += n_bytes
        if self._uncheckpointed < CHECKPOINT_BYTES:
            return
        self._uncheckpointed = 0
        if self.thread is None:
            self.thread = threading.Thread(target=self._loop, name="gwtrace-checkpoint", daemon=True)
            self.thread.start()
        self._wanted.set()

    def _loop(self) -> None:
        """PASSIVE checkpoints: they never block readers or writers."""
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._connections.closed:
                return
            try:
                self._connections.reader().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except (sqlite3.Error, RuntimeError):
                pass  # busy or closing: the next one (or SQLite's own) catches up

    def stop(self) -> None:
        if self.thread is not None:
            self._wanted.set()
            self.thread.join(timeout=30)
