"""``gwtrace ingest --condor-log FILE... [--job-ads FILE...]``: job events into spans and job rows.

Incremental: the store remembers, per log path, the byte offset read up to
(``table.job_logs``); the next run reads from there and folds the new events
into the stored job states, then writes those jobs' spans again (same ids:
the store replaces them, so an open "idle" span simply grows).  A run with
nothing new writes nothing.  The offset is stored after the spans, so a
crash in between only means the same spans are written again.

Which schedd: ``--schedd NAME``, else the one remembered for the log, else
the address of the first submit event's host.  One log is taken to hold
the jobs of one schedd (a user log or a schedd's event log).
"""

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, TextIO, Tuple

from gwtrace.factory.condorg_log import bindings
from gwtrace.factory.eventlog import HEAD_BYTES, MAX_EVENT_BYTES, log_head, read_events
from gwtrace.wire.inflate import describe

from . import table
from .ads import read_ads
from .otlp import to_request
from .spans import state_to_spans
from .state import apply, apply_ad, new_state
from gwtrace.store.glidein_parts import glidein_of_job
from gwtrace.store import TraceStore

CHUNK_EVENTS = 200000   # events folded per write: bounds memory for a log of any size
SPAN_BATCH = 5000       # spans per store.ingest call
_SINFUL = re.compile(r"^<?([^?>]+)")


@dataclass
class Totals:
    """What an ingest did, for its one summary line."""

    events: int = 0
    jobs: int = 0
    spans: int = 0
    unknown: Dict[int, int] = field(default_factory=dict)
    unused: int = 0
    bad: int = 0
    partial: int = 0
    skipped: List[str] = field(default_factory=list)   # one line per event over eventlog.MAX_EVENT_BYTES


def schedd_of(host: Optional[str]) -> str:
    """``<1.2.3.4:9618?sock=...>`` -> ``1.2.3.4:9618`` (the sock part changes with every restart)."""
    match = _SINFUL.match(host or "")
    return match.group(1) if match else ""


def _schedd_for(conn: Any, path: str, given: Optional[str], events: List[Any]) -> str:
    if given:
        return given
    row = conn.execute("SELECT schedd FROM job_log_schedds WHERE path = ?", (path,)).fetchone()
    if row and row[0]:
        return row[0]
    for event in events:
        if event.code == 0 and event.items.get("SubmitHost"):
            return schedd_of(event.items["SubmitHost"])
    return ""


def write(store: Any, states: List[Dict[str, Any]], totals: Totals) -> None:
    """The jobs' spans into the store, then their rows."""
    def resolve(factory: Any, schedd: Any, cluster: Any, proc: Any, when: Any) -> Any:
        key = glidein_of_job(store.reader(), factory, schedd, cluster, proc, when)
        return key.hex() if key is not None else None

    by_schedd: Dict[str, list] = {}
    for state in states:
        by_schedd.setdefault(state["schedd"], []).extend(state_to_spans(state, resolve))
    for schedd, pairs in by_schedd.items():
        resource = {"service.name": "htcondor", "htcondor.schedd": schedd or "unknown"}
        for at in range(0, len(pairs), SPAN_BATCH):
            batch = pairs[at:at + SPAN_BATCH]
            store.ingest(to_request(batch, resource))
            totals.spans += len(batch)
    with store.transaction() as conn:
        table.put_jobs(conn, states)


def _fold(store: Any, schedd: str, events: List[Any], totals: Totals,
          pending: Dict[Tuple[int, int], Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Fold events into the stored states; a ``--job-ads`` ad of a job met here is applied to it before its
    spans are made (so a TraceParent from the ad is the trace of its very first spans)."""
    keys = sorted({table.job_key(schedd, e.cluster, e.proc) for e in events})
    states = table.get_states(store.reader(), keys)
    touched: Dict[str, Dict[str, Any]] = {}
    for event in events:
        key = table.job_key(schedd, event.cluster, event.proc)
        state = touched.get(key) or states.get(key) or new_state(event.cluster, event.proc, schedd)
        touched[key] = state
        if not apply(state, event.code, event.time, event.items):
            totals.unused += 1
    for state in touched.values():
        ad = pending.pop((state["cluster"], state["proc"]), None)
        if ad is not None:
            apply_ad(state, ad)
    return list(touched.values())


def ingest_log(store: Any, path: str, schedd: Optional[str], totals: Totals,
               pending: Optional[Dict[Tuple[int, int], Dict[str, Any]]] = None) -> None:
    """Read one log from where the last run stopped, chunk by chunk (``pending``: ads by (cluster, proc))."""
    pending = {} if pending is None else pending
    path = os.path.abspath(path)
    offset = table.log_offset(store.reader(), path, os.path.getsize(path))
    while True:
        result = read_events(path, offset, CHUNK_EVENTS)
        name = _schedd_for(store.reader(), path, schedd, result.events)
        states = _fold(store, name, result.events, totals, pending) if result.events else []
        if states:
            write(store, states, totals)
        unknown = sum(result.unknown.values())
        head = log_head(path, min(HEAD_BYTES, result.offset))
        with store.transaction() as conn:
            table.put_log(conn, path, head, result.offset, len(result.events), unknown, result.bad)
            if name:
                conn.execute("INSERT OR REPLACE INTO job_log_schedds VALUES (?, ?)", (path, name))
        totals.events += len(result.events)
        totals.jobs += len(states)
        totals.bad += result.bad
        totals.skipped.extend(f"{path}: skipped an event of {size} bytes at byte {at} (over the "
                              f"{describe(MAX_EVENT_BYTES)} limit)" for at, size in result.skipped)
        totals.partial = result.partial_tail
        for code, count in result.unknown.items():
            totals.unknown[code] = totals.unknown.get(code, 0) + count
        offset = result.offset
        if not result.more:
            return


def _ad_state(store: Any, ad: Dict[str, Any], schedd: Optional[str]) -> Dict[str, Any]:
    """The stored job an ad describes (by GlobalJobId, else schedd#cluster.proc, else a lone cluster.proc)."""
    lower = {k.lower(): v for k, v in ad.items()}
    cluster, proc = lower["clusterid"], lower["procid"]
    global_id = lower.get("globaljobid")
    ad_schedd = global_id.split("#")[0] if isinstance(global_id, str) and "#" in global_id else ""
    conn = store.reader()
    if global_id:
        row = conn.execute("SELECT state FROM jobs WHERE global_id = ?", (global_id,)).fetchone()
        if row:
            return json.loads(row[0])
    for name in filter(None, (schedd, ad_schedd)):
        found = table.get_states(conn, [table.job_key(name, cluster, proc)])
        if found:
            return next(iter(found.values()))
    rows = table.find_at(conn, cluster, proc, ad_schedd, exact=True) if ad_schedd else []
    if len(rows) == 1:      # stored under another name of its schedd (the address of its submit event)
        return json.loads(rows[0][0])
    rows = conn.execute("SELECT state FROM jobs WHERE cluster = ? AND proc = ?", (cluster, proc)).fetchall()
    if len(rows) == 1:
        return json.loads(rows[0][0])
    return new_state(cluster, proc, schedd or ad_schedd)


def ads_by_job(paths: List[str]) -> Dict[Tuple[int, int], Dict[str, Any]]:
    """The ads of ``--job-ads`` by (cluster, proc) (the last one of a job wins: files are in time order)."""
    out = {}
    for ad in read_ads(paths):
        lower = {k.lower(): v for k, v in ad.items()}
        out[(lower["clusterid"], lower["procid"])] = ad
    return out


def ingest_ads(store: Any, ads: List[Dict[str, Any]], schedd: Optional[str], totals: Totals) -> None:
    """Job ads no log of this run met: attributes (TraceParent, DESIRED_Sites, ...) onto their stored jobs,
    and jobs no log told about (from the ad's QDate, JobStatus and hold attributes)."""
    states = []
    for ad in ads:
        state = _ad_state(store, ad, schedd)
        apply_ad(state, ad)
        states.append(state)
    if states:
        write(store, states, totals)
        totals.jobs += len(states)


def summary(totals: Totals) -> List[str]:
    """The lines ``gwtrace ingest`` prints: one summary, one for skipped unknown events, one for damage."""
    lines = [f"ingested {totals.events} job event(s) of {totals.jobs} job(s) as {totals.spans} span(s)"
             + (f" ({totals.unused} already folded or of kinds that make no span)" if totals.unused else "")]
    if totals.unknown:
        codes = ", ".join(f"{code:03d} x{n}" for code, n in sorted(totals.unknown.items()))
        lines.append(f"skipped {sum(totals.unknown.values())} event(s) of codes the bindings do not know: {codes}")
    if totals.bad:
        lines.append(f"skipped {totals.bad} damaged region(s) of the log (unreadable events or junk between events)")
    if totals.partial:
        lines.append(f"left {totals.partial} byte(s) of an unfinished last event for the next run")
    return totals.skipped + lines


def ingest_condor(paths: List[str], ads: List[str], schedd: Optional[str], store_path: Optional[str],
                  err: TextIO) -> int:
    """The ``--condor-log`` / ``--job-ads`` command; 1 if a file could not be read (the others are)."""
    totals, status = Totals(), 0
    if paths:
        try:
            bindings()
        except RuntimeError:
            err.write("gwtrace: reading HTCondor job event logs (--condor-log) needs HTCondor's Python bindings, "
                      "not installed here: pip install 'gwtrace[factory]' (or the htcondor package alone)\n")
            return 1
    try:
        pending = ads_by_job(ads)
    except OSError as exc:
        err.write(f"gwtrace: {exc.filename}: {exc.strerror}\n")
        return 1
    with TraceStore(store_path) as store:
        for path in paths:
            try:
                ingest_log(store, path, schedd, totals, pending)
            except (OSError, ValueError) as exc:
                err.write(f"gwtrace: {exc}\n")
                status = 1
        if pending:
            ingest_ads(store, list(pending.values()), schedd, totals)
        for line in summary(totals):
            err.write(f"gwtrace: {line}\n")
        err.write(f"gwtrace: into embedded store {store.path}\n")
    return status
