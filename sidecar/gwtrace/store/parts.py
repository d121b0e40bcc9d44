"""What other packages keep in the store, handed to it by them: the store imports none of them.

The store keeps spans; the factory, the analysis and the job journeys keep
their own derived data next to them (glidein records and their summaries, job
states). Their rules (how a record is keyed, made from a trace, merged,
summarized) and their tables are theirs, so they register them here when their package is
imported (``gwtrace/factory/__init__.py`` and the others), and the store asks
for them when it needs them. The layers stay one-way (``.importlinter``):
domain code imports the store, never the other way.

A part's tables are created, and its migration run, on a store's first use
that needs them (opening reads nothing but the header) and after each new
registration, once per version of the part (the ``store_parts`` table
remembers which version each store has; a store brought to a new schema
applies them all again).
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Type, TypeVar

__all__ = ["GlideinRules", "MissingPart", "StorePart", "Summarizer", "apply", "generation",
           "register", "rules"]

SCHEMA = "CREATE TABLE IF NOT EXISTS store_parts (name TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID"


@dataclass(frozen=True)
class StorePart:
    """Tables another package keeps in the store, and how to bring older ones up to ``version``."""

    name: str
    version: int
    schema: str = ""
    migrate: Optional[Callable[[sqlite3.Connection], None]] = None


@dataclass(frozen=True)
class GlideinRules:
    """The factory's rules for glidein records (``gwtrace.factory``): the store keeps records, these make them."""

    trace_id_of: Callable[..., str]                 # (factory, schedd, cluster, proc[, uuid]) -> trace id (hex)
    from_dict: Callable[[Dict[str, Any]], Any]       # a record's JSON form -> the record
    from_trace: Callable[[List[Dict[str, Any]]], Any]  # a glidein's spans -> its record, or None
    merge: Callable[[Any, Any], Any]                 # (record from the files, record from the trace) -> one


@dataclass(frozen=True)
class Summarizer:
    """The analysis's summary of a glidein record (``gwtrace.analysis.summary``), kept per glidein."""

    version: int
    summarize: Callable[[Dict[str, Any]], List[Any]]


class MissingPart(LookupError):
    """The store needs rules no imported package registered: a programming error, said in one line."""


_OWNERS = {GlideinRules: "gwtrace.factory", Summarizer: "gwtrace.analysis"}
_lock = threading.Lock()
_rules: Dict[type, Any] = {}
_parts: Dict[str, StorePart] = {}
_generation = 0

R = TypeVar("R")


def register(item: Any) -> None:
    """Hand the store a part (tables) or rules; registering the same kind again replaces it."""
    global _generation
    with _lock:
        if isinstance(item, StorePart):
            _parts[item.name] = item
        elif type(item) in _OWNERS:
            _rules[type(item)] = item
        else:
            raise TypeError(f"not a store part or rules: {type(item).__name__}")
        _generation += 1


def rules(kind: Type[R]) -> R:
    """The registered rules of ``kind``; MissingPart names the package that registers them."""
    found = _rules.get(kind)
    if found is None:
        raise MissingPart(f"the store needs {kind.__name__}, which {_OWNERS[kind]} registers: import it first")
    return found


def summarizer() -> Optional[Summarizer]:
    """The registered Summarizer, if any (records stored without one are summarised on the next use with one)."""
    return _rules.get(Summarizer)


def generation() -> int:
    """Changes whenever something is registered: a store applies its parts again when it differs."""
    return _generation


def apply(conn: sqlite3.Connection, own: Sequence[StorePart] = ()) -> int:
    """Create the registered parts' tables and run their migrations where the store has an older version.

    ``own``: the store's parts that follow registered rules (the summaries follow the Summarizer's
    version). The caller holds a write transaction. Returns the generation applied.
    """
    with _lock:
        parts, seen = list(_parts.values()) + list(own), _generation
    conn.execute(SCHEMA)
    stored = dict(conn.execute("SELECT name, version FROM store_parts"))
    for part in parts:
        if stored.get(part.name) == part.version:
            continue
        for statement in part.schema.split(";"):
            if statement.strip():
                conn.execute(statement)
        if part.migrate is not None:
            part.migrate(conn)
        conn.execute("INSERT OR REPLACE INTO store_parts (name, version) VALUES (?, ?)", (part.name, part.version))
    return seen
