"""The reads of the resource metrics (``store.metrics``): subjects by trace, job or glidein, a subject's series,
per-job peaks and efficiency, RSS fits and node loads, each answered by SQLite from the keys.

Apart from the writes so that each module stays small; ``metrics`` re-exports them.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any, Dict, Iterable, List, Optional, Tuple

HEX32 = re.compile(r"[0-9a-f]{32}")
HEX16 = re.compile(r"[0-9a-f]{16}")

SUBJECT_COLUMNS = ("id", "kind", "glidein", "job_id", "trace_id", "span_id", "owner", "site", "entry", "host",
                   "source", "request_cpus", "request_memory_mb", "cores", "first_ns", "last_ns")

#: the names of the contract (docs/resources.md); others are kept too, within the same bounds
CPU_TIME = "process.cpu.time"
MEMORY_USAGE = "process.memory.usage"
MEMORY_PEAK = "process.memory.peak"
LOAD_1M = "system.cpu.load_average.1m"
#: the machine's logical CPUs, on the glidein's samples (the subject's ``cores``: what its load is over)
CPU_COUNT = "system.cpu.logical.count"


def hex_id(value: Any, pattern: "re.Pattern[str]") -> Optional[bytes]:
    """An id from a node (hex text) as bytes when it has the pattern's length and digits, else None."""
    text = str(value or "").lower()
    return bytes.fromhex(text) if pattern.fullmatch(text) else None


def _subject_dict(row: Tuple[Any, ...]) -> Dict[str, Any]:
    item = dict(zip(SUBJECT_COLUMNS, row))
    for key in ("trace_id", "span_id"):
        item[key] = bytes(item[key]).hex() if item[key] is not None else None
    return item


def subjects(conn: sqlite3.Connection, *, trace_id: Optional[str] = None, job_id: Optional[str] = None,
             glidein: Optional[str] = None, limit: int = 100) -> List[Dict[str, Any]]:
    """The subjects sampled for a trace (its job span's trace), a job id, or a glidein (uuid)."""
    where, args = [], []
    if trace_id is not None:
        where.append("trace_id = ?")
        args.append(hex_id(trace_id, HEX32) or b"")
    if job_id is not None:
        where.append("job_id = ?")
        args.append(job_id)
    if glidein is not None:
        where.append("glidein = ?")
        args.append(glidein)
    sql = f"SELECT {', '.join(SUBJECT_COLUMNS)} FROM metric_subjects"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY first_ns, id LIMIT ?"
    return [_subject_dict(row) for row in conn.execute(sql, args + [limit])]


def series(conn: sqlite3.Connection, subject: int, max_points: int = 20000) -> List[Dict[str, Any]]:
    """A subject's series: ``{"name", "attributes", "points": [[time_ns, value], ...]}`` in time order."""
    out: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for name, attrs, t, v in conn.execute(
            "SELECT name, attrs, time_ns, value FROM metric_rows WHERE subject = ? ORDER BY name, attrs, time_ns "
            "LIMIT ?", (subject, max_points)):
        item = out.get((name, attrs))
        if item is None:
            item = out[(name, attrs)] = {"name": name, "attributes": json.loads(attrs), "points": []}
        item["points"].append([t, v])
    return list(out.values())


#: per subject: its peak memory (the largest of process.memory.peak and RSS), CPU seconds (the last cumulative value
#: per mode, summed) and what of it was used between the first and the last CPU sample (a scalar subquery gives
#: one column: the four travel as a JSON array), first and last sample
PEAKS_SQL = f"""
SELECT {', '.join('s.' + c for c in SUBJECT_COLUMNS)},
       (SELECT max(value) FROM metric_rows p WHERE p.subject = s.id AND p.name IN ('{MEMORY_PEAK}', '{MEMORY_USAGE}')),
       (SELECT json_array(sum(hi), sum(hi - lo), min(t0), max(t1)) FROM
          (SELECT max(value) AS hi, min(value) AS lo, min(time_ns) AS t0, max(time_ns) AS t1 FROM metric_rows p
            WHERE p.subject = s.id AND p.name = '{CPU_TIME}' GROUP BY attrs)),
       (SELECT min(time_ns) FROM metric_rows p WHERE p.subject = s.id),
       (SELECT max(time_ns) FROM metric_rows p WHERE p.subject = s.id),
       (SELECT count(*) FROM metric_rows p WHERE p.subject = s.id AND p.name = '{MEMORY_USAGE}')
FROM metric_subjects s WHERE s.kind = ? AND s.last_ns >= ? AND s.first_ns < ? ORDER BY s.first_ns, s.id LIMIT ?
"""


def figures(item: Dict[str, Any], cpu: Tuple[Any, Any, Any, Any]) -> None:
    """Add what people read off a subject: peak MB against its request, cores used against its request."""
    cpu_s, cpu_used, t0, t1 = cpu
    peak = item.get("peak_bytes")
    item["peak_mb"] = peak / 1048576 if peak is not None else None
    item["cpu_s"] = cpu_s
    window = (t1 - t0) / 1e9 if t0 is not None and t1 is not None else 0.0
    item["cores_used"] = cpu_used / window if window > 0 else None
    cpus, memory = item.get("request_cpus"), item.get("request_memory_mb")
    #: CPU efficiency: cpu time / (wall x request_cpus), over the sampled window
    item["cpu_efficiency"] = item["cores_used"] / cpus if item["cores_used"] is not None and cpus else None
    item["memory_ratio"] = item["peak_mb"] / memory if item["peak_mb"] is not None and memory else None


def peaks(conn: sqlite3.Connection, kind: str = "job", start_ns: int = 0, end_ns: int = 2**63 - 1,
          limit: int = 100_000, ids: Optional[List[int]] = None) -> List[Dict[str, Any]]:
    """Per subject sampled in [start_ns, end_ns) (or of ``ids``): its peak memory, CPU time, cores used and
    efficiency, first and last sample and RSS samples, with what it asked for (``figures``): what ``gwtrace job``,
    the pages and the resource hints need."""
    if ids is not None:
        if not ids:
            return []
        sql = PEAKS_SQL.replace("WHERE s.kind = ? AND s.last_ns >= ? AND s.first_ns < ?",
                                f"WHERE s.id IN ({','.join('?' * len(ids))})")
        rows = conn.execute(sql, list(ids) + [limit])
    else:
        rows = conn.execute(PEAKS_SQL, (kind, start_ns, end_ns, limit))
    out = []
    for row in rows:
        item = _subject_dict(row[:len(SUBJECT_COLUMNS)])
        peak, cpu, first, last, n_rss = row[len(SUBJECT_COLUMNS):]
        item.update(peak_bytes=peak, sampled_from_ns=first, sampled_to_ns=last, rss_points=n_rss)
        figures(item, tuple(json.loads(cpu)) if cpu else (None, None, None, None))  # type: ignore[arg-type]
        out.append(item)
    return out


#: least squares of RSS over time per subject, in SQL (seconds from the subject's first sample: no cancellation)
FIT_SQL = f"""
SELECT p.subject, count(*), sum(t), sum(v), sum(t * t), sum(t * v), sum(v * v), min(v), max(v), max(t) FROM
  (SELECT p.subject, (p.time_ns - f.t0) / 1e9 AS t, p.value / 1048576.0 AS v
     FROM metric_rows p JOIN (SELECT subject, min(time_ns) AS t0 FROM metric_rows
                                WHERE name = '{MEMORY_USAGE}' AND subject IN ({{ids}}) GROUP BY subject) f
       ON f.subject = p.subject
    WHERE p.name = '{MEMORY_USAGE}') p
GROUP BY p.subject HAVING count(*) >= ?
"""


def rss_fits(conn: sqlite3.Connection, min_points: int, ids: Iterable[int]) -> Dict[int, Dict[str, float]]:
    """Per subject (of ``ids``) with at least ``min_points`` RSS samples: the least-squares line of RSS (MB) over
    time (s) and its R²: ``{"n", "slope_mb_s", "r2", "min_mb", "max_mb", "span_s"}``."""
    wanted = list(ids)
    out = {}
    for at in range(0, len(wanted), 500):
        chunk = wanted[at:at + 500]
        sql = FIT_SQL.replace("{ids}", ",".join("?" * len(chunk)))
        for subject, n, st, sv, stt, stv, svv, lo, hi, span in conn.execute(sql, chunk + [max(2, min_points)]):
            sxx, sxy, syy = stt - st * st / n, stv - st * sv / n, svv - sv * sv / n
            if sxx <= 0:
                continue
            r2 = (sxy * sxy / (sxx * syy)) if syy > 0 else 0.0
            out[subject] = {"n": n, "slope_mb_s": sxy / sxx, "r2": r2, "min_mb": lo, "max_mb": hi, "span_s": span}
    return out


LOAD_SQL = f"""
SELECT {', '.join('s.' + c for c in SUBJECT_COLUMNS)}, count(p.value), avg(p.value), max(p.value)
  FROM metric_subjects s JOIN metric_rows p ON p.subject = s.id AND p.name = '{LOAD_1M}'
 WHERE s.kind = 'glidein' AND s.last_ns >= ? AND s.first_ns < ?
 GROUP BY s.id ORDER BY s.first_ns, s.id LIMIT ?
"""


def loads(conn: sqlite3.Connection, start_ns: int = 0, end_ns: int = 2**63 - 1,
          limit: int = 100_000) -> List[Dict[str, Any]]:
    """Per glidein sampled in the window: its node's 1-minute load average (samples, mean, max), with the
    machine's cores when the node said them."""
    out = []
    for row in conn.execute(LOAD_SQL, (start_ns, end_ns, limit)):
        item = _subject_dict(row[:len(SUBJECT_COLUMNS)])
        item.update(zip(("load_points", "load_mean", "load_max"), row[len(SUBJECT_COLUMNS):]))
        out.append(item)
    return out
