"""The factory files a backfill has read, so that the next run reads only what changed.

Why: a cron job or ``ingest --watch`` backfills a factory every few minutes,
forever; parsing its 40 000 unchanged ``.out``/``.err`` files again each time
cost as much as the first run (284 s against 297 s for 20 000 glideins).

A file is known by its path and identity: device and inode (a file replaced
under the same name, as HTCondor's transfer does, is a new file), size and
modification time in nanoseconds. A file whose four agree with the row kept
for its path is not read again; a grown or rewritten one is (a glidein's
``.out`` that was incomplete at the last run is read again once complete).
Condor-G event logs (``condor_activity_*.log``) are followed by byte offset
(``head`` is ``factory.eventlog.log_head`` of their first bytes: a log rotated
under the same name starts again at 0).

The table lives where the records go: the embedded store, or, when spans go
to an OTLP endpoint, a small SQLite file beside the ingest ledger
(``SideBook``), so the bookkeeping of a run is in one place either way.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, Optional

from gwtrace.store import create_store_file
from gwtrace.store.glidein_reads import OUTCOME_INDEX
from . import states

SCHEMA = """
CREATE TABLE IF NOT EXISTS factory_files (
    path     TEXT PRIMARY KEY,                -- a directory's files are a range of paths (``in_dir``)
    dev      INTEGER NOT NULL, ino INTEGER NOT NULL,
    size     INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    offset   INTEGER NOT NULL DEFAULT 0,   -- event logs: read up to here
    head     TEXT                          -- event logs: log_head of their first bytes
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class Seen:
    """A file as it was when it was read (``os.stat`` fields that change when its content does)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    offset: int = 0
    head: Optional[str] = None

    @classmethod
    def of(cls, st: os.stat_result) -> "Seen":
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def same_file(self, other: "Seen") -> bool:
        """The same file, unchanged (an event log's offset and head are compared by the caller)."""
        return (self.dev, self.ino, self.size, self.mtime_ns) == (other.dev, other.ino, other.size, other.mtime_ns)


def ensure(conn: sqlite3.Connection) -> None:
    """Create the table (the caller holds a write transaction)."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether a store holds the table (a store no backfill ran on has none; readers must not create it)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() \
        is not None


def in_dir(conn: sqlite3.Connection, directory: str) -> Dict[str, Seen]:
    """The files of one directory read before: path -> how they were."""
    if not has_table(conn, "factory_files"):
        return {}
    prefix = directory.rstrip(os.sep) + os.sep
    # the paths from "dir/" up to "dir0" ("0" follows "/"): the directory's files, and those of its subdirectories
    return {path: Seen(*row) for path, *row in conn.execute(
        "SELECT path, dev, ino, size, mtime_ns, offset, head FROM factory_files WHERE path >= ? AND path < ?",
        (prefix, prefix[:-1] + chr(ord(os.sep) + 1))) if os.path.dirname(path) == prefix[:-1]}


def mark(conn: sqlite3.Connection, items: Iterable["tuple[str, Seen]"]) -> None:
    """Remember files as read (the caller holds a write transaction, after what was made of them is stored)."""
    conn.executemany("INSERT OR REPLACE INTO factory_files VALUES (?,?,?,?,?,?,?)",
                     [(path, s.dev, s.ino, s.size, s.mtime_ns, s.offset, s.head) for path, s in items])


class SideBook:
    """The backfill's own tables in a SQLite file of their own (spans go to an OTLP endpoint, not a store).

    Offers what ``TraceStore`` offers its packages: ``reader()`` and ``transaction()``.
    """

    def __init__(self, path: Path) -> None:
        create_store_file(path)          # owner-only, in a private directory, never through a link (as the store)
        self._conn = sqlite3.connect(str(path), isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode = WAL")

    def reader(self) -> sqlite3.Connection:
        return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._conn.close()


def book_ready(book: Any) -> Any:
    """The book with the backfill's tables made (``seen`` and ``states``)."""
    with book.transaction() as conn:
        ensure(conn)
        states.ensure(conn)
        if has_table(conn, "glideins"):        # a store made before the site lights' index: it gains it here
            conn.execute(OUTCOME_INDEX)
    return book
