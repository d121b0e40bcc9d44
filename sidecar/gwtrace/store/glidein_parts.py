"""Where a glidein's one record comes from: its files' record as it came, its trace, its Condor-G key.

Why apart from ``glideins``: that module keeps the rows every read wants (and
their hourly cells); this one keeps what the rows are made from when a
glidein is known both from the factory's files and from its live trace
(``factory/merge.py`` merges them), and finds a glidein's parts under the
keys they arrive with:

- ``glidein_files`` holds the record the files gave, unmerged, for the
  glideins whose row is a merge, so the merge can be made again whenever the
  trace changes, in any order of arrival (a row made from the files alone is
  that record itself: nothing is kept twice);
- a glidein the factory knows by its Condor-G job only has no uuid yet (nor,
  from the Condor-G log alone, its factory and schedd names), so its key is
  a uuid-less id; once the ``.out`` names the uuid, or its live trace (whose
  resource names it) arrives, what was kept under that key is folded into
  the glidein's own (``same_jobs``: the same cluster.proc, and the same
  factory, schedd and entry wherever both sides name them; times that agree);
- a node of gwtrace before the uuid was part of the id (a glidein running
  across the factory's upgrade) has its live trace under the uuid-less id of
  its full identity: the backfill joins it there (``legacy_traces``);
- only traces holding live spans are worth a merge (``with_live_spans``):
  a glidein only backfilled keeps its files' record without a decode.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from . import parts

SCHEMA = """
-- the record made from the factory's files, before any merge with the glidein's trace
CREATE TABLE IF NOT EXISTS glidein_files (trace_id BLOB PRIMARY KEY, record TEXT NOT NULL) WITHOUT ROWID;
"""


def record_key(record: Any, trace_id: Optional[bytes] = None) -> bytes:
    """A glidein's key: the trace id its identity gives (factory, schedd, cluster.proc and its uuid when
    known), so that its record from the files and from a trace with another id are one; the trace's own
    id when unknown."""
    if record.cluster is None and trace_id is not None:
        return trace_id
    trace_id_of = parts.rules(parts.GlideinRules).trace_id_of
    return bytes.fromhex(trace_id_of(record.factory, record.schedd, record.cluster, record.proc, record.glidein_uuid))


def keep_files(conn: sqlite3.Connection, items: Iterable[Tuple[bytes, Dict[str, Any]]]) -> None:
    """Keep the records (JSON form) the factory's files gave glideins whose row becomes a merge."""
    conn.executemany("INSERT OR REPLACE INTO glidein_files (trace_id, record) VALUES (?, ?)",
                     [(key, json.dumps(data, separators=(",", ":"))) for key, data in items])


def drop_files(conn: sqlite3.Connection, keys: Sequence[bytes]) -> None:
    """Forget the kept files' records of ``keys`` (their files were read again: the new row is the record)."""
    for at in range(0, len(keys), 500):
        batch = list(keys[at:at + 500])
        conn.execute(f"DELETE FROM glidein_files WHERE trace_id IN ({','.join('?' * len(batch))})", batch)


def files_records(conn: sqlite3.Connection, keys: Sequence[bytes]) -> Dict[bytes, Dict[str, Any]]:
    """The records the factory's files gave the glideins of ``keys`` (JSON form), where they were read: kept
    apart for a merged row, else the row itself (source ``files``)."""
    out: Dict[bytes, Dict[str, Any]] = {}
    for at in range(0, len(keys), 500):
        batch = list(keys[at:at + 500])
        marks = ",".join("?" * len(batch))
        for key, text in conn.execute(f"SELECT trace_id, record FROM glidein_files WHERE trace_id IN ({marks})",
                                      batch):
            out[bytes(key)] = json.loads(text)
        for key, text in conn.execute(f"SELECT trace_id, record FROM glideins WHERE source = 'files'"
                                      f" AND trace_id IN ({marks})", batch):
            out.setdefault(bytes(key), json.loads(text))
    return out


def with_files(conn: sqlite3.Connection, keys: Sequence[bytes]) -> set:
    """Those of ``keys`` the factory's files were read for (``files_records`` without decoding them)."""
    out = set()
    for at in range(0, len(keys), 500):
        batch = list(keys[at:at + 500])
        marks = ",".join("?" * len(batch))
        out.update(bytes(r[0]) for r in conn.execute(
            f"SELECT trace_id FROM glidein_files WHERE trace_id IN ({marks}) UNION"
            f" SELECT trace_id FROM glideins WHERE source = 'files' AND trace_id IN ({marks})", batch + batch))
    return out


def with_live_spans(conn: sqlite3.Connection, trace_ids: Sequence[bytes]) -> set:
    """Those of ``trace_ids`` that hold spans the factory did not backfill (a resource without
    ``gwtrace.source=factory-logs``): only their records are worth merging with a trace."""
    out = set()
    for at in range(0, len(trace_ids), 500):
        batch = list(trace_ids[at:at + 500])
        marks = ",".join("?" * len(batch))
        out.update(bytes(r[0]) for r in conn.execute(
            f"SELECT DISTINCT c.trace_id FROM chunks c WHERE c.trace_id IN ({marks}) AND NOT EXISTS"
            " (SELECT 1 FROM resource_attrs a WHERE a.key = 'gwtrace.source' AND a.value = 'factory-logs'"
            " AND a.resource_id = c.resource_id)", batch))
    return out


def _agree(mine: Optional[str], theirs: Optional[str]) -> bool:
    return not mine or not theirs or mine == theirs


def legacy_traces(conn: sqlite3.Connection, records: Sequence[Any]) -> Dict[int, bytes]:
    """{index: trace} for the records (with a uuid) whose live trace a node of gwtrace before issue 26 made
    under the uuid-less id of their identity: that trace holds spans from a resource naming their uuid."""
    glidein_trace_id = parts.rules(parts.GlideinRules).trace_id_of
    bare = {index: bytes.fromhex(glidein_trace_id(rec.factory, rec.schedd, rec.cluster, rec.proc))
            for index, rec in enumerate(records) if rec.glidein_uuid and rec.cluster is not None}
    keys = list(set(bare.values()))
    present = set()
    for at in range(0, len(keys), 500):
        batch = keys[at:at + 500]
        present.update(bytes(r[0]) for r in conn.execute(
            f"SELECT DISTINCT trace_id FROM chunks WHERE trace_id IN ({','.join('?' * len(batch))})", batch))
    return {index: key for index, key in bare.items() if key in present and conn.execute(
        "SELECT 1 FROM chunks c JOIN resource_attrs a ON a.resource_id = c.resource_id WHERE c.trace_id = ?"
        " AND a.key = 'glidein.uuid' AND a.value = ? LIMIT 1", (key, records[index].glidein_uuid)).fetchone()}


#: (key, source, record JSON) of a stored glidein
Stored = Tuple[bytes, str, Dict[str, Any]]


def same_jobs(conn: sqlite3.Connection, items: Sequence[Tuple[bytes, Any]]) -> Dict[bytes, List[Stored]]:
    """For each (key, record), the other stored glideins of its Condor-G job: the same cluster.proc, and the
    same factory, schedd and entry wherever both name them. Found through the (cluster, proc) index alone,
    one query per 500 clusters (a glidein stored again finds only itself); only the rows found are read."""
    mates = _job_mates(conn, items)
    if not mates:
        return {}
    rows = _columns(conn, list({other for others in mates.values() for other in others}))
    records = {key: rec for key, rec in items}
    found: Dict[bytes, List[Tuple[bytes, str]]] = {}
    for key, others in mates.items():
        rec = records[key]
        for other in others:
            source, factory, schedd, entry = rows[other]
            if _agree(rec.factory, factory) and _agree(rec.schedd, schedd) and _agree(rec.entry, entry):
                found.setdefault(key, []).append((other, source))
    texts = _records(conn, [other for pairs in found.values() for other, _ in pairs])
    return {key: [(other, source, texts[other]) for other, source in pairs] for key, pairs in found.items()}


def _job_mates(conn: sqlite3.Connection, items: Sequence[Tuple[bytes, Any]]) -> Dict[bytes, List[bytes]]:
    """key -> the keys of the other stored glideins with its cluster.proc."""
    wanted: Dict[Any, List[Tuple[bytes, Any]]] = {}
    for key, rec in items:
        if rec.cluster is not None:
            wanted.setdefault(rec.cluster, []).append((key, rec))
    clusters = list(wanted)
    mates: Dict[bytes, List[bytes]] = {}
    for at in range(0, len(clusters), 500):
        batch = clusters[at:at + 500]
        for other, cluster, proc in conn.execute(
                f"SELECT trace_id, cluster, proc FROM glideins WHERE cluster IN ({','.join('?' * len(batch))})",
                batch):
            other = bytes(other)
            for key, rec in wanted[cluster]:
                if other != key and proc == rec.proc:
                    mates.setdefault(key, []).append(other)
    return mates


def _columns(conn: sqlite3.Connection, keys: List[bytes]) -> Dict[bytes, Tuple[Any, ...]]:
    """key -> (source, factory, schedd, entry) of stored glideins."""
    out: Dict[bytes, Tuple[Any, ...]] = {}
    for at in range(0, len(keys), 500):
        batch = keys[at:at + 500]
        for row in conn.execute("SELECT trace_id, source, factory, schedd, entry FROM glideins"
                                f" WHERE trace_id IN ({','.join('?' * len(batch))})", batch):
            out[bytes(row[0])] = row[1:]
    return out


def _records(conn: sqlite3.Connection, keys: List[bytes]) -> Dict[bytes, Dict[str, Any]]:
    out: Dict[bytes, Dict[str, Any]] = {}
    for at in range(0, len(keys), 500):
        batch = keys[at:at + 500]
        for key, text in conn.execute(f"SELECT trace_id, record FROM glideins WHERE trace_id IN"
                                      f" ({','.join('?' * len(batch))})", batch):
            out[bytes(key)] = json.loads(text)
    return out


def _before(earlier: Optional[int], later: Optional[int]) -> bool:
    return earlier is None or later is None or earlier <= later


def queued_of(record: Any, others: List[Stored]) -> List[bytes]:
    """What the factory kept of ``record``'s glidein before it knew its uuid, among the other glideins of its
    Condor-G job (``same_jobs``): records made from the files without a uuid and without an ``.out`` read,
    submitted before it started."""
    from_dict = parts.rules(parts.GlideinRules).from_dict
    if not record.glidein_uuid:
        return []
    return [other for other, source, data in others
            if source == "files" and not data.get("glidein_uuid") and not from_dict(data).read_out
            and _before(data.get("submitted"), record.started)]


def traced_of_job(conn: sqlite3.Connection, record: Any, others: List[Stored]) -> Optional[Tuple[bytes, bytes]]:
    """The glidein a record of its Condor-G job only (no uuid, no ``.out``) belongs to, among the other
    glideins of its job (``same_jobs``): the one with a uuid whose files' ``.out`` was not read (known by its
    live trace so far), started after the submission; (its key, the trace its spans are in), or None when
    there is none, or several."""
    from_dict = parts.rules(parts.GlideinRules).from_dict
    if record.glidein_uuid or record.read_out:
        return None
    found = []
    for other, source, data in others:
        files = files_records(conn, [other]).get(other)
        if source != "files" and data.get("glidein_uuid") and _before(record.submitted, data.get("started")) \
                and (files is None or not from_dict(files).read_out):
            found.append((other, bytes.fromhex(data.get("trace_id") or other.hex())))
    return found[0] if len(found) == 1 else None


def glidein_of_job(conn: sqlite3.Connection, factory: Optional[str], schedd: Optional[str], cluster: Any, proc: Any,
                   when: Optional[float] = None) -> Optional[bytes]:
    """The key of the stored glidein of a Condor-G job (factory, schedd, cluster.proc) — the one running at
    ``when`` if several share the job (a resubmission after a schedd reset), else the only one; None when
    none, or it cannot be told. What a user job's journey links to: its ad names the job, not the uuid."""
    try:
        cluster, proc = int(cluster), int(proc)
    except (TypeError, ValueError):
        return None
    rows = [(bytes(key), started, ended) for key, started, ended in conn.execute(
        "SELECT trace_id, started, ended FROM glideins WHERE cluster = ? AND proc = ? AND schedd IS ?"
        " AND factory IS ?", (cluster, proc, schedd, factory))]
    if len(rows) > 1 and when is not None:
        rows = [r for r in rows if r[1] is not None and r[1] <= when and (r[2] is None or when <= r[2])]
    return rows[0][0] if len(rows) == 1 else None
