"""Reads of the glidein records for pages and streams: a page, sorted and counted; the JSON texts as stored;
the glideins' own outcomes for the site lights and the search page.

Why apart from ``glideins``: that module keeps the records and their rollups (what ingest writes); these
are the reads that must stay quick at 100 000 glideins, each answered by SQLite from narrow columns or an
index, decoding only what is shown.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from .glideins import CATEGORIES, _where, and_where, ended_in

#: the columns a page of records sorts by (``/glideins``), by the names the page uses
SORTS = {"started": "started", "ended": "ended", "submitted": "submitted", "site": "site", "entry": "entry",
         "frontend": "frontend", "status": "status", "cpus": "cpus", "glidein": "cluster", "total": "total",
         **{c: c for c in CATEGORIES}}


def page(conn: sqlite3.Connection, sort: str = "started", descending: bool = False, offset: int = 0,
         limit: int = 100, status: Optional[str] = None, incomplete: Optional[bool] = None,
         category: Optional[str] = None, **filters: Any) -> Tuple[int, List[Dict[str, Any]]]:
    """(how many records match, those of one page): filtered, counted, sorted and cut by SQLite, so a page of
    a pool's 100 000 glideins decodes its own rows only. Unknown values sort last either way."""
    where, args = _where(**filters)
    extra = []
    if status:
        extra.append("status = ?")
        args.append(status)
    if incomplete is not None:
        extra.append("incomplete = ?")
        args.append(int(incomplete))
    if category:
        extra.append(f"{SORTS[category]} > 0")
    where = and_where(where, extra)
    total = conn.execute(f"SELECT count(*) FROM glideins{where}", args).fetchone()[0]
    column = SORTS[sort]
    way = "DESC" if descending else "ASC"
    # the page's keys first (sorting reads the narrow columns only: the record, last in the row, stays in its
    # overflow pages), then the page's records
    keys = [bytes(r[0]) for r in conn.execute(
        f"SELECT trace_id FROM glideins{where} ORDER BY {column} IS NULL, {column} {way}, trace_id {way}"
        " LIMIT ? OFFSET ?", args + [limit, offset])]
    texts = {bytes(k): t for k, t in conn.execute(
        f"SELECT trace_id, record FROM glideins WHERE trace_id IN ({','.join('?' * len(keys))})", keys)} \
        if keys else {}
    out = []
    for key in keys:
        data = json.loads(texts[key])
        data.setdefault("trace_id", key.hex())
        out.append(data)
    return total, out


def statuses(conn: sqlite3.Connection, trace_ids: Sequence[bytes]) -> Dict[str, Tuple[Any, Any]]:
    """trace id (hex) -> (the glidein's own status, its failed script) for those of ``trace_ids`` that are a
    glidein's record: what the search page tells apart from the errors of the glidein's user jobs."""
    out: Dict[str, Tuple[Any, Any]] = {}
    for at in range(0, len(trace_ids), 500):
        batch = list(trace_ids[at:at + 500])
        for key, status, script in conn.execute(
                f"SELECT trace_id, status, json_extract(record, '$.failed_script') FROM glideins WHERE trace_id IN"
                f" ({','.join('?' * len(batch))})", batch):
            out[bytes(key).hex()] = (status, script)
    return out


#: the covering index ``outcomes`` reads (in SCHEMA; a store made before it gains it at its next backfill)
OUTCOME_INDEX = "CREATE INDEX IF NOT EXISTS glideins_outcome ON glideins (ended, site, status)"


def outcomes(conn: sqlite3.Connection, since: Optional[int], until: Optional[int]) -> Iterator[Tuple[Any, Any, Any]]:
    """(site, ended, status) of the glideins that ended in [since, until): the site lights' input, read from
    the covering index ``glideins_outcome`` alone (100 000 glideins: the whole table took 7 s to scan)."""
    clauses, args = ended_in(since, until)
    yield from conn.execute(f"SELECT site, ended, status FROM glideins{and_where('', ['ended IS NOT NULL'] + clauses)}",
                            args)


def record_texts(conn: sqlite3.Connection, **filters: Any) -> Iterator[str]:
    """``records`` as the JSON texts they are stored as, ``trace_id`` added where it is not in them (last, as
    ``records`` adds it): ``gwtrace glideins --format json`` decodes and encodes nothing."""
    where, args = _where(**filters)
    for trace_id, text in conn.execute(f"SELECT trace_id, record FROM glideins{where} ORDER BY started", args):
        if not _HAS_TRACE.search(text, max(0, len(text) - 48)):
            text = (text[:-1] + ("," if len(text) > 2 else "") + f'"trace_id":"{bytes(trace_id).hex()}"}}')
        yield text


#: the trace id ``put_many`` appends as the record's last key
_HAS_TRACE = re.compile(r',"trace_id":"[0-9a-f]{32}"}$')
