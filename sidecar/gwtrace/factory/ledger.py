"""The ingest ledger: which shipped-home blocks went to which destination.

``gwtrace ingest`` records the sha256 of every block it forwarded, so that
reading the same glidein output again sends nothing twice. Two ingests on one
ledger at once (a cron ``--once`` and the ``--watch`` service, or two crons)
would both read "not yet sent" and both send: so a run holds an exclusive
``flock`` on the ledger file while it sends (``Ledger.locked``), and reads the
lines the other one appended before it looks at anything. A run that cannot
get the lock in a bounded time gives up with ``LedgerBusy`` (one line for the
operator, nothing lost: the next run sends it). flock needs the ledger on a
local file system (``GWTRACE_HOME``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import Iterator, Set

from gwtrace.home import check_own_file, gwtrace_home, open_own_file

LEDGER_NAME = "ingested.sha256"
#: How long a run waits for another one's lock by default (seconds).
DEFAULT_LOCK_WAIT_S = 120.0


class LedgerBusy(RuntimeError):
    """Another ingest held the ledger for the whole wait."""


def default_ledger() -> Path:
    return gwtrace_home() / LEDGER_NAME


class Ledger:
    """Blocks already forwarded, per destination: ``<sha256> <destination>``
    lines, append-only. Ingesting into another collector or store sends the
    block again; into the same one, never. A line with a digest only (written
    before destinations were recorded) counts for every destination, so an
    upgrade never sends anything twice."""

    def __init__(self, path: Path, destination: str) -> None:
        self.path = path
        self.destination = destination
        self.seen: Set[str] = set()
        self._offset = 0
        self.refresh()

    def refresh(self) -> None:
        """Take in the complete lines appended since the last look (by any process)."""
        check_own_file(self.path)           # a link or another user's file: refused before anything is done
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        complete = data[: data.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            digest, _, where = line.strip().partition(" ")
            if digest and (not where or where == self.destination):
                self.seen.add(digest)

    @contextlib.contextmanager
    def locked(self, wait_s: float = DEFAULT_LOCK_WAIT_S) -> Iterator["Ledger"]:
        """Hold the ledger for a run: the other ingests' lines read first, none of theirs meanwhile."""
        fd = open_own_file(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND)    # home.py: ours alone
        try:
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LedgerBusy(f"the ledger {self.path} is in use by another gwtrace ingest "
                                         f"(waited {wait_s:g} s)") from None
                    time.sleep(0.1)
            self.refresh()
            yield self
        finally:
            os.close(fd)          # releases the lock

    def add(self, digest: str) -> None:
        with os.fdopen(open_own_file(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a") as f:
            f.write(f"{digest} {self.destination}\n")
        self.seen.add(digest)
