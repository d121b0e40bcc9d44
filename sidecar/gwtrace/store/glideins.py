"""Glidein records kept beside the traces, for accounting and analysis without decoding spans.

Why a table of records and one of hourly cells: ``gwtrace account`` over a
pool's 100 000 glideins must answer in a second or two, and rebuilding each
glidein's canonical segments (dozens per glidein) in Python costs several
seconds.  So the cells are cut once, when the record is stored (at ingest),
and a period's series is a ``GROUP BY`` over a few rows per glidein.
Records are keyed by the glidein's trace id (``factory.to_trace``): storing
the same glidein again replaces it, as the spans are replaced.

``glideins``       one row per glidein: the filter columns, GlideinWMS's own
                   per-glidein figures, the six canonical totals, its hourly
                   cells (packed) and the record JSON
``glidein_summaries`` one narrow row per glidein: the filter columns and its
                   analysis summary (``analysis/summary.py``: its phases worked
                   out once, at ingest), so ``gwtrace analyze`` reads a few
                   hundred bytes a glidein and works nothing out again
``glidein_files``  the record the factory's files gave each glidein they were
                   read for, as it came (``glidein_parts``): the row in
                   ``glideins`` is that record merged with the one its live
                   trace gives (``factory/merge.py``), made again whenever
                   either changes, so the order they come in does not matter
``glidein_dirty``  traces whose glidein spans arrived since their record was
                   made: records of traced glideins are (re)made from their spans
                   on the next read (ingest only marks them: one row per chunk
                   that holds a glidein's spans)
``glidein_hours``  the cells of all glideins summed per UTC hour, site, entry
                   and frontend: a month of a pool is some ten thousand rows,
                   whatever the number of glideins. A glidein stored again
                   first takes its old cells out; a purged one too.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from . import parts

CATEGORIES = ("validation_fail", "decision_problem", "misconfig_badput", "goodput", "preemption_badput", "overhead")
HOUR = 3600

SCHEMA = """
CREATE TABLE IF NOT EXISTS glideins (
    trace_id   BLOB PRIMARY KEY,
    cluster    INTEGER, proc INTEGER, schedd TEXT, factory TEXT,
    site       TEXT, entry TEXT, frontend TEXT,
    submitted  INTEGER, started INTEGER, ended INTEGER,
    status     TEXT, incomplete INTEGER NOT NULL,
    cpus       INTEGER, memory_mb INTEGER, gpus INTEGER,
    validation_fail REAL, decision_problem REAL, misconfig_badput REAL,
    goodput    REAL, preemption_badput REAL, overhead REAL, total REAL,
    gwms       TEXT,
    cells      BLOB,
    source     TEXT NOT NULL,
    record     TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS glideins_ended ON glideins (ended);
-- what the site lights read (``outcomes``): a covering index, so they never wade through the records
CREATE INDEX IF NOT EXISTS glideins_outcome ON glideins (ended, site, status);
-- the glideins of one Condor-G job (factory, schedd, cluster.proc): a uuid-less record's own glidein
CREATE INDEX IF NOT EXISTS glideins_job ON glideins (cluster, proc);

-- the analysis summary of each glidein, apart from the wide rows above so that reading
-- a pool's summaries does not wade through their records
CREATE TABLE IF NOT EXISTS glidein_summaries (
    start_key INTEGER NOT NULL,          -- started, or -1 when unknown: rows lie in the order they are read
    trace_id  BLOB NOT NULL,
    site      TEXT, entry TEXT, frontend TEXT,
    started   INTEGER, ended INTEGER,
    summary   TEXT NOT NULL,
    PRIMARY KEY (start_key, trace_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS glidein_summaries_trace ON glidein_summaries (trace_id);

-- traces with a glidein span written since their record was last made from spans
CREATE TABLE IF NOT EXISTS glidein_dirty (trace_id BLOB PRIMARY KEY) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS glidein_hours (
    hour     INTEGER NOT NULL,
    site     TEXT NOT NULL, entry TEXT NOT NULL, frontend TEXT NOT NULL,
    validation_fail REAL, decision_problem REAL, misconfig_badput REAL,
    goodput  REAL, preemption_badput REAL, overhead REAL,
    PRIMARY KEY (hour, site, entry, frontend)
) WITHOUT ROWID;
"""

#: the columns of ``rows()``, in order (the light form accounting reads).
ROW_COLUMNS = ("trace_id", "cluster", "proc", "schedd", "factory", "site", "entry", "frontend", "submitted",
               "started", "ended", "status", "incomplete", "cpus", "memory_mb", "gpus") + CATEGORIES + ("total",)
GROUPS = ("site", "entry", "frontend")
#: a frontend filter matches the client name or its part before the first '.' (as ``factory.selection.select``).
_FRONTEND = ("({p}frontend = ? OR (instr({p}frontend, '.') > 0"
             " AND substr({p}frontend, 1, instr({p}frontend, '.') - 1) = ?))")


_INDEX = {cat: i for i, cat in enumerate(CATEGORIES)}
_WIDTH = 1 + len(CATEGORIES)


def hour_cells(segments: Iterable[Any]) -> Dict[int, List[float]]:
    """Canonical CPU seconds per UTC hour and category from a record's segments (in time order)."""
    cells: Dict[int, List[float]] = {}
    current, cell = None, [0.0]
    for seg in segments:
        lo, hi = seg.start, seg.end
        shares = [(_INDEX[cat], units) for cat, units in seg.cpu.items()]
        while lo < hi:
            hour = int(lo // HOUR) * HOUR
            if hour != current:
                cell = cells.get(hour) or cells.setdefault(hour, [0.0] * len(CATEGORIES))
                current = hour
            top = hour + HOUR if hour + HOUR < hi else hi
            width = top - lo
            for at, units in shares:
                cell[at] += units * width
            lo = top
    return cells


def pack(cells: Dict[int, List[float]]) -> bytes:
    """Cells as one blob: per hour, the hour then the six values (doubles)."""
    flat = array("d")
    for hour, values in cells.items():
        flat.append(hour)
        flat.extend(values)
    return flat.tobytes()


def unpack(blob: Optional[bytes]) -> Iterator[Tuple[int, Sequence[float]]]:
    """The (hour, values) pairs of ``pack``."""
    flat = array("d")
    flat.frombytes(blob or b"")
    for at in range(0, len(flat), _WIDTH):
        yield int(flat[at]), flat[at + 1:at + _WIDTH]


_ADD = (f"INSERT INTO glidein_hours VALUES (?,?,?,?,{','.join('?' * len(CATEGORIES))}) "
        "ON CONFLICT (hour, site, entry, frontend) DO UPDATE SET "
        + ", ".join(f"{c} = {c} + excluded.{c}" for c in CATEGORIES))


def _roll(conn: sqlite3.Connection, group: Tuple[str, str, str], cells: Iterable[Tuple[int, Sequence[float]]],
          sign: float) -> None:
    conn.executemany(_ADD, [(hour, *group, *(sign * v for v in values)) for hour, values in cells])


def _group(site: Optional[str], entry: Optional[str], frontend: Optional[str]) -> Tuple[str, str, str]:
    return (site or "", entry or "", frontend or "")


def _stored(conn: sqlite3.Connection, trace_ids: List[bytes]) -> Dict[bytes, Tuple[Any, ...]]:
    """The stored rows (site, entry, frontend, cells, record, source) of those glideins that are already there."""
    out: Dict[bytes, Tuple[Any, ...]] = {}
    for at in range(0, len(trace_ids), 500):
        batch = trace_ids[at:at + 500]
        marks = ",".join("?" * len(batch))
        for row in conn.execute(f"SELECT trace_id, site, entry, frontend, cells, record, source FROM glideins"
                                f" WHERE trace_id IN ({marks})", batch):
            out[bytes(row[0])] = row[1:]
    return out


def put_many(conn: sqlite3.Connection, items: Iterable[Tuple[bytes, Any]], source: str = "files") -> List[bytes]:
    """Store (or replace) ``(trace id, GlideinRecord)`` pairs and roll their hourly cells up; return the
    traces the rows they replaced were made from, where not their key (a glidein traced under another id).

    ``source`` says what the record was made from: ``files`` (the factory's), ``trace`` (a trace only),
    ``files+trace`` (both, merged: ``factory/merge.py``); which one a glidein gets is the caller's rule
    (``TraceStore.refresh_glidein_records``). The caller holds a write transaction. The rollup is summed in
    Python over the whole batch first: one ingest's glideins share their hours, one upsert per (hour, group).
    """
    rollup: Dict[Tuple[int, str, str, str], List[float]] = {}

    def roll(group: Tuple[str, str, str], cells: Iterable[Tuple[int, Sequence[float]]], sign: float) -> None:
        for hour, values in cells:
            acc = rollup.setdefault((hour, *group), [0.0] * len(CATEGORIES))
            for at, value in enumerate(values):
                acc[at] += sign * value

    summaries = parts.summarizer()
    if summaries is None:                # made on the next use that has one (summarize_missing)
        conn.execute("DELETE FROM store_parts WHERE name = 'glidein_summaries'")
    pairs = list(items)
    stored = _stored(conn, [trace_id for trace_id, _ in pairs])
    elsewhere: List[bytes] = []
    for trace_id, record in pairs:
        data = record.to_dict()
        if getattr(record, "trace_id", None):
            data["trace_id"] = record.trace_id  # the trace the spans are in, when not the glidein's own id
        text = json.dumps(data, separators=(",", ":"), check_circular=False)
        old = stored.get(trace_id)
        if old is not None:
            if old[4] == text and old[5] == source:
                continue  # the same glidein ingested again
            if old[5] != "files":
                made_from = json.loads(old[4]).get("trace_id")
                if made_from and made_from != trace_id.hex():
                    elsewhere.append(bytes.fromhex(made_from))
            roll(_group(*old[:3]), unpack(old[3]), -1.0)
        cells = hour_cells(record.segments)
        packed = pack(cells)
        canon = record.canonical or {}
        conn.execute(
            f"INSERT OR REPLACE INTO glideins VALUES ({','.join('?' * 27)})",
            (trace_id, record.cluster, record.proc, record.schedd, record.factory, record.site, record.entry,
             record.frontend, record.submitted, record.started, record.ended, record.status, int(record.incomplete),
             record.cpus, record.memory_mb, record.gpus)
            + tuple(canon.get(c, 0.0) for c in CATEGORIES)
            + (canon.get("total", 0.0), json.dumps(record.gwms), packed, source, text))
        if summaries is not None:
            _put_summary(conn, trace_id, data, summaries.summarize)
        roll(_group(record.site, record.entry, record.frontend), cells.items(), 1.0)
        stored[trace_id] = (record.site, record.entry, record.frontend, packed, text, source)
    conn.executemany(_ADD, [(*key, *values) for key, values in rollup.items()])
    return elsewhere


def _where(since: Optional[int] = None, until: Optional[int] = None, site: Optional[str] = None,
           entry: Optional[str] = None, frontend: Optional[str] = None, prefix: str = "") -> Tuple[str, List[Any]]:
    """The record filters of ``gwtrace glideins`` as SQL (unknown times never exclude a record)."""
    clauses, args = [], []  # type: List[str], List[Any]
    if since is not None:
        clauses.append(f"({prefix}ended IS NULL OR {prefix}ended >= ?)")
        args.append(since)
    if until is not None:
        clauses.append(f"({prefix}started IS NULL OR {prefix}started < ?)")
        args.append(until)
    for column, value in (("site", site), ("entry", entry)):
        if value:
            clauses.append(f"{prefix}{column} = ?")
            args.append(value)
    if frontend:  # the whole client name, or its part before the first '.'
        clauses.append(_FRONTEND.format(p=prefix))
        args.extend([frontend, frontend])
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def ended_in(since: Optional[int], until: Optional[int]) -> Tuple[List[str], List[Any]]:
    """(clauses, args) of "ended in [since, until)": the figures' and the site lights' period, where a record
    with no end is never in it (unlike ``_where``'s, where an unknown time never excludes)."""
    clauses, args = [], []  # type: List[str], List[Any]
    if since is not None:
        clauses.append("ended >= ?")
        args.append(since)
    if until is not None:
        clauses.append("ended < ?")
        args.append(until)
    return clauses, args


def and_where(where: str, clauses: List[str]) -> str:
    """``where`` (as ``_where`` gives it: empty or " WHERE ...") with ``clauses`` added."""
    if not clauses:
        return where
    return (where + " AND " if where else " WHERE ") + " AND ".join(clauses)


def records(conn: sqlite3.Connection, **filters: Any) -> Iterator[Dict[str, Any]]:
    """The stored records (``GlideinRecord.to_dict()`` shape plus ``trace_id``), oldest start first."""
    where, args = _where(**filters)
    for trace_id, text in conn.execute(f"SELECT trace_id, record FROM glideins{where} ORDER BY started", args):
        data = json.loads(text)
        data.setdefault("trace_id", bytes(trace_id).hex())
        yield data


def _put_summary(conn: sqlite3.Connection, trace_id: bytes, data: Dict[str, Any], summarize: Any) -> None:
    started = data.get("started")
    conn.execute("INSERT OR REPLACE INTO glidein_summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (-1 if started is None else started, trace_id, data.get("site"), data.get("entry"),
                  data.get("frontend"), started, data.get("ended"), json.dumps(summarize(data), separators=(",", ":"), check_circular=False)))


def entry_of(conn: sqlite3.Connection, trace_id: bytes) -> Optional[str]:
    """The entry of the glidein whose record is keyed by ``trace_id`` (its own trace), or None."""
    row = conn.execute("SELECT entry FROM glideins WHERE trace_id = ?", (trace_id,)).fetchone()
    return row[0] if row else None


def rows(conn: sqlite3.Connection, **filters: Any) -> Iterator[Tuple[Any, ...]]:
    """Light tuples in ``ROW_COLUMNS`` order (trace id as hex), no JSON decoded."""
    where, args = _where(**filters)
    for row in conn.execute(f"SELECT {', '.join(ROW_COLUMNS)} FROM glideins{where}", args):
        yield (bytes(row[0]).hex(),) + tuple(row[1:])


def gwms_figures(conn: sqlite3.Connection, by: Optional[str], since: Optional[int], until: Optional[int],
                 **filters: Any) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """(group, GlideinWMS per-glidein figures) for the glideins that ended in [since, until)."""
    where, args = _where(None, None, **filters)
    extra, more = ended_in(since, until)
    where, args = and_where(where, extra), args + more
    group = f"coalesce({by}, 'unknown')" if by in GROUPS else "'all'"
    for name, text in conn.execute(f"SELECT {group}, gwms FROM glideins{where}", args):
        figures = json.loads(text) if text else {}
        if figures:
            yield name, figures


def hours(conn: sqlite3.Connection, bucket: int, by: Optional[str], since: Optional[int], until: Optional[int],
          site: Optional[str] = None, entry: Optional[str] = None, frontend: Optional[str] = None
          ) -> Dict[Tuple[str, int], Dict[str, float]]:
    """Canonical CPU seconds per (group, bucket) and category, summed by SQLite from the hourly rollup.

    The period is cut at whole hours (``since`` rounded down, ``until`` up): the store keeps hours.
    """
    clauses, args = [], []  # type: List[str], List[Any]
    if since is not None:
        clauses.append("hour >= ?")
        args.append(since // HOUR * HOUR)
    if until is not None:
        clauses.append("hour < ?")
        args.append(-(-until // HOUR) * HOUR)
    for column, value in (("site", site), ("entry", entry)):
        if value:
            clauses.append(f"{column} = ?")
            args.append(value)
    if frontend:
        clauses.append(_FRONTEND.format(p=""))
        args.extend([frontend, frontend])
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    group = f"coalesce(nullif({by}, ''), 'unknown')" if by in GROUPS else "'all'"
    sums = ", ".join(f"sum({c})" for c in CATEGORIES)
    out: Dict[Tuple[str, int], Dict[str, float]] = {}
    query = (f"SELECT {group} AS g, hour / {bucket} * {bucket} AS b, {sums} FROM glidein_hours{where} "
             "GROUP BY g, b ORDER BY g, b")
    for row in conn.execute(query, args):
        cell = dict(zip(CATEGORIES, row[2:]))
        cell["total"] = sum(row[2:])
        out[(row[0], row[1])] = cell
    return out


def mark(conn: sqlite3.Connection, trace_ids: Iterable[bytes]) -> None:
    """Traces that received glidein spans: their records are (re)made on the next read."""
    conn.executemany("INSERT OR IGNORE INTO glidein_dirty (trace_id) VALUES (?)", [(t,) for t in trace_ids])


def dirty(conn: sqlite3.Connection) -> List[bytes]:
    """Traces whose glidein spans changed since their record was made (the caller rebuilds, then ``clean``s)."""
    return [bytes(r[0]) for r in conn.execute("SELECT trace_id FROM glidein_dirty")]


def clean(conn: sqlite3.Connection, trace_ids: Sequence[bytes]) -> None:
    """Mark records as made."""
    conn.executemany("DELETE FROM glidein_dirty WHERE trace_id = ?", [(t,) for t in trace_ids])


def forget(conn: sqlite3.Connection, trace_ids: Sequence[bytes]) -> None:
    """Drop the records of purged traces, and take their cells out of the rollup."""
    marks = ",".join("?" * len(trace_ids))
    for site, entry, frontend, cells in conn.execute(
            f"SELECT site, entry, frontend, cells FROM glideins WHERE trace_id IN ({marks})", list(trace_ids)).fetchall():
        _roll(conn, _group(site, entry, frontend), unpack(cells), -1.0)
    conn.execute(f"DELETE FROM glideins WHERE trace_id IN ({marks})", list(trace_ids))
    conn.execute(f"DELETE FROM glidein_summaries WHERE trace_id IN ({marks})", list(trace_ids))
    conn.execute(f"DELETE FROM glidein_dirty WHERE trace_id IN ({marks})", list(trace_ids))
    conn.execute(f"DELETE FROM glidein_files WHERE trace_id IN ({marks})", list(trace_ids))
    conn.execute("DELETE FROM glidein_hours WHERE abs(validation_fail) + abs(decision_problem) + "
                 "abs(misconfig_badput) + abs(goodput) + abs(preemption_badput) + abs(overhead) < 1e-6")
