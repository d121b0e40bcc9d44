"""The analysis summary of each stored glidein: kept apart from the wide record rows, read in start order.

The summary itself is the analysis's (``gwtrace.analysis.summary``, registered
with the store as a ``parts.Summarizer``); the store keeps one per record
(``glideins.put_many``), hands them out a part of the period at a time
(``analysis.fold``), and remakes them all when the summary's version changes.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Iterator, List, Optional, Tuple

from . import parts
from .glideins import _put_summary, _where


def summaries(conn: sqlite3.Connection, part: Optional[Tuple[Optional[int], Optional[int]]] = None,
              **filters: Any) -> Iterator[List[Any]]:
    """The analysis summaries of the stored glideins, oldest start first, one row at a time; ``part``: only
    those with ``low <= start_key < high`` (None: open), a part ``summary_cuts`` cut the period into."""
    where, args = _where(**filters)
    if part is not None:
        where, args = _start_range(where, args, *part)
    for (text,) in conn.execute(f"SELECT summary FROM glidein_summaries{where} ORDER BY start_key", args):
        yield json.loads(text)


def summary_cuts(conn: sqlite3.Connection, n_parts: int, min_part: int, **filters: Any) -> List[int]:
    """Start keys cutting the selected summaries into up to ``n_parts`` parts of about the same size, each of
    at least ``min_part`` glideins (none: one part). SQLite counts and steps to each cut itself (~35 ms for
    100 000 glideins): no start key is brought into Python."""
    where, args = _where(**filters)
    count = conn.execute(f"SELECT count(*) FROM glidein_summaries{where}", args).fetchone()[0]
    n_parts = min(n_parts, count // max(1, min_part))
    cuts = set()
    for at in range(1, n_parts):
        row = conn.execute(f"SELECT start_key FROM glidein_summaries{where} ORDER BY start_key LIMIT 1 OFFSET ?",
                           args + [count * at // n_parts]).fetchone()
        cuts.add(row[0])
    first = conn.execute(f"SELECT min(start_key) FROM glidein_summaries{where}", args).fetchone()[0]
    return sorted(cut for cut in cuts if cut > first)


def _start_range(where: str, args: List[Any], low: Optional[int], high: Optional[int]) -> Tuple[str, List[Any]]:
    clauses = [c for c, v in (("start_key >= ?", low), ("start_key < ?", high)) if v is not None]
    if not clauses:
        return where, args
    joined = " AND ".join(clauses)
    return (f"{where} AND {joined}" if where else f" WHERE {joined}"), args + [v for v in (low, high) if v is not None]


def summarize_missing(conn: sqlite3.Connection) -> int:
    """Summaries for the glideins stored without one (a store of schema 4, or of another summary version).

    Run by ``parts.apply`` when the analysis's summary version is not the store's, in its transaction: some
    10 000 glideins a second, once.
    """
    summarizer = parts.rules(parts.Summarizer)
    VERSION, summarize = summarizer.version, summarizer.summarize
    conn.execute(f"DELETE FROM glidein_summaries WHERE substr(summary, 1, {len(str(VERSION)) + 2}) != ?",
                 (f"[{VERSION},",))
    todo = conn.execute("SELECT trace_id, record FROM glideins WHERE trace_id NOT IN"
                        " (SELECT trace_id FROM glidein_summaries)").fetchall()
    for trace_id, text in todo:
        _put_summary(conn, trace_id, json.loads(text), summarize)
    return len(todo)


def summary_parts() -> List[parts.StorePart]:
    """The summaries as a store part, when the analysis registered its summarizer: remade per its version."""
    summarizer = parts.summarizer()
    return [] if summarizer is None else [parts.StorePart("glidein_summaries", summarizer.version,
                                                          migrate=summarize_missing)]
