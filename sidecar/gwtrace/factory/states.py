"""Glidein states from the factory's Condor-G event logs: per job, its transitions; per entry, the counts.

Why: the first thing a factory operator checks is how many glideins of each
entry are idle, running and held, and why the held ones are held
(GlideinWMS's own ``Status`` page shows it from ``condor_q``). The factory's
``condor_activity_*.log`` files say the same over time: every Condor-G job's
submission, hand-over to the CE, start at the site, hold (with its reason
and code), release, removal and end. They are read by byte offset as they
grow (``factory.eventlog.read_events``) and kept here:

``glidein_events``  one row per event of a glidein's Condor-G job (the
                    transition it makes, the held reason, code and subcode,
                    the exit code);
``glidein_jobs``    the state each job is in now (after its last event), and
                    ``dirty`` = events arrived that its glidein record does
                    not reflect yet (cleared once the record is stored, so a
                    run cut short makes the record on the next).

The state machine (HTCondor event codes): 000 submit and 027 grid submit ->
idle (GlideinWMS counts a glidein waiting at the CE as idle), 001 execute ->
running, 004 evicted and 013 released -> idle, 012 held -> held, 005
terminated -> completed, 009 aborted -> removed. A job whose last event is
older than ``MAX_LIFE`` (its end fell in a log that was deleted) is not
counted as idle or running now.
"""

from __future__ import annotations

import bisect
import sqlite3
import time as clock
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from .condorg_log import CondorGJob, Hold, apply_event

SCHEMA = """
-- the client log directories (one per entry): their jobs' rows name them by number
CREATE TABLE IF NOT EXISTS glidein_dirs (id INTEGER PRIMARY KEY, dir TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS glidein_events (
    dir     INTEGER NOT NULL, cluster INTEGER NOT NULL, proc INTEGER NOT NULL,
    time    INTEGER NOT NULL, code INTEGER NOT NULL,
    seq     INTEGER NOT NULL,           -- the order events of one second came in (read order)
    state   TEXT,                       -- the state the event leads to (None: no change)
    reason  TEXT, hold_code INTEGER, hold_subcode INTEGER, exit_code INTEGER,
    PRIMARY KEY (dir, cluster, proc, time, code)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS glidein_jobs (
    dir     INTEGER NOT NULL, cluster INTEGER NOT NULL, proc INTEGER NOT NULL,
    entry   TEXT,
    state   TEXT NOT NULL, since INTEGER NOT NULL, submitted INTEGER,
    reason  TEXT, hold_code INTEGER, hold_subcode INTEGER,
    dirty   INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (dir, cluster, proc)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS glidein_jobs_state ON glidein_jobs (state, entry);
"""

#: event code -> the state it leads to
STATE_OF = {0: "idle", 27: "idle", 1: "running", 4: "idle", 13: "idle", 12: "held", 5: "completed", 9: "removed"}
STATES = ("idle", "running", "held", "completed", "removed")
OPEN = ("idle", "running", "held")
#: a job silent for longer is not counted as open now (GlideinWMS's usual longest glidein is 2 days)
MAX_LIFE = 4 * 86400

Key = Tuple[int, int]


def ensure(conn: sqlite3.Connection) -> None:
    """Create the tables (the caller holds a write transaction)."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def _dir_id(conn: sqlite3.Connection, directory: str, create: bool = False) -> Optional[int]:
    """The number of a client log directory (made when ``create``, in the caller's write transaction)."""
    row = conn.execute("SELECT id FROM glidein_dirs WHERE dir = ?", (directory,)).fetchone()
    if row is None and create:
        return conn.execute("INSERT INTO glidein_dirs (dir) VALUES (?)", (directory,)).lastrowid
    return None if row is None else row[0]


def _row(directory: int, event: Any, seq: int) -> Tuple[Any, ...]:
    items = event.items
    code = event.code
    reason = hold = sub = exit_code = None
    if code == 12:
        reason, hold, sub = str(items.get("HoldReason", "")), items.get("HoldReasonCode"), \
            items.get("HoldReasonSubCode")
    elif code == 9:
        reason = items.get("Reason")
    elif code == 5:
        exit_code = items.get("ReturnValue")
    return (directory, event.cluster, event.proc, event.time, code, seq, STATE_OF.get(code), reason, hold, sub,
            exit_code)


def add_events(conn: sqlite3.Connection, directory: str, entry: Optional[str], events: Iterable[Any]) -> int:
    """Keep the events of one entry directory's logs and move their jobs' states on; mark those jobs dirty.

    Returns the events that were new (one read twice, as after a log was rotated, adds nothing).
    """
    touched: Dict[Key, None] = {}
    new = 0
    number = _dir_id(conn, directory, create=True)
    assert number is not None
    base = clock.time_ns()            # later reads have later numbers: events of one second keep their order
    for at, event in enumerate(events):
        cur = conn.execute("INSERT OR IGNORE INTO glidein_events VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                           _row(number, event, base + at))
        if cur.rowcount:
            new += 1
            touched[(event.cluster, event.proc)] = None
    _restate(conn, number, entry, list(touched))
    return new


def _restate(conn: sqlite3.Connection, directory: int, entry: Optional[str], keys: List[Key]) -> None:
    """The current state of each job of ``keys``, from all its events in time order."""
    for cluster, proc in keys:
        state, since, submitted, hold = None, None, None, (None, None, None)
        for time, code, new, reason, code_h, sub in conn.execute(
                "SELECT time, code, state, reason, hold_code, hold_subcode FROM glidein_events WHERE dir = ? AND"
                " cluster = ? AND proc = ? ORDER BY time, seq", (directory, cluster, proc)):
            if code == 0 and submitted is None:
                submitted = time
            if new is None or new == state and code != 12:
                continue
            state, since = new, time
            hold = (reason, code_h, sub) if new == "held" else (None, None, None)
        if state is None:
            state, since = "idle", submitted or 0
        conn.execute("INSERT OR REPLACE INTO glidein_jobs VALUES (?,?,?,?,?,?,?,?,?,?,1)",
                     (directory, cluster, proc, entry, state, since, submitted, *hold))


def dirty(conn: sqlite3.Connection, directory: str) -> List[Key]:
    """The jobs of a directory whose record does not reflect their latest events yet."""
    number = _dir_id(conn, directory)
    return [] if number is None else [(c, p) for c, p in conn.execute(
        "SELECT cluster, proc FROM glidein_jobs WHERE dir = ? AND dirty = 1", (number,))]


def clean(conn: sqlite3.Connection, directory: str, keys: Sequence[Key]) -> None:
    """Their records are stored (the caller holds a write transaction)."""
    number = _dir_id(conn, directory)
    if number is not None:
        conn.executemany("UPDATE glidein_jobs SET dirty = 0 WHERE dir = ? AND cluster = ? AND proc = ?",
                         [(number, c, p) for c, p in keys])


def condorg_jobs(conn: sqlite3.Connection, directory: str, keys: Sequence[Key]) -> Dict[Key, CondorGJob]:
    """The Condor-G life of each job of ``keys`` (as ``condorg_log.read_condorg_log`` gives it), replayed
    from the kept events: a glidein's record needs all its events, whichever log run they came in."""
    out: Dict[Key, CondorGJob] = {}
    number = _dir_id(conn, directory)
    if number is None:
        return out
    for cluster, proc in keys:
        job = None
        for time, code, reason, hold, sub, exit_code in conn.execute(
                "SELECT time, code, reason, hold_code, hold_subcode, exit_code FROM glidein_events WHERE dir = ?"
                " AND cluster = ? AND proc = ? ORDER BY time, seq", (number, cluster, proc)):
            job = job or CondorGJob(cluster, proc)
            apply_event(job, code, time, exit_code, Hold(time, reason or "", hold, sub) if code == 12 else None)
        if job is not None:
            out[(cluster, proc)] = job
    return out


# ------------------------------------------------------------------ reading (gwtrace now, /now)

def _ready(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'glidein_jobs'").fetchone() \
        is not None


def _sites(conn: sqlite3.Connection) -> Dict[str, str]:
    """entry -> its site, as the glidein records name it (the Condor-G logs do not): from their hourly
    rollup, a few rows per entry and hour, not the records themselves."""
    return {entry: site for entry, site in conn.execute(
        "SELECT entry, max(site) FROM glidein_hours WHERE entry != '' AND site != '' GROUP BY entry")}


def now_by_entry(conn: sqlite3.Connection, now: float, held_reasons: int = 5) -> List[Dict[str, Any]]:
    """Per entry with Condor-G events in the last ``MAX_LIFE``: glideins idle, running and held now, and the
    most common held reasons (with codes)."""
    if not _ready(conn):
        return []
    sites = _sites(conn)
    cells: Dict[str, Dict[str, Any]] = {}
    for entry, state, count in conn.execute(       # every entry active lately, with zeros where nothing is open
            "SELECT coalesce(entry, ''), state, count(*) FROM glidein_jobs WHERE since >= ? GROUP BY 1, 2",
            (int(now) - MAX_LIFE,)):
        cell = cells.setdefault(entry, {"entry": entry, "site": sites.get(entry, ""), "idle": 0, "running": 0,
                                        "held": 0, "held_reasons": []})
        if state in OPEN:
            cell[state] = count
    for entry, reason, code, sub, count in conn.execute(
            "SELECT coalesce(entry, ''), reason, hold_code, hold_subcode, count(*) AS n FROM glidein_jobs"
            " WHERE state = 'held' AND since >= ? GROUP BY 1, 2, 3, 4 ORDER BY n DESC", (int(now) - MAX_LIFE,)):
        held = cells[entry]["held_reasons"]
        if len(held) < held_reasons:
            held.append({"reason": reason or "", "code": code, "subcode": sub, "glideins": count})
    return [cells[k] for k in sorted(cells)]


def series(conn: sqlite3.Connection, since: int, until: int, bucket: int) -> Dict[str, List[Dict[str, int]]]:
    """Per entry, the glideins idle, running and held at the end of each bucket of [since, until): what the
    operator's "over time" chart draws. Only the jobs that can be open in the period are read (the others
    ended before it, or went silent more than ``MAX_LIFE`` before it); memory: the counts, the jobs' keys."""
    if not _ready(conn) or bucket <= 0 or until <= since:
        return {}
    edges = list(range(since + bucket, until + bucket, bucket))[:10_000]
    out: Dict[str, List[Dict[str, int]]] = {}

    def count(entry: str, spans: List[Tuple[int, int, str]]) -> None:
        cells = out.setdefault(entry, [{s: 0 for s in OPEN} for _ in edges])
        for start, end, state in spans:
            if state not in OPEN:
                continue
            at = bisect.bisect_left(edges, start)
            while at < len(edges) and edges[at] < end:
                cells[at][state] += 1
                at += 1

    # the jobs that can be open in the period: their last change is in it or later, or they are open since at
    # most MAX_LIFE before it
    jobs = conn.execute(
        f"SELECT dir, cluster, proc, entry FROM glidein_jobs WHERE since >= ? OR state IN"
        f" ({','.join('?' * len(OPEN))}) AND since >= ?", (since, *OPEN, since - MAX_LIFE)).fetchall()
    for d, c, p, entry in jobs:
        spans: List[Tuple[int, int, str]] = []
        last: Optional[Tuple[int, str]] = None
        for time, state in conn.execute(
                "SELECT time, state FROM glidein_events WHERE dir = ? AND cluster = ? AND proc = ? AND state IS NOT"
                " NULL AND time < ? ORDER BY time, seq", (d, c, p, until)):
            if last is not None:
                spans.append((last[0], time, last[1]))
            last = (time, state)
        if last is not None:
            spans.append((last[0], min(until, last[0] + MAX_LIFE), last[1]))
            count(entry or "", spans)
    return {entry: [{"time": edge, **cell} for edge, cell in zip(edges, cells)] for entry, cells in sorted(out.items())}


