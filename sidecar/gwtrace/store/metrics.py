"""What each glidein and job used (CPU time, memory, I/O, load), kept beside the traces.

The sidecar samples its glidein and each job and sends OTLP metrics (the
contract: ``ExportMetricsServiceRequest``, one ``ResourceMetrics`` per
subject, ``gwtrace.subject=glidein|job``, the job's ``condor.job.id`` and its
span's ``gwtrace.trace_id``/``gwtrace.span_id``; docs/resources.md). Here they
are kept as rows, not as OTLP bytes as the spans are: a chart and a hint read
a few series of a few hundred points, by subject and name, and SQLite answers
that from an index; a point costs ~22 bytes on disk (measured: docs/resources.md).

``metric_subjects``  one row per sampled subject (glidein uuid, job id, the job
                     span's trace and span ids, owner, site, entry, host, the
                     job's requests), keyed by what names it
``metric_series``    (subject, metric name, point attributes) -> series id
``metric_points``    (series, time) -> value: the key makes a retried request
                     idempotent (``metric_rows``: the two joined, for reads)

Worker nodes are untrusted, so what one request may cost is bounded
(``MAX_*`` below): too many points is refused whole (413, ``TooLarge``);
long names, too many series or points per subject, non-finite values and
impossible times are dropped and counted, as spans over the limits are.
Retention (``metrics_retention_days``, default the spans') deletes points by
their sample time.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from gwtrace.wire.metric_points import count_points, points_of

from . import limits, parts
from .metric_reads import (  # noqa: F401  (re-exported: the reads are the store's too)
    CPU_COUNT, CPU_TIME, HEX16, HEX32, LOAD_1M, MEMORY_PEAK, MEMORY_USAGE, SUBJECT_COLUMNS, hex_id, loads, peaks, rss_fits,
    series, subjects,
)
from .values import any_value_to_python

#: data points in one request (a sidecar sends ~12 a subject per sample; a ship-home block a node's backlog)
MAX_POINTS_PER_REQUEST = 65536
#: data points kept from one ResourceMetrics (one subject) of one request
MAX_POINTS_PER_RESOURCE = 16384
#: distinct series (metric name and point attributes) kept per subject
MAX_SERIES_PER_SUBJECT = 64
#: points kept per subject in all (a week at 10 s with 12 series is ~720 000: beyond is a hostile node)
MAX_POINTS_PER_SUBJECT = 1_000_000
#: metric names, in characters (the conventions' longest is ~40)
MAX_NAME_CHARS = 128
#: resource and point attribute values kept, in characters; point attributes kept per point
MAX_ATTR_CHARS = 256
MAX_POINT_ATTRIBUTES = 8
#: sample times accepted: after 2000-01-01 and before 2^63 ns
MIN_TIME_NS = 946_684_800 * 10**9

SUBJECTS = ("glidein", "job")

SCHEMA = """
CREATE TABLE IF NOT EXISTS metric_subjects (
    id          INTEGER PRIMARY KEY,
    key         TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL,
    glidein     TEXT,
    job_id      TEXT,
    trace_id    BLOB,
    span_id     BLOB,
    owner       TEXT,
    site        TEXT,
    entry       TEXT,
    host        TEXT,
    source      TEXT,
    request_cpus REAL,
    request_memory_mb REAL,
    cores       REAL,
    first_ns    INTEGER NOT NULL,
    last_ns     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS metric_subjects_trace ON metric_subjects (trace_id);
CREATE INDEX IF NOT EXISTS metric_subjects_job ON metric_subjects (job_id);
CREATE INDEX IF NOT EXISTS metric_subjects_glidein ON metric_subjects (glidein);
CREATE INDEX IF NOT EXISTS metric_subjects_last ON metric_subjects (kind, last_ns);
CREATE TABLE IF NOT EXISTS metric_series (
    id      INTEGER PRIMARY KEY,
    subject INTEGER NOT NULL,
    name    TEXT NOT NULL,
    attrs   TEXT NOT NULL,
    UNIQUE (subject, name, attrs)
);
CREATE TABLE IF NOT EXISTS metric_points (
    series  INTEGER NOT NULL,
    time_ns INTEGER NOT NULL,
    value   REAL NOT NULL,
    PRIMARY KEY (series, time_ns)
) WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS metric_rows AS
    SELECT ms.subject AS subject, ms.name AS name, ms.attrs AS attrs, p.time_ns AS time_ns, p.value AS value
      FROM metric_series ms JOIN metric_points p ON p.series = ms.id;
"""

#: the store part (``store.parts``): created on first use, like the parts other packages register
PART = parts.StorePart("metrics", version=1, schema=SCHEMA)

@dataclass
class MetricsResult:
    """What ``put_metrics`` did with a request: points kept, points dropped, and why (first reasons)."""

    kept: int = 0
    rejected: int = 0
    problems: List[str] = field(default_factory=list)

    def drop(self, count: int, why: str) -> None:
        self.rejected += count
        if why not in self.problems and len(self.problems) < 5:
            self.problems.append(why)

    @property
    def message(self) -> str:
        return "; ".join(self.problems)


def _text(value: Any) -> Optional[str]:
    if value is None or isinstance(value, (list, dict, bytes)):
        return None
    return str(value)[:MAX_ATTR_CHARS]


def _number(value: Any, most: float) -> Optional[float]:
    """A positive finite number up to ``most`` (a job's request), else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and 0 < number <= most else None


def subject_of(resource: Dict[str, Any]) -> Dict[str, Any]:
    """The subject a ResourceMetrics' attributes name (the contract's keys), each value bounded."""
    kind = resource.get("gwtrace.subject")
    kind = kind if kind in SUBJECTS else ("job" if resource.get("condor.job.id") else "glidein")
    glidein = _text(resource.get("glidein.uuid") or resource.get("service.instance.id"))
    subject = {
        "kind": kind, "glidein": glidein, "job_id": _text(resource.get("condor.job.id")) if kind == "job" else None,
        "trace_id": hex_id(resource.get("gwtrace.trace_id"), HEX32), "span_id": hex_id(resource.get("gwtrace.span_id"), HEX16),
        "owner": _text(resource.get("condor.job.owner")), "site": _text(resource.get("glidein.site")),
        "entry": _text(resource.get("glidein.entry")), "host": _text(resource.get("host.name")),
        "source": _text(resource.get("gwtrace.resources.source")),
        "request_cpus": _number(resource.get("job.request_cpus"), 4096),
        "request_memory_mb": _number(resource.get("job.request_memory_mb"), 1e8),
        "cores": None,      # the machine's, which its load is over: the metric CPU_COUNT (``put``)
    }
    anonymous = (_text(resource.get("host.name")) or "") if not glidein and not subject["job_id"] else ""
    # a glidein is its uuid: its trace id may come after its first samples (published once the sidecar runs)
    trace = "" if kind == "glidein" and glidein else (subject["trace_id"] or b"").hex()
    subject["key"] = "\x1f".join([kind, glidein or "", subject["job_id"] or "", trace, anonymous])
    return subject


def _points(metric: Any) -> Tuple[Optional[Iterable[Any]], str]:
    """The number data points of a metric (Gauge or Sum), or None and the kind that is not kept."""
    kind = metric.WhichOneof("data")
    if kind in ("gauge", "sum"):
        return getattr(metric, kind).data_points, kind
    return None, kind or "no data"


def _point_attrs(point: Any, seen: Dict[bytes, Optional[str]]) -> Optional[str]:
    """The point's attributes as canonical JSON (part of the series' key), or None when over the bounds.

    A metric's points nearly always share their attributes (``cpu.mode=user``): ``seen`` keeps the answer per
    encoded attribute list, so each distinct list is read once per request."""
    if not point.attributes:
        return "{}"
    if len(point.attributes) > MAX_POINT_ATTRIBUTES:
        return None
    raw = b"".join(kv.SerializeToString() for kv in point.attributes)
    if raw in seen:
        return seen[raw]
    attrs: Dict[str, Any] = {}
    for kv in point.attributes:
        value = any_value_to_python(kv.value)
        if len(kv.key) > MAX_NAME_CHARS or not isinstance(value, (str, int, float, bool)):
            seen[raw] = None
            return None
        attrs[kv.key] = value if not isinstance(value, str) else value[:MAX_ATTR_CHARS]
    seen[raw] = json.dumps(attrs, sort_keys=True, separators=(",", ":"))
    return seen[raw]


def _upsert_subject(conn: sqlite3.Connection, subject: Dict[str, Any], first: int, last: int) -> int:
    conn.execute(
        "INSERT INTO metric_subjects (key, kind, glidein, job_id, trace_id, span_id, owner, site, entry, host, "
        "source, request_cpus, request_memory_mb, cores, first_ns, last_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT(key) DO UPDATE SET trace_id = coalesce(trace_id, excluded.trace_id), "
        "span_id = coalesce(excluded.span_id, span_id), "
        "owner = coalesce(excluded.owner, owner), site = coalesce(excluded.site, site), "
        "entry = coalesce(excluded.entry, entry), host = coalesce(excluded.host, host), "
        "source = coalesce(excluded.source, source), "
        "request_cpus = coalesce(excluded.request_cpus, request_cpus), "
        "request_memory_mb = coalesce(excluded.request_memory_mb, request_memory_mb), "
        "cores = coalesce(excluded.cores, cores), "
        "first_ns = min(first_ns, excluded.first_ns), last_ns = max(last_ns, excluded.last_ns)",
        (subject["key"], subject["kind"], subject["glidein"], subject["job_id"], subject["trace_id"],
         subject["span_id"], subject["owner"], subject["site"], subject["entry"], subject["host"], subject["source"],
         subject["request_cpus"], subject["request_memory_mb"], subject["cores"], first, last))
    return conn.execute("SELECT id FROM metric_subjects WHERE key = ?", (subject["key"],)).fetchone()[0]


def _resource_rows(rm: Any, result: MetricsResult) -> List[Tuple[str, str, int, float]]:
    """(name, attrs, time, value) of one ResourceMetrics, within the bounds; what is not is counted."""
    rows: List[Tuple[str, str, int, float]] = []
    seen: Dict[bytes, Optional[str]] = {}
    for sm in rm.scope_metrics:
        for metric in sm.metrics:
            points, kind = _points(metric)
            if points is None:
                result.drop(points_of(metric), f"{kind} metrics are not kept (only gauges and sums)")
                continue
            if not metric.name or len(metric.name) > MAX_NAME_CHARS:
                result.drop(len(points), f"metric name empty or over {MAX_NAME_CHARS} characters")
                continue
            for point in points:
                which = point.WhichOneof("value")
                value = point.as_double if which == "as_double" else float(point.as_int) if which == "as_int" else None
                if value is None or not math.isfinite(value):
                    result.drop(1, f"{metric.name}: a point without a finite value")
                    continue
                if not MIN_TIME_NS <= point.time_unix_nano < 2**63:
                    result.drop(1, f"{metric.name}: a point with an impossible time")
                    continue
                attrs = _point_attrs(point, seen)
                if attrs is None:
                    result.drop(1, f"{metric.name}: point attributes over the limits")
                    continue
                if len(rows) >= MAX_POINTS_PER_RESOURCE:
                    result.drop(1, f"over {MAX_POINTS_PER_RESOURCE} points for one subject in one request")
                    continue
                rows.append((metric.name, attrs, point.time_unix_nano, value))
    return rows


def put(conn: sqlite3.Connection, request: Any) -> MetricsResult:
    """Keep a request's points (the caller holds a write transaction); raises ``limits.TooLarge`` when it
    holds more than MAX_POINTS_PER_REQUEST points, before anything is kept."""
    total = count_points(request)
    if total > MAX_POINTS_PER_REQUEST:
        raise limits.TooLarge(f"{total} metric points in one request; at most {MAX_POINTS_PER_REQUEST}")
    result = MetricsResult()
    for rm in request.resource_metrics:
        rows = _resource_rows(rm, result)
        if not rows:
            continue
        resource = {kv.key: any_value_to_python(kv.value) for kv in rm.resource.attributes[:limits.MAX_ATTRIBUTES]}
        about = subject_of(resource)
        cores = [(t, v) for name, _, t, v in rows if name == CPU_COUNT]
        about["cores"] = _number(max(cores)[1], 1e5) if cores else None
        subject = _upsert_subject(conn, about, min(r[2] for r in rows), max(r[2] for r in rows))
        series = {(n, a): i for i, n, a in conn.execute(
            "SELECT id, name, attrs FROM metric_series WHERE subject = ?", (subject,))}
        stored = conn.execute("SELECT count(*) FROM metric_rows WHERE subject = ?", (subject,)).fetchone()[0]
        kept = []
        for name, attrs, t, value in rows:
            key = (name, attrs)
            if key not in series:
                if len(series) >= MAX_SERIES_PER_SUBJECT:
                    result.drop(1, f"over {MAX_SERIES_PER_SUBJECT} series for one subject")
                    continue
                series[key] = conn.execute("INSERT INTO metric_series (subject, name, attrs) VALUES (?, ?, ?)",
                                           (subject, name, attrs)).lastrowid
            if stored + len(kept) >= MAX_POINTS_PER_SUBJECT:
                result.drop(1, f"over {MAX_POINTS_PER_SUBJECT} points kept for one subject")
                continue
            kept.append((series[key], t, value))
        conn.executemany("INSERT OR IGNORE INTO metric_points VALUES (?,?,?)", kept)   # a kept sample stays
        result.kept += len(kept)
    return result


def purge(conn: sqlite3.Connection, cutoff_ns: int) -> int:
    """Delete points sampled before ``cutoff_ns``, then the series and subjects left without any; return the
    points. Only the series of subjects sampled before the cutoff are looked at, each by its key's range."""
    old = [i for (i,) in conn.execute(
        "SELECT ms.id FROM metric_series ms JOIN metric_subjects s ON s.id = ms.subject WHERE s.first_ns < ?",
        (cutoff_ns,))]
    gone = 0
    for series in old:
        gone += conn.execute("DELETE FROM metric_points WHERE series = ? AND time_ns < ?", (series, cutoff_ns)).rowcount
    conn.execute("DELETE FROM metric_series WHERE id IN (SELECT ms.id FROM metric_series ms JOIN metric_subjects s "
                 "ON s.id = ms.subject WHERE s.first_ns < ?) AND NOT EXISTS "
                 "(SELECT 1 FROM metric_points WHERE series = metric_series.id)", (cutoff_ns,))
    conn.execute("DELETE FROM metric_subjects WHERE first_ns < ? AND NOT EXISTS "
                 "(SELECT 1 FROM metric_series WHERE subject = metric_subjects.id)", (cutoff_ns,))
    conn.execute("UPDATE metric_subjects SET first_ns = ? WHERE first_ns < ?", (cutoff_ns, cutoff_ns))
    return gone


class Metrics:
    """The resource metrics of a ``TraceStore``: kept per subject, read by trace, job or glidein."""

    retention_days: Optional[float]
    metrics_retention_days: Optional[float] = None

    def transaction(self) -> Any:  # provided by TraceStore
        raise NotImplementedError

    def reader(self) -> Any:  # provided by TraceStore
        raise NotImplementedError

    def put_metrics(self, request: Any) -> int:
        """Keep the points of an OTLP ``ExportMetricsServiceRequest``; return how many were kept."""
        return self.put_metrics_result(request).kept

    def put_metrics_result(self, request: Any) -> MetricsResult:
        """``put_metrics`` with what was dropped and why (the receiver's partial success)."""
        with self.transaction() as conn:
            return put(conn, request)

    def purge_metrics(self, now_ns: Optional[int] = None, older_than_days: Optional[float] = None) -> int:
        """Delete points older than the metrics' retention (else the spans'); return how many."""
        days = older_than_days if older_than_days is not None else (
            self.metrics_retention_days if self.metrics_retention_days is not None else self.retention_days)
        if days is None:
            return 0
        cutoff = max(0, (now_ns if now_ns is not None else time.time_ns()) - int(min(days, 1e5) * 86400 * 1e9))
        with self.transaction() as conn:
            return purge(conn, cutoff)

    def metric_subjects(self, *, trace_id: Optional[str] = None, job_id: Optional[str] = None,
                        glidein: Optional[str] = None, limit: int = 100) -> List[Dict[str, Any]]:
        """The sampled subjects of a trace id, a job id (``cluster.proc``) or a glidein uuid."""
        return subjects(self.reader(), trace_id=trace_id, job_id=job_id, glidein=glidein, limit=limit)

    def metric_series(self, subject_id: int, max_points: int = 20000) -> List[Dict[str, Any]]:
        """One subject's series, points in time order."""
        return series(self.reader(), subject_id, max_points)

    def metric_peaks(self, kind: str = "job", start_ns: int = 0, end_ns: int = 2**63 - 1, limit: int = 100_000,
                     ids: Optional[List[int]] = None) -> List[Dict[str, Any]]:
        """Peaks per subject sampled in a window (``peaks``)."""
        return peaks(self.reader(), kind, start_ns, end_ns, limit, ids)

    def metric_loads(self, start_ns: int = 0, end_ns: int = 2**63 - 1, limit: int = 100_000) -> List[Dict[str, Any]]:
        """Per glidein: its node's load average over the window (``loads``)."""
        return loads(self.reader(), start_ns, end_ns, limit)

    def metric_rss_fits(self, min_points: int, ids: Iterable[int]) -> Dict[int, Dict[str, float]]:
        """RSS-over-time fits per subject (``rss_fits``)."""
        return rss_fits(self.reader(), min_points, ids)
