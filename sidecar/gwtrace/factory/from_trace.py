"""A glidein record from a stored trace: for glideins known by their spans only.

A glidein that ran gwtrace sends a ``glidein`` span whose resource carries the
pilot's identity (``glidein.*``, from its glidein_config), one span per traced
script, HTCondor, and one ``user_job`` span per job (the job wrapper). Those
give the record's identity, times, scripts and jobs, and so its canonical
categories; GlideinWMS's own figures need the ``.out`` and are left empty,
with the reason. When the factory's files are backfilled for the same glidein
(same trace id), the record made from the files replaces this one: it knows
more.

The same reading works on a backfilled trace (``to_trace``'s span names and
attributes), so a record can be rebuilt from traces kept in another store.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .canonical import pilot_bounds, segments, totals
from .jobs import classify_jobs
from .record import GlideinRecord
from .startd_history import JobRecord
from .xmlresult import ScriptResult

Span = Dict[str, Any]
NO_OUT = "known from its trace only: GlideinWMS's own figures need the factory's .out (gwtrace ingest --factory-logs)"
_SCRIPT_SUFFIXES = (".sh", ".source", ".py")
_STATUS = {2: "ERROR", 1: "OK"}


def _secs(ns: Optional[int]) -> Optional[int]:
    return None if ns is None else int(ns // 1_000_000_000)


def _int(value: Any) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def find_root(spans: List[Span]) -> Optional[Span]:
    """The glidein's span: a live one if there is one (the set-up script's ``glidein``, or a traced
    ``glidein_startup.sh`` at the top), the earliest; else the backfilled root."""
    def is_glidein(span: Span) -> bool:
        if span["resource"].get("service.name") != "glidein":
            return False
        return span["name"] == "glidein" or (span["name"] == "glidein_startup.sh" and not span["parent_span_id"])

    roots = [s for s in spans if is_glidein(s)]
    live = [s for s in roots if s["attributes"].get("gwtrace.source") != "factory-logs"]
    chosen = live or roots
    return min(chosen, key=lambda s: s["start_ns"]) if chosen else None


_JOB_IDS = ("condor.job_id", "htcondor.job.id", "condor.job.id")


def _is_job(span: Span) -> bool:
    return span["name"] in ("job", "user_job", "condor_job_wrapper.sh") or any(k in span["attributes"] for k in _JOB_IDS)


def _identity(rec: GlideinRecord, resource: Dict[str, Any]) -> None:
    rec.cluster = _int(resource.get("glidein.cluster_id"))
    rec.proc = _int(resource.get("glidein.proc_id"))
    rec.schedd = resource.get("glidein.schedd")
    rec.factory = resource.get("glidein.factory")
    rec.site = resource.get("glidein.site")
    rec.entry = resource.get("glidein.entry")
    rec.frontend = resource.get("glidein.client")
    rec.glidein_uuid = resource.get("glidein.uuid")
    rec.cpus = _int(resource.get("glidein.cpus"))
    rec.memory_mb = _int(resource.get("glidein.memory_mb"))
    rec.gpus = _int(resource.get("glidein.gpus")) or 0
    if rec.cpus is None:
        rec.cpus = 1
        rec.notes.append("GLIDEIN_CPUS unknown: 1 core assumed")
    if rec.memory_mb is None:
        rec.memory_mb = 2048 * rec.cpus
        rec.notes.append("GLIDEIN_MaxMemMBs unknown: 2 GB per core assumed")


def _is_script(span: Span, root: Span, by_id: Dict[str, Span]) -> bool:
    """A script the glidein ran: marked so, or a script file run by the glidein itself, directly or through
    its own functions (at the ``scripts`` level a glidein's ``fetch_file`` has a span, and the validation
    scripts it runs are its children)."""
    if "glidein.script" in span["attributes"] or "gwms.script.id" in span["attributes"]:
        return True
    if not span["name"].endswith(_SCRIPT_SUFFIXES) or span["name"] in ("condor_startup.sh", "gwtrace_setup.sh"):
        return False
    parent = span["parent_span_id"]
    for _ in range(64):   # through the glidein's function spans, up to the glidein
        if parent == root["span_id"]:
            return True
        above = by_id.get(parent)
        if above is None or above["attributes"].get("gwtrace.kind") != "function":
            return False
        parent = above["parent_span_id"]
    return False


def _job(span: Span) -> JobRecord:
    attrs = span["attributes"]
    start, end = _secs(span["start_ns"]), _secs(span["end_ns"])
    signal = _int(attrs.get("condor.exit_signal") or attrs.get("gwtrace.forwarded_signal"))
    code = _int(attrs.get("process.exit.code", attrs.get("process.exit_code")))
    if code is None and signal is None and span["status_code"] == 2:
        code = 1
    job_id = next((attrs[k] for k in _JOB_IDS if attrs.get(k)), span["span_id"])
    return JobRecord(str(job_id),
                     start, end, None if start is None or end is None else end - start, code, signal,
                     _int(attrs.get("condor.request_cpus")) or 1, 2048, 0, bool(attrs.get("condor.preempted")), None)


def record_from_trace(spans: List[Span]) -> Optional[GlideinRecord]:
    """The glidein record a trace describes, or None if the trace has no glidein span."""
    root = find_root(spans)
    if root is None:
        return None
    rec = GlideinRecord()
    _identity(rec, root["resource"])
    backfilled = root["attributes"].get("gwtrace.source") == "factory-logs"
    rec.started, rec.ended = _secs(root["start_ns"]), _secs(root["end_ns"])
    rec.status = _STATUS.get(root["status_code"], "UNKNOWN")
    rec.failed_script = root["attributes"].get("glidein.failed_script")
    rec.mark_incomplete(NO_OUT)
    by_id = {span["span_id"]: span for span in spans}
    for span in spans:
        name = span["name"]
        if span is root or name in ("glidein", "glidein_startup.sh"):
            continue
        if name == "condor" or (name == "condor_startup.sh" and not _is_script(span, root, by_id)):
            if name == "condor" or rec.condor_start is None:  # the backfill's own span says it best
                rec.condor_start, rec.condor_end = _secs(span["start_ns"]), _secs(span["end_ns"])
        elif _is_job(span):
            rec.jobs.append(_job(span))
        elif name == "factory.queue":
            rec.ce_submitted = _secs(span["end_ns"])
        elif name == "condorg.queued":  # a backfilled glidein: from the factory's submission to its start
            rec.submitted, rec.started = _secs(span["start_ns"]), _secs(span["end_ns"])
        elif _is_script(span, root, by_id):
            status = _STATUS.get(span["status_code"], "OK")
            rec.scripts.append(ScriptResult(id=name, status=status, start=_secs(span["start_ns"]),
                                            end=_secs(span["end_ns"])))
            if status == "ERROR" and rec.failed_script is None:
                rec.failed_script = name
    if backfilled:
        rec.notes.append("rebuilt from a backfilled trace: the factory's files say more")
    rec.scripts.sort(key=lambda s: s.start or 0)
    rec.jobs.sort(key=lambda j: j.start or 0)
    _account(rec)
    return rec


def _account(rec: GlideinRecord) -> None:
    """The canonical categories from what the trace says (jobs placed in time, else validation or overhead)."""
    start, end = pilot_bounds(rec.started, rec.ended, 0)
    intervals = classify_jobs(rec.jobs, rec.condor_end or end)
    if intervals:
        empty = "overhead"
    elif rec.status == "ERROR" or rec.condor_start is None:
        empty = "validation_fail"
    else:
        empty = "decision_problem"
    rec.segments = segments(start, end, rec.cpus or 1, rec.memory_mb or 0, rec.gpus, intervals, empty)
    rec.canonical = totals(rec.segments, "cpu")
    rec.canonical_gpu = totals(rec.segments, "gpu")
