"""Jobs and event-log offsets kept in the store, beside the traces.

Why a table: ``gwtrace job ID`` must find a job by ``cluster.proc``,
``cluster.proc@schedd``, GlobalJobId or trace id among a million, and
``--why`` compares it with the store's other jobs (same owner, same
requirements) and with the glideins at its sites, each in well under a
second: so every lookup has an index.  The row also holds the job's state
(JSON), which the next incremental ingest folds the new events into.

``jobs``      one row per job (key ``schedd#cluster.proc``)
``job_logs``  per event-log path: the byte offset read up to, a digest of the
              file's first bytes (a rotated or replaced log starts again at 0)
              and counters
Also an index on glideins (site, ended), for "glideins alive at the job's sites".
"""

import hashlib
import json
import sqlite3
from typing import Any, Dict, Iterable, List, Optional, Tuple

from gwtrace.factory.eventlog import HEAD_BYTES, log_head

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_key     TEXT PRIMARY KEY,
    schedd      TEXT NOT NULL,
    cluster     INTEGER NOT NULL,
    proc        INTEGER NOT NULL,
    global_id   TEXT,
    trace_id    BLOB NOT NULL,
    owner       TEXT,
    req_key     TEXT,
    sites       TEXT,
    status      TEXT NOT NULL,
    submitted   INTEGER,
    first_start INTEGER,
    ended       INTEGER,
    last_event  INTEGER,
    state       TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS jobs_cluster ON jobs (cluster, proc);
CREATE INDEX IF NOT EXISTS jobs_global ON jobs (global_id);
CREATE INDEX IF NOT EXISTS jobs_trace ON jobs (trace_id);
CREATE INDEX IF NOT EXISTS jobs_owner ON jobs (owner, submitted);
CREATE INDEX IF NOT EXISTS jobs_req ON jobs (req_key, submitted);

CREATE TABLE IF NOT EXISTS job_logs (
    path    TEXT PRIMARY KEY,
    head    TEXT NOT NULL,
    offset  INTEGER NOT NULL,
    events  INTEGER NOT NULL,
    unknown INTEGER NOT NULL,
    bad     INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS job_log_schedds (path TEXT PRIMARY KEY, schedd TEXT NOT NULL) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS glideins_site_ended ON glideins (site, ended);
"""

COLUMNS = ("job_key", "schedd", "cluster", "proc", "global_id", "trace_id", "owner", "req_key", "sites", "status",
           "submitted", "first_start", "ended", "last_event", "state")


def job_key(schedd: str, cluster: int, proc: int) -> str:
    return f"{schedd}#{cluster}.{proc}"


def sites_of(ad: Dict[str, Any]) -> List[str]:
    """The sites a job may run at: its ``DESIRED_Sites`` (comma or space separated), else none known."""
    value = ad.get("DESIRED_Sites")
    if not isinstance(value, str):
        return []
    return [s for s in value.replace(",", " ").split() if s]


def requirements_key(ad: Dict[str, Any]) -> Optional[str]:
    """Jobs asking for the same things share this key (cpus, memory, gpus, sites, requirements)."""
    parts = [ad.get(k) for k in ("RequestCpus", "RequestMemory", "RequestGpus", "DESIRED_Sites", "Requirements")]
    if all(p is None for p in parts):
        return None
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def row_of(state: Dict[str, Any]) -> Tuple[Any, ...]:
    ad = state["ad"]
    first = state["runs"][0]["start"] if state["runs"] else None
    return (job_key(state["schedd"], state["cluster"], state["proc"]), state["schedd"], state["cluster"],
            state["proc"], ad.get("GlobalJobId"), bytes.fromhex(state["trace_id"]), state.get("owner"),
            requirements_key(ad), ",".join(sites_of(ad)) or None, state["status"], state["submitted"], first,
            state["ended"], state["last"], json.dumps(state, separators=(",", ":")))


def put_jobs(conn: sqlite3.Connection, states: Iterable[Dict[str, Any]]) -> None:
    """Store (or replace) job states (the caller holds a write transaction)."""
    conn.executemany(f"INSERT OR REPLACE INTO jobs VALUES ({','.join('?' * len(COLUMNS))})",
                     [row_of(s) for s in states])


def get_states(conn: sqlite3.Connection, keys: List[str]) -> Dict[str, Dict[str, Any]]:
    """The stored states of those jobs that are stored."""
    out: Dict[str, Dict[str, Any]] = {}
    for at in range(0, len(keys), 500):
        batch = keys[at:at + 500]
        query = f"SELECT job_key, state FROM jobs WHERE job_key IN ({','.join('?' * len(batch))})"
        for key, text in conn.execute(query, batch):
            out[key] = json.loads(text)
    return out



def log_offset(conn: sqlite3.Connection, path: str, size: int) -> int:
    """Where to start reading ``path``: the stored offset, or 0 for a new, rotated or shrunk log."""
    row = conn.execute("SELECT head, offset FROM job_logs WHERE path = ?", (path,)).fetchone()
    if row is None or row[1] > size:
        return 0
    length = int(str(row[0]).split(":")[0] or 0)
    if log_head(path, length) != row[0]:
        return 0
    return int(row[1])


def put_log(conn: sqlite3.Connection, path: str, head: str, offset: int, events: int, unknown: int, bad: int) -> None:
    conn.execute("INSERT INTO job_logs VALUES (?,?,?,?,?,?) ON CONFLICT (path) DO UPDATE SET head = excluded.head,"
                 " offset = excluded.offset, events = events + excluded.events, unknown = unknown + excluded.unknown,"
                 " bad = bad + excluded.bad", (path, head, offset, events, unknown, bad))


def find_at(conn: sqlite3.Connection, cluster: int, proc: int, name: str, exact: bool = False) -> List[Any]:
    """The jobs cluster.proc whose schedd is named ``name`` (contains it, unless ``exact``): by the name it is
    stored under, or any alias the log or ads gave it (the submit event's ``alias=``, the GlobalJobId's
    schedd); the (cluster, proc) index narrows first, names are compared case-insensitively."""
    name = name.lower()
    out = []
    for row in conn.execute("SELECT state, schedd, global_id FROM jobs WHERE cluster = ? AND proc = ?",
                            (cluster, proc)):
        state = json.loads(row[0])
        names = [row[1] or "", (row[2] or "").split("#")[0]] + list(state.get("schedd_aliases") or [])
        if any(name == n.lower() if exact else name in n.lower() for n in names if n):
            out.append(row)
    return out


def find(conn: sqlite3.Connection, ident: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Jobs matching a parsed id (``ids.parse_job_id``), newest submission first."""
    kind = ident["kind"]
    if kind == "global":
        rows = conn.execute("SELECT state FROM jobs WHERE global_id = ?", (ident["value"],)).fetchall()
        if not rows:   # GlobalJobId = schedd#cluster.proc#qdate: the job may be known without its ad
            rows = find_at(conn, ident["cluster"], ident["proc"], ident["schedd"], exact=True)
    elif kind == "trace":
        rows = conn.execute("SELECT state FROM jobs WHERE trace_id = ?", (bytes.fromhex(ident["trace_id"]),)).fetchall()
    elif kind == "at":
        rows = find_at(conn, ident["cluster"], ident["proc"], ident["schedd"])
    else:
        rows = conn.execute("SELECT state FROM jobs WHERE cluster = ? AND proc = ?",
                            (ident["cluster"], ident["proc"])).fetchall()
    states = [json.loads(r[0]) for r in rows]
    return sorted(states, key=lambda s: -(s["submitted"] or 0))
