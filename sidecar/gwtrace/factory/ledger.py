"""The ingest ledger: which shipped-home blocks went to which destination.

``gwtrace ingest`` records the sha256 of every block it forwarded, so that
reading the same glidein output again sends nothing twice.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Set

LEDGER_NAME = "ingested.sha256"


def default_ledger() -> Path:
    home = os.environ.get("GWTRACE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share", "gwtrace")
    return Path(home) / LEDGER_NAME


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
        if path.exists():
            for line in path.read_text().splitlines():
                digest, _, where = line.strip().partition(" ")
                if digest and (not where or where == destination):
                    self.seen.add(digest)

    def add(self, digest: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.path, "a") as f:
            f.write(f"{digest} {self.destination}\n")
        self.seen.add(digest)
