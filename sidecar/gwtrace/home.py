"""Where gwtrace keeps its files on a machine: ``${GWTRACE_HOME:-~/.local/share/gwtrace}``.

One home for the rule, because the store (``traces.db``) and the ingest
ledger (``ingested.sha256``) must agree on it: an operator who moves one with
GWTRACE_HOME moves both.
"""

from __future__ import annotations

import os
from pathlib import Path


def gwtrace_home() -> Path:
    """``$GWTRACE_HOME`` if set and not empty, else ``~/.local/share/gwtrace``."""
    home = os.environ.get("GWTRACE_HOME")
    return Path(home) if home else Path.home() / ".local" / "share" / "gwtrace"
